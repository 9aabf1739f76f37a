//! Element-wise ops on the VPU: one VPU instruction per [`VPU_CHUNK`] elements, operands and
//! result contiguous in VMEM. Unary and binary arithmetic, compare, select, clamp, convert,
//! copy and iota.

use super::emit::{Access, Queue};
use super::{dtype, Buf, Lowerer, Val, VPU_CHUNK};
use crate::error::CResult;
use hlo::{ComparisonDirection, ComparisonType, ElementType, InstId, Opcode};
use isa::Inst;
use isa::{CmpOp, DType, VAddr};

/// A placeholder operand for asking whether an opcode has a VPU instruction.
pub(crate) const PROBE: VAddr = VAddr {
    base: isa::SReg(0),
    off: 0,
};

/// The VPU instruction computing unary `op` (`dst[i] = op(a[i])`).
pub(crate) fn unary(op: Opcode, dst: VAddr, a: VAddr, n: u32, t: DType) -> Option<Inst> {
    macro_rules! u {
        ($($o:ident => $v:ident),*) => {
            match op {
                $(Opcode::$o => Some(Inst::$v { dst, a, n, t, pat: None, wait: None, signal: None }),)*
                _ => None,
            }
        };
    }
    u!(Abs => VAbs, Negate => VNeg, Sign => VSign, Floor => VFloor, Ceil => VCeil,
       RoundAfz => VRound, RoundEven => VRoundEven, Not => VNot, PopCnt => VPopcnt, Clz => VClz,
       IsFinite => VIsFinite, Exp => VExp, Expm1 => VExpm1, Log => VLog, Log1p => VLog1p,
       Logistic => VLogistic, Sqrt => VSqrt, Rsqrt => VRsqrt, Cbrt => VCbrt, Tanh => VTanh,
       Sin => VSin, Cos => VCos, Tan => VTan, Erf => VErf, Copy => VMov)
}

/// The VPU instruction computing binary `op` (`dst[i] = op(a[i], b[i])`).
pub(crate) fn binary(op: Opcode, dst: VAddr, a: VAddr, b: VAddr, n: u32, t: DType) -> Option<Inst> {
    macro_rules! bi {
        ($($o:ident => $v:ident),*) => {
            match op {
                $(Opcode::$o => Some(Inst::$v { dst, a, b, n, t, pat: None, wait: None, signal: None }),)*
                _ => None,
            }
        };
    }
    bi!(Add => VAdd, Subtract => VSub, Multiply => VMul, Divide => VDiv, Remainder => VRem,
        Minimum => VMin, Maximum => VMax, And => VAnd, Or => VOr, Xor => VXor,
        ShiftLeft => VShl, ShiftRightLogical => VShr, ShiftRightArithmetic => VSra,
        Power => VPow, Atan2 => VAtan2)
}

pub(crate) fn cmp_op(d: ComparisonDirection) -> CmpOp {
    match d {
        ComparisonDirection::Eq => CmpOp::Eq,
        ComparisonDirection::Ne => CmpOp::Ne,
        ComparisonDirection::Lt => CmpOp::Lt,
        ComparisonDirection::Le => CmpOp::Le,
        ComparisonDirection::Gt => CmpOp::Gt,
        ComparisonDirection::Ge => CmpOp::Ge,
    }
}

/// Splits `n` elements into VPU-sized chunks: `(first element, count)`.
pub(crate) fn chunks(n: u64) -> impl Iterator<Item = (u64, u32)> {
    (0..n.div_ceil(VPU_CHUNK)).map(move |k| {
        let s = k * VPU_CHUNK;
        (s, (n - s).min(VPU_CHUNK) as u32)
    })
}

