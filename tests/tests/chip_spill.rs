//! Spilling: modules whose live values do not fit VMEM run on chip (values move to HBM and
//! back) and give the evaluator's results.
//!
//! The chip is `mini` with VMEM shrunk (`vmem.bytes`) to a few values' worth, so small
//! modules spill as much as large models do on the real 16 MiB.

mod chip_common;

use chip_common::{chip_matches_evaluator_on, chip_matches_evaluator_within};
use eval::case::{Check, Tolerance};

/// bf16 activations: an accumulation order that rounds a hidden value to the neighbouring
/// bf16 moves an output (magnitude tens) by up to about one.
const BF16_HIDDEN: Tolerance = Tolerance {
    rtol: 0.02,
    atol: 1.5,
};
use proptest::prelude::*;

/// The `mini` chip with `bytes` of VMEM.
fn chip(bytes: u64) -> arch::ArchConfig {
    arch::ArchConfig::resolve("mini", &[format!("vmem.bytes={bytes}")]).unwrap()
}

/// Element-wise ops the generator draws (each reads one or two values and makes one).
const UNARY: [&str; 4] = ["tanh", "negate", "abs", "exponential"];
const BINARY: [&str; 4] = ["add", "multiply", "maximum", "subtract"];

/// A random straight-line module over `f32[r,c]` values: `params` parameters, then `steps`
/// instructions that read values drawn from everything made so far (so many stay live), some
/// through reshape aliases, tuples, and a while loop; the root is a tuple of the parameters and
/// a few values.
fn module(r: usize, c: usize, params: usize, picks: &[(u8, usize, usize)]) -> String {
    let t = format!("f32[{r},{c}]");
    let mut s = format!(
        "HloModule spill\n\ncond {{\n  cp = (s32[], {t}) parameter(0)\n  ci = s32[] \
         get-tuple-element(cp), index=0\n  cn = s32[] constant(3)\n  ROOT lt = pred[] \
         compare(ci, cn), direction=LT\n}}\n\nbody {{\n  bp = (s32[], {t}) parameter(0)\n  \
         bi = s32[] get-tuple-element(bp), index=0\n  bx = {t} get-tuple-element(bp), \
         index=1\n  one = s32[] constant(1)\n  bj = s32[] add(bi, one)\n  by = {t} tanh(bx)\n  \
         ROOT bq = (s32[], {t}) tuple(bj, by)\n}}\n\nENTRY e {{\n"
    );
    let mut names: Vec<String> = Vec::new();
    for k in 0..params {
        s += &format!("  p{k} = {t} parameter({k})\n");
        names.push(format!("p{k}"));
    }
    for (k, &(op, a, b)) in picks.iter().enumerate() {
        let x = names[a % names.len()].clone();
        let y = names[b % names.len()].clone();
        let v = format!("v{k}");
        match op % 8 {
            0 | 1 => s += &format!("  {v} = {t} {}({x})\n", UNARY[b % UNARY.len()]),
            2..=4 => s += &format!("  {v} = {t} {}({x}, {y})\n", BINARY[a % BINARY.len()]),
            5 => {
                // Through a reshape alias and back.
                s += &format!("  {v}f = f32[{}] reshape({x})\n", r * c);
                s += &format!("  {v}n = f32[{}] negate({v}f)\n", r * c);
                s += &format!("  {v} = {t} reshape({v}n)\n");
            }
            6 => {
                // Through a tuple (an alias of both) and one of its elements.
                s += &format!("  {v}t = ({t}, {t}) tuple({x}, {y})\n");
                s += &format!("  {v}e = {t} get-tuple-element({v}t), index=1\n");
                s += &format!("  {v} = {t} add({v}e, {x})\n");
            }
            _ => {
                // A while loop on one value (no spilling inside; its operands come back).
                s += &format!("  {v}z = s32[] constant(0)\n");
                s += &format!("  {v}i = (s32[], {t}) tuple({v}z, {x})\n");
                s += &format!("  {v}w = (s32[], {t}) while({v}i), condition=cond, body=body\n");
                s += &format!("  {v} = {t} get-tuple-element({v}w), index=1\n");
            }
        }
        names.push(v);
    }
    // The root: every parameter, the last value and a few others (all live to the end).
    let n = names.len();
    let mut root = vec![names[n - 1].clone()];
    for k in (0..params).chain([n / 3, n / 2]) {
        if !root.contains(&names[k]) {
            root.push(names[k].clone());
        }
    }
    let tys = vec![t.clone(); root.len()].join(", ");
    s += &format!("  ROOT out = ({tys}) tuple({})\n}}\n", root.join(", "));
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random modules on a VMEM of 6 to 9 values: every one spills (checked) and matches.
    #[test]
    fn random_modules_larger_than_vmem_spill_and_match_the_evaluator(
        r in 4usize..24, c in 8usize..40, params in 2usize..12, fit in 6u64..10,
        picks in proptest::collection::vec((any::<u8>(), any::<usize>(), any::<usize>()), 6..18),
        seed in any::<u64>(),
    ) {
        let text = module(r, c, params, &picks);
        let bytes = ((r * c * 4) as u64).div_ceil(64) * 64;
        let compiled = chip_matches_evaluator_on(&chip(fit * bytes), &text, vec![], seed, 1e-5, false);
        // The parameters are live to the end; with the first value they cannot all fit.
        if params as u64 >= fit {
            prop_assert!(compiled.stats.spill.spills > 0, "no spill:\n{text}");
        }
    }
}

