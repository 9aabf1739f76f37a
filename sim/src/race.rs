//! Race detection: two accesses to overlapping bytes, at least one a write, by different units
//! (or by two DMA copies, which complete in any order), whose lifetimes overlap in the run, are
//! a race: nothing the program did ordered them. A program that orders its units with
//! semaphores or fences never has such a pair, because the consumer starts only after the
//! producer completed.
//!
//! What is checked: every unit instruction's VMEM/HBM bytes (as [`isa::Access`] runs) over
//! `[start, completion)`, against every instruction still in flight, in functional and
//! timing-only runs alike. HBM is shared by the cores of a chip; VMEM is per core. Not checked
//! (documented in docs/timing.md): races whose accesses do not overlap in time in this run
//! (latent races a different timing would expose), the table-indexed source of `vpu.gather`
//! in timing-only runs, DMA descriptors whose outer dimensions expand to more than
//! [`MAX_RUNS`] runs, and ICI transfers. The sequencer's own scalar `s.ld`/`s.st` are
//! checked as instantaneous accesses on a thread of their own ([`Hb::seq_access`]).

use isa::{Access, Space};

/// Largest number of strided runs one DMA operand is expanded into for checking.
pub const MAX_RUNS: u64 = isa::roles::MAX_RUNS;

/// One memory operand of an instruction.
#[derive(Clone, Copy, Debug)]
pub struct Touch {
    /// The bytes.
    pub acc: Access,
    /// Written (else read).
    pub write: bool,
}

/// Touches kept inline (no allocation) in [`Touches`].
const INLINE_TOUCHES: usize = 4;

/// The memory operands of an instruction: a few inline, more shared. Reads as a slice.
#[derive(Clone, Debug)]
pub enum Touches {
    /// Up to [`INLINE_TOUCHES`]: the first `n`.
    Inline(u8, [Touch; INLINE_TOUCHES]),
    /// More.
    Shared(std::sync::Arc<[Touch]>),
}

impl std::ops::Deref for Touches {
    type Target = [Touch];
    fn deref(&self) -> &[Touch] {
        match self {
            Touches::Inline(n, t) => &t[..*n as usize],
            Touches::Shared(t) => t,
        }
    }
}

impl FromIterator<Touch> for Touches {
    fn from_iter<I: IntoIterator<Item = Touch>>(it: I) -> Touches {
        let empty = Touch {
            acc: Access::vmem(0, 0),
            write: false,
        };
        let mut buf = [empty; INLINE_TOUCHES];
        let mut it = it.into_iter();
        let mut n = 0;
        for t in it.by_ref() {
            if n == INLINE_TOUCHES {
                let mut v = buf.to_vec();
                v.push(t);
                v.extend(it);
                return Touches::Shared(v.into());
            }
            buf[n] = t;
            n += 1;
        }
        Touches::Inline(n as u8, buf)
    }
}

impl From<Vec<Touch>> for Touches {
    fn from(v: Vec<Touch>) -> Touches {
        v.into_iter().collect()
    }
}

/// A short name kept inline (a unit's, e.g. `core0.mxu1`; longer ones are cut at a character
/// boundary), so recording an instruction in flight allocates and shares nothing.
#[derive(Clone, Copy)]
pub struct Name {
    len: u8,
    bytes: [u8; 30],
}

impl Name {
    /// `s`, cut to 30 bytes.
    pub fn new(s: &str) -> Name {
        let mut len = s.len().min(30);
        while !s.is_char_boundary(len) {
            len -= 1;
        }
        let mut bytes = [0u8; 30];
        bytes[..len].copy_from_slice(&s.as_bytes()[..len]);
        Name {
            len: len as u8,
            bytes,
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("?")
    }
}

/// The name of the unit of an instruction in flight, formatted only when a report is built:
/// a core's sequencer (`s.ld`/`s.st`, `core{c}.seq`) or a unit's name kept inline.
#[derive(Clone, Copy, Debug)]
pub enum UnitName {
    /// The sequencer of core `c`.
    Seq(u32),
    /// A unit.
    Unit(Name),
}

impl std::fmt::Display for UnitName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnitName::Seq(c) => write!(f, "core{c}.seq"),
            UnitName::Unit(n) => f.write_str(n.as_str()),
        }
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

