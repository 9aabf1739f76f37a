//! Who talks to whom: replica groups of collectives, source→target pairs of
//! collective-permute and of device-to-device send/recv.
//!
//! **Devices.** A module runs on `replica_count × num_partitions` devices; device
//! `d = replica · P + partition` (the numbering of case files and of the simulated chips).
//! Every result of this file is in device indices.
//!
//! **Group modes** (XLA's `CollectiveOpGroupMode`, from whether the instruction has a
//! `channel_id` and, for all-reduce, reduce-scatter and all-gather, `use_global_device_ids`):
//! - no `channel_id`: **cross-replica** — `replica_groups` name replica ids; each group is formed
//!   once per partition, from the devices of those replicas in that partition;
//! - `channel_id` on an op without `use_global_device_ids` (all-to-all, collective-permute,
//!   collective-broadcast): **cross-partition** — groups (and permute pairs) name partition ids,
//!   formed once per replica;
//! - `channel_id` with `use_global_device_ids` false or absent on all-reduce, reduce-scatter,
//!   all-gather: **cross-replica-and-partition** — groups name replica ids; a group holds every
//!   partition of those replicas, replica-major;
//! - `channel_id` with `use_global_device_ids=true`: **flattened ids** — groups name device ids.
//!
//! Empty `replica_groups` mean all ids of the mode's id space. With one partition every mode
//! names replica ids, as before.
//!
//! Invariants of the results: every id is in range, no device appears twice in one list of
//! groups, and a group is listed in the order the attribute gives (that order decides where
//! contributions land in all-gather, reduce-scatter and all-to-all).

use crate::ir::{Instruction, Module};
use crate::opcode::Opcode;
use std::collections::BTreeMap;

/// A module whose groups or pairs do not fit the devices it runs on (`BadInput`: the run's
/// device count; `Invalid`: the module itself).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    /// The devices given do not fit the module.
    #[error("bad input: {0}")]
    BadInput(String),
    /// The module's attributes are malformed.
    #[error("invalid module: {0}")]
    Invalid(String),
}

impl GroupError {
    /// A [`GroupError::BadInput`].
    pub fn bad_input(msg: impl Into<String>) -> GroupError {
        GroupError::BadInput(msg.into())
    }
    /// A [`GroupError::Invalid`].
    pub fn invalid(msg: impl Into<String>) -> GroupError {
        GroupError::Invalid(msg.into())
    }
}

/// The devices a module runs on: `replicas × partitions`, device `r · partitions + p`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Devices {
    pub replicas: usize,
    pub partitions: usize,
}

impl Devices {
    /// `replicas` replicas of one partition.
    pub fn replicas(n: usize) -> Devices {
        Devices {
            replicas: n,
            partitions: 1,
        }
    }

    /// The devices of `module` when it runs on `n` devices: its `num_partitions` (default 1)
    /// must divide `n`, and its `replica_count`, if given, must be `n / num_partitions`.
    pub fn of(module: &Module, n: usize) -> Result<Devices, GroupError> {
        let p = module.config.num_partitions.unwrap_or(1);
        if p < 1 || p as u64 > n.max(1) as u64 || !n.is_multiple_of(p as usize) {
            return Err(GroupError::bad_input(format!(
                "the module declares num_partitions={p}, which does not divide the {n}                  devices requested (devices = replicas × partitions)"
            )));
        }
        let p = p as usize;
        let r = n / p;
        if let Some(c) = module.config.replica_count {
            if c != r as i64 {
                return Err(GroupError::bad_input(format!(
                    "the module declares replica_count={c} and num_partitions={p} but {n}                      devices were requested (devices = replicas × partitions)"
                )));
            }
        }
        Ok(Devices {
            replicas: r,
            partitions: p,
        })
    }

    /// Number of devices.
    pub fn n(&self) -> usize {
        self.replicas * self.partitions
    }

