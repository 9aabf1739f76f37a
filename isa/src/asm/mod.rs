//! The assembler: text → [`Program`].
//!
//! Syntax, one statement per line (`;` starts a comment):
//! ```text
//! .region "name" SPACE ADDR SIZE [TYPE[DIMS]{LAYOUT}] [io=PLACE] [live=FROM..TO]
//!                                       named buffer of the memory map
//! .dma N len=BYTES dims=[(COUNT,SRC_STRIDE,DST_STRIDE),...]   descriptor N (in order from 0)
//! .pat N OPERAND=[(COUNT,STRIDE),...] ...                     address pattern N (in order from 0)
//! .sem semN [wait=K] [signal=K] [shared]                       counted and/or chip-shared semaphore
//! .data SPACE ADDR HEXBYTES|-           initial memory contents
//! .hlo "name"  /  .hlo -                following instructions come from HLO `name` / none
//! label:                                names the next instruction
//! mnemonic POSITIONAL, ..., key=value, ...
//! ```
//! Errors carry the line and column (1-based) of the offending token.

mod directive;
pub use directive::sem_directive;
mod lex;

use crate::operand::{Operand, ParseCtx};
use crate::program::Program;
use crate::table::{Inst, Opcode};
use directive::{directive, OpenSym};
pub use lex::quote;
use lex::{col_of, is_ident, split_label, split_operands, strip_comment, Line};

/// An assembly error at a line and column (both 1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: {msg}")]
pub struct AsmError {
    /// Line number.
    pub line: usize,
    /// Column number.
    pub col: usize,
    /// What is wrong.
    pub msg: String,
    /// The source line, for rendering.
    pub text: String,
}

impl AsmError {
    /// `FILE:LINE:COL: error: MSG`, then the line and a caret under the column.
    pub fn render(&self, file: &str) -> String {
        let pad = " ".repeat(self.col.saturating_sub(1));
        format!(
            "{file}:{}:{}: error: {}\n  | {}\n  | {pad}^",
            self.line, self.col, self.msg, self.text
        )
    }
}

/// An error inside an operand list: column within the line and message.
#[derive(Debug)]
pub(crate) struct TokError {
    col: usize,
    msg: String,
}

/// The operand tokens of one instruction, consumed by the table-generated parser.
pub(crate) struct OperandTokens<'a> {
    mnemonic: &'static str,
    pos: Vec<(usize, &'a str)>,
    next_pos: usize,
    kws: Vec<(usize, &'a str, usize, &'a str, bool)>,
    end_col: usize,
}

impl<'a> OperandTokens<'a> {
    pub(crate) fn positional<T: Operand>(
        &mut self,
        name: &str,
        ctx: &ParseCtx,
    ) -> Result<T, TokError> {
        let Some(&(col, text)) = self.pos.get(self.next_pos) else {
            return Err(TokError {
                col: self.end_col,
                msg: format!("{}: missing operand `{name}`", self.mnemonic),
            });
        };
        self.next_pos += 1;
        T::parse_asm(text, ctx).map_err(|m| TokError {
            col,
            msg: format!("{}: operand `{name}`: {m}", self.mnemonic),
        })
    }

    pub(crate) fn no_more_positional(&self) -> Result<(), TokError> {
        match self.pos.get(self.next_pos) {
            Some(&(col, text)) => Err(TokError {
                col,
                msg: format!("{}: unexpected operand `{text}`", self.mnemonic),
            }),
            None => Ok(()),
        }
    }

    pub(crate) fn keyword<T: Operand>(
        &mut self,
        name: &str,
        ctx: &ParseCtx,
    ) -> Result<T, TokError> {
        let mut found: Option<(usize, &str)> = None;
        for kw in self.kws.iter_mut() {
            if kw.1 == name {
                if found.is_some() {
                    return Err(TokError {
                        col: kw.0,
                        msg: format!("{}: `{name}=` given twice", self.mnemonic),
                    });
                }
                kw.4 = true;
                found = Some((kw.2, kw.3));
            }
        }
        match found {
            Some((col, text)) => T::parse_asm(text, ctx).map_err(|m| TokError {
                col,
                msg: format!("{}: operand `{name}`: {m}", self.mnemonic),
            }),
            None => T::default_value().ok_or_else(|| TokError {
                col: self.end_col,
                msg: format!("{}: missing operand `{name}=`", self.mnemonic),
            }),
        }
    }

    pub(crate) fn no_more_keywords(&self) -> Result<(), TokError> {
        if let Some(kw) = self.kws.iter().find(|k| !k.4) {
            let op = Opcode::from_mnemonic(self.mnemonic).expect("known mnemonic");
            let expected: Vec<&str> = op
                .info()
                .fields
                .iter()
                .filter(|f| f.keyword)
                .map(|f| f.name)
                .collect();
            return Err(TokError {
                col: kw.0,
                msg: format!(
                    "{}: unknown operand `{}=` (expected: {})",
                    self.mnemonic,
                    kw.1,
                    if expected.is_empty() {
                        "none".to_string()
                    } else {
                        expected.join(", ")
                    }
                ),
            });
        }
        Ok(())
    }
}

