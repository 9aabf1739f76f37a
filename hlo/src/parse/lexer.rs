//! The scanner: a byte cursor over the HLO text with the small lexical helpers every part of
//! the parser uses (whitespace and comments, identifiers, integers, strings, balanced verbatim
//! values).
//!
//! Invariants: `pos` only moves forward and always sits on a UTF-8 character boundary (every
//! helper stops at ASCII bytes); errors carry the byte offset of the offending token and are
//! turned into 1-based line:col only when reported ([`Cursor::span_at`]). No helper recurses
//! without the nesting guard ([`MAX_DEPTH`]), so hostile input cannot overflow the stack.

use crate::diag::{Diagnostic, Span};

/// Deepest nesting of tuples, braces or parentheses the parser accepts.
pub const MAX_DEPTH: usize = 256;

/// A parse error at a byte offset (converted to line:col when the parse fails).
#[derive(Debug)]
pub struct PErr {
    pub offset: usize,
    pub message: String,
}

pub type PResult<T> = Result<T, PErr>;

/// Byte cursor over the source.
pub struct Cursor<'a> {
    pub text: &'a str,
    pub src: &'a [u8],
    pub pos: usize,
    /// Incremental line tracking for spans of successive positions: (offset, line, line start).
    line_cache: (usize, u32, usize),
    /// Reused bracket stack of [`Cursor::raw_value`].
    raw_stack: Vec<u8>,
}

#[inline]
pub fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

#[inline]
pub fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-'
}

