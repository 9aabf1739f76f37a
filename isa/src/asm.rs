//! The assembler: text → [`Program`].
//!
//! Syntax, one statement per line (`;` starts a comment):
//! ```text
//! .region "name" SPACE ADDR SIZE        named buffer of the memory map
//! .dma N len=BYTES dims=[(COUNT,SRC_STRIDE,DST_STRIDE),...]   descriptor N (in order from 0)
//! .data SPACE ADDR HEXBYTES|-           initial memory contents
//! .hlo "name"  /  .hlo -                following instructions come from HLO `name` / none
//! label:                                names the next instruction
//! mnemonic POSITIONAL, ..., key=value, ...
//! ```
//! Errors carry the line and column (1-based) of the offending token.

use crate::operand::{parse_int, Operand, ParseCtx, Space};
use crate::program::{DataSegment, DmaDesc, DmaDim, Program, Region, SymbolRange};
use crate::table::{Inst, Opcode};

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

/// Splits `s` (starting at column `col0`) at commas outside brackets; yields (col, trimmed).
fn split_operands(s: &str, col0: usize) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let bytes = s.as_bytes();
    for i in 0..=bytes.len() {
        let c = bytes.get(i).copied();
        match c {
            Some(b'[') | Some(b'(') => depth += 1,
            Some(b']') | Some(b')') => depth -= 1,
            Some(b',') | None if depth <= 0 => {
                let piece = &s[start..i];
                let lead = piece.len() - piece.trim_start().len();
                out.push((col0 + start + lead, piece.trim()));
                start = i + 1;
            }
            _ => {}
        }
    }
    out
}

fn is_ident(s: &str) -> bool {
    let mut ch = s.chars();
    matches!(ch.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '.')
        && ch.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// Strips a `;` comment (outside string quotes).
fn strip_comment(line: &str) -> &str {
    let mut in_str = false;
    let mut esc = false;
    for (i, c) in line.char_indices() {
        match c {
            _ if esc => esc = false,
            '\\' if in_str => esc = true,
            '"' => in_str = !in_str,
            ';' if !in_str => return &line[..i],
            _ => {}
        }
    }
    line
}

/// Quotes a string for the text form (`\\`, `\"`, `\n`, `\r`, `\t`, `\xNN` escapes).
pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Parses a quoted string at the start of `s`; returns it and the rest.
fn unquote(s: &str) -> Result<(String, &str), String> {
    let body = s.strip_prefix('"').ok_or("expected a quoted string")?;
    let mut out = String::new();
    let mut it = body.char_indices();
    while let Some((i, c)) = it.next() {
        match c {
            '"' => return Ok((out, &body[i + 1..])),
            '\\' => match it.next() {
                Some((_, '\\')) => out.push('\\'),
                Some((_, '"')) => out.push('"'),
                Some((_, 'n')) => out.push('\n'),
                Some((_, 'r')) => out.push('\r'),
                Some((_, 't')) => out.push('\t'),
                Some((j, 'x')) => {
                    let hex = body.get(j + 1..j + 3).ok_or("bad \\x escape")?;
                    let v = u8::from_str_radix(hex, 16).map_err(|_| "bad \\x escape")?;
                    out.push(v as char);
                    it.next();
                    it.next();
                }
                _ => return Err("unknown escape in string".into()),
            },
            c => out.push(c),
        }
    }
    Err("unterminated string".into())
}

struct Line<'a> {
    no: usize,
    raw: &'a str,
}

impl Line<'_> {
    fn err(&self, col: usize, msg: impl Into<String>) -> AsmError {
        AsmError {
            line: self.no,
            col,
            msg: msg.into(),
            text: self.raw.to_string(),
        }
    }
}

/// Column (1-based) of `sub` within `line`, when `sub` is a slice of it.
fn col_of(line: &str, sub: &str) -> usize {
    (sub.as_ptr() as usize).saturating_sub(line.as_ptr() as usize) + 1
}

