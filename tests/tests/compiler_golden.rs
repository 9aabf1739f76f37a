//! Golden filetests of the compiler: every `tests/golden/compiler/NAME.hlo` (first line
//! `// arch: PRESET [PATH=VALUE ...]`, the overrides as `--set` takes them) is compiled and
//! simulated, on one chip per device for multi-replica and SPMD modules; the summary (instruction mix, memory, the
//! synchronization the emitter added, the cycle count of a timing-only run) must equal
//! `NAME.expected`. `SYSTOLE_BLESS=1 cargo test --release -p systole-tests --test
//! compiler_golden` rewrites the expected files; review the diff before committing it.
//!
//! Every workload also runs on the other TPU presets (`PRESETS`, with the same overrides): one
//! line each, its cycle count or its error, so a change to any preset's model shows up.
//!
//! The cycle count is a functional run's with all-zero inputs (and a host infeed stream of
//! zeros for workloads that read one). Also pinned here: without
//! data-dependent control flow, a timing-only run takes exactly those cycles (the timing model
//! does not depend on data), and the module verifies after every pass.

use compiler::{compile, CompileOptions};
use sim::{SimOptions, System};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/compiler")
}

/// Bytes of zeros the host supplies on every chip's infeed stream (core 0): more than any
/// infeed-driven workload here takes.
const INFEED_BYTES: usize = 1 << 20;

/// Gives every chip of a program with `infeed` instructions its host stream of zeros.
fn feed(sys: &mut System, c: &compiler::Compiled) -> Result<(), sim::SimError> {
    if c.program.code.iter().any(|i| i.mnemonic() == "infeed") {
        for chip in 0..c.chips {
            sys.set_infeed(chip, 0, vec![0; INFEED_BYTES])?;
        }
    }
    Ok(())
}

fn cycles(c: &compiler::Compiled, arch: &arch::ArchConfig, functional: bool) -> u64 {
    let mut sys = System::new(
        arch,
        c.program.clone(),
        c.chips as u32,
        SimOptions {
            functional,
            max_cycles: 1 << 40,
            ..Default::default()
        },
    )
    .expect("system");
    feed(&mut sys, c).expect("infeed");
    sys.run().expect("the compiled program runs").cycles
}

/// The TPU presets every workload also runs on.
const PRESETS: [&str; 4] = ["tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e"];

/// Cycles of `m` on `preset` with `sets`, or the first line of why not.
fn on_preset(m: &hlo::VerifiedModule, preset: &str, sets: &[&str]) -> Result<u64, String> {
    let first = |s: String| s.lines().next().unwrap_or("").to_string();
    let arch = arch::ArchConfig::resolve(preset, sets).map_err(|e| first(e.to_string()))?;
    let opts = CompileOptions {
        f32_dot_passes: 1,
        ..CompileOptions::default()
    };
    let c = compile(m, &arch, &opts).map_err(|e| first(e.render("<module>")))?;
    let mut sys = System::new(
        &arch,
        c.program.clone(),
        c.chips as u32,
        SimOptions {
            functional: true,
            max_cycles: 1 << 40,
            ..Default::default()
        },
    )
    .map_err(|e| first(e.to_string()))?;
    feed(&mut sys, &c).map_err(|e| first(e.to_string()))?;
    sys.run()
        .map(|r| r.cycles)
        .map_err(|e| first(e.to_string()))
}

