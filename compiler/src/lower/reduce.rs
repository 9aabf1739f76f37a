//! `reduce` on the VPU's cross-lane unit: the operand is permuted so the reduced dimensions
//! come last (a no-op when they already do), each row is reduced with `vpu.reduce`, and the
//! init value is combined last: `out[r] = op(reduce(row r), init)`. The reducer must be one
//! binary op of its two parameters (add, multiply, minimum, maximum, and, or, xor); variadic
//! reductions go to [`super::variadic`]; other reducers are not supported yet.
//!
//! An operand in HBM, or larger than a quarter of VMEM, is streamed
//! ([`Lowerer::reduce_streamed`]): reduced dimensions that are not its last ones are moved last
//! first, HBM to HBM ([`super::transpose_stream`]); then, as `[rows, cols]`, tiles of whole
//! rows (or,
//! for rows longer than a tile, one row's column chunk; a tile is at most 512 KiB and an eighth
//! of VMEM) are copied in, two buffers alternating,
//! and each reduced into a partial; a row's partials are reduced last. The result stays in
//! VMEM.

use super::emit::{Access, Queue};
use super::{Buf, Lowerer, Val, VPU_CHUNK};
use crate::error::{CResult, CompileError};
use hlo::{InstId, Module, Opcode};
use isa::RedOp;
use isa::{Inst, Space};

/// The binary opcode a reducer computation applies to its two parameters, if that is all it
/// does.
pub fn reducer_op(m: &Module, comp: hlo::CompId) -> Option<Opcode> {
    let c = &m.comps[comp];
    let root = &c.insts[c.root];
    if root.operands.len() != 2 {
        return None;
    }
    let params: Vec<i64> = root
        .operands
        .iter()
        .filter_map(|&o| {
            let i = &c.insts[o];
            i.parameter_number().map(|n| n as i64)
        })
        .collect();
    let mut sorted = params.clone();
    sorted.sort();
    (sorted == [0, 1]).then_some(root.opcode)
}

pub(crate) fn red_op(op: Opcode) -> Option<RedOp> {
    Some(match op {
        Opcode::Add => RedOp::Add,
        Opcode::Multiply => RedOp::Mul,
        Opcode::Minimum => RedOp::Min,
        Opcode::Maximum => RedOp::Max,
        Opcode::And => RedOp::And,
        Opcode::Or => RedOp::Or,
        Opcode::Xor => RedOp::Xor,
        _ => return None,
    })
}

/// Lowers `reduce`; `None` if `h` is not one.
pub fn lower(l: &mut Lowerer<'_>, h: InstId) -> CResult<Option<Val>> {
    let inst = &l.comp().insts[h];
    if inst.opcode != Opcode::Reduce {
        return Ok(None);
    }
    if inst.operands.len() != 2 {
        return super::variadic::lower(l, h).map(Some);
    }
    let hlo::View::Reduce {
        dimensions,
        to_apply: comp,
    } = inst.view()
    else {
        return Err(CompileError::Internal("reduce without to_apply".into()));
    };
    let op = reducer_op(l.m, comp)
        .filter(|&o| red_op(o).is_some())
        .ok_or_else(|| {
            l.unsupported("reduce whose reducer is not one add/multiply/min/max/and/or/xor")
        })?;
    let rop = red_op(op).expect("filtered");
    let rdims: Vec<usize> = dimensions.iter().map(|&d| d as usize).collect();
    if l.reduce_streams(h)? {
        return l.reduce_streamed(h, op, rop).map(Some);
    }
    let src = l.arr(inst.operands[0])?;
    let init = l.arr(inst.operands[1])?;
    let (ty, dims) = l.out_shape(h)?;
    let t = l.vty(ty)?;
    let kdims: Vec<usize> = (0..src.dims.len()).filter(|d| !rdims.contains(d)).collect();
    let mut perm = kdims.clone();
    let mut sorted_r = rdims.clone();
    sorted_r.sort();
    perm.extend(sorted_r.iter().copied());
    let rows: u64 = kdims.iter().map(|&d| src.dims[d] as u64).product();
    let cols: u64 = sorted_r.iter().map(|&d| src.dims[d] as u64).product();
    let out = l.new_buf(h, ty, dims)?;
    if rows == 0 {
        return Ok(Some(Val::Array(out)));
    }
    let init_rows = l.splat(&init, rows)?;
    if cols == 0 {
        let a = init_rows.clone();
        l.vpu_map(&out, &[&a], &mut |d, s, n| Inst::VMov {
            dst: d,
            a: s[0],
            n,
            t,
            pat: None,
            wait: None,
            signal: None,
        });
        return Ok(Some(Val::Array(out)));
    }
    if cols >= 1 << 20 {
        return Err(l.unsupported("reduce over 2^20 or more elements per result"));
    }
    let identity = perm.iter().enumerate().all(|(i, &p)| i == p);
    let a = if identity {
        src.clone()
    } else {
        let pd: Vec<usize> = perm.iter().map(|&p| src.dims[p]).collect();
        let tmp = l.tmp(src.ty, pd)?;
        l.permute_into(&tmp, &src, &perm)?;
        tmp
    };
    let red = l.tmp(ty, vec![rows as usize])?;
    let w = ty.byte_size() as u64;
    l.reduce_rows(red.addr, a.addr, rows, cols, w, rop, t);
    let out_flat = out.with_dims(vec![rows as usize]);
    l.binop(op, &out_flat, &red, &init_rows)?;
    Ok(Some(Val::Array(out)))
}

