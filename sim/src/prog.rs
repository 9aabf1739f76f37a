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
    /// For each pc, whether some path of the control-flow graph leads from it to a `halt` (or
    /// past the last instruction, an error): a core at a pc without one can never halt.
    pub can_end: Vec<bool>,
    /// The HLO names of `program.symbols`, shared (race records hold them without copying).
    pub sym_names: Vec<std::sync::Arc<str>>,
}

/// [`Prog::can_end`]: backward search from every `halt` and from the end of the code over the
/// control-flow graph (a jump goes to its target; any other instruction with a target may go
/// there or on; `halt` stops).
fn can_end(code: &[Inst]) -> Vec<bool> {
    let n = code.len();
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n + 1];
    for (pc, inst) in code.iter().enumerate() {
        if matches!(inst, Inst::Halt {}) {
            continue;
        }
        let mut i = *inst;
        let mut targets = Vec::new();
        i.for_each_target(&mut |t| targets.push(t.0 as usize));
        if !matches!(inst, Inst::Jmp { .. }) {
            targets.push(pc + 1);
        }
        for t in targets {
            if t <= n {
                preds[t].push(pc as u32);
            }
        }
    }
    let mut ok = vec![false; n + 1];
    let mut work: Vec<usize> = (0..n)
        .filter(|&pc| matches!(code[pc], Inst::Halt {}))
        .collect();
    work.push(n);
    for &w in &work {
        ok[w] = true;
    }
    while let Some(x) = work.pop() {
        for &p in &preds[x] {
            if !ok[p as usize] {
                ok[p as usize] = true;
                work.push(p as usize);
            }
        }
    }
    ok.truncate(n);
    ok
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
        let can_end = can_end(&program.code);
        let sym_names = program
            .symbols
            .iter()
            .map(|s| s.hlo.as_str().into())
            .collect();
        Ok(Prog {
            program,
            sym_of_pc,
            can_end,
            sym_names,
        })
    }

    /// The instructions.
    #[inline]
    pub fn code(&self) -> &[Inst] {
        &self.program.code
    }

    /// Whether a core at `pc` can still reach a `halt` (see [`Prog::can_end`]).
    #[inline]
    pub fn can_end_from(&self, pc: u32) -> bool {
        self.can_end.get(pc as usize).copied().unwrap_or(true)
    }

    /// The HLO symbol of instruction `pc`, shared, if any.
    #[inline]
    pub fn symbol_arc(&self, pc: u32) -> Option<std::sync::Arc<str>> {
        match self.sym_of_pc.get(pc as usize) {
            Some(&i) if i != NO_SYMBOL => Some(self.sym_names[i as usize].clone()),
            _ => None,
        }
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
