//! `scatter` with `vpu.scatter` (multi-operand, batching dims, any `index_vector_dim`).
//!
//! Algorithm. The destination of every update element is computed on chip from the scatter
//! indices, as in [`super::gather`]: for each of the `K` index components a compile-time table
//! gathers `S[g, k]` for every scatter position `g`, the component is checked against
//! `[0, dim - window]` in the indices' own type (`vpu.cmp`, `vpu.and`: a window that does not
//! fit is skipped entirely, as XLA does; indices are never clamped) and, converted to u32 and
//! multiplied by the operand stride, summed into the flat start of the window. Tables expand
//! the start and the validity to every update element and add its offset inside the window;
//! an invalid element gets index `0xFFFF_FFFF`, which `vpu.scatter` drops in hardware (it is
//! `>= s[lim]`). The result is a copy of the operand, then one `vpu.scatter` per operand (and
//! VPU chunk) applies the updates **in update order**, so duplicates combine deterministically.
//!
//! **Combiners.** When the update computation is, per operand `i`, `p[N+i]` (overwrite:
//! `set=1`), `p[i]` (keep: no scatter), or one add / multiply / minimum / maximum / and / or /
//! xor of `p[i]` and `p[N+i]`, the instruction combines duplicates itself.
//!
//! **Any other element-wise computation** (e.g. `max(a, 2·b)`, a tuple-returning variadic
//! one, a non-commutative one) runs in **rounds** ([`scatter_rounds`]), which give exactly the
//! evaluator's order (every update applied in row-major update order, `out = f(out, upd)`):
//! round `r` applies, for every destination, its first still-pending update. Per round:
//! `vpu.scatter` with `min` of the update positions into a per-destination slot array picks
//! each destination's first pending update (the winner), a gather of the slot back tells each
//! update whether it won, the current values are gathered, the computation runs element-wise
//! on all updates ([`apply_comp`]), the winners' results are scattered (`set=1`, at most one
//! per destination), the slots are reset and the winners leave the pending set. A
//! `vpu.scatter` of ones into a one-element flag says whether any update is still pending,
//! which the sequencer loads (`s.ld`) to branch back. The number of rounds is the largest
//! number of updates that share a destination (1 without duplicates); each round costs about
//! `12 + |f|` VPU passes over the updates. Computations with non-element-wise ops are "not
//! supported on chip yet". A timing-only run reads a zero flag and runs one round.
//!
//! Cost: `K·(gather + 2 cmp + and + cvt + mul + add)` VPU instructions on the scatter positions,
//! two expanding gathers, an add and a select on the update elements, an operand copy and one
//! cross-lane pass per operand over the updates (per round for the general form).

use super::apply::{apply_comp, R_CONST};
use super::emit::{Access, Queue};
use super::gather::{each_index, int_max};
use super::movement::strides;
use super::reduce::{red_op, reducer_op};
use super::{Buf, Lowerer, Val, VPU_CHUNK};
use crate::error::{CResult, CompileError};
use hlo::{ComparisonDirection, ElementType, InstId, Opcode};
use isa::{Inst, RedOp, SReg, Target};

/// The register the rounds loop loads its "still pending" flag into.
const R_MORE: SReg = SReg(30);

/// What the update computation does to operand `i`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Combine {
    Keep,
    Set,
    Op(RedOp),
}

/// The per-operand combiners of an update computation of `n` operands, if it is of the form
/// the module docs name.
fn combiners(m: &hlo::Module, comp: hlo::CompId, n: usize) -> Option<Vec<Combine>> {
    let c = &m.comps[comp];
    let param = |h: InstId| {
        let i = &c.insts[h];
        i.parameter_number().map(|n| n as i64)
    };
    let one = |h: InstId, i: usize| -> Option<Combine> {
        match param(h) {
            Some(p) if p == i as i64 => return Some(Combine::Keep),
            Some(p) if p == (n + i) as i64 => return Some(Combine::Set),
            Some(_) => return None,
            None => {}
        }
        let inst = &c.insts[h];
        let ps: Vec<i64> = inst.operands.iter().filter_map(|&o| param(o)).collect();
        let mut sorted = ps.clone();
        sorted.sort();
        if inst.operands.len() != 2 || sorted != [i as i64, (n + i) as i64] {
            return None;
        }
        red_op(inst.opcode).map(Combine::Op)
    };
    if n == 1 {
        let root = c.root;
        if let Some(k) = one(root, 0) {
            return Some(vec![k]);
        }
        return reducer_op(m, comp)
            .and_then(red_op)
            .map(|o| vec![Combine::Op(o)]);
    }
    let root = &c.insts[c.root];
    if root.opcode != Opcode::Tuple || root.operands.len() != n {
        return None;
    }
    root.operands
        .iter()
        .enumerate()
        .map(|(i, &h)| one(h, i))
        .collect()
}

