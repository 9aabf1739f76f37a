//! The 128-bit instruction word and its bit-field reader/writer (bitvec).
//!
//! Layout: bits `[0, 8)` hold the opcode; the operands follow in table order, each in the width
//! the table gives it, least significant bit first; all remaining bits are reserved and must be
//! zero. The word is stored little-endian (16 bytes) in binary files.

use crate::operand::Operand;
use bitvec::prelude::*;
use thiserror::Error;

/// Width of an instruction word in bits.
pub const WORD_BITS: u32 = 128;
/// Width of the opcode field in bits.
pub const OPCODE_BITS: u32 = 8;

/// One encoded instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Word(pub u128);

impl Word {
    /// Little-endian bytes.
    pub fn to_bytes(self) -> [u8; 16] {
        self.0.to_le_bytes()
    }
    /// From little-endian bytes.
    pub fn from_bytes(b: [u8; 16]) -> Word {
        Word(u128::from_le_bytes(b))
    }
}

impl std::fmt::Display for Word {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// An instruction that cannot be encoded: an operand does not fit its field.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{mnemonic}: operand `{field}` = {value} does not fit its {bits}-bit field")]
pub struct EncodeError {
    /// Instruction mnemonic.
    pub mnemonic: &'static str,
    /// Operand name.
    pub field: &'static str,
    /// The offending value, printed.
    pub value: String,
    /// Field width.
    pub bits: u32,
}

/// A word that is no valid instruction.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The opcode byte names no instruction.
    #[error("unknown opcode 0x{0:02x}")]
    UnknownOpcode(u8),
    /// An operand field holds an invalid value.
    #[error("{mnemonic}: invalid value 0x{raw:x} in operand `{field}`")]
    BadField {
        mnemonic: &'static str,
        field: &'static str,
        raw: u64,
    },
    /// Reserved bits (past the last operand) are not zero.
    #[error("{mnemonic}: reserved bits {from}..128 are not zero")]
    Reserved { mnemonic: &'static str, from: u32 },
}

type Bits = BitArray<[u64; 2], Lsb0>;

/// Packs operands into a word, in table order.
pub(crate) struct Writer {
    bits: Bits,
    pos: usize,
    mnemonic: &'static str,
}

impl Writer {
    pub(crate) fn new(opcode: u8, mnemonic: &'static str) -> Writer {
        let mut bits = Bits::ZERO;
        bits[..OPCODE_BITS as usize].store_le(opcode);
        Writer {
            bits,
            pos: OPCODE_BITS as usize,
            mnemonic,
        }
    }

    pub(crate) fn put<T: Operand + std::fmt::Debug>(
        &mut self,
        field: &'static str,
        v: T,
        bits: u32,
    ) -> Result<(), EncodeError> {
        let raw = v.to_raw(bits).ok_or_else(|| EncodeError {
            mnemonic: self.mnemonic,
            field,
            value: format!("{v:?}"),
            bits,
        })?;
        let end = self.pos + bits as usize;
        self.bits[self.pos..end].store_le(raw);
        self.pos = end;
        Ok(())
    }

    pub(crate) fn finish(self) -> Word {
        let [lo, hi] = self.bits.into_inner();
        Word(lo as u128 | ((hi as u128) << 64))
    }
}

/// Unpacks operands from a word, in table order.
pub(crate) struct Reader {
    bits: Bits,
    pos: usize,
    pub(crate) mnemonic: &'static str,
}

impl Reader {
    pub(crate) fn new(w: Word) -> Reader {
        Reader {
            bits: BitArray::new([w.0 as u64, (w.0 >> 64) as u64]),
            pos: OPCODE_BITS as usize,
            mnemonic: "?",
        }
    }

    pub(crate) fn opcode(&self) -> u8 {
        self.bits[..OPCODE_BITS as usize].load_le()
    }

    pub(crate) fn get<T: Operand>(
        &mut self,
        field: &'static str,
        bits: u32,
    ) -> Result<T, DecodeError> {
        let end = self.pos + bits as usize;
        let raw: u64 = self.bits[self.pos..end].load_le();
        self.pos = end;
        T::from_raw(raw, bits).ok_or(DecodeError::BadField {
            mnemonic: self.mnemonic,
            field,
            raw,
        })
    }

    pub(crate) fn finish(self) -> Result<(), DecodeError> {
        if self.bits[self.pos..].any() {
            return Err(DecodeError::Reserved {
                mnemonic: self.mnemonic,
                from: self.pos as u32,
            });
        }
        Ok(())
    }
}
