//! The VPU unit: timing (three in-order pipelines — ALU array, transcendental, cross-lane — fed
//! in program order, with a scoreboard on VMEM ranges) and functional execution of every VPU
//! instruction on VMEM bytes.
//!
//! Timing of an op over `n` elements of class `k` (docs/timing.md): it starts at
//! `max(dispatch front end, previous VPU start, pipeline free, every in-flight write it reads or
//! overwrites visible)`, keeps its pipeline busy `B = max(⌈n / epc_k⌉, ⌈bytes / vmem_bpc⌉)`
//! cycles (`epc` divided by `emulated_64bit_factor` for 64-bit types; `bytes` = all operand
//! bytes read and written) and its result is visible at `start + B − 1 + max(L_k, 1)`
//! (`start` if `n = 0`).

use crate::chip::{Chip, Env};
use crate::core::*;
use crate::cycle::Cycle;
use crate::elem::{self, read, write};
use crate::error::SimError;
use crate::units::Started;
use crate::vpu_ops::{binary, compare, from_index, reduce_step, unary, BinOp, UnOp};
use isa::{DType, Inst};

fn bin_op(inst: &Inst) -> Option<(BinOp, u32, DType)> {
    use Inst::*;
    Some(match *inst {
        VAdd { n, t, .. } => (BinOp::Add, n, t),
        VSub { n, t, .. } => (BinOp::Sub, n, t),
        VMul { n, t, .. } => (BinOp::Mul, n, t),
        VDiv { n, t, .. } => (BinOp::Div, n, t),
        VRem { n, t, .. } => (BinOp::Rem, n, t),
        VMin { n, t, .. } => (BinOp::Min, n, t),
        VMax { n, t, .. } => (BinOp::Max, n, t),
        VAnd { n, t, .. } => (BinOp::And, n, t),
        VOr { n, t, .. } => (BinOp::Or, n, t),
        VXor { n, t, .. } => (BinOp::Xor, n, t),
        VShl { n, t, .. } => (BinOp::Shl, n, t),
        VShr { n, t, .. } => (BinOp::Shr, n, t),
        VSra { n, t, .. } => (BinOp::Sra, n, t),
        VPow { n, t, .. } => (BinOp::Pow, n, t),
        VAtan2 { n, t, .. } => (BinOp::Atan2, n, t),
        _ => return None,
    })
}

fn un_op(inst: &Inst) -> Option<(UnOp, u32, DType)> {
    use Inst::*;
    Some(match *inst {
        VMov { n, t, .. } => (UnOp::Mov, n, t),
        VNeg { n, t, .. } => (UnOp::Neg, n, t),
        VAbs { n, t, .. } => (UnOp::Abs, n, t),
        VSign { n, t, .. } => (UnOp::Sign, n, t),
        VFloor { n, t, .. } => (UnOp::Floor, n, t),
        VCeil { n, t, .. } => (UnOp::Ceil, n, t),
        VRound { n, t, .. } => (UnOp::Round, n, t),
        VRoundEven { n, t, .. } => (UnOp::RoundEven, n, t),
        VNot { n, t, .. } => (UnOp::Not, n, t),
        VPopcnt { n, t, .. } => (UnOp::Popcnt, n, t),
        VClz { n, t, .. } => (UnOp::Clz, n, t),
        VIsFinite { n, t, .. } => (UnOp::IsFinite, n, t),
        VExp { n, t, .. } => (UnOp::Exp, n, t),
        VExpm1 { n, t, .. } => (UnOp::Expm1, n, t),
        VLog { n, t, .. } => (UnOp::Log, n, t),
        VLog1p { n, t, .. } => (UnOp::Log1p, n, t),
        VLogistic { n, t, .. } => (UnOp::Logistic, n, t),
        VSqrt { n, t, .. } => (UnOp::Sqrt, n, t),
        VRsqrt { n, t, .. } => (UnOp::Rsqrt, n, t),
        VCbrt { n, t, .. } => (UnOp::Cbrt, n, t),
        VTanh { n, t, .. } => (UnOp::Tanh, n, t),
        VSin { n, t, .. } => (UnOp::Sin, n, t),
        VCos { n, t, .. } => (UnOp::Cos, n, t),
        VTan { n, t, .. } => (UnOp::Tan, n, t),
        VErf { n, t, .. } => (UnOp::Erf, n, t),
        _ => return None,
    })
}

