//! `systole compile FILE.hlo --arch A [-o PROG.bin] [--asm PROG.s]` and
//! `systole run FILE.hlo --arch A [--inputs CASE.json | --random SEED] [--timing-only]
//! [--report REPORT.json]`: the HLO module compiled for the chip and simulated on it.
//!
//! `run` loads the inputs into HBM where the compiler's I/O map says, simulates, reads the
//! result back, and (in functional runs) compares it with the reference evaluator: against the
//! case's expected outputs and tolerance when `--inputs` is a case with outputs, else against
//! the evaluator within `--rtol`/`--atol`. Exit codes: 0 ok; 1 outputs differ, the program
//! deadlocked or ran out of cycles; 2 bad input or an op the compiler cannot lower yet
//! ("not supported on chip yet: ... at FILE:LINE:COL").

use crate::cmd_eval::{random_literal, SplitMix};
use crate::cmd_hlo::load_verified;
use crate::{Outcome, UserError};
use clap::Args;
use compiler::{CompileOptions, Compiled};
use eval::case::{check_value, Check, Tolerance};
use hlo::Literal;
use sim::trace::{TraceEvent, TraceSink};
use sim::{SimError, SimOptions, System};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

fn user(msg: String) -> anyhow::Error {
    anyhow::Error::new(UserError(msg))
}

/// Options shared by `compile` and `run`.
#[derive(Args, Clone)]
pub struct TargetArgs {
    /// HLO text file (`run --scalesim-topology` takes a topology instead).
    pub file: Option<PathBuf>,
    /// Architecture preset or JSON file.
    #[arg(long, default_value = "tpu-v4")]
    pub arch: String,
    /// Override an arch field, e.g. `--set mxu.rows=64` (repeatable).
    #[arg(long = "set", value_name = "K=V")]
    pub sets: Vec<String>,
    /// At least this many bf16 passes per f32 dot: 1 (TPU DEFAULT), 3 (HIGH) or 6 (HIGHEST,
    /// close to f32 accuracy). The module's precision_config may ask for more.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=6))]
    pub f32_dot_passes: u32,
    /// ICI backend: `detailed` (every chip simulated, transfers on the fabric's links) or
    /// `analytic` (collectives timed by their α-β closed forms and chip 0 simulated for the
    /// pod: fast for big pods; timing only).
    #[arg(long, value_enum, default_value_t = IciBackend::Detailed)]
    pub ici: IciBackend,
}

impl TargetArgs {
    /// The HLO file (clap cannot require it only for `run` without `--scalesim-topology`).
    pub fn file(&self) -> anyhow::Result<&Path> {
        self.file
            .as_deref()
            .ok_or_else(|| user("error: the HLO file is required (FILE.hlo)".into()))
    }
}

/// See [`TargetArgs::ici`].
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum IciBackend {
    Detailed,
    Analytic,
}

/// `systole compile`.
#[derive(Args)]
pub struct CompileArgs {
    #[command(flatten)]
    t: TargetArgs,
    /// Write the program file.
    #[arg(short = 'o', value_name = "PROG.bin")]
    out: Option<PathBuf>,
    /// Write the program as assembly text.
    #[arg(long, value_name = "PROG.s")]
    asm: Option<PathBuf>,
    /// Write the HLO module after the compiler's HLO passes (what was lowered), as text the
    /// parser reads back.
    #[arg(long, value_name = "OPT.hlo")]
    hlo_after_passes: Option<PathBuf>,
}

/// `systole run`.
#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    t: TargetArgs,
    /// Arguments: a case.json or case folder (one input list per replica; a multi-replica
    /// module runs one chip per replica), one `.npy` per parameter in order
    /// (`--inputs A.npy,B.npy` or `--inputs A.npy --inputs B.npy`), or one `.npz`
    /// (arrays named like the parameters, or arr_0, arr_1, ...); NumPy arguments go to every
    /// replica.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "CASE.json|A.npy,B.npy,...|ARGS.npz",
        conflicts_with = "random"
    )]
    inputs: Vec<PathBuf>,
    /// Write the chip's results as an `.npz` (`out`, or `out_0`, `out_1`, ... for a tuple).
    #[arg(long, value_name = "OUT.npz")]
    outputs: Option<PathBuf>,
    /// Random arguments from this seed (default 0), as `systole eval` makes them.
    #[arg(long)]
    random: Option<u64>,
    /// Timing only: no data moves, no outputs, no comparison (faster).
    #[arg(long)]
    timing_only: bool,
    /// Relative tolerance of the comparison with the evaluator (when the case has none).
    #[arg(long, default_value_t = 2e-2)]
    rtol: f64,
    /// Absolute tolerance of the comparison with the evaluator (when the case has none).
    #[arg(long, default_value_t = 1e-3)]
    atol: f64,
    /// Write a Chrome/Perfetto trace (JSON) of every unit's operations, named by instruction
    /// and HLO op.
    #[arg(long, value_name = "TRACE.json")]
    trace: Option<PathBuf>,
    #[command(flatten)]
    trace_opts: crate::cmd_sim::TraceOpts,
    /// Write a JSON report (cycles, seconds, flops, utilization, per-HLO-op table).
    #[arg(long, value_name = "REPORT.json")]
    report: Option<PathBuf>,
    /// Stop (exit 1) if the program has not halted by this cycle (default: sized to the
    /// program, see docs/bounded.md).
    #[arg(long)]
    max_cycles: Option<u64>,
    #[command(flatten)]
    sim_opts: crate::cmd_sim::SimRunOpts,
    /// Print every output element (default: a summary of large outputs).
    #[arg(long)]
    full: bool,
    /// Replay every MXU's operation stream of the run through the Verilator model of the
    /// generated RTL and compare every result row and its cycle with the simulator's model.
    #[arg(long)]
    rtl_check: bool,
    /// Instead of FILE.hlo: every layer of a SCALE-Sim topology CSV (convolution or GEMM
    /// format) built as HLO, compiled and simulated timing-only, beside SCALE-Sim's
    /// weight-stationary fold formula (docs/exploring.md).
    #[arg(long, value_name = "LAYERS.csv", conflicts_with_all = ["inputs", "random", "trace", "report", "outputs", "rtl_check"])]
    scalesim_topology: Option<PathBuf>,
    /// With --scalesim-topology: also write the per-layer table as CSV.
    #[arg(short = 'o', value_name = "OUT.csv")]
    out: Option<PathBuf>,
}

