//! Property tests: random shapes and attributes of gather, scatter, reduce-window, sort and
//! convolution compile, run on the simulated chip, and give the evaluator's results (bit for
//! bit where the op's order is fixed; convolutions within the 6-pass f32 dot's tolerance).
//!
//! Each property draws a few dozen small cases (`scripts/test.sh` fixes `PROPTEST_RNG_SEED`);
//! a case is an HLO module built from the drawn attributes plus a seed for its inputs, so a
//! failure prints everything needed to rerun it with `systole run`.

mod chip_common;

use chip_common::chip_matches_evaluator;
use hlo::{ArrayData, Literal};
use proptest::prelude::*;
use systole_tests::{random_literal, Rng};

/// Cases per property (each compiles and simulates one small module).
const CASES: u32 = 32;

/// `n` s32 indices uniform in `[lo, hi]`.
fn indices(dims: Vec<usize>, lo: i64, hi: i64, g: &mut Rng) -> Literal {
    let n: usize = dims.iter().product();
    let span = (hi - lo + 1) as u64;
    let v = (0..n)
        .map(|_| (lo + (g.next_u64() % span) as i64) as i32)
        .collect();
    Literal::array(dims, ArrayData::S32(v))
}

fn list(v: &[usize]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn dims(v: &[usize]) -> String {
    format!("[{}]", list(v))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// Rank-2 operand, an index vector of one or two components (either dimension order),
    /// any slice sizes, collapsed dims among the indexed ones of size 1; indices one outside
    /// the operand on both sides (clamped).
    #[test]
    fn gather_matches_the_evaluator(
        a in 1usize..7, b in 1usize..7, n in 1usize..9, two in any::<bool>(), swap in any::<bool>(),
        s0 in 1usize..7, s1 in 1usize..7, collapse in 0usize..4, seed in any::<u64>(),
    ) {
        let od = [a, b];
        let sizes = [s0.min(a), s1.min(b)];
        let map: Vec<usize> = match (two, swap) {
            (true, false) => vec![0, 1],
            (true, true) => vec![1, 0],
            (false, s) => vec![usize::from(s)],
        };
        // Collapse (a subset of) the indexed dims whose slice size is 1.
        let collapsed: Vec<usize> = map
            .iter()
            .copied()
            .filter(|&d| sizes[d] == 1 && collapse & (1 << d) != 0)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let kept: Vec<usize> = (0..2).filter(|d| !collapsed.contains(d)).map(|d| sizes[d]).collect();
        let mut out = vec![n];
        out.extend(&kept);
        let offset: Vec<usize> = (1..=kept.len()).collect();
        let text = format!(
            "HloModule g\n\nENTRY main {{\n  o = f32{} parameter(0)\n  i = s32[{n},{k}] parameter(1)\n  \
             ROOT r = f32{} gather(o, i), offset_dims={{{}}}, collapsed_slice_dims={{{}}}, \
             start_index_map={{{}}}, index_vector_dim=1, slice_sizes={{{}}}\n}}\n",
            dims(&od), dims(&out), list(&offset), list(&collapsed), list(&map), list(&sizes),
            k = map.len(),
        );
        let mut g = Rng(seed);
        let hi = od.iter().copied().max().unwrap() as i64;
        let idx = indices(vec![n, map.len()], -1, hi, &mut g);
        let o = random_literal(&hlo::Shape::Array(hlo::ArrayShape::new(hlo::ElementType::F32, &[a as i64, b as i64])), &mut g).unwrap();
        chip_matches_evaluator(&text, vec![o, idx], seed, 0.0);
    }

    /// Scatter of rows (a window of `w` columns) with duplicate and out-of-range indices and a
    /// combiner drawn among add, maximum, overwrite, and the general form (`u - 2·o`, applied
    /// in rounds), on s32 data so every result is exact.
    #[test]
    fn scatter_matches_the_evaluator(
        a in 1usize..7, b in 1usize..7, n in 1usize..12, w in 1usize..7, comb in 0usize..4,
        seed in any::<u64>(),
    ) {
        let w = w.min(b);
        let body = match comb {
            0 => "ROOT r.f = s32[] add(x.f, y.f)",
            1 => "ROOT r.f = s32[] maximum(x.f, y.f)",
            2 => "ROOT r.f = s32[] copy(y.f)",
            _ => "two.f = s32[] constant(2)\n  t.f = s32[] multiply(x.f, two.f)\n  ROOT r.f = s32[] subtract(y.f, t.f)",
        };
        let text = format!(
            "HloModule s\n\nf {{\n  x.f = s32[] parameter(0)\n  y.f = s32[] parameter(1)\n  {body}\n}}\n\n\
             ENTRY main {{\n  o = s32[{a},{b}] parameter(0)\n  i = s32[{n},1] parameter(1)\n  \
             u = s32[{n},{w}] parameter(2)\n  ROOT r = s32[{a},{b}] scatter(o, i, u), \
             update_window_dims={{1}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, \
             index_vector_dim=1, to_apply=f\n}}\n"
        );
        let mut g = Rng(seed);
        let o = indices(vec![a, b], -8, 8, &mut g);
        let idx = indices(vec![n, 1], -1, a as i64, &mut g);
        chip_matches_evaluator(&text, vec![o, idx], seed, 0.0);
    }

    /// reduce-window on a rank-2 f32 array: window sizes, strides, padding, base and window
    /// dilation drawn per dimension; max (exact) or add (the chip's reduction order differs
    /// from the evaluator's, so within 1e-5).
    #[test]
    fn reduce_window_matches_the_evaluator(
        a in 1usize..8, b in 1usize..8,
        win in prop::array::uniform2(1usize..4), stride in prop::array::uniform2(1usize..4),
        lo in prop::array::uniform2(0usize..3), hi in prop::array::uniform2(0usize..3),
        base in prop::array::uniform2(1usize..3), wdil in prop::array::uniform2(1usize..3),
        max in any::<bool>(), seed in any::<u64>(),
    ) {
        let od = [a, b];
        let mut out = [0usize; 2];
        for d in 0..2 {
            let padded = (od[d] - 1) * base[d] + 1 + lo[d] + hi[d];
            let extent = (win[d] - 1) * wdil[d] + 1;
            prop_assume!(padded >= extent);
            out[d] = (padded - extent) / stride[d] + 1;
        }
        let x2 = |v: &[usize; 2]| format!("{}x{}", v[0], v[1]);
        let (op, init) = if max { ("maximum", "-inf") } else { ("add", "0") };
        let text = format!(
            "HloModule rw\n\nf {{\n  x.f = f32[] parameter(0)\n  y.f = f32[] parameter(1)\n  \
             ROOT r.f = f32[] {op}(x.f, y.f)\n}}\n\nENTRY main {{\n  o = f32[{a},{b}] parameter(0)\n  \
             z = f32[] constant({init})\n  ROOT r = f32{} reduce-window(o, z), window={{size={} \
             stride={} pad={}_{}x{}_{} lhs_dilate={} rhs_dilate={}}}, to_apply=f\n}}\n",
            dims(&out), x2(&win), x2(&stride), lo[0], hi[0], lo[1], hi[1], x2(&base), x2(&wdil),
        );
        chip_matches_evaluator(&text, vec![], seed, if max { 0.0 } else { 1e-5 });
    }

    /// sort of s32 keys (many equal) with an f32 payload along either dimension of a rank-2
    /// array, ascending or descending, stable or not (unstable sorts are compared on the keys
    /// only, since equal keys may carry their payloads in any order).
    #[test]
    fn sort_matches_the_evaluator(
        a in 1usize..9, b in 1usize..40, dim in 0usize..2, desc in any::<bool>(),
        stable in any::<bool>(), seed in any::<u64>(),
    ) {
        let dir = if desc { "GT" } else { "LT" };
        let sh = format!("[{a},{b}]");
        // The whole (keys, payload) pair when stable, else the keys.
        let root = if stable {
            format!("  p = f32{sh} get-tuple-element(r), index=1\n  ROOT t = (s32{sh}, f32{sh}) tuple(k, p)")
        } else {
            format!("  ROOT t = (s32{sh}) tuple(k)")
        };
        let text = format!(
            "HloModule so\n\ncmp {{\n  a.c = s32[] parameter(0)\n  b.c = s32[] parameter(1)\n  \
             p.c = f32[] parameter(2)\n  q.c = f32[] parameter(3)\n  \
             ROOT l.c = pred[] compare(a.c, b.c), direction={dir}\n}}\n\nENTRY main {{\n  \
             x = s32{sh} parameter(0)\n  y = f32{sh} parameter(1)\n  \
             r = (s32{sh}, f32{sh}) sort(x, y), dimensions={{{dim}}}, is_stable={stable}, \
             to_apply=cmp\n  k = s32{sh} get-tuple-element(r), index=0\n{root}\n}}\n"
        );
        let mut g = Rng(seed);
        let keys = indices(vec![a, b], -3, 3, &mut g);
        chip_matches_evaluator(&text, vec![keys], seed, 0.0);
    }

    /// 2-D convolution, NHWC input and HWIO kernel: sizes, strides, padding, lhs and rhs
    /// dilation drawn; f32 with 6-pass dots, so within 1e-4.
    #[test]
    fn convolution_matches_the_evaluator(
        n in 1usize..3, h in 1usize..7, w in 1usize..7, c in 1usize..4, o in 1usize..4,
        kh in 1usize..4, kw in 1usize..4, stride in prop::array::uniform2(1usize..3),
        lo in prop::array::uniform2(0usize..2), hi in prop::array::uniform2(0usize..2),
        ldil in prop::array::uniform2(1usize..3), rdil in prop::array::uniform2(1usize..3),
        seed in any::<u64>(),
    ) {
        let sp = [h, w];
        let k = [kh, kw];
        let mut out = [0usize; 2];
        for d in 0..2 {
            let padded = (sp[d] - 1) * ldil[d] + 1 + lo[d] + hi[d];
            let extent = (k[d] - 1) * rdil[d] + 1;
            prop_assume!(padded >= extent);
            out[d] = (padded - extent) / stride[d] + 1;
        }
        let x2 = |v: &[usize; 2]| format!("{}x{}", v[0], v[1]);
        let text = format!(
            "HloModule cv\n\nENTRY main {{\n  x = f32[{n},{h},{w},{c}] parameter(0)\n  \
             k = f32[{kh},{kw},{c},{o}] parameter(1)\n  ROOT y = f32[{n},{},{},{o}] convolution(x, k), \
             window={{size={kh}x{kw} stride={} pad={}_{}x{}_{} lhs_dilate={} rhs_dilate={}}}, \
             dim_labels=b01f_01io->b01f\n}}\n",
            out[0], out[1], x2(&stride), lo[0], hi[0], lo[1], hi[1], x2(&ldil), x2(&rdil),
        );
        chip_matches_evaluator(&text, vec![], seed, 1e-4);
    }
}
