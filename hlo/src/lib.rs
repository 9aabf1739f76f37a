//! The HLO front end: IR, text parser and printer, verifier with shape inference, builder, and
//! the device semantics of collectives ([`groups`]). The reference evaluator is the `eval`
//! crate.
//!
//! Data flow: text --[`parse`]--> [`Module`] --[`verify`]--> verified module. A module that
//! passes the verifier is safe for every later stage: evaluator, compiler and simulator may
//! assume every rule the verifier enforces.

pub mod attrs;
pub mod builder;
pub mod diag;
pub mod groups;
pub mod indexing;
pub mod infer;
pub mod ir;
pub mod literal;
pub mod opcode;
pub mod parse;
pub mod print;
pub mod shape;
pub mod types;
pub mod verify;
pub mod view;

pub use attrs::*;
pub use diag::{Diagnostic, Error, Span};
pub use infer::{infer_shape, InferCtx};
pub use ir::{Arena, CompId, Computation, Handle, InstId, Instruction, Module, ModuleConfig};
pub use literal::{ArrayData, ArrayLiteral, Literal};
pub use opcode::{Arity, OpClass, Opcode};
pub use parse::{parse, parse_literal_text, parse_shape};
pub use print::{print, print_instruction, print_literal};
pub use shape::{ArrayShape, Layout, ProgramShape, Shape};
pub use types::{ElementType, TypeKind};
pub use verify::{verified, verify, VerifiedModule};
pub use view::{default_comparison_type, Branches, CollectiveView, ConvView, DotView, View};
