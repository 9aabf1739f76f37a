//! ReduceWindow (variadic, padding, strides, base and window dilation) and SelectAndScatter.
//!
//! Window geometry, per dimension: the base is dilated (`lhs_dilate - 1` holes between
//! elements) and padded (`pad_lo`/`pad_hi`, negative removes); window element `w` of output
//! position `o` sits at `p = o*stride + w*rhs_dilate - pad_lo` in that padded base. Positions
//! in the padding or in a dilation hole are skipped (they contribute nothing, as in XLA's
//! evaluator); the fold starts from the init value and runs over the window in row-major order.

use crate::elementwise::{binary_data, splat};
use crate::error::{EResult, EvalError};
use crate::interp::Ctx;
use crate::reduce::split_result;
use crate::util::{
    array, concat_data, count_of, mk, next_index, operand, put, scalar_of, strides, take,
};
use hlo::attrs::WindowDim;
use hlo::ir::Instruction;
use hlo::literal::{ArrayData, ArrayLiteral, Literal};

/// Window geometry of one evaluation.
struct Geometry {
    base: Vec<usize>,
    win: Vec<WindowDim>,
    out: Vec<usize>,
    wsizes: Vec<usize>,
}

impl Geometry {
    /// `win` empty: every dimension of size 1 (a view's absent window).
    fn new(base: &[usize], win: &[WindowDim]) -> EResult<Geometry> {
        let win: Vec<WindowDim> = if win.is_empty() {
            base.iter().map(|_| WindowDim::of_size(1)).collect()
        } else {
            win.to_vec()
        };
        if win.len() != base.len() {
            return Err(EvalError::invalid("window rank does not match the operand"));
        }
        let mut out = Vec::with_capacity(base.len());
        for (w, &n) in win.iter().zip(base) {
            if w.size < 1 || w.stride < 1 || w.lhs_dilate < 1 || w.rhs_dilate < 1 {
                return Err(EvalError::invalid(format!("window dimension {w:?}")));
            }
            let dilated = if n == 0 {
                0
            } else {
                (n as i64 - 1) * w.lhs_dilate + 1
            };
            let padded = dilated + w.pad_lo + w.pad_hi;
            let extent = (w.size - 1) * w.rhs_dilate + 1;
            out.push(if padded < extent {
                0
            } else {
                ((padded - extent) / w.stride + 1) as usize
            });
        }
        let wsizes = win.iter().map(|w| w.size as usize).collect();
        Ok(Geometry {
            base: base.to_vec(),
            win,
            out,
            wsizes,
        })
    }

    /// Base index (flat) of window element `w` of output position `o`, if it is a real element.
    fn source(&self, o: &[usize], w: &[usize], st: &[usize]) -> Option<usize> {
        let mut flat = 0usize;
        for k in 0..self.base.len() {
            let d = &self.win[k];
            let p = o[k] as i64 * d.stride + w[k] as i64 * d.rhs_dilate - d.pad_lo;
            if p < 0 || p % d.lhs_dilate != 0 {
                return None;
            }
            let q = (p / d.lhs_dilate) as usize;
            if q >= self.base[k] {
                return None;
            }
            flat += q * st[k];
        }
        Some(flat)
    }

