//! Reduce (variadic) and Map: kernels that apply a scalar computation across elements.
//!
//! Reduce folds each group of reduced elements in row-major order of the reduced dimensions,
//! starting from the init value(s): `acc = f(acc, x)`. A single-operand reduce whose
//! computation is one commutative binary op ([`Ctx::binop_of`]) runs as typed vector steps
//! (reduced dims moved outermost, one vector op per reduced position) in the same order, so
//! both paths give bit-identical results. Reduce sees a dynamic operand's actual elements only.

use crate::elementwise::{binary_data, splat};
use crate::error::{EResult, EvalError};
use crate::interp::Ctx;
use crate::movement::transpose_lit;
use crate::util::{array, concat_data, mk, operand, scalar_of, slice_data};
use hlo::ir::{CompId, Instruction};
use hlo::literal::{ArrayData, ArrayLiteral, Literal};

/// The `to_apply` of a reduce or map.
fn comp_of(inst: &Instruction) -> EResult<CompId> {
    match inst.view() {
        hlo::View::Reduce { to_apply, .. } | hlo::View::Map { to_apply, .. } => Ok(to_apply),
        _ => Err(EvalError::malformed(inst)),
    }
}

/// Splits a computation result into `n` scalars (a tuple of `n`, or one array when `n == 1`).
pub fn split_result(r: Literal, n: usize) -> EResult<Vec<ArrayLiteral>> {
    match r {
        Literal::Array(a) if n == 1 => Ok(vec![a]),
        Literal::Tuple(t) if t.len() == n => t.iter().map(|l| array(l).cloned()).collect(),
        Literal::Tuple(t) if n == 1 && t.len() == 1 => Ok(vec![array(&t[0])?.clone()]),
        other => Err(EvalError::invalid(format!(
            "computation returned {} where {n} value(s) were expected",
            other.shape()
        ))),
    }
}

/// `reduce(x1..xN, init1..initN), dimensions={...}, to_apply=f`.
pub fn reduce(cx: &mut Ctx<'_>, inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    if !ops.len().is_multiple_of(2) || ops.is_empty() {
        return Err(EvalError::invalid(
            "reduce needs N inputs and N init values",
        ));
    }
    let n = ops.len() / 2;
    let inputs: Vec<&ArrayLiteral> = (0..n).map(|i| operand(ops, i)).collect::<EResult<_>>()?;
    let inits: Vec<&ArrayLiteral> = (n..2 * n)
        .map(|i| operand(ops, i))
        .collect::<EResult<_>>()?;
    let dims = inputs[0].dims.clone();
    let rank = dims.len();
    if inputs.iter().any(|x| x.dims != dims) || inits.iter().any(|x| x.data.len() != 1) {
        return Err(EvalError::invalid(
            "reduce inputs differ in dims or init values are not scalars",
        ));
    }
    let mut red = vec![false; rank];
    let hlo::View::Reduce { dimensions, .. } = inst.view() else {
        return Err(EvalError::malformed(inst));
    };
    for &d in dimensions {
        let d = usize::try_from(d)
            .ok()
            .filter(|&d| d < rank)
            .ok_or_else(|| EvalError::invalid(format!("reduce dimension {d} out of range")))?;
        red[d] = true;
    }
    let perm: Vec<usize> = (0..rank)
        .filter(|&d| red[d])
        .chain((0..rank).filter(|&d| !red[d]))
        .collect();
    let out_dims: Vec<usize> = (0..rank).filter(|&d| !red[d]).map(|d| dims[d]).collect();
    let k: usize = out_dims.iter().product();
    let r: usize = (0..rank).filter(|&d| red[d]).map(|d| dims[d]).product();
    let moved: Vec<ArrayLiteral> = inputs
        .iter()
        .map(|x| transpose_lit(x, &perm))
        .collect::<EResult<_>>()?;
    let comp = comp_of(inst)?;
    if n == 1 {
        if let Some(op) = cx.binop_of(comp) {
            let mut acc = splat(&inits[0].data, k);
            for j in 0..r {
                acc = binary_data(op, &acc, &slice_data(&moved[0].data, j * k..(j + 1) * k))?;
            }
            return mk(out_dims, acc);
        }
    }
    let mut results: Vec<Vec<ArrayData>> = vec![Vec::with_capacity(k); n];
    for o in 0..k {
        let mut acc: Vec<Literal> = inits.iter().map(|x| Literal::Array((*x).clone())).collect();
        for j in 0..r {
            let mut args = acc;
            args.extend(moved.iter().map(|m| scalar_of(m, j * k + o)));
            let res = split_result(cx.call(comp, args)?, n)?;
            acc = res.into_iter().map(Literal::Array).collect();
        }
        for (i, a) in acc.into_iter().enumerate() {
            results[i].push(array(&a)?.data.clone());
        }
    }
    let mut outs = Vec::with_capacity(n);
    for (i, parts) in results.iter().enumerate() {
        let ty = inits[i].element_type();
        let refs: Vec<&ArrayData> = parts.iter().collect();
        let data = concat_data(ty, &refs)?;
        if data.len() != k {
            return Err(EvalError::invalid(
                "reduce computation returned non-scalar values",
            ));
        }
        outs.push(mk(out_dims.clone(), data)?);
    }
    Ok(if n == 1 {
        outs.pop().expect("one output")
    } else {
        Literal::Tuple(outs)
    })
}

