//! What the chip-vs-evaluator integration tests share (`mod chip_common;`; each test file
//! uses a part of it).
#![allow(dead_code)]

use compiler::{compile, CompileOptions};
use eval::case::{check_value, Check, Tolerance};
use hlo::Literal;
use sim::{SimOptions, System};
use systole_tests::{random_literal, Rng};

/// `m` compiled for one chip of `tpu-v4` (f32 dots exact: 6 passes; `verify` re-verifies after
/// every pass) and loaded with `args`, ready to run; `text` names the module in panics.
pub fn on_chip(
    m: &hlo::VerifiedModule,
    args: &[Literal],
    verify: bool,
    text: &str,
) -> (compiler::Compiled, System) {
    let arch = arch::ArchConfig::resolve("tpu-v4", &[] as &[&str]).unwrap();
    on_arch(&arch, m, args, verify, text)
}

/// [`on_chip`] for another chip.
pub fn on_arch(
    arch: &arch::ArchConfig,
    m: &hlo::VerifiedModule,
    args: &[Literal],
    verify: bool,
    text: &str,
) -> (compiler::Compiled, System) {
    let opts = CompileOptions {
        f32_dot_passes: 6,
        verify_between_passes: verify,
        ..CompileOptions::default()
    };
    let c = compile(m, arch, &opts).unwrap_or_else(|e| panic!("{}\n{text}", e.render("case")));
    let mut sys = System::new(arch, c.program.clone(), 1, SimOptions::default()).unwrap();
    let mut writes = Vec::new();
    for (p, a) in c.io.params.iter().zip(args) {
        compiler::io::literal_bytes(p, a, &mut writes).unwrap();
    }
    for (addr, b) in writes {
        sys.write_hbm(0, addr, &b).unwrap();
    }
    (c, sys)
}

/// The module on one chip of `tpu-v4` against the evaluator, on `args` (random for the
/// parameters `args` leaves out, drawn from `seed`).
pub fn chip_matches_evaluator(text: &str, args: Vec<Literal>, seed: u64, tol: f64) {
    chip_matches_evaluator_with(text, args, seed, tol, true)
}

/// As [`chip_matches_evaluator`]; `verify` re-verifies the module after every pass (slow for
/// large unrolled expansions).
pub fn chip_matches_evaluator_with(
    text: &str,
    args: Vec<Literal>,
    seed: u64,
    tol: f64,
    verify: bool,
) {
    let arch = arch::ArchConfig::resolve("tpu-v4", &[] as &[&str]).unwrap();
    chip_matches_evaluator_on(&arch, text, args, seed, tol, verify);
}

/// As [`chip_matches_evaluator_with`] on chip `arch`; returns what the compiler made.
pub fn chip_matches_evaluator_on(
    arch: &arch::ArchConfig,
    text: &str,
    args: Vec<Literal>,
    seed: u64,
    tol: f64,
    verify: bool,
) -> compiler::Compiled {
    let (check, t) = if tol == 0.0 {
        (Check::Exact, 0.0)
    } else {
        (Check::Close, tol)
    };
    let tol = Tolerance { rtol: t, atol: t };
    chip_matches_evaluator_within(arch, text, args, seed, check, tol, verify)
}

/// As [`chip_matches_evaluator_on`] with its own check and tolerance.
pub fn chip_matches_evaluator_within(
    arch: &arch::ArchConfig,
    text: &str,
    mut args: Vec<Literal>,
    seed: u64,
    check: Check,
    tol: Tolerance,
    verify: bool,
) -> compiler::Compiled {
    let m = hlo::parse(text).unwrap_or_else(|e| panic!("{}\n{text}", e.render("case", text)));
    let m = hlo::verified(m).unwrap_or_else(|e| panic!("{}\n{text}", e.render("case", text)));
    let mut g = Rng(seed);
    let params = m.entry().program_shape().params;
    for s in &params[args.len()..] {
        args.push(random_literal(s, &mut g).expect("a supported type"));
    }
    let want = eval::evaluate(&m, &args).unwrap_or_else(|e| panic!("evaluator: {e}\n{text}"));
    let (c, mut sys) = on_arch(arch, &m, &args, verify, text);
    sys.run().unwrap_or_else(|e| panic!("{e}\n{text}"));
    let hbm = sys.hbm(0).unwrap();
    let have = compiler::io::read_literal(&c.io.result, &mut |a, n| hbm.read_vec(a, n).ok())
        .expect("the result");
    if let Err(e) = check_value(check, tol, None, &want, &have) {
        panic!("chip differs from the evaluator (seed {seed}): {e}\n{text}");
    }
    c
}
