//! `gather` on the VPU, in full generality (offset dims, collapsed slice dims,
//! `start_index_map`, operand / start-indices batching dims, any `index_vector_dim`), with the
//! start indices read and clamped **on chip** (they are data).
//!
//! Algorithm. Let `G` be the number of index vectors (the batch positions of the indices) and
//! `K` their length. For each component `k`: a compile-time table gathers `S[g, k]` for every
//! `g` (`vpu.gather`, `G` elements), it is clamped to `[0, dim - slice_size]` in the indices'
//! own type (`vpu.max`/`vpu.min` with splatted bounds, as XLA clamps), converted to u32,
//! multiplied by the operand stride of `start_index_map[k]` and summed into `start[g]` (the flat
//! offset of the slice). A second table expands `start` to the output shape (`out[o] =
//! start[g(o)]`), a third adds the compile-time part of each output's source offset (its
//! position inside the slice and the batching dims), and one `vpu.gather` from the operand with
//! that on-chip index array produces the result.
//!
//! Cost: `K·(gather + 2 clamps + cvt + mul + add)` VPU instructions on `G` elements, then an
//! expanding gather, an add and the final gather on the output's elements (each one pass of
//! the cross-lane or ALU unit), plus the DMA of `K + 2` u32 tables.

use super::movement::strides;
use super::{Buf, Lowerer, Val};
use crate::error::{CResult, CompileError};
use hlo::{ElementType, InstId, Opcode};

/// Largest value of an integer type, as u64.
pub(crate) fn int_max(ty: ElementType) -> u64 {
    let bits = ty.byte_size() as u32 * 8;
    if ty.is_signed_int() {
        (1u64 << (bits - 1)) - 1
    } else if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

pub(crate) use hlo::indexing::Indices;

/// Calls `f(index)` for every index of `dims` in row-major order.
pub(crate) fn each_index(dims: &[usize], mut f: impl FnMut(&[usize])) {
    let n: usize = dims.iter().product();
    let mut idx = vec![0usize; dims.len()];
    for _ in 0..n {
        f(&idx);
        hlo::shape::next_index(&mut idx, dims);
    }
}

impl Lowerer<'_> {
    /// Component `k` of every index vector (`G` elements, the indices' type), read on chip.
    pub(crate) fn index_component(&mut self, ind: &Buf, space: &Indices, k: usize) -> CResult<Buf> {
        let mut table = Vec::new();
        each_index(&space.batch_sizes(), |g| {
            table.push(space.offset(g, k) as u32)
        });
        self.vgather_table(&ind.with_dims(vec![ind.elems() as usize]), &table)
    }
}

/// Lowers `gather`; `None` if `h` is not one.
pub fn lower(l: &mut Lowerer<'_>, h: InstId) -> CResult<Option<Val>> {
    let inst = &l.comp().insts[h];
    if inst.opcode != Opcode::Gather {
        return Ok(None);
    }
    let a = l.arr(inst.operands[0])?;
    let ind = l.arr(inst.operands[1])?;
    let (ty, out_dims) = l.out_shape(h)?;
    l.vty(ty)?;
    if !ind.ty.is_integer() {
        return Err(l.unsupported(format!("gather with {} indices", ind.ty)));
    }
    let shape = |o: usize| {
        l.comp().insts[inst.operands[o]]
            .shape
            .as_array()
            .ok_or_else(|| CompileError::Internal("gather of a tuple".into()))
    };
    let geo = hlo::indexing::GatherGeometry::resolve(&inst.attrs, shape(0)?, shape(1)?, &out_dims)
        .map_err(|e| {
            l.unsupported(format!(
                "gather whose attributes do not match its shapes: {e}"
            ))
        })?;
    let space = &geo.indices;
    let (map, sizes) = (&geo.start_index_map, &geo.slice_sizes);
    let (obatch, ibatch) = (&geo.operand_batching, &geo.indices_batching);
    let (offset_dims, offset_operand, out_batch) =
        (&geo.offset_dims, &geo.offset_operand, &geo.out_batch);
    if a.elems() > u32::MAX as u64 || out_dims.iter().product::<usize>() as u64 > u32::MAX as u64 {
        return Err(l.unsupported("gather with 2^32 or more elements"));
    }
    let out = l.new_buf(h, ty, out_dims.clone())?;
    let outs = out.elems();
    if outs == 0 {
        return Ok(Some(Val::Array(out)));
    }
    let st = strides(&a.dims);
    let g_n: usize = space.batch_sizes().iter().product();
    // start[g]: the clamped flat offset of each slice, on chip.
    let mut start = l.vconst(ElementType::U32, 0, g_n as u64)?;
    for (k, &d) in map.iter().enumerate() {
        let comp = l.index_component(&ind, space, k)?;
        let hi = (a.dims[d] - sizes[d]) as u64;
        let lo = if ind.ty.is_signed_int() {
            let t = l.vop2c(Opcode::Maximum, &comp, 0)?;
            l.release(&comp);
            t
        } else {
            comp
        };
        let clamped = if hi < int_max(ind.ty) {
            let t = l.vop2c(Opcode::Minimum, &lo, hi)?;
            l.release(&lo);
            t
        } else {
            lo
        };
        let u = l.vcvt(&clamped, ElementType::U32)?;
        l.release(&clamped);
        let scaled = l.vop2c(Opcode::Multiply, &u, st[d] as u64)?;
        l.release(&u);
        let sum = l.vop2(Opcode::Add, &start, &scaled)?;
        l.release(&scaled);
        l.release(&start);
        start = sum;
    }
    // Expand to the output and add each output's static offset.
    let mut expand = Vec::with_capacity(outs as usize);
    let mut base = Vec::with_capacity(outs as usize);
    let gs = strides(&space.batch_sizes());
    let mut g = vec![0usize; out_batch.len()];
    each_index(&out_dims, |o| {
        for (p, &d) in out_batch.iter().enumerate() {
            g[p] = o[d];
        }
        expand.push(g.iter().zip(&gs).map(|(x, s)| x * s).sum::<usize>() as u32);
        let mut off = 0usize;
        for (&od, &p) in obatch.iter().zip(ibatch) {
            off += g[p] * st[od];
        }
        for (&od, &opd) in offset_dims.iter().zip(offset_operand) {
            off += o[od] * st[opd];
        }
        base.push(off as u32);
    });
    let identity = expand.iter().enumerate().all(|(i, &e)| i as u32 == e);
    let full = if identity && expand.len() == g_n {
        start.clone()
    } else {
        l.vgather_table(&start, &expand)?
    };
    let idx = if base.iter().all(|&b| b == 0) {
        full.clone()
    } else {
        let tb = l.index_table(&base)?;
        let s = l.vop2(Opcode::Add, &full, &tb)?;
        l.release(&tb);
        s
    };
    let flat = out.with_dims(vec![outs as usize]);
    l.gather_dyn(&flat, &a, &idx)?;
    Ok(Some(Val::Array(out)))
}
