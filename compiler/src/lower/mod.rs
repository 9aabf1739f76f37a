//! Lowering: the flat entry computation (after the HLO passes) to one core's ISA program.
//!
//! Memory plan: every parameter and the result have a slot in HBM (the [`IoMap`]); constants
//! are HBM data segments. At the start the program copies each parameter and constant into a
//! VMEM buffer (all DMAs issued up front, so they overlap each other and the first compute);
//! each instruction's value gets a VMEM buffer (row-major, [`alloc::ALIGN`]-aligned), freed
//! after its last use; `reshape`, `bitcast`, `tuple` and `get-tuple-element` alias their
//! operand's buffer. At the end the result's arrays are copied to their HBM slots. When the
//! live values do not fit VMEM, some move to HBM and come back before their next use
//! ([`spill`]); a single value larger than VMEM is refused unless its op streams from HBM.
//!
//! Work goes to core 0 of the chip; the other cores halt at once, except for their shares of
//! dots and convolutions streamed from HBM ([`dot_stream`]). Per-op lowering lives in
//! [`elementwise`], [`movement`], [`reduce`] and [`dot`]; ordering between units is the
//! [`emit::Emitter`]'s job.

pub mod alloc;
pub mod apply;
pub mod collective;
pub mod control;
pub mod conv;
pub mod dot;
pub mod dot_stream;
pub mod dynamic;
pub mod elementwise;
pub mod emit;
pub mod gather;
pub mod hostio;
pub mod movement;
pub mod reduce;
pub mod rng_state;
pub mod scatter;
pub mod select_scatter;
pub mod sendrecv;
pub mod sort;
pub mod spill;
pub mod stream_ew;
pub mod transpose_stream;
pub mod variadic;

use crate::error::{CResult, CompileError};
use crate::io::{IoMap, Place, Slot};
use crate::CompileOptions;
use arch::ArchConfig;
use emit::{Access, Emitter, Queue};
use hlo::{ElementType, InstId, Module, Opcode, Span};
use isa::DmaDesc;
use isa::{Csr, DType, SReg, Space};
use isa::{Inst, Program};

/// A buffer in VMEM holding a row-major array.
#[derive(Clone, Debug)]
pub struct Buf {
    /// The allocation it lives in.
    pub alloc: usize,
    /// First byte.
    pub addr: u64,
    /// Element type.
    pub ty: ElementType,
    /// Dimensions.
    pub dims: Vec<usize>,
}

impl Buf {
    /// Elements.
    pub fn elems(&self) -> u64 {
        self.dims.iter().product::<usize>() as u64
    }
    /// Bytes.
    pub fn bytes(&self) -> u64 {
        self.elems() * self.ty.byte_size() as u64
    }
    /// The whole buffer as an access.
    pub fn access(&self) -> Access {
        Access::vmem(self.addr, self.bytes())
    }
    /// The same bytes seen with other dimensions (a reshape).
    pub fn with_dims(&self, dims: Vec<usize>) -> Buf {
        Buf {
            dims,
            ..self.clone()
        }
    }
}

/// An HLO value on chip.
#[derive(Clone, Debug)]
pub enum Val {
    /// An array in VMEM.
    Array(Buf),
    /// A tuple of values.
    Tuple(Vec<Val>),
    /// A token.
    Token,
    /// An array that lives only in HBM (a streamed dot's result).
    Hbm(crate::io::Slot),
}

struct AllocInfo {
    /// Nesting depth of the computation that owns it (0: entry).
    depth: usize,
    addr: u64,
    bytes: u64,
    last_use: usize,
    freed: bool,
    /// Outstanding [`Lowerer::pin`]s (a pinned allocation is never freed).
    pins: u32,
    /// The HLO instruction it was allocated for, and the instructions `from_pc..to_pc` it was
    /// allocated during (`to_pc` is set when it is freed): the program's region table.
    hlo: String,
    from_pc: u32,
    to_pc: Option<u32>,
    /// An HBM copy of its bytes that is still valid (a parameter's or constant's slot, or the
    /// spill it was reloaded from): spilling it again copies nothing.
    home: Option<u64>,
}

impl AllocInfo {
    /// Returns its VMEM to `vmem` at instruction `pc` (the end of its live range).
    fn free(&mut self, vmem: &mut alloc::Vmem, pc: u32) {
        self.freed = true;
        self.to_pc = Some(pc);
        vmem.free(self.addr, self.bytes);
    }
}

/// The caller's state while a sub-computation is lowered.
pub(crate) struct SubState {
    vals: Vec<Option<Val>>,
    last_use: Vec<usize>,
    pos: usize,
    comp: hlo::CompId,
    span: Span,
}

/// What the compiler counted while lowering (for `systole compile` and run reports).
#[derive(Clone, Debug, Default)]
pub struct LowerStats {
    /// Floating-point or integer operations of the module's dots (2 per multiply-add).
    pub flops: u64,
    /// Multiply-adds the MXUs execute (including padding of partial tiles and extra passes).
    pub mxu_macs: u64,
    /// Peak VMEM in use.
    pub vmem_peak: u64,
    /// HBM bytes used for inputs, outputs and constants.
    pub hbm_bytes: u64,
    /// Synchronization the emitter added.
    pub emit: emit::EmitStats,
    /// The collectives, in program order (for the α-β report).
    pub collectives: Vec<sim::ici_model::Collective>,
    /// Element-wise regions streamed from HBM to HBM ([`stream_ew`]).
    pub ew_streams: u64,
    /// Dots streamed from HBM where they stand ([`Lowerer::streams_late`]).
    pub late_streams: u64,
    /// Reduces that stream their operand from HBM ([`reduce`]).
    pub reduce_streams: u64,
    /// Transposes from HBM to HBM ([`transpose_stream`]).
    pub transpose_streams: u64,
    /// Values moved between VMEM and HBM because the live ones did not fit ([`spill`]).
    pub spill: spill::SpillStats,
    /// What the infeed stream carries, in program order (infeeds and host recvs).
    pub host_in: Vec<hostio::HostXfer>,
    /// What the outfeed stream carries, in program order (outfeeds and host sends).
    pub host_out: Vec<hostio::HostXfer>,
}

