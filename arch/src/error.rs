//! Errors of the arch crate. Every message names what was wrong and where.

use thiserror::Error;

/// An error loading, overriding or validating an [`crate::ArchConfig`].
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ArchError {
    /// A file could not be read or written.
    #[error("{path}: {msg}")]
    Io { path: String, msg: String },
    /// JSON that does not parse or does not match the config's shape.
    #[error("{origin}: {msg}")]
    Json { origin: String, msg: String },
    /// Neither a preset name nor an existing file.
    #[error("unknown arch `{name}`: not a preset ({available}) and no such file")]
    UnknownPreset { name: String, available: String },
    /// An override that is not of the form `path=value`.
    #[error("bad override `{text}`: expected PATH=VALUE, e.g. mxu.rows=256")]
    OverrideSyntax { text: String },
    /// An override path that names no field.
    #[error("unknown config key `{path}`{hint}")]
    UnknownKey { path: String, hint: String },
    /// An override value that does not fit the field.
    #[error("bad value for `{path}`: {msg}")]
    BadValue { path: String, msg: String },
    /// The config is well-formed but describes impossible or unsupported hardware.
    #[error("invalid arch config `{name}`:\n  - {}", errors.join("\n  - "))]
    Invalid { name: String, errors: Vec<String> },
}
