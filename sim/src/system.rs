//! `System`: chips in a topology, each with its own event queue, run to completion in one
//! deterministic order: events of all chips merge by `(time, priority, chip index, sequence)`.
//!
//! One run: [`System::new`] (arch, program, replicas, options), optional inputs
//! ([`System::set_infeed`]), [`System::run`] → [`RunResult`] (cycles and statistics); memories,
//! accumulators and outfeed streams stay readable afterwards. A run that cannot progress ends in
//! [`SimError::Deadlock`] naming what every blocked unit waits for; one that exceeds
//! `max_cycles` in [`SimError::Timeout`].

use crate::chip::{Chip, Env};
use crate::core::SeqBlock;
use crate::cycle::Cycle;
use crate::error::{DeadlockReport, SimError, TimeoutReport};
use crate::memory::Memory;
use crate::params::Params;
use crate::prog::Prog;
use crate::stats::Stats;
use crate::trace::TraceSink;
use arch::ArchConfig;
use isa::Program;

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

/// A system of chips running one program.
pub struct System {
    params: Params,
    prog: Prog,
    opts: SimOptions,
    chips: Vec<Chip>,
    stats: Stats,
    trace: Option<Box<dyn TraceSink>>,
    ran: bool,
    fabric: crate::ici::Fabric,
}

impl System {
    /// A system of `replicas` chips of architecture `arch`, each running `program` on every core
    /// (chip `i` has replica id `i`, at the coordinates `sim::ici::Topo` gives it). Chips run
    /// concurrently in one merged event order and talk over the ICI fabric (`ici.send`/`ici.recv`).
    pub fn new(
        arch: &ArchConfig,
        program: Program,
        replicas: u32,
        opts: SimOptions,
    ) -> Result<System, SimError> {
        Self::with_memory_limit(arch, program, replicas, opts, u64::MAX)
    }

