//! Shape inference: the result shape of an instruction from its operand shapes and
//! attributes, enforcing every documented constraint of the op.
//!
//! One entry point, [`infer_shape`], used by the verifier (which compares the inferred shape
//! with the declared one) and by the builder (which takes the inferred shape as the
//! instruction's shape). The rules follow XLA's operation semantics (`/shared/spec`) and XLA's
//! shape inference where the documents are silent.
//!
//! Invariants:
//! - an `Ok` result is a well-formed shape whose array dimensions were computed with checked
//!   arithmetic (no overflow, no negative sizes);
//! - every index held in an attribute (dimension numbers, tuple indices, ...) was checked to
//!   be in range for the operand it indexes, so later stages may index without checks;
//! - ops whose result is not determined by their operands (reshape, broadcast, convert, iota,
//!   constant, parameter, infeed, recv, custom-call, rng, ...) take it from `declared`, check
//!   it for consistency and return it; `declared = None` for them is an error;
//! - ops whose result element type may be chosen by the user (dot and convolution's
//!   "preferred element type") take the element type from `declared` when it is given;
//! - shapes returned carry no layout unless they were taken from `declared`.
//!
//! Errors are plain messages saying what is wrong and what was expected; the verifier
//! attaches the instruction's location.

mod collective;
mod control;
mod dotconv;
mod elementwise;
pub(crate) mod gather;
mod groups;
mod misc;
#[cfg(test)]
mod proptests;
mod reduce;
mod shapeops;
#[cfg(test)]
mod tests;
mod window;

use crate::attrs::Attrs;
use crate::ir::CompId;
use crate::opcode::{OpClass, Opcode};
use crate::shape::{ArrayShape, ProgramShape, Shape, UNBOUNDED};
use crate::types::ElementType;

/// Result of a shape rule: the shape, or a message saying what is wrong.
pub type InferResult<T = Shape> = Result<T, String>;

pub use groups::{check_groups, check_replica_groups, group_mode, id_space, GroupMode};
pub(crate) use groups::{group_size, replica_count_usize};
pub(crate) use window::{window_dims, window_out};

/// What shape inference may need to know beyond the instruction itself.
pub struct InferCtx<'a> {
    /// The signature of a called computation, `None` if it does not exist.
    pub called: &'a dyn Fn(CompId) -> Option<ProgramShape>,
    /// Number of replicas the module runs on (bounds replica ids in collectives).
    pub replica_count: i64,
    /// Number of partitions per replica (SPMD; bounds partition ids in collectives).
    pub num_partitions: i64,
}

impl InferCtx<'_> {
    /// The signature of computation `c` named by attribute `what`, or an error.
    pub(crate) fn sig(&self, c: CompId, what: &str) -> InferResult<ProgramShape> {
        (self.called)(c)
            .ok_or_else(|| format!("{what} names computation {c:?}, which does not exist"))
    }
}

/// Largest byte size of one array the verifier accepts (2^40 bytes = 1 TiB).
pub const MAX_ARRAY_BYTES: u64 = 1 << 40;
/// Deepest tuple nesting the verifier accepts.
pub const MAX_TUPLE_DEPTH: usize = 64;
/// Largest replica count accepted (bounds the per-replica bookkeeping of collectives).
pub const MAX_REPLICAS: i64 = 1 << 16;
/// Largest rank of an array.
pub const MAX_RANK: usize = 64;

/// The result shape of an `opcode` instruction with operands of shapes `operands` and
/// attributes `attrs`; `declared` is the shape written for the instruction (or requested by
/// the builder), required for ops whose result is not determined by their operands.
pub fn infer_shape(
    cx: &InferCtx,
    opcode: Opcode,
    operands: &[&Shape],
    attrs: &Attrs,
    declared: Option<&Shape>,
) -> InferResult {
    let arity = opcode.arity();
    if !arity.accepts(operands.len()) {
        return Err(format!(
            "{opcode} takes {arity} operands, got {}",
            operands.len()
        ));
    }
    if let Some(d) = declared {
        check_shape(d).map_err(|e| format!("result shape {d}: {e}"))?;
    }
    for (i, s) in operands.iter().enumerate() {
        check_shape(s).map_err(|e| format!("operand {i} shape {s}: {e}"))?;
    }
    let a = Args {
        cx,
        op: opcode,
        ops: operands,
        attrs,
        declared,
    };
    let r = rule(&a)?;
    // Sizes computed from operands (concatenate, pad, all-gather, ...) may exceed the limits.
    check_shape(&r).map_err(|e| format!("result shape {r}: {e}"))?;
    Ok(r)
}

