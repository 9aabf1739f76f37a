//! Structural rules: names, handles, roots, parameter numbering, the call graph and the entry
//! computation layout. These run before shape checks, which rely on handles being in range
//! and graphs being acyclic.

use crate::attrs::Attrs;
use crate::diag::{Diagnostic, Span};
use crate::infer::check_shape;
use crate::ir::{CompId, Module};
use crate::opcode::Opcode;
use std::collections::BTreeMap;

/// Every computation an instruction calls, with the attribute naming it.
pub fn called_computations(a: &Attrs) -> Vec<(&'static str, CompId)> {
    let mut v = Vec::new();
    let singles = [
        ("to_apply", a.to_apply),
        ("calls", a.calls),
        ("condition", a.condition),
        ("body", a.body),
        ("true_computation", a.true_computation),
        ("false_computation", a.false_computation),
        ("select", a.select),
        ("scatter", a.scatter),
    ];
    v.extend(singles.into_iter().filter_map(|(n, c)| c.map(|c| (n, c))));
    for c in a.branch_computations.iter().flatten() {
        v.push(("branch_computations", *c));
    }
    for c in a.called_computations.iter().flatten() {
        v.push(("called_computations", *c));
    }
    v
}

/// Runs the structural checks; `push(computation index, instruction index, diag)`.
/// Returns whether the module is sound enough for shape checks (handles in range, acyclic).
pub(super) fn check(m: &Module, push: &mut dyn FnMut(usize, usize, Diagnostic)) -> bool {
    let nc = m.comps.len();
    if nc == 0 {
        push(
            0,
            0,
            Diagnostic::new(Span::NONE, "module has no computations"),
        );
        return false;
    }
    let mut sound = true;
    if m.entry.index() >= nc {
        push(
            0,
            0,
            Diagnostic::new(Span::NONE, "module has no ENTRY computation"),
        );
        sound = false;
    }
    // Unique names.
    let mut comp_names: BTreeMap<&str, Span> = BTreeMap::new();
    let mut inst_names: BTreeMap<&str, Span> = BTreeMap::new();
    for (ci, c) in m.comps.iter() {
        if let Some(prev) = comp_names.insert(&c.name, c.span) {
            push(
                ci.index(),
                0,
                Diagnostic::new(
                    c.span,
                    format!("computation name `{}` is already used{}", c.name, at(prev)),
                ),
            );
        }
        for (ii, inst) in c.insts.iter() {
            if let Some(prev) = inst_names.insert(&inst.name, inst.span) {
                push(
                    ci.index(),
                    ii.index(),
                    Diagnostic::new(
                        inst.span,
                        format!(
                            "instruction name `{}` is already used{}",
                            inst.name,
                            at(prev)
                        ),
                    ),
                );
            }
        }
    }
    for (ci, c) in m.comps.iter() {
        let mut p = |i: usize, d: Diagnostic| push(ci.index(), i, d);
        let n = c.insts.len();
        if n == 0 {
            p(
                0,
                Diagnostic::new(
                    c.span,
                    format!("computation `{}` has no instructions", c.name),
                ),
            );
            sound = false;
            continue;
        }
        if c.root.index() >= n {
            p(
                0,
                Diagnostic::new(
                    c.span,
                    format!("computation `{}` has no ROOT instruction", c.name),
                ),
            );
            sound = false;
        }
        let mut handles_ok = true;
        for (ii, inst) in c.insts.iter() {
            let bad = inst
                .operands
                .iter()
                .chain(&inst.attrs.control_predecessors)
                .find(|o| o.index() >= n);
            if let Some(o) = bad {
                p(ii.index(), Diagnostic::new(inst.span, format!("`{}` refers to instruction {o:?}, which does not exist in computation `{}`", inst.name, c.name)));
                handles_ok = false;
            }
            for (attr, cid) in called_computations(&inst.attrs) {
                if cid.index() >= nc {
                    p(
                        ii.index(),
                        Diagnostic::new(
                            inst.span,
                            format!(
                                "`{}`: {attr} names computation {cid:?}, which does not exist",
                                inst.name
                            ),
                        ),
                    );
                    handles_ok = false;
                } else if cid == m.entry {
                    p(
                        ii.index(),
                        Diagnostic::new(
                            inst.span,
                            format!(
                                "`{}`: {attr} calls the ENTRY computation `{}`",
                                inst.name, m.comps[cid].name
                            ),
                        ),
                    );
                }
            }
        }
        if !handles_ok {
            sound = false;
            continue;
        }
        if c.post_order().is_none() {
            // Find one instruction on a cycle to point at: the first one that reaches itself.
            let on_cycle = c
                .insts
                .handles()
                .find(|&h| reaches_self(c, h))
                .unwrap_or(c.root);
            let inst = &c.insts[on_cycle];
            p(
                on_cycle.index(),
                Diagnostic::new(
                    inst.span,
                    format!(
                        "`{}` depends on itself: the operand graph of computation `{}` has a cycle",
                        inst.name, c.name
                    ),
                ),
            );
            sound = false;
        }
        check_parameters(c, &mut p);
    }
    if sound {
        sound &= check_call_graph(m, push);
    }
    if sound {
        check_entry_layout(m, push);
    }
    sound
}

