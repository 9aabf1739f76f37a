//! Streamed element-wise regions: element-wise work on arrays too large for VMEM runs chunk by
//! chunk, from HBM to HBM, double-buffered.
//!
//! Planning ([`plan`], before anything is lowered):
//! - An entry instruction is *big* if it is element-wise ([`elementwise::is_elementwise`]),
//!   its value or an operand is larger than `vmem.bytes / BIG_FRACTION`, and every operand has
//!   its element count (or is a scalar), and it is not in a streamed dot's epilogue.
//! - A big instruction whose only reader is another big instruction (and which is not the
//!   result) joins that reader's region, so regions are trees: every member but the root has
//!   one reader, inside. Only the root's value leaves the region, so chains such as
//!   `tanh(x * 2 + 1)` read `x` once and write one result.
//! - A broadcast whose readers are all region members, of a small operand, is *lazy*: each
//!   region computes its chunks ([`Lazy`]) instead of reading a large array.
//! - Arrays are chunked along their leading dimensions `dims[..split]` (the outer rows), where
//!   `split` is the smallest for which one row of the rest is at most `vmem.bytes / 64` of
//!   8-byte elements; a chunk is a run of whole rows.
//!
//! Lowering (at the root's position; the other members and lazy broadcasts produce no code
//! of their own): for each chunk, copy in the rows of every operand that lives in HBM, compute
//! the lazy broadcasts' rows and each member into chunk buffers, copy the root's rows out. Two
//! sets of buffers alternate and the next chunk's copies are issued before this chunk's VPU
//! work, so transfers overlap compute (the emitter orders every reuse). The result is a
//! [`Val::Hbm`] registered as a spill, so a reader that needs it in VMEM reloads it if it
//! fits. Operands read by members keep their values alive until the root's position.

use super::elementwise::{self, compute_into};
use super::{Buf, Lowerer, Val};
use crate::error::{CResult, CompileError};
use crate::io::Slot;
use hlo::{ElementType, InstId, Module, Opcode};
use isa::Space;

/// A value larger than `vmem.bytes / BIG_FRACTION` is streamed.
pub const BIG_FRACTION: u64 = 4;

/// How a lazy broadcast's chunk is made from its operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lazy {
    /// The operand maps only to dimensions at or after `split`: every chunk is the same.
    Invariant,
    /// The operand's first `t` dimensions map to the outer dimensions (all of those larger
    /// than 1, in order): a chunk's rows come from the same rows of the operand.
    Rows { t: usize },
}

/// A region (module docs).
#[derive(Clone, Debug)]
pub(crate) struct Region {
    /// Members in the entry's order; the last is the root.
    pub members: Vec<InstId>,
    /// Lazy broadcasts read by members.
    pub lazy: Vec<(InstId, Lazy)>,
    /// The chunked dimensions are `dims[..split]`.
    pub split: usize,
}

/// The plan for the entry computation.
#[derive(Default)]
pub(crate) struct Plan {
    /// Regions by root instruction index.
    pub regions: Vec<Option<Region>>,
    /// Members that are not roots, and lazy broadcasts: no code of their own.
    pub fused: Vec<InstId>,
}

fn array_bytes(s: &hlo::Shape) -> Option<u64> {
    s.as_array().filter(|a| !a.is_dynamic())?.byte_size()
}

/// The leading dimensions a chunk spans whole rows of (module docs).
fn split(dims: &[usize], vmem: u64) -> usize {
    let limit = (vmem / 64).max(8);
    (0..=dims.len())
        .find(|&s| dims[s..].iter().product::<usize>() as u64 * 8 <= limit)
        .unwrap_or(dims.len())
}