/// The lowering state of one module.
pub struct Lowerer<'a> {
    pub(crate) m: &'a Module,
    pub(crate) arch: &'a ArchConfig,
    pub(crate) opts: &'a CompileOptions,
    pub(crate) e: Emitter,
    vmem: alloc::Vmem,
    hbm: alloc::Hbm,
    vals: Vec<Option<Val>>,
    allocs: Vec<AllocInfo>,
    /// Per instruction: position of its last user in the order (`usize::MAX`: the result).
    last_use: Vec<usize>,
    /// Position of the instruction being lowered.
    pos: usize,
    /// The computation being lowered (the entry, or a while/conditional body).
    comp: hlo::CompId,
    /// Nesting depth of `comp`.
    depth: usize,
    /// The span of the instruction being lowered (for errors).
    pub(crate) span: Span,
    /// Jobs handed to each MXU so far (round-robin and accumulator halves).
    pub(crate) mxu_jobs: Vec<u64>,
    pub(crate) stats: LowerStats,
    /// Dots streamed from HBM, by instruction index.
    stream: Vec<Option<dot_stream::Streamed>>,
    /// Instructions computed in a streamed dot's epilogue (or that are the dot itself).
    fused: Vec<bool>,
    /// Arrays with a copy in HBM (parameters), by instruction index.
    hbm_home: Vec<Option<Slot>>,
    /// Work for cores other than 0, emitted after core 0's code: `(core, work, joined)`; a
    /// joined share waits for core 0's go and signals its end ([`emit::JOIN_SEMS`]).
    side: Vec<(usize, dot_stream::Streamed, bool)>,
    /// Whether [`emit::JOIN_SEMS`] are declared.
    join_declared: bool,
    /// The devices (chips) the program runs on: replicas × partitions, chip `r·P + p`.
    pub(crate) devs: hlo::groups::Devices,
    /// Number of chips (`devs.n()`).
    pub(crate) chips: usize,
    /// The next ICI tag a collective takes.
    pub(crate) coll_tag: u32,
    /// The last collective's record table: its VMEM address and fields per record.
    pub(crate) coll_rec: (u64, usize),
    /// While an asynchronous collective's start is lowered: the position of its done (its
    /// scratch buffers live until then).
    pub(crate) async_until: Option<usize>,
    /// Asynchronous collectives issued and not yet waited for.
    pub(crate) in_flight: Vec<collective::InFlight>,
    /// How many entered `in_flight` so far (tells whether a lowering pushed one).
    pub(crate) async_pushes: u64,
    /// Collective record tables placed in VMEM, by contents.
    pub(crate) coll_tables: std::collections::HashMap<Vec<i64>, u64>,
    /// Device-to-device send/recv channels.
    pub(crate) chans: sendrecv::Channels,
    /// The HBM cell of the `rng` stream's counter, once an instruction uses it.
    pub(crate) rng_state: Option<u64>,
    /// Indices of allocations that may not be freed yet (freed ones leave at the next
    /// [`Self::free_dead`]).
    unfreed: Vec<usize>,
    /// Spilled allocations ([`spill`]).
    spills: Vec<spill::SpillRec>,
    /// Whether allocation failures may spill (after the parameters and constants are placed).
    spilling: bool,
    /// Allocations the instruction being lowered has read (never spilled while it is).
    touched: std::cell::RefCell<Vec<usize>>,
    /// The first allocation the instruction being lowered made.
    inst_first_alloc: usize,
    /// Per entry instruction: the positions of its readers, ascending.
    users_at: Vec<Vec<usize>>,
    /// Streamed element-wise regions by root instruction index ([`stream_ew`]).
    ew_regions: Vec<Option<stream_ew::Region>>,
    /// All-reduces that stream their operand through HBM, by instruction index
    /// ([`collective::streamable`], decided before the parameters are placed).
    coll_streams: Vec<bool>,
}

/// The devices a verified module runs on (`replica_count × num_partitions`).
pub fn devices(m: &Module) -> CResult<hlo::groups::Devices> {
    let r = m.replica_count().max(1) as usize;
    let p = m.config.num_partitions.unwrap_or(1).max(1) as usize;
    Ok(hlo::groups::Devices {
        replicas: r,
        partitions: p,
    })
}

/// Whether a computation `inst` calls (transitively) talks to other chips: a collective, an
/// asynchronous start or a send/recv.
fn calls_collectives(m: &Module, inst: &hlo::Instruction) -> bool {
    use Opcode as O;
    let mut stack: Vec<hlo::CompId> = inst.attrs.called_computations();
    let mut seen = std::collections::HashSet::new();
    while let Some(c) = stack.pop() {
        if !seen.insert(c) {
            continue;
        }
        for i in m.comps[c].insts.values() {
            if matches!(
                i.opcode,
                O::AllReduce
                    | O::AllGather
                    | O::ReduceScatter
                    | O::AllToAll
                    | O::CollectivePermute
                    | O::CollectiveBroadcast
                    | O::AllReduceStart
                    | O::AllGatherStart
                    | O::CollectivePermuteStart
                    | O::AsyncStart
                    | O::Send
                    | O::Recv
                    | O::RecvDone
            ) {
                return true;
            }
            stack.extend(i.attrs.called_computations());
        }
    }
    false
}

/// Largest element count of one VPU instruction (its `n` field has 20 bits).
pub const VPU_CHUNK: u64 = 1 << 19;

/// Outer-index count above which [`Lowerer::dma_nd`] describes its accesses by their spans.
pub const MAX_ND_ACCESSES: u64 = 4096;

/// The VPU element type of an HLO element type.
pub fn dtype(ty: ElementType) -> Option<DType> {
    DType::from_name(ty.name())
}

