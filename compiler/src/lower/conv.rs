//! `convolution` as im2col + matmul on the MXUs.
//!
//! The input is brought to canonical `[N, in.., C]` (plus one zero element after it, which
//! padding and dilation holes read), the kernel to `[k.., C/G, O]`. For each run of output
//! features with one feature group and one batch group, a compile-time index table gathers the
//! patch matrix `[(b, out..), (tap.., c)]` (`vpu.gather`; stride, padding, base and window
//! dilation and window reversal are all in the table) and another the kernel matrix
//! `[(tap.., c), o]`; [`super::dot::matmul`] multiplies them into the canonical result
//! `[N/BG, out.., O]`, which is finally permuted to the declared output layout. Semantics as
//! the evaluator's (`eval::linalg::conv`). The tables cost VMEM and DMA (4 bytes per
//! patch element), so large 2-D layers take the direct lowering (`direct`: stride 1 over
//! flattened padded rows, `flat_jobs`; layers with at most half the MXU's columns of output
//! features pack several output pixels per MXU row, [`FlatGeom`]), and stride-1 bf16 layers
//! of entry parameters whose result is the module's are streamed from HBM on every core
//! ([`StreamConv`]; small images with many channels as an im2col matrix of the real pixels).

use super::dot::{emit_job_list, matmul, prepare, Job, MxuOp};
use super::emit::{Access, Queue};
use super::movement::strides;
use super::{Buf, Lowerer, Val};
use crate::error::CResult;
use hlo::{ElementType, Precision};
use hlo::{InstId, Opcode, WindowDim};
use isa::{Inst, SReg};

