//! Every worked example of XLA's broadcasting document (`shared/spec/002_*.txt`) as a builder
//! test: the builder must accept the valid ones with the documented result shape and values
//! (checked by evaluating the built module), and refuse the invalid ones.

use hlo::builder::XlaBuilder;
use hlo::{ArrayData, Literal, Shape};

fn lit(dims: &[usize], v: &[f32]) -> Literal {
    Literal::array(dims.to_vec(), ArrayData::F32(v.to_vec()))
}

fn iota_lit(dims: &[usize]) -> Literal {
    let n: usize = dims.iter().product();
    lit(dims, &(1..=n).map(|x| x as f32).collect::<Vec<_>>())
}

/// Builds `lhs + rhs` with `bd`, evaluates it, returns (dims, values) or the builder error.
fn add(l: &Literal, r: &Literal, bd: &[i64]) -> Result<(Vec<usize>, Vec<f32>), String> {
    let mut b = XlaBuilder::new("bcast");
    let lp = b
        .parameter(0, l.shape(), "lhs")
        .map_err(|e| e.to_string())?;
    let rp = b
        .parameter(1, r.shape(), "rhs")
        .map_err(|e| e.to_string())?;
    let sum = b.add_in_dim(lp, rp, bd).map_err(|e| e.to_string())?;
    let c = b.build(sum).map_err(|e| e.to_string())?;
    // The built module prints as HLO text that parses and verifies again.
    let text = c.to_text();
    let again = hlo::parse(&text).expect("built module re-parses");
    let again = hlo::verified(again).expect("built module re-verifies");
    let out = eval::evaluate(&again, &[l.clone(), r.clone()]).expect("evaluates");
    let a = out.as_array().expect("array result").clone();
    match a.data {
        ArrayData::F32(v) => Ok((a.dims, v)),
        d => panic!("unexpected result type {:?}", d.element_type()),
    }
}

/// numpy-style reference: `out[i] = l[map_l(i)] + r[map_r(i)]` where each operand dimension
/// maps to an output dimension and size-1 dimensions are stretched.
fn reference(l: &Literal, lmap: &[usize], r: &Literal, rmap: &[usize], out: &[usize]) -> Vec<f32> {
    let get = |x: &Literal, map: &[usize], idx: &[usize]| -> f32 {
        let a = x.as_array().unwrap();
        let mut flat = 0;
        for (d, &o) in map.iter().enumerate() {
            let i = if a.dims[d] == 1 { 0 } else { idx[o] };
            flat = flat * a.dims[d] + i;
        }
        match &a.data {
            ArrayData::F32(v) => v[flat],
            _ => unreachable!(),
        }
    };
    let n: usize = out.iter().product();
    (0..n)
        .map(|mut f| {
            let mut idx = vec![0; out.len()];
            for d in (0..out.len()).rev() {
                idx[d] = f % out[d];
                f /= out[d];
            }
            get(l, lmap, &idx) + get(r, rmap, &idx)
        })
        .collect()
}

#[test]
fn matrix_plus_vector_with_dimension_1() {
    let (d, v) = add(
        &lit(&[2, 3], &[1., 2., 3., 4., 5., 6.]),
        &lit(&[3], &[7., 8., 9.]),
        &[1],
    )
    .unwrap();
    assert_eq!(d, vec![2, 3]);
    assert_eq!(v, vec![8., 10., 12., 11., 13., 15.]);
}

#[test]
fn matrix_plus_scalar() {
    let (d, v) = add(
        &lit(&[2, 3], &[1., 2., 3., 4., 5., 6.]),
        &lit(&[], &[7.]),
        &[],
    )
    .unwrap();
    assert_eq!(d, vec![2, 3]);
    assert_eq!(v, vec![8., 9., 10., 11., 12., 13.]);
}

#[test]
fn square_matrix_plus_vector_both_ways() {
    let m = lit(&[3, 3], &[0.; 9]);
    let vec = lit(&[3], &[7., 8., 9.]);
    assert_eq!(
        add(&m, &vec, &[1]).unwrap().1,
        vec![7., 8., 9., 7., 8., 9., 7., 8., 9.]
    );
    assert_eq!(
        add(&m, &vec, &[0]).unwrap().1,
        vec![7., 7., 7., 8., 8., 8., 9., 9., 9.]
    );
}

#[test]
fn matrix_2x3_plus_vector_with_dimension_0_is_invalid() {
    let e = add(&lit(&[2, 3], &[0.; 6]), &lit(&[3], &[7., 8., 9.]), &[0]).unwrap_err();
    assert!(e.contains("cannot be matched"), "{e}");
}

