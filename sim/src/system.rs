//! `System`: chips in a topology, each with its own event queue, run to completion in windows
//! of simulated time, the chips of a window on several threads.
//!
//! **Conservative synchronization.** Chips affect each other only through the ICI fabric, and a
//! transfer posted at cycle `t` arrives on another chip no earlier than `t + L`, the fabric's
//! lookahead (one hop's latency, `Fabric::lookahead`; a chip's transfers to itself are matched
//! on the chip). A round: let `T` be the earliest pending event of any chip or of the fabric;
//! the fabric's events at `T` run first (arrivals write the receiver's memory and complete both
//! instructions); then every chip handles its own events before the window's end
//! `E = min(T + L, the next scheduled arrival, max_cycles + 1)` independently (on `threads`
//! threads), with its own statistics registry, trace buffer and list of posts; then the posts
//! go to the fabric in `(cycle, priority, chip, order)` order, interleaved with the fabric's own
//! events before `E` (fabric first on ties). Nothing in a window depends on another chip, so
//! **a run is bit-identical for any number of threads**: cycles, statistics (each chip's
//! registry appended in chip order, the fabric's last), outputs, trace events (per round: the
//! fabric's link slices, then each chip's events in chip order), race, deadlock and timeout
//! reports. The first error of a round is the one with the least `(cycle, priority, chip)`.
//!
//! One run: [`System::new`] (arch, program, replicas, options), optional inputs
//! ([`System::set_infeed`]), [`System::run`] → [`RunResult`] (cycles and statistics); memories,
//! accumulators and outfeed streams stay readable afterwards. A run that cannot progress ends in
//! [`SimError::Deadlock`] naming what every blocked unit waits for; one that exceeds
//! `max_cycles` in [`SimError::Timeout`].

use crate::chip::{Chip, Env};
use crate::core::SeqBlock;
use crate::cycle::Cycle;
use crate::engine::Priority;
use crate::error::{DeadlockReport, SimError, TimeoutReport};
use crate::ici::{Fabric, Post};
use crate::memory::{Memory, Pool};
use crate::params::Params;
use crate::prog::Prog;
use crate::stats::Stats;
use crate::trace::{EventBuf, TraceSink};
use arch::ArchConfig;
use isa::Program;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex, MutexGuard};

/// How to run.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// Execute every instruction's effect on memory (else timing only: no data moves; scalar
    /// loads see only the program's data and scalar stores).
    pub functional: bool,
    /// Stop with [`SimError::Timeout`] past this cycle.
    pub max_cycles: u64,
    /// What a detected race does (docs/timing.md, Races).
    pub races: RaceCheck,
    /// Threads that simulate the chips of a pod (at least one, at most one per chip; the
    /// results do not depend on it).
    pub threads: usize,
}

/// What the simulator does with a race between unordered accesses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RaceCheck {
    /// Stop the run with [`SimError::Race`] (exit 1 in the CLI).
    #[default]
    Error,
    /// Record it in [`RunResult::race_warnings`] (the first [`MAX_RACE_WARNINGS`]) and go on:
    /// for experiments with a program known to be racy.
    Warn,
    /// Do not track accesses (faster; a racy program's results are then whatever the
    /// simulator's order gives).
    Off,
}

/// Races kept as warnings per chip.
pub const MAX_RACE_WARNINGS: usize = 100;

/// Most events the simulator handles at one cycle before it declares that time does not
/// advance (no progress).
pub const MAX_EVENTS_PER_CYCLE: u64 = 1 << 24;

/// Largest default `max_cycles` (about three minutes of a core spinning in a loop).
pub const MAX_DEFAULT_CYCLES: u64 = 10_000_000_000;

