//! Dot (DotGeneral) and convolution.
//!
//! Both take the result element type from `declared` when given (the "preferred element
//! type", e.g. bf16 x bf16 -> f32, s8 x s8 -> s32), following XLA's rules.

use super::{array, dims_in_range, window_out, Args, InferResult};
use crate::shape::ArrayShape;
use crate::types::ElementType;

/// The result element type. Operands have the same element type, or two floating-point
/// types of different precision (as XLA allows). The result is the declared type when given
/// (the "preferred element type"; for non-floating operands it must not be narrower), else
/// the more precise operand type.
fn result_type(a: &Args, x: &ArrayShape, y: &ArrayShape) -> InferResult<ElementType> {
    if x.ty != y.ty && !(x.ty.is_float() && y.ty.is_float()) {
        return Err(format!(
            "operands of {} must have the same element type (or both be floating-point), got {} and {}",
            a.op, x.ty, y.ty
        ));
    }
    if x.ty.is_pred() {
        return Err(format!("{} is not defined for element type pred", a.op));
    }
    let own = if y.ty.bits() > x.ty.bits() {
        y.ty
    } else {
        x.ty
    };
    let Some(d) = a.declared else { return Ok(own) };
    let Some(d) = d.as_array() else {
        return Err(format!("result of {} must be an array, got {d}", a.op));
    };
    if d.ty.is_pred() || (x.ty.is_complex() && !d.ty.is_complex()) {
        return Err(format!(
            "{} of {} operands cannot produce {}",
            a.op, x.ty, d.ty
        ));
    }
    if !x.ty.is_floating_or_complex() && d.ty.bits() < x.ty.bits() {
        return Err(format!(
            "{} of {} operands cannot produce the narrower {} (the preferred element type must not be narrower)",
            a.op, x.ty, d.ty
        ));
    }
    Ok(d.ty)
}

fn precision_ok(a: &Args) -> InferResult<()> {
    if let Some(p) = &a.attrs.operand_precision {
        if !p.is_empty() && p.len() != 2 {
            return Err(format!(
                "operand_precision must list 2 precisions (one per operand), got {}",
                p.len()
            ));
        }
    }
    Ok(())
}

pub(super) fn dot(a: &Args) -> InferResult {
    let (x, y) = (a.array(0)?, a.array(1)?);
    precision_ok(a)?;
    let none = Vec::new();
    let lb = a.attrs.lhs_batch_dims.as_ref().unwrap_or(&none);
    let rb = a.attrs.rhs_batch_dims.as_ref().unwrap_or(&none);
    let lc = a.attrs.lhs_contracting_dims.as_ref().unwrap_or(&none);
    let rc = a.attrs.rhs_contracting_dims.as_ref().unwrap_or(&none);
    let all_l: Vec<i64> = lb.iter().chain(lc).copied().collect();
    let all_r: Vec<i64> = rb.iter().chain(rc).copied().collect();
    let l = dims_in_range(
        &all_l,
        x.rank(),
        "dot lhs batch and contracting dimensions",
        false,
    )?;
    let r = dims_in_range(
        &all_r,
        y.rank(),
        "dot rhs batch and contracting dimensions",
        false,
    )?;
    if lb.len() != rb.len() {
        return Err(format!(
            "dot must have as many lhs as rhs batch dimensions, got {lb:?} and {rb:?}"
        ));
    }
    if lc.len() != rc.len() {
        return Err(format!(
            "dot must have as many lhs as rhs contracting dimensions, got {lc:?} and {rc:?}"
        ));
    }
    for (k, (&i, &j)) in l.iter().zip(&r).enumerate() {
        if x.dims[i] != y.dims[j] {
            let what = if k < lb.len() { "batch" } else { "contracting" };
            return Err(format!(
                "dot {what} dimension sizes differ: lhs {x} dimension {i} has size {}, rhs {y} dimension {j} has size {}",
                x.dims[i], y.dims[j]
            ));
        }
    }
    let ty = result_type(a, x, y)?;
    let mut dims = Vec::new();
    let mut dynamic = Vec::new();
    for &i in &l[..lb.len()] {
        dims.push(x.dims[i]);
        dynamic.push(x.dynamic[i]);
    }
    for i in (0..x.rank()).filter(|i| !l.contains(i)) {
        dims.push(x.dims[i]);
        dynamic.push(x.dynamic[i]);
    }
    for j in (0..y.rank()).filter(|j| !r.contains(j)) {
        dims.push(y.dims[j]);
        dynamic.push(y.dynamic[j]);
    }
    Ok(array(ty, dims, Some(dynamic)))
}

