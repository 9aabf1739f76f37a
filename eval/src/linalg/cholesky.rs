//! Cholesky (`cholesky` opcode), batched over the leading dimensions.
//!
//! `lower=true`: `a = L·Lᴴ`, reading only the lower triangle of `a`; `lower=false`: `a = Uᴴ·U`,
//! reading only the upper triangle. This follows XLA's CholeskyExpander exactly in what is
//! observable: the upper form is computed as the transpose of the lower factor of `aᵀ`; the
//! triangle the spec calls implementation-defined is written as zeros; a matrix whose pivot
//! square root is NaN (not positive definite, or NaN input) becomes all-NaN (only that
//! matrix of the batch); complex input uses the real part of each pivot (Hermitian input).
//! f16/bf16/f32 are computed in f32 (XLA: f32 arithmetic), f64 in f64.

use super::convert::{check_result, Domain, Values};
use super::{KResult, KernelError};
use hlo::attrs::Attrs;
use hlo::literal::ArrayLiteral;
use hlo::shape::ArrayShape;
use num_complex::{Complex32, Complex64};

/// The scalar operations a factorization needs.
pub(crate) trait Field: Copy + Default + PartialEq {
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn conj(self) -> Self;
    /// sqrt of the real part, as a field element (imaginary part 0).
    fn sqrt_re(self) -> Self;
    fn is_nan(self) -> bool;
    fn nan() -> Self;
    fn one() -> Self;
}

macro_rules! real_field {
    ($t:ty) => {
        impl Field for $t {
            fn sub(self, o: Self) -> Self {
                self - o
            }
            fn mul(self, o: Self) -> Self {
                self * o
            }
            fn div(self, o: Self) -> Self {
                self / o
            }
            fn conj(self) -> Self {
                self
            }
            fn sqrt_re(self) -> Self {
                self.sqrt()
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn nan() -> Self {
                <$t>::NAN
            }
            fn one() -> Self {
                1.0
            }
        }
    };
}
macro_rules! complex_field {
    ($t:ty, $r:ty) => {
        impl Field for $t {
            fn sub(self, o: Self) -> Self {
                self - o
            }
            fn mul(self, o: Self) -> Self {
                self * o
            }
            fn div(self, o: Self) -> Self {
                self / o
            }
            fn conj(self) -> Self {
                <$t>::conj(&self)
            }
            fn sqrt_re(self) -> Self {
                <$t>::new(self.re.sqrt(), 0.0)
            }
            fn is_nan(self) -> bool {
                self.re.is_nan() || self.im.is_nan()
            }
            fn nan() -> Self {
                <$t>::new(<$r>::NAN, <$r>::NAN)
            }
            fn one() -> Self {
                <$t>::new(1.0, 0.0)
            }
        }
    };
}
real_field!(f32);
real_field!(f64);
complex_field!(Complex32, f32);
complex_field!(Complex64, f64);

/// Lower Cholesky factor of the `n×n` matrix `a` (row-major), reading only its lower triangle.
/// Returns the factor with a zero strict upper triangle, or all NaN if a pivot's square root
/// is NaN.
fn factor_lower<T: Field>(a: &[T], n: usize) -> Vec<T> {
    let mut l = vec![T::default(); n * n];
    for j in 0..n {
        // Pivot: a[j][j] − Σ_k l[j][k]·conj(l[j][k]).
        let mut d = a[j * n + j];
        for k in 0..j {
            d = d.sub(l[j * n + k].mul(l[j * n + k].conj()));
        }
        let piv = d.sqrt_re();
        if piv.is_nan() {
            return vec![T::nan(); n * n];
        }
        l[j * n + j] = piv;
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s = s.sub(l[i * n + k].mul(l[j * n + k].conj()));
            }
            l[i * n + j] = s.div(piv);
        }
    }
    l
}

fn transpose<T: Copy>(a: &[T], n: usize) -> Vec<T> {
    let mut t = Vec::with_capacity(n * n);
    for j in 0..n {
        for i in 0..n {
            t.push(a[i * n + j]);
        }
    }
    t
}

fn batched<T: Field>(a: &[T], n: usize, lower: bool) -> Vec<T> {
    let mut out = Vec::with_capacity(a.len());
    if n == 0 {
        return out;
    }
    for m in a.chunks(n * n) {
        if lower {
            out.extend(factor_lower(m, n));
        } else {
            out.extend(transpose(&factor_lower(&transpose(m, n), n), n));
        }
    }
    out
}

