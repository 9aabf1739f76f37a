//! Complex arithmetic as real planes, and `fft` as matmuls against DFT tables.
//!
//! The VPU and MXU have no complex types, so this pass rewrites every `c64` (`c128`)
//! computation, in every computation of the module (loop bodies and conditions, branches), into
//! pairs of `f32` (`f64`) arrays `(re, im)` of the same dimensions:
//!
//! * a `c64` parameter (or any `c64` value the pass does not compute itself) is split with
//!   `bitcast-convert` to `f32[..., 2]` (free: the same bytes) and two slices; a `c64` value
//!   another op needs (the result tuple, an op the pass does not know) is joined back with a
//!   `concatenate` of the planes as `[..., 1]` columns and a `bitcast-convert`; `c64` constants
//!   are split at compile time;
//! * `complex`, `real`, `imag` pick planes; `add`, `subtract`, `negate` and the data-movement
//!   ops (`reshape`, `transpose`, `broadcast`, `slice`, `reverse`, `concatenate`, `copy`,
//!   `select` on a real predicate) apply to both planes; `multiply` is 4 real multiplies and 2
//!   adds; `divide` is `num_complex`'s `(a·conj b) / |b|²` (the evaluator's); `abs` is
//!   `sqrt(re² + im²)` in f64; `dot` is 4 real dots; `convert` from a real type gives a zero
//!   imaginary plane, and between complex types converts both planes.
//! * a single-operand `reduce` of a complex array with any reducer becomes a variadic reduce of
//!   the two planes whose reducer is a copy of the original one wrapped as `(zr, zi, wr, wi) ->
//!   (real(f(z, w)), imag(f(z, w)))` with `z = complex(zr, zi)`, itself rewritten on planes
//!   (add: two adds; multiply: four multiplies and two adds per tree level).
//! * values that cross a computation's boundary (loop state, branch operands and results,
//!   parameters, roots) stay complex and are split and joined where they are computed on; the
//!   lowering carries them as bytes (`lower/control.rs` copies them as twice as many reals).
//! * `fft` (all four kinds, 1 to 3 dimensions, `c64`/`f32`): each transformed dimension in turn
//!   is moved last (a transpose, none for the last dimension), its planes concatenated to
//!   `[..., 2N]`, multiplied on the MXU by a `[2N, 2K]` table of `cos`/`sin` twiddles computed
//!   at compile time in f64 (`[[C, −S], [S, C]]` forward, `[[C, S], [−S, C]] / N` inverse; RFFT
//!   `[C | −S]` on real input with `K = N/2 + 1`; IRFFT, last, `[w·C; −w·S] / N` with `w` 2 for
//!   the bins that stand for a conjugate pair), then sliced into planes and moved back. RFFT
//!   transforms the last dimension first, IRFFT last, as the spec orders them. The dots ask for
//!   `HIGHEST` precision (6 bf16 passes: f32 accuracy).
//!
//! Cost: per transformed dimension one `[M, 2N]·[2N, 2K]` matmul (`4·M·N·K` MACs, `M` the
//! other elements) instead of an FFT's `O(M·N log N)`: the MXU's throughput makes the dense DFT
//! the right choice for the sizes models use for short transforms (N up to a few hundred),
//! plus two transposes and a concatenate per dimension; the tables are `16·N·K` bytes of
//! constant data each (`c64`; for `c128` the tables are f64 and the dots f64, which
//! `dot-to-vpu` runs on the VPU). Complex ops not listed stay complex and are refused by
//! lowering (`not supported on chip yet: element type c64`); a `c128` `dot` becomes f64 dots
//! (`dot-to-vpu` again).

use super::replace_uses;
use super::rewrite::Rw;
use crate::error::{CResult, CompileError};
use crate::pass::Pass;
use hlo::{
    ArrayData, Attrs, CompId, ElementType as T, FftType, InstId, Literal, Module, Opcode,
    Precision, Shape,
};
use std::collections::HashMap;

/// See the module docs.
pub struct ComplexPlanes;

/// True for `c64` and `c128` arrays.
fn is_c64(s: &Shape) -> bool {
    s.as_array().is_some_and(|a| a.ty.is_complex())
}

/// The plane type of a complex type (`f32` for `c64`, `f64` for `c128`), or the type itself.
fn plane_of(t: T) -> T {
    match t {
        T::C128 => T::F64,
        T::C64 => T::F32,
        t => t,
    }
}

