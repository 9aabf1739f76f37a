//! `systole sim PROG.s|PROG.bin --arch A [--timing-only] [--trace T.json] [--stats]`: runs an
//! assembled program on one chip and prints its cycle count (and statistics).
//!
//! Exit codes: 0 the program halted; 1 it deadlocked, ran past `--max-cycles` or stopped
//! making progress; 2 bad input (unreadable program, bad arch, an instruction that cannot
//! execute, the memory budget exceeded).

use crate::{Outcome, UserError};
use clap::Args;
use sim::trace::{TraceEvent, TraceSink, VecSink};
use sim::{SimError, SimOptions, System};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

fn user(msg: String) -> anyhow::Error {
    anyhow::Error::new(UserError(msg))
}

/// `systole sim`.
#[derive(Args)]
pub struct SimArgs {
    /// Program: assembly text (`.s`) or a program file from `systole asm`.
    #[arg(value_name = "PROG.s|PROG.bin")]
    input: PathBuf,
    /// Architecture preset or JSON file.
    #[arg(long, default_value = "mini")]
    arch: String,
    /// Override an arch field, e.g. `--set mxu.rows=16` (repeatable).
    #[arg(long = "set", value_name = "K=V")]
    sets: Vec<String>,
    /// Chips (replicas) running the program; each sees its own `replica_id`.
    #[arg(long, default_value_t = 1)]
    replicas: u32,
    /// Timing only: no functional execution (faster; scalar loads see only program data).
    #[arg(long)]
    timing_only: bool,
    /// Write a Chrome/Perfetto trace (JSON) of every unit's operations.
    #[arg(long, value_name = "TRACE.json")]
    trace: Option<PathBuf>,
    #[command(flatten)]
    trace_opts: TraceOpts,
    /// Print every statistic.
    #[arg(long)]
    stats: bool,
    /// Write the statistics as JSON.
    #[arg(long, value_name = "STATS.json")]
    stats_json: Option<PathBuf>,
    /// The host's infeed stream for core 0 of every chip (raw bytes).
    #[arg(long, value_name = "FILE")]
    infeed: Option<PathBuf>,
    /// Write chip 0 core 0's outfeed stream (raw bytes).
    #[arg(long, value_name = "FILE")]
    outfeed: Option<PathBuf>,
    /// Arguments of a compiled program (`systole compile -o PROG.bin`): one `.npy` per
    /// parameter or one `.npz` (`param0`, `param1`, ... or `arr_0`, ...), written into the
    /// regions the program names as its parameters (`io=paramN`), the same on every chip.
    #[arg(long, value_name = "FILES", num_args = 1..)]
    inputs: Vec<PathBuf>,
    /// Print the compiled program's result (its `io=result` regions) after the run and write
    /// it to this `.npz` (one array per leaf and chip, as `systole run --outputs`).
    #[arg(long, value_name = "OUT.npz")]
    outputs: Option<PathBuf>,
    /// Print every element of the result (default: a summary of large arrays).
    #[arg(long)]
    full: bool,
    /// Stop (exit 1) if the program has not halted by this cycle (default: sized to the
    /// program, 10^8 + 10^5 per instruction + its DMA and data bytes; see docs/bounded.md).
    #[arg(long)]
    max_cycles: Option<u64>,
    #[command(flatten)]
    sim_opts: SimRunOpts,
}

/// `--races` and `--threads`: the simulator options `systole sim` and `systole run` share
/// (flattened into both).
#[derive(Args, Clone, Copy, Debug)]
pub struct SimRunOpts {
    /// What a race between unordered accesses does: `error` stops the run (exit 1), `warn`
    /// reports it on stderr and goes on, `off` does not track accesses (docs/timing.md).
    #[arg(long, value_enum, default_value = "error")]
    pub races: RaceArg,
    /// Threads that simulate the chips of a pod (default: the available parallelism; at most
    /// one per chip). The results are the same for any number.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub threads: Option<u64>,
}

impl SimRunOpts {
    /// The race check asked for.
    pub fn races(&self) -> sim::RaceCheck {
        self.races.into()
    }