/// Dispatches to the op's shape rule.
fn rule(a: &Args) -> InferResult {
    let (opcode, operands) = (a.op, a.ops);
    match opcode.class() {
        OpClass::Unary => return elementwise::unary(a),
        OpClass::Binary => return elementwise::binary(a),
        OpClass::Other => {}
    }
    use Opcode as O;
    match opcode {
        O::Compare => elementwise::compare(a),
        O::Select => elementwise::select(a),
        O::Clamp => elementwise::clamp(a),
        O::Convert => elementwise::convert(a),
        O::BitcastConvert => elementwise::bitcast_convert(a),
        O::ReducePrecision => elementwise::reduce_precision(a),
        O::StochasticConvert => elementwise::stochastic_convert(a),
        O::Map => reduce::map(a),

        O::Reshape => shapeops::reshape(a),
        O::DynamicReshape => shapeops::dynamic_reshape(a),
        O::Bitcast => shapeops::bitcast(a),
        O::Broadcast => shapeops::broadcast(a),
        O::Transpose => shapeops::transpose(a),
        O::Reverse => shapeops::reverse(a),
        O::Slice => shapeops::slice(a),
        O::DynamicSlice => shapeops::dynamic_slice(a),
        O::DynamicUpdateSlice => shapeops::dynamic_update_slice(a),
        O::Concatenate => shapeops::concatenate(a),
        O::Pad => shapeops::pad(a),
        O::Iota => shapeops::iota(a),
        O::Constant => shapeops::constant(a),
        O::Parameter => shapeops::parameter(a),
        O::GetTupleElement => shapeops::get_tuple_element(a),
        O::Tuple => Ok(Shape::Tuple(
            operands.iter().map(|s| (*s).clone()).collect(),
        )),
        O::GetDimensionSize => shapeops::get_dimension_size(a),
        O::SetDimensionSize => shapeops::set_dimension_size(a),
        O::Copy | O::Domain | O::OptimizationBarrier => Ok(operands[0].clone()),

        O::Dot => dotconv::dot(a),
        O::Convolution => dotconv::convolution(a),

        O::Gather => gather::gather(a),
        O::Scatter => gather::scatter(a),

        O::Reduce => reduce::reduce(a),
        O::ReduceWindow => reduce::reduce_window(a),
        O::SelectAndScatter => reduce::select_and_scatter(a),
        O::Sort => reduce::sort(a),
        O::TopK => reduce::top_k(a),

        O::AllReduce | O::AllReduceStart => collective::all_reduce(a),
        O::AllGather => collective::all_gather(a),
        O::AllGatherStart => collective::all_gather_start(a),
        O::ReduceScatter => collective::reduce_scatter(a),
        O::AllToAll => collective::all_to_all(a),
        O::CollectivePermute => collective::collective_permute(a),
        O::CollectivePermuteStart => collective::collective_permute_start(a),
        O::CollectiveBroadcast => collective::collective_broadcast(a),
        O::AllReduceDone => collective::all_reduce_done(a),
        O::AllGatherDone | O::CollectivePermuteDone => collective::start_done(a),
        O::ReplicaId | O::PartitionId => Ok(Shape::scalar(ElementType::U32)),
        O::RaggedAllToAll => Err(unsupported("ragged-all-to-all")),

        O::Call | O::Fusion => control::call(a),
        O::While => control::while_(a),
        O::Conditional => control::conditional(a),
        O::CustomCall => control::custom_call(a),
        O::AsyncStart => control::async_start(a),
        O::AsyncUpdate => control::async_update(a),
        O::AsyncDone => control::async_done(a),
        O::CopyStart => control::copy_start(a),
        O::CopyDone => control::copy_done(a),

        O::AfterAll => misc::after_all(a),
        O::AddDependency => misc::add_dependency(a),
        O::Infeed => misc::infeed(a),
        O::Outfeed => misc::outfeed(a),
        O::Send => misc::send(a),
        O::SendDone => misc::send_done(a),
        O::Recv => misc::recv(a),
        O::RecvDone => misc::recv_done(a),
        O::Rng => misc::rng(a),
        O::RngBitGenerator => misc::rng_bit_generator(a),
        O::RngGetAndUpdateState => misc::rng_get_and_update_state(a),
        O::Fft => misc::fft(a),
        O::Cholesky => misc::cholesky(a),
        O::TriangularSolve => misc::triangular_solve(a),
        O::BatchNormTraining => misc::batch_norm_training(a),
        O::BatchNormInference => misc::batch_norm_inference(a),
        O::BatchNormGrad => misc::batch_norm_grad(a),

        // The unary/binary classes returned above.
        _ => Err(format!("internal: no shape rule for {opcode}")),
    }
}

