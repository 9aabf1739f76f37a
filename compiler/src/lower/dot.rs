//! `dot` on the MXUs.
//!
//! The operands are brought into the canonical form `lhs[B][M][K]`, `rhs[B][K][N]` (a
//! permutation where the dimension numbers ask for it), so the result `[B][M][N]` is the HLO
//! result's row-major order. Tiling: for each batch, `M` is cut into chunks of half the
//! accumulator rows and `N` into tiles of `mxu.cols`; each (chunk, tile) is one job on one MXU
//! (round-robin, alternating accumulator halves so a job's `mxu.st` and the next job's
//! matmuls do not collide). A job loads each `K` tile of the weights (`mxu.ldw`, at most
//! `mxu.rows` × `mxu.cols`; the MXU double-buffers them), streams the chunk's rows through it
//! (`mxu.matmul`, accumulating over `K` tiles and passes) and stores the accumulators
//! (`mxu.st`). Jobs of different MXUs are emitted interleaved so every MXU's queue is fed.
//!
//! Numerics: bf16 × bf16 runs natively (f32 accumulation); s8 × s8 → s32 natively (int8
//! mode). f32 (and f16, via f32) operands are split into bf16 parts `x = hi + mid + lo` on the
//! VPU and multiplied in 1, 3 or 6 passes for `precision_config` DEFAULT, HIGH, HIGHEST (as
//! XLA does on TPUs); [`crate::CompileOptions::f32_dot_passes`] can raise the count (6 gives
//! close to f32 accuracy, for conformance).

use super::emit::{Access, Queue};
use super::{Buf, Lowerer, Val};
use crate::error::CResult;
use arch::MxuDtype;
use hlo::{ElementType, InstId, Opcode, Precision};
use isa::Inst;

/// One MXU instruction of a job, with raw addresses (operands are made at emission).
pub(crate) enum MxuOp {
    Ldw {
        addr: u64,
        k: usize,
        n: usize,
        stride: usize,
        /// A transposed load: the tile is stored as `n` rows of `k` (`mxu.ldw tr=1`).
        tr: bool,
    },
    Matmul {
        addr: u64,
        m: usize,
        k: usize,
        stride: usize,
        base: u64,
        accumulate: bool,
    },
    St {
        addr: u64,
        m: usize,
        n: usize,
        stride: usize,
        base: u64,
    },
}

/// The MXU instructions of one job, all on MXU `mxu`.
pub(crate) struct Job {
    pub mxu: u8,
    pub ops: Vec<MxuOp>,
}

/// Lowers `dot`; `None` if `h` is not one.
pub fn lower(l: &mut Lowerer<'_>, h: InstId) -> CResult<Option<Val>> {
    let inst = &l.comp().insts[h];
    if inst.opcode != Opcode::Dot {
        return Ok(None);
    }
    let hlo::View::Dot(a) = inst.view() else {
        return Err(crate::CompileError::Internal(
            "dot without a dot view".into(),
        ));
    };
    let lhs = l.arr(inst.operands[0])?;
    let rhs = l.arr(inst.operands[1])?;
    let (ty, dims) = l.out_shape(h)?;
    let v = |x: &[i64]| -> Vec<usize> { x.iter().map(|&d| d as usize).collect() };
    let (lb, rb, lc, rc) = (
        v(a.lhs_batch),
        v(a.rhs_batch),
        v(a.lhs_contracting),
        v(a.rhs_contracting),
    );
    let lf: Vec<usize> = (0..lhs.dims.len())
        .filter(|d| !lb.contains(d) && !lc.contains(d))
        .collect();
    let rf: Vec<usize> = (0..rhs.dims.len())
        .filter(|d| !rb.contains(d) && !rc.contains(d))
        .collect();
    let prod = |b: &Buf, ds: &[usize]| ds.iter().map(|&d| b.dims[d]).product::<usize>();
    let (nb, m, k, n) = (
        prod(&lhs, &lb),
        prod(&lhs, &lf),
        prod(&lhs, &lc),
        prod(&rhs, &rf),
    );

    // Canonical operands.
    let mut lperm = lb.clone();
    lperm.extend(&lf);
    lperm.extend(&lc);
    let mut rperm = rb.clone();
    rperm.extend(&rc);
    rperm.extend(&rf);
    let lhs_c = canon(l, &lhs, &lperm)?;
    // A right operand already in `[B][N][K]` order (`x · Wᵀ`) is loaded transposed
    // (`mxu.ldw tr=1`) instead of being permuted into a copy first.
    let mut rperm_t = rb.clone();
    rperm_t.extend(&rf);
    rperm_t.extend(&rc);
    let identity = |p: &[usize]| p.iter().enumerate().all(|(i, &x)| i == x);
    let rhs_t = !identity(&rperm) && identity(&rperm_t);
    let rhs_c = if rhs_t {
        rhs.clone()
    } else {
        canon(l, &rhs, &rperm)?
    };
    let out = l.new_buf(h, ty, dims)?;
    matmul_t(l, &lhs_c, (&rhs_c, rhs_t), (nb, m, k, n), &out, a.precision)?;
    Ok(Some(Val::Array(out)))
}

