//! [`ReplicaRuntime`]: the [`Runtime`] of one replica thread, connected to the others through
//! the [`Hub`].
//!
//! - Collectives: the replica finds its group, contributes its operands to the hub slot keyed by
//!   (kind, channel id or instruction name, group, occurrence number) and computes its result
//!   from all contributions in group order ([`super::collectives`]). A replica that is in no
//!   pair of a collective-permute gets zeros without waiting.
//! - Infeed/outfeed and host send/recv use this replica's own [`HostIo`] queues; data that is not
//!   there never arrives, so the replica waits "forever" (until the deadlock report).
//! - Device-to-device send/recv: peers come from the channel's
//!   `frontend_attributes={_xla_send_recv_source_target_pairs={{a,b},...}}` ("replica a sends to
//!   replica b"), found on the send or recv instructions of that channel anywhere in the module.
//!   A send posts to the FIFO queue (channel, me, b) and never blocks (sends are buffered); a
//!   receive takes from (channel, a, me), waiting if it is empty. A replica that is no pair's
//!   target receives zeros (as collective-permute). A channel without the attribute is "not
//!   supported yet" (the peer replica is unknown).
//!
//! Side effects of one replica happen in the order the interpreter executes them (program
//! order); the queues are FIFO per channel and peer pair.

use super::collectives as coll;
use super::hub::{list, CollIdent, CollKey, Hub, MailKey};
use crate::error::{EResult, EvalError};
use crate::runtime::{collective_view, transfer, Combine, HostIo, RngState, Runtime};
use hlo::groups::{device_pairs, group_of, pair_participants, Devices};
use hlo::ir::Instruction;
use hlo::literal::Literal;
use hlo::opcode::Opcode;
use hlo::shape::Shape;
use std::collections::BTreeMap;
use std::sync::Arc;

pub use hlo::groups::{channel_pairs, ChannelPairs};

/// The runtime of replica `me` of `n`.
pub struct ReplicaRuntime<'h> {
    me: usize,
    devs: Devices,
    hub: &'h Hub,
    pairs: &'h ChannelPairs,
    pub io: HostIo,
    rng: RngState,
    /// Occurrences so far per (kind, identity, group).
    seq: BTreeMap<(Opcode, CollIdent, Vec<usize>), u64>,
}

/// The synchronous opcode of a collective (`-start` forms map to their op).
fn sync_kind(op: Opcode) -> Opcode {
    match op {
        Opcode::AllReduceStart => Opcode::AllReduce,
        Opcode::AllGatherStart => Opcode::AllGather,
        Opcode::CollectivePermuteStart => Opcode::CollectivePermute,
        op => op,
    }
}

/// The single dimension of `dimensions={d}`.
fn one_dim(inst: &Instruction) -> EResult<Option<usize>> {
    match collective_view(inst)?.dimensions {
        [] => Ok(None),
        [d] if *d >= 0 => Ok(Some(*d as usize)),
        ds => Err(EvalError::invalid(format!(
            "expected one dimension, got dimensions={ds:?}"
        ))),
    }
}

fn need_dim(inst: &Instruction) -> EResult<usize> {
    one_dim(inst)?.ok_or_else(|| EvalError::invalid(format!("{} without dimensions=", inst.opcode)))
}

fn channel(inst: &Instruction) -> EResult<i64> {
    transfer(inst)
        .0
        .ok_or_else(|| EvalError::invalid(format!("{} without channel_id", inst.opcode)))
}

fn check_shape(what: &str, v: &Literal, shape: &Shape) -> EResult<()> {
    if v.shape().compatible(&shape.without_layout()) {
        Ok(())
    } else {
        Err(EvalError::bad_input(format!(
            "{what} has shape {} but the instruction expects {shape}",
            v.shape()
        )))
    }
}

impl<'h> ReplicaRuntime<'h> {
    /// The runtime of device `me` of `devs`.
    pub fn new(
        me: usize,
        devs: Devices,
        hub: &'h Hub,
        pairs: &'h ChannelPairs,
        io: HostIo,
    ) -> Self {
        ReplicaRuntime {
            me,
            devs,
            hub,
            pairs,
            io,
            rng: RngState::default(),
            seq: BTreeMap::new(),
        }
    }

