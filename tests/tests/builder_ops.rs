//! The builder constructs every op of the specification (including the older forms), and the
//! module it builds prints as HLO text that parses and verifies again (what `systole check`
//! does).

use hlo::builder::{
    DotDimensionNumbers, GatherDimensionNumbers, Padding, ScatterDimensionNumbers, XlaBuilder,
    XlaComputation, XlaOp,
};
use hlo::{
    ArrayShape, ComparisonDirection, ElementType as T, FftType, Literal, Opcode, RngAlgorithm,
    Shape, TransposeKind,
};

fn scalar_binary(
    name: &str,
    ty: T,
    op: impl Fn(&mut XlaBuilder, XlaOp, XlaOp) -> XlaOp,
) -> XlaComputation {
    let mut b = XlaBuilder::new(name);
    let x = b.parameter(0, Shape::scalar(ty), "x").unwrap();
    let y = b.parameter(1, Shape::scalar(ty), "y").unwrap();
    let r = op(&mut b, x, y);
    b.build(r).unwrap()
}

fn sum(ty: T) -> XlaComputation {
    scalar_binary("sum", ty, |b, x, y| b.add(x, y).unwrap())
}

fn ge(ty: T) -> XlaComputation {
    scalar_binary("ge", ty, |b, x, y| b.ge(x, y).unwrap())
}

fn f32s(dims: &[i64]) -> Shape {
    Shape::array(T::F32, dims)
}

/// Parses the printed text and verifies it, as `systole check` does.
fn check(c: &XlaComputation) {
    let text = c.to_text();
    let m = hlo::parse(&text).unwrap_or_else(|e| panic!("{}\n{text}", e.render("built", &text)));
    let m = hlo::verified(m).unwrap_or_else(|e| panic!("{}\n{text}", e.render("built", &text)));
    assert_eq!(
        hlo::print(&m),
        text,
        "printing a built module is a fixed point"
    );
}

fn opcodes(c: &XlaComputation) -> std::collections::BTreeSet<&'static str> {
    c.module
        .comps
        .values()
        .flat_map(|c| c.insts.values().map(|i| i.opcode.name()))
        .collect()
}

#[test]
fn elementwise_and_conversions() {
    let mut b = XlaBuilder::new("ew");
    let x = b.parameter(0, f32s(&[2, 3]), "x").unwrap();
    let i = b.parameter(1, Shape::array(T::S32, &[2, 3]), "i").unwrap();
    let mut outs = vec![];
    for f in [
        XlaBuilder::abs,
        XlaBuilder::cbrt,
        XlaBuilder::ceil,
        XlaBuilder::cos,
        XlaBuilder::erf,
        XlaBuilder::exp,
        XlaBuilder::expm1,
        XlaBuilder::floor,
        XlaBuilder::log,
        XlaBuilder::log1p,
        XlaBuilder::logistic,
        XlaBuilder::neg,
        XlaBuilder::round,
        XlaBuilder::round_nearest_even,
        XlaBuilder::rsqrt,
        XlaBuilder::sign,
        XlaBuilder::sin,
        XlaBuilder::sqrt,
        XlaBuilder::tan,
        XlaBuilder::tanh,
        XlaBuilder::real,
        XlaBuilder::imag,
    ] {
        outs.push(f(&mut b, x).unwrap());
    }
    outs.push(b.is_finite(x).unwrap());
    for f in [
        XlaBuilder::clz,
        XlaBuilder::population_count,
        XlaBuilder::not,
    ] {
        outs.push(f(&mut b, i).unwrap());
    }
    for f in [
        XlaBuilder::add,
        XlaBuilder::sub,
        XlaBuilder::mul,
        XlaBuilder::div,
        XlaBuilder::rem,
        XlaBuilder::max,
        XlaBuilder::min,
        XlaBuilder::pow,
        XlaBuilder::atan2,
        XlaBuilder::complex,
    ] {
        outs.push(f(&mut b, x, x).unwrap());
    }
    for f in [
        XlaBuilder::and,
        XlaBuilder::or,
        XlaBuilder::xor,
        XlaBuilder::shift_left,
        XlaBuilder::shift_right_arithmetic,
        XlaBuilder::shift_right_logical,
    ] {
        outs.push(f(&mut b, i, i).unwrap());
    }
    for d in ComparisonDirection::ALL {
        outs.push(b.compare(x, x, d, None, &[]).unwrap());
        outs.push(b.compare_total_order(x, x, d).unwrap());
    }
    outs.push(b.convert_element_type(x, T::BF16).unwrap());
    outs.push(b.bitcast_convert_type(x, T::U8).unwrap());
    outs.push(b.bitcast_convert_type(x, T::S32).unwrap());
    outs.push(b.reduce_precision(x, 5, 10).unwrap());
    let lo = b.constant_f32(-1.0).unwrap();
    let hi = b.constant_f32(1.0).unwrap();
    outs.push(b.clamp(lo, x, hi).unwrap());
    let p = b.lt(x, x).unwrap();
    outs.push(b.select(p, x, x).unwrap());
    outs.push(b.iota(ArrayShape::new(T::S32, &[4, 5]), 1).unwrap());
    let r = b.tuple(&outs).unwrap();
    let c = b.build(r).unwrap();
    check(&c);
    assert!(opcodes(&c).len() > 45, "{:?}", opcodes(&c));
}

