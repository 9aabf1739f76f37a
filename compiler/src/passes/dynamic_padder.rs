//! Bounded dynamic shapes as padded static arrays (a small version of XLA's `DynamicPadder`),
//! in the entry computation.
//!
//! A value with dynamic dimensions (`f32[<=7]`) becomes the static array of its bounds
//! (`f32[7]`) whose elements past the actual size are zero, plus one `s32[]` size per dynamic
//! dimension:
//!
//! * `set-dimension-size(x, n), dimensions={d}`: `n` clamped to `[0, bound]` (the evaluator
//!   rejects a size outside it as bad input; the chip has no error path, so it clamps), and
//!   `select(iota_d < n, x, 0)`;
//! * `get-dimension-size(x), dimensions={d}`: that size (a constant for a static dimension);
//! * elementwise ops of padded operands: the same op on the padded arrays (sizes carried);
//! * `reduce`: the padding replaced by the init value (`select` on `iota < size` per dynamic
//!   reduced dimension), then the static reduce.
//!
//! Any other use of a dynamic value is left as it is, and lowering refuses it (`not supported
//! on chip yet: dynamic dimensions`). Cost: one `vpu.iota`, compare and select per
//! `set-dimension-size` and per masked reduce (plus an `and` per extra dynamic dimension).

use super::replace_uses;
use super::rewrite::Rw;
use crate::error::CResult;
use crate::pass::Pass;
use hlo::{
    Attrs, ComparisonDirection as D, ElementType as T, InstId, Module, OpClass, Opcode, Shape,
};
use std::collections::HashMap;

/// See the module docs.
pub struct DynamicPadder;

/// A padded value: the static array and the size of each dynamic dimension.
#[derive(Clone)]
struct Padded {
    arr: InstId,
    sizes: Vec<Option<InstId>>,
}

fn static_shape(s: &Shape) -> Shape {
    match s {
        Shape::Array(a) => {
            let mut a = a.clone();
            a.dynamic = vec![false; a.dims.len()];
            Shape::Array(a)
        }
        s => s.clone(),
    }
}

fn is_dynamic(s: &Shape) -> bool {
    s.as_array().is_some_and(|a| a.is_dynamic())
}

