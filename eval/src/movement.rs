//! Data movement: Iota, Broadcast, Reshape, Transpose, Reverse, Slice, Pad, Concatenate and
//! Bitcast. Every op computes, for each result element in row-major order, the index of its
//! source element ([`index_map`]) and gathers with one typed loop ([`take`]); Pad gathers from
//! the operand extended by the padding value.
//!
//! Bitcast: literals are logically row-major, so a bitcast between default (or absent)
//! layouts is a reshape; with explicit layouts the elements are reinterpreted in physical
//! (layout) order: operand → physical order by its layout → result by its layout.

use crate::convert::convert_data;
use crate::error::{EResult, EvalError};
use crate::util::{
    append, count_of, index_map, mk, operand, out_array, shape_dims, strides, take, take_or_fill,
    FILL,
};
use hlo::ir::Instruction;
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use hlo::shape::{Layout, Shape};

fn udim(d: i64, rank: usize) -> EResult<usize> {
    usize::try_from(d)
        .ok()
        .filter(|&d| d < rank)
        .ok_or_else(|| EvalError::invalid(format!("dimension {d} out of range for rank {rank}")))
}

/// `iota()`, iota_dimension=d: each element is its coordinate along `d`.
pub fn iota(inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    let out = out_array(&inst.shape)?;
    let dims = shape_dims(out)?;
    let hlo::View::Iota { dimension } = inst.view() else {
        return Err(EvalError::malformed(inst));
    };
    let d = udim(dimension as i64, dims.len().max(1))?;
    if dims.is_empty() {
        return mk(vec![], convert_data(&ArrayData::S64(vec![0]), out.ty)?);
    }
    let st = strides(&dims);
    let n = count_of(&dims, "iota")?;
    let coords: Vec<i64> = (0..n).map(|i| ((i / st[d]) % dims[d]) as i64).collect();
    mk(dims, convert_data(&ArrayData::S64(coords), out.ty)?)
}

/// Transposes an array: result dim `i` is operand dim `perm[i]`.
pub fn transpose_lit(a: &ArrayLiteral, perm: &[usize]) -> EResult<ArrayLiteral> {
    let st = strides(&a.dims);
    let out_dims: Vec<usize> = perm.iter().map(|&p| a.dims[p]).collect();
    let idx = index_map(&out_dims, |o| {
        o.iter().zip(perm).map(|(&i, &p)| i * st[p]).sum()
    })?;
    Ok(ArrayLiteral {
        dims: out_dims,
        data: take(&a.data, &idx),
    })
}

fn perm_of(dims: &[i64], rank: usize) -> EResult<Vec<usize>> {
    let p: Vec<usize> = dims
        .iter()
        .map(|&d| udim(d, rank))
        .collect::<EResult<_>>()?;
    let mut s = p.clone();
    s.sort_unstable();
    if s != (0..rank).collect::<Vec<_>>() {
        return Err(EvalError::invalid(format!(
            "{dims:?} is not a permutation of 0..{rank}"
        )));
    }
    Ok(p)
}

/// `transpose(x), dimensions={...}`.
pub fn transpose(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let a = operand(ops, 0)?;
    let hlo::View::Transpose { permutation } = inst.view() else {
        return Err(EvalError::malformed(inst));
    };
    let perm = perm_of(permutation, a.dims.len())?;
    Ok(Literal::Array(transpose_lit(a, &perm)?))
}

/// `broadcast(x), dimensions={...}`: operand dim `i` becomes result dim `dimensions[i]`.
pub fn broadcast(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let a = operand(ops, 0)?;
    let out_dims = shape_dims(out_array(&inst.shape)?)?;
    let hlo::View::Broadcast { dimensions: map } = inst.view() else {
        return Err(EvalError::malformed(inst));
    };
    if map.len() != a.dims.len() {
        return Err(EvalError::invalid(
            "broadcast dimensions do not match the operand rank",
        ));
    }
    let st = strides(&a.dims);
    let mut coef = vec![0usize; out_dims.len()];
    for (i, &d) in map.iter().enumerate() {
        let d = udim(d, out_dims.len())?;
        if a.dims[i] != out_dims[d] && a.dims[i] != 1 {
            return Err(EvalError::invalid(format!(
                "broadcast operand dim {i} (size {}) into result dim {d} (size {})",
                a.dims[i], out_dims[d]
            )));
        }
        coef[d] = if a.dims[i] == 1 { 0 } else { st[i] };
    }
    let idx = index_map(&out_dims, |o| {
        o.iter().zip(&coef).map(|(&i, &c)| i * c).sum()
    })?;
    mk(out_dims, take(&a.data, &idx))
}