#[test]
fn data_movement() {
    let mut b = XlaBuilder::new("mv");
    let x = b.parameter(0, f32s(&[4, 6]), "x").unwrap();
    let idx = b
        .parameter(1, Shape::array(T::S32, &[3, 1]), "idx")
        .unwrap();
    let upd = b.parameter(2, f32s(&[3, 6]), "upd").unwrap();
    let zero = b.constant_f32(0.0).unwrap();
    let one = b.constant_s32(1).unwrap();
    let outs = vec![
        b.reshape(x, &[2, 12]).unwrap(),
        b.reshape_with_order(x, &[1, 0], &[24]).unwrap(),
        b.collapse(x, &[0, 1]).unwrap(),
        b.broadcast(x, &[2]).unwrap(),
        b.broadcast_in_dim(x, &[4, 5, 6], &[0, 2]).unwrap(),
        b.transpose(x, &[1, 0]).unwrap(),
        b.rev(x, &[0]).unwrap(),
        b.slice(x, &[0, 1], &[4, 6], &[2, 2]).unwrap(),
        b.slice_in_dim(x, 1, 3, 1, 0).unwrap(),
        b.dynamic_slice(x, &[one, one], &[2, 2]).unwrap(),
        b.pad(x, zero, &[(1, -1, 0), (0, 2, 1)]).unwrap(),
        b.concat_in_dim(&[x, x], 0).unwrap(),
        b.gather(
            x,
            idx,
            &GatherDimensionNumbers {
                offset_dims: vec![1],
                collapsed_slice_dims: vec![0],
                start_index_map: vec![0],
                index_vector_dim: 1,
                ..Default::default()
            },
            &[1, 6],
            false,
        )
        .unwrap(),
        b.scatter(
            &[x],
            idx,
            &[upd],
            &sum(T::F32),
            &ScatterDimensionNumbers {
                update_window_dims: vec![1],
                inserted_window_dims: vec![0],
                scatter_dims_to_operand_dims: vec![0],
                index_vector_dim: 1,
                ..Default::default()
            },
            false,
            false,
        )
        .unwrap(),
        b.get_dimension_size(x, 1).unwrap(),
    ];
    let small = b.slice(x, &[0, 0], &[2, 2], &[1, 1]).unwrap();
    let dus = b.dynamic_update_slice(x, small, &[one, one]).unwrap();
    let three = b.constant_s32(3).unwrap();
    let dyn_ = b.set_dimension_size(x, three, 0).unwrap();
    let mut all = outs;
    all.push(dus);
    all.push(dyn_);
    let r = b.tuple(&all).unwrap();
    let c = b.build(r).unwrap();
    check(&c);
}

