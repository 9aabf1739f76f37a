//! Whole-array VPU helpers shared by the sort, gather, scatter and variadic-reduce lowerings,
//! and [`apply_comp`]: a scalar computation (a sort comparator, a reducer) applied element-wise
//! to flat arrays, one VPU instruction per HLO instruction of the computation (per
//! [`VPU_CHUNK`](super::VPU_CHUNK) elements).
//!
//! Compare with `type=TOTALORDER` on floats maps each operand to a sortable integer on the VPU
//! (`x ^ ((x >>arith (bits-1)) & MAX)` on the bits seen as a signed integer of the same width:
//! -NaN < -inf < … < -0 < +0 < … < +inf < +NaN) and compares those as signed integers: five
//! ALU instructions per operand (two of them splats) plus the compare.
//!
//! Every buffer here is a temporary of the instruction being lowered; loops (the sorting
//! network, the reduction tree) hand back what they no longer need with [`Lowerer::release`],
//! so VMEM use stays a few arrays whatever the number of steps.

use super::elementwise::{binary, check_binary_type, check_unary_type, chunks, cmp_op, unary};
use super::emit::{Access, Queue};
use super::{Buf, Lowerer};
use crate::error::{CResult, CompileError};
use hlo::{ComparisonDirection, ComparisonType, ElementType, InstId, Opcode};
use isa::{Inst, SReg};
use std::collections::HashMap;

/// The scalar register the helpers load constants into (free between instructions).
pub(crate) const R_CONST: SReg = SReg(29);

/// The signed integer type of a float's width (for total-order keys).
fn int_of(ty: ElementType) -> ElementType {
    match ty.byte_size() {
        2 => ElementType::S16,
        8 => ElementType::S64,
        _ => ElementType::S32,
    }
}