impl<'a> Cursor<'a> {
    pub fn new(text: &'a str) -> Cursor<'a> {
        Cursor {
            text,
            src: text.as_bytes(),
            pos: 0,
            line_cache: (0, 1, 0),
            raw_stack: Vec::new(),
        }
    }

    /// An error at `offset`.
    pub fn err_at<T>(&self, offset: usize, message: impl Into<String>) -> PResult<T> {
        Err(PErr {
            offset,
            message: message.into(),
        })
    }

    /// An error "expected WHAT, found TOKEN" at the current (whitespace-skipped) position.
    pub fn expected<T>(&mut self, what: &str) -> PResult<T> {
        let _ = self.skip_ws();
        let found = self.describe_here();
        self.err_at(self.pos, format!("expected {what}, found {found}"))
    }

    /// A short description of the token at the cursor, for messages.
    pub fn describe_here(&self) -> String {
        let rest = &self.src[self.pos..];
        match rest.first() {
            None => "end of input".to_string(),
            Some(&b) if is_ident_char(b) || b == b'%' => {
                let n = rest
                    .iter()
                    .skip(1)
                    .take_while(|&&c| is_ident_char(c))
                    .count()
                    + 1;
                let n = n.min(60);
                format!("'{}'", String::from_utf8_lossy(&rest[..n]))
            }
            Some(b'\n') => "end of line".to_string(),
            Some(_) => {
                let c = self.text[self.pos..].chars().next().unwrap_or('?');
                format!("'{c}'")
            }
        }
    }

    /// Converts a byte offset to a 1-based line and column (columns count characters).
    pub fn span_at(&mut self, offset: usize) -> Span {
        let offset = offset.min(self.src.len());
        let (mut o, mut line, mut start) = self.line_cache;
        if offset < o {
            o = 0;
            line = 1;
            start = 0;
        }
        for (i, &b) in self.src[o..offset].iter().enumerate() {
            if b == b'\n' {
                line += 1;
                start = o + i + 1;
            }
        }
        self.line_cache = (offset, line, start);
        let col = self
            .text
            .get(start..offset)
            .map(|s| s.chars().count())
            .unwrap_or(offset - start);
        Span::new(line, col as u32 + 1)
    }

    /// Turns an internal error into a located diagnostic.
    pub fn diagnostic(&mut self, e: PErr) -> Diagnostic {
        let span = self.span_at(e.offset);
        Diagnostic::new(span, e.message)
    }

    pub fn at_end(&mut self) -> PResult<bool> {
        self.skip_ws()?;
        Ok(self.pos >= self.src.len())
    }

    /// Skips spaces, newlines, `/* ... */` and `// ...` comments.
    #[inline]
    pub fn skip_ws(&mut self) -> PResult<()> {
        loop {
            match self.src.get(self.pos) {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.pos += 1,
                Some(b'/') => match self.src.get(self.pos + 1) {
                    Some(b'*') => {
                        let start = self.pos;
                        match find(&self.src[self.pos + 2..], b"*/") {
                            Some(i) => self.pos += 2 + i + 2,
                            None => return self.err_at(start, "unterminated comment '/*'"),
                        }
                    }
                    Some(b'/') => {
                        while let Some(&b) = self.src.get(self.pos) {
                            if b == b'\n' {
                                break;
                            }
                            self.pos += 1;
                        }
                    }
                    _ => return Ok(()),
                },
                _ => return Ok(()),
            }
        }
    }

    /// The next significant byte, without consuming it.
    #[inline]
    pub fn peek(&mut self) -> PResult<Option<u8>> {
        self.skip_ws()?;
        Ok(self.src.get(self.pos).copied())
    }

    /// The byte at `pos + k` (no whitespace skipping).
    #[inline]
    pub fn byte_at(&self, k: usize) -> Option<u8> {
        self.src.get(self.pos + k).copied()
    }

    /// Consumes `b` if it is the next significant byte.
    #[inline]
    pub fn eat(&mut self, b: u8) -> PResult<bool> {
        if self.peek()? == Some(b) {
            self.pos += 1;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Consumes `b` or fails with "expected WHAT".
    #[inline]
    pub fn expect(&mut self, b: u8, what: &str) -> PResult<()> {
        if self.eat(b)? {
            Ok(())
        } else {
            self.expected(what)
        }
    }

    /// Like [`Cursor::expect`], building the description only on failure.
    #[inline]
    pub fn expect_with(&mut self, b: u8, what: impl FnOnce() -> String) -> PResult<()> {
        if self.eat(b)? {
            Ok(())
        } else {
            self.expected(&what())
        }
    }

    /// Consumes the exact text `s` (after whitespace) if present.
    pub fn eat_str(&mut self, s: &str) -> PResult<bool> {
        self.skip_ws()?;
        if self.src[self.pos..].starts_with(s.as_bytes()) {
            self.pos += s.len();
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Consumes the keyword `kw` if it is the next whole identifier.
    pub fn eat_keyword(&mut self, kw: &str) -> PResult<bool> {
        self.skip_ws()?;
        let rest = &self.src[self.pos..];
        if rest.starts_with(kw.as_bytes()) && !rest.get(kw.len()).is_some_and(|&b| is_ident_char(b))
        {
            self.pos += kw.len();
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// An identifier `[A-Za-z_][A-Za-z0-9_.-]*` (no `%`).
    #[inline]
    pub fn ident(&mut self, what: &str) -> PResult<&'a str> {
        self.skip_ws()?;
        match self.src.get(self.pos) {
            Some(&b) if is_ident_start(b) => Ok(self.take_ident_chars()),
            _ => self.expected(what),
        }
    }

    /// A name: an identifier, optionally prefixed by `%` (the `%` is not part of the name).
    /// After `%`, XLA also allows a leading digit.
    #[inline]
    pub fn name(&mut self, what: &str) -> PResult<&'a str> {
        self.skip_ws()?;
        match self.src.get(self.pos) {
            Some(b'%') if self.byte_at(1).is_some_and(is_ident_char) => {
                self.pos += 1;
                Ok(self.take_ident_chars())
            }
            Some(&b) if is_ident_start(b) => Ok(self.take_ident_chars()),
            _ => self.expected(what),
        }
    }

    #[inline]
    fn take_ident_chars(&mut self) -> &'a str {
        let start = self.pos;
        while self.src.get(self.pos).is_some_and(|&b| is_ident_char(b)) {
            self.pos += 1;
        }
        // Identifier characters are ASCII, so this slice is on char boundaries.
        &self.text[start..self.pos]
    }

    /// True if the next significant bytes start a name (`%x` or an identifier).
    pub fn at_name(&mut self) -> PResult<bool> {
        Ok(match self.peek()? {
            Some(b'%') => self.byte_at(1).is_some_and(is_ident_char),
            Some(b) => is_ident_start(b),
            None => false,
        })
    }

    /// A signed decimal integer fitting in i64.
    pub fn int(&mut self, what: &str) -> PResult<i64> {
        self.skip_ws()?;
        let start = self.pos;
        let neg = self.src.get(self.pos) == Some(&b'-');
        let digits_start = start + neg as usize;
        let mut p = digits_start;
        while self.src.get(p).is_some_and(|b| b.is_ascii_digit()) {
            p += 1;
        }
        if p == digits_start {
            return self.expected(what);
        }
        let s = &self.text[start..p];
        match s.parse::<i64>() {
            Ok(v) => {
                self.pos = p;
                Ok(v)
            }
            Err(_) => self.err_at(
                start,
                format!("integer {s} is out of range for a 64-bit integer"),
            ),
        }
    }

    /// A non-negative integer (sizes, indices).
    pub fn uint(&mut self, what: &str) -> PResult<i64> {
        self.skip_ws()?;
        let at = self.pos;
        let v = self.int(what)?;
        if v < 0 {
            return self.err_at(at, format!("expected {what}, found negative value {v}"));
        }
        Ok(v)
    }

    /// A `true`/`false` keyword.
    pub fn boolean(&mut self) -> PResult<bool> {
        if self.eat_keyword("true")? {
            Ok(true)
        } else if self.eat_keyword("false")? {
            Ok(false)
        } else {
            self.expected("'true' or 'false'")
        }
    }

    /// A double-quoted string with C escapes (`\"`, `\\`, `\n`, `\t`, `\xHH`, octal); returns
    /// its contents.
    pub fn string(&mut self, what: &str) -> PResult<String> {
        self.skip_ws()?;
        if self.src.get(self.pos) != Some(&b'"') {
            return self.expected(what);
        }
        let start = self.pos;
        let end = self.string_end(start)?;
        let body = &self.text[start + 1..end - 1];
        self.pos = end;
        if !body.contains('\\') {
            return Ok(body.to_string());
        }
        let mut out: Vec<u8> = Vec::with_capacity(body.len());
        let b = body.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] != b'\\' {
                out.push(b[i]);
                i += 1;
                continue;
            }
            i += 1;
            let Some(&c) = b.get(i) else { break };
            i += 1;
            match c {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'x' => {
                    let hex: String = b[i..]
                        .iter()
                        .take(2)
                        .take_while(|c| c.is_ascii_hexdigit())
                        .map(|&c| c as char)
                        .collect();
                    i += hex.len();
                    out.push(u8::from_str_radix(&hex, 16).unwrap_or(b'x'));
                }
                b'0'..=b'7' => {
                    let mut v = (c - b'0') as u32;
                    let mut k = 0;
                    while k < 2 && b.get(i).is_some_and(|d| (b'0'..=b'7').contains(d)) {
                        v = v * 8 + (b[i] - b'0') as u32;
                        i += 1;
                        k += 1;
                    }
                    out.push(v as u8);
                }
                other => out.push(other),
            }
        }
        match String::from_utf8(out) {
            Ok(s) => Ok(s),
            Err(_) => self.err_at(start, "string is not valid UTF-8 after unescaping"),
        }
    }

    /// The offset just past the closing quote of the string starting at `start`.
    fn string_end(&self, start: usize) -> PResult<usize> {
        let mut p = start + 1;
        while let Some(&b) = self.src.get(p) {
            match b {
                b'"' => return Ok(p + 1),
                b'\\' => p += 2,
                _ => p += 1,
            }
        }
        self.err_at(start, "unterminated string")
    }

    /// A verbatim attribute value: a string, or a run of text with balanced `{}`, `[]`, `()`
    /// (strings inside are skipped whole), ending before a `,` or newline at depth 0 or before
    /// an unbalanced closing bracket. Returns the text, trimmed.
    pub fn raw_value(&mut self, what: &str) -> PResult<&'a str> {
        self.skip_ws()?;
        let start = self.pos;
        let mut stack = std::mem::take(&mut self.raw_stack);
        stack.clear();
        let r = self.raw_scan(&mut stack, what);
        self.raw_stack = stack;
        let p = r?;
        let s = self.text[start..p].trim_end();
        if s.is_empty() {
            return self.expected(what);
        }
        self.pos = start + s.len();
        Ok(s)
    }

    /// Scans a verbatim value from the cursor; returns its end offset.
    fn raw_scan(&self, stack: &mut Vec<u8>, what: &str) -> PResult<usize> {
        let mut p = self.pos;
        while let Some(&b) = self.src.get(p) {
            match b {
                b'"' => {
                    p = self.string_end(p)?;
                    continue;
                }
                b'{' | b'[' | b'(' => {
                    if stack.len() >= MAX_DEPTH {
                        return self.err_at(p, format!("nesting deeper than {MAX_DEPTH} levels"));
                    }
                    stack.push(match b {
                        b'{' => b'}',
                        b'[' => b']',
                        _ => b')',
                    });
                }
                b'}' | b']' | b')' => match stack.last() {
                    Some(&c) if c == b => {
                        stack.pop();
                    }
                    Some(&c) => {
                        return self.err_at(
                            p,
                            format!("expected '{}', found '{}'", c as char, b as char),
                        );
                    }
                    None => break,
                },
                b',' | b'\n' if stack.is_empty() => break,
                b'\n' => {
                    let c = stack.last().copied().unwrap_or(b'}') as char;
                    return self.err_at(
                        p,
                        format!("expected '{c}' to close {what}, found end of line"),
                    );
                }
                _ => {}
            }
            p += 1;
        }
        if let Some(&c) = stack.last() {
            return self.err_at(
                p,
                format!(
                    "expected '{}' to close {what}, found end of input",
                    c as char
                ),
            );
        }
        Ok(p)
    }
}

/// Position of `needle` in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_one_based_and_count_chars() {
        let mut c = Cursor::new("ab\nçd x");
        assert_eq!(c.span_at(0), Span::new(1, 1));
        let s = c.span_at(6);
        assert_eq!((s.line, s.col), (2, 3));
        let s = c.span_at(1);
        assert_eq!((s.line, s.col), (1, 2));
    }

    #[test]
    fn comments_are_whitespace() {
        let mut c = Cursor::new("  /*index=5*/ // line\n x");
        assert_eq!(c.ident("x").unwrap(), "x");
        let mut c = Cursor::new("/* open");
        assert!(c.skip_ws().is_err());
    }

    #[test]
    fn raw_values_balance_brackets_and_strings() {
        let mut c = Cursor::new(r#"{op_name="a,}b" x={1,2}}, next"#);
        assert_eq!(c.raw_value("v").unwrap(), r#"{op_name="a,}b" x={1,2}}"#);
        let mut c = Cursor::new("PADDING_VALID\n");
        assert_eq!(c.raw_value("v").unwrap(), "PADDING_VALID");
        let mut c = Cursor::new("{(}");
        assert!(c.raw_value("v").is_err());
    }

    #[test]
    fn strings_unescape() {
        let mut c = Cursor::new(r#""a\"b\\c\n""#);
        assert_eq!(c.string("s").unwrap(), "a\"b\\c\n");
    }
}
