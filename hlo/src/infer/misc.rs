//! Tokens and host/peer transfers (after-all, add-dependency, infeed, outfeed, send, recv),
//! random numbers, FFT, linear algebra (cholesky, triangular-solve) and batch normalization.
//!
//! Transfer shapes follow XLA: `infeed(token) -> (T, token[])`, `outfeed(T, token) -> token[]`,
//! `send(T, token) -> (T, u32[], token[])`, `send-done -> token[]`,
//! `recv(token) -> (T, u32[], token[])`, `recv-done -> (T, token[])`.

use super::{array, dim_in_range, Args, InferResult};
use crate::attrs::{FftType, RngAlgorithm, RngDistribution};
use crate::shape::{ArrayShape, Shape};
use crate::types::ElementType;

fn u32s() -> Shape {
    Shape::scalar(ElementType::U32)
}

fn contains_token(s: &Shape) -> bool {
    match s {
        Shape::Token => true,
        Shape::Tuple(t) => t.iter().any(contains_token),
        Shape::Array(_) => false,
    }
}

fn token_operand(a: &Args, i: usize) -> InferResult<()> {
    if !a.ops[i].is_token() {
        return Err(format!(
            "operand {i} of {} must be a token, got {}",
            a.op, a.ops[i]
        ));
    }
    Ok(())
}

/// Data transferred by infeed/outfeed/send/recv: arrays or tuples of them, no tokens.
fn data_shape(a: &Args, s: &Shape) -> InferResult<()> {
    if contains_token(s) {
        return Err(format!("{} data must not contain tokens, got {s}", a.op));
    }
    Ok(())
}

fn channel(a: &Args) -> InferResult<()> {
    let c = *a.req(&a.attrs.channel_id, "channel_id")?;
    if c < 0 {
        return Err(format!("channel_id must be non-negative, got {c}"));
    }
    Ok(())
}

pub(super) fn after_all(a: &Args) -> InferResult {
    (0..a.ops.len()).try_for_each(|i| token_operand(a, i))?;
    Ok(Shape::Token)
}

pub(super) fn add_dependency(a: &Args) -> InferResult {
    token_operand(a, 1)?;
    Ok(a.ops[0].clone())
}

pub(super) fn infeed(a: &Args) -> InferResult {
    token_operand(a, 0)?;
    let d = a.declared()?;
    match d.as_tuple() {
        Some([data, Shape::Token]) => {
            data_shape(a, data)?;
            Ok(d.clone())
        }
        _ => Err(format!("infeed result must be (data, token[]), got {d}")),
    }
}

pub(super) fn outfeed(a: &Args) -> InferResult {
    data_shape(a, a.ops[0])?;
    token_operand(a, 1)?;
    if let Some(s) = &a.attrs.outfeed_shape {
        if !s.compatible(a.ops[0]) {
            return Err(format!(
                "outfeed_shape={s} does not match the outfed data {}",
                a.ops[0]
            ));
        }
    }
    Ok(Shape::Token)
}

pub(super) fn send(a: &Args) -> InferResult {
    data_shape(a, a.ops[0])?;
    token_operand(a, 1)?;
    channel(a)?;
    Ok(Shape::Tuple(vec![a.ops[0].clone(), u32s(), Shape::Token]))
}

/// The `(T, u32[], token[])` context of a send or recv.
fn transfer_context<'a>(a: &Args, s: &'a Shape) -> InferResult<&'a Shape> {
    match s.as_tuple() {
        Some([data, ctx, Shape::Token]) if ctx.compatible(&u32s()) => Ok(data),
        _ => Err(format!(
            "{} needs the (data, u32[], token[]) result of the matching op, got {s}",
            a.op
        )),
    }
}

pub(super) fn send_done(a: &Args) -> InferResult {
    transfer_context(a, a.ops[0])?;
    channel(a)?;
    Ok(Shape::Token)
}

pub(super) fn recv(a: &Args) -> InferResult {
    token_operand(a, 0)?;
    channel(a)?;
    let d = a.declared()?;
    let data = transfer_context(a, d)
        .map_err(|_| format!("recv result must be (data, u32[], token[]), got {d}"))?;
    data_shape(a, data)?;
    Ok(d.clone())
}

pub(super) fn recv_done(a: &Args) -> InferResult {
    let data = transfer_context(a, a.ops[0])?;
    channel(a)?;
    Ok(Shape::Tuple(vec![data.clone(), Shape::Token]))
}

