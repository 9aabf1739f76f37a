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
    /// FLOPs of dots this pass added that repeat a dot of the module (the bf16 passes of an
    /// f32 dot after the first): the report counts each dot of the module once.
    fn repeated_flops(&self) -> u64 {
        0
    }
}

/// The passes, in order, for a compilation of `opts` for `arch` (a pass that decides by the
/// chip's sizes takes them here).
pub fn pipeline(arch: &arch::ArchConfig, opts: &crate::CompileOptions) -> Vec<Box<dyn Pass>> {
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
        // After `simplify` has read the narrow operands of widened bf16 dots, and after CSE
        // and DCE (the split counts the FLOPs of the passes it adds: no dot may be merged or
        // dropped after it); the order first, so the split dots are in it.
        Box::new(crate::passes::cse::Cse),
        Box::new(crate::passes::dce::Dce),
        Box::new(crate::passes::stream_order_dots::StreamOrderDots {
            vmem_bytes: arch.vmem.bytes,
        }),
        Box::new(crate::passes::split_f32_dots::SplitF32Dots {
            vmem_bytes: arch.vmem.bytes,
            min_passes: opts.f32_dot_passes,
            bf16: arch.mxu.dtypes.contains(&arch::MxuDtype::Bf16),
            repeated: Default::default(),
        }),
        // Transposes `stream-order-dots` put on transposes fold into one (or none).
        //Box::new(crate::passes::simplify::Simplify),
        Box::new(crate::passes::cse::Cse),
        Box::new(crate::passes::dce::Dce),
    ]
}

/// Runs [`pipeline`] on `m`; returns the FLOPs of dots the passes added that repeat a dot of
/// the module ([`Pass::repeated_flops`]).
pub fn run_pipeline(
    m: &mut Module,
    arch: &arch::ArchConfig,
    opts: &crate::CompileOptions,
) -> CResult<u64> {
    let passes = pipeline(arch, opts);
    for p in &passes {
        let changed = p.run(m)?;
        if opts.verify_between_passes && changed {
            hlo::verify(m).map_err(|e| {
                CompileError::Internal(format!(
                    "the module does not verify after pass `{}`: {}",
                    p.name(),
                    e.render("<module>", "")
                ))
            })?;
        }
    }
    Ok(passes.iter().map(|p| p.repeated_flops()).sum())
}
