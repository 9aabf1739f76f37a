//! The compiler: a verified HLO module to one core's ISA program ([`isa::Program`]) plus the
//! map of where its inputs and outputs live in HBM ([`io::IoMap`]).
//!
//! Pipeline (see `docs/architecture.md`): HLO-to-HLO passes ([`pass::pipeline`]: inline calls
//! and fusions, simplify, dead code), then [`lower`]: memory planning, per-op lowering to the
//! MXU, VPU and DMA, and the [`lower::emit::Emitter`], which orders every cross-unit
//! dependency with semaphores so a compiled program has no race by construction.
//!
//! Everything the compiler cannot do yet is a [`CompileError::NotSupported`] naming the HLO
//! instruction's place; nothing falls back to the host.

pub mod error;
pub mod io;
pub mod lower;
pub mod pass;
pub mod passes;

pub use error::{CResult, CompileError};
pub use io::{IoMap, Place, Slot};
pub use lower::LowerStats;

use arch::ArchConfig;
use hlo::Module;

/// Knobs of one compilation.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// At least this many bf16 passes for f32 dots (1, 3 or 6; the module's
    /// `precision_config` may ask for more). 6 gives close to f32 accuracy.
    pub f32_dot_passes: u32,
    /// Verify the module after every pass that changed it (tests).
    pub verify_between_passes: bool,
    /// The analytic ICI backend: every collective becomes one `ici.model` of its α-β closed
    /// form (`sim::ici_model`) instead of its transfers, so one chip can stand for the pod
    /// (timing only: no data moves between chips).
    pub ici_analytic: bool,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            f32_dot_passes: 1,
            verify_between_passes: false,
            ici_analytic: false,
        }
    }
}

/// A compiled module.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The program every core of every chip runs.
    pub program: isa::Program,
    /// Where parameters and result live in HBM.
    pub io: IoMap,
    /// What the compiler counted.
    pub stats: LowerStats,
    /// The module after the HLO passes (what was lowered).
    pub module: Module,
    /// Chips to simulate: one per device (`replica_count × num_partitions`), or 1 with the
    /// analytic ICI backend (chip 0 stands for the pod).
    pub chips: usize,
    /// Devices the module runs on.
    pub devices: usize,
}

/// Compiles `module` (the verifier's proof, [`hlo::verified`]) for `arch`.
pub fn compile(
    module: &hlo::VerifiedModule,
    arch: &ArchConfig,
    opts: &CompileOptions,
) -> CResult<Compiled> {
    let mut m = Module::clone(module);
    let repeated = pass::run_pipeline(&mut m, arch, opts)?;
    let (program, io, mut stats) = lower::Lowerer::run(&m, arch, opts)?;
    // Each dot of the module counts once, however many bf16 passes it takes.
    stats.flops = stats.flops.saturating_sub(repeated);
    let devices = m.num_devices();
    Ok(Compiled {
        program,
        io,
        stats,
        module: m,
        chips: if opts.ici_analytic { 1 } else { devices },
        devices,
    })
}
