//! The CLI's side of `docs/bounded.md`: the global budget flags (`--max-memory`,
//! `--max-work`), reading input files within the budget (invalid UTF-8 reported as
//! FILE:LINE:COL), checking output paths before a long run, eliding long tokens in messages,
//! and ending quietly when standard output is closed.

use crate::UserError;
use arch::Budget;
use clap::Args;
use std::path::Path;
use std::sync::OnceLock;

/// The budget flags every subcommand accepts.
#[derive(Args, Debug)]
pub struct BudgetArgs {
    /// Most memory one run may use for input-sized data (literals, evaluator values, random
    /// inputs, simulator memories, RTL sequences), e.g. 4G, 512M (default: half of the smaller
    /// of physical memory and `ulimit -v`).
    #[arg(long, global = true, value_name = "BYTES", value_parser = arch::budget::parse_bytes)]
    pub max_memory: Option<u64>,
    /// Most element operations the evaluator may perform (default: 4000000000).
    #[arg(long, global = true, value_name = "N")]
    pub max_work: Option<u64>,
}

static BUDGET: OnceLock<Budget> = OnceLock::new();

/// Sets the run's budget from the flags (once, before any subcommand runs).
pub fn init(a: &BudgetArgs) -> Result<(), String> {
    let mut b = Budget::default();
    if let Some(m) = a.max_memory {
        b.max_memory = m;
    }
    if let Some(w) = a.max_work {
        b.max_work = w;
    }
    BUDGET
        .set(b)
        .map_err(|_| "internal: budget set twice".to_string())
}

/// The run's budget.
pub fn budget() -> Budget {
    BUDGET.get().copied().unwrap_or_default()
}

/// A budget error as a user error (exit 2), prefixed with `where_`.
pub fn over(where_: &str, e: arch::BudgetError) -> anyhow::Error {
    anyhow::Error::new(UserError(format!("{where_}: error: {e}")))
}

/// Writing to a closed pipe (`systole eval F | head`) ends the process quietly, as for other
/// Unix tools, instead of a "Broken pipe" panic: SIGPIPE gets its default action back (Rust
/// ignores it at start-up).
pub fn quiet_on_closed_stdout() {
    #[cfg(unix)]
    {
        extern "C" {
            fn signal(signum: i32, handler: usize) -> usize;
        }
        const SIGPIPE: i32 = 13;
        const SIG_DFL: usize = 0;
        // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
        unsafe {
            signal(SIGPIPE, SIG_DFL);
        }
    }
}

/// Reads a whole input file, refusing (before reading) one larger than the memory budget.
pub fn read_bytes(path: &Path) -> anyhow::Result<Vec<u8>> {
    let name = path.display();
    let meta = std::fs::metadata(path)
        .map_err(|e| UserError(format!("{name}: error: cannot read file: {e}")))?;
    if meta.is_dir() {
        return Err(UserError(format!("{name}: error: is a directory, not a file")).into());
    }
    budget()
        .memory(format_args!("reading {name}"), Some(meta.len()))
        .map_err(|e| UserError(format!("{name}: error: {e}")))?;
    std::fs::read(path)
        .map_err(|e| UserError(format!("{name}: error: cannot read file: {e}")).into())
}

/// Reads a text file (HLO, assembly, JSON): within the budget, and UTF-8, or an error at the
/// FILE:LINE:COL of the first invalid byte.
pub fn read_text(path: &Path) -> anyhow::Result<String> {
    let bytes = read_bytes(path)?;
    utf8(path, bytes)
}

/// `bytes` as UTF-8 text, or an error at FILE:LINE:COL (1-based; COL counts characters).
pub fn utf8(path: &Path, bytes: Vec<u8>) -> anyhow::Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let b = e.as_bytes();
        let (line, col) = line_col(b, at);
        UserError(format!(
            "{}:{line}:{col}: error: invalid UTF-8 (byte 0x{:02x}); text files must be UTF-8",
            path.display(),
            b[at]
        ))
        .into()
    })
}

