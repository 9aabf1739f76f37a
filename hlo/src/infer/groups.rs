//! Replica groups and replica ids of collectives, checked against the replica count.

use super::{Args, InferResult, MAX_REPLICAS};

/// Group size of a collective: the size of every replica group (all must be equal), or the
/// replica count when no groups are given. Checks ids are in range and unique.
pub(crate) fn group_size(a: &Args) -> InferResult<i64> {
    let groups = match &a.attrs.replica_groups {
        None => return Ok(a.cx.replica_count),
        Some(g) => check_replica_groups(g, a.cx.replica_count)?,
    };
    if groups.is_empty() {
        return Ok(a.cx.replica_count);
    }
    Ok(groups[0].len() as i64)
}

/// Expands and checks replica groups: ids in `[0, replica_count)`, each id in at most one
/// group, no empty group, all groups the same size, and every replica named exactly once.
pub fn check_replica_groups(
    g: &crate::attrs::ReplicaGroups,
    replica_count: i64,
) -> InferResult<Vec<Vec<i64>>> {
    let groups = g.expand().ok_or_else(|| {
        "replica_groups in iota form [G,S]<=[dims]T(perm) is malformed (sizes must multiply to G*S and the transpose must be a permutation)".to_string()
    })?;
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
                    "replica id {r} in replica_groups is out of range: the module has replica_count={replica_count}"
                ));
            }
            if std::mem::replace(&mut seen[r as usize], true) {
                return Err(format!(
                    "replica id {r} appears in more than one replica group"
                ));
            }
        }
    }
    if let Some(missing) = seen.iter().position(|&s| !s) {
        return Err(format!(
            "replica_groups must name every replica exactly once; replica {missing} is missing (replica_count={replica_count})"
        ));
    }
    Ok(groups)
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
