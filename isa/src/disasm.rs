//! The disassembler: [`Program`] → text that [`crate::asm::assemble`] reads back to the same
//! program. Branch targets print as labels `L<n>`; comments (`;`) carry optional extras.

use crate::asm::quote;
use crate::operand::FmtCtx;
use crate::program::Program;
use std::collections::BTreeSet;
use std::fmt::Write;

/// What to add as comments.
#[derive(Clone, Copy, Debug, Default)]
pub struct DisasmOptions {
    /// Instruction index before each instruction.
    pub pcs: bool,
    /// The encoded 128-bit word after each instruction.
    pub words: bool,
}

/// Program text (no comments).
pub fn disasm(p: &Program) -> String {
    disasm_with(p, DisasmOptions::default())
}

/// Program text with optional comments.
pub fn disasm_with(p: &Program, opts: DisasmOptions) -> String {
    let mut out = String::new();
    let n = p.code.len() as u32;
    for r in &p.regions {
        let _ = write!(
            out,
            ".region {} {} {} {}",
            quote(&r.name),
            r.space.name(),
            r.addr,
            r.size
        );
        if let Some(a) = &r.array {
            let _ = write!(out, " {}", a.text());
        }
        if let Some(io) = &r.io {
            let _ = write!(out, " io={}", io.text());
        }
        if let Some((from, to)) = r.live {
            let _ = write!(out, " live={from}..{to}");
        }
        out.push('\n');
    }
    for (i, d) in p.dma.iter().enumerate() {
        let dims: Vec<String> = d
            .dims
            .iter()
            .map(|x| format!("({},{},{})", x.count, x.src_stride, x.dst_stride))
            .collect();
        if dims.is_empty() {
            let _ = writeln!(out, ".dma {i} len={}", d.len);
        } else {
            let _ = writeln!(out, ".dma {i} len={} dims=[{}]", d.len, dims.join(","));
        }
    }
    for (i, x) in p.pats.iter().enumerate() {
        let _ = writeln!(out, ".pat {i} {}", x.text());
    }
    for d in &p.sems {
        let _ = writeln!(out, "{}", crate::asm::sem_directive(d));
    }
    for s in &p.data {
        let hex: String = if s.bytes.is_empty() {
            "-".into()
        } else {
            s.bytes.iter().map(|b| format!("{b:02x}")).collect()
        };
        let _ = writeln!(out, ".data {} {} {hex}", s.space.name(), s.addr);
    }
    let mut targets = BTreeSet::new();
    for inst in &p.code {
        let mut i = *inst;
        i.for_each_target(&mut |t| {
            if t.0 < n {
                targets.insert(t.0);
            }
        });
    }
    let ctx = FmtCtx {
        labels_below: Some(n),
    };
    let mut sym = p.symbols.iter().peekable();
    let mut open_end: Option<u32> = None;
    for (pc, inst) in p.code.iter().enumerate() {
        let pc = pc as u32;
        if open_end == Some(pc) {
            open_end = None;
            if sym.peek().is_none_or_start_ne(pc) {
                out.push_str(".hlo -\n");
            }
        }
        if let Some(s) = sym.peek() {
            if s.start == pc {
                let _ = writeln!(out, ".hlo {}", quote(&s.hlo));
                open_end = Some(s.end);
                sym.next();
            }
        }
        if targets.contains(&pc) {
            let _ = writeln!(out, "L{pc}:");
        }
        let text = inst.to_asm(&ctx);
        let mut comment = Vec::new();
        if opts.pcs {
            comment.push(format!("{pc}"));
        }
        if opts.words {
            match inst.encode() {
                Ok(w) => comment.push(format!("0x{w}")),
                Err(e) => comment.push(format!("unencodable: {e}")),
            }
        }
        if comment.is_empty() {
            let _ = writeln!(out, "    {text}");
        } else {
            let _ = writeln!(out, "    {text:<56} ; {}", comment.join(" "));
        }
    }
    out
}

trait PeekStart {
    fn is_none_or_start_ne(&self, pc: u32) -> bool;
}

impl PeekStart for Option<&&crate::program::SymbolRange> {
    fn is_none_or_start_ne(&self, pc: u32) -> bool {
        match self {
            None => true,
            Some(s) => s.start != pc,
        }
    }
}
