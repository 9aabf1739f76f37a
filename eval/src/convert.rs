//! ConvertElementType, BitcastConvertType and ReducePrecision.
//!
//! Convert: int→int wraps (two's complement truncation / extension); int→float and
//! float→float round to nearest even (f16/bf16 targets round once from the exact value when it
//! fits f64, i.e. always for floats and for integers below 2^53); float→int truncates toward
//! zero and saturates, NaN → 0; anything → pred is `x != 0` (NaN → true); pred → number is 0/1;
//! real → complex has zero imaginary part; complex → complex converts both parts; complex → real
//! is refused, as XLA refuses it.
//!
//! BitcastConvert reinterprets little-endian bytes: to a narrower type it appends a minor
//! dimension of size `wide/narrow`; to a wider type it drops the minor dimension (which must
//! have that size).

use crate::elementwise::{complex_vals, float_vals};
use crate::error::{EResult, EvalError};
use crate::util::{from_f64_vec, mk, operand, out_array};
use half::{bf16, f16};
use hlo::ir::Instruction;
use hlo::literal::{ArrayData, Literal};
use hlo::types::ElementType;
use num_complex::{Complex32, Complex64};

fn ints_as_i128(d: &ArrayData) -> Option<Vec<i128>> {
    use ArrayData as AD;
    Some(match d {
        AD::Pred(v) => v.iter().map(|&x| x as i128).collect(),
        AD::S8(v) => v.iter().map(|&x| x as i128).collect(),
        AD::S16(v) => v.iter().map(|&x| x as i128).collect(),
        AD::S32(v) => v.iter().map(|&x| x as i128).collect(),
        AD::S64(v) => v.iter().map(|&x| x as i128).collect(),
        AD::U8(v) => v.iter().map(|&x| x as i128).collect(),
        AD::U16(v) => v.iter().map(|&x| x as i128).collect(),
        AD::U32(v) => v.iter().map(|&x| x as i128).collect(),
        AD::U64(v) => v.iter().map(|&x| x as i128).collect(),
        _ => return None,
    })
}

fn from_i128(ty: ElementType, v: &[i128]) -> EResult<ArrayData> {
    use ElementType as T;
    Ok(match ty {
        T::Pred => ArrayData::Pred(v.iter().map(|&x| x != 0).collect()),
        T::S8 => ArrayData::S8(v.iter().map(|&x| x as i8).collect()),
        T::S16 => ArrayData::S16(v.iter().map(|&x| x as i16).collect()),
        T::S32 => ArrayData::S32(v.iter().map(|&x| x as i32).collect()),
        T::S64 => ArrayData::S64(v.iter().map(|&x| x as i64).collect()),
        T::U8 => ArrayData::U8(v.iter().map(|&x| x as u8).collect()),
        T::U16 => ArrayData::U16(v.iter().map(|&x| x as u16).collect()),
        T::U32 => ArrayData::U32(v.iter().map(|&x| x as u32).collect()),
        T::U64 => ArrayData::U64(v.iter().map(|&x| x as u64).collect()),
        // `as` from i128 rounds to nearest even.
        T::F32 => ArrayData::F32(v.iter().map(|&x| x as f32).collect()),
        T::F64 => ArrayData::F64(v.iter().map(|&x| x as f64).collect()),
        T::F16 => ArrayData::F16(v.iter().map(|&x| f16::from_f64(x as f64)).collect()),
        T::BF16 => ArrayData::BF16(v.iter().map(|&x| bf16::from_f64(x as f64)).collect()),
        T::C64 => ArrayData::C64(v.iter().map(|&x| Complex32::new(x as f32, 0.0)).collect()),
        T::C128 => ArrayData::C128(v.iter().map(|&x| Complex64::new(x as f64, 0.0)).collect()),
        t => return Err(EvalError::unsupported(format!("conversion to {t}"))),
    })
}

