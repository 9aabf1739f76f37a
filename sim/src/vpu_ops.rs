//! The VPU's element-wise arithmetic, as the ISA prelude and each instruction's row define it.
//!
//! Conventions: integers wrap; narrow floats (bf16, f16, f32) compute in f32 and round once to
//! the type; f64 computes in f64; transcendental functions widen to f64, evaluate with `libm`
//! (platform-independent results) and round once; every NaN result is the type's canonical NaN;
//! `pred` elements are 0 or 1. Operations an element type does not support are rejected before
//! execution by `isa`'s type classes; anything left is reported as [`OpError`].

use crate::elem::{self, canonical_nan, from_f32, from_f64, from_int, int_value, to_f32, to_f64};
use isa::{CmpOp, DType, RedOp};
use thiserror::Error;

/// An operation an element type cannot do.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{op} is not defined for element type {t}")]
pub struct OpError {
    /// The operation.
    pub op: &'static str,
    /// The type's name.
    pub t: &'static str,
}

fn err(op: &'static str, t: DType) -> OpError {
    OpError { op, t: t.name() }
}

/// Binary element-wise operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `rem`
    Rem,
    /// min
    Min,
    /// max
    Max,
    /// `&`
    And,
    /// `|`
    Or,
    /// `^`
    Xor,
    /// `<<`
    Shl,
    /// logical `>>`
    Shr,
    /// arithmetic `>>`
    Sra,
    /// pow
    Pow,
    /// atan2
    Atan2,
}

/// Unary element-wise operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// copy
    Mov,
    /// negate
    Neg,
    /// absolute value
    Abs,
    /// sign
    Sign,
    /// floor
    Floor,
    /// ceil
    Ceil,
    /// round half away from zero
    Round,
    /// round half to even
    RoundEven,
    /// bitwise / logical not
    Not,
    /// population count
    Popcnt,
    /// count leading zeros
    Clz,
    /// is finite (result pred)
    IsFinite,
    /// e^x
    Exp,
    /// e^x − 1
    Expm1,
    /// ln
    Log,
    /// ln(1+x)
    Log1p,
    /// 1/(1+e^−x)
    Logistic,
    /// √x
    Sqrt,
    /// 1/√x
    Rsqrt,
    /// ∛x
    Cbrt,
    /// tanh
    Tanh,
    /// sin
    Sin,
    /// cos
    Cos,
    /// tan
    Tan,
    /// erf
    Erf,
}

fn min_max_f64(a: f64, b: f64, max: bool) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if a == b {
        // ±0: min prefers −0, max prefers +0
        let neg = if max {
            a.is_sign_negative() && b.is_sign_negative()
        } else {
            a.is_sign_negative() || b.is_sign_negative()
        };
        return if neg { -a.abs() } else { a.abs() };
    }
    if (a < b) != max {
        a
    } else {
        b
    }
}

/// f32 arithmetic flushes subnormals to signed zero, inputs and results (as TPUs and XLA:CPU
/// do; see docs/isa.md): the raw f32 `x` with a subnormal value becomes ±0. Other types and
/// non-subnormal values are unchanged.
pub fn flush_f32(t: DType, x: u64) -> u64 {
    if t == DType::F32 && (x as u32) & 0x7F80_0000 == 0 {
        x & 0x8000_0000
    } else {
        x
    }
}

/// Applies a binary operation to raw elements of type `t`.
pub fn binary(op: BinOp, t: DType, a: u64, b: u64) -> Result<u64, OpError> {
    if t == DType::F32 {
        let r = binary_raw(op, t, flush_f32(t, a), flush_f32(t, b))?;
        return Ok(flush_f32(t, r));
    }
    binary_raw(op, t, a, b)
}

