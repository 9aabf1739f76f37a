//! Unit tests of the module parser and printer: every syntax construct, JAX-optimized-HLO
//! style input, and malformed inputs with the exact line:col of the error.

use super::*;
use crate::attrs::*;
use crate::literal::{ArrayData, Literal};
use crate::shape::UNBOUNDED;
use crate::types::ElementType;

/// Parses, checks print→parse equality and the printing fixed point, returns the module.
fn rt(text: &str) -> Module {
    let m = parse(text).unwrap_or_else(|e| panic!("{}", e.render("t.hlo", text)));
    let p1 = crate::print(&m);
    let m2 = parse(&p1).unwrap_or_else(|e| panic!("re-parse: {}\n{p1}", e.render("p.hlo", &p1)));
    assert_eq!(m, m2, "print→parse differs:\n{p1}");
    assert_eq!(crate::print(&m2), p1, "print is not a fixed point");
    m
}

/// The single instruction named `name` in the module.
fn inst<'m>(m: &'m Module, name: &str) -> &'m Instruction {
    m.comps
        .values()
        .flat_map(|c| c.insts.values())
        .find(|i| i.name == name)
        .unwrap_or_else(|| panic!("no instruction {name}"))
}

/// One-computation module around the given instruction lines.
fn wrap(body: &str) -> String {
    format!("HloModule t\n\nENTRY main {{\n{body}\n}}\n")
}

/// The error's (line, col) and message.
fn err(text: &str) -> (u32, u32, String) {
    match parse(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(Error::Parse(d)) => (d.span.line, d.span.col, d.message),
        Err(e) => panic!("unexpected error kind {e}"),
    }
}

#[test]
fn header_and_structure() {
    let m = rt("HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[2]{0}, s32[])->(f32[2]{0}, s32[])}, replica_count=4, num_partitions=2, allow_spmd_sharding_propagation_to_output={true}\n\nENTRY %main.3 (x: f32[2], y: s32[]) -> (f32[2], s32[]) {\n  %x = f32[2]{0} parameter(0)\n  %y = s32[] parameter(1)\n  ROOT %t = (f32[2]{0}, s32[]) tuple(f32[2]{0} %x, s32[] %y)\n}\n");
    assert_eq!(m.name, "jit_f");
    assert_eq!(m.config.replica_count, Some(4));
    assert_eq!(m.config.num_partitions, Some(2));
    assert_eq!(m.config.is_scheduled, Some(true));
    assert_eq!(
        m.config
            .entry_computation_layout
            .as_ref()
            .unwrap()
            .params
            .len(),
        2
    );
    assert_eq!(
        m.config.extra,
        vec![(
            "allow_spmd_sharding_propagation_to_output".into(),
            "{true}".into()
        )]
    );
    let e = m.entry();
    assert_eq!(e.name, "main.3");
    assert_eq!(e.insts[e.root].name, "t");
    assert_eq!(e.insts[e.root].operands.len(), 2);
    assert_eq!(e.insts[e.root].span.line, 6);
    assert_eq!(e.insts[e.root].span.col, 8);
}

#[test]
fn entry_defaults_to_last_and_root_to_last() {
    let m = rt("HloModule m\nc1 {\n  a = f32[] parameter(0)\n}\nc2 {\n  b = f32[] parameter(0)\n  c = f32[] negate(b)\n}\n");
    assert_eq!(m.entry().name, "c2");
    assert_eq!(m.entry().insts[m.entry().root].name, "c");
}

#[test]
fn computations_may_be_referenced_before_definition() {
    let m = rt("HloModule m\nENTRY main {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add\n}\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n");
    let r = inst(&m, "r");
    assert_eq!(m.comps[r.attrs.to_apply.unwrap()].name, "add");
    assert_eq!(r.attrs.dimensions, Some(vec![0]));
}

