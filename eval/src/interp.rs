//! The interpreter: evaluates a computation over an environment indexed by `InstId`.
//!
//! Each computation gets a [`Plan`] once per [`crate::Evaluator`]: a topological order
//! that follows the text order where it can (every instruction is evaluated, also those not
//! reachable from the root, because side effects such as outfeed may hang off a token chain the
//! root ignores) and the position of each value's last use, after which the value is freed.
//! Called computations are evaluated recursively through [`Ctx::call`]; small scalar reducers
//! whose root is one commutative binary op of the two parameters are recognised once
//! ([`Ctx::binop_of`]) so kernels can run them as typed vector loops.
//!
//! Every kernel result is checked against the instruction's declared shape (dynamic dimensions:
//! any size up to the bound); a mismatch is reported as an internal error, never passed on.

use crate::error::{EResult, EvalError};
use crate::runtime::{Combine, RngState, Runtime};
use crate::util::mk;
use crate::{
    arg_fits, compare, control, convert, dynamic, elementwise, gather, movement, reduce, scatter,
    sort, window, EvalOptions,
};
use hlo::ir::{CompId, Computation, InstId, Instruction, Module};
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use hlo::opcode::{OpClass, Opcode};
use hlo::shape::Shape;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes of kernel working space counted per result element (index vectors, 64-bit
/// intermediates) on top of the result's own bytes.
pub const WORKING_BYTES: u64 = 32;

/// Work counted per instruction executed, on top of the elements it reads and writes: the
/// interpreter's fixed cost of one instruction is that of tens of element operations.
pub const INSTRUCTION_WORK: u64 = 64;

/// Work counted per computation called (environment set-up and tear-down).
pub const CALL_WORK: u64 = 1024;

/// Work and live-memory counters of one evaluation, shared by every context of one replica
/// (reducers and collective combiners included).
#[derive(Debug, Default)]
pub struct Usage {
    /// Element operations so far.
    pub work: AtomicU64,
    /// Bytes of values held in environments now.
    pub live: AtomicU64,
}

/// How one computation is evaluated.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Evaluation order (operands before users).
    order: Vec<InstId>,
    /// For each instruction, the position in `order` of its last user (`usize::MAX`: keep).
    last_use: Vec<usize>,
    /// Parameter instructions by parameter number.
    params: Vec<InstId>,
}

/// Plans (or the reason there is none) for every computation of a module, plus the recognised
/// scalar binary reducers.
pub struct Plans {
    plans: Vec<Result<Plan, String>>,
    binops: Vec<Option<Opcode>>,
}

impl Plans {
    pub fn new(module: &Module) -> Plans {
        let plans = module.comps.values().map(plan_of).collect();
        let binops = module.comps.values().map(binop_of).collect();
        Plans { plans, binops }
    }
}

fn plan_of(comp: &Computation) -> Result<Plan, String> {
    let n = comp.insts.len();
    let mut state = vec![0u8; n];
    let mut order = Vec::with_capacity(n);
    for start in comp.insts.handles() {
        if state[start.index()] != 0 {
            continue;
        }
        let mut stack: Vec<(InstId, usize)> = vec![(start, 0)];
        state[start.index()] = 1;
        while let Some(&mut (h, ref mut next)) = stack.last_mut() {
            let inst = &comp.insts[h];
            let preds = inst.operands.len() + inst.attrs.control_predecessors.len();
            if *next < preds {
                let o = if *next < inst.operands.len() {
                    inst.operands[*next]
                } else {
                    inst.attrs.control_predecessors[*next - inst.operands.len()]
                };
                *next += 1;
                if o.index() >= n {
                    return Err(format!(
                        "%{} names an operand that does not exist",
                        inst.name
                    ));
                }
                match state[o.index()] {
                    0 => {
                        state[o.index()] = 1;
                        stack.push((o, 0));
                    }
                    1 => return Err(format!("cycle through %{}", comp.insts[o].name)),
                    _ => {}
                }
            } else {
                state[h.index()] = 2;
                order.push(h);
                stack.pop();
            }
        }
    }
    let mut last_use = vec![usize::MAX; n];
    for (pos, &h) in order.iter().enumerate() {
        for &o in &comp.insts[h].operands {
            last_use[o.index()] = pos;
        }
    }
    if comp.root.index() >= n {
        return Err(format!("computation {} has no root", comp.name));
    }
    last_use[comp.root.index()] = usize::MAX;
    let params = comp.parameters();
    for (i, &p) in params.iter().enumerate() {
        if comp.insts[p].parameter_number() != Some(i) {
            return Err(format!(
                "computation {} has parameter numbers with gaps",
                comp.name
            ));
        }
    }
    Ok(Plan {
        order,
        last_use,
        params,
    })
}

