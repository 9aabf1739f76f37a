//! Instruction metadata types used by the table: execution units, timing classes and the
//! per-row [`InstInfo`] / [`FieldInfo`] records.

use crate::operand::{DType, TypeClass};

/// The unit that executes an instruction. The sequencer issues every instruction in program
/// order; instructions of the other units go to that unit's in-order queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unit {
    /// Scalar unit / sequencer: scalar arithmetic, branches, semaphores, fences, halt.
    Seq,
    /// DMA engines.
    Dma,
    /// Matrix units (the `mxu` operand selects which; one queue per MXU).
    Mxu,
    /// Vector unit (with its transcendental and cross-lane units).
    Vpu,
    /// Infeed queue (host → chip).
    Infeed,
    /// Outfeed queue (chip → host).
    Outfeed,
    /// Inter-chip interconnect.
    Ici,
}

impl Unit {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Seq => "seq",
            Unit::Dma => "dma",
            Unit::Mxu => "mxu",
            Unit::Vpu => "vpu",
            Unit::Infeed => "infeed",
            Unit::Outfeed => "outfeed",
            Unit::Ici => "ici",
        }
    }
}

/// Timing class: which `ArchConfig` numbers time an instruction (see docs/isa.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TimingClass {
    /// `sequencer.scalar_latency`.
    Scalar,
    /// `sequencer.scalar_mem_latency`.
    ScalarMem,
    /// `sequencer.scalar_latency`, plus `sequencer.branch_penalty` when taken.
    Branch,
    /// Semaphore and fence: as long as the wait lasts, then `sequencer.scalar_latency`.
    Sync,
    /// `halt`: waits for every unit to drain.
    Halt,
    /// `dma.*`: `dma.setup_cycles`, `dma.bytes_per_cycle`, HBM/VMEM bandwidth and latency.
    Dma,
    /// `mxu.ldw`: docs/mxu-contract.md (weight port busy `rows` cycles).
    MxuLoad,
    /// `mxu.matmul`: docs/mxu-contract.md.
    MxuMatmul,
    /// `mxu.st`: one accumulator row per cycle plus VMEM bandwidth.
    MxuStore,
    /// `vpu.alu`.
    VpuAlu,
    /// `vpu.mul`.
    VpuMul,
    /// `vpu.div`.
    VpuDiv,
    /// `vpu.cvt`.
    VpuCvt,
    /// `vpu.transcendental`.
    VpuTrans,
    /// `vpu.cross_lane`.
    VpuXlane,
    /// Infeed: `host.gbps`, `host.latency_ns`, and the host's push schedule.
    Infeed,
    /// Outfeed: `host.gbps`, `host.latency_ns`.
    Outfeed,
    /// ICI transfer: `ici.*` (timed in a later issue).
    Ici,
}

impl TimingClass {
    /// Snake-case name as in docs/isa.md.
    pub fn name(self) -> &'static str {
        match self {
            TimingClass::Scalar => "scalar",
            TimingClass::ScalarMem => "scalar_mem",
            TimingClass::Branch => "branch",
            TimingClass::Sync => "sync",
            TimingClass::Halt => "halt",
            TimingClass::Dma => "dma",
            TimingClass::MxuLoad => "mxu_load",
            TimingClass::MxuMatmul => "mxu_matmul",
            TimingClass::MxuStore => "mxu_store",
            TimingClass::VpuAlu => "vpu_alu",
            TimingClass::VpuMul => "vpu_mul",
            TimingClass::VpuDiv => "vpu_div",
            TimingClass::VpuCvt => "vpu_cvt",
            TimingClass::VpuTrans => "vpu_transcendental",
            TimingClass::VpuXlane => "vpu_cross_lane",
            TimingClass::Infeed => "infeed",
            TimingClass::Outfeed => "outfeed",
            TimingClass::Ici => "ici",
        }
    }
}

/// One operand field of a table row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// Operand name (the keyword in `name=value`).
    pub name: &'static str,
    /// Operand kind (`sreg`, `vaddr`, `uint`, `dtype`, ...).
    pub kind: &'static str,
    /// Width in bits.
    pub bits: u32,
    /// Written as `name=value` (else positional).
    pub keyword: bool,
    /// May be left out in text.
    pub optional: bool,
}

/// One row of the instruction table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstInfo {
    /// Opcode (its value is the encoded byte).
    pub opcode: crate::Opcode,
    /// Rust variant name of [`crate::Inst`].
    pub name: &'static str,
    /// Assembly mnemonic.
    pub mnemonic: &'static str,
    /// Executing unit.
    pub unit: Unit,
    /// Timing class.
    pub timing: TimingClass,
    /// Accepted element types of its `dtype` operands.
    pub types: TypeClass,
    /// Documentation (markdown), the instruction's semantics.
    pub doc: &'static str,
    /// Operand fields in encoding order.
    pub fields: &'static [FieldInfo],
    /// Memory operands: role and extent rule, as the row's `[ ... ]` clause declares them.
    pub uses: &'static [crate::roles::UseInfo],
}

impl InstInfo {
    /// Bit offset of each field (fields are packed from bit 8 upward).
    pub fn field_offsets(&self) -> Vec<u32> {
        let mut off = crate::word::OPCODE_BITS;
        self.fields
            .iter()
            .map(|f| {
                let o = off;
                off += f.bits;
                o
            })
            .collect()
    }
    /// Position of positional operand `field` among the positional operands (the index of its
    /// value in [`crate::Inst::resolve`]'s result).
    pub fn position(&self, field: &str) -> Option<usize> {
        self.fields
            .iter()
            .filter(|f| !f.keyword)
            .position(|f| f.name == field)
    }
    /// The declared use of operand `field`, if it is a memory operand.
    pub fn use_of(&self, field: &str) -> Option<&'static crate::roles::UseInfo> {
        self.uses.iter().find(|u| u.field == field)
    }
    /// Bits used (opcode plus operands).
    pub fn used_bits(&self) -> u32 {
        crate::word::OPCODE_BITS + self.fields.iter().map(|f| f.bits).sum::<u32>()
    }
    /// Syntax line, e.g. `vpu.add DST, A, B, n=N, t=T [, wait=SEM] [, signal=SEM]`.
    pub fn syntax(&self) -> String {
        let mut parts = Vec::new();
        for f in self.fields {
            let p = if f.keyword {
                format!("{}={}", f.name, f.kind)
            } else {
                f.name.to_string()
            };
            parts.push(if f.optional { format!("[{p}]") } else { p });
        }
        if parts.is_empty() {
            self.mnemonic.to_string()
        } else {
            format!("{} {}", self.mnemonic, parts.join(", "))
        }
    }
}

pub(crate) fn check_dtype(
    mnemonic: &str,
    field: &str,
    t: Option<DType>,
    tc: TypeClass,
) -> Result<(), String> {
    match t {
        Some(t) if !tc.allows(t) => Err(format!(
            "{mnemonic}: operand `{field}` = {} is not allowed (expects {})",
            t.name(),
            tc.describe()
        )),
        _ => Ok(()),
    }
}

/// What an instruction does with a memory operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Reads it.
    Read,
    /// Writes it.
    Write,
    /// Reads and writes it.
    Update,
}

impl Role {
    /// Whether the operand is written.
    pub fn writes(self) -> bool {
        self != Role::Read
    }
    /// Whether the operand is read.
    pub fn reads(self) -> bool {
        self != Role::Write
    }
    /// Lower-case name as in docs/isa.md.
    pub fn name(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Write => "written",
            Role::Update => "read and written",
        }
    }
}