/// 1-based line and column (in characters) of byte offset `at` of valid UTF-8 `b[..at]`.
fn line_col(b: &[u8], at: usize) -> (usize, usize) {
    let before = &b[..at];
    let line_start = before
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |i| i + 1);
    let line = 1 + before.iter().filter(|&&c| c == b'\n').count();
    let col = 1 + String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count();
    (line, col)
}

/// Checks that `path` can be written (its folder exists, it is not a folder, it is not
/// read-only) before a long run starts, so the run's work is not lost at the end.
pub fn check_output(path: &Path) -> anyhow::Result<()> {
    let name = path.display();
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match std::fs::metadata(parent) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(UserError(format!(
                "{name}: error: cannot write: {} is not a folder",
                parent.display()
            ))
            .into())
        }
        Err(e) => {
            return Err(UserError(format!(
                "{name}: error: cannot write: folder {}: {e}",
                parent.display()
            ))
            .into())
        }
    }
    if let Ok(m) = std::fs::metadata(path) {
        if m.is_dir() {
            return Err(UserError(format!("{name}: error: cannot write: is a folder")).into());
        }
        if m.permissions().readonly() {
            return Err(UserError(format!("{name}: error: cannot write: read-only")).into());
        }
    }
    Ok(())
}

/// Longest token (run of non-whitespace) echoed in a message.
const MAX_TOKEN: usize = 160;
/// Longest line echoed in a message.
const MAX_LINE: usize = 1000;

/// `msg` with every token longer than [`MAX_TOKEN`] characters and every line longer than
/// [`MAX_LINE`] shortened to its start and end around "…(N characters elided)…".
pub fn elide_long_tokens(msg: &str) -> String {
    if msg.len() <= MAX_TOKEN {
        return msg.to_string();
    }
    let mut out = String::with_capacity(msg.len().min(64 * 1024));
    for (i, line) in msg.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut l = String::new();
        let mut tok = String::new();
        for c in line.chars() {
            if c.is_whitespace() {
                l.push_str(&elide(&tok, MAX_TOKEN));
                tok.clear();
                l.push(c);
            } else {
                tok.push(c);
            }
        }
        l.push_str(&elide(&tok, MAX_TOKEN));
        out.push_str(&elide(&l, MAX_LINE));
    }
    out
}

fn elide(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let head: String = s.chars().take(max / 2).collect();
    let tail: String = s.chars().skip(n - max / 4).collect();
    format!(
        "{head}…({} characters elided)…{tail}",
        n - max / 2 - max / 4
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_errors_name_line_and_column() {
        let e = utf8(Path::new("m.hlo"), b"ab\ncd\xffe".to_vec()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "m.hlo:2:3: error: invalid UTF-8 (byte 0xff); text files must be UTF-8"
        );
        assert!(utf8(Path::new("m.s"), "é\u{e9}".as_bytes().to_vec()).is_ok());
        let e = utf8(Path::new("m.s"), b"\xc3\xa9\xc3".to_vec()).unwrap_err();
        assert!(e.to_string().starts_with("m.s:1:2: "), "{e}");
    }

    #[test]
    fn long_tokens_and_lines_are_elided() {
        let long = "x".repeat(10_000);
        let m = elide_long_tokens(&format!("f.hlo:1:1: error: unknown `{long}`\nnext line"));
        assert!(m.len() < 400, "{}", m.len());
        assert!(m.contains("characters elided"));
        assert!(m.ends_with("\nnext line"));
        let words = "ab ".repeat(2000);
        assert!(elide_long_tokens(&words).len() < 1200);
        assert_eq!(elide_long_tokens("short"), "short");
    }

    #[test]
    fn output_paths_are_checked() {
        assert!(check_output(Path::new("/nonexistent-dir-xyz/out.vcd")).is_err());
        assert!(check_output(Path::new("/")).is_err());
        let d = std::env::temp_dir();
        assert!(check_output(&d.join("systole-bounded-out.txt")).is_ok());
        assert!(check_output(Path::new("relative-out.txt")).is_ok());
    }
}
