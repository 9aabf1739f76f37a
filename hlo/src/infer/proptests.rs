//! Property test: on arbitrary operand shapes and attributes, shape inference never panics,
//! and every shape it accepts is well formed (the invariant later stages rely on). Operand
//! counts follow the opcode's arity and operands are often identical, so deep rules run
//! (measured: about a quarter of the 3000 cases are accepted).

use super::*;
use crate::attrs::{
    ComparisonDirection, ConvDims, FftType, PadDim, ReplicaGroups, SliceDim, WindowDim,
};
use proptest::prelude::*;

const TYPES: &[ElementType] = &[
    ElementType::Pred,
    ElementType::S8,
    ElementType::S32,
    ElementType::U32,
    ElementType::U64,
    ElementType::BF16,
    ElementType::F32,
    ElementType::F64,
    ElementType::C64,
];

fn small_dim() -> impl Strategy<Value = i64> {
    prop_oneof![4 => -1i64..6, 1 => Just(i64::MAX / 3)]
}

fn dims_list() -> impl Strategy<Value = Vec<i64>> {
    prop::collection::vec(-1i64..5, 0..4)
}

fn array_shape() -> impl Strategy<Value = Shape> {
    (0..TYPES.len(), prop::collection::vec(0i64..5, 0..4))
        .prop_map(|(t, d)| Shape::array(TYPES[t], &d))
}

fn any_shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        6 => array_shape(),
        1 => Just(Shape::Token),
        1 => prop::collection::vec(array_shape(), 0..3).prop_map(Shape::Tuple),
    ]
}

fn window() -> impl Strategy<Value = Vec<WindowDim>> {
    prop::collection::vec(
        (
            small_dim(),
            small_dim(),
            -2i64..3,
            -2i64..3,
            small_dim(),
            small_dim(),
        )
            .prop_map(|(size, stride, lo, hi, l, r)| WindowDim {
                size,
                stride,
                pad_lo: lo,
                pad_hi: hi,
                lhs_dilate: l,
                rhs_dilate: r,
                reversal: false,
            }),
        0..4,
    )
}

fn attrs() -> impl Strategy<Value = Attrs> {
    let a = (
        prop::option::of(dims_list()),
        prop::option::of(-1i64..4),
        prop::option::of(prop::collection::vec((-1i64..6, -1i64..6, -1i64..3), 0..4)),
        prop::option::of(prop::collection::vec((-2i64..3, -2i64..3, -1i64..2), 0..4)),
        prop::option::of(window()),
        prop::option::of(dims_list()),
        prop::option::of(dims_list()),
        prop::option::of(dims_list()),
    );
    let b = (
        prop::option::of(dims_list()),
        prop::option::of(dims_list()),
        prop::option::of(dims_list()),
        prop::option::of(dims_list()),
        prop::option::of(-1i64..5),
        prop::option::of(prop::collection::vec(
            prop::collection::vec(-1i64..5, 0..4),
            0..3,
        )),
        prop::option::of(-1i64..5),
        prop::option::of((dims_list(), dims_list(), dims_list())),
    );
    (a, b).prop_map(
        |((dims, idx, slice, pad, win, lb, lc, rc), (od, csd, sim, ss, ivd, groups, k, conv))| {
            let mut at = Attrs {
                dimensions: dims.clone(),
                iota_dimension: idx,
                index: idx,
                parameter_number: idx,
                slice: slice.map(|v| {
                    v.into_iter()
                        .map(|(start, limit, stride)| SliceDim {
                            start,
                            limit,
                            stride,
                        })
                        .collect()
                }),
                padding: pad.map(|v| {
                    v.into_iter()
                        .map(|(lo, hi, interior)| PadDim { lo, hi, interior })
                        .collect()
                }),
                window: win,
                lhs_batch_dims: lb.clone(),
                rhs_batch_dims: lb,
                lhs_contracting_dims: lc,
                rhs_contracting_dims: rc,
                offset_dims: od.clone(),
                update_window_dims: od,
                collapsed_slice_dims: csd.clone(),
                inserted_window_dims: csd,
                start_index_map: sim.clone(),
                scatter_dims_to_operand_dims: sim,
                slice_sizes: ss.clone(),
                dynamic_slice_sizes: ss,
                index_vector_dim: ivd,
                replica_groups: groups.map(ReplicaGroups::List),
                source_target_pairs: dims
                    .map(|d| d.chunks(2).map(|c| (c[0], *c.last().unwrap())).collect()),
                k,
                feature_index: k,
                exponent_bits: k,
                mantissa_bits: idx,
                direction: Some(ComparisonDirection::Lt),
                fft_type: Some(FftType::Rfft),
                fft_length: Some(vec![4]),
                to_apply: Some(CompId::new(0)),
                condition: Some(CompId::new(1)),
                body: Some(CompId::new(0)),
                channel_id: Some(1),
                ..Default::default()
            };
            if let Some((a, b, c)) = conv {
                let g = |v: &[i64], i: usize| v.get(i).copied().unwrap_or(0);
                at.dim_labels = Some(ConvDims {
                    input_batch: g(&a, 0),
                    input_feature: g(&a, 1),
                    input_spatial: a.iter().skip(2).copied().collect(),
                    kernel_input_feature: g(&b, 0),
                    kernel_output_feature: g(&b, 1),
                    kernel_spatial: b.iter().skip(2).copied().collect(),
                    output_batch: g(&c, 0),
                    output_feature: g(&c, 1),
                    output_spatial: c.iter().skip(2).copied().collect(),
                });
            }
            at
        },
    )
}

fn sigs(c: CompId) -> Option<ProgramShape> {
    let f = Shape::scalar(ElementType::F32);
    match c.index() {
        0 => Some(ProgramShape {
            params: vec![f.clone(), f.clone()],
            result: f,
        }),
        1 => Some(ProgramShape {
            params: vec![f],
            result: Shape::scalar(ElementType::Pred),
        }),
        _ => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn inference_never_panics_and_accepts_only_well_formed_shapes(
        op in 0..Opcode::ALL.len(),
        operands in prop::collection::vec(any_shape(), 0..5),
        attrs in attrs(),
        declared in prop::option::of(any_shape()),
        replicas in 1i64..5,
        same in any::<bool>(),
    ) {
        let cx = InferCtx { called: &sigs, replica_count: replicas, num_partitions: 1 };
        let opcode = Opcode::ALL[op];
        // Bias towards the op's arity and identical operands so that deep rules run.
        let mut operands = operands;
        if same && !operands.is_empty() {
            let first = operands[0].clone();
            operands.iter_mut().for_each(|o| *o = first.clone());
        }
        let want = match opcode.arity() {
            crate::opcode::Arity::Fixed(k) => k,
            crate::opcode::Arity::AtLeast(k) => k.max(operands.len()),
            crate::opcode::Arity::Range(lo, hi) => operands.len().clamp(lo, hi),
        };
        operands.resize(want, Shape::scalar(ElementType::F32));
        let refs: Vec<&Shape> = operands.iter().collect();
        if let Ok(s) = infer_shape(&cx, opcode, &refs, &attrs, declared.as_ref()) {
            prop_assert_eq!(check_shape(&s), Ok(()));
        }
    }
}