fn binary_raw(op: BinOp, t: DType, a: u64, b: u64) -> Result<u64, OpError> {
    use BinOp::*;
    if t == DType::Pred {
        let r = match op {
            And => a & b,
            Or => a | b,
            Xor => a ^ b,
            _ => return Err(err("this operation", t)),
        };
        return Ok(r & 1);
    }
    if t.is_float() {
        if matches!(op, Pow | Atan2) {
            let (x, y) = (to_f64(t, a), to_f64(t, b));
            let r = if op == Pow {
                libm::pow(x, y)
            } else {
                libm::atan2(x, y)
            };
            return Ok(from_f64(t, r));
        }
        if t == DType::F64 {
            let (x, y) = (f64::from_bits(a), f64::from_bits(b));
            let r = match op {
                Add => x + y,
                Sub => x - y,
                Mul => x * y,
                Div => x / y,
                Rem => x % y,
                Min => min_max_f64(x, y, false),
                Max => min_max_f64(x, y, true),
                _ => return Err(err("bitwise operations", t)),
            };
            return Ok(from_f64(t, r));
        }
        let (x, y) = (to_f32(t, a), to_f32(t, b));
        let r = match op {
            Add => x + y,
            Sub => x - y,
            Mul => x * y,
            Div => x / y,
            Rem => x % y,
            Min => min_max_f64(x as f64, y as f64, false) as f32,
            Max => min_max_f64(x as f64, y as f64, true) as f32,
            _ => return Err(err("bitwise operations", t)),
        };
        return Ok(from_f32(t, r));
    }
    // integers
    let bits = elem::bits(t);
    let (x, y) = (int_value(t, a), int_value(t, b));
    let r: i128 = match op {
        Add => x + y,
        Sub => x - y,
        Mul => x.wrapping_mul(y),
        Div => {
            if y == 0 {
                -1
            } else {
                x / y // MIN / −1 = −MIN, truncated back to MIN by from_int
            }
        }
        Rem => {
            if y == 0 {
                x
            } else {
                x % y
            }
        }
        Min => x.min(y),
        Max => x.max(y),
        And => x & y,
        Or => x | y,
        Xor => x ^ y,
        Shl | Shr | Sra => {
            let sh = b; // unsigned shift amount (raw bits)
            let ua = a;
            match op {
                Shl => {
                    if sh >= bits as u64 {
                        0
                    } else {
                        (ua << sh) as i128
                    }
                }
                Shr => {
                    if sh >= bits as u64 {
                        0
                    } else {
                        (ua >> sh) as i128
                    }
                }
                _ => {
                    // sign fill also for unsigned types: use the type's top bit
                    let sx = {
                        let s = 64 - bits;
                        ((ua << s) as i64 >> s) as i128
                    };
                    if sh >= bits as u64 {
                        if sx < 0 {
                            -1
                        } else {
                            0
                        }
                    } else {
                        sx >> sh
                    }
                }
            }
        }
        Pow | Atan2 => return Err(err("pow/atan2", t)),
    };
    Ok(from_int(t, r))
}

fn round_half_away(x: f64) -> f64 {
    x.round()
}

/// Applies a unary operation to a raw element of type `t` (result type `t`, or pred for
/// `IsFinite`).
pub fn unary(op: UnOp, t: DType, a: u64) -> Result<u64, OpError> {
    if t == DType::F32 && !matches!(op, UnOp::Mov | UnOp::IsFinite) {
        let r = unary_raw(op, t, flush_f32(t, a))?;
        return Ok(flush_f32(t, r));
    }
    unary_raw(op, t, a)
}

