//! What each collective computes, given every group member's contribution in group order.
//!
//! These functions are pure: the hub has already collected the contributions; every replica
//! computes its own result from the same list in the same order, so all-reduce results are
//! bit-identical on every member and from run to run (the reduction is a left fold in group
//! order: `((c0 ⊕ c1) ⊕ c2) ⊕ ...`).
//!
//! A contribution is the single operand's value, or a tuple of the operands' values when the
//! op has several operands (variadic all-reduce, tuple all-to-all, ...).

use super::data::{block, concat};
use crate::error::{EResult, EvalError};
use crate::runtime::Combine;
use hlo::literal::{ArrayLiteral, Literal};
use std::sync::Arc;

/// The contribution of one replica: its operand, or a tuple of its operands.
pub fn contribution(operands: &[&Literal]) -> Literal {
    if operands.len() == 1 {
        operands[0].clone()
    } else {
        Literal::Tuple(operands.iter().map(|&l| l.clone()).collect())
    }
}

/// The per-operand parts of a contribution made by [`contribution`] from `n` operands.
fn parts(c: &Literal, n: usize) -> EResult<Vec<&Literal>> {
    if n == 1 {
        return Ok(vec![c]);
    }
    match c.as_tuple() {
        Some(t) if t.len() == n => Ok(t.iter().collect()),
        _ => Err(EvalError::invalid(
            "replicas contributed different numbers of operands",
        )),
    }
}

/// Operand `i` of every member, in group order.
fn column(contribs: &[Arc<Literal>], n: usize, i: usize) -> EResult<Vec<&Literal>> {
    contribs.iter().map(|c| Ok(parts(c, n)?[i])).collect()
}

fn arrays<'a>(vals: &[&'a Literal]) -> EResult<Vec<&'a ArrayLiteral>> {
    vals.iter()
        .map(|v| {
            v.as_array()
                .ok_or_else(|| EvalError::unsupported("collective over a non-array operand"))
        })
        .collect()
}

fn wrap(vals: Vec<Literal>) -> Literal {
    if vals.len() == 1 {
        vals.into_iter().next().expect("one value")
    } else {
        Literal::Tuple(vals)
    }
}

/// Left fold of `vals` (group order) with `combine`; tuples element by element.
fn fold(vals: &[&Literal], combine: &mut Combine<'_>) -> EResult<Literal> {
    match vals[0] {
        Literal::Tuple(first) => {
            let mut out = Vec::with_capacity(first.len());
            for i in 0..first.len() {
                let col: Vec<&Literal> = vals
                    .iter()
                    .map(|v| match v.as_tuple() {
                        Some(t) if t.len() == first.len() => Ok(&t[i]),
                        _ => Err(EvalError::invalid(
                            "replicas contributed different tuple shapes",
                        )),
                    })
                    .collect::<EResult<_>>()?;
                out.push(fold(&col, combine)?);
            }
            Ok(Literal::Tuple(out))
        }
        Literal::Token => Err(EvalError::invalid("cannot reduce a token")),
        Literal::Array(_) => {
            let arrs = arrays(vals)?;
            let mut acc = arrs[0].clone();
            for a in &arrs[1..] {
                if a.dims != acc.dims || a.element_type() != acc.element_type() {
                    return Err(EvalError::invalid(format!(
                        "replicas contributed {} and {} to one reduction",
                        acc.shape(),
                        a.shape()
                    )));
                }
                acc = combine(&acc, a)?;
            }
            Ok(Literal::Array(acc))
        }
    }
}

/// all-reduce: every operand reduced over the group.
pub fn all_reduce(
    contribs: &[Arc<Literal>],
    n_ops: usize,
    combine: &mut Combine<'_>,
) -> EResult<Literal> {
    let out = (0..n_ops)
        .map(|i| fold(&column(contribs, n_ops, i)?, combine))
        .collect::<EResult<Vec<_>>>()?;
    Ok(wrap(out))
}

/// reduce-scatter: all-reduce, then member `pos` keeps block `pos` of `dim`.
pub fn reduce_scatter(
    contribs: &[Arc<Literal>],
    n_ops: usize,
    dim: usize,
    pos: usize,
    combine: &mut Combine<'_>,
) -> EResult<Literal> {
    let g = contribs.len();
    let mut out = Vec::with_capacity(n_ops);
    for i in 0..n_ops {
        let sum = fold(&column(contribs, n_ops, i)?, combine)?;
        let arr = sum
            .as_array()
            .ok_or_else(|| EvalError::unsupported("reduce-scatter of a tuple operand"))?;
        out.push(Literal::Array(block(arr, dim, g, pos)?));
    }
    Ok(wrap(out))
}

/// all-gather: every operand concatenated along `dim` in group order.
pub fn all_gather(contribs: &[Arc<Literal>], n_ops: usize, dim: usize) -> EResult<Literal> {
    let mut out = Vec::with_capacity(n_ops);
    for i in 0..n_ops {
        let col = column(contribs, n_ops, i)?;
        out.push(Literal::Array(concat(&arrays(&col)?, dim)?));
    }
    Ok(wrap(out))
}

