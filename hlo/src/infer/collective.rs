//! Collective ops (cross-replica): all-reduce, all-gather, reduce-scatter, all-to-all,
//! collective-permute, collective-broadcast, and the start/done halves of the asynchronous
//! forms. Replica ids are checked against `InferCtx::replica_count`.
//!
//! Result rules: all-gather multiplies dimension `d` by the group size, reduce-scatter
//! divides it (it must be divisible), all-to-all keeps the shape (the split dimension must
//! be divisible by the group size).

use super::{array, check_reducer, group_size, Args, InferResult};
use crate::shape::{ArrayShape, Shape};

fn tuple_or_single(v: Vec<Shape>) -> Shape {
    if v.len() == 1 {
        v.into_iter().next().expect("one")
    } else {
        Shape::Tuple(v)
    }
}

/// The per-operand reducer `(T, T) -> T`.
fn check_to_apply(a: &Args, xs: &[&ArrayShape]) -> InferResult<()> {
    let sig = a.comp(a.attrs.to_apply, "to_apply")?;
    for x in xs {
        check_reducer(&sig, &[x.ty], &format!("{} to_apply", a.op))?;
    }
    Ok(())
}

pub(super) fn all_reduce(a: &Args) -> InferResult {
    let xs = a.arrays()?;
    group_size(a)?;
    check_to_apply(a, &xs)?;
    Ok(tuple_or_single(
        a.ops.iter().map(|s| (*s).clone()).collect(),
    ))
}

pub(super) fn all_reduce_done(a: &Args) -> InferResult {
    Ok(a.ops[0].clone())
}

fn gathered(a: &Args) -> InferResult<Vec<Shape>> {
    let xs = a.arrays()?;
    let g = group_size(a)?;
    let d = a.one_dim(xs[0].rank())?;
    xs.iter()
        .map(|x| {
            if d >= x.rank() {
                return Err(format!("all-gather dimension {d} is out of range for {x}"));
            }
            let mut dims = x.dims.clone();
            dims[d] = dims[d]
                .checked_mul(g)
                .ok_or("all-gather result size overflows")?;
            Ok(array(x.ty, dims, Some(x.dynamic.clone())))
        })
        .collect()
}

pub(super) fn all_gather(a: &Args) -> InferResult {
    Ok(tuple_or_single(gathered(a)?))
}

pub(super) fn all_gather_start(a: &Args) -> InferResult {
    let outs = gathered(a)?;
    let ins: Vec<Shape> = a.ops.iter().map(|s| (*s).clone()).collect();
    Ok(Shape::Tuple(vec![
        tuple_or_single(ins),
        tuple_or_single(outs),
    ]))
}

/// The `-done` half of a start/done pair whose start result is `(inputs, outputs, ...)`.
pub(super) fn start_done(a: &Args) -> InferResult {
    match a.ops[0].as_tuple() {
        Some(t) if t.len() >= 2 => Ok(t[1].clone()),
        _ => Err(format!(
            "{} needs the tuple result of the matching -start op, got {}",
            a.op, a.ops[0]
        )),
    }
}

pub(super) fn reduce_scatter(a: &Args) -> InferResult {
    let xs = a.arrays()?;
    let g = group_size(a)?;
    let d = a.one_dim(xs[0].rank())?;
    check_to_apply(a, &xs)?;
    let outs = xs
        .iter()
        .map(|x| {
            if d >= x.rank() {
                return Err(format!("reduce-scatter dimension {d} is out of range for {x}"));
            }
            if g == 0 || x.dims[d] % g != 0 {
                return Err(format!(
                    "reduce-scatter dimension {d} of {x} (size {}) must be divisible by the replica group size {g}",
                    x.dims[d]
                ));
            }
            let mut dims = x.dims.clone();
            dims[d] /= g;
            Ok(array(x.ty, dims, None))
        })
        .collect::<InferResult<Vec<_>>>()?;
    Ok(tuple_or_single(outs))
}

pub(super) fn all_to_all(a: &Args) -> InferResult {
    let xs = a.arrays()?;
    let g = group_size(a)?;
    match &a.attrs.dimensions {
        Some(_) => {
            if xs.len() != 1 {
                return Err("all-to-all with split dimensions= takes exactly one operand".into());
            }
            let x = xs[0];
            let d = a.one_dim(x.rank())?;
            if g == 0 || x.dims[d] % g != 0 {
                return Err(format!(
                    "all-to-all split dimension {d} of {x} (size {}) must be divisible by the replica group size {g}",
                    x.dims[d]
                ));
            }
            Ok(array(x.ty, x.dims.clone(), None))
        }
        None => {
            if xs.len() as i64 != g {
                return Err(format!(
                    "tuple all-to-all takes one operand per group member: expected {g}, got {}",
                    xs.len()
                ));
            }
            Ok(Shape::Tuple(a.ops.iter().map(|s| (*s).clone()).collect()))
        }
    }
}

/// Checks `source_target_pairs`: ids in range, each source and each target at most once.
/// The ids name partitions when the op has a `channel_id` and the module more than one
/// partition (cross-partition mode), else replicas.
fn check_pairs(a: &Args) -> InferResult<()> {
    let pairs = a.req(&a.attrs.source_target_pairs, "source_target_pairs")?;
    let (what, n) = if a.attrs.channel_id.is_some() && a.cx.num_partitions > 1 {
        ("partition", a.cx.num_partitions)
    } else {
        ("replica", a.cx.replica_count)
    };
    let cap = super::replica_count_usize(n)?;
    let mut src = vec![false; cap];
    let mut dst = vec![false; cap];
    for &(s, t) in pairs {
        for r in [s, t] {
            if r < 0 || r >= n {
                return Err(format!(
                    "{what} id {r} in source_target_pairs is out of range: the module has {n} {what}s"
                ));
            }
        }
        if std::mem::replace(&mut src[s as usize], true) {
            return Err(format!(
                "source_target_pairs names source {s} more than once"
            ));
        }
        if std::mem::replace(&mut dst[t as usize], true) {
            return Err(format!(
                "source_target_pairs names target {t} more than once"
            ));
        }
    }
    Ok(())
}

pub(super) fn collective_permute(a: &Args) -> InferResult {
    if a.ops.len() != 1 {
        return Err(super::unsupported(
            "collective-permute with in-place buffer operands",
        ));
    }
    a.array(0)?;
    check_pairs(a)?;
    Ok(a.ops[0].clone())
}

/// `collective-permute-start` returns `(operand, result)` followed by zero or more `u32[]`
/// context values (XLA versions differ in how many); without a declared shape, two.
pub(super) fn collective_permute_start(a: &Args) -> InferResult {
    collective_permute(a)?;
    let x = a.ops[0].clone();
    let u = Shape::scalar(crate::types::ElementType::U32);
    if let Some(d) = a.declared {
        return match d.as_tuple() {
            Some([p, q, rest @ ..])
                if p.compatible(&x) && q.compatible(&x) && rest.iter().all(|r| r.compatible(&u)) =>
            {
                Ok(d.clone())
            }
            _ => Err(format!(
                "collective-permute-start result must be ({x}, {x}) followed by u32[] context values, got {d}"
            )),
        };
    }
    Ok(Shape::Tuple(vec![x.clone(), x, u.clone(), u]))
}

pub(super) fn collective_broadcast(a: &Args) -> InferResult {
    a.arrays()?;
    group_size(a)?;
    Ok(tuple_or_single(
        a.ops.iter().map(|s| (*s).clone()).collect(),
    ))
}
