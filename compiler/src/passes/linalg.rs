//! Expands `triangular-solve` and `cholesky` on real floats into slices, broadcasts,
//! elementwise VPU ops and one `concatenate`, unrolled over the matrix dimension `m` (a static
//! size), batched over the leading dimensions.
//!
//! * **triangular-solve**: the explicit triangular matrix `S` (the triangle named by `lower`,
//!   unit diagonal written as 1, `op(a)` transposed for TRANSPOSE/ADJOINT — the same for real
//!   types) and, for `left_side=false`, the transposed system `op(a)ᵀ·xᵀ = bᵀ`. Then a
//!   right-looking substitution in the order `S`'s triangle needs: for each row `i`,
//!   `x_i = r_i / S_ii` (no divide with a unit diagonal) and `r −= S[:, i] ⊗ x_i` (rows already
//!   solved see a zero of `S`), all `k` right-hand sides and the batch at once. The rows `x_i`
//!   are concatenated into `x`.
//! * **cholesky** (lower; `lower=false` factors `aᵀ` and transposes back, as the evaluator and
//!   XLA do): right-looking, for each column `j`: `p = sqrt(r_jj)`, `l_j = r[:, j] / p` with the
//!   rows above `j` zeroed, `r −= l_j ⊗ l_jᵀ`. Only the lower triangle of `r` is ever read. The
//!   columns are concatenated; a batch element whose pivot is NaN becomes all NaN (as XLA).
//!
//! * **blocked triangular-solve** (f32, `m > BLOCK`): diagonal blocks of [`BLOCK`] rows are
//!   solved as above, in the order the triangle needs; after each, the right-hand sides left
//!   are updated with one MXU matmul `r −= S[:, blk] · x_blk` (6 bf16 passes: f32 accuracy).
//! * **blocked cholesky** (f32, `n > BLOCK`): per block column, the diagonal block factored as
//!   above, the panel below solved against its transpose (`P·L_jj⁻ᵀ`, the substitution above),
//!   and the trailing matrix updated with one MXU matmul `T −= P·Pᵀ`.
//!
//! Cost: `m` steps of about 8 HLO ops each, whose largest are two `m·k` (cholesky `m·m`;
//! blocked: `BLOCK·k`) VPU ALU ops and two broadcasts, plus row and column picks (constant-start
//! `dynamic-slice`s: VMEM-to-VMEM DMAs): `O(m)` VPU instructions; unblocked `O(m²k)` element
//! operations on the VPU, blocked `O(m·BLOCK·k)` on the VPU plus `m/BLOCK` matmuls of
//! `m × BLOCK × k` on the MXU. Measured (tpu-v4, one 128×128 system, 128 right-hand sides):
//! 69,263 cycles unblocked, 37,747 blocked; 256×256: 86,889 blocked; cholesky 256×256: 266,016
//! unblocked, 115,240 blocked; 1024×1024 (timing-only): cholesky 904,778 cycles, triangular
//! solve with 16 right-hand sides 496,634; f64 (unrolled, emulated 64-bit VPU arithmetic)
//! 512×512: cholesky 7,817,910, triangular solve with 8 right-hand sides 532,376. Triangle masks compare an `iota` vector broadcast
//! along rows with one along columns (s16 up to 32,767 rows: the two broadcasts are the
//! largest temporaries), so no full-matrix `iota` limits the size. Left alone (not supported
//! on chip yet): f64 above [`MAX_UNROLL`] (the MXU has no f64 matmul for the blocked form, and
//! the unrolled form's `O(n³)` VPU work and `n²` temporaries grow past what is sensible),
//! f32 above [`MAX_BLOCKED`] (the whole matrix and the expansion's temporaries live in VMEM:
//! at 1024 the cholesky's peak is 13.6 of tpu-v4's 16 MiB; larger needs panels streamed
//! from HBM, not built), complex types.

use super::rewrite::{run_expander, OpExpander, Rw};
use crate::error::CResult;
use crate::pass::Pass;
use hlo::{
    Attrs, ComparisonDirection as D, ElementType as T, InstId, Instruction, Module, Opcode,
    Precision, TransposeKind,
};