/// The default `max_cycles` for `program` (see `docs/bounded.md`): 10⁸ cycles plus 10⁵ per
/// instruction, at most [`MAX_DEFAULT_CYCLES`]. A straight-line program needs far fewer (an
/// instruction rarely takes 10⁵ cycles; a DMA that cannot finish in time stops the run when it
/// starts); a loop meant to run longer needs an explicit `--max-cycles`.
pub fn default_max_cycles(program: &Program) -> u64 {
    100_000_000u64
        .saturating_add((program.code.len() as u64).saturating_mul(100_000))
        .min(MAX_DEFAULT_CYCLES)
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            functional: true,
            max_cycles: 1 << 40,
            races: RaceCheck::Error,
            threads: 1,
        }
    }
}

/// The outcome of a run.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Cycles until the last core halted.
    pub cycles: u64,
    /// Events processed (a measure of simulator work).
    pub events: u64,
    /// Races seen with [`RaceCheck::Warn`] (at most [`MAX_RACE_WARNINGS`] per chip), and
    /// how many there were in all.
    pub race_warnings: Vec<String>,
    /// Races seen in all (with [`RaceCheck::Warn`]).
    pub races_seen: u64,
}

/// One chip and what only it writes while it runs a window: its statistics, trace events,
/// posts to the fabric and first error.
struct Lane {
    chip: Chip,
    stats: Stats,
    /// Trace events of the window (when tracing), flushed to the sink after it.
    trace: Option<EventBuf>,
    /// ICI posts of the window to other chips, with the priority of the event that posted.
    posts: Vec<(Priority, bool, Post)>,
    /// The first error: cycle and priority of its event.
    err: Option<(Cycle, Priority, SimError)>,
    /// Events handled since the System last collected them.
    events: u64,
    /// The cycle of the last event handled, and how many were handled at it.
    last: Cycle,
    at_last: u64,
}

/// What every window reads and no window writes.
struct Ctx<'a> {
    prog: &'a Prog,
    p: &'a Params,
    functional: bool,
    replicas: u32,
    max_cycles: u64,
}

impl Lane {
    /// A handler's environment over this lane's own statistics and trace buffer.
    fn env<'a>(
        ctx: &Ctx<'a>,
        stats: &'a mut Stats,
        trace: &'a mut Option<EventBuf>,
        horizon: Cycle,
    ) -> Env<'a> {
        Env {
            prog: ctx.prog,
            p: ctx.p,
            stats,
            trace: trace.as_mut().map(|t| t as &mut dyn TraceSink),
            functional: ctx.functional,
            replicas: ctx.replicas,
            max_cycles: ctx.max_cycles,
            horizon,
        }
    }

    /// Handles this chip's events before `end` (stops at its first error).
    fn run_window(&mut self, ctx: &Ctx<'_>, end: Cycle) {
        if self.err.is_some() {
            return;
        }
        let Lane {
            chip,
            stats,
            trace,
            posts,
            err,
            events,
            last,
            at_last,
        } = self;
        let mut env = Lane::env(ctx, stats, trace, end);
        while let Some(k) = chip.q.peek_key() {
            if k.time >= end {
                break;
            }
            if k.time == *last {
                *at_last += 1;
                if *at_last > MAX_EVENTS_PER_CYCLE {
                    let reason = format!(
                        "no progress: more than {MAX_EVENTS_PER_CYCLE} events at cycle {} \
                         without time advancing",
                        k.time
                    );
                    *err = Some((k.time, k.prio, timeout(reason)));
                    break;
                }
            } else {
                *at_last = 0;
            }
            *last = k.time;
            *events += 1;
            let (now, ev) = chip.q.pop().expect("peeked");
            if let Err(e) = chip.handle(&mut env, now, ev) {
                *err = Some((now, k.prio, e));
                break;
            }
            if !chip.ici_out.is_empty() {
                posts.extend(chip.ici_out.drain(..).map(|(s, p)| (k.prio, s, p)));
            }
        }
    }
}

/// A timeout whose report `System::stop_report` fills in.
fn timeout(reason: String) -> SimError {
    SimError::Timeout(TimeoutReport {
        limit: 0,
        reason,
        units: DeadlockReport {
            cycle: 0,
            waits: Vec::new(),
        },
    })
}