/// Lowers `scatter`; `None` if `h` is not one.
pub fn lower(l: &mut Lowerer<'_>, h: InstId) -> CResult<Option<Val>> {
    let inst = &l.comp().insts[h];
    if inst.opcode != Opcode::Scatter {
        return Ok(None);
    }
    let nops = inst.operands.len();
    if nops < 3 || nops.is_multiple_of(2) {
        return Err(l.unsupported("scatter without N operands, indices and N updates"));
    }
    let n = nops / 2;
    let hlo::View::Scatter { to_apply: comp } = inst.view() else {
        return Err(l.unsupported("scatter without to_apply"));
    };
    // `None`: the general form, in rounds.
    let comb = combiners(l.m, comp, n);
    let operands = (0..n)
        .map(|i| l.arr(inst.operands[i]))
        .collect::<CResult<Vec<_>>>()?;
    let ind = l.arr(inst.operands[n])?;
    let updates = (n + 1..2 * n + 1)
        .map(|i| l.arr(inst.operands[i]))
        .collect::<CResult<Vec<_>>>()?;
    for (o, c) in operands.iter().zip(comb.iter().flatten()) {
        if o.ty.is_pred() && matches!(c, Combine::Op(RedOp::Add | RedOp::Mul)) {
            return Err(l.unsupported("scatter-add or -multiply of pred"));
        }
        if o.ty.is_float() && matches!(c, Combine::Op(RedOp::And | RedOp::Or | RedOp::Xor)) {
            return Err(l.unsupported("bitwise scatter of floats"));
        }
    }
    for o in operands.iter().chain(&updates) {
        l.vty(o.ty)?;
    }
    if !ind.ty.is_integer() {
        return Err(l.unsupported(format!("scatter with {} indices", ind.ty)));
    }
    let a = &operands[0];
    let u = &updates[0];
    let shape = |o: usize| {
        l.comp().insts[inst.operands[o]]
            .shape
            .as_array()
            .ok_or_else(|| CompileError::Internal("scatter of a tuple".into()))
    };
    let geo =
        hlo::indexing::ScatterGeometry::resolve(&inst.attrs, shape(0)?, shape(n)?, shape(n + 1)?)
            .map_err(|e| {
            l.unsupported(format!(
                "scatter whose attributes do not match its shapes: {e}"
            ))
        })?;
    if operands.iter().any(|o| o.dims != a.dims) || updates.iter().any(|x| x.dims != u.dims) {
        return Err(l.unsupported("scatter whose operands or updates differ in shape"));
    }
    let space = &geo.indices;
    let (uwin, win_operand, uscatter) =
        (&geo.update_window, &geo.window_operand, &geo.update_scatter);
    let (map, ibatch, sbatch) = (&geo.map, &geo.input_batching, &geo.indices_batching);
    if a.elems() >= u32::MAX as u64 || u.elems() > u32::MAX as u64 {
        return Err(l.unsupported("scatter with 2^32 or more elements"));
    }
    let wsize = &geo.window_size;
    // Results: copies of the operands.
    let mut outs = Vec::with_capacity(n);
    for o in &operands {
        let b = l.new_buf(h, o.ty, o.dims.clone())?;
        l.copy_into(&b, o)?;
        outs.push(b);
    }
    let un = u.elems();
    if un > 0
        && comb
            .as_ref()
            .is_none_or(|c| c.iter().any(|c| *c != Combine::Keep))
    {
        let st = strides(&a.dims);
        let g_n: usize = space.batch_sizes().iter().product();
        let mut start = l.vconst(ElementType::U32, 0, g_n as u64)?;
        let mut valid = l.vconst(ElementType::Pred, 1, g_n as u64)?;
        for (k, &d) in map.iter().enumerate() {
            let comp = l.index_component(&ind, space, k)?;
            let hi = a.dims[d] as i64 - wsize[d] as i64;
            let ok = if hi < 0 {
                l.vconst(ElementType::Pred, 0, g_n as u64)?
            } else {
                let lo_ok = if ind.ty.is_signed_int() {
                    let z = l.vconst(ind.ty, 0, g_n as u64)?;
                    let c = l.vcmp(ComparisonDirection::Ge, &comp, &z, false)?;
                    l.release(&z);
                    Some(c)
                } else {
                    None
                };
                let hi_ok = if (hi as u64) < int_max(ind.ty) {
                    let z = l.vconst(ind.ty, hi as u64, g_n as u64)?;
                    let c = l.vcmp(ComparisonDirection::Le, &comp, &z, false)?;
                    l.release(&z);
                    Some(c)
                } else {
                    None
                };
                match (lo_ok, hi_ok) {
                    (Some(x), Some(y)) => {
                        let r = l.vop2(Opcode::And, &x, &y)?;
                        l.release(&y);
                        l.release(&x);
                        r
                    }
                    (Some(x), None) | (None, Some(x)) => x,
                    (None, None) => l.vconst(ElementType::Pred, 1, g_n as u64)?,
                }
            };
            let v2 = l.vop2(Opcode::And, &valid, &ok)?;
            l.release(&ok);
            l.release(&valid);
            valid = v2;
            let cu = l.vcvt(&comp, ElementType::U32)?;
            l.release(&comp);
            let scaled = l.vop2c(Opcode::Multiply, &cu, st[d] as u64)?;
            l.release(&cu);
            let sum = l.vop2(Opcode::Add, &start, &scaled)?;
            l.release(&scaled);
            l.release(&start);
            start = sum;
        }
        // Expand to the update elements.
        let gs = strides(&space.batch_sizes());
        let mut expand = Vec::with_capacity(un as usize);
        let mut base = Vec::with_capacity(un as usize);
        let mut g = vec![0usize; uscatter.len()];
        each_index(&u.dims, |ui| {
            for (p, &d) in uscatter.iter().enumerate() {
                g[p] = ui[d];
            }
            expand.push(g.iter().zip(&gs).map(|(x, s)| x * s).sum::<usize>() as u32);
            let mut off = 0usize;
            for (&od, &p) in ibatch.iter().zip(sbatch) {
                off += g[p] * st[od];
            }
            for (&ud, &od) in uwin.iter().zip(win_operand) {
                off += ui[ud] * st[od];
            }
            base.push(off as u32);
        });
        let full = l.vgather_table(&start, &expand)?;
        let tb = l.index_table(&base)?;
        let sum = l.vop2(Opcode::Add, &full, &tb)?;
        l.release(&tb);
        l.release(&full);
        let vexp = l.vgather_table(&valid, &expand)?;
        let drop = l.vconst(ElementType::U32, u32::MAX as u64, un)?;
        let dest = l.vsel(&vexp, &sum, &drop)?;
        l.release(&drop);
        l.release(&vexp);
        l.release(&sum);
        match &comb {
            Some(comb) => {
                for ((out, upd), c) in outs.iter().zip(&updates).zip(comb) {
                    let (set, op) = match *c {
                        Combine::Keep => continue,
                        Combine::Set => (true, RedOp::Add),
                        Combine::Op(o) => (false, o),
                    };
                    scatter_into(l, out, upd, &dest, set, op)?;
                }
            }
            None => scatter_rounds(l, comp, &outs, &updates, &dest)?,
        }
        l.release(&dest);
    }
    Ok(Some(if n == 1 {
        Val::Array(outs.pop().expect("one operand"))
    } else {
        Val::Tuple(outs.into_iter().map(Val::Array).collect())
    }))
}

