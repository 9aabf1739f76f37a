//! Shared helpers for kernels: typed gathers over [`ArrayData`] without per-element boxing,
//! index arithmetic, scalar extraction and integer views of index operands.
//!
//! Invariant: every helper that indexes data takes indices the caller computed from dims it
//! checked; out-of-range indices are internal bugs, but user-controlled values (dynamic start
//! indices, gather/scatter indices, sizes) are always clamped or rejected before reaching here.

use crate::error::{EResult, EvalError};
use half::{bf16, f16};
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use hlo::shape::Shape;
use hlo::types::ElementType;
use num_complex::{Complex32, Complex64};

/// Rebuilds an [`ArrayData`] of the same variant: `$body` maps the typed vector `$v` (any
/// element type) to a new vector of the same element type.
#[macro_export]
#[doc(hidden)]
macro_rules! map_array_data {
    ($data:expr, $v:ident => $body:expr) => {{
        use ::hlo::literal::ArrayData as AD;
        match $data {
            AD::Pred($v) => AD::Pred($body),
            AD::S8($v) => AD::S8($body),
            AD::S16($v) => AD::S16($body),
            AD::S32($v) => AD::S32($body),
            AD::S64($v) => AD::S64($body),
            AD::U8($v) => AD::U8($body),
            AD::U16($v) => AD::U16($body),
            AD::U32($v) => AD::U32($body),
            AD::U64($v) => AD::U64($body),
            AD::F16($v) => AD::F16($body),
            AD::BF16($v) => AD::BF16($body),
            AD::F32($v) => AD::F32($body),
            AD::F64($v) => AD::F64($body),
            AD::C64($v) => AD::C64($body),
            AD::C128($v) => AD::C128($body),
            AD::Raw(t, $v) => AD::Raw(*t, $body),
        }
    }};
}

/// Runs `$body` with `$a` and `$b` bound to the typed vectors of two [`ArrayData`] of the same
/// variant (mutable first, shared second); evaluates `$mismatch` when the variants differ.
#[macro_export]
#[doc(hidden)]
macro_rules! zip_array_data_mut {
    ($x:expr, $y:expr, $a:ident, $b:ident => $body:expr, $mismatch:expr) => {{
        use ::hlo::literal::ArrayData as AD;
        match ($x, $y) {
            (AD::Pred($a), AD::Pred($b)) => $body,
            (AD::S8($a), AD::S8($b)) => $body,
            (AD::S16($a), AD::S16($b)) => $body,
            (AD::S32($a), AD::S32($b)) => $body,
            (AD::S64($a), AD::S64($b)) => $body,
            (AD::U8($a), AD::U8($b)) => $body,
            (AD::U16($a), AD::U16($b)) => $body,
            (AD::U32($a), AD::U32($b)) => $body,
            (AD::U64($a), AD::U64($b)) => $body,
            (AD::F16($a), AD::F16($b)) => $body,
            (AD::BF16($a), AD::BF16($b)) => $body,
            (AD::F32($a), AD::F32($b)) => $body,
            (AD::F64($a), AD::F64($b)) => $body,
            (AD::C64($a), AD::C64($b)) => $body,
            (AD::C128($a), AD::C128($b)) => $body,
            (AD::Raw(_, $a), AD::Raw(_, $b)) => $body,
            _ => $mismatch,
        }
    }};
}

pub use hlo::shape::strides;

pub use hlo::shape::next_index;

/// Calls `f` on every multi-index of `out_dims` in row-major order and collects the results
/// (source element indices for [`take`]).
pub fn index_map(out_dims: &[usize], mut f: impl FnMut(&[usize]) -> usize) -> EResult<Vec<usize>> {
    let n = count_of(out_dims, "result")?;
    let mut v = Vec::with_capacity(n);
    if n == 0 {
        return Ok(v);
    }
    let mut idx = vec![0usize; out_dims.len()];
    loop {
        v.push(f(&idx));
        if !next_index(&mut idx, out_dims) {
            break;
        }
    }
    Ok(v)
}

/// Element `i` of each index in `idx` taken from `data` (a typed gather).
pub fn take(data: &ArrayData, idx: &[usize]) -> ArrayData {
    map_array_data!(data, v => idx.iter().map(|&i| v[i]).collect())
}

