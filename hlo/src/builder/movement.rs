//! Data movement: reshape, collapse, broadcast, transpose, reverse, slices, pad,
//! concatenate, gather, scatter, dynamic sizes.

use super::{err, BResult, XlaBuilder, XlaComputation, XlaOp};
use crate::attrs::{Attrs, PadDim, SliceDim};
use crate::opcode::Opcode;
use crate::shape::{ArrayShape, Shape};
use crate::types::ElementType;

/// Gather dimension numbers (see the Gather section of the specification).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GatherDimensionNumbers {
    pub offset_dims: Vec<i64>,
    pub collapsed_slice_dims: Vec<i64>,
    pub start_index_map: Vec<i64>,
    pub index_vector_dim: i64,
    pub operand_batching_dims: Vec<i64>,
    pub start_indices_batching_dims: Vec<i64>,
}

/// Scatter dimension numbers (see the Scatter section of the specification).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScatterDimensionNumbers {
    pub update_window_dims: Vec<i64>,
    pub inserted_window_dims: Vec<i64>,
    pub scatter_dims_to_operand_dims: Vec<i64>,
    pub index_vector_dim: i64,
    pub input_batching_dims: Vec<i64>,
    pub scatter_indices_batching_dims: Vec<i64>,
}

impl XlaBuilder {
    /// `Reshape(operand, new_sizes)`: same elements in row-major order, new dimensions.
    pub fn reshape(&mut self, x: XlaOp, new_sizes: &[i64]) -> BResult<XlaOp> {
        let s = self.array_shape(x, "reshape")?;
        let out = Shape::Array(ArrayShape::new(s.ty, new_sizes));
        self.add_instruction(Opcode::Reshape, &[x], Attrs::default(), Some(out))
    }

    /// `Reshape(operand, dimensions, new_sizes)`: transpose by `dimensions` first (older form).
    pub fn reshape_with_order(
        &mut self,
        x: XlaOp,
        dimensions: &[i64],
        new_sizes: &[i64],
    ) -> BResult<XlaOp> {
        let t = self.transpose(x, dimensions)?;
        self.reshape(t, new_sizes)
    }

    /// `Collapse(operand, dimensions)`: merges an in-order, consecutive run of dimensions into one.
    pub fn collapse(&mut self, x: XlaOp, dimensions: &[i64]) -> BResult<XlaOp> {
        let s = self.array_shape(x, "collapse")?;
        let first = *dimensions
            .first()
            .ok_or_else(|| err("collapse: dimensions must not be empty"))?;
        let consecutive = dimensions.windows(2).all(|w| w[1] == w[0] + 1);
        let last = *dimensions.last().unwrap_or(&first);
        if !consecutive || first < 0 || last as usize >= s.rank() {
            return Err(err(format!(
                "collapse: dimensions {dimensions:?} must be an in-order, consecutive subset of the operand's dimensions 0..{}",
                s.rank()
            )));
        }
        let mut dims: Vec<i64> = s.dims[..first as usize].to_vec();
        dims.push(s.dims[first as usize..=last as usize].iter().product());
        dims.extend_from_slice(&s.dims[last as usize + 1..]);
        self.reshape(x, &dims)
    }

    /// `Broadcast(operand, broadcast_sizes)`: new major dimensions in front.
    pub fn broadcast(&mut self, x: XlaOp, broadcast_sizes: &[i64]) -> BResult<XlaOp> {
        let s = self.array_shape(x, "broadcast")?;
        let mut dims = broadcast_sizes.to_vec();
        dims.extend_from_slice(&s.dims);
        let n = broadcast_sizes.len() as i64;
        let map: Vec<i64> = (0..s.rank() as i64).map(|i| i + n).collect();
        self.broadcast_in_dim(x, &dims, &map)
    }

