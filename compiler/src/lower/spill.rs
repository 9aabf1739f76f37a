//! Spilling: when the live values of the entry computation do not fit VMEM, some of them move
//! to HBM and come back before their next use.
//!
//! Invariants:
//! - Only allocations of the entry computation (depth 0) are spilled, and only while the
//!   entry itself is lowered: code in a loop body runs many times, so a spill there would copy
//!   whatever the body left in the freed bytes on the second iteration.
//! - Nothing is spilled while an asynchronous collective is in flight (its transfers write
//!   VMEM buffers behind the emitter's back until the done).
//! - An allocation the current instruction reads (any value [`Lowerer::val`] returned while
//!   lowering it), created, or pinned is never the victim: lowering code holds its `Buf`s. An
//!   instruction that reads an operand only through its HBM copy (a late-streamed dot, a
//!   streamed reduce) gives it up first ([`Lowerer::untouch`]).
//! - A spilled allocation's values become [`Val::Hbm`] leaves that point into its HBM copy
//!   (every alias: reshapes, tuple elements); a [`SpillRec`] remembers the copy, and the
//!   next instruction that needs any of them in VMEM reloads the whole allocation
//!   ([`Lowerer::reload_operands`]), rewriting those leaves back to one new VMEM buffer.
//! - The victim is the allocation whose next reader is furthest away (Belady); among equals
//!   one with a valid HBM copy (a parameter, a constant, a value reloaded and not written in
//!   place since) goes first, because dropping it moves no bytes.
//! - A parameter or constant that does not fit when the program starts is not loaded at all:
//!   it starts as a spilled value whose copy is its own HBM slot.
//!
//! Spill slots come from the HBM bump allocator and are not reused.

use super::alloc::ALIGN;
use super::{Lowerer, Val};
use crate::error::CResult;
use crate::io::Slot;
use hlo::{ElementType, InstId, Opcode};
use isa::Space;

/// A spilled allocation's copy in HBM.
#[derive(Clone, Debug)]
pub(crate) struct SpillRec {
    /// First byte of the copy (the allocation's first byte maps here).
    pub hbm: u64,
    /// Bytes of the allocation.
    pub bytes: u64,
    /// Position of its last reader in the entry's order.
    pub last_use: usize,
}

impl SpillRec {
    fn holds(&self, addr: u64) -> bool {
        (self.hbm..self.hbm + self.bytes.max(1)).contains(&addr)
    }
}

/// Spill counts (for `systole compile` and run reports).
#[derive(Clone, Copy, Debug, Default)]
pub struct SpillStats {
    /// Allocations moved to HBM (copied or dropped).
    pub spills: u64,
    /// Bytes copied VMEM → HBM.
    pub spill_bytes: u64,
    /// Allocations brought back.
    pub reloads: u64,
    /// Bytes copied HBM → VMEM by reloads.
    pub reload_bytes: u64,
}

