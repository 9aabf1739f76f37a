//! Control flow on the sequencer: `while` and `conditional`.
//!
//! A loop's state lives in buffers of its own (the `while`'s result): the init value is copied
//! in, the condition computation reads them, its `pred` is loaded into a scalar register
//! (`s.ld`, after the write that produced it) and tested with a branch; the body computation
//! reads them and its result is copied back. A `conditional` loads its predicate or branch
//! index the same way (an index out of range runs the last branch, as XLA specifies) and each
//! branch copies its result into the conditional's buffers. Every block boundary (loop head,
//! back edge, exit, branch targets, join) is a `fence`, so the emitter's straight-line ordering
//! stays valid on every path; this costs a drain per iteration, which a later pass can relax.

use super::emit::{Access, Queue};
use super::{Buf, Lowerer, Val};
use crate::error::{CResult, CompileError};
use hlo::{ElementType, InstId};
use isa::{DType, Inst, SReg, Target};

/// Scalar register holding a loaded predicate or index.
const COND_REG: SReg = SReg(30);
/// Scratch register for branch-index constants.
const TMP_REG: SReg = SReg(29);

fn leaves(v: &Val, out: &mut Vec<Buf>) -> CResult<()> {
    match v {
        Val::Array(b) => out.push(b.clone()),
        Val::Tuple(vs) => {
            for x in vs {
                leaves(x, out)?;
            }
        }
        Val::Token => {}
        Val::Hbm(_) => {
            return Err(CompileError::Internal(
                "HBM-resident value in control flow".into(),
            ))
        }
    }
    Ok(())
}

impl Lowerer<'_> {
    /// Copies every array leaf of `src` into the matching leaf of `dst` (through temporaries
    /// when a source buffer is also a destination, as when a body swaps its state).
    fn copy_val(&mut self, dst: &Val, src: &Val) -> CResult<()> {
        let (mut d, mut s) = (Vec::new(), Vec::new());
        leaves(dst, &mut d)?;
        leaves(src, &mut s)?;
        let clash = s.iter().any(|x| d.iter().any(|y| y.addr == x.addr))
            && s.iter().zip(&d).any(|(x, y)| x.addr != y.addr);
        let s: Vec<Buf> = if clash {
            let mut t = Vec::new();
            for x in &s {
                let tmp = self.tmp(x.ty, x.dims.clone())?;
                self.mov(&tmp, x)?;
                t.push(tmp);
            }
            t
        } else {
            s
        };
        for (x, y) in s.iter().zip(&d) {
            if x.addr != y.addr {
                self.mov(y, x)?;
            }
        }
        Ok(())
    }

    fn mov(&mut self, dst: &Buf, src: &Buf) -> CResult<()> {
        if dst.ty.is_complex() {
            // Carried complex values (the complex-planes pass computes on planes): the bytes
            // as twice as many real parts.
            let ty = if dst.ty == ElementType::C128 {
                ElementType::F64
            } else {
                ElementType::F32
            };
            let n = 2 * dst.elems() as usize;
            let d = Buf {
                ty,
                dims: vec![n],
                ..dst.clone()
            };
            let s = Buf {
                ty,
                dims: vec![n],
                ..src.clone()
            };
            return self.mov(&d, &s);
        }
        let t = self.vty(dst.ty)?;
        let a = src.with_dims(dst.dims.clone());
        self.vpu_map(dst, &[&a], &mut |d, s, n| Inst::VMov {
            dst: d,
            a: s[0],
            n,
            t,
            pat: None,
            wait: None,
            signal: None,
        });
        Ok(())
    }

    /// Loads the scalar in `b` (pred or integer) into [`COND_REG`].
    fn load_scalar(&mut self, b: &Buf) -> CResult<()> {
        let t = match b.ty {
            ElementType::Pred => DType::Pred,
            t if t.is_integer() => self.vty(t)?,
            t => return Err(self.unsupported(format!("a {t} branch selector"))),
        };
        self.e
            .seq_read(Access::vmem(b.addr, b.ty.byte_size() as u64));
        let addr = self.e.vaddr(b.addr);
        self.e.seq(Inst::SLd {
            rd: COND_REG,
            addr,
            t,
        });
        Ok(())
    }
}

fn branch(l: &mut Lowerer<'_>, i: Inst, to: isa::Label) {
    l.e.b.emit_branch(i, to);
}

