//! Simulator speed: simulated cycles per host second on a long MXU-bound program and a long
//! VPU-bound one, with and without functional execution (`cargo bench -p sim --bench sim_speed`;
//! criterion reports the throughput in "elements" = simulated cycles per second).
//!
//! The engine skips idle time (events, not ticks), so timing-only MXU-bound runs should exceed
//! 10^8 simulated cycles per second.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sim::{SimOptions, System};

/// `iters` × (load a 128×128 bf16 weight tile, stream `m` rows) on MXU 0 of a tpu-v4 core.
fn mxu_program(iters: u64, m: u64) -> String {
    format!(
        r#"
    s.li s1, 0
    s.li s2, {iters}
    s.li s3, 65536
loop:
    mxu.ldw [s0+0], mxu=0, k=128, n=128, stride=256, mode=bf16
    mxu.matmul [s3+0], acc[s0+0], mxu=0, m={m}, k=128, stride=256, mode=bf16, accumulate=1
    s.addi s1, s1, 1
    blt s1, s2, loop
    halt
"#
    )
}

/// `iters` × (y = a·x + b over `n` f32) on the VPU of a tpu-v4 core.
fn vpu_program(iters: u64, n: u64) -> String {
    format!(
        r#"
    s.li s1, 0
    s.li s2, {iters}
    s.li s3, 65536
    s.li s4, 131072
    s.li s5, 196608
    s.li s6, 262144
loop:
    vpu.mul [s5+0], [s3+0], [s4+0], n={n}, t=f32
    vpu.add [s6+0], [s5+0], [s4+0], n={n}, t=f32
    s.addi s1, s1, 1
    blt s1, s2, loop
    halt
"#
    )
}

fn run(asm: &str, functional: bool) -> u64 {
    let arch = arch::ArchConfig::preset("tpu-v4").unwrap();
    let prog = isa::asm::assemble(asm).unwrap();
    let mut sys = System::new(
        &arch,
        prog,
        1,
        SimOptions {
            functional,
            ..Default::default()
        },
    )
    .unwrap();
    sys.run().unwrap().cycles
}

fn bench(c: &mut Criterion) {
    let cases = [
        ("mxu_bound/timing_only", mxu_program(20_000, 256), false),
        ("mxu_bound/functional", mxu_program(4, 256), true),
        ("vpu_bound/timing_only", vpu_program(20_000, 65536), false),
        ("vpu_bound/functional", vpu_program(5, 65536), true),
    ];
    let mut g = c.benchmark_group("sim_speed");
    g.sample_size(10);
    for (name, asm, functional) in &cases {
        let cycles = run(asm, *functional);
        g.throughput(Throughput::Elements(cycles));
        g.bench_function(*name, |b| b.iter(|| run(asm, *functional)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