/// Five parameters of 4 MiB on the real 16 MiB VMEM of `tpu-v4`, all live until the end:
/// the parameters that do not fit start in HBM, results that are only returned go to HBM
/// early, and everything matches.
#[test]
fn five_4_mib_parameters_live_together_on_a_16_mib_vmem() {
    let text = "HloModule live\n\nENTRY e {\n  a = f32[1024,1024] parameter(0)\n  b = \
                f32[1024,1024] parameter(1)\n  c = f32[1024,1024] parameter(2)\n  d = \
                f32[1024,1024] parameter(3)\n  x = f32[1024,1024] parameter(4)\n  ta = \
                f32[1024,1024] tanh(a)\n  tb = f32[1024,1024] tanh(b)\n  s1 = f32[1024,1024] \
                add(ta, tb)\n  s2 = f32[1024,1024] add(s1, c)\n  s3 = f32[1024,1024] \
                multiply(s2, d)\n  s4 = f32[1024,1024] add(s3, x)\n  ROOT r = \
                (f32[1024,1024], f32[1024,1024], f32[1024,1024], f32[1024,1024]) tuple(s4, ta, \
                tb, a)\n}\n";
    let v4 = arch::ArchConfig::preset("tpu-v4").unwrap();
    let c = chip_matches_evaluator_on(&v4, text, vec![], 7, 1e-5, false);
    assert!(c.stats.spill.spills > 0, "{:?}", c.stats.spill);
}

/// A random module over `f32[r,c]` values each larger than a quarter of VMEM: element-wise
/// ops (streamed from HBM to HBM, chains fused), broadcasts of a scalar, a row and a column
/// (computed chunk by chunk), compare and select, and reshapes of streamed values.
fn big_module(r: usize, c: usize, params: usize, picks: &[(u8, usize, usize)]) -> String {
    let t = format!("f32[{r},{c}]");
    let mut s = format!(
        "HloModule streamed\n\nENTRY e {{\n  row = f32[{c}] parameter({params})\n  col = \
         f32[{r}] parameter({})\n  half = f32[] constant(0.5)\n",
        params + 1
    );
    let mut names: Vec<String> = Vec::new();
    for k in 0..params {
        s += &format!("  p{k} = {t} parameter({k})\n");
        names.push(format!("p{k}"));
    }
    for (k, &(op, a, b)) in picks.iter().enumerate() {
        let x = names[a % names.len()].clone();
        let y = names[b % names.len()].clone();
        let v = format!("v{k}");
        match op % 8 {
            0 => s += &format!("  {v} = {t} {}({x})\n", UNARY[b % UNARY.len()]),
            1 | 2 => s += &format!("  {v} = {t} {}({x}, {y})\n", BINARY[a % BINARY.len()]),
            3 => {
                s += &format!("  {v}b = {t} broadcast(half), dimensions={{}}\n");
                s += &format!("  {v} = {t} multiply({x}, {v}b)\n");
            }
            4 => {
                s += &format!("  {v}b = {t} broadcast(row), dimensions={{1}}\n");
                s += &format!("  {v} = {t} add({v}b, {x})\n");
            }
            5 => {
                s += &format!("  {v}b = {t} broadcast(col), dimensions={{0}}\n");
                s += &format!("  {v} = {t} subtract({x}, {v}b)\n");
            }
            6 => {
                s += &format!("  {v}p = pred[{r},{c}] compare({x}, {y}), direction=GT\n");
                s += &format!("  {v} = {t} select({v}p, {x}, {y})\n");
            }
            _ => {
                s += &format!("  {v}f = f32[{}] reshape({x})\n", r * c);
                s += &format!("  {v}n = f32[{}] negate({v}f)\n", r * c);
                s += &format!("  {v} = {t} reshape({v}n)\n");
            }
        }
        names.push(v);
    }
    let n = names.len();
    let mut root = vec![names[n - 1].clone()];
    for k in [0, n / 2] {
        if !root.contains(&names[k]) {
            root.push(names[k].clone());
        }
    }
    let tys = vec![t.clone(); root.len()].join(", ");
    s += &format!("  ROOT out = ({tys}) tuple({})\n}}\n", root.join(", "));
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Values larger than a quarter of VMEM stream chunk by chunk (checked) and match.
    #[test]
    fn random_element_wise_modules_of_values_larger_than_vmem_stream_and_match(
        r in 33usize..100, c in 8usize..40, params in 1usize..4,
        picks in proptest::collection::vec((any::<u8>(), any::<usize>(), any::<usize>()), 3..12),
        seed in any::<u64>(),
    ) {
        let text = big_module(r, c, params, &picks);
        let vmem = (512 * c as u64).div_ceil(64) * 64;
        let compiled = chip_matches_evaluator_on(&chip(vmem), &text, vec![], seed, 1e-5, false);
        prop_assert!(compiled.stats.ew_streams > 0, "nothing streamed:\n{text}");
    }
}

