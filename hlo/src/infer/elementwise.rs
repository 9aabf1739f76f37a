//! Elementwise ops: unary and binary arithmetic, compare, select, clamp, the conversions
//! and reduce-precision. HLO operands of elementwise ops have identical dimensions (the
//! broadcasting of the spec's broadcasting document happens in the builder).

use super::{array, unsupported, Args, InferResult};
use crate::attrs::{ComparisonDirection, ComparisonType};
use crate::opcode::Opcode;
use crate::shape::{ArrayShape, Shape};
use crate::types::ElementType;

/// Which element types an elementwise op is defined for.
fn type_ok(op: Opcode, t: ElementType) -> Option<&'static str> {
    use Opcode as O;
    let (ok, expected) = match op {
        O::Abs => (
            t.is_signed_int() || t.is_float() || t.is_complex(),
            "signed integer, floating-point or complex",
        ),
        O::Negate => (
            t.is_integer() || t.is_floating_or_complex(),
            "integer, floating-point or complex",
        ),
        O::Sign => (
            t.is_signed_int() || t.is_floating_or_complex(),
            "signed integer, floating-point or complex",
        ),
        O::Ceil | O::Floor | O::RoundAfz | O::RoundEven | O::IsFinite | O::Erf => {
            (t.is_float(), "floating-point")
        }
        O::Cbrt
        | O::Cos
        | O::Sin
        | O::Tan
        | O::Tanh
        | O::Exp
        | O::Expm1
        | O::Log
        | O::Log1p
        | O::Logistic
        | O::Rsqrt
        | O::Sqrt => (t.is_floating_or_complex(), "floating-point or complex"),
        O::Real | O::Imag => (t.is_floating_or_complex(), "floating-point or complex"),
        O::Clz | O::PopCnt => (t.is_integer(), "integer"),
        O::Not | O::And | O::Or | O::Xor => (t.is_integer() || t.is_pred(), "pred or integer"),
        O::ShiftLeft | O::ShiftRightArithmetic | O::ShiftRightLogical => {
            (t.is_integer(), "integer")
        }
        O::Add | O::Multiply | O::Maximum | O::Minimum => {
            if matches!(op, O::Maximum | O::Minimum) {
                (
                    !t.is_complex(),
                    "pred, integer or floating-point (complex numbers are not ordered)",
                )
            } else {
                (true, "")
            }
        }
        O::Subtract | O::Divide | O::Power => (!t.is_pred(), "integer, floating-point or complex"),
        O::Remainder => (t.is_integer() || t.is_float(), "integer or floating-point"),
        O::Atan2 => (t.is_floating_or_complex(), "floating-point or complex"),
        O::Complex => (
            matches!(t, ElementType::F32 | ElementType::F64),
            "f32 or f64",
        ),
        _ => (true, ""),
    };
    if ok {
        None
    } else {
        Some(expected)
    }
}

fn check_type(a: &Args, t: ElementType) -> InferResult<()> {
    match type_ok(a.op, t) {
        None => Ok(()),
        Some(exp) => Err(format!(
            "{} is not defined for element type {t}; expected {exp}",
            a.op
        )),
    }
}

/// Unary elementwise ops.
pub(super) fn unary(a: &Args) -> InferResult {
    let x = a.array(0)?;
    check_type(a, x.ty)?;
    let ty = match a.op {
        Opcode::Abs | Opcode::Real | Opcode::Imag => x.ty.component_type(),
        Opcode::IsFinite => ElementType::Pred,
        _ => x.ty,
    };
    Ok(Shape::Array(ArrayShape {
        layout: None,
        ..x.with_type(ty)
    }))
}

/// Two operands of the same dimensions; the result's dynamic flags are the union.
fn same_dims(
    a: &Args,
    x: &ArrayShape,
    y: &ArrayShape,
    i: usize,
    j: usize,
) -> InferResult<Vec<bool>> {
    if x.dims != y.dims {
        return Err(format!(
            "operands {i} and {j} of {} must have the same dimensions, got {x} and {y}",
            a.op
        ));
    }
    Ok(x.dynamic
        .iter()
        .zip(&y.dynamic)
        .map(|(&p, &q)| p || q)
        .collect())
}