/// Splits a statement into an optional label and the rest.
fn split_label(body: &str) -> (Option<&str>, &str) {
    let t = body.trim_start();
    let first_end = t.find(char::is_whitespace).unwrap_or(t.len());
    let first = &t[..first_end];
    if let Some(l) = first.strip_suffix(':') {
        if is_ident(l) {
            return (Some(l), &t[first_end..]);
        }
    }
    (None, t)
}

/// Assembles program text. Errors carry line and column.
pub fn assemble(text: &str) -> Result<Program, AsmError> {
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
        let inst = Inst::from_tokens(op, &mut toks, &ctx).map_err(|e| l.err(e.col, e.msg))?;
        if let Err(e) = inst.encode() {
            return Err(l.err(col, e.to_string()));
        }
        if let Err(e) = inst.check_types() {
            return Err(l.err(col, e));
        }
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
        if let Inst::DmaCopy { desc, .. } = inst {
            if *desc as usize >= p.dma.len() {
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
    Ok(p)
}

/// An open `.hlo` range: where it started and the directive's position for errors.
struct OpenSym {
    start: u32,
    name: String,
    err: AsmError,
}

impl OpenSym {
    fn close(self, p: &mut Program) -> Result<(), AsmError> {
        let end = p.code.len() as u32;
        if self.start == end {
            return Err(AsmError {
                msg: format!(".hlo {} covers no instruction", quote(&self.name)),
                ..self.err
            });
        }
        p.symbols.push(SymbolRange {
            start: self.start,
            end,
            hlo: self.name,
        });
        Ok(())
    }
}

fn directive(
    p: &mut Program,
    l: &Line,
    rest: &str,
    open_sym: &mut Option<OpenSym>,
) -> Result<(), AsmError> {
    let name_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..name_end];
    let args = rest[name_end..].trim_start();
    let acol = col_of(l.raw, args);
    match name {
        ".hlo" => {
            let pc = p.code.len() as u32;
            if let Some(o) = open_sym.take() {
                o.close(p)?;
            }
            if args == "-" {
                return Ok(());
            }
            let (s, tail) = unquote(args).map_err(|m| l.err(acol, m))?;
            if !tail.trim().is_empty() {
                return Err(l.err(col_of(l.raw, tail.trim()), "unexpected text after the name"));
            }
            if s.is_empty() {
                return Err(l.err(acol, "empty HLO name"));
            }
            *open_sym = Some(OpenSym {
                start: pc,
                name: s,
                err: l.err(col_of(l.raw, rest), ""),
            });
        }
        ".region" => {
            let (rname, tail) = unquote(args).map_err(|m| l.err(acol, m))?;
            let f: Vec<&str> = tail.split_whitespace().collect();
            if f.len() != 3 {
                return Err(l.err(acol, ".region expects \"NAME\" SPACE ADDR SIZE"));
            }
            let space = parse_space(l, f[0])?;
            let addr = parse_u64(l, f[1])?;
            let size = parse_u64(l, f[2])?;
            if rname.is_empty() {
                return Err(l.err(acol, "empty region name"));
            }
            if p.region(&rname).is_some() {
                return Err(l.err(acol, format!("region {} is defined twice", quote(&rname))));
            }
            p.regions.push(Region {
                name: rname,
                space,
                addr,
                size,
            });
        }
        ".data" => {
            let f: Vec<&str> = args.split_whitespace().collect();
            if f.len() != 3 {
                return Err(l.err(acol, ".data expects SPACE ADDR HEXBYTES (or - for none)"));
            }
            let space = parse_space(l, f[0])?;
            let addr = parse_u64(l, f[1])?;
            let bytes = if f[2] == "-" {
                Vec::new()
            } else {
                parse_hex(f[2]).map_err(|m| l.err(col_of(l.raw, f[2]), m))?
            };
            p.data.push(DataSegment { space, addr, bytes });
        }
        ".dma" => {
            let f: Vec<&str> = args.splitn(2, char::is_whitespace).collect();
            let idx = parse_u64(l, f[0])?;
            if idx != p.dma.len() as u64 {
                return Err(l.err(
                    acol,
                    format!(
                        ".dma {idx}: descriptors must be numbered in order, expected {}",
                        p.dma.len()
                    ),
                ));
            }
            let spec: String = f.get(1).copied().unwrap_or("").split_whitespace().collect();
            let desc = parse_dma(&spec).map_err(|m| l.err(acol, format!(".dma: {m}")))?;
            p.dma.push(desc);
        }
        _ => {
            return Err(l.err(
                col_of(l.raw, name),
                format!("unknown directive `{name}` (expected .region, .dma, .data or .hlo)"),
            ))
        }
    }
    Ok(())
}

fn parse_space(l: &Line, s: &str) -> Result<Space, AsmError> {
    Space::from_name(s).ok_or_else(|| {
        l.err(
            col_of(l.raw, s),
            format!("unknown memory space `{s}` (expected hbm or vmem)"),
        )
    })
}

fn parse_u64(l: &Line, s: &str) -> Result<u64, AsmError> {
    parse_int(s)
        .and_then(|v| u64::try_from(v).map_err(|_| format!("`{s}` is out of range")))
        .map_err(|m| l.err(col_of(l.raw, s), m))
}

fn parse_hex(s: &str) -> Result<Vec<u8>, String> {
    if let Some(c) = s.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(format!("bad hex digit `{c}` in data"));
    }
    if !s.len().is_multiple_of(2) {
        return Err("hex data needs an even number of digits".into());
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&s[i..i + 2], 16)
                .map_err(|_| format!("bad hex byte `{}`", &s[i..i + 2]))
        })
        .collect()
}