    /// `--threads`: the number asked for, else the machine's available parallelism (the
    /// simulator takes at most one per chip).
    pub fn threads(&self) -> usize {
        self.threads.map_or_else(
            || std::thread::available_parallelism().map_or(1, |n| n.get()),
            |n| n as usize,
        )
    }
}

/// `--races`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum RaceArg {
    /// Stop the run (exit 1).
    Error,
    /// Report on stderr and go on.
    Warn,
    /// Do not track accesses.
    Off,
}

impl From<RaceArg> for sim::RaceCheck {
    fn from(r: RaceArg) -> Self {
        match r {
            RaceArg::Error => sim::RaceCheck::Error,
            RaceArg::Warn => sim::RaceCheck::Warn,
            RaceArg::Off => sim::RaceCheck::Off,
        }
    }
}

/// Prints the races a `--races warn` run recorded.
pub fn print_race_warnings(file: &std::path::Path, r: &sim::RunResult) {
    for w in &r.race_warnings {
        eprintln!("{}: warning: {w}", file.display());
    }
    if r.races_seen > r.race_warnings.len() as u64 {
        eprintln!(
            "{}: warning: {} races in all ({} shown)",
            file.display(),
            r.races_seen,
            r.race_warnings.len()
        );
    }
}

/// How `--trace` files are written (docs/exploring.md, "Traces").
#[derive(Args, Clone, Debug)]
pub struct TraceOpts {
    /// Trace aggregation: slices shorter than this many cycles are merged per track into one
    /// slice per window of this many cycles (`N × op`); `0` keeps every slice; `auto` keeps
    /// every slice up to --trace-max-slices and else picks the smallest power of two that fits.
    #[arg(long, value_name = "CYCLES|auto", default_value = "auto")]
    pub trace_granularity: String,
    /// With `--trace-granularity auto`: the most slices a trace keeps before it aggregates
    /// (the default, about 200 MB of JSON).
    #[arg(long, value_name = "N", default_value_t = AUTO_MAX_SLICES)]
    pub trace_max_slices: usize,
    /// Cycles per sample of the trace's counter tracks (HBM and VMEM bandwidth, MXU
    /// utilization); default: the granularity or 1/1000 of the run, whichever is longer.
    #[arg(long, value_name = "CYCLES")]
    pub trace_interval: Option<u64>,
}

/// Slices a trace keeps by default before `--trace-granularity auto` aggregates (about
/// 200 MB of JSON).
pub const AUTO_MAX_SLICES: usize = 1_000_000;

impl TraceOpts {
    /// Checks the options before a run (bad values are user errors, exit 2).
    pub fn check(&self) -> anyhow::Result<()> {
        self.granularity_value()?;
        if self.trace_max_slices == 0 {
            return Err(user("--trace-max-slices must be at least 1".into()));
        }
        if self.trace_interval == Some(0) {
            return Err(user("--trace-interval must be at least 1 cycle".into()));
        }
        Ok(())
    }

    /// `Some(g)`, or `None` for `auto`.
    fn granularity_value(&self) -> anyhow::Result<Option<u64>> {
        let g = self.trace_granularity.trim();
        if g == "auto" {
            return Ok(None);
        }
        g.parse::<u64>().map(Some).map_err(|_| {
            user(format!(
                "--trace-granularity must be a number of cycles or `auto`, got `{g}`"
            ))
        })
    }

