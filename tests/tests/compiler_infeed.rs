//! `infeed` on the chip: the infeed-driven loop of the golden suite
//! (`golden/compiler/infeed_loop.hlo`: 4 iterations, each takes an `f32[8,128]` batch from the
//! host and accumulates its product with the weights) compiled and simulated with real data on
//! the host stream gives the evaluator's result; a stream too short is the simulator's error,
//! not a hang.

use compiler::{compile, CompileOptions};
use eval::{EvalOptions, HostIo, ReplicaInput};
use hlo::literal::ArrayData;
use hlo::Literal;
use sim::{SimOptions, System};

fn module() -> hlo::VerifiedModule {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/compiler/infeed_loop.hlo");
    let text = std::fs::read_to_string(path).unwrap();
    let m = hlo::parse(&text).unwrap();
    hlo::verified(m).unwrap()
}

/// Small exact values (multiples of 1/8 in [-1, 1]): bf16 passes lose nothing on them.
fn array(dims: Vec<usize>, seed: usize) -> Literal {
    let n: usize = dims.iter().product();
    let data = (0..n)
        .map(|i| (((i * 7 + seed * 13) % 17) as f32 - 8.0) / 8.0)
        .collect();
    Literal::array(dims, ArrayData::F32(data))
}

fn f32s(l: &Literal) -> Vec<f32> {
    match &l.as_array().expect("an array").data {
        ArrayData::F32(v) => v.clone(),
        d => panic!("not f32: {:?}", d.element_type()),
    }
}

fn simulate(m: &hlo::VerifiedModule, w: &Literal, stream: Vec<u8>) -> Result<Literal, String> {
    let arch = arch::ArchConfig::resolve("tpu-v4", &[] as &[&str]).unwrap();
    let opts = CompileOptions {
        f32_dot_passes: 6,
        ..CompileOptions::default()
    };
    let c = compile(m, &arch, &opts).map_err(|e| e.render("infeed_loop.hlo"))?;
    assert!(c.program.code.iter().any(|i| i.mnemonic() == "infeed"));
    let mut sys = System::new(
        &arch,
        c.program.clone(),
        1,
        SimOptions {
            functional: true,
            max_cycles: 1 << 30,
            ..Default::default()
        },
    )
    .unwrap();
    let mut writes = Vec::new();
    compiler::io::literal_bytes(&c.io.params[0], w, &mut writes).unwrap();
    for (addr, bytes) in writes {
        sys.write_hbm(0, addr, &bytes).unwrap();
    }
    sys.set_infeed(0, 0, stream).unwrap();
    sys.run().map_err(|e| e.to_string())?;
    let hbm = sys.hbm(0).unwrap();
    Ok(compiler::io::read_literal(&c.io.result, &mut |a, n| hbm.read_vec(a, n).ok()).unwrap())
}

#[test]
fn the_infeed_loop_matches_the_evaluator_with_data_on_the_host_stream() {
    let m = module();
    let w = array(vec![128, 128], 1);
    let batches: Vec<Literal> = (0..4).map(|k| array(vec![8, 128], 10 + k)).collect();
    let want = eval::corpus::run_module(
        &m,
        vec![ReplicaInput {
            args: vec![w.clone()],
            io: HostIo {
                infeed: batches.iter().cloned().collect(),
                ..HostIo::default()
            },
        }],
        &EvalOptions::default(),
    )
    .unwrap()
    .remove(0)
    .0;
    // The host stream: the batches one after the other, row-major little-endian.
    let stream: Vec<u8> = batches
        .iter()
        .flat_map(f32s)
        .flat_map(f32::to_le_bytes)
        .collect();
    let got = simulate(&m, &w, stream).unwrap();
    let (g, e) = (f32s(&got), f32s(&want));
    assert_eq!(g.len(), 8 * 128);
    // Not a trivial result: the four batches differ, so does every row.
    assert!(e.iter().any(|&x| x.abs() > 1.0));
    for (i, (a, b)) in g.iter().zip(&e).enumerate() {
        assert!(
            (a - b).abs() <= 1e-3 * b.abs().max(1.0),
            "element {i}: chip {a}, evaluator {b}"
        );
    }
}

#[test]
fn a_host_stream_shorter_than_the_loop_reads_is_an_error() {
    let m = module();
    let w = array(vec![128, 128], 1);
    // Three batches for four iterations.
    let err = simulate(&m, &w, vec![0; 3 * 8 * 128 * 4]).unwrap_err();
    assert!(err.contains("infeed"), "{err}");
}
