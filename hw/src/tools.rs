//! External tools (Verilator, Yosys, Icarus): discovery, the build cache, and running them.
//!
//! Cache: built models live under `$SYSTOLE_RTL_CACHE`, else `$XDG_CACHE_HOME/systole/rtl`, else
//! `$HOME/.cache/systole/rtl`, else the system temp dir, in a folder named by a 64-bit FNV-1a hash
//! of everything the build depends on (Verilog text, harness text, tool version, flags). A folder
//! holds a finished build only if its `ok` marker exists, so an interrupted build is redone.

use crate::HwError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// FNV-1a, 64 bits (stable across runs and platforms, unlike std's hasher).
pub fn fnv64(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in p.iter().chain(&[0xffu8]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The cache root (see module docs).
pub fn cache_root() -> PathBuf {
    if let Some(p) = std::env::var_os("SYSTOLE_RTL_CACHE") {
        return PathBuf::from(p);
    }
    if let Some(p) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(p).join("systole").join("rtl");
    }
    if let Some(p) = std::env::var_os("HOME") {
        return PathBuf::from(p).join(".cache").join("systole").join("rtl");
    }
    std::env::temp_dir().join("systole-rtl")
}

/// True if `tool` runs (`tool --version`, or `-V` for Icarus).
pub fn available(tool: &str) -> bool {
    let flag = if tool == "iverilog" {
        "-V"
    } else {
        "--version"
    };
    Command::new(tool)
        .arg(flag)
        .output()
        .map(|o| o.status.success() || tool == "iverilog")
        .unwrap_or(false)
}

/// The first line of `tool --version` (part of cache keys and reports), from stdout, or from
/// stderr for tools that print it there (nextpnr).
pub fn version(tool: &str) -> String {
    Command::new(tool)
        .arg("--version")
        .output()
        .ok()
        .map(|o| {
            let first = |b: &[u8]| {
                String::from_utf8_lossy(b)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string()
            };
            let out = first(&o.stdout);
            if out.is_empty() {
                first(&o.stderr)
            } else {
                out
            }
        })
        .unwrap_or_default()
}

pub(crate) fn io_err(path: &Path, source: std::io::Error) -> HwError {
    HwError::Io {
        path: path.display().to_string(),
        source,
    }
}

pub(crate) fn write(path: &Path, text: &str) -> Result<(), HwError> {
    std::fs::write(path, text).map_err(|e| io_err(path, e))
}

/// Runs `cmd`, returning stdout; a failure carries the tail of stderr/stdout.
pub(crate) fn run(tool: &str, cmd: &mut Command) -> Result<String, HwError> {
    let out = cmd.output().map_err(|e| HwError::Tool {
        tool: tool.into(),
        msg: format!("cannot run it ({e}); is it installed?"),
    })?;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().chain(stdout.lines()).collect();
        let start = tail.len().saturating_sub(30);
        return Err(HwError::Tool {
            tool: tool.into(),
            msg: format!("exit status {}:\n{}", out.status, tail[start..].join("\n")),
        });
    }
    Ok(stdout)
}

/// Verilator warning classes waived for the generated design, each harmless by construction:
/// * `DECLFILENAME`: many modules per file, none named after it (the design is one file);
/// * `UNUSEDSIGNAL`: pass-through outputs of the last PE column (`a_out`, `sw_out`), the high
///   byte of int8 weights and the clock of zero-depth delay lines are legitimately unread.
pub const LINT_WAIVERS: &[&str] = &["-Wno-DECLFILENAME", "-Wno-UNUSEDSIGNAL"];

/// `verilator --lint-only -Wall` with [`LINT_WAIVERS`] on `file` (top `mxu`).
pub fn lint(file: &Path) -> Result<(), HwError> {
    let mut cmd = Command::new("verilator");
    cmd.args(["--lint-only", "-Wall"])
        .args(LINT_WAIVERS)
        .args(["--top-module", "mxu"])
        .arg(file);
    run("verilator", &mut cmd).map(|_| ())
}

/// Builds (or reuses) the Verilator model of `verilog` with `harness_cpp`; returns the binary.
pub fn verilator_build(verilog: &str, harness_cpp: &str) -> Result<(PathBuf, bool), HwError> {
    let ver = version("verilator");
    let flags = "--cc --exe --build --trace -O3 --x-assign fast --x-initial fast -Wno-fatal";
    let key = fnv64(&[
        verilog.as_bytes(),
        harness_cpp.as_bytes(),
        ver.as_bytes(),
        flags.as_bytes(),
    ]);
    let root = cache_root();
    let dir = root.join(format!("vl-{key:016x}"));
    let bin = dir.join("obj").join("Vmxu");
    if dir.join("ok").exists() && bin.exists() {
        return Ok((bin, true));
    }
    // Build in a private folder, then rename it into place: concurrent builders of the same
    // model (parallel tests) never see a half-built folder.
    static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = root.join(format!("vl-{key:016x}.tmp-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| io_err(&tmp, e))?;
    let v = tmp.join("mxu.v");
    let c = tmp.join("harness.cpp");
    write(&v, verilog)?;
    write(&c, harness_cpp)?;
    let mut cmd = Command::new("verilator");
    cmd.args(flags.split_whitespace())
        .args(["--top-module", "mxu", "-Mdir"])
        .arg(tmp.join("obj"))
        .args(["-o", "Vmxu", "-j", "2", "-CFLAGS", "-O1"])
        .arg(&v)
        .arg(&c);
    if let Err(e) = run("verilator", &mut cmd) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    write(&tmp.join("ok"), "")?;
    if std::fs::rename(&tmp, &dir).is_err() {
        // Another builder finished first: use its model.
        let _ = std::fs::remove_dir_all(&tmp);
        if !(dir.join("ok").exists() && bin.exists()) {
            return Err(HwError::Tool {
                tool: "verilator".into(),
                msg: format!("cannot install the model into {}", dir.display()),
            });
        }
    }
    Ok((bin, false))
}