/// `out[b][m][n] = Σ_k lhs[b][m][k] · rhs[b][k][n]` on the MXUs (row-major buffers; `out`'s
/// element type is the result type). Passes for f32 follow `precision` (and the options).
pub(crate) fn matmul(
    l: &mut Lowerer<'_>,
    lhs_c: &Buf,
    rhs_c: &Buf,
    shape: (usize, usize, usize, usize),
    out: &Buf,
    precision: &[Precision],
) -> CResult<()> {
    matmul_t(l, lhs_c, (rhs_c, false), shape, out, precision)
}

/// [`matmul`] with the right operand `rhs[b][k][n]`, or with `rhs_t` stored as
/// `rhs[b][n][k]` (its weight tiles loaded transposed).
fn matmul_t(
    l: &mut Lowerer<'_>,
    lhs_c: &Buf,
    (rhs_c, rhs_t): (&Buf, bool),
    (nb, m, k, n): (usize, usize, usize, usize),
    out: &Buf,
    precision: &[Precision],
) -> CResult<()> {
    let ty = out.ty;
    let MxuPlan {
        mode,
        acc_ty,
        passes: pass_list,
        lparts,
        rparts,
    } = prepare(l, lhs_c, rhs_c, precision)?;
    let pass_list = pass_list.as_slice();
    let acc = if acc_ty == ty {
        out.clone()
    } else {
        l.tmp(acc_ty, vec![nb, m, n])?
    };
    l.stats.flops += 2 * (nb * m * k * n) as u64;
    if m > 0 && n > 0 && nb > 0 {
        if k == 0 {
            return Err(l.unsupported("dot with an empty contracting dimension"));
        }
        emit_jobs(
            l,
            &lparts,
            (&rparts, rhs_t),
            pass_list,
            &acc,
            mode,
            (nb, m, k, n),
        )?;
    }
    if acc_ty != ty {
        let a2 = acc.with_dims(out.dims.clone());
        l.convert(out, &a2)?;
    }
    Ok(())
}

/// How a product runs on the MXUs: the mode, the accumulator type, and the operands as parts
/// in the MXU input type with the (lhs part, rhs part) of each pass.
pub(crate) struct MxuPlan {
    pub mode: MxuDtype,
    pub acc_ty: ElementType,
    pub passes: Vec<(usize, usize)>,
    pub lparts: Vec<Buf>,
    pub rparts: Vec<Buf>,
}

