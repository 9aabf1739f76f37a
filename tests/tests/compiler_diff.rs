//! Differential tests: the compiled program on the simulated chip against the reference
//! evaluator, on random inputs, for every golden workload and every corpus case the compiler
//! lowers. f32 dots use 6 bf16 passes (close to f32); the tolerance is then tight.

use compiler::{compile, CompileError, CompileOptions};
use eval::case::{check_value, Check, Tolerance};
use hlo::Literal;
use sim::{SimOptions, System};
use std::path::{Path, PathBuf};
use systole_tests::{random_literal, Rng};

/// Runs the compiled module on one chip per device; one result per device.
fn run_on_chip(
    m: &hlo::VerifiedModule,
    arch: &arch::ArchConfig,
    args: &[Vec<Literal>],
    infeed: &[Literal],
) -> Result<Vec<Literal>, CompileError> {
    let opts = CompileOptions {
        f32_dot_passes: 6,
        verify_between_passes: true,
        ..CompileOptions::default()
    };
    let c = compile(m, arch, &opts)?;
    // The program carries its interface: inputs and outputs go through its regions.
    let io = compiler::io::IoMap::from_program(&c.program).expect("the program's interface");
    assert_eq!(
        io, c.io,
        "the program's regions describe the compiler's interface"
    );
    let mut sys = System::new(
        arch,
        c.program.clone(),
        c.chips as u32,
        SimOptions::default(),
    )
    .expect("system");
    for (chip, dev) in args.iter().enumerate() {
        let mut writes = Vec::new();
        for (p, a) in io.params.iter().zip(dev) {
            compiler::io::literal_bytes(p, a, &mut writes).expect("argument fits its slot");
        }
        for (addr, b) in writes {
            sys.write_hbm(chip, addr, &b).unwrap();
        }
    }
    if !infeed.is_empty() {
        // Every chip's host stream: the values one after the other, row-major little-endian.
        let stream: Vec<u8> = infeed
            .iter()
            .flat_map(|l| compiler::io::to_bytes(l.as_array().expect("an array")))
            .collect();
        for chip in 0..args.len() {
            sys.set_infeed(chip, 0, stream.clone()).unwrap();
        }
    }
    sys.run().expect("compiled program runs to halt");
    Ok((0..args.len())
        .map(|chip| {
            let hbm = sys.hbm(chip).unwrap();
            compiler::io::read_literal(&io.result, &mut |a, n| hbm.read_vec(a, n).ok()).unwrap()
        })
        .collect())
}

/// Values on the host's infeed stream of a workload that reads one (more than any reads).
const INFEED_VALUES: usize = 16;

/// `arch_line`: a preset name and `--set` style overrides (`tpu-v4 ici.dims=[2,2]`).
fn check(path: &Path, text: &str, arch_line: &str, seed: u64) -> Result<(), String> {
    let mut words = arch_line.split_whitespace();
    let preset = words.next().expect("a preset name");
    let sets: Vec<&str> = words.collect();
    let arch = arch::ArchConfig::resolve(preset, &sets).unwrap();
    let m = hlo::parse(text).map_err(|e| e.render(&path.display().to_string(), text))?;
    let m = hlo::verified(m).map_err(|e| e.render(&path.display().to_string(), text))?;
    let mut g = Rng(seed);
    let args: Vec<Vec<Literal>> = (0..m.num_devices())
        .map(|_| {
            m.entry()
                .program_shape()
                .params
                .iter()
                .map(|s| random_literal(s, &mut g).expect("supported test type"))
                .collect()
        })
        .collect();
    // The host's infeed: INFEED_VALUES random values of the module's infeed data shape (one
    // shape only: with several, the order they are read in is the program's).
    let mut shapes: Vec<hlo::Shape> = m
        .comps
        .values()
        .flat_map(|c| c.insts.values())
        .filter(|i| i.opcode == hlo::Opcode::Infeed)
        .filter_map(|i| i.shape.as_tuple().and_then(|t| t.first()).cloned())
        .collect();
    shapes.dedup();
    if shapes.len() > 1 {
        return Err("SKIP infeeds of several shapes".into());
    }
    let infeed: Vec<Literal> = shapes
        .first()
        .map(|s| {
            (0..INFEED_VALUES)
                .map(|_| random_literal(s, &mut g).expect("supported test type"))
                .collect()
        })
        .unwrap_or_default();
    // Random inputs may be outside what a module accepts (sizes, custom calls): not a test.
    let expected: Vec<Literal> = if args.len() == 1 && infeed.is_empty() {
        vec![eval::evaluate(&m, &args[0]).map_err(|e| format!("SKIP evaluator: {e}"))?]
    } else {
        let inputs = args
            .iter()
            .map(|a| eval::ReplicaInput {
                args: a.clone(),
                io: eval::HostIo {
                    infeed: infeed.iter().cloned().collect(),
                    ..Default::default()
                },
            })
            .collect();
        eval::replica::run_replicas(&m, inputs, &Default::default())
            .map_err(|e| format!("SKIP evaluator: {e}"))?
            .into_iter()
            .map(|o| o.result)
            .collect()
    };
    let got = match run_on_chip(&m, &arch, &args, &infeed) {
        Ok(v) => v,
        Err(e @ CompileError::NotSupported { .. }) => return Err(format!("SKIP {e}")),
        Err(e) => return Err(e.render(&path.display().to_string())),
    };
    // A workload may loosen it with a `// tolerance: X` line (iterated f32 math amplifies the
    // 6-pass dot's last-bit differences).
    let t = text
        .lines()
        .find_map(|l| l.strip_prefix("// tolerance: "))
        .map_or(1e-4, |v| v.trim().parse().expect("tolerance"));
    let tol = Tolerance { rtol: t, atol: t };
    for (d, (want, have)) in expected.iter().zip(&got).enumerate() {
        check_value(Check::Close, tol, None, want, have)
            .map_err(|m| format!("{} device {d}: {m}", path.display()))?;
    }
    Ok(())
}

#[test]
fn golden_workloads_on_chip_equal_the_evaluator() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/compiler");
    let mut n = 0;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hlo"))
        .collect();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let arch = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("// arch: "))
            .unwrap()
            .trim()
            .to_string();
        // The large GEMM is covered by the golden cycle count; its functional run is slow.
        if text.contains("1024,1024") {
            continue;
        }
        for seed in [1, 2] {
            check(&f, &text, &arch, seed).unwrap();
        }
        n += 1;
    }
    assert!(n >= 10, "only {n} workloads checked");
}

#[test]
fn corpus_cases_the_compiler_lowers_run_on_chip_with_random_inputs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("module.hlo").exists())
        .collect();
    dirs.sort();
    let (mut ran, mut skipped) = (0, 0);
    let mut failures = Vec::new();
    for d in dirs {
        let text = std::fs::read_to_string(d.join("module.hlo")).unwrap();
        let m = hlo::parse(&text).unwrap();
        if m.replica_count() > 1 {
            continue;
        }
        // Random inputs need types the helper makes and no host queues.
        let shapes = m.entry().program_shape().params;
        let mut g = Rng(0);
        if shapes.iter().any(|s| random_literal(s, &mut g).is_none())
            || eval::corpus::uses_host_io(&m)
        {
            continue;
        }
        match check(&d.join("module.hlo"), &text, "tpu-v4", 7) {
            Ok(()) => ran += 1,
            Err(e) if e.starts_with("SKIP") => skipped += 1,
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        ran >= 30,
        "only {ran} corpus modules ran on chip ({skipped} not supported yet)"
    );
}
