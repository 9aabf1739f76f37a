//! Keeps the asynchronous collectives the chip overlaps with compute, and runs the others
//! synchronously.
//!
//! **Kept** (lowered as an issue at the start and a wait at the done, see
//! [`crate::lower::collective`]): in the entry computation, an `all-reduce-start` of one array
//! operand, an `all-gather-start` or a `collective-permute-start` of one operand, whose only
//! user is its done. Lowering follows the entry's instruction
//! order (a post order that visits instructions in their textual order), so the work XLA's
//! scheduler placed between start and done is lowered between them.
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

/// Whether the start `s` (whose only user is its done, in the entry computation) stays
/// asynchronous.
pub fn kept(s: &Instruction) -> bool {
    s.operands.len() == 1
        && match s.opcode {
            Opcode::AllReduceStart => s.shape.as_array().is_some(),
            Opcode::AllGatherStart | Opcode::CollectivePermuteStart => true,
            _ => false,
        }
}

impl Pass for SyncAsync {
    fn name(&self) -> &'static str {
        "sync-async"
    }

    fn run(&self, m: &mut Module) -> CResult<bool> {
        let mut changed = false;
        let comps: Vec<hlo::CompId> = m.comps.handles().collect();
        for c in comps {
            let comp = &m.comps[c];
            let mut users = vec![0usize; comp.insts.len()];
            for i in comp.insts.values() {
                for o in &i.operands {
                    users[o.index()] += 1;
                }
            }
            let entry = c == m.entry;
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
                .filter(|&(_, s)| !(entry && kept(&comp.insts[s])))
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