/// Chooses mode and passes for `lhs × rhs` and splits the operands into parts.
pub(crate) fn prepare(
    l: &mut Lowerer<'_>,
    lhs_c: &Buf,
    rhs_c: &Buf,
    precision: &[Precision],
) -> CResult<MxuPlan> {
    let (mode, acc_ty) = match (lhs_c.ty, rhs_c.ty) {
        (ElementType::S8, ElementType::S8) => (MxuDtype::Int8, ElementType::S32),
        (x, y) if is_mxu_float(x) && is_mxu_float(y) => (MxuDtype::Bf16, ElementType::F32),
        (x, y) => {
            return Err(l.unsupported(format!(
                "dot of {x} × {y} (the MXU takes bf16, f32 via bf16 passes, and s8; other dots run on the VPU when their product space has at most 2^22 elements)"
            )))
        }
    };
    if !l.arch.mxu.dtypes.contains(&mode) {
        return Err(l.unsupported(format!(
            "dot in {} mode: this chip's MXU has modes {:?}",
            mode.name(),
            l.arch
                .mxu
                .dtypes
                .iter()
                .map(|d| d.name())
                .collect::<Vec<_>>()
        )));
    }
    let exact_bf16 = lhs_c.ty == ElementType::BF16 && rhs_c.ty == ElementType::BF16;
    let passes = if mode == MxuDtype::Int8 || exact_bf16 {
        1
    } else {
        f32_passes(precision, l.opts.f32_dot_passes)
    };
    let nparts = f32_parts(passes);
    let lparts = parts(l, lhs_c, mode, nparts)?;
    let rparts = parts(l, rhs_c, mode, nparts)?;
    // A bf16 operand is its one part (the rest is exactly 0): passes that would read a
    // further part of it are dropped.
    let pass_list: Vec<(usize, usize)> = f32_pass_list(passes)
        .iter()
        .copied()
        .filter(|&(i, j)| i < lparts.len() && j < rparts.len())
        .collect();
    Ok(MxuPlan {
        mode,
        acc_ty,
        passes: pass_list,
        lparts,
        rparts,
    })
}

/// bf16 passes of a dot of floating operands that are not both bf16: 1, 3 or 6 for the
/// strongest of its `precision_config` (DEFAULT, HIGH, HIGHEST, as XLA on TPUs), at least
/// `floor` ([`crate::CompileOptions::f32_dot_passes`]).
pub fn f32_passes(precision: &[Precision], floor: u32) -> usize {
    let prec = precision
        .iter()
        .copied()
        .max_by_key(|p| match p {
            Precision::Default => 0,
            Precision::High => 1,
            Precision::Highest => 2,
        })
        .unwrap_or(Precision::Default);
    let p = match prec {
        Precision::Default => 1,
        Precision::High => 3,
        Precision::Highest => 6,
    };
    p.max(floor as usize)
}

/// bf16 parts of each operand for `passes` passes (`x ≈ Σ parts`, each the rounding of what
/// the parts before it leave).
pub fn f32_parts(passes: usize) -> usize {
    match passes {
        1 => 1,
        3 => 2,
        _ => 3,
    }
}

/// (lhs part, rhs part) of each of `passes` passes, smallest products first.
pub fn f32_pass_list(passes: usize) -> &'static [(usize, usize)] {
    match passes {
        1 => &[(0, 0)],
        3 => &[(1, 0), (0, 1), (0, 0)],
        _ => &[(2, 0), (0, 2), (1, 1), (1, 0), (0, 1), (0, 0)],
    }
}

fn is_mxu_float(t: ElementType) -> bool {
    matches!(t, ElementType::BF16 | ElementType::F32 | ElementType::F16)
}

/// Whether the MXUs run `lhs × rhs` (s8 × s8, or bf16/f32/f16 in passes; [`prepare`]'s
/// modes): other dots are expanded for the VPU by `passes::dot_vpu`.
pub fn mxu_native(lhs: ElementType, rhs: ElementType) -> bool {
    (lhs == ElementType::S8 && rhs == ElementType::S8) || (is_mxu_float(lhs) && is_mxu_float(rhs))
}