    /// Contributes to collective `inst` over `group` and returns all contributions.
    fn exchange(
        &mut self,
        inst: &Instruction,
        group: Vec<usize>,
        value: Literal,
    ) -> EResult<Vec<Arc<Literal>>> {
        let kind = sync_kind(inst.opcode);
        let ident = match collective_view(inst)?.channel_id {
            Some(c) => CollIdent::Channel(c),
            None => CollIdent::Inst(inst.name.clone()),
        };
        let counter = self
            .seq
            .entry((kind, ident.clone(), group.clone()))
            .or_insert(0);
        let seq = *counter;
        *counter += 1;
        let pos = group.iter().position(|&m| m == self.me).ok_or_else(|| {
            EvalError::invalid(format!(
                "replica {} is not a member of its own group",
                self.me
            ))
        })?;
        let what = format!(
            "{kind}{} over replicas {}, occurrence #{}",
            collective_view(inst)?
                .channel_id
                .map(|c| format!(" channel {c}"))
                .unwrap_or_default(),
            list(&group),
            seq + 1
        );
        let key = CollKey {
            kind,
            ident,
            group,
            seq,
        };
        self.hub
            .exchange(self.me, key, pos, Arc::new(value), &inst.name, what)
    }

    fn peers(&self, ch: i64) -> EResult<&[(usize, usize)]> {
        match self.pairs.get(&ch) {
            Some(Ok(p)) => Ok(p),
            Some(Err(e)) => Err(EvalError::invalid(e.clone())),
            None => Err(EvalError::unsupported(format!(
                "device-to-device send/recv on channel {ch} without _xla_send_recv_source_target_pairs \
                 (the peer replica is unknown)"
            ))),
        }
    }
}

