//! `Chip`: the cores of one chip, its HBM and host link, and its own event queue.
//!
//! Event flow: the sequencer of each core issues one instruction per `Seq` event; unit
//! instructions go to a unit queue and a `Kick` lets the unit's front end start them; a `Done`
//! event completes a unit instruction at the cycle its results are visible (signalling its
//! semaphore and waking whoever waits). DMA transfers move through the HBM link (`DmaJoin`,
//! `HbmWake`), the only place where a completion time depends on later events, and book their
//! VMEM side on the core's VMEM port when they join (`DmaDone` when that side ends last). Invariants: see `core.rs`; every wait is re-checked when something it waits for
//! changes, so an empty queue with an unhalted core is a deadlock, never a lost wake-up.

use crate::account::Timeline;
use crate::core::*;
use crate::cycle::Cycle;
use crate::engine::{EventQueue, Priority};
use crate::error::SimError;
use crate::link::SharedLink;
use crate::memory::Memory;
use crate::mxu::{MxuGeometry, MxuMode, MxuModel};
use crate::params::Params;
use crate::prog::Prog;
use crate::stats::{StatId, Stats};
use crate::trace::{TraceEvent, TraceSink};
use arch::MxuDtype;
use isa::{Inst, Space};

/// Everything an event handler needs besides the chip.
pub struct Env<'a> {
    /// The program.
    pub prog: &'a Prog,
    /// Derived parameters.
    pub p: &'a Params,
    /// Statistics.
    pub stats: &'a mut Stats,
    /// Trace sink, if tracing.
    pub trace: Option<&'a mut dyn TraceSink>,
    /// Functional execution (else timing only).
    pub functional: bool,
    /// Number of chips (replicas).
    pub replicas: u32,
    /// The run's cycle limit (work that cannot finish before it is not started).
    pub max_cycles: u64,
    /// The earliest cycle at which something outside this chip (another chip's event, the ICI
    /// fabric) may happen: the sequencer runs instructions inline only before it.
    pub horizon: Cycle,
}

/// An event of one chip.
#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// The sequencer of a core tries to issue.
    Seq(u16),
    /// A unit's front end tries to start its queue head.
    Kick(u16, u16),
    /// A unit instruction completes.
    Done {
        /// Core.
        core: u16,
        /// Unit.
        unit: u16,
        /// Semaphore to signal.
        signal: Option<u8>,
        /// The command's race-tracking id.
        id: u64,
    },
    /// A DMA transfer enters its data phase.
    DmaJoin(u32),
    /// The HBM link may have completed transfers (generation).
    HbmWake(u64),
    /// A DMA transfer's last VMEM byte is through (its data phase on VMEM ends).
    DmaDone(u32),
    /// A transfer of this chip to itself arrives (index into `Chip::self_arriving`).
    IciSelf(u32),
}

/// A DMA transfer in flight.
#[derive(Clone, Copy, Debug)]
pub struct Xfer {
    /// Core.
    pub core: u16,
    /// Start cycle.
    pub start: Cycle,
    /// Program counter.
    pub pc: u32,
    /// Semaphore to signal.
    pub signal: Option<u8>,
    /// Bytes on the link.
    pub link_bytes: u64,
    /// Through HBM (else VMEM to VMEM).
    pub hbm: bool,
    /// Bytes of the copy on the core's VMEM port (read plus written; 0 for HBM to HBM).
    pub vmem_bytes: u64,
    /// Cycle the VMEM side is through (known once the transfer joins).
    pub vmem_done: Cycle,
    /// Cycle the engine has issued every chunk (`chunks × dma.chunk_cycles` after joining).
    pub chunk_done: Cycle,
    /// Contiguous chunks of the descriptor.
    pub chunks: u64,
    /// Cycles the transfer would take alone in its data phase (to tell VMEM stalls apart).
    pub alone: u64,
    /// Cycle the data phase began.
    pub joined: Cycle,
    /// Cycle the HBM side was through (HBM transfers).
    pub hbm_done: Cycle,
    /// Its id in the race tracker.
    pub race_id: u64,
}

