//! Convolutions whose output pixels are packed side by side in the MXU's columns (a layer with
//! at most half the columns of output features: `docs/compiler.md`, "Convolutions on the
//! MXUs") against the evaluator: streamed from HBM (odd batch over both cores, a packing
//! factor of 3 with a padded width rounded up to it, asymmetric padding, window dilation) and
//! the direct lowering (f32 in six passes, an odd output width so each row's last pixel is
//! stored alone). Forms the flattened-row lowering does not take (stride 2, feature groups,
//! reversed windows) still match, through the other lowerings.

mod chip_common;

use chip_common::chip_matches_evaluator_on;

fn arch() -> arch::ArchConfig {
    arch::ArchConfig::resolve("tpu-v4", &[] as &[&str]).unwrap()
}

/// The widest weight tile the program loads (`mxu.ldw n=`).
fn widest_ldw(c: &compiler::Compiled) -> u32 {
    c.program
        .code
        .iter()
        .filter_map(|i| match *i {
            isa::Inst::MxuLdw { n, .. } => Some(n),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

/// `ROOT y = conv(x, k)` (or `negate(conv)` when `wrap`, so the result is not the module's
/// own and the layer is not streamed) on random inputs, chip against evaluator.
#[allow(clippy::too_many_arguments)]
fn conv(
    ty: &str,
    x: [usize; 4],
    k: [usize; 4],
    out: [usize; 2],
    window: &str,
    extra: &str,
    wrap: bool,
    tol: f64,
) -> compiler::Compiled {
    let o = k[3];
    let ys = format!("f32[{},{},{},{o}]", x[0], out[0], out[1]);
    let body = if wrap {
        format!(
            "  c = {ys} convolution(x, k), window={{{window}}}, dim_labels=b01f_01io->b01f{extra}\n  \
             ROOT y = {ys} negate(c)\n"
        )
    } else {
        format!(
            "  ROOT y = {ys} convolution(x, k), window={{{window}}}, dim_labels=b01f_01io->b01f{extra}\n"
        )
    };
    let text = format!(
        "HloModule packed\n\nENTRY main {{\n  x = {ty}[{},{},{},{}] parameter(0)\n  \
         k = {ty}[{},{},{},{}] parameter(1)\n{body}}}\n",
        x[0], x[1], x[2], x[3], k[0], k[1], k[2], k[3]
    );
    let mut last = None;
    for seed in [3, 4] {
        last = Some(chip_matches_evaluator_on(
            &arch(),
            &text,
            vec![],
            seed,
            tol,
            false,
        ));
    }
    last.unwrap()
}

#[test]
fn streamed_odd_batch_packs_three_pixels_per_row() {
    // 20 channels in (not dividing 128), 40 out: three pixels of 40 features per MXU row,
    // the padded width 32 rounded up to 33; 3 images over two cores.
    let c = conv(
        "bf16",
        [3, 30, 30, 20],
        [3, 3, 20, 40],
        [30, 30],
        "size=3x3 pad=1_1x1_1",
        "",
        false,
        1e-3,
    );
    assert_eq!(widest_ldw(&c), 120, "packed 3 × 40 columns");
}

#[test]
fn streamed_asymmetric_padding_packs() {
    let c = conv(
        "bf16",
        [2, 40, 37, 12],
        [3, 2, 12, 30],
        [40, 39],
        "size=3x2 pad=0_2x2_1",
        "",
        false,
        1e-3,
    );
    assert!(widest_ldw(&c) > 30, "packed: {}", widest_ldw(&c));
}

#[test]
fn streamed_dilated_window_packs() {
    // Window dilation 2: the packed window of P pixels spans (KW − 1)·2 + P pixels.
    let c = conv(
        "bf16",
        [2, 30, 29, 12],
        [3, 3, 12, 10],
        [30, 29],
        "size=3x3 pad=2_2x1_3 rhs_dilate=2x2",
        "",
        false,
        1e-3,
    );
    assert!(widest_ldw(&c) > 10, "packed: {}", widest_ldw(&c));
}

#[test]
fn direct_f32_odd_output_width_packs() {
    // Not the module's result (so not streamed) and a patch table over VMEM/8: the direct
    // lowering, f32 in six bf16 passes (every kernel part packed); output width 39 is odd, so
    // each row's 19 pairs leave in one store and its last pixel in another.
    let c = conv(
        "f32",
        [2, 40, 38, 32],
        [3, 3, 32, 48],
        [40, 39],
        "size=3x3 pad=1_1x2_1",
        "",
        true,
        1e-4,
    );
    assert_eq!(widest_ldw(&c), 96, "packed 2 × 48 columns");
}

#[test]
fn forms_without_the_flattened_rows_decline_and_match() {
    // Stride 2: one output row per matmul, no packing.
    let c = conv(
        "bf16",
        [2, 30, 30, 20],
        [3, 3, 20, 40],
        [15, 15],
        "size=3x3 stride=2x2 pad=1_1x1_1",
        "",
        false,
        1e-3,
    );
    assert!(widest_ldw(&c) <= 40, "not packed: {}", widest_ldw(&c));
    // Feature groups: im2col per group.
    conv(
        "bf16",
        [2, 20, 20, 40],
        [3, 3, 20, 40],
        [20, 20],
        "size=3x3 pad=1_1x1_1",
        ", feature_group_count=2",
        false,
        1e-3,
    );
    // A reversed window with a large patch table: the direct lowering does not reverse, so
    // it declines (im2col reverses the kernel taps).
    let c = conv(
        "bf16",
        [1, 48, 48, 32],
        [3, 3, 32, 48],
        [48, 48],
        "size=3x3 pad=1_1x1_1 rhs_reversal=1x1",
        "",
        true,
        1e-3,
    );
    assert!(widest_ldw(&c) <= 48, "not packed: {}", widest_ldw(&c));
}

/// The largest row stride of the program's matmuls (`mxu.matmul stride=`, bytes).
fn widest_matmul_stride(c: &compiler::Compiled) -> u32 {
    c.program
        .code
        .iter()
        .filter_map(|i| match *i {
            isa::Inst::MxuMatmul { stride, .. } => Some(stride),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn streamed_small_images_run_on_an_im2col_matrix() {
    // 384 channels over a grid whose padded rows are 70 % more than its output pixels: the
    // share becomes an im2col matrix of the real pixels (rows of 9·384 bf16), over the images
    // of both cores (2 + 1), asymmetric padding.
    let c = conv(
        "bf16",
        [3, 7, 6, 384],
        [3, 3, 384, 128],
        [7, 6],
        "size=3x3 pad=1_1x0_2",
        "",
        false,
        1e-3,
    );
    assert_eq!(widest_matmul_stride(&c), 9 * 384 * 2, "im2col rows");
    // Split by output features (the kernel is larger than the input), window dilation.
    let c = conv(
        "bf16",
        [2, 5, 5, 384],
        [3, 3, 384, 256],
        [5, 5],
        "size=3x3 pad=2_2x2_2 rhs_dilate=2x2",
        "",
        false,
        1e-3,
    );
    assert_eq!(widest_matmul_stride(&c), 9 * 384 * 2, "im2col rows");
}

/// A streamed convolution split by images over tpu-v4's two cores as 9 + 8: the smaller share
/// plans fewer, larger chunks (8 of 256 rows against 12 of 192), but the staging buffers are
/// sized for the larger share's chunks; the chunks are cut to fit them. Before, each of the
/// second core's chunks spilled 64 rows into the next buffer and 25,094 of 426,496 results were
/// wrong.
#[test]
fn a_core_with_fewer_images_keeps_its_chunks_within_the_staging_buffers() {
    let text = "HloModule c17\n\nENTRY e {\n  x = bf16[17,14,14,64] parameter(0)\n  k = \
                bf16[3,3,64,128] parameter(1)\n  ROOT y = f32[17,14,14,128] convolution(x, k), \
                window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n}\n";
    let v4 = arch::ArchConfig::preset("tpu-v4").unwrap();
    chip_matches_evaluator_on(&v4, text, vec![], 3, 1e-4, false);
}