/// `tanh(2x + b)` of a 64 MiB `f32[4096,4096]` on `tpu-v4` (16 MiB of VMEM): one streamed
/// region (the multiply, the add and the tanh fused; the scalar and row broadcasts made per
/// chunk) that matches the evaluator.
#[test]
fn a_64_mib_element_wise_chain_streams_through_a_16_mib_vmem() {
    let text = "HloModule big\n\nENTRY e {\n  x = f32[4096,4096] parameter(0)\n  b = \
                f32[4096] parameter(1)\n  two = f32[] constant(2)\n  t2 = f32[4096,4096] \
                broadcast(two), dimensions={}\n  m = f32[4096,4096] multiply(x, t2)\n  bb = \
                f32[4096,4096] broadcast(b), dimensions={1}\n  a = f32[4096,4096] add(m, bb)\n  \
                ROOT t = f32[4096,4096] tanh(a)\n}\n";
    let v4 = arch::ArchConfig::preset("tpu-v4").unwrap();
    let c = chip_matches_evaluator_on(&v4, text, vec![], 3, 1e-5, false);
    assert_eq!(c.stats.ew_streams, 1, "one fused region");
    assert!(c.stats.vmem_peak < v4.vmem.bytes);
}

/// A value larger than VMEM read by an op that does not stream (a reverse) is refused with
/// the buffer's size and the instruction's place, not a wrong answer.
#[test]
fn a_value_larger_than_vmem_that_cannot_stream_is_refused_with_its_size() {
    let text = "HloModule big\n\nENTRY e {\n  a = f32[64,64] parameter(0)\n  t = f32[64,64] \
                tanh(a)\n  ROOT p = f32[64,64] reverse(t), dimensions={0}\n}\n";
    let m = hlo::verified(hlo::parse(text).unwrap()).unwrap();
    let Err(err) = compiler::compile(&m, &chip(8192), &compiler::CompileOptions::default()) else {
        panic!("16 KiB values reversed on an 8 KiB VMEM");
    };
    let msg = err.render("big.hlo");
    assert!(msg.contains("16384-byte VMEM buffer does not fit"), "{msg}");
    assert!(msg.starts_with("big.hlo:6:"), "{msg}");
}

/// An MLP whose hidden activations (`f32[256,1024]`, 1 MiB) are larger than a quarter of a
/// 2 MiB VMEM: the first dot streams its result to HBM where it stands (its reader is not the
/// module's result), bias and ReLU and the bf16 convert stream as one region, and the second
/// dot streams from that HBM value. Bit-identical to the same module on the full 16 MiB (all
/// in VMEM), and within bf16 rounding of the evaluator ([`BF16_HIDDEN`]).
#[test]
fn an_mlp_with_hidden_activations_larger_than_vmem_streams_dot_to_dot() {
    let text = "HloModule mlp\n\nENTRY e {\n  x = bf16[256,512] parameter(0)\n  w1 = \
                bf16[512,1024] parameter(1)\n  b1 = f32[1024] parameter(2)\n  w2 = \
                bf16[1024,512] parameter(3)\n  h = f32[256,1024] dot(x, w1), \
                lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  bb = f32[256,1024] \
                broadcast(b1), dimensions={1}\n  hb = f32[256,1024] add(h, bb)\n  z = f32[] \
                constant(0)\n  zb = f32[256,1024] broadcast(z), dimensions={}\n  r = \
                f32[256,1024] maximum(hb, zb)\n  rb = bf16[256,1024] convert(r)\n  ROOT o = \
                f32[256,512] dot(rb, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
    let m = hlo::verified(hlo::parse(text).unwrap()).unwrap();
    let args = random_args(&m, 11);
    let small = arch::ArchConfig::resolve("tpu-v4", &["vmem.bytes=2097152"]).unwrap();
    let c = chip_matches_evaluator_within(
        &small,
        text,
        args.clone(),
        11,
        Check::Close,
        BF16_HIDDEN,
        false,
    );
    assert_eq!(c.stats.late_streams, 2, "both dots stream where they stand");
    assert_eq!(
        c.stats.ew_streams, 1,
        "bias, relu and convert in one region"
    );
    let full = arch::ArchConfig::preset("tpu-v4").unwrap();
    assert_eq!(
        result_on(&small, &m, &args, text),
        result_on(&full, &m, &args, text),
        "streamed and VMEM-resident results differ"
    );
}

/// The result of `m` on chip `a` with `args`.
fn result_on(
    a: &arch::ArchConfig,
    m: &hlo::VerifiedModule,
    args: &[hlo::Literal],
    text: &str,
) -> hlo::Literal {
    let (c, mut sys) = chip_common::on_arch(a, m, args, false, text);
    sys.run().unwrap();
    let hbm = sys.hbm(0).unwrap();
    compiler::io::read_literal(&c.io.result, &mut |a, n| hbm.read_vec(a, n).ok()).unwrap()
}

/// Random arguments for `m`'s parameters from `seed`.
fn random_args(m: &hlo::VerifiedModule, seed: u64) -> Vec<hlo::Literal> {
    let mut g = systole_tests::Rng(seed);
    m.entry()
        .program_shape()
        .params
        .iter()
        .map(|s| systole_tests::random_literal(s, &mut g).unwrap())
        .collect()
}