/// `Some(op)` if `comp` is `(p0, p1) -> op(p0, p1)` (either order) on scalars of one type, for
/// a commutative op with a typed vector kernel.
fn binop_of(comp: &Computation) -> Option<Opcode> {
    use Opcode as O;
    if comp.insts.len() != 3 {
        return None;
    }
    let root = comp.insts.get(comp.root)?;
    if !matches!(
        root.opcode,
        O::Add | O::Multiply | O::Maximum | O::Minimum | O::And | O::Or | O::Xor
    ) {
        return None;
    }
    let params = comp.parameters();
    if params.len() != 2 || root.operands.len() != 2 {
        return None;
    }
    let same = (root.operands[0] == params[0] && root.operands[1] == params[1])
        || (root.operands[0] == params[1] && root.operands[1] == params[0]);
    let scalar = |h: InstId| {
        comp.insts[h]
            .shape
            .as_array()
            .is_some_and(|a| a.is_scalar())
    };
    let types_agree = comp.insts[params[0]].shape == comp.insts[params[1]].shape
        && comp.insts[params[0]].shape.without_layout() == root.shape.without_layout();
    (same && scalar(params[0]) && types_agree).then_some(root.opcode)
}

/// The evaluation context handed to kernels that call computations or need the runtime.
pub struct Ctx<'a> {
    pub module: &'a Module,
    pub opts: &'a EvalOptions,
    plans: &'a Plans,
    pub rt: &'a mut dyn Runtime,
    depth: usize,
    /// While-loop iterations so far (all loops).
    pub iterations: u64,
    /// Work and memory counters (checked against `opts.budget`).
    pub usage: Arc<Usage>,
}

