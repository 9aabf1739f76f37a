//! Constant folding (as XLA's `HloConstantFolding`): an instruction whose operands are all
//! constants is computed at compile time by the reference evaluator and replaced by a
//! `constant` of its value, so the chip neither stores its operands nor runs it.
//!
//! What is folded: array-valued instructions that CSE may merge (no side effects, no identity
//! of their own: see [`crate::passes::cse::mergeable`]), except `broadcast` and `iota` (cheap
//! on chip, and their folded value would be a large constant in HBM, as XLA also keeps them),
//! `constant` itself, replica and partition ids, and complex results (constants are real
//! planes by the time this pass runs). The result must have at most [`MAX_FOLDED_BYTES`]
//! bytes, and computing it at most [`MAX_FOLD_WORK`] element operations; an instruction the
//! evaluator cannot compute within that (or at all) is left as it is, never an error: the
//! chip computes it instead.
//!
//! Folding must not grow a computation's constants by more than [`SLACK_BYTES`] (each is HBM
//! data and a DMA on the chip): a chain that turns one shared constant into a new constant per
//! use is left to the VPU.
//!
//! One walk per computation in post order folds chains (`negate(add(c1, c2))`): values are
//! kept beside the module until the walk ends, and only the folded instructions that an
//! unfolded one (or the root) uses become constants; the rest are left to `dce`. Evaluation
//! happens before any computation changes, so calls into other computations (a reduce's
//! `to_apply`) see the module as the evaluator's plans describe it.

use crate::error::CResult;
use crate::pass::Pass;
use crate::passes::cse::mergeable;
use hlo::{Attrs, CompId, InstId, Instruction, Literal, Module, Opcode, Shape};
use std::collections::HashMap;

/// See the module docs.
pub struct ConstantFold;

/// Largest folded value, in bytes.
pub const MAX_FOLDED_BYTES: u64 = 1 << 20;
/// Most element operations one fold may cost the evaluator, and most elements folded in one
/// computation (compile time stays linear in the module's size).
pub const MAX_FOLD_WORK: u64 = 1 << 24;

/// Growth of a computation's constant bytes that folding may cause (every constant is HBM
/// data and a DMA into VMEM on the chip, so folding that turns one shared constant into many
/// new ones would make the program slower and larger: then the computation is left as it is).
pub const SLACK_BYTES: u64 = 4096;

fn literal_bytes(i: &Instruction) -> u64 {
    i.shape.as_array().and_then(|a| a.byte_size()).unwrap_or(0)
}

/// Bytes of the constants of `c` that some instruction (or the root) uses once `values`
/// replace their instructions: the folded instructions an unfolded one uses, and the old
/// constants unfolded instructions still use (no `values`: the constants as they are).
fn constant_bytes(c: &hlo::Computation, values: &HashMap<InstId, Literal>) -> u64 {
    let mut used = vec![false; c.insts.len()];
    for (h, i) in c.insts.iter() {
        if !values.contains_key(&h) {
            for o in &i.operands {
                used[o.index()] = true;
            }
        }
    }
    used[c.root.index()] = true;
    c.insts
        .iter()
        .filter(|(h, i)| {
            used[h.index()] && (values.contains_key(h) || i.opcode == Opcode::Constant)
        })
        .map(|(_, i)| literal_bytes(i))
        .sum()
}

/// Whether an instruction of `op` is a candidate (its operands still have to be constants).
fn foldable(op: Opcode) -> bool {
    use Opcode::*;
    mergeable(op) && !matches!(op, Constant | Broadcast | Iota | ReplicaId | PartitionId)
}

/// Whether `shape`'s value is small enough to become a constant.
fn small_real_array(shape: &Shape) -> bool {
    shape.as_array().is_some_and(|a| {
        !a.is_dynamic()
            && !a.ty.is_complex()
            && a.byte_size().is_some_and(|b| b <= MAX_FOLDED_BYTES)
    })
}

impl Pass for ConstantFold {
    fn name(&self) -> &'static str {
        "constant-fold"
    }

    fn run(&self, m: &mut Module) -> CResult<bool> {
        let plans = eval::interp::Plans::new(m);
        let mut opts = eval::EvalOptions::default();
        opts.budget.max_work = MAX_FOLD_WORK;
        opts.budget.max_memory = 16 * MAX_FOLDED_BYTES;
        let comps: Vec<CompId> = m.comps.handles().collect();
        // All values first (the evaluator reads the unchanged module), then the rewrites.
        let mut folds = Vec::new();
        for c in comps {
            let f = fold_values(m, &plans, &opts, c);
            if !f.is_empty()
                && constant_bytes(&m.comps[c], &f)
                    <= constant_bytes(&m.comps[c], &HashMap::new()) + SLACK_BYTES
            {
                folds.push((c, f));
            }
        }
        let changed = !folds.is_empty();
        for (c, values) in folds {
            replace(m, c, values);
        }
        Ok(changed)
    }
}

