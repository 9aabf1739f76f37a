//! DMA engines: a `dma.copy` starts on a free engine (up to `dma.engines` per core), copies its
//! chunks (functional effect at start), then waits `dma.setup_cycles` (+ `hbm.latency` if it
//! touches HBM) and moves its bytes through a shared link: the chip's HBM link (bandwidth
//! `hbm.gbps`, at most `dma.bytes_per_cycle` per transfer; an HBM→HBM copy moves its bytes twice).
//! Its VMEM side (the bytes it reads or writes in VMEM; both for VMEM→VMEM) is booked on the
//! core's VMEM port (`vmem_port.rs`) when the data phase begins, at the engine's rate; the copy
//! completes when both its HBM flow and its VMEM grants are through, and not before its
//! engine has issued every chunk (`dma.chunk_cycles` each). HBM moves whole aligned bursts
//! (`hbm.burst_bytes`), so small or misaligned chunks cost more link bytes than they carry.
//! Alone, contiguous and burst aligned, it takes `setup + L + ⌈bytes / min(engine, link)⌉`
//! cycles (`Params::dma_alone_cycles`).

use crate::account::Kind;
use crate::chip::{Chip, Env, Ev, Xfer};
use crate::core::*;
use crate::cycle::Cycle;
use crate::engine::Priority;
use crate::error::SimError;
use crate::units::Started;
use isa::{Inst, Space};

impl Chip {
    pub(crate) fn start_dma(
        &mut self,
        env: &mut Env<'_>,
        now: Cycle,
        c: usize,
        cmd: &Cmd,
        signal: Option<u8>,
    ) -> Result<Started, SimError> {
        let (dst, src, desc) = match cmd.inst {
            Inst::DmaCopy { dst, src, desc, .. }
            | Inst::DmaGather { dst, src, desc, .. }
            | Inst::DmaScatter { dst, src, desc, .. } => (dst, src, desc),
            _ => unreachable!("not a DMA instruction"),
        };
        let d = &env.prog.program.dma[desc as usize];
        let len = d.len as u64;
        // The chunks: the descriptor's, or an indexed copy's rows (the index table is read
        // from VMEM when the copy starts; rows whose index is at or past `s[lim]` are dropped).
        let indexed = if cmd.inst.is_indexed_dma() {
            Some(self.indexed_rows(env, c, cmd, d)?)
        } else {
            None
        };
        let bytes = indexed
            .as_ref()
            .map_or_else(|| d.total_bytes(), |v| v.len() as u64 * len);
        // The copy's effect happens here, chunk by chunk; one that cannot end before the cycle
        // limit (at most dma.bytes_per_cycle per cycle) would only burn time: stop now.
        let fastest = (bytes as f64 / env.p.dma_bpc).ceil() as u64;
        if now.get().saturating_add(fastest) > env.max_cycles {
            return Err(SimError::Timeout(crate::error::TimeoutReport {
                limit: env.max_cycles,
                reason: format!(
                    "chip {} core {c} pc {} `{}`: a DMA of {bytes} bytes started at cycle \
                     {now} needs at least {fastest} cycles, past the limit of {} cycles; \
                     raise --max-cycles if it is meant to run longer",
                    self.idx, cmd.pc, cmd.inst, env.max_cycles
                ),
                units: crate::error::DeadlockReport {
                    cycle: now.get(),
                    waits: Vec::new(),
                },
            }));
        }
        // HBM moves whole aligned bursts: a chunk at `a` of `len` bytes costs
        // (⌈(a + len) / burst⌉ − ⌊a / burst⌋) · burst bytes of the HBM link.
        let burst = env.p.hbm_burst;
        // Chunks that continue where the previous one ended on both sides form one run
        // (one request stream, bursts counted over the whole run).
        let bursts = |a: u64, n: u64| ((a + n).div_ceil(burst) - a / burst) * burst;
        let (mut hbm_src, mut hbm_dst, mut chunks) = (0u64, 0u64, 0u64);
        let mut run: Option<(i64, i64, u64)> = None; // (src, dst, bytes) of the open run
        let mut close = |r: (i64, i64, u64)| {
            chunks += 1;
            if r.0 >= 0 && src.space == Space::Hbm {
                hbm_src += bursts(r.0 as u64, r.2);
            }
            if r.1 >= 0 && dst.space == Space::Hbm {
                hbm_dst += bursts(r.1 as u64, r.2);
            }
        };
        let offsets: Box<dyn Iterator<Item = (i64, i64)>> = match indexed {
            Some(v) => Box::new(v.into_iter()),
            None => Box::new(d.chunk_offsets()),
        };
        for (so, dof) in offsets {
            let sa = cmd.a[1] as i64 + so;
            let da = cmd.a[0] as i64 + dof;
            run = match run {
                Some((rs, rd, n)) if rs + n as i64 == sa && rd + n as i64 == da => {
                    Some((rs, rd, n + len))
                }
                Some(r) => {
                    close(r);
                    Some((sa, da, len))
                }
                None => Some((sa, da, len)),
            };
            if sa < 0 || da < 0 {
                return Err(self.cmd_err(
                    env,
                    c,
                    cmd,
                    format!("chunk address negative (src {sa}, dst {da})"),
                ));
            }
            if env.functional {
                let data = self.read_space(env, c, cmd, src.space, sa as u64, len)?;
                self.write_space(env, c, cmd, dst.space, da as u64, &data)?;
            } else {
                self.check_space(env, c, cmd, src.space, sa as u64, len)?;
                self.check_space(env, c, cmd, dst.space, da as u64, len)?;
            }
        }
        if let Some(r) = run {
            close(r);
        }
        let hbm_bytes = hbm_src + hbm_dst;
        if src.space == Space::Hbm {
            env.stats.add(self.st.hbm_read, bytes);
        }
        if dst.space == Space::Hbm {
            env.stats.add(self.st.hbm_written, bytes);
        }
        env.stats.add(self.cores[c].dma.bytes, bytes);
        let hbm = hbm_bytes > 0;
        let vmem_sides = [src.space, dst.space]
            .iter()
            .filter(|&&s| s == Space::Vmem)
            .count() as u64;
        let x = Xfer {
            core: c as u16,
            start: now,
            pc: cmd.pc,
            signal,
            link_bytes: if hbm { hbm_bytes } else { bytes },
            hbm,
            vmem_bytes: vmem_sides * bytes,
            vmem_done: now,
            chunk_done: now,
            chunks,
            alone: 0,
            joined: now,
            hbm_done: now,
            race_id: self.next_dma_race_id,
        };
        let id = match self.free_xfers.pop() {
            Some(i) => {
                self.xfers[i as usize] = Some(x);
                i
            }
            None => {
                self.xfers.push(Some(x));
                (self.xfers.len() - 1) as u32
            }
        };
        self.cores[c].dma.busy_engines += 1;
        let unit = &mut self.cores[c].units[DMA];
        unit.unreported_from = Some(unit.unreported_from.map_or(now, |u| u.min(now)));
        let join = now + env.p.dma_setup + if hbm { env.p.hbm_latency } else { 0 };
        self.q.schedule(join, Priority::Complete, Ev::DmaJoin(id));
        Ok(Started {
            vmem_stall: 0,
            start: now,
            busy_end: now,
            done: None,
            front_free: now,
        })
    }