/// Parses, verifies and compiles; errors rendered as FILE:LINE:COL.
pub fn compile_file(
    t: &TargetArgs,
) -> anyhow::Result<(String, hlo::VerifiedModule, arch::ArchConfig, Compiled)> {
    if ![1, 3, 6].contains(&t.f32_dot_passes) {
        return Err(user(format!(
            "--f32-dot-passes must be 1, 3 or 6, got {}",
            t.f32_dot_passes
        )));
    }
    let file = t.file()?;
    let (src, module) = load_verified(file)?;
    let arch = arch::ArchConfig::resolve(&t.arch, &t.sets).map_err(|e| user(e.to_string()))?;
    let opts = CompileOptions {
        f32_dot_passes: t.f32_dot_passes,
        ici_analytic: t.ici == IciBackend::Analytic,
        ..CompileOptions::default()
    };
    let c = compiler::compile(&module, &arch, &opts)
        .map_err(|e| user(e.render(&file.display().to_string())))?;
    Ok((src, module, arch, c))
}

/// `systole compile`.
pub fn compile(a: CompileArgs) -> anyhow::Result<Outcome> {
    for p in a.out.iter().chain(&a.asm).chain(&a.hlo_after_passes) {
        crate::bounded::check_output(p)?;
    }
    let (_, _, arch, c) = compile_file(&a.t)?;
    if let Some(p) = &a.out {
        let bytes = c
            .program
            .to_bytes()
            .map_err(|e| user(format!("{}: {e}", p.display())))?;
        std::fs::write(p, bytes)
            .map_err(|e| user(format!("{}: cannot write: {e}", p.display())))?;
    }
    if let Some(p) = &a.asm {
        std::fs::write(p, isa::disasm::disasm(&c.program))
            .map_err(|e| user(format!("{}: cannot write: {e}", p.display())))?;
    }
    if let Some(p) = &a.hlo_after_passes {
        std::fs::write(p, hlo::print(&c.module))
            .map_err(|e| user(format!("{}: cannot write: {e}", p.display())))?;
    }
    print_compile_summary(&c, &arch);
    Ok(Outcome::Ok)
}

fn print_compile_summary(c: &Compiled, arch: &arch::ArchConfig) {
    let mut by_unit: BTreeMap<&str, usize> = BTreeMap::new();
    for i in &c.program.code {
        *by_unit.entry(i.mnemonic()).or_default() += 1;
    }
    println!(
        "compiled for {}: {} instructions, {} DMA descriptors, VMEM peak {} of {} bytes, HBM {} bytes",
        arch.name,
        c.program.code.len(),
        c.program.dma.len(),
        c.stats.vmem_peak,
        arch.vmem.bytes,
        c.stats.hbm_bytes
    );
    let list: Vec<String> = by_unit.iter().map(|(m, n)| format!("{m} {n}")).collect();
    println!("instructions: {}", list.join(", "));
    println!(
        "synchronization: {} sem.wait, {} fence; {} s.li for address bases",
        c.stats.emit.waits, c.stats.emit.fences, c.stats.emit.base_loads
    );
    let st = &c.stats;
    if st.ew_streams + st.late_streams + st.reduce_streams + st.transpose_streams > 0 {
        println!(
            "streamed from HBM (values larger than a quarter of VMEM): {} element-wise regions, \
             {} dots and convolutions where they stand, {} reduces, {} transposes",
            st.ew_streams, st.late_streams, st.reduce_streams, st.transpose_streams
        );
    }
    let sp = &c.stats.spill;
    if sp.spills > 0 {
        println!(
            "spilling (live values larger than VMEM): {} values to HBM ({} bytes copied), {} \
             reloads ({} bytes)",
            sp.spills, sp.spill_bytes, sp.reloads, sp.reload_bytes
        );
    }
}

/// A case's expected outputs with its check and tolerance.
type Expected = (Vec<Literal>, Check, Tolerance);

/// Busy cycles of one HLO op: total and per unit kind.
type OpBusy = (u64, BTreeMap<String, u64>);

/// Sends every trace event to several sinks.
struct Tee(Vec<Box<dyn TraceSink>>);
impl TraceSink for Tee {
    fn event(&mut self, e: &TraceEvent<'_>) {
        for s in &mut self.0 {
            s.event(e);
        }
    }
}

/// Per-HLO-op busy cycles, summed over units, from the trace.
#[derive(Default)]
struct OpCycles {
    by_op: BTreeMap<String, OpBusy>,
    /// First start and last end of any unit's work for each HLO op, over all chips.
    span: BTreeMap<String, (u64, u64)>,
}

struct OpSink(Arc<Mutex<OpCycles>>);
impl TraceSink for OpSink {
    fn event(&mut self, e: &TraceEvent<'_>) {
        let Some(sym) = e.symbol else { return };
        // Link tracks (`ici.x+`) repeat the transfers the ICI units already count; the
        // sequencer's track (issue and blocked time) is not work of the op's units.
        if e.unit.starts_with("ici.") || e.unit.ends_with(".seq") {
            return;
        }
        let unit = e.unit.rsplit('.').next().unwrap_or(e.unit);
        let unit = unit.trim_end_matches(|c: char| c.is_ascii_digit());
        let mut g = self.0.lock().expect("op sink");
        // Keys are copied only the first time they are seen (this runs once per event).
        let ent = entry_or(&mut g.by_op, sym, OpBusy::default);
        let d = e.end.saturating_sub(e.start);
        ent.0 += d;
        *entry_or(&mut ent.1, unit, || 0) += d;
        let sp = entry_or(&mut g.span, sym, || (e.start, e.end));
        sp.0 = sp.0.min(e.start);
        sp.1 = sp.1.max(e.end);
    }
}

/// `m[k]`, inserted from `init` if absent, without copying `k` when present.
fn entry_or<'m, V>(m: &'m mut BTreeMap<String, V>, k: &str, init: impl FnOnce() -> V) -> &'m mut V {
    if !m.contains_key(k) {
        m.insert(k.to_string(), init());
    }
    m.get_mut(k).expect("present")
}

/// Each replica's arguments (one set per replica of the module) and the case's expected
/// outputs (one per replica), if a case gave them.
/// The arguments per device, the expected outputs if the case has them, and each device's
/// infeed values (a case's `infeed`; none from NumPy files or `--random`).
type Inputs = (Vec<Vec<Literal>>, Option<Expected>, Vec<Vec<Literal>>);