pub(super) fn rng(a: &Args) -> InferResult {
    let dist = *a.req(&a.attrs.distribution, "distribution")?;
    if a.ops.len() != 2 {
        return Err(format!(
            "rng takes 2 scalar parameters, got {}",
            a.ops.len()
        ));
    }
    let (p, q) = (
        a.scalar(0, "distribution parameter")?,
        a.scalar(1, "distribution parameter")?,
    );
    let d = a.declared_array()?;
    if p != q || p != d.ty {
        return Err(format!(
            "rng parameters ({p}, {q}) must have the result's element type {}",
            d.ty
        ));
    }
    let ok = match dist {
        RngDistribution::Uniform => d.ty.is_integer() || d.ty.is_float(),
        RngDistribution::Normal => d.ty.is_float(),
    };
    if !ok {
        return Err(format!(
            "rng {} is not defined for element type {}",
            dist.name(),
            d.ty
        ));
    }
    Ok(Shape::Array(d.clone()))
}

pub(super) fn rng_bit_generator(a: &Args) -> InferResult {
    let st = a.array(0)?;
    let crate::View::RngBitGenerator { algorithm: alg } = crate::View::of(a.op, a.attrs) else {
        return Err("rng-bit-generator: not a rng-bit-generator".into());
    };
    let sizes: &[i64] = match alg {
        RngAlgorithm::ThreeFry => &[2],
        RngAlgorithm::Philox | RngAlgorithm::Default => &[2, 3],
    };
    if st.ty != ElementType::U64 || st.rank() != 1 || !sizes.contains(&st.dims[0]) {
        let want: Vec<String> = sizes.iter().map(|n| format!("u64[{n}]")).collect();
        return Err(format!(
            "rng-bit-generator state for algorithm={} must be {}, got {st}",
            alg.name(),
            want.join(" or ")
        ));
    }
    let d = a.declared()?;
    match d.as_tuple() {
        Some([s, Shape::Array(out)]) if s.compatible(a.ops[0]) => {
            if !out.ty.is_integer() || out.ty.bits() < 8 {
                return Err(format!(
                    "rng-bit-generator output must have an integer type of 8 to 64 bits, got {out}"
                ));
            }
            if out.is_dynamic() {
                return Err(super::unsupported(
                    "rng-bit-generator with a dynamic output",
                ));
            }
            Ok(d.clone())
        }
        _ => Err(format!(
            "rng-bit-generator result must be (state {st}, output array), got {d}"
        )),
    }
}

pub(super) fn rng_get_and_update_state(a: &Args) -> InferResult {
    let s = array(ElementType::U64, vec![2], None);
    if let Some(d) = a.declared {
        if !d.compatible(&s) {
            return Err(format!("rng-get-and-update-state returns u64[2], got {d}"));
        }
    }
    Ok(s)
}

pub(super) fn fft(a: &Args) -> InferResult {
    let x = a.array(0)?;
    let ty = *a.req(&a.attrs.fft_type, "fft_type")?;
    let len = a.req(&a.attrs.fft_length, "fft_length")?;
    if len.is_empty() || len.len() > 3 {
        return Err(format!("fft_length must have 1 to 3 entries, got {len:?}"));
    }
    if len.iter().any(|&n| n < 1) {
        return Err(format!("fft_length entries must be positive, got {len:?}"));
    }
    if x.rank() < len.len() {
        return Err(format!(
            "fft operand {x} has fewer dimensions than fft_length {len:?}"
        ));
    }
    if x.is_dynamic() {
        return Err(super::unsupported("fft of a dynamic shape"));
    }
    let k = x.rank() - len.len();
    let tail = &x.dims[k..];
    let last = *len.last().expect("non-empty");
    let mut dims = x.dims.clone();
    let out_ty = match ty {
        FftType::Fft | FftType::Ifft => {
            if !x.ty.is_complex() {
                return Err(format!(
                    "fft_type={} needs a complex operand, got {x}",
                    ty.name()
                ));
            }
            if tail != &len[..] {
                return Err(format!(
                    "fft_type={}: the last dimensions of {x} must equal fft_length {len:?}",
                    ty.name()
                ));
            }
            x.ty
        }
        FftType::Rfft => {
            let Some(c) = x.ty.complex_of() else {
                return Err(format!(
                    "fft_type=RFFT needs an f32 or f64 operand, got {x}"
                ));
            };
            if tail != &len[..] {
                return Err(format!(
                    "fft_type=RFFT: the last dimensions of {x} must equal fft_length {len:?}"
                ));
            }
            *dims.last_mut().expect("rank >= 1") = last / 2 + 1;
            c
        }
        FftType::Irfft => {
            if !x.ty.is_complex() {
                return Err(format!("fft_type=IRFFT needs a complex operand, got {x}"));
            }
            let n = len.len();
            if tail[..n - 1] != len[..n - 1] || tail[n - 1] != last / 2 + 1 {
                return Err(format!(
                    "fft_type=IRFFT: the last dimensions of {x} must be fft_length {len:?} with the last one {} (= {last}/2+1)",
                    last / 2 + 1
                ));
            }
            *dims.last_mut().expect("rank >= 1") = last;
            x.ty.component_type()
        }
    };
    Ok(array(out_ty, dims, None))
}

