//! The index geometry of `gather` and `scatter`, resolved once from their dimension numbers and
//! the shapes of their operands (the semantics of XLA's operation semantics document): which
//! dimensions of the indices form an index vector and which enumerate windows, where each
//! component of an index vector lands in the operand, which operand dimensions a window spans.
//!
//! The evaluator and the compiler both walk this geometry; neither reads the dimension numbers
//! from `Attrs` itself. [`GatherGeometry::resolve`] and [`ScatterGeometry::resolve`] check the
//! attributes against the shapes with the verifier's own rules (`infer::gather`: one set of
//! checks, the verifier's message for the first that does not fit), then resolve them.

use crate::attrs::Attrs;
use crate::shape::ArrayShape;

fn list(v: &Option<Vec<i64>>) -> &[i64] {
    v.as_deref().unwrap_or(&[])
}

/// `v` as dimension indices below `rank`, or an error naming `what`.
fn dims_below(v: &Option<Vec<i64>>, rank: usize, what: &str) -> Result<Vec<usize>, String> {
    list(v)
        .iter()
        .map(|&d| {
            usize::try_from(d)
                .ok()
                .filter(|&x| x < rank)
                .ok_or_else(|| format!("{what} {d} out of range for rank {rank}"))
        })
        .collect()
}

use crate::shape::strides;

/// The indices array with its index vector dimension explicit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Indices {
    /// Dimensions, with a trailing 1 appended when `index_vector_dim` is the rank.
    pub dims: Vec<usize>,
    /// The index vector dimension.
    pub ivd: usize,
    /// The other dimensions, in order: they enumerate the index vectors (batch dimensions).
    pub batch: Vec<usize>,
    strides: Vec<usize>,
}

impl Indices {
    /// The geometry of indices of shape `dims` with index vector dimension `ivd` (at most the
    /// rank), or `None`.
    pub fn new(dims: &[usize], ivd: usize) -> Option<Indices> {
        if ivd > dims.len() {
            return None;
        }
        let mut d = dims.to_vec();
        if ivd == dims.len() {
            d.push(1);
        }
        let batch = (0..d.len()).filter(|&x| x != ivd).collect();
        let strides = strides(&d);
        Some(Indices {
            dims: d,
            ivd,
            batch,
            strides,
        })
    }

    /// Components of one index vector.
    pub fn vector_len(&self) -> usize {
        self.dims[self.ivd]
    }

    /// Sizes of the batch dimensions.
    pub fn batch_sizes(&self) -> Vec<usize> {
        self.batch.iter().map(|&d| self.dims[d]).collect()
    }

    /// Flat (row-major) offset of component `k` of the index vector at batch position `g`.
    pub fn offset(&self, g: &[usize], k: usize) -> usize {
        let mut off = k * self.strides[self.ivd];
        for (p, &d) in self.batch.iter().enumerate() {
            off += g[p] * self.strides[d];
        }
        off
    }

    /// Position among the batch dimensions of indices dimension `d`.
    pub fn batch_pos(&self, d: usize) -> Option<usize> {
        self.batch.iter().position(|&b| b == d)
    }

    /// [`Indices::batch_pos`] of each of `v`, or an error naming `what`.
    fn batch_positions(&self, v: &Option<Vec<i64>>, what: &str) -> Result<Vec<usize>, String> {
        list(v)
            .iter()
            .map(|&d| {
                usize::try_from(d)
                    .ok()
                    .and_then(|d| self.batch_pos(d))
                    .ok_or_else(|| format!("{what} {d} is not a batch dimension of the indices"))
            })
            .collect()
    }

    fn of(a: &Attrs, dims: &[usize]) -> Result<Indices, String> {
        // Checked present and in range by the verifier's rules before.
        let ivd = a.index_vector_dim.unwrap_or(dims.len() as i64);
        usize::try_from(ivd)
            .ok()
            .and_then(|v| Indices::new(dims, v))
            .ok_or_else(|| {
                format!(
                    "index_vector_dim={ivd} out of range for rank {}",
                    dims.len()
                )
            })
    }
}

