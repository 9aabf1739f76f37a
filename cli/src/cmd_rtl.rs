//! `systole rtl gen|sim|synth`: the MXU's RTL generated from an `ArchConfig` (see `docs/rtl.md`).

use crate::{Outcome, UserError};
use anyhow::Result;
use clap::{Args, Subcommand};
use hw::{HwError, MxuParams};
use std::path::PathBuf;

#[derive(Args)]
pub struct RtlArgs {
    #[command(subcommand)]
    cmd: RtlCommand,
}

#[derive(Subcommand)]
enum RtlCommand {
    /// Emit the MXU's Verilog (top module `mxu`).
    Gen(GenArgs),
    /// Co-simulate the RTL (Verilator) against the simulator's MXU model.
    Sim(SimArgs),
    /// Synthesize with Yosys and report resources; simulate the netlist.
    Synth(SynthArgs),
}

#[derive(Args)]
struct ArchArgs {
    /// Preset name or JSON file.
    #[arg(long)]
    arch: String,
    /// Override a config field, e.g. `--set mxu.rows=16` (repeatable).
    #[arg(long = "set", value_name = "K=V")]
    set: Vec<String>,
}

#[derive(Args)]
struct GenArgs {
    #[command(flatten)]
    arch: ArchArgs,
    /// Output file.
    #[arg(short = 'o', long)]
    output: PathBuf,
    /// Also run `verilator --lint-only -Wall` on the result.
    #[arg(long)]
    lint: bool,
}

#[derive(Args)]
struct SimArgs {
    #[command(flatten)]
    arch: ArchArgs,
    /// Random op sequences to run (each from power-on).
    #[arg(long, default_value_t = 50)]
    trials: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Operations per trial (default: random, 4 to 24). A long single trial measures speed.
    #[arg(long)]
    ops: Option<usize>,
    /// Write a VCD of the first trial.
    #[arg(long)]
    vcd: Option<PathBuf>,
}

#[derive(Args)]
struct SynthArgs {
    #[command(flatten)]
    arch: ArchArgs,
    /// FPGA family.
    #[arg(long, value_parser = ["xilinx", "ice40"])]
    target: String,
    /// Random sequences the synthesized netlist is simulated with (0 skips it).
    #[arg(long, default_value_t = 3)]
    netlist_trials: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also place and route on an iCE40 HX8K with nextpnr-ice40 and report the achieved Fmax
    /// (`--target ice40` only).
    #[arg(long)]
    pnr: bool,
}

fn params(a: &ArchArgs) -> Result<MxuParams> {
    let cfg = arch::ArchConfig::resolve(&a.arch, &a.set)
        .map_err(|e| anyhow::Error::new(UserError(e.to_string())))?;
    MxuParams::from_arch(&cfg).map_err(user)
}

fn user(e: HwError) -> anyhow::Error {
    match e {
        HwError::Unsupported(_) | HwError::BadInput(_) => {
            anyhow::Error::new(UserError(e.to_string()))
        }
        other => anyhow::Error::new(other),
    }
}

pub fn run(a: RtlArgs) -> Result<Outcome> {
    match a.cmd {
        RtlCommand::Gen(g) => gen(g),
        RtlCommand::Sim(s) => sim(s),
        RtlCommand::Synth(s) => synth(s),
    }
}

fn gen(g: GenArgs) -> Result<Outcome> {
    crate::bounded::check_output(&g.output)?;
    let p = params(&g.arch)?;
    let v = hw::emit::verilog(&p).map_err(user)?;
    std::fs::write(&g.output, &v)
        .map_err(|e| UserError(format!("{}: error: cannot write: {e}", g.output.display())))?;
    println!(
        "wrote {} ({} lines): {}x{} {} MXU, {} accumulator rows, top module `mxu`",
        g.output.display(),
        v.lines().count(),
        p.rows,
        p.cols,
        p.mode.name(),
        p.acc_rows
    );
    if g.lint {
        hw::tools::lint(&g.output).map_err(user)?;
        println!(
            "verilator --lint-only -Wall: clean (waived: {})",
            hw::tools::LINT_WAIVERS.join(" ")
        );
    }
    Ok(Outcome::Ok)
}

