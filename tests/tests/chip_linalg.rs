//! Large linear algebra on the chip against the evaluator: a 1024×1024 f32 cholesky (the
//! blocked expansion, trailing updates on the MXU) and a 1024×1024 triangular solve with 16
//! right-hand sides; f64 (unrolled on the VPU) at 512; on well-conditioned matrices built on
//! the host.

mod chip_common;

use chip_common::chip_matches_evaluator_with;
use hlo::{ArrayData, Literal};
use systole_tests::Rng;

const N: usize = 1024;

/// `a + aᵀ + 2n·I` (`n×n`) for `a` uniform in [-1, 1): symmetric and strictly diagonally
/// dominant, so positive definite with a condition number near 1.
fn spd_values(n: usize, g: &mut Rng) -> Vec<f64> {
    let a: Vec<f64> = (0..n * n).map(|_| g.uniform(-1.0, 1.0)).collect();
    let mut s = vec![0f64; n * n];
    for i in 0..n {
        for j in 0..n {
            let d = if i == j { 2.0 * n as f64 } else { 0.0 };
            s[i * n + j] = a[i * n + j] + a[j * n + i] + d;
        }
    }
    s
}

fn spd(g: &mut Rng) -> Literal {
    let s = spd_values(N, g).iter().map(|&x| x as f32).collect();
    Literal::array(vec![N, N], ArrayData::F32(s))
}

#[test]
fn cholesky_1024_f32_matches_the_evaluator() {
    let text = format!(
        "HloModule ch\n\nENTRY main {{\n  s = f32[{N},{N}] parameter(0)\n  \
         ROOT l = f32[{N},{N}] cholesky(s), lower=true\n}}\n"
    );
    let s = spd(&mut Rng(7));
    chip_matches_evaluator_with(&text, vec![s], 7, 1e-4, false);
}

#[test]
fn triangular_solve_1024_f32_matches_the_evaluator() {
    let text = format!(
        "HloModule ts\n\nENTRY main {{\n  a = f32[{N},{N}] parameter(0)\n  b = f32[{N},16] parameter(1)\n  \
         ROOT x = f32[{N},16] triangular-solve(a, b), left_side=true, lower=true, \
         transpose_a=NO_TRANSPOSE\n}}\n"
    );
    let a = spd(&mut Rng(8));
    chip_matches_evaluator_with(&text, vec![a], 8, 1e-4, false);
}

#[test]
fn cholesky_and_triangular_solve_512_f64_match_the_evaluator() {
    const M: usize = 512;
    let text = format!(
        "HloModule ch64\n\nENTRY main {{\n  s = f64[{M},{M}] parameter(0)\n  \
         b = f64[{M},8] parameter(1)\n  l = f64[{M},{M}] cholesky(s), lower=true\n  \
         x = f64[{M},8] triangular-solve(l, b), left_side=true, lower=true, \
         transpose_a=NO_TRANSPOSE\n  ROOT t = (f64[{M},{M}], f64[{M},8]) tuple(l, x)\n}}\n"
    );
    let s = Literal::array(vec![M, M], ArrayData::F64(spd_values(M, &mut Rng(9))));
    chip_matches_evaluator_with(&text, vec![s], 9, 1e-10, false);
}