    /// Writes `events` to `path` as Chrome/Perfetto JSON (the `traces` crate) and says on
    /// stderr how many slices it holds.
    pub fn write(
        &self,
        path: &std::path::Path,
        events: &[sim::trace::OwnedTraceEvent],
        arch: &arch::ArchConfig,
        vmem_live: Vec<u64>,
    ) -> anyhow::Result<()> {
        let granularity = match self.granularity_value()? {
            Some(g) => g,
            None => traces::auto_granularity(events, self.trace_max_slices),
        };
        let opts = traces::ChromeOptions {
            clock_mhz: arch.clock_mhz,
            granularity,
            counter_interval: self.trace_interval.unwrap_or(0),
            mxus_per_chip: arch.cores_per_chip * arch.mxu.count,
            vmem_live,
        };
        let f = std::fs::File::create(path)
            .map_err(|e| user(format!("{}: cannot write: {e}", path.display())))?;
        let w = traces::write_chrome_json(events, &opts, f).map_err(|e| {
            let what = if e.kind() == std::io::ErrorKind::InvalidInput {
                "--trace-interval"
            } else {
                "cannot write"
            };
            user(format!("{}: {what}: {e}", path.display()))
        })?;
        let agg = if granularity > 0 {
            format!(
                ", {} slices written ({} aggregates; granularity {granularity} cycles)",
                w.slices_out, w.aggregates
            )
        } else {
            String::new()
        };
        eprintln!(
            "trace: {} slices on {} tracks{agg}, {} counter samples every {} cycles -> {}",
            w.slices_in,
            w.tracks,
            w.counter_samples,
            w.counter_interval,
            path.display()
        );
        Ok(())
    }
}

/// The compiled program's interface when `--inputs` or `--outputs` asks for it.
fn io_of(a: &SimArgs, prog: &isa::Program) -> anyhow::Result<Option<compiler::io::IoMap>> {
    if a.inputs.is_empty() && a.outputs.is_none() {
        return Ok(None);
    }
    if a.timing_only {
        return Err(user(
            "--inputs and --outputs need a functional run (not --timing-only)".into(),
        ));
    }
    if !prog.regions.iter().any(|r| r.io.is_some()) {
        return Err(user(format!(
            "{}: the program names no parameter or result regions (`.region ... io=paramN`), \
             so --inputs/--outputs have nowhere to go; compile it with `systole compile -o`",
            a.input.display()
        )));
    }
    let io = compiler::io::IoMap::from_program(prog)
        .map_err(|e| user(format!("{}: {e}", a.input.display())))?;
    if let Some(p) = &a.outputs {
        if p.extension().and_then(|e| e.to_str()) != Some("npz") {
            return Err(user(format!(
                "--outputs {}: the file must end in .npz",
                p.display()
            )));
        }
        crate::bounded::check_output(p)?;
    }
    if !a.inputs.is_empty() || io.params.is_empty() {
        return Ok(Some(io));
    }
    Err(user(format!(
        "{}: the program has {} parameter(s): give them with --inputs",
        a.input.display(),
        io.params.len()
    )))
}

/// The shape of an interface place.
fn shape_of(p: &compiler::io::Place) -> hlo::Shape {
    match p {
        compiler::io::Place::Array(s) => {
            let dims: Vec<i64> = s.dims.iter().map(|&d| d as i64).collect();
            hlo::Shape::array(s.ty, &dims)
        }
        compiler::io::Place::Tuple(ps) => hlo::Shape::Tuple(ps.iter().map(shape_of).collect()),
        compiler::io::Place::Token => hlo::Shape::Token,
    }
}

/// `--inputs` of a compiled program: `.npy` per parameter or one `.npz`.
fn read_args(
    files: &[PathBuf],
    io: &compiler::io::IoMap,
    prog: &isa::Program,
) -> anyhow::Result<Vec<hlo::Literal>> {
    // Arguments are matched by the HLO parameter's name the compiler gave the region.
    let name = |k: usize| {
        prog.regions
            .iter()
            .find(|r| matches!(&r.io, Some(isa::RegionIo::Param { number, .. }) if *number as usize == k))
            .map(|r| r.name.split('{').next().unwrap_or(&r.name).to_string())
            .unwrap_or_else(|| format!("param{k}"))
    };
    let params: Vec<(String, hlo::Shape)> = io
        .params
        .iter()
        .enumerate()
        .map(|(k, p)| (name(k), shape_of(p)))
        .collect();
    match crate::npy::classify(files)? {
        crate::npy::InputFiles::Npy(f) => crate::npy::read_npy_params(f, &params),
        crate::npy::InputFiles::Npz(f) => crate::npy::read_npz_params(f, &params),
        crate::npy::InputFiles::Case(f) => Err(user(format!(
            "--inputs {}: `systole sim` reads .npy or .npz arguments (a case.json goes with the \
             HLO module: `systole run MODULE.hlo --inputs CASE.json`)",
            f.display()
        ))),
    }
}