impl Lowerer<'_> {
    /// A temporary of `n` copies of the constant whose bit pattern is `bits` (`s.li` +
    /// `vpu.splat`).
    pub(crate) fn vconst(&mut self, ty: ElementType, bits: u64, n: u64) -> CResult<Buf> {
        let t = self.vty(ty)?;
        let out = self.tmp(ty, vec![n as usize])?;
        self.e.seq(Inst::SLi {
            rd: R_CONST,
            imm: bits as i64,
        });
        let w = ty.byte_size() as u64;
        for (s, k) in chunks(n) {
            let dst = self.e.vaddr(out.addr + s * w);
            self.e.unit(
                Inst::VSplat {
                    dst,
                    src: R_CONST,
                    n: k,
                    t,
                    wait: None,
                    signal: None,
                },
                Queue::Vpu,
                &[],
                &[Access::vmem(out.addr + s * w, k as u64 * w)],
            );
        }
        Ok(out)
    }

    /// A temporary `[0, 1, …]` pattern: `out[i] = (i / div) mod modulo` (`vpu.iota`).
    pub(crate) fn viota(&mut self, ty: ElementType, n: u64, div: u64, modulo: u64) -> CResult<Buf> {
        let out = self.tmp(ty, vec![n as usize])?;
        self.iota_into(&out, div, modulo)?;
        Ok(out)
    }

    /// `a op b` element-wise into a new temporary of `a`'s type.
    pub(crate) fn vop2(&mut self, op: Opcode, a: &Buf, b: &Buf) -> CResult<Buf> {
        let out = self.tmp(a.ty, a.dims.clone())?;
        self.binop(op, &out, a, b)?;
        Ok(out)
    }

    /// `a op c` with `c` a constant of `a`'s type given by its bits.
    pub(crate) fn vop2c(&mut self, op: Opcode, a: &Buf, c: u64) -> CResult<Buf> {
        let k = self.vconst(a.ty, c, a.elems())?;
        let out = self.vop2(op, a, &k)?;
        self.release(&k);
        Ok(out)
    }

    /// `!p` on a pred (or integer) array.
    pub(crate) fn vnot(&mut self, p: &Buf) -> CResult<Buf> {
        let t = self.vty(p.ty)?;
        let out = self.tmp(p.ty, p.dims.clone())?;
        self.vpu_map(&out, &[p], &mut |d, s, n| Inst::VNot {
            dst: d,
            a: s[0],
            n,
            t,
            pat: None,
            wait: None,
            signal: None,
        });
        Ok(out)
    }

    /// `convert(a)` to `ty`.
    pub(crate) fn vcvt(&mut self, a: &Buf, ty: ElementType) -> CResult<Buf> {
        let out = self.tmp(ty, a.dims.clone())?;
        self.convert(&out, a)?;
        Ok(out)
    }

    /// `p ? a : b` element-wise.
    pub(crate) fn vsel(&mut self, p: &Buf, a: &Buf, b: &Buf) -> CResult<Buf> {
        let out = self.tmp(a.ty, a.dims.clone())?;
        self.select_into(&out, p, a, b)?;
        Ok(out)
    }

    /// `out = p ? a : b` element-wise (`p`, `a`, `b` and `out` of one element count).
    pub(crate) fn select_into(&mut self, out: &Buf, p: &Buf, a: &Buf, b: &Buf) -> CResult<()> {
        let t = self.vty(a.ty)?;
        self.vpu_map(out, &[p, a, b], &mut |d, s, n| Inst::VSelect {
            dst: d,
            p: s[0],
            a: s[1],
            b: s[2],
            n,
            t,
            wait: None,
            signal: None,
        });
        Ok(())
    }

    /// The total-order key of a float array (a signed integer array of the same width).
    pub(crate) fn total_order_key(&mut self, x: &Buf) -> CResult<Buf> {
        let ity = int_of(x.ty);
        let bits = ity.byte_size() as u64 * 8;
        let xi = Buf {
            ty: ity,
            ..x.clone()
        };
        let s = self.vop2c(Opcode::ShiftRightArithmetic, &xi, bits - 1)?;
        let m = self.vop2c(Opcode::And, &s, (1u64 << (bits - 1)) - 1)?;
        self.release(&s);
        let k = self.vop2(Opcode::Xor, &xi, &m)?;
        self.release(&m);
        Ok(k)
    }

    /// `a dir b` element-wise into a new pred temporary; `total` compares floats in total
    /// order.
    pub(crate) fn vcmp(
        &mut self,
        dir: ComparisonDirection,
        a: &Buf,
        b: &Buf,
        total: bool,
    ) -> CResult<Buf> {
        let out = self.tmp(ElementType::Pred, a.dims.clone())?;
        self.cmp_into(&out, dir, a, b, total)?;
        Ok(out)
    }

    /// `dst = a dir b` (pred), as [`Self::vcmp`].
    pub(crate) fn cmp_into(
        &mut self,
        dst: &Buf,
        dir: ComparisonDirection,
        a: &Buf,
        b: &Buf,
        total: bool,
    ) -> CResult<()> {
        let cmp = cmp_op(dir);
        if total && a.ty.is_float() {
            let ka = self.total_order_key(a)?;
            let kb = self.total_order_key(b)?;
            let t = self.vty(ka.ty)?;
            self.vpu_map(dst, &[&ka, &kb], &mut |d, s, n| Inst::VCmp {
                dst: d,
                a: s[0],
                b: s[1],
                n,
                t,
                cmp,
                pat: None,
                wait: None,
                signal: None,
            });
            self.release(&kb);
            self.release(&ka);
            return Ok(());
        }
        let t = self.vty(a.ty)?;
        self.vpu_map(dst, &[a, b], &mut |d, s, n| Inst::VCmp {
            dst: d,
            a: s[0],
            b: s[1],
            n,
            t,
            cmp,
            pat: None,
            wait: None,
            signal: None,
        });
        Ok(())
    }

    /// `dst[i] = src[idx[i]]` with an index array computed on chip (u32 element indices).
    pub(crate) fn gather_dyn(&mut self, dst: &Buf, src: &Buf, idx: &Buf) -> CResult<()> {
        let t = self.vty(dst.ty)?;
        let w = dst.ty.byte_size() as u64;
        for (s, n) in chunks(dst.elems()) {
            let d = self.e.vaddr(dst.addr + s * w);
            let a = self.e.vaddr(src.addr);
            let ix = self.e.vaddr(idx.addr + s * 4);
            self.e.unit(
                Inst::VGather {
                    dst: d,
                    a,
                    idx: ix,
                    n,
                    t,
                    wait: None,
                    signal: None,
                },
                Queue::Vpu,
                &[src.access(), Access::vmem(idx.addr + s * 4, n as u64 * 4)],
                &[Access::vmem(dst.addr + s * w, n as u64 * w)],
            );
        }
        Ok(())
    }

    /// A new temporary `src[idx[i]]` of `idx`'s length.
    pub(crate) fn vgather(&mut self, src: &Buf, idx: &Buf) -> CResult<Buf> {
        let out = self.tmp(src.ty, vec![idx.elems() as usize])?;
        self.gather_dyn(&out, src, idx)?;
        Ok(out)
    }

    /// A new temporary `src[table[i]]` with a compile-time table.
    pub(crate) fn vgather_table(&mut self, src: &Buf, table: &[u32]) -> CResult<Buf> {
        let out = self.tmp(src.ty, vec![table.len()])?;
        if !table.is_empty() {
            self.gather_table(&out, src, table)?;
        }
        Ok(out)
    }

    /// A copy of `src` into a new temporary.
    pub(crate) fn vcopy(&mut self, src: &Buf) -> CResult<Buf> {
        let out = self.tmp(src.ty, src.dims.clone())?;
        self.copy_into(&out, src)?;
        Ok(out)
    }

    /// `dst = src` (same element count).
    pub(crate) fn copy_into(&mut self, dst: &Buf, src: &Buf) -> CResult<()> {
        let t = self.vty(src.ty)?;
        self.vpu_map(dst, &[src], &mut |d, s, n| Inst::VMov {
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

    /// Releases `b` unless it is (the allocation of) one of `keep`.
    pub(crate) fn release_unless(&mut self, b: &Buf, keep: &[Buf]) {
        if !keep.iter().any(|k| k.alloc == b.alloc) {
            self.release(b);
        }
    }
}

/// `a dir c` with `c` a constant of `a`'s type (by its bits), a new pred temporary.
pub(crate) fn vcmpc(
    l: &mut Lowerer<'_>,
    dir: ComparisonDirection,
    a: &Buf,
    c: u64,
) -> CResult<Buf> {
    let k = l.vconst(a.ty, c, a.elems())?;
    let r = l.vcmp(dir, a, &k, false)?;
    l.release(&k);
    Ok(r)
}

/// Applies the scalar computation `comp` element-wise to the flat arrays `args` (one per
/// parameter, all of one length) and returns its result leaves (a tuple root gives several).
/// A result may be one of `args` (a computation that returns a parameter); every other result
/// is a new temporary the caller releases. Handles parameters, scalar constants, unary and
/// binary arithmetic, compare (total order too), select, clamp, convert, tuples, scalar
/// reshapes and same-width bitcasts; anything else is "not supported on chip yet" naming `what`.
pub(crate) fn apply_comp(
    l: &mut Lowerer<'_>,
    comp: hlo::CompId,
    args: &[Buf],
    what: &str,
) -> CResult<Vec<Buf>> {
    let m = l.m;
    let c = &m.comps[comp];
    let order = c
        .post_order()
        .ok_or_else(|| CompileError::Internal(format!("cyclic {what} computation")))?;
    let n = args.first().map_or(1, |a| a.elems());
    let mut vals: HashMap<InstId, Vec<Buf>> = HashMap::new();
    let mut made: Vec<Buf> = Vec::new();
    let one = |vals: &HashMap<InstId, Vec<Buf>>, h: InstId| -> CResult<Buf> {
        match vals.get(&h).map(|v| v.as_slice()) {
            Some([b]) => Ok(b.clone()),
            _ => Err(CompileError::Internal(format!(
                "{what} computation operand is not one array"
            ))),
        }
    };
    for h in order {
        let i = &c.insts[h];
        let ops = &i.operands;
        let scalar_ty = i.shape.as_array().map(|a| a.ty);
        let v: Vec<Buf> = match i.opcode {
            Opcode::Parameter => {
                let Some(k) = i.parameter_number() else {
                    return Err(CompileError::Internal("parameter without a number".into()));
                };
                let a = args.get(k).ok_or_else(|| {
                    CompileError::Internal(format!("{what} computation parameter {k} missing"))
                })?;
                vec![a.clone()]
            }
            Opcode::Constant => {
                let lit = i.literal();
                let Some(hlo::Literal::Array(a)) = lit else {
                    return Err(l.unsupported(format!("a tuple constant in a {what} computation")));
                };
                if !a.dims.is_empty() || a.data.len() != 1 {
                    return Err(
                        l.unsupported(format!("a non-scalar constant in a {what} computation"))
                    );
                }
                let ty = a.data.element_type();
                let b = l.vconst(ty, a.data.bits_at(0) as u64, n)?;
                made.push(b.clone());
                vec![b]
            }
            Opcode::Tuple => {
                let mut v = Vec::new();
                for &o in ops {
                    v.extend(vals.get(&o).cloned().unwrap_or_default());
                }
                v
            }
            Opcode::GetTupleElement => {
                let hlo::View::GetTupleElement { index: k } = i.view() else {
                    return Err(CompileError::Internal(
                        "get-tuple-element without an index".into(),
                    ));
                };
                let t = vals.get(&ops[0]).cloned().unwrap_or_default();
                vec![t
                    .get(k)
                    .cloned()
                    .ok_or_else(|| CompileError::Internal("tuple index out of range".into()))?]
            }
            Opcode::Reshape | Opcode::Bitcast | Opcode::Copy | Opcode::Broadcast
                if i.shape.as_array().is_some_and(|a| a.dims.is_empty())
                    && m.comps[comp].insts[ops[0]]
                        .shape
                        .as_array()
                        .is_some_and(|a| a.dims.is_empty() && Some(a.ty) == scalar_ty) =>
            {
                vec![one(&vals, ops[0])?]
            }
            // A scalar reinterpreted as another type of the same width (XLA's comparators
            // bitcast f32 to s32 for total order): the same bytes.
            Opcode::Bitcast | Opcode::BitcastConvert
                if i.shape.as_array().is_some_and(|a| a.dims.is_empty()) =>
            {
                let a = one(&vals, ops[0])?;
                let ty = scalar_ty.expect("array shape");
                if ty.byte_size() != a.ty.byte_size() {
                    return Err(l.unsupported(format!(
                        "a bitcast changing the width in a {what} computation"
                    )));
                }
                l.vty(ty)?;
                vec![Buf { ty, ..a }]
            }
            Opcode::Compare => {
                let a = one(&vals, ops[0])?;
                let b = one(&vals, ops[1])?;
                let hlo::View::Compare {
                    direction: dir,
                    comparison_type,
                } = i.view()
                else {
                    return Err(CompileError::Internal("compare without a direction".into()));
                };
                let total = comparison_type == Some(ComparisonType::TotalOrder);
                let r = l.vcmp(dir, &a, &b, total)?;
                made.push(r.clone());
                vec![r]
            }
            Opcode::Select => {
                let p = one(&vals, ops[0])?;
                let a = one(&vals, ops[1])?;
                let b = one(&vals, ops[2])?;
                let r = l.vsel(&p, &a, &b)?;
                made.push(r.clone());
                vec![r]
            }
            Opcode::Clamp => {
                let lo = one(&vals, ops[0])?;
                let x = one(&vals, ops[1])?;
                let hi = one(&vals, ops[2])?;
                check_binary_type(l, Opcode::Maximum, x.ty)?;
                let t = l.vop2(Opcode::Maximum, &x, &lo)?;
                let r = l.vop2(Opcode::Minimum, &t, &hi)?;
                l.release(&t);
                made.push(r.clone());
                vec![r]
            }
            Opcode::Convert => {
                let a = one(&vals, ops[0])?;
                let ty = scalar_ty.ok_or_else(|| l.unsupported("a tuple-shaped convert"))?;
                l.vty(ty)?;
                let r = l.vcvt(&a, ty)?;
                made.push(r.clone());
                vec![r]
            }
            op => {
                let probe = isa::VAddr {
                    base: SReg(0),
                    off: 0,
                };
                let is_un = unary(op, probe, probe, 0, isa::DType::F32).is_some();
                let is_bin = binary(op, probe, probe, probe, 0, isa::DType::F32).is_some();
                let ty = scalar_ty.ok_or_else(|| l.unsupported("a tuple-shaped result"))?;
                if is_un {
                    let a = one(&vals, ops[0])?;
                    check_unary_type(l, op, a.ty)?;
                    let t = l.vty(a.ty)?;
                    let r = l.tmp(ty, vec![n as usize])?;
                    l.vpu_map(&r, &[&a], &mut |d, s, k| {
                        unary(op, d, s[0], k, t).expect("unary")
                    });
                    made.push(r.clone());
                    vec![r]
                } else if is_bin {
                    let a = one(&vals, ops[0])?;
                    let b = one(&vals, ops[1])?;
                    check_binary_type(l, op, a.ty)?;
                    let r = l.vop2(op, &a, &b)?;
                    made.push(r.clone());
                    vec![r]
                } else {
                    return Err(l.unsupported(format!(
                        "{} in a {what} computation (element-wise ops only)",
                        op.name()
                    )));
                }
            }
        };
        vals.insert(h, v);
    }
    let outs = vals.remove(&c.root).unwrap_or_default();
    for b in made.iter().rev() {
        if !outs.iter().any(|o| o.alloc == b.alloc) {
            l.release(b);
        }
    }
    Ok(outs)
}
