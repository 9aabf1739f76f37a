//! The pass manager: a [`Pass`] rewrites a module in place; [`pipeline`] is the one ordered
//! list of HLO-to-HLO passes run before lowering. With `verify_between` (on in tests) the
//! verifier runs after every pass that changed the module, and a failure names the pass.

use crate::error::{CResult, CompileError};
use hlo::Module;

/// One HLO-to-HLO transformation.
pub trait Pass {
    /// Name shown in errors and `--print-after` style debugging.
    fn name(&self) -> &'static str;
    /// Rewrites `m`; returns whether anything changed.
    fn run(&self, m: &mut Module) -> CResult<bool>;
}

/// The passes, in order.
pub fn pipeline() -> Vec<Box<dyn Pass>> {
    vec![
        Box::new(crate::passes::sync_async::SyncAsync),
        Box::new(crate::passes::expand_map::ExpandMap),
        Box::new(crate::passes::inline_calls::InlineCalls),
        Box::new(crate::passes::batch_norm::BatchNormExpander),
        Box::new(crate::passes::reduce_precision::ReducePrecisionExpander),
        Box::new(crate::passes::rng::RngExpander),
        Box::new(crate::passes::linalg::LinalgExpander),
        Box::new(crate::passes::complex::ComplexPlanes),
        Box::new(crate::passes::dot_vpu::DotToVpu),
        Box::new(crate::passes::dynamic_padder::DynamicPadder),
        Box::new(crate::passes::custom_call::CustomCallExpander),
        Box::new(crate::passes::constant_fold::ConstantFold),
        Box::new(crate::passes::simplify::Simplify),
        Box::new(crate::passes::cse::Cse),
        Box::new(crate::passes::dce::Dce),
    ]
}

/// Runs [`pipeline`] on `m`.
pub fn run_pipeline(m: &mut Module, verify_between: bool) -> CResult<()> {
    for p in pipeline() {
        let changed = p.run(m)?;
        if verify_between && changed {
            hlo::verify(m).map_err(|e| {
                CompileError::Internal(format!(
                    "the module does not verify after pass `{}`: {}",
                    p.name(),
                    e.render("<module>", "")
                ))
            })?;
        }
    }
    Ok(())
}
