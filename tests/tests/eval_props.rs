//! Property tests of the reference evaluator: transpose and reshape round trips, sort output is
//! sorted and a permutation of its input, and scatter (overwrite) is gather's inverse on unique
//! indices.

use eval::evaluate;
use hlo::{ArrayData, ArrayLiteral, Literal};
use proptest::prelude::*;

fn run(text: &str, args: &[Literal]) -> Literal {
    let m = hlo::parse(text).unwrap_or_else(|e| panic!("{}", e.render("prop.hlo", text)));
    let m = hlo::verified(m).unwrap_or_else(|e| panic!("{}", e.render("prop.hlo", text)));
    evaluate(&m, args).unwrap_or_else(|e| panic!("evaluation failed: {e}\n{text}"))
}

fn s32s(dims: &[usize], v: Vec<i32>) -> Literal {
    Literal::Array(ArrayLiteral {
        dims: dims.to_vec(),
        data: ArrayData::S32(v),
    })
}

fn shape(dims: &[usize]) -> String {
    format!(
        "s32[{}]",
        dims.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(",")
    )
}

fn list(v: &[usize]) -> String {
    v.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn dims_and_perm() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    prop::collection::vec(1usize..4, 1..5).prop_flat_map(|dims| {
        let n = dims.len();
        (
            Just(dims),
            Just((0..n).collect::<Vec<usize>>()).prop_shuffle(),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn transpose_round_trip((dims, perm) in dims_and_perm()) {
        let n: usize = dims.iter().product();
        let x = s32s(&dims, (0..n as i32).collect());
        let tdims: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
        let mut inv = vec![0; perm.len()];
        for (i, &p) in perm.iter().enumerate() { inv[p] = i; }
        let text = format!(
            "HloModule t\nENTRY e {{\n  x = {} parameter(0)\n  t = {} transpose(x), dimensions={{{}}}\n  ROOT b = {} transpose(t), dimensions={{{}}}\n}}\n",
            shape(&dims), shape(&tdims), list(&perm), shape(&dims), list(&inv));
        prop_assert_eq!(run(&text, std::slice::from_ref(&x)), x);
    }

    #[test]
    fn reshape_round_trip(dims in prop::collection::vec(1usize..5, 0..4), split in 1usize..4) {
        let n: usize = dims.iter().product();
        let x = s32s(&dims, (0..n as i32).map(|v| v * 7 - 3).collect());
        // Flatten, then reshape to [split', n/split'] when it divides, then back.
        let mid = if n.is_multiple_of(split) { vec![split, n / split] } else { vec![n] };
        let text = format!(
            "HloModule r\nENTRY e {{\n  x = {} parameter(0)\n  f = {} reshape(x)\n  m = {} reshape(f)\n  ROOT b = {} reshape(m)\n}}\n",
            shape(&dims), shape(&[n]), shape(&mid), shape(&dims));
        prop_assert_eq!(run(&text, std::slice::from_ref(&x)), x);
    }

    #[test]
    fn sort_sorts_and_permutes(v in prop::collection::vec(-20i32..20, 1..40), descending in any::<bool>()) {
        let n = v.len();
        let dir = if descending { "GT" } else { "LT" };
        let text = format!(
            "HloModule s\ncmp {{\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  ROOT c = pred[] compare(a, b), direction={dir}\n}}\nENTRY e {{\n  x = s32[{n}] parameter(0)\n  ROOT s = s32[{n}] sort(x), dimensions={{0}}, to_apply=cmp\n}}\n");
        let out = run(&text, &[s32s(&[n], v.clone())]);
        let Literal::Array(ArrayLiteral { data: ArrayData::S32(got), .. }) = out else { panic!("not s32") };
        let sorted = got
            .windows(2)
            .all(|w| if descending { w[0] >= w[1] } else { w[0] <= w[1] });
        prop_assert!(sorted, "not sorted: {:?}", got);
        let (mut a, mut b) = (v.clone(), got.clone());
        a.sort_unstable();
        b.sort_unstable();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn scatter_inverts_gather(n in 2usize..30, picks in prop::collection::vec(any::<prop::sample::Index>(), 1..10), seed in any::<i32>()) {
        // Unique indices into [n].
        let mut idx: Vec<usize> = picks.iter().map(|p| p.index(n)).collect();
        idx.sort_unstable();
        idx.dedup();
        let k = idx.len();
        let updates: Vec<i32> = (0..k as i32).map(|i| seed.wrapping_mul(31).wrapping_add(i)).collect();
        let text = format!(
            "HloModule g\nset {{\n  a = s32[] parameter(0)\n  ROOT b = s32[] parameter(1)\n}}\nENTRY e {{\n  z = s32[{n}] parameter(0)\n  i = s32[{k},1] parameter(1)\n  u = s32[{k}] parameter(2)\n  s = s32[{n}] scatter(z, i, u), update_window_dims={{}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=set\n  ROOT g = s32[{k}] gather(s, i), offset_dims={{}}, collapsed_slice_dims={{0}}, start_index_map={{0}}, index_vector_dim=1, slice_sizes={{1}}\n}}\n");
        let args = [
            s32s(&[n], vec![-1; n]),
            s32s(&[k, 1], idx.iter().map(|&i| i as i32).collect()),
            s32s(&[k], updates.clone()),
        ];
        prop_assert_eq!(run(&text, &args), s32s(&[k], updates));
    }
}