/// Chip-level statistics.
pub struct ChipStats {
    /// HBM bytes read.
    pub hbm_read: StatId,
    /// HBM bytes written.
    pub hbm_written: StatId,
    /// Total cycles of the run.
    pub cycles: StatId,
    /// Events handled, by kind (simulator work, not hardware activity).
    pub events: [StatId; 6],
}

/// One chip.
pub struct Chip {
    /// Index in the system (its replica id).
    pub idx: u32,
    /// The event queue.
    pub q: EventQueue<Ev>,
    /// Cores.
    pub cores: Vec<Core>,
    /// HBM contents.
    pub hbm: Memory,
    /// HBM bandwidth shared by all transfers.
    pub hbm_link: SharedLink,
    /// Transfers in flight (slab).
    pub xfers: Vec<Option<Xfer>>,
    /// Free slots of `xfers`.
    pub free_xfers: Vec<u32>,
    /// Scratch for completed transfer ids.
    pub done_buf: Vec<u64>,
    /// Statistics.
    pub st: ChipStats,
    /// Cores halted so far.
    pub halted: usize,
    /// Every MXU operation with its operands, when asked for ([`crate::System::record_mxu`]).
    pub mxu_log: Option<Vec<MxuRecord>>,
    /// Log every HBM and VMEM access from the program's start ([`crate::System::log_accesses`]).
    pub log_accesses: bool,
    /// Instructions in flight, for race detection (`None`: not checked).
    pub races: Option<crate::race::RaceTracker>,
    /// Semaphores shared by the cores (`.sem semN shared`); the others live in each core.
    pub shared_sems: [u32; 32],
    /// Bit `s`: semaphore `s` is shared.
    pub sem_shared: u32,
    /// What a unit's `wait=semN` takes (`.sem semN wait=K`, else 1).
    pub sem_wait_n: [u32; 32],
    /// What a unit's `signal=semN` gives (`.sem semN signal=K`, else 1).
    pub sem_signal_n: [u32; 32],
    /// Happens-before race detection (with `races`).
    pub hb: Option<crate::race::Hb>,
    /// What a race does.
    pub race_mode: crate::system::RaceCheck,
    /// Races recorded under [`RaceCheck::Warn`](crate::system::RaceCheck::Warn).
    pub race_warnings: Vec<String>,
    /// Races seen in all.
    pub races_seen: u64,
    /// The race id the next DMA transfer records.
    pub next_dma_race_id: u64,
    /// ICI instructions posted since the System last drained them (`true`: a send).
    pub ici_out: Vec<(bool, crate::ici::Post)>,
    /// Posted ICI instructions not yet complete: (core, posting cycle).
    pub ici_live: Vec<(u16, Cycle)>,
    /// Transfers of this chip to itself are matched here, not in the fabric (they cross no
    /// link, so no other chip can see them): unmatched sends and receives by tag, in posting
    /// order.
    pub self_posts: crate::ici::Matcher<u32>,
    /// Matched transfers to itself waiting to arrive (slab of `Ev::IciSelf`).
    pub self_arriving: Vec<Option<(crate::ici::Post, crate::ici::Post)>>,
    /// By pc: the derived accesses of the last command started there whose accesses depend
    /// on nothing but the instruction and its operand values (`units::derived`), with those
    /// values: a later command at that pc with the same values reads them as they are.
    pub(crate) derived_cache: crate::units::DerivedCache,
}

/// One MXU operation as the simulator executed it: the stream a compiled program feeds an
/// MXU, replayable through the RTL (`systole run --rtl-check`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MxuRecord {
    /// Core index.
    pub core: u32,
    /// MXU index.
    pub mxu: u32,
    /// Cycle the MXU's front end started it.
    pub cycle: u64,
    /// Mode.
    pub mode: MxuDtype,
    /// What it did.
    pub op: MxuRecordOp,
}

