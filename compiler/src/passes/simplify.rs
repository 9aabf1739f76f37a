//! Algebraic simplification that needs no numerics: forwards `copy`, and `reshape`,
//! `broadcast`, `transpose`, `convert` and `bitcast` that do not change their operand's
//! dimensions, element type and layout, and `get-tuple-element` of a `tuple` (to the tuple's
//! operand); folds `reshape(reshape(x))` into `reshape(x)`, `transpose(transpose(x))` into one
//! transpose (or `x`, when the permutations cancel) and `broadcast(broadcast(x))` into one
//! broadcast; reads the narrow operands of `dot(convert(a), convert(b))` (and of a
//! `convolution` so written) directly when `a` and `b` are bf16 widened to an f32 result (or s8
//! to s32): every product of two bf16 (s8) values is exact in f32 (s32) and the accumulation is
//! the same, so the dot is the MXU's native one at any precision (XLA:CPU's post-optimization
//! HLO widens bf16 dots and convolutions this way). Uses are
//! redirected; the dead instructions are left to [`super::dce`].

use super::replace_uses;
use crate::error::CResult;
use crate::pass::Pass;
use hlo::{InstId, Module, Opcode, Shape};

/// See the module docs.
pub struct Simplify;

/// The dimensions of a broadcast or the permutation of a transpose (empty for other opcodes).
fn dims_of(i: &hlo::Instruction) -> &[i64] {
    match i.view() {
        hlo::View::Broadcast { dimensions } => dimensions,
        hlo::View::Transpose { permutation } => permutation,
        _ => &[],
    }
}

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
                    let dims = dims_of(i);
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
            if let Some(narrow) = narrow_dot_operands(c, h) {
                c.insts[h].operands = narrow;
                changed = true;
                continue;
            }
            let inner = &c.insts[op0];
            let fresh = i.attrs.control_predecessors.is_empty();
            match (i.opcode, inner.opcode) {
                (Opcode::Reshape, Opcode::Reshape) => {
                    let x = inner.operands[0];
                    c.insts[h].operands[0] = x;
                    changed = true;
                }
                (Opcode::GetTupleElement, Opcode::Tuple) if fresh => {
                    if let hlo::View::GetTupleElement { index } = i.view() {
                        if let Some(&x) = inner.operands.get(index) {
                            if c.insts[x].shape.without_layout() == i.shape.without_layout() {
                                replace_uses(c, h, x);
                                changed = true;
                            }
                        }
                    }
                }
                // transpose(transpose(x, p), q): result dim k is x's dim p[q[k]]; broadcast
                // (broadcast(x, p), q): x's dim j lands at q[p[j]].
                (Opcode::Transpose, Opcode::Transpose) | (Opcode::Broadcast, Opcode::Broadcast) => {
                    let (q, p) = (dims_of(i), dims_of(inner));
                    let composed: Option<Vec<i64>> = if i.opcode == Opcode::Transpose {
                        q.iter().map(|&k| p.get(k as usize).copied()).collect()
                    } else {
                        p.iter().map(|&j| q.get(j as usize).copied()).collect()
                    };
                    let Some(composed) = composed else { continue };
                    let x = inner.operands[0];
                    let ident = composed.iter().enumerate().all(|(k, &d)| d == k as i64);
                    if ident && same_shape(&i.shape, &c.insts[x].shape) && fresh {
                        replace_uses(c, h, x);
                    } else {
                        let me = &mut c.insts[h];
                        me.operands[0] = x;
                        me.attrs.dimensions = Some(composed);
                    }
                    changed = true;
                }
                _ => {}
            }
        }
        changed
    }
}