/// The `unit` of a sequencer's own access (`s.ld`/`s.st`) in [`Live`].
pub const SEQ_UNIT: usize = usize::MAX;

/// An instruction in flight.
#[derive(Clone, Debug)]
pub struct Live {
    /// Core.
    pub core: u32,
    /// Unit index within the core ([`SEQ_UNIT`] for the sequencer's `s.ld`/`s.st`).
    pub unit: usize,
    /// The unit is the DMA queue (its copies are unordered among themselves).
    pub dma: bool,
    /// Unique id (for DMA completion).
    pub id: u64,
    /// Program counter.
    pub pc: u32,
    /// Unit name, e.g. `core0.vpu` (formatted when a report is built).
    pub unit_name: UnitName,
    /// The instruction (rendered as assembly in reports).
    pub inst: isa::Inst,
    /// HLO symbol, if any.
    pub symbol: Option<std::sync::Arc<str>>,
    /// First cycle.
    pub start: u64,
    /// Completion (`u64::MAX` until known).
    pub done: u64,
    /// Its memory operands.
    pub touches: Touches,
}

impl Live {
    fn describe(&self) -> String {
        let sym = self
            .symbol
            .as_deref()
            .map(|s| format!(" (HLO `{s}`)"))
            .unwrap_or_default();
        let done = if self.done == u64::MAX {
            "in flight".to_string()
        } else {
            format!("{}", self.done)
        };
        format!(
            "{} pc {} `{}`{sym}, cycles [{}, {done})",
            self.unit_name, self.pc, self.inst, self.start
        )
    }
}

/// The in-flight instructions of one chip.
#[derive(Default)]
pub struct RaceTracker {
    live: Vec<Live>,
    next: u64,
}

fn space_name(s: Space) -> &'static str {
    match s {
        Space::Hbm => "HBM",
        Space::Vmem => "VMEM",
    }
}

impl RaceTracker {
    /// A fresh id for an instruction.
    pub fn next_id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Forgets instructions completed by `now`.
    pub fn prune(&mut self, now: u64) {
        self.live.retain(|l| l.done > now);
    }

    /// Sets the completion of the instruction with `id` (a DMA copy).
    pub fn set_done(&mut self, id: u64, done: u64) {
        if let Some(l) = self.live.iter_mut().find(|l| l.id == id) {
            l.done = done;
        }
    }

    /// Checks an instantaneous access (a sequencer's `s.ld`/`s.st`) against everything in
    /// flight, without recording it (a command starting in its one cycle that it races with is
    /// reported by the happens-before check, which records it).
    pub fn check(&self, new: &Live) -> Result<(), String> {
        for l in &self.live {
            let ordered = l.core == new.core && l.unit == new.unit;
            if ordered || !(l.start < new.done && new.start < l.done) {
                continue;
            }
            if let Some(m) = conflict(l, new) {
                return Err(m);
            }
        }
        Ok(())
    }

    /// Checks `new` against everything in flight; records it unless it races (then the
    /// description of the race).
    pub fn add(&mut self, new: Live) -> Result<(), String> {
        for l in &self.live {
            let ordered = l.core == new.core && l.unit == new.unit && !new.dma;
            if ordered || !(l.start < new.done && new.start < l.done) {
                continue;
            }
            if let Some(m) = conflict(l, &new) {
                return Err(m);
            }
        }
        self.live.push(new);
        Ok(())
    }
}

pub use isa::roles::dma_side;

/// A vector clock over the threads of one chip (missing trailing entries are 0).
pub type Clock = Vec<u32>;

fn join(a: &mut Clock, b: &Clock) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

fn at(c: &Clock, t: usize) -> u32 {
    c.get(t).copied().unwrap_or(0)
}