/// The operation of an [`MxuRecord`], operands as raw elements (int8 in the low byte, or
/// bf16 bits), row-major, unpadded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MxuRecordOp {
    /// `mxu.ldw` of a `k × n` tile.
    Load { k: usize, n: usize, w: Vec<u16> },
    /// `mxu.matmul` of `m` rows of `k` elements into accumulator row `acc`.
    Matmul {
        m: usize,
        k: usize,
        acc: usize,
        accumulate: bool,
        x: Vec<u16>,
    },
}

fn mode_of(d: MxuDtype) -> MxuMode {
    match d {
        MxuDtype::Int8 => MxuMode::Int8,
        MxuDtype::Bf16 => MxuMode::Bf16,
    }
}

impl Chip {
    /// Builds chip `idx` and declares its statistics (`chip{idx}.…`); its memories draw their
    /// pages from `pool`.
    pub fn new(
        idx: u32,
        p: &Params,
        stats: &mut Stats,
        functional: bool,
        pool: &crate::memory::Pool,
    ) -> Chip {
        let pre = format!("chip{idx}");
        let st = ChipStats {
            hbm_read: stats.declare(
                format!("{pre}.hbm.bytes_read"),
                "bytes",
                "bytes read from HBM",
            ),
            hbm_written: stats.declare(
                format!("{pre}.hbm.bytes_written"),
                "bytes",
                "bytes written to HBM",
            ),
            cycles: stats.declare(
                format!("{pre}.cycles"),
                "cycles",
                "cycles of the run (until every core of every chip halted)",
            ),
            events: ["seq", "kick", "done", "dma_join", "hbm_wake", "dma_done"].map(|k| {
                stats.declare(
                    format!("{pre}.sim.events.{k}"),
                    "events",
                    "simulator events handled (simulator work, not hardware activity)",
                )
            }),
        };
        let cores = (0..p.cores)
            .map(|c| Self::new_core(&pre, c as u32, p, stats, functional, pool))
            .collect();
        Chip {
            idx,
            q: EventQueue::new(),
            cores,
            hbm: Memory::in_pool("HBM", p.hbm_bytes, pool.clone()),
            hbm_link: SharedLink::new(p.hbm_bpc, p.dma_bpc),
            xfers: Vec::new(),
            free_xfers: Vec::new(),
            done_buf: Vec::new(),
            st,
            halted: 0,
            mxu_log: None,
            log_accesses: false,
            races: Some(crate::race::RaceTracker::default()),
            shared_sems: [0; 32],
            sem_shared: 0,
            sem_wait_n: [1; 32],
            sem_signal_n: [1; 32],
            hb: Some(crate::race::Hb::new(p.cores, MXU0 + p.mxus + 1, 32)),
            race_mode: crate::system::RaceCheck::Error,
            race_warnings: Vec::new(),
            races_seen: 0,
            next_dma_race_id: 0,
            ici_out: Vec::new(),
            ici_live: Vec::new(),
            self_posts: Default::default(),
            self_arriving: Vec::new(),
            derived_cache: Vec::new(),
        }
    }