impl Runtime for ReplicaRuntime<'_> {
    fn replica_id(&self) -> i64 {
        self.devs.coords(self.me).0 as i64
    }
    fn partition_id(&self) -> i64 {
        self.devs.coords(self.me).1 as i64
    }
    fn replica_count(&self) -> i64 {
        self.devs.replicas as i64
    }

    fn collective(
        &mut self,
        inst: &Instruction,
        operands: &[&Literal],
        combine: &mut Combine<'_>,
    ) -> EResult<Literal> {
        use Opcode as O;
        let n_ops = operands.len();
        if n_ops == 0 {
            return Err(EvalError::invalid("collective without operands"));
        }
        match sync_kind(inst.opcode) {
            O::AllReduce => {
                let group = group_of(inst, self.me, self.devs)?;
                let c = self.exchange(inst, group, coll::contribution(operands))?;
                coll::all_reduce(&c, n_ops, combine)
            }
            O::ReduceScatter => {
                let dim = need_dim(inst)?;
                let group = group_of(inst, self.me, self.devs)?;
                let pos = group.iter().position(|&m| m == self.me).unwrap_or(0);
                let c = self.exchange(inst, group, coll::contribution(operands))?;
                coll::reduce_scatter(&c, n_ops, dim, pos, combine)
            }
            O::AllGather => {
                let dim = need_dim(inst)?;
                let group = group_of(inst, self.me, self.devs)?;
                let c = self.exchange(inst, group, coll::contribution(operands))?;
                coll::all_gather(&c, n_ops, dim)
            }
            O::AllToAll => {
                let dim = one_dim(inst)?;
                let group = group_of(inst, self.me, self.devs)?;
                let pos = group.iter().position(|&m| m == self.me).unwrap_or(0);
                let c = self.exchange(inst, group, coll::contribution(operands))?;
                match dim {
                    Some(d) => coll::all_to_all_array(&c, n_ops, d, pos),
                    None => coll::all_to_all_tuple(&c, n_ops, pos),
                }
            }
            O::CollectiveBroadcast => {
                let group = group_of(inst, self.me, self.devs)?;
                let c = self.exchange(inst, group, coll::contribution(operands))?;
                Ok(coll::collective_broadcast(&c))
            }
            O::CollectivePermute => {
                if n_ops != 1 {
                    return Err(EvalError::unsupported(
                        "collective-permute with in-place output buffers (combined form)",
                    ));
                }
                let raw = collective_view(inst)?.source_target_pairs;
                let pairs = device_pairs(inst, raw, self.devs)?;
                let source = pairs.iter().find(|&&(_, t)| t == self.me).map(|&(s, _)| s);
                let group = pair_participants(&pairs);
                if !group.contains(&self.me) {
                    // Neither source nor target: zeros, no rendezvous.
                    return Literal::zeros(&operands[0].shape())
                        .ok_or_else(|| EvalError::limit("collective-permute result too large"));
                }
                let c = self.exchange(inst, group.clone(), operands[0].clone())?;
                match source {
                    Some(s) => {
                        let at = group
                            .iter()
                            .position(|&m| m == s)
                            .expect("sources are participants");
                        Ok((*c[at]).clone())
                    }
                    None => Literal::zeros(&operands[0].shape())
                        .ok_or_else(|| EvalError::limit("collective-permute result too large")),
                }
            }
            op => Err(EvalError::unsupported(format!(
                "collective {op} across replicas"
            ))),
        }
    }

    fn infeed(&mut self, inst: &Instruction, shape: &Shape) -> EResult<Literal> {
        if shape.as_tuple().is_some_and(|t| t.is_empty()) {
            // An empty tuple infeed reads nothing (spec).
            return Ok(Literal::Tuple(vec![]));
        }
        match self.io.infeed.pop_front() {
            Some(v) => {
                check_shape("infeed data", &v, shape)?;
                Ok(v)
            }
            None => Err(self.hub.wait_forever(
                self.me,
                &inst.name,
                format!("infeed of {shape}; the infeed queue is empty"),
            )),
        }
    }

    fn outfeed(&mut self, inst: &Instruction, value: &Literal) -> EResult<()> {
        if let hlo::View::Outfeed { shape: Some(s) } = inst.view() {
            check_shape("outfeed value", value, s)?;
        }
        self.io.outfeed.push(value.clone());
        Ok(())
    }

    fn send(&mut self, inst: &Instruction, value: &Literal) -> EResult<()> {
        let ch = channel(inst)?;
        if transfer(inst).1 {
            self.io.host_send.push((ch, value.clone()));
            return Ok(());
        }
        let me = self.me;
        let targets: Vec<usize> = self
            .peers(ch)?
            .iter()
            .filter(|&&(s, _)| s == me)
            .map(|&(_, t)| t)
            .collect();
        for dst in targets {
            self.hub.post(
                MailKey {
                    channel: ch,
                    src: me,
                    dst,
                },
                Arc::new(value.clone()),
            );
        }
        Ok(())
    }

    fn recv(&mut self, inst: &Instruction, shape: &Shape) -> EResult<Literal> {
        let ch = channel(inst)?;
        if transfer(inst).1 {
            let Some(at) = self.io.host_recv.iter().position(|(c, _)| *c == ch) else {
                let what = format!("host recv on channel {ch}; the host sends nothing more on it");
                return Err(self.hub.wait_forever(self.me, &inst.name, what));
            };
            let (_, v) = self.io.host_recv.remove(at).expect("position is in range");
            check_shape(&format!("host data on channel {ch}"), &v, shape)?;
            return Ok(v);
        }
        let me = self.me;
        let source = self
            .peers(ch)?
            .iter()
            .find(|&&(_, t)| t == me)
            .map(|&(s, _)| s);
        let Some(src) = source else {
            // Nobody sends to this replica on this channel: zeros, as collective-permute.
            return Literal::zeros(shape).ok_or_else(|| EvalError::limit("recv buffer too large"));
        };
        let what = format!("recv on channel {ch} from replica {src}; nothing sent yet");
        let v = self.hub.take(
            me,
            MailKey {
                channel: ch,
                src,
                dst: me,
            },
            &inst.name,
            what,
        )?;
        check_shape(
            &format!("data sent on channel {ch} by replica {src}"),
            &v,
            shape,
        )?;
        Ok((*v).clone())
    }

    fn rng(&mut self) -> &mut RngState {
        &mut self.rng
    }
}
