//! Data movement: broadcast, transpose, slice, concatenate, pad and reverse.
//!
//! Fast forms first: a broadcast over leading dimensions is `vpu.bcast` (a row repeated), a
//! transpose that collapses to a (batched) 2-D transpose is `vpu.transpose`, one that keeps a
//! last run of at least 64 bytes in place is DMA descriptors of those runs
//! ([`Lowerer::transpose_runs`]), a concatenation is one strided DMA per operand. Everything
//! else is a general permutation: an index table
//! (computed by the compiler, one u32 per output element, placed in HBM and copied to VMEM)
//! and `vpu.gather` on the cross-lane unit. The table's cost (its DMA and VMEM) is real.

use super::elementwise::chunks;
use super::emit::{Access, Queue};
use super::{Buf, Lowerer, Val};
use crate::error::{CResult, CompileError};
use hlo::{InstId, Opcode};
use isa::Space;
use isa::{DType, Inst};

pub(crate) use hlo::shape::strides;

/// Calls `f(index, flat)` for every index of `dims` in row-major order.
fn for_each_index(dims: &[usize], mut f: impl FnMut(&[usize], usize)) {
    let n: usize = dims.iter().product();
    let mut idx = vec![0usize; dims.len()];
    for flat in 0..n {
        f(&idx, flat);
        hlo::shape::next_index(&mut idx, dims);
    }
}

/// A transpose of `dims` by `perm` (`out.dims[i] = dims[perm[i]]`) in its fewest dimensions:
/// size-1 dimensions dropped (they move no data) and each run of output dimensions that stay
/// adjacent and in order in the source merged into one group. Returns the groups' sizes in
/// source order and the permutation of groups (output group `k` is source group `rank[k]`);
/// one group or none is no movement at all.
pub(crate) fn collapse(dims: &[usize], perm: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let kept: Vec<usize> = (0..dims.len()).filter(|&d| dims[d] != 1).collect();
    let renum = |d: usize| kept.iter().position(|&k| k == d);
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for r in perm.iter().filter_map(|&p| renum(p)) {
        match groups.last_mut() {
            Some(g) if *g.last().expect("non-empty") + 1 == r => g.push(r),
            _ => groups.push(vec![r]),
        }
    }
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_by_key(|&k| groups[k][0]);
    let mut rank = vec![0; groups.len()];
    for (r, &k) in order.iter().enumerate() {
        rank[k] = r;
    }
    let sizes = order
        .iter()
        .map(|&k| groups[k].iter().map(|&d| dims[kept[d]]).product())
        .collect();
    (sizes, rank)
}

/// An attribute's dimension numbers as indices.
fn dims_of(d: &[i64]) -> Vec<usize> {
    d.iter().map(|&x| x as usize).collect()
}

