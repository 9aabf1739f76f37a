//! Dead code elimination: rebuilds the entry computation's arena with only the instructions
//! the root needs (through operands and control edges) and those with side effects (host and
//! device transfers, custom calls, RNG state), in their original relative order.

use crate::error::CResult;
use crate::pass::Pass;
use hlo::{Arena, InstId, Module, Opcode};

/// See the module docs.
pub struct Dce;

/// Opcodes whose instructions are kept even when nothing uses their value.
pub fn has_side_effect(op: Opcode) -> bool {
    use Opcode::*;
    matches!(
        op,
        Infeed
            | Outfeed
            | Send
            | SendDone
            | Recv
            | RecvDone
            | CustomCall
            | RngGetAndUpdateState
            | Rng
            | AfterAll
            | AllReduce
            | AllGather
            | AllToAll
            | CollectivePermute
            | ReduceScatter
    )
}

impl Pass for Dce {
    fn name(&self) -> &'static str {
        "dce"
    }

    fn run(&self, m: &mut Module) -> CResult<bool> {
        let mut changed = false;
        let comps: Vec<hlo::CompId> = m.comps.handles().collect();
        for c in comps {
            changed |= dce(&mut m.comps[c]);
        }
        Ok(changed)
    }
}

/// DCE of one computation (parameters are kept: they are its signature).
fn dce(c: &mut hlo::Computation) -> bool {
    {
        let n = c.insts.len();
        let mut live = vec![false; n];
        let mut stack: Vec<InstId> = vec![c.root];
        stack.extend(
            c.insts
                .iter()
                .filter(|(_, i)| has_side_effect(i.opcode) || i.opcode == Opcode::Parameter)
                .map(|(h, _)| h),
        );
        while let Some(h) = stack.pop() {
            if std::mem::replace(&mut live[h.index()], true) {
                continue;
            }
            let i = &c.insts[h];
            stack.extend(
                i.operands
                    .iter()
                    .chain(&i.attrs.control_predecessors)
                    .copied(),
            );
        }
        if live.iter().all(|&l| l) {
            return false;
        }
        let mut remap: Vec<Option<InstId>> = vec![None; n];
        let mut arena = Arena::new();
        for (h, i) in c.insts.iter() {
            if live[h.index()] {
                remap[h.index()] = Some(arena.push(i.clone()));
            }
        }
        for i in arena.values_mut() {
            for o in i
                .operands
                .iter_mut()
                .chain(i.attrs.control_predecessors.iter_mut())
            {
                *o = remap[o.index()].expect("a live instruction's operands are live");
            }
        }
        c.root = remap[c.root.index()].expect("root is live");
        c.insts = arena;
        true
    }
}