/// Lowers `convolution`; `None` if `h` is not one.
pub fn lower(l: &mut Lowerer<'_>, h: InstId) -> CResult<Option<Val>> {
    let inst = &l.comp().insts[h];
    if inst.opcode != Opcode::Convolution {
        return Ok(None);
    }
    let lhs = l.arr(inst.operands[0])?;
    let rhs = l.arr(inst.operands[1])?;
    let (ty, out_dims) = l.out_shape(h)?;
    let Some(view) = inst.conv() else {
        return Err(l.unsupported("convolution without dim_labels"));
    };
    let lab = view.dims;
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
    let groups = view.feature_group_count.max(1) as usize;
    let bgroups = view.batch_group_count.max(1) as usize;
    // No window: one window dimension per kernel dimension, of the kernel's size.
    let win: Vec<WindowDim> = if view.window.is_empty() {
        k_sp.iter().map(|&k| WindowDim::of_size(k as i64)).collect()
    } else {
        view.window.to_vec()
    };
    let og = o / groups;
    let obg = o / bgroups;
    let nb = n / bgroups;
    let npos: usize = out_sp.iter().product();
    let nwin: usize = k_sp.iter().product();
    let kdim = nwin * cg;
    let rows = nb * npos;

    // im2col while its index table (4 bytes per patch element) stays small; the direct
    // lowering otherwise (it needs no table, but pays a weight load per window tap).
    let table_bytes = 4 * (nb * npos * nwin * cg) as u64 * groups.max(bgroups) as u64;
    let direct_ok = table_bytes > l.arch.vmem.bytes / 8
        && ns == 2
        && groups == 1
        && bgroups == 1
        && win.iter().all(|w| {
            w.lhs_dilate <= 1 && w.pad_lo >= 0 && w.pad_hi >= 0 && w.stride >= 1 && !w.reversal
        });
    if direct_ok {
        let g = Direct {
            n,
            c,
            o,
            in_sp: [in_sp[0], in_sp[1]],
            k_sp: [k_sp[0], k_sp[1]],
            out_sp: [out_sp[0], out_sp[1]],
            win: [win[0], win[1]],
        };
        return direct(
            l,
            h,
            &lhs,
            &rhs,
            (&lp, &rp, &op),
            ty,
            out_dims,
            &g,
            view.precision,
        )
        .map(|b| Some(Val::Array(b)));
    }
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
            hlo::shape::next_index(&mut kpos, &k_sp);
        }
        hlo::shape::next_index(&mut ypos, &out_sp);
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
            hlo::shape::next_index(&mut kpos, &k_sp);
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
                view.precision,
            )?;
        } else {
            let part = l.tmp(ty, vec![1, rows, nn])?;
            matmul(
                l,
                &patches,
                &kmat,
                (1, rows, kdim, nn),
                &part,
                view.precision,
            )?;
            l.dma_strided(
                (isa::Space::Vmem, canon.addr + o0 as u64 * w),
                (isa::Space::Vmem, part.addr),
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

/// Geometry of a 2-D convolution for the direct lowering.
#[derive(Clone, Debug)]
pub struct Direct {
    n: usize,
    c: usize,
    o: usize,
    in_sp: [usize; 2],
    k_sp: [usize; 2],
    out_sp: [usize; 2],
    win: [WindowDim; 2],
}

/// How the flattened-row lowering ([`flat_jobs`]) lays a stride-1 layer out: the zero-padded
/// grid `hp × wp` (`wp` rounded up to a multiple of `pack`), `pack` output pixels per MXU row,
/// the contraction length of one kernel row when packed, and the zero pixels the buffer needs
/// after the grid (the last packed row's window reads past it).
///
/// *Packing* (a layer with at most half the MXU's columns of output features, as XLA:TPU
/// does for small-channel convolutions): matmul row `j` of a chunk holds the input window of
/// `pack` adjacent pixels, `((KW − 1)·dw + pack)·C` contiguous elements (row stride
/// `pack·C`), and the packed kernel row `kh` is `[((KW − 1)·dw + pack)·C][pack·O]`, column
/// block `p` holding `W[kh][kw]` at rows `(kw·dw + p)·C` and zeros elsewhere, so accumulator
/// row `j` holds pixels `jP .. jP + P` side by side (`[pixel][O]`, the result's own layout).
/// A 3×3 layer with 64 channels in and out then loads two full 128×128 tiles per kernel row
/// and streams half the rows, instead of a 128-row and a 64-row tile of 64 columns over all
/// of them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FlatGeom {
    hp: usize,
    wp: usize,
    pack: usize,
    klen: usize,
    slack: usize,
}

/// [`FlatGeom`] of `g` on `a`, packing as [`flat_pack`] chooses.
fn flat_geom(g: &Direct, a: &arch::ArchConfig) -> FlatGeom {
    flat_geom_packed(g, flat_pack(g, a))
}

/// How many output pixels one MXU row of the flattened-row lowering of `g` holds on `a`: 1
/// when packing does not pay, by the MXU row-cycles of the weight tiles plus the DMAs that
/// build the packed kernel.
fn flat_pack(g: &Direct, a: &arch::ArchConfig) -> usize {
    let hp = g.in_sp[0] + (g.win[0].pad_lo + g.win[0].pad_hi) as usize;
    let wp0 = g.in_sp[1] + (g.win[1].pad_lo + g.win[1].pad_hi) as usize;
    let (rows, cols) = (a.mxu.rows as usize, a.mxu.cols as usize);
    let nmxu = (a.mxu.count as usize * a.cores_per_chip.max(1) as usize).max(1);
    let [kh_n, kw_n] = g.k_sp;
    let dw = g.win[1].rhs_dilate.max(1) as usize;
    let c = g.c;
    let pixels = g.n * hp * wp0;
    let cost = |p: usize| -> usize {
        let tiles = if p > 1 {
            (((kw_n - 1) * dw + p) * c).div_ceil(rows)
        } else if dw == 1 {
            (kw_n * c).div_ceil(rows)
        } else {
            kw_n * c.div_ceil(rows)
        };
        // Row-cycles per MXU (a weight tile takes `rows` cycles to load, hidden behind a
        // matmul of at least that many rows), and the VMEM-to-VMEM copies that build the
        // packed kernel (setup and one request per row each, over the engines) before them.
        let mxu = kh_n * tiles * pixels.div_ceil(p * nmxu).max(rows);
        let build = if p > 1 {
            let per = if dw == 1 { kw_n } else { 1 };
            let copies = kh_n * p * (kw_n / per);
            copies.div_ceil(a.dma.engines.max(1) as usize)
                * (a.dma.setup_cycles as usize + per * c * a.dma.chunk_cycles.max(1) as usize)
        } else {
            0
        };
        mxu + build
    };
    let mut pack = 1;
    if g.o > 0 && kh_n > 0 && kw_n > 0 && 2 * g.o <= cols {
        let mut best = cost(1);
        // (A matmul's row stride, `P·C` elements, stays within its 20-bit field.)
        for p in (2..=cols / g.o).take_while(|p| p * c * 4 < 1 << 20) {
            let x = cost(p);
            if x < best {
                (best, pack) = (x, p);
            }
        }
    }
    pack
}

/// [`FlatGeom`] of `g` with `pack` pixels per MXU row.
fn flat_geom_packed(g: &Direct, pack: usize) -> FlatGeom {
    let hp = g.in_sp[0] + (g.win[0].pad_lo + g.win[0].pad_hi) as usize;
    let wp0 = g.in_sp[1] + (g.win[1].pad_lo + g.win[1].pad_hi) as usize;
    let [kh_n, kw_n] = g.k_sp;
    let dh = g.win[0].rhs_dilate.max(1) as usize;
    let dw = g.win[1].rhs_dilate.max(1) as usize;
    let c = g.c;
    let wp = wp0.div_ceil(pack) * pack;
    let [ho_n, wo_n] = g.out_sp;
    let klen = ((kw_n.max(1) - 1) * dw + pack) * c;
    let r_end = if g.n == 0 || ho_n == 0 || wo_n == 0 {
        0
    } else {
        ((g.n - 1) * hp + ho_n - 1) * wp + wo_n
    };
    // The last matmul row starts at the last multiple of `pack` below `r_end` and reads
    // `(KW − 1)·dw + pack` pixels from each kernel row's offset.
    let read_end =
        r_end.div_ceil(pack) * pack + (kh_n.max(1) - 1) * dh * wp + (kw_n.max(1) - 1) * dw;
    FlatGeom {
        hp,
        wp,
        pack,
        klen,
        slack: read_end.saturating_sub(g.n * hp * wp),
    }
}

/// Copies the kernel `[KH][KW][C][O]` at `src` (elements of `ew` bytes; rows of `ostride`
/// elements, columns `0..O` from `src`) into the packed kernel at `dst`
/// (`[KH][klen][pack·O]`, zeroed before): block `p` of kernel row `kh` gets `W[kh][kw]` at
/// rows `(kw·dw + p)·C` (one strided copy per `(kh, p)` when `dw = 1`, per `(kh, kw, p)`
/// otherwise).
fn pack_kernel(
    l: &mut Lowerer<'_>,
    dst: u64,
    src: (isa::Space, u64),
    g: &Direct,
    fg: &FlatGeom,
    ew: usize,
    ostride: usize,
) {
    let [kh_n, kw_n] = g.k_sp;
    let dw = g.win[1].rhs_dilate.max(1) as usize;
    let (c, o, p_n) = (g.c, g.o, fg.pack);
    let per = if dw == 1 { kw_n } else { 1 };
    for kh in 0..kh_n {
        for kw in (0..kw_n).step_by(per) {
            for p in 0..p_n {
                let s = ((kh * kw_n + kw) * c * ostride) * ew;
                let d = ((kh * fg.klen + (kw * dw + p) * c) * p_n * o + p * o) * ew;
                l.dma_strided(
                    (isa::Space::Vmem, dst + d as u64),
                    (src.0, src.1 + s as u64),
                    (o * ew) as u64,
                    (per * c) as u64,
                    (ostride * ew) as u64,
                    (p_n * o * ew) as u64,
                );
            }
        }
    }
}

/// Direct convolution (2-D, no groups, no base dilation, no negative padding): the input is
/// copied into a zero-padded canonical `[N, Hp, Wp, C]` buffer; for each window tap `(kh, kw)`
/// and each `C` tile the weights `W[kh][kw][c-tile][o-tile]` are loaded once and every output
/// row `(n, ho)` streams its `Wo` input rows `X[n][ho·sh + kh·dh][kw·dw + wo·sw]` (one MXU row
/// stride, `sw·C`) through them, accumulating into the accumulator rows of that output row.
/// Output rows go in chunks of half the accumulators; (image, row chunk, `O` tile) jobs go to
/// the MXUs round-robin. No index tables: VMEM holds the padded input, its bf16 parts and the
/// output.
#[allow(clippy::too_many_arguments)]
fn direct(
    l: &mut Lowerer<'_>,
    h: InstId,
    lhs: &Buf,
    rhs: &Buf,
    (lp, rp, op): (&[usize], &[usize], &[usize]),
    ty: ElementType,
    out_dims: Vec<usize>,
    g: &Direct,
    precision: &[Precision],
) -> CResult<Buf> {
    let [h_in, w_in] = g.in_sp;
    let [kh_n, kw_n] = g.k_sp;
    let [ho_n, wo_n] = g.out_sp;
    let (n, c, o) = (g.n, g.c, g.o);
    let half = (l.arch.mxu.acc_rows as usize / 2).max(1);
    let (sh, sw) = (g.win[0].stride as usize, g.win[1].stride as usize);
    let wp0 = w_in + (g.win[1].pad_lo + g.win[1].pad_hi) as usize;
    // The flattened-row lowering (stride 1), with its padded grid and packing; else the
    // per-output-row one over the plain padded grid.
    let flat = sh == 1 && sw == 1 && wp0 <= half && c * 4 < 1 << 20 && o * 4 < 1 << 20;
    let fg = if flat {
        flat_geom(g, l.arch)
    } else {
        FlatGeom {
            hp: h_in + (g.win[0].pad_lo + g.win[0].pad_hi) as usize,
            wp: wp0,
            pack: 1,
            klen: 0,
            slack: 0,
        }
    };
    let (hp, wp) = (fg.hp, fg.wp);
    // Zero-padded canonical input.
    let canon_in = if lp.iter().enumerate().all(|(i, &p)| i == p) {
        lhs.clone()
    } else {
        let t = l.tmp(lhs.ty, vec![n, h_in, w_in, c])?;
        l.permute_into(&t, lhs, lp)?;
        t
    };
    let padded = if hp == h_in && wp == w_in && fg.slack == 0 {
        canon_in
    } else {
        let p = l.tmp(lhs.ty, vec![(n * hp * wp + fg.slack) * c])?;
        let t = l.vty(lhs.ty)?;
        l.vpu_map(&p, &[], &mut |d, _, k| Inst::VSplat {
            dst: d,
            src: SReg(0),
            n: k,
            t,
            wait: None,
            signal: None,
        });
        let es = lhs.ty.byte_size() as u64;
        let row = (w_in * c) as u64 * es;
        // One strided DMA per image: its rows into the padded rows.
        for b in 0..n {
            let src = canon_in.addr + (b * h_in * w_in * c) as u64 * es;
            let dst = p.addr
                + (((b * hp + g.win[0].pad_lo as usize) * wp + g.win[1].pad_lo as usize) * c)
                    as u64
                    * es;
            l.dma_strided(
                (isa::Space::Vmem, dst),
                (isa::Space::Vmem, src),
                row,
                h_in as u64,
                row,
                (wp * c) as u64 * es,
            );
        }
        p
    };
    // Canonical kernel [kh, kw, c, o].
    let kc = if rp.iter().enumerate().all(|(i, &p)| i == p) {
        rhs.clone()
    } else {
        let t = l.tmp(rhs.ty, vec![kh_n, kw_n, c, o])?;
        l.permute_into(&t, rhs, rp)?;
        t
    };
    let mut plan = prepare(l, &padded, &kc, precision)?;
    if fg.pack > 1 {
        // Each kernel part packed (zeros, then its taps in place).
        for part in plan.rparts.iter_mut() {
            let pk = l.tmp(part.ty, vec![kh_n, fg.klen, fg.pack * o])?;
            let t = l.vty(part.ty)?;
            l.vpu_map(&pk, &[], &mut |d, _, k| Inst::VSplat {
                dst: d,
                src: SReg(0),
                n: k,
                t,
                wait: None,
                signal: None,
            });
            let ew = part.ty.byte_size();
            pack_kernel(l, pk.addr, (isa::Space::Vmem, part.addr), g, &fg, ew, o);
            *part = pk;
        }
    }
    let out_identity = op.iter().enumerate().all(|(i, &p)| i == p);
    let canon_dims = vec![n, ho_n, wo_n, o];
    let result = if out_identity {
        l.new_buf(h, ty, out_dims.clone())?
    } else {
        l.tmp(ty, canon_dims.clone())?
    };
    let acc = if plan.acc_ty == ty {
        result.clone()
    } else {
        l.tmp(plan.acc_ty, canon_dims.clone())?
    };
    l.stats.flops += 2 * (n * ho_n * wo_n * kh_n * kw_n * c * o) as u64;
    let rows = l.arch.mxu.rows as usize;
    let cols = l.arch.mxu.cols as usize;
    let nmxu = l.arch.mxu.count as usize;
    let iw = plan.mode.bytes() as usize;
    let (dh, dw) = (
        g.win[0].rhs_dilate.max(1) as usize,
        g.win[1].rhs_dilate.max(1) as usize,
    );
    if flat {
        flat_jobs(
            l,
            &plan,
            &mut Sink::Rows(&acc),
            g,
            &fg,
            (dh, dw),
            (rows, cols, half, nmxu, iw),
        );
    } else {
        per_row_jobs(
            l,
            &plan,
            &acc,
            g,
            [hp, wp],
            [sh, sw],
            (dh, dw),
            (rows, cols, half, nmxu, iw),
        )?;
    }
    if plan.acc_ty != ty {
        l.convert(&result, &acc.with_dims(result.dims.clone()))?;
    }
    if out_identity {
        return Ok(result);
    }
    let mut inv = vec![0; op.len()];
    for (j, &d) in op.iter().enumerate() {
        inv[d] = j;
    }
    let out = l.new_buf(h, ty, out_dims)?;
    l.permute_into(&out, &result.with_dims(canon_dims), &inv)?;
    Ok(out)
}

/// Stride-1 direct convolution over flattened rows: output `(b, y, x)` of the padded grid
/// is row `r = (b·Hp + y)·Wp + x`, and tap `(kh, kw)` of every row reads the input at
/// `(r + kh·dh·Wp + kw·dw)·C`: one MXU row stride (`C`) for the whole batch. A matmul then
/// streams up to half the accumulators of rows (whole padded rows; the `Wp − Wo` columns and
/// `Hp − Ho` rows of each image are computed and dropped) per weight load, instead of one
/// output row, so the weight port no longer sets the pace on small images. With `dw = 1` the
/// taps of one kernel row are adjacent in both the input row and the canonical kernel
/// `[kh][kw][c][o]`, so `(kw, c)` is one contraction run of `kw·C` (a 3×3 layer with 64
/// channels fills 128-row weight tiles instead of using half of each). Each output row leaves
/// the accumulators with its own `mxu.st` (all at the end of the job: one drain).
#[allow(clippy::too_many_arguments)]
fn flat_jobs(
    l: &mut Lowerer<'_>,
    plan: &super::dot::MxuPlan,
    sink: &mut Sink<'_>,
    g: &Direct,
    fg: &FlatGeom,
    (dh, dw): (usize, usize),
    (rows, cols, half, nmxu, iw): (usize, usize, usize, usize, usize),
) {
    let [kh_n, kw_n] = g.k_sp;
    let [ho_n, wo_n] = g.out_sp;
    let (c, o) = (g.c, g.o);
    let (hp, wp, pk) = (fg.hp, fg.wp, fg.pack);
    // Columns of the (packed) kernel: `pack` pixels of `O` features.
    let kcols = pk * o;
    // Contraction runs (input element offset, kernel row, length), cut into weight tiles.
    let mut runs = Vec::new();
    for kh in 0..kh_n {
        if pk > 1 {
            runs.push((kh * dh * wp * c, kh * fg.klen, fg.klen));
        } else if dw == 1 {
            runs.push((kh * dh * wp * c, kh * kw_n * c, kw_n * c));
        } else {
            for kw in 0..kw_n {
                runs.push(((kh * dh * wp + kw * dw) * c, (kh * kw_n + kw) * c, c));
            }
        }
    }
    let mut ktiles = Vec::new();
    for (off, kr, len) in runs {
        for t0 in (0..len).step_by(rows) {
            ktiles.push((off + t0, kr + t0, rows.min(len - t0)));
        }
    }
    let staged = matches!(sink, Sink::Staged { .. });
    let (r_end, mut chunk) = flat_chunks(g, fg, (cols, half, nmxu), staged);
    if let Sink::Staged { max_rows, .. } = sink {
        chunk = staged_chunk(chunk, *max_rows, wp);
    }
    let mut jobs: Vec<Job> = Vec::new();
    // Per chunk: (first padded row, rows, staging buffer, last job).
    let mut done: Vec<(usize, usize, usize, usize)> = Vec::new();
    for (ci, r0) in (0..r_end).step_by(chunk).enumerate() {
        let mm = chunk.min(r_end - r0);
        let stage = match sink {
            Sink::Staged { bufs, .. } => ci % bufs.len(),
            Sink::Rows(_) => 0,
        };
        // Matmul rows of the chunk (`pack` pixels each; `r0` and `wp` are multiples of it).
        let mr = mm.div_ceil(pk);
        for n0 in (0..kcols).step_by(cols) {
            let nn = cols.min(kcols - n0);
            let q = jobs.len() % nmxu;
            let base = (l.mxu_jobs[q] % 2) * half as u64;
            l.mxu_jobs[q] += 1;
            let mut ops = Vec::new();
            let mut first = true;
            for &(li, ri) in &plan.passes {
                let (xp, wpart) = (&plan.lparts[li], &plan.rparts[ri]);
                for &(off, kr, kk) in &ktiles {
                    ops.push(MxuOp::Ldw {
                        addr: wpart.addr + ((kr * kcols + n0) * iw) as u64,
                        k: kk,
                        n: nn,
                        stride: kcols * iw,
                        tr: false,
                    });
                    ops.push(MxuOp::Matmul {
                        addr: xp.addr + ((r0 * c + off) * iw) as u64,
                        m: mr,
                        k: kk,
                        stride: pk * c * iw,
                        base,
                        accumulate: !first,
                    });
                    l.stats.mxu_macs += (mr * rows * cols) as u64;
                    first = false;
                }
            }
            match sink {
                // The real output rows of this chunk, one store each (packed: the whole
                // accumulator rows of `pack` pixels, then the row's last pixels alone).
                Sink::Rows(acc) => {
                    for rr in (r0..r0 + mm).step_by(wp) {
                        let (b, y) = (rr / wp / hp, rr / wp % hp);
                        if y >= ho_n {
                            continue;
                        }
                        let px = (b * ho_n + y) * wo_n;
                        let a0 = base + ((rr - r0) / pk) as u64;
                        let full = wo_n / pk;
                        if full > 0 {
                            ops.push(MxuOp::St {
                                addr: acc.addr + ((px * o + n0) * 4) as u64,
                                m: full,
                                n: nn,
                                stride: kcols * 4,
                                base: a0,
                            });
                        }
                        if wo_n % pk != 0 {
                            ops.push(MxuOp::St {
                                addr: acc.addr + ((px + full * pk) * o * 4) as u64,
                                m: 1,
                                n: (wo_n % pk) * o,
                                stride: kcols * 4,
                                base: a0 + full as u64,
                            });
                        }
                    }
                }
                // The whole chunk with one store (a store holds the MXU's front end for its
                // rows; one per real row would stall the next job's matmuls).
                Sink::Staged { bufs, .. } => ops.push(MxuOp::St {
                    addr: bufs[stage] + (n0 * 4) as u64,
                    m: mr,
                    n: nn,
                    stride: kcols * 4,
                    base,
                }),
            }
            jobs.push(Job { mxu: q as u8, ops });
        }
        done.push((r0, mm, stage, jobs.len() - 1));
    }
    let Sink::Staged { out, .. } = sink else {
        emit_job_list(l, &jobs, plan.mode);
        return;
    };
    // One group of jobs (one per MXU) at a time; a chunk's staging buffer is handed to `out`
    // one group after its last job (the sequencer no longer waits for its stores then), or
    // before a later chunk stores into the same buffer.
    let mut next = 0;
    let mut ci = 0;
    for (gi, group) in jobs.chunks(nmxu).enumerate() {
        let hi = (gi + 1) * nmxu;
        while ci < done.len() && done[ci].3 < hi {
            while next < ci && done[next..ci].iter().any(|d| d.2 == done[ci].2) {
                let (r0, mm, st, _) = done[next];
                out(l, st, r0, mm);
                next += 1;
            }
            ci += 1;
        }
        emit_job_list(l, group, plan.mode);
        while next < done.len() && done[next].3 < gi * nmxu {
            let (r0, mm, st, _) = done[next];
            out(l, st, r0, mm);
            next += 1;
        }
    }
    for &(r0, mm, st, _) in &done[next..] {
        out(l, st, r0, mm);
    }
}

/// Where [`flat_jobs`] puts its results.
pub(crate) enum Sink<'s> {
    /// Each real output row with its own `mxu.st` into the canonical result.
    Rows(&'s Buf),
    /// Each job's whole chunk (the dropped rows too) with one `mxu.st` into a staging buffer
    /// `[rows][O]` (chunk `i` in buffer `i mod len`), handed to `out(l, buffer, first padded
    /// row, rows)` one group of jobs later.
    Staged {
        bufs: Vec<u64>,
        /// Most output positions a buffer holds (its bytes ÷ `4·O`): the buffers are sized
        /// for the largest core share's chunks, and a smaller share can plan larger ones.
        max_rows: usize,
        out: &'s mut dyn FnMut(&mut Lowerer<'_>, usize, usize, usize),
    },
}

