//! Replica groups and ids of collectives, checked against the id space of the collective's
//! group mode (XLA's `CollectiveOpGroupMode`):
//!
//! | `channel_id` | `use_global_device_ids` | mode | groups name | a group holds |
//! |---|---|---|---|---|
//! | absent | absent/false | cross-replica | replica ids | those replicas, per partition |
//! | present | (op without the attribute: all-to-all, collective-permute, collective-broadcast) | cross-partition | partition ids | those partitions, per replica |
//! | present | absent/false (all-reduce, reduce-scatter, all-gather) | cross-replica-and-partition | replica ids | every partition of those replicas |
//! | present | true | flattened ids | device ids `r·P + p` | those devices |
//!
//! With one partition every mode names replica ids (a channel id changes nothing).

use super::{Args, InferResult, MAX_REPLICAS};
use crate::opcode::Opcode;

/// XLA's collective group modes (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupMode {
    CrossReplica,
    CrossPartition,
    CrossReplicaAndPartition,
    FlattenedIds,
}

/// Ops that carry `use_global_device_ids`.
fn has_global_ids(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::AllReduce
            | Opcode::AllReduceStart
            | Opcode::ReduceScatter
            | Opcode::AllGather
            | Opcode::AllGatherStart
    )
}

/// The group mode of a collective `op` with or without a channel id.
pub fn group_mode(
    op: Opcode,
    has_channel: bool,
    use_global_device_ids: Option<bool>,
) -> InferResult<GroupMode> {
    match (has_channel, use_global_device_ids) {
        (false, Some(true)) => Err("use_global_device_ids=true needs a channel_id".into()),
        (false, _) => Ok(GroupMode::CrossReplica),
        (true, Some(true)) => Ok(GroupMode::FlattenedIds),
        (true, _) if has_global_ids(op) => Ok(GroupMode::CrossReplicaAndPartition),
        (true, _) => Ok(GroupMode::CrossPartition),
    }
}

/// `(what the ids name, how many there are, devices per id in a group)` for `mode`.
pub fn id_space(mode: GroupMode, replicas: i64, partitions: i64) -> (&'static str, i64, i64) {
    match mode {
        GroupMode::CrossReplica => ("replica", replicas, 1),
        GroupMode::CrossPartition => ("partition", partitions, 1),
        GroupMode::CrossReplicaAndPartition => ("replica", replicas, partitions),
        GroupMode::FlattenedIds => ("device", replicas * partitions, 1),
    }
}

/// Group size of a collective in devices: the size of every group (all must be equal), or
/// the whole id space when no groups are given, times the partitions per replica in
/// cross-replica-and-partition mode. Checks ids are in range and unique.
pub(crate) fn group_size(a: &Args) -> InferResult<i64> {
    let mode = group_mode(
        a.op,
        a.attrs.channel_id.is_some(),
        a.attrs.use_global_device_ids,
    )?;
    let (what, n, per) = id_space(mode, a.cx.replica_count, a.cx.num_partitions);
    let groups = match &a.attrs.replica_groups {
        None => Vec::new(),
        Some(g) => check_groups(g, n, what)?,
    };
    if groups.is_empty() {
        if mode == GroupMode::FlattenedIds {
            return Err("use_global_device_ids=true needs non-empty replica_groups".into());
        }
        return Ok(n * per);
    }
    Ok(groups[0].len() as i64 * per)
}

/// Expands and checks replica groups naming replica ids (see [`check_groups`]).
pub fn check_replica_groups(
    g: &crate::attrs::ReplicaGroups,
    replica_count: i64,
) -> InferResult<Vec<Vec<i64>>> {
    check_groups(g, replica_count, "replica")
}

/// Expands and checks groups of `what` ids: ids in `[0, n)`, each id in at most one group, no
/// empty group, all groups the same size, and every id named exactly once.
pub fn check_groups(
    g: &crate::attrs::ReplicaGroups,
    replica_count: i64,
    what: &str,
) -> InferResult<Vec<Vec<i64>>> {
    let groups = g.expand().ok_or_else(|| g.malformed_reason().to_string())?;
    if groups.is_empty() {
        return Ok(groups);
    }
    let n = replica_count_usize(replica_count)?;
    let mut seen = vec![false; n];
    let size = groups[0].len();
    for grp in &groups {
        if grp.is_empty() {
            return Err("replica_groups contains an empty group".into());
        }
        if grp.len() != size {
            return Err(format!(
                "replica_groups must all have the same size, got groups of {size} and {}",
                grp.len()
            ));
        }
        for &r in grp {
            if r < 0 || r as u64 >= n as u64 {
                return Err(format!(
                    "{what} id {r} in replica_groups is out of range: the module has {}",
                    space(what, replica_count)
                ));
            }
            if std::mem::replace(&mut seen[r as usize], true) {
                return Err(format!(
                    "{what} id {r} appears in more than one replica group"
                ));
            }
        }
    }
    if let Some(missing) = seen.iter().position(|&s| !s) {
        return Err(format!(
            "replica_groups must name every {what} exactly once; {what} {missing} is missing ({})",
            space(what, replica_count)
        ));
    }
    Ok(groups)
}

/// How the size of an id space is written in messages.
fn space(what: &str, n: i64) -> String {
    match what {
        "replica" => format!("replica_count={n}"),
        "partition" => format!("num_partitions={n}"),
        _ => format!("{n} devices (replica_count × num_partitions)"),
    }
}

/// `replica_count` as a size, checked against [`MAX_REPLICAS`].
pub(crate) fn replica_count_usize(replica_count: i64) -> InferResult<usize> {
    if !(1..=MAX_REPLICAS).contains(&replica_count) {
        return Err(format!(
            "replica_count={replica_count} must be in 1..={MAX_REPLICAS}"
        ));
    }
    Ok(replica_count as usize)
}