/// Lowers `while`.
pub fn lower_while(l: &mut Lowerer<'_>, h: InstId) -> CResult<Val> {
    let inst = &l.comp().insts[h];
    let hlo::View::While {
        condition: cond,
        body,
    } = inst.view()
    else {
        return Err(CompileError::Internal(
            "while without condition and body".into(),
        ));
    };
    let init = l.val(inst.operands[0])?;
    let state = l.like(h, &init)?;
    l.copy_val(&state, &init)?;
    let top = l.e.b.new_label();
    let exit = l.e.b.new_label();
    l.e.fence();
    l.e.b.bind(top);
    l.e.join();
    // Collectives in flight from before the loop complete at their own done, outside it.
    let base = l.in_flight.len();
    let (p, saved) = l.lower_sub(cond, vec![state.clone()])?;
    l.drain_async_from(base);
    let Val::Array(pb) = p else {
        return Err(l.unsupported("a while condition that does not return an array"));
    };
    l.load_scalar(&pb)?;
    l.end_sub(saved);
    // The exit path skips the body: nothing of the condition may still be pending there, or a
    // signal the body's wait would consume is left over on exit.
    l.e.fence();
    branch(
        l,
        Inst::Beq {
            ra: COND_REG,
            rb: SReg(0),
            target: Target(0),
        },
        exit,
    );
    let (r, saved) = l.lower_sub(body, vec![state.clone()])?;
    // An asynchronous collective started in the body completes in the same iteration (its
    // done is in the body; nothing is left in flight across the back edge).
    l.drain_async_from(base);
    l.copy_val(&state, &r)?;
    l.end_sub(saved);
    l.e.fence();
    branch(l, Inst::Jmp { target: Target(0) }, top);
    l.e.b.bind(exit);
    l.e.fence();
    l.e.join();
    Ok(state)
}

/// Lowers `conditional` (predicate and branch-index forms).
pub fn lower_conditional(l: &mut Lowerer<'_>, h: InstId) -> CResult<Val> {
    let inst = &l.comp().insts[h];
    let hlo::View::Conditional(bs) = inst.view() else {
        return Err(CompileError::Internal(
            "conditional without branches".into(),
        ));
    };
    let branches = bs.to_vec();
    let pred_form = matches!(bs, hlo::Branches::Pred { .. });
    let sel = l.arr(inst.operands[0])?;
    let args: Vec<Val> = inst.operands[1..]
        .iter()
        .map(|&o| l.val(o))
        .collect::<CResult<_>>()?;
    // The result buffers, shaped like the instruction.
    let out = shape_val(l, h, &inst.shape.clone())?;
    l.load_scalar(&sel)?;
    l.e.fence();
    let end = l.e.b.new_label();
    let labels: Vec<isa::Label> = branches.iter().map(|_| l.e.b.new_label()).collect();
    let last = branches.len() - 1;
    if pred_form {
        // true (≠ 0) → branch 0, else branch 1.
        branch(
            l,
            Inst::Beq {
                ra: COND_REG,
                rb: SReg(0),
                target: Target(0),
            },
            labels[1],
        );
        branch(l, Inst::Jmp { target: Target(0) }, labels[0]);
    } else {
        for (i, &lab) in labels.iter().enumerate().take(last) {
            l.e.seq(Inst::SLi {
                rd: TMP_REG,
                imm: i as i64,
            });
            branch(
                l,
                Inst::Beq {
                    ra: COND_REG,
                    rb: TMP_REG,
                    target: Target(0),
                },
                lab,
            );
        }
        branch(l, Inst::Jmp { target: Target(0) }, labels[last]);
    }
    // Collectives in flight from before complete at their own done, after the branches.
    let base = l.in_flight.len();
    for (k, &comp) in branches.iter().enumerate() {
        l.e.b.bind(labels[k]);
        l.e.join();
        let a = args.get(k).cloned().unwrap_or(Val::Token);
        let (r, saved) = l.lower_sub(comp, vec![a])?;
        l.drain_async_from(base);
        l.copy_val(&out, &r)?;
        l.end_sub(saved);
        l.e.fence();
        branch(l, Inst::Jmp { target: Target(0) }, end);
    }
    l.e.b.bind(end);
    l.e.join();
    let _ = Queue::Vpu;
    Ok(out)
}

fn shape_val(l: &mut Lowerer<'_>, h: InstId, s: &hlo::Shape) -> CResult<Val> {
    Ok(match s {
        hlo::Shape::Array(a) => {
            if a.is_dynamic() {
                return Err(l.unsupported("dynamic dimensions"));
            }
            Val::Array(l.new_buf(h, a.ty, a.udims())?)
        }
        hlo::Shape::Tuple(ts) => Val::Tuple(
            ts.iter()
                .map(|t| shape_val(l, h, t))
                .collect::<CResult<_>>()?,
        ),
        hlo::Shape::Token => Val::Token,
    })
}
