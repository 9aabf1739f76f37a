//! Convolution (`convolution` opcode): any `dim_labels` layout, any number of spatial
//! dimensions (including none), padding (negative too), strides, lhs (base) and rhs (window)
//! dilation, window reversal, `feature_group_count` and `batch_group_count`.
//!
//! Semantics (XLA's): for output batch `b`, output feature `o` and output position `y`,
//! `out[b,o,y] = Σ_{c,k} lhs[h·N/BG + b, g·C/G + c, x(y,k)] · rhs[c, o, k'(k)]` where
//! `g = o / (O/G)` is the feature group, `h = o / (O/BG)` the batch group, and for every
//! spatial dimension the padded position `p = y·stride + k·rhs_dilate` maps to the base-dilated
//! position `q = p − pad_lo`, which names input element `q / lhs_dilate` when it is divisible
//! and in range (otherwise the term is zero); `k' = size−1−k` under window reversal.
//!
//! Method: im2col + GEMM. The lhs is permuted channels-last (`[N, spatial.., C]`) and the rhs to
//! `[spatial.., I, O]`; for each run of output features sharing one (feature group, batch
//! group) pair and each chunk of batch elements, the patches `[(b, y), (k, c)]` are gathered
//! (zero where the window hangs over padding or dilation holes) and multiplied by the kernel
//! matrix `[(k, c), o]` on the GEMM core. Arithmetic is in the join domain of the three element
//! types (f16/bf16 in f32, rounded once at the end, as XLA:CPU does).

use super::convert::{check_result, Domain, Values};
use super::gemm::GemmElem;
use super::permute::permute_values;
use super::{KResult, KernelError};
use hlo::attrs::{Attrs, ConvDims, WindowDim};
use hlo::literal::ArrayLiteral;
use hlo::shape::ArrayShape;

/// Rows of the patch matrix gathered per GEMM call (bounds the im2col buffer).
const ROWS_PER_CHUNK: usize = 4096;

/// Sizes and window of one convolution, validated.
#[derive(Clone, Debug)]
struct Geometry {
    /// lhs batch size N, input features C, output features O.
    n: usize,
    c: usize,
    o: usize,
    groups: usize,
    batch_groups: usize,
    in_sp: Vec<usize>,
    k_sp: Vec<usize>,
    out_sp: Vec<usize>,
    win: Vec<WindowDim>,
}

fn dim(v: i64, rank: usize, what: &str) -> KResult<usize> {
    if v < 0 || v as usize >= rank {
        return Err(KernelError::invalid(format!(
            "convolution: {what} dimension {v} out of range for rank {rank}"
        )));
    }
    Ok(v as usize)
}

fn dims_of(list: &[i64], rank: usize, what: &str) -> KResult<Vec<usize>> {
    list.iter().map(|&v| dim(v, rank, what)).collect()
}

fn distinct(v: &[usize], what: &str) -> KResult<()> {
    for (i, a) in v.iter().enumerate() {
        if v[i + 1..].contains(a) {
            return Err(KernelError::invalid(format!(
                "convolution: {what} dimension {a} labelled twice"
            )));
        }
    }
    Ok(())
}

/// One output spatial size from the input size and the window dimension.
fn out_size(input: usize, w: &WindowDim) -> KResult<usize> {
    if w.size < 0 || w.stride < 1 || w.lhs_dilate < 1 || w.rhs_dilate < 1 {
        return Err(KernelError::invalid(format!(
            "convolution: window needs size >= 0 and stride, lhs_dilate, rhs_dilate >= 1 (got {w:?})"
        )));
    }
    let dilated = if input == 0 {
        0
    } else {
        (input as i64 - 1) * w.lhs_dilate + 1
    };
    let padded = w.pad_lo + dilated + w.pad_hi;
    let wdil = if w.size == 0 {
        0
    } else {
        (w.size - 1) * w.rhs_dilate + 1
    };
    if padded < wdil {
        return Ok(0);
    }
    Ok(((padded - wdil) / w.stride + 1) as usize)
}

