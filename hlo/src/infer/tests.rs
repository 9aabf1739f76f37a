//! Unit tests of shape inference on shapes and attributes directly.

use super::*;
use crate::attrs::{ComparisonDirection, ComparisonType, ConvDims, PadDim, SliceDim, WindowDim};
use crate::types::ElementType::{Pred, F32, S32, U32, U64, U8};

fn no_calls(_: CompId) -> Option<ProgramShape> {
    None
}

fn cx() -> InferCtx<'static> {
    InferCtx {
        called: &no_calls,
        replica_count: 4,
        num_partitions: 1,
    }
}

fn sh(t: ElementType, d: &[i64]) -> Shape {
    Shape::array(t, d)
}

fn inf(op: Opcode, ops: &[Shape], attrs: &Attrs, decl: Option<&Shape>) -> InferResult {
    let r: Vec<&Shape> = ops.iter().collect();
    infer_shape(&cx(), op, &r, attrs, decl)
}

#[test]
fn binary_same_dims_and_types() {
    let a = Attrs::default();
    assert_eq!(
        inf(Opcode::Add, &[sh(F32, &[2, 3]), sh(F32, &[2, 3])], &a, None),
        Ok(sh(F32, &[2, 3]))
    );
    let e = inf(Opcode::Add, &[sh(F32, &[2, 3]), sh(F32, &[3, 2])], &a, None).unwrap_err();
    assert!(e.contains("same dimensions"), "{e}");
    let e = inf(Opcode::Add, &[sh(F32, &[2]), sh(S32, &[2])], &a, None).unwrap_err();
    assert!(e.contains("same element type"), "{e}");
    let e = inf(Opcode::And, &[sh(F32, &[2]), sh(F32, &[2])], &a, None).unwrap_err();
    assert!(e.contains("pred or integer"), "{e}");
    let e = inf(Opcode::Add, &[sh(F32, &[2])], &a, None).unwrap_err();
    assert!(e.contains("exactly 2"), "{e}");
    assert_eq!(
        inf(Opcode::Complex, &[sh(F32, &[2]), sh(F32, &[2])], &a, None),
        Ok(sh(ElementType::C64, &[2]))
    );
}

#[test]
fn unary_types() {
    let a = Attrs::default();
    assert!(inf(Opcode::Exp, &[sh(S32, &[2])], &a, None)
        .unwrap_err()
        .contains("floating-point or complex"));
    assert_eq!(
        inf(Opcode::Abs, &[sh(ElementType::C64, &[2])], &a, None),
        Ok(sh(F32, &[2]))
    );
    assert_eq!(
        inf(Opcode::Real, &[sh(F32, &[2])], &a, None),
        Ok(sh(F32, &[2]))
    );
    assert!(inf(Opcode::PopCnt, &[sh(F32, &[])], &a, None).is_err());
    assert_eq!(
        inf(Opcode::IsFinite, &[sh(F32, &[3])], &a, None),
        Ok(sh(Pred, &[3]))
    );
}

#[test]
fn compare_type_consistency() {
    let mut a = Attrs {
        direction: Some(ComparisonDirection::Lt),
        ..Default::default()
    };
    assert_eq!(
        inf(Opcode::Compare, &[sh(S32, &[2]), sh(S32, &[2])], &a, None),
        Ok(sh(Pred, &[2]))
    );
    a.comparison_type = Some(ComparisonType::Unsigned);
    let e = inf(Opcode::Compare, &[sh(S32, &[2]), sh(S32, &[2])], &a, None).unwrap_err();
    assert!(e.contains("SIGNED"), "{e}");
}