/// `b` permuted by `perm` (itself when `perm` is the identity).
fn canon(l: &mut Lowerer<'_>, b: &Buf, perm: &[usize]) -> CResult<Buf> {
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(b.clone());
    }
    let d: Vec<usize> = perm.iter().map(|&p| b.dims[p]).collect();
    let t = l.tmp(b.ty, d)?;
    l.permute_into(&t, b, perm)?;
    Ok(t)
}

/// The operand as `n` parts in the MXU input type (`x ≈ Σ parts`).
fn parts(l: &mut Lowerer<'_>, x: &Buf, mode: MxuDtype, n: usize) -> CResult<Vec<Buf>> {
    let want = match mode {
        MxuDtype::Int8 => ElementType::S8,
        MxuDtype::Bf16 => ElementType::BF16,
    };
    if x.ty == want {
        return Ok(vec![x.clone()]);
    }
    // Work in f32.
    let xf = if x.ty == ElementType::F32 {
        x.clone()
    } else {
        let t = l.tmp(ElementType::F32, x.dims.clone())?;
        l.convert(&t, x)?;
        t
    };
    let mut out = Vec::new();
    let mut rest = xf;
    for i in 0..n {
        let p = l.tmp(want, x.dims.clone())?;
        l.convert(&p, &rest)?;
        out.push(p.clone());
        if i + 1 < n {
            let back = l.tmp(ElementType::F32, x.dims.clone())?;
            l.convert(&back, &p)?;
            let r = l.tmp(ElementType::F32, x.dims.clone())?;
            l.binop(Opcode::Subtract, &r, &rest, &back)?;
            rest = r;
        }
    }
    Ok(out)
}

fn emit_jobs(
    l: &mut Lowerer<'_>,
    lparts: &[Buf],
    (rparts, rhs_t): (&[Buf], bool),
    passes: &[(usize, usize)],
    acc: &Buf,
    mode: MxuDtype,
    (nb, m, k, n): (usize, usize, usize, usize),
) -> CResult<()> {
    let rows = l.arch.mxu.rows as usize;
    let cols = l.arch.mxu.cols as usize;
    let half = (l.arch.mxu.acc_rows as usize / 2).max(1);
    let chunk = half.min((1 << 20) - 1);
    let nmxu = l.arch.mxu.count as usize;
    let iw = mode.bytes() as usize;
    let aw = 4usize;
    if k * iw >= 1 << 20 || n * aw >= 1 << 20 || n * iw >= 1 << 20 {
        return Err(
            l.unsupported("dot with a row of 1 MiB or more (the MXU stride field has 20 bits)")
        );
    }
    let mut jobs: Vec<Job> = Vec::new();
    for b in 0..nb {
        for m0 in (0..m).step_by(chunk) {
            let mm = chunk.min(m - m0);
            for n0 in (0..n).step_by(cols) {
                let nn = cols.min(n - n0);
                let q = jobs.len() % nmxu;
                let base = (l.mxu_jobs[q] % 2) * half as u64;
                l.mxu_jobs[q] += 1;
                let mut ops = Vec::new();
                let mut first = true;
                for &(li, ri) in passes {
                    let (lp, rp) = (&lparts[li], &rparts[ri]);
                    for k0 in (0..k).step_by(rows) {
                        let kk = rows.min(k - k0);
                        ops.push(if rhs_t {
                            MxuOp::Ldw {
                                addr: rp.addr + ((b * n * k + n0 * k + k0) * iw) as u64,
                                k: kk,
                                n: nn,
                                stride: k * iw,
                                tr: true,
                            }
                        } else {
                            MxuOp::Ldw {
                                addr: rp.addr + ((b * k * n + k0 * n + n0) * iw) as u64,
                                k: kk,
                                n: nn,
                                stride: n * iw,
                                tr: false,
                            }
                        });
                        ops.push(MxuOp::Matmul {
                            addr: lp.addr + ((b * m * k + m0 * k + k0) * iw) as u64,
                            m: mm,
                            k: kk,
                            stride: k * iw,
                            base,
                            accumulate: !first,
                        });
                        l.stats.mxu_macs += (mm * rows * cols) as u64;
                        first = false;
                    }
                }
                ops.push(MxuOp::St {
                    addr: acc.addr + ((b * m * n + m0 * n + n0) * aw) as u64,
                    m: mm,
                    n: nn,
                    stride: n * aw,
                    base,
                });
                jobs.push(Job { mxu: q as u8, ops });
            }
        }
    }
    emit_job_list(l, &jobs, mode);
    Ok(())
}