/// Why the rounds stopped early: an error at a cycle (a timeout's report is filled in by the
/// caller, which has every chip back), or a panic of a thread (a simulator bug) to resume.
enum Stop {
    Error(Cycle, SimError),
    Panic(Box<dyn std::any::Any + Send>),
}

fn lock(l: &Mutex<Lane>) -> MutexGuard<'_, Lane> {
    l.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The System's state the rounds drive (borrowed apart from the chips).
struct Driver<'a> {
    ctx: Ctx<'a>,
    fabric: &'a mut Fabric,
    stats: &'a mut Stats,
    sink: Option<&'a mut dyn TraceSink>,
    events: u64,
    last: Cycle,
    fab_at_last: u64,
}

impl Driver<'_> {
    /// Rounds until no event is left (`Ok`) or the run stops; `window(end)` runs every chip's
    /// events before `end` and tells whether a thread panicked.
    fn rounds(
        &mut self,
        lanes: &[Mutex<Lane>],
        window: &mut dyn FnMut(Cycle) -> Option<Box<dyn std::any::Any + Send>>,
    ) -> Result<(), Stop> {
        // One chip: nothing but itself can affect it (its transfers to itself are its own).
        let lookahead = if lanes.len() == 1 {
            u64::MAX
        } else {
            self.fabric.lookahead()
        };
        loop {
            let mut t = self.fabric.peek_key().map(|k| k.time);
            for l in lanes {
                if let Some(k) = lock(l).chip.q.peek_key() {
                    t = Some(t.map_or(k.time, |t| t.min(k.time)));
                }
            }
            let Some(t) = t else { return Ok(()) };
            if t.get() > self.ctx.max_cycles {
                let reason = format!(
                    "the program did not halt within {} cycles (the next event is at cycle {t}); \
                     raise --max-cycles if it is meant to run longer",
                    self.ctx.max_cycles
                );
                return Err(Stop::Error(self.last, timeout(reason)));
            }
            // The fabric's events at `t` come first: arrivals before the chips' events.
            while self.fabric.peek_key().is_some_and(|k| k.time <= t) {
                self.fabric_step(lanes, true)?;
            }
            let end = Cycle(
                t.get()
                    .saturating_add(lookahead)
                    .min(self.fabric.next_arrival().map_or(u64::MAX, Cycle::get))
                    .min(self.ctx.max_cycles.saturating_add(1)),
            );
            if let Some(p) = window(end) {
                return Err(Stop::Panic(p));
            }
            // Errors, posts, events and trace of the window, in chip order.
            let mut first: Option<((Cycle, Priority, u32), SimError)> = None;
            let mut posts = Vec::new();
            for (i, l) in lanes.iter().enumerate() {
                let mut l = lock(l);
                let l = &mut *l;
                if let Some((c, pr, e)) = l.err.take() {
                    let key = (c, pr, i as u32);
                    if first.as_ref().is_none_or(|(k, _)| key < *k) {
                        first = Some((key, e));
                    }
                }
                posts.extend(
                    l.posts
                        .drain(..)
                        .enumerate()
                        .map(|(j, (pr, s, p))| ((p.posted, pr, i as u32, j), s, p)),
                );
                self.events += std::mem::take(&mut l.events);
                self.last = self.last.max(l.last);
                if let (Some(sink), Some(buf)) = (self.sink.as_deref_mut(), &mut l.trace) {
                    buf.drain_into(sink);
                }
            }
            posts.sort_by_key(|(k, _, _)| *k);
            for ((at, pr, chip, _), send, p) in posts {
                if first.as_ref().is_some_and(|(k, _)| (at, pr, chip) >= *k) {
                    break;
                }
                while self.fabric.peek_key().is_some_and(|k| k.time <= at) {
                    self.fabric_step(lanes, false)?;
                }
                let (core, pc, inst) = (p.core as u32, p.pc, p.inst.clone());
                if let Err(msg) = self.fabric.post(at, send, p, self.stats) {
                    let e = SimError::Exec {
                        chip,
                        core,
                        pc,
                        inst,
                        msg,
                    };
                    first = Some(((at, pr, chip), e));
                    break;
                }
            }
            if let Some(((at, _, _), e)) = first {
                return Err(Stop::Error(at, e));
            }
            while self.fabric.peek_key().is_some_and(|k| k.time < end) {
                self.fabric_step(lanes, false)?;
            }
        }
    }

    /// Handles the fabric's next event; an arrival (allowed only at a round's start: the
    /// window's end is at or before the next one) writes the receiver's memory and completes
    /// both instructions.
    fn fabric_step(&mut self, lanes: &[Mutex<Lane>], arrivals: bool) -> Result<(), Stop> {
        let k = self.fabric.peek_key().expect("a fabric event");
        if k.time == self.last {
            self.fab_at_last += 1;
            if self.fab_at_last > MAX_EVENTS_PER_CYCLE {
                let reason = format!(
                    "no progress: more than {MAX_EVENTS_PER_CYCLE} events at cycle {} without \
                     time advancing",
                    k.time
                );
                return Err(Stop::Error(k.time, timeout(reason)));
            }
        } else {
            self.fab_at_last = 0;
        }
        self.last = self.last.max(k.time);
        self.events += 1;
        let Some((t, a)) = self.fabric.step(self.stats) else {
            return Ok(());
        };
        assert!(
            arrivals,
            "an ICI arrival at cycle {t} inside a window (the lookahead is broken)"
        );
        let (sc, rc) = (a.send.chip as usize, a.recv.chip as usize);
        // One slice per link of the path, on the link's track (`ici.x+` of its chip).
        if let Some(tr) = self.sink.as_deref_mut() {
            let topo = self.fabric.topo();
            let symbol = self.ctx.prog.symbol(a.send.pc);
            for l in topo.route(a.send.chip, a.recv.chip) {
                let name = topo.link_name(l);
                let (chip, link) = name.split_once('.').unwrap_or(("chip0", &name));
                let unit = format!("ici.{link}");
                tr.event(&crate::trace::TraceEvent {
                    chip: chip.trim_start_matches("chip").parse().unwrap_or(0),
                    unit: &unit,
                    name: "transfer",
                    symbol,
                    pc: Some(a.send.pc),
                    start: a.start.get(),
                    end: t.get().max(a.start.get() + 1),
                    hbm_bytes: 0,
                    vmem_bytes: 0,
                });
            }
        }
        let on = |i: usize, f: &mut dyn FnMut(&mut Chip, &mut Env<'_>) -> Result<(), SimError>| {
            let mut l = lock(&lanes[i]);
            let Lane {
                chip, stats, trace, ..
            } = &mut *l;
            let mut env = Lane::env(&self.ctx, stats, trace, t);
            f(chip, &mut env)
        };
        on(rc, &mut |c, env| c.ici_deliver(env, &a.recv, &a.send.data))
            .and_then(|()| on(sc, &mut |c, env| c.ici_complete(env, t, &a.send)))
            .and_then(|()| on(rc, &mut |c, env| c.ici_complete(env, t, &a.recv)))
            .map_err(|e| Stop::Error(t, e))
    }
}