/// `vpu.scatter` of `upd` into `out` at the u32 indices `dest` (an index `>= out.elems()` is
/// dropped), in update order: `out[dest[i]] = upd[i]` (`set`) or `op(out[dest[i]], upd[i])`.
pub(crate) fn scatter_into(
    l: &mut Lowerer<'_>,
    out: &Buf,
    upd: &Buf,
    dest: &Buf,
    set: bool,
    op: RedOp,
) -> CResult<()> {
    let t = l.vty(out.ty)?;
    let w = out.ty.byte_size() as u64;
    let un = upd.elems();
    l.e.seq(Inst::SLi {
        rd: R_CONST,
        imm: out.elems() as i64,
    });
    let mut s = 0u64;
    while s < un {
        let k = VPU_CHUNK.min(un - s);
        let dst = l.e.vaddr(out.addr);
        let x = l.e.vaddr(upd.addr + s * w);
        let ix = l.e.vaddr(dest.addr + s * 4);
        l.e.unit(
            Inst::VScatter {
                dst,
                a: x,
                idx: ix,
                lim: R_CONST,
                n: k as u32,
                t,
                op,
                set,
                wait: None,
                signal: None,
            },
            Queue::Vpu,
            &[
                Access::vmem(upd.addr + s * w, k * w),
                Access::vmem(dest.addr + s * 4, k * 4),
                out.access(),
            ],
            &[out.access()],
        );
        s += k;
    }
    Ok(())
}