/// Converts a buffer to element type `ty` (see the module docs for the rules).
pub fn convert_data(d: &ArrayData, ty: ElementType) -> EResult<ArrayData> {
    let from = d.element_type();
    if from == ty {
        return Ok(d.clone());
    }
    if from.is_carried_only() || ty.is_carried_only() {
        return Err(EvalError::unsupported(format!(
            "conversion from {from} to {ty}"
        )));
    }
    if let Some(v) = ints_as_i128(d) {
        return from_i128(ty, &v);
    }
    if let Some(v) = float_vals(d) {
        return from_f64_vec(ty, &v);
    }
    if let Some(v) = complex_vals(d) {
        return match ty {
            ElementType::C64 => Ok(ArrayData::C64(
                v.iter()
                    .map(|z| Complex32::new(z.re as f32, z.im as f32))
                    .collect(),
            )),
            ElementType::C128 => Ok(ArrayData::C128(v)),
            t => Err(EvalError::invalid(format!(
                "conversion from {from} to real type {t}"
            ))),
        };
    }
    Err(EvalError::unsupported(format!(
        "conversion from {from} to {ty}"
    )))
}

/// `convert(x)` to the instruction's element type.
pub fn convert(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let a = operand(ops, 0)?;
    let ty = out_array(&inst.shape)?.ty;
    mk(a.dims.clone(), convert_data(&a.data, ty)?)
}

/// Little-endian bytes of every element (pred: one byte 0/1).
pub fn to_le_bytes(d: &ArrayData) -> Vec<u8> {
    let w = d.element_type().byte_size();
    let mut out = Vec::with_capacity(d.len() * w);
    for i in 0..d.len() {
        let b = d.bits_at(i);
        out.extend_from_slice(&b.to_le_bytes()[..w]);
    }
    out
}

/// Elements of `ty` from little-endian bytes (`bytes.len()` a multiple of the width).
pub fn from_le_bytes(ty: ElementType, bytes: &[u8]) -> EResult<ArrayData> {
    use ElementType as T;
    let w = ty.byte_size();
    let word = |c: &[u8]| {
        let mut b = [0u8; 16];
        b[..c.len()].copy_from_slice(c);
        u128::from_le_bytes(b)
    };
    let it = bytes.chunks_exact(w).map(word);
    Ok(match ty {
        T::Pred => ArrayData::Pred(it.map(|x| x != 0).collect()),
        T::S8 => ArrayData::S8(it.map(|x| x as i8).collect()),
        T::S16 => ArrayData::S16(it.map(|x| x as i16).collect()),
        T::S32 => ArrayData::S32(it.map(|x| x as i32).collect()),
        T::S64 => ArrayData::S64(it.map(|x| x as i64).collect()),
        T::U8 => ArrayData::U8(it.map(|x| x as u8).collect()),
        T::U16 => ArrayData::U16(it.map(|x| x as u16).collect()),
        T::U32 => ArrayData::U32(it.map(|x| x as u32).collect()),
        T::U64 => ArrayData::U64(it.map(|x| x as u64).collect()),
        T::F16 => ArrayData::F16(it.map(|x| f16::from_bits(x as u16)).collect()),
        T::BF16 => ArrayData::BF16(it.map(|x| bf16::from_bits(x as u16)).collect()),
        T::F32 => ArrayData::F32(it.map(|x| f32::from_bits(x as u32)).collect()),
        T::F64 => ArrayData::F64(it.map(|x| f64::from_bits(x as u64)).collect()),
        T::C64 => ArrayData::C64(
            it.map(|x| Complex32::new(f32::from_bits(x as u32), f32::from_bits((x >> 32) as u32)))
                .collect(),
        ),
        T::C128 => ArrayData::C128(
            it.map(|x| Complex64::new(f64::from_bits(x as u64), f64::from_bits((x >> 64) as u64)))
                .collect(),
        ),
        t => ArrayData::Raw(t, it.map(|x| x as u8).collect()),
    })
}

/// `bitcast-convert(x)`.
pub fn bitcast_convert(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let a = operand(ops, 0)?;
    let out = out_array(&inst.shape)?;
    let (from, to) = (a.element_type(), out.ty);
    if from.is_carried_only() != to.is_carried_only() && from.bits() != to.bits() {
        return Err(EvalError::unsupported(format!(
            "bitcast-convert from {from} to {to}"
        )));
    }
    let (wi, wo) = (from.byte_size(), to.byte_size());
    let mut dims = a.dims.clone();
    if wi > wo {
        dims.push(wi / wo);
    } else if wi < wo {
        match dims.last() {
            Some(&d) if d * wi == wo => {
                dims.pop();
            }
            _ => {
                return Err(EvalError::invalid(format!(
                    "bitcast-convert from {from} to {to} needs a minor dimension of size {}",
                    wo / wi
                )))
            }
        }
    }
    let data = from_le_bytes(to, &to_le_bytes(&a.data))?;
    mk(dims, data)
}

