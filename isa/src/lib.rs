//! The systole instruction set, declared once in one table (src/table.rs).
//!
//! From the table derive: the [`Inst`] enum, [`Opcode`] and the metadata [`TABLE`]; the 128-bit
//! binary encoding ([`Inst::encode`], [`Inst::decode`]); the assembler ([`asm`]) and
//! disassembler ([`disasm`]); and docs/isa.md ([`docs::render`]). A [`Program`] bundles code,
//! data, DMA descriptors, a memory map and a symbol table back to HLO instruction names, with a
//! binary file format ([`Program::to_bytes`], [`Program::from_bytes`]).
//!
//! Invariants: `Inst::decode(i.encode()?) == Ok(i)` for every encodable instruction;
//! `asm(disasm(p)) == p` for every valid program; reserved bits are zero in every encoded word;
//! docs/isa.md equals [`docs::render`] (checked by a test; `BLESS=1 cargo test -p isa`).

#[macro_use]
mod define;
pub mod access;
pub mod asm;
pub mod binary;
pub mod builder;
mod check;
pub mod disasm;
pub mod docs;
mod inst;
mod operand;
mod program;
pub mod roles;
mod table;
mod word;

pub use access::Access;
pub use builder::{Builder, Label};
pub use inst::{FieldInfo, InstInfo, Role, TimingClass, Unit};
pub use operand::{
    parse_int, AccAddr, CmpOp, Csr, DType, Flag, FmtCtx, MemRef, Operand, ParseCtx, Pat, RedOp,
    SReg, Sem, Space, Target, TypeClass, VAddr, NUM_SEMS, NUM_SREGS,
};
pub use program::{
    ChunkOffsets, DataSegment, DmaDesc, DmaDim, Layout, PatDim, Pattern, Program, ProgramError,
    Region, RegionArray, RegionIo, SemDecl, SymbolRange, MAX_DMA_DIMS, MAX_PAT_DIMS,
};
pub use roles::{AccessCtx, Extent, OperandUse, Runs, Touched, UseList};
pub use table::{Inst, Opcode, TABLE};
pub use word::{DecodeError, EncodeError, Word, OPCODE_BITS, WORD_BITS};

/// The MXU numeric mode type (shared with `arch`).
pub use arch::MxuDtype;

/// Proptest strategies for other crates' property tests (feature `arbitrary`).
#[cfg(any(test, feature = "arbitrary"))]
pub mod arbitrary {
    pub use crate::program::arbitrary_program;
    pub use crate::table::arbitrary_inst;
}

#[cfg(test)]
mod tests;
