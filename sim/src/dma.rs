//! DMA engines: a `dma.copy` starts on a free engine (up to `dma.engines` per core), copies its
//! chunks (functional effect at start), then waits `dma.setup_cycles` (+ `hbm.latency` if it
//! touches HBM) and moves its bytes through a shared link: the chip's HBM link (bandwidth
//! `hbm.gbps`, at most `dma.bytes_per_cycle` per transfer; an HBM→HBM copy moves its bytes twice)
//! or, for VMEM→VMEM, the core's VMEM link (`vmem.bytes_per_cycle`). Alone it takes
//! `setup + L + ⌈bytes / min(engine, link)⌉` cycles (`Params::dma_alone_cycles`).

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
        let Inst::DmaCopy { dst, src, desc, .. } = cmd.inst else {
            unreachable!()
        };
        let d = &env.prog.program.dma[desc as usize];
        let bytes = d.total_bytes();
        let len = d.len as u64;
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
        for (so, dof) in d.chunk_offsets() {
            let sa = cmd.a[1] as i64 + so;
            let da = cmd.a[0] as i64 + dof;
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
        let hbm_bytes = [src.space, dst.space]
            .iter()
            .filter(|&&s| s == Space::Hbm)
            .count() as u64
            * bytes;
        if src.space == Space::Hbm {
            env.stats.add(self.st.hbm_read, bytes);
        }
        if dst.space == Space::Hbm {
            env.stats.add(self.st.hbm_written, bytes);
        }
        env.stats.add(self.cores[c].dma.bytes, bytes);
        let hbm = hbm_bytes > 0;
        let x = Xfer {
            core: c as u16,
            start: now,
            pc: cmd.pc,
            signal,
            link_bytes: if hbm { hbm_bytes } else { bytes },
            hbm,
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
            start: now,
            busy_end: now,
            done: None,
            front_free: now,
        })
    }

    /// A transfer enters its data phase.
    pub(crate) fn dma_join(&mut self, now: Cycle, id: u32) {
        let x = self.xfers[id as usize].expect("live transfer");
        if x.hbm {
            self.hbm_link.join(now, id as u64, x.link_bytes);
            if let Some((t, g)) = self.hbm_link.next_completion() {
                self.q
                    .schedule(t.max(now), Priority::Complete, Ev::HbmWake(g));
            }
        } else {
            let c = x.core as usize;
            self.cores[c].vmem_link.join(now, id as u64, x.link_bytes);
            if let Some((t, g)) = self.cores[c].vmem_link.next_completion() {
                self.q
                    .schedule(t.max(now), Priority::Complete, Ev::VmemWake(x.core, g));
            }
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
            self.finish_xfer(env, now, id as u32)?;
        }
        self.done_buf = done;
        if let Some((t, g)) = self.hbm_link.next_completion() {
            self.q
                .schedule(t.max(now), Priority::Complete, Ev::HbmWake(g));
        }
        Ok(())
    }

    pub(crate) fn vmem_wake(
        &mut self,
        env: &mut Env<'_>,
        now: Cycle,
        c: usize,
        g: u64,
    ) -> Result<(), SimError> {
        if g != self.cores[c].vmem_link.generation() {
            return Ok(());
        }
        let mut done = std::mem::take(&mut self.done_buf);
        self.cores[c].vmem_link.complete_until(now, &mut done);
        for id in done.drain(..) {
            self.finish_xfer(env, now, id as u32)?;
        }
        self.done_buf = done;
        if let Some((t, g)) = self.cores[c].vmem_link.next_completion() {
            self.q
                .schedule(t.max(now), Priority::Complete, Ev::VmemWake(c as u16, g));
        }
        Ok(())
    }

    fn finish_xfer(&mut self, env: &mut Env<'_>, now: Cycle, id: u32) -> Result<(), SimError> {
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
        unit.tl.add(Kind::Busy, x.start.get(), now.get());
        let inst = env.prog.code()[x.pc as usize];
        self.trace(env, c, DMA, x.pc, &inst, x.start, now);
        self.complete(env, now, c, DMA, x.signal)?;
        self.kick(c, DMA, now);
        Ok(())
    }
}