#[test]
fn jax_optimized_style() {
    let text = r#"HloModule jit__lambda, is_scheduled=true, entry_computation_layout={(f32[8,128]{1,0}, f32[128,16]{1,0})->f32[8]{0}}

FileNames
1 "/tmp/dump.py"

FunctionNames
1 "<module>"

FileLocations
1 {file_name_id=1 function_name_id=1 line=10 end_line=10 column=0 end_column=79}

StackFrames
1 {file_location_id=1 parent_frame_id=1}


%fused_computation (param_0: f32[8,128], param_1: f32[128,16]) -> f32[8,16] {
  %param_0 = f32[8,128]{1,0} parameter(0)
  %param_1 = f32[128,16]{1,0} parameter(1)
  ROOT %dot_general.0 = f32[8,16]{1,0} dot(f32[8,128]{1,0} %param_0, f32[128,16]{1,0} %param_1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(<lambda>)/dot_general" stack_frame_id=1}
}

%region_0.2 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0), metadata={op_name="reduce_sum"}
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b), sharding={replicated}
}

ENTRY %main.3 (x.1: f32[8,128], w.1: f32[128,16]) -> f32[8] {
  %x.1 = f32[8,128]{1,0} parameter(0), metadata={op_name="x"}
  %w.1 = f32[128,16]{1,0} parameter(1)
  %ynn_fusion = f32[8,16]{1,0} fusion(%x.1, %w.1), kind=kCustom, calls=%fused_computation, metadata={op_name="jit(<lambda>)/dot_general" stack_frame_id=1}, backend_config={"fusion_config":{"kind":"__ynn_fusion"},"outer_dimension_partitions":[]}
  %constant.1 = f32[] constant(0)
  ROOT %r = f32[8]{0} reduce(%ynn_fusion, %constant.1), dimensions={1}, to_apply=%region_0.2, frontend_attributes={_xla_x="1"}
}
"#;
    let m = rt(text);
    let t = m.trailer.as_deref().unwrap();
    assert!(
        t.starts_with("FileNames\n1 \"/tmp/dump.py\"") && t.ends_with("parent_frame_id=1}"),
        "{t}"
    );
    let f = inst(&m, "ynn_fusion");
    assert_eq!(f.opcode, Opcode::Fusion);
    assert_eq!(f.attrs.fusion_kind.as_deref(), Some("kCustom"));
    assert_eq!(m.comps[f.attrs.calls.unwrap()].name, "fused_computation");
    assert_eq!(f.attrs.extra[0].0, "metadata");
    assert_eq!(
        f.attrs.extra[1],
        (
            "backend_config".into(),
            r#"{"fusion_config":{"kind":"__ynn_fusion"},"outer_dimension_partitions":[]}"#.into()
        )
    );
    assert_eq!(
        inst(&m, "s").attrs.extra,
        vec![("sharding".into(), "{replicated}".into())]
    );
    let printed = crate::print(&m);
    assert!(printed.contains("ynn_fusion = f32[8,16]{1,0} fusion(x.1, w.1), kind=kCustom, calls=fused_computation, metadata={op_name=\"jit(<lambda>)/dot_general\" stack_frame_id=1}, backend_config={"));
    assert!(!printed.contains('%'));
}

#[test]
fn trailer_sections_after_computations() {
    let m = rt("HloModule m\nENTRY e {\n  ROOT a = f32[] constant(1)\n}\n\nFileNames\n1 \"a.py\"\n\nStackFrames\n1 {file_location_id=1 parent_frame_id=1}\n");
    assert_eq!(
        m.trailer.as_deref(),
        Some("FileNames\n1 \"a.py\"\n\nStackFrames\n1 {file_location_id=1 parent_frame_id=1}")
    );
}

