//! Rng (`rng` opcode with `distribution=rng_uniform|rng_normal`) and RngGetAndUpdateState.
//!
//! XLA leaves these values implementation-defined; systole defines them so runs are
//! reproducible: one Philox-4x32-10 stream per evaluation, keyed by the runtime's
//! [`RngState::seed`], with the 128-bit counter `(low = RngState::counter, high = 0)`. Each
//! `rng` instruction draws `ceil(words/4)` consecutive blocks in evaluation order and advances
//! the counter by that many, so the same module, inputs and seed give the same values.
//!
//! - uniform floats in `[a, b)`: `a + (b−a)·u` computed in f64 with `u` from 24 random bits
//!   (f16/bf16/f32) or 53 (f64), rounded to the type; a result that rounds up to `b` becomes
//!   the largest value below `b`. If `b ≤ a` every value is `a`.
//! - uniform integers in `[a, b)`: `a + bits mod (b−a)` (64 bits per value); `b ≤ a` gives `a`.
//! - normal: Box–Muller on pairs of uniforms, `mu + sigma·z`, computed in f64 and rounded.
//! - `rng-get-and-update-state(), delta=D` returns `u64[2] = [counter, seed]` and advances the
//!   counter by D.

use super::convert::check_result;
use super::rng_bits::philox4x32;
use super::{KResult, KernelError};
use crate::runtime::RngState;
use half::{bf16, f16};
use hlo::attrs::{Attrs, RngDistribution};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::ArrayShape;
use hlo::types::ElementType;

/// `n` 32-bit words from the evaluation's stream (advances `st`).
pub fn draw_words(st: &mut RngState, n: usize) -> Vec<u32> {
    let blocks = n.div_ceil(4) as u64;
    let key = [st.seed as u32, (st.seed >> 32) as u32];
    let mut out = Vec::with_capacity(n + 3);
    for i in 0..blocks {
        let c = st.counter.wrapping_add(i);
        out.extend(philox4x32([c as u32, (c >> 32) as u32, 0, 0], key));
    }
    st.counter = st.counter.wrapping_add(blocks);
    out.truncate(n);
    out
}

fn draw_u64(st: &mut RngState, n: usize) -> Vec<u64> {
    draw_words(st, 2 * n)
        .chunks(2)
        .map(|p| p[0] as u64 | (p[1] as u64) << 32)
        .collect()
}

/// Uniform in [0, 1) with `bits` random bits.
fn unit(w: u64, bits: u32) -> f64 {
    (w >> (64 - bits)) as f64 / (1u64 << bits) as f64
}

fn scalar_f64(a: &ArrayLiteral, what: &str) -> KResult<f64> {
    if !a.dims.is_empty() {
        return Err(KernelError::invalid(format!(
            "rng: {what} must be a scalar, got {}",
            a.shape()
        )));
    }
    Ok(super::convert::to_f64(&a.data)?[0])
}

/// The largest f16/bf16/f32 value below `b` (as the type's bits stepped once toward −inf).
fn below<T: Copy>(b: T, to_bits: impl Fn(T) -> u32, from_bits: impl Fn(u32) -> T, sign: u32) -> T {
    let x = to_bits(b);
    let mag = x & !sign;
    from_bits(if mag == 0 {
        sign | 1
    } else if x & sign == 0 {
        x - 1
    } else {
        x + 1
    })
}

/// Uniform values of a float type in `[a, b)`.
fn uniform_float(
    st: &mut RngState,
    ty: ElementType,
    n: usize,
    a: f64,
    b: f64,
) -> KResult<ArrayData> {
    let w = draw_u64(st, n);
    let raw = |bits: u32| -> Vec<f64> {
        w.iter()
            .map(|&x| {
                if b <= a {
                    a
                } else {
                    a + (b - a) * unit(x, bits)
                }
            })
            .collect()
    };
    Ok(match ty {
        ElementType::F64 => {
            let top = f64::from_bits(if b > 0.0 {
                b.to_bits() - 1
            } else if b == 0.0 {
                0x8000_0000_0000_0001
            } else {
                b.to_bits() + 1
            });
            ArrayData::F64(
                raw(53)
                    .into_iter()
                    .map(|v| if b > a && v >= b { top } else { v })
                    .collect(),
            )
        }
        ElementType::F32 => {
            let bb = b as f32;
            let top = below(bb, f32::to_bits, f32::from_bits, 1 << 31);
            ArrayData::F32(
                raw(24)
                    .into_iter()
                    .map(|v| v as f32)
                    .map(|v| if b > a && v >= bb { top } else { v })
                    .collect(),
            )
        }
        ElementType::F16 => {
            let bb = f16::from_f64(b);
            let top = below(
                bb,
                |x| x.to_bits() as u32,
                |x| f16::from_bits(x as u16),
                1 << 15,
            );
            ArrayData::F16(
                raw(24)
                    .into_iter()
                    .map(f16::from_f64)
                    .map(|v| if b > a && v >= bb { top } else { v })
                    .collect(),
            )
        }
        ElementType::BF16 => {
            let bb = bf16::from_f64(b);
            let top = below(
                bb,
                |x| x.to_bits() as u32,
                |x| bf16::from_bits(x as u16),
                1 << 15,
            );
            ArrayData::BF16(
                raw(24)
                    .into_iter()
                    .map(bf16::from_f64)
                    .map(|v| if b > a && v >= bb { top } else { v })
                    .collect(),
            )
        }
        t => {
            return Err(KernelError::unsupported(format!(
                "rng_uniform of element type {t}"
            )))
        }
    })
}