    /// The window element offsets (row-major) that land on a real base element for at least
    /// one output position: offsets only ever in padding or dilation holes are left out, so
    /// a huge window over a small operand costs what the operand has, not what the window
    /// spans. Counts its own cost and the result's size against the work budget.
    fn window_positions(&self, cx: &Ctx<'_>, what: &str) -> EResult<Vec<Vec<usize>>> {
        let mut per_dim: Vec<Vec<usize>> = Vec::with_capacity(self.base.len());
        for k in 0..self.base.len() {
            let d = &self.win[k];
            let (size, out, base) = (
                self.wsizes[k] as u64,
                self.out[k] as u64,
                self.base[k] as u64,
            );
            // Either try every window offset against every output position, or every (output,
            // base element) pair solved for its offset: whichever is cheaper.
            let by_offset = size.saturating_mul(out);
            let by_element = out.saturating_mul(base);
            cx.charge(
                format_args!("{what} window geometry"),
                by_offset.min(by_element),
            )?;
            let mut ok = vec![];
            if by_offset <= by_element {
                for w in 0..self.wsizes[k] {
                    if (0..self.out[k]).any(|o| self.real(k, o, w).is_some()) {
                        ok.push(w);
                    }
                }
            } else {
                let mut set = std::collections::BTreeSet::new();
                for o in 0..self.out[k] as i64 {
                    for q in 0..self.base[k] as i64 {
                        let t = q * d.lhs_dilate + d.pad_lo - o * d.stride;
                        if t >= 0 && t % d.rhs_dilate == 0 && t / d.rhs_dilate < d.size {
                            set.insert((t / d.rhs_dilate) as usize);
                        }
                    }
                }
                ok.extend(set);
            }
            per_dim.push(ok);
        }
        let count = per_dim
            .iter()
            .fold(1u64, |a, v| a.saturating_mul(v.len() as u64));
        let outs = self
            .out
            .iter()
            .fold(1u64, |a, &v| a.saturating_mul(v as u64));
        cx.charge(format_args!("{what} windows"), count.saturating_mul(outs))?;
        // Output and window index lists (one small vector each) are held during the fold.
        let index_bytes = 24 + 8 * self.base.len() as u64;
        cx.reserve(
            format_args!("{what} window index lists"),
            outs.checked_add(count)
                .and_then(|n| n.checked_mul(index_bytes)),
        )?;
        let mut v = Vec::new();
        if per_dim.iter().any(Vec::is_empty) {
            return Ok(v);
        }
        let lens: Vec<usize> = per_dim.iter().map(Vec::len).collect();
        let mut i = vec![0usize; lens.len()];
        loop {
            v.push(i.iter().zip(&per_dim).map(|(&j, l)| l[j]).collect());
            if !next_index(&mut i, &lens) {
                break;
            }
        }
        Ok(v)
    }

    /// The base index along dimension `k` of window offset `w` at output position `o`, if
    /// it is a real element.
    fn real(&self, k: usize, o: usize, w: usize) -> Option<usize> {
        let d = &self.win[k];
        let p = o as i64 * d.stride + w as i64 * d.rhs_dilate - d.pad_lo;
        if p < 0 || p % d.lhs_dilate != 0 {
            return None;
        }
        let q = (p / d.lhs_dilate) as usize;
        (q < self.base[k]).then_some(q)
    }

    fn out_positions(&self) -> Vec<Vec<usize>> {
        let mut v = Vec::new();
        if self.out.contains(&0) {
            return v;
        }
        let mut o = vec![0usize; self.out.len()];
        loop {
            v.push(o.clone());
            if !next_index(&mut o, &self.out) {
                break;
            }
        }
        v
    }
}