#[test]
fn reshape_and_broadcast_need_declared() {
    let a = Attrs::default();
    let e = inf(Opcode::Reshape, &[sh(F32, &[6])], &a, None).unwrap_err();
    assert!(e.contains("result shape must be given"), "{e}");
    assert!(inf(
        Opcode::Reshape,
        &[sh(F32, &[6])],
        &a,
        Some(&sh(F32, &[2, 3]))
    )
    .is_ok());
    assert!(inf(
        Opcode::Reshape,
        &[sh(F32, &[6])],
        &a,
        Some(&sh(F32, &[2, 4]))
    )
    .unwrap_err()
    .contains("element count"));
    let b = Attrs {
        dimensions: Some(vec![1, 0]),
        ..Default::default()
    };
    let e = inf(
        Opcode::Broadcast,
        &[sh(F32, &[2, 2])],
        &b,
        Some(&sh(F32, &[2, 2, 2])),
    )
    .unwrap_err();
    assert!(e.contains("strictly increasing"), "{e}");
    let b = Attrs {
        dimensions: Some(vec![1]),
        ..Default::default()
    };
    assert!(inf(
        Opcode::Broadcast,
        &[sh(F32, &[3])],
        &b,
        Some(&sh(F32, &[2, 3]))
    )
    .is_ok());
    assert!(inf(
        Opcode::Broadcast,
        &[sh(F32, &[3])],
        &b,
        Some(&sh(F32, &[3, 2]))
    )
    .is_err());
}

#[test]
fn bitcast_convert_widths() {
    let a = Attrs::default();
    assert!(inf(
        Opcode::BitcastConvert,
        &[sh(U32, &[2, 2])],
        &a,
        Some(&sh(U64, &[2]))
    )
    .is_ok());
    assert!(inf(
        Opcode::BitcastConvert,
        &[sh(U64, &[2])],
        &a,
        Some(&sh(U32, &[2, 2]))
    )
    .is_ok());
    assert!(inf(
        Opcode::BitcastConvert,
        &[sh(F32, &[3])],
        &a,
        Some(&sh(S32, &[3]))
    )
    .is_ok());
    assert!(inf(
        Opcode::BitcastConvert,
        &[sh(F32, &[3])],
        &a,
        Some(&sh(U8, &[3]))
    )
    .is_err());
    assert!(inf(
        Opcode::BitcastConvert,
        &[sh(U32, &[3])],
        &a,
        Some(&sh(U64, &[3]))
    )
    .is_err());
}

#[test]
fn slice_pad_concat() {
    let a = Attrs {
        slice: Some(vec![SliceDim {
            start: 1,
            limit: 8,
            stride: 3,
        }]),
        ..Default::default()
    };
    assert_eq!(
        inf(Opcode::Slice, &[sh(F32, &[8])], &a, None),
        Ok(sh(F32, &[3]))
    );
    let a = Attrs {
        slice: Some(vec![SliceDim {
            start: 1,
            limit: 9,
            stride: 3,
        }]),
        ..Default::default()
    };
    assert!(inf(Opcode::Slice, &[sh(F32, &[8])], &a, None).is_err());
    let p = Attrs {
        padding: Some(vec![PadDim {
            lo: -1,
            hi: 2,
            interior: 1,
        }]),
        ..Default::default()
    };
    // 4 + 3*1 - 1 + 2 = 8
    assert_eq!(
        inf(Opcode::Pad, &[sh(F32, &[4]), sh(F32, &[])], &p, None),
        Ok(sh(F32, &[8]))
    );
    let c = Attrs {
        dimensions: Some(vec![1]),
        ..Default::default()
    };
    assert_eq!(
        inf(
            Opcode::Concatenate,
            &[sh(F32, &[2, 3]), sh(F32, &[2, 5])],
            &c,
            None
        ),
        Ok(sh(F32, &[2, 8]))
    );
    assert!(inf(
        Opcode::Concatenate,
        &[sh(F32, &[2, 3]), sh(F32, &[3, 5])],
        &c,
        None
    )
    .is_err());
}

#[test]
fn dot_general() {
    let a = Attrs {
        lhs_batch_dims: Some(vec![0]),
        rhs_batch_dims: Some(vec![0]),
        lhs_contracting_dims: Some(vec![2]),
        rhs_contracting_dims: Some(vec![1]),
        ..Default::default()
    };
    assert_eq!(
        inf(
            Opcode::Dot,
            &[sh(F32, &[5, 2, 3]), sh(F32, &[5, 3, 4])],
            &a,
            None
        ),
        Ok(sh(F32, &[5, 2, 4]))
    );
    let e = inf(
        Opcode::Dot,
        &[sh(F32, &[5, 2, 3]), sh(F32, &[5, 2, 4])],
        &a,
        None,
    )
    .unwrap_err();
    assert!(e.contains("contracting dimension sizes differ"), "{e}");
    let bf = sh(ElementType::BF16, &[2, 2]);
    let m = Attrs {
        lhs_contracting_dims: Some(vec![1]),
        rhs_contracting_dims: Some(vec![0]),
        ..Default::default()
    };
    assert_eq!(
        inf(
            Opcode::Dot,
            &[bf.clone(), bf.clone()],
            &m,
            Some(&sh(F32, &[2, 2]))
        ),
        Ok(sh(F32, &[2, 2]))
    );
    assert_eq!(
        inf(Opcode::Dot, &[bf.clone(), bf], &m, Some(&sh(S32, &[2, 2]))),
        Ok(sh(S32, &[2, 2]))
    );
    let i32s = sh(S32, &[2, 2]);
    assert!(inf(
        Opcode::Dot,
        &[i32s.clone(), i32s],
        &m,
        Some(&sh(ElementType::S8, &[2, 2]))
    )
    .is_err());
}