/// A bf16 MLP block exported from JAX (`tests/models/export_large.py`), pre- and
/// post-optimization HLO, on a 2 MiB VMEM where its activations do not fit: it streams (the
/// post-optimization dots read the bf16 parameters behind XLA:CPU's f32 converts), matches the
/// evaluator within bf16 rounding, and is bit-identical to the run on the full 16 MiB.
#[test]
fn a_jax_bf16_mlp_larger_than_vmem_runs_pre_and_post_optimization() {
    for kind in ["pre", "opt"] {
        let path = format!(
            "{}/models/mlp_bf16_large_{kind}/module.hlo",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let m = hlo::verified(hlo::parse(&text).unwrap()).unwrap();
        let args = random_args(&m, 1);
        let small = arch::ArchConfig::resolve("tpu-v4", &["vmem.bytes=2097152"]).unwrap();
        let c = chip_matches_evaluator_within(
            &small,
            &text,
            args.clone(),
            1,
            Check::Close,
            BF16_HIDDEN,
            false,
        );
        assert!(
            c.stats.late_streams + c.stats.ew_streams > 0,
            "{kind}: nothing streamed"
        );
        let full = arch::ArchConfig::preset("tpu-v4").unwrap();
        assert_eq!(
            result_on(&small, &m, &args, &text),
            result_on(&full, &m, &args, &text),
            "{kind}: streamed and VMEM-resident results differ"
        );
    }
}

/// An int8 dot whose `s32[512,1024]` result (2 MiB) is larger than VMEM allows to keep, read
/// by an element-wise op and returned too (so not a streamed dot with an epilogue): streamed
/// on core 0 where it stands, bit-exact.
#[test]
fn an_int8_dot_with_a_result_larger_than_vmem_streams_where_it_stands_bit_exact() {
    let text = "HloModule q\n\nENTRY e {\n  x = s8[512,256] parameter(0)\n  w = s8[256,1024] \
                parameter(1)\n  h = s32[512,1024] dot(x, w), lhs_contracting_dims={1}, \
                rhs_contracting_dims={0}\n  n = s32[512,1024] negate(h)\n  ROOT t = \
                (s32[512,1024], s32[512,1024]) tuple(n, h)\n}\n";
    let arch = arch::ArchConfig::resolve("tpu-v4", &["vmem.bytes=2097152"]).unwrap();
    let c = chip_matches_evaluator_on(&arch, text, vec![], 5, 0.0, false);
    assert_eq!(c.stats.late_streams, 1);
}

/// An int8 dot with a 5 MiB result (more than a quarter of `tpu-v4`'s VMEM) read by another op
/// streams where it stands on both cores: core 0 forks the other core's share through a
/// chip-shared semaphore and joins it before the result is read. Bit-exact, and the race
/// detector (on in every compiled run) sees the cores ordered.
#[test]
fn a_late_streamed_dot_splits_across_both_cores_of_tpu_v4_bit_exact() {
    let text = "HloModule q2\n\nENTRY e {\n  x = s8[512,512] parameter(0)\n  w = s8[512,2560] \
                parameter(1)\n  h = s32[512,2560] dot(x, w), lhs_contracting_dims={1}, \
                rhs_contracting_dims={0}\n  n = s32[512,2560] negate(h)\n  ROOT t = \
                (s32[512,2560], s32[512,2560]) tuple(n, h)\n}\n";
    let v4 = arch::ArchConfig::preset("tpu-v4").unwrap();
    let c = chip_matches_evaluator_on(&v4, text, vec![], 9, 0.0, false);
    assert_eq!(c.stats.late_streams, 1);
    let asm = isa::disasm::disasm(&c.program);
    assert!(
        asm.contains(".sem sem28") && asm.contains("shared"),
        "no fork/join semaphores"
    );
}

/// A softmax over rows of an `f32[64,512]` (128 KiB) on a 256 KiB VMEM: the row max and the
/// row sum stream their operands from HBM (tiles of whole rows), the element-wise steps
/// stream as regions with the row statistics broadcast chunk by chunk; and a full reduction of
/// an `f32[8,4096]` on an 8 KiB VMEM, whose one row is longer than a tile (column chunks, then
/// the partials). Both match the evaluator.
#[test]
fn reduces_of_operands_larger_than_vmem_stream_softmax_and_a_full_sum() {
    let softmax = "HloModule sm\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
                   ROOT s = f32[] add(a, b)\n}\n\nmx {\n  c = f32[] parameter(0)\n  d = f32[] \
                   parameter(1)\n  ROOT m = f32[] maximum(c, d)\n}\n\nENTRY e {\n  x = \
                   f32[64,512] parameter(0)\n  z = f32[] constant(0)\n  ninf = f32[] \
                   constant(-inf)\n  rm = f32[64] reduce(x, ninf), dimensions={1}, to_apply=mx\n  \
                   mb = f32[64,512] broadcast(rm), dimensions={0}\n  sub = f32[64,512] \
                   subtract(x, mb)\n  ex = f32[64,512] exponential(sub)\n  rs = f32[64] \
                   reduce(ex, z), dimensions={1}, to_apply=add\n  sb = f32[64,512] \
                   broadcast(rs), dimensions={0}\n  ROOT p = f32[64,512] divide(ex, sb)\n}\n";
    let c = chip_matches_evaluator_on(&chip(262144), softmax, vec![], 4, 1e-5, false);
    assert_eq!(c.stats.reduce_streams, 2, "both row reductions stream");
    assert!(c.stats.ew_streams >= 2);
    let total = "HloModule t\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
                 ROOT s = f32[] add(a, b)\n}\n\nENTRY e {\n  x = f32[8,4096] parameter(0)\n  z = \
                 f32[] constant(0)\n  ROOT r = f32[] reduce(x, z), dimensions={0,1}, \
                 to_apply=add\n}\n";
    let c = chip_matches_evaluator_on(&chip(8192), total, vec![], 6, 1e-4, false);
    assert_eq!(c.stats.reduce_streams, 1);
}

