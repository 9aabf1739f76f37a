//! DynamicSlice, DynamicUpdateSlice, DynamicReshape, GetDimensionSize and SetDimensionSize.
//!
//! Start indices are clamped so the whole slice/update fits: `start = clamp(start, 0,
//! dim - size)` (XLA's documented behaviour). Start indices come as one scalar operand per
//! dimension, or (older form) as one rank-1 operand.
//!
//! Dynamic sizes: a dynamic array value is represented by its actual dims. SetDimensionSize
//! keeps the leading `size` elements along the dimension (or pads with zeros up to it, never
//! past the bound); GetDimensionSize reads the value's actual size; reductions and elementwise
//! ops see only the actual elements.

use crate::error::{EResult, EvalError};
use crate::util::{
    index_map, mk, operand, out_array, put, scalar_i64, strides, take, take_or_fill, to_i64_vec,
    FILL,
};
use hlo::ir::Instruction;
use hlo::literal::{ArrayData, ArrayLiteral, Literal};

/// Start indices of a dynamic slice/update from operands `ops[first..]`.
fn starts(ops: &[&Literal], first: usize, rank: usize) -> EResult<Vec<i64>> {
    let rest = &ops[first.min(ops.len())..];
    // Older form: one rank-1 operand holding all start indices.
    if rest.len() == 1 && operand(rest, 0)?.dims.len() == 1 {
        let v = to_i64_vec(&operand(rest, 0)?.data)?;
        if v.len() != rank {
            return Err(EvalError::invalid(format!(
                "{} start indices for rank {rank}",
                v.len()
            )));
        }
        return Ok(v);
    }
    if rest.len() != rank {
        return Err(EvalError::invalid(format!(
            "{} start indices for rank {rank}",
            rest.len()
        )));
    }
    rest.iter().map(|l| scalar_i64(l)).collect()
}

fn clamp_starts(starts: &[i64], dims: &[usize], sizes: &[usize]) -> EResult<Vec<usize>> {
    starts
        .iter()
        .zip(dims.iter().zip(sizes))
        .map(|(&s, (&d, &z))| {
            if z > d {
                return Err(EvalError::invalid(format!(
                    "slice size {z} exceeds dimension {d}"
                )));
            }
            Ok(s.clamp(0, (d - z) as i64) as usize)
        })
        .collect()
}

/// `dynamic-slice(x, i0, i1, ...), dynamic_slice_sizes={...}`.
pub fn dynamic_slice(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let a = operand(ops, 0)?;
    let hlo::View::DynamicSlice { sizes } = inst.view() else {
        return Err(EvalError::malformed(inst));
    };
    let sizes: Vec<usize> = sizes
        .iter()
        .map(|&z| usize::try_from(z).map_err(|_| EvalError::invalid("negative size")))
        .collect::<EResult<_>>()?;
    if sizes.len() != a.dims.len() {
        return Err(EvalError::invalid(
            "dynamic_slice_sizes rank does not match the operand",
        ));
    }
    let st = clamp_starts(&starts(ops, 1, a.dims.len())?, &a.dims, &sizes)?;
    let strd = strides(&a.dims);
    let idx = index_map(&sizes, |o| {
        o.iter()
            .zip(&st)
            .zip(&strd)
            .map(|((&i, &s), &t)| (i + s) * t)
            .sum()
    })?;
    mk(sizes, take(&a.data, &idx))
}

/// `dynamic-update-slice(x, update, i0, i1, ...)`.
pub fn dynamic_update_slice(_inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let (a, u) = (operand(ops, 0)?, operand(ops, 1)?);
    if u.dims.len() != a.dims.len() {
        return Err(EvalError::invalid("update rank does not match the operand"));
    }
    let st = clamp_starts(&starts(ops, 2, a.dims.len())?, &a.dims, &u.dims)?;
    let strd = strides(&a.dims);
    let di = index_map(&u.dims, |o| {
        o.iter()
            .zip(&st)
            .zip(&strd)
            .map(|((&i, &s), &t)| (i + s) * t)
            .sum()
    })?;
    let si: Vec<usize> = (0..u.data.len()).collect();
    let mut data = a.data.clone();
    put(&mut data, &di, &u.data, &si)?;
    mk(a.dims.clone(), data)
}

/// `dynamic-reshape(x, d0, d1, ...)`: reshape to the runtime sizes.
pub fn dynamic_reshape(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let a = operand(ops, 0)?;
    let out = out_array(&inst.shape)?;
    let dims: Vec<usize> = ops[1..]
        .iter()
        .zip(&out.dims)
        .map(|(l, &bound)| {
            let v = scalar_i64(l)?;
            if v < 0 || (bound >= 0 && v > bound) {
                return Err(EvalError::bad_input(format!(
                    "dynamic-reshape size {v} outside [0, {bound}]"
                )));
            }
            Ok(v as usize)
        })
        .collect::<EResult<_>>()?;
    if dims.len() != out.dims.len() {
        return Err(EvalError::invalid(
            "dynamic-reshape needs one size per result dimension",
        ));
    }
    if dims.iter().product::<usize>() != a.data.len() {
        return Err(EvalError::bad_input(format!(
            "dynamic-reshape of {} elements into {:?}",
            a.data.len(),
            dims
        )));
    }
    mk(dims, a.data.clone())
}

fn the_dim(inst: &Instruction, rank: usize) -> EResult<usize> {
    let hlo::View::DimensionSize { dimension: d } = inst.view() else {
        return Err(EvalError::malformed(inst));
    };
    if d >= rank {
        return Err(EvalError::invalid(format!(
            "dimensions={{{d}}} out of range for rank {rank}"
        )));
    }
    Ok(d)
}

/// `get-dimension-size(x), dimensions={d}`: the actual size as s32.
pub fn get_dimension_size(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let a = operand(ops, 0)?;
    let d = the_dim(inst, a.dims.len())?;
    mk(vec![], ArrayData::S32(vec![a.dims[d] as i32]))
}

/// Resizes dimension `d` of `a` to `n`: keeps the leading elements, zero-fills growth.
pub fn resize_dim(a: &ArrayLiteral, d: usize, n: usize) -> EResult<ArrayLiteral> {
    let mut dims = a.dims.clone();
    dims[d] = n;
    let st = strides(&a.dims);
    let old = a.dims[d];
    let idx = index_map(&dims, |o| {
        if o[d] >= old {
            FILL
        } else {
            o.iter().zip(&st).map(|(&i, &t)| i * t).sum()
        }
    })?;
    let zero = ArrayData::zeros(a.element_type(), 1);
    Ok(ArrayLiteral {
        dims,
        data: take_or_fill(&a.data, &idx, &zero)?,
    })
}

/// `set-dimension-size(x, n), dimensions={d}`.
pub fn set_dimension_size(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let a = operand(ops, 0)?;
    let d = the_dim(inst, a.dims.len())?;
    let n = scalar_i64(
        ops.get(1)
            .ok_or_else(|| EvalError::invalid("missing size operand"))?,
    )?;
    let bound = out_array(&inst.shape)?.dims.get(d).copied().unwrap_or(0);
    if n < 0 || (bound >= 0 && n > bound) {
        return Err(EvalError::bad_input(format!(
            "set-dimension-size to {n}, outside [0, {bound}] of dimension {d}"
        )));
    }
    Ok(Literal::Array(resize_dim(a, d, n as usize)?))
}