fn unary_raw(op: UnOp, t: DType, a: u64) -> Result<u64, OpError> {
    use UnOp::*;
    if op == Mov {
        return Ok(a);
    }
    if t == DType::Pred {
        return match op {
            Not => Ok((a ^ 1) & 1),
            _ => Err(err("this operation", t)),
        };
    }
    if t.is_float() {
        let sign_bit = 1u64 << (elem::bits(t) - 1);
        let x = to_f64(t, a);
        let nan = x.is_nan();
        let r = match op {
            // A sign flip, NaN included (XLA's negate flips the sign bit of a NaN too).
            Neg => return Ok(a ^ sign_bit),
            Abs => return Ok(if nan { canonical_nan(t) } else { a & !sign_bit }),
            Sign => {
                if nan {
                    return Ok(canonical_nan(t));
                }
                if x == 0.0 {
                    return Ok(a);
                }
                if x > 0.0 {
                    1.0
                } else {
                    -1.0
                }
            }
            Floor => x.floor(),
            Ceil => x.ceil(),
            Round => round_half_away(x),
            RoundEven => x.round_ties_even(),
            IsFinite => return Ok(x.is_finite() as u64),
            Exp => libm::exp(x),
            Expm1 => libm::expm1(x),
            Log => libm::log(x),
            Log1p => libm::log1p(x),
            Logistic => 1.0 / (1.0 + libm::exp(-x)),
            Sqrt => libm::sqrt(x),
            Rsqrt => 1.0 / libm::sqrt(x),
            Cbrt => libm::cbrt(x),
            Tanh => libm::tanh(x),
            Sin => libm::sin(x),
            Cos => libm::cos(x),
            Tan => libm::tan(x),
            Erf => libm::erf(x),
            Not | Popcnt | Clz => return Err(err("bitwise operations", t)),
            Mov => unreachable!(),
        };
        // floor/ceil/round/sign results are exact in the type; the functions round once.
        return Ok(from_f64(t, r));
    }
    let bits = elem::bits(t);
    let x = int_value(t, a);
    let r: i128 = match op {
        Neg => -x,
        Abs => x.abs(),
        Sign => x.signum(),
        Not => !x,
        Popcnt => a.count_ones() as i128,
        Clz => (a.leading_zeros() - (64 - bits)) as i128,
        _ => return Err(err("this operation", t)),
    };
    Ok(from_int(t, r))
}

/// `vpu.cmp` of raw elements: 1 or 0.
pub fn compare(op: CmpOp, t: DType, a: u64, b: u64) -> u64 {
    use std::cmp::Ordering::*;
    let ord = if t.is_float() {
        let (x, y) = (to_f64(t, flush_f32(t, a)), to_f64(t, flush_f32(t, b)));
        x.partial_cmp(&y)
    } else {
        Some(int_value(t, a).cmp(&int_value(t, b)))
    };
    let r = match (op, ord) {
        (CmpOp::Ne, None) => true,
        (_, None) => false,
        (CmpOp::Eq, Some(o)) => o == Equal,
        (CmpOp::Ne, Some(o)) => o != Equal,
        (CmpOp::Lt, Some(o)) => o == Less,
        (CmpOp::Le, Some(o)) => o != Greater,
        (CmpOp::Gt, Some(o)) => o == Greater,
        (CmpOp::Ge, Some(o)) => o != Less,
    };
    r as u64
}

/// One step of `vpu.reduce`: `op(acc, x)` rounded to the type.
pub fn reduce_step(op: RedOp, t: DType, acc: u64, x: u64) -> Result<u64, OpError> {
    let b = match op {
        RedOp::Add => BinOp::Add,
        RedOp::Mul => BinOp::Mul,
        RedOp::Min => BinOp::Min,
        RedOp::Max => BinOp::Max,
        RedOp::And => BinOp::And,
        RedOp::Or => BinOp::Or,
        RedOp::Xor => BinOp::Xor,
    };
    if t == DType::Pred && matches!(op, RedOp::Add | RedOp::Mul) {
        return Err(err("reduce add/mul", t));
    }
    if t == DType::Pred && matches!(op, RedOp::Min | RedOp::Max) {
        return Ok(if op == RedOp::Min { acc & x } else { acc | x });
    }
    if t.is_float() && matches!(op, RedOp::And | RedOp::Or | RedOp::Xor) {
        return Err(err("reduce and/or/xor", t));
    }
    binary(b, t, acc, x)
}

