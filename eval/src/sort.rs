//! Sort (multi-operand, any comparator computation, stable or not) and TopK.
//!
//! Sort runs a stable bottom-up merge sort on each 1-D slice along the sort dimension; the
//! comparator `less(lhs_0, rhs_0, lhs_1, rhs_1, ...)` is evaluated through the interpreter and
//! may be any computation (an inconsistent comparator gives some permutation, never a panic).
//! A stable sort is also a valid unstable sort, so `is_stable` does not change the algorithm.
//! TopK orders by value, largest first (or smallest with `largest=false`), floats in total
//! order (NaN above +inf), ties by lower index first.

use crate::compare::total_order_key;
use crate::error::{EResult, EvalError};
use crate::interp::Ctx;
use crate::util::{array, mk, operand, scalar_of, strides, take};
use hlo::ir::Instruction;
use hlo::literal::{ArrayData, ArrayLiteral, Literal};

/// A stable merge sort of `0..n` by a fallible strict-weak-order `less`.
pub fn merge_sort(
    n: usize,
    less: &mut dyn FnMut(usize, usize) -> EResult<bool>,
) -> EResult<Vec<usize>> {
    let mut a: Vec<usize> = (0..n).collect();
    let mut b = vec![0usize; n];
    let mut width = 1;
    while width < n {
        let mut lo = 0;
        while lo < n {
            let mid = (lo + width).min(n);
            let hi = (lo + 2 * width).min(n);
            let (mut i, mut j, mut k) = (lo, mid, lo);
            while i < mid && j < hi {
                // Take from the right only if strictly less: keeps equal elements in order.
                if less(a[j], a[i])? {
                    b[k] = a[j];
                    j += 1;
                } else {
                    b[k] = a[i];
                    i += 1;
                }
                k += 1;
            }
            b[k..k + (mid - i)].copy_from_slice(&a[i..mid]);
            k += mid - i;
            b[k..k + (hi - j)].copy_from_slice(&a[j..hi]);
            lo = hi;
        }
        std::mem::swap(&mut a, &mut b);
        width *= 2;
    }
    Ok(a)
}

/// `sort(x1..xN), dimensions={d}, is_stable=.., to_apply=less`.
pub fn sort(cx: &mut Ctx<'_>, inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let inputs: Vec<&ArrayLiteral> = (0..ops.len())
        .map(|i| operand(ops, i))
        .collect::<EResult<_>>()?;
    let first = inputs
        .first()
        .ok_or_else(|| EvalError::invalid("sort without operands"))?;
    if inputs.iter().any(|x| x.dims != first.dims) {
        return Err(EvalError::invalid("sort operands differ in dims"));
    }
    let rank = first.dims.len();
    let hlo::View::Sort {
        dimension: d,
        to_apply: comp,
        ..
    } = inst.view()
    else {
        return Err(EvalError::malformed(inst));
    };
    if d >= rank.max(1) {
        return Err(EvalError::invalid(format!(
            "sort dimension {d} out of range"
        )));
    }
    if rank == 0 {
        return Ok(if inputs.len() == 1 {
            ops[0].clone()
        } else {
            Literal::Tuple(ops.iter().map(|&l| l.clone()).collect())
        });
    }
    let st = strides(&first.dims);
    let len = first.dims[d];
    let total = first.data.len();
    let mut perm = vec![0usize; total];
    // Every slice: the flat offsets of its elements.
    let outer = total.checked_div(len).unwrap_or(0);
    let mut slice_idx = vec![0usize; len];
    for s in 0..outer {
        // Decompose `s` over all dims except `d` (row-major).
        let (mut rem, mut base) = (s, 0usize);
        for k in (0..rank).rev() {
            if k == d {
                continue;
            }
            base += (rem % first.dims[k]) * st[k];
            rem /= first.dims[k];
        }
        for (i, x) in slice_idx.iter_mut().enumerate() {
            *x = base + i * st[d];
        }
        let mut less = |p: usize, q: usize| -> EResult<bool> {
            let mut args = Vec::with_capacity(2 * inputs.len());
            for x in &inputs {
                args.push(scalar_of(x, slice_idx[p]));
                args.push(scalar_of(x, slice_idx[q]));
            }
            match &array(&cx.call(comp, args)?)?.data {
                ArrayData::Pred(v) if v.len() == 1 => Ok(v[0]),
                _ => Err(EvalError::invalid("sort comparator must return pred[]")),
            }
        };
        let order = merge_sort(len, &mut less)?;
        for (i, &o) in order.iter().enumerate() {
            perm[slice_idx[i]] = slice_idx[o];
        }
    }
    let mut outs: Vec<Literal> = inputs
        .iter()
        .map(|x| mk(x.dims.clone(), take(&x.data, &perm)))
        .collect::<EResult<_>>()?;
    Ok(if outs.len() == 1 {
        outs.pop().expect("one output")
    } else {
        Literal::Tuple(outs)
    })
}

/// Order keys for TopK: total order for floats, value for integers and pred.
fn keys(d: &ArrayData) -> EResult<Vec<i128>> {
    let t = d.element_type();
    if t.is_carried_only() || t.is_complex() {
        return Err(EvalError::unsupported(format!("topk on {t}")));
    }
    Ok((0..d.len())
        .map(|i| {
            let b = d.bits_at(i);
            if t.is_float() {
                total_order_key(b as u64, t.bits()) as i128
            } else if t.is_signed_int() {
                let sh = 128 - t.bits();
                ((b << sh) as i128) >> sh
            } else {
                b as i128
            }
        })
        .collect())
}

/// `topk(x), k=K, largest=..`: the K largest (or smallest) along the last dimension, with
/// their s32 indices.
pub fn top_k(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let a = operand(ops, 0)?;
    let hlo::View::TopK { k, largest } = inst.view() else {
        return Err(EvalError::malformed(inst));
    };
    let n = *a
        .dims
        .last()
        .ok_or_else(|| EvalError::invalid("topk of a scalar"))?;
    let k = usize::try_from(k)
        .ok()
        .filter(|&k| k <= n)
        .ok_or_else(|| EvalError::invalid(format!("k={k} for {n} elements")))?;
    let key = keys(&a.data)?;
    let rows = a.data.len().checked_div(n).unwrap_or(0);
    let (mut vi, mut ii) = (Vec::with_capacity(rows * k), Vec::with_capacity(rows * k));
    for r in 0..rows {
        let row = &key[r * n..(r + 1) * n];
        let mut less = |p: usize, q: usize| -> EResult<bool> {
            Ok(if largest {
                row[p] > row[q]
            } else {
                row[p] < row[q]
            })
        };
        let order = merge_sort(n, &mut less)?;
        for &o in &order[..k] {
            vi.push(r * n + o);
            ii.push(o as i32);
        }
    }
    let mut dims = a.dims.clone();
    *dims.last_mut().expect("rank >= 1") = k;
    Ok(Literal::Tuple(vec![
        mk(dims.clone(), take(&a.data, &vi))?,
        mk(dims, ArrayData::S32(ii))?,
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_sort_is_stable() {
        let keys = [3, 1, 2, 1, 3, 0];
        let order = merge_sort(keys.len(), &mut |p, q| Ok(keys[p] < keys[q])).unwrap();
        assert_eq!(order, vec![5, 1, 3, 2, 0, 4]);
    }

    #[test]
    fn inconsistent_comparator_does_not_panic() {
        let order = merge_sort(7, &mut |_, _| Ok(true)).unwrap();
        let mut s = order.clone();
        s.sort_unstable();
        assert_eq!(s, (0..7).collect::<Vec<_>>());
    }
}
