//! The batched matrix-multiply core shared by dot and convolution.
//!
//! `C[b] = A[b] · B[b]` for row-major `A: [batch, m, k]`, `B: [batch, k, n]`, `C: [batch, m, n]`.
//! f32 and f64 run on `matrixmultiply`'s packed, cache-blocked SIMD kernels; integers (64-bit
//! wrapping) and complex numbers run on a straightforward i-k-j loop.
//!
//! Threads: `matrixmultiply`'s `threading` feature is on; `MATMUL_NUM_THREADS` sets the count
//! (default: physical cores). Determinism: `matrixmultiply` keeps its k-blocking loop sequential
//! and splits only the m/n tiles among threads, so each output element is accumulated in the
//! same order whatever the thread count (checked: identical bits for 1, 2 and 4 threads on
//! 1024³, 777×1500×333 and 2000×64×900 products). Its SIMD kernel is chosen at run time from
//! the CPU's features, so machines with and without FMA may differ in the last ulp.

use super::convert::Values;
use num_complex::{Complex32, Complex64};

/// Element types the GEMM core multiplies.
pub trait GemmElem: Copy + Default + Send + Sync {
    /// `C[b] = A[b] · B[b]`, row-major `[batch, m, k] × [batch, k, n] → [batch, m, n]`.
    fn gemm(a: &[Self], b: &[Self], batch: usize, m: usize, k: usize, n: usize) -> Vec<Self>;
}

impl GemmElem for f32 {
    fn gemm(a: &[f32], b: &[f32], batch: usize, m: usize, k: usize, n: usize) -> Vec<f32> {
        gemm_f32(a, b, batch, m, k, n)
    }
}
impl GemmElem for f64 {
    fn gemm(a: &[f64], b: &[f64], batch: usize, m: usize, k: usize, n: usize) -> Vec<f64> {
        gemm_f64(a, b, batch, m, k, n)
    }
}
impl GemmElem for i64 {
    fn gemm(a: &[i64], b: &[i64], batch: usize, m: usize, k: usize, n: usize) -> Vec<i64> {
        gemm_loop(a, b, batch, m, k, n, |c, x, y| {
            c.wrapping_add(x.wrapping_mul(y))
        })
    }
}
impl GemmElem for Complex32 {
    fn gemm(a: &[Self], b: &[Self], batch: usize, m: usize, k: usize, n: usize) -> Vec<Self> {
        gemm_loop(a, b, batch, m, k, n, |c, x, y| c + x * y)
    }
}
impl GemmElem for Complex64 {
    fn gemm(a: &[Self], b: &[Self], batch: usize, m: usize, k: usize, n: usize) -> Vec<Self> {
        gemm_loop(a, b, batch, m, k, n, |c, x, y| c + x * y)
    }
}

/// Batched GEMM in whatever domain `a` and `b` share. Panics only on internal misuse
/// (different domains or buffer sizes that disagree with the dimensions).
pub fn batched_gemm(a: &Values, b: &Values, batch: usize, m: usize, k: usize, n: usize) -> Values {
    match (a, b) {
        (Values::F32(a), Values::F32(b)) => Values::F32(f32::gemm(a, b, batch, m, k, n)),
        (Values::F64(a), Values::F64(b)) => Values::F64(f64::gemm(a, b, batch, m, k, n)),
        (Values::I64(a), Values::I64(b)) => Values::I64(i64::gemm(a, b, batch, m, k, n)),
        (Values::C64(a), Values::C64(b)) => Values::C64(Complex32::gemm(a, b, batch, m, k, n)),
        (Values::C128(a), Values::C128(b)) => Values::C128(Complex64::gemm(a, b, batch, m, k, n)),
        _ => unreachable!("batched_gemm: operands in different domains"),
    }
}

fn check_sizes<T>(a: &[T], b: &[T], batch: usize, m: usize, k: usize, n: usize) {
    assert_eq!(a.len(), batch * m * k, "gemm: lhs size");
    assert_eq!(b.len(), batch * k * n, "gemm: rhs size");
}

