//! Keeps the asynchronous collectives the chip overlaps with compute, and runs the others
//! synchronously.
//!
//! **Kept** (lowered as an issue at the start and a wait at the done, see
//! [`crate::lower::collective`]): in the entry computation or in a computation lowered like it
//! ([`control_comps`]: the conditions and bodies of its `while` loops and the branches of its
//! `conditional`s, transitively), an `all-reduce-start` of one array operand or of several (a
//! tuple of arrays: XLA's combined all-reduce of many gradients, one ring per element type),
//! an `all-gather-start` or a `collective-permute-start` of one operand, whose only user is
//! its done (in the same computation, so a start in a body completes in the same execution of
//! the body). Such a computation's `async-start`/`async-done` pair whose wrapped computation
//! is exactly one all-reduce (any number of operands), all-gather or collective-permute (one
//! operand) of its parameters is first rewritten into that collective's own start and done;
//! one wrapping exactly one reduce-scatter of its one parameter or one all-to-all stays an
//! `async-start`/`async-done` pair, issued asynchronously too ([`wraps_lowered_async`]). Lowering follows each
//! computation's instruction order (a post order that visits instructions in their textual
//! order), so the work XLA's scheduler placed between start and done is lowered between them.
//!
//! **The others run synchronously**: each `all-reduce-done`, `all-gather-done`,
//! `collective-permute-done` or `async-done` whose operand is its start (and the start has no
//! other user) is replaced by the synchronous op at the start's operands — `all-reduce`,
//! `all-gather`, `collective-permute` with the start's attributes, or a `call` of an
//! `async-start`'s wrapped computation (inlined later by [`super::inline_calls`]). The starts
//! become dead and [`super::dce`] removes them.
//!
//! This gives the right values and the collective's own cost, but no overlap of the transfer
//! with the compute scheduled between start and done (a limitation stated in docs/ici.md).
//! Starts with other users (e.g. a `get-tuple-element` of a context) are left alone and reach
//! lowering, which refuses them as not supported yet ("… whose value is used other than by its
//! done").

use super::replace_uses;
use crate::error::CResult;
use crate::pass::Pass;
use hlo::{InstId, Instruction, Module, Opcode};

/// See the module docs.
pub struct SyncAsync;

/// Whether the start `s` (whose only user is its done, in one of [`control_comps`]) stays
/// asynchronous.
pub fn kept(s: &Instruction) -> bool {
    match s.opcode {
        // Several operands (XLA's combined all-reduce of many gradients): a tuple of arrays.
        Opcode::AllReduceStart => match &s.shape {
            hlo::Shape::Array(_) => s.operands.len() == 1,
            hlo::Shape::Tuple(ts) => {
                !s.operands.is_empty() && ts.iter().all(|t| t.as_array().is_some())
            }
            hlo::Shape::Token => false,
        },
        Opcode::AllGatherStart | Opcode::CollectivePermuteStart => s.operands.len() == 1,
        _ => false,
    }
}

/// Whether `start` is an `async-start` whose computation is exactly one reduce-scatter of its
/// one parameter, or one all-to-all of its parameters (array form: one): kept as the
/// `async-start`/`async-done` pair, which lowering issues asynchronously (XLA has no
/// `reduce-scatter-start` or `all-to-all-start`; FSDP-style sharding reduce-scatters
/// gradients this way, expert and sequence parallelism all-to-all).
pub fn wraps_lowered_async(m: &Module, start: &Instruction) -> bool {
    let Some(c) = start.attrs.calls else {
        return false;
    };
    let comp = &m.comps[c];
    let params = comp.parameters();
    let root = &comp.insts[comp.root];
    let one = start.operands.len() == 1 && root.shape.as_array().is_some();
    start.opcode == Opcode::AsyncStart
        && !start.operands.is_empty()
        && comp.insts.len() == params.len() + 1
        && root.operands == params
        && match root.opcode {
            Opcode::ReduceScatter => one,
            Opcode::AllToAll => one || root.attrs.dimensions.is_none(),
            _ => false,
        }
}

/// The collective an `async-start` wraps, if its computation is exactly one all-reduce,
/// all-gather or collective-permute of its parameters in order: `(start, done opcodes, the
/// collective's attributes, the start's shape)`.
fn wrapped_collective(
    m: &Module,
    start: &Instruction,
) -> Option<(Opcode, Opcode, hlo::Attrs, hlo::Shape)> {
    let comp = &m.comps[start.attrs.calls?];
    let params = comp.parameters();
    let root = &comp.insts[comp.root];
    if comp.insts.len() != params.len() + 1 || root.operands != params {
        return None;
    }
    let (s, d) = match root.opcode {
        Opcode::AllReduce => (Opcode::AllReduceStart, Opcode::AllReduceDone),
        Opcode::AllGather => (Opcode::AllGatherStart, Opcode::AllGatherDone),
        Opcode::CollectivePermute => (
            Opcode::CollectivePermuteStart,
            Opcode::CollectivePermuteDone,
        ),
        _ => return None,
    };
    let shape = match s {
        Opcode::AllReduceStart => root.shape.clone(),
        _ => {
            let x = comp.insts[params[0]].shape.clone();
            hlo::Shape::Tuple(vec![x, root.shape.clone()])
        }
    };
    Some((s, d, (*root.attrs).clone(), shape))
}

