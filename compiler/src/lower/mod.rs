//! Lowering: the flat entry computation (after the HLO passes) to one core's ISA program.
//!
//! Memory plan: every parameter and the result have a slot in HBM (the [`IoMap`]); constants
//! are HBM data segments. At the start the program copies each parameter and constant into a
//! VMEM buffer (all DMAs issued up front, so they overlap each other and the first compute);
//! each instruction's value gets a VMEM buffer (row-major, [`alloc::ALIGN`]-aligned), freed
//! after its last use; `reshape`, `bitcast`, `tuple` and `get-tuple-element` alias their
//! operand's buffer. At the end the result's arrays are copied to their HBM slots. A module
//! whose live values do not fit VMEM is refused (streaming operands from HBM is future work).
//!
//! Work goes to core 0 of the chip; the other cores halt at once. Per-op lowering lives in
//! [`elementwise`], [`movement`], [`reduce`] and [`dot`]; ordering between units is the
//! [`emit::Emitter`]'s job.

pub mod alloc;
pub mod dot;
pub mod elementwise;
pub mod emit;
pub mod movement;
pub mod reduce;

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
}

struct AllocInfo {
    addr: u64,
    bytes: u64,
    last_use: usize,
    freed: bool,
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
    /// The span of the instruction being lowered (for errors).
    pub(crate) span: Span,
    /// Jobs handed to each MXU so far (round-robin and accumulator halves).
    pub(crate) mxu_jobs: Vec<u64>,
    pub(crate) stats: LowerStats,
}