/// Checks that a shape is well formed: ranks, sizes and nesting in bounds, no unbounded
/// dynamic dimensions, layouts permutations of the right rank.
pub fn check_shape(s: &Shape) -> InferResult<()> {
    check_shape_at(s, 0)
}

fn check_shape_at(s: &Shape, depth: usize) -> InferResult<()> {
    match s {
        Shape::Token => Ok(()),
        Shape::Tuple(t) => {
            if depth >= MAX_TUPLE_DEPTH {
                return Err(format!(
                    "tuple nesting deeper than {MAX_TUPLE_DEPTH} levels"
                ));
            }
            t.iter().try_for_each(|e| check_shape_at(e, depth + 1))
        }
        Shape::Array(a) => check_array(a),
    }
}

/// Checks one array shape (see [`check_shape`]).
pub fn check_array(a: &ArrayShape) -> InferResult<()> {
    if a.dims.len() != a.dynamic.len() {
        return Err("internal: dynamic flags do not match the rank".into());
    }
    if a.rank() > MAX_RANK {
        return Err(format!("rank {} exceeds the limit of {MAX_RANK}", a.rank()));
    }
    for &d in &a.dims {
        if d == UNBOUNDED {
            return Err("not supported yet: unbounded dynamic dimensions (`?`)".into());
        }
        if d < 0 {
            return Err(format!("negative dimension size {d}"));
        }
    }
    match a.byte_size() {
        Some(b) if b <= MAX_ARRAY_BYTES => {}
        _ => {
            return Err(format!(
                "array of {} would exceed the size limit of {MAX_ARRAY_BYTES} bytes (2^40)",
                a.dims
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join("x")
            ))
        }
    }
    if let Some(l) = &a.layout {
        let mut seen = vec![false; a.rank()];
        let ok = l.minor_to_major.len() == a.rank()
            && l.minor_to_major.iter().all(|&d| {
                d >= 0 && (d as usize) < a.rank() && !std::mem::replace(&mut seen[d as usize], true)
            });
        if !ok {
            return Err(format!(
                "layout {l} is not a permutation of the {} dimensions of the array",
                a.rank()
            ));
        }
    }
    Ok(())
}

/// "not supported yet: ..." message.
pub(crate) fn unsupported(what: &str) -> String {
    format!("not supported yet: {what}")
}

/// The arguments of one shape rule.
pub(crate) struct Args<'a, 'b> {
    pub cx: &'a InferCtx<'b>,
    pub op: Opcode,
    pub ops: &'a [&'a Shape],
    pub attrs: &'a Attrs,
    pub declared: Option<&'a Shape>,
}