    /// `BroadcastInDim(operand, out_dim_size, broadcast_dimensions)`.
    pub fn broadcast_in_dim(
        &mut self,
        x: XlaOp,
        out_dims: &[i64],
        broadcast_dimensions: &[i64],
    ) -> BResult<XlaOp> {
        let s = self.array_shape(x, "broadcast")?;
        let out = Shape::Array(ArrayShape::new(s.ty, out_dims));
        let attrs = Attrs {
            dimensions: Some(broadcast_dimensions.to_vec()),
            ..Default::default()
        };
        self.add_instruction(Opcode::Broadcast, &[x], attrs, Some(out))
    }

    pub fn transpose(&mut self, x: XlaOp, permutation: &[i64]) -> BResult<XlaOp> {
        let attrs = Attrs {
            dimensions: Some(permutation.to_vec()),
            ..Default::default()
        };
        self.add_instruction(Opcode::Transpose, &[x], attrs, None)
    }

    /// `Rev(operand, dimensions)`.
    pub fn rev(&mut self, x: XlaOp, dimensions: &[i64]) -> BResult<XlaOp> {
        let attrs = Attrs {
            dimensions: Some(dimensions.to_vec()),
            ..Default::default()
        };
        self.add_instruction(Opcode::Reverse, &[x], attrs, None)
    }

    /// `Slice(operand, start_indices, limit_indices, strides)`.
    pub fn slice(
        &mut self,
        x: XlaOp,
        start: &[i64],
        limit: &[i64],
        strides: &[i64],
    ) -> BResult<XlaOp> {
        if start.len() != limit.len() || start.len() != strides.len() {
            return Err(err(
                "slice: start_indices, limit_indices and strides must have the same length",
            ));
        }
        let slice = (0..start.len())
            .map(|i| SliceDim {
                start: start[i],
                limit: limit[i],
                stride: strides[i],
            })
            .collect();
        let attrs = Attrs {
            slice: Some(slice),
            ..Default::default()
        };
        self.add_instruction(Opcode::Slice, &[x], attrs, None)
    }

    /// `SliceInDim(operand, start, limit, stride, dimno)`.
    pub fn slice_in_dim(
        &mut self,
        x: XlaOp,
        start: i64,
        limit: i64,
        stride: i64,
        dimno: i64,
    ) -> BResult<XlaOp> {
        let s = self.array_shape(x, "slice")?;
        if dimno < 0 || dimno as usize >= s.rank() {
            return Err(err(format!(
                "slice: dimension {dimno} out of range for rank {}",
                s.rank()
            )));
        }
        let mut st = vec![0; s.rank()];
        let mut li = s.dims.clone();
        let mut sd = vec![1; s.rank()];
        st[dimno as usize] = start;
        li[dimno as usize] = limit;
        sd[dimno as usize] = stride;
        self.slice(x, &st, &li, &sd)
    }

    /// `DynamicSlice(operand, start_indices, slice_sizes)` with one scalar index per dimension.
    pub fn dynamic_slice(
        &mut self,
        x: XlaOp,
        start_indices: &[XlaOp],
        slice_sizes: &[i64],
    ) -> BResult<XlaOp> {
        let mut ops = vec![x];
        ops.extend_from_slice(start_indices);
        let attrs = Attrs {
            dynamic_slice_sizes: Some(slice_sizes.to_vec()),
            ..Default::default()
        };
        self.add_instruction(Opcode::DynamicSlice, &ops, attrs, None)
    }

    /// `DynamicUpdateSlice(operand, update, start_indices)`.
    pub fn dynamic_update_slice(
        &mut self,
        x: XlaOp,
        update: XlaOp,
        start_indices: &[XlaOp],
    ) -> BResult<XlaOp> {
        let mut ops = vec![x, update];
        ops.extend_from_slice(start_indices);
        self.add_instruction(Opcode::DynamicUpdateSlice, &ops, Attrs::default(), None)
    }

    /// `Pad(operand, padding_value, padding_config)` with `(low, high, interior)` per dimension.
    pub fn pad(&mut self, x: XlaOp, value: XlaOp, config: &[(i64, i64, i64)]) -> BResult<XlaOp> {
        let padding = config
            .iter()
            .map(|&(lo, hi, interior)| PadDim { lo, hi, interior })
            .collect();
        let attrs = Attrs {
            padding: Some(padding),
            ..Default::default()
        };
        self.add_instruction(Opcode::Pad, &[x, value], attrs, None)
    }

