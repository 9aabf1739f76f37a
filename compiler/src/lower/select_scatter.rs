//! `select-and-scatter` (e.g. the gradient of max pooling) on the VPU.
//!
//! Algorithm. Let `W` be the number of windows (the source's elements) and `wn` the window's
//! size. For every window element `c` (row-major, as the evaluator scans), compile-time tables
//! give each window's operand position (or none: padding and dilation holes); the operand
//! values there are fetched with `vpu.gather`. A scan over `c` keeps, per window, the selected
//! value and position: the candidate replaces the selection when it is a real element and
//! either nothing real is selected yet or `select(selected, candidate)` is false (the select
//! computation applied element-wise, [`super::apply::apply_comp`]). The result starts as the
//! init value everywhere; one `vpu.scatter` then combines every source element into its
//! window's selected position in window order (windows with no real element carry index
//! `0xFFFF_FFFF`, which the instruction drops).
//!
//! A scatter computation of one add / multiply / minimum / maximum / and / or / xor of its
//! parameters, or an overwrite, is that `vpu.scatter`'s combiner; any other element-wise one
//! runs in rounds ([`super::scatter::scatter_rounds`]), in the same source order.
//!
//! Cost: per window element `c`, on `W` elements: a gather, two u32 tables (DMA), a compare,
//! the select computation and about six ALU instructions; then one scatter of `W` elements.

use super::apply::{apply_comp, vcmpc};
use super::reduce::{red_op, reducer_op};
use super::scatter::{scatter_into, scatter_rounds};
use super::{Lowerer, Val};
use crate::error::CResult;
use hlo::{ComparisonDirection, ElementType, InstId, Opcode};
use isa::RedOp;

/// Lowers `select-and-scatter`; `None` if `h` is not one.
pub fn lower(l: &mut Lowerer<'_>, h: InstId) -> CResult<Option<Val>> {
    let inst = &l.comp().insts[h];
    if inst.opcode != Opcode::SelectAndScatter {
        return Ok(None);
    }
    let a = l.arr(inst.operands[0])?;
    let src = l.arr(inst.operands[1])?;
    let init = l.arr(inst.operands[2])?;
    l.vty(a.ty)?;
    let hlo::View::SelectAndScatter {
        window,
        select: sel,
        scatter: sct,
    } = inst.view()
    else {
        return Err(l.unsupported("select-and-scatter without select and scatter"));
    };
    // `None`: a general scatter computation, in rounds.
    let combiner = {
        let c = &l.m.comps[sct];
        let root = &c.insts[c.root];
        if root.parameter_number() == Some(1) {
            Some((true, RedOp::Add))
        } else {
            reducer_op(l.m, sct).and_then(red_op).map(|o| (false, o))
        }
    };
    let rank = a.dims.len();
    let win: Vec<hlo::WindowDim> = if window.is_empty() {
        (0..rank).map(|_| hlo::WindowDim::of_size(1)).collect()
    } else {
        window.to_vec()
    };
    if win.len() != rank {
        return Err(l.unsupported("select-and-scatter whose window rank differs"));
    }
    let wdims: Vec<usize> = win.iter().map(|w| w.size.max(0) as usize).collect();
    let wn: usize = wdims.iter().product();
    let nw = src.elems() as usize;
    if a.elems() >= u32::MAX as u64 || (nw as u64).saturating_mul(wn as u64) > u32::MAX as u64 {
        return Err(l.unsupported("select-and-scatter with 2^32 or more window elements"));
    }
    let out = l.new_buf(h, a.ty, a.dims.clone())?;
    let fill = l.splat(&init, out.elems())?;
    l.copy_into(&out, &fill)?;
    l.release(&fill);
    if nw == 0 || wn == 0 || out.elems() == 0 {
        return Ok(Some(Val::Array(out)));
    }
    let ss = super::movement::strides(&a.dims);
    // pos[c][w]: operand position of window element c of window w, or u32::MAX.
    let mut pos = vec![Vec::with_capacity(nw); wn];
    let mut oi = vec![0usize; rank];
    for _ in 0..nw {
        let mut wi = vec![0usize; rank];
        for col in pos.iter_mut() {
            let mut off = Some(0usize);
            for d in 0..rank {
                let w = &win[d];
                let q = oi[d] as i64 * w.stride + wi[d] as i64 * w.rhs_dilate.max(1) - w.pad_lo;
                let bd = w.lhs_dilate.max(1);
                off = match off {
                    Some(o0) if q >= 0 && q % bd == 0 && ((q / bd) as usize) < a.dims[d] => {
                        Some(o0 + (q / bd) as usize * ss[d])
                    }
                    _ => None,
                };
            }
            col.push(off.map_or(u32::MAX, |o| o as u32));
            hlo::shape::next_index(&mut wi, &wdims);
        }
        hlo::shape::next_index(&mut oi, &src.dims);
    }
    let flat = a.with_dims(vec![a.elems() as usize]);
    let mut sel_v = None;
    let mut sel_i = None;
    let mut sel_ok = None;
    for col in &pos {
        if col.iter().all(|&p| p == u32::MAX) {
            continue;
        }
        let safe: Vec<u32> = col
            .iter()
            .map(|&p| if p == u32::MAX { 0 } else { p })
            .collect();
        let v = l.vgather_table(&flat, &safe)?;
        let idx = l.index_table(col)?;
        let ok = vcmpc(l, ComparisonDirection::Ne, &idx, u32::MAX as u64)?;
        let (Some(sv), Some(si), Some(so)) = (sel_v.take(), sel_i.take(), sel_ok.take()) else {
            sel_v = Some(v);
            sel_i = Some(idx);
            sel_ok = Some(ok);
            continue;
        };
        let keep = apply_comp(l, sel, &[sv.clone(), v.clone()], "select")?;
        let keep = match keep.as_slice() {
            [p] if p.ty == ElementType::Pred => p.clone(),
            _ => return Err(l.unsupported("a select computation that does not return one pred")),
        };
        let nk = l.vnot(&keep)?;
        l.release_unless(&keep, &[sv.clone(), v.clone()]);
        let nso = l.vnot(&so)?;
        let either = l.vop2(Opcode::Or, &nso, &nk)?;
        l.release(&nk);
        l.release(&nso);
        let take = l.vop2(Opcode::And, &ok, &either)?;
        l.release(&either);
        let nv = l.vsel(&take, &v, &sv)?;
        let ni = l.vsel(&take, &idx, &si)?;
        let no = l.vop2(Opcode::Or, &so, &ok)?;
        for b in [&take, &sv, &si, &so, &v, &idx, &ok] {
            l.release(b);
        }
        sel_v = Some(nv);
        sel_i = Some(ni);
        sel_ok = Some(no);
    }
    if let Some(si) = sel_i {
        let s = src.with_dims(vec![nw]);
        match combiner {
            Some((set, op)) => scatter_into(l, &out, &s, &si, set, op)?,
            None => scatter_rounds(l, sct, std::slice::from_ref(&out), &[s], &si)?,
        }
    }
    Ok(Some(Val::Array(out)))
}