#[test]
fn linear_algebra_and_windows() {
    let mut b = XlaBuilder::new("nn");
    let m = b.parameter(0, f32s(&[4, 4]), "m").unwrap();
    let img = b.parameter(1, f32s(&[1, 2, 6, 6]), "img").unwrap();
    let ker = b.parameter(2, f32s(&[3, 2, 3, 3]), "ker").unwrap();
    let c64 = b.parameter(3, Shape::array(T::C64, &[8]), "z").unwrap();
    let v = b.parameter(4, f32s(&[4]), "v").unwrap();
    let zero = b.constant_f32(0.0).unwrap();
    let ninf = b.constant_f32(f32::NEG_INFINITY).unwrap();
    let mx = scalar_binary("mx", T::F32, |b, x, y| b.max(x, y).unwrap());
    let pooled = b
        .reduce_window_padded(img, ninf, &mx, &[1, 1, 2, 2], &[1, 1, 2, 2], Padding::Valid)
        .unwrap();
    let lt = scalar_binary("lt", T::F32, |b, x, y| b.lt(x, y).unwrap());
    let mut outs = vec![
        b.dot(m, m).unwrap(),
        b.dot(m, v).unwrap(),
        b.dot(v, v).unwrap(),
        b.dot_general(
            m,
            m,
            &DotDimensionNumbers {
                lhs_contracting_dims: vec![0],
                rhs_contracting_dims: vec![1],
                ..Default::default()
            },
            None,
        )
        .unwrap(),
        b.conv(img, ker, &[1, 1], Padding::Same).unwrap(),
        b.conv_with_general_padding(img, ker, &[2, 2], &[(1, 1), (0, 0)])
            .unwrap(),
        b.conv_general_dilated(
            img,
            ker,
            &[1, 1],
            &[(2, 2), (2, 2)],
            &[1, 1],
            &[2, 2],
            &XlaBuilder::default_conv_dims(2),
            1,
            1,
        )
        .unwrap(),
        b.reduce(&[m], &[zero], &sum(T::F32), &[1]).unwrap(),
        b.reduce_window(
            &[m],
            &[zero],
            &sum(T::F32),
            &[2, 2],
            &[1, 1],
            &[1, 1],
            &[1, 1],
            &[(1, 0), (0, 1)],
        )
        .unwrap(),
        pooled,
        b.select_and_scatter(
            img,
            &ge(T::F32),
            &[1, 1, 2, 2],
            &[1, 1, 2, 2],
            &[],
            pooled,
            zero,
            &sum(T::F32),
        )
        .unwrap(),
        b.sort(&[m], &lt, 1, true).unwrap(),
        b.sort_keys(v, &[v]).unwrap(),
        b.top_k(m, 2, true).unwrap(),
        b.fft(c64, FftType::Fft, &[8]).unwrap(),
        b.fft(v, FftType::Rfft, &[4]).unwrap(),
        b.cholesky(m, true).unwrap(),
        b.triangular_solve(m, m, true, true, false, TransposeKind::NoTranspose)
            .unwrap(),
    ];
    let scale = b.parameter(5, f32s(&[2]), "scale").unwrap();
    outs.push(b.batch_norm_training(img, scale, scale, 0.001, 1).unwrap());
    outs.push(
        b.batch_norm_inference(img, scale, scale, scale, scale, 0.001, 1)
            .unwrap(),
    );
    outs.push(
        b.batch_norm_grad(img, scale, scale, scale, img, 0.001, 1)
            .unwrap(),
    );
    let r = b.tuple(&outs).unwrap();
    let c = b.build(r).unwrap();
    check(&c);
}

#[test]
fn control_flow_and_calls() {
    let body = {
        let mut b = XlaBuilder::new("body");
        let p = b.parameter(0, Shape::scalar(T::S32), "i").unwrap();
        let one = b.constant_s32(1).unwrap();
        let r = b.add(p, one).unwrap();
        b.build(r).unwrap()
    };
    let cond = {
        let mut b = XlaBuilder::new("cond");
        let p = b.parameter(0, Shape::scalar(T::S32), "i").unwrap();
        let ten = b.constant_s32(10).unwrap();
        let r = b.lt(p, ten).unwrap();
        b.build(r).unwrap()
    };
    let neg = {
        let mut b = XlaBuilder::new("negate_it");
        let p = b.parameter(0, Shape::scalar(T::S32), "i").unwrap();
        let r = b.neg(p).unwrap();
        b.build(r).unwrap()
    };
    let mut b = XlaBuilder::new("cf");
    let i = b.parameter(0, Shape::scalar(T::S32), "i").unwrap();
    let v = b.parameter(1, f32s(&[3]), "v").unwrap();
    let w = b.while_loop(&cond, &body, i).unwrap();
    let pred = b.lt(i, w).unwrap();
    let c1 = b.conditional(pred, i, &body, i, &neg).unwrap();
    let c2 = b
        .conditional_indexed(i, &[&body, &neg, &body], &[i, i, i])
        .unwrap();
    let call = b.call(&body, &[c2]).unwrap();
    let comp = b
        .composite_call(&neg, &[call], "my.negate", Some("{k = 1 : i32}"), 1)
        .unwrap();
    let mapped = b.map(&[v, v], &sum(T::F32), &[0]).unwrap();
    let custom = b
        .custom_call("my_target", &[v], f32s(&[3]), "cfg", false)
        .unwrap();
    let t = b.tuple(&[c1, comp, mapped, custom]).unwrap();
    let bar = b.optimization_barrier(t).unwrap();
    let e = b.get_tuple_element(bar, 0).unwrap();
    let tok = b.after_all(&[]).unwrap();
    let tok2 = b.after_all(&[tok, tok]).unwrap();
    let r = b.tuple(&[e, tok2]).unwrap();
    let c = b.build(r).unwrap();
    check(&c);
    assert!(c.to_text().contains("is_composite=true"));
}

