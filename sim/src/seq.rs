//! The sequencer: fetches and issues one instruction per step, in program order. Scalar,
//! branch and sync instructions execute here; unit instructions have their register operands
//! read ("operands are read at dispatch") and go to their unit's queue.
//!
//! Costs (cycles the sequencer is busy): scalar `scalar_latency`; `s.ld`/`s.st`
//! `scalar_mem_latency`; branch `scalar_latency` + `branch_penalty` if taken; `sem.*`/`fence`
//! the wait, then `scalar_latency`; a dispatch 1 cycle; `halt` ends the core when every issued
//! instruction has completed (the core's cycle count is that cycle).

use crate::account::Kind;
use crate::chip::{Chip, Env, Ev};
use crate::core::*;
use crate::cycle::Cycle;
use crate::engine::Priority;
use crate::error::SimError;
use crate::units::{resolve, unit_of};
use isa::{Csr, DType, Inst, SReg};

/// Instructions one sequencer event may issue inline.
pub const INLINE_STEPS: usize = 256;

impl Chip {
    fn exec_err(&self, env: &Env<'_>, c: usize, pc: u32, msg: impl Into<String>) -> SimError {
        let inst = env
            .prog
            .code()
            .get(pc as usize)
            .map(|i| i.to_string())
            .unwrap_or_default();
        SimError::Exec {
            chip: self.idx,
            core: c as u32,
            pc,
            inst,
            msg: msg.into(),
        }
    }

    /// One sequencer step of core `c` at `now`.
    ///
    /// Consecutive instructions run inline (without an event each) while no other event of
    /// this chip comes before the next one's cycle: the same order as one event per
    /// instruction, fewer queue operations. At most [`INLINE_STEPS`] per event, so a run limit
    /// is still checked.
    pub fn seq_step(&mut self, env: &mut Env<'_>, now: Cycle, c: usize) -> Result<(), SimError> {
        self.cores[c].seq_pending = false;
        let mut t = now;
        for _ in 0..INLINE_STEPS {
            match self.seq_one(env, t, c)? {
                None => return Ok(()),
                Some(next) => {
                    // Stop before another event of this chip and before anything outside it
                    // may happen (`horizon`: the end of the window `sim::system` runs this
                    // chip in, before which no transfer can arrive).
                    if self.q.peek_key().is_some_and(|k| k.time <= next) || next >= env.horizon {
                        break;
                    }
                    t = next;
                    self.q.advance_to(t);
                }
            }
        }
        let core = &mut self.cores[c];
        core.seq_pending = true;
        let next = core.next_issue;
        self.q.schedule(next, Priority::Issue, Ev::Seq(c as u16));
        Ok(())
    }

    /// The error for a core that jumps to its own pc: it can never halt (no progress), so the
    /// run stops now instead of at `max_cycles`.
    fn spin(&self, c: usize, pc: u32, inst: &isa::Inst) -> SimError {
        SimError::Timeout(crate::error::TimeoutReport {
            limit: 0,
            reason: format!(
                "no progress: chip {} core {c} pc {pc} `{inst}` jumps to itself and can never \
                 halt",
                self.idx
            ),
            units: crate::error::DeadlockReport {
                cycle: 0,
                waits: Vec::new(),
            },
        })
    }

    /// The error for a core that jumps to `target`, from which no path reaches a `halt`.
    fn no_halt(&self, c: usize, pc: u32, inst: &isa::Inst, target: u32) -> SimError {
        SimError::Timeout(crate::error::TimeoutReport {
            limit: 0,
            reason: format!(
                "no progress: chip {} core {c} pc {pc} `{inst}` goes to pc {target}, from which \
                 no path reaches a halt: the core can never halt",
                self.idx
            ),
            units: crate::error::DeadlockReport {
                cycle: 0,
                waits: Vec::new(),
            },
        })
    }