    /// Device of (replica, partition).
    pub fn device(&self, replica: usize, partition: usize) -> usize {
        replica * self.partitions + partition
    }

    /// (replica, partition) of a device.
    pub fn coords(&self, d: usize) -> (usize, usize) {
        (d / self.partitions, d % self.partitions)
    }
}

pub use crate::infer::GroupMode;

/// The group mode of a collective instruction ([`crate::infer::group_mode`]).
pub fn group_mode(inst: &Instruction) -> Result<GroupMode, GroupError> {
    crate::infer::group_mode(
        inst.opcode,
        inst.attrs.channel_id.is_some(),
        inst.attrs.use_global_device_ids,
    )
    .map_err(GroupError::invalid)
}

fn check_id(id: i64, n: usize, what: &str) -> Result<usize, GroupError> {
    if id < 0 || id as u64 >= n as u64 {
        return Err(GroupError::bad_input(format!(
            "{what} id {id} is out of range for {n} {what}s"
        )));
    }
    Ok(id as usize)
}

/// The groups as written (ids of the mode's id space, `0..n`), validated; absent or `{}`
/// means one group of all ids.
fn id_groups(inst: &Instruction, n: usize, what: &str) -> Result<Vec<Vec<usize>>, GroupError> {
    let groups = match &inst.attrs.replica_groups {
        None => return Ok(vec![(0..n).collect()]),
        Some(g) => g
            .expand()
            .ok_or_else(|| GroupError::invalid(g.malformed_reason()))?,
    };
    if groups.is_empty() || (groups.len() == 1 && groups[0].is_empty()) {
        return Ok(vec![(0..n).collect()]);
    }
    let mut seen = vec![false; n];
    let mut out = Vec::with_capacity(groups.len());
    for g in &groups {
        if g.is_empty() {
            return Err(GroupError::invalid("empty replica group"));
        }
        let mut members = Vec::with_capacity(g.len());
        for &id in g {
            let r = check_id(id, n, what)?;
            if std::mem::replace(&mut seen[r], true) {
                return Err(GroupError::invalid(format!(
                    "{what} {r} appears in more than one replica group"
                )));
            }
            members.push(r);
        }
        out.push(members);
    }
    Ok(out)
}

/// All groups of a collective on `devs`, as device indices in group order.
pub fn all_groups(inst: &Instruction, devs: Devices) -> Result<Vec<Vec<usize>>, GroupError> {
    let (r, p) = (devs.replicas, devs.partitions);
    Ok(match group_mode(inst)? {
        GroupMode::CrossReplica => {
            let gs = id_groups(inst, r, "replica")?;
            (0..p)
                .flat_map(|part| {
                    gs.iter()
                        .map(move |g| g.iter().map(|&x| devs.device(x, part)).collect())
                })
                .collect()
        }
        GroupMode::CrossPartition => {
            let gs = id_groups(inst, p, "partition")?;
            (0..r)
                .flat_map(|rep| {
                    gs.iter()
                        .map(move |g| g.iter().map(|&x| devs.device(rep, x)).collect())
                })
                .collect()
        }
        GroupMode::CrossReplicaAndPartition => id_groups(inst, r, "replica")?
            .iter()
            .map(|g| {
                g.iter()
                    .flat_map(|&rep| (0..p).map(move |part| devs.device(rep, part)))
                    .collect()
            })
            .collect(),
        GroupMode::FlattenedIds => {
            if inst.attrs.replica_groups.as_ref().is_none_or(|g| {
                g.expand()
                    .is_some_and(|v| v.is_empty() || (v.len() == 1 && v[0].is_empty()))
            }) {
                return Err(GroupError::invalid(
                    "use_global_device_ids=true needs non-empty replica_groups",
                ));
            }
            id_groups(inst, devs.n(), "device")?
        }
    })
}