/// One access in the happens-before history.
struct Rec {
    live: Live,
    /// Its completion cycle, once known (for reports).
    done: Option<u64>,
    thread: usize,
    epoch: u32,
    /// Bounding box of the touches per space: (VMEM lo, hi), (HBM lo, hi).
    bbox: [(u64, u64); 2],
    /// The same of the written touches only.
    wbox: [(u64, u64); 2],
}

fn boxes_meet(a: &[(u64, u64); 2], b: &[(u64, u64); 2]) -> bool {
    (0..2).any(|i| a[i].0 < b[i].1 && b[i].0 < a[i].1)
}

/// Bounding boxes per space of the touches (`writes`: only the written ones).
fn bbox(t: &[Touch], writes: bool) -> [(u64, u64); 2] {
    let mut b = [(u64::MAX, 0u64); 2];
    for x in t.iter().filter(|x| x.write || !writes) {
        let i = (x.acc.space == Space::Hbm) as usize;
        let end = x.acc.start
            + x.acc.stride.saturating_mul(x.acc.rows.saturating_sub(1))
            + x.acc.row_bytes;
        b[i].0 = b[i].0.min(x.acc.start);
        b[i].1 = b[i].1.max(end);
    }
    b
}

/// Happens-before race detection with vector clocks (as in the FastTrack family of data-race
/// detectors), beside the in-flight check of [`RaceTracker`]: it also catches *latent* races,
/// two conflicting accesses that happen not to overlap in time in this run but that nothing in
/// the program orders.
///
/// Threads: one per (core, unit) for the units that run in program order (MXUs, VPU, infeed,
/// outfeed); one per core's sequencer for its own `s.ld`/`s.st` (instantaneous accesses, its
/// epoch advancing at each, so commands dispatched after one are ordered after it and those
/// dispatched before are not); every DMA copy and ICI transfer, which complete in any order, runs on a thread of
/// its own, taken from a pool and returned once every future command is ordered after it.
///
/// Edges: the sequencer's program order into every command it dispatches (the command starts
/// with the sequencer's clock at dispatch); the program order of an ordered unit's commands; a
/// command's completion to its `signal=` semaphore, and a semaphore to every later `wait=` or
/// `sem.wait` on it (the semaphore's clock is the join of all releases, so a wait is ordered
/// after every signal before it: permissive for counted semaphores, never a false race);
/// `sem.signal` from the sequencer; completions to the sequencer at a `fence`. A command's clock
/// has its own thread's component set to a fresh epoch.
///
/// Limits (docs/timing.md): the history holds the last [`HISTORY`] accesses not yet known to
/// precede every future command; an ordered unit's program order is taken as completion order
/// (the in-flight check covers a VPU op that completes after a later one).
pub struct Hb {
    /// Fixed threads: `cores · units` unit threads, then one sequencer thread per core.
    fixed: usize,
    units: usize,
    /// The first sequencer thread (`cores · units`).
    seq_base: usize,
    seq: Vec<Clock>,
    /// Bit `s`: semaphore `s` is shared by the cores (its clock lives at core 0).
    shared: u32,
    /// Halted cores (their sequencer clocks no longer bound future commands).
    halted: Vec<bool>,
    unit: Vec<Clock>,
    epoch: Vec<u32>,
    /// Pool threads: in use by a copy (or not yet known to be ordered before everything).
    busy: Vec<bool>,
    free: Vec<usize>,
    sems: Vec<Vec<Clock>>,
    done_join: Vec<Clock>,
    /// Dispatch clocks of queued commands, per (core, unit), in queue order.
    queued: Vec<std::collections::VecDeque<Clock>>,
    /// Clocks of started, not completed commands, by race id.
    running: IdMap<Clock>,
    /// The history, oldest first (in race id order: commands enter it as they start).
    history: std::collections::VecDeque<Rec>,
    /// Unions of the history's boxes (all touches, written touches): a new access meeting
    /// neither needs no scan. They only grow between prunings (conservative).
    hist_box: [(u64, u64); 2],
    hist_wbox: [(u64, u64); 2],
    starts: u64,
    /// Clocks no longer in use, whose buffers dispatches reuse.
    spare: Vec<Clock>,
    /// Scratch of `forget_ordered`.
    floor: Vec<u32>,
}