/// The complex type with planes of `t`.
fn complex_of(t: T) -> T {
    if t == T::F64 {
        T::C128
    } else {
        T::C64
    }
}

impl Pass for ComplexPlanes {
    fn name(&self) -> &'static str {
        "complex-planes"
    }

    fn run(&self, m: &mut Module) -> CResult<bool> {
        let mut changed = false;
        // Complex reducers are rewritten from their original form (the loop below rewrites
        // every computation in place, the reducers too).
        let orig = m.comps.clone();
        let comps: Vec<CompId> = m.comps.handles().collect();
        for c in comps {
            changed |= planes_in(m, c, &orig)?;
        }
        Ok(changed)
    }
}

/// Rewrites computation `c` (see the module docs).
fn planes_in(m: &mut Module, c: CompId, orig: &hlo::Arena<hlo::Computation>) -> CResult<bool> {
    let touches = m.comps[c]
        .insts
        .values()
        .any(|i| is_c64(&i.shape) || (i.opcode == Opcode::Fft && i.shape.as_array().is_some()));
    if !touches {
        return Ok(false);
    }
    let Some(order) = m.comps[c].post_order() else {
        return Ok(false);
    };
    let mut planes: HashMap<InstId, (InstId, InstId)> = HashMap::new();
    let mut changed = false;
    for h in order {
        let i = m.comps[c].insts[h].clone();
        let span = i.span;
        let mut rw = Rw::new(m, c, span);
        let Some(r) = rewrite(&mut rw, &i, &mut planes, orig)? else {
            continue;
        };
        changed = true;
        match r {
            Out::Real(new) => {
                replace_uses(&mut m.comps[c], h, new);
            }
            Out::Planes(re, im) => {
                let mut rw = Rw::new(m, c, span);
                let joined = join(&mut rw, re, im)?;
                replace_uses(&mut m.comps[c], h, joined);
                planes.insert(h, (re, im));
                planes.insert(joined, (re, im));
            }
        }
    }
    Ok(changed)
}

enum Out {
    /// A real value replacing the instruction.
    Real(InstId),
    /// The planes of the instruction's complex value.
    Planes(InstId, InstId),
}

/// `c64`/`c128` from planes: stacked along a new last dimension, bitcast.
fn join(rw: &mut Rw<'_>, re: InstId, im: InstId) -> CResult<InstId> {
    let a = rw.arr(re)?;
    let cat = rw.stack(&[re, im], a.dims.len())?;
    rw.bitcast(cat, complex_of(a.ty))
}

/// The planes of a complex value (split through `f32[..., 2]` or `f64[..., 2]`).
fn split(rw: &mut Rw<'_>, z: InstId) -> CResult<(InstId, InstId)> {
    let a = rw.arr(z)?;
    let d = a.dims;
    let f = rw.bitcast(z, plane_of(a.ty))?;
    let r = d.len();
    let mut start = vec![0; r + 1];
    let mut limit = d.clone();
    limit.push(1);
    let re = rw.slice(f, &start, &limit)?;
    start[r] = 1;
    limit[r] = 2;
    let im = rw.slice(f, &start, &limit)?;
    Ok((rw.reshape(re, &d)?, rw.reshape(im, &d)?))
}

fn zeros_like(rw: &mut Rw<'_>, x: InstId) -> CResult<InstId> {
    let a = rw.arr(x)?;
    let z = rw.fconst(a.ty, 0.0)?;
    rw.splat(z, &a.dims)
}

/// The same instruction on real operands with a plane-typed result.
fn clone_real(rw: &mut Rw<'_>, i: &hlo::Instruction, operands: &[InstId]) -> CResult<InstId> {
    let shape = match &i.shape {
        Shape::Array(a) => Shape::Array(a.with_type(plane_of(a.ty))),
        s => s.clone(),
    };
    let mut attrs: Attrs = (*i.attrs).clone();
    attrs.control_predecessors.clear();
    rw.add(i.opcode, operands, attrs, Some(shape))
}