fn inputs_for(
    a: &RunArgs,
    module: &hlo::Module,
    src: &str,
    c: &Compiled,
) -> anyhow::Result<Inputs> {
    let replicas = module.num_devices();
    if !a.inputs.is_empty() {
        let p = match crate::npy::classify(&a.inputs)? {
            crate::npy::InputFiles::Npy(files) => {
                let args = crate::npy::read_npy_args(files, module)?;
                return Ok((vec![args; replicas], None, Vec::new()));
            }
            crate::npy::InputFiles::Npz(file) => {
                let args = crate::npy::read_npz_args(file, module)?;
                return Ok((vec![args; replicas], None, Vec::new()));
            }
            crate::npy::InputFiles::Case(p) => p,
        };
        let (file, case) = crate::cmd_eval::load_case_file(p, src)?;
        if case.inputs.is_empty() {
            return Err(user(format!("{}: the case has no inputs", file.display())));
        }
        if case.inputs.len() != replicas {
            return Err(user(format!(
                "{}: the case has inputs for {} device(s), the module runs on {replicas} \
                 (replica_count × num_partitions)",
                file.display(),
                case.inputs.len()
            )));
        }
        let expected =
            (!case.outputs.is_empty()).then(|| (case.outputs.clone(), case.check, case.tolerance));
        // With host recvs the infeed stream interleaves the case's queues in program order.
        let infeed = if case.host_recv.iter().any(|q| !q.is_empty()) {
            crate::hostio::infeed_streams(c, &case).map_err(user)?
        } else {
            case.infeed.clone()
        };
        return Ok((case.inputs.clone(), expected, infeed));
    }
    Ok((
        random_args(module, a.random.unwrap_or(0))?,
        None,
        Vec::new(),
    ))
}

/// Random arguments for every device of `module` from `seed`, as `run --random` makes them.
pub fn random_args(module: &hlo::Module, seed: u64) -> anyhow::Result<Vec<Vec<Literal>>> {
    let mut g = SplitMix(seed);
    let shape = module.entry().program_shape();
    (0..module.num_devices())
        .map(|_| {
            shape
                .params
                .iter()
                .map(|s| random_literal(s, &mut g))
                .collect::<anyhow::Result<Vec<_>>>()
        })
        .collect()
}

/// Elements up to which an array prints whole.
const SMALL_ARRAY: usize = 64;

/// An output for stdout: whole if `full` or small, else per array its shape, min/max/mean and
/// first elements (a tuple summarizes each element).
pub(crate) fn summary(l: &Literal, full: bool) -> String {
    fn count(l: &Literal) -> usize {
        match l {
            Literal::Array(a) => a.data.len(),
            Literal::Tuple(t) => t.iter().map(count).sum(),
            Literal::Token => 0,
        }
    }
    if full || count(l) <= SMALL_ARRAY {
        return hlo::print_literal(l);
    }
    let mut out = String::new();
    summarize(l, &mut out);
    out + "\n(--full prints every element)"
}

fn summarize(l: &Literal, out: &mut String) {
    match l {
        Literal::Tuple(t) => {
            out.push('(');
            for (i, x) in t.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n ");
                }
                summarize(x, out);
            }
            out.push(')');
        }
        Literal::Token => out.push_str("token"),
        Literal::Array(a) if a.data.len() <= SMALL_ARRAY => {
            out.push_str(&hlo::print_literal(l));
        }
        Literal::Array(a) => {
            let n = a.data.len();
            let dims: Vec<String> = a.dims.iter().map(|d| d.to_string()).collect();
            out.push_str(&format!(
                "{}[{}] ({n} elements): ",
                a.data.element_type().name(),
                dims.join(",")
            ));
            let vals = (0..n).map(|i| as_f64(&a.data, i));
            if let hlo::ArrayData::Pred(v) = &a.data {
                out.push_str(&format!(
                    "{} true, {} false",
                    v.iter().filter(|b| **b).count(),
                    v.iter().filter(|b| !**b).count()
                ));
            } else if !matches!(
                a.data,
                hlo::ArrayData::C64(_) | hlo::ArrayData::C128(_) | hlo::ArrayData::Raw(..)
            ) {
                let (mut lo, mut hi, mut sum, mut nan) =
                    (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0usize);
                for v in vals {
                    if v.is_nan() {
                        nan += 1;
                        continue;
                    }
                    lo = lo.min(v);
                    hi = hi.max(v);
                    sum += v;
                }
                let finite = n - nan;
                out.push_str(&format!(
                    "min {}, max {}, mean {}",
                    short(lo),
                    short(hi),
                    short(sum / finite.max(1) as f64)
                ));
                if nan > 0 {
                    out.push_str(&format!(", {nan} NaN"));
                }
            }
            let first: Vec<String> = (0..n.min(8)).map(|i| element_text(&a.data, i)).collect();
            out.push_str(&format!(
                "; first {}: {}, ...",
                first.len(),
                first.join(", ")
            ));
        }
    }
}

/// Six significant digits.
fn short(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let s = format!("{v:.6e}");
    let parsed: f64 = s.parse().unwrap_or(v);
    format!("{parsed}")
}

/// One element as its own type prints it.
fn element_text(d: &hlo::ArrayData, i: usize) -> String {
    use hlo::ArrayData as D;
    match d {
        D::Pred(v) => v[i].to_string(),
        D::S8(v) => v[i].to_string(),
        D::S16(v) => v[i].to_string(),
        D::S32(v) => v[i].to_string(),
        D::S64(v) => v[i].to_string(),
        D::U8(v) => v[i].to_string(),
        D::U16(v) => v[i].to_string(),
        D::U32(v) => v[i].to_string(),
        D::U64(v) => v[i].to_string(),
        D::F16(v) => v[i].to_string(),
        D::BF16(v) => v[i].to_string(),
        D::F32(v) => v[i].to_string(),
        D::F64(v) => v[i].to_string(),
        D::C64(v) => format!("({}, {})", v[i].re, v[i].im),
        D::C128(v) => format!("({}, {})", v[i].re, v[i].im),
        D::Raw(_, v) => format!("0x{:02x}", v[i]),
    }
}

