//! The worked examples of the operation-semantics spec (`/work/shared/spec/000_*.txt`), run on
//! the reference evaluator from HLO text. Expected values are the spec's (or, for Gather,
//! computed by the spec's index formula written out as plain loops).

use eval::evaluate;
use hlo::{ArrayData, ArrayLiteral, Literal};

fn run(text: &str, args: &[Literal]) -> Literal {
    let m = hlo::parse(text).unwrap_or_else(|e| panic!("{}", e.render("test.hlo", text)));
    let m = hlo::verified(m).unwrap_or_else(|e| panic!("{}", e.render("test.hlo", text)));
    evaluate(&m, args).unwrap_or_else(|e| panic!("evaluation failed: {e}"))
}

fn f32s(dims: &[usize], v: &[f32]) -> Literal {
    Literal::Array(ArrayLiteral {
        dims: dims.to_vec(),
        data: ArrayData::F32(v.to_vec()),
    })
}
fn s32s(dims: &[usize], v: &[i32]) -> Literal {
    Literal::Array(ArrayLiteral {
        dims: dims.to_vec(),
        data: ArrayData::S32(v.to_vec()),
    })
}

#[test]
fn reshape_and_collapse() {
    // v = f32[4x2x3] {{{10,11,12},{15,16,17}}, ..., {{40,41,42},{45,46,47}}}
    let v: Vec<f32> = [
        10, 11, 12, 15, 16, 17, 20, 21, 22, 25, 26, 27, 30, 31, 32, 35, 36, 37, 40, 41, 42, 45, 46,
        47,
    ]
    .iter()
    .map(|&x| x as f32)
    .collect();
    let text = "HloModule r\nENTRY e {\n  v = f32[4,2,3] parameter(0)\n  a = f32[24] reshape(v)\n  b = f32[8,3] reshape(v)\n  c = f32[2,12] reshape(v)\n  ROOT t = (f32[24], f32[8,3], f32[2,12]) tuple(a, b, c)\n}\n";
    let r = run(text, &[f32s(&[4, 2, 3], &v)]);
    assert_eq!(
        r,
        Literal::Tuple(vec![f32s(&[24], &v), f32s(&[8, 3], &v), f32s(&[2, 12], &v)])
    );
}

#[test]
fn concatenate() {
    let text = "HloModule c\nENTRY e {\n  a = s32[2] parameter(0)\n  b = s32[2] parameter(1)\n  c = s32[2] parameter(2)\n  x = s32[3,2] parameter(3)\n  y = s32[1,2] parameter(4)\n  p = s32[6] concatenate(a, b, c), dimensions={0}\n  q = s32[4,2] concatenate(x, y), dimensions={0}\n  nine = s32[] constant(9)\n  col = s32[3,1] broadcast(nine), dimensions={}\n  z = s32[3,3] concatenate(x, col), dimensions={1}\n  ROOT t = (s32[6], s32[4,2], s32[3,3]) tuple(p, q, z)\n}\n";
    let r = run(
        text,
        &[
            s32s(&[2], &[2, 3]),
            s32s(&[2], &[4, 5]),
            s32s(&[2], &[6, 7]),
            s32s(&[3, 2], &[1, 2, 3, 4, 5, 6]),
            s32s(&[1, 2], &[7, 8]),
        ],
    );
    assert_eq!(
        r,
        Literal::Tuple(vec![
            s32s(&[6], &[2, 3, 4, 5, 6, 7]),
            s32s(&[4, 2], &[1, 2, 3, 4, 5, 6, 7, 8]),
            s32s(&[3, 3], &[1, 2, 9, 3, 4, 9, 5, 6, 9]),
        ])
    );
}