/// Scalar parameters read by streamed element-wise ops (a select's predicate, a clamp's
/// bounds) and a streamed reduce's init parameter come to VMEM (they stay in HBM at first: all
/// their readers stream).
#[test]
fn scalar_parameters_of_streamed_element_wise_ops_and_reduces_come_to_vmem() {
    let text = "HloModule s\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT \
                s = f32[] add(a, b)\n}\n\nENTRY e {\n  x = f32[64,32] parameter(0)\n  y = \
                f32[64,32] parameter(1)\n  p = pred[] parameter(2)\n  lo = f32[] parameter(3)\n  \
                hi = f32[] parameter(4)\n  init = f32[] parameter(5)\n  sel = f32[64,32] \
                select(p, x, y)\n  cl = f32[64,32] clamp(lo, sel, hi)\n  red = f32[64] \
                reduce(cl, init), dimensions={1}, to_apply=add\n  ROOT t = (f32[64,32], f32[64]) \
                tuple(cl, red)\n}\n";
    // 8 KiB values on a 16 KiB VMEM: larger than a quarter, so everything streams.
    let c = chip_matches_evaluator_on(&chip(16384), text, vec![], 8, 1e-5, false);
    assert_eq!((c.stats.ew_streams, c.stats.reduce_streams), (1, 1));
}

/// A broadcast that stretches a size-1 operand dimension (`[1,C]` over `[R,C]`, `[R,1]` over
/// `[R,C]`) repeats the right elements, in VMEM and feeding a streamed region (where it is
/// made whole, not chunk by chunk).
#[test]
fn a_broadcast_that_stretches_a_size_1_dimension_matches_the_evaluator() {
    let text = "HloModule b\n\nENTRY e {\n  r1 = f32[1,32] parameter(0)\n  c1 = f32[64,1] \
                parameter(1)\n  x = f32[64,32] parameter(2)\n  br = f32[64,32] broadcast(r1), \
                dimensions={0,1}\n  bc = f32[64,32] broadcast(c1), dimensions={0,1}\n  a = \
                f32[64,32] add(x, br)\n  ROOT m = f32[64,32] multiply(a, bc)\n}\n";
    chip_matches_evaluator_on(&chip(1 << 20), text, vec![], 2, 0.0, false);
    let c = chip_matches_evaluator_on(&chip(28672), text, vec![], 2, 0.0, false);
    assert_eq!(c.stats.ew_streams, 1);
}

/// Dots whose `rhs` has its contracting dimension last (`q·kᵀ` batched, and `x·Wᵀ` as
/// PyTorch's linear layers write it) stream from HBM like canonical ones: blocks of `rhs` come
/// in as `N` rows of `K` and load into the MXUs transposed (`mxu.ldw … tr=1`). On a 2 MiB VMEM,
/// with `K`, `N` not multiples of the array: one dot of two parameters (streamed from the
/// start) and one of a computed value (streamed where it stands). Bit-exact (int8).
#[test]
fn dots_with_the_rhs_contracting_dimension_last_stream_with_transposed_weight_loads() {
    let text = "HloModule qkt\n\nENTRY e {\n  q = s8[3,300,200] parameter(0)\n  k = \
                s8[3,700,200] parameter(1)\n  x = s8[1000,300] parameter(2)\n  w = s8[260,300] \
                parameter(3)\n  s = s32[3,300,700] dot(q, k), lhs_batch_dims={0}, \
                rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}\n  nx = \
                s8[1000,300] negate(x)\n  y = s32[1000,260] dot(nx, w), lhs_contracting_dims={1}, \
                rhs_contracting_dims={1}\n  ROOT t = (s32[3,300,700], s32[1000,260]) tuple(s, \
                y)\n}\n";
    let arch = arch::ArchConfig::resolve("tpu-v4", &["vmem.bytes=2097152"]).unwrap();
    let c = chip_matches_evaluator_on(&arch, text, vec![], 11, 0.0, false);
    assert!(c.stats.late_streams >= 1, "{:?}", c.stats);
    let asm = isa::disasm::disasm(&c.program);
    assert!(asm.contains("tr=1"), "no transposed weight load");
}

/// With little VMEM the streamed dot's plan takes chunks of fewer rows (down to 8) and fewer
/// columns instead of asking for more than there is: a dot with a 4 MiB result on a 1 MiB
/// VMEM (its default chunks of 1024 rows need 2 MiB for the `lhs` blocks alone).
#[test]
fn a_streamed_dot_cuts_its_chunks_to_fit_a_small_vmem() {
    let text = "HloModule small\n\nENTRY e {\n  x = s8[1024,512] parameter(0)\n  w = s8[512,1024] \
                parameter(1)\n  ROOT h = s32[1024,1024] dot(x, w), lhs_contracting_dims={1}, \
                rhs_contracting_dims={0}\n}\n";
    let arch = arch::ArchConfig::resolve("tpu-v4", &["vmem.bytes=1048576"]).unwrap();
    chip_matches_evaluator_on(&arch, text, vec![], 13, 0.0, false);
}