/// Rounds the bit pattern `x` of a float with `src_exp`/`src_mant` bits to `exp`/`mant` bits.
fn reduce_bits(x: u64, nbits: u32, src_exp: u32, src_mant: u32, exp: u32, mant: u32) -> u64 {
    let mut r = x;
    if mant < src_mant {
        let shift = src_mant - mant;
        let last_bit_mask = 1u64 << shift;
        let base_bias = (last_bit_mask >> 1) - 1;
        let x_last = (r & last_bit_mask) >> shift;
        let trunc = !(last_bit_mask - 1);
        r = r.wrapping_add(x_last + base_bias) & trunc;
    }
    if exp < src_exp {
        let sign_mask = 1u64 << (nbits - 1);
        let exp_mask = ((1u64 << src_exp) - 1) << src_mant;
        let bias = (1i64 << (src_exp - 1)) - 1;
        let reduced_bias = (1i64 << (exp.max(1) - 1)) - 1;
        let max_exp = (bias + reduced_bias) as u64;
        let min_exp = (bias - reduced_bias) as u64;
        let x_exp = r & exp_mask;
        let signed_zero = r & sign_mask;
        if x_exp > (max_exp << src_mant) {
            r = signed_zero | exp_mask;
        } else if x_exp <= (min_exp << src_mant) {
            r = signed_zero;
        }
    }
    r & if nbits == 64 {
        u64::MAX
    } else {
        (1u64 << nbits) - 1
    }
}

