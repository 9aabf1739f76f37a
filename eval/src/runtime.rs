//! The evaluator's window on the world: replica context and every op with a side effect.
//!
//! One `&mut dyn Runtime` serves one replica. [`SingleReplica`] is the one-replica
//! implementation (collectives over groups of one are computed locally; infeed, outfeed and host
//! send/recv use in-memory queues in [`HostIo`]). The multi-replica implementation lives in
//! `eval::replica` and runs one interpreter per replica thread, each with its own runtime object.
//!
//! Contract (see /work/notes/eval-interfaces.md): the interpreter calls
//! [`Runtime::collective`] for all-reduce, all-gather, reduce-scatter, all-to-all,
//! collective-permute, collective-broadcast and ragged-all-to-all (and their `-start` forms,
//! with `inst.opcode` the start opcode); it returns the value the synchronous op returns.

use crate::error::{EResult, EvalError};
use hlo::ir::Instruction;
use hlo::literal::{ArrayLiteral, Literal};
use hlo::opcode::Opcode;
use hlo::shape::Shape;
use std::collections::VecDeque;

/// Applies a collective's `to_apply` elementwise to two arrays of the same shape.
pub type Combine<'a> = dyn FnMut(&ArrayLiteral, &ArrayLiteral) -> EResult<ArrayLiteral> + 'a;

/// State of the `rng` ops' generator (the stream itself is defined by eval::linalg).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RngState {
    pub seed: u64,
    /// Number of values (or calls) drawn so far.
    pub counter: u64,
}

/// Host-side queues of one replica. Inputs are consumed from the front; outputs appended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostIo {
    /// Literals the infeed instructions consume, in program order.
    pub infeed: VecDeque<Literal>,
    /// Literals the outfeed instructions produced, in program order.
    pub outfeed: Vec<Literal>,
    /// `(channel_id, value)` the host provides to `recv(..., is_host_transfer=true)`, in order.
    pub host_recv: VecDeque<(i64, Literal)>,
    /// `(channel_id, value)` delivered by `send(..., is_host_transfer=true)`, in order.
    pub host_send: Vec<(i64, Literal)>,
}

/// What one replica is given (for `eval::replica::run_replicas`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplicaInput {
    pub args: Vec<Literal>,
    pub io: HostIo,
}

/// What one replica produced (for `eval::replica::run_replicas`).
#[derive(Clone, Debug, PartialEq)]
pub struct ReplicaOutput {
    pub result: Literal,
    pub io: HostIo,
}

/// Replica context and side effects, one object per replica.
pub trait Runtime {
    fn replica_id(&self) -> i64;
    fn partition_id(&self) -> i64 {
        0
    }
    fn replica_count(&self) -> i64;
    /// Runs a collective (see the module docs) and returns this replica's result.
    fn collective(
        &mut self,
        inst: &Instruction,
        operands: &[&Literal],
        combine: &mut Combine<'_>,
    ) -> EResult<Literal>;
    /// The data an `infeed` of data shape `shape` reads (without the token).
    fn infeed(&mut self, inst: &Instruction, shape: &Shape) -> EResult<Literal>;
    /// Delivers the value of an `outfeed`.
    fn outfeed(&mut self, inst: &Instruction, value: &Literal) -> EResult<()>;
    /// Delivers the data of a `send` (host transfer or to another replica).
    fn send(&mut self, inst: &Instruction, value: &Literal) -> EResult<()>;
    /// The data a `recv-done` of data shape `shape` receives (without the token); `inst` is the
    /// recv-done, which carries its recv's `channel_id` and `is_host_transfer`.
    fn recv(&mut self, inst: &Instruction, shape: &Shape) -> EResult<Literal>;
    /// The generator state of the `rng` ops.
    fn rng(&mut self) -> &mut RngState;
}

/// One replica, no peers: groups of one, host queues in memory.
#[derive(Clone, Debug, Default)]
pub struct SingleReplica {
    pub io: HostIo,
    pub rng: RngState,
}

impl SingleReplica {
    pub fn new(io: HostIo) -> SingleReplica {
        SingleReplica {
            io,
            rng: RngState::default(),
        }
    }
}

/// The attributes of collective `inst`.
pub(crate) fn collective_view(inst: &Instruction) -> EResult<hlo::CollectiveView<'_>> {
    match inst.view() {
        hlo::View::Collective(c) => Ok(c),
        _ => Err(EvalError::malformed(inst)),
    }
}

/// `(channel_id, is_host_transfer)` of a send or recv (`(None, false)` for other opcodes).
pub(crate) fn transfer(inst: &Instruction) -> (Option<i64>, bool) {
    match inst.view() {
        hlo::View::Transfer {
            channel_id,
            is_host_transfer,
        } => (channel_id, is_host_transfer),
        _ => (None, false),
    }
}

