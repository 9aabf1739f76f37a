//! Inlines `call` and `fusion` into the entry computation: the chip has one flat program per
//! core, and lowering fuses on its own terms. The callee's instructions are copied (renamed
//! `NAME.N` where a name is taken), its parameters replaced by the call's operands, and the
//! call's uses pointed at the copy of the callee's root. Repeats until none is left, so nested
//! calls inline too. The call's place becomes a dead `copy` of the inlined root (left to
//! [`super::dce`]), so post order reaches the inlined instructions where the call stood; the
//! inlined side effects and control flow (rng draws, host transfers, while, conditional) are
//! chained with control edges in the callee's order. Together these keep the order in which
//! the evaluator performs the callee's side effects (`passes/rng.rs` relies on it).

use super::dce::has_side_effect;
use super::{fresh_name, replace_uses};
use crate::error::CResult;
use crate::pass::Pass;
use hlo::{InstId, Module, Opcode};
use std::collections::{HashMap, HashSet};

/// See the module docs.
pub struct InlineCalls;

impl Pass for InlineCalls {
    fn name(&self) -> &'static str {
        "inline-calls"
    }

    fn run(&self, m: &mut Module) -> CResult<bool> {
        let mut changed = false;
        let comps: Vec<hlo::CompId> = m.comps.handles().collect();
        for entry in comps {
            changed |= inline_into(m, entry)?;
        }
        Ok(changed)
    }
}

/// Inlines every used `call`/`fusion` of computation `entry` (repeatedly, for nesting).
fn inline_into(m: &mut Module, entry: hlo::CompId) -> CResult<bool> {
    {
        let mut changed = false;
        // Instruction names are unique module-wide (the verifier checks it).
        let mut names: HashSet<String> = m
            .comps
            .values()
            .flat_map(|c| c.insts.values().map(|i| i.name.clone()))
            .collect();
        // Each round inlines the calls present at its start; bounded by the call depth, which
        // the verifier bounds (no recursion).
        loop {
            let calls: Vec<InstId> = m.comps[entry]
                .insts
                .iter()
                .filter(|(_, i)| matches!(i.opcode, Opcode::Call | Opcode::Fusion))
                .filter(|(h, _)| is_used(&m.comps[entry], *h))
                .map(|(h, _)| h)
                .collect();
            if calls.is_empty() {
                break;
            }
            for call in calls {
                let ci = m.comps[entry].insts[call].clone();
                let hlo::View::Call { callee } = ci.view() else {
                    continue;
                };
                let callee = m.comps[callee].clone();
                let mut map: HashMap<InstId, InstId> = HashMap::new();
                let mut last_effect: Option<InstId> = None;
                let order = callee.post_order().unwrap_or_default();
                for h in order {
                    let src = &callee.insts[h];
                    if src.opcode == Opcode::Parameter {
                        let n = src.parameter_number().unwrap_or(0);
                        if let Some(&op) = ci.operands.get(n) {
                            map.insert(h, op);
                        }
                        continue;
                    }
                    let mut ni = src.clone();
                    ni.operands = src.operands.iter().map(|o| map[o]).collect();
                    ni.attrs.control_predecessors = src
                        .attrs
                        .control_predecessors
                        .iter()
                        .filter_map(|o| map.get(o).copied())
                        .collect();
                    ni.name = fresh_name(&mut names, &src.name);
                    // Keep the call's place for error messages when the callee has none.
                    if ni.span.is_none() {
                        ni.span = ci.span;
                    }
                    let effect = has_side_effect(ni.opcode)
                        || matches!(ni.opcode, Opcode::While | Opcode::Conditional);
                    if effect {
                        if let Some(p) = last_effect {
                            if !ni.attrs.control_predecessors.contains(&p) {
                                ni.attrs.control_predecessors.push(p);
                            }
                        }
                    }
                    let nh = m.comps[entry].insts.push(ni);
                    if effect {
                        last_effect = Some(nh);
                    }
                    map.insert(h, nh);
                }
                let new_root = map[&callee.root];
                replace_uses(&mut m.comps[entry], call, new_root);
                // The call's place becomes a (dead) copy of the inlined root, so post order
                // still reaches the inlined instructions where the call was.
                let slot = &mut m.comps[entry].insts[call];
                slot.opcode = Opcode::Copy;
                slot.operands = vec![new_root];
                let preds = slot.attrs.control_predecessors.clone();
                slot.attrs = hlo::Attrs {
                    control_predecessors: preds,
                    ..Default::default()
                }
                .into();
                changed = true;
            }
        }
        Ok(changed)
    }
}

fn is_used(c: &hlo::Computation, h: InstId) -> bool {
    c.root == h
        || c.insts
            .values()
            .any(|i| i.operands.contains(&h) || i.attrs.control_predecessors.contains(&h))
}
