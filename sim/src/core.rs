//! Per-core state: registers, semaphores, the sequencer's state, and one in-order queue per unit.
//!
//! Unit indices within a core are fixed: [`DMA`], [`VPU`], [`INFEED`], [`OUTFEED`], then MXU `i`
//! at `MXU0 + i`, then the ICI queue at `MXU0 + mxus`. Invariants: a queue never holds more than `queue_depth` commands; `outstanding`
//! counts dispatched unit instructions that have not completed; a unit's `front_free` is the
//! earliest cycle its front end may start the next command (in-order start).

use crate::account::Timeline;
use crate::cycle::Cycle;
use crate::memory::Memory;
use crate::mxu::MxuModel;
use crate::stats::{StatId, Stats};
use isa::Inst;
use std::collections::VecDeque;

/// Unit index of the DMA engines.
pub const DMA: usize = 0;
/// Unit index of the VPU.
pub const VPU: usize = 1;
/// Unit index of the infeed queue.
pub const INFEED: usize = 2;
/// Unit index of the outfeed queue.
pub const OUTFEED: usize = 3;
/// Unit index of MXU 0 (MXU `i` is `MXU0 + i`; the ICI queue follows the last MXU, at
/// `MXU0 + mxus`).
pub const MXU0: usize = 4;

/// Stall reason indices of unit timelines (see [`UNIT_REASONS`]).
pub const R_SEM: u8 = 0;
/// The unit's own dependency (ports, weights, hazards, engines, host data, link).
pub const R_DEP: u8 = 1;
/// VMEM bandwidth granted to other requesters (`sim::vmem_port`).
pub const R_VMEM: u8 = 2;

/// Stall reasons of every unit but the sequencer.
pub const UNIT_REASONS: &[(&str, &str)] = &[
    ("semaphore", "the queue head waits for its wait= semaphore"),
    (
        "dependency",
        "the queue head waits for the unit itself (ports, weights, hazards, engines, host data)",
    ),
    (
        "vmem",
        "the command waits for VMEM bandwidth (vmem.bytes_per_cycle, shared by every unit of the core)",
    ),
];

/// Sequencer stall reason: `sem.wait`.
pub const S_SEM: u8 = 0;
/// Sequencer stall reason: `fence`.
pub const S_FENCE: u8 = 1;
/// Sequencer stall reason: target unit queue full.
pub const S_QUEUE: u8 = 2;
/// Sequencer stall reason: `halt` draining.
pub const S_HALT: u8 = 3;

/// Stall reasons of the sequencer.
pub const SEQ_REASONS: &[(&str, &str)] = &[
    ("semaphore", "sem.wait on a semaphore below its count"),
    ("fence", "fence waiting for issued instructions to complete"),
    ("queue_full", "the target unit's queue is full"),
    ("halt", "halt waiting for every unit to drain"),
];

/// A dispatched unit instruction with its operands read.
#[derive(Clone, Debug)]
pub struct Cmd {
    /// The instruction.
    pub inst: Inst,
    /// Addresses / values read at dispatch, in operand order (see `units::resolve`).
    pub a: [u64; 4],
    /// Program counter.
    pub pc: u32,
    /// Cycle of dispatch.
    pub dispatched: Cycle,
}

/// One unit's queue and front end.
pub struct UnitQ {
    /// Name within the chip, e.g. `core0.mxu1`.
    pub name: std::sync::Arc<str>,
    /// Queued commands (not started).
    pub q: VecDeque<Cmd>,
    /// Earliest cycle the next command may start.
    pub front_free: Cycle,
    /// The head waits for this semaphore.
    pub blocked_sem: Option<u8>,
    /// Every semaphore (bit `s`) the commands the front end may start wait for, when none
    /// can start (the DMA looks past a blocked head).
    pub blocked_mask: u32,
    /// The head can never start (reason), e.g. infeed past the end of the host's stream.
    pub stuck: Option<String>,
    /// A kick event is scheduled.
    pub kick_pending: bool,
    /// Started, not completed.
    pub inflight: u32,
    /// Earliest start among in-flight commands whose intervals are not yet reported.
    pub unreported_from: Option<Cycle>,
    /// Time accounting.
    pub tl: Timeline,
    /// Instructions executed.
    pub ops: StatId,
}

impl UnitQ {
    /// Declares the unit's statistics under `prefix` (e.g. `chip0.core0.mxu1`).
    pub fn new(stats: &mut Stats, prefix: &str, name: String) -> Self {
        let tl = Timeline::declare(stats, prefix, UNIT_REASONS);
        let ops = stats.declare(
            format!("{prefix}.instructions"),
            "instructions",
            "instructions executed",
        );
        UnitQ {
            name: name.into(),
            q: VecDeque::new(),
            front_free: Cycle::ZERO,
            blocked_sem: None,
            blocked_mask: 0,
            stuck: None,
            kick_pending: false,
            inflight: 0,
            unreported_from: None,
            tl,
            ops,
        }
    }

