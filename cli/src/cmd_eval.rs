//! `systole eval` (run an HLO module on the reference evaluator) and `systole conformance`
//! (run every case folder of the corpus format and compare).
//!
//! Inputs of `eval`: `--inputs CASE.json` (or a case folder) gives per-replica arguments and
//! host queues (infeed, host_recv) in the corpus format; `--random SEED` generates arguments
//! (floats uniform in [-2, 2), integers in [-8, 8) (unsigned [0, 16)), pred fair coin; replica r
//! uses seed SEED + r); with neither, `--random 0` is used. Deadlocks exit 1, other evaluation
//! errors exit 2.

use crate::cmd_hlo::{load_verified, read_source};
use crate::{Outcome, UserError};
use clap::Args;
use eval::case::{case_dirs, literal_to_json, load_case_in, parse_case_in};
use eval::corpus::{run_case, run_module, Outcome as CaseOutcome};
use eval::{EvalError, EvalOptions, HostIo, ReplicaInput};
use hlo::{ArrayData, ArrayLiteral, ElementType, Literal, Shape};
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct EvalArgs {
    /// HLO text file.
    pub file: PathBuf,
    /// Arguments: a case.json or case folder (with its infeed/host_recv queues), one `.npy`
    /// per parameter in order (`--inputs A.npy,B.npy` or `--inputs A.npy --inputs B.npy`), or
    /// one `.npz` (arrays named like the parameters, or arr_0, arr_1, ...); NumPy arguments go
    /// to every replica.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "CASE.json|A.npy,B.npy,...|ARGS.npz",
        conflicts_with = "random"
    )]
    pub inputs: Vec<PathBuf>,
    /// Random arguments from this seed (default: 0).
    #[arg(long)]
    pub random: Option<u64>,
    /// Number of replicas (default: the case's, else the module's replica_count).
    #[arg(long)]
    pub replicas: Option<usize>,
    /// Also write outputs (and outfeed/host_send) as corpus-format JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the results as an `.npz` (`out`, or `out_0`, `out_1`, ... for a tuple).
    #[arg(long, value_name = "OUT.npz")]
    pub outputs: Option<PathBuf>,
    /// Print every output element (default: a summary of large outputs).
    #[arg(long)]
    pub full: bool,
}

#[derive(Args)]
pub struct ConformanceArgs {
    /// Corpus folder: one sub-folder per case (module.hlo + case.json).
    pub dir: PathBuf,
    /// Engine to run the cases on: `eval` (the reference evaluator) or `sim` (compiled for
    /// the chip and simulated; f32 dots use 6 bf16 passes so the corpus tolerances apply).
    #[arg(long, default_value = "eval")]
    pub engine: String,
    /// Architecture preset or JSON file for `--engine sim`.
    #[arg(long, default_value = "tpu-v4")]
    pub arch: String,
    /// Print a JSON report of every case before the summary line.
    #[arg(long)]
    pub json: bool,
}

/// A small deterministic generator (SplitMix64).
pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

pub(crate) fn random_literal(shape: &Shape, g: &mut SplitMix) -> anyhow::Result<Literal> {
    Ok(match shape {
        Shape::Tuple(t) => Literal::Tuple(
            t.iter()
                .map(|s| random_literal(s, g))
                .collect::<anyhow::Result<_>>()?,
        ),
        Shape::Token => Literal::Token,
        Shape::Array(a) => {
            if a.dims.iter().any(|&d| d < 0) {
                return Err(UserError(format!(
                    "cannot generate a random value of shape {a}: a dimension is unbounded"
                ))
                .into());
            }
            let dims = a.udims();
            let n: usize = dims.iter().product();
            let floats: Vec<f64> = (0..n).map(|_| g.unit() * 4.0 - 2.0).collect();
            let ty = a.ty;
            let data = if ty.is_integer() {
                let lo = if ty.is_signed_int() { -8.0 } else { 0.0 };
                let ints: Vec<f64> = (0..n).map(|_| lo + (g.next() % 16) as f64).collect();
                eval::util::from_f64_vec(ty, &ints)?
            } else if ty == ElementType::Pred {
                ArrayData::Pred((0..n).map(|_| g.next() & 1 == 1).collect())
            } else if ty.is_complex() {
                let ct = ty.component_type();
                let re = eval::util::from_f64_vec(ct, &floats)?;
                let imv: Vec<f64> = (0..n).map(|_| g.unit() * 4.0 - 2.0).collect();
                let im = eval::util::from_f64_vec(ct, &imv)?;
                eval::elementwise::binary_data(hlo::Opcode::Complex, &re, &im)?
            } else {
                eval::util::from_f64_vec(ty, &floats)?
            };
            Literal::Array(ArrayLiteral { dims, data })
        }
    })
}