/// Parses one instruction statement `rest` (starting at column `col` of line `l`).
fn parse_statement(l: &Line, rest: &str, col: usize, ctx: &ParseCtx) -> Result<Inst, AsmError> {
    let mn_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let mnemonic = &rest[..mn_end];
    let op = Opcode::from_mnemonic(mnemonic)
        .ok_or_else(|| l.err(col, format!("unknown mnemonic `{mnemonic}`")))?;
    let ops_str = &rest[mn_end..];
    let ops_col = col + mn_end;
    let mut toks = OperandTokens {
        mnemonic: op.mnemonic(),
        pos: Vec::new(),
        next_pos: 0,
        kws: Vec::new(),
        end_col: col + rest.len(),
    };
    if !ops_str.trim().is_empty() {
        for (c, t) in split_operands(ops_str, ops_col) {
            if t.is_empty() {
                return Err(l.err(c, "empty operand"));
            }
            match t.split_once('=') {
                Some((k, v)) if is_ident(k.trim()) => {
                    let vcol = c + t.len() - t[k.len() + 1..].trim_start().len();
                    toks.kws.push((c, k.trim(), vcol, v.trim(), false));
                }
                _ => toks.pos.push((c, t)),
            }
        }
    }
    let inst = Inst::from_tokens(op, &mut toks, ctx).map_err(|e| l.err(e.col, e.msg))?;
    if let Err(e) = inst.encode() {
        return Err(l.err(col, e.to_string()));
    }
    if let Err(e) = inst.check_types() {
        return Err(l.err(col, e));
    }
    Ok(inst)
}

/// Parses a single instruction (no labels: branch targets as `@N`; a `;` comment is allowed).
pub fn parse_inst(text: &str) -> Result<Inst, AsmError> {
    let l = Line { no: 1, raw: text };
    let rest = strip_comment(text).trim();
    if rest.is_empty() || rest.starts_with('.') {
        return Err(l.err(1, "expected an instruction"));
    }
    parse_statement(&l, rest, col_of(text, rest), &ParseCtx::default())
}

/// Assembles program text. Errors carry line and column.
pub fn assemble(text: &str) -> Result<Program, AsmError> {
    assemble_located(text).map(|(p, _)| p)
}

/// Assembles program text; also returns, per instruction, the (1-based) line and column of
/// its mnemonic, so later checks can point into the source.
pub fn assemble_located(text: &str) -> Result<(Program, Vec<(usize, usize)>), AsmError> {
    let lines: Vec<Line> = text
        .lines()
        .enumerate()
        .map(|(i, raw)| Line { no: i + 1, raw })
        .collect();

    // Pass 1: labels.
    let mut ctx = ParseCtx::default();
    let mut pc: u32 = 0;
    for l in &lines {
        let body = strip_comment(l.raw);
        let (label, rest) = split_label(body);
        if let Some(name) = label {
            if ctx.labels.insert(name.to_string(), pc).is_some() {
                return Err(l.err(col_of(l.raw, name), format!("label `{name}` defined twice")));
            }
        }
        let rest = rest.trim();
        if !rest.is_empty() && !rest.starts_with('.') {
            pc += 1;
        }
    }

    // Pass 2: statements.
    let mut p = Program::default();
    let mut inst_lines: Vec<(usize, usize)> = Vec::new(); // line index, column of mnemonic
    let mut open_sym: Option<OpenSym> = None;
    for (li, l) in lines.iter().enumerate() {
        let body = strip_comment(l.raw);
        let (_, rest) = split_label(body);
        let rest = rest.trim();
        if rest.is_empty() {
            continue;
        }
        let col = col_of(l.raw, rest);
        if rest.starts_with('.') {
            directive(&mut p, l, rest, &mut open_sym)?;
            continue;
        }
        let inst = parse_statement(l, rest, col, &ctx)?;
        p.code.push(inst);
        inst_lines.push((li, col));
    }
    if let Some(o) = open_sym.take() {
        o.close(&mut p)?;
    }

    // Cross-references known only at the end.
    let n = p.code.len() as u32;
    for (pc, inst) in p.code.iter().enumerate() {
        let (li, col) = inst_lines[pc];
        let mut bad = None;
        let mut i = *inst;
        i.for_each_target(&mut |t| {
            if t.0 >= n {
                bad = Some(format!(
                    "branch target {} is past the end ({n} instructions)",
                    t.0
                ));
            }
        });
        if let Some(pat) = inst.pat() {
            bad = match p.pats.get(pat.0 as usize) {
                None => Some(format!(
                    "pattern {} is not defined ({} .pat directives)",
                    pat.0,
                    p.pats.len()
                )),
                Some(x) => x.check_use(inst),
            };
        }
        if let Some(desc) = inst.dma_desc() {
            if desc as usize >= p.dma.len() {
                bad = Some(format!(
                    "DMA descriptor {desc} is not defined ({} .dma directives)",
                    p.dma.len()
                ));
            }
        }
        if let Some(msg) = bad {
            return Err(lines[li].err(col, msg));
        }
    }
    p.validate().map_err(|e| AsmError {
        line: 1,
        col: 1,
        msg: e.to_string(),
        text: lines.first().map(|l| l.raw.to_string()).unwrap_or_default(),
    })?;
    let located = inst_lines
        .into_iter()
        .map(|(li, col)| (lines[li].no, col))
        .collect();
    Ok((p, located))
}
