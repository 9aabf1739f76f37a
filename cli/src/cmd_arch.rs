//! `systole arch list | show`, and the shared `--arch PRESET|FILE [--set K=V ...]` helper that
//! every subcommand taking an architecture uses ([`ArchArgs`], [`resolve_arch`]).

use crate::{Outcome, UserError};
use arch::{ArchConfig, PRESETS};
use clap::{Args, Subcommand};

/// `--arch PRESET|FILE` plus repeated `--set K=V`: flatten this into a subcommand's arguments.
#[derive(Args, Clone, Debug)]
pub struct ArchArgs {
    /// Architecture: a preset name (see `systole arch list`) or a JSON file.
    #[arg(long, value_name = "PRESET|FILE")]
    pub arch: String,
    /// Override a config field by dotted path, e.g. `--set mxu.rows=256` (repeatable).
    #[arg(long = "set", value_name = "K=V")]
    pub set: Vec<String>,
}

impl ArchArgs {
    /// The resolved, validated config (a bad name, path, override or config is a user error).
    #[allow(dead_code)] // Shared helper: rtl, run, sweep and compile flatten ArchArgs.
    pub fn resolve(&self) -> anyhow::Result<ArchConfig> {
        resolve_arch(&self.arch, &self.set)
    }
}

/// Resolves a preset name or JSON file plus overrides; errors become [`UserError`] (exit 2).
pub fn resolve_arch(name_or_path: &str, set: &[String]) -> anyhow::Result<ArchConfig> {
    ArchConfig::resolve(name_or_path, set).map_err(|e| anyhow::Error::new(UserError(e.to_string())))
}

/// `systole arch ...`.
#[derive(Args)]
pub struct ArchCmd {
    #[command(subcommand)]
    cmd: ArchSub,
}

#[derive(Subcommand)]
enum ArchSub {
    /// List the built-in presets.
    List,
    /// Print a preset or JSON file, with overrides applied, as JSON.
    Show {
        /// Preset name or JSON file.
        #[arg(value_name = "PRESET|FILE")]
        name: String,
        /// Override a config field by dotted path, e.g. `--set mxu.rows=256` (repeatable).
        #[arg(long = "set", value_name = "K=V")]
        set: Vec<String>,
    },
}

/// Runs `systole arch ...`.
pub fn run(a: ArchCmd) -> anyhow::Result<Outcome> {
    match a.cmd {
        ArchSub::List => {
            println!(
                "{:<10} {:>5} {:>6} {:>10} {:>9} {:>10}  description",
                "name", "cores", "mxus", "mxu", "mhz", "peak TOPS"
            );
            for (name, _) in PRESETS {
                let c = ArchConfig::preset(name)
                    .map_err(|e| anyhow::anyhow!("built-in preset is broken: {e}"))?;
                println!(
                    "{:<10} {:>5} {:>6} {:>10} {:>9} {:>10.3}  {}",
                    c.name,
                    c.cores_per_chip,
                    c.mxu.count,
                    format!("{}x{} {}", c.mxu.rows, c.mxu.cols, c.mxu.dtype.name()),
                    c.clock_mhz,
                    c.peak_ops_per_second() / 1e12,
                    c.description
                );
            }
        }
        ArchSub::Show { name, set } => {
            let c = resolve_arch(&name, &set)?;
            print!("{}", c.to_json());
        }
    }
    Ok(Outcome::Ok)
}