impl Lowerer<'_> {
    /// `dst[idx] = src[offset(idx, row-major strides of src)]` for every index of `dst`, with a
    /// compile-time index table and `vpu.gather`.
    fn gather_by(
        &mut self,
        dst: &Buf,
        src: &Buf,
        offset: impl Fn(&[usize], &[usize]) -> usize,
    ) -> CResult<()> {
        self.check_table(dst.elems())?;
        let ss = strides(&src.dims);
        let mut table = Vec::with_capacity(dst.elems() as usize);
        for_each_index(&dst.dims, |idx, _| table.push(offset(idx, &ss) as u32));
        self.gather_table(dst, src, &table)
    }

    /// `dst[i] = src[table[i]]` with `vpu.gather`.
    pub(crate) fn gather_table(&mut self, dst: &Buf, src: &Buf, table: &[u32]) -> CResult<()> {
        let t = self.vty(dst.ty)?;
        let tb = self.index_table(table)?;
        let w = dst.ty.byte_size() as u64;
        for (s, n) in chunks(dst.elems()) {
            let d = self.e.vaddr(dst.addr + s * w);
            let a = self.e.vaddr(src.addr);
            let idx = self.e.vaddr(tb.addr + s * 4);
            self.e.unit(
                Inst::VGather {
                    dst: d,
                    a,
                    idx,
                    n,
                    t,
                    wait: None,
                    signal: None,
                },
                Queue::Vpu,
                &[src.access(), Access::vmem(tb.addr + s * 4, n as u64 * 4)],
                &[Access::vmem(dst.addr + s * w, n as u64 * w)],
            );
        }
        Ok(())
    }

    /// A buffer of `n` copies of the one element of `src`.
    pub(crate) fn splat(&mut self, src: &Buf, n: u64) -> CResult<Buf> {
        let out = self.tmp(src.ty, vec![n as usize])?;
        self.bcast_rows(&out, src, n)?;
        Ok(out)
    }

    /// `dst` = `rows` copies of the row `src` (`vpu.bcast`).
    fn bcast_rows(&mut self, dst: &Buf, src: &Buf, rows: u64) -> CResult<()> {
        let t = self.vty(dst.ty)?;
        let row = src.elems();
        if row >= 1 << 20 {
            return Err(self.unsupported("broadcast of a row of 2^20 or more elements"));
        }
        self.bcast_at(dst.addr, src.addr, row, rows, t, dst.ty.byte_size() as u64);
        Ok(())
    }

    /// `rows` copies of the `row` elements (of `w` bytes, VPU type `t`) at VMEM `src` into
    /// VMEM `dst`, with `vpu.bcast` instructions of at most one VPU chunk each (`row` below
    /// 2^20).
    pub(crate) fn bcast_at(&mut self, dst: u64, src: u64, row: u64, rows: u64, t: DType, w: u64) {
        // Rows per instruction so that each covers at most one VPU chunk.
        let per = (super::VPU_CHUNK / row.max(1)).clamp(1, (1 << 20) - 1);
        let mut r = 0;
        while r < rows {
            let k = per.min(rows - r);
            let d = self.e.vaddr(dst + r * row * w);
            let a = self.e.vaddr(src);
            self.e.unit(
                Inst::VBcast {
                    dst: d,
                    a,
                    n: row as u32,
                    rows: k as u32,
                    t,
                    wait: None,
                    signal: None,
                },
                Queue::Vpu,
                &[Access::vmem(src, row * w)],
                &[Access::vmem(dst + r * row * w, k * row * w)],
            );
            r += k;
        }
    }

    /// `dst = broadcast(src)` with `src`'s dimension `i` at `dst`'s dimension `bd[i]`.
    pub(crate) fn broadcast_into(&mut self, out: &Buf, src: &Buf, bd: &[usize]) -> CResult<()> {
        // An operand dimension of 1 holds no data (it may be stretched over a longer output
        // dimension): the same bytes without it.
        if src.dims.contains(&1) {
            let keep: Vec<usize> = (0..src.dims.len()).filter(|&i| src.dims[i] != 1).collect();
            let s = src.with_dims(keep.iter().map(|&i| src.dims[i]).collect());
            let b: Vec<usize> = keep.iter().map(|&i| bd[i]).collect();
            return self.broadcast_into(out, &s, &b);
        }
        let (ty, dims) = (out.ty, &out.dims);
        let r = dims.len();
        let k = bd.len();
        let increasing = bd.windows(2).all(|w| w[0] < w[1]);
        let trailing = bd.iter().enumerate().all(|(i, &d)| d == r - k + i);
        if src.elems() == 1 {
            self.bcast_rows(out, src, out.elems())?;
        } else if increasing && trailing {
            let rows = out.elems() / src.elems().max(1);
            self.bcast_rows(out, src, rows)?;
        } else if increasing {
            // Broadcast to [other dims..., operand dims...], then permute into place.
            let others: Vec<usize> = (0..r).filter(|d| !bd.contains(d)).collect();
            let mut tdims: Vec<usize> = others.iter().map(|&d| dims[d]).collect();
            tdims.extend(bd.iter().map(|&d| dims[d]));
            let tmp = self.tmp(ty, tdims)?;
            let rows = tmp.elems() / src.elems().max(1);
            self.bcast_rows(&tmp, src, rows)?;
            // Output dim d comes from tmp dim pos(d).
            let mut from = vec![0; r];
            for (i, &d) in others.iter().chain(bd.iter()).enumerate() {
                from[d] = i;
            }
            self.permute_into(out, &tmp, &from)?;
            self.release(&tmp);
        } else {
            self.gather_by(out, src, |idx, ss| {
                bd.iter().enumerate().map(|(i, &d)| idx[d] * ss[i]).sum()
            })?;
        }
        Ok(())
    }

    /// `dst = transpose(src, perm)` (`dst.dims[i] = src.dims[perm[i]]`).
    pub(crate) fn permute_into(&mut self, dst: &Buf, src: &Buf, perm: &[usize]) -> CResult<()> {
        let (sizes, rank) = collapse(&src.dims, perm);
        let size = |k: usize| sizes[rank[k]];
        let t = self.vty(dst.ty)?;
        let w = dst.ty.byte_size() as u64;
        match rank.as_slice() {
            r if r.windows(2).all(|w| w[0] < w[1]) => {
                let a = src.with_dims(dst.dims.clone());
                self.vpu_map(dst, &[&a], &mut |d, s, n| Inst::VMov {
                    dst: d,
                    a: s[0],
                    n,
                    t,
                    pat: None,
                    wait: None,
                    signal: None,
                });
                return Ok(());
            }
            [1, 0] | [0, 2, 1] => {
                let (p, a, b) = if rank.len() == 2 {
                    (1, size(1), size(0))
                } else {
                    (size(0), size(2), size(1))
                };
                // src is [p][a][b], dst is [p][b][a].
                let plane = (a * b) as u64;
                if p <= 1024 && plane <= super::VPU_CHUNK && a < 1 << 20 && b < 1 << 20 {
                    for k in 0..p as u64 {
                        let d = self.e.vaddr(dst.addr + k * plane * w);
                        let s = self.e.vaddr(src.addr + k * plane * w);
                        self.e.unit(
                            Inst::VTranspose {
                                dst: d,
                                a: s,
                                rows: a as u32,
                                cols: b as u32,
                                t,
                                wait: None,
                                signal: None,
                            },
                            Queue::Vpu,
                            &[Access::vmem(src.addr + k * plane * w, plane * w)],
                            &[Access::vmem(dst.addr + k * plane * w, plane * w)],
                        );
                    }
                    return Ok(());
                }
            }
            _ => {}
        }
        // The last group stays last: DMA descriptors of its runs, VMEM to VMEM (rows of at
        // least 64 bytes; shorter ones are cheaper gathered).
        let run = sizes.last().copied().unwrap_or(1) as u64 * w;
        if rank.last() == Some(&(rank.len() - 1)) && run >= 64 {
            return self.transpose_runs(
                (Space::Vmem, dst.addr),
                (Space::Vmem, src.addr),
                &sizes,
                &rank,
                w,
            );
        }
        // General: an index table.
        self.gather_by(dst, src, |idx, ss| {
            perm.iter().enumerate().map(|(i, &p)| idx[i] * ss[p]).sum()
        })
    }

    fn check_table(&self, n: u64) -> CResult<()> {
        if n > u32::MAX as u64 {
            return Err(self.unsupported("a permutation of 2^32 or more elements"));
        }
        Ok(())
    }
}