    /// Issues (or blocks on) the instruction at the pc at cycle `now`: `Some(next issue cycle)`
    /// if it issued, `None` if the sequencer blocked or halted.
    fn seq_one(
        &mut self,
        env: &mut Env<'_>,
        now: Cycle,
        c: usize,
    ) -> Result<Option<Cycle>, SimError> {
        if self.cores[c].halted.is_some() {
            return Ok(None);
        }
        let pc = self.cores[c].pc;
        let Some(&inst) = env.prog.code().get(pc as usize) else {
            return Err(self.exec_err(
                env,
                c,
                pc,
                "ran past the last instruction (every path must end in halt)",
            ));
        };
        let p = env.p;
        let lat = p.scalar_latency;
        // `Some(cost)`: issued, busy `cost` cycles, next pc set; `None`: blocked on `blk`.
        let mut next_pc = pc + 1;
        let outcome: Result<u64, SeqBlock> = match inst {
            Inst::Nop {} => Ok(lat),
            Inst::Halt {} => {
                if self.cores[c].outstanding == 0 {
                    self.end_block(env, c, now);
                    let core = &mut self.cores[c];
                    core.halted = Some(now);
                    env.stats.add(core.seq_stats.issued, 1);
                    if let Some(h) = &mut self.hb {
                        h.halt(c);
                    }
                    core.seq_tl.flush_until(env.stats, now.get());
                    self.halted += 1;
                    return Ok(None);
                }
                Err(SeqBlock::Halt)
            }
            Inst::Fence {} => {
                if self.cores[c].outstanding == 0 {
                    if let Some(h) = &mut self.hb {
                        h.fence(c);
                    }
                    Ok(lat)
                } else {
                    Err(SeqBlock::Fence)
                }
            }
            Inst::SemSignal { sem, n } => {
                if let Some(h) = &mut self.hb {
                    h.seq_release(c, sem.0);
                }
                self.signal(c, sem.0, n, now)
                    .map_err(|m| self.exec_err(env, c, pc, m))?;
                Ok(lat)
            }
            Inst::SemWait { sem, n } => {
                let v = self.sem_mut(c, sem.0);
                if *v >= n {
                    *v -= n;
                    if let Some(h) = &mut self.hb {
                        h.seq_acquire(c, sem.0);
                    }
                    Ok(lat)
                } else {
                    Err(SeqBlock::Sem(sem.0, n))
                }
            }
            Inst::Jmp { target } => {
                if target.0 == pc {
                    return Err(self.spin(c, pc, &inst));
                }
                if !env.prog.can_end_from(target.0) {
                    return Err(self.no_halt(c, pc, &inst, target.0));
                }
                next_pc = target.0;
                env.stats.add(self.cores[c].seq_stats.taken, 1);
                Ok(lat + p.branch_penalty)
            }
            Inst::Beq { ra, rb, target }
            | Inst::Bne { ra, rb, target }
            | Inst::Blt { ra, rb, target }
            | Inst::Bge { ra, rb, target } => {
                let (a, b) = (self.reg(c, ra) as i64, self.reg(c, rb) as i64);
                let taken = match inst {
                    Inst::Beq { .. } => a == b,
                    Inst::Bne { .. } => a != b,
                    Inst::Blt { .. } => a < b,
                    _ => a >= b,
                };
                if taken {
                    if target.0 == pc {
                        // Nothing in the loop changes ra or rb: taken forever.
                        return Err(self.spin(c, pc, &inst));
                    }
                    if !env.prog.can_end_from(target.0) {
                        return Err(self.no_halt(c, pc, &inst, target.0));
                    }
                    next_pc = target.0;
                    env.stats.add(self.cores[c].seq_stats.taken, 1);
                    Ok(lat + p.branch_penalty)
                } else {
                    Ok(lat)
                }
            }
            Inst::SLd { rd, addr, t } => {
                let a = self.vaddr(env, c, pc, addr.base, addr.off as i64)?;
                let mut buf = [0u8; 8];
                let n = t.bytes() as usize;
                self.cores[c]
                    .vmem
                    .read(a, &mut buf[..n])
                    .map_err(|e| self.exec_err(env, c, pc, e.to_string()))?;
                self.seq_access_race(env, now, c, pc, inst, a, n as u64, false)?;
                let raw = u64::from_le_bytes(buf);
                let v = if t.is_signed_int() {
                    let sh = 64 - 8 * n as u32;
                    (((raw << sh) as i64) >> sh) as u64
                } else if t == DType::Pred {
                    (raw != 0) as u64
                } else {
                    raw
                };
                self.set_reg(c, rd, v);
                Ok(p.scalar_mem_latency)
            }
            Inst::SSt { rs, addr, t } => {
                let a = self.vaddr(env, c, pc, addr.base, addr.off as i64)?;
                let v = self.reg(c, rs).to_le_bytes();
                let n = t.bytes() as usize;
                self.cores[c]
                    .vmem
                    .write(a, &v[..n])
                    .map_err(|e| self.exec_err(env, c, pc, e.to_string()))?;
                self.seq_access_race(env, now, c, pc, inst, a, n as u64, true)?;
                Ok(p.scalar_mem_latency)
            }
            Inst::SCsr { rd, csr } => {
                let v = match csr {
                    Csr::ReplicaId => self.idx as u64,
                    Csr::NumReplicas => env.replicas as u64,
                    Csr::CoreId => c as u64,
                    Csr::NumCores => self.cores.len() as u64,
                    Csr::ChipX | Csr::ChipY | Csr::ChipZ => {
                        let k = match csr {
                            Csr::ChipX => 0,
                            Csr::ChipY => 1,
                            _ => 2,
                        };
                        let xs = crate::ici::Topo::coords_in(&env.p.ici_dims, self.idx);
                        xs.get(k).copied().unwrap_or(0) as u64
                    }
                };
                self.set_reg(c, rd, v);
                Ok(lat)
            }
            i if i.unit() == isa::Unit::Seq => {
                let v = self
                    .scalar(c, &i)
                    .map_err(|m| self.exec_err(env, c, pc, m))?;
                if let Some((rd, v)) = v {
                    self.set_reg(c, rd, v);
                }
                Ok(lat)
            }
            _ => {
                // A unit instruction: dispatch.
                let u = unit_of(&inst, env.p).map_err(|m| self.exec_err(env, c, pc, m))?;
                if self.cores[c].units[u].q.len() >= p.queue_depth {
                    Err(SeqBlock::Queue(u))
                } else {
                    let a = resolve(&self.cores[c].regs, &inst)
                        .map_err(|m| self.exec_err(env, c, pc, m))?;
                    let core = &mut self.cores[c];
                    core.units[u].q.push_back(Cmd {
                        inst,
                        a,
                        pc,
                        dispatched: now,
                    });
                    core.outstanding += 1;
                    env.stats.add(core.seq_stats.dispatched, 1);
                    if let Some(h) = &mut self.hb {
                        h.dispatch(c, u);
                    }
                    if !self.cores[c].units[u].kick_pending {
                        // What a kick event at `now` would do, without the event.
                        self.unit_step(env, now, c, u)?;
                    }
                    Ok(1)
                }
            }
        };
        match outcome {
            Ok(cost) => {
                self.end_block(env, c, now);
                self.seq_trace(env, c, pc, inst.mnemonic(), now.get(), now.get() + cost);
                let core = &mut self.cores[c];
                core.pc = next_pc;
                env.stats.add(core.seq_stats.issued, 1);
                core.seq_tl.add(Kind::Busy, now.get(), now.get() + cost);
                core.seq_tl.flush_until(env.stats, now.get());
                core.next_issue = now + cost;
                Ok(Some(now + cost))
            }
            Err(blk) => {
                let core = &mut self.cores[c];
                if core.blocked.is_none() {
                    core.blocked = Some((blk, now));
                }
                Ok(None)
            }
        }
    }