/// Emits jobs in groups of one per MXU, interleaving their instructions so every MXU's queue
/// is fed. Addresses are resolved at emission (the base-register cache changes).
pub(crate) fn emit_job_list(l: &mut Lowerer<'_>, jobs: &[Job], mode: MxuDtype) {
    let nmxu = l.arch.mxu.count as usize;
    let iw = mode.bytes() as usize;
    for group in jobs.chunks(nmxu) {
        let longest = group.iter().map(|j| j.ops.len()).max().unwrap_or(0);
        for step in 0..longest {
            for j in group {
                if let Some(op) = j.ops.get(step) {
                    emit_op(l, j.mxu, op, mode, iw);
                }
            }
        }
    }
}

/// Emits one MXU instruction of MXU `q` with its memory operands (resolved now).
pub(crate) fn emit_op(l: &mut Lowerer<'_>, q: u8, op: &MxuOp, mode: MxuDtype, iw: usize) {
    let mxu = q as u32;
    match *op {
        MxuOp::Ldw {
            addr,
            k,
            n,
            stride,
            tr,
        } => {
            let src = l.e.vaddr(addr);
            // Rows as stored: k rows of n, or transposed n rows of k.
            let (rows, cols) = if tr { (n, k) } else { (k, n) };
            l.e.unit(
                Inst::MxuLdw {
                    src,
                    mxu,
                    k: k as u32,
                    n: n as u32,
                    stride: stride as u32,
                    mode,
                    tr: isa::Flag(tr),
                    wait: None,
                    signal: None,
                },
                Queue::Mxu(q),
                &[Access::vmem_rows(
                    addr,
                    (cols * iw) as u64,
                    stride as u64,
                    rows as u64,
                )],
                &[],
            );
        }
        MxuOp::Matmul {
            addr,
            m,
            k,
            stride,
            base,
            accumulate,
        } => {
            let src = l.e.vaddr(addr);
            let acc = l.e.accaddr(base);
            l.e.unit(
                Inst::MxuMatmul {
                    src,
                    acc,
                    mxu,
                    m: m as u32,
                    k: k as u32,
                    stride: stride as u32,
                    mode,
                    accumulate,
                    pat: None,
                    wait: None,
                    signal: None,
                },
                Queue::Mxu(q),
                // Rows may overlap (`stride < k·iw`: a convolution's adjacent window taps);
                // the simulator's race tracker then takes rows `k·iw` apart, a wider span, so
                // the emitter orders against that span too and the two agree.
                &[Access::vmem_rows(
                    addr,
                    (k * iw) as u64,
                    stride.max(k * iw) as u64,
                    m as u64,
                )],
                &[],
            );
        }
        MxuOp::St {
            addr,
            m,
            n,
            stride,
            base,
        } => {
            let dst = l.e.vaddr(addr);
            let acc = l.e.accaddr(base);
            l.e.unit(
                Inst::MxuSt {
                    dst,
                    acc,
                    mxu,
                    m: m as u32,
                    n: n as u32,
                    stride: stride as u32,
                    wait: None,
                    signal: None,
                },
                Queue::Mxu(q),
                &[],
                &[Access::vmem_rows(
                    addr,
                    (n * 4) as u64,
                    stride as u64,
                    m as u64,
                )],
            );
        }
    }
}

