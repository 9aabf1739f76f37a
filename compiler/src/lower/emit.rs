//! The emitter: appends instructions to an [`isa::Builder`] and keeps the program correct by
//! construction.
//!
//! **Synchronization.** Every unit instruction is emitted with the memory it reads and writes
//! ([`Access`]). The emitter keeps the unit instructions not yet known to be complete
//! (`pending`). A new instruction that conflicts with a pending one (overlapping bytes, at least
//! one a write: RAW, WAR, WAW) on another queue — or on the DMA queue, whose copies complete out
//! of order — is ordered after it: the pending instruction gets a `signal=semK` (patched into it
//! after the fact) and the sequencer waits `sem.wait semK` before issuing the new one. After the
//! wait the producer is complete, so semK is 0 again and free for reuse; a semaphore is only
//! given to a producer issued after the semaphore's last wait, so one signal always meets
//! exactly one wait. Several pending producers a new instruction conflicts with share one
//! semaphore and one `sem.wait semK, n=k` (fan-in). Of the free semaphores a producer gets the
//! one waited most recently before it was issued (best fit), keeping those free since earlier
//! for producers issued earlier; unit-side waits (below) choose by the same policy. Instructions of one MXU or of the VPU are ordered by their
//! queue (the ISA guarantees each sees the effects of the earlier ones) and need nothing. If
//! no semaphore is free, a `fence` orders everything.
//!
//! The pool is semaphores 0..28 (20..=27 may carry a fan-in count); 28 and 29 ([`JOIN_SEMS`])
//! are chip-shared for the fork and join of a dot streamed on both cores, 30 and 31
//! ([`FANOUT_SEMS`]) the asynchronous collectives' fan-out semaphores. A block that outlives the instructions emitted after it
//! (an asynchronous collective in flight) holds its semaphores ([`Emitter::hold`]) until it
//! gives them back: not handed out, and not freed by a `fence`.
//!
//! **Unit-side waits.** With [`Emitter::unit_waits`] on, a new DMA copy whose conflicts are at
//! most [`MAX_FAN_IN`] pending producers waits for them itself instead of the sequencer: each
//! producer gets `signal=semK` and the new instruction `wait=semK` (with `k` producers, a
//! semaphore of `COUNTED` declared `.sem semK wait=k`; a semaphore keeps the count it was
//! first used with, since counts are the program's), so the sequencer goes on issuing and only
//! the copy waits (the DMA front end lets unrelated copies pass a waiting one). The copy's
//! pending entry takes over the producers' accesses (it completes after them), and semK is
//! free again once the copy is known complete. Only copies wait on their unit: an MXU or VPU
//! instruction waiting at its queue's head would hold back that unit, and a later reader of
//! the same data, ordered behind the covering copy, would chain the units one after another.
//! A streamed dot turns it on: its slot reloads (after the matmuls read the slot) and result
//! copies (after the `mxu.st`s) no longer stop the sequencer.
//!
//! **Deferred ICI commands.** An asynchronous collective whose commands are more than the ICI
//! queue holds leaves some of them as groups of sequencer and ICI instructions
//! ([`Emitter::deferred`], collected by [`Emitter::begin_capture`]: they use only the
//! collectives' scratch registers `s28..s31` and reload what they need). The lowering of a
//! `dot` right after it sets [`Emitter::interleave`]: one group goes out after every
//! [`INTERLEAVE_MXU`] MXU instructions, so the sequencer issues the dot instead of stalling on
//! the full ICI queue first; anything else emits them all first
//! ([`Emitter::flush_deferred`]), so they keep their place before every later ICI command.
//!
//! **Addresses.** VMEM operands are `[sB+OFF]` with a 16-bit offset: the emitter caches base
//! values in `s1..s27` and loads a new base with `s.li` only when no cached one is in range.
//! Operands are read at dispatch, so a register may be reloaded right after its last use.

use crate::error::{CResult, CompileError};
use isa::{AccAddr, MemRef, SReg, Sem, Space, VAddr};
use isa::{Builder, Inst};

/// One queue of a core: instructions of one queue start in program order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queue {
    /// The DMA engines (copies may complete out of order).
    Dma,
    /// MXU `i`.
    Mxu(u8),
    /// The VPU.
    Vpu,
    /// The infeed queue (host → VMEM, in stream order).
    Infeed,
    /// The outfeed queue (VMEM → host, in stream order).
    Outfeed,
}

