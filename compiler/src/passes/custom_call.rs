//! Replaces `custom-call`s whose target the reference evaluator knows and which compute
//! nothing — JAX's partitioning annotations `Sharding`, `SPMDFullToShardShape` and
//! `SPMDShardToFullShape`, identities on one device — by their operand (no code). Other targets
//! have no implementation on chip (nor in the evaluator) and stay `not supported on chip yet`.

use super::rewrite::{run_expander, OpExpander, Rw};
use crate::error::CResult;
use crate::pass::Pass;
use hlo::{InstId, Instruction, Module, Opcode};

/// The identity targets.
pub const IDENTITY_TARGETS: [&str; 3] =
    ["Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape"];

/// See the module docs.
pub struct CustomCallExpander;

impl Pass for CustomCallExpander {
    fn name(&self) -> &'static str {
        "custom-call-expander"
    }
    fn run(&self, m: &mut Module) -> CResult<bool> {
        run_expander(self, m)
    }
}

impl OpExpander for CustomCallExpander {
    fn matches(&self, i: &Instruction) -> bool {
        i.opcode == Opcode::CustomCall
            && i.operands.len() == 1
            && matches!(i.view(), hlo::View::CustomCall { target } if IDENTITY_TARGETS.contains(&target))
    }

    fn expand(&self, rw: &mut Rw<'_>, h: InstId) -> CResult<Option<InstId>> {
        let i = &rw.m.comps[rw.c].insts[h];
        let x = i.operands[0];
        let same = rw.shape(x).without_layout() == i.shape.without_layout();
        Ok(same.then_some(x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_annotations_disappear_and_other_targets_stay() {
        let text = r#"
HloModule cc

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  s = f32[2,3]{1,0} custom-call(x), custom_call_target="Sharding", sharding={replicated}
  u = f32[3,2]{1,0} custom-call(s), custom_call_target="my_custom_op"
  ROOT t = (f32[2,3]{1,0}, f32[3,2]{1,0}) tuple(s, u)
}
"#;
        let mut m = hlo::parse(text).unwrap();
        hlo::verify(&m).unwrap();
        assert!(CustomCallExpander.run(&mut m).unwrap());
        crate::passes::dce::Dce.run(&mut m).unwrap();
        hlo::verify(&m).unwrap();
        let targets: Vec<String> = m
            .entry()
            .insts
            .values()
            .filter_map(|i| match i.view() {
                hlo::View::CustomCall { target } => Some(target.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(targets, vec!["my_custom_op".to_string()]);
    }
}