    fn new_core(
        chip: &str,
        c: u32,
        p: &Params,
        stats: &mut Stats,
        functional: bool,
        pool: &crate::memory::Pool,
    ) -> Core {
        let pre = format!("{chip}.core{c}");
        let seq_tl = Timeline::declare(stats, &format!("{pre}.seq"), SEQ_REASONS);
        let seq_stats = SeqStats {
            issued: stats.declare(
                format!("{pre}.seq.instructions"),
                "instructions",
                "instructions issued",
            ),
            dispatched: stats.declare(
                format!("{pre}.seq.dispatched"),
                "instructions",
                "instructions dispatched to units",
            ),
            taken: stats.declare(
                format!("{pre}.seq.branches_taken"),
                "instructions",
                "taken branches",
            ),
        };
        let mut units = Vec::new();
        for n in ["dma", "vpu", "infeed", "outfeed"] {
            units.push(UnitQ::new(
                stats,
                &format!("{pre}.{n}"),
                format!("core{c}.{n}"),
            ));
        }
        let mut mxus = Vec::new();
        for i in 0..p.mxus {
            let up = format!("{pre}.mxu{i}");
            units.push(UnitQ::new(stats, &up, format!("core{c}.mxu{i}")));
            let geom = MxuGeometry {
                rows: p.mxu_rows,
                cols: p.mxu_cols,
                acc_rows: p.mxu_acc_rows,
                mode: mode_of(p.mxu_dtype),
            };
            let mut model = MxuModel::new(geom, functional);
            let modes: Vec<MxuMode> = p.mxu_dtypes.iter().map(|&d| mode_of(d)).collect();
            model.allow_modes(&modes);
            mxus.push(MxuState {
                model,
                acc_busy: Default::default(),
                acc_reads: Default::default(),
                st_free: Cycle::ZERO,
                shadow_n: 0,
                active_n: 0,
                pending: false,
                flops: stats.declare(
                    format!("{up}.flops"),
                    "flops",
                    "useful FLOPs (2 per multiply-accumulate of the unpadded tile)",
                ),
                rows: stats.declare(
                    format!("{up}.rows"),
                    "rows",
                    "activation rows streamed through the array",
                ),
            });
        }
        // The ICI queue comes after the MXUs (unit index MXU0 + mxus).
        units.push(UnitQ::new(
            stats,
            &format!("{pre}.ici"),
            format!("core{c}.ici"),
        ));
        let vp = format!("{pre}.vpu");
        let dp = format!("{pre}.dma");
        Core {
            idx: c,
            regs: [0; 32],
            sems: [0; 32],
            pc: 0,
            blocked: None,
            seq_pending: false,
            next_issue: Cycle::ZERO,
            halted: None,
            seq_tl,
            seq_stats,
            outstanding: 0,
            units,
            mxus,
            vpu: VpuState {
                pipe_free: [Cycle::ZERO; 3],
                last_start: Cycle::ZERO,
                writes: Vec::new(),
                elems: stats.declare(format!("{vp}.elements"), "elements", "elements produced"),
                flops: stats.declare(
                    format!("{vp}.flops"),
                    "flops",
                    "floating-point operations (one per float element of an arithmetic op)",
                ),
            },
            dma: DmaState {
                busy_engines: 0,
                bytes: stats.declare(format!("{dp}.bytes"), "bytes", "bytes copied by DMA"),
            },
            host: HostState {
                infeed: Vec::new(),
                infeed_len: 0,
                infeed_pos: 0,
                outfeed: Vec::new(),
                out_free: Cycle::ZERO,
                in_bytes: stats.declare(
                    format!("{pre}.infeed.bytes"),
                    "bytes",
                    "bytes received over the host link",
                ),
                out_bytes: stats.declare(
                    format!("{pre}.outfeed.bytes"),
                    "bytes",
                    "bytes sent over the host link",
                ),
            },
            vmem: Memory::in_pool("VMEM", p.vmem_bytes, pool.clone()),
            vmem_port: crate::vmem_port::VmemPort::new(p.vmem_bpc),
        }
    }

    /// Writes the program's data segments and schedules every core's first issue.
    pub fn start(&mut self, prog: &Prog) -> Result<(), SimError> {
        for d in &prog.program.sems {
            let s = d.sem as usize;
            self.sem_wait_n[s] = d.wait;
            self.sem_signal_n[s] = d.signal;
            if d.shared {
                self.sem_shared |= 1 << s;
            }
        }
        if let Some(h) = &mut self.hb {
            h.set_shared(self.sem_shared);
        }
        for seg in &prog.program.data {
            for c in 0..self.cores.len() {
                let r = match seg.space {
                    Space::Hbm => {
                        if c > 0 {
                            continue;
                        }
                        self.hbm.write(seg.addr, &seg.bytes)
                    }
                    Space::Vmem => self.cores[c].vmem.write(seg.addr, &seg.bytes),
                };
                r.map_err(|e| SimError::Input(format!("data segment: {e}")))?;
            }
        }
        // Access logs (tests) start with the program, after its data segments.
        if self.log_accesses {
            self.hbm.log_accesses();
            for c in &mut self.cores {
                c.vmem.log_accesses();
            }
        }
        for c in 0..self.cores.len() {
            self.schedule_seq(c, Cycle::ZERO);
        }
        Ok(())
    }