pub use isa::Access;

struct Pending {
    pc: u32,
    queue: Queue,
    reads: Vec<Access>,
    writes: Vec<Access>,
    sem: Option<u8>,
    /// Semaphores (bit per semaphore) free once this instruction is known complete: the one
    /// it waits on (`wait=`), and those of the waiting instructions it covers.
    holds: u32,
}

/// The ISA's semaphores.
const SEMS: usize = 32;
/// Semaphores the emitter hands to producers: all but the last four. Asynchronous collectives
/// declare the last two with a fan-out count (`.sem semN signal=2`, see
/// [`crate::lower::collective`]), and the two before them are shared by the chip's cores for
/// the fork and join of a dot streamed on both cores where it stands ([`JOIN_SEMS`]); so none
/// of them carries the emitter's one-to-one signals.
const POOL: usize = SEMS - 4;
/// The fan-out semaphores of asynchronous collectives (never in the emitter's pool).
pub const FANOUT_SEMS: [u8; 2] = [30, 31];
/// Chip-shared semaphores (`.sem semN shared`): core 0 signals the first `n = cores − 1` when
/// the other cores may start their shares of a streamed dot; each signals the second when its
/// share is written (never in the emitter's pool).
pub const JOIN_SEMS: [u8; 2] = [28, 29];
/// First and last scalar register used for address bases.
const REG_LO: u8 = 1;
const REG_HI: u8 = 27;
/// Semaphores the emitter may declare with a fan-in count (`.sem semK wait=k`, `k > 1`):
/// above those the streamed all-reduce reserves (0..=12, `reserve` checks), below the fan-out
/// pair; never held by an asynchronous collective ([`Emitter::hold`] takes none of them).
const COUNTED: std::ops::RangeInclusive<u8> = 20..=27;
/// MXU instructions between two deferred groups of an asynchronous collective's ICI commands
/// ([`Emitter::deferred`]). Measured on the 8-chip ring next to a `[2048,1024]×[1024,1024]`
/// dot (docs/ici.md): 2 → 26561 cycles, 4 → 25539, 8 → 24224 (the run with a queue deep
/// enough never to stall), 16 and 32 → 24226, 64 → 24254; fewer MXU instructions between
/// groups fill the ICI queue again before the MXU queues hold work.
pub const INTERLEAVE_MXU: u32 = 8;
/// Most producers one unit-side wait covers.
pub const MAX_FAN_IN: usize = 8;
/// Pending instructions kept per queue before the oldest is retired with a wait.
const MAX_PENDING_PER_QUEUE: usize = 64;

/// See the module docs.
pub struct Emitter {
    /// The program being built.
    pub b: Builder,
    pending: Vec<Pending>,
    /// Per semaphore: `None` while a producer holds it, else the pc it became free at.
    sem_free: [Option<u32>; SEMS],
    /// Semaphores held by a block that outlives fences (an asynchronous collective in flight):
    /// bit per semaphore; never handed out, not freed by a `fence`.
    held: u32,
    regs: [Option<u64>; 32],
    victim: u8,
    /// Registers an operand of the instruction being built already uses (bit per register):
    /// never evicted for its other operands, or the earlier operand would move.
    locked: u32,
    /// Counters for the compile report.
    pub stats: EmitStats,
    /// Let unit instructions wait for their producers themselves (module docs).
    pub unit_waits: bool,
    /// Per semaphore: the `wait=` count declared for it (0: none, i.e. 1).
    wait_count: [u32; SEMS],
    /// Groups of sequencer and ICI instructions an asynchronous collective left to be
    /// emitted later, in order, with the HLO instruction they belong to
    /// ([`Self::flush_deferred`]).
    pub deferred: std::collections::VecDeque<(String, Vec<Inst>)>,
    /// While non-zero: one deferred group goes out after every `interleave` MXU instructions.
    pub interleave: u32,
    interleaved: u32,
    /// While set, [`Self::seq`] appends here instead of emitting.
    capture: Option<Vec<Inst>>,
}

/// What the emitter added to keep the program correct.
#[derive(Clone, Copy, Debug, Default)]
pub struct EmitStats {
    /// `sem.wait` instructions emitted for cross-unit dependencies.
    pub waits: u64,
    /// Dependencies a unit instruction waits for itself (`wait=`, no sequencer wait).
    pub unit_waits: u64,
    /// `fence` instructions emitted.
    pub fences: u64,
    /// `s.li` instructions emitted for address bases.
    pub base_loads: u64,
}

