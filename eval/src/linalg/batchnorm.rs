//! BatchNormTraining, BatchNormInference and BatchNormGrad, per the spec's formulas.
//!
//! Statistics run over every dimension except `feature_index` (`m` elements per feature):
//! - training: `mean = Σx/m`, `var = Σ(x−mean)²/m` (biased), result
//!   `(y, mean, var)` with `y = (x−mean)/sqrt(var+ε)·scale + offset`;
//! - inference: `y` with the given mean and variance;
//! - grad: with the given mean/variance, `grad_offset = Σdy`,
//!   `grad_scale = Σ dy·(x−mean)/sqrt(var+ε)`, and
//!   `grad_x = scale/sqrt(var+ε) · (dy − mean(dy) − (x−mean)·mean(dy·(x−mean))/(var+ε))`.
//!
//! Every float type is computed in f64 and rounded once into the operand type (a reference more
//! accurate than XLA's f32 expansion; the two agree within the corpus tolerances).

use super::convert::{check_result, to_f64, Values};
use super::{KResult, KernelError};
use hlo::attrs::Attrs;
use hlo::literal::{ArrayLiteral, Literal};
use hlo::shape::{ArrayShape, Shape};
use hlo::types::ElementType;

/// Feature layout of the operand: element `i` has feature `(i / inner) % features`.
struct Layout {
    features: usize,
    inner: usize,
    /// Elements per feature.
    m: usize,
}

fn layout(x: &ArrayLiteral, attrs: &Attrs, op: &str) -> KResult<Layout> {
    if !x.element_type().is_float() || x.element_type().is_carried_only() {
        return Err(KernelError::invalid(format!(
            "{op}: operand must be f16, bf16, f32 or f64, got {}",
            x.element_type()
        )));
    }
    // The three opcodes share one view (feature index and epsilon resolved there).
    let fi = match hlo::View::of(hlo::Opcode::BatchNormInference, attrs) {
        hlo::View::BatchNorm { feature_index, .. } => feature_index,
        _ => {
            return Err(KernelError::malformed(
                hlo::Opcode::BatchNormInference,
                attrs,
            ))
        }
    };
    if fi >= x.dims.len() {
        return Err(KernelError::invalid(format!(
            "{op}: feature_index {fi} out of range for rank {}",
            x.dims.len()
        )));
    }
    let features = x.dims[fi];
    let inner: usize = x.dims[fi + 1..].iter().product();
    let m = x.element_count() / features.max(1);
    Ok(Layout { features, inner, m })
}

/// Reads a per-feature operand (rank 1, size = features, same type as the operand).
fn per_feature(
    v: &ArrayLiteral,
    l: &Layout,
    ty: ElementType,
    what: &str,
    op: &str,
) -> KResult<Vec<f64>> {
    if v.dims != [l.features] || v.element_type() != ty {
        return Err(KernelError::invalid(format!(
            "{op}: {what} must be {ty}[{}], got {}",
            l.features,
            v.shape()
        )));
    }
    to_f64(&v.data)
}

fn epsilon(attrs: &Attrs) -> f64 {
    // The same epsilon for the three opcodes (required: the view is malformed without it).
    // Only called after `layout`, which returned an error unless the view is `BatchNorm`.
    match hlo::View::of(hlo::Opcode::BatchNormInference, attrs) {
        hlo::View::BatchNorm { epsilon, .. } => epsilon as f64,
        _ => 0.0,
    }
}

fn write(v: Vec<f64>, dims: &[usize], ty: ElementType) -> KResult<ArrayLiteral> {
    Ok(ArrayLiteral {
        dims: dims.to_vec(),
        data: Values::F64(v).write(ty)?,
    })
}

fn tuple_part<'a>(out: &'a Shape, i: usize, op: &str) -> KResult<&'a ArrayShape> {
    out.as_tuple()
        .and_then(|t| t.get(i))
        .and_then(Shape::as_array)
        .ok_or_else(|| KernelError::invalid(format!("{op}: result must be a 3-tuple of arrays")))
}

/// Per-feature mean of `f(i, x_i)` over the `m` elements of each feature.
fn feature_sums(x: &[f64], l: &Layout, f: impl Fn(usize, f64) -> f64) -> Vec<f64> {
    let mut s = vec![0.0; l.features];
    for (i, &v) in x.iter().enumerate() {
        s[(i / l.inner) % l.features] += f(i, v);
    }
    s
}