/// Largest matrix dimension the unrolled expansions accept (f64; f32 uses the blocked form).
pub const MAX_UNROLL: i64 = 512;

/// Rows per diagonal block of the blocked f32 triangular solve (above it, the off-diagonal
/// updates go to the MXU).
pub const BLOCK: i64 = 32;

/// Largest matrix dimension of the blocked f32 triangular solve and cholesky (VMEM-resident).
pub const MAX_BLOCKED: i64 = 1024;

/// See the module docs.
pub struct LinalgExpander;

impl Pass for LinalgExpander {
    fn name(&self) -> &'static str {
        "linalg-expander"
    }
    fn run(&self, m: &mut Module) -> CResult<bool> {
        run_expander(self, m)
    }
}

/// `x` with its last two dimensions swapped.
fn transpose2(rw: &mut Rw<'_>, x: InstId) -> CResult<InstId> {
    let r = rw.arr(x)?.dims.len() as i64;
    let mut perm: Vec<i64> = (0..r).collect();
    perm.swap(r as usize - 2, r as usize - 1);
    rw.transpose(x, &perm)
}

/// `pred[dims]`: row index (dimension `r−2`) `dir` column index (dimension `r−1`).
fn tri_mask(rw: &mut Rw<'_>, dims: &[i64], dir: D) -> CResult<InstId> {
    let r = dims.len() as i64;
    // Row and column indices as vectors broadcast to `dims` (a full-size `iota` along a
    // leading dimension has a period of the whole matrix, more than one VPU instruction holds).
    // s16 indices where they fit: the two broadcasts are the largest temporaries here.
    let n = |d: i64| dims[d as usize];
    let it = if n(r - 2).max(n(r - 1)) <= i16::MAX as i64 {
        T::S16
    } else {
        T::S32
    };
    let rows = rw.iota(it, &[n(r - 2)], 0)?;
    let cols = rw.iota(it, &[n(r - 1)], 0)?;
    let i = rw.bcast(rows, dims, &[r - 2])?;
    let j = rw.bcast(cols, dims, &[r - 1])?;
    rw.cmp(i, j, dir)
}

/// `x[..., i:i+1, :]` (`row`) or `x[..., :, i:i+1]` of a `[..., p, q]` array, as a
/// `dynamic-slice` with constant starts: lowered to strided VMEM-to-VMEM DMAs, where a `slice`
/// would gather through an index table fetched from HBM (its latency on every step).
fn pick(rw: &mut Rw<'_>, x: InstId, i: i64, row: bool) -> CResult<InstId> {
    let dims = rw.arr(x)?.dims;
    let r = dims.len();
    let at = r - 2 + usize::from(!row);
    let mut starts = Vec::with_capacity(r);
    for d in 0..r {
        starts.push(rw.iconst(T::S32, if d == at { i as u64 } else { 0 })?);
    }
    let mut sizes = dims.clone();
    sizes[at] = 1;
    let mut ops = vec![x];
    ops.extend(starts);
    let attrs = Attrs {
        dynamic_slice_sizes: Some(sizes),
        ..Default::default()
    };
    rw.add(Opcode::DynamicSlice, &ops, attrs, None)
}

/// A `[..., 1, q]` row or `[..., p, 1]` column broadcast to `dims` `[..., p, q]`.
fn spread(rw: &mut Rw<'_>, v: InstId, dims: &[i64], row: bool) -> CResult<InstId> {
    let r = dims.len();
    let keep = if row { r - 1 } else { r - 2 };
    let vd: Vec<i64> = dims[..r - 2].iter().copied().chain([dims[keep]]).collect();
    let flat = rw.reshape(v, &vd)?;
    let bd: Vec<i64> = (0..r as i64 - 2).chain([keep as i64]).collect();
    rw.bcast(flat, dims, &bd)
}

fn compute_type(ty: T) -> Option<T> {
    match ty {
        T::F32 | T::F64 => Some(ty),
        T::F16 | T::BF16 => Some(T::F32),
        _ => None,
    }
}