impl Lowerer<'_> {
    /// Whether allocation failures may spill now (see the module docs).
    pub(crate) fn may_spill(&self) -> bool {
        self.depth() == 0 && self.in_flight.is_empty() && self.spilling
    }

    /// Moves one allocation out of VMEM; false if none may go.
    pub(crate) fn evict_one(&mut self) -> CResult<bool> {
        let pos = self.pos;
        let mut touched = vec![false; self.allocs.len()];
        for &a in self.touched.borrow().iter() {
            touched[a] = true;
        }
        // Next reader of each live allocation, from the values that point into it.
        let mut next = vec![None::<usize>; self.allocs.len()];
        for (i, v) in self.vals.iter().enumerate() {
            let Some(v) = v else { continue };
            let n = self.next_use(i, pos);
            let mut leaves = Vec::new();
            array_leaves(v, &mut leaves);
            for b in leaves {
                let e = next[b.alloc].get_or_insert(n);
                *e = (*e).min(n);
            }
        }
        let victim = self
            .unfreed
            .iter()
            .copied()
            .filter(|&k| {
                let a = &self.allocs[k];
                !a.freed
                    && a.pins == 0
                    && a.depth == 0
                    && k < self.inst_first_alloc
                    && !touched[k]
                    && next[k].is_some()
            })
            .max_by_key(|&k| (next[k], self.allocs[k].home.is_some(), self.allocs[k].bytes));
        let Some(k) = victim else {
            return Ok(false);
        };
        let (addr, bytes, last_use) = {
            let a = &self.allocs[k];
            (a.addr, a.bytes, a.last_use)
        };
        let hbm = match self.allocs[k].home {
            Some(h) => h,
            None => {
                let name = format!("a spill of {}", self.allocs[k].hlo);
                let h = self.hbm_slot(bytes, &name)?;
                self.dma((Space::Hbm, h), (Space::Vmem, addr), bytes)?;
                self.stats.spill.spill_bytes += bytes;
                h
            }
        };
        self.stats.spill.spills += 1;
        let pc = self.e.b.pc();
        self.allocs[k].free(&mut self.vmem, pc);
        for v in self.vals.iter_mut().flatten() {
            map_leaves(v, &mut |leaf| match leaf {
                Val::Array(b) if b.alloc == k => Some(Val::Hbm(Slot {
                    addr: hbm + (b.addr - addr),
                    ty: b.ty,
                    dims: b.dims.clone(),
                })),
                _ => None,
            });
        }
        self.spills.push(SpillRec {
            hbm,
            bytes,
            last_use,
        });
        Ok(true)
    }

    /// Position of the first reader of value `i` after `pos` (`usize::MAX`: none before the
    /// end, as for the result).
    fn next_use(&self, i: usize, pos: usize) -> usize {
        let us = &self.users_at[i];
        let k = us.partition_point(|&u| u <= pos);
        us.get(k).copied().unwrap_or(usize::MAX)
    }

    /// Registers an array that starts in HBM at `slot` (a parameter or constant that did not
    /// fit VMEM) as a spilled value read until `last_use`.
    pub(crate) fn spilled_from_start(&mut self, slot: &Slot, last_use: usize) -> Val {
        self.stats.spill.spills += 1;
        self.in_hbm(slot, last_use)
    }

    /// An array computed into HBM at `slot` (read until `last_use`): a reader that needs it
    /// in VMEM reloads it like a spilled value.
    pub(crate) fn in_hbm(&mut self, slot: &Slot, last_use: usize) -> Val {
        self.spills.push(SpillRec {
            hbm: slot.addr,
            bytes: slot.bytes(),
            last_use,
        });
        Val::Hbm(slot.clone())
    }

    /// The array value of `h` in VMEM (reloaded first if it was spilled).
    pub(crate) fn vmem_value(&mut self, h: InstId) -> CResult<super::Buf> {
        if let Val::Hbm(s) = self.val(h)? {
            if let Some(k) = self.spill_of(s.addr) {
                self.reload(k)?;
            }
        }
        self.arr(h)
    }

    /// The HBM address of array value `h`'s bytes: where it lives if in HBM, its valid copy
    /// (a parameter's or constant's slot, a spill it was reloaded from), or a new slot it is
    /// copied to now.
    pub(crate) fn hbm_copy_of(&mut self, h: InstId) -> CResult<u64> {
        match self.val(h)? {
            Val::Hbm(s) => Ok(s.addr),
            Val::Array(b) => {
                let a = &self.allocs[b.alloc];
                if let (Some(home), false) = (a.home, a.freed) {
                    return Ok(home + (b.addr - a.addr));
                }
                let name = format!("an HBM copy of {}", self.comp().insts[h].name);
                let addr = self.hbm_slot(b.bytes(), &name)?;
                self.dma((Space::Hbm, addr), (Space::Vmem, b.addr), b.bytes())?;
                // A copy of the whole allocation is its valid copy: spilling it copies nothing.
                let a = &mut self.allocs[b.alloc];
                if b.addr == a.addr && b.bytes() == a.bytes {
                    a.home = Some(addr);
                }
                Ok(addr)
            }
            _ => Err(self.unsupported("a tuple or token operand here")),
        }
    }

    /// Forgets that the current instruction read `hs` (it reads them from HBM copies): their
    /// VMEM buffers may be spilled while it is lowered.
    pub(crate) fn untouch(&mut self, hs: &[InstId]) {
        let mut gone = Vec::new();
        for &h in hs {
            if let Some(v) = &self.vals[h.index()] {
                let mut leaves = Vec::new();
                array_leaves(v, &mut leaves);
                gone.extend(leaves.iter().map(|b| b.alloc));
            }
        }
        self.touched.borrow_mut().retain(|a| !gone.contains(a));
    }

    /// Position of the last reader of entry value `h`.
    pub(crate) fn last_use_of(&self, h: InstId) -> usize {
        self.last_use[h.index()]
    }

    /// The largest block of VMEM free now.
    pub(crate) fn vmem_largest_free(&self) -> u64 {
        self.vmem.largest_free()
    }

    /// The spill record holding HBM byte `addr`, if it is one.
    fn spill_of(&self, addr: u64) -> Option<usize> {
        self.spills.iter().position(|s| s.holds(addr))
    }

    /// Keeps a spilled leaf's record alive as long as `lu`.
    pub(crate) fn extend_spill(&mut self, s: &Slot, lu: usize) {
        if let Some(k) = self.spill_of(s.addr) {
            self.spills[k].last_use = self.spills[k].last_use.max(lu);
        }
    }

    /// Brings every spilled leaf of `h`'s operands back to VMEM (before `h` is lowered), except
    /// where `h` only passes values along ([`passes_along`]): those keep pointing into HBM
    /// until a reader needs them.
    pub(crate) fn reload_operands(&mut self, h: InstId) -> CResult<()> {
        let inst = &self.comp().insts[h];
        if passes_along(inst.opcode) || self.spills.is_empty() {
            return Ok(());
        }
        let ops = inst.operands.clone();
        // Mark every operand as read first: reloading one must not evict another.
        let vals: Vec<Val> = ops.iter().map(|&o| self.val(o)).collect::<CResult<_>>()?;
        for v in vals {
            let mut slots = Vec::new();
            hbm_leaves(&v, &mut slots);
            for s in slots {
                if let Some(k) = self.spill_of(s.addr) {
                    self.reload(k)?;
                }
            }
        }
        Ok(())
    }

    /// After an instruction: starts reloading the spilled operands of `next`, the one lowered
    /// next, where they fit VMEM without spilling anything, so the copies overlap the work
    /// already issued.
    pub(crate) fn prefetch_operands(&mut self, next: InstId) -> CResult<()> {
        let inst = &self.comp().insts[next];
        if self.spills.is_empty() || !self.may_spill() || passes_along(inst.opcode) {
            return Ok(());
        }
        let mut slots = Vec::new();
        for &o in &inst.operands {
            if let Some(v) = &self.vals[o.index()] {
                hbm_leaves(v, &mut slots);
            }
        }
        self.spilling = false;
        let mut r = Ok(());
        for s in slots {
            if let Some(k) = self.spill_of(s.addr) {
                if self.vmem.largest_free() >= self.spills[k].bytes.div_ceil(ALIGN) * ALIGN {
                    r = self.reload(k);
                    if r.is_err() {
                        break;
                    }
                }
            }
        }
        self.spilling = true;
        r
    }

    /// Copies spill `k` back into a new VMEM buffer and points its leaves there.
    fn reload(&mut self, k: usize) -> CResult<()> {
        let rec = self.spills.remove(k);
        let b = self.buf_until(rec.last_use, ElementType::U8, vec![rec.bytes as usize])?;
        self.dma((Space::Vmem, b.addr), (Space::Hbm, rec.hbm), rec.bytes)?;
        self.allocs[b.alloc].home = Some(rec.hbm);
        self.touched.borrow_mut().push(b.alloc);
        self.stats.spill.reloads += 1;
        self.stats.spill.reload_bytes += rec.bytes;
        let fused = &self.fused;
        for (i, v) in self.vals.iter_mut().enumerate() {
            let Some(v) = v else { continue };
            if fused.get(i).copied().unwrap_or(false) {
                continue;
            }
            map_leaves(v, &mut |leaf| match leaf {
                Val::Hbm(s) if rec.holds(s.addr) => Some(Val::Array(super::Buf {
                    alloc: b.alloc,
                    addr: b.addr + (s.addr - rec.hbm),
                    ty: s.ty,
                    dims: s.dims.clone(),
                })),
                _ => None,
            });
        }
        Ok(())
    }

    /// Drops spill records nobody reads after `pos`.
    pub(crate) fn drop_dead_spills(&mut self, pos: usize) {
        self.spills.retain(|s| s.last_use > pos);
    }

    /// Before a `while` or `conditional` of the entry: spills (furthest next use first) until
    /// what its computations could allocate is free, since nothing spills inside them. The
    /// need is an upper bound: the sum of every result of theirs that takes a buffer.
    pub(crate) fn make_room_for_calls(&mut self, h: InstId) -> CResult<()> {
        if !self.may_spill() {
            return Ok(());
        }
        let m = self.m;
        let inst = &m.entry().insts[h];
        // Its operands stay (reading them marks them).
        for &o in &inst.operands {
            self.val(o)?;
        }
        let need: u64 = inst
            .attrs
            .called_computations()
            .into_iter()
            .map(|c| sub_need(m, c))
            .fold(leaf_bytes(&inst.shape), u64::saturating_add);
        self.make_room(need)
    }

    /// Spills (furthest next use first) until a block of `need` bytes is free or nothing
    /// more may move.
    pub(crate) fn make_room(&mut self, need: u64) -> CResult<()> {
        let need = need.min(self.vmem.capacity());
        // In one block: the buffers are of any sizes.
        while self.may_spill() && self.vmem.largest_free() < need {
            if !self.evict_one()? {
                break;
            }
        }
        Ok(())
    }

    /// Allocates `n` bytes of VMEM, spilling while it does not fit and spilling is allowed.
    pub(crate) fn vmem_alloc(&mut self, n: u64) -> CResult<Option<u64>> {
        loop {
            if let Some(a) = self.vmem.alloc(n) {
                return Ok(Some(a));
            }
            if !self.may_spill() || !self.evict_one()? {
                return Ok(None);
            }
        }
    }
}

