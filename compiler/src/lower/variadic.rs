//! Variadic `reduce` (N operands, N init values, a reducer of 2N parameters returning an
//! N-tuple, e.g. argmax over (value, index) pairs) as a pairwise tree on the VPU.
//!
//! Algorithm. Every operand is permuted so the reduced dimensions come last: `[rows, c]`. Each
//! level pairs neighbouring columns `(2i, 2i+1)`: two compile-time tables gather the left and
//! right elements of every pair (`vpu.gather`), the reducer is applied element-wise to whole
//! arrays ([`super::apply::apply_comp`], lefts as the accumulators), and when `c` is odd the
//! last column passes through (`vpu.select` on a mask computed from an iota). Neighbours are
//! combined, so the elements keep their order (a non-commutative reducer sees them in order);
//! after `ceil(log2 c)` levels the init values are combined in front: `f(init, x0 ⊕ … ⊕ xc-1)`.
//!
//! Cost per level, on `rows·ceil(c/2)` elements: `2N` gathers, one VPU instruction per reducer
//! op, and `N` selects on odd levels; plus the permutations and the final combine.

use super::apply::{apply_comp, vcmpc};
use super::{Buf, Lowerer, Val};
use crate::error::{CResult, CompileError};
use hlo::{ComparisonDirection, ElementType, InstId};

/// Lowers a reduce of `N > 1` operands.
pub fn lower(l: &mut Lowerer<'_>, h: InstId) -> CResult<Val> {
    let inst = &l.comp().insts[h];
    let nops = inst.operands.len();
    if !nops.is_multiple_of(2) || nops == 0 {
        return Err(l.unsupported("reduce without N operands and N init values"));
    }
    let n = nops / 2;
    let hlo::View::Reduce {
        dimensions,
        to_apply: comp,
    } = inst.view()
    else {
        return Err(CompileError::Internal("reduce without to_apply".into()));
    };
    let ops = (0..n)
        .map(|i| l.arr(inst.operands[i]))
        .collect::<CResult<Vec<_>>>()?;
    let inits = (n..2 * n)
        .map(|i| l.arr(inst.operands[i]))
        .collect::<CResult<Vec<_>>>()?;
    let leaves: Vec<(ElementType, Vec<usize>)> = match inst.shape.as_tuple() {
        Some(ts) if ts.len() == n => ts
            .iter()
            .map(|t| {
                t.as_array()
                    .map(|a| (a.ty, a.udims()))
                    .ok_or_else(|| l.unsupported("a reduce result that is not a tuple of arrays"))
            })
            .collect::<CResult<_>>()?,
        _ => return Err(l.unsupported("a variadic reduce whose result is not an N-tuple")),
    };
    for o in &ops {
        l.vty(o.ty)?;
        if o.dims != ops[0].dims {
            return Err(l.unsupported("reduce operands with different dims"));
        }
    }
    let mut rdims: Vec<usize> = dimensions.iter().map(|&d| d.max(0) as usize).collect();
    rdims.sort();
    let src_dims = ops[0].dims.clone();
    if rdims.iter().any(|&d| d >= src_dims.len()) {
        return Err(l.unsupported("reduce dimension out of range"));
    }
    let kdims: Vec<usize> = (0..src_dims.len()).filter(|d| !rdims.contains(d)).collect();
    let rows: usize = kdims.iter().map(|&d| src_dims[d]).product();
    let cols: usize = rdims.iter().map(|&d| src_dims[d]).product();
    let outs: Vec<Buf> = leaves
        .iter()
        .map(|(ty, dims)| l.new_buf(h, *ty, dims.clone()))
        .collect::<CResult<_>>()?;
    if rows == 0 {
        return Ok(Val::Tuple(outs.into_iter().map(Val::Array).collect()));
    }
    if rows as u64 * cols as u64 > u32::MAX as u64 {
        return Err(l.unsupported("a reduce of 2^32 or more elements"));
    }
    let splats: Vec<Buf> = inits
        .iter()
        .map(|b| l.splat(b, rows as u64))
        .collect::<CResult<_>>()?;
    if cols == 0 {
        for (o, s) in outs.iter().zip(&splats) {
            l.copy_into(&o.with_dims(vec![rows]), s)?;
        }
        return Ok(Val::Tuple(outs.into_iter().map(Val::Array).collect()));
    }
    // [rows, cols], reduced dims last.
    let mut perm = kdims.clone();
    perm.extend(rdims.iter().copied());
    let identity = perm.iter().enumerate().all(|(i, &p)| i == p);
    let mut cur: Vec<Buf> = Vec::with_capacity(n);
    for o in &ops {
        if identity {
            cur.push(o.with_dims(vec![rows * cols]));
        } else {
            let pd: Vec<usize> = perm.iter().map(|&p| src_dims[p]).collect();
            let t = l.tmp(o.ty, pd)?;
            l.permute_into(&t, o, &perm)?;
            cur.push(t.with_dims(vec![rows * cols]));
        }
    }
    let mut c = cols;
    while c > 1 {
        let half = c / 2;
        let nc = c.div_ceil(2);
        let (mut lt, mut rt) = (Vec::with_capacity(rows * nc), Vec::with_capacity(rows * nc));
        for r in 0..rows {
            for i in 0..nc {
                let left = r * c + 2 * i;
                lt.push(left as u32);
                rt.push(if i < half { left + 1 } else { left } as u32);
            }
        }
        let lefts: Vec<Buf> = cur
            .iter()
            .map(|x| l.vgather_table(x, &lt))
            .collect::<CResult<_>>()?;
        let rights: Vec<Buf> = cur
            .iter()
            .map(|x| l.vgather_table(x, &rt))
            .collect::<CResult<_>>()?;
        let mut args = lefts.clone();
        args.extend(rights.iter().cloned());
        let res = apply_comp(l, comp, &args, "reducer")?;
        if res.len() != n {
            return Err(l.unsupported("a reducer that does not return N values"));
        }
        let next: Vec<Buf> = if nc > half {
            let col = l.viota(ElementType::U32, (rows * nc) as u64, 1, nc as u64)?;
            let last = vcmpc(l, ComparisonDirection::Eq, &col, (nc - 1) as u64)?;
            l.release(&col);
            let v = lefts
                .iter()
                .zip(&res)
                .map(|(a, b)| l.vsel(&last, a, b))
                .collect::<CResult<_>>()?;
            l.release(&last);
            v
        } else {
            res.iter()
                .map(|b| {
                    if args.iter().any(|a| a.alloc == b.alloc) {
                        l.vcopy(b)
                    } else {
                        Ok(b.clone())
                    }
                })
                .collect::<CResult<_>>()?
        };
        for b in &res {
            l.release_unless(b, &next);
        }
        for b in lefts.iter().chain(&rights) {
            l.release_unless(b, &next);
        }
        for b in &cur {
            l.release_unless(b, &ops);
        }
        cur = next;
        c = nc;
    }
    let mut args = splats.clone();
    args.extend(cur.iter().cloned());
    let res = apply_comp(l, comp, &args, "reducer")?;
    if res.len() != n {
        return Err(l.unsupported("a reducer that does not return N values"));
    }
    for (o, r) in outs.iter().zip(&res) {
        if r.ty != o.ty {
            return Err(l.unsupported("a reducer whose result types differ from the reduce's"));
        }
        l.copy_into(&o.with_dims(vec![rows]), r)?;
    }
    Ok(Val::Tuple(outs.into_iter().map(Val::Array).collect()))
}
