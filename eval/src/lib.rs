//! The reference evaluator: computes what an HLO module computes, for every op.
//!
//! [`evaluate`] runs a module on one replica; [`Evaluator::run`] takes any [`Runtime`] (the
//! multi-replica runner in [`replica`] gives each replica thread its own). The interpreter
//! ([`interp`]) walks each computation in post-order over an environment indexed by `InstId`,
//! frees values after their last use, and dispatches by opcode to kernel modules (one per
//! concern). Numerics decisions (documented per kernel):
//! - f16/bf16 arithmetic is computed in f32 and rounded to nearest even, as XLA does;
//! - f32 arithmetic flushes subnormals to zero (inputs and results), as XLA:CPU and TPUs do; the
//!   corpus' `denormal_flush_f32` case needs it (`sqrt(|1e-40|)` and `1e-38 / 0.01` are 0
//!   there, beyond what its tolerance forgives). Conversions and data movement keep them;
//! - integer division by zero gives -1 (all bits set), `INT_MIN / -1 = INT_MIN`, `x % 0 = x`,
//!   `INT_MIN % -1 = 0` (XLA's documented values); shifts by ≥ the bit width give 0 (or the
//!   sign fill for arithmetic right shifts); float→int conversion saturates, NaN → 0.

pub mod case;
pub mod compare;
pub mod control;
pub mod convert;
pub mod corpus;
pub mod dynamic;
pub mod elementwise;
pub mod error;
pub mod gather;
pub mod interp;
pub mod linalg;
pub mod movement;
pub mod reduce;
pub mod replica;
pub mod runtime;
pub mod scatter;
pub mod sort;
pub mod util;
pub mod window;

pub use error::{EResult, EvalError};
pub use interp::Ctx;
pub use runtime::{Combine, HostIo, ReplicaInput, ReplicaOutput, RngState, Runtime, SingleReplica};

use hlo::ir::Module;
use hlo::literal::Literal;

/// Limits and switches of one evaluation.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalOptions {
    /// Total loop iterations (all `while` loops together) before giving up.
    pub max_while_iterations: u64,
    /// Maximum nesting of called computations (call, while bodies, comparators, ...).
    pub max_call_depth: usize,
    /// Largest number of elements a single value may have.
    pub max_elements: u64,
    /// Memory (bytes of live values, checked before each instruction allocates its result) and
    /// work (element operations of all instructions together) limits; see `docs/bounded.md`.
    pub budget: arch::Budget,
    /// Implementations of custom-call targets (default: the built-in annotations of
    /// `linalg::CustomCallRegistry::with_builtins`).
    pub custom_calls: linalg::CustomCallRegistry,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            max_while_iterations: 10_000_000,
            max_call_depth: 256,
            max_elements: 1 << 28,
            budget: arch::Budget::default(),
            custom_calls: linalg::CustomCallRegistry::with_builtins(),
        }
    }
}

/// An evaluator for one module with fixed options; cheap to create, reusable, `Sync`.
pub struct Evaluator<'m> {
    module: &'m Module,
    opts: EvalOptions,
    plans: interp::Plans,
}

impl<'m> Evaluator<'m> {
    /// An evaluator of a module the verifier accepted.
    pub fn new(module: &'m hlo::VerifiedModule) -> Evaluator<'m> {
        let module: &'m Module = module;
        Evaluator {
            module,
            opts: EvalOptions::default(),
            plans: interp::Plans::new(module),
        }
    }
    pub fn with_options(mut self, opts: EvalOptions) -> Evaluator<'m> {
        self.opts = opts;
        self
    }
    pub fn options(&self) -> &EvalOptions {
        &self.opts
    }
    pub fn module(&self) -> &'m Module {
        self.module
    }

    /// Runs the entry computation on `args` with the given runtime (one replica).
    pub fn run(&self, args: &[Literal], rt: &mut dyn Runtime) -> EResult<Literal> {
        let entry = self.module.entry();
        let params = entry.program_shape().params;
        if params.len() != args.len() {
            return Err(EvalError::bad_input(format!(
                "the entry computation takes {} arguments, {} given",
                params.len(),
                args.len()
            )));
        }
        for (i, (p, a)) in params.iter().zip(args).enumerate() {
            if !arg_fits(p, a) {
                return Err(EvalError::bad_input(format!(
                    "argument {i} has shape {} but parameter {i} is {}",
                    a.shape(),
                    p
                )));
            }
        }
        let mut cx = Ctx::new(self.module, &self.opts, &self.plans, rt);
        cx.call(self.module.entry, args.to_vec())
    }
}

/// True if literal `a` can be passed for a parameter of shape `p` (dynamic dims: any size up
/// to the bound).
pub fn arg_fits(p: &hlo::shape::Shape, a: &Literal) -> bool {
    use hlo::shape::Shape;
    match (p, a) {
        (Shape::Array(s), Literal::Array(v)) => {
            s.ty == v.element_type()
                && s.dims.len() == v.dims.len()
                && s.dims
                    .iter()
                    .zip(&s.dynamic)
                    .zip(&v.dims)
                    .all(|((&d, &dy), &n)| {
                        if dy {
                            d == hlo::shape::UNBOUNDED || n as i64 <= d
                        } else {
                            n as i64 == d
                        }
                    })
        }
        (Shape::Tuple(ps), Literal::Tuple(vs)) => {
            ps.len() == vs.len() && ps.iter().zip(vs).all(|(p, v)| arg_fits(p, v))
        }
        (Shape::Token, Literal::Token) => true,
        _ => false,
    }
}

/// Evaluates `module` on one replica with default options and empty host queues.
pub fn evaluate(module: &hlo::VerifiedModule, args: &[Literal]) -> EResult<Literal> {
    Evaluator::new(module).run(args, &mut SingleReplica::default())
}

#[cfg(test)]
mod budget_tests;