/// Whether `reduce` `h` of `c` has one operand and that operand is larger than a quarter of
/// VMEM `vmem` (it streams).
pub fn big_reduce(c: &hlo::Computation, h: InstId, vmem: u64) -> bool {
    let inst = &c.insts[h];
    if inst.opcode != Opcode::Reduce || inst.operands.len() != 2 {
        return false;
    }
    c.insts[inst.operands[0]]
        .shape
        .byte_size()
        .is_some_and(|b| b > vmem / super::stream_ew::BIG_FRACTION)
}

/// Whether a two-operand reduce's dimensions are its operand's last ones, in order.
fn trailing(inst: &hlo::Instruction) -> bool {
    let hlo::View::Reduce { dimensions, .. } = inst.view() else {
        return false;
    };
    let rank = inst.shape.as_array().map_or(0, |a| a.dims.len()) + dimensions.len();
    dimensions
        .iter()
        .enumerate()
        .all(|(i, &d)| d as usize == rank - dimensions.len() + i)
}

impl Lowerer<'_> {
    /// Whether reduce `h` streams its operand (module docs): the operand in HBM or larger than
    /// a quarter of VMEM.
    pub(crate) fn reduce_streams(&self, h: InstId) -> CResult<bool> {
        let c = self.comp();
        let inst = &c.insts[h];
        if self.depth() != 0 || inst.opcode != Opcode::Reduce || inst.operands.len() != 2 {
            return Ok(false);
        }
        let hbm = matches!(self.val(inst.operands[0])?, Val::Hbm(_));
        Ok(hbm || big_reduce(c, h, self.arch.vmem.bytes))
    }

    /// Lowers reduce `h` (reducer `op`) streaming its operand from HBM (module docs).
    pub(crate) fn reduce_streamed(&mut self, h: InstId, op: Opcode, rop: RedOp) -> CResult<Val> {
        let tile = (512 * 1024).min(self.arch.vmem.bytes / 8).max(64);
        let inst = &self.comp().insts[h];
        let (x, init_h) = (inst.operands[0], inst.operands[1]);
        let src_ty = self.comp().insts[x]
            .shape
            .as_array()
            .ok_or_else(|| CompileError::Internal("reduce of a non-array".into()))?
            .ty;
        let mut src = self.hbm_copy_of(x)?;
        self.untouch(&[x]);
        let empty = self.comp().insts[x]
            .shape
            .as_array()
            .is_some_and(|a| a.dims.contains(&0));
        if !trailing(inst) && !empty {
            // The reduced dimensions moved last, HBM to HBM.
            let hlo::View::Reduce { dimensions, .. } = inst.view() else {
                return Err(CompileError::Internal("reduce view".into()));
            };
            let sd = self.comp().insts[x]
                .shape
                .as_array()
                .ok_or_else(|| CompileError::Internal("reduce of a non-array".into()))?
                .udims();
            let mut rd: Vec<usize> = dimensions.iter().map(|&d| d as usize).collect();
            rd.sort();
            let mut perm: Vec<usize> = (0..sd.len()).filter(|d| !rd.contains(d)).collect();
            perm.extend(&rd);
            // Nothing moves when only the order or size-1 dimensions make them not trailing.
            let (_, rank) = super::movement::collapse(&sd, &perm);
            if rank.iter().enumerate().any(|(i, &r)| i != r) {
                let pd: Vec<usize> = perm.iter().map(|&p| sd[p]).collect();
                let name = format!("the reduced dimensions of {} moved last", inst.name);
                let t = self.hbm_array(src_ty, pd, &name)?;
                self.transpose_hbm(t.addr, src, &sd, &perm, src_ty)?;
                self.stats.transpose_streams += 1;
                src = t.addr;
            }
        }
        let init = self.vmem_value(init_h)?;
        let (ty, dims) = self.out_shape(h)?;
        let t = self.vty(ty)?;
        let w = src_ty.byte_size() as u64;
        let rows: u64 = dims.iter().map(|&d| d as u64).product();
        let total: u64 = self.comp().insts[x]
            .shape
            .as_array()
            .map_or(0, |a| a.udims().iter().map(|&d| d as u64).product());
        let cols = total.checked_div(rows).unwrap_or(0);
        let out = self.new_buf(h, ty, dims)?;
        let init_rows = self.splat(&init, rows.max(1))?;
        if rows == 0 || cols == 0 {
            let a = init_rows.clone();
            self.vpu_map(&out, &[&a], &mut |d, s, n| Inst::VMov {
                dst: d,
                a: s[0],
                n,
                t,
                pat: None,
                wait: None,
                signal: None,
            });
            return Ok(Val::Array(out));
        }
        // Column chunk `cc` of a row; `q` chunks per row; `kr` rows per tile.
        let cc = cols.min((tile / w).max(1)).min((1 << 20) - 1);
        let q = cols.div_ceil(cc);
        let kr = if q == 1 {
            (tile / (cc * w))
                .clamp(1, rows)
                .min(((1 << 20) - 1) / q.max(1))
        } else {
            1
        };
        if rows * q >= 1 << 20 && q > 1 {
            return Err(self.unsupported("a streamed reduce with 2^20 or more partials"));
        }
        let part = self.tmp(ty, vec![(rows * q) as usize])?;
        self.make_room(2 * kr * cc * w + 2 * super::alloc::ALIGN)?;
        let bufs = [
            self.tmp(src_ty, vec![(kr * cc) as usize])?,
            self.tmp(src_ty, vec![(kr * cc) as usize])?,
        ];
        // Tiles in order: (first row, rows, column chunk).
        let mut tiles = Vec::new();
        let mut r = 0;
        while r < rows {
            let k = kr.min(rows - r);
            for j in 0..q {
                tiles.push((r, k, j));
            }
            r += k;
        }
        let load = |l: &mut Self, i: usize| -> CResult<()> {
            let (r, k, j) = tiles[i];
            let c0 = j * cc;
            let n = if q == 1 { k * cols } else { cc.min(cols - c0) };
            l.dma(
                (Space::Vmem, bufs[i % 2].addr),
                (Space::Hbm, src + (r * cols + c0) * w),
                n * w,
            )
        };
        load(self, 0)?;
        for i in 0..tiles.len() {
            if i + 1 < tiles.len() {
                load(self, i + 1)?;
            }
            let (r, k, j) = tiles[i];
            let n = if q == 1 { cols } else { cc.min(cols - j * cc) };
            let dst = part.addr + (r * q + j) * w;
            self.reduce_rows(dst, bufs[i % 2].addr, k, n, w, rop, t);
        }
        let red = if q == 1 {
            part
        } else {
            let red = self.tmp(ty, vec![rows as usize])?;
            self.reduce_rows(red.addr, part.addr, rows, q, w, rop, t);
            red
        };
        let out_flat = out.with_dims(vec![rows as usize]);
        self.binop(op, &out_flat, &red, &init_rows)?;
        self.stats.reduce_streams += 1;
        Ok(Val::Array(out))
    }

    /// `dst[r] = reduce(src[r][0..cols])` for `rows` rows at VMEM addresses `dst` and `src`
    /// (elements of `w` bytes; `vpu.reduce`, at most one VPU chunk per instruction).
    #[allow(clippy::too_many_arguments)]
    fn reduce_rows(
        &mut self,
        dst: u64,
        src: u64,
        rows: u64,
        cols: u64,
        w: u64,
        rop: RedOp,
        t: isa::DType,
    ) {
        let per = (VPU_CHUNK / cols.max(1)).clamp(1, (1 << 20) - 1);
        let mut r = 0;
        while r < rows {
            let k = per.min(rows - r);
            let d = self.e.vaddr(dst + r * w);
            let s = self.e.vaddr(src + r * cols * w);
            self.e.unit(
                Inst::VReduce {
                    dst: d,
                    a: s,
                    rows: k as u32,
                    cols: cols as u32,
                    t,
                    op: rop,
                    wait: None,
                    signal: None,
                },
                Queue::Vpu,
                &[Access::vmem(src + r * cols * w, k * cols * w)],
                &[Access::vmem(dst + r * w, k * w)],
            );
            r += k;
        }
    }
}