impl<'a> Lowerer<'a> {
    /// Lowers the entry computation of `m` (already through the pass pipeline).
    pub fn run(
        m: &'a Module,
        arch: &'a ArchConfig,
        opts: &'a CompileOptions,
    ) -> CResult<(Program, IoMap, LowerStats)> {
        let c = m.entry();
        let devs = devices(m)?;
        let order = c
            .post_order()
            .ok_or_else(|| CompileError::Internal("cyclic entry computation".into()))?;
        let mut pos = vec![usize::MAX; c.insts.len()];
        for (k, h) in order.iter().enumerate() {
            pos[h.index()] = k;
        }
        let mut last_use = pos.clone();
        for (k, h) in order.iter().enumerate() {
            for o in &c.insts[*h].operands {
                last_use[o.index()] = last_use[o.index()].max(k);
            }
        }
        last_use[c.root.index()] = usize::MAX;
        let mut users: Vec<Vec<InstId>> = vec![Vec::new(); c.insts.len()];
        for (h, i) in c.insts.iter() {
            for o in &i.operands {
                users[o.index()].push(h);
            }
        }
        // Instructions in a streamed dot's epilogue (decided again below, with the plan).
        let mut epilogue = vec![false; c.insts.len()];
        for h in c.insts.handles() {
            if c.insts[h].opcode == Opcode::Dot && dot::streamable(m, h, &users, arch) {
                epilogue[h.index()] = true;
                for u in dot::stream_chain(m, h, &users).unwrap_or_default() {
                    epilogue[u.index()] = true;
                }
            }
        }
        let ew = stream_ew::plan(m, arch.vmem.bytes, &users, &epilogue);
        let mut users_at = vec![Vec::new(); c.insts.len()];
        for (k, h) in order.iter().enumerate() {
            for o in &c.insts[*h].operands {
                let us: &mut Vec<usize> = &mut users_at[o.index()];
                if us.last() != Some(&k) {
                    us.push(k);
                }
            }
        }
        // A region is lowered at its root: what its members read lives until then.
        for reg in ew.regions.iter().flatten() {
            let r = pos[reg.members[reg.members.len() - 1].index()];
            for &mb in &reg.members {
                for &o in &c.insts[mb].operands {
                    let o = match reg.lazy.iter().find(|(b, _)| *b == o) {
                        Some(_) => c.insts[o].operands[0],
                        None => o,
                    };
                    if last_use[o.index()] != usize::MAX {
                        last_use[o.index()] = last_use[o.index()].max(r);
                    }
                    let us: &mut Vec<usize> = &mut users_at[o.index()];
                    if let Err(k) = us.binary_search(&r) {
                        us.insert(k, r);
                    }
                }
            }
        }
        let mut l = Lowerer {
            m,
            arch,
            opts,
            e: Emitter::new(),
            vmem: alloc::Vmem::new(arch.vmem.bytes),
            hbm: alloc::Hbm::new(arch.hbm.bytes),
            vals: vec![None; c.insts.len()],
            allocs: Vec::new(),
            last_use,
            pos: 0,
            comp: m.entry,
            depth: 0,
            span: Span::NONE,
            mxu_jobs: vec![0; arch.mxu.count as usize],
            stats: LowerStats::default(),
            stream: vec![None; c.insts.len()],
            fused: vec![false; c.insts.len()],
            hbm_home: vec![None; c.insts.len()],
            side: Vec::new(),
            join_declared: false,
            devs,
            chips: devs.n(),
            coll_tag: 0,
            coll_rec: (0, 0),
            async_until: None,
            in_flight: Vec::new(),
            async_pushes: 0,
            chans: Default::default(),
            coll_tables: Default::default(),
            rng_state: None,
            unfreed: Vec::new(),
            spills: Vec::new(),
            spilling: false,
            touched: Default::default(),
            inst_first_alloc: 0,
            users_at,
            ew_regions: ew.regions,
            coll_streams: c
                .insts
                .handles()
                .map(|h| collective::streamable(m, h, &users, arch))
                .collect(),
        };
        for &f in &ew.fused {
            l.fused[f.index()] = true;
        }
        // Only core 0 works; the others go straight to the final halt.
        let done = l.e.b.new_label();
        if arch.cores_per_chip > 1 {
            l.e.seq(Inst::SCsr {
                rd: SReg(28),
                csr: Csr::CoreId,
            });
            l.e.b.emit_branch(
                Inst::Bne {
                    ra: SReg(28),
                    rb: SReg(0),
                    target: isa::Target(0),
                },
                done,
            );
        }
        // Inputs: an HBM slot per parameter leaf, copied to VMEM up front unless only
        // streamed dots and collectives read it.
        let params = c.parameters();
        let mut io_params = Vec::new();
        let streamable: Vec<bool> = c
            .insts
            .handles()
            .map(|h| dot::streamable(m, h, &users, arch) || conv::streamable(m, h, &users, arch))
            .collect();
        // Instructions that may read an operand straight from HBM (a parameter only they
        // read stays there).
        let mut in_region = vec![false; c.insts.len()];
        for g in l.ew_regions.iter().flatten() {
            for &u in &g.members {
                in_region[u.index()] = true;
            }
        }
        let reads_hbm: Vec<bool> = c
            .insts
            .handles()
            .map(|u| {
                streamable[u.index()]
                    || l.coll_streams[u.index()]
                    || in_region[u.index()]
                    || dot_stream::big_dot(c, u, arch.vmem.bytes)
                    || (dot_stream::big_conv(c, u, arch.vmem.bytes)
                        && conv::StreamConv::new(&l, u, 0, 0, 0).is_some())
                    || reduce::big_reduce(c, u, arch.vmem.bytes)
                    || transpose_stream::big_transpose(c, u, arch.vmem.bytes)
            })
            .collect();
        for &p in &params {
            l.span = c.insts[p].span;
            l.pos = pos[p.index()];
            l.e.b.begin_hlo(&c.insts[p].name);
            let shape = c.insts[p].shape.clone();
            let hbm_only = !users[p.index()].is_empty()
                && users[p.index()].iter().all(|u| reads_hbm[u.index()])
                && c.root != p;
            let (place, val) = if hbm_only {
                let (place, val) = l.input_in_hbm(&shape, &c.insts[p].name)?;
                // A reader that needs it in VMEM after all (a scalar operand of a region, a
                // reduce's init) reloads it like a spill.
                if let Val::Hbm(s) = &val {
                    l.in_hbm(s, l.last_use[p.index()]);
                }
                (place, val)
            } else {
                l.load_input(p, &shape, &c.insts[p].name)?
            };
            if let Place::Array(slot) = &place {
                l.hbm_home[p.index()] = Some(slot.clone());
            }
            io_params.push(place);
            l.vals[p.index()] = Some(val);
        }
        for h in c.insts.handles() {
            if streamable[h.index()] {
                l.span = c.insts[h].span;
                // A dot's element-wise consumers up to the result run in its epilogue: the
                // stream is lowered at the last of them, and the dot, the steps before it
                // and their operands' broadcasts produce no code of their own.
                let chain = if c.insts[h].opcode == Opcode::Dot {
                    dot::stream_chain(m, h, &users).unwrap_or_default()
                } else {
                    Vec::new()
                };
                let end = chain.last().copied().unwrap_or(h);
                let mut v = h;
                for &u in &chain {
                    l.fused[v.index()] = true;
                    if let Some(Some(b)) = dot::epilogue_step(c, u, v, &users) {
                        l.fused[b.index()] = true;
                    }
                    v = u;
                }
                l.stream[end.index()] = Some(l.plan_stream(h, &chain, &users)?);
            }
        }
        for (k, &h) in order.iter().enumerate() {
            let inst = &c.insts[h];
            if inst.opcode == Opcode::Constant {
                l.span = inst.span;
                l.pos = k;
                l.e.b.begin_hlo(&inst.name);
                let v = l.constant(h)?;
                l.vals[h.index()] = Some(v);
            }
        }
        l.spilling = true;
        for (k, &h) in order.iter().enumerate() {
            l.pos = k;
            let inst = &c.insts[h];
            l.span = inst.span;
            l.touched.borrow_mut().clear();
            l.inst_first_alloc = l.allocs.len();
            if l.vals[h.index()].is_none() {
                l.e.b.begin_hlo(&inst.name);
                if l.reads_operands_in_vmem(h)? {
                    l.reload_operands(h)?;
                }
                if matches!(inst.opcode, Opcode::While | Opcode::Conditional) {
                    l.make_room_for_calls(h)?;
                }
                let v = l.lower(h)?;
                l.vals[h.index()] = Some(v);
            }
            l.free_dead(k);
            l.drop_dead_spills(k);
            if let Some(&n) = order.get(k + 1) {
                if l.reads_operands_in_vmem(n)? {
                    l.span = c.insts[n].span;
                    l.prefetch_operands(n)?;
                }
            }
        }
        l.touched.borrow_mut().clear();
        l.inst_first_alloc = l.allocs.len();
        // Outputs.
        l.e.b.end_hlo();
        l.span = c.insts[c.root].span;
        l.e.flush_deferred();
        l.flush_sends()?;
        l.drain_async();
        let root = l.vals[c.root.index()].clone().expect("root lowered");
        let result = l.store_output(&root)?;
        if arch.cores_per_chip > 1 {
            l.e.seq(Inst::Halt {});
        }
        l.e.b.bind(done);
        l.emit_side_work()?;
        l.describe_regions(&io_params, &result);
        l.stats.vmem_peak = l.vmem.peak;
        l.stats.hbm_bytes = l.hbm.top;
        l.stats.emit = l.e.stats;
        let prog = l.e.finish()?;
        Ok((
            prog,
            IoMap {
                params: io_params,
                result,
            },
            l.stats,
        ))
    }

    /// Whether entry instruction `h` reads its operands from VMEM (so spilled ones are
    /// reloaded first): not fused into another's code, and not one that streams them from HBM
    /// (dots, convolutions and all-reduces planned to stream, element-wise regions,
    /// late-streamed dots, streamed reduces and transposes).
    fn reads_operands_in_vmem(&self, h: InstId) -> CResult<bool> {
        Ok(!self.fused[h.index()]
            && !self.coll_streams[h.index()]
            && self.stream[h.index()].is_none()
            && self.ew_regions[h.index()].is_none()
            && !self.streams_late(h)?
            && !self.reduce_streams(h)?
            && !self.transpose_streams(h)?)
    }