/// Byte ranges and sizes of a VPU op.
pub(crate) struct Shape {
    /// Elements (for the element rate).
    elems: u64,
    /// Type that sets the element rate (64-bit types are slower).
    cost_t: DType,
    /// Destination bytes.
    pub(crate) dst: (u64, u64),
    /// Source byte ranges (`(0, 0)` unused; gather's table: all of VMEM).
    pub(crate) srcs: [(u64, u64); 3],
    /// Bytes read and written.
    bytes: u64,
    /// Float arithmetic ops.
    flops: u64,
}

/// The shape of a VPU op, derived from the ISA table's operand roles (`isa::Inst::accesses`):
/// the element work is the largest operand's element count, the rate type the widest operand
/// type, the bytes every operand moves (an element a pattern repeats is fetched once; a
/// scatter reads and writes one destination element per update; a gather reads one source
/// element per index), the written operand's hull and the read operands' hulls (a gathered
/// source, whose bytes depend on data: all of VMEM).
pub(crate) fn shape(cmd: &Cmd, ctx: &crate::units::Ctx<'_>, vmem_cap: u64) -> Shape {
    let inst = &cmd.inst;
    let (mut elems, mut cost_t, mut bytes) = (0u64, None::<DType>, 0u64);
    let (mut dst, mut srcs, mut k) = ((0u64, 0u64), [(0u64, 0u64); 3], 0);
    for t in crate::units::derived(cmd, ctx).touched.iter() {
        elems = elems.max(t.use_.extent.count());
        if cost_t.is_none_or(|c| t.use_.elem.bytes() > c.bytes()) {
            cost_t = Some(t.use_.elem);
        }
        bytes += t.moved;
        let hull = t.hull.unwrap_or((0, vmem_cap));
        if t.use_.role.writes() {
            dst = hull;
        } else if k < srcs.len() {
            srcs[k] = hull;
            k += 1;
        }
    }
    let cost_t = cost_t.unwrap_or(DType::U8);
    let float_arith = cost_t.is_float()
        && (bin_op(inst).is_some()
            || matches!(un_op(inst), Some((op, _, _)) if op != UnOp::Mov)
            || matches!(inst, Inst::VReduce { .. }));
    Shape {
        elems,
        cost_t,
        dst,
        srcs,
        bytes,
        flops: if float_arith { elems } else { 0 },
    }
}

/// The layout a pattern gives operand `field` of `inst`, if any (`.pat`).
fn layout<'a>(prog: &'a isa::Program, inst: &Inst, field: &str) -> Option<&'a isa::Layout> {
    let p = inst.pat()?;
    prog.pats.get(p.0 as usize)?.layout(field)
}

/// Reads `n` elements of `size` bytes of an operand at `addr`: contiguous, or at the offsets of
/// its pattern layout.
fn read_op(
    vm: &crate::memory::Memory,
    addr: u64,
    n: u64,
    size: u64,
    lay: Option<&isa::Layout>,
) -> Result<Vec<u8>, String> {
    let Some(l) = lay else {
        return vm.read_vec(addr, n * size).map_err(|e| e.to_string());
    };
    let mut out = vec![0u8; (n * size) as usize];
    for i in 0..n {
        let at = addr
            .checked_add(l.offset(i))
            .ok_or("pattern address overflow")?;
        let k = (i * size) as usize;
        vm.read(at, &mut out[k..k + size as usize])
            .map_err(|e| e.to_string())?;
    }
    Ok(out)
}

fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.1 && b.0 < a.1 && a.0 < a.1 && b.0 < b.1
}

impl Chip {
    pub(crate) fn start_vpu(
        &mut self,
        env: &mut Env<'_>,
        now: Cycle,
        c: usize,
        cmd: &Cmd,
    ) -> Result<Started, SimError> {
        let p = env.p;
        let ctx = crate::units::Ctx {
            prog: &env.prog.program,
            vmem: None,
            cache: &self.derived_cache,
        };
        let sh = shape(cmd, &ctx, p.vmem_bytes);
        let (class, pipe) = p.vpu_class(cmd.inst.timing()).expect("VPU timing class");
        let (b_elems, lat) = p.vpu_cost(class, sh.cost_t, sh.elems);
        let busy = if sh.elems == 0 { 0 } else { b_elems };
        let v = &mut self.cores[c].vpu;
        v.writes.retain(|w| w.done > now);
        let mut start = now.max(v.last_start).max(v.pipe_free[pipe as usize]);
        for w in &v.writes {
            let range = (w.lo, w.hi);
            if overlaps(range, sh.dst) || sh.srcs.iter().any(|&s| overlaps(range, s)) {
                start = start.max(w.done);
            }
        }
        v.last_start = start;
        // VMEM: every operand byte at the pipeline's own pace (all bytes over its busy cycles).
        let vmem_stall = if busy == 0 {
            0
        } else {
            let end = self.cores[c]
                .vmem_port
                .book(start.get(), sh.bytes, sh.bytes.div_ceil(busy));
            (end - start.get()).saturating_sub(busy)
        };
        let work = start + vmem_stall;
        let done = if busy == 0 {
            start
        } else {
            work + (busy - 1 + lat.max(1))
        };
        let v = &mut self.cores[c].vpu;
        v.pipe_free[pipe as usize] = work + busy;
        if busy > 0 {
            v.writes.push(VpuWrite {
                lo: sh.dst.0,
                hi: sh.dst.1,
                done,
            });
        }
        env.stats.add(v.elems, sh.elems);
        env.stats.add(v.flops, sh.flops);
        if env.functional {
            self.exec_vpu(c, cmd, &env.prog.program)
                .map_err(|m| self.cmd_err(env, c, cmd, m))?;
        } else {
            // timing only: still check the addresses
            let vm = &self.cores[c].vmem;
            for r in std::iter::once(sh.dst).chain(sh.srcs) {
                if r.1 > r.0 {
                    vm.check(r.0, r.1 - r.0)
                        .map_err(|e| self.cmd_err(env, c, cmd, e.to_string()))?;
                }
            }
        }
        Ok(Started {
            vmem_stall,
            start,
            busy_end: done.max(work + busy),
            done: Some(done),
            front_free: start,
        })
    }

