//! HLO-to-HLO passes, one file each, run in the order of [`crate::pass::pipeline`].

pub mod batch_norm;
pub mod complex;
pub mod constant_fold;
pub mod cse;
pub mod custom_call;
pub mod dce;
pub mod dot_vpu;
pub mod dynamic_padder;
pub mod expand_map;
pub mod inline_calls;
pub mod linalg;
pub mod reduce_precision;
pub(crate) mod rewrite;
pub mod rng;
pub mod simplify;
pub mod split_f32_dots;
pub mod stream_order_dots;
pub mod sync_async;

use hlo::{Computation, InstId};
use std::collections::HashSet;

/// A name not in `names` (`BASE.iN`, the first free `N`), added to them.
pub(crate) fn fresh_name(names: &mut HashSet<String>, base: &str) -> String {
    let mut n = 1;
    loop {
        let cand = format!("{base}.i{n}");
        if names.insert(cand.clone()) {
            return cand;
        }
        n += 1;
    }
}

/// Points every use of `old` (operands, control edges, the root) at `new`.
pub(crate) fn replace_uses(c: &mut Computation, old: InstId, new: InstId) {
    for h in c.insts.handles().collect::<Vec<_>>() {
        let i = &mut c.insts[h];
        if h == new {
            continue;
        }
        for o in i
            .operands
            .iter_mut()
            .chain(i.attrs.control_predecessors.iter_mut())
        {
            if *o == old {
                *o = new;
            }
        }
    }
    if c.root == old {
        c.root = new;
    }
}

/// What the expander tests share: expand a module, check it still verifies, and run the
/// original and the expansion on the evaluator.
#[cfg(test)]
pub(crate) mod testing {
    use crate::pass::Pass;
    use hlo::{Literal, Module};

    /// Parses and verifies `text`; runs `passes` and then DCE on a copy; the last pass must
    /// change it and the copy must verify. Returns (original, expanded).
    pub fn expand(text: &str, passes: &[&dyn Pass]) -> (Module, Module) {
        let m = hlo::parse(text).unwrap();
        hlo::verify(&m).unwrap();
        let mut x = m.clone();
        let mut changed = false;
        for p in passes {
            changed = p.run(&mut x).unwrap();
        }
        assert!(changed, "the expander changed nothing");
        super::dce::Dce.run(&mut x).unwrap();
        hlo::verify(&x).unwrap();
        (m, x)
    }

    /// The evaluator's results of `m` and `x` on `args`: (want, have).
    pub fn eval_both(m: &Module, x: &Module, args: &[Literal]) -> (Literal, Literal) {
        let run = |m: &Module| eval::evaluate(&hlo::verified(m.clone()).unwrap(), args).unwrap();
        (run(m), run(x))
    }

    /// `have` equals `want` under `check` with `rtol = atol = tol`.
    pub fn assert_matches(check: eval::case::Check, tol: f64, want: &Literal, have: &Literal) {
        let tol = eval::case::Tolerance {
            rtol: tol,
            atol: tol,
        };
        eval::case::check_value(check, tol, None, want, have).unwrap();
    }
}
