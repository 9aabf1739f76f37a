//! Who talks to whom: replica groups of collectives, source→target pairs of
//! collective-permute and of device-to-device send/recv.
//!
//! systole runs modules with `num_partitions <= 1`, so every collective mode of XLA
//! (cross-replica, cross-replica-and-partition, flattened ids with `use_global_device_ids`)
//! names replica ids, and `PartitionId` is 0. A module with `num_partitions > 1` is rejected
//! as "not supported yet" by [`check_partitions`].
//!
//! Invariants of the results: every id is in `0..n`, no id appears twice in one list of
//! groups, and a group is listed in the order the attribute gives (that order decides where
//! contributions land in all-gather, reduce-scatter and all-to-all).

use crate::eval::error::EvalError;
use crate::ir::{Instruction, Module};

/// Rejects modules this runner cannot place: more than one partition.
pub fn check_partitions(module: &Module) -> Result<(), EvalError> {
    match module.config.num_partitions {
        Some(p) if p > 1 => Err(EvalError::unsupported(format!(
            "num_partitions={p} (multi-partition SPMD modules); run the per-device program with \
             replica_count instead"
        ))),
        _ => Ok(()),
    }
}

fn check_id(id: i64, n: usize) -> Result<usize, EvalError> {
    if id < 0 || id as u64 >= n as u64 {
        return Err(EvalError::bad_input(format!(
            "replica id {id} is out of range for {n} replicas"
        )));
    }
    Ok(id as usize)
}

/// All groups of a collective: `replica_groups` absent or `{}` means one group of all
/// replicas `0..n` in order.
pub fn all_groups(inst: &Instruction, n: usize) -> Result<Vec<Vec<usize>>, EvalError> {
    let groups = match &inst.attrs.replica_groups {
        None => return Ok(vec![(0..n).collect()]),
        Some(g) => g
            .expand()
            .ok_or_else(|| EvalError::invalid("malformed iota replica_groups"))?,
    };
    if groups.is_empty() || (groups.len() == 1 && groups[0].is_empty()) {
        return Ok(vec![(0..n).collect()]);
    }
    let mut seen = vec![false; n];
    let mut out = Vec::with_capacity(groups.len());
    for g in &groups {
        if g.is_empty() {
            return Err(EvalError::invalid("empty replica group"));
        }
        let mut members = Vec::with_capacity(g.len());
        for &id in g {
            let r = check_id(id, n)?;
            if std::mem::replace(&mut seen[r], true) {
                return Err(EvalError::invalid(format!(
                    "replica {r} appears in more than one replica group"
                )));
            }
            members.push(r);
        }
        out.push(members);
    }
    Ok(out)
}

/// The group (members in group order) that `replica` belongs to.
pub fn group_of(inst: &Instruction, replica: usize, n: usize) -> Result<Vec<usize>, EvalError> {
    all_groups(inst, n)?
        .into_iter()
        .find(|g| g.contains(&replica))
        .ok_or_else(|| {
            EvalError::bad_input(format!(
                "replica {replica} is in none of the replica groups"
            ))
        })
}

/// Validated `(source, target)` pairs: ids in range, no source twice, no target twice.
pub fn check_pairs(pairs: &[(i64, i64)], n: usize) -> Result<Vec<(usize, usize)>, EvalError> {
    let mut src_seen = vec![false; n];
    let mut dst_seen = vec![false; n];
    let mut out = Vec::with_capacity(pairs.len());
    for &(s, t) in pairs {
        let (s, t) = (check_id(s, n)?, check_id(t, n)?);
        if std::mem::replace(&mut src_seen[s], true) || std::mem::replace(&mut dst_seen[t], true) {
            return Err(EvalError::invalid(format!(
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
pub fn send_recv_pairs(inst: &Instruction) -> Result<Option<Vec<(i64, i64)>>, EvalError> {
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
        EvalError::invalid(format!(
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
        assert_eq!(all_groups(&i, 3).unwrap(), vec![vec![0, 1, 2]]);
        i.attrs.replica_groups = Some(ReplicaGroups::List(vec![]));
        assert_eq!(group_of(&i, 2, 3).unwrap(), vec![0, 1, 2]);
    }

    #[test]
    fn list_and_iota_groups() {
        let mut i = inst();
        i.attrs.replica_groups = Some(ReplicaGroups::List(vec![vec![0, 2], vec![1, 3]]));
        assert_eq!(group_of(&i, 3, 4).unwrap(), vec![1, 3]);
        // [2,2]<=[2,2]T(1,0) is {{0,2},{1,3}}.
        i.attrs.replica_groups = Some(ReplicaGroups::Iota {
            group_dims: vec![2, 2],
            reshape_dims: vec![2, 2],
            transpose: Some(vec![1, 0]),
        });
        assert_eq!(group_of(&i, 2, 4).unwrap(), vec![0, 2]);
        i.attrs.replica_groups = Some(ReplicaGroups::List(vec![vec![0, 1], vec![1, 2]]));
        assert!(all_groups(&i, 3).is_err());
        i.attrs.replica_groups = Some(ReplicaGroups::List(vec![vec![0, 5]]));
        assert!(all_groups(&i, 3).is_err());
        i.attrs.replica_groups = Some(ReplicaGroups::List(vec![vec![0]]));
        assert!(group_of(&i, 1, 2).is_err());
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