/// Evaluates `cholesky(a)` into the declared shape.
pub fn cholesky(a: &ArrayLiteral, attrs: &Attrs, out: &ArrayShape) -> KResult<ArrayLiteral> {
    let r = a.dims.len();
    if r < 2 || a.dims[r - 1] != a.dims[r - 2] {
        return Err(KernelError::invalid(format!(
            "cholesky: operand must be square matrices [..., n, n], got {:?}",
            a.dims
        )));
    }
    check_result("cholesky", out, &a.dims, a.element_type())?;
    let n = a.dims[r - 1];
    let hlo::View::Cholesky { lower } = hlo::View::of(hlo::Opcode::Cholesky, attrs) else {
        unreachable!("every cholesky has a view")
    };
    let v = Values::read(&a.data, Domain::of(a.element_type())?)?;
    let res = match v {
        Values::F32(x) => Values::F32(batched(&x, n, lower)),
        Values::F64(x) => Values::F64(batched(&x, n, lower)),
        Values::C64(x) => Values::C64(batched(&x, n, lower)),
        Values::C128(x) => Values::C128(batched(&x, n, lower)),
        Values::I64(_) => {
            return Err(KernelError::invalid(
                "cholesky needs a floating-point or complex operand",
            ))
        }
    };
    Ok(ArrayLiteral {
        dims: a.dims.clone(),
        data: res.write(out.ty)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::test_util::{f64_lit, f64s, shape, Lcg};
    use hlo::literal::ArrayData;
    use hlo::types::ElementType as T;

    /// A random SPD matrix B·Bᵀ + n·I with garbage in the strict upper triangle.
    fn spd(rng: &mut Lcg, n: usize) -> (Vec<f64>, Vec<f64>) {
        let b = rng.f64s(n * n);
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                a[i * n + j] = (0..n).map(|k| b[i * n + k] * b[j * n + k]).sum::<f64>()
                    + if i == j { n as f64 } else { 0.0 };
            }
        }
        let mut garbage = a.clone();
        for i in 0..n {
            for j in i + 1..n {
                garbage[i * n + j] = 1e6;
            }
        }
        (a, garbage)
    }

    #[test]
    fn l_times_lt_is_a_and_other_triangle_is_ignored() {
        let mut rng = Lcg::new(9);
        for n in [1, 2, 5, 9] {
            let (a, g) = spd(&mut rng, n);
            let at = Attrs {
                lower: Some(true),
                ..Attrs::default()
            };
            let l = cholesky(&f64_lit(&[1, n, n], g), &at, &shape(T::F64, &[1, n, n])).unwrap();
            let l = f64s(&l);
            for i in 0..n {
                for j in 0..n {
                    let s: f64 = (0..n).map(|k| l[i * n + k] * l[j * n + k]).sum();
                    assert!((s - a[i * n + j]).abs() < 1e-9);
                    if j > i {
                        assert_eq!(l[i * n + j], 0.0);
                    }
                }
            }
            // The upper form reads only the upper triangle.
            let up = cholesky(
                &f64_lit(&[n, n], spd_garbage_upper(&a, n)),
                &Attrs {
                    lower: Some(false),
                    ..Attrs::default()
                },
                &shape(T::F64, &[n, n]),
            )
            .unwrap();
            let u = f64s(&up);
            for i in 0..n {
                for j in 0..n {
                    let s: f64 = (0..n).map(|k| u[k * n + i] * u[k * n + j]).sum();
                    assert!((s - a[i * n + j]).abs() < 1e-9);
                }
            }
        }
    }

    fn spd_garbage_upper(a: &[f64], n: usize) -> Vec<f64> {
        let mut g = a.to_vec();
        for i in 0..n {
            for j in 0..i {
                g[i * n + j] = -7e5;
            }
        }
        g
    }

    #[test]
    fn non_positive_definite_matrix_becomes_nan_alone() {
        // Batch of two: the first is SPD, the second is not.
        let a = f64_lit(&[2, 2, 2], vec![4.0, 0.0, 2.0, 5.0, 1.0, 0.0, 3.0, 1.0]);
        let l = cholesky(
            &a,
            &Attrs {
                lower: Some(true),
                ..Attrs::default()
            },
            &shape(T::F64, &[2, 2, 2]),
        )
        .unwrap();
        let v = f64s(&l);
        assert_eq!(&v[..4], &[2.0, 0.0, 1.0, 2.0]);
        assert!(v[4..].iter().all(|x| x.is_nan()));
    }

    #[test]
    fn complex_hermitian() {
        // A = [[4, 2-2i],[2+2i, 6]] = L·Lᴴ with L = [[2,0],[1+i, 2]].
        let c = |re, im| Complex64::new(re, im);
        let a = ArrayLiteral {
            dims: vec![2, 2],
            data: ArrayData::C128(vec![c(4., 0.), c(2., -2.), c(2., 2.), c(6., 0.)]),
        };
        let l = cholesky(
            &a,
            &Attrs {
                lower: Some(true),
                ..Attrs::default()
            },
            &shape(T::C128, &[2, 2]),
        )
        .unwrap();
        let ArrayData::C128(v) = &l.data else {
            panic!()
        };
        let want = [c(2., 0.), c(0., 0.), c(1., 1.), c(2., 0.)];
        for (g, w) in v.iter().zip(&want) {
            assert!((g - w).norm() < 1e-12, "{g} vs {w}");
        }
    }
}
