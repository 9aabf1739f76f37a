//! Unit front ends: each unit starts its queue head in order once its `wait=` semaphore is
//! available and the unit can take it, computes when it starts, is busy and completes, applies
//! its functional effect, and schedules its completion. MXU, VPU, infeed and outfeed timing is
//! known when the command starts; a DMA's completion depends on link sharing (see `dma.rs`).
//!
//! Functional effects happen when the front end starts a command (reads and writes at once, in
//! each unit's program order); completion (the `signal=` semaphore) comes at the cycle the
//! results are visible. Programs order units with semaphores; races a program left unordered
//! are reported (`race.rs`).
//!
//! VMEM bandwidth: every command that reads or writes VMEM books its bytes on the core's
//! [`VmemPort`](crate::vmem_port::VmemPort) from its start; when the grants take longer than the
//! unit's own rate would, the difference is a `vmem` stall before the unit's work (the MXU and
//! VPU then run their usual formulas from the later cycle).

use crate::account::Kind;
use crate::chip::{Chip, Env, Ev, MxuRecord, MxuRecordOp};
use crate::core::*;
use crate::cycle::Cycle;
use crate::engine::Priority;
use crate::error::SimError;
use crate::mxu::Operand;
use crate::params::Params;
use arch::MxuDtype;
use isa::{Inst, Space};

/// The unit index (within a core) that executes a unit instruction.
pub fn unit_of(inst: &Inst, p: &Params) -> Result<usize, String> {
    Ok(match *inst {
        Inst::DmaCopy { .. } | Inst::DmaGather { .. } | Inst::DmaScatter { .. } => DMA,
        Inst::Infeed { .. } => INFEED,
        Inst::Outfeed { .. } => OUTFEED,
        Inst::MxuLdw { mxu, .. } | Inst::MxuMatmul { mxu, .. } | Inst::MxuSt { mxu, .. } => {
            if mxu as usize >= p.mxus {
                return Err(format!(
                    "MXU {mxu} does not exist (the core has {})",
                    p.mxus
                ));
            }
            MXU0 + mxu as usize
        }
        Inst::IciSend { .. } | Inst::IciRecv { .. } | Inst::IciModel { .. } => MXU0 + p.mxus,
        _ if inst.unit() == isa::Unit::Vpu => VPU,
        _ => return Err(format!("`{}` is not a unit instruction", inst.mnemonic())),
    })
}

/// Reads the register operands of a unit instruction at dispatch: one value per positional
/// operand in the table's order (memory operands' addresses, accumulator rows, registers'
/// values), as `isa::Inst::resolve` derives it from the table.
pub fn resolve(regs: &[u64; 32], inst: &Inst) -> Result<[u64; 4], String> {
    inst.resolve(regs)
}

/// A command's derived accesses (`isa::Inst::accesses`) and what their consumers read from
/// them: the VPU's shape, the VMEM port booking and the race check.
#[derive(Clone, Debug)]
pub(crate) struct Derived {
    /// One per declared use, in the row's order.
    pub touched: isa::UseList<isa::roles::Touched>,
    /// The VMEM bytes the instruction moves (the sum over its VMEM operands): what it books
    /// on the core's VMEM port.
    pub vmem_moved: u64,
}

impl Derived {
    fn new(touched: isa::UseList<isa::roles::Touched>) -> Derived {
        let vmem_moved = touched
            .iter()
            .filter(|t| t.use_.space == Space::Vmem)
            .map(|t| t.moved)
            .sum();
        Derived {
            touched,
            vmem_moved,
        }
    }

    /// The race check's view: every run, with whether it is written (built only when races
    /// are tracked).
    pub fn touches(&self) -> crate::race::Touches {
        self.touched
            .iter()
            .flat_map(|t| {
                let write = t.use_.role.writes();
                t.runs
                    .iter()
                    .map(move |&acc| crate::race::Touch { acc, write })
            })
            .collect()
    }
}

/// [`Chip::derived_cache`](crate::chip::Chip): by pc, the operand values and derived accesses
/// of the last command there whose accesses depend on nothing else. A slot is overwritten in
/// place (its box reused), so a loop whose operands change allocates nothing per command.
pub(crate) type DerivedCache = Vec<Option<([u64; 4], Box<Derived>)>>;