impl Lowerer<'_> {
    /// The VPU type of `ty`, or a "not supported" error.
    pub(crate) fn vty(&self, ty: ElementType) -> CResult<DType> {
        dtype(ty).ok_or_else(|| self.unsupported(format!("element type {ty} on the VPU")))
    }

    /// Emits `make(dst, srcs..., n)` over every chunk; `srcs` and `dst` are arrays of the same
    /// element count (sources may have other element types).
    pub(crate) fn vpu_map(
        &mut self,
        dst: &Buf,
        srcs: &[&Buf],
        make: &mut dyn FnMut(VAddr, &[VAddr], u32) -> Inst,
    ) {
        let dw = dst.ty.byte_size() as u64;
        for (s, n) in chunks(dst.elems()) {
            let d = self.e.vaddr(dst.addr + s * dw);
            let mut reads = Vec::new();
            let mut addrs = Vec::new();
            for b in srcs {
                let w = b.ty.byte_size() as u64;
                addrs.push(self.e.vaddr(b.addr + s * w));
                reads.push(Access::vmem(b.addr + s * w, n as u64 * w));
            }
            let i = make(d, &addrs, n);
            self.e.unit(
                i,
                Queue::Vpu,
                &reads,
                &[Access::vmem(dst.addr + s * dw, n as u64 * dw)],
            );
        }
    }

    /// `dst[i] = (i / div) mod modulo` in `dst`'s type (`vpu.iota`, one instruction per
    /// whole number of periods up to a VPU chunk).
    pub(crate) fn iota_into(&mut self, dst: &Buf, div: u64, modulo: u64) -> CResult<()> {
        let t = self.vty(dst.ty)?;
        let (div, modulo) = (div.max(1), modulo.max(1));
        if div >= 1 << 20 || modulo >= 1 << 20 {
            return Err(self.unsupported("iota with a dimension of 2^20 or more elements"));
        }
        // Chunks must start at a multiple of div·modulo for the formula to hold.
        let period = div * modulo;
        let per = if period <= VPU_CHUNK {
            (VPU_CHUNK / period).max(1) * period
        } else {
            return Err(self.unsupported("iota whose period exceeds one VPU instruction"));
        };
        let w = dst.ty.byte_size() as u64;
        let total = dst.elems();
        let mut s = 0;
        while s < total {
            let n = per.min(total - s);
            let d = self.e.vaddr(dst.addr + s * w);
            self.e.unit(
                Inst::VIota {
                    dst: d,
                    n: n as u32,
                    div: div as u32,
                    modulo: modulo as u32,
                    t,
                    wait: None,
                    signal: None,
                },
                Queue::Vpu,
                &[],
                &[Access::vmem(dst.addr + s * w, n * w)],
            );
            s += n;
        }
        Ok(())
    }

    /// `dst = convert(src)` element-wise.
    pub(crate) fn convert(&mut self, dst: &Buf, src: &Buf) -> CResult<()> {
        let to = self.vty(dst.ty)?;
        let from = self.vty(src.ty)?;
        self.vpu_map(dst, &[src], &mut |d, a, n| Inst::VCvt {
            dst: d,
            a: a[0],
            n,
            to,
            from,
            pat: None,
            wait: None,
            signal: None,
        });
        Ok(())
    }

    /// `dst = op(a, b)` element-wise.
    pub(crate) fn binop(&mut self, op: Opcode, dst: &Buf, a: &Buf, b: &Buf) -> CResult<()> {
        let t = self.vty(a.ty)?;
        if binary(op, PROBE, PROBE, PROBE, 0, t).is_none() {
            return Err(self.unsupported(format!("{} on the VPU", op.name())));
        }
        self.vpu_map(dst, &[a, b], &mut |d, s, n| {
            binary(op, d, s[0], s[1], n, t).expect("checked above")
        });
        Ok(())
    }
}

/// Whether `op` is an element-wise op with operands (the ones [`compute_into`] computes).
pub(crate) fn is_elementwise(op: Opcode) -> bool {
    let p = PROBE;
    unary(op, p, p, 0, DType::F32).is_some()
        || binary(op, p, p, p, 0, DType::F32).is_some()
        || matches!(
            op,
            Opcode::Compare | Opcode::Select | Opcode::Clamp | Opcode::Convert
        )
}

/// Lowers element-wise instructions; `None` if `h` is not one.
pub fn lower(l: &mut Lowerer<'_>, h: InstId) -> CResult<Option<Val>> {
    let inst = &l.comp().insts[h];
    let op = inst.opcode;
    let ops = inst.operands.clone();
    let (ty, dims) = match l.out_shape(h) {
        Ok(s) => s,
        Err(_) => return Ok(None),
    };
    if op == Opcode::Iota {
        l.vty(ty)?;
        let hlo::View::Iota { dimension: d } = inst.view() else {
            return Err(crate::CompileError::Internal(
                "iota without a dimension".into(),
            ));
        };
        let div: usize = dims[d + 1..].iter().product();
        let modulo = dims[d];
        let out = l.new_buf(h, ty, dims.clone())?;
        l.iota_into(&out, div as u64, modulo as u64)?;
        return Ok(Some(Val::Array(out)));
    }
    if !is_elementwise(op) {
        return Ok(None);
    }
    let args = ops
        .iter()
        .map(|&o| l.arr(o))
        .collect::<CResult<Vec<Buf>>>()?;
    check(l, h, &args)?;
    let out = l.new_buf(h, ty, dims)?;
    compute_into(l, h, &out, &args)?;
    Ok(Some(Val::Array(out)))
}