    /// The `(src, dst)` offsets of an indexed copy's rows (`dma.gather`: the source row is
    /// the index; `dma.scatter`: the destination row), in row order, dropping rows whose
    /// index is at or past `s[lim]`.
    fn indexed_rows(
        &self,
        env: &Env<'_>,
        c: usize,
        cmd: &Cmd,
        d: &isa::DmaDesc,
    ) -> Result<Vec<(i64, i64)>, SimError> {
        let [dim] = d.dims[..] else {
            return Err(self.cmd_err(
                env,
                c,
                cmd,
                "an indexed copy needs a descriptor with exactly one dimension",
            ));
        };
        // Positional operands: dst, src, idx (the table's VMEM address), lim.
        let (table, lim) = (cmd.a[2], cmd.a[3]);
        let n = dim.count as u64;
        let t = self.cores[c]
            .vmem
            .read_vec(table, 4 * n)
            .map_err(|e| self.cmd_err(env, c, cmd, format!("index table: {e}")))?;
        let gather = matches!(cmd.inst, Inst::DmaGather { .. });
        let mut out = Vec::with_capacity(n as usize);
        for (i, b) in t.chunks_exact(4).enumerate() {
            let k = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64;
            if k >= lim {
                continue;
            }
            let (rs, rd) = if gather { (k, i as u64) } else { (i as u64, k) };
            out.push((
                (rs as i64).wrapping_mul(dim.src_stride),
                (rd as i64).wrapping_mul(dim.dst_stride),
            ));
        }
        Ok(out)
    }