/// Derives `cmd`'s accesses into `cache` (the front end, before the unit starts it) unless
/// the slot of its pc already holds them for these operand values, or they depend on memory
/// contents (a gathered operand: derived by each consumer, [`derived`]).
pub(crate) fn cache_derived(cache: &mut DerivedCache, cmd: &Cmd, ctx: &Ctx<'_>) {
    let pc = cmd.pc as usize;
    if let Some(Some((a, _))) = cache.get(pc) {
        if *a == cmd.a {
            return;
        }
    }
    let v = cmd.inst.accesses(&cmd.a, ctx);
    if !v.iter().all(|t| t.hull.is_some()) {
        return;
    }
    if cache.len() <= pc {
        cache.resize_with(pc + 1, || None);
    }
    match &mut cache[pc] {
        Some((a, d)) => {
            *a = cmd.a;
            **d = Derived::new(v);
        }
        slot => *slot = Some((cmd.a, Box::new(Derived::new(v)))),
    }
}

/// `cmd`'s derived accesses (`isa::Inst::accesses` in `ctx`): from the chip's cache
/// (`ctx.cache`, filled by [`cache_derived`] when the front end takes the command), else (a
/// data-dependent one) derived in the caller's `ctx` (the race check reads the functional
/// VMEM's index tables).
pub(crate) fn derived<'c>(cmd: &Cmd, ctx: &Ctx<'c>) -> std::borrow::Cow<'c, Derived> {
    if let Some(Some((a, d))) = ctx.cache.get(cmd.pc as usize) {
        if *a == cmd.a {
            return std::borrow::Cow::Borrowed(d);
        }
    }
    std::borrow::Cow::Owned(Derived::new(cmd.inst.accesses(&cmd.a, ctx)))
}

/// What the derived accesses need beyond the instruction: the program's descriptors and
/// patterns, and (functional runs) the contents of an index table in this core's VMEM.
pub(crate) struct Ctx<'a> {
    pub prog: &'a isa::Program,
    pub vmem: Option<&'a crate::memory::Memory>,
    /// The chip's cache of derived accesses.
    pub cache: &'a [Option<([u64; 4], Box<Derived>)>],
}

impl isa::AccessCtx for Ctx<'_> {
    fn dma_desc(&self, d: u32) -> Option<&isa::DmaDesc> {
        self.prog.dma.get(d as usize)
    }
    fn pattern(&self, p: u32) -> Option<&isa::Pattern> {
        self.prog.pats.get(p as usize)
    }
    fn indices(&self, table: u64, n: u64) -> Option<Vec<u64>> {
        // One read of the table, not one per element.
        let t = self.vmem?.read_vec(table, 4 * n).ok()?;
        Some(
            t.chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64)
                .collect(),
        )
    }
}

/// When a started command runs: stall until `start`, busy `[start, busy_end)`, results visible
/// (completion) at `done`, and the next command may start from `front_free`.
pub struct Started {
    /// First cycle of work.
    pub start: Cycle,
    /// Of the cycles from `start` on, how many the command waited for VMEM bandwidth before
    /// its own work began (`[start, start + vmem_stall)` is a `vmem` stall, not busy).
    pub vmem_stall: u64,
    /// End of the busy interval (exclusive).
    pub busy_end: Cycle,
    /// Completion, or `None` if a later event completes it (DMA).
    pub done: Option<Cycle>,
    /// Earliest start of the next command.
    pub front_free: Cycle,
}

impl Chip {
    pub(crate) fn cmd_err(
        &self,
        _env: &Env<'_>,
        c: usize,
        cmd: &Cmd,
        msg: impl Into<String>,
    ) -> SimError {
        SimError::Exec {
            chip: self.idx,
            core: c as u32,
            pc: cmd.pc,
            inst: cmd.inst.to_string(),
            msg: msg.into(),
        }
    }

