//! Expands `batch-norm-training`, `batch-norm-inference` and `batch-norm-grad` into reduce,
//! broadcast and elementwise ops (as XLA's `BatchNormExpander`), which the chip runs on the VPU.
//!
//! With `F` the feature dimension, `m` the elements per feature and `b(v)` a per-feature vector
//! broadcast along `F`:
//! * training: `mean = Σx/m`, `xc = x − b(mean)`, `var = Σxc²/m` (two passes: more accurate
//!   than XLA's `E[x²] − E[x]²`), `y = xc · b(rsqrt(var + ε) · scale) + b(offset)`; result
//!   `(y, mean, var)`;
//! * inference: `y = (x − b(mean)) · b(rsqrt(var + ε) · scale) + b(offset)`;
//! * grad: `Σdy` (= grad_offset), `s = Σ dy·xc`, `grad_scale = s · rsqrt(var + ε)`,
//!   `grad_x = b(scale · rsqrt(var + ε)) · (dy − b(Σdy/m) − xc · b(s / (m·(var + ε))))`.
//!
//! bf16 and f16 operands are computed in f32 and rounded once at the end (the evaluator computes
//! in f64; f32 keeps the two within the corpus tolerances).
//!
//! Cost: each `Σ` is one `reduce` (a permute of the reduced dims last, when `F` is not the last
//! dimension, then one cross-lane `vpu.reduce` per feature row); each `b(·)` one `vpu.bcast`
//! (plus a transpose when `F` is not the last dimension); the rest are `n`-element VPU ALU ops:
//! training about 2 reduces + 3 broadcasts + 4 full-size ALU ops, grad 2 reduces + 3 broadcasts
//! + 6 full-size ALU ops, inference 3 broadcasts + 3 full-size ALU ops.

use super::rewrite::{run_expander, OpExpander, Rw};
use crate::error::{CResult, CompileError};
use crate::pass::Pass;
use hlo::{ElementType, InstId, Instruction, Module, Opcode};

/// See the module docs.
pub struct BatchNormExpander;

impl Pass for BatchNormExpander {
    fn name(&self) -> &'static str {
        "batch-norm-expander"
    }
    fn run(&self, m: &mut Module) -> CResult<bool> {
        run_expander(self, m)
    }
}

/// The shapes every formula needs.
struct Ctx {
    dims: Vec<i64>,
    /// The feature dimension.
    f: i64,
    /// The reduced dimensions (all but `f`).
    red: Vec<i64>,
    /// Elements per feature.
    m: f64,
    /// Type the arithmetic runs in.
    ct: ElementType,
    /// The operand's type.
    ty: ElementType,
}

impl Ctx {
    /// Per-feature `v` broadcast to the operand's shape.
    fn b(&self, rw: &mut Rw<'_>, v: InstId) -> CResult<InstId> {
        rw.bcast(v, &self.dims, &[self.f])
    }
    /// `Σ` of a full-shape `x` per feature.
    fn sum(&self, rw: &mut Rw<'_>, x: InstId) -> CResult<InstId> {
        let zero = rw.fconst(self.ct, 0.0)?;
        rw.reduce(x, zero, &self.red, Opcode::Add)
    }
    /// A scalar constant broadcast to `[features]`.
    fn per_feature_const(&self, rw: &mut Rw<'_>, v: f64) -> CResult<InstId> {
        let c = rw.fconst(self.ct, v)?;
        rw.splat(c, &[self.dims[self.f as usize]])
    }
    /// `rsqrt(var + ε)` per feature.
    fn rstd(&self, rw: &mut Rw<'_>, var: InstId, eps: f64) -> CResult<InstId> {
        let e = self.per_feature_const(rw, eps)?;
        let ve = rw.op(Opcode::Add, &[var, e])?;
        rw.op(Opcode::Rsqrt, &[ve])
    }
}