/// `chunk` (whole padded rows of `wp` positions) cut to at most `max_rows` positions.
fn staged_chunk(chunk: usize, max_rows: usize, wp: usize) -> usize {
    let capped = chunk.min(max_rows) / wp.max(1) * wp.max(1);
    debug_assert!(capped > 0, "a staging buffer smaller than one padded row");
    capped.max(wp.max(1))
}

/// Jobs per MXU a staged (streamed) convolution aims for: measured on the ResNet layers
/// (`tests/bench/resnet_conv_*.hlo`, tpu-v4), 1 / 2 / 3 / 4 / 6 gave 17,324 / 17,324 /
/// 15,900 / 15,345 / 15,227 cycles for 56×56×64 and 14,878 / 12,320 / 11,885 / 12,641 /
/// 12,641 for 28×28×128.
const STAGED_JOBS_PER_MXU: usize = 3;

/// `(rows to compute, rows per chunk)` of [`flat_jobs`]: rows up to the last real output;
/// chunks of whole padded rows, as many as fill the MXUs evenly (jobs a multiple of the MXU
/// count where chunks stay within half the accumulators).
fn flat_chunks(
    g: &Direct,
    fg: &FlatGeom,
    (cols, half, nmxu): (usize, usize, usize),
    staged: bool,
) -> (usize, usize) {
    let [ho_n, wo_n] = g.out_sp;
    let (hp, wp) = (fg.hp, fg.wp);
    let r_end = ((g.n - 1) * hp + ho_n - 1) * wp + wo_n;
    let prow = r_end.div_ceil(wp);
    let otiles = (fg.pack * g.o).div_ceil(cols);
    let per = (half * fg.pack / wp).max(1);
    let mut nchunks = prow.div_ceil(per);
    // Staged: at least `STAGED_JOBS_PER_MXU` jobs per MXU while a chunk keeps 256 matmul
    // rows (weight loads stay hidden), so the first jobs wait for less input and the last
    // group's results (the copies after the last matmul) are smaller.
    while staged
        && nchunks * otiles < STAGED_JOBS_PER_MXU * nmxu
        && prow.div_ceil(nchunks + 1) * wp >= 256 * fg.pack
    {
        nchunks += 1;
    }
    while (nchunks * otiles) % nmxu.max(1) != 0 && nchunks < prow {
        nchunks += 1;
    }
    (r_end, prow.div_ceil(nchunks) * wp)
}