/// Ops that only pass values along (aliases): an operand in HBM stays there.
fn passes_along(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::Tuple
            | Opcode::GetTupleElement
            | Opcode::OptimizationBarrier
            | Opcode::Reshape
            | Opcode::Bitcast
    )
}

/// The VMEM that computation `c` and those it calls could allocate at most: every result that
/// is not an alias (parameters, tuples, get-tuple-element, reshapes, bitcasts), aligned.
fn sub_need(m: &hlo::Module, c: hlo::CompId) -> u64 {
    m.comps[c]
        .insts
        .iter()
        .map(|(_, i)| {
            let own = match i.opcode {
                Opcode::Parameter
                | Opcode::Tuple
                | Opcode::GetTupleElement
                | Opcode::Reshape
                | Opcode::Bitcast => 0,
                _ => leaf_bytes(&i.shape),
            };
            let called: u64 = i
                .attrs
                .called_computations()
                .into_iter()
                .map(|k| sub_need(m, k))
                .sum();
            own.saturating_add(called)
        })
        .fold(0u64, u64::saturating_add)
}

/// The VMEM buffers of shape `s` take (each leaf aligned).
fn leaf_bytes(s: &hlo::Shape) -> u64 {
    match s {
        hlo::Shape::Array(a) => a
            .byte_size()
            .map_or(u64::MAX / 4, |n| n.div_ceil(ALIGN) * ALIGN),
        hlo::Shape::Tuple(ts) => ts.iter().map(leaf_bytes).fold(0, u64::saturating_add),
        hlo::Shape::Token => 0,
    }
}

/// The VMEM array leaves of `v`.
pub(crate) fn array_leaves<'v>(v: &'v Val, out: &mut Vec<&'v super::Buf>) {
    match v {
        Val::Array(b) => out.push(b),
        Val::Tuple(vs) => vs.iter().for_each(|x| array_leaves(x, out)),
        Val::Token | Val::Hbm(_) => {}
    }
}

/// The HBM array leaves of `v`.
fn hbm_leaves(v: &Val, out: &mut Vec<Slot>) {
    match v {
        Val::Hbm(s) => out.push(s.clone()),
        Val::Tuple(vs) => vs.iter().for_each(|x| hbm_leaves(x, out)),
        Val::Token | Val::Array(_) => {}
    }
}

/// Replaces each leaf of `v` for which `f` returns a new value.
fn map_leaves(v: &mut Val, f: &mut dyn FnMut(&Val) -> Option<Val>) {
    match v {
        Val::Tuple(vs) => vs.iter_mut().for_each(|x| map_leaves(x, f)),
        leaf => {
            if let Some(n) = f(leaf) {
                *leaf = n;
            }
        }
    }
}