fn ctx(rw: &Rw<'_>, i: &Instruction) -> CResult<Option<Ctx>> {
    let x = rw.arr(i.operands[0])?;
    if x.is_dynamic() {
        return Ok(None);
    }
    let ty = x.ty;
    let ct = match ty {
        ElementType::F32 | ElementType::F64 => ty,
        ElementType::F16 | ElementType::BF16 => ElementType::F32,
        _ => return Ok(None),
    };
    let hlo::View::BatchNorm {
        feature_index: f, ..
    } = i.view()
    else {
        return Ok(None);
    };
    let dims = x.dims.clone();
    if f >= dims.len() {
        return Err(CompileError::Internal(
            "batch norm: feature_index out of range".into(),
        ));
    }
    let red: Vec<i64> = (0..dims.len() as i64).filter(|&d| d != f as i64).collect();
    let feats = dims[f].max(1);
    let m = (dims.iter().product::<i64>() / feats) as f64;
    Ok(Some(Ctx {
        dims,
        f: f as i64,
        red,
        m,
        ct,
        ty,
    }))
}

impl OpExpander for BatchNormExpander {
    fn matches(&self, i: &Instruction) -> bool {
        matches!(
            i.opcode,
            Opcode::BatchNormTraining | Opcode::BatchNormInference | Opcode::BatchNormGrad
        )
    }

