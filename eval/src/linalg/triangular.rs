//! TriangularSolve (`triangular-solve` opcode), batched over the leading dimensions.
//!
//! Solves `op(a)·x = b` (`left_side=true`, b: `[..., M, K]`) or `x·op(a) = b` (`left_side=false`,
//! b: `[..., K, M]`) with `op(a)` = `a`, `aᵀ` or `aᴴ` (`transpose_a`). Only the triangle named by
//! `lower` is read; with `unit_diagonal` the diagonal is taken as 1 and not read. Method: the
//! effective triangular matrix `S` (= op(a) for the left side, op(a)ᵀ for the right side, since
//! `x·T = b ⇔ Tᵀ·xᵀ = bᵀ`) is formed explicitly, then every right-hand-side vector is solved by
//! forward or back substitution. Division by a zero pivot yields inf/NaN (no error), as in XLA.

use super::cholesky::Field;
use super::convert::{check_result, Domain, Values};
use super::{KResult, KernelError};
use hlo::attrs::{Attrs, TransposeKind};
use hlo::literal::ArrayLiteral;
use hlo::shape::ArrayShape;

/// Solves one batch element in place. `a`: m×m, `b`: rows×cols row-major (m×k or k×m).
fn solve_one<T: Field>(
    a: &[T],
    b: &mut [T],
    m: usize,
    left: bool,
    lower: bool,
    unit: bool,
    tr: TransposeKind,
) {
    // s[i][j] = effective matrix entry; only its triangle is used.
    let read = |i: usize, j: usize| -> T {
        // Entry of tri(a) (zero outside the named triangle).
        let inside = if lower { i >= j } else { i <= j };
        if !inside {
            T::default()
        } else if unit && i == j {
            T::one()
        } else {
            a[i * m + j]
        }
    };
    let op = |i: usize, j: usize| -> T {
        match tr {
            TransposeKind::NoTranspose => read(i, j),
            TransposeKind::Transpose => read(j, i),
            TransposeKind::Adjoint => read(j, i).conj(),
        }
    };
    let mut s = vec![T::default(); m * m];
    for i in 0..m {
        for j in 0..m {
            s[i * m + j] = if left { op(i, j) } else { op(j, i) };
        }
    }
    let transposed = tr != TransposeKind::NoTranspose;
    // S is lower triangular iff exactly one of (upper source, transposed op, right side) flips.
    let s_lower = lower ^ transposed ^ !left;
    let nvec = b.len() / m.max(1);
    // Vector v of length m: left side → column j of b (stride nvec), right side → row j (stride 1).
    let (vstride, vstep) = if left { (nvec, 1) } else { (1, m) };
    for v in 0..nvec {
        let at = |i: usize| v * vstep + i * vstride;
        let order: Box<dyn Iterator<Item = usize>> = if s_lower {
            Box::new(0..m)
        } else {
            Box::new((0..m).rev())
        };
        for i in order {
            let mut acc = b[at(i)];
            let range: Box<dyn Iterator<Item = usize>> = if s_lower {
                Box::new(0..i)
            } else {
                Box::new(i + 1..m)
            };
            for j in range {
                acc = acc.sub(s[i * m + j].mul(b[at(j)]));
            }
            b[at(i)] = if unit { acc } else { acc.div(s[i * m + i]) };
        }
    }
}

fn batched<T: Field>(
    a: &[T],
    mut b: Vec<T>,
    m: usize,
    left: bool,
    lower: bool,
    unit: bool,
    tr: TransposeKind,
) -> Vec<T> {
    if m == 0 || b.is_empty() {
        return b;
    }
    let per_b = b.len() / (a.len() / (m * m));
    for (am, bm) in a.chunks(m * m).zip(b.chunks_mut(per_b)) {
        solve_one(am, bm, m, left, lower, unit, tr);
    }
    b
}