/// A system of chips running one program.
pub struct System {
    params: Params,
    prog: Prog,
    opts: SimOptions,
    lanes: Vec<Lane>,
    /// The fabric's statistics during the run; every statistic (chips' then fabric's) after.
    stats: Stats,
    trace: Option<Box<dyn TraceSink>>,
    ran: bool,
    fabric: Fabric,
}

impl System {
    /// A system of `replicas` chips of architecture `arch`, each running `program` on every core
    /// (chip `i` has replica id `i`, at the coordinates `sim::ici::Topo` gives it). Chips run
    /// concurrently (module docs) and talk over the ICI fabric (`ici.send`/`ici.recv`).
    pub fn new(
        arch: &ArchConfig,
        program: Program,
        replicas: u32,
        opts: SimOptions,
    ) -> Result<System, SimError> {
        Self::with_memory_limit(arch, program, replicas, opts, u64::MAX)
    }

    /// [`System::new`], with all simulated memories and per-chip state held to `max_memory`
    /// bytes: the fixed state is checked here, memory pages as the program touches them (each
    /// chip's pages against an even share of what the fixed state leaves, so which chip runs
    /// out does not depend on the threads' interleaving).
    pub fn with_memory_limit(
        arch: &ArchConfig,
        program: Program,
        replicas: u32,
        opts: SimOptions,
        max_memory: u64,
    ) -> Result<System, SimError> {
        if replicas == 0 {
            return Err(SimError::Input(
                "at least one replica (chip) is needed".into(),
            ));
        }
        if replicas as u64 > arch.ici.chips() {
            return Err(SimError::Input(format!(
                "{replicas} replicas do not fit the pod of {} chips (ici.dims; a bigger slice: \
                 --set ici.dims=[...])",
                arch.ici.chips()
            )));
        }
        if opts.threads == 0 {
            return Err(SimError::Input("at least one thread is needed".into()));
        }
        let prog = Prog::new(program).map_err(|e| SimError::Input(e.to_string()))?;
        let params = Params::new(arch);
        // Accumulators and vector registers are allocated up front, per core of every chip.
        let m = &arch.mxu;
        let per_core = (m.count as u64 * m.acc_rows as u64 * m.cols as u64 * 4).saturating_add(
            arch.vpu.vregs as u64 * arch.vpu.lanes as u64 * arch.vpu.sublanes as u64 * 8,
        );
        let state = per_core
            .saturating_mul(arch.cores_per_chip as u64)
            .saturating_mul(replicas as u64);
        if opts.functional && state > max_memory {
            return Err(SimError::Input(format!(
                "resource limit: {replicas} chip(s) of {} core(s) need {state} bytes of \
                 accumulators and vector registers (mxu.count x mxu.acc_rows x mxu.cols x 4 + \
                 vpu.vregs x vpu.lanes x vpu.sublanes x 8 per core), more than the budget of \
                 {max_memory} bytes (--max-memory)",
                arch.cores_per_chip
            )));
        }
        // Memory pages get what the fixed state leaves, an even share per chip.
        let share = max_memory.saturating_sub(state) / replicas as u64;
        let lanes: Vec<Lane> = (0..replicas)
            .map(|i| {
                let mut stats = Stats::new();
                let pool = Pool::new(share);
                let mut ch = Chip::new(i, &params, &mut stats, opts.functional, &pool);
                ch.race_mode = opts.races;
                if opts.races == RaceCheck::Off {
                    ch.races = None;
                    ch.hb = None;
                }
                Lane {
                    chip: ch,
                    stats,
                    trace: None,
                    posts: Vec::new(),
                    err: None,
                    events: 0,
                    last: Cycle::ZERO,
                    at_last: 0,
                }
            })
            .collect();
        let mut stats = Stats::new();
        for l in &lanes {
            stats.absorb(l.stats.clone());
        }
        Ok(System {
            params,
            prog,
            opts,
            lanes,
            stats,
            trace: None,
            ran: false,
            fabric: Fabric::new(arch),
        })
    }