/// `batch-norm-training(x, scale, offset)` → `(y, mean, var)`.
pub fn batch_norm_training(ops: &[&ArrayLiteral], attrs: &Attrs, out: &Shape) -> KResult<Literal> {
    const OP: &str = "batch-norm-training";
    let [x, scale, offset] = ops else {
        return Err(KernelError::invalid(format!("{OP}: needs 3 operands")));
    };
    let l = layout(x, attrs, OP)?;
    let ty = x.element_type();
    let (sc, of) = (
        per_feature(scale, &l, ty, "scale", OP)?,
        per_feature(offset, &l, ty, "offset", OP)?,
    );
    check_result(OP, tuple_part(out, 0, OP)?, &x.dims, ty)?;
    check_result(OP, tuple_part(out, 1, OP)?, &[l.features], ty)?;
    check_result(OP, tuple_part(out, 2, OP)?, &[l.features], ty)?;
    let xv = to_f64(&x.data)?;
    let m = l.m as f64;
    let mean: Vec<f64> = feature_sums(&xv, &l, |_, v| v)
        .iter()
        .map(|s| s / m)
        .collect();
    let var: Vec<f64> = feature_sums(&xv, &l, |i, v| {
        let d = v - mean[(i / l.inner) % l.features];
        d * d
    })
    .iter()
    .map(|s| s / m)
    .collect();
    let eps = epsilon(attrs);
    let y: Vec<f64> = xv
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let f = (i / l.inner) % l.features;
            (v - mean[f]) / (var[f] + eps).sqrt() * sc[f] + of[f]
        })
        .collect();
    Ok(Literal::Tuple(vec![
        Literal::Array(write(y, &x.dims, ty)?),
        Literal::Array(write(mean, &[l.features], ty)?),
        Literal::Array(write(var, &[l.features], ty)?),
    ]))
}

/// `batch-norm-inference(x, scale, offset, mean, variance)` → `y`.
pub fn batch_norm_inference(
    ops: &[&ArrayLiteral],
    attrs: &Attrs,
    out: &ArrayShape,
) -> KResult<ArrayLiteral> {
    const OP: &str = "batch-norm-inference";
    let [x, scale, offset, mean, var] = ops else {
        return Err(KernelError::invalid(format!("{OP}: needs 5 operands")));
    };
    let l = layout(x, attrs, OP)?;
    let ty = x.element_type();
    let sc = per_feature(scale, &l, ty, "scale", OP)?;
    let of = per_feature(offset, &l, ty, "offset", OP)?;
    let mn = per_feature(mean, &l, ty, "mean", OP)?;
    let vr = per_feature(var, &l, ty, "variance", OP)?;
    check_result(OP, out, &x.dims, ty)?;
    let eps = epsilon(attrs);
    let y: Vec<f64> = to_f64(&x.data)?
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let f = (i / l.inner) % l.features;
            (v - mn[f]) / (vr[f] + eps).sqrt() * sc[f] + of[f]
        })
        .collect();
    write(y, &x.dims, ty)
}

