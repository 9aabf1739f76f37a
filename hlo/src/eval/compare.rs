//! Compare, Select, Clamp.

use crate::eval::error::{EResult, EvalError};
use crate::ir::Instruction;
use crate::literal::Literal;

pub fn compare(inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

pub fn select(inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

pub fn clamp(inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