/// Reads a case (`case.json`, or a case folder holding one) for a module, within the memory
/// budget; errors name the file (FILE:LINE:COL for text that is not JSON).
pub(crate) fn load_case_file(
    p: &Path,
    module_text: &str,
) -> anyhow::Result<(PathBuf, eval::case::Case)> {
    let file = if p.is_dir() {
        p.join("case.json")
    } else {
        p.to_path_buf()
    };
    let text = read_source(&file)?;
    let case =
        parse_case_in(&text, module_text.to_string(), &crate::bounded::budget()).map_err(|e| {
            match e {
                eval::case::CaseError::Syntax { .. } => {
                    UserError(format!("{}:{e}", file.display()))
                }
                e => UserError(format!("{}: error: {e}", file.display())),
            }
        })?;
    Ok((file, case))
}

/// The same NumPy arguments for every replica.
fn npy_replicas(
    a: &EvalArgs,
    module: &hlo::Module,
    args: Vec<Literal>,
) -> anyhow::Result<Vec<ReplicaInput>> {
    let n = a.replicas.unwrap_or(module.num_devices());
    check_replicas(n, &a.file)?;
    Ok((0..n)
        .map(|_| ReplicaInput {
            args: args.clone(),
            io: HostIo::default(),
        })
        .collect())
}

/// Per-replica inputs: from a case file/folder, NumPy files, or random.
fn replica_inputs(
    a: &EvalArgs,
    module: &hlo::Module,
    module_text: &str,
) -> anyhow::Result<Vec<ReplicaInput>> {
    if !a.inputs.is_empty() {
        let p = match crate::npy::classify(&a.inputs)? {
            crate::npy::InputFiles::Npy(files) => {
                return npy_replicas(a, module, crate::npy::read_npy_args(files, module)?)
            }
            crate::npy::InputFiles::Npz(file) => {
                return npy_replicas(a, module, crate::npy::read_npz_args(file, module)?)
            }
            crate::npy::InputFiles::Case(p) => p,
        };
        let (file, case) = load_case_file(p, module_text)?;
        let n = a.replicas.unwrap_or(case.devices());
        check_replicas(n, &file)?;
        if case.inputs.len() < n {
            return Err(UserError(format!(
                "{}: inputs for {} replica(s), {n} needed",
                file.display(),
                case.inputs.len()
            ))
            .into());
        }
        return Ok((0..n)
            .map(|r| {
                let mut io = HostIo::default();
                io.infeed
                    .extend(case.infeed.get(r).cloned().unwrap_or_default());
                io.host_recv
                    .extend(case.host_recv.get(r).cloned().unwrap_or_default());
                ReplicaInput {
                    args: case.inputs[r].clone(),
                    io,
                }
            })
            .collect());
    }
    let n = a.replicas.unwrap_or(module.num_devices());
    check_replicas(n, &a.file)?;
    let seed = a.random.unwrap_or(0);
    let params = module.entry().program_shape().params;
    // Random values are generated as f64 first: 8 bytes per element, plus the value itself.
    let per_replica = params.iter().try_fold(0u64, |acc, p| {
        let elems = shape_elements(p)?;
        acc.checked_add(elems.checked_mul(8)?)?
            .checked_add(p.byte_size()?)
    });
    let total = per_replica.and_then(|b| b.checked_mul(n as u64));
    crate::bounded::budget()
        .memory(
            format_args!(
                "random inputs for {n} replica(s) ({} parameters)",
                params.len()
            ),
            total,
        )
        .map_err(|e| crate::bounded::over(&a.file.display().to_string(), e))?;
    (0..n)
        .map(|r| {
            let mut g = SplitMix(seed.wrapping_add(r as u64));
            let args = params
                .iter()
                .map(|s| random_literal(s, &mut g))
                .collect::<anyhow::Result<_>>()?;
            Ok(ReplicaInput {
                args,
                io: HostIo::default(),
            })
        })
        .collect()
}