/// Direct convolution one output row per matmul (any stride): for each window tap and `C`
/// tile the weights are loaded once and every output row `(n, ho)` of the chunk streams its
/// `Wo` input rows through them.
#[allow(clippy::too_many_arguments)]
fn per_row_jobs(
    l: &mut Lowerer<'_>,
    plan: &super::dot::MxuPlan,
    acc: &Buf,
    g: &Direct,
    [hp, wp]: [usize; 2],
    [sh, sw]: [usize; 2],
    (dh, dw): (usize, usize),
    (rows, cols, half, nmxu, iw): (usize, usize, usize, usize, usize),
) -> CResult<()> {
    let [kh_n, kw_n] = g.k_sp;
    let [ho_n, wo_n] = g.out_sp;
    let (n, c, o) = (g.n, g.c, g.o);
    if wo_n > half || sw * c * iw >= 1 << 20 || o * 4 >= 1 << 20 {
        return Err(l.unsupported("a convolution whose output row exceeds half the accumulators"));
    }
    let rows_per_chunk = (half / wo_n.max(1)).max(1);
    let mut jobs: Vec<Job> = Vec::new();
    for b in 0..n {
        for h0 in (0..ho_n).step_by(rows_per_chunk) {
            let h1 = (h0 + rows_per_chunk).min(ho_n);
            for n0 in (0..o).step_by(cols) {
                let nn = cols.min(o - n0);
                let q = jobs.len() % nmxu;
                let base = (l.mxu_jobs[q] % 2) * half as u64;
                l.mxu_jobs[q] += 1;
                let mut ops = Vec::new();
                let mut first = true;
                for &(li, ri) in &plan.passes {
                    let (xp, wpart) = (&plan.lparts[li], &plan.rparts[ri]);
                    for kh in 0..kh_n {
                        for kw in 0..kw_n {
                            for c0 in (0..c).step_by(rows) {
                                let kk = rows.min(c - c0);
                                ops.push(MxuOp::Ldw {
                                    addr: wpart.addr
                                        + ((((kh * kw_n + kw) * c + c0) * o + n0) * iw) as u64,
                                    k: kk,
                                    n: nn,
                                    stride: o * iw,
                                    tr: false,
                                });
                                for ho in h0..h1 {
                                    let y = ho * sh + kh * dh;
                                    let x0 = kw * dw;
                                    ops.push(MxuOp::Matmul {
                                        addr: xp.addr
                                            + ((((b * hp + y) * wp + x0) * c + c0) * iw) as u64,
                                        m: wo_n,
                                        k: kk,
                                        stride: sw * c * iw,
                                        base: base + ((ho - h0) * wo_n) as u64,
                                        accumulate: !first,
                                    });
                                    l.stats.mxu_macs += (wo_n * rows * cols) as u64;
                                }
                                first = false;
                            }
                        }
                    }
                }
                ops.push(MxuOp::St {
                    addr: acc.addr + ((((b * ho_n + h0) * wo_n) * o + n0) * 4) as u64,
                    m: (h1 - h0) * wo_n,
                    n: nn,
                    stride: o * 4,
                    base,
                });
                jobs.push(Job { mxu: q as u8, ops });
            }
        }
    }
    emit_job_list(l, &jobs, plan.mode);
    Ok(())
}