/// The shape of a dot the streamed schedule ([`super::dot_stream`]) computes.
#[derive(Clone, Copy, Debug)]
pub struct StreamForm {
    /// Batch, rows, contraction and columns.
    pub nb: usize,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    /// The MXU mode of its operands.
    pub mode: arch::MxuDtype,
    /// The result type: the accumulator's, or bf16 (bf16 operands; the accumulator rounded).
    pub out: ElementType,
    /// `rhs` is `[B][N][K]` (contracting dimensions last, as in `q·kᵀ` or `x·Wᵀ`): its
    /// weight tiles load transposed (`mxu.ldw tr=1`).
    pub rhs_t: bool,
}

/// Whether a dot's dimension numbers are in a streamed order: batch dimensions first and in
/// order on both sides, `lhs[B][M][K]` (contracting dimensions last, in order), and
/// `rhs[B][K][N]` (`Some(false)`) or `rhs[B][N][K]` (`Some(true)`). `lr`/`rr` are the ranks.
pub fn stream_order(a: &hlo::DotView<'_>, lr: usize, rr: usize) -> Option<bool> {
    let seq = |xs: &[i64], from: i64| xs.iter().enumerate().all(|(i, &d)| d == from + i as i64);
    let (lb, rb, lc, rc) = (
        a.lhs_batch,
        a.rhs_batch,
        a.lhs_contracting,
        a.rhs_contracting,
    );
    let nbd = lb.len() as i64;
    if !(seq(lb, 0) && seq(rb, 0) && seq(lc, lr as i64 - lc.len() as i64) && !lc.is_empty()) {
        return None;
    }
    if seq(rc, nbd) {
        Some(false)
    } else if seq(rc, rr as i64 - rc.len() as i64) {
        Some(true)
    } else {
        None
    }
}

/// Dot `h` of computation `c` if it is in the streamed schedule's form: operands of a native
/// MXU type (bf16 or s8), the accumulator type as result (or bf16 from bf16), dimensions in
/// a [`stream_order`] (batch first, `lhs[B][M][K]`, `rhs[B][K][N]` or `rhs[B][N][K]`), static
/// shapes.
pub fn stream_form(c: &hlo::Computation, h: InstId) -> Option<StreamForm> {
    let inst = &c.insts[h];
    if inst.opcode != Opcode::Dot || inst.operands.len() != 2 {
        return None;
    }
    let ls = c.insts[inst.operands[0]].shape.as_array()?;
    let rs = c.insts[inst.operands[1]].shape.as_array()?;
    let os = inst.shape.as_array()?;
    let mode = match (ls.ty, rs.ty, os.ty) {
        (ElementType::BF16, ElementType::BF16, ElementType::F32 | ElementType::BF16) => {
            arch::MxuDtype::Bf16
        }
        (ElementType::S8, ElementType::S8, ElementType::S32) => arch::MxuDtype::Int8,
        _ => return None,
    };
    if ls.is_dynamic() || rs.is_dynamic() {
        return None;
    }
    let hlo::View::Dot(a) = inst.view() else {
        return None;
    };
    let rhs_t = stream_order(&a, ls.dims.len(), rs.dims.len())?;
    let (ld, rd) = (ls.udims(), rs.udims());
    let nb: usize = ld[..a.lhs_batch.len()].iter().product();
    let k: usize = a.lhs_contracting.iter().map(|&d| ld[d as usize]).product();
    let m = ld.iter().product::<usize>() / (nb * k).max(1);
    let n = rd.iter().product::<usize>() / (nb * k).max(1);
    Some(StreamForm {
        nb,
        m,
        k,
        n,
        mode,
        out: os.ty,
        rhs_t,
    })
}

