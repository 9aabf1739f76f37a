//! The host link of a core: the infeed stream the host pushes from cycle 0 at `host.gbps` (bytes
//! `[0, e)` have arrived at `L_host + ⌈e / bw⌉`; an `infeed` completes at
//! `max(start + 1, arrival of its last byte)`), and the outbound link that `outfeed`s hold for
//! `⌈b / bw⌉` cycles each, completing `L_host` later.
//!
//! Both book their VMEM bytes on the core's VMEM port (`vmem_port.rs`): an infeed into VMEM
//! books its `len` bytes at the port's full rate from `max(start, arrival − ⌈len / cap⌉)` (the
//! stream buffer drains into VMEM as its last bytes arrive) and completes at
//! `max(start + 1, arrival, E)`; an outfeed from VMEM books its bytes at the link's rate
//! `⌈bw⌉` from its start and holds the link until `max(start + ⌈b / bw⌉, E)`, completing
//! `L_host` later (`E`: the end of its grants).

use crate::chip::{Chip, Env};
use crate::core::Cmd;
use crate::cycle::Cycle;
use crate::error::SimError;
use crate::units::Started;
use isa::{Inst, Space};

impl Chip {
    pub(crate) fn start_infeed(
        &mut self,
        env: &mut Env<'_>,
        now: Cycle,
        c: usize,
        cmd: &Cmd,
    ) -> Result<Started, SimError> {
        let Inst::Infeed { dst, len, .. } = cmd.inst else {
            unreachable!()
        };
        let p = env.p;
        let h = &self.cores[c].host;
        let end = h.infeed_pos + len as u64;
        let arrival = Cycle(p.host_latency + (end as f64 / p.host_bpc).ceil() as u64);
        let base = arrival.max(now + 1);
        let pos = h.infeed_pos;
        let (len64, cap) = (len as u64, p.vmem_bpc);
        let granted = if dst.space == Space::Vmem {
            let from = now
                .get()
                .max(arrival.get().saturating_sub(len64.div_ceil(cap)));
            Cycle(self.cores[c].vmem_port.book(from, len64, cap))
        } else {
            base
        };
        let done = base.max(granted);
        let vmem_stall = done - base;
        if env.functional {
            let data = self.cores[c].host.infeed[pos as usize..end as usize].to_vec();
            self.write_space(env, c, cmd, dst.space, cmd.a[0], &data)?;
        } else {
            self.check_space(env, c, cmd, dst.space, cmd.a[0], len as u64)?;
        }
        if dst.space == Space::Hbm {
            env.stats.add(self.st.hbm_written, len as u64);
        }
        let h = &mut self.cores[c].host;
        h.infeed_pos = end;
        env.stats.add(h.in_bytes, len as u64);
        Ok(Started {
            vmem_stall,
            start: Cycle(base.get() - 1),
            busy_end: done,
            done: Some(done),
            front_free: done,
        })
    }

    pub(crate) fn start_outfeed(
        &mut self,
        env: &mut Env<'_>,
        now: Cycle,
        c: usize,
        cmd: &Cmd,
    ) -> Result<Started, SimError> {
        let Inst::Outfeed { src, len, .. } = cmd.inst else {
            unreachable!()
        };
        let p = env.p;
        if env.functional {
            let data = self.read_space(env, c, cmd, src.space, cmd.a[0], len as u64)?;
            self.cores[c].host.outfeed.extend_from_slice(&data);
        } else {
            self.check_space(env, c, cmd, src.space, cmd.a[0], len as u64)?;
        }
        if src.space == Space::Hbm {
            env.stats.add(self.st.hbm_read, len as u64);
        }
        let h = &mut self.cores[c].host;
        let start = now.max(h.out_free);
        let xfer = (len as f64 / p.host_bpc).ceil() as u64;
        let vmem_stall = if src.space == Space::Vmem {
            let rate = p.host_bpc.ceil() as u64;
            let end = self.cores[c].vmem_port.book(start.get(), len as u64, rate);
            end.saturating_sub(start.get() + xfer)
        } else {
            0
        };
        let h = &mut self.cores[c].host;
        h.out_free = start + xfer + vmem_stall;
        env.stats.add(h.out_bytes, len as u64);
        Ok(Started {
            vmem_stall,
            start,
            busy_end: start + xfer + vmem_stall,
            done: Some(start + xfer + vmem_stall + p.host_latency),
            front_free: start,
        })
    }
}