/// An f32 MLP whose hidden activation (512 KiB) is larger than a quarter of a 1 MiB VMEM: the
/// f32 dots become the bf16 dots of their operands' parts (6 passes here, as the tests force
/// for conformance; `split-f32-dots`), the parts stream as element-wise regions and the dots
/// from HBM, the second with its weights `[N][K]` (x·Wᵀ). Matches the evaluator at f32
/// accuracy, and the report counts each of the module's two dots once.
#[test]
fn f32_dots_larger_than_vmem_stream_as_the_bf16_dots_of_their_parts() {
    let text = "HloModule f32mlp\n\nENTRY e {\n  x = f32[256,192] parameter(0)\n  w1 = \
                f32[192,512] parameter(1)\n  w2 = f32[128,512] parameter(2)\n  h = f32[256,512] \
                dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  r = \
                f32[256,512] tanh(h)\n  ROOT y = f32[256,128] dot(r, w2), \
                lhs_contracting_dims={1}, rhs_contracting_dims={1}\n}\n";
    let arch = arch::ArchConfig::resolve("tpu-v4", &["vmem.bytes=1048576"]).unwrap();
    let c = chip_matches_evaluator_on(&arch, text, vec![], 17, 1e-4, true);
    let dots = c
        .module
        .entry()
        .insts
        .values()
        .filter(|i| i.opcode == hlo::Opcode::Dot)
        .count();
    assert_eq!(dots, 12, "6 passes for each of the 2 dots");
    assert!(c.stats.late_streams >= 1, "{:?}", c.stats);
    assert_eq!(c.stats.flops, 2 * (256 * 192 * 512 + 256 * 512 * 128));
}