/// `reduce-window(x1..xN, init1..initN), window={...}, to_apply=f`.
pub fn reduce_window(cx: &mut Ctx<'_>, inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    if ops.is_empty() || !ops.len().is_multiple_of(2) {
        return Err(EvalError::invalid(
            "reduce-window needs N inputs and N init values",
        ));
    }
    let n = ops.len() / 2;
    let inputs: Vec<&ArrayLiteral> = (0..n).map(|i| operand(ops, i)).collect::<EResult<_>>()?;
    let inits: Vec<&ArrayLiteral> = (n..2 * n)
        .map(|i| operand(ops, i))
        .collect::<EResult<_>>()?;
    if inputs.iter().any(|x| x.dims != inputs[0].dims) || inits.iter().any(|x| x.data.len() != 1) {
        return Err(EvalError::invalid(
            "reduce-window inputs differ in dims or inits are not scalars",
        ));
    }
    let hlo::View::ReduceWindow {
        window,
        to_apply: f,
    } = inst.view()
    else {
        return Err(EvalError::malformed(inst));
    };
    let g = Geometry::new(&inputs[0].dims, window)?;
    let k = count_of(&g.out, "reduce-window result")?;
    let st = strides(&g.base);
    let wins = g.window_positions(cx, &format!("%{}", inst.name))?;
    let outs_pos = g.out_positions();
    if n == 1 {
        if let Some(op) = cx.binop_of(f) {
            let mut acc = splat(&inits[0].data, k);
            for w in &wins {
                let (mut oi, mut si) = (Vec::new(), Vec::new());
                for (i, o) in outs_pos.iter().enumerate() {
                    if let Some(s) = g.source(o, w, &st) {
                        oi.push(i);
                        si.push(s);
                    }
                }
                let cur = take(&acc, &oi);
                let new = binary_data(op, &cur, &take(&inputs[0].data, &si))?;
                let all: Vec<usize> = (0..oi.len()).collect();
                put(&mut acc, &oi, &new, &all)?;
            }
            return mk(g.out.clone(), acc);
        }
    }
    let mut results: Vec<Vec<ArrayData>> = vec![Vec::with_capacity(k); n];
    for o in &outs_pos {
        let mut acc: Vec<Literal> = inits.iter().map(|x| Literal::Array((*x).clone())).collect();
        for w in &wins {
            if let Some(s) = g.source(o, w, &st) {
                let mut args = acc;
                args.extend(inputs.iter().map(|x| scalar_of(x, s)));
                acc = split_result(cx.call(f, args)?, n)?
                    .into_iter()
                    .map(Literal::Array)
                    .collect();
            }
        }
        for (i, a) in acc.iter().enumerate() {
            results[i].push(array(a)?.data.clone());
        }
    }
    let mut lits = Vec::with_capacity(n);
    for (i, parts) in results.iter().enumerate() {
        let refs: Vec<&ArrayData> = parts.iter().collect();
        lits.push(mk(
            g.out.clone(),
            concat_data(inits[i].element_type(), &refs)?,
        )?);
    }
    Ok(if n == 1 {
        lits.pop().expect("one output")
    } else {
        Literal::Tuple(lits)
    })
}

fn pred_of(l: &Literal) -> EResult<bool> {
    match &array(l)?.data {
        ArrayData::Pred(v) if v.len() == 1 => Ok(v[0]),
        _ => Err(EvalError::invalid("select computation must return pred[]")),
    }
}

/// `select-and-scatter(operand, source, init), window={...}, select=s, scatter=t`.
pub fn select_and_scatter(
    cx: &mut Ctx<'_>,
    inst: &Instruction,
    ops: &[&Literal],
) -> EResult<Literal> {
    let (a, src, init) = (operand(ops, 0)?, operand(ops, 1)?, operand(ops, 2)?);
    if init.data.len() != 1 {
        return Err(EvalError::invalid("init value must be a scalar"));
    }
    let hlo::View::SelectAndScatter {
        window,
        select: sel,
        scatter: sct,
    } = inst.view()
    else {
        return Err(EvalError::malformed(inst));
    };
    let g = Geometry::new(&a.dims, window)?;
    if g.out != src.dims {
        return Err(EvalError::invalid(format!(
            "source dims {:?}, windows give {:?}",
            src.dims, g.out
        )));
    }
    let st = strides(&g.base);
    let mut out = splat(&init.data, a.data.len());
    let wins = g.window_positions(cx, &format!("%{}", inst.name))?;
    let binop = cx.binop_of(sct);
    for (si, o) in g.out_positions().iter().enumerate() {
        let mut chosen: Option<usize> = None;
        for w in &wins {
            if let Some(e) = g.source(o, w, &st) {
                chosen = Some(match chosen {
                    None => e,
                    Some(c) => {
                        let keep = pred_of(&cx.call(sel, vec![scalar_of(a, c), scalar_of(a, e)])?)?;
                        if keep {
                            c
                        } else {
                            e
                        }
                    }
                });
            }
        }
        let Some(c) = chosen else { continue };
        let cur = take(&out, &[c]);
        let upd = take(&src.data, &[si]);
        let new = match binop {
            Some(op) => binary_data(op, &cur, &upd)?,
            None => {
                let args = vec![
                    Literal::Array(ArrayLiteral {
                        dims: vec![],
                        data: cur,
                    }),
                    Literal::Array(ArrayLiteral {
                        dims: vec![],
                        data: upd,
                    }),
                ];
                split_result(cx.call(sct, args)?, 1)?.remove(0).data
            }
        };
        put(&mut out, &[c], &new, &[0])?;
    }
    mk(a.dims.clone(), out)
}