    /// The front end of unit `u` of core `c` starts as many queued commands as it can.
    pub fn unit_step(
        &mut self,
        env: &mut Env<'_>,
        now: Cycle,
        c: usize,
        u: usize,
    ) -> Result<(), SimError> {
        self.cores[c].units[u].kick_pending = false;
        loop {
            let unit = &self.cores[c].units[u];
            let Some(cmd) = unit.q.front() else { break };
            let (head_inst, head_pc) = (cmd.inst, cmd.pc);
            if unit.stuck.is_some() {
                break;
            }
            if unit.front_free > now {
                let at = unit.front_free;
                self.kick(c, u, at);
                break;
            }
            // Can the unit take it at all?
            if u == DMA && self.cores[c].dma.busy_engines >= env.p.dma_engines {
                break; // a DMA completion kicks again
            }
            if u == INFEED {
                if let Inst::Infeed { len, .. } = head_inst {
                    let h = &self.cores[c].host;
                    if h.infeed_pos + len as u64 > h.infeed_len {
                        self.cores[c].units[u].stuck = Some(format!(
                            "infeed at pc {} needs stream bytes [{}, {}) but the host pushes only {} bytes",
                            head_pc,
                            h.infeed_pos,
                            h.infeed_pos + len as u64,
                            h.infeed_len
                        ));
                        break;
                    }
                }
            }
            // Which queued command starts: the head, or for the DMA the oldest of the first
            // `dma.queues` whose semaphore is available (a blocked copy does not hold back the
            // copies behind it).
            let window = if u == DMA { env.p.dma_queues } else { 1 };
            let mut mask = 0u32;
            let pick =
                self.cores[c].units[u]
                    .q
                    .iter()
                    .take(window)
                    .position(|k| match k.inst.sync().0 {
                        Some(s) if self.sem(c, s.0) < self.sem_wait_n[s.0 as usize] => {
                            mask |= 1 << (s.0 % 32);
                            false
                        }
                        _ => true,
                    });
            let Some(pick) = pick else {
                let head_wait = head_inst.sync().0.expect("a blocked head waits");
                let unit = &mut self.cores[c].units[u];
                unit.blocked_sem = Some(head_wait.0);
                unit.blocked_mask = mask;
                break;
            };
            let picked = self.cores[c].units[u].q[pick].inst;
            self.cores[c].units[u].blocked_mask = 0;
            let (wait, signal) = picked.sync();
            let mut waited = false;
            if let Some(s) = wait {
                *self.sem_mut(c, s.0) -= self.sem_wait_n[s.0 as usize];
                if pick == 0 {
                    waited = self.cores[c].units[u].blocked_sem.take().is_some();
                }
            }
            let cmd = self.cores[c].units[u]
                .q
                .remove(pick)
                .expect("the picked command is queued");
            if matches!(self.cores[c].blocked, Some((SeqBlock::Queue(x), _)) if x == u) {
                self.schedule_seq(c, now);
            }
            self.cores[c].vmem_port.prune(now.get());
            let race_id = match &mut self.races {
                Some(r) => {
                    r.prune(now.get());
                    r.next_id()
                }
                None => 0,
            };
            self.next_dma_race_id = race_id;
            {
                let ctx = Ctx {
                    prog: &env.prog.program,
                    vmem: None,
                    cache: &[],
                };
                cache_derived(&mut self.derived_cache, &cmd, &ctx);
            }
            // VMEM bytes this command books on the core's port (trace counters).
            let granted = self.cores[c].vmem_port.granted();
            let st = match u {
                DMA => self.start_dma(env, now, c, &cmd, signal.map(|s| s.0))?,
                VPU => self.start_vpu(env, now, c, &cmd)?,
                INFEED => self.start_infeed(env, now, c, &cmd)?,
                OUTFEED => self.start_outfeed(env, now, c, &cmd)?,
                _ if u == MXU0 + env.p.mxus => {
                    self.start_ici(env, now, c, &cmd, signal.map(|s| s.0), race_id)?
                }
                _ => self.start_mxu(env, now, c, u - MXU0, &cmd)?,
            };
            if self.races.is_some() {
                let touches = {
                    let ctx = Ctx {
                        prog: &env.prog.program,
                        vmem: env.functional.then_some(&self.cores[c].vmem),
                        cache: &self.derived_cache,
                    };
                    derived(&cmd, &ctx).touches()
                };
                let live = crate::race::Live {
                    core: c as u32,
                    unit: u,
                    dma: u == DMA || u == MXU0 + env.p.mxus,
                    id: race_id,
                    pc: cmd.pc,
                    unit_name: crate::race::UnitName::Unit(crate::race::Name::new(
                        &self.cores[c].units[u].name,
                    )),
                    inst: cmd.inst,
                    symbol: env.prog.symbol_arc(cmd.pc),
                    start: st.start.get(),
                    done: st
                        .done
                        .map_or(u64::MAX, |d| d.get().max(st.start.get() + 1)),
                    touches,
                };
                if let Some(Err(msg)) = self
                    .hb
                    .as_mut()
                    .map(|h| h.start(pick, wait.map(|s| s.0), live.dma, &live))
                {
                    self.race(msg)?;
                }
                if !live.touches.is_empty() {
                    if let Some(Err(msg)) = self.races.as_mut().map(|r| r.add(live)) {
                        self.race(msg)?;
                    }
                }
            }
            let unit = &mut self.cores[c].units[u];
            env.stats.add(unit.ops, 1);
            unit.inflight += 1;
            let r = if waited { R_SEM } else { R_DEP };
            unit.tl.add(Kind::Stall(r), cmd.dispatched.get(), now.get());
            unit.tl.add(Kind::Stall(R_DEP), now.get(), st.start.get());
            let work = st.start + st.vmem_stall;
            unit.tl.add(Kind::Stall(R_VMEM), st.start.get(), work.get());
            unit.front_free = st.front_free;
            if let Some(done) = st.done {
                unit.tl.add(Kind::Busy, work.get(), st.busy_end.get());
                self.q.schedule(
                    done,
                    Priority::Complete,
                    Ev::Done {
                        core: c as u16,
                        unit: u as u16,
                        signal: signal.map(|s| s.0),
                        id: race_id,
                    },
                );
                let vmem_bytes = self.cores[c].vmem_port.granted() - granted;
                self.trace(
                    env,
                    c,
                    u,
                    cmd.pc,
                    &cmd.inst,
                    (st.start, done),
                    (0, vmem_bytes),
                );
            }
        }
        let unit = &mut self.cores[c].units[u];
        let h = unit.horizon(now);
        unit.tl.flush_until(env.stats, h);
        Ok(())
    }