#[test]
fn dynamic_slice_and_update() {
    let text = "HloModule d\nENTRY e {\n  a = f32[5] parameter(0)\n  s = s32[] parameter(1)\n  b = f32[4,3] parameter(2)\n  i = s32[] parameter(3)\n  j = s32[] parameter(4)\n  u = f32[2] parameter(5)\n  w = f32[3,2] parameter(6)\n  one = s32[] constant(1)\n  x = f32[2] dynamic-slice(a, s), dynamic_slice_sizes={2}\n  y = f32[2,2] dynamic-slice(b, i, j), dynamic_slice_sizes={2,2}\n  z = f32[5] dynamic-update-slice(a, u, s)\n  v = f32[4,3] dynamic-update-slice(b, w, one, one)\n  big = s32[] constant(100)\n  c = f32[2] dynamic-slice(a, big), dynamic_slice_sizes={2}\n  ROOT t = (f32[2], f32[2,2], f32[5], f32[4,3], f32[2]) tuple(x, y, z, v, c)\n}\n";
    let b: Vec<f32> = (0..12).map(|x| x as f32).collect();
    let r = run(
        text,
        &[
            f32s(&[5], &[0.0, 1.0, 2.0, 3.0, 4.0]),
            s32s(&[], &[2]),
            f32s(&[4, 3], &b),
            s32s(&[], &[2]),
            s32s(&[], &[1]),
            f32s(&[2], &[5.0, 6.0]),
            f32s(&[3, 2], &[12.0, 13.0, 14.0, 15.0, 16.0, 17.0]),
        ],
    );
    assert_eq!(
        r,
        Literal::Tuple(vec![
            f32s(&[2], &[2.0, 3.0]),
            f32s(&[2, 2], &[7.0, 8.0, 10.0, 11.0]),
            f32s(&[5], &[0.0, 1.0, 5.0, 6.0, 4.0]),
            f32s(
                &[4, 3],
                &[0.0, 1.0, 2.0, 3.0, 12.0, 13.0, 6.0, 14.0, 15.0, 9.0, 16.0, 17.0]
            ),
            // Start 100 is clamped to 5 - 2 = 3.
            f32s(&[2], &[3.0, 4.0]),
        ])
    );
}

#[test]
fn gather_slices_of_16x11() {
    // Five [8,6] slices of a [16,11] operand at (row, col) starts, as in the spec's figure.
    let text = "HloModule g\nENTRY e {\n  op = s32[16,11] parameter(0)\n  idx = s32[5,2] parameter(1)\n  ROOT g = s32[5,8,6] gather(op, idx), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={8,6}\n}\n";
    let op: Vec<i32> = (0..16 * 11).map(|k| (k / 11) * 100 + k % 11).collect();
    let starts = [[0, 0], [3, 4], [8, 5], [15, 10], [-4, 2]];
    let idx: Vec<i32> = starts.iter().flatten().copied().collect();
    let r = run(text, &[s32s(&[16, 11], &op), s32s(&[5, 2], &idx)]);
    let mut want = Vec::new();
    for s in starts {
        // Starts are clamped so the whole slice fits: [0, 16-8] and [0, 11-6].
        let (r0, c0) = (s[0].clamp(0, 8), s[1].clamp(0, 5));
        for i in 0..8 {
            for j in 0..6 {
                want.push((r0 + i) * 100 + c0 + j);
            }
        }
    }
    assert_eq!(r, s32s(&[5, 8, 6], &want));
}

#[test]
fn pad_with_negative_edge_and_interior() {
    let text = "HloModule p\nENTRY e {\n  a = f32[2,2] parameter(0)\n  z = f32[] constant(0)\n  ROOT p = f32[5,1] pad(a, z), padding=1_1_1x0_-1\n}\n";
    let r = run(text, &[f32s(&[2, 2], &[1.0, 2.0, 3.0, 4.0])]);
    assert_eq!(r, f32s(&[5, 1], &[0.0, 1.0, 0.0, 3.0, 0.0]));
}

#[test]
fn reduce_window_valid_and_same() {
    let text = "HloModule w\nmin {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT m = f32[] minimum(a, b)\n}\nENTRY e {\n  x = f32[5] parameter(0)\n  big = f32[] constant(3.40282347e+38)\n  v = f32[2] reduce-window(x, big), window={size=3 stride=2}, to_apply=min\n  s = f32[3] reduce-window(x, big), window={size=3 stride=2 pad=1_1}, to_apply=min\n  ROOT t = (f32[2], f32[3]) tuple(v, s)\n}\n";
    let r = run(text, &[f32s(&[5], &[10000.0, 1000.0, 100.0, 10.0, 1.0])]);
    assert_eq!(
        r,
        Literal::Tuple(vec![
            f32s(&[2], &[100.0, 1.0]),
            f32s(&[3], &[1000.0, 10.0, 1.0])
        ])
    );
}

#[test]
fn reduce_3d_examples() {
    // The spec's 3-D array: two 2x3 planes {{1,2,3},{4,5,6}} and {{7,8,9},{10,11,12}}... here
    // as [2,2,3] with the spec's sums over each dimension set.
    let text = "HloModule r\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  x = f32[4,2,3] parameter(0)\n  z = f32[] constant(0)\n  r0 = f32[2,3] reduce(x, z), dimensions={0}, to_apply=add\n  r2 = f32[4,2] reduce(x, z), dimensions={2}, to_apply=add\n  r01 = f32[3] reduce(x, z), dimensions={0,1}, to_apply=add\n  all = f32[] reduce(x, z), dimensions={0,1,2}, to_apply=add\n  ROOT t = (f32[2,3], f32[4,2], f32[3], f32[]) tuple(r0, r2, r01, all)\n}\n";
    // 4 copies of {{1,2,3},{4,5,6}}, as in the spec's example.
    let plane = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let x: Vec<f32> = plane.iter().cycle().take(24).copied().collect();
    let r = run(text, &[f32s(&[4, 2, 3], &x)]);
    assert_eq!(
        r,
        Literal::Tuple(vec![
            f32s(&[2, 3], &[4.0, 8.0, 12.0, 16.0, 20.0, 24.0]),
            f32s(&[4, 2], &[6.0, 15.0, 6.0, 15.0, 6.0, 15.0, 6.0, 15.0]),
            f32s(&[3], &[20.0, 28.0, 36.0]),
            f32s(&[], &[84.0]),
        ])
    );
}