/// The computations lowered as straight-line code with the entry's machinery: the entry and,
/// transitively, the conditions and bodies of its `while` loops and the branches of its
/// `conditional`s (each lowered in its textual order, its start and done in one execution).
pub fn control_comps(m: &Module) -> Vec<hlo::CompId> {
    let mut out = vec![m.entry];
    let mut k = 0;
    while k < out.len() {
        let c = out[k];
        k += 1;
        for i in m.comps[c].insts.values() {
            if matches!(i.opcode, Opcode::While | Opcode::Conditional) {
                for x in i.attrs.called_computations() {
                    if !out.contains(&x) {
                        out.push(x);
                    }
                }
            }
        }
    }
    out
}

/// Rewrites the `async-start`/`async-done` pairs of computation `e` that wrap one collective
/// of one operand into that collective's own start/done (which lowering keeps asynchronous).
fn unwrap_async(m: &mut Module, e: hlo::CompId) -> bool {
    let comp = &m.comps[e];
    let mut users = vec![Vec::new(); comp.insts.len()];
    for (h, i) in comp.insts.iter() {
        for o in &i.operands {
            users[o.index()].push(h);
        }
    }
    let mut rewrites = Vec::new();
    for (h, i) in comp.insts.iter() {
        if i.opcode != Opcode::AsyncStart || i.operands.is_empty() || comp.root == h {
            continue;
        }
        let [d] = users[h.index()][..] else { continue };
        if comp.insts[d].opcode != Opcode::AsyncDone {
            continue;
        }
        match wrapped_collective(m, i) {
            // Only all-reduce takes several operands.
            Some(w) if i.operands.len() == 1 || w.0 == Opcode::AllReduceStart => {
                rewrites.push((h, d, w))
            }
            _ => {}
        }
    }
    let changed = !rewrites.is_empty();
    for (h, d, (so, dop, attrs, shape)) in rewrites {
        let comp = &mut m.comps[e];
        let st = &mut comp.insts[h];
        st.opcode = so;
        st.shape = shape;
        *st.attrs = attrs;
        let dn = &mut comp.insts[d];
        dn.opcode = dop;
        *dn.attrs = hlo::Attrs::default();
    }
    changed
}

impl Pass for SyncAsync {
    fn name(&self) -> &'static str {
        "sync-async"
    }

    fn run(&self, m: &mut Module) -> CResult<bool> {
        let control = control_comps(m);
        let mut changed = false;
        for &c in &control {
            changed |= unwrap_async(m, c);
        }
        let comps: Vec<hlo::CompId> = m.comps.handles().collect();
        for c in comps {
            let comp = &m.comps[c];
            let mut users = vec![0usize; comp.insts.len()];
            for i in comp.insts.values() {
                for o in &i.operands {
                    users[o.index()] += 1;
                }
            }
            let lowered = control.contains(&c);
            let dones: Vec<(InstId, InstId)> = comp
                .insts
                .iter()
                .filter(|(_, i)| {
                    matches!(
                        i.opcode,
                        Opcode::AllReduceDone
                            | Opcode::AllGatherDone
                            | Opcode::CollectivePermuteDone
                            | Opcode::AsyncDone
                    ) && i.operands.len() == 1
                })
                .map(|(h, i)| (h, i.operands[0]))
                .filter(|&(_, s)| users[s.index()] == 1 && comp.root != s)
                .filter(|&(_, s)| {
                    !(lowered && (kept(&comp.insts[s]) || wraps_lowered_async(m, &comp.insts[s])))
                })
                .collect();
            for (done, start) in dones {
                let comp = &m.comps[c];
                let (d, s) = (&comp.insts[done], &comp.insts[start]);
                let op = match (d.opcode, s.opcode) {
                    (Opcode::AllReduceDone, Opcode::AllReduceStart) => Opcode::AllReduce,
                    (Opcode::AllGatherDone, Opcode::AllGatherStart) => Opcode::AllGather,
                    (Opcode::CollectivePermuteDone, Opcode::CollectivePermuteStart) => {
                        Opcode::CollectivePermute
                    }
                    (Opcode::AsyncDone, Opcode::AsyncStart) => Opcode::Call,
                    _ => continue,
                };
                let mut attrs = s.attrs.clone();
                if op == Opcode::Call {
                    attrs.to_apply = attrs.calls.take();
                }
                let mut name = format!("{}.sync", d.name);
                while m
                    .comps
                    .values()
                    .any(|c| c.insts.values().any(|i| i.name == name))
                {
                    name.push('_');
                }
                let comp = &m.comps[c];
                let (d, s) = (&comp.insts[done], &comp.insts[start]);
                let sync = Instruction {
                    name,
                    opcode: op,
                    shape: d.shape.clone(),
                    operands: s.operands.clone(),
                    attrs,
                    span: d.span,
                };
                let comp = &mut m.comps[c];
                let h = comp.insts.push(sync);
                replace_uses(comp, done, h);
                changed = true;
            }
        }
        Ok(changed)
    }
}