/// `convert_t(v)` of a small non-negative integer (for `vpu.iota`).
pub fn from_index(t: DType, v: u64) -> u64 {
    if t.is_float() {
        elem::int_to_float(t, v as i128)
    } else if t == DType::Pred {
        (v != 0) as u64
    } else {
        from_int(t, v as i128)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(x: f32) -> u64 {
        x.to_bits() as u64
    }

    #[test]
    fn float_min_max_and_nan() {
        assert_eq!(
            binary(BinOp::Min, DType::F32, f(-0.0), f(0.0)).unwrap(),
            f(-0.0)
        );
        assert_eq!(
            binary(BinOp::Max, DType::F32, f(-0.0), f(0.0)).unwrap(),
            f(0.0)
        );
        assert_eq!(
            binary(BinOp::Max, DType::F32, f(f32::NAN), f(1.0)).unwrap(),
            0x7FC0_0000
        );
        assert_eq!(
            binary(BinOp::Add, DType::F32, f(1.0), f(2.0)).unwrap(),
            f(3.0)
        );
    }

    #[test]
    fn f32_fast_path_agrees_with_the_generic_rules() {
        // vpu.rs has a fast path for f32 add/sub/mul/div; it must give these results.
        for (op, a, b) in [
            (BinOp::Add, 1.5f32, 2.25f32),
            (BinOp::Div, 0.0, 0.0),
            (BinOp::Mul, f32::INFINITY, 0.0),
            (BinOp::Sub, 1e-40, 2e-40),
            (BinOp::Mul, 1e-20, 1e-20),
            (BinOp::Div, 1e-38, 0.01),
            (BinOp::Add, -1e-45, 0.0),
        ] {
            let g = binary(op, DType::F32, f(a), f(b)).unwrap();
            // The rule (docs/isa.md): subnormal inputs read as ±0, subnormal results are ±0.
            let daz = |x: f32| {
                if x.is_subnormal() {
                    0.0f32.copysign(x)
                } else {
                    x
                }
            };
            let (a, b) = (daz(a), daz(b));
            let r = match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                _ => a / b,
            };
            let r = if r.is_nan() {
                0x7FC0_0000
            } else {
                daz(r).to_bits() as u64
            };
            assert_eq!(g, r, "{op:?} {a:e} {b:e}");
        }
    }

    #[test]
    fn integer_edge_cases() {
        let min = 0x8000_0000u64;
        let m1 = 0xFFFF_FFFFu64;
        assert_eq!(binary(BinOp::Div, DType::S32, min, m1).unwrap(), min);
        assert_eq!(binary(BinOp::Rem, DType::S32, min, m1).unwrap(), 0);
        assert_eq!(binary(BinOp::Div, DType::S32, 7, 0).unwrap(), m1);
        assert_eq!(binary(BinOp::Div, DType::U32, 7, 0).unwrap(), m1);
        assert_eq!(binary(BinOp::Rem, DType::S32, 7, 0).unwrap(), 7);
        assert_eq!(binary(BinOp::Shl, DType::U8, 1, 8).unwrap(), 0);
        assert_eq!(binary(BinOp::Sra, DType::U8, 0x80, 9).unwrap(), 0xFF);
        assert_eq!(binary(BinOp::Sra, DType::S8, 0x80, 1).unwrap(), 0xC0);
        assert_eq!(unary(UnOp::Clz, DType::U16, 1).unwrap(), 15);
        assert_eq!(unary(UnOp::Abs, DType::S8, 0x80).unwrap(), 0x80);
        assert_eq!(unary(UnOp::Neg, DType::U8, 1).unwrap(), 0xFF);
    }

    #[test]
    fn bf16_adds_in_f32_and_rounds_once() {
        // 1 + 2^-9 in bf16: 1.0 + 0.001953125 = 1.001953125 rounds to 1.0 (tie → even)
        let one = 0x3F80;
        let eps = 0x3B00; // 2^-9
        assert_eq!(binary(BinOp::Add, DType::Bf16, one, eps).unwrap(), one);
    }

    #[test]
    fn compare_nan_and_zero() {
        assert_eq!(compare(CmpOp::Ne, DType::F32, f(f32::NAN), f(1.0)), 1);
        assert_eq!(compare(CmpOp::Eq, DType::F32, f(-0.0), f(0.0)), 1);
        assert_eq!(compare(CmpOp::Lt, DType::S8, 0xFF, 1), 1);
        assert_eq!(compare(CmpOp::Lt, DType::U8, 0xFF, 1), 0);
    }
}