fn summary(path: &Path) -> (String, u64) {
    let text = std::fs::read_to_string(path).unwrap();
    let arch_line = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("// arch: "))
        .unwrap_or_else(|| panic!("{}: first line must be `// arch: PRESET`", path.display()))
        .trim()
        .to_string();
    let mut words = arch_line.split_whitespace();
    let preset = words.next().expect("a preset name");
    let sets: Vec<&str> = words.collect();
    let arch = arch::ArchConfig::resolve(preset, &sets).unwrap();
    let arch_name = arch_line.clone();
    let m = hlo::parse(&text)
        .unwrap_or_else(|e| panic!("{}", e.render(&path.display().to_string(), &text)));
    let m = hlo::verified(m).unwrap();
    let opts = CompileOptions {
        f32_dot_passes: 1,
        verify_between_passes: true,
        ..CompileOptions::default()
    };
    let c = compile(&m, &arch, &opts)
        .unwrap_or_else(|e| panic!("{}", e.render(&path.display().to_string())));
    // Cycles of a functional run with all-zero inputs (deterministic). Without data-dependent
    // control flow (no `s.ld`), a timing-only run must take exactly as long.
    let functional = cycles(&c, &arch, true);
    let data_dependent = c.program.code.iter().any(|i| i.mnemonic() == "s.ld");
    if !data_dependent {
        let timing = cycles(&c, &arch, false);
        assert_eq!(
            timing,
            functional,
            "{}: timing-only and functional runs must take the same cycles",
            path.display()
        );
    }
    let timing = functional;
    let mut mix: BTreeMap<&str, usize> = BTreeMap::new();
    for i in &c.program.code {
        *mix.entry(i.mnemonic()).or_default() += 1;
    }
    let mut s = String::new();
    s.push_str(&format!("arch: {arch_name}\n"));
    if c.chips > 1 {
        s.push_str(&format!("chips: {}\n", c.chips));
        for k in &c.stats.collectives {
            s.push_str(&format!(
                "collective {}: {} over {} group(s), {} bytes/chip, {}\n",
                k.hlo,
                k.kind.name(),
                k.groups.len(),
                k.bytes,
                k.algorithm()
            ));
        }
    }
    s.push_str(&format!("instructions: {}\n", c.program.code.len()));
    for (k, v) in &mix {
        s.push_str(&format!("  {k}: {v}\n"));
    }
    s.push_str(&format!("dma descriptors: {}\n", c.program.dma.len()));
    s.push_str(&format!("vmem peak bytes: {}\n", c.stats.vmem_peak));
    s.push_str(&format!("hbm bytes: {}\n", c.stats.hbm_bytes));
    s.push_str(&format!(
        "sync: {} sem.wait, {} fence\n",
        c.stats.emit.waits, c.stats.emit.fences
    ));
    s.push_str(&format!("dot flops: {}\n", c.stats.flops));
    s.push_str(&format!("cycles: {timing}\n"));
    for p in PRESETS.iter().filter(|&&p| p != preset) {
        match on_preset(&m, p, &sets) {
            Ok(c) => s.push_str(&format!("on {p}: cycles {c}\n")),
            Err(e) => s.push_str(&format!("on {p}: error: {e}\n")),
        }
    }
    (s, timing)
}

fn cycles_of(expected: &str) -> Option<u64> {
    expected
        .lines()
        .find_map(|l| l.strip_prefix("cycles: "))
        .and_then(|v| v.trim().parse().ok())
}

#[test]
fn compiler_golden_files_match() {
    let bless = std::env::var_os("SYSTOLE_BLESS").is_some();
    let mut files: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hlo"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 12,
        "expected the golden workloads, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    let mut table =
        String::from("workload                         old cycles   new cycles   change\n");
    for f in &files {
        let (got, new_cycles) = summary(f);
        let exp_path = f.with_extension("expected");
        if bless {
            std::fs::write(&exp_path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&exp_path).unwrap_or_default();
        if want != got {
            let name = f.file_stem().unwrap().to_string_lossy().to_string();
            let old = cycles_of(&want);
            let change = old.map_or("new".to_string(), |o| {
                format!(
                    "{:+.2}%",
                    100.0 * (new_cycles as f64 - o as f64) / o.max(1) as f64
                )
            });
            table.push_str(&format!(
                "{name:<32} {:>10}   {new_cycles:>10}   {change}\n",
                old.map_or("-".to_string(), |o| o.to_string())
            ));
            failures.push(format!("--- {}\n{want}+++ got\n{got}", exp_path.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden file(s) differ (SYSTOLE_BLESS=1 rewrites them):\n{table}\n{}",
        failures.len(),
        failures.join("\n")
    );
}