#[test]
fn convolution_nhwc() {
    let dn = ConvDims {
        input_batch: 0,
        input_feature: 3,
        input_spatial: vec![1, 2],
        kernel_input_feature: 2,
        kernel_output_feature: 3,
        kernel_spatial: vec![0, 1],
        output_batch: 0,
        output_feature: 3,
        output_spatial: vec![1, 2],
    };
    let w = WindowDim {
        stride: 2,
        pad_lo: 1,
        pad_hi: 1,
        ..WindowDim::of_size(3)
    };
    let a = Attrs {
        dim_labels: Some(dn),
        window: Some(vec![w, w]),
        ..Default::default()
    };
    // (5 + 2 - 3) / 2 + 1 = 3
    assert_eq!(
        inf(
            Opcode::Convolution,
            &[sh(F32, &[1, 5, 5, 2]), sh(F32, &[3, 3, 2, 4])],
            &a,
            None
        ),
        Ok(sh(F32, &[1, 3, 3, 4]))
    );
    let a2 = Attrs {
        feature_group_count: Some(2),
        ..a.clone()
    };
    assert!(inf(
        Opcode::Convolution,
        &[sh(F32, &[1, 5, 5, 2]), sh(F32, &[3, 3, 2, 4])],
        &a2,
        None
    )
    .is_err());
}

#[test]
fn collectives_scale_by_group() {
    let g = Attrs {
        dimensions: Some(vec![0]),
        replica_groups: Some(ReplicaGroups::List(vec![vec![0, 1], vec![2, 3]])),
        ..Default::default()
    };
    assert_eq!(
        inf(Opcode::AllGather, &[sh(F32, &[2, 3])], &g, None),
        Ok(sh(F32, &[4, 3]))
    );
    let bad = Attrs {
        replica_groups: Some(ReplicaGroups::List(vec![vec![0, 5]])),
        ..g.clone()
    };
    let e = inf(Opcode::AllGather, &[sh(F32, &[2, 3])], &bad, None).unwrap_err();
    assert!(e.contains("out of range"), "{e}");
    let a2a = Attrs {
        replica_groups: None,
        ..g
    };
    let e = inf(Opcode::AllToAll, &[sh(F32, &[6, 3])], &a2a, None).unwrap_err();
    assert!(e.contains("divisible"), "{e}");
    let p = Attrs {
        source_target_pairs: Some(vec![(0, 1), (2, 1)]),
        ..Default::default()
    };
    assert!(inf(Opcode::CollectivePermute, &[sh(F32, &[2])], &p, None)
        .unwrap_err()
        .contains("target 1"));
}

#[test]
fn absurd_shapes_rejected() {
    let d = sh(F32, &[4_000_000_000_000, 8_000_000_000_000]);
    let a = Attrs {
        parameter_number: Some(0),
        ..Default::default()
    };
    let e = inf(Opcode::Parameter, &[], &a, Some(&d)).unwrap_err();
    assert!(e.contains("size limit"), "{e}");
}

use crate::attrs::ReplicaGroups;

