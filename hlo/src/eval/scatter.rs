//! Scatter.

use crate::eval::error::{EResult, EvalError};
use crate::ir::Instruction;
use crate::literal::Literal;
use crate::eval::interp::Ctx;

pub fn scatter(_cx: &mut Ctx<'_>, inst: &Instruction, _ops: &[&Literal]) -> EResult<Literal> {
    Err(EvalError::unsupported(format!("{}", inst.opcode)))
}

