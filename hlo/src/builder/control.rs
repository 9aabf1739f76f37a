//! Calls and control flow: call, composite call, map, while, conditional, custom-call,
//! optimization barrier.

use super::{err, BResult, XlaBuilder, XlaComputation, XlaOp};
use crate::attrs::Attrs;
use crate::opcode::Opcode;
use crate::shape::Shape;

impl XlaBuilder {
    /// `Call(computation, operands...)`.
    pub fn call(&mut self, computation: &XlaComputation, operands: &[XlaOp]) -> BResult<XlaOp> {
        let c = self.embed(computation);
        let attrs = Attrs {
            to_apply: Some(c),
            ..Default::default()
        };
        self.add_instruction(Opcode::Call, operands, attrs, None)
    }

    /// `CompositeCall(computation, operands, name, attributes, version)`: a call whose callee is
    /// the decomposition of the named composite op.
    pub fn composite_call(
        &mut self,
        decomposition: &XlaComputation,
        operands: &[XlaOp],
        name: &str,
        attributes: Option<&str>,
        version: i64,
    ) -> BResult<XlaOp> {
        let c = self.embed(decomposition);
        let attrs = Attrs {
            to_apply: Some(c),
            is_composite: Some(true),
            composite_name: Some(name.to_string()),
            composite_attributes: Some(attributes.unwrap_or("{}").to_string()),
            composite_version: Some(version),
            ..Default::default()
        };
        self.add_instruction(Opcode::Call, operands, attrs, None)
    }

    /// `Map(operands, computation, dimensions)`: applies a scalar computation elementwise.
    pub fn map(
        &mut self,
        operands: &[XlaOp],
        computation: &XlaComputation,
        dimensions: &[i64],
    ) -> BResult<XlaOp> {
        let c = self.embed(computation);
        let attrs = Attrs {
            dimensions: Some(dimensions.to_vec()),
            to_apply: Some(c),
            ..Default::default()
        };
        self.add_instruction(Opcode::Map, operands, attrs, None)
    }

    /// `While(condition, body, init)`.
    pub fn while_loop(
        &mut self,
        condition: &XlaComputation,
        body: &XlaComputation,
        init: XlaOp,
    ) -> BResult<XlaOp> {
        let c = self.embed(condition);
        let b = self.embed(body);
        let attrs = Attrs {
            condition: Some(c),
            body: Some(b),
            ..Default::default()
        };
        self.add_instruction(Opcode::While, &[init], attrs, None)
    }

    /// `Conditional(pred, true_operand, true_computation, false_operand, false_computation)`.
    pub fn conditional(
        &mut self,
        pred: XlaOp,
        true_operand: XlaOp,
        true_computation: &XlaComputation,
        false_operand: XlaOp,
        false_computation: &XlaComputation,
    ) -> BResult<XlaOp> {
        let t = self.embed(true_computation);
        let f = self.embed(false_computation);
        let attrs = Attrs {
            true_computation: Some(t),
            false_computation: Some(f),
            ..Default::default()
        };
        self.add_instruction(
            Opcode::Conditional,
            &[pred, true_operand, false_operand],
            attrs,
            None,
        )
    }

    /// `Conditional(branch_index, branch_computations, branch_operands)`; an out-of-range
    /// index runs the last branch.
    pub fn conditional_indexed(
        &mut self,
        branch_index: XlaOp,
        branches: &[&XlaComputation],
        operands: &[XlaOp],
    ) -> BResult<XlaOp> {
        if branches.len() != operands.len() || branches.is_empty() {
            return Err(err(format!(
                "conditional: {} branch computations but {} branch operands (need the same, at least one)",
                branches.len(),
                operands.len()
            )));
        }
        let ids = branches.iter().map(|c| self.embed(c)).collect();
        let mut ops = vec![branch_index];
        ops.extend_from_slice(operands);
        let attrs = Attrs {
            branch_computations: Some(ids),
            ..Default::default()
        };
        self.add_instruction(Opcode::Conditional, &ops, attrs, None)
    }

    /// `CustomCall(target_name, operands, shape, opaque, has_side_effect)`.
    pub fn custom_call(
        &mut self,
        target: &str,
        operands: &[XlaOp],
        shape: Shape,
        opaque: &str,
        has_side_effect: bool,
    ) -> BResult<XlaOp> {
        let attrs = Attrs {
            custom_call_target: Some(target.to_string()),
            opaque: (!opaque.is_empty()).then(|| opaque.to_string()),
            custom_call_has_side_effect: has_side_effect.then_some(true),
            ..Default::default()
        };
        self.add_instruction(Opcode::CustomCall, operands, attrs, Some(shape))
    }

    /// `OptimizationBarrier(operand)`.
    pub fn optimization_barrier(&mut self, operand: XlaOp) -> BResult<XlaOp> {
        self.add_instruction(
            Opcode::OptimizationBarrier,
            &[operand],
            Attrs::default(),
            None,
        )
    }

    /// `AfterAll(tokens)`: a token ordered after all of `tokens` (none: a fresh token).
    pub fn after_all(&mut self, tokens: &[XlaOp]) -> BResult<XlaOp> {
        self.add_instruction(
            Opcode::AfterAll,
            tokens,
            Attrs::default(),
            Some(Shape::Token),
        )
    }
}
