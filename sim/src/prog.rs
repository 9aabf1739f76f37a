//! `Prog`: a validated `isa::Program` prepared for execution (symbol of every pc precomputed,
//! so a trace event finds its HLO name without a search).

use isa::{Inst, Program};

/// Marks "no symbol" in [`Prog::sym_of_pc`].
pub const NO_SYMBOL: u32 = u32::MAX;

/// A program ready to run.
#[derive(Clone, Debug)]
pub struct Prog {
    /// The program as given.
    pub program: Program,
    /// For each pc, the index into `program.symbols`, or [`NO_SYMBOL`].
    pub sym_of_pc: Vec<u32>,
}

impl Prog {
    /// Validates and prepares a program.
    pub fn new(program: Program) -> Result<Prog, isa::ProgramError> {
        program.validate()?;
        let mut sym_of_pc = vec![NO_SYMBOL; program.code.len()];
        for (i, s) in program.symbols.iter().enumerate() {
            for pc in s.start..s.end.min(program.code.len() as u32) {
                sym_of_pc[pc as usize] = i as u32;
            }
        }
        Ok(Prog { program, sym_of_pc })
    }

    /// The instructions.
    #[inline]
    pub fn code(&self) -> &[Inst] {
        &self.program.code
    }

    /// The HLO symbol of instruction `pc`, if any.
    #[inline]
    pub fn symbol(&self, pc: u32) -> Option<&str> {
        match self.sym_of_pc.get(pc as usize) {
            Some(&i) if i != NO_SYMBOL => Some(self.program.symbols[i as usize].hlo.as_str()),
            _ => None,
        }
    }
}