/// How broadcast `b` of an operand of dimensions `od` can be made chunk by chunk for arrays
/// split at `split`.
fn lazy_kind(b: &hlo::Instruction, od: &[usize], split: usize) -> Option<Lazy> {
    let hlo::View::Broadcast { dimensions } = b.view() else {
        return None;
    };
    let bd: Vec<usize> = dimensions.iter().map(|&d| d as usize).collect();
    if !bd.windows(2).all(|w| w[0] < w[1]) {
        return None;
    }
    let dims = b.shape.as_array()?.udims();
    // An operand dimension of 1 stretched over a longer one is left to `broadcast_into`.
    if od.len() != bd.len() || bd.iter().zip(od).any(|(&d, &n)| n != dims[d]) {
        return None;
    }
    let t = bd.iter().take_while(|&&d| d < split).count();
    if t == 0 {
        return Some(Lazy::Invariant);
    }
    let outer_big: Vec<usize> = (0..split).filter(|&d| dims[d] > 1).collect();
    let mapped: Vec<usize> = bd[..t].iter().copied().filter(|&d| dims[d] > 1).collect();
    (mapped == outer_big).then_some(Lazy::Rows { t })
}

/// Plans the entry's streamed element-wise regions; `epilogue[h]` marks instructions computed
/// in a streamed dot's epilogue (never in a region).
pub(crate) fn plan(m: &Module, vmem: u64, users: &[Vec<InstId>], epilogue: &[bool]) -> Plan {
    let c = m.entry();
    let n = c.insts.len();
    let limit = vmem / BIG_FRACTION;
    let mut out = Plan {
        regions: vec![None; n],
        fused: Vec::new(),
    };
    let unique = |h: InstId| -> Vec<InstId> {
        let mut us = users[h.index()].clone();
        us.sort_by_key(|u| u.index());
        us.dedup();
        us
    };
    let big: Vec<bool> = c
        .insts
        .iter()
        .map(|(h, i)| {
            let Some(own) = array_bytes(&i.shape) else {
                return false;
            };
            let elems = i.shape.as_array().map_or(0, |a| a.udims().iter().product());
            elementwise::is_elementwise(i.opcode)
                && !epilogue[h.index()]
                && !i.operands.is_empty()
                && i.operands.iter().all(|&o| {
                    c.insts[o].shape.as_array().is_some_and(|a| {
                        !a.is_dynamic() && {
                            let e: usize = a.udims().iter().product();
                            e == elems || e == 1
                        }
                    })
                })
                && (own > limit
                    || i.operands
                        .iter()
                        .any(|&o| array_bytes(&c.insts[o].shape).is_some_and(|b| b > limit)))
        })
        .collect();
    // Tree regions: a big instruction read only by one big instruction joins its region.
    let mut parent: Vec<Option<InstId>> = vec![None; n];
    for (h, i) in c.insts.iter() {
        if !big[h.index()] {
            continue;
        }
        for &o in &i.operands {
            if big[o.index()] && o != c.root && unique(o) == [h] {
                parent[o.index()] = Some(h);
            }
        }
    }
    let root_of = |mut h: InstId| {
        while let Some(p) = parent[h.index()] {
            h = p;
        }
        h
    };
    let Some(order) = c.post_order() else {
        return out;
    };
    for &h in &order {
        if !big[h.index()] {
            continue;
        }
        let r = root_of(h);
        let dims = c.insts[r]
            .shape
            .as_array()
            .map(|a| a.udims())
            .unwrap_or_default();
        let reg = out.regions[r.index()].get_or_insert_with(|| Region {
            members: Vec::new(),
            lazy: Vec::new(),
            split: split(&dims, vmem),
        });
        reg.members.push(h);
    }
    // Lazy broadcasts: every reader a region member (each region makes its own chunks), a
    // small operand.
    for (b, bi) in c.insts.iter() {
        if bi.opcode != Opcode::Broadcast || b == c.root {
            continue;
        }
        let us = unique(b);
        if us.is_empty() || !us.iter().all(|u| big[u.index()]) {
            continue;
        }
        let small = bi
            .operands
            .first()
            .and_then(|&o| array_bytes(&c.insts[o].shape))
            .is_some_and(|x| x <= vmem / 8);
        let mut roots: Vec<InstId> = us.iter().map(|&u| root_of(u)).collect();
        roots.sort_by_key(|r| r.index());
        roots.dedup();
        let od: Vec<usize> = bi
            .operands
            .first()
            .and_then(|&o| c.insts[o].shape.as_array())
            .map(|a| a.udims())
            .unwrap_or_default();
        let kinds: Option<Vec<Lazy>> = roots
            .iter()
            .map(|r| {
                let reg = out.regions[r.index()].as_ref()?;
                lazy_kind(bi, &od, reg.split)
            })
            .collect();
        let (true, Some(kinds)) = (small, kinds) else {
            continue;
        };
        for (r, kind) in roots.iter().zip(kinds) {
            if let Some(reg) = out.regions[r.index()].as_mut() {
                reg.lazy.push((b, kind));
            }
        }
        out.fused.push(b);
    }
    for reg in out.regions.iter().flatten() {
        out.fused
            .extend(reg.members[..reg.members.len() - 1].iter().copied());
    }
    out
}

