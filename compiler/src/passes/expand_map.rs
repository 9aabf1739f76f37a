//! Expands `map` whose computation is elementwise into the ops themselves, applied to whole
//! arrays: the computation's parameters become the map's operands, each scalar constant a
//! `broadcast` of it to the map's shape, and every other instruction the same op with the map's
//! dimensions. Handled computations hold only parameters, scalar constants and elementwise ops
//! (unary and binary arithmetic, compare, select, convert, clamp); a map of anything else is left
//! alone, and lowering refuses it as not supported yet.

use super::{fresh_name, replace_uses};
use crate::error::CResult;
use crate::pass::Pass;
use hlo::{InstId, Instruction, Module, OpClass, Opcode, Shape};
use std::collections::{HashMap, HashSet};

/// See the module docs.
pub struct ExpandMap;

fn elementwise(i: &Instruction) -> bool {
    match i.opcode {
        Opcode::Parameter => true,
        Opcode::Constant => i.shape.as_array().is_some_and(|a| a.dims.is_empty()),
        Opcode::Compare | Opcode::Select | Opcode::Convert | Opcode::Clamp => true,
        op => matches!(op.class(), OpClass::Unary | OpClass::Binary),
    }
}

impl Pass for ExpandMap {
    fn name(&self) -> &'static str {
        "expand-map"
    }

    fn run(&self, m: &mut Module) -> CResult<bool> {
        let mut changed = false;
        let mut names: HashSet<String> = m
            .comps
            .values()
            .flat_map(|c| c.insts.values().map(|i| i.name.clone()))
            .collect();
        let comps: Vec<hlo::CompId> = m.comps.handles().collect();
        for c in comps {
            let maps: Vec<InstId> = m.comps[c]
                .insts
                .iter()
                .filter(|(_, i)| i.opcode == Opcode::Map)
                .map(|(h, _)| h)
                .collect();
            for h in maps {
                let mi = m.comps[c].insts[h].clone();
                let (hlo::View::Map { to_apply: f, .. }, Some(out)) =
                    (mi.view(), mi.shape.as_array().cloned())
                else {
                    continue;
                };
                let callee = m.comps[f].clone();
                if !callee.insts.values().all(elementwise) {
                    continue;
                }
                let Some(order) = callee.post_order() else {
                    continue;
                };
                let mut map: HashMap<InstId, InstId> = HashMap::new();
                for k in order {
                    let src = &callee.insts[k];
                    let ty = match src.shape.as_array() {
                        Some(a) => a.ty,
                        None => continue,
                    };
                    let whole = Shape::Array(out.with_type(ty));
                    let new = match src.opcode {
                        Opcode::Parameter => {
                            let n = src.parameter_number().unwrap_or(0);
                            if let Some(&op) = mi.operands.get(n) {
                                map.insert(k, op);
                            }
                            continue;
                        }
                        Opcode::Constant => {
                            let mut cst = src.clone();
                            cst.name = fresh_name(&mut names, &src.name);
                            cst.span = mi.span;
                            let ch = m.comps[c].insts.push(cst);
                            let mut b = Instruction {
                                name: fresh_name(&mut names, &format!("{}.bcast", src.name)),
                                opcode: Opcode::Broadcast,
                                shape: whole,
                                operands: vec![ch],
                                attrs: Default::default(),
                                span: mi.span,
                            };
                            b.attrs.dimensions = Some(vec![]);
                            b
                        }
                        _ => {
                            let mut ni = src.clone();
                            ni.shape = whole;
                            ni.operands = src.operands.iter().map(|o| map[o]).collect();
                            ni.attrs.control_predecessors.clear();
                            ni.name = fresh_name(&mut names, &src.name);
                            ni.span = mi.span;
                            ni
                        }
                    };
                    let nh = m.comps[c].insts.push(new);
                    map.insert(k, nh);
                }
                if let Some(&root) = map.get(&callee.root) {
                    replace_uses(&mut m.comps[c], h, root);
                    changed = true;
                }
            }
        }
        Ok(changed)
    }
}