    /// Sends trace events to `sink` during the run.
    pub fn set_trace(&mut self, sink: Box<dyn TraceSink>) {
        self.trace = Some(sink);
    }

    /// Takes the trace sink back (after the run).
    pub fn take_trace(&mut self) -> Option<Box<dyn TraceSink>> {
        self.trace.take()
    }

    /// The host's infeed stream for `(chip, core)`: pushed from cycle 0 at the host link rate.
    pub fn set_infeed(&mut self, chip: usize, core: usize, bytes: Vec<u8>) -> Result<(), SimError> {
        let h = &mut self.core_mut(chip, core)?.host;
        h.infeed_len = bytes.len() as u64;
        h.infeed = bytes;
        Ok(())
    }

    /// Timing-only runs: the infeed stream's length without contents.
    pub fn set_infeed_len(&mut self, chip: usize, core: usize, len: u64) -> Result<(), SimError> {
        let h = &mut self.core_mut(chip, core)?.host;
        h.infeed_len = len;
        h.infeed.clear();
        Ok(())
    }

    fn chips(&self) -> impl Iterator<Item = &Chip> {
        self.lanes.iter().map(|l| &l.chip)
    }

    fn chip(&self, chip: usize) -> Option<&Chip> {
        self.lanes.get(chip).map(|l| &l.chip)
    }