fn solve(rw: &mut Rw<'_>, i: &Instruction) -> CResult<Option<InstId>> {
    let hlo::View::TriangularSolve(o) = i.view() else {
        return Ok(None);
    };
    let (a, b) = (i.operands[0], i.operands[1]);
    let (sa, sb) = (rw.arr(a)?, rw.arr(b)?);
    let Some(ct) = compute_type(sa.ty) else {
        return Ok(None);
    };
    let r = sa.dims.len();
    if r < 2 || sb.dims.len() != r || sa.is_dynamic() || sb.is_dynamic() {
        return Ok(None);
    }
    let m = sa.dims[r - 1];
    let limit = if ct == T::F32 {
        MAX_BLOCKED
    } else {
        MAX_UNROLL
    };
    if m > limit || sb.dims.contains(&0) || m == 0 {
        return Ok(None);
    }
    let a = rw.convert(a, ct)?;
    let b = rw.convert(b, ct)?;
    let adims = sa.dims.clone();
    // tri(a): the named triangle, unit diagonal as 1.
    let keep = tri_mask(rw, &adims, if o.lower { D::Ge } else { D::Le })?;
    let zero = rw.fconst(ct, 0.0)?;
    let zeros = rw.splat(zero, &adims)?;
    let mut t = rw.op(Opcode::Select, &[keep, a, zeros])?;
    if o.unit_diagonal {
        let diag = tri_mask(rw, &adims, D::Eq)?;
        let one = rw.fconst(ct, 1.0)?;
        let ones = rw.splat(one, &adims)?;
        t = rw.op(Opcode::Select, &[diag, ones, t])?;
    }
    let transposed = o.transpose_a != TransposeKind::NoTranspose;
    // S = op(a) (left) or op(a)ᵀ (right).
    let s = if transposed ^ !o.left_side {
        transpose2(rw, t)?
    } else {
        t
    };
    let s_lower = o.lower ^ transposed ^ !o.left_side;
    let rhs = if o.left_side { b } else { transpose2(rw, b)? };
    let x = if ct == T::F32 && m > BLOCK {
        blocked(rw, s, rhs, m, s_lower, o.unit_diagonal)?
    } else {
        substitute(rw, s, rhs, m, s_lower, o.unit_diagonal)?
    };
    let x = if o.left_side { x } else { transpose2(rw, x)? };
    Ok(Some(rw.convert(x, sb.ty)?))
}

/// Unrolled right-looking substitution: `x` with `S·x = rhs` (`S` `[..., m, m]` triangular:
/// lower if `s_lower`; `rhs` `[..., m, k]`).
fn substitute(
    rw: &mut Rw<'_>,
    s: InstId,
    mut rhs: InstId,
    m: i64,
    s_lower: bool,
    unit: bool,
) -> CResult<InstId> {
    let r = rw.arr(s)?.dims.len();
    let rdims = rw.arr(rhs)?.dims;
    let order: Vec<i64> = if s_lower {
        (0..m).collect()
    } else {
        (0..m).rev().collect()
    };
    let mut rows = vec![None; m as usize];
    for (step, &k) in order.iter().enumerate() {
        let rk = pick(rw, rhs, k, true)?;
        let xk = if unit {
            rk
        } else {
            let skk = pick(rw, s, k, true)?;
            let skk = pick(rw, skk, k, false)?;
            let rd = rw.arr(rk)?.dims;
            let skk = rw_reshape_scalarish(rw, skk)?;
            let sp = rw.bcast(skk, &rd, &(0..r as i64 - 2).collect::<Vec<_>>())?;
            rw.op(Opcode::Divide, &[rk, sp])?
        };
        rows[k as usize] = Some(xk);
        if step + 1 < order.len() {
            let col = pick(rw, s, k, false)?;
            let cb = spread(rw, col, &rdims, false)?;
            let xb = spread(rw, xk, &rdims, true)?;
            let p = rw.op(Opcode::Multiply, &[cb, xb])?;
            rhs = rw.op(Opcode::Subtract, &[rhs, p])?;
        }
    }
    let rows: Vec<InstId> = rows.into_iter().map(|x| x.expect("every row")).collect();
    if rows.len() == 1 {
        Ok(rows[0])
    } else {
        rw.concat(&rows, r as i64 - 2)
    }
}