/// A gather's geometry: result index `Out` splits into a batch part `G` (the result dims not in
/// `offset_dims`), which selects an index vector, and an offset part, which walks the slice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatherGeometry {
    /// The indices.
    pub indices: Indices,
    /// Result dimensions that walk the slice.
    pub offset_dims: Vec<usize>,
    /// Slice size per operand dimension.
    pub slice_sizes: Vec<usize>,
    /// Operand dimensions of size-1 slices left out of the result.
    pub collapsed: Vec<usize>,
    /// Operand batching dimensions (`operand_batching_dims`) ...
    pub operand_batching: Vec<usize>,
    /// ... and, for each, the position among the indices' batch dimensions of its partner in
    /// `start_indices_batching_dims`.
    pub indices_batching: Vec<usize>,
    /// Operand dimension of each index vector component (`start_index_map`).
    pub start_index_map: Vec<usize>,
    /// Operand dimensions neither collapsed nor batching, in order: the `k`-th is walked by
    /// `offset_dims[k]`.
    pub offset_operand: Vec<usize>,
    /// Result dimensions not in `offset_dims`, in order (they match the indices' batch dims).
    pub out_batch: Vec<usize>,
}

/// The dimensions of `s` as sizes (a negative one, which no checked shape has, as 0).
fn sizes(s: &ArrayShape) -> Vec<usize> {
    s.dims
        .iter()
        .map(|&d| usize::try_from(d).unwrap_or(0))
        .collect()
}

impl GatherGeometry {
    /// The geometry of `gather` with attributes `a`, operand and indices shapes and result
    /// dimensions `out`: checked by the verifier's rules (an error is its message for the
    /// first that does not fit, or a result shape other than the one they give).
    pub fn resolve(
        a: &Attrs,
        operand: &ArrayShape,
        indices: &ArrayShape,
        out: &[usize],
    ) -> Result<GatherGeometry, String> {
        let want = crate::infer::gather::gather_dims(a, operand, indices)?;
        if !want.iter().map(|&d| d as usize).eq(out.iter().copied()) {
            return Err(format!(
                "the result dimensions {out:?} do not match the gather's attributes ({want:?})"
            ));
        }
        let rank = operand.rank();
        let indices = Indices::of(a, &sizes(indices))?;
        let offset_dims = dims_below(&a.offset_dims, out.len(), "offset dim")?;
        let slice_sizes: Vec<usize> = list(&a.slice_sizes).iter().map(|&s| s as usize).collect();
        let collapsed = dims_below(&a.collapsed_slice_dims, rank, "collapsed slice dim")?;
        let operand_batching = dims_below(&a.operand_batching_dims, rank, "operand batching dim")?;
        let indices_batching = indices
            .batch_positions(&a.start_indices_batching_dims, "start indices batching dim")?;
        let start_index_map = dims_below(&a.start_index_map, rank, "start_index_map dim")?;
        let offset_operand: Vec<usize> = (0..rank)
            .filter(|d| !collapsed.contains(d) && !operand_batching.contains(d))
            .collect();
        let out_batch: Vec<usize> = (0..out.len())
            .filter(|d| !offset_dims.contains(d))
            .collect();
        Ok(GatherGeometry {
            indices,
            offset_dims,
            slice_sizes,
            collapsed,
            operand_batching,
            indices_batching,
            start_index_map,
            offset_operand,
            out_batch,
        })
    }
}

