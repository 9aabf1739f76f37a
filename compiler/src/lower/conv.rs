//! `convolution` as im2col + matmul on the MXUs.
//!
//! The input is brought to canonical `[N, in.., C]` (plus one zero element after it, which
//! padding and dilation holes read), the kernel to `[k.., C/G, O]`. For each run of output
//! features with one feature group and one batch group, a compile-time index table gathers the
//! patch matrix `[(b, out..), (tap.., c)]` (`vpu.gather`; stride, padding, base and window
//! dilation and window reversal are all in the table) and another the kernel matrix
//! `[(tap.., c), o]`; [`super::dot::matmul`] multiplies them into the canonical result
//! `[N/BG, out.., O]`, which is finally permuted to the declared output layout. Semantics as
//! the evaluator's (`hlo::eval::linalg::conv`). The tables cost VMEM and DMA (4 bytes per
//! patch element): large layers need a direct lowering (strided MXU operands), not built yet.

use super::dot::matmul;
use super::emit::{Access, Queue};
use super::movement::strides;
use super::{Lowerer, Val};
use crate::error::CResult;
use hlo::{InstId, Opcode, WindowDim};
use isa::{Inst, SReg};

fn advance(idx: &mut [usize], dims: &[usize]) {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < dims[d] {
            return;
        }
        idx[d] = 0;
    }
}