/// The group (devices in group order) that device `me` belongs to.
pub fn group_of(inst: &Instruction, me: usize, devs: Devices) -> Result<Vec<usize>, GroupError> {
    all_groups(inst, devs)?
        .into_iter()
        .find(|g| g.contains(&me))
        .ok_or_else(|| {
            let (r, p) = devs.coords(me);
            GroupError::bad_input(format!(
                "device {me} (replica {r}, partition {p}) is in none of the replica groups"
            ))
        })
}

/// The source→target device pairs of a collective-permute (or of a send/recv channel, `inst`
/// being one of its instructions): the pairs name replica ids (no `channel_id`: once per
/// partition) or partition ids (with one: once per replica), validated in that id space.
pub fn device_pairs(
    inst: &Instruction,
    pairs: &[(i64, i64)],
    devs: Devices,
) -> Result<Vec<(usize, usize)>, GroupError> {
    let (r, p) = (devs.replicas, devs.partitions);
    if inst.attrs.channel_id.is_some() && p > 1 {
        let ps = check_pairs(pairs, p)?;
        Ok((0..r)
            .flat_map(|rep| {
                ps.iter()
                    .map(move |&(s, t)| (devs.device(rep, s), devs.device(rep, t)))
            })
            .collect())
    } else {
        let rs = check_pairs(pairs, r)?;
        Ok((0..p)
            .flat_map(|part| {
                rs.iter()
                    .map(move |&(s, t)| (devs.device(s, part), devs.device(t, part)))
            })
            .collect())
    }
}

/// Validated `(source, target)` pairs: ids in range, no source twice, no target twice.
pub fn check_pairs(pairs: &[(i64, i64)], n: usize) -> Result<Vec<(usize, usize)>, GroupError> {
    let mut src_seen = vec![false; n];
    let mut dst_seen = vec![false; n];
    let mut out = Vec::with_capacity(pairs.len());
    for &(s, t) in pairs {
        let (s, t) = (check_id(s, n, "replica")?, check_id(t, n, "replica")?);
        if std::mem::replace(&mut src_seen[s], true) || std::mem::replace(&mut dst_seen[t], true) {
            return Err(GroupError::invalid(format!(
                "two source_target_pairs share a source or a target ({s},{t})"
            )));
        }
        out.push((s, t));
    }
    Ok(out)
}

