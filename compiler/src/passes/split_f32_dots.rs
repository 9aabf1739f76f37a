//! A floating dot of the entry computation that is too large for VMEM and is not bf16 × bf16
//! (f32, f16, or one bf16 operand) becomes the bf16 dots of its operands' parts, summed in f32:
//! the same arithmetic the MXU passes of a VMEM-resident dot do (`lower::dot::prepare`: 1, 3 or
//! 6 passes for DEFAULT, HIGH, HIGHEST, at least `CompileOptions::f32_dot_passes`), written in
//! HLO so that every piece streams from HBM:
//!
//! ```text
//! x0 = convert(x) to bf16          x1 = convert(x − f32(x0)) to bf16     x2 = …
//! dot = Σ over the passes (i, j), smallest products first, of dot(xi, yj) → f32
//! ```
//!
//! The parts are element-wise (they stream as regions, `lower::stream_ew`), and the dots of
//! bf16 parts are in the streamed form (`lower::dot_stream`). "Too large": an operand or the
//! result is larger than a quarter of VMEM (what makes a bf16 dot stream), or the VMEM path's
//! own need — values, their bf16 parts and f32 temporaries — more than half of it. Only dots whose
//! dimensions are in a streamed order ([`crate::lower::dot::stream_order`]) with an f32 result:
//! any other stays whole and lowering reports what does not fit.
//!
//! The sums differ from the VMEM path's only in where the passes are added (in f32 adds here,
//! in the MXU's f32 accumulators there): rounding in the last bits of f32.
//!
//! A `convolution` is bilinear too: one that large, in the streamed convolution's layout
//! whatever its types (`lower::conv::stream_layout`), is split the same way; and a bf16 × bf16
//! convolution with a bf16 result becomes the f32-result one (the accumulator, which is what
//! streams) followed by a `convert` to bf16 — the rounding the MXU path does at its end.

use super::rewrite::{run_expander_in, OpExpander, Rw};
use crate::error::CResult;
use crate::lower::dot::{f32_parts, f32_pass_list, f32_passes, stream_order};
use crate::lower::stream_ew::BIG_FRACTION;
use crate::pass::Pass;
use hlo::{ElementType, InstId, Instruction, Module, Opcode};

/// See the module docs.
pub struct SplitF32Dots {
    /// `vmem.bytes` of the chip compiled for.
    pub vmem_bytes: u64,
    /// `CompileOptions::f32_dot_passes`.
    pub min_passes: u32,
    /// Whether the chip's MXUs take bf16 (else nothing is split: lowering names the mode).
    pub bf16: bool,
    /// FLOPs of the pass dots after the first of each split dot ([`Pass::repeated_flops`]).
    pub repeated: std::cell::Cell<u64>,
}

impl Pass for SplitF32Dots {
    fn name(&self) -> &'static str {
        "split-f32-dots"
    }
    fn repeated_flops(&self) -> u64 {
        self.repeated.get()
    }
    fn run(&self, m: &mut Module) -> CResult<bool> {
        if !self.bf16 {
            return Ok(false);
        }
        let entry = m.entry;
        run_expander_in(self, m, entry)
    }
}

fn float(t: ElementType) -> bool {
    matches!(t, ElementType::F32 | ElementType::F16 | ElementType::BF16)
}

impl OpExpander for SplitF32Dots {
    fn matches(&self, i: &Instruction) -> bool {
        let out = |t: &[ElementType]| {
            i.shape
                .as_array()
                .is_some_and(|a| t.contains(&a.ty) && !a.is_dynamic())
        };
        i.operands.len() == 2
            && ((i.opcode == Opcode::Dot && out(&[ElementType::F32]))
                || (i.opcode == Opcode::Convolution && out(&[ElementType::F32, ElementType::BF16])))
    }

    fn expand(&self, rw: &mut Rw<'_>, h: InstId) -> CResult<Option<InstId>> {
        if rw.m.comps[rw.c].insts[h].opcode == Opcode::Convolution {
            return self.expand_conv(rw, h);
        }
        let i = rw.m.comps[rw.c].insts[h].clone();
        let (l, r) = (rw.arr(i.operands[0])?, rw.arr(i.operands[1])?);
        if !float(l.ty)
            || !float(r.ty)
            || (l.ty == ElementType::BF16 && r.ty == ElementType::BF16)
            || l.is_dynamic()
            || r.is_dynamic()
        {
            return Ok(None);
        }
        let hlo::View::Dot(dv) = i.view() else {
            return Ok(None);
        };
        if stream_order(&dv, l.dims.len(), r.dims.len()).is_none() {
            return Ok(None);
        }
        let passes = f32_passes(dv.precision, self.min_passes);
        let n = f32_parts(passes);
        if !self.too_large(&[&l, &r], i.shape.as_array().expect("matched"), n) {
            return Ok(None);
        }
        let lp = parts(rw, i.operands[0], n)?;
        let rp = parts(rw, i.operands[1], n)?;
        // The dot's own dimension numbers, default precision (bf16 × bf16 is one pass).
        let mut attrs = i.attrs.clone().into_inner();
        attrs.operand_precision = None;
        let out = i.shape.as_array().expect("matched");
        let flops = 2
            * out.udims().iter().product::<usize>() as u64
            * dv.lhs_contracting
                .iter()
                .map(|&d| l.dims[d as usize] as u64)
                .product::<u64>();
        self.sum_passes(
            rw,
            Opcode::Dot,
            (&lp, &rp),
            passes,
            attrs,
            i.shape.clone(),
            flops,
        )
    }
}