/// Rows (or columns, `cols`) `start..start + len` of a `[..., p, q]` array, as a
/// `dynamic-slice` with constant starts.
fn band(rw: &mut Rw<'_>, x: InstId, start: i64, len: i64, cols: bool) -> CResult<InstId> {
    let dims = rw.arr(x)?.dims;
    let r = dims.len();
    let at = r - 2 + usize::from(cols);
    let mut ops = vec![x];
    for d in 0..r {
        ops.push(rw.iconst(T::S32, if d == at { start as u64 } else { 0 })?);
    }
    let mut sizes = dims.clone();
    sizes[at] = len;
    let attrs = Attrs {
        dynamic_slice_sizes: Some(sizes),
        ..Default::default()
    };
    rw.add(Opcode::DynamicSlice, &ops, attrs, None)
}

/// Blocked substitution for f32: diagonal blocks of [`BLOCK`] rows solved by [`substitute`] on
/// the VPU, in the order the triangle needs; after each, the remaining right-hand sides are
/// updated with one MXU matmul `rhs −= S[:, blk] · x_blk` (rows already solved meet zeros of
/// `S`), at `HIGHEST` precision (6 bf16 passes).
fn blocked(
    rw: &mut Rw<'_>,
    s: InstId,
    mut rhs: InstId,
    m: i64,
    s_lower: bool,
    unit: bool,
) -> CResult<InstId> {
    let rdims = rw.arr(rhs)?.dims;
    let r = rdims.len();
    let starts: Vec<i64> = (0..m).step_by(BLOCK as usize).collect();
    let order: Vec<usize> = if s_lower {
        (0..starts.len()).collect()
    } else {
        (0..starts.len()).rev().collect()
    };
    let mut xs = vec![None; starts.len()];
    let batch: Vec<i64> = (0..r as i64 - 2).collect();
    for (step, &b) in order.iter().enumerate() {
        let (st, len) = (starts[b], BLOCK.min(m - starts[b]));
        let rb = band(rw, rhs, st, len, false)?;
        let srows = band(rw, s, st, len, false)?;
        let sbb = band(rw, srows, st, len, true)?;
        let xb = substitute(rw, sbb, rb, len, s_lower, unit)?;
        xs[b] = Some(xb);
        if step + 1 < order.len() {
            let scol = band(rw, s, st, len, true)?;
            let attrs = Attrs {
                lhs_batch_dims: Some(batch.clone()),
                rhs_batch_dims: Some(batch.clone()),
                lhs_contracting_dims: Some(vec![r as i64 - 1]),
                rhs_contracting_dims: Some(vec![r as i64 - 2]),
                operand_precision: Some(vec![Precision::Highest, Precision::Highest]),
                ..Default::default()
            };
            let upd = rw.add(
                Opcode::Dot,
                &[scol, xb],
                attrs,
                Some(hlo::Shape::Array(hlo::ArrayShape::new(T::F32, &rdims))),
            )?;
            rhs = rw.op(Opcode::Subtract, &[rhs, upd])?;
        }
    }
    let xs: Vec<InstId> = xs.into_iter().map(|x| x.expect("every block")).collect();
    rw.concat(&xs, r as i64 - 2)
}

/// A `[..., 1, 1]` array as `[...]` (batch dims only).
fn rw_reshape_scalarish(rw: &mut Rw<'_>, x: InstId) -> CResult<InstId> {
    let d = rw.arr(x)?.dims;
    rw.reshape(x, &d[..d.len() - 2])
}

