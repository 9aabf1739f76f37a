//! Architecture configuration: [`ArchConfig`], the one description of a chip and a pod.
//!
//! Invariants:
//! * Every hardware number of the project lives here (compiler, simulator and RTL generator all
//!   read an `ArchConfig`; none of them defines a hardware number of its own).
//! * A config handed out by [`ArchConfig::resolve`], [`ArchConfig::preset`],
//!   [`ArchConfig::from_json`] or [`ArchConfig::load`] has passed [`ArchConfig::validate`].
//! * Overrides (`--set mxu.rows=256`) work generically on the JSON value tree, so every field is
//!   overridable and a new field needs no override code.
//! * Presets are JSON files under `arch/presets/`, embedded at compile time; numbers that are
//!   estimates rather than public figures are listed in the preset's `guessed` list.

pub mod budget;
mod config;
mod error;
mod overrides;
mod presets;
mod table;
mod validate;

pub use budget::{Budget, BudgetError};
pub use config::*;
pub use error::ArchError;
pub use overrides::{apply_override, parse_override};
pub use presets::{preset_json, PRESETS};
pub use table::presets_markdown;
pub use validate::{MAX_ACC_ROWS, MAX_MXUS, MAX_MXU_DIM};

/// A JSON error placed as `ORIGIN:LINE:COL` (serde's " at line L column C" moved to the front).
pub fn json_error(origin: &str, e: &serde_json::Error) -> ArchError {
    let text = e.to_string();
    if e.line() == 0 {
        return ArchError::Json {
            origin: origin.to_string(),
            msg: text,
        };
    }
    let msg = match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    };
    ArchError::Json {
        origin: format!("{origin}:{}:{}", e.line(), e.column().max(1)),
        msg,
    }
}

/// Largest arch JSON file read (a config is a few kilobytes).
pub const MAX_ARCH_FILE_BYTES: u64 = 16 << 20;

impl ArchConfig {
    /// Parses and validates a config from JSON text; `origin` names the source in errors.
    pub fn from_json(text: &str, origin: &str) -> Result<ArchConfig, ArchError> {
        let cfg: ArchConfig = serde_json::from_str(text).map_err(|e| json_error(origin, &e))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Loads and validates a config from a JSON file.
    pub fn load(path: &std::path::Path) -> Result<ArchConfig, ArchError> {
        let io = |msg: String| ArchError::Io {
            path: path.display().to_string(),
            msg,
        };
        let len = std::fs::metadata(path)
            .map_err(|e| io(e.to_string()))?
            .len();
        if len > MAX_ARCH_FILE_BYTES {
            return Err(io(format!(
                "{len} bytes: an arch file is at most {MAX_ARCH_FILE_BYTES} bytes"
            )));
        }
        let bytes = std::fs::read(path).map_err(|e| io(e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let before = &e.as_bytes()[..at];
            let line = 1 + before.iter().filter(|&&c| c == b'\n').count();
            let start = before
                .iter()
                .rposition(|&c| c == b'\n')
                .map_or(0, |i| i + 1);
            let col = 1 + String::from_utf8_lossy(&before[start..]).chars().count();
            ArchError::Io {
                path: format!("{}:{line}:{col}", path.display()),
                msg: "invalid UTF-8".into(),
            }
        })?;
        Self::from_json(&text, &path.display().to_string())
    }

    /// Pretty JSON (stable field order), loadable again with [`ArchConfig::from_json`].
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("ArchConfig serializes");
        s.push('\n');
        s
    }

    /// Saves the config as pretty JSON.
    pub fn save(&self, path: &std::path::Path) -> Result<(), ArchError> {
        std::fs::write(path, self.to_json()).map_err(|e| ArchError::Io {
            path: path.display().to_string(),
            msg: e.to_string(),
        })
    }

    /// A built-in preset by name (`tpu-v1`, `tpu-v4`, `tpu-v5e`, `tpu-v5p`, `tpu-v6e`, `mini`).
    pub fn preset(name: &str) -> Result<ArchConfig, ArchError> {
        let text = preset_json(name).ok_or_else(|| ArchError::UnknownPreset {
            name: name.to_string(),
            available: PRESETS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        Self::from_json(text, &format!("preset {name}"))
    }

    /// The shared CLI helper: `--arch PRESET|FILE` plus repeated `--set k=v`.
    ///
    /// `name_or_path` is a preset name if one matches, else a JSON file path. Overrides are
    /// applied in order on the JSON tree, then the result is deserialized and validated.
    pub fn resolve<S: AsRef<str>>(
        name_or_path: &str,
        overrides: &[S],
    ) -> Result<ArchConfig, ArchError> {
        let base = if preset_json(name_or_path).is_some() {
            Self::preset(name_or_path)?
        } else {
            let p = std::path::Path::new(name_or_path);
            if !p.exists() {
                return Err(ArchError::UnknownPreset {
                    name: name_or_path.to_string(),
                    available: PRESETS
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
            Self::load(p)?
        };
        base.with_overrides(overrides)
    }

    /// Applies `k=v` overrides (dotted paths into the JSON tree) and re-validates.
    pub fn with_overrides<S: AsRef<str>>(&self, overrides: &[S]) -> Result<ArchConfig, ArchError> {
        if overrides.is_empty() {
            return Ok(self.clone());
        }
        let mut v = serde_json::to_value(self).expect("ArchConfig serializes");
        for o in overrides {
            let (path, value) = parse_override(o.as_ref())?;
            apply_override(&mut v, path, value)?;
        }
        let joined: Vec<&str> = overrides.iter().map(|s| s.as_ref()).collect();
        let cfg: ArchConfig = serde_json::from_value(v).map_err(|e| ArchError::Json {
            origin: format!("overrides {}", joined.join(" ")),
            msg: e.to_string(),
        })?;
        cfg.validate()?;
        Ok(cfg)
    }
}
