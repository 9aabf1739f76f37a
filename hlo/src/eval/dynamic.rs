//! Dynamic ops.

use crate::eval::error::{EResult, EvalError};
use crate::ir::Instruction;
use crate::literal::Literal;

pub fn dynamic_slice(inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

pub fn dynamic_update_slice(inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

pub fn dynamic_reshape(inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

pub fn get_dimension_size(inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

pub fn set_dimension_size(inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