    /// The VMEM bytes an instruction moves (the sum over its VMEM operands' derived
    /// accesses): what it books on the core's VMEM port.
    pub(crate) fn moved(&self, env: &Env<'_>, cmd: &Cmd) -> u64 {
        let ctx = Ctx {
            prog: &env.prog.program,
            vmem: None,
            cache: &self.derived_cache,
        };
        derived(cmd, &ctx).vmem_moved
    }

    #[allow(clippy::too_many_arguments)]
    fn read_vmem(
        &self,
        env: &Env<'_>,
        c: usize,
        cmd: &Cmd,
        addr: u64,
        rows: u64,
        cols_bytes: u64,
        stride: u64,
        lay: Option<&isa::Layout>,
    ) -> Result<Vec<u8>, SimError> {
        let mut out = vec![0u8; (rows * cols_bytes) as usize];
        for r in 0..rows {
            let off = lay.map_or(r * stride, |l| l.offset(r));
            let a = addr
                .checked_add(off)
                .ok_or_else(|| self.cmd_err(env, c, cmd, "address overflow"))?;
            self.cores[c]
                .vmem
                .read(
                    a,
                    &mut out[(r * cols_bytes) as usize..((r + 1) * cols_bytes) as usize],
                )
                .map_err(|e| self.cmd_err(env, c, cmd, e.to_string()))?;
        }
        Ok(out)
    }