impl Pass for DynamicPadder {
    fn name(&self) -> &'static str {
        "dynamic-padder"
    }

    fn run(&self, m: &mut Module) -> CResult<bool> {
        let c = m.entry;
        let any = m.comps[c].insts.values().any(|i| {
            matches!(
                i.opcode,
                Opcode::SetDimensionSize | Opcode::GetDimensionSize
            )
        });
        if !any {
            return Ok(false);
        }
        let Some(order) = m.comps[c].post_order() else {
            return Ok(false);
        };
        let mut pads: HashMap<InstId, Padded> = HashMap::new();
        let mut changed = false;
        for h in order {
            let i = m.comps[c].insts[h].clone();
            let mut rw = Rw::new(m, c, i.span);
            let dyn_ops: Vec<Option<Padded>> =
                i.operands.iter().map(|o| pads.get(o).cloned()).collect();
            let elementwise = matches!(
                i.opcode,
                Opcode::Compare | Opcode::Select | Opcode::Convert | Opcode::Clamp
            ) || matches!(i.opcode.class(), OpClass::Unary | OpClass::Binary);
            let result: Option<Padded> = match i.opcode {
                Opcode::SetDimensionSize => {
                    let hlo::View::DimensionSize { dimension: d } = i.view() else {
                        continue;
                    };
                    let Some(out) = i.shape.as_array() else {
                        continue;
                    };
                    let (x, mut sizes) = match &dyn_ops[0] {
                        Some(p) => (p.arr, p.sizes.clone()),
                        None => (i.operands[0], vec![None; out.dims.len()]),
                    };
                    if rw.arr(x)?.is_dynamic() || d >= out.dims.len() {
                        continue;
                    }
                    let dims = out.dims.clone();
                    let n = rw.convert(i.operands[1], T::S32)?;
                    let lo = rw.iconst(T::S32, 0)?;
                    let hi = rw.iconst(T::S32, dims[d] as u64)?;
                    let n = rw.op(Opcode::Clamp, &[lo, n, hi])?;
                    let io = rw.iota(T::S32, &dims, d as i64)?;
                    let nb = rw.splat(n, &dims)?;
                    let keep = rw.cmp(io, nb, D::Lt)?;
                    let ty = out.ty;
                    let z = zero(&mut rw, ty)?;
                    let zb = rw.splat(z, &dims)?;
                    let arr = rw.op(Opcode::Select, &[keep, x, zb])?;
                    sizes[d] = Some(n);
                    Some(Padded { arr, sizes })
                }
                Opcode::GetDimensionSize => {
                    let hlo::View::DimensionSize { dimension: d } = i.view() else {
                        continue;
                    };
                    let new = match dyn_ops[0].as_ref().and_then(|p| p.sizes.get(d).copied()) {
                        Some(Some(n)) => n,
                        _ => {
                            let a = rw.arr(i.operands[0])?;
                            if a.dynamic.get(d).copied().unwrap_or(true) {
                                continue;
                            }
                            rw.iconst(T::S32, a.dims[d] as u64)?
                        }
                    };
                    replace_uses(&mut m.comps[c], h, new);
                    changed = true;
                    continue;
                }
                _ if elementwise && dyn_ops.iter().any(Option::is_some) => {
                    let sizes = dyn_ops
                        .iter()
                        .flatten()
                        .next()
                        .map(|p| p.sizes.clone())
                        .unwrap_or_default();
                    let ops: Vec<InstId> = i
                        .operands
                        .iter()
                        .zip(&dyn_ops)
                        .map(|(&o, p)| p.as_ref().map_or(o, |p| p.arr))
                        .collect();
                    if ops.iter().any(|&o| is_dynamic(rw.shape(o))) {
                        continue;
                    }
                    let mut attrs: Attrs = (*i.attrs).clone();
                    attrs.control_predecessors.clear();
                    let arr = rw.add(i.opcode, &ops, attrs, Some(static_shape(&i.shape)))?;
                    Some(Padded { arr, sizes })
                }
                Opcode::Reduce if i.operands.len() == 2 && dyn_ops[0].is_some() => {
                    let p = dyn_ops[0].clone().expect("checked");
                    if dyn_ops[1].is_some() {
                        continue;
                    }
                    let hlo::View::Reduce { dimensions, .. } = i.view() else {
                        continue;
                    };
                    let rd: Vec<usize> = dimensions.iter().map(|&d| d as usize).collect();
                    let dims = rw.arr(p.arr)?.dims;
                    let mut keep: Option<InstId> = None;
                    for &d in &rd {
                        if let Some(Some(n)) = p.sizes.get(d) {
                            let io = rw.iota(T::S32, &dims, d as i64)?;
                            let nb = rw.splat(*n, &dims)?;
                            let k = rw.cmp(io, nb, D::Lt)?;
                            keep = Some(match keep {
                                None => k,
                                Some(a) => rw.op(Opcode::And, &[a, k])?,
                            });
                        }
                    }
                    let x = match keep {
                        Some(k) => {
                            let ib = rw.splat(i.operands[1], &dims)?;
                            rw.op(Opcode::Select, &[k, p.arr, ib])?
                        }
                        None => p.arr,
                    };
                    let mut attrs: Attrs = (*i.attrs).clone();
                    attrs.control_predecessors.clear();
                    let arr = rw.add(
                        Opcode::Reduce,
                        &[x, i.operands[1]],
                        attrs,
                        Some(static_shape(&i.shape)),
                    )?;
                    let sizes: Vec<Option<InstId>> = (0..dims.len())
                        .filter(|d| !rd.contains(d))
                        .map(|d| p.sizes.get(d).copied().flatten())
                        .collect();
                    Some(Padded { arr, sizes })
                }
                _ => continue,
            };
            let Some(p) = result else { continue };
            changed = true;
            if is_dynamic(&i.shape) {
                // Rewritten users read the padded form; others keep the dynamic value (refused
                // by lowering).
                pads.insert(h, p);
            } else {
                replace_uses(&mut m.comps[c], h, p.arr);
            }
        }
        Ok(changed)
    }
}

fn zero(rw: &mut Rw<'_>, ty: T) -> CResult<InstId> {
    if ty.is_float() {
        rw.fconst(ty, 0.0)
    } else if ty == T::Pred {
        rw.lit(hlo::Literal::scalar_pred(false))
    } else {
        rw.iconst(ty, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_sizes_match_the_evaluator() {
        let text = r#"
HloModule d

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[4,6]{1,0} parameter(0)
  n = s32[] parameter(1)
  xd = f32[4,<=6]{1,0} set-dimension-size(x, n), dimensions={1}
  y = f32[4,<=6]{1,0} multiply(xd, xd)
  zero = f32[] constant(0)
  rows = f32[4]{0} reduce(y, zero), dimensions={1}, to_apply=add
  g = s32[] get-dimension-size(y), dimensions={1}
  g0 = s32[] get-dimension-size(y), dimensions={0}
  ROOT t = (f32[4]{0}, s32[], s32[]) tuple(rows, g, g0)
}
"#;
        let (m, x) = crate::passes::testing::expand(text, &[&DynamicPadder]);
        assert!(!x.entry().insts.values().any(|i| is_dynamic(&i.shape)));
        let v: Vec<f32> = (0..24).map(|k| k as f32 * 0.5 - 3.0).collect();
        for n in [0, 3, 6] {
            let args = vec![
                hlo::Literal::array(vec![4, 6], hlo::ArrayData::F32(v.clone())),
                hlo::Literal::scalar_s32(n),
            ];
            let (want, have) = crate::passes::testing::eval_both(&m, &x, &args);
            assert_eq!(want, have, "n = {n}");
        }
    }
}