    /// A race was found: an error, or a recorded warning under `RaceCheck::Warn`.
    pub(crate) fn race(&mut self, msg: String) -> Result<(), SimError> {
        if self.race_mode != crate::system::RaceCheck::Warn {
            return Err(SimError::Race {
                chip: self.idx,
                msg,
            });
        }
        self.races_seen += 1;
        if self.race_warnings.len() < crate::system::MAX_RACE_WARNINGS {
            self.race_warnings.push(format!("chip {}: {msg}", self.idx));
        }
        Ok(())
    }

    /// Schedules a sequencer step of core `c` at `at` (once).
    pub fn schedule_seq(&mut self, c: usize, at: Cycle) {
        let core = &mut self.cores[c];
        if !core.seq_pending && core.halted.is_none() {
            core.seq_pending = true;
            self.q.schedule(at, Priority::Issue, Ev::Seq(c as u16));
        }
    }

    /// Schedules a front-end kick of unit `u` of core `c` at `at` (once).
    pub fn kick(&mut self, c: usize, u: usize, at: Cycle) {
        let unit = &mut self.cores[c].units[u];
        if !unit.kick_pending {
            unit.kick_pending = true;
            self.q
                .schedule(at, Priority::UnitStart, Ev::Kick(c as u16, u as u16));
        }
    }

    /// Handles one event.
    pub fn handle(&mut self, env: &mut Env<'_>, now: Cycle, ev: Ev) -> Result<(), SimError> {
        let k = match ev {
            Ev::Seq(_) => 0,
            Ev::Kick(..) => 1,
            Ev::Done { .. } | Ev::IciSelf(_) => 2,
            Ev::DmaJoin(_) => 3,
            Ev::HbmWake(_) => 4,
            Ev::DmaDone(..) => 5,
        };
        env.stats.add(self.st.events[k], 1);
        match ev {
            Ev::Seq(c) => self.seq_step(env, now, c as usize),
            Ev::Kick(c, u) => self.unit_step(env, now, c as usize, u as usize),
            Ev::Done {
                core,
                unit,
                signal,
                id,
            } => self.complete(env, now, core as usize, unit as usize, signal, id),
            Ev::DmaJoin(x) => {
                self.dma_join(env, now, x);
                Ok(())
            }
            Ev::HbmWake(g) => self.hbm_wake(env, now, g),
            Ev::DmaDone(x) => self.finish_xfer(env, now, x),
            Ev::IciSelf(i) => {
                let (send, recv) = self.self_arriving[i as usize]
                    .take()
                    .expect("a matched transfer to itself");
                self.ici_deliver(env, &recv, &send.data)?;
                self.ici_complete(env, now, &send)?;
                self.ici_complete(env, now, &recv)
            }
        }
    }

    /// Posts an `ici.send` (`send`) or `ici.recv` of this chip to itself at `now`: matched with
    /// its partner by tag in posting order, as the fabric matches (`sim::ici`); a matched pair
    /// arrives one cycle after the later post (no link, the fabric's latency of an empty
    /// path). Returns the message of a length mismatch.
    pub(crate) fn post_self(
        &mut self,
        send: bool,
        p: crate::ici::Post,
        now: Cycle,
    ) -> Result<(), String> {
        let Some((s, r)) = self.self_posts.post(p.tag, send, p)? else {
            return Ok(());
        };
        let slot = match self.self_arriving.iter().position(Option::is_none) {
            Some(i) => {
                self.self_arriving[i] = Some((s, r));
                i
            }
            None => {
                self.self_arriving.push(Some((s, r)));
                self.self_arriving.len() - 1
            }
        };
        self.q
            .schedule(now + 1, Priority::Arrive, Ev::IciSelf(slot as u32));
        Ok(())
    }

