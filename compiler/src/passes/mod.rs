//! HLO-to-HLO passes, one file each, run in the order of [`crate::pass::pipeline`].

pub mod batch_norm;
pub mod complex;
pub mod cse;
pub mod custom_call;
pub mod dce;
pub mod dynamic_padder;
pub mod expand_map;
pub mod inline_calls;
pub mod linalg;
pub mod reduce_precision;
pub(crate) mod rewrite;
pub mod rng;
pub mod simplify;
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