/// Lowers `convolution`; `None` if `h` is not one.
pub fn lower(l: &mut Lowerer<'_>, h: InstId) -> CResult<Option<Val>> {
    let inst = &l.comp().insts[h];
    if inst.opcode != Opcode::Convolution {
        return Ok(None);
    }
    let attrs = inst.attrs.clone();
    let lhs = l.arr(inst.operands[0])?;
    let rhs = l.arr(inst.operands[1])?;
    let (ty, out_dims) = l.out_shape(h)?;
    let lab = attrs
        .dim_labels
        .clone()
        .ok_or_else(|| l.unsupported("convolution without dim_labels"))?;
    let u = |v: &[i64]| v.iter().map(|&d| d as usize).collect::<Vec<_>>();
    let ns = lab.input_spatial.len();
    let mut lp = vec![lab.input_batch as usize];
    lp.extend(u(&lab.input_spatial));
    lp.push(lab.input_feature as usize);
    let mut rp = u(&lab.kernel_spatial);
    rp.push(lab.kernel_input_feature as usize);
    rp.push(lab.kernel_output_feature as usize);
    let mut op = vec![lab.output_batch as usize];
    op.extend(u(&lab.output_spatial));
    op.push(lab.output_feature as usize);

    let n = lhs.dims[lp[0]];
    let c = lhs.dims[lp[ns + 1]];
    let in_sp: Vec<usize> = lp[1..=ns].iter().map(|&d| lhs.dims[d]).collect();
    let k_sp: Vec<usize> = rp[..ns].iter().map(|&d| rhs.dims[d]).collect();
    let cg = rhs.dims[rp[ns]];
    let o = rhs.dims[rp[ns + 1]];
    let out_sp: Vec<usize> = op[1..=ns].iter().map(|&d| out_dims[d]).collect();
    let groups = attrs.feature_group_count.unwrap_or(1).max(1) as usize;
    let bgroups = attrs.batch_group_count.unwrap_or(1).max(1) as usize;
    let win: Vec<WindowDim> = attrs
        .window
        .clone()
        .unwrap_or_else(|| k_sp.iter().map(|&k| WindowDim::of_size(k as i64)).collect());
    let og = o / groups;
    let obg = o / bgroups;
    let nb = n / bgroups;
    let npos: usize = out_sp.iter().product();
    let nwin: usize = k_sp.iter().product();
    let kdim = nwin * cg;
    let rows = nb * npos;

    // Canonical input with a zero element after it.
    let numel = lhs.elems() as usize;
    let comb = l.tmp(lhs.ty, vec![numel + 1])?;
    let mut cdims = vec![n];
    cdims.extend(&in_sp);
    cdims.push(c);
    l.permute_into(&comb.with_dims(cdims), &lhs, &lp)?;
    let zero_at = comb.addr + numel as u64 * lhs.ty.byte_size() as u64;
    let t = l.vty(lhs.ty)?;
    let dst = l.e.vaddr(zero_at);
    l.e.unit(
        Inst::VSplat {
            dst,
            src: SReg(0),
            n: 1,
            t,
            wait: None,
            signal: None,
        },
        Queue::Vpu,
        &[],
        &[Access::vmem(zero_at, lhs.ty.byte_size() as u64)],
    );
    // Canonical kernel.
    let mut kdims = k_sp.clone();
    kdims.push(cg);
    kdims.push(o);
    let kc = if rp.iter().enumerate().all(|(i, &p)| i == p) {
        rhs.clone()
    } else {
        let k = l.tmp(rhs.ty, kdims.clone())?;
        l.permute_into(&k, &rhs, &rp)?;
        k
    };

    // Input offsets per (position, tap) within one batch element (minus the channel).
    let ls = strides(&[&[n][..], &in_sp[..], &[c][..]].concat());
    let mut offsets: Vec<Option<usize>> = Vec::with_capacity(npos * nwin);
    let mut ypos = vec![0usize; ns];
    for _ in 0..npos {
        let mut kpos = vec![0usize; ns];
        for _ in 0..nwin {
            let mut off = Some(0usize);
            for d in 0..ns {
                let w = &win[d];
                let q = ypos[d] as i64 * w.stride + kpos[d] as i64 * w.rhs_dilate - w.pad_lo;
                let ld = w.lhs_dilate.max(1);
                off = match off {
                    Some(o0) if q >= 0 && q % ld == 0 && ((q / ld) as usize) < in_sp[d] => {
                        Some(o0 + (q / ld) as usize * ls[d + 1])
                    }
                    _ => None,
                };
            }
            offsets.push(off);
            advance(&mut kpos, &k_sp);
        }
        advance(&mut ypos, &out_sp);
    }
    let kernel_tap: Vec<usize> = {
        let mut v = Vec::with_capacity(nwin);
        let mut kpos = vec![0usize; ns];
        for _ in 0..nwin {
            let mut flat = 0;
            for ((&kp, &ks), w) in kpos.iter().zip(&k_sp).zip(&win) {
                flat = flat * ks + if w.reversal { ks - 1 - kp } else { kp };
            }
            v.push(flat);
            advance(&mut kpos, &k_sp);
        }
        v
    };

    let mut canon_dims = vec![nb];
    canon_dims.extend(&out_sp);
    canon_dims.push(o);
    let out_identity = op.iter().enumerate().all(|(i, &p)| i == p);
    let canon = if out_identity {
        l.new_buf(h, ty, out_dims.clone())?
    } else {
        l.tmp(ty, canon_dims.clone())?
    };
    let mut bounds: Vec<usize> = (0..=groups)
        .map(|i| i * og)
        .chain((0..=bgroups).map(|i| i * obg))
        .collect();
    bounds.sort_unstable();
    bounds.dedup();
    let w = ty.byte_size() as u64;
    for seg in bounds.windows(2) {
        let (o0, o1) = (seg[0], seg[1]);
        let (fg, bgi) = (o0 / og, o0 / obg);
        let nn = o1 - o0;
        if rows == 0 || nn == 0 {
            continue;
        }
        // Patch matrix.
        let mut ptab = Vec::with_capacity(rows * kdim);
        for b in 0..nb {
            let base = (bgi * nb + b) * ls[0] + fg * cg;
            for pos in 0..npos {
                for tp in 0..nwin {
                    match offsets[pos * nwin + tp] {
                        Some(off) => ptab.extend((0..cg).map(|ci| (base + off + ci) as u32)),
                        None => ptab.extend(std::iter::repeat_n(numel as u32, cg)),
                    }
                }
            }
        }
        let patches = l.tmp(lhs.ty, vec![1, rows, kdim])?;
        l.gather_table(&patches, &comb, &ptab)?;
        // Kernel matrix [(tap, c), o0..o1] from canonical [k.., cg, o].
        let mut ktab = Vec::with_capacity(kdim * nn);
        for &kt in &kernel_tap {
            for ci in 0..cg {
                let row = (kt * cg + ci) * o;
                ktab.extend((o0..o1).map(|oo| (row + oo) as u32));
            }
        }
        let kmat = l.tmp(rhs.ty, vec![1, kdim, nn])?;
        l.gather_table(&kmat, &kc, &ktab)?;
        if nn == o {
            let dst = canon.with_dims(vec![1, rows, o]);
            matmul(
                l,
                &patches,
                &kmat,
                (1, rows, kdim, nn),
                &dst,
                attrs.operand_precision.as_deref(),
            )?;
        } else {
            let part = l.tmp(ty, vec![1, rows, nn])?;
            matmul(
                l,
                &patches,
                &kmat,
                (1, rows, kdim, nn),
                &part,
                attrs.operand_precision.as_deref(),
            )?;
            l.dma_rows(
                canon.addr + o0 as u64 * w,
                part.addr,
                nn as u64 * w,
                rows as u64,
                nn as u64 * w,
                o as u64 * w,
            );
        }
    }
    let out = if out_identity {
        canon
    } else {
        // Output dim d is canonical axis inv[d].
        let mut inv = vec![0; op.len()];
        for (j, &d) in op.iter().enumerate() {
            inv[d] = j;
        }
        let out = l.new_buf(h, ty, out_dims)?;
        l.permute_into(&out, &canon.with_dims(canon_dims), &inv)?;
        out
    };
    Ok(Some(Val::Array(out)))
}