/// A stride-1 bf16 convolution streamed from HBM on every core (like a streamed dot): both
/// operands are entry parameters in `b01f` / `01io` layout, the `f32` result (`b01f`) is only
/// the module's result. Each core takes a share of the images, or of the output features when
/// that moves fewer bytes (a large kernel over few pixels), copies its input rows from HBM
/// straight into a zero-padded VMEM buffer and its kernel columns into VMEM, runs the
/// flattened-row jobs (`flat_jobs`) on its MXUs and writes its share of the result to HBM.
#[derive(Clone, Debug)]
pub struct StreamConv {
    /// HLO instruction name (symbol of the emitted code).
    pub name: String,
    /// HBM address of the input `[N][H][W][C]`.
    pub lhs: u64,
    /// HBM address of the kernel `[KH][KW][C][O]`.
    pub rhs: u64,
    /// HBM address of the result `[N][Ho][Wo][O]` (f32).
    pub out: u64,
    g: Direct,
    /// Split the output features over the cores (else the images).
    by_features: bool,
}

/// The convolution geometry of `inst` if it is a stride-1 2-D bf16 × bf16 → f32 convolution in
/// `b01f_01io->b01f` layout without groups, base dilation or negative padding.
fn stream_geometry(c: &hlo::Computation, inst: &hlo::Instruction) -> Option<Direct> {
    let types = |i: &hlo::Instruction| i.shape.as_array().map(|a| a.ty);
    let (x, k) = (inst.operands.first()?, inst.operands.get(1)?);
    if (types(&c.insts[*x])?, types(&c.insts[*k])?, types(inst)?)
        != (ElementType::BF16, ElementType::BF16, ElementType::F32)
    {
        return None;
    }
    stream_layout(c, inst)
}

/// [`stream_geometry`] whatever the element types: whether the convolution would stream if
/// it were bf16 × bf16 → f32 (what `passes::split_f32_dots` makes of larger ones).
pub(crate) fn stream_layout(c: &hlo::Computation, inst: &hlo::Instruction) -> Option<Direct> {
    if inst.opcode != Opcode::Convolution || inst.operands.len() != 2 {
        return None;
    }
    let (x, k) = (&c.insts[inst.operands[0]], &c.insts[inst.operands[1]]);
    let (xs, ks, os) = (
        x.shape.as_array()?,
        k.shape.as_array()?,
        inst.shape.as_array()?,
    );
    if xs.is_dynamic() || ks.is_dynamic() || xs.dims.len() != 4 || ks.dims.len() != 4 {
        return None;
    }
    let a = inst.conv()?;
    let lab = a.dims;
    let id = (
        lab.input_batch,
        lab.input_spatial.as_slice(),
        lab.input_feature,
    ) == (0, &[1, 2][..], 3)
        && (lab.kernel_spatial.as_slice(), lab.kernel_input_feature) == (&[0, 1][..], 2)
        && lab.kernel_output_feature == 3
        && (
            lab.output_batch,
            lab.output_spatial.as_slice(),
            lab.output_feature,
        ) == (0, &[1, 2][..], 3);
    if !id || a.feature_group_count > 1 || a.batch_group_count > 1 {
        return None;
    }
    let d = |v: &[i64]| v.iter().map(|&x| x as usize).collect::<Vec<_>>();
    let (xd, kd, od) = (d(&xs.dims), d(&ks.dims), d(&os.dims));
    let win: Vec<WindowDim> = if a.window.is_empty() {
        kd[..2]
            .iter()
            .map(|&k| WindowDim::of_size(k as i64))
            .collect()
    } else {
        a.window.to_vec()
    };
    let ok = win.len() == 2
        && win.iter().all(|w| {
            w.stride == 1 && w.lhs_dilate <= 1 && w.pad_lo >= 0 && w.pad_hi >= 0 && !w.reversal
        });
    if !ok {
        return None;
    }
    Some(Direct {
        n: xd[0],
        c: xd[3],
        o: kd[3],
        in_sp: [xd[1], xd[2]],
        k_sp: [kd[0], kd[1]],
        out_sp: [od[1], od[2]],
        win: [win[0], win[1]],
    })
}

/// Buffers of a streamed convolution whose largest share is `(_, nb, _, no)`: padded input,
/// kernel columns, and staging buffers of one chunk (`2 × mxu.count` of them, fewer if there
/// are fewer chunks).
fn stream_sizes(g: &Direct, share: (usize, usize, usize, usize), a: &arch::ArchConfig) -> Vec<u64> {
    let with = stream_sizes_im2col(g, share, a, true);
    if with.iter().map(|x| x.div_ceil(64) * 64).sum::<u64>() <= a.vmem.bytes / 2 {
        with
    } else {
        stream_sizes_im2col(g, share, a, false)
    }
}

