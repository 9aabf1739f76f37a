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

/// The shared index bookkeeping of gather and scatter.
pub struct IndexSpace {
    /// Dims of the indices array with the index vector dim made explicit.
    pub idx_dims: Vec<usize>,
    pub ivd: usize,
    /// Flattened index values.
    pub values: Vec<i64>,
    /// Strides of `idx_dims`.
    pub idx_strides: Vec<usize>,
    /// Index dims other than `ivd`, in order (the batch/scatter dims).
    pub batch_dims: Vec<usize>,
}

impl IndexSpace {
    pub fn new(dims: &[usize], values: Vec<i64>, ivd: i64) -> EResult<IndexSpace> {
        let ivd = usize::try_from(ivd)
            .ok()
            .filter(|&v| v <= dims.len())
            .ok_or_else(|| EvalError::invalid(format!("index_vector_dim={ivd} out of range")))?;
        let mut idx_dims = dims.to_vec();
        if ivd == dims.len() {
            idx_dims.push(1);
        }
        let batch_dims = (0..idx_dims.len()).filter(|&d| d != ivd).collect();
        let idx_strides = strides(&idx_dims);
        Ok(IndexSpace {
            idx_dims,
            ivd,
            values,
            idx_strides,
            batch_dims,
        })
    }
    /// Length of an index vector.
    pub fn vector_len(&self) -> usize {
        self.idx_dims[self.ivd]
    }
    /// Sizes of the batch dims.
    pub fn batch_sizes(&self) -> Vec<usize> {
        self.batch_dims.iter().map(|&d| self.idx_dims[d]).collect()
    }
    /// Component `k` of the index vector at batch position `g`.
    pub fn component(&self, g: &[usize], k: usize) -> i64 {
        let mut off = k * self.idx_strides[self.ivd];
        for (p, &d) in self.batch_dims.iter().enumerate() {
            off += g[p] * self.idx_strides[d];
        }
        self.values[off]
    }
    /// Position among the batch dims of indices dim `d` (for `*_batching_dims`).
    pub fn batch_pos(&self, d: i64) -> EResult<usize> {
        usize::try_from(d)
            .ok()
            .and_then(|d| self.batch_dims.iter().position(|&b| b == d))
            .ok_or_else(|| {
                EvalError::invalid(format!("indices batching dim {d} is not a batch dim"))
            })
    }
}

pub(crate) fn list(v: &Option<Vec<i64>>) -> &[i64] {
    v.as_deref().unwrap_or(&[])
}

pub(crate) fn dim_in(d: i64, rank: usize, what: &str) -> EResult<usize> {
    usize::try_from(d)
        .ok()
        .filter(|&x| x < rank)
        .ok_or_else(|| EvalError::invalid(format!("{what} {d} out of range for rank {rank}")))
}

/// `gather(operand, start_indices), ...`.
pub fn gather(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let (a, ind) = (operand(ops, 0)?, operand(ops, 1)?);
    let at = &inst.attrs;
    let rank = a.dims.len();
    let out_dims = shape_dims(out_array(&inst.shape)?)?;
    let space = IndexSpace::new(
        &ind.dims,
        to_i64_vec(&ind.data)?,
        at.index_vector_dim.unwrap_or(ind.dims.len() as i64),
    )?;
    let offset_dims: Vec<usize> = list(&at.offset_dims)
        .iter()
        .map(|&d| dim_in(d, out_dims.len(), "offset dim"))
        .collect::<EResult<_>>()?;
    let sizes: Vec<usize> = list(&at.slice_sizes)
        .iter()
        .map(|&s| s.max(0) as usize)
        .collect();
    if sizes.len() != rank || sizes.iter().zip(&a.dims).any(|(s, d)| s > d) {
        return Err(EvalError::invalid(format!(
            "slice_sizes {sizes:?} for operand dims {:?}",
            a.dims
        )));
    }
    let collapsed: Vec<usize> = list(&at.collapsed_slice_dims)
        .iter()
        .map(|&d| dim_in(d, rank, "collapsed dim"))
        .collect::<EResult<_>>()?;
    let obatch: Vec<usize> = list(&at.operand_batching_dims)
        .iter()
        .map(|&d| dim_in(d, rank, "operand batching dim"))
        .collect::<EResult<_>>()?;
    let ibatch: Vec<usize> = list(&at.start_indices_batching_dims)
        .iter()
        .map(|&d| space.batch_pos(d))
        .collect::<EResult<_>>()?;
    let map: Vec<usize> = list(&at.start_index_map)
        .iter()
        .map(|&d| dim_in(d, rank, "start_index_map dim"))
        .collect::<EResult<_>>()?;
    if map.len() != space.vector_len() || obatch.len() != ibatch.len() {
        return Err(EvalError::invalid(
            "start_index_map or batching dims do not match the indices",
        ));
    }
    let offset_operand: Vec<usize> = (0..rank)
        .filter(|d| !collapsed.contains(d) && !obatch.contains(d))
        .collect();
    let out_batch: Vec<usize> = (0..out_dims.len())
        .filter(|d| !offset_dims.contains(d))
        .collect();
    if offset_operand.len() != offset_dims.len()
        || out_batch.iter().map(|&d| out_dims[d]).collect::<Vec<_>>() != space.batch_sizes()
        || offset_dims
            .iter()
            .zip(&offset_operand)
            .any(|(&o, &d)| out_dims[o] > sizes[d])
    {
        return Err(EvalError::invalid(
            "gather result shape does not match its attributes",
        ));
    }
    // Batching indices are in range by construction only if the sizes agree.
    for (&od, &p) in obatch.iter().zip(&ibatch) {
        if space.batch_sizes()[p] > a.dims[od] {
            return Err(EvalError::invalid(
                "batching dim sizes differ between operand and indices",
            ));
        }
    }
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
        for (&od, &p) in obatch.iter().zip(&ibatch) {
            start[od] = g[p];
        }
        for (&od, &opd) in offset_dims.iter().zip(&offset_operand) {
            start[opd] += o[od];
        }
        start.iter().zip(&st).map(|(&i, &t)| i * t).sum()
    })?;
    mk(out_dims, take(&a.data, &idx))
}