/// Why a compiled run did not finish.
pub enum ExecError {
    /// Deadlock or cycle limit: a check failed (exit 1).
    Check(String),
    /// Bad input or a simulator refusal (exit 2).
    User(String),
}

/// A finished run on the chip.
pub struct Execution {
    /// Cycles and events.
    pub run: sim::RunResult,
    /// The simulator after the run (statistics, memories).
    pub system: System,
    /// Every replica's result, in replica order (functional runs).
    pub results: Vec<Literal>,
    /// Host seconds the simulation took.
    pub wall_seconds: f64,
}

/// [`execute`] as the batch commands (sweep points, SCALE-Sim layers) need it: the default
/// cycle limit, no infeed, trace or RTL record; a failure as its message.
pub fn execute_batch(
    c: &Compiled,
    arch: &arch::ArchConfig,
    args: &[Vec<Literal>],
    functional: bool,
) -> Result<Execution, String> {
    let opts = SimOptions {
        functional,
        max_cycles: sim::default_max_cycles(&c.program),
        ..Default::default()
    };
    execute(c, arch, args, opts, &[], None, false).map_err(|e| match e {
        ExecError::Check(m) | ExecError::User(m) => m,
    })
}

/// Loads each replica's `args` into its chip's HBM where the compiler put the parameters,
/// runs the program on one chip per replica and reads the results back.
pub fn execute(
    c: &Compiled,
    arch: &arch::ArchConfig,
    args: &[Vec<Literal>],
    opts: SimOptions,
    infeed: &[Vec<Literal>],
    trace: Option<Box<dyn TraceSink>>,
    record_mxu: bool,
) -> Result<Execution, ExecError> {
    let replicas = c.chips;
    if opts.functional && args.len() != replicas {
        return Err(ExecError::User(format!(
            "{} sets of arguments for {replicas} replica(s)",
            args.len()
        )));
    }
    for a in args.iter().filter(|_| opts.functional) {
        if a.len() != c.io.params.len() {
            return Err(ExecError::User(format!(
                "{} arguments for {} parameters",
                a.len(),
                c.io.params.len()
            )));
        }
    }
    let functional = opts.functional;
    let mut sys = System::new(arch, c.program.clone(), replicas as u32, opts)
        .map_err(|e| ExecError::User(e.to_string()))?;
    if functional {
        for (chip, args) in args.iter().enumerate() {
            let mut writes = Vec::new();
            for (place, lit) in c.io.params.iter().zip(args) {
                compiler::io::literal_bytes(place, lit, &mut writes)
                    .map_err(|e| ExecError::User(format!("argument: {e}")))?;
            }
            for (addr, bytes) in writes {
                sys.write_hbm(chip, addr, &bytes)
                    .map_err(|e| ExecError::User(e.to_string()))?;
            }
        }
    }
    // The host's infeed stream of each chip (core 0 runs the program's infeeds): the
    // replica's infeed values one after the other, row-major little-endian. A timing-only run
    // moves no data: its stream is as long as the program asks.
    if c.program.code.iter().any(|i| i.mnemonic() == "infeed") {
        for chip in 0..replicas {
            let r = if functional {
                // A tuple value's leaves follow each other (one `infeed` per leaf).
                let bytes: Vec<u8> = infeed
                    .get(chip)
                    .into_iter()
                    .flatten()
                    .flat_map(leaves)
                    .flat_map(compiler::io::to_bytes)
                    .collect();
                sys.set_infeed(chip, 0, bytes)
            } else {
                sys.set_infeed_len(chip, 0, u64::MAX / 2)
            };
            r.map_err(|e| ExecError::User(e.to_string()))?;
        }
    }
    if let Some(t) = trace {
        sys.set_trace(t);
    }
    if record_mxu {
        sys.record_mxu();
    }
    let started = std::time::Instant::now();
    let run = match sys.run() {
        Ok(r) => r,
        Err(e @ (SimError::Deadlock(_) | SimError::Timeout(_) | SimError::Race { .. })) => {
            return Err(ExecError::Check(e.to_string()))
        }
        Err(e) => return Err(ExecError::User(format!("simulation: {e}"))),
    };
    let wall_seconds = started.elapsed().as_secs_f64();
    let mut results = Vec::new();
    if functional {
        for chip in 0..replicas {
            let hbm = sys.hbm(chip).expect("chip");
            results.push(
                compiler::io::read_literal(&c.io.result, &mut |addr, len| {
                    hbm.read_vec(addr, len).ok()
                })
                .map_err(|e| ExecError::User(format!("reading the result: {e}")))?,
            );
        }
    }
    Ok(Execution {
        run,
        system: sys,
        results,
        wall_seconds,
    })
}

/// The array leaves of a literal, in order.
fn leaves(l: &Literal) -> Vec<&hlo::ArrayLiteral> {
    match l {
        Literal::Array(a) => vec![a],
        Literal::Tuple(ts) => ts.iter().flat_map(leaves).collect(),
        _ => vec![],
    }
}

/// `systole conformance DIR --engine sim`: every case compiled and run on one chip, f32 dots
/// with 6 bf16 passes (the forcing flag), outputs checked under the case's own check.
pub fn conformance_sim(dir: &Path, arch_name: &str, json: bool) -> anyhow::Result<Outcome> {
    let arch =
        arch::ArchConfig::resolve(arch_name, &[] as &[String]).map_err(|e| user(e.to_string()))?;
    let dirs = eval::case::case_dirs(dir).map_err(|e| user(e.to_string()))?;
    if dirs.is_empty() {
        return Err(user(format!(
            "{}: no case folders (with case.json) found",
            dir.display()
        )));
    }
    let opts = CompileOptions {
        f32_dot_passes: 6,
        ..CompileOptions::default()
    };
    let (mut passed, mut failed, mut skipped) = (0usize, 0usize, 0usize);
    let mut report = Vec::new();
    for d in &dirs {
        let name = d
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let (status, msg) = conformance_case(d, &arch, &opts);
        match status {
            "pass" => passed += 1,
            "unsupported" => {
                skipped += 1;
                println!("SKIP {name}: {msg}");
            }
            _ => {
                failed += 1;
                println!("FAIL {name}: {status}: {}", msg.replace('\n', "\n    "));
            }
        }
        report.push(serde_json::json!({"case": name, "status": status, "message": msg}));
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"engine": "sim", "arch": arch.name, "cases": report})
            )?
        );
    }
    println!("{passed} passed, {failed} failed, {skipped} skipped");
    Ok(if failed == 0 {
        Outcome::Ok
    } else {
        Outcome::CheckFailed
    })
}