impl Default for Emitter {
    fn default() -> Self {
        Self::new()
    }
}

impl Emitter {
    /// An empty program.
    pub fn new() -> Emitter {
        let mut regs = [None; 32];
        regs[0] = Some(0);
        Emitter {
            b: Builder::new(),
            pending: Vec::new(),
            sem_free: [Some(0); SEMS],
            held: 0,
            regs,
            victim: REG_LO,
            locked: 0,
            stats: EmitStats::default(),
            unit_waits: false,
            wait_count: [0; SEMS],
            deferred: Default::default(),
            interleave: 0,
            interleaved: 0,
            capture: None,
        }
    }

    /// Forgets everything about the running core: the code that follows runs on another core
    /// (its own semaphores, all 0; its registers unknown; nothing of it pending).
    pub fn reset_core_state(&mut self) {
        self.pending.clear();
        self.sem_free = [Some(0); SEMS];
        self.held = 0;
        self.regs = [None; 32];
        self.regs[0] = Some(0);
        self.locked = 0;
    }

    /// Emits a sequencer instruction (no memory effects the emitter tracks).
    pub fn seq(&mut self, i: Inst) -> u32 {
        self.locked = 0;
        if let Some(c) = &mut self.capture {
            c.push(i);
            return u32::MAX;
        }
        self.b.emit(i)
    }

    /// From now on [`Self::seq`] collects its instructions instead of emitting them.
    pub fn begin_capture(&mut self) {
        self.capture = Some(Vec::new());
    }

    /// Ends [`Self::begin_capture`]; the deferred group of HLO instruction `hlo` (its
    /// instructions use only the collectives' scratch registers).
    pub fn end_capture(&mut self, hlo: &str) {
        if let Some(c) = self.capture.take() {
            self.deferred.push_back((hlo.to_string(), c));
        }
    }

    /// Emits the first deferred group, attributed to its HLO instruction.
    fn emit_deferred(&mut self) {
        let Some((hlo, insts)) = self.deferred.pop_front() else {
            return;
        };
        let cur = self.b.current_hlo().map(str::to_string);
        self.b.begin_hlo(&hlo);
        for i in insts {
            self.b.emit(i);
        }
        match cur {
            Some(c) => self.b.begin_hlo(&c),
            None => self.b.end_hlo(),
        }
    }

    /// Emits every deferred group and stops interleaving.
    pub fn flush_deferred(&mut self) {
        while !self.deferred.is_empty() {
            self.emit_deferred();
        }
        self.interleave = 0;
        self.interleaved = 0;
    }

    /// Emits a unit instruction on `queue` that reads `reads` and writes `writes`, after
    /// ordering it behind every pending instruction it conflicts with.
    pub fn unit(&mut self, mut i: Inst, queue: Queue, reads: &[Access], writes: &[Access]) -> u32 {
        let conflicts = |p: &Pending| {
            let ordered = p.queue == queue && queue != Queue::Dma;
            !ordered
                && (p
                    .writes
                    .iter()
                    .any(|w| reads.iter().chain(writes).any(|x| x.overlaps(w)))
                    || p.reads.iter().any(|r| writes.iter().any(|x| x.overlaps(r))))
        };
        let mut taken = None;
        if self.unit_waits && queue == Queue::Dma {
            taken = self.wait_on_unit(&mut i, &conflicts);
        }
        let (mut own_reads, mut own_writes) = (reads.to_vec(), writes.to_vec());
        let holds = match taken {
            Some((s, covered)) => {
                let mut holds = 1u32 << s;
                for p in covered {
                    own_reads.extend(p.reads);
                    own_writes.extend(p.writes);
                    holds |= p.holds;
                }
                holds
            }
            None => {
                let ks: Vec<usize> = (0..self.pending.len())
                    .filter(|&k| conflicts(&self.pending[k]))
                    .collect();
                self.sync_all(&ks);
                0
            }
        };
        // Retire the oldest pending instruction of this queue past the cap (it is long done by
        // now, so the wait costs an issue slot, not a stall): keeps the conflict scan short.
        if self.pending.iter().filter(|p| p.queue == queue).count() >= MAX_PENDING_PER_QUEUE {
            if let Some(k) = self.pending.iter().position(|p| p.queue == queue) {
                self.sync(k);
            }
        }
        let pc = self.b.emit(i);
        self.locked = 0;
        self.pending.push(Pending {
            pc,
            queue,
            reads: own_reads,
            writes: own_writes,
            sem: None,
            holds,
        });
        if self.interleave > 0 && matches!(queue, Queue::Mxu(_)) && !self.deferred.is_empty() {
            self.interleaved += 1;
            if self.interleaved >= self.interleave {
                self.interleaved = 0;
                self.emit_deferred();
            }
        }
        pc
    }

