//! Elementwise unary and binary ops for every computable element type.
//!
//! Numerics: floats are computed in f64 and rounded once to the result type. f32 arithmetic
//! flushes subnormals to (signed) zero, inputs and results alike, as XLA:CPU and TPUs do (the
//! corpus' `denormal_flush_f32` case requires it: `sqrt(1e-40)` is 0 there); f16/bf16/f64 keep
//! subnormals. For f32 that is
//! the correctly rounded f32 result of the basic ops (f64 has more than 2·24+2 bits) and a
//! more accurate one for transcendental functions; f16/bf16 go through f32 first (value →
//! f32 → f64 → op → f32 → f16/bf16), which is XLA's "compute in f32, round to the type". f32
//! Complex values are computed in c128.
//!
//! Integer corners follow XLA: wrapping add/sub/mul/neg/abs; `x / 0 = -1` (all bits set),
//! `INT_MIN / -1 = INT_MIN`, `x % 0 = x`, `INT_MIN % -1 = 0`, remainder takes the dividend's
//! sign; shifts by an amount ≥ the bit width (the amount read as unsigned) give 0, or the sign
//! fill for arithmetic right shifts; integer `pow` with a negative exponent is 1 for base 1,
//! ±1 for base -1 and 0 otherwise. pred arithmetic follows C++ `bool` (add/max = or,
//! mul/min = and, sub = xor).

use crate::error::{EResult, EvalError};
use crate::util::{mk, operand};
use half::{bf16, f16};
use hlo::ir::Instruction;
use hlo::literal::{ArrayData, Literal};
use hlo::opcode::Opcode;
use num_complex::{Complex32, Complex64};

/// Float values as f64 (f16/bf16/f32 exactly), `None` for non-float data.
pub fn float_vals(d: &ArrayData) -> Option<Vec<f64>> {
    Some(match d {
        ArrayData::F16(v) => v.iter().map(|x| x.to_f32() as f64).collect(),
        ArrayData::BF16(v) => v.iter().map(|x| x.to_f32() as f64).collect(),
        ArrayData::F32(v) => v.iter().map(|&x| x as f64).collect(),
        ArrayData::F64(v) => v.clone(),
        _ => return None,
    })
}

/// Rounds f64 results to float type `like` (f16/bf16 through f32).
pub fn float_back(like: &ArrayData, v: Vec<f64>) -> ArrayData {
    match like {
        ArrayData::F16(_) => ArrayData::F16(v.iter().map(|&x| f16::from_f32(x as f32)).collect()),
        ArrayData::BF16(_) => {
            ArrayData::BF16(v.iter().map(|&x| bf16::from_f32(x as f32)).collect())
        }
        ArrayData::F64(_) => ArrayData::F64(v),
        _ => ArrayData::F32(v.iter().map(|&x| x as f32).collect()),
    }
}

/// Flushes an f32 subnormal (as f64) to signed zero.
fn ftz32(x: f64) -> f64 {
    if x != 0.0 && x.abs() < f32::MIN_POSITIVE as f64 {
        0f64.copysign(x)
    } else {
        x
    }
}

/// Like [`float_vals`] for arithmetic: f32 subnormal inputs read as zero.
pub fn arith_vals(d: &ArrayData) -> Option<Vec<f64>> {
    match d {
        ArrayData::F32(v) => Some(v.iter().map(|&x| ftz32(x as f64)).collect()),
        _ => float_vals(d),
    }
}

/// Like [`float_back`] for arithmetic: f32 subnormal results become zero.
pub fn arith_back(like: &ArrayData, v: Vec<f64>) -> ArrayData {
    match like {
        ArrayData::F32(_) => ArrayData::F32(
            v.iter()
                .map(|&x| {
                    let y = x as f32;
                    if y != 0.0 && y.abs() < f32::MIN_POSITIVE {
                        0f32.copysign(y)
                    } else {
                        y
                    }
                })
                .collect(),
        ),
        _ => float_back(like, v),
    }
}

/// Complex values as c128, `None` for non-complex data.
pub fn complex_vals(d: &ArrayData) -> Option<Vec<Complex64>> {
    Some(match d {
        ArrayData::C64(v) => v
            .iter()
            .map(|z| Complex64::new(z.re as f64, z.im as f64))
            .collect(),
        ArrayData::C128(v) => v.clone(),
        _ => return None,
    })
}