    fn core_mut(&mut self, chip: usize, core: usize) -> Result<&mut crate::core::Core, SimError> {
        self.lanes
            .get_mut(chip)
            .and_then(|l| l.chip.cores.get_mut(core))
            .ok_or_else(|| SimError::Input(format!("no core {core} on chip {chip}")))
    }

    fn core(&self, chip: usize, core: usize) -> Option<&crate::core::Core> {
        self.chip(chip).and_then(|c| c.cores.get(core))
    }

    /// Derived parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Statistics (complete after the run).
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// HBM of a chip.
    pub fn hbm(&self, chip: usize) -> Option<&Memory> {
        self.chip(chip).map(|c| &c.hbm)
    }

    /// Writes `bytes` into a chip's HBM before the run (a compiled program's inputs: the
    /// compiler's I/O map says where each parameter lives). Data segments of the program are
    /// written at the start of the run, after these bytes.
    pub fn write_hbm(&mut self, chip: usize, addr: u64, bytes: &[u8]) -> Result<(), SimError> {
        let ch = self
            .lanes
            .get_mut(chip)
            .ok_or_else(|| SimError::Input(format!("no chip {chip}")))?;
        ch.chip
            .hbm
            .write(addr, bytes)
            .map_err(|e| SimError::Input(format!("input: {e}")))
    }

    /// Records every MXU operation with its operands during the run (functional runs), for
    /// replay through the RTL; [`System::mxu_log`] returns them afterwards.
    pub fn record_mxu(&mut self) {
        for l in &mut self.lanes {
            l.chip.mxu_log = Some(Vec::new());
        }
    }

    /// The MXU operations chip `chip` executed (if [`System::record_mxu`] was called).
    pub fn mxu_log(&self, chip: usize) -> Option<&[crate::chip::MxuRecord]> {
        self.chip(chip).and_then(|c| c.mxu_log.as_deref())
    }

    /// Logs every HBM and VMEM read and write from the program's start (after its data
    /// segments); read the logs with [`Memory::access_log`] on [`System::vmem`] and
    /// [`System::hbm`] after the run.
    pub fn log_accesses(&mut self) {
        for l in &mut self.lanes {
            l.chip.log_accesses = true;
        }
    }

    /// VMEM of a core.
    pub fn vmem(&self, chip: usize, core: usize) -> Option<&Memory> {
        self.core(chip, core).map(|c| &c.vmem)
    }

    /// The bytes a core sent to its outfeed.
    pub fn outfeed(&self, chip: usize, core: usize) -> Option<&[u8]> {
        self.core(chip, core).map(|c| c.host.outfeed.as_slice())
    }

    /// Accumulator row `row` of MXU `mxu` (raw 32-bit values; empty in timing-only mode).
    pub fn acc_row(&self, chip: usize, core: usize, mxu: usize, row: usize) -> Option<&[u32]> {
        let c = self.core(chip, core)?;
        if row >= self.params.mxu_acc_rows {
            return None;
        }
        c.mxus.get(mxu).map(|m| m.model.acc_row(row))
    }

    /// Scalar register `r` of a core.
    pub fn reg(&self, chip: usize, core: usize, r: usize) -> Option<u64> {
        self.core(chip, core).and_then(|c| c.regs.get(r).copied())
    }