fn union(a: &mut [(u64, u64); 2], b: &[(u64, u64); 2]) {
    for i in 0..2 {
        a[i].0 = a[i].0.min(b[i].0);
        a[i].1 = a[i].1.max(b[i].1);
    }
}

const EMPTY_BOX: [(u64, u64); 2] = [(u64::MAX, 0); 2];

/// Hasher for the tracker's unique u64 ids (a multiplicative mix; ids are not adversarial).
#[derive(Default)]
struct IdHash(u64);

impl std::hash::Hasher for IdHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, b: &[u8]) {
        for &x in b {
            self.0 = (self.0 ^ x as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (x ^ (x >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type IdMap<V> = std::collections::HashMap<u64, V, std::hash::BuildHasherDefault<IdHash>>;

/// Accesses kept for the latent check.
pub const HISTORY: usize = 256;

impl Hb {
    /// A tracker for `cores` cores of `units` units and `sems` semaphores each.
    pub fn new(cores: usize, units: usize, sems: usize) -> Self {
        let n = cores * units;
        Hb {
            fixed: n + cores,
            units,
            seq_base: n,
            seq: vec![Vec::new(); cores],
            shared: 0,
            halted: vec![false; cores],
            unit: vec![Vec::new(); n],
            epoch: vec![0; n + cores],
            busy: vec![false; n + cores],
            free: Vec::new(),
            sems: vec![vec![Vec::new(); sems]; cores],
            done_join: vec![Vec::new(); cores],
            queued: vec![Default::default(); n],
            running: Default::default(),
            history: Default::default(),
            hist_box: EMPTY_BOX,
            hist_wbox: EMPTY_BOX,
            starts: 0,
            spare: Vec::new(),
            floor: Vec::new(),
        }
    }

    /// Declares the chip-shared semaphores (bit `s`).
    pub fn set_shared(&mut self, mask: u32) {
        self.shared = mask;
    }

    /// The core whose clock of semaphore `sem` `core` uses (core 0 for a shared one).
    fn sem_core(&self, core: usize, sem: u8) -> usize {
        if self.shared & (1 << (sem % 32)) != 0 {
            0
        } else {
            core
        }
    }

    /// The semaphore clock `sem` of `core` (core 0's for a shared one).
    fn sem(&mut self, core: usize, sem: u8) -> &mut Clock {
        let c = self.sem_core(core, sem);
        &mut self.sems[c][sem as usize]
    }

    /// The sequencer of `core` dispatched a command to `unit`.
    pub fn dispatch(&mut self, core: usize, unit: usize) {
        let mut c = self.spare.pop().unwrap_or_default();
        c.clone_from(&self.seq[core]);
        self.queued[core * self.units + unit].push_back(c);
    }

    /// The sequencer of `core` passed a `sem.wait` on `sem`.
    pub fn seq_acquire(&mut self, core: usize, sem: u8) {
        let c = self.sem_core(core, sem);
        join(&mut self.seq[core], &self.sems[c][sem as usize]);
    }

    /// The sequencer of `core` signalled `sem`.
    pub fn seq_release(&mut self, core: usize, sem: u8) {
        let c = self.sem_core(core, sem);
        join(&mut self.sems[c][sem as usize], &self.seq[core]);
    }

    /// The sequencer of `core` halted: it dispatches nothing more.
    pub fn halt(&mut self, core: usize) {
        self.halted[core] = true;
        self.forget_ordered();
    }

    /// The sequencer of `core` passed a `fence` (every dispatched command completed).
    pub fn fence(&mut self, core: usize) {
        join(&mut self.seq[core], &self.done_join[core]);
    }

    /// A command completed (its clock goes to its semaphore and to the next fence).
    pub fn complete(&mut self, core: usize, id: u64, signal: Option<u8>, done: u64) {
        let Some(c) = self.running.remove(&id) else {
            return;
        };
        if let Some(s) = signal {
            join(self.sem(core, s), &c);
        }
        join(&mut self.done_join[core], &c);
        // Newest first: a completing command is usually among the last started.
        for r in self.history.iter_mut().rev() {
            if r.live.id <= id {
                if r.live.id == id {
                    r.done = Some(done);
                }
                break;
            }
        }
        self.spare.push(c);
    }

    /// The front end of `live.unit` on `live.core` starts its queued command at `pick`
    /// (waiting on `wait`; `unordered` for DMA copies and ICI transfers); checks its accesses
    /// against the history and records them. `Err` describes a race.
    pub fn start(
        &mut self,
        pick: usize,
        wait: Option<u8>,
        unordered: bool,
        live: &Live,
    ) -> Result<(), String> {
        let core = live.core as usize;
        let q = core * self.units + live.unit;
        let mut vc = self.queued[q]
            .remove(pick)
            .expect("a dispatch clock per queued command");
        let t = if unordered {
            self.free.pop().unwrap_or_else(|| {
                self.epoch.push(0);
                self.busy.push(false);
                self.epoch.len() - 1
            })
        } else {
            join(&mut vc, &self.unit[q]);
            q
        };
        if let Some(s) = wait {
            let c = self.sem_core(core, s);
            join(&mut vc, &self.sems[c][s as usize]);
        }
        self.epoch[t] += 1;
        self.busy[t] = true;
        let epoch = self.epoch[t];
        if vc.len() <= t {
            vc.resize(t + 1, 0);
        }
        vc[t] = epoch;
        if !unordered {
            self.unit[q].clone_from(&vc);
        }
        self.check_and_record(&vc, t, epoch, live, None)?;
        self.running.insert(live.id, vc);
        self.count_access();
        Ok(())
    }

    /// The sequencer of `core` (`live.core`) reads (`s.ld`) or writes (`s.st`) VMEM itself at
    /// `live.start`: an instantaneous access on the sequencer's own thread, whose epoch
    /// advances, checked against the history (a race unless the other access is ordered
    /// before the sequencer's clock: joined through a `sem.wait` or `fence`) and recorded, so
    /// that a command dispatched before it that starts later is checked against it too.
    pub fn seq_access(&mut self, live: &Live) -> Result<(), String> {
        let core = live.core as usize;
        let t = self.seq_base + core;
        self.epoch[t] += 1;
        let epoch = self.epoch[t];
        let mut vc = std::mem::take(&mut self.seq[core]);
        if vc.len() <= t {
            vc.resize(t + 1, 0);
        }
        vc[t] = epoch;
        let r = self.check_and_record(&vc, t, epoch, live, Some(live.done));
        self.seq[core] = vc;
        self.count_access();
        r
    }

    /// Counts an access and now and then forgets what every future access is ordered after.
    #[inline]
    fn count_access(&mut self) {
        self.starts += 1;
        if self.starts.is_multiple_of(64) {
            self.forget_ordered();
        }
    }

    /// Checks the accesses of `live` (clock `vc`, thread `t` at `epoch`) against the history;
    /// records them unless they race (then the description of the race). `done`: its
    /// completion, if already known.
    #[inline(always)]
    fn check_and_record(
        &mut self,
        vc: &Clock,
        t: usize,
        epoch: u32,
        live: &Live,
        done: Option<u64>,
    ) -> Result<(), String> {
        let bb = bbox(&live.touches, false);
        let wb = bbox(&live.touches, true);
        let may_meet = boxes_meet(&wb, &self.hist_box) || boxes_meet(&bb, &self.hist_wbox);
        // Newest first: the nearest unordered access is the most useful to report.
        for r in self.history.iter().rev().filter(|_| may_meet) {
            if r.thread == t || at(vc, r.thread) >= r.epoch {
                continue; // program order of one unit, or ordered by the program
            }
            if !(boxes_meet(&wb, &r.bbox) || boxes_meet(&bb, &r.wbox)) {
                continue; // no write meets the other's bytes
            }
            if let Some(m) = conflict(&r.live, live) {
                let mut first = r.live.clone();
                if let Some(d) = r.done {
                    first.done = d;
                }
                let m = conflict(&first, live).unwrap_or(m);
                return Err(if first.done <= live.start {
                    format!(
                        "{m}\n(a latent race: they did not overlap in time in this run, but \
                         nothing in the program orders them, so another timing would)"
                    )
                } else {
                    m
                });
            }
        }
        if !live.touches.is_empty() {
            union(&mut self.hist_box, &bb);
            union(&mut self.hist_wbox, &wb);
            debug_assert!(self.history.back().is_none_or(|r| r.live.id < live.id));
            self.history.push_back(Rec {
                live: live.clone(),
                done,
                thread: t,
                epoch,
                bbox: bb,
                wbox: wb,
            });
            if self.history.len() > HISTORY {
                self.history.pop_front();
            }
        }
        Ok(())
    }

    /// Drops history entries every future access is ordered after, and returns pool threads
    /// whose copy every future access is ordered after. A future command's clock is at least
    /// the dispatch clock of a queued command or a sequencer's current clock; a sequencer's own
    /// future `s.ld`/`s.st` has at least its current clock (a halted one has none). The
    /// sequencer threads are fixed, never pooled; their records (VMEM of their core) go once
    /// that core's sequencer (unless halted) and queued commands have reached their epoch.
    fn forget_ordered(&mut self) {
        let n = self.epoch.len();
        let mut floor = std::mem::take(&mut self.floor);
        floor.clear();
        floor.resize(n, u32::MAX);
        let live_seqs = self
            .seq
            .iter()
            .zip(&self.halted)
            .filter(|(_, &h)| !h)
            .map(|(c, _)| c);
        for c in live_seqs.chain(self.queued.iter().flatten()) {
            for (t, f) in floor.iter_mut().enumerate() {
                *f = (*f).min(at(c, t));
            }
        }
        // A sequencer's own accesses are VMEM of its core: only that core's future accesses (its
        // sequencer's, its queued commands') can conflict with them.
        for (c, seq) in self.seq.iter().enumerate() {
            let mut f = if self.halted[c] {
                u32::MAX
            } else {
                at(seq, self.seq_base + c)
            };
            for q in self.queued[c * self.units..(c + 1) * self.units]
                .iter()
                .flatten()
            {
                f = f.min(at(q, self.seq_base + c));
            }
            floor[self.seq_base + c] = f;
        }
        self.history.retain(|r| r.epoch > floor[r.thread]);
        self.hist_box = EMPTY_BOX;
        self.hist_wbox = EMPTY_BOX;
        for r in &self.history {
            union(&mut self.hist_box, &r.bbox);
            union(&mut self.hist_wbox, &r.wbox);
        }
        for (t, &f) in floor.iter().enumerate().skip(self.fixed) {
            if self.busy[t] && f >= self.epoch[t] {
                self.busy[t] = false;
                self.free.push(t);
            }
        }
        self.floor = floor;
    }
}

/// The race message if two instructions' accesses conflict (overlapping bytes, a write).
fn conflict(l: &Live, new: &Live) -> Option<String> {
    for a in l.touches.iter() {
        for b in new.touches.iter() {
            if !(a.write || b.write) || a.acc.space != b.acc.space {
                continue;
            }
            if a.acc.space == Space::Vmem && l.core != new.core {
                continue;
            }
            if a.acc.overlaps(&b.acc) {
                let kind = match (a.write, b.write) {
                    (true, true) => "write/write",
                    (true, false) => "write/read",
                    _ => "read/write",
                };
                let lo = a.acc.start.max(b.acc.start);
                return Some(format!(
                    "race ({kind}) on {} bytes near {lo:#x} (first access [{:#x}, +{}) \
                     x{} stride {}, second [{:#x}, +{}) x{} stride {}): nothing orders\n  \
                     {}\n  and\n  {}\n(add a semaphore wait or a fence between them)",
                    space_name(a.acc.space),
                    a.acc.start,
                    a.acc.row_bytes,
                    a.acc.rows,
                    a.acc.stride,
                    b.acc.start,
                    b.acc.row_bytes,
                    b.acc.rows,
                    b.acc.stride,
                    l.describe(),
                    new.describe()
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(unit: usize, dma: bool, start: u64, done: u64, acc: Access, write: bool) -> Live {
        Live {
            core: 0,
            unit,
            dma,
            id: 0,
            pc: 0,
            unit_name: UnitName::Unit(Name::new(&format!("u{unit}"))),
            inst: isa::Inst::Nop {},
            symbol: None,
            start,
            done,
            touches: vec![Touch { acc, write }].into(),
        }
    }

    fn at_core(mut l: Live, core: u32, id: u64) -> Live {
        l.core = core;
        l.id = id;
        l
    }

    /// A sequencer's `s.st` is checked against a command of its core dispatched before it
    /// that starts later (a race), not against one dispatched after it; once nothing of its
    /// core can be unordered with them, its accesses are forgotten although another core's
    /// sequencer never orders after them (they are VMEM of their core).
    #[test]
    fn seq_accesses_are_checked_against_later_starts_and_then_forgotten() {
        let mut h = Hb::new(2, 2, 4);
        h.dispatch(0, 1);
        let st = live(SEQ_UNIT, false, 5, 6, Access::vmem(0, 4), true);
        h.seq_access(&at_core(st, 0, 1)).unwrap();
        h.dispatch(0, 1);
        let mut id = 2;
        let mut loads = |h: &mut Hb, k: u64| {
            for i in 0..k {
                let ld = live(
                    SEQ_UNIT,
                    false,
                    6 + i,
                    7 + i,
                    Access::vmem(64 + 8 * i, 8),
                    false,
                );
                h.seq_access(&at_core(ld, 0, id)).unwrap();
                id += 1;
            }
        };
        loads(&mut h, 10);
        let rd = |id| at_core(live(1, false, 300, 310, Access::vmem(0, 64), false), 0, id);
        let e = h.start(0, None, false, &rd(500)).unwrap_err();
        assert!(e.contains("write/read") && e.contains("latent"), "{e}");
        h.start(0, None, false, &rd(501)).unwrap();
        loads(&mut h, 200);
        assert!(h.history.len() < 64, "{}", h.history.len());
        // Another core's accesses to the same addresses are to its own VMEM.
        h.dispatch(1, 1);
        h.start(0, None, false, &at_core(rd(0), 1, 1000)).unwrap();
    }

    #[test]
    fn overlapping_lifetimes_and_bytes_race_unless_same_ordered_unit() {
        let mut t = RaceTracker::default();
        t.add(live(1, false, 0, 10, Access::vmem(0, 64), true))
            .unwrap();
        // Same unit: ordered by its queue.
        t.add(live(1, false, 5, 12, Access::vmem(0, 64), false))
            .unwrap();
        // Another unit reading while the write is in flight: a race.
        let e = t
            .add(live(2, false, 5, 8, Access::vmem(32, 4), false))
            .unwrap_err();
        assert!(e.contains("write/read") && e.contains("VMEM"), "{e}");
        // After it completed: fine.
        t.prune(12);
        t.add(live(2, false, 12, 20, Access::vmem(0, 64), false))
            .unwrap();
        // Two DMA copies writing the same bytes at once race even on one queue.
        t.add(live(3, true, 30, 40, Access::hbm(0, 8), true))
            .unwrap();
        assert!(t
            .add(live(3, true, 31, 41, Access::hbm(4, 8), true))
            .is_err());
    }
}