/// Transposes of values larger than a quarter of VMEM stream from HBM to HBM: every
/// permutation of a rank-4 `s32[3,5,7,40]` (with a size-1 dimension put in: rank 5) on a
/// 32 KiB VMEM, bit-exact. Those that keep the last dimension last are DMA descriptors only
/// (4 outer groups loop over the descriptors' 3 dimensions); the others turn tiles on the VPU.
#[test]
fn every_transpose_of_a_value_larger_than_vmem_streams_hbm_to_hbm_bit_exact() {
    let dims = [3usize, 5, 1, 7, 40];
    let arch = arch::ArchConfig::resolve("tpu-v4", &["vmem.bytes=32768"]).unwrap();
    let mut perm: Vec<usize> = (0..dims.len()).collect();
    let mut n = 0;
    // Heap's algorithm over all 120 permutations; every fourth one runs (30), and the
    // identity, the reversal and "keep the last" ones are always among them.
    let mut c = vec![0usize; dims.len()];
    let mut all = vec![perm.clone()];
    let mut i = 0;
    while i < dims.len() {
        if c[i] < i {
            if i % 2 == 0 {
                perm.swap(0, i);
            } else {
                perm.swap(c[i], i);
            }
            all.push(perm.clone());
            c[i] += 1;
            i = 0;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
    assert_eq!(all.len(), 120);
    let (mut runs, mut tiles) = (0, 0);
    for (k, p) in all.iter().enumerate() {
        let keep_last = p[4] == 4;
        let reversed = *p == [4, 3, 2, 1, 0];
        if k % 4 != 0 && !(keep_last && k % 2 == 0) && !reversed {
            continue;
        }
        let out: Vec<String> = p.iter().map(|&d| dims[d].to_string()).collect();
        let list: Vec<String> = p.iter().map(|d| d.to_string()).collect();
        let text = format!(
            "HloModule t\n\nENTRY e {{\n  x = s32[3,5,1,7,40] parameter(0)\n  ROOT y = s32[{}] \
             transpose(x), dimensions={{{}}}\n}}\n",
            out.join(","),
            list.join(",")
        );
        let c = chip_matches_evaluator_on(&arch, &text, vec![], 21 + k as u64, 0.0, false);
        // Moving only the size-1 dimension moves no data: the result aliases the operand.
        let moved: Vec<usize> = p.iter().copied().filter(|&d| dims[d] != 1).collect();
        let identity = moved.windows(2).all(|w| w[0] < w[1]);
        assert!(
            identity || c.stats.transpose_streams == 1,
            "{p:?}: {:?}",
            c.stats
        );
        let asm = isa::disasm::disasm(&c.program);
        if asm.contains("vpu.transpose") {
            tiles += 1;
        } else if !identity {
            runs += 1;
        }
        n += 1;
    }
    assert!(n >= 30 && runs >= 5 && tiles >= 20, "{n} {runs} {tiles}");
}

/// bf16 and f32 transposes read by other streamed work: `[B,S,H,D] → [B,H,S,D]` (attention's
/// heads, DMA only) and a 2-D transpose of a weight that a dot then reads, on 1 MiB of VMEM.
#[test]
fn attention_head_and_weight_transposes_larger_than_vmem_stream_and_feed_their_readers() {
    let text = "HloModule heads\n\nENTRY e {\n  x = bf16[2,256,8,64] parameter(0)\n  w = \
                f32[512,384] parameter(1)\n  h = bf16[2,8,256,64] transpose(x), \
                dimensions={0,2,1,3}\n  n = bf16[2,8,256,64] negate(h)\n  wt = f32[384,512] \
                transpose(w), dimensions={1,0}\n  e = f32[384,512] exponential(wt)\n  ROOT t = \
                (bf16[2,8,256,64], f32[384,512]) tuple(n, e)\n}\n";
    let arch = arch::ArchConfig::resolve("tpu-v4", &["vmem.bytes=1048576"]).unwrap();
    let c = chip_matches_evaluator_on(&arch, text, vec![], 23, 1e-6, false);
    assert_eq!(c.stats.transpose_streams, 2, "{:?}", c.stats);
}

/// Reduces of values larger than a quarter of VMEM over dimensions that are not the last ones
/// (a sum over the first and last of three, a max over the rows of a matrix) move the reduced
/// dimensions last with a streamed transpose, then stream as trailing reduces. On 1 MiB of
/// VMEM, against the evaluator (the max bit-exact).
#[test]
fn reduces_over_leading_dimensions_of_values_larger_than_vmem_move_them_last_and_stream() {
    let text = "HloModule red\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
                ROOT s = f32[] add(a, b)\n}\n\nmx {\n  c = s32[] parameter(0)\n  d = s32[] \
                parameter(1)\n  ROOT mm = s32[] maximum(c, d)\n}\n\nENTRY e {\n  x = \
                f32[128,100,8] parameter(0)\n  y = s32[64,2000] parameter(1)\n  z = f32[] \
                constant(0)\n  m = s32[] constant(-2147483648)\n  r0 = f32[100] reduce(x, z), \
                dimensions={0,2}, to_apply=add\n  r1 = s32[2000] reduce(y, m), dimensions={0}, \
                to_apply=mx\n  ROOT t = (f32[100], s32[2000]) tuple(r0, r1)\n}\n";
    let arch = arch::ArchConfig::resolve("tpu-v4", &["vmem.bytes=1048576"]).unwrap();
    let c = chip_matches_evaluator_on(&arch, text, vec![], 29, 1e-5, false);
    assert_eq!(
        (c.stats.reduce_streams, c.stats.transpose_streams),
        (2, 2),
        "{:?}",
        c.stats
    );
}

/// A weight gradient `xᵀ·dy` (the `lhs` contracting dimension first) larger than a quarter of
/// VMEM: `stream-order-dots` transposes `x` into `[M][K]` (a streamed transpose, the last
/// dimension moving) and the dot streams. Bit-exact (int8), on 1 MiB of VMEM.
#[test]
fn a_weight_gradient_larger_than_vmem_is_put_in_stream_order_and_streams() {
    let text = "HloModule wg\n\nENTRY e {\n  x = s8[1024,300] parameter(0)\n  dy = s8[1024,200] \
                parameter(1)\n  ROOT g = s32[300,200] dot(x, dy), lhs_contracting_dims={0}, \
                rhs_contracting_dims={0}\n}\n";
    let arch = arch::ArchConfig::resolve("tpu-v4", &["vmem.bytes=1048576"]).unwrap();
    let c = chip_matches_evaluator_on(&arch, text, vec![], 31, 0.0, true);
    assert!(
        c.stats.transpose_streams >= 1 && c.stats.late_streams >= 1,
        "{:?}",
        c.stats
    );
}

/// A bf16 convolution whose input is computed in the module (so it is not in HBM from the
/// start) and whose f32 result (1.5 MiB) is larger than a quarter of a 4 MiB VMEM streams where
/// it stands, like a late dot: its input written to HBM, its result left there for the next
/// op. Matches the evaluator.
#[test]
fn a_convolution_of_a_computed_input_larger_than_vmem_streams_where_it_stands() {
    let text = "HloModule lconv\n\nENTRY e {\n  x = bf16[8,32,32,32] parameter(0)\n  k = \
                bf16[3,3,32,48] parameter(1)\n  n = bf16[8,32,32,32] negate(x)\n  y = \
                f32[8,32,32,48] convolution(n, k), window={size=3x3 pad=1_1x1_1}, \
                dim_labels=b01f_01io->b01f\n  ROOT t = f32[8,32,32,48] tanh(y)\n}\n";
    let arch = arch::ArchConfig::resolve("tpu-v4", &["vmem.bytes=4194304"]).unwrap();
    let c = chip_matches_evaluator_on(&arch, text, vec![], 37, 1e-4, false);
    assert_eq!(c.stats.late_streams, 1, "{:?}", c.stats);
}

/// Convolutions the MXU path would hold larger than a quarter of VMEM: an f32 one (split by
/// `split-f32-dots` into the bf16 convolutions of its parts, 6 passes as the tests force, each
/// streamed where it stands) on 4 MiB of VMEM, and a bf16 one with a bf16 result (its f32
/// accumulator streams, then a convert) on 3 MiB, where it did not fit before. Against the
/// evaluator: f32 accuracy, and one bf16 rounding.
#[test]
fn f32_and_bf16_result_convolutions_larger_than_vmem_stream() {
    let f32_conv = "HloModule cf32\n\nENTRY e {\n  x = f32[8,32,32,40] parameter(0)\n  k = \
                    f32[3,3,40,48] parameter(1)\n  n = f32[8,32,32,40] negate(x)\n  ROOT y = \
                    f32[8,32,32,48] convolution(n, k), window={size=3x3 pad=1_1x1_1}, \
                    dim_labels=b01f_01io->b01f\n}\n";
    let arch = arch::ArchConfig::resolve("tpu-v4", &["vmem.bytes=4194304"]).unwrap();
    let c = chip_matches_evaluator_on(&arch, f32_conv, vec![], 41, 1e-4, true);
    assert_eq!(c.stats.late_streams, 6, "{:?}", c.stats);
    let bf16_conv = f32_conv.replace("f32[", "bf16[");
    let arch = arch::ArchConfig::resolve("tpu-v4", &["vmem.bytes=3145728"]).unwrap();
    let c = chip_matches_evaluator_on(&arch, &bf16_conv, vec![], 43, 1e-2, true);
    assert_eq!(c.stats.late_streams, 1, "{:?}", c.stats);
}

/// Models at the sizes a user brings, exported from JAX (`tests/models/export_large.py`), pre-
/// and post-optimization: 8-head attention over 1024 tokens (f32 scores of 64 MiB), an MLP
/// training step on a batch of 4096 (weight gradients `xᵀ·dy`), and a ResNet basic block of
/// batch 16 at 56×56×64 in f32 and bf16. Each compiles for `tpu-v4` as a TPU runs it (one bf16
/// pass per f32 dot), streams what does not fit its 16 MiB of VMEM, and runs to the end
/// (timing only, races checked). The f32 CNN is also run functionally at six passes against
/// the evaluator.
#[test]
fn jax_models_at_full_size_compile_and_run_on_tpu_v4() {
    let v4 = arch::ArchConfig::preset("tpu-v4").unwrap();
    for name in [
        "attn_f32_large",
        "mlp_train_f32_large",
        "cnn_f32_large",
        "cnn_bf16_large",
    ] {
        for kind in ["pre", "opt"] {
            let path = format!(
                "{}/models/{name}_{kind}/module.hlo",
                env!("CARGO_MANIFEST_DIR")
            );
            let text = std::fs::read_to_string(&path).unwrap();
            let m = hlo::verified(hlo::parse(&text).unwrap()).unwrap();
            let c = compiler::compile(&m, &v4, &compiler::CompileOptions::default())
                .unwrap_or_else(|e| panic!("{}", e.render(&path)));
            let st = &c.stats;
            assert!(
                st.late_streams + st.ew_streams + st.reduce_streams + st.transpose_streams > 0,
                "{name}_{kind}: nothing streamed: {st:?}"
            );
            let opts = sim::SimOptions {
                functional: false,
                ..sim::SimOptions::default()
            };
            let mut sys = sim::System::new(&v4, c.program.clone(), 1, opts).unwrap();
            let r = sys.run().unwrap_or_else(|e| panic!("{name}_{kind}: {e}"));
            assert!(r.cycles > 0);
        }
    }
    let path = format!(
        "{}/models/cnn_f32_large_opt/module.hlo",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    chip_matches_evaluator_on(&v4, &text, vec![], 47, 1e-3, false);
}

/// A transpose of a zero-element array moves nothing, in VMEM and streamed (the DMA-run path
/// emitted a descriptor dimension of count 0, which the program loader rejects).
#[test]
fn a_transpose_of_a_zero_element_array_moves_nothing() {
    let text = "HloModule z\n\nENTRY e {\n  x = f32[0,4,32] parameter(0)\n  ROOT t = f32[4,0,32] \
                transpose(x), dimensions={1,0,2}\n}\n";
    for sets in [&[][..], &["vmem.bytes=32768"][..]] {
        let arch = arch::ArchConfig::resolve("tpu-v4", sets).unwrap();
        chip_matches_evaluator_on(&arch, text, vec![], 1, 0.0, false);
    }
}

/// Two identical large f32 dots at HIGH precision (3 bf16 passes each): CSE merges them before
/// `split-f32-dots` counts the passes it adds, so the report counts the one dot once (it
/// came out 0 when the split ran before CSE).
#[test]
fn identical_split_dots_are_counted_once_in_the_report() {
    let text = "HloModule two\n\nENTRY e {\n  x = f32[512,256] parameter(0)\n  w = f32[256,512] \
                parameter(1)\n  a = f32[512,512] dot(x, w), lhs_contracting_dims={1}, \
                rhs_contracting_dims={0}, operand_precision={high,high}\n  b = f32[512,512] \
                dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, \
                operand_precision={high,high}\n  ROOT t = (f32[512,512], f32[512,512]) tuple(a, \
                b)\n}\n";
    let m = hlo::verified(hlo::parse(text).unwrap()).unwrap();
    let arch = arch::ArchConfig::resolve("tpu-v4", &["vmem.bytes=1048576"]).unwrap();
    let c = compiler::compile(&m, &arch, &compiler::CompileOptions::default()).unwrap();
    assert_eq!(c.stats.flops, 2 * 512 * 256 * 512);
}