/// `reduce-precision(x), exponent_bits=E, mantissa_bits=M`: round to nearest even into the
/// smaller format, overflow to ±inf, values below its smallest normal to ±0, NaN kept.
pub fn reduce_precision(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let a = operand(ops, 0)?;
    let hlo::View::ReducePrecision {
        exponent_bits: e,
        mantissa_bits: m,
    } = inst.view()
    else {
        return Err(EvalError::malformed(inst));
    };
    if e < 1 || m < 0 {
        return Err(EvalError::invalid(format!(
            "exponent_bits={e} mantissa_bits={m}"
        )));
    }
    let (e, m) = (e.min(64) as u32, m.min(64) as u32);
    // One path for every float type, through its bit pattern: (exponent, mantissa) widths of
    // the source format; NaN stays as it is.
    let ty = a.element_type();
    let (src_exp, src_mant) = match ty {
        ElementType::F16 => (5, 10),
        ElementType::BF16 => (8, 7),
        ElementType::F32 => (8, 23),
        ElementType::F64 => (11, 52),
        t => return Err(EvalError::invalid(format!("reduce-precision on {t}"))),
    };
    let (nbits, w) = (ty.bits(), ty.byte_size());
    let exp_ones = (1u64 << src_exp) - 1;
    let mut bytes = Vec::with_capacity(a.data.len() * w);
    for i in 0..a.data.len() {
        let x = a.data.bits_at(i) as u64;
        let nan = (x >> src_mant) & exp_ones == exp_ones && x & ((1u64 << src_mant) - 1) != 0;
        let r = if nan {
            x
        } else {
            reduce_bits(x, nbits, src_exp, src_mant, e, m)
        };
        bytes.extend_from_slice(&r.to_le_bytes()[..w]);
    }
    let data = from_le_bytes(ty, &bytes)?;
    mk(a.dims.clone(), data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_to_int_saturates() {
        let d = ArrayData::F32(vec![f32::NAN, 1e10, -1e10, -3.7, 300.0]);
        assert_eq!(
            convert_data(&d, ElementType::S32).unwrap(),
            ArrayData::S32(vec![0, i32::MAX, i32::MIN, -3, 300])
        );
        assert_eq!(
            convert_data(&d, ElementType::U8).unwrap(),
            ArrayData::U8(vec![0, 255, 0, 0, 255])
        );
    }

    #[test]
    fn reduce_precision_to_bf16_matches_rounding() {
        let xs = [1.0f32 + 1.0 / 256.0, 1.0 + 3.0 / 256.0, 3.0e38, 1e-39, -2.5];
        let d = ArrayData::F32(xs.to_vec());
        let inst_like = |e, m| {
            let v: Vec<f32> = xs
                .iter()
                .map(|&x| f32::from_bits(reduce_bits(x.to_bits() as u64, 32, 8, 23, e, m) as u32))
                .collect();
            v
        };
        let r = inst_like(8, 7);
        for (x, y) in xs.iter().zip(&r).filter(|(x, _)| x.abs() > 1e-30) {
            assert_eq!(bf16::from_f32(*x).to_f32(), *y, "x={x}");
        }
        // Same exponent width as f32: XLA's algorithm leaves the exponent (and subnormals) alone.
        assert_eq!(r[3], bf16::from_f32(xs[3]).to_f32());
        let h = inst_like(5, 10);
        assert_eq!(h[2], f32::INFINITY);
        assert_eq!(h[3], 0.0);
        let _ = d;
    }

    /// The one bit-pattern path of reduce-precision agrees, for each float type, with the
    /// type's own conversion to bf16's format (8 exponent, 7 mantissa bits) where that is
    /// exact, and keeps NaN (with its payload) for all four.
    #[test]
    fn reduce_precision_is_one_path_for_every_float_type() {
        let m = hlo::parse(
            "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  \
             ROOT r = f32[4] reduce-precision(x), exponent_bits=8, mantissa_bits=7\n}\n",
        )
        .unwrap();
        let inst = m.entry().insts[m.entry().root].clone();
        let run = |d: ArrayData| {
            let lit = mk(vec![d.len()], d).unwrap();
            let Literal::Array(out) = reduce_precision(&inst, &[&lit]).unwrap() else {
                panic!("array");
            };
            out.data
        };
        let xs = [1.0f64 + 3.0 / 256.0, -2.5, 1e30, 0.1];
        let want: Vec<f64> = xs.iter().map(|&x| bf16::from_f64(x).to_f64()).collect();
        let f64s = run(ArrayData::F64(xs.to_vec()));
        assert_eq!(f64s, ArrayData::F64(want.clone()));
        let f32s = run(ArrayData::F32(xs.iter().map(|&x| x as f32).collect()));
        assert_eq!(
            f32s,
            ArrayData::F32(
                xs.iter()
                    .map(|&x| bf16::from_f32(x as f32).to_f32())
                    .collect()
            )
        );
        let b = run(ArrayData::BF16(
            xs.iter().map(|&x| bf16::from_f64(x)).collect(),
        ));
        assert_eq!(
            b,
            ArrayData::BF16(xs.iter().map(|&x| bf16::from_f64(x)).collect())
        );
        // f16 keeps its own 5-bit exponent (8 is wider): only the mantissa rounds; 1e30
        // is already inf in f16.
        let h = run(ArrayData::F16(
            xs.iter().map(|&x| f16::from_f64(x)).collect(),
        ));
        let ArrayData::F16(h) = h else { panic!("f16") };
        assert_eq!(h[1], f16::from_f64(-2.5));
        assert!(h[2].is_infinite());
        let nan = f32::from_bits(0x7fc0_1234);
        let n = run(ArrayData::F32(vec![nan, 1.0, 2.0, 3.0]));
        let ArrayData::F32(n) = n else { panic!("f32") };
        assert_eq!(n[0].to_bits(), 0x7fc0_1234);
        let nan16 = f16::from_bits(0x7e01);
        let n = run(ArrayData::F16(vec![nan16; 4]));
        assert_eq!(n, ArrayData::F16(vec![nan16; 4]));
    }

    #[test]
    fn bitcast_widths() {
        let d = ArrayData::U32(vec![0x0403_0201]);
        let b = to_le_bytes(&d);
        assert_eq!(
            from_le_bytes(ElementType::U8, &b).unwrap(),
            ArrayData::U8(vec![1, 2, 3, 4])
        );
    }
}