    /// The race check of the sequencer's own VMEM access at `now` (`s.ld`: a read, `s.st`: a
    /// write of `n` bytes at `addr`): against the happens-before history and the instructions
    /// in flight, as a unit command's accesses are when it starts (`race.rs`).
    #[allow(clippy::too_many_arguments)]
    #[cold]
    #[inline(never)]
    fn seq_access_race(
        &mut self,
        env: &Env<'_>,
        now: Cycle,
        c: usize,
        pc: u32,
        inst: Inst,
        addr: u64,
        n: u64,
        write: bool,
    ) -> Result<(), SimError> {
        let Some(races) = &mut self.races else {
            return Ok(());
        };
        races.prune(now.get());
        let live = crate::race::Live {
            core: c as u32,
            unit: crate::race::SEQ_UNIT,
            dma: false,
            id: races.next_id(),
            pc,
            unit_name: crate::race::UnitName::Seq(c as u32),
            inst,
            symbol: env.prog.symbol_arc(pc),
            start: now.get(),
            done: now.get() + 1,
            touches: std::iter::once(crate::race::Touch {
                acc: isa::Access::vmem(addr, n),
                write,
            })
            .collect(),
        };
        // The history holds every access the in-flight check would find, so a race found
        // there is reported once; the in-flight check covers what the history dropped.
        if let Some(Err(msg)) = self.hb.as_mut().map(|h| h.seq_access(&live)) {
            self.race(msg)?;
        } else if let Some(Err(msg)) = self.races.as_ref().map(|r| r.check(&live)) {
            self.race(msg)?;
        }
        Ok(())
    }

    /// Records the stall of a block that ends at `now`.
    fn end_block(&mut self, env: &mut Env<'_>, c: usize, now: Cycle) {
        let core = &mut self.cores[c];
        if let Some((blk, since)) = core.blocked.take() {
            let (r, name) = match blk {
                SeqBlock::Sem(..) => (S_SEM, "blocked: semaphore"),
                SeqBlock::Fence => (S_FENCE, "blocked: fence"),
                SeqBlock::Queue(_) => (S_QUEUE, "blocked: queue full"),
                SeqBlock::Halt => (S_HALT, "blocked: halt"),
            };
            core.seq_tl.add(Kind::Stall(r), since.get(), now.get());
            core.seq_tl.flush_until(env.stats, now.get());
            let pc = core.pc;
            if since < now {
                self.seq_trace(env, c, pc, name, since.get(), now.get());
            }
        }
    }

