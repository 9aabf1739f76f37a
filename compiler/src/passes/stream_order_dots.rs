//! A dot of the entry computation too large for VMEM whose dimensions are not in a streamed
//! order ([`crate::lower::dot::stream_order`]: batch first, `lhs[B][M][K]`, `rhs[B][K][N]` or
//! `rhs[B][N][K]`) gets its operands transposed into that order first, so that it streams
//! from HBM (`lower::dot_stream`) instead of being refused: the weight gradient `xᵀ·dy`
//! (contracting dimension first in `lhs`), batch dimensions not leading, contracting
//! dimensions interleaved. The transposes are ordinary HLO: a large one streams HBM to HBM
//! (`lower::transpose_stream`), a small one runs in VMEM. An operand already in order is not
//! touched; `rhs` already `[B][N][K]` stays so. The dot's result order (batch, `lhs` free,
//! `rhs` free) does not change.
//!
//! "Too large" is what makes a dot stream: an operand or the result larger than a quarter of
//! VMEM. Operand types are left to later passes (`split-f32-dots`) and lowering.

use super::rewrite::{run_expander_in, OpExpander, Rw};
use crate::error::CResult;
use crate::lower::dot::stream_order;
use crate::lower::stream_ew::BIG_FRACTION;
use crate::pass::Pass;
use hlo::{Attrs, InstId, Instruction, Module, Opcode};

/// See the module docs.
pub struct StreamOrderDots {
    /// `vmem.bytes` of the chip compiled for.
    pub vmem_bytes: u64,
}

impl Pass for StreamOrderDots {
    fn name(&self) -> &'static str {
        "stream-order-dots"
    }
    fn run(&self, m: &mut Module) -> CResult<bool> {
        let entry = m.entry;
        run_expander_in(self, m, entry)
    }
}

/// `x`'s dimensions in the order `first`, then the others ascending, then `last`.
fn order(rank: usize, first: &[i64], last: &[i64]) -> Vec<i64> {
    let mut p = first.to_vec();
    p.extend((0..rank as i64).filter(|d| !first.contains(d) && !last.contains(d)));
    p.extend_from_slice(last);
    p
}

impl OpExpander for StreamOrderDots {
    fn matches(&self, i: &Instruction) -> bool {
        i.opcode == Opcode::Dot
            && i.operands.len() == 2
            && i.shape.as_array().is_some_and(|a| !a.is_dynamic())
    }