/// `reshape(x)`: same elements in row-major order, new dims.
pub fn reshape(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let a = operand(ops, 0)?;
    let out_dims = shape_dims(out_array(&inst.shape)?)?;
    if count_of(&out_dims, "reshape")? != a.data.len() {
        return Err(EvalError::unsupported(format!(
            "reshape of {} elements (dims {:?}) into dims {:?}",
            a.data.len(),
            a.dims,
            out_dims
        )));
    }
    mk(out_dims, a.data.clone())
}

/// `reverse(x), dimensions={...}`.
pub fn reverse(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let a = operand(ops, 0)?;
    let rank = a.dims.len();
    let mut rev = vec![false; rank];
    let hlo::View::Reverse { dimensions } = inst.view() else {
        return Err(EvalError::malformed(inst));
    };
    for &d in dimensions {
        rev[udim(d, rank)?] = true;
    }
    let st = strides(&a.dims);
    let dims = a.dims.clone();
    let idx = index_map(&dims, |o| {
        (0..rank)
            .map(|k| if rev[k] { dims[k] - 1 - o[k] } else { o[k] } * st[k])
            .sum()
    })?;
    mk(a.dims.clone(), take(&a.data, &idx))
}

/// `slice(x), slice={[start:limit:stride], ...}`.
pub fn slice(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let a = operand(ops, 0)?;
    let hlo::View::Slice { slice: sl } = inst.view() else {
        return Err(EvalError::malformed(inst));
    };
    if sl.len() != a.dims.len() {
        return Err(EvalError::invalid("slice rank does not match the operand"));
    }
    let mut out_dims = Vec::with_capacity(sl.len());
    for (k, s) in sl.iter().enumerate() {
        if s.start < 0 || s.limit < s.start || s.limit as usize > a.dims[k] || s.stride < 1 {
            return Err(EvalError::invalid(format!(
                "slice [{}:{}:{}] of dimension {k} (size {})",
                s.start, s.limit, s.stride, a.dims[k]
            )));
        }
        out_dims.push(((s.limit - s.start) as usize).div_ceil(s.stride as usize));
    }
    let st = strides(&a.dims);
    let idx = index_map(&out_dims, |o| {
        o.iter()
            .zip(sl)
            .zip(&st)
            .map(|((&i, s), &t)| (s.start as usize + i * s.stride as usize) * t)
            .sum()
    })?;
    mk(out_dims, take(&a.data, &idx))
}

/// `pad(x, v), padding=lo_hi_interior x ...` (negative lo/hi remove elements).
pub fn pad(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let (a, v) = (operand(ops, 0)?, operand(ops, 1)?);
    let hlo::View::Pad { padding: cfg } = inst.view() else {
        return Err(EvalError::malformed(inst));
    };
    if cfg.len() != a.dims.len() || v.data.len() != 1 {
        return Err(EvalError::invalid("pad config rank or padding value shape"));
    }
    let mut out_dims = Vec::with_capacity(cfg.len());
    for (k, p) in cfg.iter().enumerate() {
        let n = a.dims[k] as i64;
        if p.interior < 0 {
            return Err(EvalError::invalid("negative interior padding"));
        }
        let size = p.lo + p.hi + n + (n - 1).max(0) * p.interior;
        if size < 0 {
            return Err(EvalError::invalid(format!(
                "pad gives dimension {k} size {size}"
            )));
        }
        out_dims.push(size as usize);
    }
    let st = strides(&a.dims);
    let idx = index_map(&out_dims, |o| {
        let mut src = 0usize;
        for (k, p) in cfg.iter().enumerate() {
            let pos = o[k] as i64 - p.lo;
            let step = p.interior + 1;
            if pos < 0 || pos % step != 0 || pos / step >= a.dims[k] as i64 {
                return FILL;
            }
            src += (pos / step) as usize * st[k];
        }
        src
    })?;
    mk(out_dims, take_or_fill(&a.data, &idx, &v.data)?)
}