/// The VMEM bytes `prog`'s plan holds at each instruction, for the trace's occupancy
/// counters; empty when the program carries no lifetimes (hand-written assembly).
pub(crate) fn vmem_plan(prog: &isa::Program) -> Vec<u64> {
    if prog.regions.iter().any(|r| r.live.is_some()) {
        prog.live_bytes_by_pc(isa::Space::Vmem)
    } else {
        Vec::new()
    }
}

/// Bytes one collected trace event is counted as against the memory budget.
pub(crate) const TRACE_EVENT_BYTES: u64 = 160;

/// Collects trace events, at most `cap` of them (the memory budget); `dropped` counts the rest.
pub(crate) struct SharedSink {
    pub(crate) events: Arc<Mutex<VecSink>>,
    pub(crate) cap: u64,
    pub(crate) dropped: Arc<Mutex<u64>>,
}
impl TraceSink for SharedSink {
    fn event(&mut self, e: &TraceEvent<'_>) {
        let mut sink = self.events.lock().expect("trace sink");
        if sink.events.len() as u64 >= self.cap {
            *self.dropped.lock().expect("trace sink") += 1;
            return;
        }
        sink.events.push(e.into());
    }
}

fn load_program(path: &std::path::Path) -> anyhow::Result<isa::Program> {
    let name = path.display().to_string();
    let bytes = crate::bounded::read_bytes(path)?;
    if bytes.starts_with(b"SYSTPRG\0") {
        return isa::Program::from_bytes(&bytes).map_err(|e| user(format!("{name}: error: {e}")));
    }
    let text = crate::bounded::utf8(path, bytes).map_err(|e| {
        user(format!(
            "{e} (neither a program file nor UTF-8 assembly text)"
        ))
    })?;
    isa::asm::assemble(&text).map_err(|e| user(e.render(&name)))
}