    fn start_mxu(
        &mut self,
        env: &mut Env<'_>,
        now: Cycle,
        c: usize,
        i: usize,
        cmd: &Cmd,
    ) -> Result<Started, SimError> {
        let p = env.p;
        let (r, cols) = (p.mxu_rows as u64, p.mxu_cols as u64);
        let check_mode = |m: MxuDtype| -> Result<(), String> {
            if p.mxu_dtypes.contains(&m) {
                Ok(())
            } else {
                Err(format!(
                    "MXU mode {} is not one of this chip's mxu.dtypes",
                    m.name()
                ))
            }
        };
        match cmd.inst {
            Inst::MxuLdw {
                k,
                n,
                stride,
                mode,
                tr,
                ..
            } => {
                check_mode(mode).map_err(|m| self.cmd_err(env, c, cmd, m))?;
                let bytes =
                    if env.functional && k >= 1 && n >= 1 && k as u64 <= r && n as u64 <= cols {
                        // A transposed load reads n rows of k elements (W^T) and hands the
                        // array W's k rows of n: address generation only.
                        let (rows, rc) = if tr.0 { (n, k) } else { (k, n) };
                        let s = mode.bytes() as usize;
                        let b = self.read_vmem(
                            env,
                            c,
                            cmd,
                            cmd.a[0],
                            rows as u64,
                            rc as u64 * mode.bytes(),
                            stride as u64,
                            None,
                        )?;
                        Some(if tr.0 {
                            let (k, n) = (k as usize, n as usize);
                            let mut w = vec![0u8; b.len()];
                            for i in 0..k {
                                for j in 0..n {
                                    let (d, x) = ((i * n + j) * s, (j * k + i) * s);
                                    w[d..d + s].copy_from_slice(&b[x..x + s]);
                                }
                            }
                            w
                        } else {
                            b
                        })
                    } else {
                        None
                    };
                let data = bytes.as_deref().map(|b| operand(mode, b));
                if let (Some(log), Some(b)) = (&mut self.mxu_log, &bytes) {
                    log.push(MxuRecord {
                        core: c as u32,
                        mxu: i as u32,
                        cycle: now.get(),
                        mode,
                        op: MxuRecordOp::Load {
                            k: k as usize,
                            n: n as usize,
                            w: raw_elems(mode, b),
                        },
                    });
                }
                // VMEM: the tile's bytes (the operand's derived accesses), one weight row of n
                // elements per cycle at most (transposed or not).
                let s0 = self.cores[c].mxus[i].model.load_start(now);
                let row = n as u64 * mode.bytes();
                let moved = self.moved(env, cmd);
                let end = self.cores[c].vmem_port.book(s0.get(), moved, row);
                let vmem_stall = (end - s0.get()).saturating_sub(r);
                let mx = &mut self.cores[c].mxus[i];
                let t = mx
                    .model
                    .load_weights(
                        s0 + vmem_stall,
                        k as usize,
                        n as usize,
                        data.as_ref().map(|d| d.as_operand()),
                    )
                    .map_err(|e| SimError::Exec {
                        chip: self.idx,
                        core: c as u32,
                        pc: cmd.pc,
                        inst: cmd.inst.to_string(),
                        msg: e.to_string(),
                    })?;
                mx.shadow_n = n as u64;
                mx.pending = true;
                Ok(Started {
                    vmem_stall,
                    start: s0,
                    busy_end: t.port_free,
                    done: Some(t.start + (r + cols - 1)),
                    front_free: t.start,
                })
            }
            Inst::MxuMatmul {
                m,
                k,
                stride,
                mode,
                accumulate,
                ..
            } => {
                check_mode(mode).map_err(|m| self.cmd_err(env, c, cmd, m))?;
                // Row r of X at A(src) + r·stride, or at its pattern's offset of r (conv rows).
                let lay = cmd
                    .inst
                    .pat()
                    .and_then(|p| env.prog.program.pats.get(p.0 as usize))
                    .and_then(|p| p.layout("src"));
                let bytes = if env.functional && m >= 1 && k >= 1 && k as u64 <= r {
                    Some(self.read_vmem(
                        env,
                        c,
                        cmd,
                        cmd.a[0],
                        m as u64,
                        k as u64 * mode.bytes(),
                        stride as u64,
                        lay,
                    )?)
                } else {
                    None
                };
                let data = bytes.as_deref().map(|b| operand(mode, b));
                let acc = usize::try_from(cmd.a[1]).unwrap_or(usize::MAX);
                if let (Some(log), Some(b)) = (&mut self.mxu_log, &bytes) {
                    log.push(MxuRecord {
                        core: c as u32,
                        mxu: i as u32,
                        cycle: now.get(),
                        mode,
                        op: MxuRecordOp::Matmul {
                            m: m as usize,
                            k: k as usize,
                            acc,
                            accumulate,
                            x: raw_elems(mode, b),
                        },
                    });
                }
                // VMEM: the input rows' bytes (derived accesses: a row a pattern repeats is
                // fetched once), one row of k elements per cycle at most.
                // Not before the stores still reading its accumulator rows have read them.
                let a_rows = p.mxu_acc_rows as u64;
                let mx = &self.cores[c].mxus[i];
                let t0 = mx.model.matmul_start(now).max(mx.acc_reads.ready(
                    acc as u64 % a_rows,
                    m as u64,
                    a_rows,
                    r + cols,
                ));
                let row = k as u64 * mode.bytes();
                let moved = self.moved(env, cmd);
                let end = self.cores[c].vmem_port.book(t0.get(), moved, row);
                let vmem_stall = (end - t0.get()).saturating_sub(m as u64);
                let mx = &mut self.cores[c].mxus[i];
                let t = mx
                    .model
                    .matmul(
                        t0 + vmem_stall,
                        m as usize,
                        k as usize,
                        acc,
                        accumulate,
                        data.as_ref().map(|d| d.as_operand()),
                    )
                    .map_err(|e| SimError::Exec {
                        chip: self.idx,
                        core: c as u32,
                        pc: cmd.pc,
                        inst: cmd.inst.to_string(),
                        msg: e.to_string(),
                    })?;
                if mx.pending {
                    mx.pending = false;
                    mx.active_n = mx.shadow_n;
                }
                let done = t.complete();
                mx.acc_busy
                    .record(now, acc as u64 % a_rows, m as u64, a_rows, done);
                env.stats
                    .add(mx.flops, 2 * m as u64 * k as u64 * mx.active_n);
                env.stats.add(mx.rows, m as u64);
                Ok(Started {
                    vmem_stall,
                    start: t0,
                    busy_end: done,
                    done: Some(done),
                    front_free: t.start,
                })
            }
            Inst::MxuSt { m, n, stride, .. } => {
                let a_rows = p.mxu_acc_rows as u64;
                if n == 0 || n as u64 > cols || m == 0 {
                    return Err(self.cmd_err(
                        env,
                        c,
                        cmd,
                        format!("mxu.st of {m}×{n} must be non-empty with n ≤ {cols}"),
                    ));
                }
                if cmd.a[1] >= a_rows {
                    return Err(self.cmd_err(
                        env,
                        c,
                        cmd,
                        format!(
                            "accumulator row {} out of range (acc_rows = {a_rows})",
                            cmd.a[1]
                        ),
                    ));
                }
                let mx = &self.cores[c].mxus[i];
                let start = now
                    .max(mx.acc_busy.ready(cmd.a[1], m as u64, a_rows))
                    .max(mx.st_free);
                // VMEM: one accumulator row (4n bytes) per cycle at most.
                let moved = self.moved(env, cmd);
                let end = self.cores[c]
                    .vmem_port
                    .book(start.get(), moved, n as u64 * 4);
                let vmem_stall = (end - start.get()).saturating_sub(m as u64);
                let dur = vmem_stall + m as u64;
                let mx = &mut self.cores[c].mxus[i];
                mx.st_free = start + dur;
                mx.acc_reads.record(now, cmd.a[1], m as u64, start + dur);
                if env.functional {
                    let mut row_bytes = vec![0u8; n as usize * 4];
                    for rr in 0..m as u64 {
                        let row = ((cmd.a[1] + rr) % a_rows) as usize;
                        let vals = self.cores[c].mxus[i].model.acc_row(row);
                        for (j, v) in vals[..n as usize].iter().enumerate() {
                            row_bytes[j * 4..j * 4 + 4].copy_from_slice(&v.to_le_bytes());
                        }
                        let a = cmd.a[0] + rr * stride as u64;
                        self.cores[c]
                            .vmem
                            .write(a, &row_bytes)
                            .map_err(|e| self.cmd_err(env, c, cmd, e.to_string()))?;
                    }
                }
                Ok(Started {
                    vmem_stall,
                    start,
                    busy_end: start + dur,
                    done: Some(start + dur),
                    front_free: start,
                })
            }
            _ => unreachable!("not an MXU instruction"),
        }
    }