fn complex_back(like: &ArrayData, v: Vec<Complex64>) -> ArrayData {
    match like {
        ArrayData::C64(_) => ArrayData::C64(
            v.iter()
                .map(|z| Complex32::new(z.re as f32, z.im as f32))
                .collect(),
        ),
        _ => ArrayData::C128(v),
    }
}

/// Real values of a complex type's component type.
fn component_back(like: &ArrayData, v: Vec<f64>) -> ArrayData {
    match like {
        ArrayData::C64(_) => ArrayData::F32(v.iter().map(|&x| x as f32).collect()),
        _ => ArrayData::F64(v),
    }
}

/// Fixed-width integer element operations, implemented for every integer type.
pub trait IntElem: Copy + Ord + Default {
    const BITS: u32;
    const SIGNED: bool;
    /// Bit pattern, zero-extended.
    fn bits(self) -> u64;
    /// From a bit pattern (truncated).
    fn from_bits(b: u64) -> Self;
    fn wadd(self, o: Self) -> Self;
    fn wsub(self, o: Self) -> Self;
    fn wmul(self, o: Self) -> Self;
    fn wneg(self) -> Self;
    fn wabs(self) -> Self;
    fn signum(self) -> Self;
    fn div_xla(self, o: Self) -> Self;
    fn rem_xla(self, o: Self) -> Self;
    fn is_negative(self) -> bool;
    fn is_odd(self) -> bool;
}