/// Like [`take`], but index [`FILL`] reads the scalar `fill` (same element type as `data`).
pub fn take_or_fill(data: &ArrayData, idx: &[usize], fill: &ArrayData) -> EResult<ArrayData> {
    let mut ext = data.clone();
    append(&mut ext, fill)?;
    let n = data.len();
    let idx: Vec<usize> = idx.iter().map(|&i| if i == FILL { n } else { i }).collect();
    Ok(take(&ext, &idx))
}

/// The contiguous elements `range` of `data`.
pub fn slice_data(data: &ArrayData, range: std::ops::Range<usize>) -> ArrayData {
    map_array_data!(data, v => v[range.clone()].to_vec())
}

/// Concatenates scalar (or any) array literals' data in order, starting from an empty buffer of
/// type `ty`.
pub fn concat_data(ty: ElementType, parts: &[&ArrayData]) -> EResult<ArrayData> {
    let mut out = ArrayData::zeros(ty, 0);
    for p in parts {
        append(&mut out, p)?;
    }
    Ok(out)
}

/// Marker index for [`take_or_fill`].
pub const FILL: usize = usize::MAX;

/// Appends `src` to `dst` (same element type).
pub fn append(dst: &mut ArrayData, src: &ArrayData) -> EResult<()> {
    let (tb, ta) = (dst.element_type(), src.element_type());
    zip_array_data_mut!(dst, src, a, b => { a.extend_from_slice(b); Ok(()) },
        Err(EvalError::invalid(format!("element types differ: {tb} and {ta}"))))
}

/// `dst[di[k]] = src[si[k]]` for every k (same element type).
pub fn put(dst: &mut ArrayData, di: &[usize], src: &ArrayData, si: &[usize]) -> EResult<()> {
    let (tb, ta) = (dst.element_type(), src.element_type());
    zip_array_data_mut!(dst, src, a, b => {
        for (&d, &s) in di.iter().zip(si) {
            a[d] = b[s];
        }
        Ok(())
    }, Err(EvalError::invalid(format!("element types differ: {tb} and {ta}"))))
}

/// Element `i` of `a` as a scalar literal.
pub fn scalar_of(a: &ArrayLiteral, i: usize) -> Literal {
    Literal::Array(ArrayLiteral {
        dims: vec![],
        data: take(&a.data, &[i]),
    })
}

/// The array inside a literal, or an error naming what it is instead.
pub fn array(l: &Literal) -> EResult<&ArrayLiteral> {
    match l {
        Literal::Array(a) => Ok(a),
        Literal::Tuple(_) => Err(EvalError::invalid("expected an array value, got a tuple")),
        Literal::Token => Err(EvalError::invalid("expected an array value, got a token")),
    }
}

/// The operand `i` of a kernel as an array.
pub fn operand<'a>(ops: &[&'a Literal], i: usize) -> EResult<&'a ArrayLiteral> {
    let l = ops
        .get(i)
        .ok_or_else(|| EvalError::invalid(format!("missing operand {i}")))?;
    array(l)
}

/// The array shape an instruction declares, or an error.
pub fn out_array(shape: &Shape) -> EResult<&hlo::shape::ArrayShape> {
    shape
        .as_array()
        .ok_or_else(|| EvalError::invalid(format!("expected an array shape, got {shape}")))
}

/// Integer values of an integer array (for indices and sizes); errors on other types.
pub fn to_i64_vec(d: &ArrayData) -> EResult<Vec<i64>> {
    Ok(match d {
        ArrayData::S8(v) => v.iter().map(|&x| x as i64).collect(),
        ArrayData::S16(v) => v.iter().map(|&x| x as i64).collect(),
        ArrayData::S32(v) => v.iter().map(|&x| x as i64).collect(),
        ArrayData::S64(v) => v.clone(),
        ArrayData::U8(v) => v.iter().map(|&x| x as i64).collect(),
        ArrayData::U16(v) => v.iter().map(|&x| x as i64).collect(),
        ArrayData::U32(v) => v.iter().map(|&x| x as i64).collect(),
        // Saturate: an index beyond i64::MAX is clamped like any too-large index.
        ArrayData::U64(v) => v.iter().map(|&x| x.min(i64::MAX as u64) as i64).collect(),
        other => {
            return Err(EvalError::invalid(format!(
                "expected integer indices, got {}",
                other.element_type()
            )))
        }
    })
}