/// The general update computation `comp` applied in rounds (module docs): `outs[i][dest[j]] =
/// comp(outs.., updates..)[i]` for every update `j` in order; `dest[j] >= out.elems()` drops
/// update `j`.
pub(crate) fn scatter_rounds(
    l: &mut Lowerer<'_>,
    comp: hlo::CompId,
    outs: &[Buf],
    updates: &[Buf],
    dest: &Buf,
) -> CResult<()> {
    let un = dest.elems();
    let none = u32::MAX as u64;
    // Per destination: the position of its first pending update (`none` between rounds).
    let slot = l.vconst(ElementType::U32, none, outs[0].elems())?;
    let pos = if un < 1 << 19 {
        l.viota(ElementType::U32, un, 1, un)?
    } else {
        l.index_table(&(0..un as u32).collect::<Vec<_>>())?
    };
    // The destinations of the pending updates (`none` once applied or dropped).
    let pend = l.vcopy(dest)?;
    let nones = l.vconst(ElementType::U32, none, un)?;
    let zeros = l.vconst(ElementType::U32, 0, un)?;
    let ones = l.vconst(ElementType::U32, 1, un)?;
    let upd: Vec<Buf> = updates
        .iter()
        .map(|u| u.with_dims(vec![un as usize]))
        .collect();
    let top = l.e.b.new_label();
    l.e.fence();
    l.e.b.bind(top);
    l.e.join();
    // Each destination's first pending update wins this round.
    scatter_into(l, &slot, &pos, &pend, false, RedOp::Min)?;
    let pending = l.vcmp(ComparisonDirection::Ne, &pend, &nones, false)?;
    let at = l.vsel(&pending, &pend, &zeros)?;
    let first = l.vgather(&slot, &at)?;
    let is_first = l.vcmp(ComparisonDirection::Eq, &first, &pos, false)?;
    l.release(&first);
    let won = l.vop2(Opcode::And, &pending, &is_first)?;
    l.release(&is_first);
    l.release(&pending);
    let mut args = Vec::with_capacity(2 * outs.len());
    for o in outs {
        args.push(l.vgather(o, &at)?);
    }
    l.release(&at);
    args.extend(upd.iter().cloned());
    let res = apply_comp(l, comp, &args, "scatter update")?;
    if res.len() != outs.len() || res.iter().zip(outs).any(|(r, o)| r.ty != o.ty) {
        return Err(l.unsupported("a scatter update computation whose result does not match"));
    }
    let to = l.vsel(&won, &pend, &nones)?;
    for (o, r) in outs.iter().zip(&res) {
        scatter_into(l, o, r, &to, true, RedOp::Add)?;
    }
    l.release(&to);
    for r in res.iter().rev() {
        l.release_unless(r, &args);
    }
    for a in args.iter().take(outs.len()).rev() {
        l.release(a);
    }
    // Reset the slots, retire the winners, and raise the flag if any update is still pending.
    scatter_into(l, &slot, &nones, &pend, true, RedOp::Add)?;
    let rest = l.vsel(&won, &nones, &pend)?;
    l.release(&won);
    l.copy_into(&pend, &rest)?;
    l.release(&rest);
    let more = l.vcmp(ComparisonDirection::Ne, &pend, &nones, false)?;
    let flag_at = l.vsel(&more, &zeros, &nones)?;
    l.release(&more);
    let flag = l.vconst(ElementType::U32, 0, 1)?;
    scatter_into(l, &flag, &ones, &flag_at, false, RedOp::Max)?;
    l.release(&flag_at);
    l.e.seq_read(Access::vmem(flag.addr, 4));
    let addr = l.e.vaddr(flag.addr);
    l.e.seq(Inst::SLd {
        rd: R_MORE,
        addr,
        t: isa::DType::U32,
    });
    l.release(&flag);
    l.e.fence();
    l.e.b.emit_branch(
        Inst::Bne {
            ra: R_MORE,
            rb: SReg(0),
            target: Target(0),
        },
        top,
    );
    for b in [&ones, &zeros, &nones, &pend, &pos, &slot] {
        l.release(b);
    }
    Ok(())
}
