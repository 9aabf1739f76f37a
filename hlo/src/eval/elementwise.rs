//! Elementwise.

use crate::eval::error::{EResult, EvalError};
use crate::ir::Instruction;
use crate::literal::Literal;

pub fn unary(inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

pub fn binary(inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

pub fn binary_data(_op: crate::opcode::Opcode, _a: &crate::literal::ArrayData, _b: &crate::literal::ArrayData) -> EResult<crate::literal::ArrayData> {
    Err(EvalError::unsupported("binary"))
}
