//! Data-movement and shape-manipulation ops: reshape, broadcast, transpose, reverse, slice,
//! dynamic-slice, dynamic-update-slice, concatenate, pad, iota, constant, parameter,
//! get-tuple-element, get/set-dimension-size.

use super::{array, dim_in_range, dims_in_range, unsupported, Args, InferResult};
use crate::shape::{ArrayShape, Shape};
use crate::types::ElementType;

pub(super) fn reshape(a: &Args) -> InferResult {
    let x = a.array(0)?;
    let d = a.declared_array()?;
    if d.ty != x.ty {
        return Err(format!(
            "reshape keeps the element type {}, but the result is {d}",
            x.ty
        ));
    }
    if x.is_dynamic() || d.is_dynamic() {
        if x.is_dynamic() && x.rank() == d.rank() && x.dims == d.dims {
            return Ok(Shape::Array(d.clone()));
        }
        return Err(unsupported(
            "reshape of dynamic shapes other than the identity",
        ));
    }
    if x.element_count() != d.element_count() {
        return Err(format!(
            "reshape must keep the element count: {x} has {} elements, the result {d} has {}",
            x.element_count().unwrap_or(0),
            d.element_count().unwrap_or(0)
        ));
    }
    Ok(Shape::Array(d.clone()))
}

pub(super) fn dynamic_reshape(a: &Args) -> InferResult {
    let x = a.array(0)?;
    let d = a.declared_array()?;
    if d.ty != x.ty {
        return Err(format!(
            "dynamic-reshape keeps the element type {}, but the result is {d}",
            x.ty
        ));
    }
    if a.ops.len() != 1 + d.rank() {
        return Err(format!(
            "dynamic-reshape takes one size operand per result dimension: expected {}, got {}",
            d.rank(),
            a.ops.len() - 1
        ));
    }
    for i in 1..a.ops.len() {
        if a.scalar(i, "size")? != ElementType::S32 {
            return Err(format!(
                "dynamic-reshape size operand {i} must be s32[], got {}",
                a.ops[i]
            ));
        }
    }
    if x.element_count() != d.element_count() && !d.is_dynamic() {
        return Err(format!(
            "dynamic-reshape of {x} to the static {d} must keep the element count"
        ));
    }
    Ok(Shape::Array(d.clone()))
}

pub(super) fn bitcast(a: &Args) -> InferResult {
    let d = a.declared()?;
    if a.ops[0].byte_size() != d.byte_size() {
        return Err(format!(
            "bitcast must keep the byte size: {} to {d}",
            a.ops[0]
        ));
    }
    Ok(d.clone())
}

pub(super) fn broadcast(a: &Args) -> InferResult {
    let x = a.array(0)?;
    let d = a.declared_array()?;
    if d.ty != x.ty {
        return Err(format!(
            "broadcast keeps the element type {}, but the result is {d}",
            x.ty
        ));
    }
    let dims = a.req(&a.attrs.dimensions, "dimensions")?;
    if dims.len() != x.rank() {
        return Err(format!(
            "broadcast dimensions= must name one result dimension per operand dimension: operand {x} has rank {}, got {} dimensions",
            x.rank(),
            dims.len()
        ));
    }
    let ds = dims_in_range(dims, d.rank(), "broadcast dimensions", false)?;
    for w in dims.windows(2) {
        if w[0] >= w[1] {
            return Err(format!(
                "broadcast dimensions must be strictly increasing, got {dims:?}"
            ));
        }
    }
    for (i, &od) in ds.iter().enumerate() {
        if x.dims[i] != 1 && x.dims[i] != d.dims[od] {
            return Err(format!(
                "broadcast: operand dimension {i} (size {}) maps to result dimension {od} (size {}); sizes must match or the operand size be 1",
                x.dims[i], d.dims[od]
            ));
        }
        if x.dynamic[i] && !d.dynamic[od] {
            return Err(format!(
                "broadcast: dynamic operand dimension {i} must map to a dynamic result dimension"
            ));
        }
    }
    Ok(Shape::Array(d.clone()))
}

pub(super) fn transpose(a: &Args) -> InferResult {
    let x = a.array(0)?;
    let perm = a.req(&a.attrs.dimensions, "dimensions")?;
    if perm.len() != x.rank() {
        return Err(format!(
            "transpose dimensions= must be a permutation of 0..{}, got {perm:?}",
            x.rank()
        ));
    }
    let p = dims_in_range(perm, x.rank(), "transpose dimensions", false)?;
    Ok(array(
        x.ty,
        p.iter().map(|&i| x.dims[i]).collect(),
        Some(p.iter().map(|&i| x.dynamic[i]).collect()),
    ))
}

pub(super) fn reverse(a: &Args) -> InferResult {
    let x = a.array(0)?;
    dims_in_range(
        a.req(&a.attrs.dimensions, "dimensions")?,
        x.rank(),
        "reverse dimensions",
        false,
    )?;
    Ok(array(x.ty, x.dims.clone(), Some(x.dynamic.clone())))
}

