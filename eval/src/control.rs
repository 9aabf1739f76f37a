//! Control flow: Call (and CompositeCall: its decomposition is the called computation),
//! Fusion (the fused computation), While, Conditional (predicate and branch-index forms; an
//! out-of-range index runs the last branch) and the generic async wrappers.

use crate::error::{EResult, EvalError};
use crate::interp::Ctx;
use crate::util::{array, scalar_i64};
use hlo::ir::Instruction;
use hlo::literal::{ArrayData, Literal};
use hlo::shape::Shape;

fn args(ops: &[&Literal]) -> Vec<Literal> {
    ops.iter().map(|&l| l.clone()).collect()
}

/// `call(...), to_apply=f` (also composite calls) and `fusion(...), calls=f`.
pub fn call(cx: &mut Ctx<'_>, inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let hlo::View::Call { callee: comp } = inst.view() else {
        return Err(EvalError::malformed(inst));
    };
    cx.call(comp, args(ops))
}

fn pred_value(l: &Literal) -> EResult<bool> {
    match &array(l)?.data {
        ArrayData::Pred(v) if v.len() == 1 => Ok(v[0]),
        _ => Err(EvalError::invalid("condition must return pred[]")),
    }
}

/// `while(init), condition=c, body=b`.
pub fn while_loop(cx: &mut Ctx<'_>, inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let hlo::View::While {
        condition: c,
        body: b,
    } = inst.view()
    else {
        return Err(EvalError::malformed(inst));
    };
    let mut state = (*ops
        .first()
        .ok_or_else(|| EvalError::invalid("while without operand"))?)
    .clone();
    loop {
        if !pred_value(&cx.call(c, vec![state.clone()])?)? {
            return Ok(state);
        }
        cx.tick()?;
        state = cx.call(b, vec![state])?;
    }
}

/// `conditional(p, t_arg, f_arg), true_computation=.., false_computation=..` or
/// `conditional(i, arg0, ..., argN-1), branch_computations={...}`.
pub fn conditional(cx: &mut Ctx<'_>, inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let sel = ops
        .first()
        .ok_or_else(|| EvalError::invalid("conditional without selector"))?;
    let hlo::View::Conditional(branches) = inst.view() else {
        return Err(EvalError::malformed(inst));
    };
    let branches = Some(branches);
    let is_pred = matches!(array(sel)?.data, ArrayData::Pred(_));
    let (comp, arg_pos) = if is_pred {
        let p = pred_value(sel)?;
        let (t, f) = match branches {
            Some(hlo::Branches::Pred { on_true, on_false }) => (on_true, on_false),
            Some(hlo::Branches::Index(&[t, f])) => (t, f),
            _ => {
                return Err(EvalError::invalid(
                    "predicated conditional without true/false computations",
                ))
            }
        };
        if p {
            (t, 1)
        } else {
            (f, 2)
        }
    } else {
        let branches = match branches {
            Some(hlo::Branches::Index(b)) => Some(b),
            _ => None,
        }
        .filter(|b| !b.is_empty())
        .ok_or_else(|| EvalError::invalid("indexed conditional without branch_computations"))?;
        let i = scalar_i64(sel)?;
        let last = branches.len() - 1;
        let i = if i < 0 || i as u64 > last as u64 {
            last
        } else {
            i as usize
        };
        (branches[i], i + 1)
    };
    let arg = ops
        .get(arg_pos)
        .ok_or_else(|| EvalError::invalid(format!("conditional has no operand {arg_pos}")))?;
    cx.call(comp, vec![(*arg).clone()])
}

/// `async-start(...), calls=f`: runs `f` now; the result is `((operands...), result, ctx...)`.
pub fn async_start(cx: &mut Ctx<'_>, inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let hlo::View::Call { callee: comp } = inst.view() else {
        return Err(EvalError::malformed(inst));
    };
    let result = cx.call(comp, args(ops))?;
    let mut elems = vec![Literal::Tuple(args(ops)), result];
    if let Shape::Tuple(parts) = &inst.shape {
        for p in parts.iter().skip(2) {
            elems.push(
                Literal::zeros(p).ok_or_else(|| EvalError::limit("async context too large"))?,
            );
        }
    }
    Ok(Literal::Tuple(elems))
}

/// `async-done(start)`: the wrapped computation's result.
pub fn async_done(_inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    match ops.first() {
        Some(Literal::Tuple(t)) if t.len() >= 2 => Ok(t[1].clone()),
        _ => Err(EvalError::invalid(
            "async-done operand is not an async-start tuple",
        )),
    }
}