/// Parses `len=N` or `len=N,dims=[(c,s,d),...]` / `len=Ndims=[...]` (whitespace removed).
fn parse_dma(spec: &str) -> Result<DmaDesc, String> {
    let rest = spec.strip_prefix("len=").ok_or("expected len=BYTES")?;
    let (len_s, dims_s) = match rest.find("dims=") {
        Some(i) => (rest[..i].trim_end_matches(','), Some(&rest[i + 5..])),
        None => (rest, None),
    };
    let len =
        u32::try_from(parse_int(len_s)?).map_err(|_| format!("len `{len_s}` is out of range"))?;
    let mut dims = Vec::new();
    if let Some(d) = dims_s {
        let inner = d
            .strip_prefix('[')
            .and_then(|x| x.strip_suffix(']'))
            .ok_or("expected dims=[(COUNT,SRC_STRIDE,DST_STRIDE),...]")?;
        if !inner.is_empty() {
            for t in inner.split("),") {
                let t = t.trim_start_matches('(').trim_end_matches(')');
                let v: Vec<&str> = t.split(',').collect();
                if v.len() != 3 {
                    return Err(format!(
                        "dimension `({t})` needs 3 numbers: count, src_stride, dst_stride"
                    ));
                }
                let count = u32::try_from(parse_int(v[0])?)
                    .map_err(|_| "count out of range".to_string())?;
                let src_stride = i64::try_from(parse_int(v[1])?)
                    .map_err(|_| "stride out of range".to_string())?;
                let dst_stride = i64::try_from(parse_int(v[2])?)
                    .map_err(|_| "stride out of range".to_string())?;
                dims.push(DmaDim {
                    count,
                    src_stride,
                    dst_stride,
                });
            }
        }
    }
    let d = DmaDesc { len, dims };
    if d.len == 0 {
        return Err("len must be >= 1".into());
    }
    if d.dims.len() > crate::program::MAX_DMA_DIMS {
        return Err(format!(
            "{} dimensions, at most {}",
            d.dims.len(),
            crate::program::MAX_DMA_DIMS
        ));
    }
    if d.dims.iter().any(|x| x.count == 0) {
        return Err("every count must be >= 1".into());
    }
    Ok(d)
}