fn channel(inst: &Instruction) -> i64 {
    transfer(inst).0.unwrap_or(0)
}

/// Checks that every replica group of `inst` is `{0}` (or that there are no groups).
fn check_groups_of_one(inst: &Instruction) -> EResult<()> {
    if let Some(g) = collective_view(inst)?.replica_groups {
        let groups = g
            .expand()
            .ok_or_else(|| EvalError::invalid("malformed replica_groups"))?;
        for grp in groups {
            if !(grp.is_empty() || grp == [0]) {
                return Err(EvalError::bad_input(format!(
                    "replica group {grp:?} names replicas other than 0 in a one-replica run"
                )));
            }
        }
    }
    Ok(())
}

fn one_or_tuple(vals: Vec<Literal>) -> Literal {
    if vals.len() == 1 {
        vals.into_iter().next().expect("one value")
    } else {
        Literal::Tuple(vals)
    }
}

impl Runtime for SingleReplica {
    fn replica_id(&self) -> i64 {
        0
    }
    fn replica_count(&self) -> i64 {
        1
    }

    fn collective(
        &mut self,
        inst: &Instruction,
        operands: &[&Literal],
        _combine: &mut Combine<'_>,
    ) -> EResult<Literal> {
        use Opcode as O;
        check_groups_of_one(inst)?;
        let vals: Vec<Literal> = operands.iter().map(|&l| l.clone()).collect();
        match inst.opcode {
            // A group of one: the reduction/gather/scatter over one member is the member itself.
            O::AllReduce
            | O::AllReduceStart
            | O::AllGather
            | O::AllGatherStart
            | O::ReduceScatter
            | O::AllToAll
            | O::CollectiveBroadcast => Ok(one_or_tuple(vals)),
            O::CollectivePermute | O::CollectivePermuteStart => {
                let pairs = collective_view(inst)?.source_target_pairs;
                if let Some(&(s, t)) = pairs.iter().find(|&&(s, t)| s != 0 || t != 0) {
                    return Err(EvalError::bad_input(format!(
                        "collective-permute pair {{{s},{t}}} names a replica other than 0 in a one-replica run"
                    )));
                }
                // Only the first operand is the data (the others are in-place buffers).
                let data = operands
                    .first()
                    .ok_or_else(|| EvalError::invalid("collective-permute without operand"))?;
                if pairs.is_empty() {
                    // No source sends to replica 0: the result is zeros of the operand's shape.
                    Literal::zeros(&data.shape())
                        .ok_or_else(|| EvalError::limit("collective-permute result too large"))
                } else {
                    Ok((*data).clone())
                }
            }
            op => Err(EvalError::unsupported(format!(
                "collective {op} on one replica"
            ))),
        }
    }

    fn infeed(&mut self, inst: &Instruction, shape: &Shape) -> EResult<Literal> {
        let v = self.io.infeed.pop_front().ok_or_else(|| {
            EvalError::Deadlock(format!(
                "infeed %{} waits for data the host never sends",
                inst.name
            ))
        })?;
        if !v.shape().compatible(&shape.without_layout()) {
            return Err(EvalError::bad_input(format!(
                "infeed data has shape {} but %{} reads {}",
                v.shape(),
                inst.name,
                shape
            )));
        }
        Ok(v)
    }

    fn outfeed(&mut self, _inst: &Instruction, value: &Literal) -> EResult<()> {
        self.io.outfeed.push(value.clone());
        Ok(())
    }

    fn send(&mut self, inst: &Instruction, value: &Literal) -> EResult<()> {
        if !transfer(inst).1 {
            return Err(EvalError::Deadlock(format!(
                "send %{} on channel {} has no receiving replica in a one-replica run",
                inst.name,
                channel(inst)
            )));
        }
        self.io.host_send.push((channel(inst), value.clone()));
        Ok(())
    }

    fn recv(&mut self, inst: &Instruction, shape: &Shape) -> EResult<Literal> {
        let ch = channel(inst);
        if !transfer(inst).1 {
            return Err(EvalError::Deadlock(format!(
                "recv %{} on channel {ch} has no sending replica in a one-replica run",
                inst.name
            )));
        }
        let pos = self
            .io
            .host_recv
            .iter()
            .position(|(c, _)| *c == ch)
            .ok_or_else(|| {
                EvalError::Deadlock(format!(
                    "recv %{} waits on host channel {ch}, which the host never sends",
                    inst.name
                ))
            })?;
        let (_, v) = self.io.host_recv.remove(pos).expect("position is in range");
        if !v.shape().compatible(&shape.without_layout()) {
            return Err(EvalError::bad_input(format!(
                "host data on channel {ch} has shape {} but %{} receives {}",
                v.shape(),
                inst.name,
                shape
            )));
        }
        Ok(v)
    }

    fn rng(&mut self) -> &mut RngState {
        &mut self.rng
    }
}
