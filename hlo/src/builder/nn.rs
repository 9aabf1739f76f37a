//! Linear algebra and neural-network ops: dot, convolution (all builder forms), reductions,
//! windows, sort, top-k, FFT, Cholesky, triangular solve, batch normalization.

use super::{err, BResult, XlaBuilder, XlaComputation, XlaOp};
use crate::attrs::{
    Attrs, ConvDims, FftType, Precision, TransposeKind, TriangularSolveOptions, WindowDim,
};
use crate::opcode::Opcode;

/// `SAME` or `VALID` padding of the older Conv/ReduceWindow forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Padding {
    /// Pad so that the output has `ceil(input / stride)` elements per spatial dimension.
    Same,
    /// No padding.
    Valid,
}

/// `(low, high)` padding per spatial dimension for `padding` (XLA's MakePadding): for SAME,
/// the total `max((out − 1)·stride + effective_window − input, 0)` is split low = total / 2.
pub fn make_padding(
    input: &[i64],
    window: &[i64],
    strides: &[i64],
    padding: Padding,
) -> Vec<(i64, i64)> {
    input
        .iter()
        .zip(window)
        .zip(strides)
        .map(|((&i, &w), &s)| match padding {
            Padding::Valid => (0, 0),
            Padding::Same => {
                let s = s.max(1);
                let out = (i + s - 1) / s;
                let total = ((out - 1) * s + w - i).max(0);
                (total / 2, total - total / 2)
            }
        })
        .collect()
}

/// Dot dimension numbers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DotDimensionNumbers {
    pub lhs_contracting_dims: Vec<i64>,
    pub rhs_contracting_dims: Vec<i64>,
    pub lhs_batch_dims: Vec<i64>,
    pub rhs_batch_dims: Vec<i64>,
}

fn window(
    sizes: &[i64],
    strides: &[i64],
    padding: &[(i64, i64)],
    lhs_dil: &[i64],
    rhs_dil: &[i64],
) -> BResult<Vec<WindowDim>> {
    let n = sizes.len();
    let get = |v: &[i64], i: usize, d: i64| if v.is_empty() { d } else { v[i] };
    for (what, v) in [
        ("strides", strides),
        ("lhs_dilation", lhs_dil),
        ("rhs_dilation", rhs_dil),
    ] {
        if !v.is_empty() && v.len() != n {
            return Err(err(format!(
                "window: {what} has {} entries, expected {n}",
                v.len()
            )));
        }
    }
    if !padding.is_empty() && padding.len() != n {
        return Err(err(format!(
            "window: padding has {} entries, expected {n}",
            padding.len()
        )));
    }
    Ok((0..n)
        .map(|i| WindowDim {
            size: sizes[i],
            stride: get(strides, i, 1),
            pad_lo: padding.get(i).map_or(0, |p| p.0),
            pad_hi: padding.get(i).map_or(0, |p| p.1),
            lhs_dilate: get(lhs_dil, i, 1),
            rhs_dilate: get(rhs_dil, i, 1),
            reversal: false,
        })
        .collect())
}

impl XlaBuilder {
    /// `Dot(lhs, rhs)`: vector·vector, matrix·vector or matrix·matrix (contracts the last
    /// dimension of `lhs` with the first of `rhs`).
    pub fn dot(&mut self, lhs: XlaOp, rhs: XlaOp) -> BResult<XlaOp> {
        let l = self.array_shape(lhs, "dot")?;
        let r = self.array_shape(rhs, "dot")?;
        if l.rank() == 0 || l.rank() > 2 || r.rank() == 0 || r.rank() > 2 {
            return Err(err(format!(
                "dot: operands must be vectors or matrices, got {l} and {r} (use dot_general for other ranks)"
            )));
        }
        let dn = DotDimensionNumbers {
            lhs_contracting_dims: vec![l.rank() as i64 - 1],
            rhs_contracting_dims: vec![0],
            ..Default::default()
        };
        self.dot_general(lhs, rhs, &dn, None)
    }