/// Runs the program.
pub fn run(a: SimArgs) -> anyhow::Result<Outcome> {
    let arch = arch::ArchConfig::resolve(&a.arch, &a.sets).map_err(|e| user(e.to_string()))?;
    for p in [&a.trace, &a.stats_json, &a.outfeed].into_iter().flatten() {
        crate::bounded::check_output(p)?;
    }
    a.trace_opts.check()?;
    let prog = load_program(&a.input)?;
    let vmem_live = if a.trace.is_some() {
        vmem_plan(&prog)
    } else {
        Vec::new()
    };
    let io = io_of(&a, &prog)?;
    let args = match &io {
        Some(io) if !a.inputs.is_empty() => read_args(&a.inputs, io, &prog)?,
        _ => Vec::new(),
    };
    let opts = SimOptions {
        functional: !a.timing_only,
        max_cycles: a
            .max_cycles
            .unwrap_or_else(|| sim::default_max_cycles(&prog)),
        races: a.sim_opts.races(),
        threads: a.sim_opts.threads(),
    };
    let budget = crate::bounded::budget();
    let mut sys = System::with_memory_limit(&arch, prog, a.replicas, opts, budget.max_memory)
        .map_err(|e| user(format!("{}: error: {e}", a.input.display())))?;
    for chip in 0..a.replicas as usize {
        let mut writes = Vec::new();
        for (place, lit) in io.iter().flat_map(|io| io.params.iter()).zip(&args) {
            compiler::io::literal_bytes(place, lit, &mut writes)
                .map_err(|e| user(format!("--inputs: {e}")))?;
        }
        for (addr, bytes) in writes {
            sys.write_hbm(chip, addr, &bytes)
                .map_err(|e| user(format!("--inputs: {e}")))?;
        }
    }
    if let Some(p) = &a.infeed {
        let r = if a.timing_only {
            // Only the length matters: not read.
            let len = std::fs::metadata(p)
                .map_err(|e| user(format!("{}: error: cannot read file: {e}", p.display())))?
                .len();
            sys.set_infeed_len(0, 0, len)
        } else {
            sys.set_infeed(0, 0, crate::bounded::read_bytes(p)?)
        };
        r.map_err(|e| user(e.to_string()))?;
    }
    let sink = Arc::new(Mutex::new(VecSink::default()));
    let dropped = Arc::new(Mutex::new(0u64));
    if a.trace.is_some() {
        sys.set_trace(Box::new(SharedSink {
            events: sink.clone(),
            cap: budget.max_memory / TRACE_EVENT_BYTES,
            dropped: dropped.clone(),
        }));
    }
    let started = std::time::Instant::now();
    let res = sys.run();
    let secs = started.elapsed().as_secs_f64();
    let r = match res {
        Ok(r) => r,
        Err(e @ (SimError::Deadlock(_) | SimError::Timeout(_) | SimError::Race { .. })) => {
            eprintln!("{e}");
            return Ok(Outcome::CheckFailed);
        }
        Err(e) => return Err(user(format!("{}: error: {e}", a.input.display()))),
    };
    print_race_warnings(&a.input, &r);
    if let Some(io) = &io {
        let mut outs = Vec::new();
        for chip in 0..a.replicas as usize {
            let hbm = sys.hbm(chip).expect("chip");
            let out = compiler::io::read_literal(&io.result, &mut |addr, len| {
                hbm.read_vec(addr, len).ok()
            })
            .map_err(|e| user(format!("{}: reading the result: {e}", a.input.display())))?;
            if a.replicas > 1 {
                println!("replica {chip}:");
            }
            println!("{}", crate::cmd_run::summary(&out, a.full));
            outs.push(out);
        }
        if let Some(p) = &a.outputs {
            crate::npy::write_outputs(p, &outs)?;
        }
    }
    let us = r.cycles as f64 / arch.clock_mhz;
    println!(
        "cycles: {} ({us:.3} µs at {} MHz)",
        r.cycles, arch.clock_mhz
    );
    eprintln!(
        "simulated in {secs:.3} s ({} events, {:.3e} cycles/s)",
        r.events,
        r.cycles as f64 / secs.max(1e-9)
    );
    if a.stats {
        let width = sys
            .stats()
            .iter()
            .map(|e| e.decl.name.len())
            .max()
            .unwrap_or(0);
        for e in sys.stats().iter() {
            println!("{:width$}  {:>14}  {}", e.decl.name, e.value, e.decl.unit);
        }
    }
    if let Some(p) = &a.stats_json {
        let text = serde_json::to_string_pretty(&sys.stats().to_json())?;
        std::fs::write(p, text).map_err(|e| user(format!("{}: {e}", p.display())))?;
    }
    if let Some(p) = &a.trace {
        let lost = *dropped.lock().expect("trace sink");
        if lost > 0 {
            return Err(user(format!(
                "{}: error: resource limit: the trace has more than {} events ({lost} more not \
                 kept; {TRACE_EVENT_BYTES} bytes each), more than the budget of {} bytes \
                 (--max-memory)",
                p.display(),
                budget.max_memory / TRACE_EVENT_BYTES,
                budget.max_memory
            )));
        }
        let events = std::mem::take(&mut sink.lock().expect("trace sink").events);
        a.trace_opts.write(p, &events, &arch, vmem_live)?;
    }
    if let Some(p) = &a.outfeed {
        let out = sys.outfeed(0, 0).unwrap_or_default();
        std::fs::write(p, out).map_err(|e| user(format!("{}: {e}", p.display())))?;
    }
    Ok(Outcome::Ok)
}

#[cfg(test)]
mod tests {
    use super::SimRunOpts;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        o: SimRunOpts,
    }

    /// `--races` and `--threads` parse through the one struct `sim` and `run` flatten.
    #[test]
    fn sim_run_opts_parse_races_and_threads() {
        let t = T::parse_from(["t", "--races", "off", "--threads", "3"]);
        assert_eq!(t.o.races(), sim::RaceCheck::Off);
        assert_eq!(t.o.threads(), 3);
        let d = T::parse_from(["t"]);
        assert_eq!(d.o.races(), sim::RaceCheck::Error);
        assert!(d.o.threads() >= 1);
        assert!(T::try_parse_from(["t", "--threads", "0"]).is_err());
    }
}