fn at(prev: Span) -> String {
    if prev.is_none() {
        String::new()
    } else {
        format!(" (first at {}:{})", prev.line, prev.col)
    }
}

/// Whether instruction `h` reaches itself through operands and control predecessors.
fn reaches_self(c: &crate::ir::Computation, h: crate::ir::InstId) -> bool {
    let n = c.insts.len();
    let mut seen = vec![false; n];
    let preds = |x: crate::ir::InstId| {
        let i = &c.insts[x];
        i.operands
            .iter()
            .chain(&i.attrs.control_predecessors)
            .copied()
            .collect::<Vec<_>>()
    };
    let mut stack = preds(h);
    while let Some(x) = stack.pop() {
        if x == h {
            return true;
        }
        if x.index() < n && !std::mem::replace(&mut seen[x.index()], true) {
            stack.extend(preds(x));
        }
    }
    false
}

/// Parameter numbers are unique and dense from 0.
fn check_parameters(c: &crate::ir::Computation, p: &mut dyn FnMut(usize, Diagnostic)) {
    let params: Vec<_> = c
        .insts
        .iter()
        .filter(|(_, i)| i.opcode == Opcode::Parameter)
        .collect();
    let count = params.len() as i64;
    let mut seen: BTreeMap<i64, &str> = BTreeMap::new();
    for (h, inst) in &params {
        let Some(k) = inst.attrs.parameter_number else {
            continue;
        };
        if k < 0 || k >= count {
            p(h.index(), Diagnostic::new(inst.span, format!(
                "parameter `{}` has number {k}, but computation `{}` has {count} parameters: numbers must be 0..{count} with no gaps",
                inst.name, c.name
            )));
        } else if let Some(prev) = seen.insert(k, &inst.name) {
            p(
                h.index(),
                Diagnostic::new(
                    inst.span,
                    format!(
                        "parameter number {k} of `{}` is already used by `{prev}`",
                        inst.name
                    ),
                ),
            );
        }
    }
}

/// A call edge: the calling instruction's index and the callee.
type CallEdge = (usize, CompId);

/// Called computations exist (checked by the caller) and no computation calls itself,
/// directly or indirectly.
fn check_call_graph(m: &Module, push: &mut dyn FnMut(usize, usize, Diagnostic)) -> bool {
    let nc = m.comps.len();
    // 0 = new, 1 = on stack, 2 = done
    let mut state = vec![0u8; nc];
    let mut ok = true;
    for start in m.comps.handles() {
        if state[start.index()] != 0 {
            continue;
        }
        // Stack of (computation, list of (caller instruction index, callee), next position).
        let mut stack: Vec<(CompId, Vec<CallEdge>, usize)> = Vec::new();
        let edges = |c: CompId| -> Vec<CallEdge> {
            m.comps[c]
                .insts
                .iter()
                .flat_map(|(h, i)| {
                    called_computations(&i.attrs)
                        .into_iter()
                        .map(move |(_, cid)| (h.index(), cid))
                })
                .collect()
        };
        state[start.index()] = 1;
        stack.push((start, edges(start), 0));
        while let Some((c, es, next)) = stack.last_mut() {
            if *next < es.len() {
                let (inst, callee) = es[*next];
                *next += 1;
                let c = *c;
                match state[callee.index()] {
                    0 => {
                        state[callee.index()] = 1;
                        let e = edges(callee);
                        stack.push((callee, e, 0));
                    }
                    1 => {
                        let i = &m.comps[c].insts[crate::ir::Handle::new(inst)];
                        push(c.index(), inst, Diagnostic::new(i.span, format!(
                            "`{}` calls computation `{}`, which is already on the call stack: recursion is not allowed",
                            i.name, m.comps[callee].name
                        )));
                        ok = false;
                    }
                    _ => {}
                }
            } else {
                state[c.index()] = 2;
                stack.pop();
            }
        }
    }
    ok
}

/// `entry_computation_layout` matches the entry computation's signature (ignoring layouts)
/// and its own layouts are well formed.
fn check_entry_layout(m: &Module, push: &mut dyn FnMut(usize, usize, Diagnostic)) {
    let Some(layout) = &m.config.entry_computation_layout else {
        return;
    };
    let entry = m.entry();
    let ei = m.entry.index();
    let sig = entry.program_shape();
    for s in layout.params.iter().chain(std::iter::once(&layout.result)) {
        if let Err(e) = check_shape(s) {
            push(
                ei,
                0,
                Diagnostic::new(
                    entry.span,
                    format!("entry_computation_layout shape {s}: {e}"),
                ),
            );
            return;
        }
    }
    let ok = layout.params.len() == sig.params.len()
        && layout
            .params
            .iter()
            .zip(&sig.params)
            .all(|(a, b)| a.compatible(b))
        && layout.result.compatible(&sig.result);
    if !ok {
        push(ei, 0, Diagnostic::new(entry.span, format!(
            "entry_computation_layout={layout} does not match the ENTRY computation `{}`, whose signature is {sig}",
            entry.name
        )));
    }
}
