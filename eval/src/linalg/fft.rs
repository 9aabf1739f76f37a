//! Fft (`fft` opcode): FFT, IFFT, RFFT and IRFFT over the `fft_length.len()` (1 to 3)
//! innermost dimensions.
//!
//! - FFT: unnormalized forward DFT `X[k] = Σ x[n]·e^{-2πi kn/N}` over each transformed axis.
//! - IFFT: inverse DFT including the `1/N` factor (N = product of `fft_length`), as XLA does.
//! - RFFT: real input (f32 → c64, f64 → c128); the last axis keeps the `fft_length[-1]/2 + 1`
//!   non-negative frequencies.
//! - IRFFT: complex input whose last axis holds `fft_length[-1]/2 + 1` bins; the other axes are
//!   inverted as complex, then the last axis is extended Hermitian (`X[N−k] = conj X[k]`) and
//!   inverted; the real part is the output (so the imaginary parts of the DC and Nyquist bins are
//!   ignored, like every C2R transform). Output last dimension: `fft_length[-1]`.
//!
//! c64 data is transformed in f64 and rounded once to f32 (a more accurate reference than an f32
//! FFT; XLA:CPU's f32 FFT agrees within the corpus tolerances). Uses `rustfft` (any length).

use super::convert::check_result;
use super::{KResult, KernelError};
use hlo::attrs::{Attrs, FftType};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::ArrayShape;
use hlo::types::ElementType;
use num_complex::{Complex32, Complex64};
use rustfft::FftPlanner;

/// Evaluates `fft(x)` into the declared shape.
pub fn fft(x: &ArrayLiteral, attrs: &Attrs, out: &ArrayShape) -> KResult<ArrayLiteral> {
    let hlo::View::Fft {
        fft_type: kind,
        fft_length: lens,
    } = hlo::View::of(hlo::Opcode::Fft, attrs)
    else {
        return Err(KernelError::malformed(hlo::Opcode::Fft, attrs));
    };
    let rank = x.dims.len();
    if lens.is_empty() || lens.len() > 3 || lens.len() > rank {
        return Err(KernelError::invalid(format!(
            "fft: fft_length must name 1 to 3 dimensions and at most the operand rank {rank} (got {})",
            lens.len()
        )));
    }
    if lens.iter().any(|&l| l < 0) {
        return Err(KernelError::invalid("fft: negative fft_length"));
    }
    if lens.contains(&0) {
        return Err(KernelError::unsupported("fft with a zero fft_length"));
    }
    let lens: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
    let first = rank - lens.len();
    let last = rank - 1;
    let axes: Vec<usize> = (first..rank).collect();
    let in_ty = x.element_type();
    let wide = matches!(in_ty, ElementType::F64 | ElementType::C128);
    // Expected input trailing dims and the output dims/type.
    let mut want_in = lens.clone();
    let mut out_dims = x.dims.clone();
    let out_ty = match kind {
        FftType::Fft | FftType::Ifft => {
            if !in_ty.is_complex() {
                return Err(KernelError::invalid(format!(
                    "fft: {} needs a complex operand, got {in_ty}",
                    kind.name()
                )));
            }
            in_ty
        }
        FftType::Rfft => {
            if !matches!(in_ty, ElementType::F32 | ElementType::F64) {
                return Err(KernelError::invalid(format!(
                    "fft: RFFT needs an f32 or f64 operand, got {in_ty}"
                )));
            }
            out_dims[last] = lens[lens.len() - 1] / 2 + 1;
            if wide {
                ElementType::C128
            } else {
                ElementType::C64
            }
        }
        FftType::Irfft => {
            if !in_ty.is_complex() {
                return Err(KernelError::invalid(format!(
                    "fft: IRFFT needs a complex operand, got {in_ty}"
                )));
            }
            *want_in.last_mut().unwrap() = lens[lens.len() - 1] / 2 + 1;
            out_dims[last] = lens[lens.len() - 1];
            if wide {
                ElementType::F64
            } else {
                ElementType::F32
            }
        }
    };
    if x.dims[first..] != want_in[..] {
        return Err(KernelError::invalid(format!(
            "fft: operand trailing dimensions {:?} do not match fft_length {:?} for {}",
            &x.dims[first..],
            lens,
            kind.name()
        )));
    }
    check_result("fft", out, &out_dims, out_ty)?;

    // Work in c128 throughout.
    let mut data: Vec<Complex64> = match &x.data {
        ArrayData::C64(v) => v
            .iter()
            .map(|c| Complex64::new(c.re as f64, c.im as f64))
            .collect(),
        ArrayData::C128(v) => v.clone(),
        ArrayData::F32(v) => v.iter().map(|&r| Complex64::new(r as f64, 0.0)).collect(),
        ArrayData::F64(v) => v.iter().map(|&r| Complex64::new(r, 0.0)).collect(),
        d => {
            return Err(KernelError::invalid(format!(
                "fft: operand type {}",
                d.element_type()
            )))
        }
    };
    let mut planner = FftPlanner::<f64>::new();
    let result: Vec<Complex64> = match kind {
        FftType::Fft => {
            transform_axes(&mut planner, &mut data, &x.dims, &axes, false);
            data
        }
        FftType::Ifft => {
            transform_axes(&mut planner, &mut data, &x.dims, &axes, true);
            scale(&mut data, lens.iter().product());
            data
        }
        FftType::Rfft => {
            transform_axes(&mut planner, &mut data, &x.dims, &axes, false);
            keep_prefix(&data, &x.dims, out_dims[last])
        }
        FftType::Irfft => {
            let n = out_dims[last];
            // Inverse over the leading transformed axes on the half spectrum, then Hermitian
            // extension and inverse of the last axis.
            transform_axes(
                &mut planner,
                &mut data,
                &x.dims,
                &axes[..axes.len() - 1],
                true,
            );
            let half = x.dims[last];
            let rows = data.len() / half.max(1);
            let mut full = vec![Complex64::new(0.0, 0.0); rows * n];
            for r in 0..rows {
                for k in 0..n {
                    full[r * n + k] = if k < half {
                        data[r * half + k]
                    } else {
                        data[r * half + (n - k)].conj()
                    };
                }
            }
            let fdims: Vec<usize> = out_dims.clone();
            transform_axes(&mut planner, &mut full, &fdims, &[last], true);
            scale(&mut full, lens.iter().product());
            full
        }
    };
    let data = match out_ty {
        ElementType::C64 => ArrayData::C64(
            result
                .iter()
                .map(|c| Complex32::new(c.re as f32, c.im as f32))
                .collect(),
        ),
        ElementType::C128 => ArrayData::C128(result),
        ElementType::F32 => ArrayData::F32(result.iter().map(|c| c.re as f32).collect()),
        _ => ArrayData::F64(result.iter().map(|c| c.re).collect()),
    };
    Ok(ArrayLiteral {
        dims: out_dims,
        data,
    })
}

