//! The error type of the numeric kernels.

use thiserror::Error;

/// Why a numeric kernel could not produce a value.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum KernelError {
    /// The input is malformed: attributes disagree with operand ranks or shapes, a declared
    /// result shape differs from the computed one, ...
    #[error("{0}")]
    Invalid(String),
    /// A well-formed input that systole does not evaluate yet (an element type, an option).
    #[error("not supported yet: {0}")]
    NotSupported(String),
}

impl KernelError {
    pub(crate) fn invalid(msg: impl Into<String>) -> KernelError {
        KernelError::Invalid(msg.into())
    }
    /// `attrs` do not make `op`'s view: the message names the attribute
    /// [`hlo::View::Malformed`] names.
    pub(crate) fn malformed(op: hlo::Opcode, attrs: &hlo::Attrs) -> KernelError {
        KernelError::Invalid(crate::error::malformed_message(
            op,
            hlo::View::of(op, attrs),
        ))
    }
    pub(crate) fn unsupported(msg: impl Into<String>) -> KernelError {
        KernelError::NotSupported(msg.into())
    }
}

impl From<KernelError> for crate::error::EvalError {
    fn from(e: KernelError) -> Self {
        use crate::error::EvalError;
        match e {
            KernelError::Invalid(m) => EvalError::Invalid(m),
            KernelError::NotSupported(m) => EvalError::Unsupported(m),
        }
    }
}
