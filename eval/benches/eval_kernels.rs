//! Criterion benchmarks of the evaluator's numeric kernels (`cargo bench -p hlo --bench
//! eval_kernels`):
//! - `dot_f32_1024`: f32 DotGeneral 1024×1024 · 1024×1024 (2·1024³ flops);
//! - `conv3x3_nhwc_resnet`: f32 3×3 convolution, N=8, H=W=56, C=K=64, stride 1, SAME padding,
//!   `b01f_01io->b01f` (2·8·56·56·64·64·9 flops).
//!
//! Each benchmark prints its throughput in GFLOP/s through criterion's `Throughput::Elements`
//! (one "element" = one flop).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use eval::linalg::{conv::convolution, dot::dot_general};
use hlo::{ArrayData, ArrayLiteral, ArrayShape, Attrs, ConvDims, ElementType, WindowDim};
use std::hint::black_box;
use std::time::Duration;

/// Deterministic pseudo-random f32 data in [-1, 1).
fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn lit(dims: &[usize], seed: u64) -> ArrayLiteral {
    ArrayLiteral {
        dims: dims.to_vec(),
        data: ArrayData::F32(data(dims.iter().product(), seed)),
    }
}

fn bench_dot(c: &mut Criterion) {
    let n = 1024;
    let (a, b) = (lit(&[n, n], 1), lit(&[n, n], 2));
    let attrs = Attrs {
        lhs_contracting_dims: Some(vec![1]),
        rhs_contracting_dims: Some(vec![0]),
        ..Attrs::default()
    };
    let out = ArrayShape::new(ElementType::F32, &[n as i64, n as i64]);
    let mut g = c.benchmark_group("eval_kernels");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements(2 * (n * n * n) as u64));
    g.bench_function("dot_f32_1024", |bch| {
        bch.iter(|| dot_general(black_box(&a), black_box(&b), &attrs, &out).unwrap())
    });
    g.finish();
}

fn bench_conv(c: &mut Criterion) {
    let (n, h, w, ci, co) = (8usize, 56usize, 56usize, 64usize, 64usize);
    let x = lit(&[n, h, w, ci], 3);
    let k = lit(&[3, 3, ci, co], 4);
    let labels = ConvDims {
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
    let win = WindowDim {
        pad_lo: 1,
        pad_hi: 1,
        ..WindowDim::of_size(3)
    };
    let attrs = Attrs {
        dim_labels: Some(labels),
        window: Some(vec![win, win]),
        ..Attrs::default()
    };
    let out = ArrayShape::new(ElementType::F32, &[n as i64, h as i64, w as i64, co as i64]);
    let mut g = c.benchmark_group("eval_kernels");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    g.throughput(Throughput::Elements(2 * (n * h * w * ci * co * 9) as u64));
    g.bench_function("conv3x3_nhwc_resnet", |bch| {
        bch.iter(|| convolution(black_box(&x), black_box(&k), &attrs, &out).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench_dot, bench_conv);
criterion_main!(benches);