    /// The horizon before which no new interval of this unit can start.
    pub fn horizon(&self, now: Cycle) -> u64 {
        let mut h = now.get();
        if let Some(c) = self.q.front() {
            h = h.min(c.dispatched.get());
        }
        if let Some(c) = self.unreported_from {
            h = h.min(c.get());
        }
        h
    }
}

/// Why the sequencer does not issue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeqBlock {
    /// `sem.wait sem, n`.
    Sem(u8, u32),
    /// `fence`.
    Fence,
    /// The queue of this unit is full.
    Queue(usize),
    /// `halt` draining.
    Halt,
}

/// MXU unit state beyond the model.
pub struct MxuState {
    /// The contract model.
    pub model: MxuModel,
    /// Accumulator rows that matmuls still in flight write (for `mxu.st`).
    pub acc_busy: AccBusy,
    /// Accumulator rows that stores still in flight read (for `mxu.matmul`).
    pub acc_reads: AccReads,
    /// The accumulator's result port is free from this cycle (an `mxu.st` holds it one row
    /// per cycle, so two stores of one MXU do not overlap).
    pub st_free: Cycle,
    /// Columns `N'` of the shadow tile (for FLOP counting).
    pub shadow_n: u64,
    /// Columns `N'` of the active tile.
    pub active_n: u64,
    /// Whether a loaded tile awaits its swap.
    pub pending: bool,
    /// FLOPs (2 per useful multiply-accumulate).
    pub flops: StatId,
    /// Rows streamed through the array.
    pub rows: StatId,
}

/// The accumulator rows written by matmuls that may still be in flight, and when each
/// completes: an `mxu.st` waits only for the matmuls that write one of its rows, so a chunk's
/// store overlaps the next chunk's matmuls into other accumulator rows (the drain of the array
/// is hidden, as the accumulator memory's separate read port allows).
///
/// Ranges may overlap in any way; the list holds one entry per distinct `(first row, rows)`
/// (a matmul repeating a range raises its completion), and entries complete at or before the
/// MXU's issue cycle (which never decreases) are dropped, so it stays as short as the
/// distinct ranges in flight.
#[derive(Clone, Debug, Default)]
pub struct AccBusy {
    /// `(first row, rows, completion cycle)`; rows are taken modulo the accumulator rows.
    ranges: Vec<(u64, u64, Cycle)>,
}

impl AccBusy {
    /// Records a matmul issued at `now` writing rows `[first, first + rows)` (mod `a_rows`)
    /// that completes at `done`.
    pub fn record(&mut self, now: Cycle, first: u64, rows: u64, a_rows: u64, done: Cycle) {
        let rows = rows.min(a_rows);
        self.ranges.retain(|r| r.2 > now);
        match self.ranges.iter_mut().find(|r| r.0 == first && r.1 == rows) {
            Some(r) => r.2 = r.2.max(done),
            None => self.ranges.push((first, rows, done)),
        }
    }

    /// The cycle every recorded matmul writing one of rows `[first, first + rows)` (mod
    /// `a_rows`) has completed (`Cycle::ZERO` if none).
    pub fn ready(&self, first: u64, rows: u64, a_rows: u64) -> Cycle {
        let rows = rows.min(a_rows);
        let overlaps = |a: u64, m: u64| {
            (first + a_rows - a) % a_rows < m || (a + a_rows - first) % a_rows < rows
        };
        self.ranges
            .iter()
            .filter(|r| overlaps(r.0, r.1))
            .map(|r| r.2)
            .max()
            .unwrap_or(Cycle::ZERO)
    }
}

/// The accumulator rows that `mxu.st`s may still be reading: a matmul must not overwrite a
/// row before the store has read it (docs/timing.md, MXU). A store of `m` rows from `first`
/// that ends at `E` reads its row `i` no later than cycle `E − m + i` (one row per cycle, its
/// VMEM stall taken before its rows: the latest it can read them). Entries ended at or before
/// the MXU's issue cycle are dropped.
#[derive(Clone, Debug, Default)]
pub struct AccReads {
    /// `(first row, rows, end cycle)`; rows are taken modulo the accumulator rows.
    ranges: Vec<(u64, u64, Cycle)>,
}

impl AccReads {
    /// Records a store issued at `now` reading rows `[first, first + rows)` (mod `a_rows`)
    /// that ends at `end`.
    pub fn record(&mut self, now: Cycle, first: u64, rows: u64, end: Cycle) {
        self.ranges.retain(|r| r.2 > now);
        self.ranges.push((first, rows, end));
    }