/// Applies a binary scalar computation elementwise to two arrays of the same shape.
pub fn combine_arrays(
    cx: &mut Ctx<'_>,
    comp: CompId,
    a: &ArrayLiteral,
    b: &ArrayLiteral,
) -> EResult<ArrayLiteral> {
    if let Some(op) = cx.binop_of(comp) {
        return Ok(ArrayLiteral {
            dims: a.dims.clone(),
            data: binary_data(op, &a.data, &b.data)?,
        });
    }
    let mut parts = Vec::with_capacity(a.data.len());
    for i in 0..a.data.len() {
        let r = split_result(cx.call(comp, vec![scalar_of(a, i), scalar_of(b, i)])?, 1)?;
        parts.push(r.into_iter().next().expect("one value").data);
    }
    let refs: Vec<&ArrayData> = parts.iter().collect();
    let ty = parts.first().map_or(a.element_type(), |p| p.element_type());
    Ok(ArrayLiteral {
        dims: a.dims.clone(),
        data: concat_data(ty, &refs)?,
    })
}

/// `map(x1..xN), dimensions={...}, to_apply=f`: `f` applied to each element position.
pub fn map(cx: &mut Ctx<'_>, inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let inputs: Vec<&ArrayLiteral> = (0..ops.len())
        .map(|i| operand(ops, i))
        .collect::<EResult<_>>()?;
    let first = inputs
        .first()
        .ok_or_else(|| EvalError::invalid("map without operands"))?;
    if inputs.iter().any(|x| x.dims != first.dims) {
        return Err(EvalError::invalid("map operands differ in dims"));
    }
    let comp = comp_of(inst)?;
    if inputs.len() == 2 {
        if let Some(op) = cx.binop_of(comp) {
            return mk(
                first.dims.clone(),
                binary_data(op, &inputs[0].data, &inputs[1].data)?,
            );
        }
    }
    let n = first.data.len();
    let mut parts = Vec::with_capacity(n);
    for i in 0..n {
        let args = inputs.iter().map(|x| scalar_of(x, i)).collect();
        let r = split_result(cx.call(comp, args)?, 1)?;
        parts.push(r.into_iter().next().expect("one value").data);
    }
    let ty = crate::util::out_array(&inst.shape)?.ty;
    let refs: Vec<&ArrayData> = parts.iter().collect();
    mk(first.dims.clone(), concat_data(ty, &refs)?)
}