fn rewrite(
    rw: &mut Rw<'_>,
    i: &hlo::Instruction,
    planes: &mut HashMap<InstId, (InstId, InstId)>,
    orig: &hlo::Arena<hlo::Computation>,
) -> CResult<Option<Out>> {
    use Opcode as O;
    let out_c = is_c64(&i.shape);
    let c_ops: Vec<bool> = i.operands.iter().map(|&o| is_c64(rw.shape(o))).collect();
    if !out_c && !c_ops.iter().any(|&b| b) && i.opcode != O::Fft {
        return Ok(None);
    }
    // Planes of operand k (split on demand).
    let mut pl = |rw: &mut Rw<'_>, k: usize| -> CResult<(InstId, InstId)> {
        let o = i.operands[k];
        if let Some(&p) = planes.get(&o) {
            return Ok(p);
        }
        let p = split(rw, o)?;
        planes.insert(o, p);
        Ok(p)
    };
    let op = |rw: &mut Rw<'_>, o: Opcode, a: InstId, b: InstId| rw.op(o, &[a, b]);
    Ok(Some(match i.opcode {
        O::Constant if out_c => {
            let Some(Literal::Array(a)) = i.literal() else {
                return Ok(None);
            };
            let (re, im) = match &a.data {
                ArrayData::C64(v) => (
                    ArrayData::F32(v.iter().map(|z| z.re).collect()),
                    ArrayData::F32(v.iter().map(|z| z.im).collect()),
                ),
                ArrayData::C128(v) => (
                    ArrayData::F64(v.iter().map(|z| z.re).collect()),
                    ArrayData::F64(v.iter().map(|z| z.im).collect()),
                ),
                _ => return Ok(None),
            };
            let re = rw.lit(Literal::array(a.dims.clone(), re))?;
            let im = rw.lit(Literal::array(a.dims.clone(), im))?;
            Out::Planes(re, im)
        }
        O::Complex if out_c => Out::Planes(i.operands[0], i.operands[1]),
        O::Real if c_ops[0] => Out::Real(pl(rw, 0)?.0),
        O::Imag if c_ops[0] => Out::Real(pl(rw, 0)?.1),
        O::Abs if c_ops[0] => {
            // In f64 (c128: the evaluator's `norm`, which scales to avoid overflow, differs
            // only near the f64 range's ends).
            let (re, im) = pl(rw, 0)?;
            let pt = rw.arr(re)?.ty;
            let f64s = |rw: &mut Rw<'_>, x| {
                if pt == T::F64 {
                    Ok(x)
                } else {
                    rw.convert(x, T::F64)
                }
            };
            let (r, m) = (f64s(rw, re)?, f64s(rw, im)?);
            let r2 = op(rw, O::Multiply, r, r)?;
            let m2 = op(rw, O::Multiply, m, m)?;
            let s = op(rw, O::Add, r2, m2)?;
            let q = rw.op(O::Sqrt, &[s])?;
            Out::Real(if pt == T::F64 { q } else { rw.convert(q, pt)? })
        }
        O::Add | O::Subtract if out_c => {
            let ((ar, ai), (br, bi)) = (pl(rw, 0)?, pl(rw, 1)?);
            Out::Planes(op(rw, i.opcode, ar, br)?, op(rw, i.opcode, ai, bi)?)
        }
        O::Negate if out_c => {
            let (ar, ai) = pl(rw, 0)?;
            Out::Planes(rw.op(O::Negate, &[ar])?, rw.op(O::Negate, &[ai])?)
        }
        O::Multiply if out_c => {
            let ((ar, ai), (br, bi)) = (pl(rw, 0)?, pl(rw, 1)?);
            let rr = op(rw, O::Multiply, ar, br)?;
            let ii = op(rw, O::Multiply, ai, bi)?;
            let ri = op(rw, O::Multiply, ar, bi)?;
            let ir = op(rw, O::Multiply, ai, br)?;
            Out::Planes(op(rw, O::Subtract, rr, ii)?, op(rw, O::Add, ri, ir)?)
        }
        O::Divide if out_c => {
            let ((ar, ai), (br, bi)) = (pl(rw, 0)?, pl(rw, 1)?);
            let b2 = op(rw, O::Multiply, br, br)?;
            let c2 = op(rw, O::Multiply, bi, bi)?;
            let n = op(rw, O::Add, b2, c2)?;
            let rr = op(rw, O::Multiply, ar, br)?;
            let ii = op(rw, O::Multiply, ai, bi)?;
            let ir = op(rw, O::Multiply, ai, br)?;
            let ri = op(rw, O::Multiply, ar, bi)?;
            let re = op(rw, O::Add, rr, ii)?;
            let im = op(rw, O::Subtract, ir, ri)?;
            Out::Planes(op(rw, O::Divide, re, n)?, op(rw, O::Divide, im, n)?)
        }
        O::Convert if out_c && !c_ops[0] => {
            let pt = plane_of(i.shape.as_array().map_or(T::C64, |a| a.ty));
            let re = rw.convert(i.operands[0], pt)?;
            let im = zeros_like(rw, re)?;
            Out::Planes(re, im)
        }
        O::Convert | O::Copy if out_c && c_ops[0] => {
            let pt = plane_of(i.shape.as_array().map_or(T::C64, |a| a.ty));
            let (re, im) = pl(rw, 0)?;
            if rw.arr(re)?.ty == pt {
                Out::Planes(re, im)
            } else {
                Out::Planes(rw.convert(re, pt)?, rw.convert(im, pt)?)
            }
        }
        O::Reshape | O::Transpose | O::Broadcast | O::Slice | O::Reverse if out_c && c_ops[0] => {
            let (re, im) = pl(rw, 0)?;
            Out::Planes(clone_real(rw, i, &[re])?, clone_real(rw, i, &[im])?)
        }
        O::Concatenate if out_c && c_ops.iter().all(|&b| b) => {
            let ps: Vec<(InstId, InstId)> = (0..i.operands.len())
                .map(|k| pl(rw, k))
                .collect::<CResult<_>>()?;
            let res: Vec<InstId> = ps.iter().map(|p| p.0).collect();
            let ims: Vec<InstId> = ps.iter().map(|p| p.1).collect();
            Out::Planes(clone_real(rw, i, &res)?, clone_real(rw, i, &ims)?)
        }
        O::Select if out_c && c_ops[1] && c_ops[2] => {
            let p = i.operands[0];
            let ((ar, ai), (br, bi)) = (pl(rw, 1)?, pl(rw, 2)?);
            Out::Planes(
                rw.op(O::Select, &[p, ar, br])?,
                rw.op(O::Select, &[p, ai, bi])?,
            )
        }
        O::Dot if out_c && c_ops[0] && c_ops[1] => {
            let ((ar, ai), (br, bi)) = (pl(rw, 0)?, pl(rw, 1)?);
            let rr = clone_real(rw, i, &[ar, br])?;
            let ii = clone_real(rw, i, &[ai, bi])?;
            let ri = clone_real(rw, i, &[ar, bi])?;
            let ir = clone_real(rw, i, &[ai, br])?;
            Out::Planes(op(rw, O::Subtract, rr, ii)?, op(rw, O::Add, ri, ir)?)
        }
        O::Reduce if out_c && i.operands.len() == 2 && c_ops[0] && c_ops[1] => {
            // One complex operand: a variadic reduce of its planes with the reducer rewritten
            // on planes.
            let hlo::View::Reduce { to_apply: f, .. } = i.view() else {
                return Ok(None);
            };
            let out = i.shape.as_array().cloned().expect("complex array");
            let pt = plane_of(out.ty);
            let ((xr, xi), (ir, ii)) = (pl(rw, 0)?, pl(rw, 1)?);
            let red = plane_reducer(rw.m, &orig[f], pt)?;
            rw.rescan_names();
            let mut attrs: Attrs = (*i.attrs).clone();
            attrs.control_predecessors.clear();
            attrs.to_apply = Some(red);
            let o = Shape::Array(out.with_type(pt));
            let r = rw.add(
                O::Reduce,
                &[xr, xi, ir, ii],
                attrs,
                Some(Shape::Tuple(vec![o.clone(), o])),
            )?;
            let gte = |rw: &mut Rw<'_>, k: i64| {
                let a = Attrs {
                    index: Some(k),
                    ..Default::default()
                };
                rw.add(O::GetTupleElement, &[r], a, None)
            };
            Out::Planes(gte(rw, 0)?, gte(rw, 1)?)
        }
        O::Fft => match fft(rw, i, &mut pl)? {
            Some(o) => o,
            None => return Ok(None),
        },
        _ => return Ok(None),
    }))
}