#[test]
fn sort_three_operands() {
    // Sort by the first operand; the others follow (the spec's keys/values example).
    let text = "HloModule s\nless {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  c = f32[] parameter(2)\n  d = f32[] parameter(3)\n  e = s32[] parameter(4)\n  f = s32[] parameter(5)\n  ROOT lt = pred[] compare(a, b), direction=LT\n}\nENTRY e {\n  k = s32[5] parameter(0)\n  v = f32[5] parameter(1)\n  w = s32[5] parameter(2)\n  ROOT s = (s32[5], f32[5], s32[5]) sort(k, v, w), dimensions={0}, is_stable=true, to_apply=less\n}\n";
    let r = run(
        text,
        &[
            s32s(&[5], &[3, 1, 2, 1, 0]),
            f32s(&[5], &[0.3, 0.1, 0.2, 0.15, 0.0]),
            s32s(&[5], &[30, 10, 20, 15, 0]),
        ],
    );
    assert_eq!(
        r,
        Literal::Tuple(vec![
            s32s(&[5], &[0, 1, 1, 2, 3]),
            f32s(&[5], &[0.0, 0.1, 0.15, 0.2, 0.3]),
            s32s(&[5], &[0, 10, 15, 20, 30]),
        ])
    );
}

#[test]
fn clamp_select_iota() {
    let text = "HloModule c\nENTRY e {\n  lo = f32[] constant(0)\n  hi = f32[] constant(1)\n  x = f32[4] parameter(0)\n  c = f32[4] clamp(lo, x, hi)\n  p = pred[4] parameter(1)\n  y = f32[4] parameter(2)\n  s = f32[4] select(p, x, y)\n  i = s32[2,3] iota(), iota_dimension=1\n  j = f32[2,3] iota(), iota_dimension=0\n  ROOT t = (f32[4], f32[4], s32[2,3], f32[2,3]) tuple(c, s, i, j)\n}\n";
    let p = Literal::Array(ArrayLiteral {
        dims: vec![4],
        data: ArrayData::Pred(vec![true, false, true, false]),
    });
    let r = run(
        text,
        &[
            f32s(&[4], &[-1.0, 0.5, 2.0, 1.0]),
            p,
            f32s(&[4], &[9.0, 8.0, 7.0, 6.0]),
        ],
    );
    assert_eq!(
        r,
        Literal::Tuple(vec![
            f32s(&[4], &[0.0, 0.5, 1.0, 1.0]),
            f32s(&[4], &[-1.0, 8.0, 2.0, 6.0]),
            s32s(&[2, 3], &[0, 1, 2, 0, 1, 2]),
            f32s(&[2, 3], &[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]),
        ])
    );
}

#[test]
fn set_dimension_size_sums() {
    let text = "HloModule d\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nmul {\n  c = f32[] parameter(0)\n  d = f32[] parameter(1)\n  ROOT m = f32[] multiply(c, d)\n}\nENTRY e {\n  v = f32[10] parameter(0)\n  five = s32[] constant(5)\n  six = s32[] constant(6)\n  p5 = f32[<=10] set-dimension-size(v, five), dimensions={0}\n  p6 = f32[<=10] set-dimension-size(v, six), dimensions={0}\n  z = f32[] constant(0)\n  one = f32[] constant(1)\n  s5 = f32[] reduce(p5, z), dimensions={0}, to_apply=add\n  m5 = f32[] reduce(p5, one), dimensions={0}, to_apply=mul\n  s6 = f32[] reduce(p6, z), dimensions={0}, to_apply=add\n  ROOT t = (f32[], f32[], f32[]) tuple(s5, m5, s6)\n}\n";
    let v: Vec<f32> = (1..=10).map(|x| x as f32).collect();
    let r = run(text, &[f32s(&[10], &v)]);
    assert_eq!(
        r,
        Literal::Tuple(vec![
            f32s(&[], &[15.0]),
            f32s(&[], &[120.0]),
            f32s(&[], &[21.0])
        ])
    );
}