/// Binary elementwise ops.
pub(super) fn binary(a: &Args) -> InferResult {
    let (x, y) = (a.array(0)?, a.array(1)?);
    let dynamic = same_dims(a, x, y, 0, 1)?;
    if x.ty != y.ty {
        return Err(format!(
            "operands of {} must have the same element type, got {} and {}",
            a.op, x.ty, y.ty
        ));
    }
    check_type(a, x.ty)?;
    let ty = if a.op == Opcode::Complex {
        x.ty.complex_of().expect("checked f32/f64")
    } else {
        x.ty
    };
    Ok(array(ty, x.dims.clone(), Some(dynamic)))
}

/// The comparison types an element type allows: its default
/// ([`crate::view::default_comparison_type`]) and, for floating point, TOTALORDER.
fn comparison_types(t: ElementType) -> Vec<ComparisonType> {
    match crate::view::default_comparison_type(t) {
        ComparisonType::Float => vec![ComparisonType::Float, ComparisonType::TotalOrder],
        d => vec![d],
    }
}

pub(super) fn compare(a: &Args) -> InferResult {
    let (x, y) = (a.array(0)?, a.array(1)?);
    let dynamic = same_dims(a, x, y, 0, 1)?;
    if x.ty != y.ty {
        return Err(format!(
            "operands of compare must have the same element type, got {} and {}",
            x.ty, y.ty
        ));
    }
    let dir = *a.req(&a.attrs.direction, "direction")?;
    if let Some(ct) = a.attrs.comparison_type {
        let allowed = comparison_types(x.ty);
        if !allowed.contains(&ct) {
            let names: Vec<&str> = allowed.iter().map(|c| c.name()).collect();
            return Err(format!(
                "compare type={} does not fit element type {}; expected {}",
                ct.name(),
                x.ty,
                names.join(" or ")
            ));
        }
    }
    if x.ty.is_complex() && !matches!(dir, ComparisonDirection::Eq | ComparisonDirection::Ne) {
        return Err(format!(
            "compare direction={} is not defined for complex numbers; expected EQ or NE",
            dir.name()
        ));
    }
    Ok(array(ElementType::Pred, x.dims.clone(), Some(dynamic)))
}

pub(super) fn select(a: &Args) -> InferResult {
    let (p, t, f) = (a.array(0)?, a.array(1)?, a.array(2)?);
    if !p.ty.is_pred() {
        return Err(format!(
            "select predicate must have element type pred, got {p}"
        ));
    }
    let mut dynamic = same_dims(a, t, f, 1, 2)?;
    if t.ty != f.ty {
        return Err(format!(
            "select branches must have the same element type, got {} and {}",
            t.ty, f.ty
        ));
    }
    if !p.is_scalar() {
        if p.dims != t.dims {
            return Err(format!(
                "select predicate must be a scalar or have the dimensions of the branches {t}, got {p}"
            ));
        }
        dynamic = dynamic
            .iter()
            .zip(&p.dynamic)
            .map(|(&x, &y)| x || y)
            .collect();
    }
    Ok(array(t.ty, t.dims.clone(), Some(dynamic)))
}

pub(super) fn clamp(a: &Args) -> InferResult {
    let (lo, x, hi) = (a.array(0)?, a.array(1)?, a.array(2)?);
    for (i, b) in [(0, lo), (2, hi)] {
        if b.ty != x.ty {
            return Err(format!(
                "clamp bound (operand {i}) must have the operand's element type {}, got {}",
                x.ty, b.ty
            ));
        }
        if !b.is_scalar() && b.dims != x.dims {
            return Err(format!(
                "clamp bound (operand {i}) must be a scalar or have the operand's dimensions {x}, got {b}"
            ));
        }
    }
    if x.ty.is_complex() {
        return Err("clamp is not defined for complex numbers (they are not ordered)".into());
    }
    Ok(array(x.ty, x.dims.clone(), Some(x.dynamic.clone())))
}

