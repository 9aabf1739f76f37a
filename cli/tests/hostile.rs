//! The hostile-input suite (`tests/hostile/MANIFEST`, rules in `docs/bounded.md`): every case
//! runs the freshly built `systole` under an address-space limit (`ulimit -v 4000000`) and a
//! timeout, and must end with its expected exit code and message fragment: never a panic, an
//! abort, a signal or a timeout. Also: a 10 MB token is not echoed back whole.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(20);
const ADDRESS_SPACE_KB: u64 = 4_000_000;

fn systole() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_BIN_EXE_systole"));
    assert!(p.is_file(), "systole binary missing at {}", p.display());
    p
}

fn hostile_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/hostile")
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("systole-hostile-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch folder");
    d
}

/// How one run ended.
struct Run {
    /// Exit code (`None`: killed by a signal or by the timeout).
    code: Option<i32>,
    timed_out: bool,
    output: String,
    secs: f64,
}

/// Runs `systole args...` in `cwd` under the address-space limit and the timeout.
fn run(cwd: &Path, args: &[String], tmp: &Path) -> Run {
    let out_path = tmp.join("stdout+stderr");
    let out = std::fs::File::create(&out_path).expect("output file");
    let err = out.try_clone().expect("output file");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {ADDRESS_SPACE_KB}; exec \"$0\" \"$@\""))
        .arg(systole())
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("spawn sh");
    let start = Instant::now();
    let (status, timed_out) = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break (Some(s), false);
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break (None, true);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let bytes = std::fs::read(&out_path).unwrap_or_default();
    Run {
        code: status.and_then(|s| s.code()),
        timed_out,
        output: String::from_utf8_lossy(&bytes).into_owned(),
        secs: start.elapsed().as_secs_f64(),
    }
}

/// Why a run is not what a case expects (`None`: it is).
fn verdict(r: &Run, expected: &str, fragment: &str) -> Option<String> {
    if r.timed_out {
        return Some(format!("timed out after {} s", TIMEOUT.as_secs()));
    }
    let Some(code) = r.code else {
        return Some("killed by a signal".into());
    };
    if r.output.contains("panicked") || r.output.contains("memory allocation of") {
        return Some(format!("panic or abort (exit {code})"));
    }
    let code_ok = match expected {
        "any" => (0..=2).contains(&code),
        e => e.parse::<i32>().ok() == Some(code),
    };
    if !code_ok {
        return Some(format!("exit {code}, expected {expected}"));
    }
    let fragment = fragment.replace("\\n", "\n");
    if !r.output.contains(&fragment) {
        return Some(format!("output lacks {fragment:?}"));
    }
    None
}

#[test]
fn hostile_inputs_end_with_documented_exit_codes_and_messages() {
    let dir = hostile_dir();
    let manifest = std::fs::read_to_string(dir.join("MANIFEST")).expect("tests/hostile/MANIFEST");
    let tmp = scratch("suite");
    let mut failures = Vec::new();
    let mut cases = 0;
    let mut slowest = (0.0f64, String::new());
    for (i, line) in manifest.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut parts = line.splitn(3, " | ");
        let (Some(expected), Some(args)) = (parts.next(), parts.next()) else {
            panic!("MANIFEST line {}: expected `EXIT | ARGS | FRAGMENT`", i + 1);
        };
        let fragment = parts.next().unwrap_or("").trim();
        let case_tmp = tmp.join(format!("case{i}"));
        std::fs::create_dir_all(&case_tmp).expect("case folder");
        let args: Vec<String> = args
            .split_whitespace()
            .map(|a| a.replace("{tmp}", &case_tmp.display().to_string()))
            .collect();
        cases += 1;
        let r = run(&dir, &args, &case_tmp);
        if r.secs > slowest.0 {
            slowest = (r.secs, args.join(" "));
        }
        if let Some(why) = verdict(&r, expected.trim(), fragment) {
            let shown: String = r.output.chars().take(600).collect();
            failures.push(format!(
                "line {}: systole {}: {why}\n  output: {shown}",
                i + 1,
                args.join(" ")
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(cases >= 100, "only {cases} hostile cases in the MANIFEST");
    assert!(
        failures.is_empty(),
        "{} of {cases} hostile cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!(
        "{cases} hostile cases passed; slowest {:.2} s: systole {}",
        slowest.0, slowest.1
    );
}

#[test]
fn a_ten_megabyte_token_is_not_echoed_back() {
    let tmp = scratch("token");
    let token = "a".repeat(10_000_000);
    std::fs::write(
        tmp.join("long.hlo"),
        format!("HloModule m\n\nENTRY main {{\n  ROOT x = f32[] {token}(1)\n}}\n"),
    )
    .expect("write");
    std::fs::write(tmp.join("long.s"), format!("    {token} s1, s2\n")).expect("write");
    for args in [["check", "long.hlo"], ["sim", "long.s"]] {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let r = run(&tmp, &args, &tmp);
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.output);
        assert!(
            r.output.len() < 2000 && r.output.contains("characters elided"),
            "{args:?}: {} bytes of output",
            r.output.len()
        );
        assert!(
            r.output.contains(":1:") || r.output.contains(":4:"),
            "{}",
            r.output
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
