//! Issue 5: the MXU's RTL against `sim`'s MXU model (Verilator co-simulation) and the synthesized
//! netlist against the same vectors (Yosys + Icarus), for small arrays in both numeric modes.
//!
//! Needs `verilator`, `yosys` and `iverilog`. Without them the tests skip loudly, except under
//! `CI=true`, where a missing tool fails. Verilator models are cached (see `hw::tools`), and each
//! design is built once per run even when several tests use it.

use hw::cosim::{Reference, RowOut, SimReference};
use hw::flow::{self, VerilatorModel};
use hw::ops::{self, Rng};
use hw::MxuParams;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

fn tools_ready(needed: &[&str]) -> bool {
    let missing: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|t| !hw::tools::available(t))
        .collect();
    if missing.is_empty() {
        return true;
    }
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    assert!(
        !ci,
        "CI: RTL tools missing: {missing:?} (apt-get install verilator yosys iverilog)"
    );
    eprintln!(
        "\n!!!!!!!! SKIPPED: RTL tools missing: {missing:?}; install verilator yosys iverilog !!!!!!!!\n"
    );
    false
}

/// The `mini` preset (one 8×8 MXU), optionally with overrides: the RTL's one source of numbers.
fn params(set: &[&str]) -> MxuParams {
    let cfg = arch::ArchConfig::resolve("mini", set).expect("mini preset");
    MxuParams::from_arch(&cfg).expect("mini fits the generator")
}

fn p4(dtype: &str) -> MxuParams {
    params(&[
        "mxu.rows=4",
        "mxu.cols=4",
        "mxu.acc_rows=16",
        &format!("mxu.dtype={dtype}"),
    ])
}

fn mini(dtype: &str) -> MxuParams {
    params(&[&format!("mxu.dtype={dtype}")])
}

/// A design's model, built by whichever test asks first.
type Slot = Arc<OnceLock<Arc<VerilatorModel>>>;

/// One Verilator build per design per test run.
fn model(p: &MxuParams) -> Arc<VerilatorModel> {
    static MODELS: OnceLock<Mutex<HashMap<String, Slot>>> = OnceLock::new();
    let slot = MODELS
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(p.tag())
        .or_default()
        .clone();
    slot.get_or_init(|| Arc::new(VerilatorModel::build(p).expect("verilator build")))
        .clone()
}

fn cosim(p: MxuParams, trials: usize, seed: u64) {
    if !tools_ready(&["verilator"]) {
        return;
    }
    let m = model(&p);
    let rep = flow::cosim_random(&p, m.as_ref(), trials, seed, None, None).expect("cosim runs");
    eprintln!("{}: {rep:?}", p.tag());
    assert_eq!(rep.trials, trials);
    assert!(rep.result_rows > trials, "sequences produce results");
    assert_eq!(rep.mismatches, 0, "first divergence: {:?}", rep.first);
}

#[test]
fn rtl_cosim_4x4_int8() {
    cosim(p4("int8"), 40, 11);
}

#[test]
fn rtl_cosim_4x4_bf16() {
    cosim(p4("bf16"), 40, 12);
}

#[test]
fn rtl_cosim_mini_int8() {
    cosim(mini("int8"), 30, 13);
}

#[test]
fn rtl_cosim_mini_bf16() {
    cosim(mini("bf16"), 30, 14);
}

/// Double-buffered weights: `T` K-tiles (load + matmul of `M` rows each, issued at once) finish
/// at the contract's `T·M + R + C` for `M ≥ R`, every load after the first starting while the
/// previous matmul still streams; with `M < R` the weight port sets the period to `R`, so the last
/// row is visible at `(T−1)·R + 1 + (M−1) + R + C`. Checked in the simulator and the RTL.
fn k_tiles(p: MxuParams) {
    if !tools_ready(&["verilator"]) {
        return;
    }
    let (r, c) = (p.rows as u64, p.cols as u64);
    let m_model = model(&p);
    let tiles = 5u64;
    for m in [r + 3, r, r / 2] {
        let seq = ops::k_tile_sequence(&p, &mut Rng::new(m), tiles as usize, m as usize);
        let mut reference = SimReference::new(&p);
        let (rep, e, a) =
            flow::cosim_sequence(&p, m_model.as_ref(), &seq, &mut reference).expect("runs");
        assert_eq!(rep.mismatches, 0, "m={m}: {:?}", rep.first);
        let want_last = if m >= r {
            tiles * m + r + c
        } else {
            (tiles - 1) * r + 1 + (m - 1) + r + c
        };
        let sim_last = e.rows.last().unwrap().2.visible;
        let rtl_last = a.rows.last().unwrap().visible;
        assert_eq!(sim_last, want_last, "simulator, M={m}");
        assert_eq!(rtl_last, want_last, "RTL, M={m}");
        if m >= r {
            // Ops alternate load, matmul: load i (op 2i) starts before matmul i−1 (op 2i−1)
            // has streamed its last row, i.e. the load is hidden behind it.
            for i in 1..tiles as usize {
                let load = a.starts[2 * i].unwrap();
                let prev_mm = a.starts[2 * i - 1].unwrap();
                assert!(
                    load < prev_mm + m,
                    "load {i} at {load} not hidden (matmul at {prev_mm})"
                );
            }
        }
    }
}