    /// [`System::new`], with all simulated memories and per-chip state held to `max_memory`
    /// bytes: the fixed state is checked here, memory pages as the program touches them.
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
        // Memory pages get what the fixed state leaves.
        params.pool.set_limit(max_memory.saturating_sub(state));
        let mut stats = Stats::new();
        let chips = (0..replicas)
            .map(|i| {
                let mut ch = Chip::new(i, &params, &mut stats, opts.functional);
                ch.race_mode = opts.races;
                if opts.races == RaceCheck::Off {
                    ch.races = None;
                    ch.hb = None;
                }
                ch
            })
            .collect();
        Ok(System {
            params,
            prog,
            opts,
            chips,
            stats,
            trace: None,
            ran: false,
            fabric: crate::ici::Fabric::new(arch),
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

    fn core_mut(&mut self, chip: usize, core: usize) -> Result<&mut crate::core::Core, SimError> {
        self.chips
            .get_mut(chip)
            .and_then(|c| c.cores.get_mut(core))
            .ok_or_else(|| SimError::Input(format!("no core {core} on chip {chip}")))
    }

    fn core(&self, chip: usize, core: usize) -> Option<&crate::core::Core> {
        self.chips.get(chip).and_then(|c| c.cores.get(core))
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
        self.chips.get(chip).map(|c| &c.hbm)
    }

    /// Writes `bytes` into a chip's HBM before the run (a compiled program's inputs: the
    /// compiler's I/O map says where each parameter lives). Data segments of the program are
    /// written at the start of the run, after these bytes.
    pub fn write_hbm(&mut self, chip: usize, addr: u64, bytes: &[u8]) -> Result<(), SimError> {
        let ch = self
            .chips
            .get_mut(chip)
            .ok_or_else(|| SimError::Input(format!("no chip {chip}")))?;
        ch.hbm
            .write(addr, bytes)
            .map_err(|e| SimError::Input(format!("input: {e}")))
    }

    /// Records every MXU operation with its operands during the run (functional runs), for
    /// replay through the RTL; [`System::mxu_log`] returns them afterwards.
    pub fn record_mxu(&mut self) {
        for ch in &mut self.chips {
            ch.mxu_log = Some(Vec::new());
        }
    }

    /// The MXU operations chip `chip` executed (if [`System::record_mxu`] was called).
    pub fn mxu_log(&self, chip: usize) -> Option<&[crate::chip::MxuRecord]> {
        self.chips.get(chip).and_then(|c| c.mxu_log.as_deref())
    }

    /// Logs every HBM and VMEM read and write from the program's start (after its data
    /// segments); read the logs with [`Memory::access_log`] on [`System::vmem`] and
    /// [`System::hbm`] after the run.
    pub fn log_accesses(&mut self) {
        for ch in &mut self.chips {
            ch.log_accesses = true;
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
        for ch in &mut self.chips {
            ch.start(&self.prog)?;
        }
        let mut trace = self.trace.take();
        let mut env = Env {
            prog: &self.prog,
            p: &self.params,
            stats: &mut self.stats,
            trace: trace.as_deref_mut().map(|t| t as &mut dyn TraceSink),
            functional: self.opts.functional,
            replicas: self.chips.len() as u32,
            max_cycles: self.opts.max_cycles,
            horizon: Cycle(u64::MAX),
        };
        let mut events = 0u64;
        let mut last = Cycle::ZERO;
        let mut at_last = 0u64;
        let result = loop {
            // The chip whose next event comes first (ties: lower chip index); the fabric goes
            // first on ties.
            let mut best: Option<(crate::engine::EventKey, usize)> = None;
            // The earliest next event of a chip other than `best` (bounds inline run-ahead).
            let mut second = Cycle(u64::MAX);
            for (i, ch) in self.chips.iter().enumerate() {
                if let Some(k) = ch.q.peek_key() {
                    if !matches!(best, Some((bk, _)) if (bk.time, bk.prio) <= (k.time, k.prio)) {
                        if let Some((bk, _)) = best {
                            second = second.min(bk.time);
                        }
                        best = Some((k, i));
                    } else {
                        second = second.min(k.time);
                    }
                }
            }
            let fab = self.fabric.peek_key();
            env.horizon = match fab {
                Some(f) => second.min(f.time),
                None => second,
            };
            let fabric_first = match (fab, best) {
                (Some(f), Some((bk, _))) => (f.time, f.prio) <= (bk.time, bk.prio),
                (Some(_), None) => true,
                _ => false,
            };
            let now = match (fabric_first, fab, best) {
                (true, Some(f), _) => f.time,
                (false, _, Some((bk, _))) => bk.time,
                _ => break Ok(()),
            };
            if now.get() > self.opts.max_cycles {
                break Err(SimError::Timeout(self.stop_report(
                    last,
                    format!(
                        "the program did not halt within {} cycles (the next event is at \
                         cycle {}); raise --max-cycles if it is meant to run longer",
                        self.opts.max_cycles, now
                    ),
                )));
            }
            if now == last {
                at_last += 1;
                if at_last > MAX_EVENTS_PER_CYCLE {
                    break Err(SimError::Timeout(self.stop_report(
                        last,
                        format!(
                            "no progress: more than {MAX_EVENTS_PER_CYCLE} events at cycle \
                             {now} without time advancing"
                        ),
                    )));
                }
            } else {
                at_last = 0;
            }
            last = now;
            events += 1;
            if fabric_first {
                let Some((t, a)) = self.fabric.step(env.stats) else {
                    continue;
                };
                let (sc, rc) = (a.send.chip as usize, a.recv.chip as usize);
                // One slice per link of the path, on the link's track (`ici.x+` of its chip).
                if let Some(tr) = env.trace.as_deref_mut() {
                    let topo = self.fabric.topo();
                    let symbol = self.prog.symbol(a.send.pc);
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
                let r = self.chips[rc]
                    .ici_deliver(&env, &a.recv, &a.send.data)
                    .and_then(|()| self.chips[sc].ici_complete(&mut env, t, &a.send))
                    .and_then(|()| self.chips[rc].ici_complete(&mut env, t, &a.recv));
                if let Err(e) = r {
                    break Err(e);
                }
                continue;
            }
            let i = best.expect("a chip event").1;
            let (now, ev) = self.chips[i].q.pop().expect("peeked");
            if let Err(e) = self.chips[i].handle(&mut env, now, ev) {
                break Err(match e {
                    // Raised by a unit that saw it cannot finish in time: add where all were.
                    SimError::Timeout(r) => SimError::Timeout(self.stop_report(now, r.reason)),
                    e => e,
                });
            }
            let posts = std::mem::take(&mut self.chips[i].ici_out);
            let mut err = None;
            for (send, p) in posts {
                let (chip, core, pc, inst) = (p.chip, p.core as u32, p.pc, p.inst.clone());
                let at = p.posted;
                if let Err(msg) = self.fabric.post(at, send, p, env.stats) {
                    err = Some(SimError::Exec {
                        chip,
                        core,
                        pc,
                        inst,
                        msg,
                    });
                    break;
                }
            }
            if let Some(e) = err {
                break Err(e);
            }
        };
        self.trace = trace;
        self.fabric.finish(&mut self.stats);
        result?;
        let all_halted = self.chips.iter().all(|c| c.halted == c.cores.len());
        if !all_halted {
            return Err(SimError::Deadlock(self.deadlock_report(last)));
        }
        let cycles = self
            .chips
            .iter()
            .flat_map(|c| c.cores.iter())
            .filter_map(|c| c.halted)
            .max()
            .unwrap_or(Cycle::ZERO)
            .get();
        for ch in &mut self.chips {
            self.stats.set(ch.st.cycles, cycles);
            for core in &mut ch.cores {
                core.seq_tl.finish(&mut self.stats, cycles);
                for u in &mut core.units {
                    u.tl.finish(&mut self.stats, cycles);
                }
            }
        }
        let mut race_warnings = Vec::new();
        let mut races_seen = 0;
        for ch in &mut self.chips {
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
        for ch in &self.chips {
            // A chip whose every core halted is named too: a peer may be waiting for it.
            if self.chips.len() > 1 && ch.halted == ch.cores.len() {
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
        waits.extend(self.fabric.waits());
        DeadlockReport {
            cycle: cycle.get(),
            waits,
        }
    }
}