/// Evaluates `triangular-solve(a, b)` into the declared shape.
pub fn triangular_solve(
    a: &ArrayLiteral,
    b: &ArrayLiteral,
    attrs: &Attrs,
    out: &ArrayShape,
) -> KResult<ArrayLiteral> {
    let hlo::View::TriangularSolve(o) = hlo::View::of(hlo::Opcode::TriangularSolve, attrs) else {
        return Err(KernelError::malformed(hlo::Opcode::TriangularSolve, attrs));
    };
    let (ra, rb) = (a.dims.len(), b.dims.len());
    if ra < 2
        || ra != rb
        || a.dims[ra - 1] != a.dims[ra - 2]
        || a.dims[..ra - 2] != b.dims[..rb - 2]
    {
        return Err(KernelError::invalid(format!(
            "triangular-solve: a must be [..., M, M] and b [..., *, *] with the same batch dims, got {:?} and {:?}",
            a.dims, b.dims
        )));
    }
    let m = a.dims[ra - 1];
    let bm = if o.left_side {
        b.dims[rb - 2]
    } else {
        b.dims[rb - 1]
    };
    if bm != m {
        return Err(KernelError::invalid(format!(
            "triangular-solve: b {:?} does not match a {:?} for left_side={}",
            b.dims, a.dims, o.left_side
        )));
    }
    if a.element_type() != b.element_type() {
        return Err(KernelError::invalid(
            "triangular-solve: a and b must have the same element type",
        ));
    }
    check_result("triangular-solve", out, &b.dims, b.element_type())?;
    let domain = Domain::of(a.element_type())?;
    let av = Values::read(&a.data, domain)?;
    let bv = Values::read(&b.data, domain)?;
    let (l, lo, u, t) = (o.left_side, o.lower, o.unit_diagonal, o.transpose_a);
    let res = match (av, bv) {
        (Values::F32(x), Values::F32(y)) => Values::F32(batched(&x, y, m, l, lo, u, t)),
        (Values::F64(x), Values::F64(y)) => Values::F64(batched(&x, y, m, l, lo, u, t)),
        (Values::C64(x), Values::C64(y)) => Values::C64(batched(&x, y, m, l, lo, u, t)),
        (Values::C128(x), Values::C128(y)) => Values::C128(batched(&x, y, m, l, lo, u, t)),
        _ => {
            return Err(KernelError::invalid(
                "triangular-solve needs floating-point or complex operands",
            ))
        }
    };
    Ok(ArrayLiteral {
        dims: b.dims.clone(),
        data: res.write(out.ty)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::test_util::{f64_lit, f64s, shape, Lcg};
    use hlo::attrs::TriangularSolveOptions;
    use hlo::types::ElementType as T;

    fn opts(
        left_side: bool,
        lower: bool,
        unit_diagonal: bool,
        transpose_a: TransposeKind,
    ) -> Attrs {
        Attrs {
            triangular_solve_options: Some(TriangularSolveOptions {
                left_side,
                lower,
                unit_diagonal,
                transpose_a,
            }),
            ..Attrs::default()
        }
    }

    /// op(tri(a)) as a dense matrix, from the definition.
    fn dense_op(a: &[f64], m: usize, lower: bool, unit: bool, tr: TransposeKind) -> Vec<f64> {
        let mut t = vec![0.0; m * m];
        for i in 0..m {
            for j in 0..m {
                let inside = if lower { i >= j } else { i <= j };
                let v = if !inside {
                    0.0
                } else if unit && i == j {
                    1.0
                } else {
                    a[i * m + j]
                };
                match tr {
                    TransposeKind::NoTranspose => t[i * m + j] = v,
                    _ => t[j * m + i] = v,
                }
            }
        }
        t
    }

    #[test]
    fn residuals_vanish_for_every_option() {
        let mut rng = Lcg::new(11);
        let (m, k, batch) = (5, 3, 2);
        for &left in &[true, false] {
            for &lower in &[true, false] {
                for &unit in &[true, false] {
                    for tr in TransposeKind::ALL {
                        let mut a = rng.f64s(batch * m * m);
                        for bi in 0..batch {
                            for i in 0..m {
                                a[bi * m * m + i * m + i] += 4.0; // well conditioned
                            }
                        }
                        let bdims = if left {
                            vec![batch, m, k]
                        } else {
                            vec![batch, k, m]
                        };
                        let b = rng.f64s(batch * m * k);
                        let x = triangular_solve(
                            &f64_lit(&[batch, m, m], a.clone()),
                            &f64_lit(&bdims, b.clone()),
                            &opts(left, lower, unit, tr),
                            &shape(T::F64, &bdims),
                        )
                        .unwrap();
                        let x = f64s(&x);
                        for bi in 0..batch {
                            let t = dense_op(&a[bi * m * m..(bi + 1) * m * m], m, lower, unit, tr);
                            let xb = &x[bi * m * k..(bi + 1) * m * k];
                            let bb = &b[bi * m * k..(bi + 1) * m * k];
                            if left {
                                for i in 0..m {
                                    for j in 0..k {
                                        let s: f64 =
                                            (0..m).map(|p| t[i * m + p] * xb[p * k + j]).sum();
                                        assert!(
                                            (s - bb[i * k + j]).abs() < 1e-10,
                                            "left {lower} {unit} {tr:?}"
                                        );
                                    }
                                }
                            } else {
                                for i in 0..k {
                                    for j in 0..m {
                                        let s: f64 =
                                            (0..m).map(|p| xb[i * m + p] * t[p * m + j]).sum();
                                        assert!(
                                            (s - bb[i * m + j]).abs() < 1e-10,
                                            "right {lower} {unit} {tr:?}"
                                        );
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn shape_mismatch_is_an_error() {
        let a = f64_lit(&[2, 2], vec![1.0; 4]);
        let b = f64_lit(&[3, 2], vec![1.0; 6]);
        let e = triangular_solve(
            &a,
            &b,
            &opts(true, true, false, TransposeKind::NoTranspose),
            &shape(T::F64, &[3, 2]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("does not match"), "{e}");
    }
}
