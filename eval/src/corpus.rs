//! Runs conformance cases ([`crate::case`]) through the evaluator: parse, verify, evaluate on
//! the case's replicas with its host queues, compare outputs, outfeeds and host sends.
//!
//! Multi-replica cases, and one-replica cases whose module uses infeed/outfeed/send/recv, go
//! through [`crate::replica::run_replicas`] (which reports a stuck receive as a
//! deadlock); the others through [`Evaluator`] with [`SingleReplica`]. A `shape_only` case whose
//! evaluation stops at an unknown custom-call target passes: the corpus README allows
//! "report the custom-call as unsupported" for exactly that case; the note says so.

use crate::case::{check_value, Case, Check, Mismatch};
use crate::{replica, EvalError, EvalOptions, Evaluator, HostIo, ReplicaInput, SingleReplica};
use hlo::ir::Module;
use hlo::literal::Literal;
use hlo::opcode::Opcode;

/// The result of one case.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Matched; an optional note (e.g. an accepted unsupported custom-call).
    Pass(Option<String>),
    /// Ran but produced something else (first mismatch, with the worst element).
    Mismatch(String),
    /// Could not run: parse/verify/evaluation error (deadlocks included).
    Error(String),
}

impl Outcome {
    pub fn passed(&self) -> bool {
        matches!(self, Outcome::Pass(_))
    }
}

/// True if the module has ops that talk to the host or to other replicas point-to-point.
pub fn uses_host_io(m: &Module) -> bool {
    m.comps.values().any(|c| {
        c.insts.values().any(|i| {
            matches!(
                i.opcode,
                Opcode::Infeed
                    | Opcode::Outfeed
                    | Opcode::Send
                    | Opcode::Recv
                    | Opcode::SendDone
                    | Opcode::RecvDone
            )
        })
    })
}

/// Runs `module` on per-replica inputs; one result (and host I/O record) per replica.
pub fn run_module(
    module: &hlo::VerifiedModule,
    inputs: Vec<ReplicaInput>,
    opts: &EvalOptions,
) -> Result<Vec<(Literal, HostIo)>, EvalError> {
    if inputs.len() > 1 || uses_host_io(module) {
        let outs = replica::run_replicas(module, inputs, opts)?;
        return Ok(outs.into_iter().map(|o| (o.result, o.io)).collect());
    }
    let input = inputs.into_iter().next().unwrap_or_default();
    let mut rt = SingleReplica::new(input.io);
    let r = Evaluator::new(module)
        .with_options(opts.clone())
        .run(&input.args, &mut rt)?;
    Ok(vec![(r, rt.io)])
}

fn compare_list(
    check: Check,
    case: &Case,
    what: &str,
    r: usize,
    exp: &[Literal],
    got: &[Literal],
) -> Result<(), String> {
    if exp.len() != got.len() {
        return Err(format!(
            "replica {r}: expected {} {what} value(s), got {}",
            exp.len(),
            got.len()
        ));
    }
    for (i, (e, a)) in exp.iter().zip(got).enumerate() {
        check_value(check, case.tolerance, case.stats.as_ref(), e, a)
            .map_err(|m: Box<Mismatch>| format!("replica {r} {what}[{i}]: {m}"))?;
    }
    Ok(())
}

/// Runs one case.
pub fn run_case(case: &Case, opts: &EvalOptions) -> Outcome {
    let module = match hlo::parse(&case.module_text) {
        Ok(m) => m,
        Err(e) => {
            return Outcome::Error(
                e.render("module.hlo", &case.module_text)
                    .trim_end()
                    .to_string(),
            )
        }
    };
    let module = match hlo::verified(module) {
        Ok(m) => m,
        Err(e) => {
            return Outcome::Error(
                e.render("module.hlo", &case.module_text)
                    .trim_end()
                    .to_string(),
            )
        }
    };
    let n = case.devices();
    let mut inputs = Vec::with_capacity(n);
    for r in 0..n {
        let Some(args) = case.inputs.get(r) else {
            return Outcome::Error(format!("case has no inputs for replica {r}"));
        };
        let mut io = HostIo::default();
        io.infeed
            .extend(case.infeed.get(r).cloned().unwrap_or_default());
        io.host_recv
            .extend(case.host_recv.get(r).cloned().unwrap_or_default());
        inputs.push(ReplicaInput {
            args: args.clone(),
            io,
        });
    }
    let results = match run_module(&module, inputs, opts) {
        Ok(r) => r,
        Err(e) if case.check == Check::ShapeOnly && e.is_unknown_custom_call() => {
            return Outcome::Pass(Some(format!("accepted for shape_only: {e}")));
        }
        Err(e) => return Outcome::Error(e.to_string()),
    };
    if results.len() != case.outputs.len() {
        return Outcome::Error(format!(
            "{} replica results for {} expected outputs",
            results.len(),
            case.outputs.len()
        ));
    }
    for (r, ((got, io), exp)) in results.iter().zip(&case.outputs).enumerate() {
        if let Err(m) = check_value(case.check, case.tolerance, case.stats.as_ref(), exp, got) {
            let who = if n > 1 {
                format!("replica {r}: ")
            } else {
                String::new()
            };
            return Outcome::Mismatch(format!("{who}{m}"));
        }
        let feed_check = if case.check == Check::Stats {
            Check::Exact
        } else {
            case.check
        };
        if let Some(exp_out) = case.outfeed.get(r) {
            if let Err(m) = compare_list(feed_check, case, "outfeed", r, exp_out, &io.outfeed) {
                return Outcome::Mismatch(m);
            }
        }
        if let Some(exp_send) = case.host_send.get(r) {
            let chans: Vec<i64> = io.host_send.iter().map(|t| t.0).collect();
            let exp_chans: Vec<i64> = exp_send.iter().map(|t| t.0).collect();
            if chans != exp_chans {
                return Outcome::Mismatch(format!(
                    "replica {r}: host sends on channels {chans:?}, expected {exp_chans:?}"
                ));
            }
            let e: Vec<Literal> = exp_send.iter().map(|t| t.1.clone()).collect();
            let a: Vec<Literal> = io.host_send.iter().map(|t| t.1.clone()).collect();
            if let Err(m) = compare_list(feed_check, case, "host_send", r, &e, &a) {
                return Outcome::Mismatch(m);
            }
        }
    }
    Outcome::Pass(None)
}