/// Uniform integers in `[a, b)`.
fn uniform_int(
    st: &mut RngState,
    ty: ElementType,
    n: usize,
    lo: &ArrayLiteral,
    hi: &ArrayLiteral,
) -> KResult<ArrayData> {
    let a = super::convert::to_i64(&lo.data)?[0] as i128;
    let b = super::convert::to_i64(&hi.data)?[0] as i128;
    // u64 bounds were read as i64 bit patterns; reinterpret.
    let (a, b) = if ty == ElementType::U64 {
        (a as i64 as u64 as i128, b as i64 as u64 as i128)
    } else {
        (a, b)
    };
    let w = draw_u64(st, n);
    let v: Vec<i64> = w
        .iter()
        .map(|&x| {
            if b <= a {
                a as i64
            } else {
                (a + (x as i128 % (b - a))) as i64
            }
        })
        .collect();
    super::convert::Values::I64(v).write(ty)
}

/// Evaluates `rng(a, b)` with the instruction's distribution into the declared shape.
pub fn rng(
    ops: &[&ArrayLiteral],
    attrs: &Attrs,
    out: &ArrayShape,
    st: &mut RngState,
) -> KResult<ArrayLiteral> {
    let hlo::View::Rng { distribution: dist } = hlo::View::of(hlo::Opcode::Rng, attrs) else {
        return Err(KernelError::malformed(hlo::Opcode::Rng, attrs));
    };
    let [p, q] = ops else {
        return Err(KernelError::invalid("rng: needs two scalar operands"));
    };
    for o in [p, q] {
        if o.element_type() != out.ty {
            return Err(KernelError::invalid(format!(
                "rng: operand type {} differs from the result type {}",
                o.element_type(),
                out.ty
            )));
        }
    }
    let dims = out.udims();
    check_result("rng", out, &dims, out.ty)?;
    let n: usize = dims.iter().product();
    let data = match dist {
        RngDistribution::Uniform if out.ty.is_float() => {
            uniform_float(st, out.ty, n, scalar_f64(p, "a")?, scalar_f64(q, "b")?)?
        }
        RngDistribution::Uniform if out.ty.is_integer() => {
            scalar_f64(p, "a")?;
            scalar_f64(q, "b")?;
            uniform_int(st, out.ty, n, p, q)?
        }
        RngDistribution::Uniform => {
            return Err(KernelError::unsupported(format!(
                "rng_uniform of element type {}",
                out.ty
            )))
        }
        RngDistribution::Normal => {
            if !out.ty.is_float() || out.ty.is_carried_only() {
                return Err(KernelError::unsupported(format!(
                    "rng_normal of element type {}",
                    out.ty
                )));
            }
            let (mu, sigma) = (scalar_f64(p, "mu")?, scalar_f64(q, "sigma")?);
            let w = draw_u64(st, n.div_ceil(2) * 2);
            let mut z = Vec::with_capacity(n + 1);
            for pair in w.chunks(2) {
                let u1 = 1.0 - unit(pair[0], 53); // (0, 1]
                let u2 = unit(pair[1], 53);
                let r = (-2.0 * u1.ln()).sqrt();
                let t = 2.0 * std::f64::consts::PI * u2;
                z.push(mu + sigma * r * t.cos());
                z.push(mu + sigma * r * t.sin());
            }
            z.truncate(n);
            super::convert::Values::F64(z).write(out.ty)?
        }
    };
    Ok(ArrayLiteral { dims, data })
}