/// A copy of the complex reducer `f` (`(z, w) -> v` on scalars whose planes are `pt`) as a
/// reducer of planes `(zr, zi, wr, wi) -> (vr, vi)`: `complex` of the parameters, `f`'s body,
/// `real` and `imag` of its root; then rewritten on planes like any computation. Returns it.
fn plane_reducer(m: &mut Module, old: &hlo::Computation, pt: T) -> CResult<CompId> {
    let ct = complex_of(pt);
    let mut names: std::collections::HashSet<String> = m
        .comps
        .values()
        .flat_map(|c| c.insts.values().map(|i| i.name.clone()))
        .collect();
    let mut cnames: std::collections::HashSet<String> =
        m.comps.values().map(|c| c.name.clone()).collect();
    let span = old.span;
    let mut insts: hlo::Arena<hlo::Instruction> = hlo::Arena::new();
    let scalar = |t: T| Shape::Array(hlo::ArrayShape::new(t, &[]));
    let mut mk = |insts: &mut hlo::Arena<hlo::Instruction>,
                  base: &str,
                  opcode: Opcode,
                  shape: Shape,
                  operands: Vec<InstId>,
                  attrs: Attrs| {
        insts.push(hlo::Instruction {
            name: super::fresh_name(&mut names, base),
            opcode,
            shape,
            operands,
            attrs: attrs.into(),
            span,
        })
    };
    let ps: Vec<InstId> = (0..4)
        .map(|k| {
            let a = Attrs {
                parameter_number: Some(k),
                ..Default::default()
            };
            mk(
                &mut insts,
                "p.planes",
                Opcode::Parameter,
                scalar(pt),
                vec![],
                a,
            )
        })
        .collect();
    let z: Vec<InstId> = (0..2)
        .map(|k| {
            let ops = vec![ps[2 * k], ps[2 * k + 1]];
            mk(
                &mut insts,
                "z.planes",
                Opcode::Complex,
                scalar(ct),
                ops,
                Attrs::default(),
            )
        })
        .collect();
    let mut map: HashMap<InstId, InstId> = HashMap::new();
    for h in old.post_order().unwrap_or_default() {
        let i = &old.insts[h];
        if i.opcode == Opcode::Parameter {
            let k = i.parameter_number().unwrap_or(0);
            let Some(&zk) = z.get(k) else {
                return Err(CompileError::Internal(format!(
                    "complex reducer {} has more than two parameters",
                    old.name
                )));
            };
            map.insert(h, zk);
            continue;
        }
        let mut attrs: Attrs = (*i.attrs).clone();
        attrs.control_predecessors.clear();
        let ops = i.operands.iter().map(|o| map[o]).collect();
        let nh = mk(&mut insts, &i.name, i.opcode, i.shape.clone(), ops, attrs);
        map.insert(h, nh);
    }
    let root = map[&old.root];
    let re = mk(
        &mut insts,
        "re.planes",
        Opcode::Real,
        scalar(pt),
        vec![root],
        Attrs::default(),
    );
    let im = mk(
        &mut insts,
        "im.planes",
        Opcode::Imag,
        scalar(pt),
        vec![root],
        Attrs::default(),
    );
    let tuple = Shape::Tuple(vec![scalar(pt), scalar(pt)]);
    let t = mk(
        &mut insts,
        "t.planes",
        Opcode::Tuple,
        tuple,
        vec![re, im],
        Attrs::default(),
    );
    let id = m.comps.push(hlo::Computation {
        name: super::fresh_name(&mut cnames, &format!("{}.planes", old.name)),
        insts,
        root: t,
        span,
    });
    let orig = m.comps.clone();
    planes_in(m, id, &orig)?;
    Ok(id)
}

