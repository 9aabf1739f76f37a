//! Source spans and diagnostics.
//!
//! A [`Diagnostic`] is created where the problem is found and rendered late, against the
//! source text, as `FILE:LINE:COL: error: message`, the offending line and a caret.
//! Spans are location metadata, not part of a value: two spans always compare equal, so a
//! re-parsed module equals the original.

use std::fmt;

/// A 1-based line and column (in characters) of a source file; `line == 0` means "no source".
#[derive(Clone, Copy, Debug, Default)]
pub struct Span {
    pub line: u32,
    pub col: u32,
}

impl Span {
    /// No location (built instructions).
    pub const NONE: Span = Span { line: 0, col: 0 };
    pub fn new(line: u32, col: u32) -> Span {
        Span { line, col }
    }
    pub fn is_none(&self) -> bool {
        self.line == 0
    }
}

impl PartialEq for Span {
    fn eq(&self, _: &Span) -> bool {
        true
    }
}
impl Eq for Span {}

/// Consistent with `PartialEq`: every span hashes alike.
impl std::hash::Hash for Span {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

/// One error, located in the source when possible.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub message: String,
    pub span: Span,
    /// Extra lines (context, what was expected), printed after the caret.
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn new(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            message: message.into(),
            span,
            notes: Vec::new(),
        }
    }
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    /// Renders `FILE:LINE:COL: error: message`, the source line and a caret under the column.
    pub fn render(&self, file: &str, source: &str) -> String {
        let mut out = String::new();
        if self.span.is_none() {
            out.push_str(&format!("{file}: error: {}\n", self.message));
        } else {
            let (l, c) = (self.span.line, self.span.col);
            out.push_str(&format!("{file}:{l}:{c}: error: {}\n", self.message));
            if let Some(text) = source.lines().nth(l as usize - 1) {
                let shown: String = text.chars().take(300).collect();
                let prefix: String = text
                    .chars()
                    .take(c.saturating_sub(1) as usize)
                    .map(|ch| if ch == '\t' { '\t' } else { ' ' })
                    .collect();
                out.push_str(&format!("  {shown}\n  {prefix}^\n"));
            }
        }
        for n in &self.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.span.is_none() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}:{}: {}", self.span.line, self.span.col, self.message)
        }
    }
}

/// Errors of the HLO front end.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum Error {
    /// The text does not parse.
    #[error("parse error: {0}")]
    Parse(Diagnostic),
    /// The module parses but breaks a rule of the specification.
    #[error("verification failed: {}", .0.first().map(|d| d.to_string()).unwrap_or_default())]
    Verify(Vec<Diagnostic>),
    /// The builder was asked for something ill-formed.
    #[error("builder error: {0}")]
    Build(String),
}

impl Error {
    /// All diagnostics, rendered against the file for the user.
    pub fn render(&self, file: &str, source: &str) -> String {
        match self {
            Error::Parse(d) => d.render(file, source),
            Error::Verify(ds) => ds.iter().map(|d| d.render(file, source)).collect(),
            Error::Build(m) => format!("{file}: error: {m}\n"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_under_column() {
        let d = Diagnostic::new(Span::new(2, 5), "expected ')'");
        let r = d.render("m.hlo", "HloModule m\nabc defg\n");
        assert_eq!(r, "m.hlo:2:5: error: expected ')'\n  abc defg\n      ^\n");
    }
}