    /// This chip's transfers to itself still waiting for their partner (`true`: a send), for
    /// the deadlock report.
    pub fn self_waits(&self) -> Vec<(bool, &crate::ici::Post)> {
        [true, false]
            .into_iter()
            .flat_map(|send| self.self_posts.waiting(send).map(move |(_, p)| (send, p)))
            .collect()
    }

    /// Completes a unit instruction of core `c`: semaphore, counters, wake-ups.
    pub fn complete(
        &mut self,
        _env: &mut Env<'_>,
        now: Cycle,
        c: usize,
        u: usize,
        signal: Option<u8>,
        id: u64,
    ) -> Result<(), SimError> {
        if let Some(h) = &mut self.hb {
            h.complete(c, id, signal, now.get());
        }
        let core = &mut self.cores[c];
        core.outstanding -= 1;
        core.units[u].inflight -= 1;
        if let Some(s) = signal {
            let n = self.sem_signal_n[s as usize];
            self.signal(c, s, n, now).map_err(|m| SimError::Exec {
                chip: self.idx,
                core: c as u32,
                pc: 0,
                inst: "(completion)".into(),
                msg: m,
            })?;
        }
        // Fewer outstanding instructions can only release a fence or a halt (semaphore waits
        // are woken by `signal`, full queues by their unit's front end).
        if matches!(
            self.cores[c].blocked,
            Some((SeqBlock::Fence | SeqBlock::Halt, _))
        ) {
            self.schedule_seq(c, now);
        }
        Ok(())
    }

    /// The value of semaphore `s` as core `c` sees it (its own, or the chip's if shared).
    pub fn sem(&self, c: usize, s: u8) -> u32 {
        if self.sem_shared & (1 << (s % 32)) != 0 {
            self.shared_sems[s as usize]
        } else {
            self.cores[c].sems[s as usize]
        }
    }

    /// Semaphore `s` of core `c`, for update.
    pub fn sem_mut(&mut self, c: usize, s: u8) -> &mut u32 {
        if self.sem_shared & (1 << (s % 32)) != 0 {
            &mut self.shared_sems[s as usize]
        } else {
            &mut self.cores[c].sems[s as usize]
        }
    }

    /// `sem += n`, waking the sequencers and units waiting on it (of every core if shared).
    pub fn signal(&mut self, c: usize, s: u8, n: u32, now: Cycle) -> Result<(), String> {
        let v = self.sem_mut(c, s);
        *v = v
            .checked_add(n)
            .ok_or_else(|| format!("semaphore sem{s} overflows"))?;
        let cores = if self.sem_shared & (1 << (s % 32)) != 0 {
            0..self.cores.len()
        } else {
            c..c + 1
        };
        for c in cores {
            for u in 0..self.cores[c].units.len() {
                let unit = &self.cores[c].units[u];
                if unit.blocked_sem == Some(s) || unit.blocked_mask & (1 << (s % 32)) != 0 {
                    self.kick(c, u, now);
                }
            }
            if matches!(self.cores[c].blocked, Some((SeqBlock::Sem(x, _), _)) if x == s) {
                self.schedule_seq(c, now);
            }
        }
        Ok(())
    }

    /// Emits a trace event for an instruction of core `c`, unit `u`, active over `span`
    /// (start, exclusive end), that moved `bytes` (HBM link bytes, VMEM port bytes).
    #[allow(clippy::too_many_arguments)]
    pub fn trace(
        &self,
        env: &mut Env<'_>,
        c: usize,
        u: usize,
        pc: u32,
        inst: &Inst,
        span: (Cycle, Cycle),
        bytes: (u64, u64),
    ) {
        let (start, end) = span;
        if let Some(t) = env.trace.as_deref_mut() {
            t.event(&TraceEvent {
                chip: self.idx,
                unit: &self.cores[c].units[u].name,
                name: inst.mnemonic(),
                symbol: env.prog.symbol(pc),
                pc: Some(pc),
                start: start.get(),
                end: end.get(),
                hbm_bytes: bytes.0,
                vmem_bytes: bytes.1,
            });
        }
    }
}