impl SplitF32Dots {
    /// Whether a dot or convolution of `operands` and result `out` with `n` bf16 parts per
    /// operand is split: one of them larger than a quarter of VMEM (what makes the bf16 form
    /// stream), or the VMEM path's own need more than half of VMEM — each operand, its `n`
    /// parts (half its bytes each) and, beyond one part, two f32 temporaries of its size
    /// (`lower::dot::prepare` works the parts out in VMEM), plus the result.
    fn too_large(&self, operands: &[&hlo::ArrayShape], out: &hlo::ArrayShape, n: usize) -> bool {
        let bytes = |a: &hlo::ArrayShape| hlo::Shape::Array(a.clone()).byte_size();
        let limit = self.vmem_bytes / BIG_FRACTION;
        let mut need = 0u64;
        for a in operands.iter().copied().chain([out]) {
            let Some(b) = bytes(a) else {
                return true;
            };
            if b > limit {
                return true;
            }
            need += b;
        }
        let temps: u64 = operands
            .iter()
            .filter(|a| a.ty != ElementType::BF16)
            .filter_map(|a| bytes(a))
            .map(|b| b * n as u64 / 2 + if n > 1 { 2 * b } else { 0 })
            .sum();
        need + temps > self.vmem_bytes / 2
    }

    /// A convolution's rewrite (module docs).
    fn expand_conv(&self, rw: &mut Rw<'_>, h: InstId) -> CResult<Option<InstId>> {
        let i = rw.m.comps[rw.c].insts[h].clone();
        let (l, r) = (rw.arr(i.operands[0])?, rw.arr(i.operands[1])?);
        let out = i.shape.as_array().expect("matched").clone();
        if !float(l.ty) || !float(r.ty) {
            return Ok(None);
        }
        let Some(cv) = i.conv() else {
            return Ok(None);
        };
        if crate::lower::conv::stream_layout(&rw.m.comps[rw.c], &i).is_none() {
            return Ok(None);
        }
        // Large: the input, or the f32 accumulator of the result (what the MXU path holds
        // in VMEM whatever the result type).
        let wide_arr = hlo::ArrayShape {
            ty: ElementType::F32,
            ..out.clone()
        };
        let wide = hlo::Shape::Array(wide_arr.clone());
        let both_bf16 = l.ty == ElementType::BF16 && r.ty == ElementType::BF16;
        let passes = f32_passes(cv.precision, self.min_passes);
        let n = if both_bf16 { 1 } else { f32_parts(passes) };
        // The f32 accumulator is what the MXU path holds, whatever the result type.
        if !self.too_large(&[&l, &r], &wide_arr, n) {
            return Ok(None);
        }
        let mut attrs = i.attrs.clone().into_inner();
        if both_bf16 {
            if out.ty != ElementType::BF16 {
                return Ok(None);
            }
            let acc = rw.add(Opcode::Convolution, &i.operands, attrs, Some(wide))?;
            return rw.convert(acc, ElementType::BF16).map(Some);
        }
        if out.ty != ElementType::F32 {
            return Ok(None);
        }
        let o = r.dims[cv.dims.kernel_output_feature as usize].max(1) as u64;
        let per_out: u64 = r.dims.iter().map(|&d| d.max(0) as u64).product::<u64>() / o;
        let flops = 2 * out.udims().iter().product::<usize>() as u64 * per_out;
        let lp = parts(rw, i.operands[0], n)?;
        let rp = parts(rw, i.operands[1], n)?;
        attrs.operand_precision = None;
        self.sum_passes(
            rw,
            Opcode::Convolution,
            (&lp, &rp),
            passes,
            attrs,
            wide,
            flops,
        )
    }