    /// Makes `i` wait for the pending producers it conflicts with itself (module docs):
    /// returns the semaphore and the producers' entries (removed from `pending`), or `None`
    /// (nothing changed) when there are none, too many, or no semaphore fits.
    fn wait_on_unit(
        &mut self,
        i: &mut Inst,
        conflicts: &dyn Fn(&Pending) -> bool,
    ) -> Option<(u8, Vec<Pending>)> {
        let ks: Vec<usize> = (0..self.pending.len())
            .filter(|&k| conflicts(&self.pending[k]))
            .collect();
        if ks.is_empty() || ks.len() > MAX_FAN_IN || i.sync().0.is_some() {
            return None;
        }
        let n = ks.len() as u32;
        let first = ks.iter().map(|&k| self.pending[k].pc).min()?;
        // The sequencer's policy (best fit), among the semaphores whose count fits.
        let s = self.free_sem_where(first, |s| {
            let count = self.wait_count[s];
            self.held & (1 << s) == 0
                && (count == n || count == 0 && (n == 1) != COUNTED.contains(&(s as u8)))
        })?;
        let sem = Some(Sem(s as u8));
        for &k in &ks {
            let pc = self.pending[k].pc;
            let ok = self
                .b
                .inst_mut(pc)
                .map(|p| p.set_sync("signal", sem))
                .unwrap_or(false);
            if !ok {
                // Cannot happen for unit instructions: undo and let the sequencer wait.
                for &k2 in &ks {
                    if let Some(p) = self.b.inst_mut(self.pending[k2].pc) {
                        p.set_sync("signal", None);
                    }
                }
                return None;
            }
        }
        i.set_sync("wait", sem);
        // Counts are the program's: a semaphore keeps the count it was first used with.
        self.wait_count[s] = n;
        self.sem_free[s] = None;
        self.stats.unit_waits += 1;
        let mut covered = Vec::with_capacity(ks.len());
        for &k in ks.iter().rev() {
            covered.push(self.pending.remove(k));
        }
        Some((s as u8, covered))
    }

    /// Waits (on the sequencer) until the pending instructions `ks` (ascending) have
    /// completed: one semaphore that each of them signals and one `sem.wait semK, n=k` for all
    /// (fan-in; `n=1` for one), or a fence if no semaphore is free for the oldest. Returns true
    /// if that took a fence (every pending instruction is then complete).
    fn sync_all(&mut self, ks: &[usize]) -> bool {
        let Some(pc) = ks.iter().map(|&k| self.pending[k].pc).min() else {
            return false;
        };
        let Some(s) = self.free_sem(pc) else {
            self.fence();
            return true;
        };
        let mut n = 0;
        let mut held = 0u32;
        for &k in ks.iter().rev() {
            let p = self.pending.remove(k);
            debug_assert!(p.sem.is_none());
            held |= p.holds;
            let patched = self
                .b
                .inst_mut(p.pc)
                .map(|i| i.set_sync("signal", Some(Sem(s as u8))))
                .unwrap_or(false);
            if !patched {
                // Cannot happen for unit instructions; stay correct anyway: consume the
                // signals given so far, then order everything.
                if n > 0 {
                    self.b.emit(Inst::SemWait {
                        sem: Sem(s as u8),
                        n,
                    });
                }
                self.fence();
                return true;
            }
            n += 1;
        }
        let at = self.b.emit(Inst::SemWait {
            sem: Sem(s as u8),
            n,
        });
        self.sem_free[s] = Some(at);
        for h in 0..SEMS {
            if held & (1 << h) != 0 {
                // An instruction among them (or one it covers) waited on `h` before it
                // completed.
                self.sem_free[h] = Some(at);
            }
        }
        self.stats.waits += 1;
        false
    }

    /// The pool semaphore to give a producer issued at `pc` (free since before it), if any.
    fn free_sem(&self, pc: u32) -> Option<usize> {
        self.free_sem_where(pc, |_| true)
    }