fn cholesky(rw: &mut Rw<'_>, i: &Instruction) -> CResult<Option<InstId>> {
    let a = i.operands[0];
    let sa = rw.arr(a)?;
    let Some(ct) = compute_type(sa.ty) else {
        return Ok(None);
    };
    let r = sa.dims.len();
    if r < 2 || sa.is_dynamic() {
        return Ok(None);
    }
    let n = sa.dims[r - 1];
    let limit = if ct == T::F32 {
        MAX_BLOCKED
    } else {
        MAX_UNROLL
    };
    if n > limit || n == 0 || sa.dims.contains(&0) {
        return Ok(None);
    }
    let hlo::View::Cholesky { lower } = i.view() else {
        return Ok(None);
    };
    let dims = sa.dims.clone();
    let a = rw.convert(a, ct)?;
    let res = if lower { a } else { transpose2(rw, a)? };
    let bmap: Vec<i64> = (0..r as i64 - 2).collect();
    let (l, nan) = if ct == T::F32 && n > BLOCK {
        factor_blocked(rw, res, n)?
    } else {
        factor(rw, res, n)?
    };
    let nanv = rw.fconst(ct, f64::NAN)?;
    let nans = rw.splat(nanv, &dims)?;
    let bad = rw.bcast(nan, &dims, &bmap)?;
    let l = rw.op(Opcode::Select, &[bad, nans, l])?;
    let l = if lower { l } else { transpose2(rw, l)? };
    Ok(Some(rw.convert(l, sa.ty)?))
}

/// Unrolled right-looking factorization of the `[..., n, n]` matrix `res` (lower triangle
/// read): the lower factor (zeros above the diagonal) and a `pred[...]` "some pivot is NaN".
fn factor(rw: &mut Rw<'_>, mut res: InstId, n: i64) -> CResult<(InstId, InstId)> {
    let dims = rw.arr(res)?.dims;
    let r = dims.len();
    let ct = rw.arr(res)?.ty;
    let bmap: Vec<i64> = (0..r as i64 - 2).collect();
    // Column template: row index of a `[..., n, 1]` column.
    let mut cdims = dims.clone();
    cdims[r - 1] = 1;
    let rowv = rw.iota(T::S32, &[n], 0)?;
    let rowi = rw.bcast(rowv, &cdims, &[r as i64 - 2])?;
    let zero = rw.fconst(ct, 0.0)?;
    let zcol = rw.splat(zero, &cdims)?;
    let mut cols = Vec::new();
    let mut nan: Option<InstId> = None;
    for j in 0..n {
        let col = pick(rw, res, j, false)?;
        let pjj = pick(rw, col, j, true)?;
        let pjj = rw_reshape_scalarish(rw, pjj)?;
        let p = rw.op(Opcode::Sqrt, &[pjj])?;
        let bad = rw.cmp(p, p, D::Ne)?;
        nan = Some(match nan {
            None => bad,
            Some(x) => rw.op(Opcode::Or, &[x, bad])?,
        });
        let pc = rw.bcast(p, &cdims, &bmap)?;
        let q = rw.op(Opcode::Divide, &[col, pc])?;
        let jk = rw.iconst(T::S32, j as u64)?;
        let jc = rw.splat(jk, &cdims)?;
        let below = rw.cmp(rowi, jc, D::Ge)?;
        let l = rw.op(Opcode::Select, &[below, q, zcol])?;
        cols.push(l);
        if j + 1 < n {
            let lb = spread(rw, l, &dims, false)?;
            let lt = rw.reshape(l, &{
                let mut d = dims.clone();
                d[r - 2] = 1;
                d
            })?;
            let ltb = spread(rw, lt, &dims, true)?;
            let pr = rw.op(Opcode::Multiply, &[lb, ltb])?;
            res = rw.op(Opcode::Subtract, &[res, pr])?;
        }
    }
    let l = if cols.len() == 1 {
        cols[0]
    } else {
        rw.concat(&cols, r as i64 - 1)?
    };
    Ok((l, nan.expect("n > 0")))
}

/// `x · y` over the last two dimensions (batched), `y` transposed if `ty`, on the MXU at
/// `HIGHEST` precision.
fn matmul(rw: &mut Rw<'_>, x: InstId, y: InstId, ty: bool) -> CResult<InstId> {
    let (dx, dy) = (rw.arr(x)?.dims, rw.arr(y)?.dims);
    let r = dx.len();
    let batch: Vec<i64> = (0..r as i64 - 2).collect();
    let mut od = dx.clone();
    od[r - 1] = if ty { dy[r - 2] } else { dy[r - 1] };
    let attrs = Attrs {
        lhs_batch_dims: Some(batch.clone()),
        rhs_batch_dims: Some(batch),
        lhs_contracting_dims: Some(vec![r as i64 - 1]),
        rhs_contracting_dims: Some(vec![if ty { r as i64 - 1 } else { r as i64 - 2 }]),
        operand_precision: Some(vec![Precision::Highest, Precision::Highest]),
        ..Default::default()
    };
    rw.add(
        Opcode::Dot,
        &[x, y],
        attrs,
        Some(hlo::Shape::Array(hlo::ArrayShape::new(T::F32, &od))),
    )
}

