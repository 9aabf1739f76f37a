//! Expands `reduce-precision(x), exponent_bits=E, mantissa_bits=M` into integer ops on the
//! bit pattern (as XLA's elemental emitter does), which the VPU runs:
//!
//! ```text
//! u = bitcast-convert(x) to the unsigned type of x's width
//! if M < src_mant:  s = src_mant − M
//!     u = (u + ((u >> s) & 1) + (1 << (s−1)) − 1) & ~((1 << s) − 1)   round to nearest even
//! if E < src_exp:   e = u & exp_mask
//!     u = e >  (bias + rbias) << src_mant ? (u & sign) | exp_mask : u    overflow to ±inf
//!     u = e <= (bias − rbias) << src_mant ? (u & sign)            : u    underflow to ±0
//! u = (x_bits & ~sign) > exp_mask ? x_bits : u                          NaN kept
//! ```
//!
//! with `rbias = 2^(E−1) − 1`. Cost: 13 VPU ALU instructions of `n` elements for f32 with both
//! steps (a 64-bit f64 pattern pays `vpu.emulated_64bit_factor`); the bitcasts are free.

use super::rewrite::{run_expander, OpExpander, Rw};
use crate::error::CResult;
use crate::pass::Pass;
use hlo::{ComparisonDirection as D, ElementType as T, InstId, Instruction, Module, Opcode};

/// See the module docs.
pub struct ReducePrecisionExpander;

impl Pass for ReducePrecisionExpander {
    fn name(&self) -> &'static str {
        "reduce-precision-expander"
    }
    fn run(&self, m: &mut Module) -> CResult<bool> {
        run_expander(self, m)
    }
}

impl OpExpander for ReducePrecisionExpander {
    fn matches(&self, i: &Instruction) -> bool {
        i.opcode == Opcode::ReducePrecision
    }

    fn expand(&self, rw: &mut Rw<'_>, h: InstId) -> CResult<Option<InstId>> {
        let i = rw.m.comps[rw.c].insts[h].clone();
        let x = i.operands[0];
        let a = rw.arr(x)?;
        let (ut, nbits, src_exp, src_mant) = match a.ty {
            T::F32 => (T::U32, 32u32, 8u32, 23u32),
            T::F64 => (T::U64, 64, 11, 52),
            T::F16 => (T::U16, 16, 5, 10),
            T::BF16 => (T::U16, 16, 8, 7),
            _ => return Ok(None),
        };
        let hlo::View::ReducePrecision {
            exponent_bits: e,
            mantissa_bits: mb,
        } = i.view()
        else {
            return Ok(None);
        };
        if e < 1 || mb < 0 || a.is_dynamic() {
            return Ok(None);
        }
        let (e, mb) = (e.min(64) as u32, mb.min(64) as u32);
        let dims = a.dims.clone();
        let k = |rw: &mut Rw<'_>, v: u64| -> CResult<InstId> {
            let c = rw.iconst(ut, v)?;
            rw.splat(c, &dims)
        };
        let bits = rw.bitcast(x, ut)?;
        let mut u = bits;
        if mb < src_mant {
            let s = src_mant - mb;
            let last = 1u64 << s;
            let ks = k(rw, s as u64)?;
            let sh = rw.op(Opcode::ShiftRightLogical, &[u, ks])?;
            let one = k(rw, 1)?;
            let lb = rw.op(Opcode::And, &[sh, one])?;
            let base = k(rw, (last >> 1).wrapping_sub(1))?;
            let bias = rw.op(Opcode::Add, &[lb, base])?;
            let sum = rw.op(Opcode::Add, &[u, bias])?;
            let trunc = k(rw, !(last - 1))?;
            u = rw.op(Opcode::And, &[sum, trunc])?;
        }
        let sign = 1u64 << (nbits - 1);
        let exp_mask = ((1u64 << src_exp) - 1) << src_mant;
        if e < src_exp {
            let bias = (1i64 << (src_exp - 1)) - 1;
            let rbias = (1i64 << (e - 1)) - 1;
            let max_e = ((bias + rbias) as u64) << src_mant;
            let min_e = ((bias - rbias) as u64) << src_mant;
            let em = k(rw, exp_mask)?;
            let sm = k(rw, sign)?;
            let xe = rw.op(Opcode::And, &[u, em])?;
            let sz = rw.op(Opcode::And, &[u, sm])?;
            let inf = rw.op(Opcode::Or, &[sz, em])?;
            let kmax = k(rw, max_e)?;
            let kmin = k(rw, min_e)?;
            let ov = rw.cmp(xe, kmax, D::Gt)?;
            let un = rw.cmp(xe, kmin, D::Le)?;
            let u1 = rw.op(Opcode::Select, &[ov, inf, u])?;
            u = rw.op(Opcode::Select, &[un, sz, u1])?;
        }
        if u == bits {
            return Ok(Some(x));
        }
        let abs = k(
            rw,
            !sign
                & if nbits == 64 {
                    u64::MAX
                } else {
                    (1u64 << nbits) - 1
                },
        )?;
        let em = k(rw, exp_mask)?;
        let mag = rw.op(Opcode::And, &[bits, abs])?;
        let nan = rw.cmp(mag, em, D::Gt)?;
        let r = rw.op(Opcode::Select, &[nan, bits, u])?;
        Ok(Some(rw.bitcast(r, a.ty)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_matches_the_evaluator_on_special_values() {
        let text = r#"
HloModule rp

ENTRY main {
  x = f32[24]{0} parameter(0)
  a = f32[24]{0} reduce-precision(x), exponent_bits=5, mantissa_bits=10
  b = f32[24]{0} reduce-precision(x), exponent_bits=8, mantissa_bits=7
  c = f32[24]{0} reduce-precision(x), exponent_bits=3, mantissa_bits=0
  d = f32[24]{0} reduce-precision(x), exponent_bits=11, mantissa_bits=52
  ROOT r = (f32[24]{0}, f32[24]{0}, f32[24]{0}, f32[24]{0}) tuple(a, b, c, d)
}
"#;
        let (m, x) = crate::passes::testing::expand(text, &[&ReducePrecisionExpander]);
        assert!(!x
            .entry()
            .insts
            .values()
            .any(|i| i.opcode == Opcode::ReducePrecision));
        let v: Vec<f32> = vec![
            0.0,
            -0.0,
            1.0,
            1.000_976_6,
            1.000_488_3,
            1.001_464_8,
            65504.0,
            65520.0,
            -70000.0,
            6.1e-5,
            3.0e-5,
            -1e-8,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::from_bits(0x7fc0_1234),
            f32::from_bits(0xff80_0001),
            1e-40,
            3.4e38,
            0.1,
            -2.5,
            7.0,
            1.5,
            2.5,
        ];
        let args = vec![hlo::Literal::array(vec![24], hlo::ArrayData::F32(v))];
        let (want, have) = crate::passes::testing::eval_both(&m, &x, &args);
        let bits = |l: &hlo::Literal| -> Vec<u32> {
            l.as_tuple()
                .unwrap()
                .iter()
                .flat_map(|a| match &a.as_array().unwrap().data {
                    hlo::ArrayData::F32(v) => v.iter().map(|f| f.to_bits()).collect::<Vec<_>>(),
                    _ => unreachable!(),
                })
                .collect()
        };
        assert_eq!(bits(&want), bits(&have));
    }
}
