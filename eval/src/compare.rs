//! Compare, Select and Clamp.
//!
//! Compare: `FLOAT` is IEEE (every comparison with NaN is false except NE; f32 subnormals
//! read as zero, as in f32 arithmetic);
//! `TOTALORDER` orders -NaN < -Inf < -finite < -0 < +0 < +finite < +Inf < +NaN by mapping the
//! bit pattern to a signed integer key; `SIGNED`/`UNSIGNED` compare integers as written (an
//! explicit `type=` overrides the element type's signedness by reinterpreting the bits). Without
//! `type=`, floats use FLOAT and integers their own signedness. Complex values support EQ/NE.
//! Select and Clamp accept a scalar predicate / scalar bounds (broadcast).

use crate::elementwise::{arith_vals, binary_data, complex_vals, splat};
use crate::error::{EResult, EvalError};
use crate::util::{mk, operand};
use hlo::attrs::{ComparisonDirection, ComparisonType};
use hlo::ir::Instruction;
use hlo::literal::{ArrayData, Literal};
use hlo::opcode::Opcode;
use std::cmp::Ordering;

/// Total-order key of a float's bit pattern of width `bits`.
pub fn total_order_key(b: u64, bits: u32) -> i64 {
    let sh = 64 - bits;
    let s = ((b << sh) as i64) >> sh; // sign-extended
    if s < 0 {
        // Negative: flip the magnitude bits so larger magnitudes sort lower.
        s ^ (i64::MAX >> sh)
    } else {
        s
    }
}

fn apply(dir: ComparisonDirection, o: Option<Ordering>) -> bool {
    use ComparisonDirection as D;
    match (dir, o) {
        (D::Ne, None) => true,
        (_, None) => false,
        (D::Eq, Some(o)) => o == Ordering::Equal,
        (D::Ne, Some(o)) => o != Ordering::Equal,
        (D::Lt, Some(o)) => o == Ordering::Less,
        (D::Le, Some(o)) => o != Ordering::Greater,
        (D::Gt, Some(o)) => o == Ordering::Greater,
        (D::Ge, Some(o)) => o != Ordering::Less,
    }
}

/// Compares two buffers of the same type elementwise.
pub fn compare_data(
    a: &ArrayData,
    b: &ArrayData,
    dir: ComparisonDirection,
    ty: Option<ComparisonType>,
) -> EResult<Vec<bool>> {
    let et = a.element_type();
    if et != b.element_type() || a.len() != b.len() {
        return Err(EvalError::invalid(
            "compare operands differ in type or size",
        ));
    }
    let n = a.len();
    if et.is_carried_only() {
        return Err(EvalError::unsupported(format!("compare on {et}")));
    }
    if let (Some(x), Some(y)) = (complex_vals(a), complex_vals(b)) {
        use ComparisonDirection as D;
        if !matches!(dir, D::Eq | D::Ne) {
            return Err(EvalError::invalid("complex values only compare EQ/NE"));
        }
        return Ok(x
            .iter()
            .zip(&y)
            .map(|(p, q)| (p == q) == (dir == D::Eq))
            .collect());
    }
    let is_float = et.is_float();
    let ty = ty.unwrap_or_else(|| hlo::default_comparison_type(et));
    Ok(match ty {
        ComparisonType::Float => {
            let (x, y) = match (arith_vals(a), arith_vals(b)) {
                (Some(x), Some(y)) => (x, y),
                _ => return Err(EvalError::invalid(format!("type=FLOAT compare on {et}"))),
            };
            x.iter()
                .zip(&y)
                .map(|(p, q)| apply(dir, p.partial_cmp(q)))
                .collect()
        }
        ComparisonType::TotalOrder => {
            let bits = et.bits();
            (0..n)
                .map(|i| {
                    let p = total_order_key(a.bits_at(i) as u64, bits);
                    let q = total_order_key(b.bits_at(i) as u64, bits);
                    apply(dir, Some(p.cmp(&q)))
                })
                .collect()
        }
        ComparisonType::Signed if !is_float => {
            let bits = et.bits();
            let sx = |v: u128| {
                let sh = 64 - bits;
                ((v as u64) << sh) as i64 >> sh
            };
            (0..n)
                .map(|i| apply(dir, Some(sx(a.bits_at(i)).cmp(&sx(b.bits_at(i))))))
                .collect()
        }
        ComparisonType::Unsigned if !is_float => (0..n)
            .map(|i| apply(dir, Some(a.bits_at(i).cmp(&b.bits_at(i)))))
            .collect(),
        t => {
            return Err(EvalError::invalid(format!(
                "type={} compare on {et}",
                t.name()
            )))
        }
    })
}