/// Blocked right-looking f32 factorization: per block column of [`BLOCK`], the diagonal block
/// factored by [`factor`], the panel below it solved against the block's transpose by
/// [`substitute`] (`P · L_jjᵀ⁻¹`), and the trailing matrix updated with one MXU matmul
/// `T −= P·Pᵀ`. Block columns are padded with zeros above and concatenated.
fn factor_blocked(rw: &mut Rw<'_>, res: InstId, n: i64) -> CResult<(InstId, InstId)> {
    let dims = rw.arr(res)?.dims;
    let r = dims.len();
    let mut trail = res;
    let mut blocks = Vec::new();
    let mut nan: Option<InstId> = None;
    let mut st = 0;
    while st < n {
        let len = BLOCK.min(n - st);
        let rest = n - st - len;
        // trail is [..., n − st, n − st].
        let top = band(rw, trail, 0, len, false)?;
        let d = band(rw, top, 0, len, true)?;
        let (ljj, bad) = factor(rw, d, len)?;
        nan = Some(match nan {
            None => bad,
            Some(x) => rw.op(Opcode::Or, &[x, bad])?,
        });
        let mut parts = Vec::new();
        if st > 0 {
            let mut zd = dims.clone();
            zd[r - 2] = st;
            zd[r - 1] = len;
            let z = rw.fconst(T::F32, 0.0)?;
            parts.push(rw.splat(z, &zd)?);
        }
        parts.push(ljj);
        if rest > 0 {
            // Panel P = trail[len.., ..len]; L_panel = P · L_jj⁻ᵀ, i.e. L_jj · L_panelᵀ = Pᵀ.
            let below = band(rw, trail, len, rest, false)?;
            let p = band(rw, below, 0, len, true)?;
            let pt = transpose2(rw, p)?;
            let xt = substitute(rw, ljj, pt, len, true, false)?;
            let lp = transpose2(rw, xt)?;
            parts.push(lp);
            let t2 = band(rw, below, len, rest, true)?;
            let upd = matmul(rw, lp, lp, true)?;
            trail = rw.op(Opcode::Subtract, &[t2, upd])?;
        }
        blocks.push(if parts.len() == 1 {
            parts[0]
        } else {
            rw.concat(&parts, r as i64 - 2)?
        });
        st += len;
    }
    let l = if blocks.len() == 1 {
        blocks[0]
    } else {
        rw.concat(&blocks, r as i64 - 1)?
    };
    Ok((l, nan.expect("n > 0")))
}

impl OpExpander for LinalgExpander {
    fn matches(&self, i: &Instruction) -> bool {
        matches!(i.opcode, Opcode::TriangularSolve | Opcode::Cholesky)
    }