/// all-to-all, array form (`dimensions={d}`: split and concat dimension `d`): member `pos`
/// gets block `pos` of every member's operand, concatenated in group order.
pub fn all_to_all_array(
    contribs: &[Arc<Literal>],
    n_ops: usize,
    dim: usize,
    pos: usize,
) -> EResult<Literal> {
    let g = contribs.len();
    let mut out = Vec::with_capacity(n_ops);
    for i in 0..n_ops {
        let col = arrays(&column(contribs, n_ops, i)?)?;
        let blocks = col
            .iter()
            .map(|a| block(a, dim, g, pos))
            .collect::<EResult<Vec<_>>>()?;
        let refs: Vec<&ArrayLiteral> = blocks.iter().collect();
        out.push(Literal::Array(concat(&refs, dim)?));
    }
    Ok(wrap(out))
}

/// all-to-all, tuple form (no `dimensions`): one operand per group member; member `pos` gets
/// operand `pos` of every member, as a tuple in group order.
pub fn all_to_all_tuple(contribs: &[Arc<Literal>], n_ops: usize, pos: usize) -> EResult<Literal> {
    let g = contribs.len();
    if n_ops != g {
        return Err(EvalError::invalid(format!(
            "tuple all-to-all has {n_ops} operands but its replica group has {g} members"
        )));
    }
    let col = column(contribs, n_ops, pos)?;
    Ok(Literal::Tuple(col.into_iter().cloned().collect()))
}

/// collective-broadcast: every member gets the first member's operands.
pub fn collective_broadcast(contribs: &[Arc<Literal>]) -> Literal {
    (*contribs[0]).clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hlo::literal::ArrayData;

    fn f32s(dims: &[usize], v: &[f32]) -> Arc<Literal> {
        Arc::new(Literal::array(dims.to_vec(), ArrayData::F32(v.to_vec())))
    }

    fn add(a: &ArrayLiteral, b: &ArrayLiteral) -> EResult<ArrayLiteral> {
        match (&a.data, &b.data) {
            (ArrayData::F32(x), ArrayData::F32(y)) => Ok(ArrayLiteral {
                dims: a.dims.clone(),
                data: ArrayData::F32(x.iter().zip(y).map(|(p, q)| p + q).collect()),
            }),
            _ => Err(EvalError::invalid("test add: f32 only")),
        }
    }

    #[test]
    fn spec_two_replica_examples() {
        // AllReduce: [1.0, 2.5] + [3.0, 5.25] = [4.0, 7.75].
        let c = vec![f32s(&[2], &[1.0, 2.5]), f32s(&[2], &[3.0, 5.25])];
        assert_eq!(
            all_reduce(&c, 1, &mut add).unwrap(),
            *f32s(&[2], &[4.0, 7.75])
        );
        // AllGather along 0: [1.0, 2.5, 3.0, 5.25].
        assert_eq!(
            all_gather(&c, 1, 0).unwrap(),
            *f32s(&[4], &[1.0, 2.5, 3.0, 5.25])
        );
        // ReduceScatter: [1.0, 2.25] and [3.0, 5.25] give [4.0] and [7.5].
        let c = vec![f32s(&[2], &[1.0, 2.25]), f32s(&[2], &[3.0, 5.25])];
        assert_eq!(
            reduce_scatter(&c, 1, 0, 0, &mut add).unwrap(),
            *f32s(&[1], &[4.0])
        );
        assert_eq!(
            reduce_scatter(&c, 1, 0, 1, &mut add).unwrap(),
            *f32s(&[1], &[7.5])
        );
    }

    #[test]
    fn all_to_all_forms() {
        let c = vec![f32s(&[2], &[1.0, 2.0]), f32s(&[2], &[3.0, 4.0])];
        assert_eq!(
            all_to_all_array(&c, 1, 0, 0).unwrap(),
            *f32s(&[2], &[1.0, 3.0])
        );
        assert_eq!(
            all_to_all_array(&c, 1, 0, 1).unwrap(),
            *f32s(&[2], &[2.0, 4.0])
        );
        let t = |a: f32, b: f32| {
            Arc::new(Literal::Tuple(vec![
                (*f32s(&[], &[a])).clone(),
                (*f32s(&[], &[b])).clone(),
            ]))
        };
        let c = vec![t(1.0, 2.0), t(3.0, 4.0)];
        assert_eq!(all_to_all_tuple(&c, 2, 1).unwrap(), *t(2.0, 4.0));
    }

    #[test]
    fn variadic_all_reduce_and_mismatch() {
        let t = Arc::new(Literal::Tuple(vec![
            (*f32s(&[1], &[1.0])).clone(),
            (*f32s(&[2], &[1.0, 2.0])).clone(),
        ]));
        let out = all_reduce(&[t.clone(), t.clone(), t], 2, &mut add).unwrap();
        assert_eq!(
            out,
            Literal::Tuple(vec![
                (*f32s(&[1], &[3.0])).clone(),
                (*f32s(&[2], &[3.0, 6.0])).clone()
            ])
        );
        let bad = vec![f32s(&[2], &[1.0, 2.0]), f32s(&[1], &[1.0])];
        assert!(all_reduce(&bad, 1, &mut add).is_err());
    }
}
