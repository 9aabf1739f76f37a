//! The builder: an XlaBuilder-like Rust API that constructs HLO modules op by op.
//!
//! Every op method infers the result shape with [`crate::infer::infer_shape`] (the same rules the
//! verifier enforces) and returns `Err(Error::Build)` naming the op and what is wrong, so an
//! ill-formed op is refused where it is written. Elementwise binary ops implement XLA's
//! broadcasting document (see [`broadcast`]) by emitting explicit `reshape`/`broadcast`
//! instructions. [`XlaBuilder::build`] packages the computation and verifies the whole module,
//! so a built module always prints as HLO text that `systole check` accepts.
//!
//! Sub-computations (reducers, comparators, loop bodies, branches) are built with their own
//! builder and passed as [`XlaComputation`]; they are copied into the caller's module, with
//! computation and instruction names made unique.

mod broadcast;
mod control;
mod elementwise;
mod movement;
mod nn;
mod side_effects;

pub use broadcast::{broadcast_shapes, BroadcastPlan};
pub use movement::{GatherDimensionNumbers, ScatterDimensionNumbers};
pub use nn::{make_padding, DotDimensionNumbers, Padding};

use crate::attrs::Attrs;
use crate::diag::{Error, Span};
use crate::infer::{infer_shape, InferCtx};
use crate::ir::{Arena, CompId, Computation, InstId, Instruction, Module, ModuleConfig};
use crate::literal::Literal;
use crate::opcode::Opcode;
use crate::shape::{ArrayShape, Shape};
use crate::types::ElementType;
use std::collections::HashSet;

/// A handle to an instruction being built by one [`XlaBuilder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XlaOp(InstId);

/// A finished computation: a verified module whose entry is the built computation.
#[derive(Clone, Debug, PartialEq)]
pub struct XlaComputation {
    pub module: Module,
}

impl XlaComputation {
    /// The computation's HLO text.
    pub fn to_text(&self) -> String {
        crate::print(&self.module)
    }
}

/// Builds one computation.
pub struct XlaBuilder {
    name: String,
    insts: Arena<Instruction>,
    /// Computations copied in from sub-builders (module-level handles).
    comps: Vec<Computation>,
    names: HashSet<String>,
    counter: u64,
    replica_count: Option<i64>,
}

type BResult<T> = Result<T, Error>;

fn err(msg: impl Into<String>) -> Error {
    Error::Build(msg.into())
}

impl XlaBuilder {
    pub fn new(name: &str) -> XlaBuilder {
        XlaBuilder {
            name: name.to_string(),
            insts: Arena::new(),
            comps: Vec::new(),
            names: HashSet::new(),
            counter: 0,
            replica_count: None,
        }
    }

    /// Sets the module's `replica_count` (checked by collectives' replica groups).
    pub fn set_replica_count(&mut self, n: i64) {
        self.replica_count = Some(n);
    }

    /// The shape of an op built so far.
    pub fn shape(&self, op: XlaOp) -> &Shape {
        &self.insts[op.0].shape
    }

    /// The array shape of an op, or an error naming `what` if it is a tuple or token.
    pub fn array_shape(&self, op: XlaOp, what: &str) -> BResult<ArrayShape> {
        self.shape(op).as_array().cloned().ok_or_else(|| {
            err(format!(
                "{what}: expected an array operand, got {}",
                self.shape(op)
            ))
        })
    }

    fn fresh_name(&mut self, base: &str) -> String {
        loop {
            self.counter += 1;
            let n = format!("{base}.{}", self.counter);
            if self.names.insert(n.clone()) {
                return n;
            }
        }
    }

    /// Adds an instruction after inferring (and checking) its shape. `declared` gives the
    /// result shape for ops whose result is not determined by their operands.
    pub fn add_instruction(
        &mut self,
        opcode: Opcode,
        operands: &[XlaOp],
        attrs: Attrs,
        declared: Option<Shape>,
    ) -> BResult<XlaOp> {
        if !opcode.arity().accepts(operands.len()) {
            return Err(err(format!(
                "{opcode}: takes {} operands, got {}",
                opcode.arity(),
                operands.len()
            )));
        }
        let shapes: Vec<&Shape> = operands.iter().map(|o| &self.insts[o.0].shape).collect();
        let comps = &self.comps;
        let called = |c: CompId| comps.get(c.index()).map(|c| c.program_shape());
        let cx = InferCtx {
            called: &called,
            replica_count: self.replica_count.unwrap_or(1),
            num_partitions: 1,
        };
        let shape = infer_shape(&cx, opcode, &shapes, &attrs, declared.as_ref())
            .map_err(|m| err(format!("{opcode}: {m}")))?;
        let name = self.fresh_name(opcode.name());
        let id = self.insts.push(Instruction {
            name,
            opcode,
            shape,
            operands: operands.iter().map(|o| o.0).collect(),
            attrs: attrs.into(),
            span: Span::NONE,
        });
        Ok(XlaOp(id))
    }