#[test]
fn composite_calls() {
    let text = r#"HloModule m
my.comp.1 {
  a = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} negate(a)
}
ENTRY main {
  x = f32[4]{0} parameter(0)
  ROOT c = f32[4]{0} call(x), to_apply=my.comp.1, is_composite=true, frontend_attributes={composite.attributes={a = 2.000000e+00 : f64},composite.name="my.comp",composite.version="0"}
}
"#;
    let m = rt(text);
    let a = &inst(&m, "c").attrs;
    assert_eq!(a.is_composite, Some(true));
    assert_eq!(a.composite_name.as_deref(), Some("my.comp"));
    assert_eq!(
        a.composite_attributes.as_deref(),
        Some("{a = 2.000000e+00 : f64}")
    );
    assert_eq!(a.composite_version, Some(0));
    // The top-level form (no frontend attributes) round-trips too.
    let m = rt(&wrap("  x = f32[4]{0} parameter(0)\n  ROOT c = f32[4]{0} call(x), to_apply=main2, is_composite=true, composite.name=\"n\", composite.attributes={k = 1}, composite.version=2\n}\nmain2 {\n  ROOT y = f32[4]{0} parameter(0)"));
    let a = &inst(&m, "c").attrs;
    assert_eq!(
        (
            a.composite_name.as_deref(),
            a.composite_attributes.as_deref(),
            a.composite_version
        ),
        (Some("n"), Some("{k = 1}"), Some(2))
    );
}

#[test]
fn shape_manipulation_attributes() {
    let m = rt(&wrap(
        "  p = f32[8,6]{1,0} parameter(0)\n  z = f32[] constant(0)\n  s = f32[4,3]{1,0} slice(p), slice={[0:8:2], [0:3]}\n  q = f32[6,13]{1,0} pad(p, z), padding=0_0_0x1_2_1\n  d = f32[2,3]{1,0} dynamic-slice(p, z, z), dynamic_slice_sizes={2,3}\n  i = s32[4,3]{1,0} iota(), iota_dimension=1\n  t = f32[6,8]{0,1} transpose(p), dimensions={1,0}\n  ROOT g = f32[8,6]{1,0} get-tuple-element(p), index=0",
    ));
    assert_eq!(
        inst(&m, "s").attrs.slice.as_ref().unwrap()[0],
        SliceDim {
            start: 0,
            limit: 8,
            stride: 2
        }
    );
    assert_eq!(
        inst(&m, "q").attrs.padding.as_ref().unwrap()[1],
        PadDim {
            lo: 1,
            hi: 2,
            interior: 1
        }
    );
    assert_eq!(inst(&m, "d").attrs.dynamic_slice_sizes, Some(vec![2, 3]));
    assert_eq!(inst(&m, "i").attrs.iota_dimension, Some(1));
    assert_eq!(inst(&m, "g").attrs.index, Some(0));
}

#[test]
fn convolution_dot_gather_scatter() {
    let m = rt(&wrap(concat!(
        "  a = f32[1,6,7,2]{3,2,1,0} parameter(0)\n  w = f32[3,3,2,4]{3,2,1,0} parameter(1)\n",
        "  c = f32[1,4,3,4]{3,2,1,0} convolution(a, w), window={size=3x3 stride=2x2 pad=1_2x0_1 lhs_dilate=1x1 rhs_dilate=2x1 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f, feature_group_count=1, batch_group_count=1, operand_precision={high,highest}\n",
        "  x = f32[2,3,4]{2,1,0} parameter(2)\n  y = f32[2,4,5]{2,1,0} parameter(3)\n",
        "  d = f32[2,3,5]{2,1,0} dot(x, y), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, operand_precision={default,default}, algorithm=dot_bf16_bf16_f32\n",
        "  i = s32[3,1]{1,0} parameter(4)\n",
        "  g = f32[3,1,3]{2,1,0} gather(x, i), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, operand_batching_dims={}, start_indices_batching_dims={}, index_vector_dim=1, slice_sizes={1,3,1}, indices_are_sorted=true\n",
        "  ROOT s = f32[2,3,4]{2,1,0} scatter(x, i, g), update_window_dims={1,2}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, input_batching_dims={}, scatter_indices_batching_dims={}, index_vector_dim=1, indices_are_sorted=false, unique_indices=true, to_apply=main",
    )));
    let c = &inst(&m, "c").attrs;
    let w = c.window.as_ref().unwrap();
    assert_eq!(
        w[0],
        WindowDim {
            size: 3,
            stride: 2,
            pad_lo: 1,
            pad_hi: 2,
            lhs_dilate: 1,
            rhs_dilate: 2,
            reversal: false
        }
    );
    assert!(w[1].reversal);
    assert_eq!(c.dim_labels.as_ref().unwrap().output_feature, 3);
    assert_eq!(
        c.operand_precision,
        Some(vec![Precision::High, Precision::Highest])
    );
    let d = &inst(&m, "d").attrs;
    assert_eq!(d.lhs_batch_dims, Some(vec![0]));
    assert_eq!(d.dot_algorithm.as_deref(), Some("dot_bf16_bf16_f32"));
    let g = &inst(&m, "g").attrs;
    assert_eq!(
        (g.index_vector_dim, g.indices_are_sorted),
        (Some(1), Some(true))
    );
    let s = &inst(&m, "s").attrs;
    assert_eq!(s.unique_indices, Some(true));
    assert_eq!(s.scatter_dims_to_operand_dims, Some(vec![0]));
}