    fn expand(&self, rw: &mut Rw<'_>, h: InstId) -> CResult<Option<InstId>> {
        let i = rw.m.comps[rw.c].insts[h].clone();
        let (l, r) = (rw.arr(i.operands[0])?, rw.arr(i.operands[1])?);
        if l.is_dynamic() || r.is_dynamic() {
            return Ok(None);
        }
        let hlo::View::Dot(dv) = i.view() else {
            return Ok(None);
        };
        if dv.lhs_contracting.is_empty() || stream_order(&dv, l.dims.len(), r.dims.len()).is_some()
        {
            return Ok(None);
        }
        let limit = self.vmem_bytes / BIG_FRACTION;
        let out = i.shape.as_array().expect("matched");
        let big = [&l, &r, out].iter().any(|a| {
            hlo::Shape::Array((*a).clone())
                .byte_size()
                .is_none_or(|b| b > limit)
        });
        if !big {
            return Ok(None);
        }
        let (nb, nc) = (dv.lhs_batch.len(), dv.lhs_contracting.len());
        let (lr, rr) = (l.dims.len(), r.dims.len());
        let lp = order(lr, dv.lhs_batch, dv.lhs_contracting);
        let identity = |p: &[i64]| p.iter().enumerate().all(|(k, &d)| k as i64 == d);
        // rhs: [B][K][N], unless it already is [B][N][K] or getting there keeps its last
        // dimension last (DMA runs, not tiles turned on the VPU).
        let rp_kn = order(rr, &[dv.rhs_batch, dv.rhs_contracting].concat(), &[]);
        let rp_nk = order(rr, dv.rhs_batch, dv.rhs_contracting);
        let keeps_last = |p: &[i64]| p.last() == Some(&(rr as i64 - 1));
        let (rp, rhs_t) = if !identity(&rp_kn)
            && (identity(&rp_nk) || (keeps_last(&rp_nk) && !keeps_last(&rp_kn)))
        {
            (rp_nk, true)
        } else {
            (rp_kn, false)
        };
        let x = if identity(&lp) {
            i.operands[0]
        } else {
            rw.transpose(i.operands[0], &lp)?
        };
        let y = if identity(&rp) {
            i.operands[1]
        } else {
            rw.transpose(i.operands[1], &rp)?
        };
        let seq =
            |from: usize, n: usize| -> Vec<i64> { (from as i64..(from + n) as i64).collect() };
        let attrs = Attrs {
            lhs_batch_dims: Some(seq(0, nb)),
            rhs_batch_dims: Some(seq(0, nb)),
            lhs_contracting_dims: Some(seq(lr - nc, nc)),
            rhs_contracting_dims: Some(if rhs_t { seq(rr - nc, nc) } else { seq(nb, nc) }),
            operand_precision: i.attrs.operand_precision.clone(),
            ..Default::default()
        };
        rw.add(Opcode::Dot, &[x, y], attrs, Some(i.shape.clone()))
            .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::testing::{assert_matches, eval_both, expand};
    use hlo::{ArrayData, Literal};

    fn run(text: &str, vmem: u64) -> (Module, Module) {
        expand(text, &[&StreamOrderDots { vmem_bytes: vmem }])
    }

    fn in_order(m: &Module) -> bool {
        m.entry()
            .insts
            .values()
            .filter(|i| i.opcode == Opcode::Dot)
            .all(|i| {
                let hlo::View::Dot(dv) = i.view() else {
                    return false;
                };
                let c = m.entry();
                let rank = |o: usize| c.insts[i.operands[o]].shape.as_array().unwrap().dims.len();
                stream_order(&dv, rank(0), rank(1)).is_some()
            })
    }

    #[test]
    fn a_weight_gradient_and_a_dot_with_batch_last_are_put_in_stream_order() {
        // xᵀ·dy: lhs contracting first; and a batched dot whose batch dimension is last on
        // both sides and whose rhs contracting dimension sits between its free ones.
        let text = "HloModule g\n\nENTRY e {\n  x = f32[40,24] parameter(0)\n  dy = f32[40,16] \
                    parameter(1)\n  a = f32[6,5,3] parameter(2)\n  b = f32[7,6,2,3] \
                    parameter(3)\n  g = f32[24,16] dot(x, dy), lhs_contracting_dims={0}, \
                    rhs_contracting_dims={0}\n  d = f32[3,5,7,2] dot(a, b), lhs_batch_dims={2}, \
                    rhs_batch_dims={3}, lhs_contracting_dims={0}, rhs_contracting_dims={1}\n  \
                    ROOT t = (f32[24,16], f32[3,5,7,2]) tuple(g, d)\n}\n";
        let (m, x) = run(text, 1024);
        assert!(in_order(&x));
        let f = |n: usize, s: f32| -> Vec<f32> {
            (0..n).map(|k| ((k * 13 % 29) as f32 - 14.0) * s).collect()
        };
        let args = [
            Literal::array(vec![40, 24], ArrayData::F32(f(960, 0.5))),
            Literal::array(vec![40, 16], ArrayData::F32(f(640, 0.25))),
            Literal::array(vec![6, 5, 3], ArrayData::F32(f(90, 0.5))),
            Literal::array(vec![7, 6, 2, 3], ArrayData::F32(f(252, 0.125))),
        ];
        let (want, have) = eval_both(&m, &x, &args);
        // Small dyadic values: the same sums in any order.
        assert_matches(eval::case::Check::Exact, 0.0, &want, &have);
    }

    #[test]
    fn small_dots_and_dots_in_order_stay() {
        let text = "HloModule g\n\nENTRY e {\n  x = f32[40,24] parameter(0)\n  dy = f32[40,16] \
                    parameter(1)\n  ROOT g = f32[24,16] dot(x, dy), lhs_contracting_dims={0}, \
                    rhs_contracting_dims={0}\n}\n";
        let mut m = hlo::parse(text).unwrap();
        assert!(!StreamOrderDots {
            vmem_bytes: 1 << 20
        }
        .run(&mut m)
        .unwrap());
        let qk = "HloModule g\n\nENTRY e {\n  q = f32[40,24] parameter(0)\n  k = f32[30,24] \
                  parameter(1)\n  ROOT s = f32[40,30] dot(q, k), lhs_contracting_dims={1}, \
                  rhs_contracting_dims={1}\n}\n";
        let mut m = hlo::parse(qk).unwrap();
        assert!(!StreamOrderDots { vmem_bytes: 1024 }.run(&mut m).unwrap());
    }
}