/// The planes of an operand, by operand number.
type PlanesOf<'a> = dyn FnMut(&mut Rw<'_>, usize) -> CResult<(InstId, InstId)> + 'a;

/// What one transformed dimension computes.
#[derive(Clone, Copy)]
enum Dft {
    /// Complex to complex (`inverse`: with `1/N`).
    C2c { inverse: bool },
    /// Real to the `N/2 + 1` non-negative frequencies.
    R2c,
    /// `K` bins (Hermitian) to `N` real values.
    C2r { k: i64 },
}

/// The `[rows, cols]` table of `kind` for length `n`, row-major f32.
fn table(kind: Dft, n: i64) -> (i64, i64, Vec<f64>) {
    let tw = |a: i64, b: i64| {
        let t = 2.0 * std::f64::consts::PI * ((a * b) % n) as f64 / n as f64;
        (t.cos(), t.sin())
    };
    match kind {
        Dft::C2c { inverse } => {
            let (rows, cols) = (2 * n, 2 * n);
            let s = if inverse { 1.0 / n as f64 } else { 1.0 };
            let mut v = vec![0f64; (rows * cols) as usize];
            for a in 0..n {
                for k in 0..n {
                    let (c, si) = tw(a, k);
                    let (re_im, im_re) = if inverse { (si, -si) } else { (-si, si) };
                    // Row a: the real plane; row n + a: the imaginary plane.
                    v[(a * cols + k) as usize] = c * s;
                    v[(a * cols + n + k) as usize] = re_im * s;
                    v[((n + a) * cols + k) as usize] = im_re * s;
                    v[((n + a) * cols + n + k) as usize] = c * s;
                }
            }
            (rows, cols, v)
        }
        Dft::R2c => {
            let k = n / 2 + 1;
            let (rows, cols) = (n, 2 * k);
            let mut v = vec![0f64; (rows * cols) as usize];
            for a in 0..n {
                for b in 0..k {
                    let (c, si) = tw(a, b);
                    v[(a * cols + b) as usize] = c;
                    v[(a * cols + k + b) as usize] = -si;
                }
            }
            (rows, cols, v)
        }
        Dft::C2r { k } => {
            let (rows, cols) = (2 * k, n);
            let mut v = vec![0f64; (rows * cols) as usize];
            for b in 0..k {
                let w = if b == 0 || (n % 2 == 0 && b == n / 2) {
                    1.0
                } else {
                    2.0
                };
                for a in 0..n {
                    let (c, si) = tw(b, a);
                    v[(b * cols + a) as usize] = w * c / n as f64;
                    v[((k + b) * cols + a) as usize] = -w * si / n as f64;
                }
            }
            (rows, cols, v)
        }
    }
}