/// The rows of a streamed share as an im2col matrix `[(b, y, x)][(kh, kw, c)]` of the real
/// output pixels only, if `g` gains from it (`im2col` allowed): unpacked, at least 20 % of
/// the padded grid's rows dropped, and a pixel's channels at least 768 bytes (the copies that
/// build it move one run per pixel and tap; batch 8, 7×7, 3×3, on tpu-v4: 256 channels
/// measured 6,431 cycles against 6,303 without, 384 15,378 against 17,185, 512 12,097
/// against 15,659). Then the layer is a 1×1 convolution of that matrix: the returned
/// geometry and layout.
fn stream_im2col(g: &Direct, fg: &FlatGeom, im2col: bool) -> Option<(Direct, FlatGeom)> {
    let [ho_n, wo_n] = g.out_sp;
    let nwin = g.k_sp[0] * g.k_sp[1];
    if !im2col
        || fg.pack != 1
        || g.c * 2 < 768
        || ho_n * wo_n == 0
        || nwin <= 1
        || nwin * g.c * 2 >= 1 << 20
    {
        return None;
    }
    if 4 * fg.hp * fg.wp < 5 * ho_n * wo_n {
        return None;
    }
    let one = Direct {
        n: g.n,
        c: nwin * g.c,
        o: g.o,
        in_sp: [ho_n, wo_n],
        k_sp: [1, 1],
        out_sp: [ho_n, wo_n],
        win: [WindowDim::of_size(1), WindowDim::of_size(1)],
    };
    let fg1 = flat_geom_packed(&one, 1);
    Some((one, fg1))
}

/// [`stream_sizes`] with the im2col matrix allowed or not.
fn stream_sizes_im2col(
    g: &Direct,
    (_, nb, _, no): (usize, usize, usize, usize),
    a: &arch::ArchConfig,
    im2col: bool,
) -> Vec<u64> {
    let half = (a.mxu.acc_rows as usize / 2).max(1);
    let nmxu = a.mxu.count as usize;
    let share = Direct {
        n: nb.max(1),
        o: no.max(1),
        ..g.clone()
    };
    let fg = flat_geom_packed(&share, flat_pack(g, a));
    let (hp, wp) = (fg.hp, fg.wp);
    let cols_m = stream_im2col(&share, &fg, im2col);
    let (r_end, chunk) = match &cols_m {
        Some((one, fg1)) => flat_chunks(one, fg1, (a.mxu.cols as usize, half, nmxu), true),
        None => flat_chunks(&share, &fg, (a.mxu.cols as usize, half, nmxu), true),
    };
    let stage = (chunk * no * 4).div_ceil(64) as u64 * 64;
    let nbufs = (2 * nmxu).min(r_end.div_ceil(chunk)).max(1);
    let kernel = if fg.pack > 1 {
        g.k_sp[0] * fg.klen * fg.pack * no * 2
    } else {
        g.k_sp[0] * g.k_sp[1] * g.c * no * 2
    };
    let mut v = vec![((nb * hp * wp + fg.slack) * g.c * 2) as u64, kernel as u64];
    if fg.pack > 1 {
        // The kernel as it is in HBM, packed from VMEM (a copy from HBM per block would pay
        // the HBM's latency each).
        v.push((g.k_sp[0] * g.k_sp[1] * g.c * no * 2) as u64);
    }
    if let Some((one, _)) = &cols_m {
        v.push((one.n * one.in_sp[0] * one.in_sp[1] * one.c * 2) as u64);
    }
    v.extend(std::iter::repeat_n(stage, nbufs));
    v
}

/// Whether convolution `h` can be streamed from HBM on every core ([`StreamConv`]) of
/// `arch`: the flattened-row lowering applies and one core's buffers fit in half its VMEM.
pub fn streamable(
    m: &hlo::Module,
    h: InstId,
    users: &[Vec<InstId>],
    arch: &arch::ArchConfig,
) -> bool {
    let c = m.entry();
    let inst = &c.insts[h];
    let Some(g) = stream_geometry(c, inst) else {
        return false;
    };
    let half = (arch.mxu.acc_rows as usize / 2).max(1);
    let wp = g.in_sp[1] + (g.win[1].pad_lo + g.win[1].pad_hi) as usize;
    let cores = arch.cores_per_chip.max(1) as usize;
    let nb = g.n.div_ceil(cores);
    let need: u64 = stream_sizes(&g, (0, nb, 0, g.o), arch)
        .iter()
        .map(|x| x.div_ceil(64) * 64)
        .sum();
    if wp > half || g.c * 2 >= 1 << 20 || g.o * 4 >= 1 << 20 || need > arch.vmem.bytes / 2 {
        return false;
    }
    let (x, k) = (&c.insts[inst.operands[0]], &c.insts[inst.operands[1]]);
    if x.opcode != Opcode::Parameter
        || k.opcode != Opcode::Parameter
        || inst.operands[0] == inst.operands[1]
        || g.n == 0
        || g.o == 0
    {
        return false;
    }
    let root = c.root;
    users[h.index()]
        .iter()
        .all(|&u| u == root && c.insts[u].opcode == Opcode::Tuple)
        || (root == h && users[h.index()].is_empty())
}

impl StreamConv {
    /// The plan of streamed convolution `h` (operands at `lhs`, `rhs`, result at `out`).
    pub fn new(l: &Lowerer<'_>, h: InstId, lhs: u64, rhs: u64, out: u64) -> Option<StreamConv> {
        let c = l.m.entry();
        let inst = &c.insts[h];
        let g = stream_geometry(c, inst)?;
        let cores = l.arch.cores_per_chip.max(1) as usize;
        let cols = l.arch.mxu.cols as usize;
        // Bytes one core reads: its images and the whole kernel, or every image and its
        // kernel columns (whole MXU tiles of columns per core).
        let input = g.n * g.in_sp[0] * g.in_sp[1] * g.c * 2;
        let kernel = g.k_sp[0] * g.k_sp[1] * g.c * g.o * 2;
        let by_features = cores > 1
            && g.o % (cores * cols) == 0
            && input + kernel / cores < input.div_ceil(cores) + kernel;
        Some(StreamConv {
            name: inst.name.clone(),
            lhs,
            rhs,
            out,
            g,
            by_features,
        })
    }

    /// Multiply-adds ×2.
    pub fn flops(&self) -> u64 {
        let g = &self.g;
        2 * (g.n * g.out_sp[0] * g.out_sp[1] * g.k_sp[0] * g.k_sp[1] * g.c * g.o) as u64
    }

    /// Core `core`'s share: `(first image, images, first feature, features)`.
    fn share(&self, core: usize, cores: usize) -> (usize, usize, usize, usize) {
        let cores = cores.max(1);
        let part = |n: usize| {
            let (q, r) = (n / cores, n % cores);
            (core * q + core.min(r), q + usize::from(core < r))
        };
        if self.by_features {
            let (o0, no) = part(self.g.o);
            (0, self.g.n, o0, no)
        } else {
            let (b0, nb) = part(self.g.n);
            (b0, nb, 0, self.g.o)
        }
    }

    /// The flattened-row layout of core `core`'s share.
    fn geom(&self, a: &arch::ArchConfig, core: usize, cores: usize) -> FlatGeom {
        let (_, nb, _, no) = self.share(core, cores);
        let share = Direct {
            n: nb.max(1),
            o: no.max(1),
            ..self.g.clone()
        };
        flat_geom_packed(&share, flat_pack(&self.g, a))
    }