fn conformance_case(
    d: &Path,
    arch: &arch::ArchConfig,
    opts: &CompileOptions,
) -> (&'static str, String) {
    let case = match eval::case::load_case(d) {
        Ok(c) => c,
        Err(e) => return ("error", format!("bad case: {e}")),
    };
    let module = match hlo::parse(&case.module_text) {
        Ok(m) => m,
        Err(e) => return ("error", e.render("module.hlo", &case.module_text)),
    };
    let module = match hlo::verified(module) {
        Ok(m) => m,
        Err(e) => return ("error", e.render("module.hlo", &case.module_text)),
    };
    let c = match compiler::compile(&module, arch, opts) {
        Ok(c) => c,
        Err(e @ compiler::CompileError::NotSupported { .. }) => {
            return ("unsupported", e.render("module.hlo"))
        }
        Err(e) => return ("error", e.render("module.hlo")),
    };
    let infeed = match crate::hostio::infeed_streams(&c, &case) {
        Ok(v) => v,
        Err(e) => return ("unsupported", e),
    };
    let args: Vec<Vec<Literal>> = if case.inputs.is_empty() {
        vec![Vec::new(); case.devices()]
    } else {
        case.inputs.clone()
    };
    let ex = match execute(
        &c,
        arch,
        &args,
        SimOptions {
            functional: true,
            max_cycles: sim::default_max_cycles(&c.program),
            ..Default::default()
        },
        &infeed,
        None,
        false,
    ) {
        Ok(x) => x,
        Err(ExecError::Check(e)) | Err(ExecError::User(e)) => return ("error", e),
    };
    if let Err((status, m)) = crate::hostio::check_host_out(&c, &case, &ex.system) {
        return (status, m);
    }
    if case.outputs.len() != ex.results.len() {
        return (
            "error",
            format!(
                "the case has {} outputs for {} replicas",
                case.outputs.len(),
                ex.results.len()
            ),
        );
    }
    for (r, (expected, out)) in case.outputs.iter().zip(&ex.results).enumerate() {
        if let Err(m) = check_value(
            case.check,
            case.tolerance,
            case.stats.as_ref(),
            expected,
            out,
        ) {
            let who = if ex.results.len() > 1 {
                format!("replica {r}: ")
            } else {
                String::new()
            };
            return ("mismatch", format!("{who}{m}"));
        }
    }
    ("pass", format!("{} cycles", ex.run.cycles))
}

