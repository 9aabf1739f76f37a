//! Gather, in full generality: batch dimensions (including `operand_batching_dims` /
//! `start_indices_batching_dims`), any `index_vector_dim` (equal to the indices' rank means a
//! trailing index vector of length 1), offset and collapsed dimensions.
//!
//! For each result index `Out`: the batch part `G` (result dims not in `offset_dims`) selects an
//! index vector `S` of `start_indices`; `start[start_index_map[k]] = S[k]` clamped to
//! `[0, operand_dim - slice_size]` (XLA clamps, never reads out of bounds);
//! `start[operand_batching_dims[i]] = G` at `start_indices_batching_dims[i]`; the offset part
//! adds `Out[offset_dims[k]]` to the k-th operand dim that is neither collapsed nor batching.

use crate::error::{EResult, EvalError};
use crate::util::{index_map, mk, operand, out_array, shape_dims, strides, take, to_i64_vec};
use hlo::ir::Instruction;
use hlo::literal::Literal;

/// The values of an indices array, read through its geometry ([`hlo::indexing::Indices`]).
pub struct IndexValues<'a> {
    /// Where each component lives.
    pub at: &'a hlo::indexing::Indices,
    /// Flattened index values.
    pub values: Vec<i64>,
}

impl IndexValues<'_> {
    /// Component `k` of the index vector at batch position `g`.
    pub fn component(&self, g: &[usize], k: usize) -> i64 {
        self.values[self.at.offset(g, k)]
    }
}

/// `gather(operand, start_indices), ...`.
pub fn gather(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let (a, ind) = (operand(ops, 0)?, operand(ops, 1)?);
    let rank = a.dims.len();
    let out_dims = shape_dims(out_array(&inst.shape)?)?;
    let geo =
        hlo::indexing::GatherGeometry::resolve(&inst.attrs, &a.shape(), &ind.shape(), &out_dims)
            .map_err(EvalError::invalid)?;
    let space = IndexValues {
        at: &geo.indices,
        values: to_i64_vec(&ind.data)?,
    };
    let (map, sizes) = (&geo.start_index_map, &geo.slice_sizes);
    let (obatch, ibatch) = (&geo.operand_batching, &geo.indices_batching);
    let (offset_dims, offset_operand, out_batch) =
        (&geo.offset_dims, &geo.offset_operand, &geo.out_batch);
    let st = strides(&a.dims);
    let mut g = vec![0usize; out_batch.len()];
    let mut start = vec![0usize; rank];
    let idx = index_map(&out_dims, |o| {
        for (p, &d) in out_batch.iter().enumerate() {
            g[p] = o[d];
        }
        start.iter_mut().for_each(|s| *s = 0);
        for (k, &d) in map.iter().enumerate() {
            let hi = (a.dims[d] - sizes[d]) as i64;
            start[d] = space.component(&g, k).clamp(0, hi) as usize;
        }
        for (&od, &p) in obatch.iter().zip(ibatch) {
            start[od] = g[p];
        }
        for (&od, &opd) in offset_dims.iter().zip(offset_operand) {
            start[opd] += o[od];
        }
        start.iter().zip(&st).map(|(&i, &t)| i * t).sum()
    })?;
    mk(out_dims, take(&a.data, &idx))
}
