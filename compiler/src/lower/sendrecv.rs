//! Device-to-device `send`/`recv` (channels whose instructions carry
//! `frontend_attributes={_xla_send_recv_source_target_pairs={{a,b},...}}`: replica `a` sends to
//! replica `b`), lowered as split collective-permutes.
//!
//! XLA's sends are buffered: `send; send-done; recv; recv-done` on every replica must not
//! deadlock, though on the ICI a send completes only when its receive is posted. So a `send`
//! emits nothing: its operand is kept alive and queued on its channel. The next `recv-done` of
//! the channel (in the order the computation is lowered, the same on every chip) takes the
//! oldest queued send and runs one exchange block: post the receive (a chip that is no pair's
//! target gets zeros, as the evaluator gives it), post the send (a chip that is no pair's source
//! sends nothing), wait for both. A `recv-done` with no send queued receives alone; sends still
//! queued at the end of the entry computation go out alone before the outputs are stored.
//! Both sides of one channel use the same ICI tag, chosen when the channel is first seen, so the
//! FIFO matching of the fabric pairs them in program order.
//!
//! **Inside while and conditional bodies** the same rule holds per execution of the body: a
//! send queued in a body is exchanged by a later `recv-done` of its channel in the same body,
//! or goes out alone at the end of the body (before its results are copied out), so every
//! iteration (every taken branch) posts the same matched transfers on every chip. A
//! `recv-done` in a body whose channel still has a send queued outside the body is refused
//! (that send would pair with the first iteration only). Every chip must run the body the same
//! number of times (else the fabric reports the unmatched transfers as a deadlock, as XLA
//! would hang).
//!
//! Not supported yet: host transfers (`is_host_transfer=true`), channels without the
//! source-target attribute.

use super::{Buf, Lowerer, Val};
use crate::error::{CResult, CompileError};
use hlo::groups::channel_pairs;
use hlo::{InstId, Opcode};

/// The per-module state of send/recv lowering.
#[derive(Default)]
pub(crate) struct Channels {
    /// `_xla_send_recv_source_target_pairs` per channel, built on first use.
    pairs: Option<hlo::groups::ChannelPairs>,
    /// The ICI tag of each channel seen so far.
    tags: std::collections::BTreeMap<i64, u32>,
    /// Sends not exchanged yet, per channel, oldest first, with the nesting depth of the
    /// computation that queued them.
    pub(crate) queued:
        std::collections::BTreeMap<i64, std::collections::VecDeque<(Buf, InstId, usize)>>,
}

/// Lowers `send`, `send-done`, `recv` and `recv-done`; `None` for other ops.
pub fn lower(l: &mut Lowerer<'_>, h: InstId) -> CResult<Option<Val>> {
    let inst = &l.comp().insts[h];
    let op = inst.opcode;
    if !matches!(
        op,
        Opcode::Send | Opcode::SendDone | Opcode::Recv | Opcode::RecvDone
    ) {
        return Ok(None);
    }
    if inst.attrs.is_host_transfer == Some(true) {
        return Err(l.unsupported(format!("{op} with is_host_transfer=true (host link)")));
    }
    Ok(Some(match op {
        Opcode::Send => {
            let ch = l.channel_of(h)?;
            let x = l.arr(inst.operands[0])?;
            l.pin(&x);
            let depth = l.depth();
            l.chans
                .queued
                .entry(ch)
                .or_default()
                .push_back((x.clone(), h, depth));
            Val::Tuple(vec![Val::Array(x), Val::Token, Val::Token])
        }
        Opcode::SendDone => Val::Token,
        // The data arrives at recv-done; the context is never read as an array.
        Opcode::Recv => Val::Tuple(vec![Val::Token, Val::Token, Val::Token]),
        _ => {
            let ch = l.channel_of(h)?;
            let data = inst.shape.as_tuple().and_then(|t| t.first()).cloned();
            let a = data
                .as_ref()
                .and_then(|s| s.as_array())
                .ok_or_else(|| CompileError::Internal("recv-done without an array part".into()))?;
            if a.is_dynamic() {
                return Err(l.unsupported("dynamic dimensions"));
            }
            let out = l.new_buf(h, a.ty, a.udims())?;
            l.vty(a.ty)?;
            let depth = l.depth();
            let q = l.chans.queued.entry(ch).or_default();
            if q.front().is_some_and(|s| s.2 < depth) {
                return Err(l.unsupported(format!(
                    "recv-done on channel {ch} inside a while or conditional body while a send \
                     of that channel queued outside the body is not exchanged yet"
                )));
            }
            let send = q.pop_front();
            let (pairs, tag) = l.channel_plan(h, ch)?;
            l.exchange(h, &pairs, send.as_ref().map(|s| &s.0), Some(&out), tag)?;
            if let Some((x, _, _)) = send {
                l.unpin(&x);
            }
            Val::Tuple(vec![Val::Array(out), Val::Token])
        }
    }))
}

impl Lowerer<'_> {
    fn channel_of(&self, h: InstId) -> CResult<i64> {
        let inst = &self.comp().insts[h];
        inst.attrs.channel_id.ok_or_else(|| CompileError::Invalid {
            what: format!("%{}: {} without channel_id", inst.name, inst.opcode),
            span: self.span,
        })
    }

    /// The source-target pairs and ICI tag of channel `ch` (used by `h`).
    fn channel_plan(&mut self, h: InstId, ch: i64) -> CResult<(Vec<(usize, usize)>, u32)> {
        if self.chans.pairs.is_none() {
            self.chans.pairs = Some(channel_pairs(self.m, self.devs));
        }
        let name = &self.comp().insts[h].name;
        let pairs = match self.chans.pairs.as_ref().and_then(|p| p.get(&ch)) {
            Some(Ok(p)) => p.clone(),
            Some(Err(e)) => {
                return Err(CompileError::Invalid {
                    what: e.clone(),
                    span: self.span,
                })
            }
            None => {
                return Err(self.unsupported(format!(
                    "%{name}: device-to-device send/recv on channel {ch} without \
                     _xla_send_recv_source_target_pairs (the peer replica is unknown)"
                )))
            }
        };
        let tag = match self.chans.tags.get(&ch) {
            Some(&t) => t,
            None => {
                let t = self.next_tag();
                self.chans.tags.insert(ch, t);
                t
            }
        };
        Ok((pairs, tag))
    }

    /// Sends the computation being lowered (or one it called) still has queued go out alone:
    /// at the end of the entry computation, and at the end of a while or conditional body.
    pub(crate) fn flush_sends(&mut self) -> CResult<()> {
        let depth = self.depth();
        let mut mine = Vec::new();
        for (&ch, q) in self.chans.queued.iter_mut() {
            while q.back().is_some_and(|s| s.2 >= depth) {
                mine.push((ch, q.pop_back().expect("checked")));
            }
        }
        mine.reverse();
        mine.sort_by_key(|(ch, _)| *ch);
        for (ch, (x, h, _)) in mine {
            {
                // Errors name the send.
                self.span = self.comp().insts[h].span;
                let (pairs, tag) = self.channel_plan(h, ch)?;
                self.exchange(h, &pairs, Some(&x), None, tag)?;
                self.unpin(&x);
            }
        }
        Ok(())
    }
}