fn sim(s: SimArgs) -> Result<Outcome> {
    let p = params(&s.arch)?;
    if s.ops == Some(0) {
        return Err(anyhow::Error::new(UserError(
            "--ops must be at least 1".into(),
        )));
    }
    if s.trials == 0 {
        return Err(anyhow::Error::new(UserError(
            "--trials must be at least 1".into(),
        )));
    }
    if let Some(v) = &s.vcd {
        crate::bounded::check_output(v)?;
    }
    // Each op carries up to a weight tile and an activation block (2 bytes per element), and
    // its reference results (4 bytes per element): counted before any sequence is made.
    let per_op = ((p.rows * p.cols + p.acc_rows * p.rows.max(p.cols)) as u64).saturating_mul(6);
    let ops = s.ops.map_or(24, |n| n as u64);
    crate::bounded::budget()
        .memory(
            format_args!("--ops {ops} (one trial's op sequence, {per_op} bytes per op)"),
            ops.checked_mul(per_op),
        )
        .map_err(|e| anyhow::Error::new(UserError(format!("error: {e}"))))?;
    let model = hw::flow::VerilatorModel::build(&p).map_err(user)?;
    println!(
        "model: {} ({}, {:.1} s)",
        p.tag(),
        if model.cached { "cached" } else { "built" },
        model.build_time.as_secs_f64()
    );
    let rep = hw::flow::cosim_random(&p, &model, s.trials, s.seed, s.ops, s.vcd.as_deref())
        .map_err(user)?;
    println!(
        "trials: {}  operations: {}  result rows: {}  cycles: {}  mismatches: {}",
        rep.trials, rep.ops, rep.result_rows, rep.cycles, rep.mismatches
    );
    let rate = |t: std::time::Duration| rep.cycles as f64 / t.as_secs_f64().max(1e-9);
    println!(
        "time: rtl (Verilator, incl. process start and I/O) {:.3} s = {:.0} cycles/s; \
         simulator's MXU model {:.4} s = {:.0} cycles/s",
        rep.rtl_time.as_secs_f64(),
        rate(rep.rtl_time),
        rep.ref_time.as_secs_f64(),
        rate(rep.ref_time)
    );
    if let Some(v) = &s.vcd {
        println!("vcd (trial 0): {}", v.display());
    }
    match rep.first {
        Some((trial, msg)) => {
            println!("MISMATCH in trial {trial} (seed {}): {msg}", s.seed);
            Ok(Outcome::CheckFailed)
        }
        None => Ok(Outcome::Ok),
    }
}

fn synth(s: SynthArgs) -> Result<Outcome> {
    let p = params(&s.arch)?;
    let target = match s.target.as_str() {
        "xilinx" => hw::synth::Target::Xilinx,
        _ => hw::synth::Target::Ice40,
    };
    if s.pnr && target != hw::synth::Target::Ice40 {
        return Err(anyhow::Error::new(UserError(
            "--pnr places and routes with nextpnr-ice40 and needs --target ice40 (there is no \
             open place-and-route for Xilinx parts here; see docs/rtl.md)"
                .into(),
        )));
    }
    if s.pnr && !hw::tools::available("nextpnr-ice40") {
        // Before Yosys runs: say at once that the place-and-route cannot happen.
        return Err(anyhow::Error::new(HwError::Tool {
            tool: "nextpnr-ice40".into(),
            msg: "not installed; --pnr needs it (Debian: apt-get install nextpnr-ice40, see \
                  scripts/setup.sh)"
                .into(),
        }));
    }
    let rep = hw::synth::synthesize(&p, target).map_err(user)?;
    println!(
        "{} on {}: DSP {}  LUT {}  FF {}  BRAM {}  LUTRAM {}  ({:.1} s, yosys {})",
        p.tag(),
        s.target,
        rep.dsp,
        rep.lut,
        rep.ff,
        rep.bram,
        rep.lutram,
        rep.seconds,
        rep.yosys
    );
    println!("netlist: {}", rep.netlist.display());
    if let Some(ps) = rep.sta_ps {
        println!(
            "timing (Yosys sta, Xilinx cell delays only, no routing): longest path {ps} ps, \
             Fmax at most {:.0} MHz",
            1e6 / ps.max(1) as f64
        );
    } else if target == hw::synth::Target::Xilinx {
        println!("timing: Yosys sta gave no estimate");
    }
    println!(
        "PEs: {}  DSP per PE: {:.2}",
        p.rows * p.cols,
        rep.dsp as f64 / (p.rows * p.cols) as f64
    );
    if s.pnr {
        let (device, package) = hw::synth::ICE40_DEVICE;
        let pnr = hw::synth::place_and_route_ice40(&p).map_err(user)?;
        println!(
            "place and route (nextpnr-ice40, iCE40 {device} {package}, seed 1): Fmax {:.2} MHz  \
             LC {}/{}  RAM {}/{}  ({:.1} s, {})",
            pnr.fmax_mhz, pnr.lc.0, pnr.lc.1, pnr.ram.0, pnr.ram.1, pnr.seconds, pnr.nextpnr
        );
        println!("nextpnr log: {}", pnr.log.display());
    }
    if s.netlist_trials > 0 {
        let net = hw::synth::NetlistModel::new(&p, target, &rep.netlist)?;
        let cos =
            hw::flow::cosim_random(&p, &net, s.netlist_trials, s.seed, None, None).map_err(user)?;
        println!(
            "netlist simulation (iverilog): trials {}  operations {}  cycles {}  mismatches {}",
            cos.trials, cos.ops, cos.cycles, cos.mismatches
        );
        if let Some((trial, msg)) = cos.first {
            println!("NETLIST MISMATCH in trial {trial}: {msg}");
            return Ok(Outcome::CheckFailed);
        }
    }
    Ok(Outcome::Ok)
}