    /// Posts an `ici.send`/`ici.recv` to the fabric (`sim::ici`); the System completes it when
    /// the transfer arrives. The unit takes the next command the following cycle.
    fn start_ici(
        &mut self,
        env: &mut Env<'_>,
        now: Cycle,
        c: usize,
        cmd: &Cmd,
        signal: Option<u8>,
        race_id: u64,
    ) -> Result<Started, SimError> {
        let (send, m, len, tag) = match cmd.inst {
            Inst::IciModel { cycles, .. } => {
                // The analytic backend: the unit is busy for the modelled time; no data moves.
                let end = now + (cycles as u64).max(1);
                return Ok(Started {
                    vmem_stall: 0,
                    start: now,
                    busy_end: end,
                    done: Some(end),
                    front_free: end,
                });
            }
            Inst::IciSend { src, len, tag, .. } => (true, src, len, tag),
            Inst::IciRecv { dst, len, tag, .. } => (false, dst, len, tag),
            _ => unreachable!("not an ICI instruction"),
        };
        // Positional operands: `peer` (its register's value), then the memory operand.
        let peer = cmd.a[0];
        if peer >= env.replicas as u64 {
            return Err(self.cmd_err(
                env,
                c,
                cmd,
                format!(
                    "peer chip {peer} does not exist: the program runs on {} chip(s)",
                    env.replicas
                ),
            ));
        }
        let (a, len) = (cmd.a[1], len as u64);
        self.check_space(env, c, cmd, m.space, a, len)?;
        let data = if send && env.functional {
            self.read_space(env, c, cmd, m.space, a, len)?
        } else {
            Vec::new()
        };
        // VMEM: the transfer's VMEM side streams at one link's rate from its post; it makes
        // other requesters of the port wait, its own arrival is the fabric's (sim::ici).
        if m.space == Space::Vmem {
            let rate = env.p.ici_link_bpc.ceil() as u64;
            self.cores[c].vmem_port.book(now.get(), len, rate);
        }
        let u = MXU0 + env.p.mxus;
        let unit = &mut self.cores[c].units[u];
        unit.unreported_from = Some(unit.unreported_from.map_or(now, |x| x.min(now)));
        self.ici_live.push((c as u16, now));
        let post = crate::ici::Post {
            chip: self.idx,
            core: c as u16,
            pc: cmd.pc,
            inst: cmd.inst.to_string(),
            peer: peer as u32,
            tag,
            len,
            signal,
            race_id,
            space: m.space,
            addr: a,
            data,
            posted: now,
        };
        if post.peer == self.idx {
            self.post_self(send, post, now)
                .map_err(|m| self.cmd_err(env, c, cmd, m))?;
        } else {
            self.ici_out.push((send, post));
        }
        Ok(Started {
            vmem_stall: 0,
            start: now,
            busy_end: now,
            done: None,
            front_free: now + 1,
        })
    }