/// A scatter's geometry: update index `U` splits into scatter dims (not in
/// `update_window_dims`), which select an index vector, and window dims, which walk the window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScatterGeometry {
    /// The indices.
    pub indices: Indices,
    /// Update dimensions that walk the window (`update_window_dims`).
    pub update_window: Vec<usize>,
    /// Operand dimensions of size-1 windows absent from the updates.
    pub inserted: Vec<usize>,
    /// Operand batching dimensions (`input_batching_dims`) ...
    pub input_batching: Vec<usize>,
    /// ... and, for each, the position among the indices' batch dimensions of its partner in
    /// `scatter_indices_batching_dims`.
    pub indices_batching: Vec<usize>,
    /// Operand dimension of each index vector component (`scatter_dims_to_operand_dims`).
    pub map: Vec<usize>,
    /// Update dimensions not in `update_window`, in order (they match the indices' batch dims).
    pub update_scatter: Vec<usize>,
    /// Operand dimensions neither inserted nor batching, in order: the `k`-th is walked by
    /// `update_window[k]`.
    pub window_operand: Vec<usize>,
    /// The window's size per operand dimension (1 where inserted or batching).
    pub window_size: Vec<usize>,
}

impl ScatterGeometry {
    /// The geometry of `scatter` with attributes `a`, operand, indices and update shapes:
    /// checked by the verifier's rules (an error is its message for the first that does not
    /// fit).
    pub fn resolve(
        a: &Attrs,
        operand: &ArrayShape,
        indices: &ArrayShape,
        updates: &ArrayShape,
    ) -> Result<ScatterGeometry, String> {
        crate::infer::gather::scatter_check(a, operand, indices, updates)?;
        let rank = operand.rank();
        let updates = &sizes(updates);
        let indices = Indices::of(a, &sizes(indices))?;
        let update_window = dims_below(&a.update_window_dims, updates.len(), "update window dim")?;
        let inserted = dims_below(&a.inserted_window_dims, rank, "inserted window dim")?;
        let input_batching = dims_below(&a.input_batching_dims, rank, "input batching dim")?;
        let indices_batching = indices.batch_positions(
            &a.scatter_indices_batching_dims,
            "scatter indices batching dim",
        )?;
        let map = dims_below(
            &a.scatter_dims_to_operand_dims,
            rank,
            "scatter_dims_to_operand_dims dim",
        )?;
        let update_scatter: Vec<usize> = (0..updates.len())
            .filter(|d| !update_window.contains(d))
            .collect();
        let window_operand: Vec<usize> = (0..rank)
            .filter(|d| !inserted.contains(d) && !input_batching.contains(d))
            .collect();
        let mut window_size = vec![1usize; rank];
        for (&ud, &od) in update_window.iter().zip(&window_operand) {
            window_size[od] = updates[ud];
        }
        Ok(ScatterGeometry {
            indices,
            update_window,
            inserted,
            input_batching,
            indices_batching,
            map,
            update_scatter,
            window_operand,
            window_size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inst(text: &str) -> crate::ir::Instruction {
        let m = crate::parse(text).unwrap();
        let c = m.entry();
        c.insts[c.root].clone()
    }

    #[test]
    fn gather_geometry_resolves_the_implicit_index_vector_dim_and_batching_dims() {
        // Per-batch row gather: operand [B=2, 5, 3], indices [2, 4] (index_vector_dim = 2, the
        // rank: a trailing 1), result [2, 4, 3].
        let g = inst(
            "HloModule g\nENTRY e {\n  a = f32[2,5,3] parameter(0)\n  i = s32[2,4] parameter(1)\n  \
             ROOT r = f32[2,4,3] gather(a, i), offset_dims={2}, collapsed_slice_dims={1}, \
             start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, \
             index_vector_dim=2, slice_sizes={1,1,3}\n}\n",
        );
        let (f, s) = (crate::ElementType::F32, crate::ElementType::S32);
        let (x, i) = (ArrayShape::new(f, &[2, 5, 3]), ArrayShape::new(s, &[2, 4]));
        let geo = GatherGeometry::resolve(&g.attrs, &x, &i, &[2, 4, 3]).unwrap();
        assert_eq!(geo.indices.dims, [2, 4, 1]);
        assert_eq!((geo.indices.ivd, geo.indices.vector_len()), (2, 1));
        assert_eq!(geo.indices.batch_sizes(), [2, 4]);
        assert_eq!(geo.offset_operand, [2]);
        assert_eq!(geo.out_batch, [0, 1]);
        assert_eq!(
            (geo.operand_batching.clone(), geo.indices_batching.clone()),
            (vec![0], vec![0])
        );
        // Component 0 of the vector at batch position (1, 2): row-major offset 1·4 + 2.
        assert_eq!(geo.indices.offset(&[1, 2], 0), 6);
        // A result shape that disagrees is named.
        let e = GatherGeometry::resolve(&g.attrs, &x, &i, &[2, 3, 3]).unwrap_err();
        assert!(e.contains("result dimensions"), "{e}");
    }

    /// The geometry is checked by the verifier's own rules, not looser ones: a collapsed
    /// dimension with a slice of 2 (the result shape alone would allow it) and an
    /// `index_vector_dim` left out (required) are refused with the verifier's messages.
    #[test]
    fn gather_geometry_checks_are_the_verifiers() {
        let a = Attrs {
            offset_dims: Some(vec![1]),
            collapsed_slice_dims: Some(vec![0]),
            start_index_map: Some(vec![0]),
            slice_sizes: Some(vec![2, 3]),
            index_vector_dim: Some(1),
            ..Default::default()
        };
        let x = ArrayShape::new(crate::ElementType::F32, &[5, 3]);
        let i = ArrayShape::new(crate::ElementType::S32, &[2, 1]);
        let e = GatherGeometry::resolve(&a, &x, &i, &[2, 3]).unwrap_err();
        let v = crate::infer::gather::gather_dims(&a, &x, &i).unwrap_err();
        assert_eq!(e, v);
        assert!(e.contains("must have slice size at most 1"), "{e}");
        let ok = Attrs {
            slice_sizes: Some(vec![1, 3]),
            ..a.clone()
        };
        assert!(GatherGeometry::resolve(&ok, &x, &i, &[2, 3]).is_ok());
        let no_ivd = Attrs {
            index_vector_dim: None,
            ..ok
        };
        let e = GatherGeometry::resolve(&no_ivd, &x, &i, &[2, 3]).unwrap_err();
        assert!(e.contains("requires attribute index_vector_dim="), "{e}");
    }

    #[test]
    fn scatter_geometry_sizes_windows_and_rejects_bad_dims() {
        let s = inst(
            "HloModule s\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  \
             ROOT z = f32[] add(x, y)\n}\nENTRY e {\n  o = f32[6,4] parameter(0)\n  \
             i = s32[3,1] parameter(1)\n  u = f32[3,2,4] parameter(2)\n  \
             ROOT r = f32[6,4] scatter(o, i, u), update_window_dims={1,2}, \
             inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, \
             to_apply=add\n}\n",
        );
        let sh = |d: &[i64]| ArrayShape::new(crate::ElementType::F32, d);
        let (o, i) = (
            sh(&[6, 4]),
            ArrayShape::new(crate::ElementType::S32, &[3, 1]),
        );
        let geo = ScatterGeometry::resolve(&s.attrs, &o, &i, &sh(&[3, 2, 4])).unwrap();
        assert_eq!(geo.window_size, [2, 4]);
        assert_eq!(geo.update_scatter, [0]);
        assert_eq!(geo.window_operand, [0, 1]);
        let e = ScatterGeometry::resolve(&s.attrs, &o, &i, &sh(&[2, 2, 4])).unwrap_err();
        assert!(e.contains("expected 3 (indices dimension 0)"), "{e}");
        let mut bad = s.attrs.clone().into_inner();
        bad.index_vector_dim = Some(5);
        let e = ScatterGeometry::resolve(&bad, &o, &i, &sh(&[3, 2, 4])).unwrap_err();
        assert!(e.contains("index_vector_dim=5"), "{e}");
    }
}