    /// `ConcatInDim(operands, dimension)`.
    pub fn concat_in_dim(&mut self, xs: &[XlaOp], dimension: i64) -> BResult<XlaOp> {
        let attrs = Attrs {
            dimensions: Some(vec![dimension]),
            ..Default::default()
        };
        self.add_instruction(Opcode::Concatenate, xs, attrs, None)
    }

    pub fn gather(
        &mut self,
        operand: XlaOp,
        start_indices: XlaOp,
        dn: &GatherDimensionNumbers,
        slice_sizes: &[i64],
        indices_are_sorted: bool,
    ) -> BResult<XlaOp> {
        let attrs = Attrs {
            offset_dims: Some(dn.offset_dims.clone()),
            collapsed_slice_dims: Some(dn.collapsed_slice_dims.clone()),
            start_index_map: Some(dn.start_index_map.clone()),
            index_vector_dim: Some(dn.index_vector_dim),
            operand_batching_dims: Some(dn.operand_batching_dims.clone()),
            start_indices_batching_dims: Some(dn.start_indices_batching_dims.clone()),
            slice_sizes: Some(slice_sizes.to_vec()),
            indices_are_sorted: Some(indices_are_sorted),
            ..Default::default()
        };
        self.add_instruction(Opcode::Gather, &[operand, start_indices], attrs, None)
    }

    /// `Scatter(operands..., scatter_indices, updates..., update_computation, ...)`.
    #[allow(clippy::too_many_arguments)]
    pub fn scatter(
        &mut self,
        operands: &[XlaOp],
        scatter_indices: XlaOp,
        updates: &[XlaOp],
        update_computation: &XlaComputation,
        dn: &ScatterDimensionNumbers,
        indices_are_sorted: bool,
        unique_indices: bool,
    ) -> BResult<XlaOp> {
        let to_apply = self.embed(update_computation);
        let mut ops = operands.to_vec();
        ops.push(scatter_indices);
        ops.extend_from_slice(updates);
        let attrs = Attrs {
            update_window_dims: Some(dn.update_window_dims.clone()),
            inserted_window_dims: Some(dn.inserted_window_dims.clone()),
            scatter_dims_to_operand_dims: Some(dn.scatter_dims_to_operand_dims.clone()),
            index_vector_dim: Some(dn.index_vector_dim),
            input_batching_dims: Some(dn.input_batching_dims.clone()),
            scatter_indices_batching_dims: Some(dn.scatter_indices_batching_dims.clone()),
            indices_are_sorted: Some(indices_are_sorted),
            unique_indices: Some(unique_indices),
            to_apply: Some(to_apply),
            ..Default::default()
        };
        self.add_instruction(Opcode::Scatter, &ops, attrs, None)
    }

    /// `GetDimensionSize(operand, dimension)` → s32 scalar.
    pub fn get_dimension_size(&mut self, x: XlaOp, dimension: i64) -> BResult<XlaOp> {
        let attrs = Attrs {
            dimensions: Some(vec![dimension]),
            ..Default::default()
        };
        self.add_instruction(
            Opcode::GetDimensionSize,
            &[x],
            attrs,
            Some(Shape::scalar(ElementType::S32)),
        )
    }

    /// `SetDimensionSize(operand, size, dimension)`: the dimension becomes dynamic with its
    /// static size as the bound.
    pub fn set_dimension_size(&mut self, x: XlaOp, size: XlaOp, dimension: i64) -> BResult<XlaOp> {
        let mut s = self.array_shape(x, "set-dimension-size")?;
        if dimension < 0 || dimension as usize >= s.rank() {
            return Err(err(format!(
                "set-dimension-size: dimension {dimension} out of range for rank {}",
                s.rank()
            )));
        }
        s.dynamic[dimension as usize] = true;
        let attrs = Attrs {
            dimensions: Some(vec![dimension]),
            ..Default::default()
        };
        self.add_instruction(
            Opcode::SetDimensionSize,
            &[x, size],
            attrs,
            Some(Shape::Array(s)),
        )
    }
}