impl<'a> Args<'a, '_> {
    /// Operand `i` as an array.
    pub fn array(&self, i: usize) -> InferResult<&'a ArrayShape> {
        let s: &'a Shape = self.ops[i];
        s.as_array()
            .ok_or_else(|| format!("operand {i} of {} must be an array, got {s}", self.op))
    }
    /// All operands as arrays.
    pub fn arrays(&self) -> InferResult<Vec<&'a ArrayShape>> {
        (0..self.ops.len()).map(|i| self.array(i)).collect()
    }
    /// Operand `i` as a scalar array.
    pub fn scalar(&self, i: usize, what: &str) -> InferResult<ElementType> {
        let a = self.array(i)?;
        if !a.is_scalar() {
            return Err(format!(
                "{what} (operand {i}) of {} must be a scalar, got {a}",
                self.op
            ));
        }
        Ok(a.ty)
    }
    /// The declared result shape, required.
    pub fn declared(&self) -> InferResult<&'a Shape> {
        self.declared
            .ok_or_else(|| format!("result shape must be given for {}", self.op))
    }
    /// The declared result shape as an array, required.
    pub fn declared_array(&self) -> InferResult<&'a ArrayShape> {
        let d = self.declared()?;
        d.as_array()
            .ok_or_else(|| format!("result of {} must be an array, got {d}", self.op))
    }
    /// A required attribute.
    pub fn req<T>(&self, v: &'a Option<T>, name: &str) -> InferResult<&'a T> {
        v.as_ref()
            .ok_or_else(|| format!("{} requires attribute {name}=", self.op))
    }
    /// A required called computation.
    pub fn comp(&self, c: Option<CompId>, name: &str) -> InferResult<ProgramShape> {
        let c = c.ok_or_else(|| format!("{} requires attribute {name}=", self.op))?;
        self.cx.sig(c, name)
    }
    /// `dimensions={d}` holding exactly one dimension in range for `rank`.
    pub fn one_dim(&self, rank: usize) -> InferResult<usize> {
        let ds = self.req(&self.attrs.dimensions, "dimensions")?;
        if ds.len() != 1 {
            return Err(format!(
                "{} takes exactly one dimension in dimensions=, got {}",
                self.op,
                ds.len()
            ));
        }
        dim_in_range(ds[0], rank, "dimensions")
    }
}

/// Checks `d` is a dimension index for `rank` and returns it as usize.
pub(crate) fn dim_in_range(d: i64, rank: usize, what: &str) -> InferResult<usize> {
    if d < 0 || d as u64 >= rank as u64 {
        return Err(format!(
            "{what}: dimension {d} is out of range for rank {rank} (expected 0..{rank})"
        ));
    }
    Ok(d as usize)
}

/// Checks a list of dimension indices: each in range for `rank`, no duplicates, and (if
/// `sorted`) strictly increasing. Returns them as usize.
pub(crate) fn dims_in_range(
    ds: &[i64],
    rank: usize,
    what: &str,
    sorted: bool,
) -> InferResult<Vec<usize>> {
    let mut seen = vec![false; rank];
    let mut out = Vec::with_capacity(ds.len());
    for (i, &d) in ds.iter().enumerate() {
        let u = dim_in_range(d, rank, what)?;
        if seen[u] {
            return Err(format!("{what}: dimension {d} appears more than once"));
        }
        seen[u] = true;
        if sorted && i > 0 && ds[i - 1] > d {
            return Err(format!(
                "{what} must be sorted in increasing order, got {ds:?}"
            ));
        }
        out.push(u);
    }
    Ok(out)
}

/// An array shape with the given type and dims (static unless `dynamic` is given).
pub(crate) fn array(ty: ElementType, dims: Vec<i64>, dynamic: Option<Vec<bool>>) -> Shape {
    let n = dims.len();
    Shape::Array(ArrayShape {
        ty,
        dims,
        dynamic: dynamic.unwrap_or_else(|| vec![false; n]),
        layout: None,
    })
}

/// Checks that the called computation `sig` takes `params` and returns `result` (ignoring
/// layouts); `what` names the attribute.
pub(crate) fn check_signature(
    sig: &ProgramShape,
    params: &[Shape],
    result: Option<&Shape>,
    what: &str,
) -> InferResult<()> {
    let want = ProgramShape {
        params: params.to_vec(),
        result: result.cloned().unwrap_or_else(|| sig.result.clone()),
    };
    let ok = sig.params.len() == want.params.len()
        && sig
            .params
            .iter()
            .zip(&want.params)
            .all(|(a, b)| a.compatible(b))
        && sig.result.compatible(&want.result);
    if !ok {
        return Err(format!(
            "{what} computation has signature {sig}, expected {want}"
        ));
    }
    Ok(())
}

/// The scalar reducer signature `(T0..Tn-1, T0..Tn-1) -> T0` or `-> (T0..Tn-1)` used by
/// reduce, reduce-window, scatter and all-reduce.
pub(crate) fn check_reducer(
    sig: &ProgramShape,
    tys: &[ElementType],
    what: &str,
) -> InferResult<()> {
    let scalars: Vec<Shape> = tys.iter().map(|&t| Shape::scalar(t)).collect();
    let params: Vec<Shape> = scalars.iter().chain(scalars.iter()).cloned().collect();
    let result = if scalars.len() == 1 {
        scalars[0].clone()
    } else {
        Shape::Tuple(scalars)
    };
    check_signature(sig, &params, Some(&result), what)
}