/// Participants of a collective-permute: every replica named in a pair, ascending.
pub fn pair_participants(pairs: &[(usize, usize)]) -> Vec<usize> {
    let mut v: Vec<usize> = pairs.iter().flat_map(|&(s, t)| [s, t]).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Frontend attribute naming the peers of device-to-device send/recv.
pub const SEND_RECV_PAIRS_ATTR: &str = "_xla_send_recv_source_target_pairs";

/// The `_xla_send_recv_source_target_pairs` of a send/recv, if the instruction carries it in
/// its `frontend_attributes` (value quoted or not: `{{0,1},{1,0}}` or `"{{0,1},{1,0}}"`).
pub fn send_recv_pairs(inst: &Instruction) -> Result<Option<Vec<(i64, i64)>>, GroupError> {
    let Some((_, text)) = inst
        .attrs
        .extra
        .iter()
        .find(|(k, _)| k == "frontend_attributes")
    else {
        return Ok(None);
    };
    let Some(at) = text.find(SEND_RECV_PAIRS_ATTR) else {
        return Ok(None);
    };
    let bad = || {
        GroupError::invalid(format!(
            "cannot read {SEND_RECV_PAIRS_ATTR} in frontend_attributes={text}"
        ))
    };
    let rest = text[at + SEND_RECV_PAIRS_ATTR.len()..].trim_start();
    let rest = rest.strip_prefix('=').ok_or_else(bad)?.trim_start();
    let rest = rest.strip_prefix('"').unwrap_or(rest);
    // Take the balanced `{...}` group.
    let mut depth = 0usize;
    let mut end = None;
    for (i, c) in rest.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1).ok_or_else(bad)?;
                if depth == 0 {
                    end = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let body = &rest[..end.ok_or_else(bad)?];
    let body = body.strip_prefix('{').ok_or_else(bad)?;
    let mut pairs = Vec::new();
    for item in body.split('}') {
        let item = item.trim_matches(|c: char| c == ',' || c == '{' || c.is_whitespace());
        if item.is_empty() {
            continue;
        }
        let nums: Vec<i64> = item
            .split(',')
            .map(|s| s.trim().parse::<i64>())
            .collect::<Result<_, _>>()
            .map_err(|_| bad())?;
        if nums.len() != 2 {
            return Err(bad());
        }
        pairs.push((nums[0], nums[1]));
    }
    Ok(Some(pairs))
}

/// `_xla_send_recv_source_target_pairs` per channel id, gathered once from every send/recv of
/// the module. `Err` holds a message for channels whose instructions disagree or are malformed.
pub type ChannelPairs = BTreeMap<i64, Result<Vec<(usize, usize)>, String>>;

/// Builds the [`ChannelPairs`] table (device pairs) of a module on `devs`.
pub fn channel_pairs(module: &Module, devs: Devices) -> ChannelPairs {
    let mut table = ChannelPairs::new();
    for comp in module.comps.values() {
        for inst in comp.insts.values() {
            if !matches!(inst.opcode, Opcode::Send | Opcode::Recv)
                || inst.attrs.is_host_transfer == Some(true)
            {
                continue;
            }
            let Some(ch) = inst.attrs.channel_id else {
                continue;
            };
            let pairs = match send_recv_pairs(inst)
                .and_then(|p| p.map(|p| device_pairs(inst, &p, devs)).transpose())
            {
                Ok(Some(p)) => Ok(p),
                Ok(None) => continue,
                Err(e) => Err(format!("%{}: {e}", inst.name)),
            };
            match table.get(&ch) {
                Some(old) if *old != pairs => {
                    table.insert(
                        ch,
                        Err(format!("send/recv instructions of channel {ch} name different source-target pairs")),
                    );
                }
                Some(_) => {}
                None => {
                    table.insert(ch, pairs);
                }
            }
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::ReplicaGroups;
    use crate::opcode::Opcode;
    use crate::shape::Shape;
    use crate::types::ElementType;

    fn inst() -> Instruction {
        Instruction {
            name: "c".into(),
            opcode: Opcode::AllReduce,
            shape: Shape::scalar(ElementType::F32),
            operands: vec![],
            attrs: Default::default(),
            span: crate::diag::Span::NONE,
        }
    }

    #[test]
    fn empty_groups_mean_all_replicas() {
        let mut i = inst();
        assert_eq!(all_groups(&i, R(3)).unwrap(), vec![vec![0, 1, 2]]);
        i.attrs.replica_groups = Some(ReplicaGroups::List(vec![]));
        assert_eq!(group_of(&i, 2, R(3)).unwrap(), vec![0, 1, 2]);
    }

    #[test]
    fn list_and_iota_groups() {
        let mut i = inst();
        i.attrs.replica_groups = Some(ReplicaGroups::List(vec![vec![0, 2], vec![1, 3]]));
        assert_eq!(group_of(&i, 3, R(4)).unwrap(), vec![1, 3]);
        // [2,2]<=[2,2]T(1,0) is {{0,2},{1,3}}.
        i.attrs.replica_groups = Some(ReplicaGroups::Iota {
            group_dims: vec![2, 2],
            reshape_dims: vec![2, 2],
            transpose: Some(vec![1, 0]),
        });
        assert_eq!(group_of(&i, 2, R(4)).unwrap(), vec![0, 2]);
        i.attrs.replica_groups = Some(ReplicaGroups::List(vec![vec![0, 1], vec![1, 2]]));
        assert!(all_groups(&i, R(3)).is_err());
        i.attrs.replica_groups = Some(ReplicaGroups::List(vec![vec![0, 5]]));
        assert!(all_groups(&i, R(3)).is_err());
        i.attrs.replica_groups = Some(ReplicaGroups::List(vec![vec![0]]));
        assert!(group_of(&i, 1, R(2)).is_err());
    }

    #[allow(non_snake_case)]
    fn R(n: usize) -> Devices {
        Devices::replicas(n)
    }

    #[test]
    fn the_four_group_modes_on_two_replicas_of_three_partitions() {
        // Devices d = r·3 + p.
        let devs = Devices {
            replicas: 2,
            partitions: 3,
        };
        let mut i = inst();
        // Cross-replica: groups of replica ids, once per partition.
        i.attrs.replica_groups = Some(ReplicaGroups::List(vec![vec![1, 0]]));
        assert_eq!(
            all_groups(&i, devs).unwrap(),
            vec![vec![3, 0], vec![4, 1], vec![5, 2]]
        );
        // Cross-replica-and-partition: every partition of the named replicas, replica-major.
        i.attrs.channel_id = Some(1);
        assert_eq!(all_groups(&i, devs).unwrap(), vec![vec![3, 4, 5, 0, 1, 2]]);
        // Flattened ids.
        i.attrs.use_global_device_ids = Some(true);
        i.attrs.replica_groups = Some(ReplicaGroups::List(vec![vec![0, 4], vec![5, 1, 2, 3]]));
        assert_eq!(group_of(&i, 2, devs).unwrap(), vec![5, 1, 2, 3]);
        i.attrs.replica_groups = None;
        assert!(all_groups(&i, devs).is_err());
        // Cross-partition (an op without use_global_device_ids): partition ids, per replica.
        let mut a = inst();
        a.opcode = Opcode::AllToAll;
        a.attrs.channel_id = Some(2);
        a.attrs.replica_groups = Some(ReplicaGroups::List(vec![vec![2, 0], vec![1]]));
        assert_eq!(
            all_groups(&a, devs).unwrap(),
            vec![vec![2, 0], vec![1], vec![5, 3], vec![4]]
        );
        // Permute pairs: partition ids with a channel, replica ids without.
        assert_eq!(
            device_pairs(&a, &[(0, 1)], devs).unwrap(),
            vec![(0, 1), (3, 4)]
        );
        a.attrs.channel_id = None;
        assert_eq!(
            device_pairs(&a, &[(0, 1)], devs).unwrap(),
            vec![(0, 3), (1, 4), (2, 5)]
        );
        // use_global_device_ids without a channel is invalid.
        i.attrs.channel_id = None;
        assert!(group_mode(&i).is_err());
    }

    #[test]
    fn pairs_are_validated() {
        assert_eq!(
            check_pairs(&[(0, 1), (1, 2)], 3).unwrap(),
            vec![(0, 1), (1, 2)]
        );
        assert!(check_pairs(&[(0, 1), (2, 1)], 3).is_err());
        assert!(check_pairs(&[(0, 3)], 3).is_err());
        assert_eq!(pair_participants(&[(3, 1), (1, 0)]), vec![0, 1, 3]);
    }

    #[test]
    fn send_recv_pairs_from_frontend_attributes() {
        let mut i = inst();
        assert_eq!(send_recv_pairs(&i).unwrap(), None);
        i.attrs.extra.push((
            "frontend_attributes".into(),
            "{_xla_send_recv_source_target_pairs={{0,1},{1,0}}}".into(),
        ));
        assert_eq!(send_recv_pairs(&i).unwrap(), Some(vec![(0, 1), (1, 0)]));
        i.attrs.extra[0].1 = "{a=\"b\",_xla_send_recv_source_target_pairs=\"{{2,3}}\"}".into();
        assert_eq!(send_recv_pairs(&i).unwrap(), Some(vec![(2, 3)]));
        i.attrs.extra[0].1 = "{_xla_send_recv_source_target_pairs={{2,x}}}".into();
        assert!(send_recv_pairs(&i).is_err());
    }
}
