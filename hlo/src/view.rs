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
//! | `algorithm` of rng-bit-generator | `RNG_DEFAULT` |
//! | `index_vector_dim` of gather/scatter | required (the verifier's rule; equal to the rank of the indices: XLA's implicit trailing 1); gather's and scatter's dimension numbers are checked and resolved against their shapes in [`crate::indexing`] |
//! | `channel_id` | none (`0` where a key is needed) |
//! | `replica_groups` of a collective | none: every device in one group |
//! | `use_global_device_ids`, `is_host_transfer` | false |
//! | `dimensions` of all-to-all | none (an empty list: the tuple form) |
//! | `outfeed_shape` | none (the value is not checked) |
//! | `type` of compare | none: the element type's own order, [`default_comparison_type`] (FLOAT for floating point, SIGNED or UNSIGNED for integers), resolved where the element type is known |
//! | `dimensions` of map | none (an empty list: every dimension, in order) |
//! | `is_stable` of sort | false |
//! | the called computation of call, fusion and async-start | call: `to_apply=`, else `calls=`; fusion: `calls=`, else `to_apply=`; async-start: `calls=` |
//! | the branches of conditional | `branch_computations=` if present, else `true_computation=`/`false_computation=` |
//!
//! An attribute the verifier requires (a parameter's number, a get-tuple-element's index, an
//! iota's dimension, a compare's direction, a convolution's `dim_labels`, a called
//! computation, a constant's literal, the `dimensions` of reduce, sort, broadcast, transpose,
//! reverse, concatenate, all-gather and reduce-scatter, the `window` of reduce-window and
//! select-and-scatter, `slice`, `padding`, `dynamic_slice_sizes`, `fft_length`, a topk's `k`, a
//! batch-norm's `epsilon`, a collective-permute's `source_target_pairs`, an rng's
//! distribution, ...) that is missing or out of range gives [`View::Malformed`] naming it,
//! never a default (an absent `dimensions` of `reverse` is not an empty list): the verifier
//! reports it, and a consumer of a verified module
//! treats it as an internal error. Opcodes without attributes of their own are
//! [`View::Plain`]. The set of variants grows as consumers move from `attrs` to views.

use crate::attrs::{
    Attrs, ComparisonDirection, ComparisonType, ConvDims, FftType, PadDim, Precision,
    ReplicaGroups, RngAlgorithm, RngDistribution, SliceDim, TriangularSolveOptions, WindowDim,
};
use crate::ir::{CompId, Instruction};
use crate::literal::Literal;
use crate::opcode::Opcode;
use crate::shape::Shape;

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

/// A dot's dimension numbers (absent lists: empty) and operand precision.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DotView<'a> {
    /// Batch dimensions of the left operand.
    pub lhs_batch: &'a [i64],
    /// Batch dimensions of the right operand.
    pub rhs_batch: &'a [i64],
    /// Contracting dimensions of the left operand.
    pub lhs_contracting: &'a [i64],
    /// Contracting dimensions of the right operand.
    pub rhs_contracting: &'a [i64],
    /// Precision per operand (empty: DEFAULT for both).
    pub precision: &'a [Precision],
}

/// A collective's attributes (all-reduce, all-gather, reduce-scatter, all-to-all,
/// ragged-all-to-all, collective-broadcast, collective-permute and the `-start` forms).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CollectiveView<'a> {
    /// `replica_groups=` (`None`: every device in one group).
    pub replica_groups: Option<&'a ReplicaGroups>,
    /// `channel_id=` (`None`: a cross-replica collective, known by its instruction).
    pub channel_id: Option<i64>,
    /// `use_global_device_ids=` (default false).
    pub use_global_device_ids: bool,
    /// The combiner of all-reduce and reduce-scatter (`None` for the others).
    pub to_apply: Option<CompId>,
    /// `dimensions=` of all-gather, reduce-scatter and all-to-all (empty: none given; the
    /// tuple form of all-to-all).
    pub dimensions: &'a [i64],
    /// `source_target_pairs=` of collective-permute (empty: none given).
    pub source_target_pairs: &'a [(i64, i64)],
}

/// The branches of a `conditional`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Branches<'a> {
    /// `true_computation=`/`false_computation=` selected by a `pred[]`.
    Pred {
        /// Taken when the predicate is true.
        on_true: CompId,
        /// Taken when the predicate is false.
        on_false: CompId,
    },
    /// `branch_computations=` selected by an `s32[]` index.
    Index(&'a [CompId]),
}

