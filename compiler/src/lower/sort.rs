//! `sort` (multi-operand, any element-wise comparator, `is_stable`) and `topk` as a bitonic
//! sorting network on the VPU.
//!
//! Algorithm. Each operand is gathered (compile-time table) into a `[rows, P]` array, the sort
//! dimension last and padded to `P`, the next power of two of its length `n`. An index array
//! `idx` (the original position, u32) travels with the elements. For every step `(k, j)` of
//! the network (`k = 2, 4, …, P`, `j = k/2, …, 1`; `log2 P·(log2 P + 1)/2` steps) every element
//! meets its partner at position `pos ^ j` of its row: the operands and `idx` of the partners
//! are fetched with `vpu.gather` (index `flat ^ j`, computed on chip from an iota), the
//! comparator is evaluated element-wise on whole arrays both ways ([`super::apply::apply_comp`]),
//! and the order used is the strict total order
//!
//! `lt(a, b) = fl(a, b) | (!fl(b, a) & idx_a < idx_b)`, `fl(a, b) = !pad_a & (pad_b | less(a, b))`
//!
//! with `pad = idx >= n`, so padding sorts
//! after every real element whatever the comparator says about its (arbitrary) values, and
//! elements the comparator does not order keep their original order (a stable sort, which is
//! also a valid unstable one: `is_stable` is honoured). An element takes its partner's values
//! (`vpu.select`) when `lt(partner, self)` differs from "this position keeps the larger", which
//! is `(pos & j != 0) xor (pos & k != 0)` (the second term absent at `k = P`). Finally a table
//! gathers the first `n` of each row back into the operand layout.
//!
//! `topk(x), k, largest` is the same network with a built-in comparator (value greater, or
//! less, floats in total order), then the first `k` of each row and their `idx` as s32.
//!
//! Cost per step, on `rows·P` elements: `m + 1` gathers (m operands), two comparator
//! evaluations (one VPU instruction per comparator op), about 14 ALU instructions on pred and
//! u32 arrays, and `m + 1` selects; plus one gather per operand in and out.

use super::apply::{apply_comp, vcmpc};
use super::gather::each_index;
use super::movement::strides;
use super::{Buf, Lowerer, Val, VPU_CHUNK};
use crate::error::{CResult, CompileError};
use hlo::{ComparisonDirection, ElementType, InstId, Opcode};

/// The comparator of the network: `less(a, b)` on flat arrays, a new pred temporary.
type Less<'c> = dyn FnMut(&mut Lowerer<'_>, &[Buf], &[Buf]) -> CResult<Buf> + 'c;

/// Layout of a sort along `d` of `dims`: rows (all other dims), the length and the padded
/// length, and the tables between the operand layout and `[rows, P]`.
struct Layout {
    rows: usize,
    n: usize,
    p: usize,
    /// `[rows, P]` position → operand offset (padding reads the row's first element).
    into: Vec<u32>,
    /// Operand offset (row-major) → `[rows, P]` position.
    back: Vec<u32>,
}

fn layout(dims: &[usize], d: usize) -> Layout {
    let n = dims.get(d).copied().unwrap_or(1);
    let total: usize = dims.iter().product();
    let rows = total.checked_div(n).unwrap_or(0);
    let p = n.next_power_of_two().max(1);
    let st = strides(dims);
    let mut into = vec![0u32; rows * p];
    let mut back = Vec::with_capacity(total);
    let other: Vec<usize> = (0..dims.len()).filter(|&k| k != d).collect();
    let od: Vec<usize> = other.iter().map(|&k| dims[k]).collect();
    let ost = strides(&od);
    each_index(dims, |ix| {
        let r: usize = other.iter().zip(&ost).map(|(&k, &s)| ix[k] * s).sum();
        let i = if dims.is_empty() { 0 } else { ix[d] };
        let off: usize = ix.iter().zip(&st).map(|(a, b)| a * b).sum();
        into[r * p + i] = off as u32;
        if i == 0 {
            for q in n..p {
                into[r * p + q] = off as u32;
            }
        }
        back.push((r * p + i) as u32);
    });
    Layout {
        rows,
        n,
        p,
        into,
        back,
    }
}

