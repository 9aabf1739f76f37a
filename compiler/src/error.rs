//! Compile errors: a user's module the compiler cannot take (with the HLO instruction's place),
//! kept apart from internal bugs.

use hlo::Span;
use thiserror::Error;

/// Why a module did not compile.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum CompileError {
    /// The module uses something the chip or the compiler does not do yet.
    #[error("not supported on chip yet: {what}")]
    NotSupported {
        /// What, e.g. `while` or `dot of s32`.
        what: String,
        /// The HLO instruction it came from ([`Span::NONE`] if none).
        span: Span,
    },
    /// The module does not fit the chip (VMEM, HBM, an ISA field).
    #[error("does not fit the chip: {what}")]
    TooLarge {
        /// What and by how much.
        what: String,
        /// The HLO instruction it came from.
        span: Span,
    },
    /// The module cannot run as asked (e.g. replica groups naming replicas the run does not
    /// have).
    #[error("invalid for this run: {what}")]
    Invalid {
        /// What is wrong.
        what: String,
        /// The HLO instruction it came from.
        span: Span,
    },
    /// A compiler bug: an invariant a pass relies on did not hold.
    #[error("internal compiler error: {0}")]
    Internal(String),
}

impl CompileError {
    /// A "not supported yet" error at `span`.
    pub fn unsupported(what: impl Into<String>, span: Span) -> CompileError {
        CompileError::NotSupported {
            what: what.into(),
            span,
        }
    }
    /// The HLO place of the error, if any.
    pub fn span(&self) -> Span {
        match self {
            CompileError::NotSupported { span, .. }
            | CompileError::TooLarge { span, .. }
            | CompileError::Invalid { span, .. } => *span,
            CompileError::Internal(_) => Span::NONE,
        }
    }
    /// `FILE:LINE:COL: error: ...` (or `FILE: error: ...` without a place).
    pub fn render(&self, file: &str) -> String {
        let s = self.span();
        if s.is_none() {
            format!("{file}: error: {self}")
        } else {
            format!("{file}:{}:{}: error: {self}", s.line, s.col)
        }
    }
}

/// Result of the compiler's functions.
pub type CResult<T> = Result<T, CompileError>;