/// `compare(a, b), direction=.., type=..`.
pub fn compare(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let (a, b) = (operand(ops, 0)?, operand(ops, 1)?);
    let hlo::View::Compare {
        direction: dir,
        comparison_type,
    } = inst.view()
    else {
        return Err(EvalError::malformed(inst));
    };
    let (ad, bd, dims) = if a.dims == b.dims {
        (a.data.clone(), b.data.clone(), a.dims.clone())
    } else if a.dims.is_empty() {
        (splat(&a.data, b.data.len()), b.data.clone(), b.dims.clone())
    } else if b.dims.is_empty() {
        (a.data.clone(), splat(&b.data, a.data.len()), a.dims.clone())
    } else {
        return Err(EvalError::invalid(format!(
            "operand dims differ: {:?} and {:?}",
            a.dims, b.dims
        )));
    };
    mk(
        dims,
        ArrayData::Pred(compare_data(&ad, &bd, dir, comparison_type)?),
    )
}

/// `select(pred, on_true, on_false)`; the predicate may be a scalar.
pub fn select(_inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let (p, t, f) = (operand(ops, 0)?, operand(ops, 1)?, operand(ops, 2)?);
    let ArrayData::Pred(pv) = &p.data else {
        return Err(EvalError::invalid("select predicate is not pred"));
    };
    if t.dims != f.dims || t.element_type() != f.element_type() {
        return Err(EvalError::invalid("select branches differ in shape"));
    }
    if !(p.dims == t.dims || p.dims.is_empty()) {
        return Err(EvalError::invalid("select predicate shape does not match"));
    }
    let n = t.data.len();
    let idx: Vec<usize> = (0..n)
        .map(|i| {
            let c = if p.dims.is_empty() { pv[0] } else { pv[i] };
            if c {
                i
            } else {
                n + i
            }
        })
        .collect();
    let mut both = t.data.clone();
    crate::util::append(&mut both, &f.data)?;
    mk(t.dims.clone(), crate::util::take(&both, &idx))
}

/// `clamp(min, x, max)` = min(max(x, lo), hi); `lo`/`hi` may be scalars.
pub fn clamp(_inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let (lo, x, hi) = (operand(ops, 0)?, operand(ops, 1)?, operand(ops, 2)?);
    let n = x.data.len();
    let fit = |b: &hlo::literal::ArrayLiteral| -> EResult<ArrayData> {
        if b.dims == x.dims {
            Ok(b.data.clone())
        } else if b.dims.is_empty() {
            Ok(splat(&b.data, n))
        } else {
            Err(EvalError::invalid(format!(
                "clamp bound dims {:?} vs operand {:?}",
                b.dims, x.dims
            )))
        }
    };
    let (l, h) = (fit(lo)?, fit(hi)?);
    let r = binary_data(Opcode::Maximum, &x.data, &l)?;
    mk(x.dims.clone(), binary_data(Opcode::Minimum, &r, &h)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_order_of_specials() {
        let vals = [
            -f32::NAN,
            f32::NEG_INFINITY,
            -1.0,
            -0.0,
            0.0,
            1.0,
            f32::INFINITY,
            f32::NAN,
        ];
        let keys: Vec<i64> = vals
            .iter()
            .map(|v| total_order_key(v.to_bits() as u64, 32))
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
    }

    #[test]
    fn float_compare_with_nan() {
        let a = ArrayData::F32(vec![f32::NAN, 1.0]);
        let b = ArrayData::F32(vec![f32::NAN, 1.0]);
        assert_eq!(
            compare_data(&a, &b, ComparisonDirection::Ne, None).unwrap(),
            vec![true, false]
        );
        assert_eq!(
            compare_data(&a, &b, ComparisonDirection::Eq, None).unwrap(),
            vec![false, true]
        );
        let t = compare_data(
            &a,
            &b,
            ComparisonDirection::Eq,
            Some(ComparisonType::TotalOrder),
        );
        assert_eq!(t.unwrap(), vec![true, true]);
    }

    #[test]
    fn unsigned_reinterpretation() {
        let a = ArrayData::S32(vec![-1]);
        let b = ArrayData::S32(vec![1]);
        let r = compare_data(
            &a,
            &b,
            ComparisonDirection::Gt,
            Some(ComparisonType::Unsigned),
        );
        assert_eq!(r.unwrap(), vec![true]);
    }
}