/// Sorts the `[rows, P]` arrays `vals` (flat) by `less` with the bitonic network; returns the
/// sorted arrays and the travelling original positions (u32). `vals` are not modified.
fn bitonic(
    l: &mut Lowerer<'_>,
    vals: &[Buf],
    lay: &Layout,
    less: &mut Less<'_>,
) -> CResult<(Vec<Buf>, Buf)> {
    let (rows, n, p) = (lay.rows as u64, lay.n as u64, lay.p as u64);
    let total = rows * p;
    if p >= 1 << 19 || rows >= 1 << 20 || total > u32::MAX as u64 {
        return Err(l.unsupported("a sort of 2^19 or more elements per row or 2^32 in all"));
    }
    let pos = l.viota(ElementType::U32, total, 1, p)?;
    let flat = if total <= VPU_CHUNK {
        l.viota(ElementType::U32, total, 1, total)?
    } else {
        let t: Vec<u32> = (0..total as u32).collect();
        l.index_table(&t)?
    };
    let mut idx = l.vcopy(&pos)?;
    let mut cur: Vec<Buf> = vals.to_vec();
    let padded = p != n;
    let mut k = 2u64;
    while k <= p {
        let mut j = k / 2;
        while j >= 1 {
            let partner = l.vop2c(Opcode::Xor, &flat, j)?;
            let xp: Vec<Buf> = cur
                .iter()
                .map(|x| l.vgather(x, &partner))
                .collect::<CResult<_>>()?;
            let ip = l.vgather(&idx, &partner)?;
            l.release(&partner);
            // The larger of each pair stays at positions where keep_max is set.
            let pj = l.vop2c(Opcode::And, &pos, j)?;
            let upper = vcmpc(l, ComparisonDirection::Ne, &pj, 0)?;
            l.release(&pj);
            let keep_max = if k < p {
                let pk = l.vop2c(Opcode::And, &pos, k)?;
                let desc = vcmpc(l, ComparisonDirection::Ne, &pk, 0)?;
                l.release(&pk);
                let km = l.vop2(Opcode::Xor, &upper, &desc)?;
                l.release(&desc);
                l.release(&upper);
                km
            } else {
                upper
            };
            // less both ways.
            let less_px = less(l, &xp, &cur)?;
            let less_xp = less(l, &cur, &xp)?;
            let (fl_px, fl_xp) = if padded {
                let pad_x = vcmpc(l, ComparisonDirection::Ge, &idx, n)?;
                let pad_p = vcmpc(l, ComparisonDirection::Ge, &ip, n)?;
                let a = l.vop2(Opcode::Or, &pad_x, &less_px)?;
                let np = l.vnot(&pad_p)?;
                let fl_px = l.vop2(Opcode::And, &np, &a)?;
                l.release(&np);
                l.release(&a);
                let b = l.vop2(Opcode::Or, &pad_p, &less_xp)?;
                let nx = l.vnot(&pad_x)?;
                let fl_xp = l.vop2(Opcode::And, &nx, &b)?;
                l.release(&nx);
                l.release(&b);
                l.release(&pad_p);
                l.release(&pad_x);
                l.release(&less_xp);
                l.release(&less_px);
                (fl_px, fl_xp)
            } else {
                (less_px, less_xp)
            };
            let tie = l.vcmp(ComparisonDirection::Lt, &ip, &idx, false)?;
            let nfx = l.vnot(&fl_xp)?;
            let t2 = l.vop2(Opcode::And, &nfx, &tie)?;
            let lt = l.vop2(Opcode::Or, &fl_px, &t2)?;
            for b in [&t2, &nfx, &tie, &fl_xp, &fl_px] {
                l.release(b);
            }
            let take = l.vop2(Opcode::Xor, &lt, &keep_max)?;
            l.release(&lt);
            l.release(&keep_max);
            let mut next = Vec::with_capacity(cur.len());
            for (x, y) in cur.iter().zip(&xp) {
                next.push(l.vsel(&take, y, x)?);
            }
            let nidx = l.vsel(&take, &ip, &idx)?;
            l.release(&take);
            l.release(&ip);
            for b in &xp {
                l.release(b);
            }
            for b in &cur {
                l.release_unless(b, vals);
            }
            l.release(&idx);
            cur = next;
            idx = nidx;
            j /= 2;
        }
        k *= 2;
    }
    Ok((cur, idx))
}

/// Gathers every operand into the `[rows, P]` layout (no copy when it is already that).
fn gather_in(l: &mut Lowerer<'_>, ops: &[Buf], lay: &Layout) -> CResult<Vec<Buf>> {
    let identity = lay.into.iter().enumerate().all(|(i, &o)| i as u32 == o);
    ops.iter()
        .map(|b| {
            let flat = b.with_dims(vec![b.elems() as usize]);
            if identity {
                Ok(flat)
            } else {
                l.vgather_table(&flat, &lay.into)
            }
        })
        .collect()
}

/// Lowers `sort` and `topk`; `None` if `h` is neither.
pub fn lower(l: &mut Lowerer<'_>, h: InstId) -> CResult<Option<Val>> {
    let inst = &l.comp().insts[h];
    match inst.opcode {
        Opcode::Sort => lower_sort(l, h).map(Some),
        Opcode::TopK => lower_topk(l, h).map(Some),
        _ => Ok(None),
    }
}