    /// A transfer enters its data phase: its HBM bytes join the HBM link; its VMEM bytes are
    /// booked on the core's VMEM port at the rate the transfer would have alone.
    pub(crate) fn dma_join(&mut self, env: &Env<'_>, now: Cycle, id: u32) {
        let mut x = self.xfers[id as usize].expect("live transfer");
        let c = x.core as usize;
        // Alone, the data phase moves min(engine, link) bytes per cycle of its link.
        let link_bpc = if x.hbm {
            env.p.dma_bpc.min(env.p.hbm_bpc)
        } else {
            env.p.dma_bpc
        };
        x.alone = (x.link_bytes as f64 / link_bpc).ceil() as u64;
        x.joined = now;
        x.chunk_done = now + x.chunks * env.p.dma_chunk_cycles;
        if x.vmem_bytes > 0 {
            // Per cycle each VMEM side (one, or two for VMEM→VMEM, where `link_bytes` is the
            // copy's size) moves what the data phase moves.
            let sides = (x.vmem_bytes / x.link_bytes.max(1)).max(1);
            let rate = (link_bpc.ceil() as u64).max(1) * sides;
            let end = self.cores[c].vmem_port.book(now.get(), x.vmem_bytes, rate);
            x.vmem_done = Cycle(end);
        }
        self.xfers[id as usize] = Some(x);
        if x.hbm {
            self.hbm_link.join(now, id as u64, x.link_bytes);
            if let Some((t, g)) = self.hbm_link.next_completion() {
                self.q
                    .schedule(t.max(now), Priority::Complete, Ev::HbmWake(g));
            }
        } else {
            let end = x.vmem_done.max(x.chunk_done).max(now);
            self.q.schedule(end, Priority::Complete, Ev::DmaDone(id));
        }
    }

    pub(crate) fn hbm_wake(
        &mut self,
        env: &mut Env<'_>,
        now: Cycle,
        g: u64,
    ) -> Result<(), SimError> {
        if g != self.hbm_link.generation() {
            return Ok(()); // stale
        }
        let mut done = std::mem::take(&mut self.done_buf);
        self.hbm_link.complete_until(now, &mut done);
        for id in done.drain(..) {
            let id = id as u32;
            let x = self.xfers[id as usize].as_mut().expect("live transfer");
            x.hbm_done = now;
            let end = x.vmem_done.max(x.chunk_done);
            if end > now {
                // The HBM side is through; the VMEM side or the chunk requests end later.
                self.q.schedule(end, Priority::Complete, Ev::DmaDone(id));
            } else {
                self.finish_xfer(env, now, id)?;
            }
        }
        self.done_buf = done;
        if let Some((t, g)) = self.hbm_link.next_completion() {
            self.q
                .schedule(t.max(now), Priority::Complete, Ev::HbmWake(g));
        }
        Ok(())
    }

    pub(crate) fn finish_xfer(
        &mut self,
        env: &mut Env<'_>,
        now: Cycle,
        id: u32,
    ) -> Result<(), SimError> {
        let x = self.xfers[id as usize].take().expect("live transfer");
        self.free_xfers.push(id);
        if let Some(r) = &mut self.races {
            r.set_done(x.race_id, now.get());
        }
        let c = x.core as usize;
        self.cores[c].dma.busy_engines -= 1;
        // Earliest start among the core's remaining transfers.
        let from = self
            .xfers
            .iter()
            .flatten()
            .filter(|y| y.core == x.core)
            .map(|y| y.start)
            .min();
        let unit = &mut self.cores[c].units[DMA];
        unit.unreported_from = from;
        // Cycles past what the data phase would take alone, while the VMEM side was the last
        // to finish, are VMEM stalls; the rest is busy.
        let other = if x.hbm {
            x.hbm_done
        } else {
            x.joined + x.alone
        }
        .max(x.chunk_done);
        let vmem_stall = if x.vmem_done >= now {
            now - other.min(now)
        } else {
            0
        };
        let busy_end = now.get() - vmem_stall;
        unit.tl.add(Kind::Busy, x.start.get(), busy_end);
        unit.tl.add(Kind::Stall(R_VMEM), busy_end, now.get());
        let inst = env.prog.code()[x.pc as usize];
        let hbm_bytes = if x.hbm { x.link_bytes } else { 0 };
        self.trace(
            env,
            c,
            DMA,
            x.pc,
            &inst,
            (x.start, now),
            (hbm_bytes, x.vmem_bytes),
        );
        self.complete(env, now, c, DMA, x.signal, x.race_id)?;
        self.kick(c, DMA, now);
        Ok(())
    }
}
