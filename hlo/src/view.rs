//! Typed per-opcode views of an instruction's attributes, with XLA's defaults resolved once.
//!
//! An [`Instruction`] carries one flat [`crate::Attrs`] record whose fields are `Option`s: what
//! the text said. Consumers (shape inference, the verifier, the evaluator, the compiler) should
//! not each decide what an absent `feature_group_count` means; they ask [`Instruction::view`]
//! and match on [`View`], whose variants hold the attributes their opcode uses, typed and
//! defaulted as XLA defaults them:
//!
//! | attribute | default |
//! |---|---|
//! | `feature_group_count`, `batch_group_count` | 1 |
//! | `window` of convolution | none (every spatial size 1: an empty list) |
//! | `largest` of topk | true |
//! | `lower` of cholesky | false |
//! | `epsilon` of batch-norm | 0 (the verifier requires it; a built module may omit it) |
//! | `algorithm` of rng-bit-generator | `RNG_DEFAULT` |
//! | `index_vector_dim` of gather/scatter | the rank of the indices (XLA's implicit trailing 1); gather's and scatter's dimension numbers are resolved against their shapes in [`crate::indexing`] |
//! | `channel_id` | none (`0` where a key is needed) |
//!
//! An attribute the verifier requires (a parameter's number, a get-tuple-element's index, a
//! compare's direction, a convolution's `dim_labels`) that is missing or out of range gives
//! [`View::Malformed`] naming it: the verifier reports it, and a consumer of a verified module
//! treats it as an internal error. Opcodes without attributes of their own are
//! [`View::Plain`]. The set of variants grows as consumers move from `attrs` to views.

use crate::attrs::{Attrs, ComparisonDirection, ConvDims, Precision, RngAlgorithm, WindowDim};
use crate::ir::Instruction;
use crate::opcode::Opcode;

/// A convolution's attributes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConvView<'a> {
    /// One entry per spatial dimension (empty: every window dimension of size 1, no padding).
    pub window: &'a [WindowDim],
    /// The layout of input, kernel and output (`dim_labels`).
    pub dims: &'a ConvDims,
    /// Feature groups, at least 1.
    pub feature_group_count: i64,
    /// Batch groups, at least 1.
    pub batch_group_count: i64,
    /// Precision per operand (empty: DEFAULT for both).
    pub precision: &'a [Precision],
}

/// The typed attributes of one instruction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum View<'a> {
    /// `parameter(N)`.
    Parameter {
        /// The parameter number.
        number: usize,
    },
    /// `get-tuple-element(t), index=N`.
    GetTupleElement {
        /// The element.
        index: usize,
    },
    /// `iota(), iota_dimension=D`.
    Iota {
        /// The dimension that counts.
        dimension: usize,
    },
    /// `compare(a, b), direction=D`.
    Compare {
        /// The comparison.
        direction: ComparisonDirection,
    },
    /// `convolution(x, k)`.
    Convolution(ConvView<'a>),
    /// `topk(x), k=K, largest=B`.
    TopK {
        /// Elements kept (`None`: the verifier reports it).
        k: Option<i64>,
        /// Largest first (default true).
        largest: bool,
    },
    /// `cholesky(a), lower=B`.
    Cholesky {
        /// The lower triangle (default false: upper).
        lower: bool,
    },
    /// `batch-norm-training`, `batch-norm-inference`, `batch-norm-grad`.
    BatchNorm {
        /// Added to the variance.
        epsilon: f32,
        /// The feature dimension.
        feature_index: usize,
    },
    /// `rng-bit-generator(state), algorithm=A`.
    RngBitGenerator {
        /// The generator (default `RNG_DEFAULT`).
        algorithm: RngAlgorithm,
    },
    /// An opcode without a view of its own yet (or without attributes).
    Plain,
    /// A required attribute is missing or out of range: what and why.
    Malformed(&'static str),
}

impl Instruction {
    /// This instruction's attributes, typed, with defaults resolved (see the module docs).
    pub fn view(&self) -> View<'_> {
        View::of(self.opcode, &self.attrs)
    }
}