/// `systole run`.
pub fn run(a: RunArgs) -> anyhow::Result<Outcome> {
    if let Some(topo) = &a.scalesim_topology {
        return crate::scalesim::run(&a.t, topo, a.out.as_deref());
    }
    if a.out.is_some() {
        return Err(user(
            "-o OUT.csv is the per-layer table of --scalesim-topology (a run's report is --report)"
                .into(),
        ));
    }
    let file = a.t.file()?.to_path_buf();
    for p in a
        .report
        .iter()
        .chain(a.trace.iter())
        .chain(a.outputs.iter())
    {
        crate::bounded::check_output(p)?;
    }
    a.trace_opts.check()?;
    if let Some(p) = &a.outputs {
        if p.extension().and_then(|e| e.to_str()) != Some("npz") {
            return Err(user(format!(
                "--outputs {}: the file must end in .npz",
                p.display()
            )));
        }
        if a.timing_only || a.t.ici == IciBackend::Analytic {
            return Err(user(
                "--outputs needs a functional run (not --timing-only or --ici analytic)".into(),
            ));
        }
    }
    let (src, module, arch, c) = compile_file(&a.t)?;
    // The analytic backend is timing only (no data moves between chips).
    let timing_only = a.timing_only || a.t.ici == IciBackend::Analytic;
    // A timing-only run needs no arguments (none are generated: big pods stay cheap).
    let (args, expected, infeed) = if timing_only {
        (Vec::new(), None, Vec::new())
    } else {
        inputs_for(&a, &module, &src, &c)?
    };
    let branches = module.comps.values().any(|comp| {
        comp.insts
            .values()
            .any(|i| matches!(i.opcode, hlo::Opcode::While | hlo::Opcode::Conditional))
    });
    if timing_only && branches {
        eprintln!(
            "note: this program branches on data (while/conditional); a timing-only run reads \
             zeros for its predicates and indices, so its cycles follow that path"
        );
    }
    if a.rtl_check && timing_only {
        return Err(user(
            "--rtl-check needs a functional run (not --timing-only)".into(),
        ));
    }
    let ops = Arc::new(Mutex::new(OpCycles::default()));
    let events = Arc::new(Mutex::new(sim::trace::VecSink::default()));
    let dropped = Arc::new(Mutex::new(0u64));
    let ex = match execute(
        &c,
        &arch,
        &args,
        SimOptions {
            functional: !timing_only,
            max_cycles: a
                .max_cycles
                .unwrap_or_else(|| sim::default_max_cycles(&c.program)),
            races: a.sim_opts.races(),
            threads: a.sim_opts.threads(),
        },
        &infeed,
        Some(Box::new(Tee(vec![
            Box::new(OpSink(ops.clone())),
            Box::new(crate::cmd_sim::SharedSink {
                events: events.clone(),
                cap: if a.trace.is_some() {
                    crate::bounded::budget().max_memory / crate::cmd_sim::TRACE_EVENT_BYTES
                } else {
                    0
                },
                dropped: dropped.clone(),
            }),
        ]))),
        a.rtl_check,
    ) {
        Ok(x) => x,
        Err(ExecError::Check(e)) => {
            eprintln!("{}: {e}", file.display());
            return Ok(Outcome::CheckFailed);
        }
        Err(ExecError::User(e)) => return Err(user(format!("{}: {e}", file.display()))),
    };
    let (r, sys, wall) = (ex.run, ex.system, ex.wall_seconds);
    crate::cmd_sim::print_race_warnings(&file, &r);
    let mut outcome = Outcome::Ok;
    let mut max_err = None;
    if !timing_only {
        let outs = ex.results;
        for (r, out) in outs.iter().enumerate() {
            if outs.len() > 1 {
                println!("replica {r}:");
            }
            println!("{}", summary(out, a.full));
        }
        if let Some(p) = &a.outputs {
            crate::npy::write_outputs(p, &outs)?;
        }
        // The reference: the case's outputs, else the evaluator.
        let (reference, check, tol, what) = match expected {
            Some((o, check, tol)) => (o, check, tol, "the case's expected outputs"),
            None => {
                let v = if outs.len() > 1 {
                    let inputs = args
                        .iter()
                        .enumerate()
                        .map(|(r, a)| eval::runtime::ReplicaInput {
                            args: a.clone(),
                            io: eval::HostIo {
                                infeed: infeed.get(r).into_iter().flatten().cloned().collect(),
                                ..Default::default()
                            },
                        })
                        .collect();
                    eval::replica::run_replicas(&module, inputs, &crate::cmd_eval::eval_options())
                        .map(|o| o.into_iter().map(|r| r.result).collect())
                } else if !infeed.is_empty() {
                    let input = eval::ReplicaInput {
                        args: args[0].clone(),
                        io: eval::HostIo {
                            infeed: infeed[0].iter().cloned().collect(),
                            ..Default::default()
                        },
                    };
                    eval::corpus::run_module(&module, vec![input], &crate::cmd_eval::eval_options())
                        .map(|o| o.into_iter().map(|(r, _)| r).collect())
                } else {
                    eval::Evaluator::new(&module)
                        .with_options(crate::cmd_eval::eval_options())
                        .run(&args[0], &mut eval::SingleReplica::default())
                        .map(|v| vec![v])
                }
                .map_err(|e| user(format!("{}: evaluator: {e}", file.display())))?;
                (
                    v,
                    Check::Close,
                    Tolerance {
                        rtol: a.rtol,
                        atol: a.atol,
                    },
                    "the evaluator",
                )
            }
        };
        let mut ok = reference.len() == outs.len();
        let mut why = format!(
            "{} reference outputs for {} replicas",
            reference.len(),
            outs.len()
        );
        for (r, (want, got)) in reference.iter().zip(&outs).enumerate() {
            if let Err(m) = check_value(check, tol, None, want, got) {
                ok = false;
                why = if outs.len() > 1 {
                    format!("replica {r}: {m}")
                } else {
                    m.to_string()
                };
                break;
            }
        }
        if ok {
            println!(
                "outputs match {what} (rtol {}, atol {})",
                tol.rtol, tol.atol
            );
        } else {
            println!("outputs DIFFER from {what}: {why}");
            outcome = Outcome::CheckFailed;
        }
        max_err = reference
            .iter()
            .zip(&outs)
            .map(|(w, g)| max_abs_diff(w, g))
            .reduce(f64::max);
    }
    if a.rtl_check && !rtl_check(&arch, sys.mxu_log(0).unwrap_or_default())? {
        outcome = Outcome::CheckFailed;
    }
    // Report.
    let secs = r.cycles as f64 / (arch.clock_mhz * 1e6);
    let flops = c.stats.flops;
    let peak_macs_per_cycle =
        (arch.mxu.count * arch.mxu.rows * arch.mxu.cols) as f64 * arch.cores_per_chip as f64;
    let ideal_mxu_cycles = flops as f64 / 2.0 / peak_macs_per_cycle;
    let util = if r.cycles > 0 {
        ideal_mxu_cycles / r.cycles as f64
    } else {
        0.0
    };
    println!(
        "cycles: {} ({:.3} µs at {} MHz); {} FLOP in dots, {:.3} TFLOP/s achieved; MXU utilization {:.3} (ideal MXU cycles ÷ cycles, all {} MXUs of {} core(s))",
        r.cycles,
        secs * 1e6,
        arch.clock_mhz,
        flops,
        flops as f64 / secs.max(1e-30) / 1e12,
        util,
        arch.mxu.count * arch.cores_per_chip,
        arch.cores_per_chip
    );
    let stats = sys.stats();
    let mut units = Vec::new();
    for e in stats.iter() {
        let n = &e.decl.name;
        if let Some(u) = n.strip_suffix(".busy_cycles") {
            if e.value > 0 {
                units.push(format!(
                    "{} {:.2}",
                    u.trim_start_matches("chip0."),
                    e.value as f64 / r.cycles.max(1) as f64
                ));
            }
        }
    }
    println!("unit busy fraction: {}", units.join(", "));
    let g = ops.lock().expect("op sink");
    let mut top: Vec<(&String, &OpBusy)> = g.by_op.iter().collect();
    top.sort_by(|x, y| y.1 .0.cmp(&x.1 .0).then(x.0.cmp(y.0)));
    let total: u64 = top.iter().map(|t| t.1 .0).sum();
    println!("top HLO ops by unit-busy cycles:");
    for (name, (cy, per)) in top.iter().take(8) {
        let parts: Vec<String> = per.iter().map(|(u, c)| format!("{u} {c}")).collect();
        println!(
            "  {name:<28} {cy:>12} ({:>5.1}%)  {}",
            100.0 * *cy as f64 / total.max(1) as f64,
            parts.join(", ")
        );
    }
    let roof = roofline(&arch, flops, stats, c.chips, r.cycles);
    println!(
        "bottleneck: {} ({})",
        roof["verdict"].as_str().unwrap_or(""),
        roof["why"].as_str().unwrap_or("")
    );
    let colls = collective_table(&arch, &c.stats.collectives, &g.span);
    if !colls.is_empty() {
        println!(
            "collectives (α-β closed form: β = {} GB/s per link per direction, α = {} ns per hop; docs/ici.md):",
            arch.ici.gbps_per_link, arch.ici.hop_latency_ns
        );
        for k in &colls {
            println!(
                "  {:<20} {:<20} {:>4} chips {:>12} B/chip  measured {:>10.3} µs  closed form {:>10.3} µs  ratio {:.3}  ({})",
                k["hlo"].as_str().unwrap_or(""),
                k["kind"].as_str().unwrap_or(""),
                k["chips"],
                k["bytes_per_chip"],
                k["measured_seconds"].as_f64().unwrap_or(0.0) * 1e6,
                k["closed_form_seconds"].as_f64().unwrap_or(0.0) * 1e6,
                k["ratio"].as_f64().unwrap_or(0.0),
                k["algorithm"].as_str().unwrap_or(""),
            );
        }
    }
    eprintln!("simulated in {wall:.6} s ({} events)", r.events);
    if let Some(p) = &a.trace {
        let n = *dropped.lock().expect("trace sink");
        if n > 0 {
            return Err(user(format!(
                "{}: the trace has more events than the memory budget keeps ({n} dropped; --max-memory)",
                p.display()
            )));
        }
        let evs = std::mem::take(&mut events.lock().expect("trace sink").events);
        a.trace_opts
            .write(p, &evs, &arch, crate::cmd_sim::vmem_plan(&c.program))?;
    }
    if let Some(p) = &a.report {
        // Each op's cost (from the module's shapes) and its span on the chip, for the
        // per-op roofline (`systole plot --kind roofline`).
        let costs = crate::op_cost::op_costs(&c.module);
        let hz = arch.clock_mhz * 1e6;
        let table: Vec<serde_json::Value> = top
            .iter()
            .map(|(name, (cy, per))| {
                let (opcode, cost) = costs.get(name.as_str()).copied().unwrap_or_default();
                let span = g.span.get(name.as_str()).map_or(0, |&(s, e)| e.saturating_sub(s));
                let span_s = span as f64 / hz;
                serde_json::json!({
                    "hlo": name, "opcode": opcode, "busy_cycles": cy,
                    "share": *cy as f64 / total.max(1) as f64, "by_unit": per,
                    "span_cycles": span, "span_seconds": span_s,
                    "flops": cost.flops, "bytes_accessed": cost.bytes,
                    "arithmetic_intensity": if cost.bytes > 0 { Some(cost.flops as f64 / cost.bytes as f64) } else { None },
                    "flops_per_second": if span > 0 { Some(cost.flops as f64 / span_s) } else { None },
                })
            })
            .collect();
        let j = serde_json::json!({
            "arch": arch.name,
            "cycles": r.cycles,
            "seconds": secs,
            "flops": flops,
            "flops_per_second": flops as f64 / secs.max(1e-30),
            "mxu_utilization": util,
            "ideal_mxu_cycles": ideal_mxu_cycles,
            "instructions": c.program.code.len(),
            "vmem_peak_bytes": c.stats.vmem_peak,
            "streamed": {
                "element_wise_regions": c.stats.ew_streams,
                "late_dots": c.stats.late_streams,
                "reduces": c.stats.reduce_streams,
                "transposes": c.stats.transpose_streams,
            },
            "spill": {
                "spills": c.stats.spill.spills,
                "spill_bytes": c.stats.spill.spill_bytes,
                "reloads": c.stats.spill.reloads,
                "reload_bytes": c.stats.spill.reload_bytes,
            },
            "timing_only": timing_only,
            "max_abs_error": max_err,
            "stats": stats.to_json(),
            "ops": table,
            "collectives": colls,
            "roofline": roof,
        });
        std::fs::write(p, serde_json::to_string_pretty(&j)? + "\n")
            .map_err(|e| user(format!("{}: cannot write: {e}", p.display())))?;
    }
    Ok(outcome)
}