/// Lowers data-movement instructions; `None` if `h` is not one.
pub fn lower(l: &mut Lowerer<'_>, h: InstId) -> CResult<Option<Val>> {
    let inst = &l.comp().insts[h];
    let op = inst.opcode;
    let ops = inst.operands.clone();
    let view = inst.view();
    if !matches!(
        op,
        Opcode::Broadcast
            | Opcode::Transpose
            | Opcode::Slice
            | Opcode::Concatenate
            | Opcode::Pad
            | Opcode::Reverse
    ) {
        return Ok(None);
    }
    let (ty, dims) = l.out_shape(h)?;
    let src = l.arr(ops[0])?;
    let out = l.new_buf(h, ty, dims.clone())?;
    match op {
        Opcode::Broadcast => {
            let hlo::View::Broadcast { dimensions } = view else {
                return Err(CompileError::Internal("broadcast view".into()));
            };
            l.broadcast_into(&out, &src, &dims_of(dimensions))?;
        }
        Opcode::Transpose => {
            let hlo::View::Transpose { permutation } = view else {
                return Err(CompileError::Internal("transpose view".into()));
            };
            l.permute_into(&out, &src, &dims_of(permutation))?;
        }
        Opcode::Slice => {
            let hlo::View::Slice { slice: sl } = view else {
                return Err(CompileError::Internal("slice view".into()));
            };
            l.gather_by(&out, &src, |idx, ss| {
                idx.iter()
                    .enumerate()
                    .map(|(d, &i)| {
                        (sl[d].start as usize + i * sl[d].stride.max(1) as usize) * ss[d]
                    })
                    .sum()
            })?;
        }
        Opcode::Reverse => {
            let hlo::View::Reverse { dimensions } = view else {
                return Err(CompileError::Internal("reverse view".into()));
            };
            let rd = dims_of(dimensions);
            l.gather_by(&out, &src, |idx, ss| {
                idx.iter()
                    .enumerate()
                    .map(|(d, &i)| if rd.contains(&d) { dims[d] - 1 - i } else { i } * ss[d])
                    .sum()
            })?;
        }
        Opcode::Concatenate => {
            let hlo::View::Concatenate { dimension: d } = view else {
                return Err(CompileError::Internal(
                    "concatenate without a dimension".into(),
                ));
            };
            let w = ty.byte_size() as u64;
            let outer: u64 = dims[..d].iter().product::<usize>() as u64;
            let out_row = dims[d..].iter().product::<usize>() as u64 * w;
            let mut at = 0u64;
            for o in ops {
                let b = l.arr(o)?;
                let row = b.dims[d..].iter().product::<usize>() as u64 * w;
                if row >= 1 << 32 || outer >= 1 << 32 {
                    return Err(l.unsupported("concatenate of pieces of 4 GiB or more"));
                }
                l.dma_strided(
                    (Space::Vmem, out.addr + at),
                    (Space::Vmem, b.addr),
                    row,
                    outer,
                    row,
                    out_row,
                );
                at += row;
            }
        }
        Opcode::Pad => {
            // Gather from [operand..., padding value]: handles negative and interior padding.
            let pv = l.arr(ops[1])?;
            let hlo::View::Pad { padding: pads } = view else {
                return Err(CompileError::Internal("pad view".into()));
            };
            let n = src.elems();
            let comb = l.tmp(ty, vec![n as usize + 1])?;
            let t = l.vty(ty)?;
            let a = src.with_dims(vec![n as usize]);
            let head = comb.with_dims(vec![n as usize]);
            l.vpu_map(&head, &[&a], &mut |d, s, k| Inst::VMov {
                dst: d,
                a: s[0],
                n: k,
                t,
                pat: None,
                wait: None,
                signal: None,
            });
            let tail = Buf {
                addr: comb.addr + n * ty.byte_size() as u64,
                dims: vec![1],
                ..comb.clone()
            };
            l.vpu_map(&tail, &[&pv], &mut |d, s, k| Inst::VMov {
                dst: d,
                a: s[0],
                n: k,
                t,
                pat: None,
                wait: None,
                signal: None,
            });
            let ss = strides(&src.dims);
            let mut table = Vec::new();
            l.check_table(out.elems())?;
            for_each_index(&dims, |idx, _| {
                let mut off = 0usize;
                let mut inside = true;
                for (dd, &i) in idx.iter().enumerate() {
                    let p = &pads[dd];
                    let step = p.interior + 1;
                    let rel = i as i64 - p.lo;
                    if rel < 0 || rel % step != 0 || rel / step >= src.dims[dd] as i64 {
                        inside = false;
                        break;
                    }
                    off += (rel / step) as usize * ss[dd];
                }
                table.push(if inside { off as u32 } else { n as u32 });
            });
            l.gather_table(&out, &comb, &table)?;
        }
        _ => unreachable!("filtered above"),
    }
    Ok(Some(Val::Array(out)))
}
