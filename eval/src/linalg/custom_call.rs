//! CustomCall: a registry of Rust functions keyed by `custom_call_target`.
//!
//! A registered function receives the instruction (attributes, declared shape, `opaque`
//! string, ...) and its operand values and returns the result value. An unregistered target is
//! the error [`EvalError::UnknownCustomCall`] naming it (the conformance runner accepts that
//! error for `shape_only` cases, whose targets no implementation knows).
//!
//! [`CustomCallRegistry::with_builtins`] (the default of `EvalOptions`) knows the value-neutral
//! partitioning annotations JAX emits — `Sharding`, `SPMDFullToShardShape`,
//! `SPMDShardToFullShape` — as identities on one replica (operand 0, which must have the declared
//! shape).

use crate::error::{EResult, EvalError};
use hlo::ir::Instruction;
use hlo::literal::Literal;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A custom-call implementation.
pub type CustomCallFn = Arc<dyn Fn(&Instruction, &[&Literal]) -> EResult<Literal> + Send + Sync>;

/// Custom-call targets and their implementations (ordered by name; cheap to clone).
#[derive(Clone, Default)]
pub struct CustomCallRegistry {
    map: BTreeMap<String, CustomCallFn>,
}

impl CustomCallRegistry {
    /// An empty registry.
    pub fn new() -> CustomCallRegistry {
        CustomCallRegistry::default()
    }

    /// A registry with the built-in identity annotations (see the module docs).
    pub fn with_builtins() -> CustomCallRegistry {
        let mut r = CustomCallRegistry::new();
        for name in ["Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape"] {
            r.register(name, identity);
        }
        r
    }

    /// Registers (or replaces) the implementation of `target`.
    pub fn register(
        &mut self,
        target: impl Into<String>,
        f: impl Fn(&Instruction, &[&Literal]) -> EResult<Literal> + Send + Sync + 'static,
    ) -> &mut CustomCallRegistry {
        self.map.insert(target.into(), Arc::new(f));
        self
    }

    /// The implementation of `target`, if registered.
    pub fn get(&self, target: &str) -> Option<&CustomCallFn> {
        self.map.get(target)
    }

    /// Registered target names, sorted.
    pub fn targets(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }

    /// Evaluates a custom-call instruction.
    pub fn call(&self, inst: &Instruction, operands: &[&Literal]) -> EResult<Literal> {
        let hlo::View::CustomCall { target } = inst.view() else {
            return Err(EvalError::malformed(inst));
        };
        match self.map.get(target) {
            Some(f) => {
                let v = f(inst, operands)?;
                if !v.shape().compatible(&inst.shape) {
                    return Err(EvalError::invalid(format!(
                        "custom-call target \"{target}\" returned {} but the instruction declares {}",
                        v.shape(),
                        inst.shape
                    )));
                }
                Ok(v)
            }
            None => Err(EvalError::UnknownCustomCall {
                target: target.to_string(),
            }),
        }
    }
}

fn identity(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    match ops {
        [x] => Ok((*x).clone()),
        _ => Err(EvalError::invalid(format!(
            "custom-call {:?} takes one operand, got {}",
            match inst.view() {
                hlo::View::CustomCall { target } => Some(target),
                _ => None,
            },
            ops.len()
        ))),
    }
}

impl fmt::Debug for CustomCallRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.targets()).finish()
    }
}

/// Equal when the same targets map to the same function objects.
impl PartialEq for CustomCallRegistry {
    fn eq(&self, o: &CustomCallRegistry) -> bool {
        self.map.len() == o.map.len()
            && self
                .map
                .iter()
                .zip(&o.map)
                .all(|((ka, fa), (kb, fb))| ka == kb && Arc::ptr_eq(fa, fb))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hlo::attrs::Attrs;
    use hlo::diag::Span;
    use hlo::literal::ArrayData;
    use hlo::opcode::Opcode;
    use hlo::shape::Shape;
    use hlo::types::ElementType;

    fn cc(target: &str, shape: Shape) -> Instruction {
        Instruction {
            name: "cc".into(),
            opcode: Opcode::CustomCall,
            shape,
            operands: vec![],
            attrs: Attrs {
                custom_call_target: Some(target.into()),
                ..Attrs::default()
            }
            .into(),
            span: Span::NONE,
        }
    }

    #[test]
    fn registered_function_runs_and_unknown_target_is_named() {
        let mut r = CustomCallRegistry::new();
        r.register("twice", |_, ops| {
            let Some(Literal::Array(a)) = ops.first() else {
                return Err(EvalError::invalid("no operand"));
            };
            let ArrayData::F32(v) = &a.data else {
                return Err(EvalError::invalid("f32 only"));
            };
            Ok(Literal::array(
                a.dims.clone(),
                ArrayData::F32(v.iter().map(|x| 2.0 * x).collect()),
            ))
        });
        let x = Literal::array(vec![2], ArrayData::F32(vec![1.5, -2.0]));
        let inst = cc("twice", Shape::array(ElementType::F32, &[2]));
        assert_eq!(
            r.call(&inst, &[&x]).unwrap(),
            Literal::array(vec![2], ArrayData::F32(vec![3.0, -4.0]))
        );
        let e = r
            .call(
                &cc("my_custom_op", Shape::array(ElementType::F32, &[2])),
                &[&x],
            )
            .unwrap_err();
        assert!(e.is_unknown_custom_call());
        assert!(e.to_string().contains("my_custom_op"), "{e}");
        // A function returning the wrong shape is caught.
        let bad = cc("twice", Shape::array(ElementType::F32, &[3]));
        assert!(r
            .call(&bad, &[&x])
            .unwrap_err()
            .to_string()
            .contains("declares"));
    }

    #[test]
    fn builtins_are_identities() {
        let r = CustomCallRegistry::with_builtins();
        assert_eq!(
            r.targets().collect::<Vec<_>>(),
            vec!["SPMDFullToShardShape", "SPMDShardToFullShape", "Sharding"]
        );
        let x = Literal::array(vec![1], ArrayData::S32(vec![4]));
        assert_eq!(
            r.call(&cc("Sharding", Shape::array(ElementType::S32, &[1])), &[&x])
                .unwrap(),
            x
        );
        assert_eq!(r, r.clone());
        assert_ne!(r, CustomCallRegistry::new());
    }
}
