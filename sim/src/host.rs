//! The host link of a core: the infeed stream the host pushes from cycle 0 at `host.gbps` (bytes
//! `[0, e)` have arrived at `L_host + ⌈e / bw⌉`; an `infeed` completes at
//! `max(start + 1, arrival of its last byte)`), and the outbound link that `outfeed`s hold for
//! `⌈b / bw⌉` cycles each, completing `L_host` later.

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
        let done = arrival.max(now + 1);
        let pos = h.infeed_pos;
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
            vmem_stall: 0,
            start: Cycle(done.get() - 1),
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
        h.out_free = start + xfer;
        env.stats.add(h.out_bytes, len as u64);
        Ok(Started {
            vmem_stall: 0,
            start,
            busy_end: start + xfer,
            done: Some(start + xfer + p.host_latency),
            front_free: start,
        })
    }
}