    fn expand(&self, rw: &mut Rw<'_>, h: InstId) -> CResult<Option<InstId>> {
        let i = rw.m.comps[rw.c].insts[h].clone();
        match i.opcode {
            Opcode::TriangularSolve => solve(rw, &i),
            Opcode::Cholesky => cholesky(rw, &i),
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(g: &mut u64) -> f32 {
        *g = g
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*g >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    /// A `[b, n, n]` batch of diagonally dominant (so well-conditioned, SPD after
    /// symmetrizing) matrices.
    fn matrices(b: usize, n: usize, g: &mut u64) -> Vec<f32> {
        let mut v = Vec::new();
        for _ in 0..b {
            let x: Vec<f32> = (0..n * n).map(|_| lcg(g)).collect();
            for i in 0..n {
                for j in 0..n {
                    let s = x[i * n + j] + x[j * n + i];
                    v.push(if i == j { s + 2.0 * n as f32 } else { s });
                }
            }
        }
        v
    }

    fn check(text: &str, args: Vec<hlo::Literal>) {
        let (m, x) = crate::passes::testing::expand(text, &[&LinalgExpander]);
        assert!(!x
            .entry()
            .insts
            .values()
            .any(|i| matches!(i.opcode, Opcode::TriangularSolve | Opcode::Cholesky)));
        let (want, have) = crate::passes::testing::eval_both(&m, &x, &args);
        crate::passes::testing::assert_matches(eval::case::Check::Close, 1e-5, &want, &have);
    }

    #[test]
    fn every_triangular_solve_option_matches_the_evaluator() {
        let mut g = 3u64;
        for left in [true, false] {
            for lower in [true, false] {
                for tr in ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"] {
                    for unit in [false, true] {
                        let bd = if left { "2,5,3" } else { "2,3,5" };
                        let text = format!(
                            "HloModule t\n\nENTRY main {{\n  a = f32[2,5,5]{{2,1,0}} parameter(0)\n  \
                             b = f32[{bd}]{{2,1,0}} parameter(1)\n  ROOT x = f32[{bd}]{{2,1,0}} \
                             triangular-solve(a, b), left_side={left}, lower={lower}, \
                             unit_diagonal={unit}, transpose_a={tr}\n}}\n"
                        );
                        let a = matrices(2, 5, &mut g);
                        let b: Vec<f32> = (0..30).map(|_| lcg(&mut g)).collect();
                        let bdims = if left { vec![2, 5, 3] } else { vec![2, 3, 5] };
                        check(
                            &text,
                            vec![
                                hlo::Literal::array(vec![2, 5, 5], hlo::ArrayData::F32(a)),
                                hlo::Literal::array(bdims, hlo::ArrayData::F32(b)),
                            ],
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn blocked_triangular_solve_matches_the_evaluator() {
        let mut g = 11u64;
        for (left, lower, tr) in [
            (true, true, "NO_TRANSPOSE"),
            (false, true, "TRANSPOSE"),
            (true, false, "ADJOINT"),
        ] {
            let bd = if left { "2,70,3" } else { "2,3,70" };
            let text = format!(
                "HloModule t\n\nENTRY main {{\n  a = f32[2,70,70]{{2,1,0}} parameter(0)\n  \
                 b = f32[{bd}]{{2,1,0}} parameter(1)\n  ROOT x = f32[{bd}]{{2,1,0}} \
                 triangular-solve(a, b), left_side={left}, lower={lower}, transpose_a={tr}\n}}\n"
            );
            let a = matrices(2, 70, &mut g);
            let b: Vec<f32> = (0..420).map(|_| lcg(&mut g)).collect();
            let bdims = if left { vec![2, 70, 3] } else { vec![2, 3, 70] };
            check(
                &text,
                vec![
                    hlo::Literal::array(vec![2, 70, 70], hlo::ArrayData::F32(a)),
                    hlo::Literal::array(bdims, hlo::ArrayData::F32(b)),
                ],
            );
        }
    }

    #[test]
    fn blocked_cholesky_matches_the_evaluator() {
        let mut g = 13u64;
        for lower in [true, false] {
            let text = format!(
                "HloModule c\n\nENTRY main {{\n  a = f32[2,75,75]{{2,1,0}} parameter(0)\n  \
                 ROOT l = f32[2,75,75]{{2,1,0}} cholesky(a), lower={lower}\n}}\n"
            );
            let a = matrices(2, 75, &mut g);
            check(
                &text,
                vec![hlo::Literal::array(vec![2, 75, 75], hlo::ArrayData::F32(a))],
            );
        }
    }

    #[test]
    fn cholesky_both_triangles_and_a_nan_batch_element_match_the_evaluator() {
        let mut g = 5u64;
        for lower in [true, false] {
            let text = format!(
                "HloModule c\n\nENTRY main {{\n  a = f32[3,6,6]{{2,1,0}} parameter(0)\n  \
                 ROOT l = f32[3,6,6]{{2,1,0}} cholesky(a), lower={lower}\n}}\n"
            );
            let mut a = matrices(3, 6, &mut g);
            // The third matrix is not positive definite: all NaN.
            a[2 * 36] = -50.0;
            check(
                &text,
                vec![hlo::Literal::array(vec![3, 6, 6], hlo::ArrayData::F32(a))],
            );
        }
    }
}
