//! The user-level flows behind `systole rtl sim`: build the Verilator model once (cached), then
//! run trials of random op sequences through it and through the reference, comparing everything.

use crate::cosim::{self, Actual, Expected, Reference, SimReference};
use crate::ops::{self, Issued, Rng};
use crate::params::MxuParams;
use crate::{emit, harness, tools, HwError};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// An RTL model that runs a stimulus file and returns its transcript.
pub trait RtlRunner {
    fn run(&self, stimulus: &Path, vcd: Option<&Path>) -> Result<String, HwError>;
}

/// A built Verilator model.
pub struct VerilatorModel {
    pub bin: PathBuf,
    /// True if it came from the cache.
    pub cached: bool,
    pub build_time: Duration,
}

impl VerilatorModel {
    /// Generates the Verilog for `p` and builds (or reuses) its model.
    pub fn build(p: &MxuParams) -> Result<Self, HwError> {
        let t0 = Instant::now();
        let v = emit::verilog(p)?;
        let (bin, cached) = tools::verilator_build(&v, &harness::cpp(p.rows, p.cols))?;
        Ok(VerilatorModel {
            bin,
            cached,
            build_time: t0.elapsed(),
        })
    }
}

impl RtlRunner for VerilatorModel {
    fn run(&self, stimulus: &Path, vcd: Option<&Path>) -> Result<String, HwError> {
        let mut cmd = Command::new(&self.bin);
        cmd.arg(stimulus);
        if let Some(v) = vcd {
            cmd.arg(v);
        }
        tools::run("verilated model", &mut cmd)
    }
}

/// Totals of a co-simulation.
#[derive(Clone, Debug, Default)]
pub struct CosimReport {
    pub trials: usize,
    pub ops: usize,
    pub result_rows: usize,
    /// Cycles simulated in the RTL (sum over trials).
    pub cycles: u64,
    pub mismatches: usize,
    /// `(trial, description)` of the first divergence.
    pub first: Option<(usize, String)>,
    pub rtl_time: Duration,
    pub ref_time: Duration,
}

/// Runs one op sequence through `rtl` and `reference`; adds to `rep`.
#[allow(clippy::too_many_arguments)]
pub fn run_sequence(
    p: &MxuParams,
    seq: &[Issued],
    reference: &mut dyn Reference,
    rtl: &dyn RtlRunner,
    work: &Path,
    vcd: Option<&Path>,
    trial: usize,
    rep: &mut CosimReport,
) -> Result<(Expected, Actual), HwError> {
    let t0 = Instant::now();
    let e = cosim::expect(p, seq, reference).map_err(HwError::BadInput)?;
    rep.ref_time += t0.elapsed();
    let stim = work.join("stimulus.txt");
    tools::write(&stim, &cosim::stimulus(seq, &e))?;
    let t1 = Instant::now();
    let transcript = rtl.run(&stim, vcd)?;
    rep.rtl_time += t1.elapsed();
    let a = cosim::parse_transcript(&transcript, seq.len(), p.cols).map_err(|m| HwError::Tool {
        tool: "harness".into(),
        msg: m,
    })?;
    rep.trials += 1;
    rep.ops += seq.len();
    rep.result_rows += e.rows.len();
    rep.cycles += a.cycles;
    let n = cosim::count_mismatches(&e, &a);
    rep.mismatches += n;
    if n > 0 && rep.first.is_none() {
        let msg = cosim::first_mismatch(seq, &e, &a)
            .unwrap_or_else(|| "transcript differs from the reference".into());
        rep.first = Some((trial, msg));
    }
    Ok((e, a))
}

/// Runs one sequence from power-on through `rtl` and `reference` (a one-trial report).
pub fn cosim_sequence(
    p: &MxuParams,
    rtl: &dyn RtlRunner,
    seq: &[Issued],
    reference: &mut dyn Reference,
) -> Result<(CosimReport, Expected, Actual), HwError> {
    let work = scratch_dir("seq")?;
    let mut rep = CosimReport::default();
    let r = run_sequence(p, seq, reference, rtl, &work, None, 0, &mut rep);
    let _ = std::fs::remove_dir_all(&work);
    let (e, a) = r?;
    Ok((rep, e, a))
}

/// Random co-simulation: `trials` sequences from `seed`, each from power-on, of `ops` operations
/// each (or a random 4..=24 when `None`).
pub fn cosim_random(
    p: &MxuParams,
    rtl: &dyn RtlRunner,
    trials: usize,
    seed: u64,
    ops_per_trial: Option<usize>,
    vcd: Option<&Path>,
) -> Result<CosimReport, HwError> {
    let work = scratch_dir("cosim")?;
    let mut rep = CosimReport::default();
    let mut rng = Rng::new(seed);
    for trial in 0..trials {
        let count = match ops_per_trial {
            Some(n) => n,
            None => rng.range(4, 24) as usize,
        };
        let seq = ops::random_sequence(p, &mut rng, count);
        let mut reference = SimReference::new(p);
        // The VCD, if asked for, records the first trial.
        let v = if trial == 0 { vcd } else { None };
        run_sequence(p, &seq, &mut reference, rtl, &work, v, trial, &mut rep)?;
    }
    let _ = std::fs::remove_dir_all(&work);
    Ok(rep)
}

/// A fresh private scratch folder under the system temp dir (unique per process and call).
pub fn scratch_dir(what: &str) -> Result<PathBuf, HwError> {
    static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("systole-{what}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&d).map_err(|e| tools::io_err(&d, e))?;
    Ok(d)
}