/// Where a member's operand comes from, chunk by chunk.
#[derive(Clone)]
enum Src {
    /// Rows copied in from HBM (input buffer `k`).
    Hbm(usize),
    /// Rows of an array already in VMEM.
    Vmem(Buf),
    /// A one-element array (a scalar select predicate or clamp bound).
    Scalar(Buf),
    /// Lazy broadcast `k`.
    Lazy(usize),
    /// The chunk of member `k`.
    Member(usize),
}

impl Lowerer<'_> {
    /// Lowers the region rooted at `h`, if `h` is a region's root.
    pub(crate) fn lower_ew_region(&mut self, h: InstId) -> CResult<Option<Val>> {
        if self.depth() != 0 {
            return Ok(None);
        }
        let Some(reg) = self.ew_regions[h.index()].clone() else {
            return Ok(None);
        };
        let c = self.m.entry();
        let (rty, dims) = self.out_shape(h)?;
        let outer: usize = dims[..reg.split].iter().product();
        let inner: usize = dims[reg.split..].iter().product();
        // Sources of every member's operands.
        let mut hbm_in: Vec<(InstId, Slot)> = Vec::new();
        let mut lazy_src: Vec<(InstId, Lazy, Buf)> = Vec::new();
        let mut args: Vec<Vec<Src>> = Vec::new();
        for &mb in &reg.members {
            let mut a = Vec::new();
            for &o in &c.insts[mb].operands {
                if let Some(k) = reg.members.iter().position(|&x| x == o) {
                    a.push(Src::Member(k));
                } else if let Some(&(_, kind)) = reg.lazy.iter().find(|(b, _)| *b == o) {
                    let k = match lazy_src.iter().position(|(b, _, _)| *b == o) {
                        Some(k) => k,
                        None => {
                            let src = self.vmem_value(c.insts[o].operands[0])?;
                            lazy_src.push((o, kind, src));
                            lazy_src.len() - 1
                        }
                    };
                    a.push(Src::Lazy(k));
                } else {
                    match self.val(o)? {
                        Val::Array(b) if b.elems() == 1 && outer * inner != 1 => {
                            a.push(Src::Scalar(b))
                        }
                        Val::Array(b) => match self.big_with_home(&b) {
                            // A large operand with a valid HBM copy (a parameter, a reloaded
                            // spill) streams from there: its VMEM buffer may then move out to
                            // make room for the chunks.
                            Some(s) => {
                                let k = match hbm_in.iter().position(|(x, _)| *x == o) {
                                    Some(k) => k,
                                    None => {
                                        hbm_in.push((o, s));
                                        self.untouch(&[o]);
                                        hbm_in.len() - 1
                                    }
                                };
                                a.push(Src::Hbm(k));
                            }
                            None => a.push(Src::Vmem(b)),
                        },
                        Val::Hbm(s)
                            if s.dims.iter().product::<usize>() == 1 && outer * inner != 1 =>
                        {
                            // A scalar in HBM (a parameter, a spill): into VMEM, splat per chunk.
                            a.push(Src::Scalar(self.vmem_value(o)?))
                        }
                        Val::Hbm(s) => {
                            let k = match hbm_in.iter().position(|(x, _)| *x == o) {
                                Some(k) => k,
                                None => {
                                    hbm_in.push((o, s));
                                    hbm_in.len() - 1
                                }
                            };
                            a.push(Src::Hbm(k));
                        }
                        _ => return Err(self.unsupported("a tuple or token operand here")),
                    }
                }
            }
            args.push(a);
        }
        // Chunk rows: every buffer at most 512 KiB, both sets within the VMEM made free.
        let ty_of = |x: InstId| -> CResult<ElementType> {
            c.insts[x]
                .shape
                .as_array()
                .map(|a| a.ty)
                .ok_or_else(|| CompileError::Internal("region member is not an array".into()))
        };
        // (bytes per element, buffers of a chunk): two sets, an invariant broadcast once, and
        // one more chunk for the temporary of a row broadcast's permute or a scalar's splat.
        let mut widths = Vec::new();
        for (_, s) in &hbm_in {
            widths.push((s.ty.byte_size() as u64, 2));
        }
        for (b, kind, _) in &lazy_src {
            let w = ty_of(*b)?.byte_size() as u64;
            widths.push((w, if *kind == Lazy::Invariant { 1 } else { 3 }));
        }
        for (mi, &mb) in reg.members.iter().enumerate() {
            let scalar = args[mi].iter().any(|a| matches!(a, Src::Scalar(_)));
            let w = ty_of(mb)?.byte_size() as u64;
            widths.push((w, if scalar { 3 } else { 2 }));
        }
        let widest = widths
            .iter()
            .map(|&(w, _)| w * inner as u64)
            .max()
            .unwrap_or(1);
        let per_row: u64 = widths.iter().map(|&(w, n)| w * n * inner as u64).sum();
        // Alignment slack: each buffer may round up by one alignment unit.
        let slack = widths.len() as u64 * 2 * super::alloc::ALIGN;
        let cap_rows = ((512 * 1024) / widest).max(1).min(outer as u64);
        self.make_room((cap_rows * per_row + slack).min(self.arch.vmem.bytes))?;
        let free = self.vmem_largest_free().saturating_sub(slack);
        let k = (free / per_row.max(1)).min(cap_rows);
        if k == 0 {
            return Err(self.too_large(format!(
                "streaming element-wise `{}`: one row of its chunks ({per_row} bytes for all \
                 its buffers) does not fit the free VMEM ({free} bytes)",
                c.insts[h].name
            )));
        }
        let k = k as usize;
        let chunk = k * inner;
        let mut in_bufs = [Vec::new(), Vec::new()];
        let mut lazy_bufs: [Vec<Buf>; 2] = [Vec::new(), Vec::new()];
        let mut mem_bufs = [Vec::new(), Vec::new()];
        for set in 0..2 {
            for (_, s) in &hbm_in {
                in_bufs[set].push(self.tmp(s.ty, vec![chunk])?);
            }
            for (i, (b, kind, _)) in lazy_src.iter().enumerate() {
                if set == 1 && *kind == Lazy::Invariant {
                    let same = lazy_bufs[0][i].clone();
                    lazy_bufs[1].push(same);
                } else {
                    lazy_bufs[set].push(self.tmp(ty_of(*b)?, vec![chunk])?);
                }
            }
            for &mb in &reg.members {
                mem_bufs[set].push(self.tmp(ty_of(mb)?, vec![chunk])?);
            }
        }
        // Invariant broadcasts: once, k rows.
        let mut rows_dims = vec![k];
        rows_dims.extend_from_slice(&dims[reg.split..]);
        for (i, (b, kind, src)) in lazy_src.iter().enumerate() {
            if *kind == Lazy::Invariant {
                let bd = lazy_dims(&c.insts[*b], reg.split, 0);
                let out = lazy_bufs[0][i].with_dims(rows_dims.clone());
                self.broadcast_into(&out, src, &bd)?;
            }
        }
        let out = self.hbm_array(rty, dims.clone(), &c.insts[h].name)?;
        let chunks = outer.div_ceil(k);
        let load = |l: &mut Self, i: usize| -> CResult<()> {
            let (r0, rows) = (i * k, k.min(outer - i * k));
            for (j, (_, s)) in hbm_in.iter().enumerate() {
                let w = s.ty.byte_size() as u64;
                let row = inner as u64 * w;
                l.dma(
                    (Space::Vmem, in_bufs[i % 2][j].addr),
                    (Space::Hbm, s.addr + r0 as u64 * row),
                    rows as u64 * row,
                )?;
            }
            Ok(())
        };
        load(self, 0)?;
        for i in 0..chunks {
            if i + 1 < chunks {
                load(self, i + 1)?;
            }
            let set = i % 2;
            let (r0, rows) = (i * k, k.min(outer - i * k));
            let n = rows * inner;
            let flat = |b: &Buf| b.with_dims(vec![n]);
            for (j, (b, kind, src)) in lazy_src.iter().enumerate() {
                if let Lazy::Rows { t } = *kind {
                    let op_inner: usize = src.dims[t..].iter().product();
                    let w = src.ty.byte_size() as u64;
                    let mut sd = vec![rows];
                    sd.extend_from_slice(&src.dims[t..]);
                    let sub = Buf {
                        addr: src.addr + (r0 * op_inner) as u64 * w,
                        dims: sd,
                        ..src.clone()
                    };
                    let mut od = vec![rows];
                    od.extend_from_slice(&dims[reg.split..]);
                    let dst = lazy_bufs[set][j].with_dims(od);
                    let bd = lazy_dims(&c.insts[*b], reg.split, t);
                    self.broadcast_into(&dst, &sub, &bd)?;
                }
            }
            for (mi, &mb) in reg.members.iter().enumerate() {
                let a: Vec<Buf> = args[mi]
                    .iter()
                    .map(|s| match s {
                        Src::Hbm(j) => flat(&in_bufs[set][*j]),
                        Src::Vmem(b) => Buf {
                            addr: b.addr + (r0 * inner) as u64 * b.ty.byte_size() as u64,
                            dims: vec![n],
                            ..b.clone()
                        },
                        Src::Scalar(b) => b.clone(),
                        Src::Lazy(j) => flat(&lazy_bufs[set][*j]),
                        Src::Member(j) => flat(&mem_bufs[set][*j]),
                    })
                    .collect();
                let dst = flat(&mem_bufs[set][mi]);
                compute_into(self, mb, &dst, &a)?;
            }
            let root = &mem_bufs[set][reg.members.len() - 1];
            let row = inner as u64 * rty.byte_size() as u64;
            self.dma(
                (Space::Hbm, out.addr + r0 as u64 * row),
                (Space::Vmem, root.addr),
                rows as u64 * row,
            )?;
        }
        self.stats.ew_streams += 1;
        let lu = self.last_use_of(h);
        Ok(Some(self.in_hbm(&out, lu)))
    }
}

impl Lowerer<'_> {
    /// The HBM copy of VMEM array `b` if it is larger than a quarter of VMEM and its whole
    /// allocation has a valid copy there.
    fn big_with_home(&self, b: &Buf) -> Option<Slot> {
        let a = &self.allocs[b.alloc];
        let home = a.home.filter(|_| !a.freed)?;
        (b.bytes() > self.arch.vmem.bytes / BIG_FRACTION).then(|| Slot {
            addr: home + (b.addr - a.addr),
            ty: b.ty,
            dims: b.dims.clone(),
        })
    }
}

/// The broadcast dimensions of lazy broadcast `b` in a chunk `[rows, dims[split..]...]` whose
/// operand is `[rows, operand dims t..]` (`t` = 0: the operand as it is).
fn lazy_dims(b: &hlo::Instruction, split: usize, t: usize) -> Vec<usize> {
    let hlo::View::Broadcast { dimensions } = b.view() else {
        return Vec::new();
    };
    let rest = dimensions[t..].iter().map(|&d| d as usize - split + 1);
    if t == 0 {
        rest.collect()
    } else {
        std::iter::once(0).chain(rest).collect()
    }
}