/// Validated labels in the order the kernel uses: lhs `[b, s.., f]`, rhs `[s.., i, o]`,
/// output `[b, s.., f]`.
struct Perms {
    lhs: Vec<usize>,
    rhs: Vec<usize>,
    out: Vec<usize>,
}

fn perms(l: &ConvDims, lr: usize, rr: usize, or: usize) -> KResult<Perms> {
    let ns = l.input_spatial.len();
    if l.kernel_spatial.len() != ns || l.output_spatial.len() != ns {
        return Err(KernelError::invalid(
            "convolution: dim_labels name different numbers of spatial dimensions",
        ));
    }
    if lr != ns + 2 || rr != ns + 2 || or != ns + 2 {
        return Err(KernelError::invalid(format!(
            "convolution: {ns} spatial dimensions need rank {} operands and result (got {lr}, {rr}, {or})",
            ns + 2
        )));
    }
    let mut lhs = vec![dim(l.input_batch, lr, "input batch")?];
    lhs.extend(dims_of(&l.input_spatial, lr, "input spatial")?);
    lhs.push(dim(l.input_feature, lr, "input feature")?);
    let mut rhs = dims_of(&l.kernel_spatial, rr, "kernel spatial")?;
    rhs.push(dim(l.kernel_input_feature, rr, "kernel input feature")?);
    rhs.push(dim(l.kernel_output_feature, rr, "kernel output feature")?);
    let mut out = vec![dim(l.output_batch, or, "output batch")?];
    out.extend(dims_of(&l.output_spatial, or, "output spatial")?);
    out.push(dim(l.output_feature, or, "output feature")?);
    distinct(&lhs, "input")?;
    distinct(&rhs, "kernel")?;
    distinct(&out, "output")?;
    Ok(Perms { lhs, rhs, out })
}

fn geometry(lhs: &[usize], rhs: &[usize], attrs: &Attrs, p: &Perms) -> KResult<Geometry> {
    let ns = p.lhs.len() - 2;
    let in_sp: Vec<usize> = p.lhs[1..=ns].iter().map(|&d| lhs[d]).collect();
    let k_sp: Vec<usize> = p.rhs[..ns].iter().map(|&d| rhs[d]).collect();
    let hlo::View::Convolution(view) = hlo::View::of(hlo::Opcode::Convolution, attrs) else {
        return Err(KernelError::malformed(hlo::Opcode::Convolution, attrs));
    };
    // No window: one window dimension per kernel dimension, of the kernel's size.
    let win: Vec<WindowDim> = if view.window.is_empty() {
        k_sp.iter().map(|&k| WindowDim::of_size(k as i64)).collect()
    } else {
        view.window.to_vec()
    };
    if win.len() != ns {
        return Err(KernelError::invalid(format!(
            "convolution: window has {} dimensions, dim_labels name {ns} spatial dimensions",
            win.len()
        )));
    }
    for (d, (w, &k)) in win.iter().zip(&k_sp).enumerate() {
        if w.size != k as i64 {
            return Err(KernelError::invalid(format!(
                "convolution: window size {} differs from kernel spatial size {k} in dimension {d}",
                w.size
            )));
        }
    }
    let out_sp = in_sp
        .iter()
        .zip(&win)
        .map(|(&i, w)| out_size(i, w))
        .collect::<KResult<Vec<_>>>()?;
    let (groups, batch_groups) = (view.feature_group_count, view.batch_group_count);
    if groups < 1 || batch_groups < 1 {
        return Err(KernelError::invalid(
            "convolution: group counts must be >= 1",
        ));
    }
    let (groups, batch_groups) = (groups as usize, batch_groups as usize);
    let (n, c) = (lhs[p.lhs[0]], lhs[p.lhs[ns + 1]]);
    let (ki, o) = (rhs[p.rhs[ns]], rhs[p.rhs[ns + 1]]);
    if c % groups != 0 || c / groups != ki {
        return Err(KernelError::invalid(format!(
            "convolution: input features ({c}) / feature_group_count ({groups}) must equal the kernel input features ({ki})"
        )));
    }
    if o % groups != 0 || o % batch_groups != 0 {
        return Err(KernelError::invalid(format!(
            "convolution: output features ({o}) must be divisible by feature_group_count ({groups}) and batch_group_count ({batch_groups})"
        )));
    }
    if n % batch_groups != 0 {
        return Err(KernelError::invalid(format!(
            "convolution: batch ({n}) must be divisible by batch_group_count ({batch_groups})"
        )));
    }
    Ok(Geometry {
        n,
        c,
        o,
        groups,
        batch_groups,
        in_sp,
        k_sp,
        out_sp,
        win,
    })
}

