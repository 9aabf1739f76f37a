//! Lexical helpers of the assembler: comments, labels, operand splitting, quoted strings,
//! and source positions.

use super::AsmError;

/// Splits `s` (starting at column `col0`) at commas outside brackets; yields (col, trimmed).
pub(super) fn split_operands(s: &str, col0: usize) -> Vec<(usize, &str)> {
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

pub(super) fn is_ident(s: &str) -> bool {
    let mut ch = s.chars();
    matches!(ch.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '.')
        && ch.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// Strips a `;` comment (outside string quotes).
pub(super) fn strip_comment(line: &str) -> &str {
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
pub(super) fn unquote(s: &str) -> Result<(String, &str), String> {
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

pub(super) struct Line<'a> {
    pub(super) no: usize,
    pub(super) raw: &'a str,
}

impl Line<'_> {
    pub(super) fn err(&self, col: usize, msg: impl Into<String>) -> AsmError {
        AsmError {
            line: self.no,
            col,
            msg: msg.into(),
            text: self.raw.to_string(),
        }
    }
}

/// Column (1-based) of `sub` within `line`, when `sub` is a slice of it.
pub(super) fn col_of(line: &str, sub: &str) -> usize {
    (sub.as_ptr() as usize).saturating_sub(line.as_ptr() as usize) + 1
}

/// Splits a statement into an optional label and the rest.
pub(super) fn split_label(body: &str) -> (Option<&str>, &str) {
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
