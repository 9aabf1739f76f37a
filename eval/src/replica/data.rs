//! Data movement on dense arrays for the collectives: concatenation along a dimension and
//! splitting into equal blocks along a dimension, for every element type.
//!
//! Everything is expressed as contiguous range copies between buffers of the same variant
//! ([`copy_range`]), so no element is ever converted: results are bit-exact copies.

use crate::error::EvalError;
use hlo::literal::{ArrayData, ArrayLiteral};

/// Copies `len` elements from `src[src_off..]` to `dst[dst_off..]`. Both buffers must hold the
/// same element type (an internal invariant; violated only by mismatched contributions, which
/// callers check first).
fn copy_range(
    dst: &mut ArrayData,
    dst_off: usize,
    src: &ArrayData,
    src_off: usize,
    len: usize,
) -> Result<(), EvalError> {
    macro_rules! same {
        ($($v:ident),*) => {
            match (dst, src) {
                $( (ArrayData::$v(d), ArrayData::$v(s)) => {
                    d[dst_off..dst_off + len].copy_from_slice(&s[src_off..src_off + len]);
                    Ok(())
                } )*
                (ArrayData::Raw(dt, d), ArrayData::Raw(st, s)) if dt == st => {
                    d[dst_off..dst_off + len].copy_from_slice(&s[src_off..src_off + len]);
                    Ok(())
                }
                (d, s) => Err(EvalError::Invalid(format!(
                    "element types differ across replicas ({} vs {})",
                    d.element_type(),
                    s.element_type()
                ))),
            }
        };
    }
    same!(Pred, S8, S16, S32, S64, U8, U16, U32, U64, F16, BF16, F32, F64, C64, C128)
}

/// Product of `dims[..d]` and of `dims[d+1..]`.
fn outer_inner(dims: &[usize], d: usize) -> (usize, usize) {
    (dims[..d].iter().product(), dims[d + 1..].iter().product())
}

/// Concatenates `parts` along dimension `dim`. All parts must have the same element type,
/// rank and sizes except along `dim`.
pub fn concat(parts: &[&ArrayLiteral], dim: usize) -> Result<ArrayLiteral, EvalError> {
    let first = parts
        .first()
        .ok_or_else(|| EvalError::Invalid("nothing to concatenate".into()))?;
    let rank = first.dims.len();
    if dim >= rank {
        return Err(EvalError::Invalid(format!(
            "dimension {dim} out of range for rank {rank}"
        )));
    }
    let ty = first.element_type();
    for p in parts {
        let same_others =
            p.dims.len() == rank && (0..rank).all(|i| i == dim || p.dims[i] == first.dims[i]);
        if p.element_type() != ty || !same_others {
            return Err(EvalError::Invalid(format!(
                "replicas contributed incompatible arrays {} and {}",
                first.shape(),
                p.shape()
            )));
        }
    }
    let mut dims = first.dims.clone();
    dims[dim] = parts.iter().map(|p| p.dims[dim]).sum();
    let (outer, inner) = outer_inner(&dims, dim);
    let mut data = ArrayData::zeros(ty, dims.iter().product());
    let mut off = 0;
    for o in 0..outer {
        for p in parts {
            let chunk = p.dims[dim] * inner;
            copy_range(&mut data, off, &p.data, o * chunk, chunk)?;
            off += chunk;
        }
    }
    Ok(ArrayLiteral { dims, data })
}

/// Block `index` of `count` equal blocks of `a` along dimension `dim`.
pub fn block(
    a: &ArrayLiteral,
    dim: usize,
    count: usize,
    index: usize,
) -> Result<ArrayLiteral, EvalError> {
    let rank = a.dims.len();
    if dim >= rank {
        return Err(EvalError::Invalid(format!(
            "dimension {dim} out of range for rank {rank}"
        )));
    }
    if count == 0 || !a.dims[dim].is_multiple_of(count) {
        return Err(EvalError::Invalid(format!(
            "dimension {dim} of {} is not divisible into {count} blocks",
            a.shape()
        )));
    }
    let size = a.dims[dim] / count;
    let mut dims = a.dims.clone();
    dims[dim] = size;
    let (outer, inner) = outer_inner(&a.dims, dim);
    let mut data = ArrayData::zeros(a.element_type(), dims.iter().product());
    let chunk = size * inner;
    for o in 0..outer {
        let src = o * a.dims[dim] * inner + index * chunk;
        copy_range(&mut data, o * chunk, &a.data, src, chunk)?;
    }
    Ok(ArrayLiteral { dims, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s32(dims: &[usize], v: &[i32]) -> ArrayLiteral {
        ArrayLiteral {
            dims: dims.to_vec(),
            data: ArrayData::S32(v.to_vec()),
        }
    }

    #[test]
    fn concat_inner_dimension() {
        let a = s32(&[2, 2], &[1, 2, 3, 4]);
        let b = s32(&[2, 1], &[5, 6]);
        let c = concat(&[&a, &b], 1).unwrap();
        assert_eq!(c, s32(&[2, 3], &[1, 2, 5, 3, 4, 6]));
        let d = concat(&[&a, &a], 0).unwrap();
        assert_eq!(d, s32(&[4, 2], &[1, 2, 3, 4, 1, 2, 3, 4]));
    }

    #[test]
    fn blocks_invert_concat() {
        let a = s32(&[2, 6], &(0..12).collect::<Vec<_>>());
        let parts: Vec<_> = (0..3).map(|i| block(&a, 1, 3, i).unwrap()).collect();
        assert_eq!(parts[1], s32(&[2, 2], &[2, 3, 8, 9]));
        let refs: Vec<&ArrayLiteral> = parts.iter().collect();
        assert_eq!(concat(&refs, 1).unwrap(), a);
        assert!(block(&a, 1, 4, 0).is_err());
    }

    #[test]
    fn mismatched_types_are_errors() {
        let a = s32(&[2], &[1, 2]);
        let b = ArrayLiteral {
            dims: vec![2],
            data: ArrayData::F32(vec![1.0, 2.0]),
        };
        assert!(concat(&[&a, &b], 0).is_err());
    }
}
