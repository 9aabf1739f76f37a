//! `systole check` and `systole fmt`: parse, verify and print HLO text.

use crate::{Outcome, UserError};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct CheckArgs {
    /// HLO text files to parse and verify.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

#[derive(Args)]
pub struct FmtArgs {
    /// HLO text file to print in canonical form.
    pub file: PathBuf,
    /// Write the canonical text back to the file instead of stdout.
    #[arg(short = 'w', long)]
    pub write: bool,
    /// Exit 1 if the file is not already in canonical form (prints nothing).
    #[arg(long, conflicts_with = "write")]
    pub check: bool,
}

/// Reads `path` as UTF-8 text; a missing or unreadable file is a user error.
pub fn read_source(path: &Path) -> anyhow::Result<String> {
    crate::bounded::read_text(path)
}

/// Parses and verifies `path`; errors are rendered as FILE:LINE:COL with the line and a caret.
pub fn load_verified(path: &Path) -> anyhow::Result<(String, hlo::VerifiedModule)> {
    let src = read_source(path)?;
    let file = path.display().to_string();
    let module = hlo::parse(&src).map_err(|e| UserError(e.render(&file, &src)))?;
    let module = hlo::verified(module).map_err(|e| UserError(e.render(&file, &src)))?;
    Ok((src, module))
}

pub fn check(a: CheckArgs) -> anyhow::Result<Outcome> {
    let mut failed = String::new();
    for f in &a.files {
        match load_verified(f) {
            Ok((_, m)) => {
                let n: usize = m.comps.values().map(|c| c.insts.len()).sum();
                println!(
                    "{}: ok ({} computations, {} instructions)",
                    f.display(),
                    m.comps.len(),
                    n
                );
            }
            Err(e) => {
                failed.push_str(e.to_string().trim_end());
                failed.push('\n');
            }
        }
    }
    if failed.is_empty() {
        Ok(Outcome::Ok)
    } else {
        Err(UserError(failed.trim_end().to_string()).into())
    }
}

pub fn fmt(a: FmtArgs) -> anyhow::Result<Outcome> {
    let (src, module) = load_verified(&a.file)?;
    let text = hlo::print(&module);
    if a.check {
        return Ok(if text == src {
            Outcome::Ok
        } else {
            Outcome::CheckFailed
        });
    }
    if a.write {
        std::fs::write(&a.file, &text)
            .map_err(|e| UserError(format!("{}: error: cannot write: {e}", a.file.display())))?;
    } else {
        print!("{text}");
    }
    Ok(Outcome::Ok)
}
