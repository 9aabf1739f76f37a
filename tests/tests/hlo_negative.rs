//! The negative suite: every `tests/negative/NNN_name.hlo` is malformed or ill-typed, and
//! its first line says how: `// expect: LINE:COL substring` (or `// expect: LINE substring`
//! when the column is not meaningful, or `// expect: - substring` for a module-level error
//! with no location). Parse + verify must fail, and the first diagnostic
//! must be on that line (and column) with a message containing the substring. When a built
//! `systole` binary with a `check` subcommand sits next to this test's target directory,
//! `systole check FILE` must also exit with code 2 and print the message.

use std::path::{Path, PathBuf};
use std::process::Command;

struct Expect {
    line: u32,
    col: Option<u32>,
    msg: String,
}

fn parse_expect(first: &str) -> Result<Expect, String> {
    let rest = first
        .strip_prefix("// expect: ")
        .ok_or("first line must be `// expect: LINE[:COL] message`")?;
    let (loc, msg) = rest.split_once(' ').ok_or("missing message")?;
    if loc == "-" {
        return Ok(Expect {
            line: 0,
            col: None,
            msg: msg.trim().to_string(),
        });
    }
    let (line, col) = match loc.split_once(':') {
        Some((l, c)) => (l, Some(c.parse().map_err(|_| format!("bad column {c}"))?)),
        None => (loc, None),
    };
    let line = line.parse().map_err(|_| format!("bad line {line}"))?;
    Ok(Expect {
        line,
        col,
        msg: msg.trim().to_string(),
    })
}

fn files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("negative");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/negative exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "hlo"))
        .collect();
    v.sort();
    v
}

/// Checks one file against its expectation; returns a description of the mismatch.
fn check_file(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let exp = parse_expect(text.lines().next().unwrap_or(""))?;
    let err = match hlo::parse(&text) {
        Err(e) => e,
        Ok(m) => match hlo::verify(&m) {
            Err(e) => e,
            Ok(()) => return Err("parsed and verified without error".into()),
        },
    };
    let first = match &err {
        hlo::Error::Parse(d) => d.clone(),
        hlo::Error::Verify(ds) => ds.first().cloned().ok_or("empty diagnostic list")?,
        hlo::Error::Build(m) => return Err(format!("unexpected builder error {m}")),
    };
    let loc_ok = first.span.line == exp.line && exp.col.is_none_or(|c| c == first.span.col);
    if !loc_ok || !first.message.contains(&exp.msg) {
        return Err(format!(
            "expected {}:{} `{}`, got {}:{} `{}`",
            exp.line,
            exp.col.map(|c| c.to_string()).unwrap_or("*".into()),
            exp.msg,
            first.span.line,
            first.span.col,
            first.message
        ));
    }
    // The rendered form names the file, line and column and shows a caret under the line.
    let rendered = err.render("f.hlo", &text);
    let has_line = exp.line > 0 && text.lines().count() >= exp.line as usize;
    let prefix = if exp.line == 0 {
        "f.hlo: error:".to_string()
    } else {
        format!("f.hlo:{}:", exp.line)
    };
    if !rendered.starts_with(&prefix) || (has_line && !rendered.contains('^')) {
        return Err(format!("bad rendering:\n{rendered}"));
    }
    Ok(())
}

#[test]
fn negative_suite_fails_where_expected() {
    let files = files();
    assert!(
        files.len() >= 60,
        "the negative suite must have at least 60 files, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for f in &files {
        if let Err(e) = check_file(f) {
            failures.push(format!("{}: {e}", f.file_name().unwrap().to_string_lossy()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} negative cases failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// `target/<profile>/systole`, if it was built after the last change to the sources of the
/// `hlo` and `cli` crates (so it contains the library under test) and has a `check`
/// subcommand.
fn systole_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    let bin = profile_dir.join(format!("systole{}", std::env::consts::EXE_SUFFIX));
    let built = std::fs::metadata(&bin).and_then(|m| m.modified()).ok()?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    let newest = ["hlo/src", "cli/src"]
        .iter()
        .filter_map(|d| newest_mtime(&root.join(d)))
        .max()?;
    if built < newest {
        eprintln!(
            "{} is older than the hlo/cli sources; not used",
            bin.display()
        );
        return None;
    }
    let ok = Command::new(&bin)
        .args(["check", "--help"])
        .output()
        .ok()?
        .status
        .success();
    ok.then_some(bin)
}

/// The newest modification time of any file under `dir`.
fn newest_mtime(dir: &Path) -> Option<std::time::SystemTime> {
    let mut newest = None;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(t) = e.metadata().and_then(|m| m.modified()) {
                newest = newest.max(Some(t));
            }
        }
    }
    newest
}

#[test]
fn negative_suite_via_cli_exits_2() {
    let Some(bin) = systole_binary() else {
        eprintln!("systole binary with `check` not built next to the tests; CLI part skipped");
        return;
    };
    let mut failures = Vec::new();
    for f in files() {
        let text = std::fs::read_to_string(&f).unwrap();
        let exp = parse_expect(text.lines().next().unwrap()).unwrap();
        let out = Command::new(&bin).arg("check").arg(&f).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let loc = if exp.line == 0 {
            ": error:".to_string()
        } else {
            format!(":{}:", exp.line)
        };
        if out.status.code() != Some(2) || !stderr.contains(&exp.msg) || !stderr.contains(&loc) {
            failures.push(format!(
                "{}: exit {:?}, stderr {stderr}",
                f.display(),
                out.status.code()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