macro_rules! int_elem {
    ($t:ty, $u:ty, $signed:expr) => {
        impl IntElem for $t {
            const BITS: u32 = <$t>::BITS;
            const SIGNED: bool = $signed;
            fn bits(self) -> u64 {
                self as $u as u64
            }
            fn from_bits(b: u64) -> Self {
                b as $u as $t
            }
            fn wadd(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn wsub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            fn wmul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            fn wneg(self) -> Self {
                self.wrapping_neg()
            }
            #[allow(unused_comparisons)]
            fn wabs(self) -> Self {
                if self < 0 as $t {
                    self.wrapping_neg()
                } else {
                    self
                }
            }
            #[allow(unused_comparisons)]
            fn signum(self) -> Self {
                if self < 0 as $t {
                    self.wrapping_sub(self).wrapping_sub(1)
                } else if self == 0 {
                    0
                } else {
                    1
                }
            }
            fn div_xla(self, o: Self) -> Self {
                if o == 0 {
                    Self::from_bits(u64::MAX)
                } else {
                    // wrapping_div: MIN / -1 = MIN.
                    self.wrapping_div(o)
                }
            }
            fn rem_xla(self, o: Self) -> Self {
                if o == 0 {
                    self
                } else {
                    // wrapping_rem: MIN % -1 = 0.
                    self.wrapping_rem(o)
                }
            }
            #[allow(unused_comparisons)]
            fn is_negative(self) -> bool {
                self < 0 as $t
            }
            fn is_odd(self) -> bool {
                self & 1 == 1
            }
        }
    };
}
int_elem!(i8, u8, true);
int_elem!(i16, u16, true);
int_elem!(i32, u32, true);
int_elem!(i64, u64, true);
int_elem!(u8, u8, false);
int_elem!(u16, u16, false);
int_elem!(u32, u32, false);
int_elem!(u64, u64, false);

fn mask(bits: u32) -> u64 {
    if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

fn sign_extend(b: u64, bits: u32) -> i64 {
    let sh = 64 - bits;
    ((b << sh) as i64) >> sh
}

fn int_pow<T: IntElem>(a: T, b: T) -> T {
    let one = T::from_bits(1);
    if b.is_negative() {
        let minus_one = T::from_bits(u64::MAX);
        return if a == one {
            one
        } else if a == minus_one {
            if b.is_odd() {
                minus_one
            } else {
                one
            }
        } else {
            T::default()
        };
    }
    let (mut base, mut e, mut acc) = (a, b.bits(), one);
    while e > 0 {
        if e & 1 == 1 {
            acc = acc.wmul(base);
        }
        base = base.wmul(base);
        e >>= 1;
    }
    acc
}

fn int_binary_vec<T: IntElem>(op: Opcode, a: &[T], b: &[T]) -> EResult<Vec<T>> {
    use Opcode as O;
    let w = T::BITS;
    let z = a.iter().zip(b);
    Ok(match op {
        O::Add => z.map(|(&x, &y)| x.wadd(y)).collect(),
        O::Subtract => z.map(|(&x, &y)| x.wsub(y)).collect(),
        O::Multiply => z.map(|(&x, &y)| x.wmul(y)).collect(),
        O::Divide => z.map(|(&x, &y)| x.div_xla(y)).collect(),
        O::Remainder => z.map(|(&x, &y)| x.rem_xla(y)).collect(),
        O::Maximum => z.map(|(&x, &y)| x.max(y)).collect(),
        O::Minimum => z.map(|(&x, &y)| x.min(y)).collect(),
        O::And => z
            .map(|(&x, &y)| T::from_bits(x.bits() & y.bits()))
            .collect(),
        O::Or => z
            .map(|(&x, &y)| T::from_bits(x.bits() | y.bits()))
            .collect(),
        O::Xor => z
            .map(|(&x, &y)| T::from_bits(x.bits() ^ y.bits()))
            .collect(),
        O::ShiftLeft => z
            .map(|(&x, &y)| {
                let s = y.bits();
                T::from_bits(if s >= w as u64 {
                    0
                } else {
                    (x.bits() << s) & mask(w)
                })
            })
            .collect(),
        O::ShiftRightLogical => z
            .map(|(&x, &y)| {
                let s = y.bits();
                T::from_bits(if s >= w as u64 { 0 } else { x.bits() >> s })
            })
            .collect(),
        O::ShiftRightArithmetic => z
            .map(|(&x, &y)| {
                let s = y.bits().min(w as u64 - 1);
                T::from_bits((sign_extend(x.bits(), w) >> s) as u64)
            })
            .collect(),
        O::Power => z.map(|(&x, &y)| int_pow(x, y)).collect(),
        op => return Err(EvalError::unsupported(format!("{op} on integers"))),
    })
}

fn int_unary_vec<T: IntElem>(op: Opcode, a: &[T]) -> EResult<Vec<T>> {
    use Opcode as O;
    let w = T::BITS;
    Ok(match op {
        O::Abs => a.iter().map(|&x| x.wabs()).collect(),
        O::Negate => a.iter().map(|&x| x.wneg()).collect(),
        O::Sign => a.iter().map(|&x| x.signum()).collect(),
        O::Not => a.iter().map(|&x| T::from_bits(!x.bits())).collect(),
        O::Clz => a
            .iter()
            .map(|&x| T::from_bits((x.bits().leading_zeros() - (64 - w)) as u64))
            .collect(),
        O::PopCnt => a
            .iter()
            .map(|&x| T::from_bits(x.bits().count_ones() as u64))
            .collect(),
        O::Real => a.to_vec(),
        O::Imag => vec![T::default(); a.len()],
        op => return Err(EvalError::unsupported(format!("{op} on integers"))),
    })
}

fn sign_f(x: f64) -> f64 {
    if x.is_nan() || x == 0.0 {
        x
    } else {
        1f64.copysign(x)
    }
}

fn float_unary_fn(op: Opcode) -> Option<fn(f64) -> f64> {
    use Opcode as O;
    Some(match op {
        O::Abs => f64::abs,
        O::Cbrt => f64::cbrt,
        O::Ceil => f64::ceil,
        O::Cos => f64::cos,
        O::Erf => libm::erf,
        O::Exp => f64::exp,
        O::Expm1 => f64::exp_m1,
        O::Floor => f64::floor,
        O::Log => f64::ln,
        O::Log1p => f64::ln_1p,
        O::Logistic => |x| 1.0 / (1.0 + (-x).exp()),
        O::Negate => |x| -x,
        O::RoundAfz => f64::round,
        O::RoundEven => f64::round_ties_even,
        O::Rsqrt => |x| 1.0 / x.sqrt(),
        O::Sign => sign_f,
        O::Sin => f64::sin,
        O::Sqrt => f64::sqrt,
        O::Tan => f64::tan,
        O::Tanh => f64::tanh,
        O::Real => |x| x,
        O::Imag => |_| 0.0,
        _ => return None,
    })
}

fn complex_unary(op: Opcode, d: &ArrayData, v: Vec<Complex64>) -> EResult<ArrayData> {
    use Opcode as O;
    let map = |f: fn(Complex64) -> Complex64| complex_back(d, v.iter().map(|&z| f(z)).collect());
    Ok(match op {
        O::Abs => component_back(d, v.iter().map(|z| z.norm()).collect()),
        O::Real => component_back(d, v.iter().map(|z| z.re).collect()),
        O::Imag => component_back(d, v.iter().map(|z| z.im).collect()),
        O::Negate => map(|z| -z),
        O::Exp => map(|z| z.exp()),
        O::Expm1 => map(|z| z.exp() - 1.0),
        O::Log => map(|z| z.ln()),
        O::Log1p => map(|z| (z + 1.0).ln()),
        O::Sqrt => map(|z| z.sqrt()),
        O::Rsqrt => map(|z| 1.0 / z.sqrt()),
        O::Sin => map(|z| z.sin()),
        O::Cos => map(|z| z.cos()),
        O::Tan => map(|z| z.tan()),
        O::Tanh => map(|z| z.tanh()),
        O::Logistic => map(|z| 1.0 / (1.0 + (-z).exp())),
        O::Sign => map(|z| if z.norm() == 0.0 { z } else { z / z.norm() }),
        op => return Err(EvalError::unsupported(format!("{op} on complex values"))),
    })
}

/// Applies a unary elementwise op to typed data.
pub fn unary_data(op: Opcode, d: &ArrayData) -> EResult<ArrayData> {
    use ArrayData as AD;
    if op == Opcode::IsFinite {
        return match float_vals(d) {
            Some(v) => Ok(AD::Pred(v.iter().map(|x| x.is_finite()).collect())),
            None => Err(EvalError::invalid(format!(
                "is-finite on {}",
                d.element_type()
            ))),
        };
    }
    if let Some(v) = arith_vals(d) {
        let f = float_unary_fn(op)
            .ok_or_else(|| EvalError::invalid(format!("{op} on {}", d.element_type())))?;
        return Ok(arith_back(d, v.into_iter().map(f).collect()));
    }
    if let Some(v) = complex_vals(d) {
        return complex_unary(op, d, v);
    }
    Ok(match d {
        AD::Pred(v) => match op {
            Opcode::Not => AD::Pred(v.iter().map(|&x| !x).collect()),
            Opcode::Abs | Opcode::Real | Opcode::Sign => AD::Pred(v.clone()),
            Opcode::Imag => AD::Pred(vec![false; v.len()]),
            op => return Err(EvalError::unsupported(format!("{op} on pred"))),
        },
        AD::S8(v) => AD::S8(int_unary_vec(op, v)?),
        AD::S16(v) => AD::S16(int_unary_vec(op, v)?),
        AD::S32(v) => AD::S32(int_unary_vec(op, v)?),
        AD::S64(v) => AD::S64(int_unary_vec(op, v)?),
        AD::U8(v) => AD::U8(int_unary_vec(op, v)?),
        AD::U16(v) => AD::U16(int_unary_vec(op, v)?),
        AD::U32(v) => AD::U32(int_unary_vec(op, v)?),
        AD::U64(v) => AD::U64(int_unary_vec(op, v)?),
        other => {
            return Err(EvalError::unsupported(format!(
                "{op} on {} (carried-only element type)",
                other.element_type()
            )))
        }
    })
}

fn float_max(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x > y || (x == y && y.is_sign_negative()) {
        x
    } else {
        y
    }
}

fn float_min(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x < y || (x == y && x.is_sign_negative()) {
        x
    } else {
        y
    }
}

fn float_binary_fn(op: Opcode) -> Option<fn(f64, f64) -> f64> {
    use Opcode as O;
    Some(match op {
        O::Add => |x, y| x + y,
        O::Subtract => |x, y| x - y,
        O::Multiply => |x, y| x * y,
        O::Divide => |x, y| x / y,
        O::Maximum => float_max,
        O::Minimum => float_min,
        O::Power => f64::powf,
        O::Remainder => |x, y| x % y,
        O::Atan2 => f64::atan2,
        _ => return None,
    })
}

fn complex_binary(
    op: Opcode,
    d: &ArrayData,
    a: Vec<Complex64>,
    b: Vec<Complex64>,
) -> EResult<ArrayData> {
    use Opcode as O;
    let f: fn(Complex64, Complex64) -> Complex64 = match op {
        O::Add => |x, y| x + y,
        O::Subtract => |x, y| x - y,
        O::Multiply => |x, y| x * y,
        O::Divide => |x, y| x / y,
        O::Power => |x, y| {
            if x == Complex64::new(0.0, 0.0) && y == Complex64::new(0.0, 0.0) {
                Complex64::new(1.0, 0.0)
            } else {
                x.powc(y)
            }
        },
        op => return Err(EvalError::unsupported(format!("{op} on complex values"))),
    };
    Ok(complex_back(
        d,
        a.into_iter().zip(b).map(|(x, y)| f(x, y)).collect(),
    ))
}

/// Applies a binary elementwise op to two buffers of the same type and length.
pub fn binary_data(op: Opcode, a: &ArrayData, b: &ArrayData) -> EResult<ArrayData> {
    use ArrayData as AD;
    if a.element_type() != b.element_type() || a.len() != b.len() {
        return Err(EvalError::invalid(format!(
            "{op} operands differ: {}[{}] and {}[{}]",
            a.element_type(),
            a.len(),
            b.element_type(),
            b.len()
        )));
    }
    if op == Opcode::Complex {
        let (x, y) = (float_vals(a), float_vals(b));
        return match (a, x, y) {
            (AD::F32(_), Some(x), Some(y)) => Ok(AD::C64(
                x.iter()
                    .zip(&y)
                    .map(|(&r, &i)| Complex32::new(r as f32, i as f32))
                    .collect(),
            )),
            (AD::F64(_), Some(x), Some(y)) => Ok(AD::C128(
                x.iter()
                    .zip(&y)
                    .map(|(&r, &i)| Complex64::new(r, i))
                    .collect(),
            )),
            _ => Err(EvalError::invalid(format!(
                "complex of {}",
                a.element_type()
            ))),
        };
    }
    if let (Some(x), Some(y)) = (arith_vals(a), arith_vals(b)) {
        let f = float_binary_fn(op)
            .ok_or_else(|| EvalError::invalid(format!("{op} on {}", a.element_type())))?;
        return Ok(arith_back(
            a,
            x.into_iter().zip(y).map(|(p, q)| f(p, q)).collect(),
        ));
    }
    if let (Some(x), Some(y)) = (complex_vals(a), complex_vals(b)) {
        return complex_binary(op, a, x, y);
    }
    Ok(match (a, b) {
        (AD::Pred(x), AD::Pred(y)) => {
            let f: fn(bool, bool) -> bool = match op {
                Opcode::And | Opcode::Minimum | Opcode::Multiply => |p, q| p & q,
                Opcode::Or | Opcode::Maximum | Opcode::Add => |p, q| p | q,
                Opcode::Xor | Opcode::Subtract => |p, q| p ^ q,
                op => return Err(EvalError::unsupported(format!("{op} on pred"))),
            };
            AD::Pred(x.iter().zip(y).map(|(&p, &q)| f(p, q)).collect())
        }
        (AD::S8(x), AD::S8(y)) => AD::S8(int_binary_vec(op, x, y)?),
        (AD::S16(x), AD::S16(y)) => AD::S16(int_binary_vec(op, x, y)?),
        (AD::S32(x), AD::S32(y)) => AD::S32(int_binary_vec(op, x, y)?),
        (AD::S64(x), AD::S64(y)) => AD::S64(int_binary_vec(op, x, y)?),
        (AD::U8(x), AD::U8(y)) => AD::U8(int_binary_vec(op, x, y)?),
        (AD::U16(x), AD::U16(y)) => AD::U16(int_binary_vec(op, x, y)?),
        (AD::U32(x), AD::U32(y)) => AD::U32(int_binary_vec(op, x, y)?),
        (AD::U64(x), AD::U64(y)) => AD::U64(int_binary_vec(op, x, y)?),
        _ => {
            return Err(EvalError::unsupported(format!(
                "{op} on {} (carried-only element type)",
                a.element_type()
            )))
        }
    })
}

/// Repeats a one-element buffer `n` times.
pub fn splat(d: &ArrayData, n: usize) -> ArrayData {
    crate::util::take(d, &vec![0; n])
}

/// The unary elementwise instruction.
pub fn unary(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let a = operand(ops, 0)?;
    mk(a.dims.clone(), unary_data(inst.opcode, &a.data)?)
}

/// The binary elementwise instruction (a scalar operand is broadcast to the other's shape).
pub fn binary(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let (a, b) = (operand(ops, 0)?, operand(ops, 1)?);
    if a.dims == b.dims {
        return mk(a.dims.clone(), binary_data(inst.opcode, &a.data, &b.data)?);
    }
    if a.dims.is_empty() {
        let ad = splat(&a.data, b.data.len());
        return mk(b.dims.clone(), binary_data(inst.opcode, &ad, &b.data)?);
    }
    if b.dims.is_empty() {
        let bd = splat(&b.data, a.data.len());
        return mk(a.dims.clone(), binary_data(inst.opcode, &a.data, &bd)?);
    }
    Err(EvalError::invalid(format!(
        "operand dims differ: {:?} and {:?}",
        a.dims, b.dims
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(op: Opcode, a: ArrayData, b: ArrayData) -> ArrayData {
        binary_data(op, &a, &b).unwrap()
    }

    #[test]
    fn integer_division_corners() {
        let a = ArrayData::S32(vec![7, -7, i32::MIN, 5, i32::MIN]);
        let b = ArrayData::S32(vec![2, 2, -1, 0, -1]);
        assert_eq!(
            bin(Opcode::Divide, a.clone(), b.clone()),
            ArrayData::S32(vec![3, -3, i32::MIN, -1, i32::MIN])
        );
        assert_eq!(
            bin(Opcode::Remainder, a, b),
            ArrayData::S32(vec![1, -1, 0, 5, 0])
        );
        let u = bin(
            Opcode::Divide,
            ArrayData::U8(vec![9]),
            ArrayData::U8(vec![0]),
        );
        assert_eq!(u, ArrayData::U8(vec![255]));
    }

    #[test]
    fn shifts_past_width() {
        let a = ArrayData::S8(vec![-128, 64, -1, 1]);
        let s = ArrayData::S8(vec![8, 1, 100, -1]);
        assert_eq!(
            bin(Opcode::ShiftLeft, a.clone(), s.clone()),
            ArrayData::S8(vec![0, -128, 0, 0])
        );
        assert_eq!(
            bin(Opcode::ShiftRightArithmetic, a.clone(), s.clone()),
            ArrayData::S8(vec![-1, 32, -1, 0])
        );
        assert_eq!(
            bin(Opcode::ShiftRightLogical, a, s),
            ArrayData::S8(vec![0, 32, 0, 0])
        );
    }

    #[test]
    fn f32_subnormals_flush() {
        let r = unary_data(Opcode::Sqrt, &ArrayData::F32(vec![1e-40, 4.0])).unwrap();
        assert_eq!(r, ArrayData::F32(vec![0.0, 2.0]));
        let r = bin(
            Opcode::Multiply,
            ArrayData::F32(vec![1e-20, -1e-20]),
            ArrayData::F32(vec![1e-19, 1e-19]),
        );
        let ArrayData::F32(r) = r else { panic!() };
        assert!(r[0] == 0.0 && r[1] == 0.0 && r[1].is_sign_negative());
        // f64 keeps subnormals.
        let r = bin(
            Opcode::Multiply,
            ArrayData::F64(vec![1e-300]),
            ArrayData::F64(vec![1e-10]),
        );
        assert_eq!(r, ArrayData::F64(vec![1e-310]));
    }

    #[test]
    fn float_corners() {
        let r = bin(
            Opcode::Remainder,
            ArrayData::F32(vec![-7.5, 7.5]),
            ArrayData::F32(vec![2.0, -2.0]),
        );
        assert_eq!(r, ArrayData::F32(vec![-1.5, 1.5]));
        let s = unary_data(
            Opcode::Sign,
            &ArrayData::F32(vec![-0.0, 0.0, -3.0, f32::NAN]),
        )
        .unwrap();
        let ArrayData::F32(s) = s else { panic!() };
        assert!(
            s[0] == 0.0
                && s[0].is_sign_negative()
                && s[1].is_sign_positive()
                && s[2] == -1.0
                && s[3].is_nan()
        );
        let r = unary_data(Opcode::RoundAfz, &ArrayData::F32(vec![2.5, -2.5])).unwrap();
        assert_eq!(r, ArrayData::F32(vec![3.0, -3.0]));
        let r = unary_data(Opcode::RoundEven, &ArrayData::F32(vec![2.5, -3.5])).unwrap();
        assert_eq!(r, ArrayData::F32(vec![2.0, -4.0]));
    }

    #[test]
    fn int_pow_and_bits() {
        let r = bin(
            Opcode::Power,
            ArrayData::S32(vec![3, -1, 2, 1]),
            ArrayData::S32(vec![4, -3, -1, -5]),
        );
        assert_eq!(r, ArrayData::S32(vec![81, -1, 0, 1]));
        let c = unary_data(Opcode::Clz, &ArrayData::U8(vec![0, 1, 255])).unwrap();
        assert_eq!(c, ArrayData::U8(vec![8, 7, 0]));
        let p = unary_data(Opcode::PopCnt, &ArrayData::S32(vec![-1, 5])).unwrap();
        assert_eq!(p, ArrayData::S32(vec![32, 2]));
    }
}
