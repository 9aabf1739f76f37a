//! Helpers shared by the CLI's integration tests: the repository root and the fresh binary
//! (`CARGO_BIN_EXE_systole`), run from the root.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Runs `systole args...` from the repository root with `env` added.
pub fn systole_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_systole"));
    c.args(args).current_dir(root());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the systole binary runs")
}

/// Runs `systole args...` from the repository root.
pub fn systole(args: &[&str]) -> Output {
    systole_env(args, &[])
}

/// `(stdout, stderr)`.
pub fn out_err(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

/// stdout and stderr, one after the other.
pub fn all_text(o: &Output) -> String {
    let (out, err) = out_err(o);
    format!("{out}\n{err}")
}