fn scale(v: &mut [Complex64], n: usize) {
    if n > 0 {
        let s = 1.0 / n as f64;
        v.iter_mut().for_each(|c| *c *= s);
    }
}

/// The first `keep` entries of every line along the last axis.
fn keep_prefix(v: &[Complex64], dims: &[usize], keep: usize) -> Vec<Complex64> {
    let len = *dims.last().unwrap();
    if len == 0 {
        return Vec::new();
    }
    v.chunks(len)
        .flat_map(|line| line[..keep.min(len)].iter().copied())
        .collect()
}

/// In-place unnormalized DFT (or inverse DFT without 1/N) along each of `axes`.
fn transform_axes(
    planner: &mut FftPlanner<f64>,
    data: &mut [Complex64],
    dims: &[usize],
    axes: &[usize],
    inverse: bool,
) {
    if data.is_empty() {
        return;
    }
    for &axis in axes {
        let n = dims[axis];
        if n <= 1 {
            continue;
        }
        let inner: usize = dims[axis + 1..].iter().product();
        let outer: usize = dims[..axis].iter().product();
        let plan = if inverse {
            planner.plan_fft_inverse(n)
        } else {
            planner.plan_fft_forward(n)
        };
        let mut lines = vec![Complex64::new(0.0, 0.0); n * inner];
        for o in 0..outer {
            let block = &mut data[o * n * inner..(o + 1) * n * inner];
            if inner == 1 {
                plan.process(block);
                continue;
            }
            // Gather the `inner` strided lines contiguously, transform, scatter back.
            for i in 0..inner {
                for k in 0..n {
                    lines[i * n + k] = block[k * inner + i];
                }
            }
            plan.process(&mut lines);
            for i in 0..inner {
                for k in 0..n {
                    block[k * inner + i] = lines[i * n + k];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::test_util::{shape, Lcg};
    use std::f64::consts::PI;

    fn attrs(kind: FftType, lens: &[i64]) -> Attrs {
        Attrs {
            fft_type: Some(kind),
            fft_length: Some(lens.to_vec()),
            ..Attrs::default()
        }
    }

    /// Naive multi-dimensional DFT over the trailing `lens.len()` axes (sign −1 forward).
    fn naive_dft(x: &[Complex64], dims: &[usize], nax: usize, sign: f64) -> Vec<Complex64> {
        let rank = dims.len();
        let tdims = &dims[rank - nax..];
        let block: usize = tdims.iter().product();
        let mut out = vec![Complex64::new(0.0, 0.0); x.len()];
        for (b, chunk) in x.chunks(block).enumerate() {
            for kf in 0..block {
                let mut acc = Complex64::new(0.0, 0.0);
                for (nf, &xn) in chunk.iter().enumerate() {
                    let (mut kr, mut nr, mut phase) = (kf, nf, 0.0);
                    for &d in tdims.iter().rev() {
                        phase += (kr % d * (nr % d)) as f64 / d as f64;
                        kr /= d;
                        nr /= d;
                    }
                    acc += xn * Complex64::from_polar(1.0, sign * 2.0 * PI * phase);
                }
                out[b * block + kf] = acc;
            }
        }
        out
    }

    #[test]
    fn fft_and_ifft_match_naive_dft() {
        let mut rng = Lcg::new(3);
        for (dims, nax) in [
            (vec![8], 1),
            (vec![2, 3, 5], 2),
            (vec![2, 3, 4, 2], 3),
            (vec![7], 1),
        ] {
            let n: usize = dims.iter().product();
            let x: Vec<Complex64> = (0..n)
                .map(|_| Complex64::new(rng.f64(), rng.f64()))
                .collect();
            let lens: Vec<i64> = dims[dims.len() - nax..].iter().map(|&d| d as i64).collect();
            let lit = ArrayLiteral {
                dims: dims.clone(),
                data: ArrayData::C128(x.clone()),
            };
            let f = fft(
                &lit,
                &attrs(FftType::Fft, &lens),
                &shape(ElementType::C128, &dims),
            )
            .unwrap();
            let want = naive_dft(&x, &dims, nax, -1.0);
            let ArrayData::C128(got) = &f.data else {
                panic!()
            };
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).norm() < 1e-9, "{g} vs {w}");
            }
            let back = fft(
                &f,
                &attrs(FftType::Ifft, &lens),
                &shape(ElementType::C128, &dims),
            )
            .unwrap();
            let ArrayData::C128(b) = &back.data else {
                panic!()
            };
            for (g, w) in b.iter().zip(&x) {
                assert!((g - w).norm() < 1e-12);
            }
        }
    }

    #[test]
    fn rfft_irfft_round_trip_and_match_dft() {
        let mut rng = Lcg::new(4);
        for (dims, nax) in [
            (vec![2, 8], 1),
            (vec![3, 4, 5], 2),
            (vec![3, 4, 4], 3),
            (vec![1, 7], 1),
        ] {
            let n: usize = dims.iter().product();
            let x: Vec<f32> = rng.f32s(n);
            let lens: Vec<i64> = dims[dims.len() - nax..].iter().map(|&d| d as i64).collect();
            let last = *dims.last().unwrap();
            let mut hdims = dims.clone();
            *hdims.last_mut().unwrap() = last / 2 + 1;
            let lit = ArrayLiteral {
                dims: dims.clone(),
                data: ArrayData::F32(x.clone()),
            };
            let r = fft(
                &lit,
                &attrs(FftType::Rfft, &lens),
                &shape(ElementType::C64, &hdims),
            )
            .unwrap();
            let xc: Vec<Complex64> = x.iter().map(|&v| Complex64::new(v as f64, 0.0)).collect();
            let full = naive_dft(&xc, &dims, nax, -1.0);
            let ArrayData::C64(got) = &r.data else {
                panic!()
            };
            for (i, g) in got.iter().enumerate() {
                let (row, k) = (i / hdims[hdims.len() - 1], i % hdims[hdims.len() - 1]);
                let w = full[row * last + k];
                assert!((g.re as f64 - w.re).abs() < 1e-5 && (g.im as f64 - w.im).abs() < 1e-5);
            }
            let back = fft(
                &r,
                &attrs(FftType::Irfft, &lens),
                &shape(ElementType::F32, &dims),
            )
            .unwrap();
            let ArrayData::F32(b) = &back.data else {
                panic!()
            };
            for (g, w) in b.iter().zip(&x) {
                assert!((g - w).abs() < 1e-5, "{g} vs {w}");
            }
        }
    }

    #[test]
    fn wrong_lengths_are_errors() {
        let lit = ArrayLiteral {
            dims: vec![4],
            data: ArrayData::C64(vec![Complex32::new(0.0, 0.0); 4]),
        };
        let e = fft(
            &lit,
            &attrs(FftType::Fft, &[8]),
            &shape(ElementType::C64, &[4]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("fft_length"), "{e}");
        let e = fft(
            &lit,
            &attrs(FftType::Rfft, &[4]),
            &shape(ElementType::C64, &[3]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("RFFT needs"), "{e}");
    }
}