/// `batch-norm-grad(x, scale, mean, variance, grad_output)` → `(grad_x, grad_scale, grad_offset)`.
pub fn batch_norm_grad(ops: &[&ArrayLiteral], attrs: &Attrs, out: &Shape) -> KResult<Literal> {
    const OP: &str = "batch-norm-grad";
    let [x, scale, mean, var, dy] = ops else {
        return Err(KernelError::invalid(format!("{OP}: needs 5 operands")));
    };
    let l = layout(x, attrs, OP)?;
    let ty = x.element_type();
    let sc = per_feature(scale, &l, ty, "scale", OP)?;
    let mn = per_feature(mean, &l, ty, "mean", OP)?;
    let vr = per_feature(var, &l, ty, "variance", OP)?;
    if dy.dims != x.dims || dy.element_type() != ty {
        return Err(KernelError::invalid(format!(
            "{OP}: grad_output must have the operand's shape {}",
            x.shape()
        )));
    }
    check_result(OP, tuple_part(out, 0, OP)?, &x.dims, ty)?;
    check_result(OP, tuple_part(out, 1, OP)?, &[l.features], ty)?;
    check_result(OP, tuple_part(out, 2, OP)?, &[l.features], ty)?;
    let (xv, dv) = (to_f64(&x.data)?, to_f64(&dy.data)?);
    let eps = epsilon(attrs);
    let feat = |i: usize| (i / l.inner) % l.features;
    let grad_offset = feature_sums(&dv, &l, |_, d| d);
    let sum_dy_xc = feature_sums(&dv, &l, |i, d| d * (xv[i] - mn[feat(i)]));
    let grad_scale: Vec<f64> = sum_dy_xc
        .iter()
        .zip(&vr)
        .map(|(s, v)| s / (v + eps).sqrt())
        .collect();
    let m = l.m as f64;
    let grad_x: Vec<f64> = (0..xv.len())
        .map(|i| {
            let f = feat(i);
            let ve = vr[f] + eps;
            sc[f] / ve.sqrt()
                * (dv[i] - grad_offset[f] / m - (xv[i] - mn[f]) * (sum_dy_xc[f] / m) / ve)
        })
        .collect();
    Ok(Literal::Tuple(vec![
        Literal::Array(write(grad_x, &x.dims, ty)?),
        Literal::Array(write(grad_scale, &[l.features], ty)?),
        Literal::Array(write(grad_offset, &[l.features], ty)?),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::test_util::{f64_lit, f64s, shape, Lcg};
    use hlo::types::ElementType as T;

    fn attrs(fi: i64, eps: f32) -> Attrs {
        Attrs {
            feature_index: Some(fi),
            epsilon: Some(eps),
            ..Attrs::default()
        }
    }

    fn arrays(l: &Literal) -> Vec<&ArrayLiteral> {
        l.as_tuple()
            .unwrap()
            .iter()
            .map(|x| x.as_array().unwrap())
            .collect()
    }

    #[test]
    fn training_normalizes_each_feature() {
        let mut rng = Lcg::new(2);
        let dims = [3, 4, 2];
        let x = f64_lit(&dims, rng.f64s(24).iter().map(|v| v * 3.0 + 1.0).collect());
        let scale = f64_lit(&[4], vec![1.0, 2.0, 0.5, -1.0]);
        let offset = f64_lit(&[4], vec![0.0, 1.0, -1.0, 3.0]);
        let out = Shape::Tuple(vec![
            Shape::array(T::F64, &[3, 4, 2]),
            Shape::array(T::F64, &[4]),
            Shape::array(T::F64, &[4]),
        ]);
        let r = batch_norm_training(&[&x, &scale, &offset], &attrs(1, 0.0), &out).unwrap();
        let parts = arrays(&r);
        let (y, mean, var) = (f64s(parts[0]), f64s(parts[1]), f64s(parts[2]));
        let xs = f64s(&x);
        for f in 0..4 {
            let vals: Vec<usize> = (0..24).filter(|i| (i / 2) % 4 == f).collect();
            let mu: f64 = vals.iter().map(|&i| xs[i]).sum::<f64>() / 6.0;
            assert!((mu - mean[f]).abs() < 1e-12);
            let v: f64 = vals.iter().map(|&i| (xs[i] - mu).powi(2)).sum::<f64>() / 6.0;
            assert!((v - var[f]).abs() < 1e-12);
            // (y - offset)/scale has mean 0 and variance 1.
            let z: Vec<f64> = vals
                .iter()
                .map(|&i| (y[i] - f64s(&offset)[f]) / f64s(&scale)[f])
                .collect();
            assert!(z.iter().sum::<f64>().abs() < 1e-9);
            assert!((z.iter().map(|q| q * q).sum::<f64>() / 6.0 - 1.0).abs() < 1e-9);
        }
        // Inference with the batch statistics reproduces y.
        let inf = batch_norm_inference(
            &[&x, &scale, &offset, parts[1], parts[2]],
            &attrs(1, 0.0),
            &shape(T::F64, &dims),
        )
        .unwrap();
        for (a, b) in f64s(&inf).iter().zip(y) {
            assert!((a - b).abs() < 1e-12);
        }
    }

    #[test]
    fn grad_matches_finite_differences() {
        // With mean/var given (held fixed), y is affine in x: grad_x from the formula must
        // equal the derivative of L = Σ dy·y_train(x) only when mean/var follow x. Check the
        // spec formula against finite differences of the training-mode loss.
        let mut rng = Lcg::new(8);
        let dims = [2, 3];
        let eps = 0.01f32;
        let x0 = rng.f64s(6);
        let dy = rng.f64s(6);
        let scale = f64_lit(&[3], vec![1.5, -0.5, 2.0]);
        let offset = f64_lit(&[3], vec![0.0; 3]);
        let tshape = Shape::Tuple(vec![
            Shape::array(T::F64, &[2, 3]),
            Shape::array(T::F64, &[3]),
            Shape::array(T::F64, &[3]),
        ]);
        let loss = |x: &[f64]| -> f64 {
            let r = batch_norm_training(
                &[&f64_lit(&dims, x.to_vec()), &scale, &offset],
                &attrs(1, eps),
                &tshape,
            )
            .unwrap();
            f64s(arrays(&r)[0])
                .iter()
                .zip(&dy)
                .map(|(a, b)| a * b)
                .sum()
        };
        let stats = batch_norm_training(
            &[&f64_lit(&dims, x0.clone()), &scale, &offset],
            &attrs(1, eps),
            &tshape,
        )
        .unwrap();
        let st = arrays(&stats);
        let g = batch_norm_grad(
            &[
                &f64_lit(&dims, x0.clone()),
                &scale,
                st[1],
                st[2],
                &f64_lit(&dims, dy.clone()),
            ],
            &attrs(1, eps),
            &tshape,
        )
        .unwrap();
        let gp = arrays(&g);
        let gx = f64s(gp[0]);
        for i in 0..6 {
            let h = 1e-6;
            let (mut xp, mut xm) = (x0.clone(), x0.clone());
            xp[i] += h;
            xm[i] -= h;
            let fd = (loss(&xp) - loss(&xm)) / (2.0 * h);
            assert!((fd - gx[i]).abs() < 1e-6, "{i}: {fd} vs {}", gx[i]);
        }
        // grad_offset = Σ dy per feature.
        for f in 0..3 {
            assert!((f64s(gp[2])[f] - (dy[f] + dy[3 + f])).abs() < 1e-12);
        }
    }

    #[test]
    fn bad_feature_index_is_an_error() {
        let x = f64_lit(&[2, 2], vec![0.0; 4]);
        let s = f64_lit(&[2], vec![1.0; 2]);
        let e = batch_norm_inference(
            &[&x, &s, &s, &s, &s],
            &attrs(2, 0.0),
            &shape(T::F64, &[2, 2]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("feature_index"), "{e}");
    }
}