    /// A slice on core `c`'s sequencer track (`coreN.seq`): an issued instruction or a block.
    fn seq_trace(&self, env: &mut Env<'_>, c: usize, pc: u32, name: &str, start: u64, end: u64) {
        if let Some(t) = env.trace.as_deref_mut() {
            let unit = format!("core{c}.seq");
            t.event(&crate::trace::TraceEvent {
                chip: self.idx,
                unit: &unit,
                name,
                symbol: env.prog.symbol(pc),
                pc: Some(pc),
                start,
                end,
                hbm_bytes: 0,
                vmem_bytes: 0,
            });
        }
    }

    #[inline]
    fn reg(&self, c: usize, r: SReg) -> u64 {
        self.cores[c].regs[r.0 as usize]
    }

    #[inline]
    fn set_reg(&mut self, c: usize, r: SReg, v: u64) {
        if r.0 != 0 {
            self.cores[c].regs[r.0 as usize] = v;
        }
    }

    fn vaddr(
        &self,
        env: &Env<'_>,
        c: usize,
        pc: u32,
        base: SReg,
        off: i64,
    ) -> Result<u64, SimError> {
        let a = (self.reg(c, base) as i64).wrapping_add(off);
        u64::try_from(a).map_err(|_| self.exec_err(env, c, pc, format!("negative address {a}")))
    }

    /// Scalar ALU instructions: `Some((rd, value))`.
    fn scalar(&self, c: usize, inst: &Inst) -> Result<Option<(SReg, u64)>, String> {
        let r = |x: SReg| self.reg(c, x);
        let shift_imm = |imm: u32| -> Result<u32, String> {
            if imm < 64 {
                Ok(imm)
            } else {
                Err(format!("shift amount {imm} is not below 64"))
            }
        };
        let v = match *inst {
            Inst::SLi { rd, imm } => (rd, imm as u64),
            Inst::SAdd { rd, ra, rb } => (rd, r(ra).wrapping_add(r(rb))),
            Inst::SSub { rd, ra, rb } => (rd, r(ra).wrapping_sub(r(rb))),
            Inst::SMul { rd, ra, rb } => (rd, r(ra).wrapping_mul(r(rb))),
            Inst::SDiv { rd, ra, rb } => {
                let (a, b) = (r(ra) as i64, r(rb) as i64);
                (
                    rd,
                    if b == 0 {
                        u64::MAX
                    } else {
                        a.wrapping_div(b) as u64
                    },
                )
            }
            Inst::SRem { rd, ra, rb } => {
                let (a, b) = (r(ra) as i64, r(rb) as i64);
                (
                    rd,
                    if b == 0 {
                        a as u64
                    } else {
                        a.wrapping_rem(b) as u64
                    },
                )
            }
            Inst::SAnd { rd, ra, rb } => (rd, r(ra) & r(rb)),
            Inst::SOr { rd, ra, rb } => (rd, r(ra) | r(rb)),
            Inst::SXor { rd, ra, rb } => (rd, r(ra) ^ r(rb)),
            Inst::SShl { rd, ra, rb } => (rd, if r(rb) >= 64 { 0 } else { r(ra) << r(rb) }),
            Inst::SShr { rd, ra, rb } => (rd, if r(rb) >= 64 { 0 } else { r(ra) >> r(rb) }),
            Inst::SSra { rd, ra, rb } => {
                let a = r(ra) as i64;
                (
                    rd,
                    if r(rb) >= 64 {
                        (a >> 63) as u64
                    } else {
                        (a >> r(rb)) as u64
                    },
                )
            }
            Inst::SMin { rd, ra, rb } => (rd, (r(ra) as i64).min(r(rb) as i64) as u64),
            Inst::SMax { rd, ra, rb } => (rd, (r(ra) as i64).max(r(rb) as i64) as u64),
            Inst::SSlt { rd, ra, rb } => (rd, ((r(ra) as i64) < (r(rb) as i64)) as u64),
            Inst::SSltu { rd, ra, rb } => (rd, (r(ra) < r(rb)) as u64),
            Inst::SAddi { rd, ra, imm } => (rd, r(ra).wrapping_add(imm as u64)),
            Inst::SMuli { rd, ra, imm } => (rd, r(ra).wrapping_mul(imm as u64)),
            Inst::SAndi { rd, ra, imm } => (rd, r(ra) & imm as u64),
            Inst::SShli { rd, ra, imm } => (rd, r(ra) << shift_imm(imm)?),
            Inst::SShri { rd, ra, imm } => (rd, r(ra) >> shift_imm(imm)?),
            Inst::SSrai { rd, ra, imm } => (rd, ((r(ra) as i64) >> shift_imm(imm)?) as u64),
            Inst::SSlti { rd, ra, imm } => (rd, ((r(ra) as i64) < imm) as u64),
            _ => {
                return Err(format!(
                    "not supported yet: sequencer instruction `{}`",
                    inst.mnemonic()
                ))
            }
        };
        Ok(Some(v))
    }
}