    /// Runs the program to its end (every core halted).
    pub fn run(&mut self) -> Result<RunResult, SimError> {
        if self.ran {
            return Err(SimError::Input(
                "a System runs once; build a new one".into(),
            ));
        }
        self.ran = true;
        for l in &mut self.lanes {
            l.chip.start(&self.prog)?;
        }
        let mut sink = self.trace.take();
        if sink.is_some() {
            for l in &mut self.lanes {
                l.trace = Some(EventBuf::default());
            }
        }
        let threads = self.opts.threads.clamp(1, self.lanes.len());
        let lanes: Vec<Mutex<Lane>> = std::mem::take(&mut self.lanes)
            .into_iter()
            .map(Mutex::new)
            .collect();
        let mut fab_stats = Stats::new();
        let (result, events, last) = {
            let mut d = Driver {
                ctx: Ctx {
                    prog: &self.prog,
                    p: &self.params,
                    functional: self.opts.functional,
                    replicas: lanes.len() as u32,
                    max_cycles: self.opts.max_cycles,
                },
                fabric: &mut self.fabric,
                stats: &mut fab_stats,
                sink: sink.as_deref_mut().map(|s| s as &mut dyn TraceSink),
                events: 0,
                last: Cycle::ZERO,
                fab_at_last: 0,
            };
            let r = drive(&mut d, &lanes, threads);
            (r, d.events, d.last)
        };
        self.trace = sink;
        self.lanes = lanes
            .into_iter()
            .map(|l| {
                l.into_inner()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
            })
            .collect();
        self.fabric.finish(&mut fab_stats);
        let result = match result {
            Ok(()) => self.finish(events, last),
            Err(Stop::Panic(p)) => std::panic::resume_unwind(p),
            Err(Stop::Error(at, SimError::Timeout(r))) => {
                Err(SimError::Timeout(self.stop_report(at, r.reason)))
            }
            Err(Stop::Error(_, e)) => Err(e),
        };
        // Every statistic: each chip's registry in chip order, then the fabric's.
        let mut stats = Stats::new();
        for l in &mut self.lanes {
            stats.absorb(std::mem::take(&mut l.stats));
        }
        stats.absorb(fab_stats);
        self.stats = stats;
        result
    }

    /// The end of a run whose events are all handled: a deadlock unless every core halted;
    /// else the cycle count, the timelines' last intervals and the race warnings.
    fn finish(&mut self, events: u64, last: Cycle) -> Result<RunResult, SimError> {
        let all_halted = self.chips().all(|c| c.halted == c.cores.len());
        if !all_halted {
            return Err(SimError::Deadlock(self.deadlock_report(last)));
        }
        let cycles = self
            .chips()
            .flat_map(|c| c.cores.iter())
            .filter_map(|c| c.halted)
            .max()
            .unwrap_or(Cycle::ZERO)
            .get();
        let mut race_warnings = Vec::new();
        let mut races_seen = 0;
        for l in &mut self.lanes {
            let (ch, stats) = (&mut l.chip, &mut l.stats);
            stats.set(ch.st.cycles, cycles);
            for core in &mut ch.cores {
                core.seq_tl.finish(stats, cycles);
                for u in &mut core.units {
                    u.tl.finish(stats, cycles);
                }
            }
            race_warnings.append(&mut ch.race_warnings);
            races_seen += ch.races_seen;
        }
        Ok(RunResult {
            cycles,
            events,
            race_warnings,
            races_seen,
        })
    }

    /// Why a run stopped early, with where every unit was.
    fn stop_report(&self, cycle: Cycle, reason: String) -> TimeoutReport {
        TimeoutReport {
            limit: self.opts.max_cycles,
            reason,
            units: self.deadlock_report(cycle),
        }
    }