    /// Copies `c` (and everything it calls) into this builder's module; returns its handle.
    pub fn embed(&mut self, c: &XlaComputation) -> CompId {
        let base = self.comps.len();
        let mut taken: HashSet<String> = self.comps.iter().map(|c| c.name.clone()).collect();
        taken.insert(self.name.clone());
        for comp in c.module.comps.values() {
            let mut comp = comp.clone();
            let mut name = comp.name.clone();
            let mut k = 1;
            while taken.contains(&name) {
                k += 1;
                name = format!("{}.{k}", comp.name);
            }
            taken.insert(name.clone());
            comp.name = name;
            for h in comp.insts.handles().collect::<Vec<_>>() {
                let inst = &mut comp.insts[h];
                inst.attrs
                    .remap_computations(|id| CompId::new(id.index() + base));
                if !self.names.insert(inst.name.clone()) {
                    let stem = inst.name.split('.').next().unwrap_or("v").to_string();
                    inst.name = self.fresh_name(&stem);
                }
            }
            self.comps.push(comp);
        }
        CompId::new(base + c.module.entry.index())
    }

    /// Finishes the computation with `root` as its result and verifies the module.
    pub fn build(self, root: XlaOp) -> BResult<XlaComputation> {
        let mut comps: Arena<Computation> = Arena::new();
        for c in self.comps {
            comps.push(c);
        }
        let entry = comps.push(Computation {
            name: self.name.clone(),
            insts: self.insts,
            root: root.0,
            span: Span::NONE,
        });
        let module = Module {
            name: self.name,
            comps,
            entry,
            config: ModuleConfig {
                replica_count: self.replica_count,
                ..Default::default()
            },
            trailer: None,
        };
        crate::verify(&module)?;
        Ok(XlaComputation { module })
    }

    // ----- leaves -----

    /// `parameter(number)` of `shape`.
    pub fn parameter(&mut self, number: i64, shape: Shape, name: &str) -> BResult<XlaOp> {
        let attrs = Attrs {
            parameter_number: Some(number),
            ..Default::default()
        };
        let op = self.add_instruction(Opcode::Parameter, &[], attrs, Some(shape))?;
        if !name.is_empty() && !self.names.contains(name) {
            let old = std::mem::replace(&mut self.insts[op.0].name, name.to_string());
            self.names.remove(&old);
            self.names.insert(name.to_string());
        }
        Ok(op)
    }

    /// A constant of any literal value.
    pub fn constant(&mut self, value: Literal) -> BResult<XlaOp> {
        let shape = value.shape();
        let attrs = Attrs {
            literal: Some(Box::new(value)),
            ..Default::default()
        };
        self.add_instruction(Opcode::Constant, &[], attrs, Some(shape))
    }

    pub fn constant_f32(&mut self, v: f32) -> BResult<XlaOp> {
        self.constant(Literal::scalar_f32(v))
    }

    pub fn constant_s32(&mut self, v: i32) -> BResult<XlaOp> {
        self.constant(Literal::scalar_s32(v))
    }

    /// A scalar zero of `ty`.
    pub fn zero(&mut self, ty: ElementType) -> BResult<XlaOp> {
        let z = Literal::zeros(&Shape::scalar(ty)).ok_or_else(|| err("zero: bad type"))?;
        self.constant(z)
    }

    /// `iota` of `shape` along `dimension`.
    pub fn iota(&mut self, shape: ArrayShape, dimension: i64) -> BResult<XlaOp> {
        let attrs = Attrs {
            iota_dimension: Some(dimension),
            ..Default::default()
        };
        self.add_instruction(Opcode::Iota, &[], attrs, Some(Shape::Array(shape)))
    }

    pub fn replica_id(&mut self) -> BResult<XlaOp> {
        self.add_instruction(
            Opcode::ReplicaId,
            &[],
            Attrs::default(),
            Some(Shape::scalar(ElementType::U32)),
        )
    }

    pub fn tuple(&mut self, elems: &[XlaOp]) -> BResult<XlaOp> {
        self.add_instruction(Opcode::Tuple, elems, Attrs::default(), None)
    }

    pub fn get_tuple_element(&mut self, t: XlaOp, index: i64) -> BResult<XlaOp> {
        let attrs = Attrs {
            index: Some(index),
            ..Default::default()
        };
        self.add_instruction(Opcode::GetTupleElement, &[t], attrs, None)
    }
}

#[cfg(test)]
mod tests;