pub(super) fn slice(a: &Args) -> InferResult {
    let x = a.array(0)?;
    let sl = a.req(&a.attrs.slice, "slice")?;
    if sl.len() != x.rank() {
        return Err(format!(
            "slice= has {} dimensions, expected {} (the rank of {x})",
            sl.len(),
            x.rank()
        ));
    }
    let mut out = Vec::with_capacity(sl.len());
    for (i, (s, &n)) in sl.iter().zip(&x.dims).enumerate() {
        if s.stride <= 0 {
            return Err(format!(
                "slice dimension {i}: stride must be positive, got {}",
                s.stride
            ));
        }
        if s.start < 0 || s.start > s.limit || s.limit > n {
            return Err(format!(
                "slice dimension {i}: [{}:{}] is out of bounds; expected 0 <= start <= limit <= {n}",
                s.start, s.limit
            ));
        }
        let n = s.limit - s.start;
        out.push(if n == 0 { 0 } else { (n - 1) / s.stride + 1 });
    }
    if x.is_dynamic() {
        return Err(unsupported("slice of a dynamic shape"));
    }
    Ok(array(x.ty, out, None))
}

/// Index operands from `first` on: either one scalar per operand dimension (all the same
/// integer type) or a single rank-1 integer array of that length.
fn check_indices(a: &Args, first: usize, rank: usize) -> InferResult<()> {
    let n = a.ops.len() - first;
    if n == 1 && rank != 1 {
        let s = a.array(first)?;
        if s.rank() == 1 && s.dims[0] == rank as i64 && s.ty.is_integer() {
            return Ok(());
        }
    }
    if n != rank {
        return Err(format!(
            "{} takes one start index per operand dimension: expected {rank}, got {n}",
            a.op
        ));
    }
    let mut ty = None;
    for i in first..a.ops.len() {
        let t = a.scalar(i, "start index")?;
        if !t.is_integer() {
            return Err(format!(
                "{} start index (operand {i}) must be an integer, got {t}",
                a.op
            ));
        }
        if *ty.get_or_insert(t) != t {
            return Err(format!(
                "{} start indices must all have the same type, got {} and {t}",
                a.op,
                ty.unwrap()
            ));
        }
    }
    Ok(())
}

pub(super) fn dynamic_slice(a: &Args) -> InferResult {
    let x = a.array(0)?;
    check_indices(a, 1, x.rank())?;
    let sizes = a.req(&a.attrs.dynamic_slice_sizes, "dynamic_slice_sizes")?;
    if sizes.len() != x.rank() {
        return Err(format!(
            "dynamic_slice_sizes has {} entries, expected {} (the rank of {x})",
            sizes.len(),
            x.rank()
        ));
    }
    for (i, (&s, &n)) in sizes.iter().zip(&x.dims).enumerate() {
        if s < 0 || s > n {
            return Err(format!(
                "dynamic_slice_sizes[{i}] = {s} must be in 0..={n} (the operand dimension)"
            ));
        }
    }
    if x.is_dynamic() {
        return Err(unsupported("dynamic-slice of a dynamic shape"));
    }
    Ok(array(x.ty, sizes.clone(), None))
}

pub(super) fn dynamic_update_slice(a: &Args) -> InferResult {
    let (x, u) = (a.array(0)?, a.array(1)?);
    if u.ty != x.ty {
        return Err(format!(
            "dynamic-update-slice update must have the operand's element type {}, got {u}",
            x.ty
        ));
    }
    if u.rank() != x.rank() || u.dims.iter().zip(&x.dims).any(|(p, q)| p > q) {
        return Err(format!(
            "dynamic-update-slice update {u} must have the operand's rank and fit inside the operand {x}"
        ));
    }
    check_indices(a, 2, x.rank())?;
    if x.is_dynamic() || u.is_dynamic() {
        return Err(unsupported("dynamic-update-slice of dynamic shapes"));
    }
    Ok(array(x.ty, x.dims.clone(), None))
}

pub(super) fn concatenate(a: &Args) -> InferResult {
    let xs = a.arrays()?;
    let first = xs[0];
    let d = a.one_dim(first.rank())?;
    let mut total: i64 = 0;
    let mut dynamic = first.dynamic.clone();
    for (i, x) in xs.iter().enumerate() {
        if x.ty != first.ty {
            return Err(format!(
                "concatenate operands must have the same element type: operand 0 is {}, operand {i} is {}",
                first.ty, x.ty
            ));
        }
        if x.rank() != first.rank() {
            return Err(format!(
                "concatenate operands must have the same rank: operand 0 is {first}, operand {i} is {x}"
            ));
        }
        for (k, dy) in dynamic.iter_mut().enumerate() {
            if k != d && x.dims[k] != first.dims[k] {
                return Err(format!(
                    "concatenate operands may differ only in dimension {d}: operand 0 is {first}, operand {i} is {x} (dimension {k})"
                ));
            }
            *dy |= x.dynamic[k];
        }
        total = total
            .checked_add(x.dims[d])
            .ok_or("concatenate result size overflows")?;
    }
    let mut dims = first.dims.clone();
    dims[d] = total;
    Ok(array(first.ty, dims, Some(dynamic)))
}