/// Elements of all arrays of a shape (`None`: overflow or unbounded).
fn shape_elements(s: &Shape) -> Option<u64> {
    match s {
        Shape::Array(a) => a.element_count(),
        Shape::Tuple(t) => t
            .iter()
            .try_fold(0u64, |acc, s| acc.checked_add(shape_elements(s)?)),
        Shape::Token => Some(0),
    }
}

/// A replica count the evaluator can run (checked before any input is made for it).
fn check_replicas(n: usize, file: &Path) -> anyhow::Result<()> {
    let max = eval::replica::MAX_REPLICAS;
    if n == 0 || n > max {
        return Err(UserError(format!(
            "{}: error: {n} replicas: the evaluator runs 1 to {max}",
            file.display()
        ))
        .into());
    }
    Ok(())
}

/// Text bytes counted per printed element (digits, separators, nesting).
const TEXT_BYTES: u64 = 24;
/// Bytes counted per element written as JSON (a `serde_json::Value` and its text).
const JSON_BYTES: u64 = 96;
/// Work counted per printed element (shortest round-trip formatting is slow).
const PRINT_WORK: u64 = 200;

fn literal_elements(l: &Literal) -> u64 {
    match l {
        Literal::Array(a) => a.data.len() as u64,
        Literal::Tuple(t) => t.iter().map(literal_elements).sum(),
        Literal::Token => 0,
    }
}

/// Refuses (before printing) outputs whose text would exceed the budget: a few bytes of
/// module can ask for 10^8 elements, whose text is gigabytes and takes minutes to format.
fn check_output_size(a: &EvalArgs, results: &[(Literal, HostIo)]) -> anyhow::Result<()> {
    let elements: u64 = results
        .iter()
        .map(|(v, io)| {
            literal_elements(v)
                + io.outfeed.iter().map(literal_elements).sum::<u64>()
                + io.host_send
                    .iter()
                    .map(|(_, v)| literal_elements(v))
                    .sum::<u64>()
        })
        .sum();
    let per = TEXT_BYTES + if a.json.is_some() { JSON_BYTES } else { 0 };
    let b = crate::bounded::budget();
    let file = a.file.display().to_string();
    b.memory(
        format_args!("printing {elements} result elements ({per} bytes of text each)"),
        elements.checked_mul(per),
    )
    .map_err(|e| crate::bounded::over(&file, e))?;
    b.work(
        format_args!("printing {elements} result elements ({PRINT_WORK} each)"),
        elements.checked_mul(PRINT_WORK),
    )
    .map_err(|e| crate::bounded::over(&file, e))
}

/// Evaluator options with the run's budget (`--max-memory`, `--max-work`).
pub(crate) fn eval_options() -> EvalOptions {
    EvalOptions {
        budget: crate::bounded::budget(),
        ..EvalOptions::default()
    }
}

