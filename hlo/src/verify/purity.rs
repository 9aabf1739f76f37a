//! Computations applied per element or per reduction step (the `to_apply` of reduce,
//! reduce-window, scatter, sort, map, all-reduce and reduce-scatter, and the `select` and
//! `scatter` of select-and-scatter) must be pure: the order and number of their invocations
//! is unspecified, so they may not contain side effects (infeed, outfeed, send, recv,
//! collectives, rng, side-effecting custom-calls), directly or through the computations they
//! call.

use crate::diag::Diagnostic;
use crate::ir::{CompId, Module};
use crate::opcode::Opcode;

/// Whether one instruction has a side effect by itself.
fn side_effect(op: Opcode, has_side_effect: bool) -> bool {
    use Opcode as O;
    matches!(
        op,
        O::Infeed
            | O::Outfeed
            | O::Send
            | O::SendDone
            | O::Recv
            | O::RecvDone
            | O::AllReduce
            | O::AllReduceStart
            | O::AllReduceDone
            | O::AllGather
            | O::AllGatherStart
            | O::AllGatherDone
            | O::AllToAll
            | O::CollectivePermute
            | O::CollectivePermuteStart
            | O::CollectivePermuteDone
            | O::CollectiveBroadcast
            | O::ReduceScatter
            | O::RaggedAllToAll
            | O::Rng
            | O::RngGetAndUpdateState
    ) || (op == O::CustomCall && has_side_effect)
}

/// The first side-effecting instruction reachable from each computation, if any. The call
/// graph must be acyclic (checked before); the walk is iterative, so long call chains cannot
/// overflow the stack.
fn impure_witness(m: &Module) -> Vec<Option<String>> {
    let n = m.comps.len();
    let mut memo: Vec<Option<Option<String>>> = vec![None; n];
    for start in m.comps.handles() {
        // (computation, callees still to visit)
        let mut stack: Vec<(CompId, Vec<CompId>)> = Vec::new();
        if memo[start.index()].is_none() {
            stack.push((start, callees(m, start)));
        }
        while let Some((c, pending)) = stack.last_mut() {
            if let Some(next) = pending.pop() {
                if memo[next.index()].is_none() {
                    let cs = callees(m, next);
                    stack.push((next, cs));
                }
                continue;
            }
            let c = *c;
            stack.pop();
            let comp = &m.comps[c];
            let own = comp
                .insts
                .values()
                .find(|i| side_effect(i.opcode, i.attrs.custom_call_has_side_effect == Some(true)))
                .map(|i| format!("`{}` ({})", i.name, i.opcode));
            let found = own.or_else(|| {
                callees(m, c)
                    .into_iter()
                    .find_map(|k| memo[k.index()].clone().flatten())
            });
            memo[c.index()] = Some(found);
        }
    }
    memo.into_iter().map(Option::flatten).collect()
}

/// The computations `c` calls, in instruction order.
fn callees(m: &Module, c: CompId) -> Vec<CompId> {
    let mut v: Vec<CompId> = m.comps[c]
        .insts
        .values()
        .flat_map(|i| {
            super::structure::called_computations(&i.attrs)
                .into_iter()
                .map(|(_, k)| k)
        })
        .collect();
    v.reverse();
    v
}

/// Reports every instruction that applies an impure computation per element.
pub(super) fn check(m: &Module, push: &mut dyn FnMut(usize, usize, Diagnostic)) {
    let witness = impure_witness(m);
    for (ci, comp) in m.comps.iter() {
        for (ii, inst) in comp.insts.iter() {
            use Opcode as O;
            let slots: Vec<(&str, Option<CompId>)> = match inst.opcode {
                O::Reduce
                | O::ReduceWindow
                | O::Scatter
                | O::Sort
                | O::Map
                | O::AllReduce
                | O::AllReduceStart
                | O::ReduceScatter => {
                    vec![("to_apply", inst.attrs.to_apply)]
                }
                O::SelectAndScatter => vec![
                    ("select", inst.attrs.select),
                    ("scatter", inst.attrs.scatter),
                ],
                _ => continue,
            };
            for (slot, c) in slots {
                let Some(c) = c else { continue };
                if let Some(w) = &witness[c.index()] {
                    push(ci.index(), ii.index(), Diagnostic::new(inst.span, format!(
                        "{} `{}`: {slot} computation `{}` contains the side-effecting instruction {w}; computations applied per element must be pure",
                        inst.opcode, inst.name, m.comps[c].name
                    )));
                }
            }
        }
    }
}