fn lower_sort(l: &mut Lowerer<'_>, h: InstId) -> CResult<Val> {
    let inst = &l.comp().insts[h];
    let ops = inst
        .operands
        .iter()
        .map(|&o| l.arr(o))
        .collect::<CResult<Vec<_>>>()?;
    let first = ops
        .first()
        .ok_or_else(|| CompileError::Internal("sort without operands".into()))?
        .clone();
    if ops.iter().any(|o| o.dims != first.dims) {
        return Err(l.unsupported("sort of operands with different dims"));
    }
    for o in &ops {
        l.vty(o.ty)?;
    }
    let hlo::View::Sort {
        dimension: d,
        to_apply: comp,
        ..
    } = inst.view()
    else {
        return Err(l.unsupported("sort without a comparator"));
    };
    if d >= first.dims.len().max(1) {
        return Err(l.unsupported("sort dimension out of range"));
    }
    let outs: Vec<Buf> = ops
        .iter()
        .map(|o| l.new_buf(h, o.ty, o.dims.clone()))
        .collect::<CResult<_>>()?;
    let lay = layout(&first.dims, d);
    if lay.rows * lay.n == 0 || lay.n == 1 {
        for (o, s) in outs.iter().zip(&ops) {
            l.copy_into(o, s)?;
        }
    } else {
        let vals = gather_in(l, &ops, &lay)?;
        let mut less = |l: &mut Lowerer<'_>, a: &[Buf], b: &[Buf]| -> CResult<Buf> {
            let mut args = Vec::with_capacity(2 * a.len());
            for (x, y) in a.iter().zip(b) {
                args.push(x.clone());
                args.push(y.clone());
            }
            let r = apply_comp(l, comp, &args, "sort comparator")?;
            match r.as_slice() {
                [p] if p.ty == ElementType::Pred => {
                    if args.iter().any(|a| a.alloc == p.alloc) {
                        l.vcopy(p)
                    } else {
                        Ok(p.clone())
                    }
                }
                _ => Err(l.unsupported("a sort comparator that does not return one pred")),
            }
        };
        let (sorted, idx) = bitonic(l, &vals, &lay, &mut less)?;
        for (o, s) in outs.iter().zip(&sorted) {
            let flat = o.with_dims(vec![o.elems() as usize]);
            let identity = lay.back.iter().enumerate().all(|(i, &b)| i as u32 == b);
            if identity {
                l.copy_into(&flat, s)?;
            } else {
                l.gather_table(&flat, s, &lay.back)?;
            }
        }
        l.release(&idx);
    }
    Ok(if outs.len() == 1 {
        Val::Array(outs.into_iter().next().expect("one"))
    } else {
        Val::Tuple(outs.into_iter().map(Val::Array).collect())
    })
}

fn lower_topk(l: &mut Lowerer<'_>, h: InstId) -> CResult<Val> {
    let inst = &l.comp().insts[h];
    let a = l.arr(inst.operands[0])?;
    l.vty(a.ty)?;
    let hlo::View::TopK { k, largest } = inst.view() else {
        return Err(CompileError::Internal("topk without its view".into()));
    };
    let Some(&n) = a.dims.last() else {
        return Err(l.unsupported("topk of a scalar"));
    };
    let k = usize::try_from(k)
        .ok()
        .filter(|&k| k <= n)
        .ok_or_else(|| l.unsupported("topk with k out of range"))?;
    let mut dims = a.dims.clone();
    *dims.last_mut().expect("rank >= 1") = k;
    let vals = l.new_buf(h, a.ty, dims.clone())?;
    let inds = l.new_buf(h, ElementType::S32, dims)?;
    let lay = layout(&a.dims, a.dims.len() - 1);
    if lay.rows * k > 0 {
        let input = gather_in(l, std::slice::from_ref(&a), &lay)?;
        let dir = if largest {
            ComparisonDirection::Gt
        } else {
            ComparisonDirection::Lt
        };
        let mut less = |l: &mut Lowerer<'_>, x: &[Buf], y: &[Buf]| -> CResult<Buf> {
            l.vcmp(dir, &x[0], &y[0], true)
        };
        let (sorted, idx) = bitonic(l, &input, &lay, &mut less)?;
        let mut table = Vec::with_capacity(lay.rows * k);
        for r in 0..lay.rows {
            for c in 0..k {
                table.push((r * lay.p + c) as u32);
            }
        }
        let vflat = vals.with_dims(vec![lay.rows * k]);
        l.gather_table(&vflat, &sorted[0], &table)?;
        let sel = l.vgather_table(&idx, &table)?;
        let iflat = inds.with_dims(vec![lay.rows * k]);
        l.convert(&iflat, &sel)?;
    }
    Ok(Val::Tuple(vec![Val::Array(vals), Val::Array(inds)]))
}