    /// Completes an ICI instruction of core `c` posted at `start` (its transfer arrived).
    pub(crate) fn ici_complete(
        &mut self,
        env: &mut Env<'_>,
        now: Cycle,
        post: &crate::ici::Post,
    ) -> Result<(), SimError> {
        let c = post.core as usize;
        let u = MXU0 + env.p.mxus;
        if let Some(r) = &mut self.races {
            r.set_done(post.race_id, now.get());
        }
        if let Some(i) = self
            .ici_live
            .iter()
            .position(|&(k, s)| k == post.core && s == post.posted)
        {
            self.ici_live.swap_remove(i);
        }
        let from = self
            .ici_live
            .iter()
            .filter(|&&(k, _)| k == post.core)
            .map(|&(_, s)| s)
            .min();
        let unit = &mut self.cores[c].units[u];
        unit.unreported_from = from;
        unit.tl.add(Kind::Busy, post.posted.get(), now.get());
        let inst = env.prog.code()[post.pc as usize];
        // The VMEM bytes were booked on the port at the post (start_ici).
        let vmem = if post.space == Space::Vmem {
            post.len
        } else {
            0
        };
        self.trace(env, c, u, post.pc, &inst, (post.posted, now), (0, vmem));
        self.complete(env, now, c, u, post.signal, post.race_id)?;
        let unit = &mut self.cores[c].units[u];
        let h = unit.horizon(now);
        unit.tl.flush_until(env.stats, h);
        Ok(())
    }