/// `rng-get-and-update-state`: `[counter, seed]` as u64[2], then the counter advances by
/// `delta` (from the instruction's `delta=` attribute, kept verbatim in `Attrs::extra`).
pub fn rng_get_and_update_state(
    attrs: &Attrs,
    out: &ArrayShape,
    st: &mut RngState,
) -> KResult<ArrayLiteral> {
    check_result("rng-get-and-update-state", out, &[2], ElementType::U64)?;
    let delta = match attrs.extra.iter().find(|(k, _)| k == "delta") {
        Some((_, v)) => v.trim().parse::<u64>().map_err(|_| {
            KernelError::invalid(format!("rng-get-and-update-state: bad delta {v:?}"))
        })?,
        None => {
            return Err(KernelError::invalid(
                "rng-get-and-update-state: missing delta",
            ))
        }
    };
    let value = vec![st.counter, st.seed];
    st.counter = st.counter.wrapping_add(delta);
    Ok(ArrayLiteral {
        dims: vec![2],
        data: ArrayData::U64(value),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::test_util::shape;
    use hlo::types::ElementType as T;

    fn scalar(v: f32) -> ArrayLiteral {
        ArrayLiteral {
            dims: vec![],
            data: ArrayData::F32(vec![v]),
        }
    }

    fn stats(v: &[f32]) -> (f64, f64) {
        let n = v.len() as f64;
        let m = v.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = v.iter().map(|&x| (x as f64 - m).powi(2)).sum::<f64>() / n;
        (m, var.sqrt())
    }

    #[test]
    fn uniform_is_in_range_with_the_right_moments_and_reproducible() {
        let at = Attrs {
            distribution: Some(RngDistribution::Uniform),
            ..Attrs::default()
        };
        let mut st = RngState {
            seed: 42,
            counter: 0,
        };
        let r = rng(
            &[&scalar(-1.0), &scalar(3.0)],
            &at,
            &shape(T::F32, &[100, 100]),
            &mut st,
        )
        .unwrap();
        let ArrayData::F32(v) = &r.data else { panic!() };
        assert!(v.iter().all(|&x| (-1.0..3.0).contains(&x)));
        let (m, s) = stats(v);
        // mean 1, std 4/sqrt(12); 4 standard errors of the mean.
        assert!((m - 1.0).abs() < 4.0 * 1.1547 / 100.0, "{m}");
        assert!((s - 1.1547).abs() < 0.02, "{s}");
        assert_eq!(st.counter, 5000); // 10000 values x 2 words / 4 per block
        let mut st2 = RngState {
            seed: 42,
            counter: 0,
        };
        let r2 = rng(
            &[&scalar(-1.0), &scalar(3.0)],
            &at,
            &shape(T::F32, &[100, 100]),
            &mut st2,
        )
        .unwrap();
        assert_eq!(r, r2);
    }

    #[test]
    fn uniform_never_returns_b() {
        // [1, 1+ulp): every value must be exactly 1.
        let at = Attrs {
            distribution: Some(RngDistribution::Uniform),
            ..Attrs::default()
        };
        let mut st = RngState::default();
        let b = f32::from_bits(1.0f32.to_bits() + 1);
        let r = rng(
            &[&scalar(1.0), &scalar(b)],
            &at,
            &shape(T::F32, &[1000]),
            &mut st,
        )
        .unwrap();
        let ArrayData::F32(v) = &r.data else { panic!() };
        assert!(v.iter().all(|&x| x == 1.0));
    }

    #[test]
    fn normal_has_the_right_moments() {
        let at = Attrs {
            distribution: Some(RngDistribution::Normal),
            ..Attrs::default()
        };
        let mut st = RngState {
            seed: 7,
            counter: 3,
        };
        let r = rng(
            &[&scalar(1.0), &scalar(2.0)],
            &at,
            &shape(T::F32, &[101, 99]),
            &mut st,
        )
        .unwrap();
        let ArrayData::F32(v) = &r.data else { panic!() };
        let (m, s) = stats(v);
        assert!((m - 1.0).abs() < 4.0 * 2.0 / 100.0, "{m}");
        assert!((s - 2.0).abs() < 0.05, "{s}");
    }

    #[test]
    fn integer_uniform_in_range() {
        let at = Attrs {
            distribution: Some(RngDistribution::Uniform),
            ..Attrs::default()
        };
        let s = |v: i32| ArrayLiteral {
            dims: vec![],
            data: ArrayData::S32(vec![v]),
        };
        let mut st = RngState::default();
        let r = rng(&[&s(-3), &s(4)], &at, &shape(T::S32, &[500]), &mut st).unwrap();
        let ArrayData::S32(v) = &r.data else { panic!() };
        assert!(v.iter().all(|&x| (-3..4).contains(&x)));
        for k in -3..4 {
            assert!(v.contains(&k));
        }
    }
}
