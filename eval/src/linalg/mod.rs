//! Numeric kernels of the reference evaluator: DotGeneral, Convolution, Fft, Cholesky,
//! TriangularSolve, the BatchNorm ops, RngBitGenerator and Rng, and CustomCall through a
//! registry of Rust functions.
//!
//! Every kernel is a pure function of its operand literals, the instruction's [`Attrs`] and its
//! declared result shape; it returns a new literal or a [`KernelError`]. Kernels never panic on
//! bad input: a malformed attribute or a shape that disagrees with the attributes is an
//! `Invalid` error, an element type the kernel cannot compute on is `NotSupported`.
//!
//! Numerics (one rule for all kernels, see [`convert::Domain`]): values are computed in the
//! widest domain of the operand and result types — 64-bit wrapping integers, f32, f64, c64 or
//! c128 — so bf16/f16 operands are computed exactly in f32 and rounded once (to nearest even)
//! into the result type. `operand_precision` and `algorithm=` hints are ignored: evaluation is
//! always exact in the computation domain (f32 dot is true f32, not a bf16 pass), as the
//! reference evaluator must be. Results are deterministic: the GEMM core never splits a
//! reduction across threads, so every output element is summed in the same order regardless
//! of thread count.
//!
//! [`Attrs`]: hlo::attrs::Attrs

pub mod batchnorm;
pub mod cholesky;
pub mod conv;
pub mod convert;
pub mod custom_call;
pub mod dot;
mod error;
pub mod fft;
pub mod gemm;
mod permute;
pub mod rng;
pub mod rng_bits;
pub mod triangular;

pub use custom_call::{CustomCallFn, CustomCallRegistry};
pub use error::KernelError;

use crate::error::{EResult, EvalError};
use crate::interp::Ctx;
use crate::util::{operand, out_array};
use hlo::ir::Instruction;
use hlo::literal::{ArrayLiteral, Literal};
use hlo::opcode::Opcode;

/// Result type of every kernel.
pub type KResult<T> = Result<T, KernelError>;

/// Evaluates one numeric instruction (the interpreter's entry point for Dot, Convolution, Fft,
/// Cholesky, TriangularSolve, BatchNorm*, Rng, RngBitGenerator, RngGetAndUpdateState and
/// CustomCall).
pub fn eval_op(cx: &mut Ctx<'_>, inst: &Instruction, operands: &[&Literal]) -> EResult<Literal> {
    use Opcode as O;
    let a = &inst.attrs;
    let arr = |i: usize| operand(operands, i);
    let arrays = || -> EResult<Vec<&ArrayLiteral>> { (0..operands.len()).map(arr).collect() };
    let out = || out_array(&inst.shape);
    if let Some(w) = multiply_adds(inst, operands) {
        cx.charge(format_args!("%{} (multiply-adds)", inst.name), w)?;
    }
    let v = match inst.opcode {
        O::Dot => dot::dot_general(arr(0)?, arr(1)?, a, out()?)?,
        O::Convolution => conv::convolution(arr(0)?, arr(1)?, a, out()?)?,
        O::Fft => fft::fft(arr(0)?, a, out()?)?,
        O::Cholesky => cholesky::cholesky(arr(0)?, a, out()?)?,
        O::TriangularSolve => triangular::triangular_solve(arr(0)?, arr(1)?, a, out()?)?,
        O::BatchNormInference => batchnorm::batch_norm_inference(&arrays()?, a, out()?)?,
        O::BatchNormTraining => {
            return Ok(batchnorm::batch_norm_training(&arrays()?, a, &inst.shape)?)
        }
        O::BatchNormGrad => return Ok(batchnorm::batch_norm_grad(&arrays()?, a, &inst.shape)?),
        O::Rng => rng::rng(&arrays()?, a, out()?, cx.rt.rng())?,
        O::RngGetAndUpdateState => rng::rng_get_and_update_state(a, out()?, cx.rt.rng())?,
        O::RngBitGenerator => return Ok(rng_bits::rng_bit_generator(arr(0)?, a, &inst.shape)?),
        O::CustomCall => return cx.opts.custom_calls.call(inst, operands),
        op => {
            return Err(EvalError::invalid(format!(
                "{op} is not one of the numeric ops of eval::linalg"
            )))
        }
    };
    Ok(Literal::Array(v))
}

/// Multiply-adds of a dot (result elements × contraction size) or convolution (result
/// elements × kernel elements per output feature), saturating; `None` for other ops.
fn multiply_adds(inst: &Instruction, operands: &[&Literal]) -> Option<u64> {
    let out = inst.shape.as_array()?.element_count()?;
    let dims = |i: usize| operands.get(i).and_then(|l| l.as_array()).map(|a| &a.dims);
    let per_out: u64 = match inst.opcode {
        Opcode::Dot => {
            let lhs = dims(0)?;
            let hlo::View::Dot(dv) = inst.view() else {
                return None;
            };
            dv.lhs_contracting
                .iter()
                .map(|&d| {
                    usize::try_from(d)
                        .ok()
                        .and_then(|d| lhs.get(d))
                        .copied()
                        .unwrap_or(1) as u64
                })
                .fold(1u64, u64::saturating_mul)
        }
        Opcode::Convolution => {
            let rhs = dims(1)?;
            let all = rhs.iter().fold(1u64, |a, &d| a.saturating_mul(d as u64));
            let of = inst
                .conv()
                .and_then(|c| usize::try_from(c.dims.kernel_output_feature).ok())
                .and_then(|d| rhs.get(d))
                .copied()
                .unwrap_or(1)
                .max(1) as u64;
            all / of
        }
        _ => return None,
    };
    Some(out.saturating_mul(per_out))
}

#[cfg(test)]
mod dispatch_tests;
#[cfg(test)]
mod test_util;
