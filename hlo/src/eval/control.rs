//! Control flow.

use crate::eval::error::{EResult, EvalError};
use crate::ir::Instruction;
use crate::literal::Literal;
use crate::eval::interp::Ctx;

pub fn call(_cx: &mut Ctx<'_>, inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

pub fn while_loop(_cx: &mut Ctx<'_>, inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

pub fn conditional(_cx: &mut Ctx<'_>, inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

pub fn async_start(_cx: &mut Ctx<'_>, inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

pub fn async_done(inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}
