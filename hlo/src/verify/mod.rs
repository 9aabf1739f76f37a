//! The verifier: checks that a module obeys every rule of the specification, so that every
//! later stage (evaluator, compiler, simulator) may rely on them.
//!
//! Checks, in order:
//! 1. module header: `replica_count`, `num_partitions` and their product (devices) in range;
//!    collective groups are checked in the id space of their group mode
//!    ([`crate::infer::GroupMode`]);
//! 2. structure ([`structure`]): unique computation and instruction names, an entry
//!    computation, roots present, operand and control-predecessor handles in range, an
//!    acyclic operand graph, parameter numbers dense from 0 and unique, called computations
//!    present and the call graph acyclic (no recursion), the entry computation layout matching
//!    the entry computation;
//! 3. every instruction ([`check_instruction`]): shapes well formed (ranks, byte sizes,
//!    nesting, layouts), operand count per the opcode table, and the declared result shape
//!    equal (ignoring layouts) to the one [`crate::infer::infer_shape`] computes from the
//!    operands and attributes, which enforces each op's documented constraints;
//! 4. computations applied per element (reducers, comparators, map functions) are pure
//!    ([`purity`]).
//!
//! All problems found are reported (at most one shape problem per instruction), in source
//! order, each at the offending instruction's span (the instruction name), with notes naming
//! the computations it calls. An instruction whose operand is itself in error is skipped, so
//! one mistake is reported once.

mod purity;
mod structure;
#[cfg(test)]
mod tests;

use crate::diag::{Diagnostic, Error, Span};
use crate::infer::{check_shape, infer_shape, InferCtx, MAX_REPLICAS};
use crate::ir::{CompId, Computation, Module};
use crate::shape::{ProgramShape, Shape};

/// A module that passed [`verify`]: what the later stages (the compiler, the evaluator) take
/// instead of a bare [`Module`], so that none of them can run on a module the verifier has not
/// accepted. It owns the module and gives only shared access to it ([`std::ops::Deref`]); a
/// changed module (a pass's output) is a new [`Module`] and must be verified again.
#[derive(Clone, Debug)]
pub struct VerifiedModule(Module);

impl VerifiedModule {
    /// The module, to change it (the proof is gone).
    pub fn into_inner(self) -> Module {
        self.0
    }
}

impl std::ops::Deref for VerifiedModule {
    type Target = Module;
    fn deref(&self) -> &Module {
        &self.0
    }
}

/// Verifies `m` and returns it as a [`VerifiedModule`]; on failure [`Error::Verify`] with every
/// problem found.
pub fn verified(m: Module) -> Result<VerifiedModule, Error> {
    verify(&m)?;
    Ok(VerifiedModule(m))
}

/// Verifies `m`; on failure returns [`Error::Verify`] with every problem found.
pub fn verify(m: &Module) -> Result<(), Error> {
    let mut diags: Vec<(usize, usize, Diagnostic)> = Vec::new();
    let mut push = |c: usize, i: usize, d: Diagnostic| diags.push((c, i, d));
    let rc = m.replica_count();
    if !(1..=MAX_REPLICAS).contains(&rc) {
        push(
            0,
            0,
            Diagnostic::new(
                Span::NONE,
                format!("replica_count={rc} must be in 1..={MAX_REPLICAS}"),
            ),
        );
    }
    let np = m.config.num_partitions.unwrap_or(1);
    if !(1..=MAX_REPLICAS).contains(&np) || rc.saturating_mul(np) > MAX_REPLICAS {
        push(
            0,
            0,
            Diagnostic::new(
                Span::NONE,
                format!(
                    "num_partitions={np} must be in 1..={MAX_REPLICAS}, and replica_count × \
                     num_partitions (devices) at most {MAX_REPLICAS}"
                ),
            ),
        );
    }
    let ok = structure::check(m, &mut push);
    if ok {
        // Structure is sound: handles are in range and the graphs are acyclic.
        let sigs: Vec<ProgramShape> = m.comps.values().map(Computation::program_shape).collect();
        let called = |c: CompId| sigs.get(c.index()).cloned();
        let cx = InferCtx {
            called: &called,
            replica_count: rc.clamp(1, MAX_REPLICAS),
            num_partitions: np.clamp(1, MAX_REPLICAS),
        };
        purity::check(m, &mut push);
        for (ci, comp) in m.comps.iter() {
            check_computation(&cx, m, comp, &mut |i, d| push(ci.index(), i, d));
        }
    }
    if diags.is_empty() {
        return Ok(());
    }
    diags.sort_by_key(|(c, i, _)| (*c, *i));
    Err(Error::Verify(
        diags.into_iter().map(|(_, _, d)| d).collect(),
    ))
}

/// Checks every instruction of `comp` in operand order; `push(instruction index, diag)`.
fn check_computation(
    cx: &InferCtx,
    m: &Module,
    comp: &Computation,
    push: &mut dyn FnMut(usize, Diagnostic),
) {
    let order = comp.post_order().expect("structure checked acyclic");
    let mut bad = vec![false; comp.insts.len()];
    for h in order {
        let inst = &comp.insts[h];
        if inst.operands.iter().any(|o| bad[o.index()]) {
            bad[h.index()] = true;
            continue;
        }
        if let Err(msg) = check_instruction(cx, comp, h) {
            bad[h.index()] = true;
            let mut d =
                Diagnostic::new(inst.span, format!("{} `{}`: {msg}", inst.opcode, inst.name));
            // Point at the computations the instruction calls: the mistake may be there.
            for (attr, c) in structure::called_computations(&inst.attrs) {
                let callee = &m.comps[c];
                let at = if callee.span.is_none() {
                    String::new()
                } else {
                    format!(" at {}:{}", callee.span.line, callee.span.col)
                };
                d = d.with_note(format!(
                    "{attr}=`{}`{at} has signature {}",
                    callee.name,
                    callee.program_shape()
                ));
            }
            push(h.index(), d);
        }
    }
}

/// Checks one instruction: its shape is well formed and equals the inferred one.
pub fn check_instruction(
    cx: &InferCtx,
    comp: &Computation,
    h: crate::ir::InstId,
) -> Result<(), String> {
    let inst = &comp.insts[h];
    check_shape(&inst.shape).map_err(|e| format!("result shape {}: {e}", inst.shape))?;
    let operands: Vec<&Shape> = inst
        .operands
        .iter()
        .map(|&o| &comp.insts[o].shape)
        .collect();
    let inferred = infer_shape(cx, inst.opcode, &operands, &inst.attrs, Some(&inst.shape))?;
    if !inferred.compatible(&inst.shape) {
        return Err(format!(
            "declared shape {} does not match the inferred shape {inferred}",
            inst.shape
        ));
    }
    Ok(())
}