#[test]
fn gather_output_dims_interleave_offsets_and_batch() {
    // jnp.take(x, i, axis=0) on x f32[5,3], i s32[2,4]: output f32[2,4,3].
    let a = Attrs {
        offset_dims: Some(vec![2]),
        collapsed_slice_dims: Some(vec![0]),
        start_index_map: Some(vec![0]),
        index_vector_dim: Some(2),
        slice_sizes: Some(vec![1, 3]),
        ..Default::default()
    };
    assert_eq!(
        inf(
            Opcode::Gather,
            &[sh(F32, &[5, 3]), sh(S32, &[2, 4])],
            &a,
            None
        ),
        Ok(sh(F32, &[2, 4, 3]))
    );
    // The offset dimension first: output f32[3,2,4].
    let b = Attrs {
        offset_dims: Some(vec![0]),
        ..a
    };
    assert_eq!(
        inf(
            Opcode::Gather,
            &[sh(F32, &[5, 3]), sh(S32, &[2, 4])],
            &b,
            None
        ),
        Ok(sh(F32, &[3, 2, 4]))
    );
}

#[test]
fn windows_with_dilation_and_padding() {
    // base 5 dilated by 2 -> 9, padded 1+1 -> 11, window 3 dilated by 2 -> 5, stride 2: (11-5)/2+1 = 4.
    let w = WindowDim {
        size: 3,
        stride: 2,
        pad_lo: 1,
        pad_hi: 1,
        lhs_dilate: 2,
        rhs_dilate: 2,
        reversal: false,
    };
    assert_eq!(window_out(5, &w, 0), Ok(4));
    // A window larger than the padded base gives an empty dimension.
    assert_eq!(window_out(2, &WindowDim::of_size(3), 0), Ok(0));
    assert!(window_out(
        2,
        &WindowDim {
            pad_lo: -5,
            ..WindowDim::of_size(1)
        },
        0
    )
    .is_err());
    assert!(window_out(
        i64::MAX / 2,
        &WindowDim {
            lhs_dilate: 4,
            ..WindowDim::of_size(1)
        },
        0
    )
    .is_err());
}

#[test]
fn fft_shapes() {
    let a = Attrs {
        fft_type: Some(crate::attrs::FftType::Rfft),
        fft_length: Some(vec![8]),
        ..Default::default()
    };
    assert_eq!(
        inf(Opcode::Fft, &[sh(F32, &[2, 8])], &a, None),
        Ok(sh(ElementType::C64, &[2, 5]))
    );
    let a = Attrs {
        fft_type: Some(crate::attrs::FftType::Irfft),
        fft_length: Some(vec![8]),
        ..Default::default()
    };
    assert_eq!(
        inf(Opcode::Fft, &[sh(ElementType::C64, &[2, 5])], &a, None),
        Ok(sh(F32, &[2, 8]))
    );
}

#[test]
fn transfers_and_tokens() {
    let a = Attrs {
        channel_id: Some(1),
        ..Default::default()
    };
    let t = Shape::Token;
    assert_eq!(
        inf(Opcode::Send, &[sh(F32, &[3]), t.clone()], &a, None),
        Ok(Shape::Tuple(vec![
            sh(F32, &[3]),
            sh(U32, &[]),
            Shape::Token
        ]))
    );
    let ctx = Shape::Tuple(vec![sh(F32, &[3]), sh(U32, &[]), Shape::Token]);
    assert_eq!(
        inf(Opcode::RecvDone, &[ctx], &a, None),
        Ok(Shape::Tuple(vec![sh(F32, &[3]), Shape::Token]))
    );
    let e = inf(Opcode::Recv, &[t], &a, None).unwrap_err();
    assert!(e.contains("result shape must be given"), "{e}");
}

#[test]
fn set_dimension_size_makes_dimension_dynamic() {
    let a = Attrs {
        dimensions: Some(vec![0]),
        ..Default::default()
    };
    let r = inf(
        Opcode::SetDimensionSize,
        &[sh(F32, &[7]), sh(S32, &[])],
        &a,
        None,
    )
    .unwrap();
    assert_eq!(r.as_array().unwrap().dynamic, vec![true]);
    assert_eq!(r.to_string(), "f32[<=7]");
}

#[test]
fn computed_result_sizes_are_bounded() {
    // Three f32[2^37] operands (2^39 bytes each, within the limit) concatenate to 1.5 * 2^40.
    let big = sh(F32, &[1 << 37]);
    let a = Attrs {
        dimensions: Some(vec![0]),
        ..Default::default()
    };
    let e = inf(
        Opcode::Concatenate,
        &[big.clone(), big.clone(), big],
        &a,
        None,
    )
    .unwrap_err();
    assert!(e.contains("size limit"), "{e}");
}
