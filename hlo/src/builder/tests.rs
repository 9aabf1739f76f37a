//! Builder unit tests: the ops the builder emits for broadcasting and the older forms.

use super::*;
use crate::shape::Shape;
use crate::types::ElementType::{F32, S32};

fn p(b: &mut XlaBuilder, n: i64, dims: &[i64]) -> XlaOp {
    b.parameter(n, Shape::array(F32, dims), "").unwrap()
}

fn opcodes(c: &XlaComputation) -> Vec<Opcode> {
    c.module.entry().insts.values().map(|i| i.opcode).collect()
}

#[test]
fn scalar_broadcast_emits_a_broadcast() {
    let mut b = XlaBuilder::new("t");
    let x = p(&mut b, 0, &[2, 3]);
    let s = b.constant_f32(7.0).unwrap();
    let r = b.add(x, s).unwrap();
    assert_eq!(b.shape(r), &Shape::array(F32, &[2, 3]));
    let c = b.build(r).unwrap();
    assert_eq!(
        opcodes(&c),
        vec![
            Opcode::Parameter,
            Opcode::Constant,
            Opcode::Broadcast,
            Opcode::Add
        ]
    );
}

#[test]
fn vector_to_matrix_needs_broadcast_dimensions() {
    let mut b = XlaBuilder::new("t");
    let x = p(&mut b, 0, &[2, 3]);
    let v = p(&mut b, 1, &[3]);
    assert!(b.add(x, v).is_err());
    assert!(b.add_in_dim(x, v, &[0]).is_err());
    let r = b.add_in_dim(x, v, &[1]).unwrap();
    let c = b.build(r).unwrap();
    let bc = c
        .module
        .entry()
        .insts
        .values()
        .find(|i| i.opcode == Opcode::Broadcast)
        .unwrap();
    assert_eq!(bc.attrs.dimensions, Some(vec![1]));
}

#[test]
fn degenerate_dimensions_are_reshaped_away_then_broadcast() {
    let mut b = XlaBuilder::new("t");
    let x = p(&mut b, 0, &[2, 1]);
    let y = p(&mut b, 1, &[1, 3]);
    let r = b.add(x, y).unwrap();
    assert_eq!(b.shape(r), &Shape::array(F32, &[2, 3]));
    let c = b.build(r).unwrap();
    let ops = opcodes(&c);
    assert_eq!(ops.iter().filter(|o| **o == Opcode::Reshape).count(), 2);
    assert_eq!(ops.iter().filter(|o| **o == Opcode::Broadcast).count(), 2);
}

#[test]
fn incompatible_shapes_are_errors() {
    let mut b = XlaBuilder::new("t");
    let x = p(&mut b, 0, &[7, 2, 5]);
    let y = p(&mut b, 1, &[7, 2, 6]);
    let e = b.add(x, y).unwrap_err().to_string();
    assert!(e.contains("incompatible"), "{e}");
}

#[test]
fn collapse_is_a_reshape_and_checks_consecutive_dims() {
    let mut b = XlaBuilder::new("t");
    let x = b.parameter(0, Shape::array(S32, &[4, 2, 3]), "x").unwrap();
    assert!(b.collapse(x, &[0, 2]).is_err());
    let r = b.collapse(x, &[1, 2]).unwrap();
    assert_eq!(b.shape(r), &Shape::array(S32, &[4, 6]));
}

#[test]
fn conv_same_padding_keeps_spatial_size() {
    let mut b = XlaBuilder::new("t");
    let x = p(&mut b, 0, &[1, 2, 5, 5]);
    let k = p(&mut b, 1, &[3, 2, 3, 3]);
    let r = b.conv(x, k, &[1, 1], nn::Padding::Same).unwrap();
    assert_eq!(b.shape(r), &Shape::array(F32, &[1, 3, 5, 5]));
    let r2 = b.conv(x, k, &[2, 2], nn::Padding::Valid).unwrap();
    assert_eq!(b.shape(r2), &Shape::array(F32, &[1, 3, 2, 2]));
}

#[test]
fn reducer_subcomputation_is_embedded_and_module_verifies() {
    let mut rb = XlaBuilder::new("sum");
    let a = rb.parameter(0, Shape::scalar(F32), "a").unwrap();
    let c = rb.parameter(1, Shape::scalar(F32), "b").unwrap();
    let s = rb.add(a, c).unwrap();
    let sum = rb.build(s).unwrap();
    let mut b = XlaBuilder::new("main");
    let x = p(&mut b, 0, &[4, 3]);
    let z = b.constant_f32(0.0).unwrap();
    let r = b.reduce(&[x], &[z], &sum, &[1]).unwrap();
    let _ = b.cross_replica_sum(r, &[]).unwrap();
    let built = b.build(r).unwrap();
    assert_eq!(built.module.comps.len(), 3);
    let text = built.to_text();
    let again = crate::parse(&text).unwrap();
    crate::verify(&again).unwrap();
}

#[test]
fn older_dot_and_rng_bernoulli_forms() {
    let mut b = XlaBuilder::new("t");
    let m = p(&mut b, 0, &[2, 3]);
    let v = p(&mut b, 1, &[3]);
    let d = b.dot(m, v).unwrap();
    assert_eq!(b.shape(d), &Shape::array(F32, &[2]));
    let mean = b.constant_f32(0.25).unwrap();
    let r = b.rng_bernoulli(mean, &[4]).unwrap();
    assert_eq!(
        b.shape(r),
        &Shape::array(crate::types::ElementType::U32, &[4])
    );
}