/// Lowers `reduce-window` (one operand): a compile-time index table gathers every output
/// element's window into a row of a `[outputs, window]` matrix from `[operand..., init]`
/// (padding and base-dilation holes read `init`, as XLA pads with it), `vpu.reduce` reduces
/// the rows, and the init value is combined last. Strides, padding, base and window dilation
/// all live in the table; its cost (4 bytes per window element) is real.
pub fn lower_window(l: &mut Lowerer<'_>, h: InstId) -> CResult<Option<Val>> {
    let inst = &l.comp().insts[h];
    if inst.opcode != Opcode::ReduceWindow {
        return Ok(None);
    }
    if inst.operands.len() != 2 {
        return Err(l.unsupported("variadic reduce-window"));
    }
    let hlo::View::ReduceWindow {
        window,
        to_apply: comp,
    } = inst.view()
    else {
        return Err(CompileError::Internal(
            "reduce-window without to_apply".into(),
        ));
    };
    let op = reducer_op(l.m, comp)
        .filter(|&o| red_op(o).is_some())
        .ok_or_else(|| {
            l.unsupported("reduce-window whose reducer is not one add/multiply/min/max/and/or/xor")
        })?;
    let rop = red_op(op).expect("filtered");
    let src = l.arr(inst.operands[0])?;
    let init = l.arr(inst.operands[1])?;
    let (ty, dims) = l.out_shape(h)?;
    let t = l.vty(ty)?;
    let rank = src.dims.len();
    let win: Vec<hlo::WindowDim> = if window.is_empty() {
        (0..rank).map(|_| hlo::WindowDim::of_size(1)).collect()
    } else {
        window.to_vec()
    };
    let wdims: Vec<usize> = win.iter().map(|w| w.size as usize).collect();
    let wn: usize = wdims.iter().product();
    let outs: usize = dims.iter().product();
    let out = l.new_buf(h, ty, dims.clone())?;
    if outs == 0 {
        return Ok(Some(Val::Array(out)));
    }
    let init_rows = l.splat(&init, outs as u64)?;
    if wn == 0 {
        l.vpu_map(&out, &[&init_rows], &mut |d, s, n| Inst::VMov {
            dst: d,
            a: s[0],
            n,
            t,
            pat: None,
            wait: None,
            signal: None,
        });
        return Ok(Some(Val::Array(out)));
    }
    if wn >= 1 << 20 || (outs as u64) * (wn as u64) > u32::MAX as u64 {
        return Err(
            l.unsupported("a reduce-window whose windows hold 2^32 or more elements in all")
        );
    }
    // [operand..., init]
    let numel = src.elems() as usize;
    let comb = l.tmp(ty, vec![numel + 1])?;
    let head = comb.with_dims(src.dims.clone());
    l.vpu_map(&head, &[&src], &mut |d, s, n| Inst::VMov {
        dst: d,
        a: s[0],
        n,
        t,
        pat: None,
        wait: None,
        signal: None,
    });
    let tail = Buf {
        addr: comb.addr + numel as u64 * ty.byte_size() as u64,
        dims: vec![1],
        ..comb.clone()
    };
    l.vpu_map(&tail, &[&init], &mut |d, s, n| Inst::VMov {
        dst: d,
        a: s[0],
        n,
        t,
        pat: None,
        wait: None,
        signal: None,
    });
    let ss = super::movement::strides(&src.dims);
    let mut table = Vec::with_capacity(outs * wn);
    let mut oi = vec![0usize; rank];
    for _ in 0..outs {
        let mut wi = vec![0usize; rank];
        for _ in 0..wn {
            let mut off = Some(0usize);
            for d in 0..rank {
                let w = &win[d];
                let q = oi[d] as i64 * w.stride + wi[d] as i64 * w.rhs_dilate.max(1) - w.pad_lo;
                let bd = w.lhs_dilate.max(1);
                off = match off {
                    Some(o0) if q >= 0 && q % bd == 0 && ((q / bd) as usize) < src.dims[d] => {
                        Some(o0 + (q / bd) as usize * ss[d])
                    }
                    _ => None,
                };
            }
            table.push(off.unwrap_or(numel) as u32);
            hlo::shape::next_index(&mut wi, &wdims);
        }
        hlo::shape::next_index(&mut oi, &dims);
    }
    let windows = l.tmp(ty, vec![outs, wn])?;
    l.gather_table(&windows, &comb, &table)?;
    let red = l.tmp(ty, vec![outs])?;
    let w = ty.byte_size() as u64;
    let per = (VPU_CHUNK / wn as u64).clamp(1, (1 << 20) - 1);
    let mut r = 0u64;
    while r < outs as u64 {
        let k = per.min(outs as u64 - r);
        let d = l.e.vaddr(red.addr + r * w);
        let s = l.e.vaddr(windows.addr + r * wn as u64 * w);
        l.e.unit(
            Inst::VReduce {
                dst: d,
                a: s,
                rows: k as u32,
                cols: wn as u32,
                t,
                op: rop,
                wait: None,
                signal: None,
            },
            Queue::Vpu,
            &[Access::vmem(
                windows.addr + r * wn as u64 * w,
                k * wn as u64 * w,
            )],
            &[Access::vmem(red.addr + r * w, k * w)],
        );
        r += k;
    }
    let out_flat = out.with_dims(vec![outs]);
    l.binop(op, &out_flat, &red, &init_rows)?;
    Ok(Some(Val::Array(out)))
}
