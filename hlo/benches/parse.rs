//! Parser (and printer) throughput on a generated module of at least 10 MB of HLO text in the
//! style JAX prints after optimization: `%` names, long-form operands with shapes, metadata,
//! constants, fusions with called computations, reductions with `to_apply`.
//!
//! Run: `cargo bench -p hlo --bench parse`; criterion reports bytes/second.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::fmt::Write;

/// A module of at least `min_bytes` of text: computations of 1000 instructions each.
fn generate(min_bytes: usize) -> String {
    let mut s = String::with_capacity(min_bytes + (1 << 20));
    s.push_str("HloModule bench, entry_computation_layout={(f32[8,128]{1,0})->f32[8]{0}}\n\n");
    s.push_str("%add_f32 (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(f32[] %a, f32[] %b)\n}\n\n");
    let mut c = 0usize;
    while s.len() < min_bytes {
        let _ = writeln!(
            s,
            "%fused_computation.{c} (param_0.{c}: f32[8,128]) -> f32[8,128] {{"
        );
        let _ = writeln!(s, "  %param_0.{c} = f32[8,128]{{1,0}} parameter(0)");
        let mut prev = format!("param_0.{c}");
        for i in 0..1000 {
            let name = format!("v{c}.{i}");
            let meta = format!("metadata={{op_name=\"jit(f)/jit(main)/op_{i}\" source_file=\"model.py\" source_line={i}}}");
            match i % 5 {
                0 => {
                    let _ = writeln!(
                        s,
                        "  %k{c}.{i} = f32[4]{{0}} constant({{1.5, -2, 0.125, 3e+10}})"
                    );
                    let _ = writeln!(s, "  %{name} = f32[8,128]{{1,0}} multiply(f32[8,128]{{1,0}} %{prev}, f32[8,128]{{1,0}} %{prev}), {meta}");
                }
                1 => {
                    let _ = writeln!(s, "  %{name} = f32[8,128]{{1,0}} add(f32[8,128]{{1,0}} %{prev}, f32[8,128]{{1,0}} %param_0.{c}), {meta}");
                }
                2 => {
                    let _ = writeln!(s, "  %z{c}.{i} = f32[] constant(0)");
                    let _ = writeln!(s, "  %r{c}.{i} = f32[8]{{0}} reduce(f32[8,128]{{1,0}} %{prev}, f32[] %z{c}.{i}), dimensions={{1}}, to_apply=%add_f32, {meta}");
                    let _ = writeln!(s, "  %{name} = f32[8,128]{{1,0}} broadcast(f32[8]{{0}} %r{c}.{i}), dimensions={{0}}, {meta}");
                }
                3 => {
                    let _ = writeln!(s, "  %{name} = f32[8,128]{{1,0}} dot(f32[8,128]{{1,0}} %{prev}, f32[8,128]{{1,0}} %{prev}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}, operand_precision={{default,default}}, {meta}");
                }
                _ => {
                    let _ = writeln!(s, "  %{name} = f32[8,128]{{1,0}} exponential(f32[8,128]{{1,0}} %{prev}), {meta}, backend_config={{\"outer_dimension_partitions\":[\"1\"]}}");
                }
            }
            prev = name;
        }
        let _ = writeln!(
            s,
            "  ROOT %out.{c} = f32[8,128]{{1,0}} copy(f32[8,128]{{1,0}} %{prev})\n}}\n"
        );
        c += 1;
    }
    s.push_str("ENTRY %main (x: f32[8,128]) -> f32[8] {\n  %x = f32[8,128]{1,0} parameter(0)\n");
    for i in 0..c {
        let _ = writeln!(s, "  %f{i} = f32[8,128]{{1,0}} fusion(f32[8,128]{{1,0}} %x), kind=kLoop, calls=%fused_computation.{i}");
    }
    s.push_str("  %zero = f32[] constant(0)\n  ROOT %r = f32[8]{0} reduce(%f0, %zero), dimensions={1}, to_apply=%add_f32\n}\n");
    s
}

fn bench(c: &mut Criterion) {
    let text = generate(10 << 20);
    let module = hlo::parse(&text).expect("generated module parses");
    let printed = hlo::print(&module);
    let mut g = c.benchmark_group("hlo_text");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("parse_10MB", |b| {
        b.iter(|| hlo::parse(std::hint::black_box(&text)).unwrap())
    });
    g.throughput(Throughput::Bytes(printed.len() as u64));
    g.bench_function("print_10MB", |b| {
        b.iter(|| hlo::print(std::hint::black_box(&module)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