/// Evaluates `convolution(lhs, rhs)` into the declared shape.
pub fn convolution(
    lhs: &ArrayLiteral,
    rhs: &ArrayLiteral,
    attrs: &Attrs,
    out: &ArrayShape,
) -> KResult<ArrayLiteral> {
    let hlo::View::Convolution(view) = hlo::View::of(hlo::Opcode::Convolution, attrs) else {
        return Err(KernelError::malformed(hlo::Opcode::Convolution, attrs));
    };
    let labels = view.dims;
    let p = perms(labels, lhs.dims.len(), rhs.dims.len(), out.rank())?;
    let g = geometry(&lhs.dims, &rhs.dims, attrs, &p)?;
    // Output dims in declared order.
    let mut canon_dims = vec![g.n / g.batch_groups];
    canon_dims.extend(&g.out_sp);
    canon_dims.push(g.o);
    let mut out_dims = vec![0; canon_dims.len()];
    for (j, &d) in p.out.iter().enumerate() {
        out_dims[d] = canon_dims[j];
    }
    check_result("convolution", out, &out_dims, out.ty)?;

    let domain = Domain::join(&[lhs.element_type(), rhs.element_type(), out.ty])?;
    let l = permute_values(&Values::read(&lhs.data, domain)?, &lhs.dims, &p.lhs);
    let r = permute_values(&Values::read(&rhs.data, domain)?, &rhs.dims, &p.rhs);
    let canon = match (&l, &r) {
        (Values::F32(a), Values::F32(b)) => Values::F32(conv_typed(a, b, &g)),
        (Values::F64(a), Values::F64(b)) => Values::F64(conv_typed(a, b, &g)),
        (Values::I64(a), Values::I64(b)) => Values::I64(conv_typed(a, b, &g)),
        (Values::C64(a), Values::C64(b)) => Values::C64(conv_typed(a, b, &g)),
        (Values::C128(a), Values::C128(b)) => Values::C128(conv_typed(a, b, &g)),
        _ => unreachable!("operands read into one domain"),
    };
    // canonical [b, s.., f] → declared order: output dim d is canonical axis inv[d].
    let mut inv = vec![0; p.out.len()];
    for (j, &d) in p.out.iter().enumerate() {
        inv[d] = j;
    }
    let result = permute_values(&canon, &canon_dims, &inv);
    Ok(ArrayLiteral {
        dims: out_dims,
        data: result.write(out.ty)?,
    })
}

/// For one spatial dimension: `taps[y * size + k]` is the input index the window tap `k` of
/// output position `y` reads, or `None` over padding / dilation holes.
fn taps(input: usize, out: usize, w: &WindowDim) -> Vec<Option<usize>> {
    let size = w.size as usize;
    let mut t = Vec::with_capacity(out * size);
    for y in 0..out as i64 {
        for k in 0..size as i64 {
            let q = y * w.stride + k * w.rhs_dilate - w.pad_lo;
            let x = if q >= 0 && q % w.lhs_dilate == 0 && q / w.lhs_dilate < input as i64 {
                Some((q / w.lhs_dilate) as usize)
            } else {
                None
            };
            t.push(x);
        }
    }
    t
}