/// The single integer value of a scalar integer literal.
pub fn scalar_i64(l: &Literal) -> EResult<i64> {
    let a = array(l)?;
    if a.element_count() != 1 {
        return Err(EvalError::invalid(format!(
            "expected a scalar, got dims {:?}",
            a.dims
        )));
    }
    Ok(to_i64_vec(&a.data)?[0])
}

/// A buffer of `ty` from f64 values (rounded to nearest even; ints saturate, NaN → 0).
pub fn from_f64_vec(ty: ElementType, v: &[f64]) -> EResult<ArrayData> {
    use ElementType as T;
    Ok(match ty {
        T::Pred => ArrayData::Pred(v.iter().map(|&x| x != 0.0).collect()),
        T::S8 => ArrayData::S8(v.iter().map(|&x| x as i8).collect()),
        T::S16 => ArrayData::S16(v.iter().map(|&x| x as i16).collect()),
        T::S32 => ArrayData::S32(v.iter().map(|&x| x as i32).collect()),
        T::S64 => ArrayData::S64(v.iter().map(|&x| x as i64).collect()),
        T::U8 => ArrayData::U8(v.iter().map(|&x| x as u8).collect()),
        T::U16 => ArrayData::U16(v.iter().map(|&x| x as u16).collect()),
        T::U32 => ArrayData::U32(v.iter().map(|&x| x as u32).collect()),
        T::U64 => ArrayData::U64(v.iter().map(|&x| x as u64).collect()),
        T::F16 => ArrayData::F16(v.iter().map(|&x| f16::from_f64(x)).collect()),
        T::BF16 => ArrayData::BF16(v.iter().map(|&x| bf16::from_f64(x)).collect()),
        T::F32 => ArrayData::F32(v.iter().map(|&x| x as f32).collect()),
        T::F64 => ArrayData::F64(v.to_vec()),
        T::C64 => ArrayData::C64(v.iter().map(|&x| Complex32::new(x as f32, 0.0)).collect()),
        T::C128 => ArrayData::C128(v.iter().map(|&x| Complex64::new(x, 0.0)).collect()),
        t => return Err(EvalError::unsupported(format!("arithmetic on {t}"))),
    })
}

/// Checks that `n` elements fit the evaluator's limits and returns `n`.
pub fn check_count(n: u64, what: &str) -> EResult<usize> {
    const MAX: u64 = 1 << 31;
    if n > MAX {
        return Err(EvalError::limit(format!(
            "{what} has {n} elements (more than {MAX})"
        )));
    }
    Ok(n as usize)
}

/// Product of `dims` as an element count, checked against the limits.
pub fn count_of(dims: &[usize], what: &str) -> EResult<usize> {
    let n = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d as u64));
    check_count(n.unwrap_or(u64::MAX), what)
}

/// An array literal from parts, checking the length (internal consistency).
pub fn mk(dims: Vec<usize>, data: ArrayData) -> EResult<Literal> {
    if dims.iter().product::<usize>() != data.len() {
        return Err(EvalError::invalid(format!(
            "internal: {} elements for dims {:?}",
            data.len(),
            dims
        )));
    }
    Ok(Literal::Array(ArrayLiteral { dims, data }))
}

/// Dims of an array shape as usize, rejecting unbounded dynamic dims.
pub fn shape_dims(s: &hlo::shape::ArrayShape) -> EResult<Vec<usize>> {
    s.dims
        .iter()
        .map(|&d| {
            usize::try_from(d)
                .map_err(|_| EvalError::unsupported(format!("unbounded dimension in {s}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_and_iteration() {
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
        let dims = [2, 2];
        let mut idx = vec![0, 0];
        let mut seen = vec![idx.clone()];
        while next_index(&mut idx, &dims) {
            seen.push(idx.clone());
        }
        assert_eq!(seen, vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]);
    }

    #[test]
    fn take_with_fill() {
        let d = ArrayData::S32(vec![10, 20, 30]);
        let f = ArrayData::S32(vec![-1]);
        let r = take_or_fill(&d, &[2, FILL, 0], &f).unwrap();
        assert_eq!(r, ArrayData::S32(vec![30, -1, 10]));
    }
}