    /// The computation being lowered.
    pub(crate) fn comp(&self) -> &'a hlo::Computation {
        &self.m.comps[self.comp]
    }

    fn lower(&mut self, h: InstId) -> CResult<Val> {
        // ICI commands an asynchronous start deferred (collective::ring_all_reduce_async) go
        // out between the MXU instructions of a dot lowered right after it; anything else
        // first emits them all (they precede every later ICI command).
        let interleave = !self.e.deferred.is_empty() && self.comp().insts[h].opcode == Opcode::Dot;
        if interleave {
            self.e.interleave = emit::INTERLEAVE_MXU;
        } else {
            self.e.flush_deferred();
        }
        let v = self.lower_inst(h);
        if interleave {
            self.e.flush_deferred();
        }
        v
    }

    fn lower_inst(&mut self, h: InstId) -> CResult<Val> {
        if self.depth == 0 && self.fused[h.index()] {
            // Computed in a streamed dot's epilogue; nothing reads this value.
            let (ty, dims) = self.out_shape(h)?;
            return Ok(Val::Hbm(Slot { addr: 0, ty, dims }));
        }
        if let Some(v) = self.lower_stream(h)? {
            return Ok(v);
        }
        if let Some(v) = self.lower_ew_region(h)? {
            return Ok(v);
        }
        if self.streams_late(h)? {
            return self.lower_late_stream(h);
        }
        if self.transpose_streams(h)? {
            return self.transpose_streamed(h);
        }
        let c = self.comp();
        let inst = &c.insts[h];
        use Opcode as O;
        match inst.opcode {
            O::Tuple => Ok(Val::Tuple(
                inst.operands
                    .iter()
                    .map(|o| self.alias(*o, h))
                    .collect::<CResult<_>>()?,
            )),
            O::GetTupleElement => {
                let hlo::View::GetTupleElement { index: idx } = inst.view() else {
                    return Err(CompileError::Internal(
                        "get-tuple-element without an index".into(),
                    ));
                };
                match self.val(inst.operands[0])? {
                    Val::Tuple(vs) => {
                        let v = vs.get(idx).cloned().ok_or_else(|| {
                            CompileError::Internal("tuple index out of range".into())
                        })?;
                        self.extend_life(&v, h);
                        Ok(v)
                    }
                    _ => Err(CompileError::Internal(
                        "get-tuple-element of a non-tuple".into(),
                    )),
                }
            }
            O::Reshape | O::Bitcast => {
                let out = self.out_shape(h)?;
                if let Val::Hbm(s) = self.val(inst.operands[0])? {
                    // An array in HBM (streamed or spilled): the same bytes, other dims.
                    if out.0 != s.ty {
                        return Err(
                            self.unsupported(format!("{} changing the element type", inst.opcode))
                        );
                    }
                    let v = Val::Hbm(Slot { dims: out.1, ..s });
                    self.extend_life(&v, h);
                    return Ok(v);
                }
                let b = self.arr(inst.operands[0])?;
                if out.0 != b.ty {
                    return Err(
                        self.unsupported(format!("{} changing the element type", inst.opcode))
                    );
                }
                let v = Val::Array(b.with_dims(out.1));
                self.extend_life(&v, h);
                Ok(v)
            }
            O::OptimizationBarrier => self.alias(inst.operands[0], h),
            O::BitcastConvert => {
                // The same bytes reinterpreted (row-major, little-endian; a width change moves
                // the last dimension, as XLA specifies): an alias.
                let b = self.arr(inst.operands[0])?;
                let (ty, dims) = self.out_shape(h)?;
                let bytes = dims.iter().product::<usize>() as u64 * ty.byte_size() as u64;
                if bytes != b.bytes() {
                    return Err(CompileError::Internal(
                        "bitcast-convert changes the byte count".into(),
                    ));
                }
                // Complex values are only carried (the complex-planes pass computes on planes).
                if !ty.is_complex() {
                    dtype(ty).ok_or_else(|| self.unsupported(format!("element type {ty}")))?;
                }
                let v = Val::Array(Buf { ty, dims, ..b });
                self.extend_life(&v, h);
                Ok(v)
            }
            O::While | O::Conditional => {
                // A collective in the body must not wait for one in flight (that wait would
                // run on every iteration): the one in flight completes first.
                if calls_collectives(self.m, inst) {
                    self.drain_async();
                }
                if inst.opcode == O::While {
                    control::lower_while(self, h)
                } else {
                    control::lower_conditional(self, h)
                }
            }
            O::AfterAll => Ok(Val::Token),
            O::RngGetAndUpdateState => rng_state::lower(self, h)?
                .ok_or_else(|| CompileError::Internal("rng state not lowered".into())),
            O::Infeed | O::Outfeed => hostio::lower(self, h)?
                .ok_or_else(|| CompileError::Internal("host transfer not lowered".into())),
            _ => {
                if let Some(v) = elementwise::lower(self, h)? {
                    return Ok(v);
                }
                if let Some(v) = movement::lower(self, h)? {
                    return Ok(v);
                }
                if let Some(v) = dynamic::lower(self, h)? {
                    return Ok(v);
                }
                if let Some(v) = gather::lower(self, h)? {
                    return Ok(v);
                }
                if let Some(v) = scatter::lower(self, h)? {
                    return Ok(v);
                }
                if let Some(v) = sort::lower(self, h)? {
                    return Ok(v);
                }
                if let Some(v) = select_scatter::lower(self, h)? {
                    return Ok(v);
                }
                if let Some(v) = reduce::lower(self, h)? {
                    return Ok(v);
                }
                if let Some(v) = reduce::lower_window(self, h)? {
                    return Ok(v);
                }
                if let Some(v) = dot::lower(self, h)? {
                    return Ok(v);
                }
                if let Some(v) = conv::lower(self, h)? {
                    return Ok(v);
                }
                if let Some(v) = collective::lower(self, h)? {
                    return Ok(v);
                }
                if let Some(v) = hostio::lower(self, h)? {
                    return Ok(v);
                }
                if let Some(v) = sendrecv::lower(self, h)? {
                    return Ok(v);
                }
                Err(self.unsupported(match inst.view() {
                    hlo::View::CustomCall { target } => format!("custom-call target {target:?}"),
                    _ => inst.opcode.name().to_string(),
                }))
            }
        }
    }

    /// A "not supported on chip yet" error at the current instruction.
    pub(crate) fn unsupported(&self, what: impl Into<String>) -> CompileError {
        CompileError::unsupported(what, self.span)
    }

    /// The value of an already lowered instruction.
    pub(crate) fn val(&self, h: InstId) -> CResult<Val> {
        let v = self.vals[h.index()]
            .clone()
            .ok_or_else(|| CompileError::Internal(format!("operand {} not lowered", h.index())))?;
        if self.depth == 0 {
            let mut leaves = Vec::new();
            spill::array_leaves(&v, &mut leaves);
            self.touched
                .borrow_mut()
                .extend(leaves.iter().map(|b| b.alloc));
        }
        Ok(v)
    }

    /// The array value of an operand.
    pub(crate) fn arr(&self, h: InstId) -> CResult<Buf> {
        match self.val(h)? {
            Val::Array(b) => Ok(b),
            _ => Err(self.unsupported("a tuple or token operand here")),
        }
    }

    /// The operand's value, kept alive as long as `user` is.
    pub(crate) fn alias(&mut self, o: InstId, user: InstId) -> CResult<Val> {
        let v = self.val(o)?;
        self.extend_life(&v, user);
        Ok(v)
    }

    /// Nesting depth of the computation being lowered (0: the entry).
    pub(crate) fn depth(&self) -> usize {
        self.depth
    }

    /// If nothing reads `b`'s allocation after the current instruction, hands it to `h`'s
    /// result (in-place update: it lives as long as `h` does) and returns true.
    pub(crate) fn take_over(&mut self, b: &Buf, h: InstId) -> bool {
        let (pos, depth, lu) = (self.pos, self.depth, self.last_use[h.index()]);
        let a = &mut self.allocs[b.alloc];
        if a.freed || a.pins > 0 || a.depth != depth || a.last_use > pos || b.addr != a.addr {
            return false;
        }
        a.last_use = a.last_use.max(lu);
        // Written in place from now on: its HBM copy, if any, goes stale.
        a.home = None;
        true
    }

    /// Frees the temporary `b` now (its VMEM may be reused by what follows; the emitter
    /// orders the reuse after pending readers and writers).
    pub(crate) fn release(&mut self, b: &Buf) {
        let pc = self.e.b.pc();
        let a = &mut self.allocs[b.alloc];
        if !a.freed && a.pins == 0 && a.addr == b.addr && a.last_use <= self.pos {
            a.free(&mut self.vmem, pc);
        }
    }

    /// Keeps `b` allocated until [`Self::unpin`] (whatever its users' positions).
    pub(crate) fn pin(&mut self, b: &Buf) {
        self.allocs[b.alloc].pins += 1;
    }

    /// Undoes one [`Self::pin`]: `b` is freed after the current instruction unless its users
    /// need it longer.
    pub(crate) fn unpin(&mut self, b: &Buf) {
        let pos = self.pos;
        let a = &mut self.allocs[b.alloc];
        a.pins -= 1;
        a.last_use = a.last_use.max(pos);
    }

    /// Keeps the buffers of `v` allocated as long as `user` is live.
    pub(crate) fn extend_life(&mut self, v: &Val, user: InstId) {
        let lu = self.last_use[user.index()];
        match v {
            Val::Array(b) => {
                // Only the owning computation's positions mean anything for an allocation.
                let depth = self.depth;
                let a = &mut self.allocs[b.alloc];
                if a.depth == depth {
                    a.last_use = a.last_use.max(lu);
                }
            }
            Val::Tuple(vs) => {
                for v in vs.clone() {
                    self.extend_life(&v, user);
                }
            }
            Val::Hbm(s) => {
                if self.depth == 0 {
                    self.extend_spill(s, lu);
                }
            }
            Val::Token => {}
        }
    }

    /// `(element type, dims)` of an instruction's array shape.
    pub(crate) fn out_shape(&self, h: InstId) -> CResult<(ElementType, Vec<usize>)> {
        let s = &self.comp().insts[h].shape;
        let a = s
            .as_array()
            .ok_or_else(|| self.unsupported("a tuple-shaped result here"))?;
        if a.is_dynamic() {
            return Err(self.unsupported("dynamic dimensions"));
        }
        Ok((a.ty, a.udims()))
    }

    /// A new VMEM buffer for the value of `h` (freed after `h`'s last use).
    pub(crate) fn new_buf(&mut self, h: InstId, ty: ElementType, dims: Vec<usize>) -> CResult<Buf> {
        let lu = self.last_use[h.index()];
        self.buf_until(lu, ty, dims)
    }

    /// A temporary buffer, freed after the current instruction.
    pub(crate) fn tmp(&mut self, ty: ElementType, dims: Vec<usize>) -> CResult<Buf> {
        self.buf_until(self.pos, ty, dims)
    }

    pub(crate) fn buf_until(
        &mut self,
        last_use: usize,
        ty: ElementType,
        dims: Vec<usize>,
    ) -> CResult<Buf> {
        let n = Self::array_bytes(ty, &dims)
            .ok_or_else(|| self.too_large("an array size overflows".into()))?;
        self.try_buf_until(last_use, ty, dims)?
            .ok_or_else(|| self.no_room(n))
    }

    /// The error for `n` bytes of VMEM that cannot be found.
    fn no_room(&self, n: u64) -> CompileError {
        if n > self.vmem.capacity() {
            return self.too_large(format!(
                "a {n}-byte VMEM buffer does not fit: larger than vmem.bytes = {}, and this \
                 instruction does not stream from HBM (docs/compiler.md, \"Memory plan\", lists \
                 what does)",
                self.vmem.capacity()
            ));
        }
        self.too_large(format!(
            "a {n}-byte VMEM buffer does not fit: {} of vmem.bytes = {} in use by values this \
             instruction needs or that cannot move to HBM here",
            self.vmem.in_use,
            self.vmem.capacity()
        ))
    }

    fn array_bytes(ty: ElementType, dims: &[usize]) -> Option<u64> {
        dims.iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d as u64))
            .and_then(|n| n.checked_mul(ty.byte_size() as u64))
    }

    /// [`Self::buf_until`], or `None` if it does not fit VMEM even after spilling what may be.
    pub(crate) fn try_buf_until(
        &mut self,
        last_use: usize,
        ty: ElementType,
        dims: Vec<usize>,
    ) -> CResult<Option<Buf>> {
        let n = Self::array_bytes(ty, &dims)
            .ok_or_else(|| self.too_large("an array size overflows".into()))?;
        let Some(addr) = self.vmem_alloc(n)? else {
            return Ok(None);
        };
        self.unfreed.push(self.allocs.len());
        self.allocs.push(AllocInfo {
            depth: self.depth,
            addr,
            bytes: n,
            last_use,
            freed: false,
            pins: 0,
            hlo: self.e.b.current_hlo().unwrap_or("-").to_string(),
            from_pc: self.e.b.pc(),
            to_pc: None,
            home: None,
        });
        Ok(Some(Buf {
            alloc: self.allocs.len() - 1,
            addr,
            ty,
            dims,
        }))
    }

    pub(crate) fn too_large(&self, what: String) -> CompileError {
        CompileError::TooLarge {
            what,
            span: self.span,
        }
    }

    /// Lowers computation `comp` with `args` as its parameters' values and returns its
    /// root's value. Buffers it allocates are freed after their last use inside it, except the
    /// root's, which the caller copies out and then releases with [`Lowerer::end_sub`].
    pub(crate) fn lower_sub(
        &mut self,
        comp: hlo::CompId,
        args: Vec<Val>,
    ) -> CResult<(Val, SubState)> {
        let c = &self.m.comps[comp];
        let order = c
            .post_order()
            .ok_or_else(|| CompileError::Internal("cyclic computation".into()))?;
        let mut last_use = vec![usize::MAX; c.insts.len()];
        for (k, h) in order.iter().enumerate() {
            last_use[h.index()] = k;
        }
        for (k, h) in order.iter().enumerate() {
            for o in &c.insts[*h].operands {
                last_use[o.index()] = last_use[o.index()].max(k);
            }
        }
        last_use[c.root.index()] = usize::MAX;
        let saved = SubState {
            vals: std::mem::replace(&mut self.vals, vec![None; c.insts.len()]),
            last_use: std::mem::replace(&mut self.last_use, last_use),
            pos: self.pos,
            comp: self.comp,
            span: self.span,
        };
        self.comp = comp;
        self.depth += 1;
        let params = c.parameters();
        for (p, a) in params.iter().zip(args) {
            self.vals[p.index()] = Some(a);
        }
        for (k, &h) in order.iter().enumerate() {
            self.pos = k;
            let inst = &c.insts[h];
            self.span = if inst.span.is_none() {
                saved.span
            } else {
                inst.span
            };
            if self.vals[h.index()].is_none() {
                let v = if inst.opcode == Opcode::Constant {
                    self.constant(h)?
                } else {
                    self.lower(h)?
                };
                self.vals[h.index()] = Some(v);
            }
            self.free_dead(k);
        }
        // The body's own sends go out in the body (every execution pairs its transfers).
        self.flush_sends()?;
        let root = self.vals[c.root.index()].clone().expect("root lowered");
        Ok((root, saved))
    }

    /// Frees what the sub-computation still holds and returns to the caller's computation.
    pub(crate) fn end_sub(&mut self, saved: SubState) {
        let depth = self.depth;
        let pc = self.e.b.pc();
        for a in &mut self.allocs {
            if !a.freed && a.depth == depth {
                a.free(&mut self.vmem, pc);
            }
        }
        self.depth -= 1;
        self.vals = saved.vals;
        self.last_use = saved.last_use;
        self.pos = saved.pos;
        self.comp = saved.comp;
        self.span = saved.span;
    }

    /// A new buffer with the same shapes as `v`, live as long as instruction `h`.
    pub(crate) fn like(&mut self, h: InstId, v: &Val) -> CResult<Val> {
        Ok(match v {
            Val::Array(b) => Val::Array(self.new_buf(h, b.ty, b.dims.clone())?),
            Val::Tuple(vs) => {
                Val::Tuple(vs.iter().map(|x| self.like(h, x)).collect::<CResult<_>>()?)
            }
            Val::Token => Val::Token,
            Val::Hbm(_) => return Err(self.unsupported("an HBM-resident value in control flow")),
        })
    }

    fn free_dead(&mut self, pos: usize) {
        let depth = self.depth;
        let pc = self.e.b.pc();
        let (allocs, vmem) = (&mut self.allocs, &mut self.vmem);
        // Only allocations not freed yet are visited (compile time stays linear).
        self.unfreed.retain(|&k| {
            let a = &mut allocs[k];
            if !a.freed && a.pins == 0 && a.depth == depth && a.last_use <= pos {
                a.free(vmem, pc);
            }
            !a.freed
        });
    }

    /// A new HBM slot for an array of `ty` and `dims`, named `what` in errors.
    pub(crate) fn hbm_array(
        &mut self,
        ty: ElementType,
        dims: Vec<usize>,
        what: &str,
    ) -> CResult<Slot> {
        let slot = Slot { addr: 0, ty, dims };
        let addr = self.hbm_slot(slot.bytes(), what)?;
        Ok(Slot { addr, ..slot })
    }

    pub(crate) fn hbm_slot(&mut self, bytes: u64, what: &str) -> CResult<u64> {
        self.hbm.alloc(bytes).ok_or_else(|| {
            self.too_large(format!(
                "{what} ({bytes} bytes) does not fit in HBM (hbm.bytes = {})",
                self.arch.hbm.bytes
            ))
        })
    }

    /// Copies `bytes` contiguous bytes with one DMA.
    pub(crate) fn dma(&mut self, dst: (Space, u64), src: (Space, u64), bytes: u64) -> CResult<()> {
        if bytes == 0 {
            return Ok(());
        }
        // One descriptor moves at most u32::MAX bytes per chunk; split larger copies. A large
        // copy to or from HBM is also cut into pieces of at least 256 KiB (whole HBM bursts),
        // one per DMA engine at most: one engine moves at most `dma.bytes_per_cycle`, the HBM
        // link more (smaller pieces would hold every engine for a latency each and delay the
        // copies queued behind them).
        let engines = u64::from(self.arch.dma.engines.max(1));
        let burst = self.arch.hbm.burst_bytes.max(1);
        let pieces = if dst.0 == Space::Hbm || src.0 == Space::Hbm {
            (bytes / (256 * 1024)).clamp(1, engines)
        } else {
            1
        };
        let chunk = (bytes.div_ceil(pieces).div_ceil(burst) * burst).min(1u64 << 30);
        let mut done = 0;
        while done < bytes {
            let n = chunk.min(bytes - done);
            self.dma_strided((dst.0, dst.1 + done), (src.0, src.1 + done), n, 1, n, n);
            done += n;
        }
        Ok(())
    }

    /// One `dma.copy` of `len`-byte runs (`len` < 2^32) over outer dimensions `(count, src
    /// step, dst step)`, innermost first (at most [`isa::MAX_DMA_DIMS`]; none: one run). Its
    /// accesses are one strided run per index of the dimensions outside the innermost, or,
    /// past [`MAX_ND_ACCESSES`] of them, the span from the first to the last byte on each
    /// side.
    pub(crate) fn dma_nd(
        &mut self,
        dst: (Space, u64),
        src: (Space, u64),
        len: u64,
        dims: &[(u32, i64, i64)],
    ) {
        debug_assert!(dims.len() <= isa::MAX_DMA_DIMS);
        let desc = self.e.b.dma_desc(DmaDesc {
            len: len as u32,
            dims: dims
                .iter()
                .map(|&(count, src_stride, dst_stride)| isa::DmaDim {
                    count,
                    src_stride,
                    dst_stride,
                })
                .collect(),
        });
        let one = [(1, len as i64, len as i64)];
        let dims = if dims.is_empty() { &one[..] } else { dims };
        let outer: u64 = dims[1..].iter().map(|d| d.0 as u64).product();
        let side = |(space, start): (Space, u64), pick: fn(&(u32, i64, i64)) -> i64| {
            let inner = dims[0];
            if outer > MAX_ND_ACCESSES {
                let span = len
                    + dims
                        .iter()
                        .map(|d| (d.0 as u64).saturating_sub(1) * pick(d).unsigned_abs())
                        .sum::<u64>();
                return vec![Access {
                    space,
                    start,
                    row_bytes: span,
                    stride: span,
                    rows: 1,
                }];
            }
            let mut starts = vec![start];
            for d in &dims[1..] {
                starts = starts
                    .iter()
                    .flat_map(|&s0| (0..d.0 as u64).map(move |k| s0 + k * pick(d) as u64))
                    .collect();
            }
            starts
                .into_iter()
                .map(|s0| Access {
                    space,
                    start: s0,
                    row_bytes: len,
                    stride: (pick(&inner) as u64).max(len),
                    rows: inner.0 as u64,
                })
                .collect::<Vec<_>>()
        };
        let reads = side(src, |d| d.1);
        let writes = side(dst, |d| d.2);
        let d = self.e.memref(dst.0, dst.1);
        let s = self.e.memref(src.0, src.1);
        self.e.unit(
            Inst::DmaCopy {
                dst: d,
                src: s,
                desc,
                wait: None,
                signal: None,
            },
            Queue::Dma,
            &reads,
            &writes,
        );
    }

    /// One `dma.copy` of `rows` runs of `len` bytes, `src_stride` / `dst_stride` apart.
    pub(crate) fn dma_strided(
        &mut self,
        dst: (Space, u64),
        src: (Space, u64),
        len: u64,
        rows: u64,
        src_stride: u64,
        dst_stride: u64,
    ) {
        if len == 0 || rows == 0 {
            return;
        }
        let dims: &[(u32, i64, i64)] = if rows > 1 {
            &[(rows as u32, src_stride as i64, dst_stride as i64)]
        } else {
            &[]
        };
        self.dma_nd(dst, src, len, dims);
    }

    fn load_input(&mut self, p: InstId, shape: &hlo::Shape, name: &str) -> CResult<(Place, Val)> {
        Ok(match shape {
            hlo::Shape::Array(a) => {
                if a.is_dynamic() {
                    return Err(self.unsupported("dynamic dimensions"));
                }
                if !a.ty.is_complex() {
                    dtype(a.ty)
                        .ok_or_else(|| self.unsupported(format!("element type {}", a.ty)))?;
                }
                let slot = self.hbm_array(a.ty, a.udims(), name)?;
                let addr = slot.addr;
                let lu = self.last_use[p.index()];
                // One that does not fit next to those before it starts spilled.
                let val = match self.try_buf_until(lu, a.ty, a.udims())? {
                    Some(buf) => {
                        self.dma((Space::Vmem, buf.addr), (Space::Hbm, addr), buf.bytes())?;
                        self.allocs[buf.alloc].home = Some(addr);
                        Val::Array(buf)
                    }
                    None if self.depth == 0 => self.spilled_from_start(&slot, lu),
                    None => return Err(self.no_room(slot.bytes())),
                };
                (Place::Array(slot), val)
            }
            hlo::Shape::Tuple(ts) => {
                let mut places = Vec::new();
                let mut vals = Vec::new();
                for t in ts {
                    let (pl, v) = self.load_input(p, t, name)?;
                    places.push(pl);
                    vals.push(v);
                }
                (Place::Tuple(places), Val::Tuple(vals))
            }
            hlo::Shape::Token => (Place::Token, Val::Token),
        })
    }

    fn constant(&mut self, h: InstId) -> CResult<Val> {
        let inst = &self.comp().insts[h];
        let lit = inst
            .literal()
            .ok_or_else(|| CompileError::Internal("constant without literal".into()))?;
        let hlo::Literal::Array(a) = lit else {
            return Err(self.unsupported("tuple constants"));
        };
        dtype(a.data.element_type())
            .ok_or_else(|| self.unsupported(format!("element type {}", a.data.element_type())))?;
        let bytes = crate::io::to_bytes(a);
        let (ty, lu) = (a.data.element_type(), self.last_use[h.index()]);
        let addr = self.hbm_slot(bytes.len() as u64, &inst.name)?;
        let n = bytes.len() as u64;
        self.e.b.data(Space::Hbm, addr, bytes);
        match self.try_buf_until(lu, ty, a.dims.clone())? {
            Some(buf) => {
                self.dma((Space::Vmem, buf.addr), (Space::Hbm, addr), n)?;
                self.allocs[buf.alloc].home = Some(addr);
                Ok(Val::Array(buf))
            }
            // One that does not fit next to those before it starts spilled.
            None if self.depth == 0 => {
                let slot = Slot {
                    addr,
                    ty,
                    dims: a.dims.clone(),
                };
                Ok(self.spilled_from_start(&slot, lu))
            }
            None => Err(self.no_room(n)),
        }
    }

    /// An index table (u32 per element) placed in HBM and copied into a temporary VMEM buffer.
    pub(crate) fn index_table(&mut self, idx: &[u32]) -> CResult<Buf> {
        let buf = self.tmp(ElementType::U32, vec![idx.len()])?;
        let bytes: Vec<u8> = idx.iter().flat_map(|x| x.to_le_bytes()).collect();
        let n = bytes.len() as u64;
        let addr = self.hbm_slot(n, "an index table")?;
        self.e.b.data(Space::Hbm, addr, bytes);
        self.dma((Space::Vmem, buf.addr), (Space::Hbm, addr), n)?;
        Ok(buf)
    }

    fn store_output(&mut self, v: &Val) -> CResult<Place> {
        Ok(match v {
            Val::Array(b) => {
                let addr = self.hbm_slot(b.bytes(), "the result")?;
                self.dma((Space::Hbm, addr), (Space::Vmem, b.addr), b.bytes())?;
                Place::Array(Slot {
                    addr,
                    ty: b.ty,
                    dims: b.dims.clone(),
                })
            }
            Val::Tuple(vs) => Place::Tuple(
                vs.iter()
                    .map(|v| self.store_output(v))
                    .collect::<CResult<_>>()?,
            ),
            Val::Token => Place::Token,
            Val::Hbm(s) => Place::Array(s.clone()),
        })
    }

    /// A parameter left in HBM (only streamed dots read it).
    fn input_in_hbm(&mut self, shape: &hlo::Shape, name: &str) -> CResult<(Place, Val)> {
        let a = shape
            .as_array()
            .ok_or_else(|| CompileError::Internal("streamed operand is not an array".into()))?;
        let slot = self.hbm_array(a.ty, a.udims(), name)?;
        Ok((Place::Array(slot.clone()), Val::Hbm(slot)))
    }

    /// The plan of a streamed dot (with its epilogue `chain`, see [`dot::stream_chain`]):
    /// operand addresses and a result slot in HBM.
    fn plan_stream(
        &mut self,
        h: InstId,
        chain: &[InstId],
        users: &[Vec<InstId>],
    ) -> CResult<dot_stream::Streamed> {
        let c = self.m.entry();
        let inst = &c.insts[h];
        let slot = |v: &Option<Slot>| {
            v.clone()
                .ok_or_else(|| CompileError::Internal("streamed dot operand not in HBM".into()))
        };
        let lhs = slot(&self.hbm_home[inst.operands[0].index()])?;
        let rhs = slot(&self.hbm_home[inst.operands[1].index()])?;
        let (ty, dims) = self.out_shape(h)?;
        if inst.opcode == Opcode::Convolution {
            let addr = self.hbm_array(ty, dims, &inst.name)?.addr;
            return conv::StreamConv::new(self, h, lhs.addr, rhs.addr, addr)
                .map(dot_stream::Streamed::Conv)
                .ok_or_else(|| CompileError::Internal("streamed convolution has no plan".into()));
        }
        let g = dot::stream_form(c, h)
            .ok_or_else(|| CompileError::Internal("streamed dot not in stream form".into()))?;
        let mut epilogue = Vec::new();
        let mut v = h;
        for &u in chain {
            let ui = &c.insts[u];
            let arg = match dot::epilogue_step(c, u, v, users) {
                Some(Some(b)) => {
                    let x = c.insts[b].operands[0];
                    let xi = &c.insts[x];
                    let hbm = match (&self.hbm_home[x.index()], xi.literal()) {
                        (Some(s), _) => s.addr,
                        (None, Some(hlo::Literal::Array(a))) => {
                            let bytes = crate::io::to_bytes(a);
                            let addr = self.hbm_slot(bytes.len() as u64, &xi.name)?;
                            self.e.b.data(Space::Hbm, addr, bytes);
                            addr
                        }
                        _ => {
                            return Err(CompileError::Internal(
                                "epilogue operand neither in HBM nor a constant".into(),
                            ))
                        }
                    };
                    Some(dot_stream::EpiArg {
                        hbm,
                        per_column: xi.shape.as_array().is_some_and(|a| a.dims.len() == 1),
                        acc_first: ui.operands[0] == v,
                    })
                }
                Some(None) => None,
                None => {
                    return Err(CompileError::Internal(
                        "epilogue step no longer matches".into(),
                    ))
                }
            };
            let ty = ui
                .shape
                .as_array()
                .ok_or_else(|| CompileError::Internal("epilogue step is not an array".into()))?
                .ty;
            epilogue.push(dot_stream::EpiStep {
                op: ui.opcode,
                arg,
                ty,
            });
            v = u;
        }
        let (ty, dims) = self.out_shape(v)?;
        let addr = self.hbm_array(ty, dims, &c.insts[v].name)?.addr;
        Ok(dot_stream::Streamed::Dot(dot_stream::StreamDot {
            name: inst.name.clone(),
            lhs: lhs.addr,
            rhs: rhs.addr,
            rhs_t: g.rhs_t,
            out: addr,
            dims: (g.nb, g.m, g.k, g.n),
            mode: g.mode,
            epilogue,
            budget: self.arch.vmem.bytes / 4 * 3,
        }))
    }

    /// Lowers a streamed dot: core 0's share now, the other cores' shares after core 0's code.
    pub(crate) fn lower_stream(&mut self, h: InstId) -> CResult<Option<Val>> {
        if self.depth != 0 {
            return Ok(None);
        }
        let Some(sd) = self.stream[h.index()].clone() else {
            return Ok(None);
        };
        let (ty, dims) = self.out_shape(h)?;
        self.stats.flops += sd.flops();
        let cores = self.arch.cores_per_chip as usize;
        let need = sd.vmem_bytes(self, cores);
        if need > self.arch.vmem.bytes {
            return Err(self.too_large(format!(
                "streamed {} `{}` needs {need} bytes of VMEM for its tiles (vmem.bytes = {})",
                match sd {
                    dot_stream::Streamed::Dot(_) => "dot",
                    dot_stream::Streamed::Conv(_) => "convolution",
                },
                sd.name(),
                self.arch.vmem.bytes
            )));
        }
        // Core 0's buffers come from the allocator (freed after this instruction).
        let mut pool = Vec::new();
        for n in sd.buffer_sizes(self, cores) {
            pool.push(self.tmp(ElementType::U8, vec![n as usize])?.addr);
        }
        let mut it = pool.into_iter();
        sd.emit(self, 0, cores, &mut |_| {
            it.next()
                .ok_or_else(|| CompileError::Internal("stream buffer pool exhausted".into()))
        })?;
        for c in 1..cores {
            self.side.push((c, sd.clone(), false));
        }
        Ok(Some(Val::Hbm(Slot {
            addr: sd.out(),
            ty,
            dims,
        })))
    }

    /// The program's region table: each parameter and result leaf in HBM (with its array and
    /// interface place) and each VMEM buffer with the instructions it was allocated during.
    ///
    /// An interface region is named after the HLO parameter (`x.1`, `x.1{0}` for a tuple's
    /// leaf) so that tools can match arguments by name; the result's are `result`,
    /// `result{0}`, ...
    fn describe_regions(&mut self, params: &[Place], result: &Place) {
        fn leaves(p: &Place, name: &str, io: isa::RegionIo, out: &mut Vec<isa::Region>) {
            let label = format!("{name}{}", io.index_text());
            match p {
                Place::Array(s) => {
                    let mut r = isa::Region::plain(label, Space::Hbm, s.addr, s.bytes());
                    let (part, complex) = match s.ty {
                        ElementType::C64 => (Some(DType::F32), true),
                        ElementType::C128 => (Some(DType::F64), true),
                        t => (dtype(t), false),
                    };
                    r.array = part.map(|d| isa::RegionArray {
                        complex,
                        ..isa::RegionArray::row_major(d, s.dims.iter().map(|&x| x as u64).collect())
                    });
                    r.io = Some(io);
                    out.push(r);
                }
                Place::Tuple(ps) => {
                    for (k, q) in ps.iter().enumerate() {
                        let mut io = io.clone();
                        match &mut io {
                            isa::RegionIo::Param { index, .. }
                            | isa::RegionIo::Result { index } => index.push(k as u32),
                        }
                        leaves(q, name, io, out);
                    }
                }
                Place::Token => {
                    let mut r = isa::Region::plain(label, Space::Hbm, 0, 0);
                    r.io = Some(io);
                    out.push(r);
                }
            }
        }
        let mut out = Vec::new();
        let c = self.m.entry();
        let names: Vec<&str> = c
            .parameters()
            .iter()
            .map(|&h| c.insts[h].name.as_str())
            .collect();
        for (k, p) in params.iter().enumerate() {
            let io = isa::RegionIo::Param {
                number: k as u32,
                index: Vec::new(),
            };
            let name = names
                .get(k)
                .copied()
                .filter(|n| !n.is_empty() && !n.starts_with("result") && !n.contains('#'))
                .map_or_else(|| format!("param{k}"), str::to_string);
            leaves(p, &name, io, &mut out);
        }
        leaves(
            result,
            "result",
            isa::RegionIo::Result { index: Vec::new() },
            &mut out,
        );
        let end = self.e.b.pc();
        for (k, a) in self.allocs.iter().enumerate() {
            let mut r = isa::Region::plain(format!("{}#{k}", a.hlo), Space::Vmem, a.addr, a.bytes);
            r.live = Some((a.from_pc, a.to_pc.unwrap_or(end).max(a.from_pc)));
            out.push(r);
        }
        for r in out {
            self.e.b.region_full(r);
        }
    }

    /// Queues core `c`'s share of `sd` (`joined`: it waits for core 0's go and signals its end).
    pub(crate) fn push_side(&mut self, c: usize, sd: dot_stream::Streamed, joined: bool) {
        self.side.push((c, sd, joined));
    }

    /// Declares the chip-shared fork/join semaphores (once).
    pub(crate) fn declare_join_sems(&mut self) {
        if !self.join_declared {
            for s in emit::JOIN_SEMS {
                self.e.b.declare_sem(isa::SemDecl {
                    sem: s,
                    wait: 1,
                    signal: 1,
                    shared: true,
                });
            }
            self.join_declared = true;
        }
    }

    /// The other cores' shares of streamed dots: `if core_id == c { ...; halt }` per core.
    fn emit_side_work(&mut self) -> CResult<()> {
        let side = std::mem::take(&mut self.side);
        for c in 1..self.arch.cores_per_chip as usize {
            let mine: Vec<_> = side
                .iter()
                .filter(|(k, _, _)| *k == c)
                .map(|(_, s, j)| (s.clone(), *j))
                .collect();
            if mine.is_empty() {
                continue;
            }
            let next = self.e.b.new_label();
            self.e.reset_core_state();
            self.e.seq(Inst::SLi {
                rd: SReg(29),
                imm: c as i64,
            });
            self.e.b.emit_branch(
                Inst::Bne {
                    ra: SReg(28),
                    rb: SReg(29),
                    target: isa::Target(0),
                },
                next,
            );
            self.e.reset_core_state();
            // This core's VMEM is untouched: lay its buffers out from 0.
            let mut top = 0u64;
            for (sd, joined) in &mine {
                self.e.b.begin_hlo(sd.name());
                if *joined {
                    // Core 0's go: its operands are in HBM.
                    self.e.seq(Inst::SemWait {
                        sem: isa::Sem(emit::JOIN_SEMS[0]),
                        n: 1,
                    });
                }
                let cores = self.arch.cores_per_chip as usize;
                let cap = self.arch.vmem.bytes;
                let from = self.e.b.pc();
                let mut bufs = Vec::new();
                sd.emit(self, c, cores, &mut |n| {
                    let a = top;
                    top += n.div_ceil(alloc::ALIGN) * alloc::ALIGN;
                    if top > cap {
                        return Err(CompileError::Internal("side-core VMEM overflow".into()));
                    }
                    bufs.push((a, n));
                    Ok(a)
                })?;
                if *joined {
                    // This share is in HBM: core 0 may read the result.
                    self.e.fence();
                    self.e.seq(Inst::SemSignal {
                        sem: isa::Sem(emit::JOIN_SEMS[1]),
                        n: 1,
                    });
                }
                let to = self.e.b.pc();
                for (k, (a, n)) in bufs.into_iter().enumerate() {
                    let mut r = isa::Region::plain(
                        format!("{}#core{c}.{k}", sd.name()),
                        Space::Vmem,
                        a,
                        n.div_ceil(alloc::ALIGN) * alloc::ALIGN,
                    );
                    r.live = Some((from, to));
                    self.e.b.region_full(r);
                }
                top = 0;
            }
            self.e.b.end_hlo();
            self.e.seq(Inst::Halt {});
            self.e.b.bind(next);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    /// A temporary freed early with `release` (sort's partner buffers, masks, ...) ends its
    /// live range where it is released, so the region table's VMEM occupancy is the plan's.
    #[test]
    fn released_temporaries_end_their_live_range_at_the_release() {
        let text = "HloModule s\nlt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
                    ROOT c = pred[] compare(a, b), direction=LT\n}\nENTRY e {\n  \
                    x = f32[8,16] parameter(0)\n  ROOT s = f32[8,16] sort(x), dimensions={1}, \
                    to_apply=lt\n}\n";
        let m = hlo::verified(hlo::parse(text).unwrap()).unwrap();
        let arch = arch::ArchConfig::preset("tpu-v4").unwrap();
        let c = crate::compile(&m, &arch, &crate::CompileOptions::default()).unwrap();
        let ends: Vec<u32> = c
            .program
            .regions
            .iter()
            .filter(|r| r.space == isa::Space::Vmem)
            .filter_map(|r| r.live.map(|l| l.1))
            .collect();
        let last = *ends.iter().max().unwrap();
        let at_end = ends.iter().filter(|&&e| e == last).count();
        // Dozens of temporaries come and go; only what the result needs lives to the end.
        assert!(ends.len() > 20, "{} VMEM regions", ends.len());
        assert!(
            at_end <= 2,
            "{at_end} of {} VMEM regions live to the end",
            ends.len()
        );
    }
}