/// The bottleneck verdict and the roofline numbers behind it: each resource's lower bound on the
/// run time (work ÷ the preset's peak, per chip: MXU FLOPs, HBM bytes, ICI bytes over the chip's
/// links, host-link bytes), the largest of them names the verdict; if even the largest explains
/// under half of the simulated time, the run is latency- or dependency-bound.
fn roofline(
    arch: &arch::ArchConfig,
    flops: u64,
    stats: &sim::stats::Stats,
    chips: usize,
    cycles: u64,
) -> serde_json::Value {
    let secs = cycles as f64 / (arch.clock_mhz * 1e6);
    let sum = |suffix: &str| -> f64 {
        stats
            .iter()
            .filter(|e| e.decl.name.ends_with(suffix))
            .map(|e| e.value as f64)
            .sum()
    };
    let chips = chips.max(1) as f64;
    let hbm_bytes = (sum(".hbm.bytes_read") + sum(".hbm.bytes_written")) / chips;
    let host_bytes = (sum(".infeed.bytes") + sum(".outfeed.bytes")) / chips;
    let ici_bytes = stats
        .iter()
        .find(|e| e.decl.name == "ici.bytes")
        .map_or(0.0, |e| e.value as f64)
        / chips;
    let peak_flops = 2.0
        * (arch.mxu.count * arch.mxu.rows * arch.mxu.cols * arch.cores_per_chip) as f64
        * arch.clock_mhz
        * 1e6;
    let hbm_bw = arch.hbm.gbps * 1e9;
    // The fabric's links: two directed links per dimension of the topology.
    let ici_bw = arch.ici.gbps_per_link * 1e9 * (2 * arch.ici.dims.len()).max(1) as f64;
    let host_bw = arch.host.gbps * 1e9;
    let bounds = [
        ("compute-bound", flops as f64 / peak_flops),
        ("memory-bound", hbm_bytes / hbm_bw),
        (
            "interconnect-bound",
            if chips > 1.0 { ici_bytes / ici_bw } else { 0.0 },
        ),
        ("host-bound", host_bytes / host_bw),
    ];
    let (name, t) = bounds
        .iter()
        .copied()
        .fold(("", 0.0f64), |a, b| if b.1 > a.1 { b } else { a });
    let share = if secs > 0.0 { t / secs } else { 0.0 };
    let (verdict, why) = if share >= 0.5 {
        (
            name.to_string(),
            format!(
                "its roofline bound is {:.1}% of the simulated time",
                100.0 * share
            ),
        )
    } else {
        (
            "latency-bound".to_string(),
            format!(
                "the largest roofline bound ({}) is only {:.1}% of the simulated time: \
                 latencies and dependencies dominate",
                if name.is_empty() {
                    "none"
                } else {
                    name.trim_end_matches("-bound")
                },
                100.0 * share
            ),
        )
    };
    serde_json::json!({
        "verdict": verdict,
        "why": why,
        "seconds": secs,
        "flops_per_chip": flops,
        "hbm_bytes_per_chip": hbm_bytes,
        "ici_bytes_per_chip": ici_bytes,
        "host_bytes_per_chip": host_bytes,
        "peak_flops_per_second": peak_flops,
        "hbm_bytes_per_second": hbm_bw,
        "ici_bytes_per_second": ici_bw,
        "host_bytes_per_second": host_bw,
        "arithmetic_intensity": if hbm_bytes > 0.0 { flops as f64 / hbm_bytes } else { f64::INFINITY },
        "ridge_point": peak_flops / hbm_bw,
        // Elementwise ceiling: every core's VPU ALU at its elements per cycle.
        "vpu_ops_per_second": arch.vpu.alu.elems_per_cycle as f64 * arch.cores_per_chip as f64 * arch.clock_mhz * 1e6,
        "bound_seconds": {
            "compute": bounds[0].1, "memory": bounds[1].1,
            "interconnect": bounds[2].1, "host": bounds[3].1,
        },
    })
}