#[test]
fn rtl_double_buffer_k_tiles_int8() {
    k_tiles(p4("int8"));
}

#[test]
fn rtl_double_buffer_k_tiles_bf16() {
    k_tiles(mini("bf16"));
}

/// A reference that reports every result one cycle late: the comparison must catch it and name
/// the first diverging operation, cycle and row.
struct LateReference(SimReference);

impl Reference for LateReference {
    fn load(&mut self, issue: u64, k: usize, n: usize, w: &[u16]) -> Result<u64, String> {
        self.0.load(issue, k, n, w)
    }
    fn matmul(
        &mut self,
        issue: u64,
        m: usize,
        k: usize,
        addr: usize,
        acc: bool,
        x: &[u16],
    ) -> Result<(u64, Vec<RowOut>), String> {
        let (t, mut rows) = self.0.matmul(issue, m, k, addr, acc, x)?;
        for r in &mut rows {
            r.visible += 1;
        }
        Ok((t, rows))
    }
}

#[test]
fn rtl_cosim_detects_divergence() {
    if !tools_ready(&["verilator"]) {
        return;
    }
    let p = p4("int8");
    let seq = ops::random_sequence(&p, &mut Rng::new(5), 6);
    let mut late = LateReference(SimReference::new(&p));
    let (rep, _, _) = flow::cosim_sequence(&p, model(&p).as_ref(), &seq, &mut late).unwrap();
    assert!(rep.mismatches > 0);
    let (trial, msg) = rep.first.expect("a first divergence");
    assert_eq!(trial, 0);
    assert!(
        msg.contains("op 1 (Matmul") && msg.contains("row 0") && msg.contains("cycle"),
        "{msg}"
    );
}

fn netlist(p: MxuParams, target: hw::synth::Target, trials: usize) -> hw::synth::SynthReport {
    let rep = hw::synth::synthesize(&p, target).expect("yosys");
    let net = hw::synth::NetlistModel::new(&p, target, &rep.netlist).expect("iverilog");
    let cos = flow::cosim_random(&p, &net, trials, 21, None, None).expect("netlist simulation");
    eprintln!("{} {}: {:?} {:?}", p.tag(), target.name(), rep.cells, cos);
    assert!(cos.result_rows > 0);
    assert_eq!(cos.mismatches, 0, "netlist: {:?}", cos.first);
    if let Some(dir) = rep.netlist.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
    rep
}

#[test]
fn rtl_netlist_mini_int8_xilinx_one_dsp_per_pe() {
    if !tools_ready(&["yosys", "iverilog"]) {
        return;
    }
    let p = mini("int8");
    let rep = netlist(p, hw::synth::Target::Xilinx, 2);
    assert_eq!(rep.dsp, (p.rows * p.cols) as u64, "one DSP48 per PE");
}

#[test]
fn rtl_netlist_4x4_bf16_xilinx() {
    if !tools_ready(&["yosys", "iverilog"]) {
        return;
    }
    let p = p4("bf16");
    let rep = netlist(p, hw::synth::Target::Xilinx, 2);
    assert!(
        rep.dsp >= (p.rows * p.cols) as u64,
        "a DSP per PE for the significand product"
    );
}

#[test]
fn rtl_netlist_4x4_int8_ice40() {
    if !tools_ready(&["yosys", "iverilog"]) {
        return;
    }
    let p = p4("int8");
    let rep = netlist(p, hw::synth::Target::Ice40, 2);
    assert_eq!(rep.dsp, 0, "LUT-only flow");
    assert!(rep.lut > 0 && rep.ff > 0);
}