    /// The one policy for handing out a pool semaphore, for the sequencer's waits and the
    /// unit-side ones: of those free since before `pc` that `ok` accepts, best fit (the one
    /// waited most recently before the producer was issued, so those free since earlier stay
    /// for producers issued earlier; the lowest number among equals).
    fn free_sem_where(&self, pc: u32, ok: impl Fn(usize) -> bool) -> Option<usize> {
        self.sem_free[..POOL]
            .iter()
            .enumerate()
            .filter(|&(s, _)| ok(s))
            .filter_map(|(s, f)| f.filter(|&at| at <= pc).map(|at| (at, s)))
            .max_by_key(|&(at, s)| (at, std::cmp::Reverse(s)))
            .map(|(_, s)| s)
    }

    /// Waits (on the sequencer) until pending instruction `k` has completed ([`Self::sync_all`]
    /// of one); returns true if that took a fence.
    fn sync(&mut self, k: usize) -> bool {
        self.sync_all(&[k])
    }

    /// Waits for every issued instruction. Afterwards every semaphore is 0 (each signal the
    /// emitter attached has its wait before this point), so all are free again.
    pub fn fence(&mut self) {
        self.b.emit(Inst::Fence {});
        self.pending.clear();
        self.sem_free = [Some(0); SEMS];
        for s in 0..SEMS {
            if self.held & (1 << s) != 0 {
                self.sem_free[s] = None;
            }
        }
        self.stats.fences += 1;
    }

    /// Takes `n` semaphores of the pool that no producer holds (each is 0: its last signal met
    /// its wait) and keeps them from the pool, across fences, until [`Self::give_back`]: for a
    /// block that signals and waits them itself while other work is emitted (an asynchronous
    /// collective). `None` if fewer than `n` are free.
    pub fn hold(&mut self, n: usize) -> Option<Vec<u8>> {
        // The most recently waited first: a semaphore free since an early pc is the only kind
        // that can order a producer issued that early, so those stay in the pool.
        let mut free: Vec<(u32, u8)> = (0..POOL)
            .filter(|&s| self.wait_count[s] <= 1 && !COUNTED.contains(&(s as u8)))
            .filter_map(|s| self.sem_free[s].map(|at| (at, s as u8)))
            .collect();
        free.sort_by_key(|&(at, s)| (std::cmp::Reverse(at), s));
        let free: Vec<u8> = free.into_iter().take(n).map(|(_, s)| s).collect();
        if free.len() < n {
            return None;
        }
        for &s in &free {
            self.sem_free[s as usize] = None;
            self.held |= 1 << s;
            // Its `wait=` takes 1 for good (counts are the program's).
            self.wait_count[s as usize] = 1;
        }
        Some(free)
    }

    /// [`Self::hold`] of one counted semaphore per entry of `counts` (of [`COUNTED`], each
    /// declared `.sem semK wait=k` for good, as the emitter's own fan-in waits do): for a
    /// unit-side wait of an asynchronous collective on `k` of its own commands. One already
    /// declared with that count first. `None` (nothing held) if too few are free.
    pub fn hold_counted(&mut self, counts: &[u32]) -> Option<Vec<u8>> {
        let mut got: Vec<u8> = Vec::new();
        for &k in counts {
            let free = |e: &Self, s: u8, want: u32| {
                e.held & (1 << s) == 0
                    && e.sem_free[s as usize].is_some()
                    && e.wait_count[s as usize] == want
                    && !got.contains(&s)
            };
            let s = COUNTED
                .clone()
                .find(|&s| free(self, s, k))
                .or_else(|| COUNTED.clone().find(|&s| free(self, s, 0)));
            match s {
                Some(s) => got.push(s),
                None => return None,
            }
        }
        for (&s, &k) in got.iter().zip(counts) {
            self.sem_free[s as usize] = None;
            self.held |= 1 << s;
            self.wait_count[s as usize] = k;
        }
        Some(got)
    }

    /// Marks semaphores of the fan-out set held (see [`Self::hold`]); they are outside the pool.
    pub fn hold_fanout(&mut self) {
        for s in FANOUT_SEMS {
            self.held |= 1 << s;
            self.sem_free[s as usize] = None;
        }
    }

    /// Whether the fan-out semaphores are held by a block in flight.
    pub fn fanout_held(&self) -> bool {
        FANOUT_SEMS.iter().any(|&s| self.held & (1 << s) != 0)
    }