    /// Sizes of the buffers [`StreamConv::emit`] asks for, in order: padded input, kernel
    /// columns, result share (the largest share of any core).
    pub fn buffer_sizes(&self, l: &Lowerer<'_>, cores: usize) -> Vec<u64> {
        stream_sizes(&self.g, self.share(0, cores), l.arch)
    }

    /// Emits core `core`'s share (of `cores`), with buffers from `alloc`.
    pub fn emit(
        &self,
        l: &mut Lowerer<'_>,
        core: usize,
        cores: usize,
        alloc: &mut dyn FnMut(u64) -> CResult<u64>,
    ) -> CResult<()> {
        let g = &self.g;
        let sizes = self.buffer_sizes(l, cores);
        let (xa, ka) = (alloc(sizes[0])?, alloc(sizes[1])?);
        let fg = self.geom(l.arch, core, cores);
        let mut next = 2;
        let raw = if fg.pack > 1 {
            next += 1;
            Some(alloc(sizes[next - 1])?)
        } else {
            None
        };
        // The im2col matrix when the largest share's buffers have it (every core then does).
        let with = stream_sizes_im2col(g, self.share(0, cores), l.arch, true);
        let im2col = sizes == with && {
            let (_, nb0, _, no0) = self.share(0, cores);
            let s0 = Direct {
                n: nb0.max(1),
                o: no0.max(1),
                ..g.clone()
            };
            stream_im2col(&s0, &flat_geom_packed(&s0, fg.pack), true).is_some()
        };
        let col = if im2col {
            next += 1;
            Some(alloc(sizes[next - 1])?)
        } else {
            None
        };
        // Staging buffers, one chunk of results each.
        let first_stage = next;
        let mut bufs = Vec::with_capacity(sizes.len() - first_stage);
        for &sz in &sizes[first_stage..] {
            bufs.push(alloc(sz)?);
        }
        let (b0, nb, o0, no) = self.share(core, cores);
        if nb == 0 || no == 0 {
            return Ok(());
        }
        let (hp, wp) = (fg.hp, fg.wp);
        let [h_in, w_in] = g.in_sp;
        let [kh_n, kw_n] = g.k_sp;
        let [ho_n, wo_n] = g.out_sp;
        let (c, o) = (g.c, g.o);
        let buf = |addr: u64, ty: ElementType, dims: Vec<usize>| Buf {
            alloc: usize::MAX,
            addr,
            ty,
            dims,
        };
        let padded = buf(xa, ElementType::BF16, vec![(nb * hp * wp + fg.slack) * c]);
        let kernel = if fg.pack > 1 {
            buf(ka, ElementType::BF16, vec![kh_n, fg.klen, fg.pack * no])
        } else {
            buf(ka, ElementType::BF16, vec![kh_n, kw_n, c, no])
        };
        let rows = l.arch.mxu.rows as usize;
        let cols = l.arch.mxu.cols as usize;
        let half = (l.arch.mxu.acc_rows as usize / 2).max(1);
        let nmxu = l.arch.mxu.count as usize;
        let (dh, dw) = (
            g.win[0].rhs_dilate.max(1) as usize,
            g.win[1].rhs_dilate.max(1) as usize,
        );
        let share = Direct {
            n: nb,
            o: no,
            ..g.clone()
        };
        // The input in bands of rows (at least 64 KiB, up to one per DMA engine per image),
        // every image zero-filled first (padding, and the slack after the last; one VPU
        // instruction per image, so the first image's bands wait for its own fill only); the
        // bands the first group of jobs reads go first, right after the kernel's first weight
        // tile, then the rest of the kernel, then the other bands, so the MXUs start when
        // their first rows and weights are in rather than the whole share. (A band waiting for
        // its image's fill on the DMA unit would take over the fill's writes and chain every
        // later band of the image behind it.)
        let engines = l.arch.dma.engines.max(1) as usize;
        let img_bytes = h_in * w_in * c * 2;
        let nbands = (img_bytes >> 16).clamp(1, engines.min(h_in.max(1)));
        let band_rows = h_in.div_ceil(nbands).max(1);
        let max_rows = sizes[first_stage] as usize / (no * 4).max(1);
        let (r_end, chunk) = flat_chunks(&share, &fg, (cols, half, nmxu), true);
        let chunk = staged_chunk(chunk, max_rows, wp);
        let otiles = (fg.pack * no).div_ceil(cols);
        let first_chunks = nmxu.div_ceil(otiles.max(1));
        // (Every band when the im2col matrix is built first: its copies read all of them.)
        let need_end = if im2col {
            usize::MAX
        } else {
            (first_chunks * chunk).min(r_end)
                + (kh_n.max(1) - 1) * dh * wp
                + (kw_n.max(1) - 1) * dw
                + fg.pack
        };
        let fill = hp != h_in || wp != w_in || fg.slack > 0;
        let row = (w_in * c * 2) as u64;
        let (pl0, pl1) = (g.win[0].pad_lo as usize, g.win[1].pad_lo as usize);
        let t = l.vty(ElementType::BF16)?;
        let band = |l: &mut Lowerer<'_>, b: usize, y0: usize, ny: usize| {
            let src = self.lhs + (((b0 + b) * h_in + y0) * w_in * c * 2) as u64;
            let dst = xa + ((((b * hp + pl0 + y0) * wp) + pl1) * c * 2) as u64;
            l.dma_strided(
                (isa::Space::Vmem, dst),
                (isa::Space::Hbm, src),
                row,
                ny as u64,
                row,
                (wp * c * 2) as u64,
            );
        };
        let mut early = Vec::new();
        let mut late = Vec::new();
        for b in 0..nb {
            for y0 in (0..h_in).step_by(band_rows) {
                let ny = band_rows.min(h_in - y0);
                if (b * hp + pl0 + y0) * wp < need_end || y0 == 0 && b == 0 {
                    early.push((b, y0, ny));
                } else {
                    late.push((b, y0, ny));
                }
            }
        }
        // The kernel's columns o0..o0+no (whole rows when every column).
        let krows = kh_n * kw_n * c;
        let fill_images = |l: &mut Lowerer<'_>| {
            for b in 0..nb {
                let img = hp * wp * c;
                let extra = if b + 1 == nb { fg.slack * c } else { 0 };
                let part = buf(
                    xa + (b * img * 2) as u64,
                    ElementType::BF16,
                    vec![img + extra],
                );
                l.vpu_map(&part, &[], &mut |d, _, k| Inst::VSplat {
                    dst: d,
                    src: SReg(0),
                    n: k,
                    t,
                    wait: None,
                    signal: None,
                });
            }
        };
        if let Some(raw) = raw {
            // Packed (only a share of every feature packs: at most half the columns): the
            // kernel in, zeros, then its blocks in place.
            debug_assert_eq!(no, o);
            l.dma(
                (isa::Space::Vmem, raw),
                (isa::Space::Hbm, self.rhs),
                (krows * o * 2) as u64,
            )?;
            l.vpu_map(&kernel, &[], &mut |d, _, k| Inst::VSplat {
                dst: d,
                src: SReg(0),
                n: k,
                t,
                wait: None,
                signal: None,
            });
            if fill {
                fill_images(l);
            }
            for &(b, y0, ny) in &early {
                band(l, b, y0, ny);
            }
            pack_kernel(l, ka, (isa::Space::Vmem, raw), g, &fg, 2, o);
        } else {
            // In blocks of whole weight tiles of rows (at least 32 KiB), in the order the
            // jobs load them.
            // (With the im2col matrix, a tap's rows per block: each block pays the HBM's
            // latency on one of the engines the tap copies also need.)
            let per = if im2col {
                c.max(1)
            } else {
                rows.max((32 << 10) / (no * 2).max(1)).min(krows.max(1))
            };
            let kpiece = |l: &mut Lowerer<'_>, r0: usize| {
                let nr = per.min(krows - r0);
                l.dma_strided(
                    (isa::Space::Vmem, ka + (r0 * no * 2) as u64),
                    (isa::Space::Hbm, self.rhs + ((r0 * o + o0) * 2) as u64),
                    (no * 2) as u64,
                    nr as u64,
                    (o * 2) as u64,
                    (no * 2) as u64,
                );
            };
            kpiece(l, 0);
            if fill {
                fill_images(l);
            }
            for &(b, y0, ny) in &early {
                band(l, b, y0, ny);
            }
            let mut r0 = per;
            if let Some(col) = col {
                // Tap by tap, the im2col matrix's columns `(kh, kw, ·)` (one run per pixel:
                // a 3-D copy over pixels, rows and images of the padded buffer), each
                // followed by the kernel blocks of its rows: the jobs load the weight tiles
                // in that order.
                let ncol = kh_n * kw_n * c;
                for kh in 0..kh_n {
                    for kw in 0..kw_n {
                        let tap = kh * kw_n + kw;
                        l.dma_nd(
                            (isa::Space::Vmem, col + (tap * c * 2) as u64),
                            (
                                isa::Space::Vmem,
                                xa + (((kh * dh) * wp + kw * dw) * c * 2) as u64,
                            ),
                            (c * 2) as u64,
                            &[
                                (wo_n as u32, (c * 2) as i64, (ncol * 2) as i64),
                                (ho_n as u32, (wp * c * 2) as i64, (wo_n * ncol * 2) as i64),
                                (
                                    nb as u32,
                                    (hp * wp * c * 2) as i64,
                                    (ho_n * wo_n * ncol * 2) as i64,
                                ),
                            ],
                        );
                        while r0 < krows && r0 < (tap + 1) * c {
                            kpiece(l, r0);
                            r0 += per;
                        }
                    }
                }
            }
            while r0 < krows {
                kpiece(l, r0);
                r0 += per;
            }
        }
        for &(b, y0, ny) in &late {
            band(l, b, y0, ny);
        }
        let unit_waits = l.e.unit_waits;
        let plan = super::dot::MxuPlan {
            mode: arch::MxuDtype::Bf16,
            acc_ty: ElementType::F32,
            passes: vec![(0, 0)],
            lparts: vec![padded],
            rparts: vec![kernel],
        };
        // With the im2col matrix: a 1×1 convolution of it, rows of real pixels only.
        let (plan, jg, jfg) = match (col, stream_im2col(&share, &fg, im2col)) {
            (Some(col), Some((one, fg1))) => (
                super::dot::MxuPlan {
                    lparts: vec![buf(
                        col,
                        ElementType::BF16,
                        vec![sizes[next - 1] as usize / 2],
                    )],
                    ..plan
                },
                one,
                fg1,
            ),
            _ => (plan, share.clone(), fg),
        };
        let (hp, wp) = (jfg.hp, jfg.wp);
        // Each chunk's real rows from its staging buffer `[rows][no]` to HBM as the chunk is
        // done, overlapping later chunks' compute: per image, the run of its real padded rows
        // in the chunk (their first `Wo` pixels) in one strided copy (two-dimensional when
        // the core has only some of the features).
        let out = self.out;
        let mut sink_out = |l: &mut Lowerer<'_>, st: usize, r0: usize, mm: usize| {
            // Per image, the run of its real rows in the chunk: `(image, first row, rows,
            // offset in the chunk)`; consecutive whole images then go as one copy (a copy
            // waiting for the stores on the DMA unit takes over their writes, so the chunk's
            // later copies would wait for it: the fewer, the shorter that chain).
            let mut segs: Vec<(usize, usize, usize, usize)> = Vec::new();
            let mut rr = r0;
            while rr < r0 + mm {
                let (b, y) = (rr / wp / hp, rr / wp % hp);
                if y >= ho_n {
                    rr += wp;
                    continue;
                }
                let ny = (ho_n - y).min((r0 + mm - rr).div_ceil(wp));
                segs.push((b, y, ny, rr - r0));
                rr += ny * wp;
            }
            // Copies of whole images (consecutive ones merge) and of partial ones.
            let mut copies = Vec::new();
            let mut i = 0;
            while i < segs.len() {
                let (b, y, ny, _) = segs[i];
                let mut imgs = 1;
                if y == 0 && ny == ho_n {
                    while i + imgs < segs.len()
                        && segs[i + imgs].1 == 0
                        && segs[i + imgs].2 == ho_n
                        && segs[i + imgs].0 == b + imgs
                    {
                        imgs += 1;
                    }
                }
                copies.push((i, imgs));
                i += imgs;
            }
            // One copy waits for the stores on the DMA unit, so the sequencer goes on
            // issuing; several wait on the sequencer (one waiting on the unit would take over
            // the stores' writes and the next would wait for it: measured 6,717 against 4,955
            // cycles for `conv_stream_bf16_odd_batch` on tpu-v6e, 48,963 against 44,382 for
            // 56×56×64).
            let uw = std::mem::replace(&mut l.e.unit_waits, copies.len() == 1);
            for (i, imgs) in copies {
                let (b, y, ny, off) = segs[i];
                let src = bufs[st] + (off * no * 4) as u64;
                let dst_px = ((b0 + b) * ho_n + y) * wo_n;
                let rows_dim = (ny as u32, (wp * no * 4) as i64, (wo_n * o * 4) as i64);
                let img_dim = (
                    imgs as u32,
                    (hp * wp * no * 4) as i64,
                    (ho_n * wo_n * o * 4) as i64,
                );
                if no == o {
                    let mut dims = vec![rows_dim];
                    if imgs > 1 {
                        dims.push(img_dim);
                    }
                    l.dma_nd(
                        (isa::Space::Hbm, out + (dst_px * o * 4) as u64),
                        (isa::Space::Vmem, src),
                        (wo_n * o * 4) as u64,
                        &dims,
                    );
                } else {
                    let mut dims = vec![(wo_n as u32, (no * 4) as i64, (o * 4) as i64), rows_dim];
                    if imgs > 1 {
                        dims.push(img_dim);
                    }
                    l.dma_nd(
                        (isa::Space::Hbm, out + ((dst_px * o + o0) * 4) as u64),
                        (isa::Space::Vmem, src),
                        (no * 4) as u64,
                        &dims,
                    );
                }
            }
            l.e.unit_waits = uw;
        };
        let stages = bufs.clone();
        flat_jobs(
            l,
            &plan,
            &mut Sink::Staged {
                bufs: stages,
                max_rows,
                out: &mut sink_out,
            },
            &jg,
            &jfg,
            (dh, dw),
            (rows, cols, half, nmxu, 2),
        );
        l.e.unit_waits = unit_waits;
        Ok(())
    }
}
