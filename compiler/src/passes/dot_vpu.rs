//! Dots the MXUs cannot run (f64, and integer types other than s8 × s8; c128 after
//! `complex-planes` has made it f64 dots) become VPU work, emulated and slow but exact to the
//! VPU's arithmetic:
//!
//! ```text
//! S = [batch..., lhs free..., rhs free..., contracting...]
//! a' = broadcast(transpose(convert(lhs) to [batch, free, contracting]))   into S
//! b' = broadcast(transpose(convert(rhs) to [batch, free, contracting]))   into S
//! dot = reduce(multiply(a', b'), 0) over the contracting dims of S, with add
//! ```
//!
//! The result's dimensions are XLA's dot order (batch, lhs free, rhs free), so the reduce
//! gives the dot's shape. The products and the sum run in the result type; the sum is a
//! reduce, whose order the VPU fixes (a pairwise tree: f64 sums may differ from a sequential
//! sum in the last bits). Only where the product space `S` has at most
//! [`MAX_PRODUCT_ELEMENTS`] elements: a larger dot is left, and lowering names it as not
//! supported.

use super::rewrite::{run_expander, OpExpander, Rw};
use crate::error::CResult;
use crate::lower::dot::mxu_native;
use crate::pass::Pass;
use hlo::{InstId, Instruction, Module, Opcode};

/// See the module docs.
pub struct DotToVpu;

/// Largest product space expanded (elements of the broadcast operands).
pub const MAX_PRODUCT_ELEMENTS: u64 = 1 << 22;

impl Pass for DotToVpu {
    fn name(&self) -> &'static str {
        "dot-to-vpu"
    }
    fn run(&self, m: &mut Module) -> CResult<bool> {
        run_expander(self, m)
    }
}

impl OpExpander for DotToVpu {
    fn matches(&self, i: &Instruction) -> bool {
        i.opcode == Opcode::Dot && i.operands.len() == 2
    }

    fn expand(&self, rw: &mut Rw<'_>, h: InstId) -> CResult<Option<InstId>> {
        let i = rw.m.comps[rw.c].insts[h].clone();
        let (l, r) = (rw.arr(i.operands[0])?, rw.arr(i.operands[1])?);
        let Some(out) = i.shape.as_array().cloned() else {
            return Ok(None);
        };
        if mxu_native(l.ty, r.ty) || l.is_dynamic() || r.is_dynamic() || out.ty.is_complex() {
            return Ok(None);
        }
        let hlo::View::Dot(dv) = i.view() else {
            return Ok(None);
        };
        let (lb, rb) = (dv.lhs_batch.to_vec(), dv.rhs_batch.to_vec());
        let (lc, rc) = (dv.lhs_contracting.to_vec(), dv.rhs_contracting.to_vec());
        let free = |rank: usize, b: &[i64], c: &[i64]| -> Vec<i64> {
            (0..rank as i64)
                .filter(|d| !b.contains(d) && !c.contains(d))
                .collect()
        };
        let (lf, rf) = (free(l.dims.len(), &lb, &lc), free(r.dims.len(), &rb, &rc));
        let (nb, nl, nr, nc) = (lb.len(), lf.len(), rf.len(), lc.len());
        let size = |x: &hlo::ArrayShape, ds: &[i64]| -> Vec<i64> {
            ds.iter().map(|&d| x.dims[d as usize]).collect()
        };
        let space: Vec<i64> = [size(&l, &lb), size(&l, &lf), size(&r, &rf), size(&l, &lc)].concat();
        let elems = space
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d.max(0) as u64));
        if elems.is_none_or(|n| n > MAX_PRODUCT_ELEMENTS) {
            return Ok(None);
        }
        // Each operand in the result type, its dims ordered batch, free, contracting, then
        // broadcast into S (its positions there increase).
        let mut place = |x: InstId, b: &[i64], f: &[i64], c: &[i64], at: &[i64]| {
            let xs = rw.arr(x)?;
            let x = if xs.ty == out.ty {
                x
            } else {
                rw.convert(x, out.ty)?
            };
            let perm: Vec<i64> = [b, f, c].concat();
            let x = if perm.iter().enumerate().all(|(k, &p)| k as i64 == p) {
                x
            } else {
                let dims: Vec<i64> = perm.iter().map(|&p| xs.dims[p as usize]).collect();
                rw.add(
                    Opcode::Transpose,
                    &[x],
                    hlo::Attrs {
                        dimensions: Some(perm),
                        ..Default::default()
                    },
                    Some(hlo::Shape::Array(hlo::ArrayShape::new(out.ty, &dims))),
                )?
            };
            rw.bcast(x, &space, at)
        };
        let seq = |from: usize, n: usize| (from as i64..(from + n) as i64).collect::<Vec<_>>();
        let contract = seq(nb + nl + nr, nc);
        let at_l = [seq(0, nb), seq(nb, nl), contract.clone()].concat();
        let at_r = [seq(0, nb), seq(nb + nl, nr), contract.clone()].concat();
        let a = place(i.operands[0], &lb, &lf, &lc, &at_l)?;
        let b = place(i.operands[1], &rb, &rf, &rc, &at_r)?;
        let p = rw.op(Opcode::Multiply, &[a, b])?;
        if nc == 0 {
            return Ok(Some(p));
        }
        let zero = if out.ty.is_float() {
            rw.fconst(out.ty, 0.0)?
        } else {
            rw.iconst(out.ty, 0)?
        };
        Ok(Some(rw.reduce(p, zero, &contract, Opcode::Add)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::testing;
    use hlo::{ArrayData, Literal};

    #[test]
    fn f64_and_s32_dots_with_batch_and_transposed_contractions_expand_exactly() {
        let text = r#"
HloModule d
ENTRY e {
  a = f64[2,3,4] parameter(0)
  b = f64[4,2,5] parameter(1)
  d = f64[2,3,5] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}
  x = s32[3,4] parameter(2)
  y = s32[5,4] parameter(3)
  i = s32[3,5] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ROOT t = (f64[2,3,5], s32[3,5]) tuple(d, i)
}
"#;
        let (m, x) = testing::expand(text, &[&DotToVpu]);
        assert!(x.entry().insts.values().all(|i| i.opcode != Opcode::Dot));
        let f = |n: usize, s: f64| -> Vec<f64> { (0..n).map(|k| (k as f64 - 7.0) * s).collect() };
        let g = |n: usize| -> Vec<i32> { (0..n).map(|k| k as i32 * 3 - 20).collect() };
        let args = [
            Literal::array(vec![2, 3, 4], ArrayData::F64(f(24, 0.25))),
            Literal::array(vec![4, 2, 5], ArrayData::F64(f(40, 0.5))),
            Literal::array(vec![3, 4], ArrayData::S32(g(12))),
            Literal::array(vec![5, 4], ArrayData::S32(g(20))),
        ];
        let (want, have) = testing::eval_both(&m, &x, &args);
        // Small integers and dyadic values: exact in any summation order.
        assert_eq!(want, have);
    }

    #[test]
    fn mxu_dots_and_huge_products_are_left_alone() {
        let text = r#"
HloModule d
ENTRY e {
  a = bf16[8,8] parameter(0)
  d = f32[8,8] dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  x = f64[512,512] parameter(1)
  ROOT e = f64[512,512] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"#;
        let mut m = hlo::parse(text).unwrap();
        hlo::verify(&m).unwrap();
        assert!(!DotToVpu.run(&mut m).unwrap());
    }
}