/// `systole eval`.
pub fn eval(a: EvalArgs) -> anyhow::Result<Outcome> {
    for p in a.json.iter().chain(a.outputs.iter()) {
        crate::bounded::check_output(p)?;
    }
    if let Some(p) = &a.outputs {
        if p.extension().and_then(|e| e.to_str()) != Some("npz") {
            return Err(UserError(format!(
                "--outputs {}: the file must end in .npz",
                p.display()
            ))
            .into());
        }
    }
    let (src, module) = load_verified(&a.file)?;
    let inputs = replica_inputs(&a, &module, &src)?;
    let n = inputs.len();
    let results = match run_module(&module, inputs, &eval_options()) {
        Ok(r) => r,
        Err(e) if matches!(e.root_cause(), EvalError::Deadlock(_)) => {
            println!("{}: {e}", a.file.display());
            return Ok(Outcome::CheckFailed);
        }
        Err(e) => return Err(UserError(format!("{}: error: {e}", a.file.display())).into()),
    };
    check_output_size(&a, &results)?;
    for (r, (value, io)) in results.iter().enumerate() {
        if n > 1 {
            println!("replica {r}:");
        }
        println!("{}", crate::cmd_run::summary(value, a.full));
        for (i, v) in io.outfeed.iter().enumerate() {
            println!("outfeed[{i}]: {}", hlo::print_literal(v));
        }
        for (ch, v) in &io.host_send {
            println!("host_send channel {ch}: {}", hlo::print_literal(v));
        }
    }
    if let Some(p) = &a.outputs {
        let values: Vec<Literal> = results.iter().map(|(v, _)| v.clone()).collect();
        crate::npy::write_outputs(p, &values)?;
    }
    if let Some(path) = &a.json {
        let j = serde_json::json!({
            "outputs": results.iter().map(|(v, _)| literal_to_json(v)).collect::<Vec<_>>(),
            "outfeed": results.iter().map(|(_, io)| io.outfeed.iter().map(literal_to_json).collect::<Vec<_>>()).collect::<Vec<_>>(),
            "host_send": results.iter().map(|(_, io)| io.host_send.iter().map(|(c, v)| serde_json::json!({"channel_id": c, "value": literal_to_json(v)})).collect::<Vec<_>>()).collect::<Vec<_>>(),
        });
        std::fs::write(path, serde_json::to_string_pretty(&j)? + "\n")
            .map_err(|e| UserError(format!("{}: cannot write: {e}", path.display())))?;
    }
    Ok(Outcome::Ok)
}

fn run_one(dir: &Path, opts: &EvalOptions) -> CaseOutcome {
    match load_case_in(dir, &crate::bounded::budget()) {
        Ok(case) => run_case(&case, opts),
        Err(e) => CaseOutcome::Error(format!("bad case: {e}")),
    }
}

/// `systole conformance`.
pub fn conformance(a: ConformanceArgs) -> anyhow::Result<Outcome> {
    if a.engine == "sim" {
        return crate::cmd_run::conformance_sim(&a.dir, &a.arch, a.json);
    }
    if a.engine != "eval" {
        return Err(UserError(format!(
            "engine {:?} is not supported by `systole conformance` (\"eval\" or \"sim\")",
            a.engine
        ))
        .into());
    }
    let dirs = case_dirs(&a.dir).map_err(|e| UserError(e.to_string()))?;
    if dirs.is_empty() {
        return Err(UserError(format!(
            "{}: no case folders (with case.json) found",
            a.dir.display()
        ))
        .into());
    }
    let opts = eval_options();
    let (mut passed, mut failed) = (0usize, 0usize);
    let mut report = Vec::new();
    for d in &dirs {
        let name = d
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let out = run_one(d, &opts);
        let (status, msg) = match &out {
            CaseOutcome::Pass(note) => ("pass", note.clone().unwrap_or_default()),
            CaseOutcome::Mismatch(m) => ("mismatch", m.clone()),
            CaseOutcome::Error(e) => ("error", e.clone()),
        };
        if out.passed() {
            passed += 1;
        } else {
            failed += 1;
            println!("FAIL {name}: {status}: {}", msg.replace('\n', "\n    "));
        }
        report.push(serde_json::json!({"case": name, "status": status, "message": msg}));
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"engine": a.engine, "cases": report})
            )?
        );
    }
    println!("{passed} passed, {failed} failed");
    Ok(if failed == 0 {
        Outcome::Ok
    } else {
        Outcome::CheckFailed
    })
}