impl<'a> Ctx<'a> {
    pub fn new(
        module: &'a Module,
        opts: &'a EvalOptions,
        plans: &'a Plans,
        rt: &'a mut dyn Runtime,
    ) -> Ctx<'a> {
        Ctx {
            module,
            opts,
            plans,
            rt,
            depth: 0,
            iterations: 0,
            usage: Arc::new(Usage::default()),
        }
    }

    /// Counts `n` element operations of `what` against the work budget (before doing them).
    pub fn charge(&self, what: impl std::fmt::Display, n: u64) -> EResult<()> {
        let before = self.usage.work.fetch_add(n, Ordering::Relaxed);
        let total = before.checked_add(n);
        self.opts
            .budget
            .work(format_args!("{what} (with the work before it)"), total)
            .map_err(|e| EvalError::limit(e.to_string().trim_start_matches("resource limit: ")))
    }

    /// Checks that `bytes` more (`None`: overflowed) fit the memory budget next to the live
    /// values.
    pub fn reserve(&self, what: impl std::fmt::Display, bytes: Option<u64>) -> EResult<()> {
        let live = self.usage.live.load(Ordering::Relaxed);
        self.opts
            .budget
            .memory(
                format_args!("{what} (with {live} bytes of live values)"),
                bytes.and_then(|b| b.checked_add(live)),
            )
            .map_err(|e| EvalError::limit(e.to_string().trim_start_matches("resource limit: ")))
    }

    /// The commutative binary op a scalar reducer computation applies, if it is that simple.
    pub fn binop_of(&self, comp: CompId) -> Option<Opcode> {
        self.plans.binops.get(comp.index()).copied().flatten()
    }

    /// The computation behind a handle, or an error.
    pub fn computation(&self, comp: CompId) -> EResult<&'a Computation> {
        self.module
            .comps
            .get(comp)
            .ok_or_else(|| EvalError::invalid(format!("computation {comp:?} does not exist")))
    }

    /// Counts one loop iteration against the limit.
    pub fn tick(&mut self) -> EResult<()> {
        self.iterations += 1;
        if self.iterations > self.opts.max_while_iterations {
            return Err(EvalError::limit(format!(
                "more than {} while-loop iterations",
                self.opts.max_while_iterations
            )));
        }
        Ok(())
    }

    /// Evaluates computation `comp` on `args` (general path).
    pub fn call(&mut self, comp: CompId, args: Vec<Literal>) -> EResult<Literal> {
        let c = self.computation(comp)?;
        let plan = match &self.plans.plans[comp.index()] {
            Ok(p) => p,
            Err(e) => return Err(EvalError::invalid(e.clone())),
        };
        if args.len() != plan.params.len() {
            return Err(EvalError::invalid(format!(
                "computation {} takes {} parameters, called with {}",
                c.name,
                plan.params.len(),
                args.len()
            )));
        }
        if self.depth >= self.opts.max_call_depth {
            return Err(EvalError::limit(format!(
                "calls nested deeper than {}",
                self.opts.max_call_depth
            )));
        }
        self.charge(format_args!("call of {}", c.name), CALL_WORK)?;
        self.depth += 1;
        let r = self.run_plan(c, plan, args);
        self.depth -= 1;
        r
    }

    fn run_plan(&mut self, c: &Computation, plan: &Plan, args: Vec<Literal>) -> EResult<Literal> {
        let mut held = 0u64;
        let r = self.run_plan_counted(c, plan, args, &mut held);
        self.usage.live.fetch_sub(held, Ordering::Relaxed);
        r
    }

    /// [`Ctx::run_plan`]; `held` is the bytes this call added to the live count.
    fn run_plan_counted(
        &mut self,
        c: &Computation,
        plan: &Plan,
        args: Vec<Literal>,
        held: &mut u64,
    ) -> EResult<Literal> {
        let mut env: Vec<Option<Literal>> = vec![None; c.insts.len()];
        let mut args: Vec<Option<Literal>> = args.into_iter().map(Some).collect();
        for (pos, &id) in plan.order.iter().enumerate() {
            let inst = &c.insts[id];
            let value = if inst.opcode == Opcode::Parameter {
                let n = inst.parameter_number();
                let v = n
                    .and_then(|n| args.get_mut(n))
                    .and_then(Option::take)
                    .ok_or_else(|| {
                        EvalError::invalid(match n {
                            Some(n) => format!("parameter({n}) given no value"),
                            None => "a parameter without a number".to_string(),
                        })
                    })
                    .map_err(|e| e.at(&inst.name))?;
                if !arg_fits(&inst.shape, &v) {
                    return Err(EvalError::invalid(format!(
                        "value of shape {} passed for parameter of shape {}",
                        v.shape(),
                        inst.shape
                    ))
                    .at(&inst.name));
                }
                v
            } else {
                let mut ops: Vec<&Literal> = Vec::with_capacity(inst.operands.len());
                for &o in &inst.operands {
                    match env.get(o.index()).and_then(Option::as_ref) {
                        Some(v) => ops.push(v),
                        None => {
                            return Err(EvalError::invalid(format!(
                                "internal: operand %{} has no value",
                                c.insts[o].name
                            ))
                            .at(&inst.name))
                        }
                    }
                }
                let out_elems = inst.shape.byte_size().map(|_| shape_elements(&inst.shape));
                let in_elems: u64 = ops.iter().map(|v| elements(v)).sum();
                let work = out_elems
                    .and_then(|o| o.checked_add(in_elems))
                    .and_then(|w| w.checked_add(INSTRUCTION_WORK))
                    .unwrap_or(u64::MAX);
                // Kernels hold index or widened (64-bit) copies next to their result: each
                // result element is counted with WORKING_BYTES bytes of working space.
                self.reserve(
                    format_args!(
                        "%{} (result {} and its working space)",
                        inst.name, inst.shape
                    ),
                    inst.shape
                        .byte_size()
                        .and_then(|b| b.checked_add(out_elems?.checked_mul(WORKING_BYTES)?)),
                )?;
                self.charge(format_args!("%{}", inst.name), work)?;
                let v = if inst.opcode == Opcode::Bitcast {
                    // Bitcast needs the operand's layout, which only its instruction knows.
                    let in_shape = inst
                        .operands
                        .first()
                        .map_or(&Shape::Token, |&o| &c.insts[o].shape);
                    movement::bitcast(inst, in_shape, &ops)
                } else {
                    self.eval_inst(inst, &ops)
                };
                let v = v.map_err(|e| e.at(&inst.name))?;
                let n = elements(&v);
                if n > self.opts.max_elements {
                    return Err(EvalError::limit(format!(
                        "value has {n} elements, more than the limit {}",
                        self.opts.max_elements
                    ))
                    .at(&inst.name));
                }
                if !arg_fits(&inst.shape, &v) {
                    return Err(EvalError::invalid(format!(
                        "internal: kernel produced shape {} for declared shape {}",
                        v.shape(),
                        inst.shape
                    ))
                    .at(&inst.name));
                }
                v
            };
            for &o in &inst.operands {
                if plan.last_use[o.index()] == pos {
                    if let Some(v) = env[o.index()].take() {
                        let b = bytes(&v);
                        self.usage.live.fetch_sub(b, Ordering::Relaxed);
                        *held -= b;
                    }
                }
            }
            let b = bytes(&value);
            self.usage.live.fetch_add(b, Ordering::Relaxed);
            *held += b;
            env[id.index()] = Some(value);
        }
        env[c.root.index()]
            .take()
            .ok_or_else(|| EvalError::invalid(format!("computation {} has no root value", c.name)))
    }

    /// Evaluates one instruction on its operand values.
    pub fn eval_inst(&mut self, inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
        use Opcode as O;
        match inst.opcode.class() {
            OpClass::Unary => return elementwise::unary(inst, ops),
            OpClass::Binary => return elementwise::binary(inst, ops),
            OpClass::Other => {}
        }
        match inst.opcode {
            O::Constant => inst
                .literal()
                .cloned()
                .ok_or_else(|| EvalError::invalid("constant without a value")),
            O::Parameter => Err(EvalError::invalid("parameter evaluated as an operation")),
            O::Compare => compare::compare(inst, ops),
            O::Select => compare::select(inst, ops),
            O::Clamp => compare::clamp(inst, ops),
            O::Convert => convert::convert(inst, ops),
            O::BitcastConvert => convert::bitcast_convert(inst, ops),
            O::ReducePrecision => convert::reduce_precision(inst, ops),
            O::StochasticConvert => Err(EvalError::unsupported("stochastic-convert")),
            O::Iota => movement::iota(inst, ops),
            O::Broadcast => movement::broadcast(inst, ops),
            O::Reshape => movement::reshape(inst, ops),
            O::Transpose => movement::transpose(inst, ops),
            O::Reverse => movement::reverse(inst, ops),
            O::Slice => movement::slice(inst, ops),
            O::Pad => movement::pad(inst, ops),
            O::Concatenate => movement::concatenate(inst, ops),
            O::Bitcast => movement::bitcast(inst, &Shape::Token, ops),
            O::Copy | O::OptimizationBarrier | O::Domain => Ok(ops
                .first()
                .copied()
                .cloned()
                .ok_or_else(|| EvalError::invalid("missing operand"))?),
            O::DynamicSlice => dynamic::dynamic_slice(inst, ops),
            O::DynamicUpdateSlice => dynamic::dynamic_update_slice(inst, ops),
            O::DynamicReshape => dynamic::dynamic_reshape(inst, ops),
            O::GetDimensionSize => dynamic::get_dimension_size(inst, ops),
            O::SetDimensionSize => dynamic::set_dimension_size(inst, ops),
            O::Gather => gather::gather(inst, ops),
            O::Scatter => scatter::scatter(self, inst, ops),
            O::Reduce => reduce::reduce(self, inst, ops),
            O::Map => reduce::map(self, inst, ops),
            O::ReduceWindow => window::reduce_window(self, inst, ops),
            O::SelectAndScatter => window::select_and_scatter(self, inst, ops),
            O::Sort => sort::sort(self, inst, ops),
            O::TopK => sort::top_k(inst, ops),
            O::Call | O::Fusion => control::call(self, inst, ops),
            O::While => control::while_loop(self, inst, ops),
            O::Conditional => control::conditional(self, inst, ops),
            O::AsyncStart => control::async_start(self, inst, ops),
            O::AsyncUpdate => Ok(ops[0].clone()),
            O::AsyncDone => control::async_done(inst, ops),
            O::Tuple => Ok(Literal::Tuple(ops.iter().map(|&l| l.clone()).collect())),
            O::GetTupleElement => get_tuple_element(inst, ops),
            O::AddDependency => Ok(ops[0].clone()),
            O::AfterAll => Ok(Literal::Token),
            O::CopyStart => Ok(Literal::Tuple(vec![
                ops[0].clone(),
                ops[0].clone(),
                mk(vec![], ArrayData::U32(vec![0]))?,
            ])),
            O::CopyDone => tuple_element(ops[0], 1),
            O::ReplicaId => mk(vec![], ArrayData::U32(vec![self.rt.replica_id() as u32])),
            O::PartitionId => mk(vec![], ArrayData::U32(vec![self.rt.partition_id() as u32])),
            O::AllReduce
            | O::AllReduceStart
            | O::AllGather
            | O::AllGatherStart
            | O::ReduceScatter
            | O::AllToAll
            | O::CollectivePermute
            | O::CollectivePermuteStart
            | O::CollectiveBroadcast
            | O::RaggedAllToAll => self.collective(inst, ops),
            O::AllReduceDone | O::AllGatherDone | O::CollectivePermuteDone => {
                let v = ops[0];
                if arg_fits(&inst.shape, v) {
                    Ok(v.clone())
                } else {
                    tuple_element(v, 1)
                }
            }
            O::Infeed => {
                let data_shape = tuple_part(&inst.shape, 0)?;
                let v = self.rt.infeed(inst, data_shape)?;
                Ok(Literal::Tuple(vec![v, Literal::Token]))
            }
            O::Outfeed => {
                self.rt.outfeed(inst, ops[0])?;
                Ok(Literal::Token)
            }
            O::Send => {
                self.rt.send(inst, ops[0])?;
                Ok(Literal::Tuple(vec![
                    ops[0].clone(),
                    mk(vec![], ArrayData::U32(vec![0]))?,
                    Literal::Token,
                ]))
            }
            O::SendDone => Ok(Literal::Token),
            O::Recv => {
                // Only allocates the context: the data arrives at recv-done, so the schedule
                // `recv; send; recv-done` on two replicas does not deadlock.
                let data_shape = tuple_part(&inst.shape, 0)?;
                let z = Literal::zeros(data_shape)
                    .ok_or_else(|| EvalError::limit("recv buffer too large"))?;
                Ok(Literal::Tuple(vec![
                    z,
                    mk(vec![], ArrayData::U32(vec![0]))?,
                    Literal::Token,
                ]))
            }
            O::RecvDone => {
                // `inst` (the recv-done) carries the channel_id / is_host_transfer of its recv.
                let data_shape = tuple_part(&inst.shape, 0)?;
                let data = self.rt.recv(inst, data_shape)?;
                Ok(Literal::Tuple(vec![data, Literal::Token]))
            }
            O::Dot
            | O::Convolution
            | O::Fft
            | O::Cholesky
            | O::TriangularSolve
            | O::BatchNormTraining
            | O::BatchNormInference
            | O::BatchNormGrad
            | O::Rng
            | O::RngBitGenerator
            | O::RngGetAndUpdateState
            | O::CustomCall => numeric_op(self, inst, ops),
            op => Err(EvalError::unsupported(format!("opcode {op}"))),
        }
    }

    /// Runs a collective through the runtime, with `to_apply` as the elementwise combiner.
    fn collective(&mut self, inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
        let to_apply = crate::runtime::collective_view(inst)?.to_apply;
        let binop = to_apply.and_then(|c| self.binop_of(c));
        let module = self.module;
        let opts = self.opts;
        let plans = self.plans;
        let depth = self.depth;
        let usage = self.usage.clone();
        let mut combine = move |a: &ArrayLiteral, b: &ArrayLiteral| -> EResult<ArrayLiteral> {
            if a.dims != b.dims || a.element_type() != b.element_type() {
                return Err(EvalError::invalid(format!(
                    "combining {} with {}",
                    a.shape(),
                    b.shape()
                )));
            }
            if let Some(op) = binop {
                let data = elementwise::binary_data(op, &a.data, &b.data)?;
                return Ok(ArrayLiteral {
                    dims: a.dims.clone(),
                    data,
                });
            }
            let comp = to_apply.ok_or_else(|| EvalError::invalid("collective without to_apply"))?;
            let mut pure = PureRuntime(RngState::default());
            let mut cx = Ctx {
                module,
                opts,
                plans,
                rt: &mut pure,
                depth,
                iterations: 0,
                usage: usage.clone(),
            };
            reduce::combine_arrays(&mut cx, comp, a, b)
        };
        let combine: &mut Combine<'_> = &mut combine;
        let result = self.rt.collective(inst, ops, combine)?;
        // Async starts whose shape is a tuple (operand, result, contexts...) wrap the result.
        if matches!(
            inst.opcode,
            Opcode::AllGatherStart | Opcode::CollectivePermuteStart
        ) && !arg_fits(&inst.shape, &result)
        {
            if let Shape::Tuple(parts) = &inst.shape {
                let mut elems = vec![
                    if ops.len() == 1 {
                        ops[0].clone()
                    } else {
                        Literal::Tuple(ops.iter().map(|&l| l.clone()).collect())
                    },
                    result,
                ];
                for p in parts.iter().skip(2) {
                    elems.push(
                        Literal::zeros(p).ok_or_else(|| EvalError::limit("context too large"))?,
                    );
                }
                return Ok(Literal::Tuple(elems));
            }
        }
        Ok(result)
    }

    /// Runs `f` with a context whose runtime refuses side effects (for reducer computations).
    pub fn pure<R>(&self, f: impl FnOnce(&mut Ctx<'_>) -> R) -> R {
        let mut pure = PureRuntime(RngState::default());
        let mut cx = Ctx {
            module: self.module,
            opts: self.opts,
            plans: self.plans,
            rt: &mut pure,
            depth: self.depth,
            iterations: self.iterations,
            usage: self.usage.clone(),
        };
        f(&mut cx)
    }
}