/// Whether dot `h` can be streamed from HBM on every core ([`super::dot_stream`]): operands
/// are entry parameters in canonical form of a native MXU type, the result has the
/// accumulator type, and only the module's result uses it, directly or through an epilogue
/// ([`stream_chain`]; then only when the dot outlasts one HBM access).
pub fn streamable(
    m: &hlo::Module,
    h: InstId,
    users: &[Vec<InstId>],
    arch: &arch::ArchConfig,
) -> bool {
    let c = m.entry();
    let inst = &c.insts[h];
    if inst.opcode != Opcode::Dot || inst.operands.len() != 2 {
        return false;
    }
    let (l, r) = (&c.insts[inst.operands[0]], &c.insts[inst.operands[1]]);
    if l.opcode != Opcode::Parameter
        || r.opcode != Opcode::Parameter
        || inst.operands[0] == inst.operands[1]
    {
        return false;
    }
    let Some(g) = stream_form(c, h).filter(|g| g.out != ElementType::BF16) else {
        return false;
    };
    match stream_chain(m, h, users) {
        None => false,
        Some(chain) if chain.is_empty() => true,
        // With an epilogue, only where the MXU work outlasts one HBM access (setup and
        // latency): a smaller dot and its consumers are cheaper on VMEM-resident operands
        // (loaded by a few large copies) than streamed in chunks (many small ones).
        Some(_) => {
            let macs = (g.nb * g.m * g.k * g.n) as u64;
            let per_cycle = u64::from(arch.cores_per_chip.max(1))
                * u64::from(arch.mxu.count.max(1))
                * u64::from(arch.mxu.rows)
                * u64::from(arch.mxu.cols);
            let l_hbm = arch.cycles_from_ns(arch.hbm.latency_ns);
            macs / per_cycle.max(1) >= u64::from(arch.dma.setup_cycles) + l_hbm
        }
    }
}

/// The epilogue of a streamed dot `h`: the element-wise instructions from `h` to the value the
/// module returns, each the only user of the one before it (empty: `h`'s own value is
/// returned). `None` if `h`'s value is used otherwise. A step is a unary VPU op, a narrowing
/// `convert`, or one of add, subtract, multiply, divide, max, min whose other operand is a
/// `broadcast` (used only there) of an entry parameter or constant: a vector along the
/// result's last dimension (one value per column, a bias) or a scalar, of the value's type.
pub fn stream_chain(m: &hlo::Module, h: InstId, users: &[Vec<InstId>]) -> Option<Vec<InstId>> {
    let c = m.entry();
    let root = c.root;
    let mut chain = Vec::new();
    let mut v = h;
    loop {
        let us = &users[v.index()];
        let returned = (v == root && us.is_empty())
            || (!us.is_empty()
                && us
                    .iter()
                    .all(|&u| u == root && c.insts[u].opcode == Opcode::Tuple));
        if returned {
            return Some(chain);
        }
        let [u] = us[..] else { return None };
        epilogue_step(c, u, v, users)?;
        chain.push(u);
        v = u;
    }
}

/// Whether `u` (the only user of `v`) is an epilogue step; `Some(the broadcast)` for a binary
/// step, `Some(None)` for a unary one.
pub fn epilogue_step(
    c: &hlo::Computation,
    u: InstId,
    v: InstId,
    users: &[Vec<InstId>],
) -> Option<Option<InstId>> {
    use super::elementwise::{binary, unary, PROBE as probe};
    let ui = &c.insts[u];
    let (ua, va) = (ui.shape.as_array()?, c.insts[v].shape.as_array()?);
    if ua.is_dynamic() || !ui.attrs.control_predecessors.is_empty() {
        return None;
    }
    let t = super::dtype(va.ty)?;
    match (ui.opcode, &ui.operands[..]) {
        (Opcode::Convert, [a]) if *a == v => {
            super::dtype(ua.ty)?;
            (ua.ty.byte_size() <= va.ty.byte_size() && !ua.ty.is_complex()).then_some(None)
        }
        (op, [a]) if *a == v && op.class() == hlo::OpClass::Unary => {
            (ua.ty == va.ty && unary(op, probe, probe, 0, t).is_some()).then_some(None)
        }
        (
            Opcode::Add
            | Opcode::Subtract
            | Opcode::Multiply
            | Opcode::Divide
            | Opcode::Maximum
            | Opcode::Minimum,
            [a, b],
        ) if (*a == v) != (*b == v) => {
            binary(ui.opcode, probe, probe, probe, 0, t)?;
            let o = if *a == v { *b } else { *a };
            let oi = &c.insts[o];
            if oi.opcode != Opcode::Broadcast || users[o.index()][..] != [u] {
                return None;
            }
            let x = &c.insts[*oi.operands.first()?];
            let xa = x.shape.as_array()?;
            let hlo::View::Broadcast { dimensions: dims } = oi.view() else {
                return None;
            };
            let rank = ua.dims.len() as i64;
            let shape_ok = (xa.dims.is_empty() && dims.is_empty())
                || (xa.dims.len() == 1 && dims == [rank - 1]);
            let source = matches!(x.opcode, Opcode::Parameter | Opcode::Constant);
            (ua.ty == va.ty && xa.ty == va.ty && shape_ok && source && !xa.is_dynamic())
                .then_some(Some(o))
        }
        _ => None,
    }
}