/// The declared result must have the operand's dimensions.
fn declared_same_dims<'a>(a: &Args<'a, '_>, x: &ArrayShape) -> InferResult<&'a ArrayShape> {
    let d = a.declared_array()?;
    if d.dims != x.dims {
        return Err(format!(
            "{} keeps the dimensions of its operand {x}, but the result is {d}",
            a.op
        ));
    }
    Ok(d)
}

pub(super) fn convert(a: &Args) -> InferResult {
    let x = a.array(0)?;
    let d = declared_same_dims(a, x)?;
    if x.ty.is_complex() && !d.ty.is_complex() {
        return Err(format!(
            "not supported yet: convert from complex {} to real {} (the specification does not say what happens to the imaginary part; use real or imag)",
            x.ty, d.ty
        ));
    }
    Ok(array(d.ty, x.dims.clone(), Some(x.dynamic.clone())))
}

pub(super) fn bitcast_convert(a: &Args) -> InferResult {
    let x = a.array(0)?;
    let d = a.declared_array()?;
    let (ib, ob) = (x.ty.bits() as i64, d.ty.bits() as i64);
    if x.is_dynamic() || d.is_dynamic() {
        return Err(unsupported("bitcast-convert of dynamic shapes"));
    }
    if x.ty.is_pred() != d.ty.is_pred() {
        return Err(format!(
            "bitcast-convert between pred and {} is not defined",
            if x.ty.is_pred() { d.ty } else { x.ty }
        ));
    }
    let expected: Vec<i64> = if ib == ob {
        x.dims.clone()
    } else if ib > ob {
        if ib % ob != 0 {
            return Err(format!(
                "bitcast-convert from {} to {}: widths do not divide",
                x.ty, d.ty
            ));
        }
        let mut v = x.dims.clone();
        v.push(ib / ob);
        v
    } else {
        if ob % ib != 0 {
            return Err(format!(
                "bitcast-convert from {} to {}: widths do not divide",
                x.ty, d.ty
            ));
        }
        let ratio = ob / ib;
        match x.dims.last() {
            Some(&last) if last == ratio => x.dims[..x.rank() - 1].to_vec(),
            _ => {
                return Err(format!(
                    "bitcast-convert from {} to the wider {} needs a last operand dimension of size {ratio}, got {x}",
                    x.ty, d.ty
                ))
            }
        }
    };
    if d.dims != expected {
        return Err(format!(
            "bitcast-convert of {x} to {}: result dimensions must be {expected:?}, got {d}",
            d.ty
        ));
    }
    Ok(array(d.ty, expected, None))
}

pub(super) fn reduce_precision(a: &Args) -> InferResult {
    let x = a.array(0)?;
    if !x.ty.is_float() {
        return Err(format!(
            "reduce-precision needs a floating-point operand, got {x}"
        ));
    }
    let e = *a.req(&a.attrs.exponent_bits, "exponent_bits")?;
    let m = *a.req(&a.attrs.mantissa_bits, "mantissa_bits")?;
    if !(1..=64).contains(&e) {
        return Err(format!(
            "reduce-precision exponent_bits must be in 1..=64, got {e}"
        ));
    }
    if !(0..=64).contains(&m) {
        return Err(format!(
            "reduce-precision mantissa_bits must be in 0..=64, got {m}"
        ));
    }
    Ok(array(x.ty, x.dims.clone(), Some(x.dynamic.clone())))
}

pub(super) fn stochastic_convert(a: &Args) -> InferResult {
    let (x, r) = (a.array(0)?, a.array(1)?);
    if !x.ty.is_float() {
        return Err(format!(
            "stochastic-convert needs a floating-point operand, got {x}"
        ));
    }
    if !r.ty.is_unsigned_int() || r.ty.bits() != x.ty.bits() || r.dims != x.dims {
        return Err(format!(
            "stochastic-convert random operand must be an unsigned integer array of the operand's width and dimensions, got {r} for {x}"
        ));
    }
    let d = declared_same_dims(a, x)?;
    if !d.ty.is_integer() && !d.ty.is_float() {
        return Err(format!(
            "stochastic-convert result must be integer or floating-point, got {d}"
        ));
    }
    Ok(array(d.ty, x.dims.clone(), None))
}