    /// `DotGeneral(lhs, rhs, dimension_numbers, precision_config)`.
    pub fn dot_general(
        &mut self,
        lhs: XlaOp,
        rhs: XlaOp,
        dn: &DotDimensionNumbers,
        precision: Option<[Precision; 2]>,
    ) -> BResult<XlaOp> {
        let attrs = Attrs {
            lhs_contracting_dims: Some(dn.lhs_contracting_dims.clone()),
            rhs_contracting_dims: Some(dn.rhs_contracting_dims.clone()),
            lhs_batch_dims: (!dn.lhs_batch_dims.is_empty()).then(|| dn.lhs_batch_dims.clone()),
            rhs_batch_dims: (!dn.rhs_batch_dims.is_empty()).then(|| dn.rhs_batch_dims.clone()),
            operand_precision: precision.map(|p| p.to_vec()),
            ..Default::default()
        };
        self.add_instruction(Opcode::Dot, &[lhs, rhs], attrs, None)
    }

    /// Convolution dimension numbers of the older forms: lhs `[batch, feature, spatial...]`,
    /// kernel `[output feature, input feature, spatial...]`, output like lhs.
    pub fn default_conv_dims(spatial: usize) -> ConvDims {
        let sp: Vec<i64> = (2..2 + spatial as i64).collect();
        ConvDims {
            input_batch: 0,
            input_feature: 1,
            input_spatial: sp.clone(),
            kernel_input_feature: 1,
            kernel_output_feature: 0,
            kernel_spatial: sp.clone(),
            output_batch: 0,
            output_feature: 1,
            output_spatial: sp,
        }
    }

    /// `Conv(lhs, rhs, window_strides, padding)` with SAME or VALID padding.
    pub fn conv(
        &mut self,
        lhs: XlaOp,
        rhs: XlaOp,
        strides: &[i64],
        padding: Padding,
    ) -> BResult<XlaOp> {
        let l = self.array_shape(lhs, "convolution")?;
        let r = self.array_shape(rhs, "convolution")?;
        if l.rank() < 2 || r.rank() != l.rank() {
            return Err(err(format!(
                "convolution: lhs {l} and rhs {r} must have the same rank ≥ 2"
            )));
        }
        let pads = make_padding(&l.dims[2..], &r.dims[2..], strides, padding);
        self.conv_with_general_padding(lhs, rhs, strides, &pads)
    }

    /// `ConvWithGeneralPadding(lhs, rhs, window_strides, padding)`.
    pub fn conv_with_general_padding(
        &mut self,
        lhs: XlaOp,
        rhs: XlaOp,
        strides: &[i64],
        padding: &[(i64, i64)],
    ) -> BResult<XlaOp> {
        let r = self.array_shape(rhs, "convolution")?;
        let dn = Self::default_conv_dims(r.rank().saturating_sub(2));
        self.conv_general_dilated(lhs, rhs, strides, padding, &[], &[], &dn, 1, 1)
    }