impl Branches<'_> {
    /// The branches in selector order: `[on_true, on_false]` for the predicate form (the
    /// chip's and the evaluator's branch index 0 is the true branch).
    pub fn to_vec(self) -> Vec<CompId> {
        match self {
            Branches::Pred { on_true, on_false } => vec![on_true, on_false],
            Branches::Index(b) => b.to_vec(),
        }
    }
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
    /// `compare(a, b), direction=D, type=T`.
    Compare {
        /// The comparison.
        direction: ComparisonDirection,
        /// `type=` (`None`: the element type's own order, see the module docs).
        comparison_type: Option<ComparisonType>,
    },
    /// `constant(...)`.
    Constant {
        /// The value.
        literal: &'a Literal,
    },
    /// `reduce(xs, inits), dimensions={..}, to_apply=f`.
    Reduce {
        /// The reduced dimensions.
        dimensions: &'a [i64],
        /// The reducer.
        to_apply: CompId,
    },
    /// `reduce-window(xs, inits), window={..}, to_apply=f`.
    ReduceWindow {
        /// One entry per operand dimension.
        window: &'a [WindowDim],
        /// The reducer.
        to_apply: CompId,
    },
    /// `select-and-scatter(x, source, init), window={..}, select=s, scatter=t`.
    SelectAndScatter {
        /// One entry per operand dimension.
        window: &'a [WindowDim],
        /// Picks one element of a window.
        select: CompId,
        /// Combines scattered values.
        scatter: CompId,
    },
    /// `map(xs), dimensions={..}, to_apply=f`.
    Map {
        /// The mapped dimensions.
        dimensions: &'a [i64],
        /// The function applied per element.
        to_apply: CompId,
    },
    /// `scatter(...), to_apply=f` (the dimension numbers: [`crate::indexing`]).
    Scatter {
        /// Combines an operand element with an update.
        to_apply: CompId,
    },
    /// `sort(xs), dimensions={d}, is_stable=B, to_apply=f`.
    Sort {
        /// The sorted dimension.
        dimension: usize,
        /// Equal elements keep their order (default false).
        is_stable: bool,
        /// The comparator.
        to_apply: CompId,
    },
    /// `call(...)`, `fusion(...)` and `async-start(...)`: the computation called (see the
    /// module docs).
    Call {
        /// The callee.
        callee: CompId,
    },
    /// `while(init), condition=c, body=b`.
    While {
        /// The loop condition.
        condition: CompId,
        /// The loop body.
        body: CompId,
    },
    /// `conditional(selector, args...)`.
    Conditional(Branches<'a>),
    /// `dot(a, b)`.
    Dot(DotView<'a>),
    /// `broadcast(x), dimensions={..}`: output dimension of each operand dimension.
    Broadcast {
        /// The output dimensions.
        dimensions: &'a [i64],
    },
    /// `transpose(x), dimensions={..}`: output dimension i is operand dimension `permutation[i]`.
    Transpose {
        /// The permutation.
        permutation: &'a [i64],
    },
    /// `reverse(x), dimensions={..}`.
    Reverse {
        /// The reversed dimensions.
        dimensions: &'a [i64],
    },
    /// `concatenate(xs), dimensions={d}`.
    Concatenate {
        /// The dimension joined along.
        dimension: usize,
    },
    /// `slice(x), slice={..}`.
    Slice {
        /// One entry per dimension.
        slice: &'a [SliceDim],
    },
    /// `pad(x, v), padding=..`.
    Pad {
        /// One entry per dimension.
        padding: &'a [PadDim],
    },
    /// `dynamic-slice(x, starts...), dynamic_slice_sizes={..}`.
    DynamicSlice {
        /// The size of the slice per dimension.
        sizes: &'a [i64],
    },
    /// `get-dimension-size(x), dimensions={d}` and `set-dimension-size(x, n), dimensions={d}`.
    DimensionSize {
        /// The dimension.
        dimension: usize,
    },
    /// `rng(a, b), distribution=D`.
    Rng {
        /// Uniform or normal.
        distribution: RngDistribution,
    },
    /// `reduce-precision(x), exponent_bits=E, mantissa_bits=M`.
    ReducePrecision {
        /// Exponent bits kept.
        exponent_bits: i64,
        /// Mantissa bits kept.
        mantissa_bits: i64,
    },
    /// `triangular-solve(a, b), triangular_solve_options={..}`.
    TriangularSolve(TriangularSolveOptions),
    /// `fft(x), fft_type=T, fft_length={..}`.
    Fft {
        /// The transform.
        fft_type: FftType,
        /// The transformed lengths (innermost dimensions).
        fft_length: &'a [i64],
    },
    /// A collective (see [`CollectiveView`]).
    Collective(CollectiveView<'a>),
    /// `send`, `recv`, `send-done`, `recv-done`.
    Transfer {
        /// `channel_id=` (`None`: the verifier reports a device transfer without one).
        channel_id: Option<i64>,
        /// With the host rather than another device (default false).
        is_host_transfer: bool,
    },
    /// `outfeed(value, token), outfeed_shape=S`.
    Outfeed {
        /// The declared shape of the value (`None`: not declared).
        shape: Option<&'a Shape>,
    },
    /// `custom-call(...), custom_call_target="T"`.
    CustomCall {
        /// The target.
        target: &'a str,
    },
    /// `convolution(x, k)`.
    Convolution(ConvView<'a>),
    /// `topk(x), k=K, largest=B`.
    TopK {
        /// Elements kept.
        k: i64,
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

/// The comparison type of a `compare` of element type `t` without `type=` (XLA's default, the
/// element type's own order): FLOAT for floating-point and complex types, SIGNED for signed
/// integers, UNSIGNED for unsigned integers and pred. The one place this default is derived:
/// shape inference (the types allowed), the evaluator and the compiler resolve through it.
pub fn default_comparison_type(t: crate::types::ElementType) -> ComparisonType {
    use crate::types::TypeKind;
    match t.kind() {
        TypeKind::Float | TypeKind::Complex => ComparisonType::Float,
        TypeKind::Signed => ComparisonType::Signed,
        TypeKind::Unsigned | TypeKind::Pred => ComparisonType::Unsigned,
    }
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
        fn need<T>(v: Option<T>, what: &'static str) -> Result<T, View<'static>> {
            v.ok_or(View::Malformed(what))
        }
        fn list<T>(v: &Option<Vec<T>>) -> &[T] {
            v.as_deref().unwrap_or(&[])
        }
        // all-gather and reduce-scatter name their dimension, collective-permute its pairs (the
        // verifier requires them); all-to-all's dimensions are optional.
        fn collective(opcode: Opcode, a: &Attrs) -> Result<View<'_>, View<'static>> {
            let dims_required = matches!(
                opcode,
                Opcode::AllGather | Opcode::AllGatherStart | Opcode::ReduceScatter
            );
            let pairs_required = matches!(
                opcode,
                Opcode::CollectivePermute | Opcode::CollectivePermuteStart
            );
            Ok(View::Collective(CollectiveView {
                replica_groups: a.replica_groups.as_ref(),
                channel_id: a.channel_id,
                use_global_device_ids: a.use_global_device_ids.unwrap_or(false),
                to_apply: a.to_apply,
                dimensions: if dims_required {
                    req(&a.dimensions, "collective dimensions")?
                } else {
                    list(&a.dimensions)
                },
                source_target_pairs: if pairs_required {
                    req(
                        &a.source_target_pairs,
                        "collective-permute source_target_pairs",
                    )?
                } else {
                    list(&a.source_target_pairs)
                },
            }))
        }
        // A list the verifier requires: absent is malformed, never an empty default.
        fn req<'v, T>(v: &'v Option<Vec<T>>, what: &'static str) -> Result<&'v [T], View<'static>> {
            v.as_deref().ok_or(View::Malformed(what))
        }
        let r =
            match opcode {
                Opcode::Parameter => index(a.parameter_number, "parameter number")
                    .map(|number| View::Parameter { number }),
                Opcode::GetTupleElement => index(a.index, "get-tuple-element index")
                    .map(|index| View::GetTupleElement { index }),
                Opcode::Iota => index(a.iota_dimension, "iota_dimension")
                    .map(|dimension| View::Iota { dimension }),
                Opcode::Compare => a
                    .direction
                    .map(|direction| View::Compare {
                        direction,
                        comparison_type: a.comparison_type,
                    })
                    .ok_or(View::Malformed("compare direction")),
                Opcode::Constant => need(a.literal.as_deref(), "constant literal")
                    .map(|literal| View::Constant { literal }),
                Opcode::Reduce => need(a.to_apply, "reduce to_apply").and_then(|to_apply| {
                    Ok(View::Reduce {
                        dimensions: req(&a.dimensions, "reduce dimensions")?,
                        to_apply,
                    })
                }),
                Opcode::ReduceWindow => {
                    need(a.to_apply, "reduce-window to_apply").and_then(|to_apply| {
                        Ok(View::ReduceWindow {
                            window: req(&a.window, "reduce-window window")?,
                            to_apply,
                        })
                    })
                }
                Opcode::SelectAndScatter => match (a.select, a.scatter) {
                    (Some(select), Some(scatter)) => Ok(View::SelectAndScatter {
                        window: match req(&a.window, "select-and-scatter window") {
                            Ok(w) => w,
                            Err(e) => return e,
                        },
                        select,
                        scatter,
                    }),
                    _ => Err(View::Malformed("select-and-scatter select and scatter")),
                },
                Opcode::Map => need(a.to_apply, "map to_apply").map(|to_apply| View::Map {
                    dimensions: list(&a.dimensions),
                    to_apply,
                }),
                Opcode::Scatter => {
                    need(a.to_apply, "scatter to_apply").map(|to_apply| View::Scatter { to_apply })
                }
                Opcode::Sort => match (
                    a.to_apply,
                    index(list(&a.dimensions).first().copied(), "sort dimension"),
                ) {
                    (Some(to_apply), Ok(dimension)) => Ok(View::Sort {
                        dimension,
                        is_stable: a.is_stable.unwrap_or(false),
                        to_apply,
                    }),
                    (None, _) => Err(View::Malformed("sort to_apply")),
                    (_, Err(e)) => Err(e),
                },
                Opcode::Call => need(a.to_apply.or(a.calls), "call to_apply")
                    .map(|callee| View::Call { callee }),
                Opcode::AsyncStart => {
                    need(a.calls, "async-start calls").map(|callee| View::Call { callee })
                }
                Opcode::Fusion => {
                    need(a.calls.or(a.to_apply), "fusion calls").map(|callee| View::Call { callee })
                }
                Opcode::While => match (a.condition, a.body) {
                    (Some(condition), Some(body)) => Ok(View::While { condition, body }),
                    _ => Err(View::Malformed("while condition and body")),
                },
                Opcode::Conditional => match (
                    &a.branch_computations,
                    a.true_computation,
                    a.false_computation,
                ) {
                    (Some(b), _, _) => Ok(View::Conditional(Branches::Index(b))),
                    (None, Some(on_true), Some(on_false)) => {
                        Ok(View::Conditional(Branches::Pred { on_true, on_false }))
                    }
                    _ => Err(View::Malformed("conditional branches")),
                },
                Opcode::Dot => Ok(View::Dot(DotView {
                    lhs_batch: list(&a.lhs_batch_dims),
                    rhs_batch: list(&a.rhs_batch_dims),
                    lhs_contracting: list(&a.lhs_contracting_dims),
                    rhs_contracting: list(&a.rhs_contracting_dims),
                    precision: list(&a.operand_precision),
                })),
                Opcode::Broadcast => req(&a.dimensions, "broadcast dimensions")
                    .map(|dimensions| View::Broadcast { dimensions }),
                Opcode::Transpose => req(&a.dimensions, "transpose dimensions")
                    .map(|permutation| View::Transpose { permutation }),
                Opcode::Reverse => req(&a.dimensions, "reverse dimensions")
                    .map(|dimensions| View::Reverse { dimensions }),
                Opcode::Concatenate => index(
                    list(&a.dimensions).first().copied(),
                    "concatenate dimension",
                )
                .map(|dimension| View::Concatenate { dimension }),
                Opcode::Slice => req(&a.slice, "slice slice").map(|slice| View::Slice { slice }),
                Opcode::Pad => req(&a.padding, "pad padding").map(|padding| View::Pad { padding }),
                Opcode::DynamicSlice => {
                    req(&a.dynamic_slice_sizes, "dynamic-slice dynamic_slice_sizes")
                        .map(|sizes| View::DynamicSlice { sizes })
                }
                Opcode::GetDimensionSize | Opcode::SetDimensionSize => index(
                    list(&a.dimensions).first().copied(),
                    "dimension-size dimension",
                )
                .map(|dimension| View::DimensionSize { dimension }),
                Opcode::Rng => need(a.distribution, "rng distribution")
                    .map(|distribution| View::Rng { distribution }),
                Opcode::ReducePrecision => match (a.exponent_bits, a.mantissa_bits) {
                    (Some(exponent_bits), Some(mantissa_bits)) => Ok(View::ReducePrecision {
                        exponent_bits,
                        mantissa_bits,
                    }),
                    _ => Err(View::Malformed(
                        "reduce-precision exponent_bits and mantissa_bits",
                    )),
                },
                Opcode::TriangularSolve => need(
                    a.triangular_solve_options,
                    "triangular-solve triangular_solve_options",
                )
                .map(View::TriangularSolve),
                Opcode::Fft => need(a.fft_type, "fft fft_type").and_then(|fft_type| {
                    Ok(View::Fft {
                        fft_type,
                        fft_length: req(&a.fft_length, "fft fft_length")?,
                    })
                }),
                Opcode::AllReduce
                | Opcode::AllReduceStart
                | Opcode::AllGather
                | Opcode::AllGatherStart
                | Opcode::ReduceScatter
                | Opcode::AllToAll
                | Opcode::RaggedAllToAll
                | Opcode::CollectiveBroadcast
                | Opcode::CollectivePermute
                | Opcode::CollectivePermuteStart => collective(opcode, a),
                Opcode::Send | Opcode::Recv | Opcode::SendDone | Opcode::RecvDone => {
                    Ok(View::Transfer {
                        channel_id: a.channel_id,
                        is_host_transfer: a.is_host_transfer.unwrap_or(false),
                    })
                }
                Opcode::Outfeed => Ok(View::Outfeed {
                    shape: a.outfeed_shape.as_ref(),
                }),
                Opcode::CustomCall => need(
                    a.custom_call_target.as_deref(),
                    "custom-call custom_call_target",
                )
                .map(|target| View::CustomCall { target }),
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
                Opcode::TopK => need(a.k, "topk k").map(|k| View::TopK {
                    k,
                    largest: a.largest.unwrap_or(true),
                }),
                Opcode::Cholesky => Ok(View::Cholesky {
                    lower: a.lower.unwrap_or(false),
                }),
                Opcode::BatchNormTraining | Opcode::BatchNormInference | Opcode::BatchNormGrad => {
                    index(a.feature_index, "batch-norm feature_index").and_then(|feature_index| {
                        Ok(View::BatchNorm {
                            epsilon: need(a.epsilon, "batch-norm epsilon")?,
                            feature_index,
                        })
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

    /// The literal of a `constant` (`None` for other opcodes or a malformed one).
    pub fn literal(&self) -> Option<&Literal> {
        match self.view() {
            View::Constant { literal } => Some(literal),
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
                k: 2,
                largest: true
            }
        );
        assert_eq!(entry_inst(t, "x").view(), View::Parameter { number: 0 });
    }

    #[test]
    fn sort_compare_dot_and_collective_defaults() {
        let t = "HloModule m\nlt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
                 ROOT lt = pred[] compare(a, b), direction=LT\n}\nadd {\n  p = f32[] parameter(0)\n  \
                 q = f32[] parameter(1)\n  ROOT t = f32[] add(p, q)\n}\nENTRY e {\n  \
                 x = f32[4] parameter(0)\n  s = f32[4] sort(x), dimensions={0}, to_apply=lt\n  \
                 c = pred[4] compare(x, s), direction=LT, type=TOTALORDER\n  \
                 d = f32[] dot(x, s), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n  \
                 ROOT r = f32[4] all-reduce(x), to_apply=add\n}\n";
        let View::Sort {
            dimension,
            is_stable,
            ..
        } = entry_inst(t, "s").view()
        else {
            panic!("sort view");
        };
        assert_eq!((dimension, is_stable), (0, false));
        assert_eq!(
            entry_inst(t, "c").view(),
            View::Compare {
                direction: ComparisonDirection::Lt,
                comparison_type: Some(ComparisonType::TotalOrder)
            }
        );
        let dot = entry_inst(t, "d");
        let View::Dot(d) = dot.view() else {
            panic!("dot view");
        };
        assert!(d.lhs_batch.is_empty() && d.precision.is_empty());
        assert_eq!((d.lhs_contracting, d.rhs_contracting), (&[0][..], &[0][..]));
        let ar = entry_inst(t, "r");
        let View::Collective(c) = ar.view() else {
            panic!("collective view");
        };
        assert_eq!(c.replica_groups, None);
        assert_eq!(c.channel_id, None);
        assert!(!c.use_global_device_ids && c.dimensions.is_empty());
        assert!(c.to_apply.is_some());
    }

    #[test]
    fn the_default_comparison_type_is_one_the_verifier_allows() {
        use crate::types::ElementType as T;
        for (t, want) in [
            (T::F32, ComparisonType::Float),
            (T::BF16, ComparisonType::Float),
            (T::C64, ComparisonType::Float),
            (T::S8, ComparisonType::Signed),
            (T::S64, ComparisonType::Signed),
            (T::U32, ComparisonType::Unsigned),
            (T::Pred, ComparisonType::Unsigned),
        ] {
            assert_eq!(default_comparison_type(t), want, "{t}");
        }
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
        let mut r = p.clone();
        r.opcode = Opcode::Reduce;
        assert_eq!(r.view(), View::Malformed("reduce to_apply"));
        r.opcode = Opcode::Concatenate;
        assert_eq!(r.view(), View::Malformed("concatenate dimension"));
    }

    /// A `reverse` (and every op whose list attribute the verifier requires) without that
    /// attribute is malformed, not an empty list (a reverse of nothing would be a no-op); the
    /// builder, which infers shapes with the verifier's rules, refuses to build one.
    #[test]
    fn a_required_list_attribute_absent_is_malformed_not_empty() {
        let none = crate::Attrs::default();
        for (op, what) in [
            (Opcode::Reverse, "reverse dimensions"),
            (Opcode::Broadcast, "broadcast dimensions"),
            (Opcode::Transpose, "transpose dimensions"),
            (Opcode::Slice, "slice slice"),
            (Opcode::Pad, "pad padding"),
            (Opcode::DynamicSlice, "dynamic-slice dynamic_slice_sizes"),
            (Opcode::Iota, "iota_dimension"),
            (Opcode::TopK, "topk k"),
            (Opcode::AllGather, "collective dimensions"),
            (
                Opcode::CollectivePermute,
                "collective-permute source_target_pairs",
            ),
        ] {
            assert_eq!(View::of(op, &none), View::Malformed(what), "{op}");
        }
        let with = |f: fn(&mut crate::Attrs)| {
            let mut a = crate::Attrs {
                to_apply: Some(CompId::new(0)),
                fft_type: Some(FftType::Fft),
                feature_index: Some(0),
                ..Default::default()
            };
            f(&mut a);
            a
        };
        let a = with(|_| {});
        assert_eq!(
            View::of(Opcode::Reduce, &a),
            View::Malformed("reduce dimensions")
        );
        assert_eq!(
            View::of(Opcode::Sort, &a),
            View::Malformed("sort dimension")
        );
        assert_eq!(
            View::of(Opcode::ReduceWindow, &a),
            View::Malformed("reduce-window window")
        );
        assert_eq!(View::of(Opcode::Fft, &a), View::Malformed("fft fft_length"));
        assert_eq!(
            View::of(Opcode::BatchNormInference, &a),
            View::Malformed("batch-norm epsilon")
        );
        // Optional lists stay empty: map's dimensions, all-to-all's (the tuple form).
        assert!(matches!(
            View::of(Opcode::Map, &a),
            View::Map { dimensions: [], .. }
        ));
        assert!(matches!(
            View::of(Opcode::AllToAll, &none),
            View::Collective(_)
        ));
        // Present but empty is a real value, not malformed.
        let e = with(|a| a.dimensions = Some(vec![]));
        assert_eq!(
            View::of(Opcode::Reverse, &e),
            View::Reverse { dimensions: &[] }
        );

        let mut b = crate::builder::XlaBuilder::new("b");
        let x = b
            .parameter(0, crate::Shape::array(crate::ElementType::F32, &[4]), "x")
            .unwrap();
        let e = b
            .add_instruction(Opcode::Reverse, &[x], crate::Attrs::default(), None)
            .unwrap_err();
        assert!(e.to_string().contains("dimensions"), "{e}");
    }
}