/// `concatenate(x, y, ...), dimensions={d}`.
pub fn concatenate(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let first = operand(ops, 0)?;
    let rank = first.dims.len();
    let d = udim(
        match inst.view() {
            hlo::View::Concatenate { dimension } => dimension as i64,
            _ => return Err(EvalError::malformed(inst)),
        },
        rank,
    )?;
    let mut all = first.data.clone();
    let mut parts = vec![(0usize, first)];
    for i in 1..ops.len() {
        let b = operand(ops, i)?;
        if b.dims.len() != rank || (0..rank).any(|k| k != d && b.dims[k] != first.dims[k]) {
            return Err(EvalError::invalid(format!(
                "concatenate operand {i} has dims {:?}",
                b.dims
            )));
        }
        parts.push((all.len(), b));
        append(&mut all, &b.data)?;
    }
    let outer: usize = first.dims[..d].iter().product();
    let inner: usize = first.dims[d + 1..].iter().product();
    let mut idx = Vec::with_capacity(all.len());
    for o in 0..outer {
        for (off, p) in &parts {
            let chunk = p.dims[d] * inner;
            idx.extend((0..chunk).map(|j| off + o * chunk + j));
        }
    }
    let mut out_dims = first.dims.clone();
    out_dims[d] = parts.iter().map(|(_, p)| p.dims[d]).sum();
    mk(out_dims, take(&all, &idx))
}

fn is_default(l: &Option<Layout>, rank: usize) -> bool {
    l.as_ref()
        .is_none_or(|l| l.minor_to_major == Layout::row_major(rank).minor_to_major)
}

/// Major-to-minor dimension order of a layout.
fn major_to_minor(l: &Layout, rank: usize) -> EResult<Vec<usize>> {
    let p: Vec<i64> = l.minor_to_major.iter().rev().copied().collect();
    perm_of(&p, rank)
}

/// `bitcast(x)` where the operand has shape `in_shape` (for its layout): see the module docs.
pub fn bitcast(inst: &Instruction, in_shape: &Shape, ops: &[&Literal]) -> EResult<Literal> {
    let a = operand(ops, 0)?;
    let out = out_array(&inst.shape)?;
    let out_dims = shape_dims(out)?;
    if out.ty != a.element_type() {
        return Err(EvalError::unsupported(
            "bitcast that changes the element type",
        ));
    }
    if count_of(&out_dims, "bitcast")? != a.data.len() {
        return Err(EvalError::invalid("bitcast changes the number of elements"));
    }
    let in_layout = in_shape.as_array().and_then(|s| s.layout.clone());
    let in_default = is_default(&in_layout, a.dims.len());
    if in_default && is_default(&out.layout, out_dims.len()) {
        return mk(out_dims, a.data.clone());
    }
    // Physical order of the operand: its elements in major-to-minor order of its layout.
    let phys = match &in_layout {
        Some(l) if !in_default => transpose_lit(a, &major_to_minor(l, a.dims.len())?)?.data,
        _ => a.data.clone(),
    };
    let m2m = match &out.layout {
        Some(l) => major_to_minor(l, out_dims.len())?,
        None => (0..out_dims.len()).collect(),
    };
    // View the physical data with dims in the result's major-to-minor order, then transpose
    // back to logical order.
    let phys_dims: Vec<usize> = m2m.iter().map(|&d| out_dims[d]).collect();
    let phys = ArrayLiteral {
        dims: phys_dims,
        data: phys,
    };
    let mut inv = vec![0usize; m2m.len()];
    for (i, &d) in m2m.iter().enumerate() {
        inv[d] = i;
    }
    Ok(Literal::Array(transpose_lit(&phys, &inv)?))
}