    /// The earliest start `t` of a matmul writing rows `[first, first + rows)` (mod `a_rows`)
    /// whose row `j`, visible at `t + j + fill` (`fill = R + C`), is written only after every
    /// recorded store has read that accumulator row: `t + j + fill > E − m + i` for each
    /// store row `i` the matmul's row `j` overwrites (`Cycle::ZERO` if none overlaps).
    pub fn ready(&self, first: u64, rows: u64, a_rows: u64, fill: u64) -> Cycle {
        let rows = rows.min(a_rows);
        let mut t = 0u64;
        for &(sf, sm, end) in &self.ranges {
            // The largest `i − j` over the rows both touch: `d = (first − sf) mod A` when a
            // row with `i = j + d` is shared, else `d − A` when one with `i = j + d − A` is.
            let d = (first % a_rows + a_rows - sf % a_rows) % a_rows;
            let shift = if sm > a_rows {
                sm as i128 - 1 // the store reads rows twice: its last read of any row bounds
            } else if d < sm {
                d as i128
            } else if a_rows - d < rows {
                d as i128 - a_rows as i128
            } else {
                continue; // disjoint
            };
            let need = end.get() as i128 - sm as i128 + shift - fill as i128 + 1;
            t = t.max(need.max(0) as u64);
        }
        Cycle(t)
    }
}

/// An in-flight VPU result: `[lo, hi)` of VMEM is written at `done`.
#[derive(Clone, Copy, Debug)]
pub struct VpuWrite {
    /// First byte.
    pub lo: u64,
    /// One past the last byte.
    pub hi: u64,
    /// Visible from this cycle.
    pub done: Cycle,
}

/// VPU state beyond the queue.
pub struct VpuState {
    /// Next free cycle of each pipeline (main, transcendental, cross-lane).
    pub pipe_free: [Cycle; 3],
    /// Start of the last op (in-order start).
    pub last_start: Cycle,
    /// In-flight writes (scoreboard).
    pub writes: Vec<VpuWrite>,
    /// Elements processed.
    pub elems: StatId,
    /// Floating-point operations.
    pub flops: StatId,
}

/// DMA state beyond the queue.
pub struct DmaState {
    /// Engines in use.
    pub busy_engines: usize,
    /// Bytes copied.
    pub bytes: StatId,
}

/// Host link state of one core (infeed and outfeed streams).
pub struct HostState {
    /// The host's infeed stream for this core (functional) ...
    pub infeed: Vec<u8>,
    /// ... and its length (also in timing-only mode).
    pub infeed_len: u64,
    /// Bytes of the stream consumed by earlier infeeds.
    pub infeed_pos: u64,
    /// Bytes the outfeed sent (functional).
    pub outfeed: Vec<u8>,
    /// Cycle the outbound link is free.
    pub out_free: Cycle,
    /// Infeed bytes.
    pub in_bytes: StatId,
    /// Outfeed bytes.
    pub out_bytes: StatId,
}

/// Sequencer statistics.
pub struct SeqStats {
    /// Instructions issued.
    pub issued: StatId,
    /// Instructions dispatched to units.
    pub dispatched: StatId,
    /// Taken branches.
    pub taken: StatId,
}

/// One core.
pub struct Core {
    /// Index on the chip.
    pub idx: u32,
    /// Scalar registers.
    pub regs: [u64; 32],
    /// Semaphores.
    pub sems: [u32; 32],
    /// Next instruction.
    pub pc: u32,
    /// Why the sequencer waits, if it does, and since when.
    pub blocked: Option<(SeqBlock, Cycle)>,
    /// A sequencer step is scheduled.
    pub seq_pending: bool,
    /// Cycle of the next issue after the last issued instruction.
    pub next_issue: Cycle,
    /// The core halted at this cycle.
    pub halted: Option<Cycle>,
    /// Sequencer time accounting.
    pub seq_tl: Timeline,
    /// Sequencer statistics.
    pub seq_stats: SeqStats,
    /// Dispatched, not completed unit instructions.
    pub outstanding: u64,
    /// Unit queues (see the index constants).
    pub units: Vec<UnitQ>,
    /// MXUs.
    pub mxus: Vec<MxuState>,
    /// VPU.
    pub vpu: VpuState,
    /// DMA.
    pub dma: DmaState,
    /// Host streams.
    pub host: HostState,
    /// Vector memory.
    pub vmem: Memory,
    /// VMEM bandwidth, shared by every unit of the core.
    pub vmem_port: crate::vmem_port::VmemPort,
}
