//! Ops that apply a computation: map, reduce, reduce-window, select-and-scatter, sort, and
//! top-k. The called computation's signature is checked against the operand types.

use super::{
    array, check_reducer, check_signature, dim_in_range, dims_in_range, window_dims, Args,
    InferResult,
};
use crate::shape::{ArrayShape, Shape};
use crate::types::ElementType;

/// Splits `N` arrays + `N` scalar init values; all arrays have the same dimensions and the
/// init values their element types.
fn split_inits<'a>(a: &Args<'a, '_>) -> InferResult<(Vec<&'a ArrayShape>, Vec<ElementType>)> {
    if !a.ops.len().is_multiple_of(2) {
        return Err(format!(
            "{} takes N operands and N init values, got an odd number ({})",
            a.op,
            a.ops.len()
        ));
    }
    let n = a.ops.len() / 2;
    let xs: Vec<&ArrayShape> = (0..n).map(|i| a.array(i)).collect::<InferResult<_>>()?;
    let mut tys = Vec::with_capacity(n);
    for i in 0..n {
        let t = a.scalar(n + i, "init value")?;
        if t != xs[i].ty {
            return Err(format!(
                "{} init value {i} has type {t}, but operand {i} has element type {}",
                a.op, xs[i].ty
            ));
        }
        if xs[i].dims != xs[0].dims {
            return Err(format!(
                "{} operands must have the same dimensions, got {} and {}",
                a.op, xs[0], xs[i]
            ));
        }
        tys.push(t);
    }
    Ok((xs, tys))
}

fn tuple_or_single(v: Vec<Shape>) -> Shape {
    if v.len() == 1 {
        v.into_iter().next().expect("one")
    } else {
        Shape::Tuple(v)
    }
}

pub(super) fn reduce(a: &Args) -> InferResult {
    let (xs, tys) = split_inits(a)?;
    let x = xs[0];
    let dims = dims_in_range(
        a.req(&a.attrs.dimensions, "dimensions")?,
        x.rank(),
        "reduce dimensions",
        false,
    )?;
    let sig = a.comp(a.attrs.to_apply, "to_apply")?;
    check_reducer(&sig, &tys, "reduce to_apply")?;
    let keep: Vec<usize> = (0..x.rank()).filter(|i| !dims.contains(i)).collect();
    let out_dims: Vec<i64> = keep.iter().map(|&i| x.dims[i]).collect();
    let out_dyn: Vec<bool> = keep
        .iter()
        .map(|&i| xs.iter().any(|s| s.dynamic[i]))
        .collect();
    Ok(tuple_or_single(
        tys.iter()
            .map(|&t| array(t, out_dims.clone(), Some(out_dyn.clone())))
            .collect(),
    ))
}

pub(super) fn reduce_window(a: &Args) -> InferResult {
    let (xs, tys) = split_inits(a)?;
    let window = a.req(&a.attrs.window, "window")?;
    let out = window_dims(&xs[0].dims, window, "reduce-window")?;
    if window.iter().any(|w| w.reversal) {
        return Err("reduce-window does not take window reversal".into());
    }
    if xs.iter().any(|x| x.is_dynamic()) {
        return Err(super::unsupported("reduce-window of dynamic shapes"));
    }
    let sig = a.comp(a.attrs.to_apply, "to_apply")?;
    check_reducer(&sig, &tys, "reduce-window to_apply")?;
    Ok(tuple_or_single(
        tys.iter().map(|&t| array(t, out.clone(), None)).collect(),
    ))
}