/// Largest element count of one VPU instruction (its `n` field has 20 bits).
pub const VPU_CHUNK: u64 = 1 << 19;

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
            span: Span::NONE,
            mxu_jobs: vec![0; arch.mxu.count as usize],
            stats: LowerStats::default(),
        };
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
        // Inputs: an HBM slot per parameter leaf, copied to VMEM up front.
        let params = c.parameters();
        let mut io_params = Vec::new();
        for &p in &params {
            l.span = c.insts[p].span;
            l.pos = pos[p.index()];
            l.e.b.begin_hlo(&c.insts[p].name);
            let shape = c.insts[p].shape.clone();
            let (place, val) = l.load_input(p, &shape, &c.insts[p].name)?;
            io_params.push(place);
            l.vals[p.index()] = Some(val);
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
        for (k, &h) in order.iter().enumerate() {
            l.pos = k;
            let inst = &c.insts[h];
            l.span = inst.span;
            if l.vals[h.index()].is_none() {
                l.e.b.begin_hlo(&inst.name);
                let v = l.lower(h)?;
                l.vals[h.index()] = Some(v);
            }
            l.free_dead(k);
        }
        // Outputs.
        l.e.b.end_hlo();
        l.span = c.insts[c.root].span;
        let root = l.vals[c.root.index()].clone().expect("root lowered");
        let result = l.store_output(&root)?;
        l.e.b.bind(done);
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

    fn lower(&mut self, h: InstId) -> CResult<Val> {
        let c = self.m.entry();
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
                let idx = inst.attrs.index.unwrap_or(0) as usize;
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
                let b = self.arr(inst.operands[0])?;
                let out = self.out_shape(h)?;
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
            O::AfterAll => Ok(Val::Token),
            _ => {
                if let Some(v) = elementwise::lower(self, h)? {
                    return Ok(v);
                }
                if let Some(v) = movement::lower(self, h)? {
                    return Ok(v);
                }
                if let Some(v) = reduce::lower(self, h)? {
                    return Ok(v);
                }
                if let Some(v) = dot::lower(self, h)? {
                    return Ok(v);
                }
                Err(self.unsupported(inst.opcode.name().to_string()))
            }
        }
    }

    /// A "not supported on chip yet" error at the current instruction.
    pub(crate) fn unsupported(&self, what: impl Into<String>) -> CompileError {
        CompileError::unsupported(what, self.span)
    }

    /// The value of an already lowered instruction.
    pub(crate) fn val(&self, h: InstId) -> CResult<Val> {
        self.vals[h.index()]
            .clone()
            .ok_or_else(|| CompileError::Internal(format!("operand {} not lowered", h.index())))
    }

    /// The array value of an operand.
    pub(crate) fn arr(&self, h: InstId) -> CResult<Buf> {
        match self.val(h)? {
            Val::Array(b) => Ok(b),
            _ => Err(self.unsupported("a tuple or token operand here")),
        }
    }

    /// The operand's value, kept alive as long as `user` is.
    fn alias(&mut self, o: InstId, user: InstId) -> CResult<Val> {
        let v = self.val(o)?;
        self.extend_life(&v, user);
        Ok(v)
    }

    fn extend_life(&mut self, v: &Val, user: InstId) {
        let lu = self.last_use[user.index()];
        match v {
            Val::Array(b) => {
                let a = &mut self.allocs[b.alloc];
                a.last_use = a.last_use.max(lu);
            }
            Val::Tuple(vs) => {
                for v in vs.clone() {
                    self.extend_life(&v, user);
                }
            }
            Val::Token => {}
        }
    }

    /// `(element type, dims)` of an instruction's array shape.
    pub(crate) fn out_shape(&self, h: InstId) -> CResult<(ElementType, Vec<usize>)> {
        let s = &self.m.entry().insts[h].shape;
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

    fn buf_until(&mut self, last_use: usize, ty: ElementType, dims: Vec<usize>) -> CResult<Buf> {
        let n = dims
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d as u64))
            .and_then(|n| n.checked_mul(ty.byte_size() as u64))
            .ok_or_else(|| self.too_large("an array size overflows".into()))?;
        let addr = self.vmem.alloc(n).ok_or_else(|| {
            self.too_large(format!(
                "a {n}-byte VMEM buffer does not fit: {} of vmem.bytes = {} in use (streaming \
                 from HBM is not implemented yet)",
                self.vmem.in_use,
                self.vmem.capacity()
            ))
        })?;
        self.allocs.push(AllocInfo {
            addr,
            bytes: n,
            last_use,
            freed: false,
        });
        Ok(Buf {
            alloc: self.allocs.len() - 1,
            addr,
            ty,
            dims,
        })
    }

    pub(crate) fn too_large(&self, what: String) -> CompileError {
        CompileError::TooLarge {
            what,
            span: self.span,
        }
    }

    fn free_dead(&mut self, pos: usize) {
        for a in &mut self.allocs {
            if !a.freed && a.last_use <= pos {
                a.freed = true;
                self.vmem.free(a.addr, a.bytes);
            }
        }
    }

    fn hbm_slot(&mut self, bytes: u64, what: &str) -> CResult<u64> {
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
        // One descriptor moves at most u32::MAX bytes per chunk; split larger copies.
        let chunk = 1u64 << 30;
        let mut done = 0;
        while done < bytes {
            let n = chunk.min(bytes - done);
            let desc = self.e.b.dma_desc(DmaDesc {
                len: n as u32,
                dims: vec![],
            });
            let d = self.e.memref(dst.0, dst.1 + done);
            let s = self.e.memref(src.0, src.1 + done);
            let acc = |sp: Space, a: u64| Access {
                space: sp,
                ..Access::vmem(a, n)
            };
            self.e.unit(
                Inst::DmaCopy {
                    dst: d,
                    src: s,
                    desc,
                    wait: None,
                    signal: None,
                },
                Queue::Dma,
                &[acc(src.0, src.1 + done)],
                &[acc(dst.0, dst.1 + done)],
            );
            done += n;
        }
        Ok(())
    }

    fn load_input(&mut self, p: InstId, shape: &hlo::Shape, name: &str) -> CResult<(Place, Val)> {
        Ok(match shape {
            hlo::Shape::Array(a) => {
                if a.is_dynamic() {
                    return Err(self.unsupported("dynamic dimensions"));
                }
                dtype(a.ty).ok_or_else(|| self.unsupported(format!("element type {}", a.ty)))?;
                let buf = self.new_buf(p, a.ty, a.udims())?;
                let addr = self.hbm_slot(buf.bytes(), name)?;
                self.dma((Space::Vmem, buf.addr), (Space::Hbm, addr), buf.bytes())?;
                (
                    Place::Array(Slot {
                        addr,
                        ty: a.ty,
                        dims: a.udims(),
                    }),
                    Val::Array(buf),
                )
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
        let inst = &self.m.entry().insts[h];
        let lit = inst
            .attrs
            .literal
            .as_deref()
            .ok_or_else(|| CompileError::Internal("constant without literal".into()))?;
        let hlo::Literal::Array(a) = lit else {
            return Err(self.unsupported("tuple constants"));
        };
        dtype(a.data.element_type())
            .ok_or_else(|| self.unsupported(format!("element type {}", a.data.element_type())))?;
        let bytes = crate::io::to_bytes(a);
        let buf = self.new_buf(h, a.data.element_type(), a.dims.clone())?;
        let addr = self.hbm_slot(bytes.len() as u64, &inst.name)?;
        let n = bytes.len() as u64;
        self.e.b.data(Space::Hbm, addr, bytes);
        self.dma((Space::Vmem, buf.addr), (Space::Hbm, addr), n)?;
        Ok(Val::Array(buf))
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
        })
    }
}