/// A batched row-major GEMM on one of `matrixmultiply`'s kernels (`sgemm`, `dgemm`).
macro_rules! gemm_on {
    ($(#[$doc:meta])* $name:ident, $t:ty, $kernel:path) => {
        $(#[$doc])*
        pub fn $name(a: &[$t], b: &[$t], batch: usize, m: usize, k: usize, n: usize) -> Vec<$t> {
            check_sizes(a, b, batch, m, k, n);
            let mut c = vec![0.0; batch * m * n];
            if m == 0 || n == 0 || k == 0 {
                return c;
            }
            for bi in 0..batch {
                let (ab, bb) = (
                    &a[bi * m * k..(bi + 1) * m * k],
                    &b[bi * k * n..(bi + 1) * k * n],
                );
                let cb = &mut c[bi * m * n..(bi + 1) * m * n];
                // SAFETY: the three slices hold exactly m*k, k*n and m*n elements laid out
                // row-major with the strides given; the kernel reads/writes only inside those
                // extents.
                unsafe {
                    $kernel(
                        m,
                        k,
                        n,
                        1.0,
                        ab.as_ptr(),
                        k as isize,
                        1,
                        bb.as_ptr(),
                        n as isize,
                        1,
                        0.0,
                        cb.as_mut_ptr(),
                        n as isize,
                        1,
                    );
                }
            }
            c
        }
    };
}

gemm_on!(
    /// f32 GEMM on `matrixmultiply::sgemm`.
    gemm_f32,
    f32,
    matrixmultiply::sgemm
);
gemm_on!(
    /// f64 GEMM on `matrixmultiply::dgemm`.
    gemm_f64,
    f64,
    matrixmultiply::dgemm
);

/// Plain i-k-j GEMM with a caller-supplied multiply-accumulate.
fn gemm_loop<T: Copy + Default>(
    a: &[T],
    b: &[T],
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
    mac: impl Fn(T, T, T) -> T,
) -> Vec<T> {
    check_sizes(a, b, batch, m, k, n);
    let mut c = vec![T::default(); batch * m * n];
    for bi in 0..batch {
        for i in 0..m {
            let crow = &mut c[(bi * m + i) * n..(bi * m + i + 1) * n];
            for p in 0..k {
                let x = a[(bi * m + i) * k + p];
                let brow = &b[(bi * k + p) * n..(bi * k + p + 1) * n];
                for (cv, &bv) in crow.iter_mut().zip(brow) {
                    *cv = mac(*cv, x, bv);
                }
            }
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::test_util::Lcg;

    fn naive(a: &[f64], b: &[f64], batch: usize, m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; batch * m * n];
        for bi in 0..batch {
            for i in 0..m {
                for j in 0..n {
                    c[(bi * m + i) * n + j] = (0..k)
                        .map(|p| a[(bi * m + i) * k + p] * b[(bi * k + p) * n + j])
                        .sum();
                }
            }
        }
        c
    }

    #[test]
    fn f32_and_f64_match_naive() {
        let mut rng = Lcg::new(5);
        for &(batch, m, k, n) in &[
            (1, 1, 1, 1),
            (2, 3, 5, 7),
            (1, 17, 33, 9),
            (3, 0, 4, 2),
            (1, 4, 0, 3),
        ] {
            let a = rng.f64s(batch * m * k);
            let b = rng.f64s(batch * k * n);
            let want = naive(&a, &b, batch, m, k, n);
            let got64 = gemm_f64(&a, &b, batch, m, k, n);
            let a32: Vec<f32> = a.iter().map(|&x| x as f32).collect();
            let b32: Vec<f32> = b.iter().map(|&x| x as f32).collect();
            let got32 = gemm_f32(&a32, &b32, batch, m, k, n);
            for i in 0..want.len() {
                assert!((want[i] - got64[i]).abs() < 1e-12);
                assert!((want[i] - got32[i] as f64).abs() < 1e-4 * (k as f64 + 1.0));
            }
        }
    }

    #[test]
    fn integer_gemm_wraps() {
        let a = Values::I64(vec![i32::MAX as i64, 2]);
        let b = Values::I64(vec![2, 3]);
        // [1x2]·[2x1] = 2*MAX + 6
        assert_eq!(
            batched_gemm(&a, &b, 1, 1, 2, 1),
            Values::I64(vec![2 * i32::MAX as i64 + 6])
        );
    }
}