#[test]
fn rank_mismatch_without_broadcast_dimensions_is_invalid() {
    let e = add(&lit(&[2, 3], &[0.; 6]), &lit(&[3], &[7., 8., 9.]), &[]).unwrap_err();
    assert!(e.contains("broadcast_dimensions are required"), "{e}");
}

#[test]
fn cuboid_plus_matrix_with_dimensions_1_2() {
    let (l, r) = (iota_lit(&[2, 3, 4]), iota_lit(&[3, 4]));
    let (d, v) = add(&l, &r, &[1, 2]).unwrap();
    assert_eq!(d, vec![2, 3, 4]);
    assert_eq!(v, reference(&l, &[0, 1, 2], &r, &[1, 2], &[2, 3, 4]));
}

#[test]
fn formal_definition_vector_onto_each_dimension() {
    // MxNxPxQ = 2x3x4x5 and a vector T matched to each dimension in turn.
    let big_dims = [2usize, 3, 4, 5];
    let big = iota_lit(&big_dims);
    for dim in 0..4 {
        let t = iota_lit(&[big_dims[dim]]);
        let (d, v) = add(&big, &t, &[dim as i64]).unwrap();
        assert_eq!(d, big_dims.to_vec());
        assert_eq!(
            v,
            reference(&big, &[0, 1, 2, 3], &t, &[dim], &big_dims),
            "dim {dim}"
        );
    }
}

#[test]
fn formal_definition_matrix_pairs_and_illegal_orders() {
    let big_dims = [2usize, 3, 4, 5];
    let big = iota_lit(&big_dims);
    for pair in [[2usize, 3], [1, 2], [0, 3]] {
        let tv = iota_lit(&[big_dims[pair[0]], big_dims[pair[1]]]);
        let bd = [pair[0] as i64, pair[1] as i64];
        let (_, v) = add(&big, &tv, &bd).unwrap();
        assert_eq!(
            v,
            reference(&big, &[0, 1, 2, 3], &tv, &pair, &big_dims),
            "{pair:?}"
        );
    }
    // V to N and T to P (decreasing), and V to both P and N (repeated): illegal.
    let tv = iota_lit(&[4, 3]);
    assert!(add(&big, &tv, &[2, 1])
        .unwrap_err()
        .contains("strictly increasing"));
    let tv = iota_lit(&[3, 3]);
    assert!(add(&big, &tv, &[1, 1])
        .unwrap_err()
        .contains("strictly increasing"));
}

#[test]
fn degenerate_dimension_examples() {
    for (a, b, out) in [
        (vec![2usize, 1], vec![2usize, 3], vec![2usize, 3]),
        (vec![1, 2, 5], vec![7, 2, 5], vec![7, 2, 5]),
        (vec![7, 2, 5], vec![7, 1, 5], vec![7, 2, 5]),
        (vec![2, 1], vec![1, 3], vec![2, 3]),
    ] {
        let (l, r) = (iota_lit(&a), iota_lit(&b));
        let id: Vec<usize> = (0..a.len()).collect();
        let (d, v) = add(&l, &r, &[]).unwrap();
        assert_eq!(d, out);
        assert_eq!(v, reference(&l, &id, &r, &id, &out), "{a:?} + {b:?}");
    }
    let e = add(&iota_lit(&[7, 2, 5]), &iota_lit(&[7, 2, 6]), &[]).unwrap_err();
    assert!(e.contains("incompatible"), "{e}");
}

#[test]
fn composition_vector_plus_1x2_matrix() {
    let (d, v) = add(
        &lit(&[4], &[1., 2., 3., 4.]),
        &lit(&[1, 2], &[5., 6.]),
        &[0],
    )
    .unwrap();
    assert_eq!(d, vec![4, 2]);
    assert_eq!(v, vec![6., 7., 7., 8., 8., 9., 9., 10.]);
}

#[test]
fn composition_1x2_matrix_plus_4x3x1_array() {
    let (l, r) = (iota_lit(&[1, 2]), iota_lit(&[4, 3, 1]));
    let (d, v) = add(&l, &r, &[1, 2]).unwrap();
    assert_eq!(d, vec![4, 3, 2]);
    assert_eq!(v, reference(&l, &[1, 2], &r, &[0, 1, 2], &[4, 3, 2]));
}

#[test]
fn built_modules_carry_explicit_broadcasts() {
    let mut b = XlaBuilder::new("m");
    let x = b
        .parameter(0, Shape::array(hlo::ElementType::F32, &[4]), "x")
        .unwrap();
    let y = b
        .parameter(1, Shape::array(hlo::ElementType::F32, &[1, 2]), "y")
        .unwrap();
    let s = b.add_in_dim(x, y, &[0]).unwrap();
    let text = b.build(s).unwrap().to_text();
    assert!(text.contains("broadcast("), "{text}");
    assert!(text.contains("reshape("), "{text}");
}