    /// Executes a VPU instruction on VMEM (functional mode).
    fn exec_vpu(&mut self, c: usize, cmd: &Cmd, prog: &isa::Program) -> Result<(), String> {
        let vm = &mut self.cores[c].vmem;
        let a = cmd.a;
        let rd = |vm: &crate::memory::Memory, addr: u64, len: u64| {
            vm.read_vec(addr, len).map_err(|e| e.to_string())
        };
        let inst = &cmd.inst;
        // Operand `field` at `addr`: `n` elements of type `t`, through its pattern if any.
        let rdo = |vm: &crate::memory::Memory, field: &str, addr: u64, n: u64, t: DType| {
            read_op(vm, addr, n, t.bytes(), layout(prog, inst, field))
        };
        let out: Vec<u8>;
        if let Some((op, n, t)) = bin_op(inst) {
            let (n, s) = (n as usize, t.bytes());
            let _ = s;
            let x = rdo(vm, "a", a[1], n as u64, t)?;
            let y = rdo(vm, "b", a[2], n as u64, t)?;
            let mut o = vec![0u8; x.len()];
            if t == DType::F32 && matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div) {
                // Fast path, same results as `binary`: IEEE f32, canonical NaN.
                let f = |b: &[u8]| f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                for ((ob, xb), yb) in o
                    .chunks_exact_mut(4)
                    .zip(x.chunks_exact(4))
                    .zip(y.chunks_exact(4))
                {
                    let daz = |x: f32| {
                        if x.is_subnormal() {
                            0.0f32.copysign(x)
                        } else {
                            x
                        }
                    };
                    let (a, b) = (daz(f(xb)), daz(f(yb)));
                    let r = match op {
                        BinOp::Add => a + b,
                        BinOp::Sub => a - b,
                        BinOp::Mul => a * b,
                        _ => a / b,
                    };
                    let r = if r.is_nan() {
                        f32::from_bits(0x7FC0_0000)
                    } else if r.is_subnormal() {
                        0.0f32.copysign(r)
                    } else {
                        r
                    };
                    ob.copy_from_slice(&r.to_le_bytes());
                }
            } else {
                for i in 0..n {
                    let r =
                        binary(op, t, read(t, &x, i), read(t, &y, i)).map_err(|e| e.to_string())?;
                    write(t, &mut o, i, r);
                }
            }
            out = o;
        } else if let Some((op, n, t)) = un_op(inst) {
            let n = n as usize;
            let x = rdo(vm, "a", a[1], n as u64, t)?;
            let dt = if op == UnOp::IsFinite { DType::Pred } else { t };
            let mut o = vec![0u8; n * dt.bytes() as usize];
            for i in 0..n {
                let r = unary(op, t, read(t, &x, i)).map_err(|e| e.to_string())?;
                write(dt, &mut o, i, r);
            }
            out = o;
        } else {
            match *inst {
                Inst::VCmp { n, t, cmp, .. } => {
                    let n = n as usize;
                    let x = rdo(vm, "a", a[1], n as u64, t)?;
                    let y = rdo(vm, "b", a[2], n as u64, t)?;
                    out = (0..n)
                        .map(|i| compare(cmp, t, read(t, &x, i), read(t, &y, i)) as u8)
                        .collect();
                }
                Inst::VSelect { n, t, .. } => {
                    let n = n as usize;
                    let pr = rd(vm, a[1], n as u64)?;
                    let x = rd(vm, a[2], n as u64 * t.bytes())?;
                    let y = rd(vm, a[3], n as u64 * t.bytes())?;
                    let s = t.bytes() as usize;
                    let mut o = y.clone();
                    for i in 0..n {
                        if pr[i] != 0 {
                            o[i * s..(i + 1) * s].copy_from_slice(&x[i * s..(i + 1) * s]);
                        }
                    }
                    out = o;
                }
                Inst::VCvt { n, to, from, .. } => {
                    let n = n as usize;
                    let x = rdo(vm, "a", a[1], n as u64, from)?;
                    let mut o = vec![0u8; n * to.bytes() as usize];
                    for i in 0..n {
                        write(to, &mut o, i, elem::convert(to, from, read(from, &x, i)));
                    }
                    out = o;
                }
                Inst::VSplat { n, t, .. } => {
                    let s = t.bytes() as usize;
                    let v = a[1].to_le_bytes();
                    out = (0..n as usize)
                        .flat_map(|_| v[..s].iter().copied())
                        .collect();
                }
                Inst::VIota {
                    n, div, modulo, t, ..
                } => {
                    if div == 0 || modulo == 0 {
                        return Err("vpu.iota needs div >= 1 and modulo >= 1".into());
                    }
                    let mut o = vec![0u8; n as usize * t.bytes() as usize];
                    for i in 0..n as usize {
                        write(
                            t,
                            &mut o,
                            i,
                            from_index(t, (i as u64 / div as u64) % modulo as u64),
                        );
                    }
                    out = o;
                }
                Inst::VBcast { n, rows, t, .. } => {
                    let row = rd(vm, a[1], n as u64 * t.bytes())?;
                    out = (0..rows).flat_map(|_| row.iter().copied()).collect();
                }
                Inst::VTranspose { rows, cols, t, .. } => {
                    let (rows, cols, s) = (rows as usize, cols as usize, t.bytes() as usize);
                    let x = rd(vm, a[1], (rows * cols * s) as u64)?;
                    let mut o = vec![0u8; x.len()];
                    for i in 0..rows {
                        for j in 0..cols {
                            let (d, sidx) = (j * rows + i, i * cols + j);
                            o[d * s..(d + 1) * s].copy_from_slice(&x[sidx * s..(sidx + 1) * s]);
                        }
                    }
                    out = o;
                }
                Inst::VReduce {
                    rows, cols, t, op, ..
                } => {
                    if cols == 0 {
                        return Err("vpu.reduce needs cols >= 1".into());
                    }
                    let (rows, cols) = (rows as usize, cols as usize);
                    let x = rd(vm, a[1], (rows * cols) as u64 * t.bytes())?;
                    let mut o = vec![0u8; rows * t.bytes() as usize];
                    for r in 0..rows {
                        let mut acc = read(t, &x, r * cols);
                        for j in 1..cols {
                            acc = reduce_step(op, t, acc, read(t, &x, r * cols + j))
                                .map_err(|e| e.to_string())?;
                        }
                        write(t, &mut o, r, acc);
                    }
                    out = o;
                }
                Inst::VGather { n, t, .. } => {
                    let n = n as usize;
                    let s = t.bytes();
                    let idx = rd(vm, a[2], n as u64 * 4)?;
                    let mut o = Vec::with_capacity(n * s as usize);
                    for i in 0..n {
                        let k =
                            u32::from_le_bytes(idx[i * 4..i * 4 + 4].try_into().unwrap()) as u64;
                        let addr = a[1].checked_add(k * s).ok_or("gather address overflow")?;
                        o.extend(rd(vm, addr, s)?);
                    }
                    out = o;
                }
                Inst::VScatter { n, t, op, set, .. } => {
                    let n = n as usize;
                    let s = t.bytes() as usize;
                    let lim = a[3];
                    let idx = rd(vm, a[2], n as u64 * 4)?;
                    let x = rd(vm, a[1], (n * s) as u64)?;
                    let bytes = lim.checked_mul(s as u64).ok_or("scatter range overflow")?;
                    let mut o = rd(vm, a[0], bytes)?;
                    for i in 0..n {
                        let k =
                            u32::from_le_bytes(idx[i * 4..i * 4 + 4].try_into().unwrap()) as u64;
                        if k >= lim {
                            continue;
                        }
                        let k = k as usize;
                        let v = if set {
                            read(t, &x, i)
                        } else {
                            reduce_step(op, t, read(t, &o, k), read(t, &x, i))
                                .map_err(|e| e.to_string())?
                        };
                        write(t, &mut o, k, v);
                    }
                    out = o;
                }
                ref other => {
                    return Err(format!("`{}` is not a VPU instruction", other.mnemonic()))
                }
            }
        }
        // The destination, through its pattern if any (an element written twice keeps the
        // later value).
        match layout(prog, inst, "dst") {
            None => vm.write(a[0], &out).map_err(|e| e.to_string()),
            Some(l) => {
                let size = inst
                    .operand_uses()
                    .iter()
                    .find(|u| u.field == "dst")
                    .map_or(1, |u| u.elem.bytes()) as usize;
                for (i, e) in out.chunks_exact(size).enumerate() {
                    let at = a[0]
                        .checked_add(l.offset(i as u64))
                        .ok_or("pattern address overflow")?;
                    vm.write(at, e).map_err(|e| e.to_string())?;
                }
                Ok(())
            }
        }
    }
}
