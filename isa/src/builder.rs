//! [`Builder`]: emits a [`Program`] from code (a compiler's or a test's), with forward labels,
//! deduplicated DMA descriptors and `.hlo` symbol ranges.
//!
//! Invariant: [`Builder::finish`] returns a program that passed [`Program::validate`], with every
//! label-relative branch patched to its label's instruction index.

use crate::operand::{Space, Target};
use crate::program::{DataSegment, DmaDesc, Program, ProgramError, Region, SymbolRange};
use crate::table::Inst;

/// A branch destination, bound to an instruction index by [`Builder::bind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Label(u32);

/// Incrementally builds a [`Program`].
#[derive(Debug, Default)]
pub struct Builder {
    prog: Program,
    labels: Vec<Option<u32>>,
    fixups: Vec<(usize, Label)>,
    open_hlo: Option<(u32, String)>,
    errors: Vec<String>,
}

impl Builder {
    /// An empty program.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Index the next emitted instruction will get.
    pub fn pc(&self) -> u32 {
        self.prog.code.len() as u32
    }

    /// A new, unbound label.
    pub fn new_label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() as u32 - 1)
    }

    /// Binds `l` to the next instruction. Binding a label twice is an error at `finish`.
    pub fn bind(&mut self, l: Label) {
        let pc = self.pc();
        match self.labels.get_mut(l.0 as usize) {
            Some(slot @ None) => *slot = Some(pc),
            Some(Some(old)) => self
                .errors
                .push(format!("label {} bound twice (at {old} and {pc})", l.0)),
            None => self
                .errors
                .push(format!("label {} is not from this builder", l.0)),
        }
    }

    /// Appends an instruction; returns its index.
    pub fn emit(&mut self, i: Inst) -> u32 {
        self.prog.code.push(i);
        self.pc() - 1
    }

    /// The instruction at `pc` (already emitted), to attach a `signal=` to it later.
    pub fn inst_mut(&mut self, pc: u32) -> Option<&mut Inst> {
        self.prog.code.get_mut(pc as usize)
    }

    /// Appends a branch whose target operand is replaced by `l`'s index at `finish`.
    pub fn emit_branch(&mut self, i: Inst, l: Label) -> u32 {
        let mut has_target = false;
        let mut probe = i;
        probe.for_each_target(&mut |_| has_target = true);
        if !has_target {
            self.errors.push(format!(
                "emit_branch: `{}` has no branch target",
                i.mnemonic()
            ));
        }
        let pc = self.emit(i);
        self.fixups.push((pc as usize, l));
        pc
    }

    /// The index of descriptor `d`, adding it unless an identical one exists.
    pub fn dma_desc(&mut self, d: DmaDesc) -> u32 {
        if let Some(i) = self.prog.dma.iter().position(|x| *x == d) {
            return i as u32;
        }
        self.prog.dma.push(d);
        self.prog.dma.len() as u32 - 1
    }

    /// Declares how semaphore `d.sem` counts (the `.sem` directive): replaces an earlier
    /// declaration of the same semaphore.
    pub fn declare_sem(&mut self, d: crate::program::SemDecl) {
        match self.prog.sems.iter_mut().find(|x| x.sem == d.sem) {
            Some(x) => *x = d,
            None => {
                self.prog.sems.push(d);
                self.prog.sems.sort_by_key(|x| x.sem);
            }
        }
    }

    /// Adds a named region to the memory map.
    pub fn region(&mut self, name: &str, space: Space, addr: u64, size: u64) {
        self.prog
            .regions
            .push(Region::plain(name, space, addr, size));
    }

    /// Adds a region with everything known about it.
    pub fn region_full(&mut self, r: Region) {
        self.prog.regions.push(r);
    }

    /// Adds initial memory contents.
    pub fn data(&mut self, space: Space, addr: u64, bytes: Vec<u8>) {
        self.prog.data.push(DataSegment { space, addr, bytes });
    }

    /// Following instructions come from HLO instruction `name` (closes any open range).
    pub fn begin_hlo(&mut self, name: &str) {
        self.end_hlo();
        self.open_hlo = Some((self.pc(), name.to_string()));
    }

    /// The HLO instruction the next instructions are emitted for, if any.
    pub fn current_hlo(&self) -> Option<&str> {
        self.open_hlo.as_ref().map(|(_, n)| n.as_str())
    }

    /// Following instructions come from no HLO instruction. Empty ranges are dropped.
    pub fn end_hlo(&mut self) {
        if let Some((start, hlo)) = self.open_hlo.take() {
            if start < self.pc() {
                self.prog.symbols.push(SymbolRange {
                    start,
                    end: self.pc(),
                    hlo,
                });
            }
        }
    }

    /// Patches branches, closes the symbol range and validates.
    pub fn finish(mut self) -> Result<Program, ProgramError> {
        self.end_hlo();
        for (pc, l) in std::mem::take(&mut self.fixups) {
            match self.labels.get(l.0 as usize).copied().flatten() {
                Some(t) => self.prog.code[pc].for_each_target(&mut |x: &mut Target| x.0 = t),
                None => self
                    .errors
                    .push(format!("instruction {pc}: label {} is never bound", l.0)),
            }
        }
        if !self.errors.is_empty() {
            return Err(ProgramError::Invalid(self.errors));
        }
        self.prog.validate()?;
        Ok(self.prog)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operand::{MemRef, SReg, Sem};

    #[test]
    fn loop_with_forward_and_backward_labels() {
        let mut b = Builder::new();
        let top = b.new_label();
        let out = b.new_label();
        b.emit(Inst::SLi {
            rd: SReg(1),
            imm: 3,
        });
        b.bind(top);
        b.begin_hlo("loop.body");
        b.emit_branch(
            Inst::Beq {
                ra: SReg(1),
                rb: SReg(0),
                target: Target(0),
            },
            out,
        );
        b.emit(Inst::SAddi {
            rd: SReg(1),
            ra: SReg(1),
            imm: -1,
        });
        b.emit_branch(Inst::Jmp { target: Target(0) }, top);
        b.end_hlo();
        b.bind(out);
        let d = DmaDesc {
            len: 8,
            dims: vec![],
        };
        assert_eq!(b.dma_desc(d.clone()), 0);
        assert_eq!(b.dma_desc(d), 0);
        let m = MemRef {
            space: Space::Vmem,
            base: SReg(0),
            off: 0,
        };
        b.emit(Inst::DmaCopy {
            dst: m,
            src: m,
            desc: 0,
            wait: None,
            signal: Some(Sem(0)),
        });
        b.emit(Inst::Halt {});
        let p = b.finish().unwrap();
        assert_eq!(
            p.code[1],
            Inst::Beq {
                ra: SReg(1),
                rb: SReg(0),
                target: Target(4)
            }
        );
        assert_eq!(p.code[3], Inst::Jmp { target: Target(1) });
        assert_eq!(p.symbol_at(2), Some("loop.body"));
        assert_eq!(p.symbol_at(4), None);
        assert_eq!(crate::asm::assemble(&crate::disasm::disasm(&p)).unwrap(), p);
    }

    #[test]
    fn misuse_is_reported() {
        let mut b = Builder::new();
        let l = b.new_label();
        b.emit_branch(Inst::Jmp { target: Target(0) }, l);
        let e = b.finish().unwrap_err().to_string();
        assert!(e.contains("never bound"), "{e}");

        let mut b = Builder::new();
        let l = b.new_label();
        b.bind(l);
        b.emit_branch(Inst::Nop {}, l);
        b.bind(l);
        let e = b.finish().unwrap_err().to_string();
        assert!(
            e.contains("bound twice") && e.contains("no branch target"),
            "{e}"
        );
    }
}
