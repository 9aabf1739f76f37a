//! Scatter in full generality (multi-operand, batching dims, any `index_vector_dim`).
//!
//! Updates are applied one update element at a time in row-major order of the updates array:
//! `out[i] = f(out[i], update)` (for N operands, `f` takes N current values and N updates and
//! returns N values). An update whose window would not fit entirely inside the operand
//! (`start < 0` or `start + window > dim` in any dimension) is skipped, as XLA does; indices are
//! never clamped. Fast paths with the same order: an overwrite computation (`return p1`) and a
//! recognised commutative binary op, applied in rounds so that repeated indices combine in
//! update order.

use crate::elementwise::binary_data;
use crate::error::{EResult, EvalError};
use crate::gather::IndexValues;
use crate::interp::Ctx;
use crate::reduce::split_result;
use crate::util::{index_map, mk, operand, put, scalar_of, strides, take, to_i64_vec};
use hlo::ir::{CompId, Instruction};
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use std::collections::HashMap;

/// True if `comp` is `(p0, p1) -> p1`.
fn is_overwrite(cx: &Ctx<'_>, comp: CompId) -> bool {
    cx.computation(comp).is_ok_and(|c| {
        let root = &c.insts[c.root];
        root.parameter_number() == Some(1) && c.parameters().len() == 2
    })
}

/// `(operand index, update index)` pairs in update order, skipping out-of-bounds windows.
fn targets(
    inst: &Instruction,
    a: &ArrayLiteral,
    ind: &ArrayLiteral,
    u: &ArrayLiteral,
) -> EResult<Vec<(usize, usize)>> {
    let rank = a.dims.len();
    let geo =
        hlo::indexing::ScatterGeometry::resolve(&inst.attrs, &a.shape(), &ind.shape(), &u.shape())
            .map_err(EvalError::invalid)?;
    let space = IndexValues {
        at: &geo.indices,
        values: to_i64_vec(&ind.data)?,
    };
    let (uwin, win_operand, uscatter) =
        (&geo.update_window, &geo.window_operand, &geo.update_scatter);
    let (map, ibatch, sbatch, wsize) = (
        &geo.map,
        &geo.input_batching,
        &geo.indices_batching,
        &geo.window_size,
    );
    let st = strides(&a.dims);
    let mut g = vec![0usize; uscatter.len()];
    let mut start = vec![0i64; rank];
    let mut out = Vec::with_capacity(u.data.len());
    let all = index_map(&u.dims, |ui| {
        for (p, &d) in uscatter.iter().enumerate() {
            g[p] = ui[d];
        }
        start.iter_mut().for_each(|s| *s = 0);
        for (k, &d) in map.iter().enumerate() {
            start[d] = space.component(&g, k);
        }
        for (&od, &p) in ibatch.iter().zip(sbatch) {
            start[od] = g[p] as i64;
        }
        let fits =
            (0..rank).all(|d| start[d] >= 0 && start[d] + wsize[d] as i64 <= a.dims[d] as i64);
        if !fits {
            return usize::MAX;
        }
        let mut idx = start.clone();
        for (&ud, &od) in uwin.iter().zip(win_operand) {
            idx[od] += ui[ud] as i64;
        }
        idx.iter().zip(&st).map(|(&i, &t)| i as usize * t).sum()
    })?;
    for (ui, dst) in all.into_iter().enumerate() {
        if dst != usize::MAX {
            out.push((dst, ui));
        }
    }
    Ok(out)
}

/// `scatter(operands..., indices, updates...), to_apply=f, ...`.
pub fn scatter(cx: &mut Ctx<'_>, inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    if ops.len() < 3 || ops.len().is_multiple_of(2) {
        return Err(EvalError::invalid(
            "scatter needs N operands, indices and N updates",
        ));
    }
    let n = ops.len() / 2;
    let operands: Vec<&ArrayLiteral> = (0..n).map(|i| operand(ops, i)).collect::<EResult<_>>()?;
    let ind = operand(ops, n)?;
    let updates: Vec<&ArrayLiteral> = (n + 1..2 * n + 1)
        .map(|i| operand(ops, i))
        .collect::<EResult<_>>()?;
    if operands.iter().any(|o| o.dims != operands[0].dims)
        || updates.iter().any(|u| u.dims != updates[0].dims)
    {
        return Err(EvalError::invalid(
            "scatter operands (or updates) differ in dims",
        ));
    }
    let pairs = targets(inst, operands[0], ind, updates[0])?;
    let hlo::View::Scatter { to_apply: comp } = inst.view() else {
        return Err(EvalError::malformed(inst));
    };
    let mut outs: Vec<ArrayData> = operands.iter().map(|o| o.data.clone()).collect();
    if n == 1 && is_overwrite(cx, comp) {
        let (di, si): (Vec<usize>, Vec<usize>) = pairs.into_iter().unzip();
        put(&mut outs[0], &di, &updates[0].data, &si)?;
    } else if let (1, Some(op)) = (n, cx.binop_of(comp)) {
        // Rounds: the r-th occurrence of every destination, so repeats combine in order.
        let mut seen: HashMap<usize, usize> = HashMap::new();
        let mut rounds: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
        for (d, s) in pairs {
            let r = seen.entry(d).or_insert(0);
            if rounds.len() <= *r {
                rounds.push((Vec::new(), Vec::new()));
            }
            rounds[*r].0.push(d);
            rounds[*r].1.push(s);
            *r += 1;
        }
        for (di, si) in rounds {
            let cur = take(&outs[0], &di);
            let upd = take(&updates[0].data, &si);
            let new = binary_data(op, &cur, &upd)?;
            let all: Vec<usize> = (0..di.len()).collect();
            put(&mut outs[0], &di, &new, &all)?;
        }
    } else {
        for (d, s) in pairs {
            let mut args: Vec<Literal> = Vec::with_capacity(2 * n);
            for o in &outs {
                args.push(Literal::Array(ArrayLiteral {
                    dims: vec![],
                    data: take(o, &[d]),
                }));
            }
            args.extend(updates.iter().map(|u| scalar_of(u, s)));
            let res = split_result(cx.call(comp, args)?, n)?;
            for (o, r) in outs.iter_mut().zip(&res) {
                put(o, &[d], &r.data, &[0])?;
            }
        }
    }
    let dims = operands[0].dims.clone();
    let mut lits: Vec<Literal> = outs
        .into_iter()
        .map(|d| mk(dims.clone(), d))
        .collect::<EResult<_>>()?;
    Ok(if n == 1 {
        lits.pop().expect("one output")
    } else {
        Literal::Tuple(lits)
    })
}