/// A batch of square matrices in the last two dimensions, of a float or complex type.
fn square_batch(a: &Args, x: &ArrayShape, what: &str) -> InferResult<i64> {
    if x.rank() < 2 || x.dims[x.rank() - 1] != x.dims[x.rank() - 2] {
        return Err(format!(
            "{} {what} must be a (batch of) square matrices in its last two dimensions, got {x}",
            a.op
        ));
    }
    if !x.ty.is_floating_or_complex() {
        return Err(format!(
            "{} is not defined for element type {}; expected floating-point or complex",
            a.op, x.ty
        ));
    }
    if x.is_dynamic() {
        return Err(super::unsupported("linear algebra on dynamic shapes"));
    }
    Ok(x.dims[x.rank() - 1])
}

pub(super) fn cholesky(a: &Args) -> InferResult {
    let x = a.array(0)?;
    square_batch(a, x, "operand")?;
    Ok(array(x.ty, x.dims.clone(), None))
}

pub(super) fn triangular_solve(a: &Args) -> InferResult {
    let (m, b) = (a.array(0)?, a.array(1)?);
    let n = square_batch(a, m, "a")?;
    let opts = a.req(
        &a.attrs.triangular_solve_options,
        "triangular_solve_options",
    )?;
    if b.ty != m.ty || b.rank() != m.rank() || b.dims[..b.rank() - 2] != m.dims[..m.rank() - 2] {
        return Err(format!(
            "triangular-solve b {b} must have the type, rank and batch dimensions of a {m}"
        ));
    }
    let (which, got) = if opts.left_side {
        ("rows", b.dims[b.rank() - 2])
    } else {
        ("columns", b.dims[b.rank() - 1])
    };
    if got != n {
        return Err(format!(
            "triangular-solve with left_side={}: b {b} must have {n} {which} (the size of a), got {got}",
            opts.left_side
        ));
    }
    if b.is_dynamic() {
        return Err(super::unsupported("linear algebra on dynamic shapes"));
    }
    Ok(array(b.ty, b.dims.clone(), None))
}

/// Checks the batch-norm operand and feature vectors (operands `vecs`), returns the feature
/// vector shape.
fn batch_norm(a: &Args, vecs: &[usize]) -> InferResult<Shape> {
    let x = a.array(0)?;
    if !x.ty.is_float() {
        return Err(format!("{} needs a floating-point operand, got {x}", a.op));
    }
    if x.is_dynamic() {
        return Err(super::unsupported("batch normalization of dynamic shapes"));
    }
    let fi = dim_in_range(
        *a.req(&a.attrs.feature_index, "feature_index")?,
        x.rank(),
        "feature_index",
    )?;
    let e = *a.req(&a.attrs.epsilon, "epsilon")?;
    if !e.is_finite() || e < 0.0 {
        return Err(format!(
            "{} epsilon must be finite and non-negative, got {e}",
            a.op
        ));
    }
    let f = array(x.ty, vec![x.dims[fi]], None);
    for &i in vecs {
        if !a.ops[i].compatible(&f) {
            return Err(format!(
                "{} operand {i} must be {f} (one value per feature of dimension {fi}), got {}",
                a.op, a.ops[i]
            ));
        }
    }
    Ok(f)
}

pub(super) fn batch_norm_training(a: &Args) -> InferResult {
    let f = batch_norm(a, &[1, 2])?;
    let x = a.array(0)?;
    Ok(Shape::Tuple(vec![
        array(x.ty, x.dims.clone(), None),
        f.clone(),
        f,
    ]))
}

pub(super) fn batch_norm_inference(a: &Args) -> InferResult {
    batch_norm(a, &[1, 2, 3, 4])?;
    let x = a.array(0)?;
    Ok(array(x.ty, x.dims.clone(), None))
}

pub(super) fn batch_norm_grad(a: &Args) -> InferResult {
    let f = batch_norm(a, &[1, 2, 3])?;
    let x = a.array(0)?;
    if !a.ops[4].compatible(&array(x.ty, x.dims.clone(), None)) {
        return Err(format!(
            "batch-norm-grad grad_output (operand 4) must have the operand's shape {x}, got {}",
            a.ops[4]
        ));
    }
    Ok(Shape::Tuple(vec![
        array(x.ty, x.dims.clone(), None),
        f.clone(),
        f,
    ]))
}