    /// `op` of each pass's parts (`lp`, `rp`; `attrs`, result `shape`), summed in f32 smallest
    /// first; every pass after the first adds `flops` to the repeated FLOPs.
    #[allow(clippy::too_many_arguments)]
    fn sum_passes(
        &self,
        rw: &mut Rw<'_>,
        op: Opcode,
        (lp, rp): (&[InstId], &[InstId]),
        passes: usize,
        attrs: hlo::Attrs,
        shape: hlo::Shape,
        flops: u64,
    ) -> CResult<Option<InstId>> {
        let mut sum: Option<InstId> = None;
        for &(a, b) in f32_pass_list(passes) {
            let (Some(&x), Some(&y)) = (lp.get(a), rp.get(b)) else {
                continue;
            };
            let d = rw.add(op, &[x, y], attrs.clone(), Some(shape.clone()))?;
            sum = Some(match sum {
                None => d,
                Some(s) => {
                    self.repeated.set(self.repeated.get() + flops);
                    rw.op(Opcode::Add, &[s, d])?
                }
            });
        }
        Ok(sum)
    }
}

/// `x` as at most `n` bf16 parts (`x ≈ Σ parts`): a bf16 `x` is its one part.
fn parts(rw: &mut Rw<'_>, x: InstId, n: usize) -> CResult<Vec<InstId>> {
    let t = rw.arr(x)?.ty;
    if t == ElementType::BF16 {
        return Ok(vec![x]);
    }
    let mut rest = if t == ElementType::F32 {
        x
    } else {
        rw.convert(x, ElementType::F32)?
    };
    let mut out = Vec::with_capacity(n);
    for k in 0..n {
        let p = rw.convert(rest, ElementType::BF16)?;
        out.push(p);
        if k + 1 < n {
            let back = rw.convert(p, ElementType::F32)?;
            rest = rw.op(Opcode::Subtract, &[rest, back])?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::testing::{assert_matches, eval_both, expand};
    use hlo::{ArrayData, Literal};

    const DOT: &str = "HloModule d\n\nENTRY e {\n  x = f32[64,48] parameter(0)\n  w = f32[40,48] \
                       parameter(1)\n  ROOT y = f32[64,40] dot(x, w), lhs_contracting_dims={1}, \
                       rhs_contracting_dims={1}PREC\n}\n";

    fn split(passes: u32, prec: &str) -> (Module, Module) {
        let text = DOT.replace("PREC", prec);
        // 64·48·4 bytes = 12 KiB: "too large" on a 32 KiB VMEM.
        let p = SplitF32Dots {
            vmem_bytes: 32 << 10,
            min_passes: passes,
            bf16: true,
            repeated: Default::default(),
        };
        expand(&text, &[&p])
    }

    fn dots(m: &Module) -> usize {
        m.entry()
            .insts
            .values()
            .filter(|i| i.opcode == Opcode::Dot)
            .count()
    }

    #[test]
    fn an_f32_dot_larger_than_a_quarter_of_vmem_becomes_bf16_dots_of_its_parts() {
        for (passes, prec, want) in [
            (1, "", 1),
            (3, "", 3),
            (1, ", operand_precision={high,default}", 3),
            (6, "", 6),
        ] {
            let (m, x) = split(passes, prec);
            assert_eq!(dots(&x), want, "{passes} {prec}");
            for i in x.entry().insts.values().filter(|i| i.opcode == Opcode::Dot) {
                for &o in &i.operands {
                    let t = x.entry().insts[o].shape.as_array().unwrap().ty;
                    assert_eq!(t, ElementType::BF16);
                }
            }
            // Within the passes' accuracy of the f32 dot: about 2^-8 relative for one pass,
            // 2^-16 for three, f32 rounding for six.
            let f = |n: usize, s: f32| -> Vec<f32> {
                (0..n).map(|k| ((k * 37 % 101) as f32 - 50.0) * s).collect()
            };
            let args = [
                Literal::array(vec![64, 48], ArrayData::F32(f(64 * 48, 0.0123))),
                Literal::array(vec![40, 48], ArrayData::F32(f(40 * 48, 0.0371))),
            ];
            let (want_v, have) = eval_both(&m, &x, &args);
            let tol = match want {
                1 => 5e-2,
                3 => 1e-3,
                _ => 1e-5,
            };
            assert_matches(eval::case::Check::Close, tol, &want_v, &have);
        }
    }

    #[test]
    fn a_small_dot_or_one_not_in_a_streamed_order_stays_whole() {
        let text = DOT.replace("PREC", "");
        let mut m = hlo::parse(&text).unwrap();
        let p = SplitF32Dots {
            vmem_bytes: 16 << 20,
            min_passes: 6,
            bf16: true,
            repeated: Default::default(),
        };
        assert!(!p.run(&mut m).unwrap());
        let lhs_t = "HloModule d\n\nENTRY e {\n  x = f32[48,64] parameter(0)\n  w = f32[48,40] \
                     parameter(1)\n  ROOT y = f32[64,40] dot(x, w), lhs_contracting_dims={0}, \
                     rhs_contracting_dims={0}\n}\n";
        let mut m = hlo::parse(lhs_t).unwrap();
        let p = SplitF32Dots {
            vmem_bytes: 1 << 10,
            min_passes: 1,
            bf16: true,
            repeated: Default::default(),
        };
        assert!(!p.run(&mut m).unwrap());
    }

    #[test]
    fn a_large_f32_convolution_splits_into_bf16_parts_and_a_bf16_one_widens_its_result() {
        let text = "HloModule c\n\nENTRY e {\n  x = f32[2,6,6,8] parameter(0)\n  k = \
                    f32[3,3,8,4] parameter(1)\n  xb = bf16[2,6,6,8] parameter(2)\n  kb = \
                    bf16[3,3,8,4] parameter(3)\n  y = f32[2,6,6,4] convolution(x, k), \
                    window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n  yb = \
                    bf16[2,6,6,4] convolution(xb, kb), window={size=3x3 pad=1_1x1_1}, \
                    dim_labels=b01f_01io->b01f\n  ROOT t = (f32[2,6,6,4], bf16[2,6,6,4]) \
                    tuple(y, yb)\n}\n";
        // 2·6·6·8·4 bytes = 2,304: "too large" on a 4 KiB VMEM.
        let p = SplitF32Dots {
            vmem_bytes: 4 << 10,
            min_passes: 3,
            bf16: true,
            repeated: Default::default(),
        };
        let (m, x) = expand(text, &[&p]);
        let convs: Vec<(ElementType, ElementType)> = x
            .entry()
            .insts
            .values()
            .filter(|i| i.opcode == Opcode::Convolution)
            .map(|i| {
                let t = |h: InstId| x.entry().insts[h].shape.as_array().unwrap().ty;
                (t(i.operands[0]), i.shape.as_array().unwrap().ty)
            })
            .collect();
        // 3 passes of the f32 one, and the bf16 one with an f32 result.
        assert_eq!(convs.len(), 4, "{convs:?}");
        assert!(convs
            .iter()
            .all(|&c| c == (ElementType::BF16, ElementType::F32)));
        assert_eq!(p.repeated.get(), 2 * 2 * (2 * 6 * 6 * 4 * 3 * 3 * 8));
        let f = |n: usize, s: f32| -> Vec<f32> {
            (0..n).map(|k| ((k * 37 % 101) as f32 - 50.0) * s).collect()
        };
        let bf = |v: Vec<f32>| v.into_iter().map(half::bf16::from_f32).collect();
        let args = [
            Literal::array(vec![2, 6, 6, 8], ArrayData::F32(f(576, 0.0123))),
            Literal::array(vec![3, 3, 8, 4], ArrayData::F32(f(288, 0.0371))),
            Literal::array(vec![2, 6, 6, 8], ArrayData::BF16(bf(f(576, 0.25)))),
            Literal::array(vec![3, 3, 8, 4], ArrayData::BF16(bf(f(288, 0.125)))),
        ];
        let (want, have) = eval_both(&m, &x, &args);
        assert_matches(eval::case::Check::Close, 1e-3, &want, &have);
    }

    /// The attention block JAX exports (`tests/models/attn_large_*`): an f32 operand of exactly a
    /// quarter of VMEM is not "larger than a quarter", but its six passes' parts and
    /// temporaries are more than VMEM holds: split all the same.
    #[test]
    fn a_dot_whose_passes_need_more_than_half_of_vmem_in_vmem_is_split() {
        let text = DOT.replace("PREC", "");
        // x: 64·48·4 = 12,288 bytes, a quarter of 48 KiB; w 7,680; y 10,240.
        let run = |passes: u32| {
            let mut m = hlo::parse(&text).unwrap();
            let p = SplitF32Dots {
                vmem_bytes: 48 << 10,
                min_passes: passes,
                bf16: true,
                repeated: Default::default(),
            };
            p.run(&mut m).unwrap()
        };
        // The values alone (30,208 bytes) are more than half of 48 KiB, before any part.
        assert!(run(1));
        assert!(run(6));
        let mut m = hlo::parse(&text).unwrap();
        let p = SplitF32Dots {
            vmem_bytes: 1 << 20,
            min_passes: 6,
            bf16: true,
            repeated: Default::default(),
        };
        assert!(
            !p.run(&mut m).unwrap(),
            "fits a 1 MiB VMEM with room to spare"
        );
    }
}