impl<'a> View<'a> {
    /// The view of attributes `a` on an instruction of `opcode` (shape inference has the
    /// attributes before there is an instruction).
    pub fn of(opcode: Opcode, a: &'a Attrs) -> View<'a> {
        let index = |v: Option<i64>, what: &'static str| match v {
            Some(n) if n >= 0 => Ok(n as usize),
            _ => Err(View::Malformed(what)),
        };
        let r = match opcode {
            Opcode::Parameter => index(a.parameter_number, "parameter number")
                .map(|number| View::Parameter { number }),
            Opcode::GetTupleElement => index(a.index, "get-tuple-element index")
                .map(|index| View::GetTupleElement { index }),
            Opcode::Iota => index(a.iota_dimension.or(Some(0)), "iota_dimension")
                .map(|dimension| View::Iota { dimension }),
            Opcode::Compare => a
                .direction
                .map(|direction| View::Compare { direction })
                .ok_or(View::Malformed("compare direction")),
            Opcode::Convolution => match a.dim_labels.as_ref() {
                Some(dims) => Ok(View::Convolution(ConvView {
                    window: a.window.as_deref().unwrap_or(&[]),
                    dims,
                    feature_group_count: a.feature_group_count.unwrap_or(1),
                    batch_group_count: a.batch_group_count.unwrap_or(1),
                    precision: a.operand_precision.as_deref().unwrap_or(&[]),
                })),
                None => Err(View::Malformed("convolution dim_labels")),
            },
            Opcode::TopK => Ok(View::TopK {
                k: a.k,
                largest: a.largest.unwrap_or(true),
            }),
            Opcode::Cholesky => Ok(View::Cholesky {
                lower: a.lower.unwrap_or(false),
            }),
            Opcode::BatchNormTraining | Opcode::BatchNormInference | Opcode::BatchNormGrad => {
                index(a.feature_index, "batch-norm feature_index").map(|feature_index| {
                    View::BatchNorm {
                        epsilon: a.epsilon.unwrap_or(0.0),
                        feature_index,
                    }
                })
            }
            Opcode::RngBitGenerator => Ok(View::RngBitGenerator {
                algorithm: a.rng_algorithm.unwrap_or(RngAlgorithm::Default),
            }),
            _ => Ok(View::Plain),
        };
        r.unwrap_or_else(|m| m)
    }
}

impl Instruction {
    /// The parameter number of a `parameter` (`None` for other opcodes or a malformed one).
    pub fn parameter_number(&self) -> Option<usize> {
        match self.view() {
            View::Parameter { number } => Some(number),
            _ => None,
        }
    }

    /// The convolution's view (`None` for other opcodes or without `dim_labels`).
    pub fn conv(&self) -> Option<ConvView<'_>> {
        match self.view() {
            View::Convolution(c) => Some(c),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry_inst(text: &str, name: &str) -> Instruction {
        let m = crate::parse(text).unwrap();
        let c = m.entry();
        let h = c
            .insts
            .handles()
            .find(|&h| c.insts[h].name == name)
            .unwrap();
        c.insts[h].clone()
    }

    #[test]
    fn defaults_are_resolved_once_in_the_view() {
        let t = "HloModule m\nENTRY e {\n  x = f32[1,4,4,2] parameter(0)\n  \
                 k = f32[3,3,2,2] parameter(1)\n  \
                 ROOT c = f32[1,2,2,2] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f\n}\n";
        let c = entry_inst(t, "c");
        let v = c.conv().unwrap();
        assert_eq!((v.feature_group_count, v.batch_group_count), (1, 1));
        assert_eq!(v.window.len(), 2);
        assert!(v.precision.is_empty());
        assert_eq!(entry_inst(t, "k").parameter_number(), Some(1));
        let t = "HloModule m\nENTRY e {\n  x = f32[5] parameter(0)\n  \
                 ROOT t = (f32[2], s32[2]) topk(x), k=2\n}\n";
        assert_eq!(
            entry_inst(t, "t").view(),
            View::TopK {
                k: Some(2),
                largest: true
            }
        );
        assert_eq!(entry_inst(t, "x").view(), View::Parameter { number: 0 });
    }

    #[test]
    fn a_missing_required_attribute_is_malformed_not_a_default() {
        let mut p = entry_inst(
            "HloModule m\nENTRY e {\n  ROOT x = f32[5] parameter(0)\n}\n",
            "x",
        );
        p.attrs = crate::attrs::AttrBox::new(crate::Attrs::default());
        assert_eq!(p.view(), View::Malformed("parameter number"));
        assert_eq!(p.parameter_number(), None);
    }
}