#[test]
fn collectives_transfers_and_rng() {
    let mut b = XlaBuilder::new("coll");
    b.set_replica_count(4);
    let x = b.parameter(0, f32s(&[4, 8]), "x").unwrap();
    let groups = vec![vec![0, 1, 2, 3]];
    let tok = b.after_all(&[]).unwrap();
    let fed = b.infeed(tok, f32s(&[2])).unwrap();
    let fed_tok = b.get_tuple_element(fed, 1).unwrap();
    let out_tok = b.outfeed(x, fed_tok).unwrap();
    let sent = b.send(x, out_tok, 1, true).unwrap();
    let recvd = b.recv(sent, f32s(&[2]), 2, true).unwrap();
    let zero = b.constant_f32(0.0).unwrap();
    let one = b.constant_f32(1.0).unwrap();
    let state = b
        .constant(Literal::array(vec![2], hlo::ArrayData::U64(vec![1, 2])))
        .unwrap();
    let outs = vec![
        b.all_reduce(&[x], &sum(T::F32), &groups).unwrap(),
        b.cross_replica_sum(x, &[]).unwrap(),
        b.all_gather(x, 1, &groups).unwrap(),
        b.reduce_scatter(x, &sum(T::F32), 0, &groups).unwrap(),
        b.all_to_all(x, 1, 1, 4, &groups).unwrap(),
        b.all_to_all(x, 1, 0, 4, &groups).unwrap(),
        b.collective_permute(x, &[(0, 1), (1, 2), (2, 3), (3, 0)])
            .unwrap(),
        b.replica_id().unwrap(),
        recvd,
        b.rng_uniform(zero, one, ArrayShape::new(T::F32, &[3]))
            .unwrap(),
        b.rng_normal(zero, one, ArrayShape::new(T::F32, &[3]))
            .unwrap(),
        b.rng_bernoulli(one, &[5]).unwrap(),
        b.rng_bit_generator(RngAlgorithm::ThreeFry, state, ArrayShape::new(T::U32, &[4]))
            .unwrap(),
    ];
    let r = b.tuple(&outs).unwrap();
    let c = b.build(r).unwrap();
    check(&c);
    let ops = opcodes(&c);
    for op in [
        Opcode::AllReduce,
        Opcode::AllGather,
        Opcode::ReduceScatter,
        Opcode::AllToAll,
        Opcode::CollectivePermute,
        Opcode::Infeed,
        Opcode::Outfeed,
        Opcode::Send,
        Opcode::RecvDone,
        Opcode::Rng,
        Opcode::RngBitGenerator,
    ] {
        assert!(ops.contains(op.name()), "{op} missing");
    }
}

#[test]
fn ill_formed_ops_are_refused_with_the_op_name() {
    let mut b = XlaBuilder::new("bad");
    let x = b.parameter(0, f32s(&[4, 6]), "x").unwrap();
    let e = b.reshape(x, &[5, 5]).unwrap_err().to_string();
    assert!(e.contains("reshape"), "{e}");
    let e = b.concat_in_dim(&[x, x], 2).unwrap_err().to_string();
    assert!(e.contains("concatenate"), "{e}");
    let e = b.transpose(x, &[0, 0]).unwrap_err().to_string();
    assert!(e.contains("transpose"), "{e}");
    // One replica (the default) cannot split a dimension four ways.
    let e = b.all_to_all(x, 1, 0, 4, &[]).unwrap_err().to_string();
    assert!(e.contains("all-to-all"), "{e}");
}