/// Transforms dimension `d` (length `n`) of the planes `x` (`(re, Some(im))`, or a real array)
/// with `kind`; returns the result's planes (`im` `None` for a real result).
fn dft_dim(
    rw: &mut Rw<'_>,
    x: (InstId, Option<InstId>),
    d: usize,
    n: i64,
    kind: Dft,
) -> CResult<(InstId, Option<InstId>)> {
    let dims = rw.arr(x.0)?.dims;
    // The planes' type: f32 (c64, on the MXU) or f64 (c128: the dot runs on the VPU).
    let pt = rw.arr(x.0)?.ty;
    let r = dims.len();
    let mut perm: Vec<i64> = (0..r as i64).filter(|&k| k != d as i64).collect();
    perm.push(d as i64);
    let mut inv = vec![0i64; r];
    for (k, &p) in perm.iter().enumerate() {
        inv[p as usize] = k as i64;
    }
    let moved = d + 1 != r;
    let mv = |rw: &mut Rw<'_>, v: InstId, p: &[i64]| -> CResult<InstId> {
        if !moved {
            return Ok(v);
        }
        let attrs = Attrs {
            dimensions: Some(p.to_vec()),
            ..Default::default()
        };
        rw.add(Opcode::Transpose, &[v], attrs, None)
    };
    let re = mv(rw, x.0, &perm)?;
    let lhs = match x.1 {
        Some(im) => {
            let im = mv(rw, im, &perm)?;
            rw.concat(&[re, im], r as i64 - 1)?
        }
        None => re,
    };
    let (rows, cols, v) = table(kind, n);
    if rw.arr(lhs)?.dims[r - 1] != rows {
        return Err(CompileError::Internal(format!(
            "fft: a dimension of {} where the table has {rows} rows",
            rw.arr(lhs)?.dims[r - 1]
        )));
    }
    let data = if pt == T::F64 {
        ArrayData::F64(v)
    } else {
        ArrayData::F32(v.into_iter().map(|x| x as f32).collect())
    };
    let t = rw.lit(Literal::array(vec![rows as usize, cols as usize], data))?;
    let mut od = rw.arr(lhs)?.dims;
    od[r - 1] = cols;
    let attrs = Attrs {
        lhs_contracting_dims: Some(vec![r as i64 - 1]),
        rhs_contracting_dims: Some(vec![0]),
        operand_precision: Some(vec![Precision::Highest, Precision::Highest]),
        ..Default::default()
    };
    let y = rw.add(
        Opcode::Dot,
        &[lhs, t],
        attrs,
        Some(Shape::Array(hlo::ArrayShape::new(pt, &od))),
    )?;
    Ok(match kind {
        Dft::C2r { .. } => (mv(rw, y, &inv)?, None),
        _ => {
            let half = cols / 2;
            let mut start = vec![0; r];
            let mut limit = od.clone();
            limit[r - 1] = half;
            let a = rw.slice(y, &start, &limit)?;
            start[r - 1] = half;
            limit[r - 1] = cols;
            let b = rw.slice(y, &start, &limit)?;
            (mv(rw, a, &inv)?, Some(mv(rw, b, &inv)?))
        }
    })
}

