//! Common subexpression elimination: in each computation, an instruction equal to an earlier
//! one (same opcode, result shape, operands after earlier replacements, and attributes —
//! constants included, up to [`MAX_CONSTANT_ELEMENTS`]) is replaced by it everywhere; the
//! duplicate is left for `dce`.
//!
//! Never merged: instructions with side effects or an identity of their own ([`crate::passes::
//! dce::has_side_effect`], parameters, the async and collective forms, infeed/outfeed tokens,
//! control flow, which runs computations), and instructions with control predecessors. An
//! instruction is visited after its operands (post order), so one walk folds chains: two
//! `add(exp(x), y)` become one once their `exp(x)` are one.

use crate::error::CResult;
use crate::pass::Pass;
use crate::passes::dce::has_side_effect;
use hlo::{Computation, InstId, Module, Opcode};
use std::collections::HashMap;

/// See the module docs.
pub struct Cse;

/// Constants with more elements than this are not compared (their key would be their data).
pub const MAX_CONSTANT_ELEMENTS: usize = 4096;

/// Whether instructions of `op` may be merged with an equal one.
pub(crate) fn mergeable(op: Opcode) -> bool {
    use Opcode::*;
    !has_side_effect(op)
        && !matches!(
            op,
            Parameter
                | While
                | Conditional
                | Call
                | Fusion
                | Map
                | AsyncStart
                | AsyncUpdate
                | AsyncDone
                | AllReduceStart
                | AllReduceDone
                | AllGatherStart
                | AllGatherDone
                | CollectivePermuteStart
                | CollectivePermuteDone
                | CollectiveBroadcast
                | CopyStart
                | CopyDone
                | RngBitGenerator
                | OptimizationBarrier
        )
}

impl Pass for Cse {
    fn name(&self) -> &'static str {
        "cse"
    }

    fn run(&self, m: &mut Module) -> CResult<bool> {
        let mut changed = false;
        let comps: Vec<hlo::CompId> = m.comps.handles().collect();
        for c in comps {
            changed |= cse(&mut m.comps[c]);
        }
        Ok(changed)
    }
}

fn cse(c: &mut Computation) -> bool {
    let Some(order) = c.post_order() else {
        return false;
    };
    let mut repl: Vec<InstId> = c.insts.handles().collect();
    let mut seen: HashMap<String, InstId> = HashMap::new();
    let mut changed = false;
    for h in order {
        let i = &mut c.insts[h];
        for o in i.operands.iter_mut() {
            *o = repl[o.index()];
        }
        if !mergeable(i.opcode) || !i.attrs.control_predecessors.is_empty() {
            continue;
        }
        if i.opcode == Opcode::Constant
            && i.literal().is_some_and(|l| {
                l.as_array()
                    .is_none_or(|a| a.element_count() > MAX_CONSTANT_ELEMENTS)
            })
        {
            continue;
        }
        let key = format!(
            "{:?}|{:?}|{:?}|{:?}",
            i.opcode, i.shape, i.operands, *i.attrs
        );
        match seen.get(&key) {
            Some(&first) => {
                repl[h.index()] = first;
                changed = true;
            }
            None => {
                seen.insert(key, h);
            }
        }
    }
    if changed {
        for i in c.insts.values_mut() {
            for o in i
                .operands
                .iter_mut()
                .chain(i.attrs.control_predecessors.iter_mut())
            {
                *o = repl[o.index()];
            }
        }
        c.root = repl[c.root.index()];
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(m: &Module, op: Opcode) -> usize {
        m.entry().insts.values().filter(|i| i.opcode == op).count()
    }

    #[test]
    fn equal_chains_merge_and_side_effects_do_not() {
        let text = "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  y = f32[4] parameter(1)\n  \
                    e1 = f32[4] exponential(x)\n  e2 = f32[4] exponential(x)\n  \
                    a1 = f32[4] add(e1, y)\n  a2 = f32[4] add(e2, y)\n  \
                    c1 = f32[] constant(2)\n  c2 = f32[] constant(2)\n  c3 = f32[] constant(3)\n  \
                    b1 = f32[4] broadcast(c1), dimensions={}\n  b2 = f32[4] broadcast(c2), dimensions={}\n  \
                    b3 = f32[4] broadcast(c3), dimensions={}\n  \
                    s = f32[4] subtract(a1, a2)\n  t = f32[4] multiply(b1, b2)\n  u = f32[4] multiply(t, b3)\n  \
                    r1 = f32[4] rng(c1, c3), distribution=rng_uniform\n  \
                    r2 = f32[4] rng(c1, c3), distribution=rng_uniform\n  \
                    v = f32[4] add(r1, r2)\n  \
                    ROOT o = (f32[4], f32[4], f32[4]) tuple(s, u, v)\n}\n";
        let mut m = hlo::parse(text).unwrap();
        hlo::verify(&m).unwrap();
        assert!(Cse.run(&mut m).unwrap());
        crate::passes::dce::Dce.run(&mut m).unwrap();
        hlo::verify(&m).unwrap();
        // One exp, one add feeding the subtract twice, one constant 2 (and one 3), one
        // broadcast of each; both rngs stay (each draws new numbers).
        assert_eq!(count(&m, Opcode::Exp), 1);
        assert_eq!(count(&m, Opcode::Add), 2);
        assert_eq!(count(&m, Opcode::Constant), 2);
        assert_eq!(count(&m, Opcode::Broadcast), 2);
        assert_eq!(count(&m, Opcode::Rng), 2);
        let c = m.entry();
        let s = c.insts.values().find(|i| i.name == "s").unwrap();
        assert_eq!(s.operands[0], s.operands[1]);
        // A second run finds nothing more.
        assert!(!Cse.run(&mut m).unwrap());
    }
}