#[test]
fn collectives() {
    let m = rt(&wrap(concat!(
        "  x = f32[4]{0} parameter(0)\n",
        "  a = f32[4]{0} all-reduce(x), channel_id=3, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=main\n",
        "  b = f32[16]{0} all-gather(x), replica_groups=[2,2]<=[4], dimensions={0}\n",
        "  c = f32[4]{0} all-reduce(x), replica_groups=[2,2]<=[2,2]T(1,0), to_apply=main, constrain_layout=false\n",
        "  d = f32[4]{0} collective-permute(x), channel_id=1, source_target_pairs={{0,1},{1,0}}\n",
        "  ROOT e = f32[4]{0} all-to-all(x), replica_groups={}, dimensions={0}",
    )));
    assert_eq!(
        inst(&m, "a").attrs.replica_groups,
        Some(ReplicaGroups::List(vec![vec![0, 1], vec![2, 3]]))
    );
    assert_eq!(inst(&m, "a").attrs.channel_id, Some(3));
    let c = inst(&m, "c").attrs.replica_groups.clone().unwrap();
    assert_eq!(c.expand().unwrap(), vec![vec![0, 2], vec![1, 3]]);
    assert_eq!(
        inst(&m, "d").attrs.source_target_pairs,
        Some(vec![(0, 1), (1, 0)])
    );
    assert_eq!(
        inst(&m, "e").attrs.replica_groups,
        Some(ReplicaGroups::List(vec![]))
    );
}