/// Refuses element types the VPU cannot compute `h` in (before any buffer is taken).
pub(crate) fn check(l: &Lowerer<'_>, h: InstId, args: &[Buf]) -> CResult<()> {
    let op = l.comp().insts[h].opcode;
    let p = PROBE;
    let Some(a) = args.first() else {
        return Ok(());
    };
    if unary(op, p, p, 0, DType::F32).is_some() {
        l.vty(a.ty)?;
        check_unary_type(l, op, a.ty)
    } else if binary(op, p, p, p, 0, DType::F32).is_some() {
        check_binary_type(l, op, a.ty)
    } else if op == Opcode::Select {
        l.vty(args.get(1).unwrap_or(a).ty).map(|_| ())
    } else {
        l.vty(a.ty).map(|_| ())
    }
}

/// Computes element-wise instruction `h` of `args` (its operands' arrays, or the same chunk of
/// each: element counts equal, or 1 for a scalar select predicate or clamp bound) into `out`.
pub(crate) fn compute_into(l: &mut Lowerer<'_>, h: InstId, out: &Buf, args: &[Buf]) -> CResult<()> {
    let inst = &l.comp().insts[h];
    let op = inst.opcode;
    let p = PROBE;
    if unary(op, p, p, 0, DType::F32).is_some() {
        let a = &args[0];
        let t = l.vty(a.ty)?;
        check_unary_type(l, op, a.ty)?;
        l.vpu_map(out, &[a], &mut |d, s, n| {
            unary(op, d, s[0], n, t).expect("unary")
        });
        return Ok(());
    }
    if binary(op, p, p, p, 0, DType::F32).is_some() {
        check_binary_type(l, op, args[0].ty)?;
        return l.binop(op, out, &args[0], &args[1]);
    }
    match op {
        Opcode::Compare => {
            let (a, b) = (&args[0], &args[1]);
            l.vty(a.ty)?;
            let hlo::View::Compare {
                direction: dir,
                comparison_type,
            } = inst.view()
            else {
                return Err(crate::CompileError::Internal(
                    "compare without a direction".into(),
                ));
            };
            let total = comparison_type == Some(ComparisonType::TotalOrder);
            l.cmp_into(out, dir, a, b, total)
        }
        Opcode::Select => {
            let a = &args[1];
            let splat = args[0].elems() == 1 && a.elems() != 1;
            let p = if splat {
                l.splat(&args[0], a.elems())?
            } else {
                args[0].clone()
            };
            l.select_into(out, &p, a, &args[2])?;
            if splat {
                l.release(&p);
            }
            Ok(())
        }
        Opcode::Clamp => {
            // clamp(lo, x, hi) = min(max(x, lo), hi); lo and hi may be scalars.
            let x = &args[1];
            let n = x.elems();
            if args[0].elems() != n {
                let lo = l.splat(&args[0], n)?;
                l.binop(Opcode::Maximum, out, x, &lo)?;
                l.release(&lo);
            } else {
                l.binop(Opcode::Maximum, out, x, &args[0])?;
            }
            if args[2].elems() != n {
                let hi = l.splat(&args[2], n)?;
                l.binop(Opcode::Minimum, out, out, &hi)?;
                l.release(&hi);
                Ok(())
            } else {
                l.binop(Opcode::Minimum, out, out, &args[2])
            }
        }
        Opcode::Convert => l.convert(out, &args[0]),
        _ => Err(crate::CompileError::Internal(format!(
            "{} is not element-wise",
            op.name()
        ))),
    }
}

pub(crate) fn check_unary_type(l: &Lowerer<'_>, op: Opcode, ty: ElementType) -> CResult<()> {
    use Opcode as O;
    let ok = match op {
        O::Not | O::PopCnt | O::Clz => ty.is_integer() || (op == O::Not && ty.is_pred()),
        O::Abs | O::Negate | O::Sign => !ty.is_pred(),
        O::Copy => true,
        _ => ty.is_float(),
    };
    if ok {
        Ok(())
    } else {
        Err(l.unsupported(format!("{} of {ty} on the VPU", op.name())))
    }
}

pub(crate) fn check_binary_type(l: &Lowerer<'_>, op: Opcode, ty: ElementType) -> CResult<()> {
    use Opcode as O;
    let ok = match op {
        O::And | O::Or | O::Xor => ty.is_integer() || ty.is_pred(),
        O::ShiftLeft | O::ShiftRightLogical | O::ShiftRightArithmetic => ty.is_integer(),
        O::Power | O::Atan2 => ty.is_float(),
        _ => !ty.is_pred(),
    };
    if ok && dtype(ty).is_some() {
        Ok(())
    } else {
        Err(l.unsupported(format!("{} of {ty} on the VPU", op.name())))
    }
}