pub(super) fn select_and_scatter(a: &Args) -> InferResult {
    let (x, src) = (a.array(0)?, a.array(1)?);
    let init = a.scalar(2, "init value")?;
    if init != x.ty || src.ty != x.ty {
        return Err(format!(
            "select-and-scatter source {src} and init value {init} must have the operand's element type {}",
            x.ty
        ));
    }
    let window = a.req(&a.attrs.window, "window")?;
    if window
        .iter()
        .any(|w| w.lhs_dilate != 1 || w.rhs_dilate != 1 || w.reversal)
    {
        return Err("select-and-scatter windows take no dilation or reversal".into());
    }
    let out = window_dims(&x.dims, window, "select-and-scatter")?;
    if src.dims != out {
        return Err(format!(
            "select-and-scatter source {src} must have the shape of the windowed operand, {out:?}"
        ));
    }
    if x.is_dynamic() || src.is_dynamic() {
        return Err(super::unsupported("select-and-scatter of dynamic shapes"));
    }
    let s = Shape::scalar(x.ty);
    let sel = a.comp(a.attrs.select, "select")?;
    check_signature(
        &sel,
        &[s.clone(), s.clone()],
        Some(&Shape::scalar(ElementType::Pred)),
        "select-and-scatter select",
    )?;
    let sc = a.comp(a.attrs.scatter, "scatter")?;
    check_signature(
        &sc,
        &[s.clone(), s.clone()],
        Some(&s),
        "select-and-scatter scatter",
    )?;
    Ok(array(x.ty, x.dims.clone(), None))
}

pub(super) fn map(a: &Args) -> InferResult {
    let xs = a.arrays()?;
    for x in &xs {
        if x.dims != xs[0].dims {
            return Err(format!(
                "map operands must have the same dimensions, got {} and {x}",
                xs[0]
            ));
        }
    }
    if let Some(d) = &a.attrs.dimensions {
        if d.iter().copied().ne(0..xs[0].rank() as i64) {
            return Err(format!(
                "map dimensions= must be 0..{} in order, got {d:?}",
                xs[0].rank()
            ));
        }
    }
    let sig = a.comp(a.attrs.to_apply, "to_apply")?;
    let params: Vec<Shape> = xs.iter().map(|x| Shape::scalar(x.ty)).collect();
    check_signature(&sig, &params, None, "map to_apply")?;
    let ty = match &sig.result {
        Shape::Array(r) if r.is_scalar() => r.ty,
        r => {
            return Err(format!(
                "map to_apply computation must return a scalar, got {r}"
            ))
        }
    };
    Ok(array(ty, xs[0].dims.clone(), Some(xs[0].dynamic.clone())))
}

pub(super) fn sort(a: &Args) -> InferResult {
    let xs = a.arrays()?;
    for x in &xs {
        if x.dims != xs[0].dims {
            return Err(format!(
                "sort operands must have the same dimensions, got {} and {x}",
                xs[0]
            ));
        }
    }
    let d = a.req(&a.attrs.dimensions, "dimensions")?;
    if d.len() != 1 {
        return Err(format!(
            "sort takes exactly one dimension in dimensions=, got {d:?}"
        ));
    }
    dim_in_range(d[0], xs[0].rank(), "sort dimensions")?;
    let sig = a.comp(a.attrs.to_apply, "to_apply")?;
    let params: Vec<Shape> = xs
        .iter()
        .flat_map(|x| [Shape::scalar(x.ty), Shape::scalar(x.ty)])
        .collect();
    check_signature(
        &sig,
        &params,
        Some(&Shape::scalar(ElementType::Pred)),
        "sort comparator",
    )?;
    if xs.iter().any(|x| x.is_dynamic()) {
        return Err(super::unsupported("sort of dynamic shapes"));
    }
    Ok(tuple_or_single(
        xs.iter()
            .map(|x| array(x.ty, x.dims.clone(), None))
            .collect(),
    ))
}

pub(super) fn top_k(a: &Args) -> InferResult {
    let x = a.array(0)?;
    let k = *a.req(&a.attrs.k, "k")?;
    let Some(&last) = x.dims.last() else {
        return Err(format!("topk needs an operand of rank at least 1, got {x}"));
    };
    if k < 0 || k > last {
        return Err(format!(
            "topk k={k} must be in 0..={last} (the last dimension of {x})"
        ));
    }
    // pred is ordered false < true (XLA accepts topk on pred).
    if x.ty.is_complex() {
        return Err(format!("topk is not defined for element type {}", x.ty));
    }
    if x.is_dynamic() {
        return Err(super::unsupported("topk of a dynamic shape"));
    }
    let mut dims = x.dims.clone();
    *dims.last_mut().expect("rank >= 1") = k;
    Ok(Shape::Tuple(vec![
        array(x.ty, dims.clone(), None),
        array(ElementType::S32, dims, None),
    ]))
}