/// The value of every foldable instruction of computation `c` whose operands are constants or
/// folded, in post order.
fn fold_values(
    m: &Module,
    plans: &eval::interp::Plans,
    opts: &eval::EvalOptions,
    c: CompId,
) -> HashMap<InstId, Literal> {
    let comp = &m.comps[c];
    let mut values: HashMap<InstId, Literal> = HashMap::new();
    let Some(order) = comp.post_order() else {
        return values;
    };
    let mut io = eval::SingleReplica::new(eval::HostIo::default());
    // Elements folded so far: the walk stops at [`MAX_FOLD_WORK`] for the computation.
    let mut work = 0u64;
    for h in order {
        if work >= MAX_FOLD_WORK {
            break;
        }
        let inst = &comp.insts[h];
        if !foldable(inst.opcode)
            || !inst.attrs.control_predecessors.is_empty()
            || inst.operands.is_empty()
            || !small_real_array(&inst.shape)
        {
            continue;
        }
        let ops: Option<Vec<&Literal>> = inst
            .operands
            .iter()
            .map(|o| {
                values.get(o).or_else(|| {
                    let oi = &comp.insts[*o];
                    oi.literal()
                })
            })
            .collect();
        let Some(ops) = ops else { continue };
        let mut cx = eval::Ctx::new(m, opts, plans, &mut io);
        if let Ok(v) = cx.eval_inst(inst, &ops) {
            if v.shape().without_layout() == inst.shape.without_layout() {
                work += inst
                    .shape
                    .as_array()
                    .and_then(|a| a.element_count())
                    .unwrap_or(0);
                values.insert(h, v);
            }
        }
    }
    values
}

/// Replaces the folded instructions of `c` that an unfolded instruction or the root uses by
/// constants (same name, span and shape).
fn replace(m: &mut Module, c: CompId, values: HashMap<InstId, Literal>) {
    let comp = &mut m.comps[c];
    let mut used: Vec<InstId> = Vec::new();
    for (h, i) in comp.insts.iter() {
        if values.contains_key(&h) {
            continue;
        }
        for o in i.operands.iter().chain(&i.attrs.control_predecessors) {
            if values.contains_key(o) && !used.contains(o) {
                used.push(*o);
            }
        }
    }
    if values.contains_key(&comp.root) && !used.contains(&comp.root) {
        used.push(comp.root);
    }
    used.sort_by_key(|h| h.index());
    for h in used {
        let old = &comp.insts[h];
        let konst = Instruction {
            name: old.name.clone(),
            opcode: Opcode::Constant,
            shape: old.shape.clone(),
            operands: vec![],
            attrs: Attrs {
                literal: Some(Box::new(values[&h].clone())),
                ..Default::default()
            }
            .into(),
            span: old.span,
        };
        comp.insts[h] = konst;
    }
    // Folded instructions nothing unfolded uses keep their operands until `dce` drops them.
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::testing;

    const CHAIN: &str = r#"
HloModule fold

sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  x = f32[4] parameter(0)
  c1 = f32[4] constant({1, 2, 3, 4})
  c2 = f32[4] constant({0.5, 0.25, 2, -1})
  ad = f32[4] add(c1, c2)
  ng = f32[4] negate(ad)
  z = f32[] constant(0)
  r = f32[] reduce(c1, z), dimensions={0}, to_apply=sum
  rb = f32[4] broadcast(r), dimensions={}
  m = f32[4] multiply(x, ng)
  ROOT o = f32[4] add(m, rb)
}
"#;

    #[test]
    fn chains_and_reductions_of_constants_fold_and_broadcasts_stay() {
        let (m, x) = testing::expand(CHAIN, &[&ConstantFold]);
        let e = x.entry();
        let by_name = |n: &str| e.insts.values().find(|i| i.name == n).map(|i| i.opcode);
        // The chain's last link and the reduce became constants; the broadcast stays.
        assert_eq!(by_name("ng"), Some(Opcode::Constant));
        assert_eq!(by_name("r"), Some(Opcode::Constant));
        assert_eq!(by_name("rb"), Some(Opcode::Broadcast));
        assert_eq!(by_name("m"), Some(Opcode::Multiply));
        // `ad` only fed `ng`: dropped by dce.
        assert_eq!(by_name("ad"), None);
        let arg = Literal::array(vec![4], hlo::ArrayData::F32(vec![1.0, -2.0, 0.5, 3.0]));
        let (want, have) = testing::eval_both(&m, &x, &[arg]);
        // Folding runs the evaluator's own kernels: the same bits.
        assert_eq!(want, have);
    }

    #[test]
    fn parameters_side_effects_and_large_results_are_not_folded() {
        let text = r#"
HloModule keep
ENTRY e {
  p = f32[2] parameter(0)
  c = f32[2] constant({1, 2})
  a = f32[2] add(p, c)
  k = s32[1] constant({1})
  z = s32[] constant(0)
  big = s32[300000] pad(k, z), padding=0_299999
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  rng = f32[2] rng(lo, hi), distribution=rng_uniform
  i = s32[4] iota(), iota_dimension=0
  kb = s32[4] broadcast(z), dimensions={}
  ROOT t = (f32[2], s32[300000], f32[2], s32[4], s32[4]) tuple(a, big, rng, i, kb)
}
"#;
        let mut m = hlo::parse(text).unwrap();
        hlo::verify(&m).unwrap();
        let changed = ConstantFold.run(&mut m).unwrap();
        assert!(!changed, "nothing here may fold");
    }

    #[test]
    fn folding_that_multiplies_constants_is_left_to_the_chip() {
        // Each k_i would become its own 4 KiB constant (the chain shares one): 12 KiB more
        // constant data than the 4 KiB there is.
        let text = r#"
HloModule grow
ENTRY e {
  x = f32[1024] parameter(0)
  one = f32[1024] constant({...})
  k0 = f32[1024] add(one, one)
  y0 = f32[1024] add(x, k0)
  k1 = f32[1024] multiply(k0, one)
  y1 = f32[1024] add(y0, k1)
  k2 = f32[1024] multiply(k1, one)
  ROOT y2 = f32[1024] add(y1, k2)
}
"#
        .replace("{...}", &format!("{{{}}}", vec!["1.5"; 1024].join(",")));
        let mut m = hlo::parse(&text).unwrap();
        hlo::verify(&m).unwrap();
        assert!(
            !ConstantFold.run(&mut m).unwrap(),
            "constants would grow: nothing folds"
        );
    }
}
