//! `systole`: the command-line front of the workspace (see `docs/architecture.md`).
//!
//! Exit codes: 0 success, 1 a check failed (mismatch, deadlock found), 2 bad input, usage or a
//! resource budget exceeded (`--max-memory`, `--max-work`; see docs/bounded.md).
//! Each subcommand family lives in its own module (`cmd_*.rs`); this file only dispatches.

mod bounded;
mod cmd_arch;
mod cmd_eval;
mod cmd_hlo;
mod cmd_isa;
mod cmd_plot;
mod cmd_rtl;
mod cmd_run;
mod cmd_sim;
mod cmd_sweep;
mod hostio;
mod npy;
mod op_cost;
mod scalesim;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "systole",
    version,
    about = "TPU-like accelerator simulator and hardware model"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Command,
    #[command(flatten)]
    budget: bounded::BudgetArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and verify an HLO module; errors as FILE:LINE:COL with the line and a caret.
    Check(cmd_hlo::CheckArgs),
    /// Print an HLO module as canonical text (parse → print round-trips).
    Fmt(cmd_hlo::FmtArgs),
    /// Assemble ISA text into a program file: `asm PROG.s -o PROG.bin`.
    Asm(cmd_isa::AsmArgs),
    /// Print a program file as ISA text (assembles back to the same program).
    Disasm(cmd_isa::DisasmArgs),
    /// Architecture presets: `arch list`, `arch show PRESET|FILE [--set K=V ...]`.
    Arch(cmd_arch::ArchCmd),
    /// The MXU's RTL: `rtl gen`, `rtl sim` (co-simulation), `rtl synth` (Yosys).
    Rtl(cmd_rtl::RtlArgs),
    /// Evaluate an HLO module on the reference evaluator: `eval FILE.hlo [--inputs CASE.json | --random SEED] [--replicas N] [--json OUT.json]`.
    Eval(cmd_eval::EvalArgs),
    /// Run every case folder of a conformance corpus; last line "N passed, M failed".
    Conformance(cmd_eval::ConformanceArgs),
    /// Compile an HLO module for a chip: `compile FILE.hlo --arch A [-o PROG.bin] [--asm PROG.s]`.
    Compile(cmd_run::CompileArgs),
    /// Compile an HLO module and run it on the simulated chip, checking its outputs against the
    /// evaluator; `run --scalesim-topology LAYERS.csv` runs a SCALE-Sim topology layer by layer.
    Run(cmd_run::RunArgs),
    /// Run a program on the simulator: `sim PROG.s|PROG.bin --arch A [--timing-only] [--trace T.json] [--stats]`.
    Sim(cmd_sim::SimArgs),
    /// Sweep arch parameters: `sweep FILE.hlo --set PATH=v1,v2,... [-j N] [--shard K/N] -o SWEEP.csv`;
    /// `sweep merge PARTS... -o SWEEP.csv` joins shards.
    Sweep(cmd_sweep::SweepArgs),
    /// Draw a run or a sweep: `plot INPUT --kind timeline|utilization|roofline|ops|sweep -o OUT.png|OUT.svg`.
    Plot(cmd_plot::PlotArgs),
}

/// How a subcommand ended, mapped onto the documented exit codes.
pub enum Outcome {
    /// Everything checked out (exit 0).
    Ok,
    /// A check failed: mismatch, deadlock (exit 1).
    CheckFailed,
}

/// A user error (bad input or usage): printed as is, exit code 2.
#[derive(Debug)]
pub struct UserError(pub String);

impl std::fmt::Display for UserError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for UserError {}

fn main() -> ExitCode {
    bounded::quiet_on_closed_stdout();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    if let Err(e) = bounded::init(&cli.budget) {
        eprintln!("{e}");
        return ExitCode::from(2);
    }
    let result = match cli.cmd {
        Command::Check(a) => cmd_hlo::check(a),
        Command::Fmt(a) => cmd_hlo::fmt(a),
        Command::Asm(a) => cmd_isa::asm(a),
        Command::Disasm(a) => cmd_isa::disasm(a),
        Command::Arch(a) => cmd_arch::run(a),
        Command::Rtl(a) => cmd_rtl::run(a),
        Command::Sim(a) => cmd_sim::run(a),
        Command::Compile(a) => cmd_run::compile(a),
        Command::Run(a) => cmd_run::run(a),
        Command::Sweep(a) => cmd_sweep::run(a),
        Command::Plot(a) => cmd_plot::run(a),
        Command::Eval(a) => cmd_eval::eval(a),
        Command::Conformance(a) => cmd_eval::conformance(a),
    };
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::CheckFailed) => ExitCode::from(1),
        Err(e) => {
            if let Some(u) = e.downcast_ref::<UserError>() {
                eprintln!("{}", bounded::elide_long_tokens(&u.0));
                ExitCode::from(2)
            } else {
                eprintln!("{}", bounded::elide_long_tokens(&format!("error: {e:#}")));
                ExitCode::from(2)
            }
        }
    }
}