fn tuple_part(shape: &Shape, i: usize) -> EResult<&Shape> {
    shape.as_tuple().and_then(|t| t.get(i)).ok_or_else(|| {
        EvalError::invalid(format!(
            "expected a tuple shape with element {i}, got {shape}"
        ))
    })
}

fn tuple_element(v: &Literal, i: usize) -> EResult<Literal> {
    match v {
        Literal::Tuple(t) => t
            .get(i)
            .cloned()
            .ok_or_else(|| EvalError::invalid(format!("tuple has no element {i}"))),
        _ => Err(EvalError::invalid("expected a tuple value")),
    }
}

fn get_tuple_element(inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    let hlo::View::GetTupleElement { index: i } = inst.view() else {
        return Err(EvalError::malformed(inst));
    };
    let v = ops
        .first()
        .ok_or_else(|| EvalError::invalid("missing operand"))?;
    tuple_element(v, i)
}

/// A runtime for pure computations: every side effect is an error.
struct PureRuntime(RngState);

impl Runtime for PureRuntime {
    fn replica_id(&self) -> i64 {
        0
    }
    fn replica_count(&self) -> i64 {
        1
    }
    fn collective(
        &mut self,
        i: &Instruction,
        _: &[&Literal],
        _: &mut Combine<'_>,
    ) -> EResult<Literal> {
        Err(EvalError::unsupported(format!(
            "collective %{} inside a reducer computation",
            i.name
        )))
    }
    fn infeed(&mut self, i: &Instruction, _: &Shape) -> EResult<Literal> {
        Err(EvalError::unsupported(format!(
            "infeed %{} inside a reducer computation",
            i.name
        )))
    }
    fn outfeed(&mut self, i: &Instruction, _: &Literal) -> EResult<()> {
        Err(EvalError::unsupported(format!(
            "outfeed %{} inside a reducer computation",
            i.name
        )))
    }
    fn send(&mut self, i: &Instruction, _: &Literal) -> EResult<()> {
        Err(EvalError::unsupported(format!(
            "send %{} inside a reducer computation",
            i.name
        )))
    }
    fn recv(&mut self, i: &Instruction, _: &Shape) -> EResult<Literal> {
        Err(EvalError::unsupported(format!(
            "recv %{} inside a reducer computation",
            i.name
        )))
    }
    fn rng(&mut self) -> &mut RngState {
        &mut self.0
    }
}