pub(super) fn pad(a: &Args) -> InferResult {
    let x = a.array(0)?;
    let v = a.scalar(1, "padding value")?;
    if v != x.ty {
        return Err(format!(
            "pad value must have the operand's element type {}, got {v}",
            x.ty
        ));
    }
    let cfg = a.req(&a.attrs.padding, "padding")?;
    if cfg.len() != x.rank() {
        return Err(format!(
            "padding= has {} dimensions, expected {} (the rank of {x})",
            cfg.len(),
            x.rank()
        ));
    }
    let mut dims = Vec::with_capacity(cfg.len());
    for (i, (p, &n)) in cfg.iter().zip(&x.dims).enumerate() {
        if p.interior < 0 {
            return Err(format!(
                "padding dimension {i}: interior padding must be non-negative, got {}",
                p.interior
            ));
        }
        let ovf = || format!("padding dimension {i}: size arithmetic overflows");
        let inner = (n - 1).max(0).checked_mul(p.interior).ok_or_else(ovf)?;
        let size = n
            .checked_add(inner)
            .and_then(|s| s.checked_add(p.lo))
            .and_then(|s| s.checked_add(p.hi))
            .ok_or_else(ovf)?;
        if size < 0 {
            return Err(format!(
                "padding dimension {i}: low {} and high {} padding leave a negative size {size}",
                p.lo, p.hi
            ));
        }
        dims.push(size);
    }
    if x.is_dynamic() {
        return Err(unsupported("pad of a dynamic shape"));
    }
    Ok(array(x.ty, dims, None))
}

pub(super) fn iota(a: &Args) -> InferResult {
    let d = a.declared_array()?;
    if d.is_scalar() {
        return Err("iota needs a result of rank at least 1".into());
    }
    if d.ty.is_pred() {
        return Err("iota is not defined for element type pred".into());
    }
    let dim = *a.req(&a.attrs.iota_dimension, "iota_dimension")?;
    dim_in_range(dim, d.rank(), "iota_dimension")?;
    Ok(Shape::Array(d.clone()))
}

pub(super) fn constant(a: &Args) -> InferResult {
    let d = a.declared()?;
    let lit = a.req(&a.attrs.literal, "literal")?;
    if !lit.shape().compatible(&static_of(d)) {
        return Err(format!(
            "constant literal has shape {}, but the result is {d}",
            lit.shape()
        ));
    }
    Ok(d.clone())
}

/// The shape with dynamic flags cleared (a literal's shape is always static).
fn static_of(s: &Shape) -> Shape {
    match s {
        Shape::Array(x) => Shape::Array(ArrayShape {
            dynamic: vec![false; x.rank()],
            ..x.clone()
        }),
        Shape::Tuple(t) => Shape::Tuple(t.iter().map(static_of).collect()),
        Shape::Token => Shape::Token,
    }
}

pub(super) fn parameter(a: &Args) -> InferResult {
    let d = a.declared()?;
    let n = *a.req(&a.attrs.parameter_number, "parameter number")?;
    if n < 0 {
        return Err(format!("parameter number must be non-negative, got {n}"));
    }
    Ok(d.clone())
}

pub(super) fn get_tuple_element(a: &Args) -> InferResult {
    let t = a.ops[0]
        .as_tuple()
        .ok_or_else(|| format!("get-tuple-element needs a tuple operand, got {}", a.ops[0]))?;
    let i = *a.req(&a.attrs.index, "index")?;
    if i < 0 || i as u64 >= t.len() as u64 {
        return Err(format!(
            "get-tuple-element index={i} is out of range for a tuple of {} elements",
            t.len()
        ));
    }
    Ok(t[i as usize].clone())
}

pub(super) fn get_dimension_size(a: &Args) -> InferResult {
    let x = a.array(0)?;
    a.one_dim(x.rank())?;
    Ok(Shape::scalar(ElementType::S32))
}

pub(super) fn set_dimension_size(a: &Args) -> InferResult {
    let x = a.array(0)?;
    let d = a.one_dim(x.rank())?;
    if a.scalar(1, "size")? != ElementType::S32 {
        return Err(format!(
            "set-dimension-size size operand must be s32[], got {}",
            a.ops[1]
        ));
    }
    let mut dynamic = x.dynamic.clone();
    dynamic[d] = true;
    Ok(array(x.ty, x.dims.clone(), Some(dynamic)))
}