/// Each collective's measured time (first to last unit activity of its HLO op over all chips)
/// beside its α-β closed form ([`sim::ici_model`]).
fn collective_table(
    arch: &arch::ArchConfig,
    colls: &[sim::ici_model::Collective],
    span: &BTreeMap<String, (u64, u64)>,
) -> Vec<serde_json::Value> {
    let hz = arch.clock_mhz * 1e6;
    colls
        .iter()
        .map(|c| {
            let f = sim::ici_model::closed_form(arch, c);
            let measured = span
                .get(&c.hlo)
                .map(|&(s, e)| e.saturating_sub(s) as f64 / hz);
            let chips: std::collections::BTreeSet<u32> =
                c.groups.iter().flatten().copied().collect();
            serde_json::json!({
                "hlo": c.hlo,
                "kind": c.kind.name(),
                "algorithm": c.algorithm(),
                "chips": chips.len(),
                "groups": c.groups.len(),
                "bytes_per_chip": c.bytes,
                "measured_seconds": measured,
                "closed_form_seconds": f.seconds,
                "closed_form": {
                    "steps": f.steps,
                    "hops": f.hops,
                    "link_bytes_per_step": f.link_bytes,
                    "beta_bytes_per_second": arch.ici.gbps_per_link * 1e9,
                    "alpha_seconds": arch.ici.hop_latency_ns * 1e-9,
                },
                "ratio": measured.map(|m| m / f.seconds.max(1e-30)),
            })
        })
        .collect()
}

fn max_abs_diff(a: &Literal, b: &Literal) -> f64 {
    match (a, b) {
        (Literal::Array(x), Literal::Array(y)) if x.data.len() == y.data.len() => (0..x.data.len())
            .map(|i| (as_f64(&x.data, i) - as_f64(&y.data, i)).abs())
            .fold(0.0, f64::max),
        (Literal::Tuple(xs), Literal::Tuple(ys)) => xs
            .iter()
            .zip(ys)
            .map(|(x, y)| max_abs_diff(x, y))
            .fold(0.0, f64::max),
        _ => f64::NAN,
    }
}

fn as_f64(d: &hlo::ArrayData, i: usize) -> f64 {
    use hlo::ArrayData as D;
    match d {
        D::F32(v) => v[i] as f64,
        D::F64(v) => v[i],
        D::BF16(v) => v[i].to_f64(),
        D::F16(v) => v[i].to_f64(),
        D::S8(v) => v[i] as f64,
        D::S16(v) => v[i] as f64,
        D::S32(v) => v[i] as f64,
        D::S64(v) => v[i] as f64,
        D::U8(v) => v[i] as f64,
        D::U16(v) => v[i] as f64,
        D::U32(v) => v[i] as f64,
        D::U64(v) => v[i] as f64,
        D::Pred(v) => v[i] as u8 as f64,
        _ => f64::NAN,
    }
}

/// Replays each MXU's recorded stream through the RTL (Verilator); true if every result row
/// and cycle matched.
fn rtl_check(arch: &arch::ArchConfig, log: &[sim::MxuRecord]) -> anyhow::Result<bool> {
    use hw::ops::{Issued, Op};
    if log.is_empty() {
        println!("rtl-check: the run used no MXU");
        return Ok(true);
    }
    let mode = log[0].mode;
    if log.iter().any(|r| r.mode != mode) {
        return Err(user(
            "--rtl-check: the run mixes MXU modes; the RTL is built for one".into(),
        ));
    }
    let mut cfg = arch.clone();
    cfg.mxu.dtype = mode;
    let p = hw::MxuParams::from_arch(&cfg).map_err(|e| user(format!("--rtl-check: {e}")))?;
    let model =
        hw::flow::VerilatorModel::build(&p).map_err(|e| user(format!("--rtl-check: {e}")))?;
    let (r, c) = (p.rows, p.cols);
    let mut streams: BTreeMap<(u32, u32), Vec<&sim::MxuRecord>> = BTreeMap::new();
    for rec in log {
        streams.entry((rec.core, rec.mxu)).or_default().push(rec);
    }
    let mut all_ok = true;
    for ((core, mxu), recs) in streams {
        let t0 = recs[0].cycle;
        let seq: Vec<Issued> = recs
            .iter()
            .map(|rec| {
                let op = match &rec.op {
                    sim::MxuRecordOp::Load { k, n, w } => {
                        let mut pw = vec![0u16; r * c];
                        for i in 0..*k {
                            pw[i * c..i * c + n].copy_from_slice(&w[i * n..(i + 1) * n]);
                        }
                        Op::Load {
                            k: *k,
                            n: *n,
                            w: pw,
                        }
                    }
                    sim::MxuRecordOp::Matmul {
                        m,
                        k,
                        acc,
                        accumulate,
                        x,
                    } => {
                        let mut px = vec![0u16; m * r];
                        for i in 0..*m {
                            px[i * r..i * r + k].copy_from_slice(&x[i * k..(i + 1) * k]);
                        }
                        Op::Matmul {
                            m: *m,
                            k: *k,
                            addr: *acc,
                            acc: *accumulate,
                            x: px,
                        }
                    }
                };
                Issued {
                    op,
                    issue: rec.cycle - t0,
                }
            })
            .collect();
        let mut reference = hw::cosim::SimReference::new(&p);
        let (rep, _, _) = hw::flow::cosim_sequence(&p, &model, &seq, &mut reference)
            .map_err(|e| user(format!("--rtl-check: {e}")))?;
        println!(
            "rtl-check core{core}.mxu{mxu} ({}): operations {}  result rows {}  cycles {}  mismatches {}",
            p.tag(),
            rep.ops,
            rep.result_rows,
            rep.cycles,
            rep.mismatches
        );
        if let Some((_, m)) = &rep.first {
            println!("  first mismatch: {m}");
        }
        all_ok &= rep.mismatches == 0;
    }
    Ok(all_ok)
}
