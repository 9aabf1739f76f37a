//! Evaluation errors.
//!
//! Kernels return errors without naming the instruction; the interpreter wraps each kernel
//! error exactly once as [`EvalError::At`] ("in %add.3: ..."), so messages read
//! `in %while.2: in %add.3: not supported yet: ...` through nested computations.

/// Everything that can stop an evaluation. Never a panic: bad input is an error value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// An error raised while evaluating the named instruction.
    #[error("in %{inst}: {source}")]
    At {
        inst: String,
        #[source]
        source: Box<EvalError>,
    },
    /// A valid construct the evaluator does not implement yet.
    #[error("not supported yet: {0}")]
    Unsupported(String),
    /// The caller's input does not fit the module (argument count/shape/type, feed data).
    #[error("bad input: {0}")]
    BadInput(String),
    /// The module breaks a rule the verifier should have caught (ill-formed attributes,
    /// operand shapes that do not match the op).
    #[error("invalid module: {0}")]
    Invalid(String),
    /// Replicas wait on each other forever (or a receive has no sender).
    #[error("deadlock: {0}")]
    Deadlock(String),
    /// A custom-call whose target the registry does not know.
    #[error("not supported yet: unknown custom-call target \"{target}\"")]
    UnknownCustomCall { target: String },
    /// A resource limit of [`crate::EvalOptions`] was hit.
    #[error("resource limit: {0}")]
    Limit(String),
}

impl From<hlo::groups::GroupError> for EvalError {
    fn from(e: hlo::groups::GroupError) -> EvalError {
        match e {
            hlo::groups::GroupError::BadInput(m) => EvalError::BadInput(m),
            hlo::groups::GroupError::Invalid(m) => EvalError::Invalid(m),
        }
    }
}

impl EvalError {
    pub fn unsupported(msg: impl Into<String>) -> EvalError {
        EvalError::Unsupported(msg.into())
    }
    pub fn bad_input(msg: impl Into<String>) -> EvalError {
        EvalError::BadInput(msg.into())
    }
    pub fn invalid(msg: impl Into<String>) -> EvalError {
        EvalError::Invalid(msg.into())
    }
    /// `inst`'s attributes are not its opcode's view: [`hlo::View::Malformed`] names the missing
    /// or out-of-range attribute, and the message carries that name.
    pub fn malformed(inst: &hlo::Instruction) -> EvalError {
        EvalError::Invalid(malformed_message(inst.opcode, inst.view()))
    }
    pub fn limit(msg: impl Into<String>) -> EvalError {
        EvalError::Limit(msg.into())
    }
    /// Wraps this error as raised in instruction `inst`.
    pub fn at(self, inst: &str) -> EvalError {
        EvalError::At {
            inst: inst.to_string(),
            source: Box::new(self),
        }
    }
    /// The innermost error (below all [`EvalError::At`] wrappers).
    pub fn root_cause(&self) -> &EvalError {
        match self {
            EvalError::At { source, .. } => source.root_cause(),
            e => e,
        }
    }
    /// True if the root cause is an unknown custom-call target.
    pub fn is_unknown_custom_call(&self) -> bool {
        matches!(self.root_cause(), EvalError::UnknownCustomCall { .. })
    }
}

/// The message for attributes `view` that are not `op`'s own view: the name
/// [`hlo::View::Malformed`] gives the missing or out-of-range attribute.
pub(crate) fn malformed_message(op: hlo::Opcode, view: hlo::View<'_>) -> String {
    match view {
        hlo::View::Malformed(what) => format!("{op}: {what} missing or out of range"),
        _ => format!("{op}: attributes of another opcode"),
    }
}

/// Shorthand used by every kernel.
pub type EResult<T> = Result<T, EvalError>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel given an instruction whose view is [`hlo::View::Malformed`] reports the
    /// attribute the view names, not a message of its own.
    #[test]
    fn a_malformed_view_error_names_the_attribute() {
        let m = hlo::parse(
            "HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n  \
             ROOT r = f32[2] reverse(x), dimensions={0}\n}\n",
        )
        .unwrap();
        let c = m.entry();
        let h = c.root;
        let mut inst = c.insts[h].clone();
        let x = hlo::parse_literal_text("{1, 2}", &c.insts[inst.operands[0]].shape).unwrap();
        assert!(crate::movement::reverse(&inst, &[&x]).is_ok());
        inst.attrs = hlo::attrs::AttrBox::new(hlo::Attrs::default());
        let e = crate::movement::reverse(&inst, &[&x]).unwrap_err();
        assert_eq!(
            e,
            EvalError::Invalid("reverse: reverse dimensions missing or out of range".into())
        );
        // A kernel of the linear-algebra family (attributes, no instruction) names it too.
        let k = crate::linalg::KernelError::malformed(hlo::Opcode::Fft, &hlo::Attrs::default());
        assert!(k.to_string().contains("fft fft_type"), "{k}");
    }

    #[test]
    fn nested_messages_name_instructions() {
        let e = EvalError::unsupported("f8 arithmetic")
            .at("add.3")
            .at("while.2");
        assert_eq!(
            e.to_string(),
            "in %while.2: in %add.3: not supported yet: f8 arithmetic"
        );
        assert_eq!(e.root_cause(), &EvalError::unsupported("f8 arithmetic"));
    }
}