    /// Writes an arrived transfer's bytes into this (the receiving) chip's memory.
    pub(crate) fn ici_deliver(
        &mut self,
        env: &Env<'_>,
        recv: &crate::ici::Post,
        data: &[u8],
    ) -> Result<(), SimError> {
        if !env.functional || data.is_empty() {
            return Ok(());
        }
        let c = recv.core as usize;
        let r = match recv.space {
            Space::Hbm => self.hbm.write(recv.addr, data),
            Space::Vmem => self.cores[c].vmem.write(recv.addr, data),
        };
        r.map_err(|e| SimError::Exec {
            chip: self.idx,
            core: c as u32,
            pc: recv.pc,
            inst: recv.inst.clone(),
            msg: e.to_string(),
        })
    }

    /// Reads `len` bytes of a memory space (functional mode).
    pub(crate) fn read_space(
        &mut self,
        env: &Env<'_>,
        c: usize,
        cmd: &Cmd,
        s: Space,
        a: u64,
        len: u64,
    ) -> Result<Vec<u8>, SimError> {
        let r = match s {
            Space::Hbm => self.hbm.read_vec(a, len),
            Space::Vmem => self.cores[c].vmem.read_vec(a, len),
        };
        r.map_err(|e| self.cmd_err(env, c, cmd, e.to_string()))
    }

    /// Writes bytes into a memory space (functional mode).
    pub(crate) fn write_space(
        &mut self,
        env: &Env<'_>,
        c: usize,
        cmd: &Cmd,
        s: Space,
        a: u64,
        data: &[u8],
    ) -> Result<(), SimError> {
        let r = match s {
            Space::Hbm => self.hbm.write(a, data),
            Space::Vmem => self.cores[c].vmem.write(a, data),
        };
        r.map_err(|e| self.cmd_err(env, c, cmd, e.to_string()))
    }

    /// Checks `[a, a+len)` lies in a memory space (timing-only mode still checks addresses).
    pub(crate) fn check_space(
        &self,
        env: &Env<'_>,
        c: usize,
        cmd: &Cmd,
        s: Space,
        a: u64,
        len: u64,
    ) -> Result<(), SimError> {
        let r = match s {
            Space::Hbm => self.hbm.check(a, len),
            Space::Vmem => self.cores[c].vmem.check(a, len),
        };
        r.map_err(|e| self.cmd_err(env, c, cmd, e.to_string()))
    }
}

/// Owned operand bytes in an MXU mode.
enum OwnedOperand {
    Int8(Vec<i8>),
    Bf16(Vec<u16>),
}

impl OwnedOperand {
    fn as_operand(&self) -> Operand<'_> {
        match self {
            OwnedOperand::Int8(v) => Operand::Int8(v),
            OwnedOperand::Bf16(v) => Operand::Bf16(v),
        }
    }
}

/// Raw elements of an MXU operand (int8 in the low byte, bf16 bits).
fn raw_elems(mode: MxuDtype, b: &[u8]) -> Vec<u16> {
    match mode {
        MxuDtype::Int8 => b.iter().map(|&x| x as u16).collect(),
        MxuDtype::Bf16 => b
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect(),
    }
}

fn operand(mode: MxuDtype, b: &[u8]) -> OwnedOperand {
    match mode {
        MxuDtype::Int8 => OwnedOperand::Int8(b.iter().map(|&x| x as i8).collect()),
        MxuDtype::Bf16 => OwnedOperand::Bf16(
            b.chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect(),
        ),
    }
}