/// The numeric ops of `eval::linalg` (owned by the eval-numeric helper).
fn numeric_op(cx: &mut Ctx<'_>, inst: &Instruction, ops: &[&Literal]) -> EResult<Literal> {
    crate::linalg::eval_op(cx, inst, ops)
}

/// Number of array elements of a shape (tuples summed; dynamic dims at their bound; callers
/// check `byte_size` first so this cannot overflow).
fn shape_elements(s: &Shape) -> u64 {
    match s {
        Shape::Array(a) => a.element_count().unwrap_or(u64::MAX),
        Shape::Tuple(t) => t
            .iter()
            .fold(0u64, |acc, s| acc.saturating_add(shape_elements(s))),
        Shape::Token => 0,
    }
}

/// Bytes of a value's array data (tuples summed).
fn bytes(v: &Literal) -> u64 {
    match v {
        Literal::Array(a) => {
            (a.data.len() as u64).saturating_mul(a.element_type().byte_size() as u64)
        }
        Literal::Tuple(t) => t.iter().map(bytes).sum(),
        Literal::Token => 0,
    }
}

/// Number of array elements in a value (tuples summed).
fn elements(v: &Literal) -> u64 {
    match v {
        Literal::Array(a) => a.data.len() as u64,
        Literal::Tuple(t) => t.iter().map(elements).sum(),
        Literal::Token => 0,
    }
}
