//! `systole rtl gen` at TPU scale (issue 13): the Verilog of `tpu-v1`'s 256 × 256 MXU does not
//! grow with the array (the mesh is `generate` loops over one module per kind; rust-hdl alone
//! wrote one module per instance, about 140 MB). Its generation time is a measurement in
//! docs/bounded.md, not a test.
//! The lint test needs Verilator, the place-and-route test Yosys and nextpnr-ice40: without them
//! they fail and say so (they never skip).

mod common;
use common::{all_text, root, systole};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scratch(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("systole-cli-rtl-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `systole rtl gen --arch tpu-v1 [--set …] -o FILE [extra]`; returns the Verilog and the
/// process output.
fn gen(file: &Path, sets: &[&str], extra: &[&str]) -> (String, Output) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_systole"));
    cmd.args(["rtl", "gen", "--arch", "tpu-v1"]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    cmd.arg("-o").arg(file).args(extra).current_dir(root());
    let o = cmd.output().expect("the systole binary runs");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{sets:?} {extra:?}\n{out}\n{err}");
    let v = std::fs::read_to_string(file).expect("the Verilog was written");
    (v, o)
}

#[test]
fn rtl_gen_tpu_v1_256x256_is_small_and_deterministic() {
    let d = scratch("tpu");
    let (v, o) = gen(&d.join("tpu.v"), &[], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("256x256 int8 MXU"), "{out}");
    assert!(
        v.contains("input wire [4095:0] x_data") && v.contains("output wire [8191:0] r_data"),
        "the top has the 256 × 256 ports"
    );
    // One module per kind, whatever the array's size.
    assert_eq!(v.matches("\nmodule mxu_pe(").count(), 1);
    assert!(v.len() < 100_000, "{} bytes", v.len());
    let (v16, _) = gen(&d.join("16.v"), &["mxu.rows=16", "mxu.cols=16"], &[]);
    assert_eq!(v.lines().count(), v16.lines().count());
    assert_eq!(
        v.matches("\nmodule ").count(),
        v16.matches("\nmodule ").count()
    );
    let (again, _) = gen(&d.join("again.v"), &[], &[]);
    assert!(again == v, "rtl gen is deterministic");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn rtl_gen_64x64_passes_verilator_lint() {
    // 64 × 64 has delay lines of up to 127 stages (the control pipeline, R + C − 1), beyond
    // Verilator's 64-iteration loop unrolling: the shift registers must not need it.
    assert!(
        hw::tools::available("verilator"),
        "this test needs Verilator to lint the generated Verilog: apt-get install verilator"
    );
    let d = scratch("lint");
    let (_, o) = gen(
        &d.join("64.v"),
        &["mxu.rows=64", "mxu.cols=64"],
        &["--lint"],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("verilator --lint-only -Wall: clean"), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn rtl_synth_ice40_pnr_reports_fmax() {
    // The smallest array (2 × 2 int8, 2 accumulator rows) through Yosys and nextpnr-ice40: the
    // report must carry a positive Fmax and the logic cells used.
    for tool in ["yosys", "nextpnr-ice40"] {
        assert!(
            hw::tools::available(tool),
            "this test needs {tool} to place and route the MXU: apt-get install {tool} \
             (scripts/setup.sh)"
        );
    }
    let o = systole(&[
        "rtl",
        "synth",
        "--arch",
        "mini",
        "--set",
        "mxu.rows=2",
        "--set",
        "mxu.cols=2",
        "--set",
        "mxu.acc_rows=2",
        "--target",
        "ice40",
        "--pnr",
        "--netlist-trials",
        "0",
    ]);
    let text = all_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("place and route (nextpnr-ice40, iCE40 hx8k"))
        .unwrap_or_else(|| panic!("no place-and-route line: {text}"));
    let num = |key: &str| -> f64 {
        let rest = line
            .split_once(key)
            .unwrap_or_else(|| panic!("{key} in {line}"))
            .1;
        rest.trim_start()
            .split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{key} value in {line}"))
    };
    assert!(num("Fmax") > 1.0, "{line}");
    assert!(num("LC") > 10.0, "{line}");
}

#[test]
fn rtl_synth_pnr_needs_the_ice40_target() {
    let o = systole(&[
        "rtl", "synth", "--arch", "mini", "--target", "xilinx", "--pnr",
    ]);
    let text = all_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("--pnr") && text.contains("--target ice40"),
        "{text}"
    );
}
