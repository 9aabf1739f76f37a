//! Algebraic simplification that needs no numerics: forwards `copy`, and `reshape`,
//! `broadcast`, `transpose`, `convert` and `bitcast` that do not change their operand's
//! dimensions, element type and layout; folds `reshape(reshape(x))` into `reshape(x)`. Uses are
//! redirected; the dead instructions are left to [`super::dce`].

use super::replace_uses;
use crate::error::CResult;
use crate::pass::Pass;
use hlo::{InstId, Module, Opcode, Shape};

/// See the module docs.
pub struct Simplify;

fn same_shape(a: &Shape, b: &Shape) -> bool {
    match (a.as_array(), b.as_array()) {
        (Some(x), Some(y)) => x.ty == y.ty && x.dims == y.dims && x.layout == y.layout,
        _ => false,
    }
}

impl Pass for Simplify {
    fn name(&self) -> &'static str {
        "simplify"
    }

    fn run(&self, m: &mut Module) -> CResult<bool> {
        let mut changed = false;
        let comps: Vec<hlo::CompId> = m.comps.handles().collect();
        for c in comps {
            changed |= simplify(&mut m.comps[c]);
        }
        Ok(changed)
    }
}

fn simplify(c: &mut hlo::Computation) -> bool {
    {
        let mut changed = false;
        let order: Vec<InstId> = c.post_order().unwrap_or_default();
        for h in order {
            let i = &c.insts[h];
            let Some(&op0) = i.operands.first() else {
                continue;
            };
            let src_shape = &c.insts[op0].shape;
            let identity = match i.opcode {
                Opcode::Copy | Opcode::Reshape | Opcode::Bitcast | Opcode::Convert => {
                    same_shape(&i.shape, src_shape)
                }
                Opcode::Broadcast | Opcode::Transpose => {
                    let dims = i.attrs.dimensions.clone().unwrap_or_default();
                    same_shape(&i.shape, src_shape)
                        && dims.iter().enumerate().all(|(k, &d)| d == k as i64)
                }
                _ => false,
            };
            if identity && i.attrs.control_predecessors.is_empty() {
                replace_uses(c, h, op0);
                changed = true;
                continue;
            }
            if i.opcode == Opcode::Reshape && c.insts[op0].opcode == Opcode::Reshape {
                let inner = c.insts[op0].operands[0];
                c.insts[h].operands[0] = inner;
                changed = true;
            }
        }
        changed
    }
}