/// Convolution on canonical buffers: `l: [N, in.., C]`, `r: [k.., C/G, O]`; returns
/// `[N/BG, out.., O]`.
fn conv_typed<T: GemmElem>(l: &[T], r: &[T], g: &Geometry) -> Vec<T> {
    let ns = g.in_sp.len();
    let cg = g.c / g.groups;
    let og = g.o / g.groups;
    let obg = g.o / g.batch_groups;
    let nb = g.n / g.batch_groups;
    let npos: usize = g.out_sp.iter().product();
    let nwin: usize = g.k_sp.iter().product();
    let kdim = nwin * cg;
    let mut out = vec![T::default(); nb * npos * g.o];
    if out.is_empty() {
        return out;
    }
    // Row-major strides of the canonical lhs [N, in.., C].
    let mut lstr = vec![g.c; ns + 1];
    for d in (0..ns).rev() {
        lstr[d] = lstr[d + 1] * g.in_sp[d];
    }
    let tap: Vec<Vec<Option<usize>>> = (0..ns)
        .map(|d| taps(g.in_sp[d], g.out_sp[d], &g.win[d]))
        .collect();
    // For every (output position, window tap): lhs offset within one batch element (minus the
    // channel), or None. Built with odometers over positions and taps.
    let mut offsets: Vec<Option<usize>> = Vec::with_capacity(npos * nwin);
    let mut ypos = vec![0usize; ns];
    for _ in 0..npos {
        let mut kpos = vec![0usize; ns];
        for _ in 0..nwin {
            let mut off = Some(0usize);
            for d in 0..ns {
                off = match (off, tap[d][ypos[d] * g.k_sp[d] + kpos[d]]) {
                    (Some(o), Some(x)) => Some(o + x * lstr[d + 1]),
                    _ => None,
                };
            }
            offsets.push(off);
            advance(&mut kpos, &g.k_sp);
        }
        advance(&mut ypos, &g.out_sp);
    }
    // Kernel spatial index used by tap k (window reversal per dimension).
    let kernel_tap: Vec<usize> = {
        let mut v = Vec::with_capacity(nwin);
        let mut kpos = vec![0usize; ns];
        for _ in 0..nwin {
            let mut flat = 0;
            for ((&kp, &ks), w) in kpos.iter().zip(&g.k_sp).zip(&g.win) {
                let k = if w.reversal { ks - 1 - kp } else { kp };
                flat = flat * ks + k;
            }
            v.push(flat);
            advance(&mut kpos, &g.k_sp);
        }
        v
    };
    // Runs of output features with one (feature group, batch group).
    let mut bounds: Vec<usize> = (0..=g.groups)
        .map(|i| i * og)
        .chain((0..=g.batch_groups).map(|i| i * obg))
        .collect();
    bounds.sort_unstable();
    bounds.dedup();
    let chunk_b = (ROWS_PER_CHUNK / npos.max(1)).max(1);
    for seg in bounds.windows(2) {
        let (o0, o1) = (seg[0], seg[1]);
        let (fg, bgi) = (o0 / og, o0 / obg);
        let n = o1 - o0;
        // Kernel matrix [(tap, c), o0..o1].
        let mut kmat = Vec::with_capacity(kdim * n);
        for &kt in &kernel_tap {
            for c in 0..cg {
                let row = (kt * cg + c) * g.o;
                kmat.extend_from_slice(&r[row + o0..row + o1]);
            }
        }
        let mut b0 = 0;
        while b0 < nb {
            let b1 = (b0 + chunk_b).min(nb);
            let rows = (b1 - b0) * npos;
            let mut patches = vec![T::default(); rows * kdim];
            for b in b0..b1 {
                let base = (bgi * nb + b) * lstr[0] + fg * cg;
                for pos in 0..npos {
                    let prow = ((b - b0) * npos + pos) * kdim;
                    for t in 0..nwin {
                        if let Some(off) = offsets[pos * nwin + t] {
                            let src = base + off;
                            patches[prow + t * cg..prow + (t + 1) * cg]
                                .copy_from_slice(&l[src..src + cg]);
                        }
                    }
                }
            }
            let res = T::gemm(&patches, &kmat, 1, rows, kdim, n);
            for row in 0..rows {
                let dst = (b0 * npos + row) * g.o + o0;
                out[dst..dst + n].copy_from_slice(&res[row * n..(row + 1) * n]);
            }
            b0 = b1;
        }
    }
    out
}

/// Row-major odometer increment (wraps to all zeros after the last index).
fn advance(idx: &mut [usize], dims: &[usize]) {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < dims[d] {
            return;
        }
        idx[d] = 0;
    }
}

#[cfg(test)]
#[path = "conv_tests.rs"]
mod tests;