    /// `ConvGeneralDilated`: the general form.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_general_dilated(
        &mut self,
        lhs: XlaOp,
        rhs: XlaOp,
        strides: &[i64],
        padding: &[(i64, i64)],
        lhs_dilation: &[i64],
        rhs_dilation: &[i64],
        dn: &ConvDims,
        feature_group_count: i64,
        batch_group_count: i64,
    ) -> BResult<XlaOp> {
        let r = self.array_shape(rhs, "convolution")?;
        let sizes: Vec<i64> = dn
            .kernel_spatial
            .iter()
            .map(|&d| r.dims.get(d as usize).copied().unwrap_or(0))
            .collect();
        let w = window(&sizes, strides, padding, lhs_dilation, rhs_dilation)?;
        let attrs = Attrs {
            window: Some(w),
            dim_labels: Some(dn.clone()),
            feature_group_count: (feature_group_count != 1).then_some(feature_group_count),
            batch_group_count: (batch_group_count != 1).then_some(batch_group_count),
            ..Default::default()
        };
        self.add_instruction(Opcode::Convolution, &[lhs, rhs], attrs, None)
    }

    /// `Reduce(operands, init_values, computation, dimensions_to_reduce)` (variadic).
    pub fn reduce(
        &mut self,
        operands: &[XlaOp],
        init_values: &[XlaOp],
        computation: &XlaComputation,
        dimensions: &[i64],
    ) -> BResult<XlaOp> {
        let c = self.embed(computation);
        let mut ops = operands.to_vec();
        ops.extend_from_slice(init_values);
        let attrs = Attrs {
            dimensions: Some(dimensions.to_vec()),
            to_apply: Some(c),
            ..Default::default()
        };
        self.add_instruction(Opcode::Reduce, &ops, attrs, None)
    }

    /// `ReduceWindow` with explicit padding, base and window dilations (variadic).
    #[allow(clippy::too_many_arguments)]
    pub fn reduce_window(
        &mut self,
        operands: &[XlaOp],
        init_values: &[XlaOp],
        computation: &XlaComputation,
        window_dimensions: &[i64],
        window_strides: &[i64],
        base_dilations: &[i64],
        window_dilations: &[i64],
        padding: &[(i64, i64)],
    ) -> BResult<XlaOp> {
        let w = window(
            window_dimensions,
            window_strides,
            padding,
            base_dilations,
            window_dilations,
        )?;
        let c = self.embed(computation);
        let mut ops = operands.to_vec();
        ops.extend_from_slice(init_values);
        let attrs = Attrs {
            window: Some(w),
            to_apply: Some(c),
            ..Default::default()
        };
        self.add_instruction(Opcode::ReduceWindow, &ops, attrs, None)
    }

    /// `ReduceWindow(operand, init_value, computation, window_dimensions, window_strides, padding)`
    /// with SAME or VALID padding.
    pub fn reduce_window_padded(
        &mut self,
        operand: XlaOp,
        init: XlaOp,
        computation: &XlaComputation,
        window_dimensions: &[i64],
        window_strides: &[i64],
        padding: Padding,
    ) -> BResult<XlaOp> {
        let s = self.array_shape(operand, "reduce-window")?;
        let pads = make_padding(&s.dims, window_dimensions, window_strides, padding);
        self.reduce_window(
            &[operand],
            &[init],
            computation,
            window_dimensions,
            window_strides,
            &[],
            &[],
            &pads,
        )
    }

    /// `SelectAndScatter(operand, select, window_dimensions, window_strides, padding, source,
    /// init_value, scatter)` with explicit padding.
    #[allow(clippy::too_many_arguments)]
    pub fn select_and_scatter(
        &mut self,
        operand: XlaOp,
        select: &XlaComputation,
        window_dimensions: &[i64],
        window_strides: &[i64],
        padding: &[(i64, i64)],
        source: XlaOp,
        init: XlaOp,
        scatter: &XlaComputation,
    ) -> BResult<XlaOp> {
        let w = window(window_dimensions, window_strides, padding, &[], &[])?;
        let sel = self.embed(select);
        let sc = self.embed(scatter);
        let attrs = Attrs {
            window: Some(w),
            select: Some(sel),
            scatter: Some(sc),
            ..Default::default()
        };
        self.add_instruction(
            Opcode::SelectAndScatter,
            &[operand, source, init],
            attrs,
            None,
        )
    }

    /// `Sort(operands, comparator, dimension, is_stable)`.
    pub fn sort(
        &mut self,
        operands: &[XlaOp],
        comparator: &XlaComputation,
        dimension: i64,
        is_stable: bool,
    ) -> BResult<XlaOp> {
        let c = self.embed(comparator);
        let attrs = Attrs {
            dimensions: Some(vec![dimension]),
            to_apply: Some(c),
            is_stable: is_stable.then_some(true),
            ..Default::default()
        };
        self.add_instruction(Opcode::Sort, operands, attrs, None)
    }

    /// The older `Sort(keys[, values])`: ascending by `keys` along the last dimension
    /// (a less-than comparator on the keys is generated).
    pub fn sort_keys(&mut self, keys: XlaOp, values: &[XlaOp]) -> BResult<XlaOp> {
        let ks = self.array_shape(keys, "sort")?;
        let mut cb = XlaBuilder::new("compare_lt");
        let mut params = Vec::new();
        let mut n = 0;
        for op in std::iter::once(keys).chain(values.iter().copied()) {
            let ty = self.array_shape(op, "sort")?.ty;
            for _ in 0..2 {
                params.push(cb.parameter(n, crate::shape::Shape::scalar(ty), "")?);
                n += 1;
            }
        }
        let lt = cb.lt(params[0], params[1])?;
        let comparator = cb.build(lt)?;
        let mut ops = vec![keys];
        ops.extend_from_slice(values);
        self.sort(&ops, &comparator, ks.rank().saturating_sub(1) as i64, false)
    }

    /// `TopK(operand, k, largest)`: the k largest (or smallest) entries of the last dimension
    /// and their indices.
    pub fn top_k(&mut self, operand: XlaOp, k: i64, largest: bool) -> BResult<XlaOp> {
        let attrs = Attrs {
            k: Some(k),
            largest: Some(largest),
            ..Default::default()
        };
        self.add_instruction(Opcode::TopK, &[operand], attrs, None)
    }

    /// `Fft(operand, fft_type, fft_length)`.
    pub fn fft(&mut self, operand: XlaOp, fft_type: FftType, fft_length: &[i64]) -> BResult<XlaOp> {
        let attrs = Attrs {
            fft_type: Some(fft_type),
            fft_length: Some(fft_length.to_vec()),
            ..Default::default()
        };
        self.add_instruction(Opcode::Fft, &[operand], attrs, None)
    }

    /// `Cholesky(a, lower)`.
    pub fn cholesky(&mut self, a: XlaOp, lower: bool) -> BResult<XlaOp> {
        let attrs = Attrs {
            lower: Some(lower),
            ..Default::default()
        };
        self.add_instruction(Opcode::Cholesky, &[a], attrs, None)
    }

    /// `TriangularSolve(a, b, left_side, lower, unit_diagonal, transpose_a)`.
    pub fn triangular_solve(
        &mut self,
        a: XlaOp,
        b: XlaOp,
        left_side: bool,
        lower: bool,
        unit_diagonal: bool,
        transpose_a: TransposeKind,
    ) -> BResult<XlaOp> {
        let o = TriangularSolveOptions {
            left_side,
            lower,
            unit_diagonal,
            transpose_a,
        };
        let attrs = Attrs {
            triangular_solve_options: Some(o),
            ..Default::default()
        };
        self.add_instruction(Opcode::TriangularSolve, &[a, b], attrs, None)
    }

    /// `BatchNormTraining(operand, scale, offset, epsilon, feature_index)` → (output, mean, var).
    pub fn batch_norm_training(
        &mut self,
        operand: XlaOp,
        scale: XlaOp,
        offset: XlaOp,
        epsilon: f32,
        feature_index: i64,
    ) -> BResult<XlaOp> {
        self.batch_norm(
            Opcode::BatchNormTraining,
            &[operand, scale, offset],
            epsilon,
            feature_index,
        )
    }

    /// `BatchNormInference(operand, scale, offset, mean, variance, epsilon, feature_index)`.
    #[allow(clippy::too_many_arguments)]
    pub fn batch_norm_inference(
        &mut self,
        operand: XlaOp,
        scale: XlaOp,
        offset: XlaOp,
        mean: XlaOp,
        variance: XlaOp,
        epsilon: f32,
        feature_index: i64,
    ) -> BResult<XlaOp> {
        self.batch_norm(
            Opcode::BatchNormInference,
            &[operand, scale, offset, mean, variance],
            epsilon,
            feature_index,
        )
    }

    /// `BatchNormGrad(operand, scale, mean, variance, grad_output, epsilon, feature_index)`
    /// → (grad_operand, grad_scale, grad_offset).
    #[allow(clippy::too_many_arguments)]
    pub fn batch_norm_grad(
        &mut self,
        operand: XlaOp,
        scale: XlaOp,
        mean: XlaOp,
        variance: XlaOp,
        grad_output: XlaOp,
        epsilon: f32,
        feature_index: i64,
    ) -> BResult<XlaOp> {
        self.batch_norm(
            Opcode::BatchNormGrad,
            &[operand, scale, mean, variance, grad_output],
            epsilon,
            feature_index,
        )
    }

    fn batch_norm(
        &mut self,
        opcode: Opcode,
        operands: &[XlaOp],
        epsilon: f32,
        feature_index: i64,
    ) -> BResult<XlaOp> {
        let attrs = Attrs {
            epsilon: Some(epsilon),
            feature_index: Some(feature_index),
            ..Default::default()
        };
        self.add_instruction(opcode, operands, attrs, None)
    }
}