    fn expand(&self, rw: &mut Rw<'_>, h: InstId) -> CResult<Option<InstId>> {
        let i = rw.m.comps[rw.c].insts[h].clone();
        let Some(cx) = ctx(rw, &i)? else {
            return Ok(None);
        };
        let hlo::View::BatchNorm { epsilon, .. } = i.view() else {
            return Ok(None);
        };
        let eps = epsilon as f64;
        let ops: Vec<InstId> = i
            .operands
            .iter()
            .map(|&o| rw.convert(o, cx.ct))
            .collect::<CResult<_>>()?;
        let inv_m = |rw: &mut Rw<'_>| cx.per_feature_const(rw, 1.0 / cx.m.max(1.0));
        let out = |rw: &mut Rw<'_>, v: InstId| rw.convert(v, cx.ty);
        Ok(Some(match i.opcode {
            Opcode::BatchNormTraining => {
                let [x, scale, offset] = ops[..] else {
                    return Ok(None);
                };
                let inv = inv_m(rw)?;
                let s = cx.sum(rw, x)?;
                let mean = rw.op(Opcode::Multiply, &[s, inv])?;
                let bm = cx.b(rw, mean)?;
                let xc = rw.op(Opcode::Subtract, &[x, bm])?;
                let sq = rw.op(Opcode::Multiply, &[xc, xc])?;
                let ss = cx.sum(rw, sq)?;
                let var = rw.op(Opcode::Multiply, &[ss, inv])?;
                let rstd = cx.rstd(rw, var, eps)?;
                let k = rw.op(Opcode::Multiply, &[rstd, scale])?;
                let bk = cx.b(rw, k)?;
                let bo = cx.b(rw, offset)?;
                let t = rw.op(Opcode::Multiply, &[xc, bk])?;
                let y = rw.op(Opcode::Add, &[t, bo])?;
                let (y, mean, var) = (out(rw, y)?, out(rw, mean)?, out(rw, var)?);
                rw.op(Opcode::Tuple, &[y, mean, var])?
            }
            Opcode::BatchNormInference => {
                let [x, scale, offset, mean, var] = ops[..] else {
                    return Ok(None);
                };
                let rstd = cx.rstd(rw, var, eps)?;
                let k = rw.op(Opcode::Multiply, &[rstd, scale])?;
                let bm = cx.b(rw, mean)?;
                let bk = cx.b(rw, k)?;
                let bo = cx.b(rw, offset)?;
                let xc = rw.op(Opcode::Subtract, &[x, bm])?;
                let t = rw.op(Opcode::Multiply, &[xc, bk])?;
                let y = rw.op(Opcode::Add, &[t, bo])?;
                out(rw, y)?
            }
            Opcode::BatchNormGrad => {
                let [x, scale, mean, var, dy] = ops[..] else {
                    return Ok(None);
                };
                let inv = inv_m(rw)?;
                let bm = cx.b(rw, mean)?;
                let xc = rw.op(Opcode::Subtract, &[x, bm])?;
                let goff = cx.sum(rw, dy)?;
                let dxc = rw.op(Opcode::Multiply, &[dy, xc])?;
                let s = cx.sum(rw, dxc)?;
                let rstd = cx.rstd(rw, var, eps)?;
                let gscale = rw.op(Opcode::Multiply, &[s, rstd])?;
                // s / (m·(var + ε)) = s · inv_m · rstd².
                let r2 = rw.op(Opcode::Multiply, &[rstd, rstd])?;
                let sm = rw.op(Opcode::Multiply, &[s, inv])?;
                let c2 = rw.op(Opcode::Multiply, &[sm, r2])?;
                let mdy = rw.op(Opcode::Multiply, &[goff, inv])?;
                let k = rw.op(Opcode::Multiply, &[scale, rstd])?;
                let (bc2, bmdy, bk) = (cx.b(rw, c2)?, cx.b(rw, mdy)?, cx.b(rw, k)?);
                let t1 = rw.op(Opcode::Subtract, &[dy, bmdy])?;
                let t2 = rw.op(Opcode::Multiply, &[xc, bc2])?;
                let t3 = rw.op(Opcode::Subtract, &[t1, t2])?;
                let gx = rw.op(Opcode::Multiply, &[bk, t3])?;
                let (gx, gscale, goff) = (out(rw, gx)?, out(rw, gscale)?, out(rw, goff)?);
                rw.op(Opcode::Tuple, &[gx, gscale, goff])?
            }
            _ => return Ok(None),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"
HloModule bn

ENTRY main {
  x = f32[2,3,4]{2,1,0} parameter(0)
  scale = f32[3]{0} parameter(1)
  offset = f32[3]{0} parameter(2)
  mean = f32[3]{0} parameter(3)
  var = f32[3]{0} parameter(4)
  dy = f32[2,3,4]{2,1,0} parameter(5)
  t = (f32[2,3,4]{2,1,0}, f32[3]{0}, f32[3]{0}) batch-norm-training(x, scale, offset), epsilon=0.001, feature_index=1
  i = f32[2,3,4]{2,1,0} batch-norm-inference(x, scale, offset, mean, var), epsilon=0.001, feature_index=1
  g = (f32[2,3,4]{2,1,0}, f32[3]{0}, f32[3]{0}) batch-norm-grad(x, scale, mean, var, dy), epsilon=0.001, feature_index=1
  ROOT r = ((f32[2,3,4]{2,1,0}, f32[3]{0}, f32[3]{0}), f32[2,3,4]{2,1,0}, (f32[2,3,4]{2,1,0}, f32[3]{0}, f32[3]{0})) tuple(t, i, g)
}
"#;

    #[test]
    fn expands_every_batch_norm_into_ops_that_compute_the_same() {
        let (m, x) = crate::passes::testing::expand(TEXT, &[&BatchNormExpander]);
        let left: Vec<Opcode> = x.entry().insts.values().map(|i| i.opcode).collect();
        assert!(!left.iter().any(|o| matches!(
            o,
            Opcode::BatchNormTraining | Opcode::BatchNormInference | Opcode::BatchNormGrad
        )));
        assert!(left.contains(&Opcode::Reduce) && left.contains(&Opcode::Rsqrt));
        let mut g = 7u64;
        let args: Vec<hlo::Literal> = m
            .entry()
            .program_shape()
            .params
            .iter()
            .map(|s| {
                let n = s.as_array().unwrap().element_count().unwrap() as usize;
                let v: Vec<f32> = (0..n)
                    .map(|_| {
                        g = g
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        ((g >> 40) as f32 / (1u64 << 24) as f32) * 2.0 + 0.1
                    })
                    .collect();
                hlo::Literal::array(s.as_array().unwrap().udims(), hlo::ArrayData::F32(v))
            })
            .collect();
        let (want, have) = crate::passes::testing::eval_both(&m, &x, &args);
        crate::passes::testing::assert_matches(eval::case::Check::Close, 1e-5, &want, &have);
    }
}