/// The operands of dot or convolution `h` before their widening converts, if both are widened
/// exactly as the module docs say.
fn narrow_dot_operands(c: &hlo::Computation, h: InstId) -> Option<Vec<InstId>> {
    use hlo::ElementType as T;
    let i = &c.insts[h];
    if !matches!(i.opcode, Opcode::Dot | Opcode::Convolution) || i.operands.len() != 2 {
        return None;
    }
    let out = i.shape.as_array()?.ty;
    let narrow = match out {
        T::F32 => T::BF16,
        T::S32 => T::S8,
        _ => return None,
    };
    i.operands
        .iter()
        .map(|&o| {
            let cv = &c.insts[o];
            let x = *cv.operands.first()?;
            let from = c.insts[x].shape.as_array()?.ty;
            let to = cv.shape.as_array()?.ty;
            (cv.opcode == Opcode::Convert && from == narrow && to == out).then_some(x)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::testing;
    use hlo::{ArrayData, Literal};

    #[test]
    fn transposes_broadcasts_and_tuple_elements_fold_to_one_op_or_none() {
        let text = r#"
HloModule s
ENTRY e {
  x = f32[2,3,4] parameter(0)
  y = f32[3] parameter(1)
  t1 = f32[3,4,2] transpose(x), dimensions={1,2,0}
  t2 = f32[4,2,3] transpose(t1), dimensions={1,2,0}
  t3 = f32[2,3,4] transpose(t2), dimensions={1,2,0}
  b1 = f32[3,4] broadcast(y), dimensions={0}
  b2 = f32[2,3,4] broadcast(b1), dimensions={1,2}
  tp = (f32[2,3,4], f32[4,2,3]) tuple(b2, t2)
  g0 = f32[2,3,4] get-tuple-element(tp), index=0
  g1 = f32[4,2,3] get-tuple-element(tp), index=1
  s = f32[2,3,4] add(t3, g0)
  ROOT r = (f32[2,3,4], f32[4,2,3]) tuple(s, g1)
}
"#;
        let (m, x) = testing::expand(text, &[&Simplify]);
        let e = x.entry();
        let count = |op: Opcode| e.insts.values().filter(|i| i.opcode == op).count();
        // t3 cancels t1·t2 (the add reads x); t2 reads x directly; one broadcast is left; the
        // get-tuple-elements read the tuple's operands.
        assert_eq!(count(Opcode::Transpose), 1);
        assert_eq!(count(Opcode::Broadcast), 1);
        assert_eq!(count(Opcode::GetTupleElement), 0);
        let add = e.insts.values().find(|i| i.opcode == Opcode::Add).unwrap();
        assert_eq!(e.insts[add.operands[0]].opcode, Opcode::Parameter);
        let xs: Vec<f32> = (0..24).map(|v| v as f32 * 0.5 - 3.0).collect();
        let args = [
            Literal::array(vec![2, 3, 4], ArrayData::F32(xs)),
            Literal::array(vec![3], ArrayData::F32(vec![1.0, -2.0, 4.0])),
        ];
        let (want, have) = testing::eval_both(&m, &x, &args);
        assert_eq!(want, have);
    }

    /// XLA:CPU widens bf16 dots to f32 (and s8 to s32): the dot reads the narrow values; a
    /// convert from f32, or to another type, is left alone.
    #[test]
    fn a_dot_of_widened_bf16_or_s8_operands_reads_them_narrow() {
        let text = r#"
HloModule s
ENTRY e {
  a = bf16[2,3] parameter(0)
  b = bf16[3,2] parameter(1)
  c = s8[2,3] parameter(2)
  d = s8[3,2] parameter(3)
  f = f32[3,2] parameter(4)
  a32 = f32[2,3] convert(a)
  b32 = f32[3,2] convert(b)
  c32 = s32[2,3] convert(c)
  d32 = s32[3,2] convert(d)
  x = f32[2,2] dot(a32, b32), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  y = s32[2,2] dot(c32, d32), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[2,2] dot(a32, f), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  cv = f32[2,2] convolution(a32, b32), dim_labels=bf_io->bf
  ROOT r = (f32[2,2], s32[2,2], f32[2,2], f32[2,2]) tuple(x, y, z, cv)
}
"#;
        let (m, x) = testing::expand(text, &[&Simplify]);
        let e = x.entry();
        let dots: Vec<Vec<Opcode>> = e
            .insts
            .values()
            .filter(|i| matches!(i.opcode, Opcode::Dot | Opcode::Convolution))
            .map(|i| i.operands.iter().map(|&o| e.insts[o].opcode).collect())
            .collect();
        assert_eq!(
            dots,
            vec![
                vec![Opcode::Parameter, Opcode::Parameter],
                vec![Opcode::Parameter, Opcode::Parameter],
                vec![Opcode::Convert, Opcode::Parameter],
                vec![Opcode::Parameter, Opcode::Parameter],
            ]
        );
        let bf = |v: &[f32], d: Vec<usize>| {
            let h = v.iter().map(|&x| half::bf16::from_f32(x)).collect();
            Literal::array(d, ArrayData::BF16(h))
        };
        let args = [
            bf(&[1.5, -2.0, 0.25, 3.0, 7.5, -0.5], vec![2, 3]),
            bf(&[2.0, 1.25, -3.5, 0.75, 4.0, -1.0], vec![3, 2]),
            Literal::array(vec![2, 3], ArrayData::S8(vec![-128, 5, 127, 3, -7, 9])),
            Literal::array(vec![3, 2], ArrayData::S8(vec![127, -128, 2, 100, -50, 1])),
            Literal::array(
                vec![3, 2],
                ArrayData::F32(vec![0.1, 0.2, 0.3, 0.4, 0.5, 0.6]),
            ),
        ];
        let (want, have) = testing::eval_both(&m, &x, &args);
        assert_eq!(want, have);
    }
}