    /// Returns held semaphores (each waited down to 0 by the block) to the pool, free since the
    /// current pc (their last wait).
    pub fn give_back(&mut self, sems: &[u8]) {
        let at = self.b.pc();
        for &s in sems {
            self.held &= !(1 << s);
            self.sem_free[s as usize] = Some(at);
        }
    }

    /// Keeps semaphores `sems` from being handed to producers until the next `fence`: a block
    /// that signals and waits them itself (a collective) while tracked instructions are still
    /// pending. Call right after a `fence` (none of them is held then).
    pub fn reserve(&mut self, sems: std::ops::RangeInclusive<u8>) {
        // Their unit-side `wait=` takes 1: none may carry a fan-in count.
        assert!(
            sems.end() < COUNTED.start(),
            "reserved semaphores overlap the counted range"
        );
        for s in sems {
            debug_assert!(self.pending.iter().all(|p| p.sem != Some(s)));
            debug_assert!(self.held & (1 << s) == 0);
            self.sem_free[s as usize] = None;
        }
    }

    /// Orders a sequencer read of `acc` (`s.ld`) after every pending write to it.
    pub fn seq_read(&mut self, acc: Access) {
        while let Some(k) = self
            .pending
            .iter()
            .position(|p| p.writes.iter().any(|w| w.overlaps(&acc)))
        {
            if self.sync(k) {
                break;
            }
        }
    }

    /// Orders a sequencer write of `acc` (`s.st`) after every pending read or write of it.
    pub fn seq_write(&mut self, acc: Access) {
        while let Some(k) = self
            .pending
            .iter()
            .position(|p| p.writes.iter().chain(&p.reads).any(|w| w.overlaps(&acc)))
        {
            if self.sync(k) {
                break;
            }
        }
    }

    /// At a label several paths join: the base registers' values are unknown there. Call
    /// after binding the label (and with nothing pending: a `fence` first).
    pub fn join(&mut self) {
        debug_assert!(self.pending.is_empty());
        self.regs = [None; 32];
        self.regs[0] = Some(0);
        self.locked = 0;
    }

    /// A register holding a value within `range` below `addr` (loading one if needed).
    fn base_for(&mut self, addr: u64, window: u64) -> (SReg, i64) {
        if addr < window {
            return (SReg(0), addr as i64);
        }
        for r in REG_LO..=REG_HI {
            if let Some(v) = self.regs[r as usize] {
                if addr >= v && addr - v < window {
                    self.locked |= 1 << r;
                    return (SReg(r), (addr - v) as i64);
                }
            }
        }
        // The next victim round-robin that no operand of this instruction uses.
        if (REG_LO..=REG_HI).all(|r| self.locked & (1 << r) != 0) {
            self.locked = 0;
        }
        let mut r = self.victim;
        while self.locked & (1 << r) != 0 {
            r = if r == REG_HI { REG_LO } else { r + 1 };
        }
        self.victim = if r == REG_HI { REG_LO } else { r + 1 };
        self.locked |= 1 << r;
        let base = addr - addr % window;
        self.b.emit(Inst::SLi {
            rd: SReg(r),
            imm: base as i64,
        });
        self.regs[r as usize] = Some(base);
        self.stats.base_loads += 1;
        (SReg(r), (addr - base) as i64)
    }

    /// A VMEM operand for byte address `addr`.
    pub fn vaddr(&mut self, addr: u64) -> VAddr {
        let (base, off) = self.base_for(addr, 1 << 15);
        VAddr {
            base,
            off: off as i32,
        }
    }

    /// An accumulator row operand.
    pub fn accaddr(&mut self, row: u64) -> AccAddr {
        let (base, off) = self.base_for(row, 1 << 15);
        AccAddr {
            base,
            off: off as i32,
        }
    }

    /// A memory reference for `addr` in `space`.
    pub fn memref(&mut self, space: Space, addr: u64) -> MemRef {
        let (base, off) = self.base_for(addr, 1 << 31);
        MemRef { space, base, off }
    }