#[cfg(test)]
mod epilogue_tests {
    use super::*;

    fn chain_of(text: &str) -> Option<Vec<String>> {
        let m = hlo::parse(text).unwrap();
        hlo::verify(&m).unwrap();
        let c = m.entry();
        let mut users: Vec<Vec<InstId>> = vec![Vec::new(); c.insts.len()];
        for (h, i) in c.insts.iter() {
            for o in &i.operands {
                users[o.index()].push(h);
            }
        }
        let d = c
            .insts
            .handles()
            .find(|&h| c.insts[h].opcode == Opcode::Dot)?;
        stream_chain(&m, d, &users).map(|ch| ch.iter().map(|&h| c.insts[h].name.clone()).collect())
    }

    const HEAD: &str = "HloModule t\nENTRY e {\n  x = bf16[8,4] parameter(0)\n  w = bf16[4,6] parameter(1)\n  b = f32[6] parameter(2)\n  d = f32[8,6] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n";

    #[test]
    fn bias_activation_and_narrowing_convert_form_the_epilogue() {
        let t = format!(
            "{HEAD}  bb = f32[8,6] broadcast(b), dimensions={{1}}\n  a = f32[8,6] subtract(bb, d)\n  \
             th = f32[8,6] tanh(a)\n  ROOT o = bf16[8,6] convert(th)\n}}\n"
        );
        assert_eq!(chain_of(&t).unwrap(), ["a", "th", "o"]);
    }

    #[test]
    fn values_used_elsewhere_or_computed_operands_end_streaming() {
        // The dot's value is also returned: not streamable with this chain.
        let two_uses = format!(
            "{HEAD}  t = f32[8,6] tanh(d)\n  ROOT r = (f32[8,6], f32[8,6]) tuple(t, d)\n}}\n"
        );
        assert_eq!(chain_of(&two_uses), None);
        // A computed (not parameter or constant) operand of the broadcast.
        let computed = format!(
            "{HEAD}  n = f32[6] negate(b)\n  bb = f32[8,6] broadcast(n), dimensions={{1}}\n  \
             ROOT a = f32[8,6] add(d, bb)\n}}\n"
        );
        assert_eq!(chain_of(&computed), None);
        // A broadcast along the rows (one value per row) is not a per-column operand.
        let rows = format!(
            "{HEAD}  r8 = f32[8] parameter(3)\n  bb = f32[8,6] broadcast(r8), dimensions={{0}}\n  \
             ROOT a = f32[8,6] add(d, bb)\n}}\n"
        );
        assert_eq!(chain_of(&rows), None);
        // A widening convert.
        let wide = format!("{HEAD}  ROOT o = f64[8,6] convert(d)\n}}\n");
        assert_eq!(chain_of(&wide), None);
        // A unary op as the result: a one-step epilogue.
        let alone = format!("{HEAD}  ROOT n = f32[8,6] negate(d)\n}}\n");
        assert_eq!(chain_of(&alone).unwrap(), ["n"]);
    }
}