pub(super) fn convolution(a: &Args) -> InferResult {
    let (x, k) = (a.array(0)?, a.array(1)?);
    precision_ok(a)?;
    let dn = a.req(&a.attrs.dim_labels, "dim_labels")?;
    let ns = dn.input_spatial.len();
    if dn.kernel_spatial.len() != ns || dn.output_spatial.len() != ns {
        return Err("convolution dim_labels must name the same number of spatial dimensions for input, kernel and output".into());
    }
    let rank = ns + 2;
    for (what, s) in [("input", x), ("kernel", k)] {
        if s.rank() != rank {
            return Err(format!(
                "convolution {what} {s} must have rank {rank} (2 + {ns} spatial dimensions in dim_labels)"
            ));
        }
    }
    let mut in_all = vec![dn.input_batch, dn.input_feature];
    in_all.extend(&dn.input_spatial);
    let mut k_all = vec![dn.kernel_input_feature, dn.kernel_output_feature];
    k_all.extend(&dn.kernel_spatial);
    let mut o_all = vec![dn.output_batch, dn.output_feature];
    o_all.extend(&dn.output_spatial);
    dims_in_range(&in_all, rank, "convolution input dim_labels", false)?;
    dims_in_range(&k_all, rank, "convolution kernel dim_labels", false)?;
    dims_in_range(&o_all, rank, "convolution output dim_labels", false)?;
    let empty = Vec::new();
    let window = a.attrs.window.as_ref().unwrap_or(&empty);
    if window.len() != ns {
        return Err(format!(
            "convolution window has {} dimensions, expected {ns} (the spatial dimensions)",
            window.len()
        ));
    }
    let crate::View::Convolution(v) = crate::View::of(a.op, a.attrs) else {
        return Err("convolution: dim_labels are missing".into());
    };
    let (fgc, bgc) = (v.feature_group_count, v.batch_group_count);
    if fgc < 1 || bgc < 1 {
        return Err(format!(
            "feature_group_count ({fgc}) and batch_group_count ({bgc}) must be positive"
        ));
    }
    if fgc > 1 && bgc > 1 {
        return Err(
            "feature_group_count and batch_group_count cannot both be greater than 1".into(),
        );
    }
    let in_batch = x.dims[dn.input_batch as usize];
    let in_feat = x.dims[dn.input_feature as usize];
    let k_in = k.dims[dn.kernel_input_feature as usize];
    let k_out = k.dims[dn.kernel_output_feature as usize];
    if in_feat % fgc != 0 {
        return Err(format!(
            "convolution input features {in_feat} must be divisible by feature_group_count {fgc}"
        ));
    }
    if in_feat / fgc != k_in {
        return Err(format!(
            "convolution input features / feature_group_count = {in_feat} / {fgc} = {} must equal the kernel input features {k_in}",
            in_feat / fgc
        ));
    }
    if k_out % fgc != 0 {
        return Err(format!("convolution kernel output features {k_out} must be divisible by feature_group_count {fgc}"));
    }
    if k_out % bgc != 0 {
        return Err(format!("convolution kernel output features {k_out} must be divisible by batch_group_count {bgc}"));
    }
    if in_batch % bgc != 0 {
        return Err(format!(
            "convolution input batch {in_batch} must be divisible by batch_group_count {bgc}"
        ));
    }
    let ty = result_type(a, x, k)?;
    let mut out = vec![0i64; rank];
    out[dn.output_batch as usize] = in_batch / bgc;
    out[dn.output_feature as usize] = k_out;
    for (i, w) in window.iter().enumerate() {
        let ks = k.dims[dn.kernel_spatial[i] as usize];
        if w.size != ks {
            return Err(format!(
                "convolution window size {} in spatial dimension {i} must equal the kernel's size {ks}",
                w.size
            ));
        }
        out[dn.output_spatial[i] as usize] =
            window_out(x.dims[dn.input_spatial[i] as usize], w, i)?;
    }
    if x.is_dynamic() || k.is_dynamic() {
        return Err(super::unsupported("convolution of dynamic shapes"));
    }
    Ok(array(ty, out, None))
}