    /// Finishes the program: `halt` (which waits for every unit) and validation.
    pub fn finish(mut self) -> CResult<isa::Program> {
        self.b.end_hlo();
        self.b.emit(Inst::Halt {});
        for (s, &w) in self.wait_count.iter().enumerate() {
            if w > 1 {
                self.b.declare_sem(isa::SemDecl {
                    wait: w,
                    ..isa::SemDecl::plain(s as u8)
                });
            }
        }
        self.b
            .finish()
            .map_err(|e| CompileError::Internal(format!("emitted program is invalid: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(e: &mut Emitter, mxu: u8, addr: u64) -> u32 {
        let dst = e.vaddr(addr);
        let acc = e.accaddr(0);
        e.unit(
            Inst::MxuSt {
                dst,
                acc,
                mxu: mxu as u32,
                m: 1,
                n: 16,
                stride: 64,
                wait: None,
                signal: None,
            },
            Queue::Mxu(mxu),
            &[],
            &[Access::vmem(addr, 64)],
        )
    }

    /// With unit-side waits, a copy of what two MXUs stored waits for both itself: both stores
    /// signal one semaphore declared `wait=2` (of the counted range), the copy waits on it, the
    /// sequencer does not wait; a later store over the copied bytes waits (on the sequencer)
    /// for the copy, which also frees the counted semaphore.
    #[test]
    fn a_copy_waits_for_its_producers_in_its_queue_with_one_counted_semaphore() {
        let mut e = Emitter::new();
        e.unit_waits = true;
        let s0 = st(&mut e, 0, 0);
        let s1 = st(&mut e, 1, 64);
        let src = e.memref(Space::Vmem, 0);
        let dst = e.memref(Space::Hbm, 4096);
        let desc = e.b.dma_desc(isa::DmaDesc {
            len: 128,
            dims: vec![],
        });
        let copy = e.unit(
            Inst::DmaCopy {
                dst,
                src,
                desc,
                wait: None,
                signal: None,
            },
            Queue::Dma,
            &[Access::vmem(0, 128)],
            &[Access::hbm(4096, 128)],
        );
        assert_eq!(e.stats.waits, 0, "no sequencer wait");
        assert_eq!(e.stats.unit_waits, 1);
        let sync = |e: &mut Emitter, pc: u32| e.b.inst_mut(pc).unwrap().sync();
        let (w, _) = sync(&mut e, copy);
        let k = w.expect("the copy waits").0;
        assert!(COUNTED.contains(&k), "two producers: a counted semaphore");
        assert_eq!(sync(&mut e, s0).1, Some(Sem(k)));
        assert_eq!(sync(&mut e, s1).1, Some(Sem(k)));
        assert_eq!(
            e.sem_free[k as usize], None,
            "held until the copy is known complete"
        );
        // A store over the copied bytes (WAR against the copy, which took over the stores'
        // writes): the sequencer waits for the copy.
        st(&mut e, 0, 0);
        assert_eq!(e.stats.waits, 1);
        assert!(
            e.sem_free[k as usize].is_some(),
            "free again after the copy's wait"
        );
        let p = e.finish().unwrap();
        let decl = p.sem_decl(k);
        assert_eq!((decl.wait, decl.signal, decl.shared), (2, 1, false));
    }

    /// A unit-side wait hands out its semaphore by the sequencer's policy (best fit): with
    /// semaphore 0 free since an earlier sequencer wait than semaphore 1, a copy whose producer
    /// was issued after both gets the one `free_sem` gives a sequencer wait for that producer,
    /// not the lowest free number (first fit).
    #[test]
    fn a_unit_side_wait_picks_its_semaphore_like_the_sequencer() {
        let mut e = Emitter::new();
        st(&mut e, 0, 0);
        st(&mut e, 1, 64);
        // Overwriting each store's bytes from another MXU: two sequencer waits, in order.
        st(&mut e, 2, 0);
        let p = st(&mut e, 3, 64);
        assert_eq!(e.stats.waits, 2);
        let want = e.free_sem(p).expect("a semaphore is free for the producer");
        let first_fit = (0..POOL).find(|&s| matches!(e.sem_free[s], Some(at) if at <= p));
        assert_ne!(
            Some(want),
            first_fit,
            "test design: the policies differ here"
        );
        e.unit_waits = true;
        let copy = e.unit(dma(4096, 0), Queue::Dma, &[Access::vmem(64, 64)], &[]);
        let (w, _) = e.b.inst_mut(copy).unwrap().sync();
        assert_eq!(w, Some(Sem(want as u8)), "the copy waits itself, best fit");
        assert_eq!(e.b.inst_mut(p).unwrap().sync().1, Some(Sem(want as u8)));
    }

    fn dma(dst: u64, src: u64) -> Inst {
        Inst::DmaCopy {
            dst: MemRef {
                space: Space::Vmem,
                base: SReg(0),
                off: dst as i64,
            },
            src: MemRef {
                space: Space::Hbm,
                base: SReg(0),
                off: src as i64,
            },
            desc: 0,
            wait: None,
            signal: None,
        }
    }

    #[test]
    fn producers_one_instruction_waits_for_share_one_counted_wait() {
        let mut e = Emitter::new();
        let (a, b) = (Access::vmem(0, 64), Access::vmem(64, 64));
        let p0 = e.unit(dma(0, 0), Queue::Dma, &[], &[a]);
        let p1 = e.unit(dma(64, 64), Queue::Dma, &[], &[b]);
        e.unit(dma(128, 128), Queue::Dma, &[a, b], &[Access::vmem(128, 64)]);
        let mut sig = |pc: u32| e.b.inst_mut(pc).and_then(|i| i.sync().1);
        let s = sig(p0).expect("the first producer signals");
        assert_eq!(sig(p1), Some(s), "both producers signal one semaphore");
        let waits: Vec<Inst> = (0..e.b.pc())
            .filter_map(|pc| e.b.inst_mut(pc).copied())
            .filter(|i| matches!(i, Inst::SemWait { .. }))
            .collect();
        assert_eq!(waits, vec![Inst::SemWait { sem: s, n: 2 }]);
    }

    #[test]
    fn a_held_counted_semaphore_keeps_its_count_and_is_not_handed_out_while_held() {
        let mut e = Emitter::new();
        let got = e.hold_counted(&[8, 4]).expect("counted semaphores free");
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|s| COUNTED.contains(s)), "{got:?}");
        assert_eq!(e.wait_count[got[0] as usize], 8);
        assert_eq!(e.wait_count[got[1] as usize], 4);
        // Neither is held twice, nor taken by `hold`.
        let more = e.hold_counted(&[8]).expect("another");
        assert!(!got.contains(&more[0]), "{more:?}");
        let plain = e.hold(4).expect("pool semaphores");
        assert!(plain.iter().all(|s| !COUNTED.contains(s)), "{plain:?}");
        // Given back, one with the count is preferred; the count is declared at the end.
        e.give_back(&got);
        let again = e.hold_counted(&[8]).expect("again");
        assert_eq!(again, vec![got[0]]);
        e.give_back(&again);
        e.give_back(&more);
        e.give_back(&plain);
        let prog = e.finish().expect("valid");
        assert!(prog.sems.iter().any(|d| d.sem == got[0] && d.wait == 8));
    }

    #[test]
    fn held_semaphores_survive_a_fence_and_are_never_handed_out() {
        let mut e = Emitter::new();
        // Every pool semaphore hold may take (the counted ones are never held) but one.
        let held = e.hold(POOL - COUNTED.len() - 1).expect("free semaphores");
        assert!(held.iter().all(|s| !COUNTED.contains(s)), "{held:?}");
        e.fence();
        let a = Access::vmem(0, 64);
        let p = e.unit(dma(0, 0), Queue::Dma, &[], &[a]);
        e.unit(dma(64, 64), Queue::Dma, &[a], &[Access::vmem(64, 64)]);
        let s = e.b.inst_mut(p).and_then(|i| i.sync().1).expect("a signal");
        assert!(
            !held.contains(&s.0) && !FANOUT_SEMS.contains(&s.0) && !JOIN_SEMS.contains(&s.0),
            "{s:?}"
        );
        e.give_back(&held);
    }

    #[test]
    fn a_later_operand_never_evicts_an_earlier_operands_base_register() {
        let mut e = Emitter::new();
        // Every cache register holds a base; the round-robin victim is s1 again.
        for k in 1..=u64::from(REG_HI) {
            let a = e.vaddr(k << 15);
            assert_eq!(a.base, SReg(k as u8));
            e.seq(Inst::Nop {});
        }
        // The first operand uses s1; the second needs a new base: not in s1 (that would move
        // the first operand to the second's base).
        let a = e.vaddr((1 << 15) + 8);
        let b = e.vaddr(100 << 15);
        assert_eq!(a.base, SReg(1));
        assert_ne!(a.base, b.base);
        // After the instruction, s1 may be reused.
        e.seq(Inst::Nop {});
        let c = e.vaddr(200 << 15);
        assert_ne!(c.base, b.base);
    }
}
