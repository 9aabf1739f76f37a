//! `reduce` on the VPU's cross-lane unit: the operand is permuted so the reduced dimensions
//! come last (a no-op when they already do), each row is reduced with `vpu.reduce`, and the
//! init value is combined last: `out[r] = op(reduce(row r), init)`. The reducer must be one
//! binary op of its two parameters (add, multiply, minimum, maximum, and, or, xor); variadic
//! reductions go to [`super::variadic`]; other reducers are not supported yet.

use super::emit::{Access, Queue};
use super::{Buf, Lowerer, Val, VPU_CHUNK};
use crate::error::{CResult, CompileError};
use hlo::{InstId, Module, Opcode};
use isa::Inst;
use isa::RedOp;

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
    let per = (VPU_CHUNK / cols).clamp(1, (1 << 20) - 1);
    let mut r = 0;
    while r < rows {
        let k = per.min(rows - r);
        let d = l.e.vaddr(red.addr + r * w);
        let s = l.e.vaddr(a.addr + r * cols * w);
        l.e.unit(
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
            &[Access::vmem(a.addr + r * cols * w, k * cols * w)],
            &[Access::vmem(red.addr + r * w, k * w)],
        );
        r += k;
    }
    let out_flat = out.with_dims(vec![rows as usize]);
    l.binop(op, &out_flat, &red, &init_rows)?;
    Ok(Some(Val::Array(out)))
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