#[test]
fn control_flow_and_called_computations() {
    let text = "HloModule m\ncond {\n  p = (s32[]) parameter(0)\n  ROOT t = pred[] constant(true)\n}\nbody {\n  ROOT bp = (s32[]) parameter(0)\n}\nb0 {\n  ROOT q = f32[] parameter(0)\n}\nb1 {\n  ROOT r = f32[] parameter(0)\n}\nENTRY main {\n  init = (s32[]) parameter(0)\n  w = (s32[]) while(init), condition=cond, body=body, backend_config={\"known_trip_count\":{\"n\":\"10\"}}\n  k = s32[] parameter(1)\n  v = f32[] parameter(2)\n  c1 = f32[] conditional(k, v, v), branch_computations={b0, b1}\n  pr = pred[] parameter(3)\n  c2 = f32[] conditional(pr, v, v), true_computation=b0, false_computation=b1\n  cc = f32[] custom-call(v), custom_call_target=\"foo\", called_computations={b0}, custom_call_has_side_effect=true, api_version=API_VERSION_TYPED_FFI, opaque=\"x\\\"y\", operand_layout_constraints={f32[]}, output_to_operand_aliasing={{}: (0, {})}, schedule=SCHEDULE_LATEST\n  ROOT s = f32[] add(c1, c2), control-predecessors={w, cc}\n}\n";
    let m = rt(text);
    let w = &inst(&m, "w").attrs;
    assert_eq!(m.comps[w.condition.unwrap()].name, "cond");
    assert_eq!(m.comps[w.body.unwrap()].name, "body");
    let names = |ids: &[CompId]| {
        ids.iter()
            .map(|&c| m.comps[c].name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(inst(&m, "c1").attrs.branch_computations.as_ref().unwrap()),
        vec!["b0", "b1"]
    );
    assert_eq!(
        m.comps[inst(&m, "c2").attrs.false_computation.unwrap()].name,
        "b1"
    );
    let cc = &inst(&m, "cc").attrs;
    assert_eq!(cc.custom_call_target.as_deref(), Some("foo"));
    assert_eq!(cc.opaque.as_deref(), Some("x\"y"));
    assert_eq!(cc.api_version.as_deref(), Some("API_VERSION_TYPED_FFI"));
    assert_eq!(names(cc.called_computations.as_ref().unwrap()), vec!["b0"]);
    assert_eq!(cc.extra.len(), 3);
    let s = inst(&m, "s");
    assert_eq!(s.attrs.control_predecessors.len(), 2);
}

#[test]
fn numerics_and_misc_attributes() {
    let m = rt(&wrap(concat!(
        "  x = f32[4]{0} parameter(0)\n",
        "  c = pred[4]{0} compare(x, x), direction=LT, type=TOTALORDER\n",
        "  rp = f32[4]{0} reduce-precision(x), exponent_bits=5, mantissa_bits=10\n",
        "  f = c64[4]{0} fft(x), fft_type=RFFT, fft_length={4}\n",
        "  lo = f32[] parameter(1)\n",
        "  r = f32[4]{0} rng(lo, lo), distribution=rng_normal\n",
        "  st = u64[2]{0} parameter(2)\n",
        "  rb = (u64[2]{0}, u32[4]{0}) rng-bit-generator(st), algorithm=rng_philox\n",
        "  t = (f32[4]{0}, s32[4]{0}) topk(x), k=4, largest=true\n",
        "  so = f32[4]{0} sort(x), dimensions={0}, is_stable=true, to_apply=main\n",
        "  sc = f32[4]{0} parameter(3)\n",
        "  bn = (f32[4]{0}, f32[4]{0}, f32[4]{0}) batch-norm-training(x, sc, sc), epsilon=0.001, feature_index=0\n",
        "  m = f32[4,4]{1,0} parameter(4)\n",
        "  ch = f32[4,4]{1,0} cholesky(m), lower=true\n",
        "  ts = f32[4,4]{1,0} triangular-solve(m, m), left_side=true, lower=true, transpose_a=NO_TRANSPOSE\n",
        "  ts2 = f32[4,4]{1,0} triangular-solve(m, m), triangular_solve_options={left_side=false lower=true unit_diagonal=true transpose_a=ADJOINT}\n",
        "  tok = token[] after-all()\n",
        "  inf = ((f32[4]{0}), token[]) infeed(tok), infeed_config=\"cfg\"\n",
        "  of = token[] outfeed(x, tok), outfeed_shape=f32[4]{0}, outfeed_config=\"o\"\n",
        "  sn = (f32[4]{0}, u32[], token[]) send(x, tok), channel_id=2, is_host_transfer=true\n",
        "  ROOT out = f32[4]{0} copy(x), sharding={devices=[2]0,1}, metadata={op_name=\"a, b\" source_file=\"x.py\" source_line=3}",
    )));
    let c = &inst(&m, "c").attrs;
    assert_eq!(
        (c.direction, c.comparison_type),
        (
            Some(ComparisonDirection::Lt),
            Some(ComparisonType::TotalOrder)
        )
    );
    assert_eq!(inst(&m, "rp").attrs.mantissa_bits, Some(10));
    assert_eq!(inst(&m, "f").attrs.fft_type, Some(FftType::Rfft));
    assert_eq!(
        inst(&m, "r").attrs.distribution,
        Some(RngDistribution::Normal)
    );
    assert_eq!(
        inst(&m, "rb").attrs.rng_algorithm,
        Some(RngAlgorithm::Philox)
    );
    assert_eq!(inst(&m, "rb").attrs.dot_algorithm, None);
    assert_eq!(
        (inst(&m, "t").attrs.k, inst(&m, "t").attrs.largest),
        (Some(4), Some(true))
    );
    assert_eq!(inst(&m, "bn").attrs.epsilon, Some(0.001));
    assert_eq!(inst(&m, "ch").attrs.lower, Some(true));
    assert_eq!(inst(&m, "ch").attrs.triangular_solve_options, None);
    let ts = inst(&m, "ts").attrs.triangular_solve_options.unwrap();
    assert!(
        ts.left_side
            && ts.lower
            && !ts.unit_diagonal
            && ts.transpose_a == TransposeKind::NoTranspose
    );
    assert_eq!(inst(&m, "ts").attrs.lower, None);
    let ts2 = inst(&m, "ts2").attrs.triangular_solve_options.unwrap();
    assert!(!ts2.left_side && ts2.unit_diagonal && ts2.transpose_a == TransposeKind::Adjoint);
    assert_eq!(inst(&m, "inf").attrs.infeed_config.as_deref(), Some("cfg"));
    assert_eq!(
        inst(&m, "of").attrs.outfeed_shape,
        Some(Shape::array(ElementType::F32, &[4])).map(|s| match s {
            Shape::Array(mut a) => {
                a.layout = Some(crate::shape::Layout::row_major(1));
                Shape::Array(a)
            }
            s => s,
        })
    );
    assert_eq!(inst(&m, "sn").attrs.is_host_transfer, Some(true));
    assert_eq!(
        inst(&m, "out").attrs.extra[1].1,
        "{op_name=\"a, b\" source_file=\"x.py\" source_line=3}"
    );
}

#[test]
fn constants_of_every_form() {
    let m = rt(&wrap(concat!(
        "  a = f32[] constant(-0)\n",
        "  b = f32[5]{0} constant({nan, -nan, inf, -inf, nan(0x1)})\n",
        "  c = f64[2,2]{1,0} constant({ {0.1, 1e+300}, {-2.5e-310, 3} })\n",
        "  d = pred[3]{0} constant({true, false, 1})\n",
        "  e = c64[2]{0} constant({(1, -2), (0.5, nan)})\n",
        "  f = c128[] constant((1e-300, -0))\n",
        "  g = (s32[], (u8[2]{0}, bf16[])) constant((7, ({1, 255}, 0.1)))\n",
        "  h = s64[0]{0} constant({})\n",
        "  i = f16[2]{0} constant({65504, -6.1e-05})\n",
        "  j = f8e4m3fn[3]{0} constant({448, -0.5, nan})\n",
        "  k = s4[2]{0} constant({-8, 7})\n",
        "  l = u64[1]{0} constant({18446744073709551615})\n",
        "  ROOT m = f8e5m2[2]{0} constant({-inf, 57344})",
    )));
    let f32s = |name: &str| match &inst(&m, name).attrs.literal.as_deref().unwrap() {
        Literal::Array(a) => match &a.data {
            ArrayData::F32(v) => v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            d => panic!("{d:?}"),
        },
        l => panic!("{l:?}"),
    };
    assert_eq!(f32s("a"), vec![0x8000_0000]);
    assert_eq!(
        f32s("b"),
        vec![
            0x7fc0_0000,
            0xffc0_0000,
            0x7f80_0000,
            0xff80_0000,
            0x7f80_0001
        ]
    );
    let printed = crate::print(&m);
    assert!(
        printed.contains("constant({nan, -nan, inf, -inf, nan(0x1)})"),
        "{printed}"
    );
    assert!(
        printed.contains("constant({ {0.1, 1e+300}, {-2.5e-310, 3} })"),
        "{printed}"
    );
    assert!(
        printed.contains("constant((7, ({1, 255}, 0.1)))"),
        "{printed}"
    );
    assert!(printed.contains("constant({448, -0.5, nan})"), "{printed}");
    assert!(
        printed.contains("constant({true, false, true})"),
        "{printed}"
    );
}

#[test]
fn shapes_dynamic_and_tiled() {
    let m = rt(&wrap(concat!(
        "  a = f32[<=6]{0} parameter(0)\n",
        "  b = f32[?,2]{1,0} parameter(1)\n",
        "  c = f32[8,128]{1,0:T(8,128)(2,1)S(1)} parameter(2)\n",
        "  d = (f32[], (s32[], /*index=1*/token[]), f32[4000000000000,8000000000000]) parameter(3)\n",
        "  ROOT t = token[] after-all()",
    )));
    let a = inst(&m, "a").shape.as_array().unwrap().clone();
    assert_eq!((a.dims, a.dynamic), (vec![6], vec![true]));
    assert_eq!(inst(&m, "b").shape.as_array().unwrap().dims[0], UNBOUNDED);
    let c = inst(&m, "c")
        .shape
        .as_array()
        .unwrap()
        .layout
        .clone()
        .unwrap();
    assert_eq!(c.tail.as_deref(), Some("T(8,128)(2,1)S(1)"));
    assert_eq!(inst(&m, "d").shape.tuple_depth(), 2);
}

#[test]
fn long_tuple_shapes_print_index_comments() {
    let m = rt(&wrap(
        "  ROOT p = (f32[], f32[], f32[], f32[], f32[], f32[], f32[]) parameter(0)",
    ));
    assert!(
        crate::print(&m).contains("(f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[], f32[])")
    );
}

#[test]
fn comments_are_skipped() {
    rt("// leading comment\nHloModule m /* block */\nENTRY e {\n  a = f32[] parameter(0) // trailing\n  ROOT b = f32[] negate(/* x */ a)\n}\n");
}

// ---- malformed inputs: exact line:col and message ----

#[test]
fn error_locations() {
    let cases: &[(&str, u32, u32, &str)] = &[
        ("HloModul m", 1, 1, "expected 'HloModule'"),
        ("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] add(a, c)\n}\n", 4, 25, "unknown operand 'c'"),
        ("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] broadcast(a), dimesions={0}\n}\n", 4, 33, "unknown attribute 'dimesions'"),
        ("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] frobnicate(a)\n}\n", 4, 19, "unknown opcode 'frobnicate'"),
        ("HloModule m\nENTRY e {\n  a = f33[2] parameter(0)\n}\n", 3, 7, "unknown element type 'f33'"),
        ("HloModule m\nENTRY e {\n  a = f32[2 parameter(0)\n}\n", 3, 13, "expected ',' or ']'"),
        ("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT r = f32[] call(a), to_apply=nowhere\n}\n", 4, 36, "unknown computation 'nowhere'"),
        ("HloModule m\nENTRY e {\n  a = f32[2] constant({1, 2, 3})\n}\n", 3, 30, "too many entries"),
        ("HloModule m\nENTRY e {\n  a = f32[2] constant({1})\n}\n", 3, 25, "expected 2 entries"),
        ("HloModule m\nENTRY e {\n  a = s8[] constant(300)\n}\n", 3, 21, "out of range"),
        ("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  a = f32[] parameter(1)\n}\n", 4, 3, "duplicate instruction name 'a'"),
        ("HloModule m\nc {\n  a = f32[] parameter(0)\n}\nc {\n  b = f32[] parameter(0)\n}\n", 5, 1, "duplicate computation name 'c'"),
        ("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n", 4, 1, "expected '}'"),
        ("HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0)\n  ROOT b = f32[] parameter(1)\n}\n", 4, 8, "second ROOT"),
        ("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] pad(a, a), padding=0_0_0_0\n}\n", 4, 38, "padding of the form"),
        ("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] reverse(a), dimensions={0}, dimensions={0}\n}\n", 4, 47, "given twice"),
        ("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = pred[2] compare(a, a), direction=LTE\n}\n", 4, 45, "unknown comparison direction 'LTE'"),
        ("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] negate(f32[3] a)\n}\n", 4, 33, "written with shape f32[3]"),
        ("HloModule m\nENTRY e {\n  a = f32[2] parameter(0), metadata={op_name=\"x\"\n}\n", 3, 49, "expected '}' to close metadata"),
        ("HloModule m\nENTRY e {\n  a = f32[] constant(\"s\")\n}\n", 3, 22, "expected a number"),
        ("HloModule m\nENTRY e {\n  a = f32[] parameter(0) /* unterminated\n}\n", 3, 26, "unterminated comment"),
        ("HloModule m\nENTRY e {\n}\n", 3, 1, "has no instructions"),
        ("HloModule m\n", 2, 1, "expected a computation"),
        ("HloModule m\nENTRY e {\n  a = f32[1] parameter(0)\n  ROOT c = f32[1] convolution(a, a), window={size=3 stride=1x1}, dim_labels=b0f_0io->b0f\n}\n", 4, 53, "window stride has 2"),
        ("HloModule m\nENTRY e {\n  a = f32[1] parameter(0)\n  ROOT c = f32[1] convolution(a, a), dim_labels=b0f_0io->bf\n}\n", 4, 49, "malformed dim_labels"),
        ("HloModule m\nENTRY e {\n  a = f32[] constant(nan(0x800000))\n}\n", 3, 22, "does not fit"),
        ("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] add(a, a), control-predecessors={zz}\n}\n", 4, 51, "unknown control predecessor 'zz'"),
    ];
    let mut bad = Vec::new();
    for &(text, line, col, msg) in cases {
        let (l, c, m) = err(text);
        if !m.contains(msg) || (l, c) != (line, col) {
            bad.push(format!(
                "got {l}:{c} {m:?}, want {line}:{col} {msg:?} for:\n{text}"
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn hostile_inputs_fail_cleanly() {
    let deep = format!(
        "HloModule m\nENTRY e {{\n  a = {}f32[]{} parameter(0)\n}}\n",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    assert!(err(&deep).2.contains("nested deeper"));
    let deep_lit = format!(
        "HloModule m\nENTRY e {{\n  a = f32[{}] constant(0)\n}}\n",
        vec!["1"; 300].join(",")
    );
    assert!(err(&deep_lit).2.contains("rank 300"));
    let deep_attr = format!(
        "HloModule m\nENTRY e {{\n  a = f32[] parameter(0), metadata={}\n}}\n",
        "{".repeat(10000)
    );
    assert!(err(&deep_attr).2.contains("nesting deeper"));
    let huge = "HloModule m\nENTRY e {\n  a = f32[4000000000000] constant({1})\n}\n";
    assert!(err(huge).2.contains("expected 4000000000000 entries"));
    for t in [
        "",
        "HloModule",
        "HloModule m,",
        "HloModule m, x=",
        "HloModule m\nENTRY",
        "HloModule m\nENTRY e { a = f32[] constant(",
        "\u{feff}\u{0}",
    ] {
        assert!(parse(t).is_err(), "{t:?}");
    }
}

#[test]
fn mesh_replica_groups_parse_and_print_back() {
    let text = "HloModule m, num_partitions=8\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT r = f32[4] all-reduce(x), channel_id=1, replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_1'}, use_global_device_ids=true, to_apply=add\n}\n";
    let m = crate::parse(text).unwrap();
    let printed = crate::print::print(&m);
    assert!(
        printed.contains("replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_1'}"),
        "{printed}"
    );
    let r = m.entry().insts.values().last().unwrap();
    assert_eq!(
        r.attrs.replica_groups.as_ref().unwrap().expand().unwrap(),
        vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]
    );
    // Unknown axis names are an error at their position.
    let bad = text.replace("{'axis_1'}", "{'axis_9'}");
    let e = crate::parse(&bad).unwrap_err().render("m.hlo", &bad);
    assert!(e.contains("'axis_9' is not an axis of the mesh"), "{e}");
}