    fn deadlock_report(&self, mut cycle: Cycle) -> DeadlockReport {
        let mut waits = Vec::new();
        for ch in self.chips() {
            // A chip whose every core halted is named too: a peer may be waiting for it.
            if self.lanes.len() > 1 && ch.halted == ch.cores.len() {
                let at = ch.cores.iter().filter_map(|c| c.halted).max();
                waits.push(format!(
                    "chip{}: halted at cycle {}",
                    ch.idx,
                    at.unwrap_or(Cycle::ZERO)
                ));
                continue;
            }
            for core in &ch.cores {
                // Sequencers run ahead of the global event order: the report's cycle is the
                // latest any of them reached.
                if let Some((_, since)) = core.blocked {
                    cycle = cycle.max(since);
                }
                if let Some(h) = core.halted {
                    cycle = cycle.max(h);
                }
                let pre = format!("chip{}.core{}", ch.idx, core.idx);
                if core.halted.is_some() {
                    continue;
                }
                let pc = core.pc;
                let inst = self
                    .prog
                    .code()
                    .get(pc as usize)
                    .map(|i| i.to_string())
                    .unwrap_or_default();
                let why = match core.blocked {
                    Some((SeqBlock::Sem(s, n), since)) => format!(
                        "sem.wait sem{s} needs {n}, has {} (since cycle {since})",
                        ch.sem(core.idx as usize, s)
                    ),
                    Some((SeqBlock::Fence, since)) => format!(
                        "fence: {} instructions outstanding (since cycle {since})",
                        core.outstanding
                    ),
                    Some((SeqBlock::Halt, since)) => format!(
                        "halt: {} instructions outstanding (since cycle {since})",
                        core.outstanding
                    ),
                    Some((SeqBlock::Queue(u), since)) => format!(
                        "queue of {} is full (since cycle {since})",
                        core.units[u].name
                    ),
                    None => "running".into(),
                };
                waits.push(format!("{pre}.seq at pc {pc} `{inst}`: {why}"));
                for u in &core.units {
                    let Some(head) = u.q.front() else { continue };
                    let why = if let Some(s) = &u.stuck {
                        s.clone()
                    } else if let Some(s) = u.blocked_sem {
                        format!(
                            "wait=sem{s} (value {}, needs {}) never signalled enough",
                            ch.sem(core.idx as usize, s),
                            ch.sem_wait_n[s as usize]
                        )
                    } else {
                        "waiting".into()
                    };
                    waits.push(format!(
                        "chip{}.{} head pc {} `{}`: {why} ({} queued)",
                        ch.idx,
                        u.name,
                        head.pc,
                        head.inst,
                        u.q.len()
                    ));
                }
            }
        }
        let own: Vec<(bool, &Post)> = self.chips().flat_map(|c| c.self_waits()).collect();
        waits.extend(self.fabric.waits(&own));
        DeadlockReport {
            cycle: cycle.get(),
            waits,
        }
    }
}

/// Runs the rounds, the chips of each window on `threads` threads (the caller's one of them).
fn drive(d: &mut Driver<'_>, lanes: &[Mutex<Lane>], threads: usize) -> Result<(), Stop> {
    // One chip's window; a panic (a simulator bug) is caught so no thread waits forever.
    let run = |l: &Mutex<Lane>, ctx: &Ctx<'_>, end: Cycle| {
        let mut l = lock(l);
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l.run_window(ctx, end))).err()
    };
    if threads <= 1 {
        let ctx = Ctx { ..d.ctx };
        return d.rounds(lanes, &mut |end| {
            lanes.iter().find_map(|l| run(l, &ctx, end))
        });
    }
    let end = AtomicU64::new(0);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let panicked: Mutex<Option<Box<dyn std::any::Any + Send>>> = Mutex::new(None);
    let barrier = Barrier::new(threads);
    let ctx = Ctx { ..d.ctx };
    // Each thread takes the next chip not yet taken until none is left.
    let work = || {
        let e = Cycle(end.load(Ordering::Acquire));
        loop {
            let i = next.fetch_add(1, Ordering::AcqRel);
            let Some(l) = lanes.get(i) else { break };
            if let Some(p) = run(l, &ctx, e) {
                panicked
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get_or_insert(p);
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(|| loop {
                barrier.wait();
                if stop.load(Ordering::Acquire) {
                    break;
                }
                work();
                barrier.wait();
            });
        }
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            d.rounds(lanes, &mut |e| {
                end.store(e.get(), Ordering::Release);
                next.store(0, Ordering::Release);
                barrier.wait();
                work();
                barrier.wait();
                panicked
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take()
            })
        }));
        stop.store(true, Ordering::Release);
        barrier.wait();
        r.unwrap_or_else(|p| Err(Stop::Panic(p)))
    })
}
