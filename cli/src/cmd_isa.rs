//! `systole asm PROG.s -o PROG.bin` and `systole disasm PROG.bin`.

use crate::{Outcome, UserError};
use clap::Args;
use isa::disasm::{disasm_with, DisasmOptions};
use isa::Program;
use std::path::PathBuf;

fn user(msg: String) -> anyhow::Error {
    anyhow::Error::new(UserError(msg))
}

/// `systole asm`.
#[derive(Args)]
pub struct AsmArgs {
    /// Assembly source.
    #[arg(value_name = "PROG.s")]
    input: PathBuf,
    /// Output program file (default: the input with extension `.bin`).
    #[arg(short, long, value_name = "PROG.bin")]
    output: Option<PathBuf>,
    /// Also check the program against this architecture (preset or JSON file): MXU indices,
    /// tile sizes and modes, operand constraints, data and regions inside their memories.
    #[arg(long, value_name = "PRESET|FILE")]
    arch: Option<String>,
    /// Override an arch field for the check, e.g. `--set mxu.rows=16` (repeatable).
    #[arg(long = "set", value_name = "K=V", requires = "arch")]
    set: Vec<String>,
}

/// `systole disasm`.
#[derive(Args)]
pub struct DisasmArgs {
    /// Program file written by `systole asm` or `systole compile`.
    #[arg(value_name = "PROG.bin")]
    input: PathBuf,
    /// Write the text here instead of standard output.
    #[arg(short, long, value_name = "PROG.s")]
    output: Option<PathBuf>,
    /// Comment every instruction with its index.
    #[arg(long)]
    pcs: bool,
    /// Comment every instruction with its encoded 128-bit word.
    #[arg(long)]
    words: bool,
}

/// Assembles a text file into a program file.
pub fn asm(a: AsmArgs) -> anyhow::Result<Outcome> {
    let name = a.input.display().to_string();
    let text = crate::bounded::read_text(&a.input)?;
    let (prog, lines) = isa::asm::assemble_located(&text).map_err(|e| user(e.render(&name)))?;
    let out = a.output.unwrap_or_else(|| a.input.with_extension("bin"));
    crate::bounded::check_output(&out)?;
    if let Some(arch) = &a.arch {
        let cfg = crate::cmd_arch::resolve_arch(arch, &a.set)?;
        let errors: Vec<String> = prog
            .fit_errors(&cfg)
            .into_iter()
            .map(|(pc, msg)| match pc.and_then(|pc| lines.get(pc)) {
                Some((line, col)) => format!(
                    "{name}:{line}:{col}: error: does not fit arch `{}`: {msg}",
                    cfg.name
                ),
                None => format!("{name}: error: does not fit arch `{}`: {msg}", cfg.name),
            })
            .collect();
        if !errors.is_empty() {
            return Err(user(errors.join("\n")));
        }
    }
    let bytes = prog.to_bytes().map_err(|e| user(format!("{name}: {e}")))?;
    std::fs::write(&out, bytes).map_err(|e| user(format!("{}: {e}", out.display())))?;
    eprintln!(
        "{}: {} instructions, {} DMA descriptors, {} data segments, {} regions, {} symbols",
        out.display(),
        prog.code.len(),
        prog.dma.len(),
        prog.data.len(),
        prog.regions.len(),
        prog.symbols.len()
    );
    Ok(Outcome::Ok)
}

/// Prints a program file as assembly text.
pub fn disasm(a: DisasmArgs) -> anyhow::Result<Outcome> {
    let name = a.input.display().to_string();
    let bytes = crate::bounded::read_bytes(&a.input)?;
    let prog = Program::from_bytes(&bytes).map_err(|e| user(format!("{name}: error: {e}")))?;
    if let Some(out) = &a.output {
        crate::bounded::check_output(out)?;
    }
    let text = disasm_with(
        &prog,
        DisasmOptions {
            pcs: a.pcs,
            words: a.words,
        },
    );
    match a.output {
        Some(out) => {
            std::fs::write(&out, text).map_err(|e| user(format!("{}: {e}", out.display())))?
        }
        None => print!("{text}"),
    }
    Ok(Outcome::Ok)
}