fn fft(rw: &mut Rw<'_>, i: &hlo::Instruction, pl: &mut PlanesOf<'_>) -> CResult<Option<Out>> {
    let hlo::View::Fft {
        fft_type: kind,
        fft_length,
    } = i.view()
    else {
        return Ok(None);
    };
    let xs = rw.arr(i.operands[0])?;
    let r = xs.dims.len();
    let lens = fft_length;
    let l = lens.len();
    if l == 0 || l > 3 || l > r || xs.is_dynamic() || xs.dims.contains(&0) {
        return Ok(None);
    }
    let first = r - l;
    let mut x: (InstId, Option<InstId>);
    match kind {
        FftType::Fft | FftType::Ifft => {
            if !matches!(xs.ty, T::C64 | T::C128) {
                return Ok(None);
            }
            let (re, im) = pl(rw, 0)?;
            x = (re, Some(im));
            let inverse = kind == FftType::Ifft;
            for d in (first..r).rev() {
                x = dft_dim(rw, x, d, lens[d - first], Dft::C2c { inverse })?;
            }
        }
        FftType::Rfft => {
            if !matches!(xs.ty, T::F32 | T::F64) || xs.dims[r - 1] != lens[l - 1] {
                return Ok(None);
            }
            x = dft_dim(rw, (i.operands[0], None), r - 1, lens[l - 1], Dft::R2c)?;
            for d in (first..r - 1).rev() {
                x = dft_dim(rw, x, d, lens[d - first], Dft::C2c { inverse: false })?;
            }
        }
        FftType::Irfft => {
            if !matches!(xs.ty, T::C64 | T::C128) {
                return Ok(None);
            }
            let (re, im) = pl(rw, 0)?;
            x = (re, Some(im));
            for d in first..r - 1 {
                x = dft_dim(rw, x, d, lens[d - first], Dft::C2c { inverse: true })?;
            }
            let k = xs.dims[r - 1];
            x = dft_dim(rw, x, r - 1, lens[l - 1], Dft::C2r { k })?;
        }
    }
    Ok(Some(match x {
        (re, Some(im)) => Out::Planes(re, im),
        (re, None) => Out::Real(re),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, args: Vec<Literal>, tol: f64) {
        let (m, x) = crate::passes::testing::expand(
            text,
            &[&crate::passes::inline_calls::InlineCalls, &ComplexPlanes],
        );
        // Nothing computes on c64 any more but the splits and joins (and what carries them).
        for i in x.entry().insts.values() {
            if is_c64(&i.shape) {
                assert!(
                    matches!(
                        i.opcode,
                        Opcode::Parameter
                            | Opcode::BitcastConvert
                            | Opcode::GetTupleElement
                            | Opcode::While
                            | Opcode::Conditional
                            | Opcode::Tuple
                    ),
                    "{} still computes on c64",
                    i.name
                );
            }
        }
        let (want, have) = crate::passes::testing::eval_both(&m, &x, &args);
        crate::passes::testing::assert_matches(eval::case::Check::Close, tol, &want, &have);
    }

    fn data(n: usize, g: &mut u64) -> Vec<f32> {
        (0..n)
            .map(|_| {
                *g = g
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((*g >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn complex_arithmetic_on_planes_matches_the_evaluator() {
        let text = r#"
HloModule c

ENTRY main {
  re = f32[2,3]{1,0} parameter(0)
  im = f32[2,3]{1,0} parameter(1)
  z = c64[2,3]{1,0} parameter(2)
  w = c64[2,3]{1,0} complex(re, im)
  k = c64[] constant((1.5, -2))
  kb = c64[2,3]{1,0} broadcast(k), dimensions={}
  m = c64[2,3]{1,0} multiply(w, z)
  d = c64[2,3]{1,0} divide(m, kb)
  s = c64[2,3]{1,0} subtract(d, z)
  t = c64[3,2]{1,0} transpose(s), dimensions={1,0}
  dt = c64[2,2]{1,0} dot(z, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  a = f32[2,3]{1,0} abs(s)
  r = f32[2,3]{1,0} real(s)
  ROOT o = (c64[2,2]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}, c64[2,3]{1,0}) tuple(dt, a, r, s)
}
"#;
        let mut g = 1;
        let zc = data(12, &mut g);
        let args = vec![
            Literal::array(vec![2, 3], ArrayData::F32(data(6, &mut g))),
            Literal::array(vec![2, 3], ArrayData::F32(data(6, &mut g))),
            c64(vec![2, 3], &zc),
        ];
        check(text, args, 1e-5);
    }

    fn c64(dims: Vec<usize>, v: &[f32]) -> Literal {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        Literal::Array(hlo::ArrayLiteral {
            dims,
            data: eval::convert::from_le_bytes(T::C64, &bytes).unwrap(),
        })
    }

    #[test]
    fn complex_in_loops_branches_reducers_and_c128_matches_the_evaluator() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/chip/complex_control.hlo"
        ))
        .unwrap();
        let (_, x) = crate::passes::testing::expand(
            &text,
            &[&crate::passes::inline_calls::InlineCalls, &ComplexPlanes],
        );
        // Nothing computes on complex values any more but the splits and joins and what
        // carries them (loop state, branch results).
        for c in x.comps.values() {
            for i in c.insts.values() {
                if is_c64(&i.shape) {
                    assert!(
                        matches!(
                            i.opcode,
                            Opcode::Parameter
                                | Opcode::BitcastConvert
                                | Opcode::GetTupleElement
                                | Opcode::Conditional
                        ),
                        "{} still computes on complex values:\n{x}",
                        i.name
                    );
                }
            }
        }
        let mut g = 5;
        let c128 = |dims: Vec<usize>, v: &[f32]| {
            let bytes: Vec<u8> = v.iter().flat_map(|x| (*x as f64).to_le_bytes()).collect();
            Literal::Array(hlo::ArrayLiteral {
                dims,
                data: eval::convert::from_le_bytes(T::C128, &bytes).unwrap(),
            })
        };
        let args = vec![
            Literal::array(vec![3, 4], ArrayData::F32(data(12, &mut g))),
            Literal::array(vec![3, 4], ArrayData::F32(data(12, &mut g))),
            Literal::array(vec![], ArrayData::Pred(vec![true])),
            c128(vec![3, 4], &data(24, &mut g)),
        ];
        check(&text, args, 1e-5);
    }

    #[test]
    fn every_fft_kind_matches_the_evaluator() {
        let text = r#"
HloModule f

ENTRY main {
  z = c64[2,6,5]{2,1,0} parameter(0)
  x = f32[2,6,5]{2,1,0} parameter(1)
  h = c64[2,6,3]{2,1,0} parameter(2)
  a = c64[2,6,5]{2,1,0} fft(z), fft_type=FFT, fft_length={5}
  b = c64[2,6,5]{2,1,0} fft(z), fft_type=IFFT, fft_length={2,6,5}
  c = c64[2,6,3]{2,1,0} fft(x), fft_type=RFFT, fft_length={6,5}
  d = f32[2,6,5]{2,1,0} fft(h), fft_type=IRFFT, fft_length={6,5}
  e = f32[2,6,4]{2,1,0} fft(h), fft_type=IRFFT, fft_length={4}
  ROOT o = (c64[2,6,5]{2,1,0}, c64[2,6,5]{2,1,0}, c64[2,6,3]{2,1,0}, f32[2,6,5]{2,1,0}, f32[2,6,4]{2,1,0}) tuple(a, b, c, d, e)
}
"#;
        let mut g = 9;
        let args = vec![
            c64(vec![2, 6, 5], &data(120, &mut g)),
            Literal::array(vec![2, 6, 5], ArrayData::F32(data(60, &mut g))),
            c64(vec![2, 6, 3], &data(72, &mut g)),
        ];
        check(text, args, 1e-5);
    }
}
