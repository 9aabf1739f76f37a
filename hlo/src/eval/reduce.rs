//! Reduce.

use crate::eval::error::{EResult, EvalError};
use crate::ir::Instruction;
use crate::literal::Literal;
use crate::eval::interp::Ctx;

pub fn reduce(_cx: &mut Ctx<'_>, inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

pub fn map(_cx: &mut Ctx<'_>, inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

pub fn combine_arrays(_cx: &mut Ctx<'_>, _comp: crate::ir::CompId, _a: &crate::literal::ArrayLiteral, _b: &crate::literal::ArrayLiteral) -> EResult<crate::literal::ArrayLiteral> {
    Err(EvalError::unsupported("combine"))
}
