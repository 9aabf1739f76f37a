//! Calls and control flow: call (and composite call), fusion, while, conditional (predicate
//! and index forms), custom-call, copy-start/done.

use super::{check_signature, Args, InferResult};
use crate::opcode::Opcode;
use crate::shape::Shape;
use crate::types::ElementType;

fn operand_shapes(a: &Args, from: usize) -> Vec<Shape> {
    a.ops[from..].iter().map(|s| (*s).clone()).collect()
}

pub(super) fn call(a: &Args) -> InferResult {
    let (c, name) = match a.op {
        Opcode::Fusion => (a.attrs.calls, "calls"),
        _ => (a.attrs.to_apply.or(a.attrs.calls), "to_apply"),
    };
    if a.op == Opcode::Fusion {
        match a.attrs.fusion_kind.as_deref() {
            Some("kLoop" | "kInput" | "kOutput" | "kCustom") => {}
            Some(k) => {
                return Err(format!(
                    "fusion kind={k} is unknown; expected kLoop, kInput, kOutput or kCustom"
                ))
            }
            None => return Err("fusion requires attribute kind=".into()),
        }
    }
    if a.attrs.is_composite == Some(true) {
        if !matches!(a.attrs.composite_name.as_deref(), Some(n) if !n.is_empty()) {
            return Err("a composite call requires composite.name=".into());
        }
        if a.attrs.composite_version.is_some_and(|v| v < 0) {
            return Err("composite.version must be non-negative".into());
        }
    }
    let sig = a.comp(c, name)?;
    check_signature(
        &sig,
        &operand_shapes(a, 0),
        None,
        &format!("{} {name}", a.op),
    )?;
    Ok(sig.result)
}

pub(super) fn while_(a: &Args) -> InferResult {
    let t = a.ops[0].clone();
    let cond = a.comp(a.attrs.condition, "condition")?;
    check_signature(
        &cond,
        std::slice::from_ref(&t),
        Some(&Shape::scalar(ElementType::Pred)),
        "while condition",
    )?;
    let body = a.comp(a.attrs.body, "body")?;
    check_signature(&body, std::slice::from_ref(&t), Some(&t), "while body")?;
    Ok(t)
}

pub(super) fn conditional(a: &Args) -> InferResult {
    let sel = a.array(0)?;
    if !sel.is_scalar() {
        return Err(format!(
            "conditional selector must be a scalar pred or s32, got {sel}"
        ));
    }
    let at = a.attrs;
    let branches = match (at.true_computation, at.false_computation, &at.branch_computations) {
        (Some(t), Some(f), None) => {
            if sel.ty != ElementType::Pred {
                return Err(format!(
                    "conditional with true_computation/false_computation needs a pred[] predicate, got {sel}"
                ));
            }
            vec![(t, "true_computation".to_string()), (f, "false_computation".to_string())]
        }
        (None, None, Some(bs)) => {
            if sel.ty != ElementType::S32 {
                return Err(format!("conditional with branch_computations needs an s32[] branch index, got {sel}"));
            }
            if bs.is_empty() {
                return Err("conditional branch_computations must not be empty".into());
            }
            bs.iter().enumerate().map(|(i, &c)| (c, format!("branch_computations[{i}]"))).collect()
        }
        _ => {
            return Err(
                "conditional needs either true_computation= and false_computation= or branch_computations=".into()
            )
        }
    };
    if a.ops.len() != branches.len() + 1 {
        return Err(format!(
            "conditional takes the selector and one operand per branch: expected {} operands, got {}",
            branches.len() + 1,
            a.ops.len()
        ));
    }
    let mut result: Option<Shape> = None;
    for (i, (c, name)) in branches.iter().enumerate() {
        let sig = a.cx.sig(*c, name)?;
        check_signature(
            &sig,
            &[a.ops[i + 1].clone()],
            result.as_ref(),
            &format!("conditional {name} (operand {})", i + 1),
        )
        .map_err(|e| {
            if result.is_some() {
                format!("{e} (all branches must return the same shape)")
            } else {
                e
            }
        })?;
        result.get_or_insert(sig.result);
    }
    Ok(result.expect("at least one branch"))
}

pub(super) fn custom_call(a: &Args) -> InferResult {
    if a.attrs.custom_call_target.is_none() {
        return Err("custom-call requires custom_call_target=".into());
    }
    for &c in a.attrs.called_computations.iter().flatten() {
        a.cx.sig(c, "called_computations")?;
    }
    Ok(a.declared()?.clone())
}

/// `async-start(ops), calls=C`: `((ops...), C's result, contexts...)`; the contexts come from
/// the declared shape (XLA lets backends choose them), else one `s32[]`.
pub(super) fn async_start(a: &Args) -> InferResult {
    let sig = a.comp(a.attrs.calls, "calls")?;
    let ops = operand_shapes(a, 0);
    check_signature(&sig, &ops, None, "async-start calls")?;
    let head = [Shape::Tuple(ops), sig.result];
    match a.declared {
        Some(Shape::Tuple(t)) if t.len() >= 2 => {
            if !t[0].compatible(&head[0]) || !t[1].compatible(&head[1]) {
                return Err(format!(
                    "async-start must be ((operands), result, contexts...) = ({}, {}, ...), got {}",
                    head[0],
                    head[1],
                    Shape::Tuple(t.clone())
                ));
            }
            Ok(Shape::Tuple(t.clone()))
        }
        Some(d) => Err(format!(
            "async-start must be a tuple ((operands), result, contexts...), got {d}"
        )),
        None => {
            let mut t = head.to_vec();
            t.push(Shape::scalar(ElementType::S32));
            Ok(Shape::Tuple(t))
        }
    }
}

/// `async-update(start)`: the start's tuple, unchanged.
pub(super) fn async_update(a: &Args) -> InferResult {
    match a.ops[0].as_tuple() {
        Some(t) if t.len() >= 2 => Ok(a.ops[0].clone()),
        _ => Err(format!(
            "{} needs the ((operands), result, contexts...) tuple of async-start, got {}",
            a.op, a.ops[0]
        )),
    }
}

/// `async-done(start)`: the wrapped computation's result.
pub(super) fn async_done(a: &Args) -> InferResult {
    async_update(a)?;
    Ok(a.ops[0].as_tuple().expect("checked")[1].clone())
}

pub(super) fn copy_start(a: &Args) -> InferResult {
    let x = a.ops[0].clone();
    Ok(Shape::Tuple(vec![
        x.clone(),
        x,
        Shape::scalar(ElementType::U32),
    ]))
}

pub(super) fn copy_done(a: &Args) -> InferResult {
    match a.ops[0].as_tuple() {
        Some(t) if t.len() == 3 && t[0].compatible(&t[1]) => Ok(t[0].clone()),
        _ => Err(format!(
            "copy-done needs the (T, T, u32[]) result of copy-start, got {}",
            a.ops[0]
        )),
    }
}
