//! `systole eval --replicas N` end to end: a deadlock exits with code 1 and prints the
//! per-replica report at once; a correct multi-replica run exits 0.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(rel)
}

fn systole(args: &[&str], file: &str) -> (Output, Duration) {
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_systole"))
        .args(args)
        .arg(repo(file))
        .output()
        .expect("systole runs");
    (out, t0.elapsed())
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn eval_deadlocks_exit_1_with_the_per_replica_report() {
    for (file, waits) in [
        (
            "tests/hlo/deadlock/collective_count.hlo",
            "replica 1: waits at %ar (all-reduce",
        ),
        (
            "tests/hlo/deadlock/recv_without_send.hlo",
            "replica 1: waits at %rcv",
        ),
        (
            "tests/hlo/deadlock/channel_mismatch.hlo",
            "replica 1: waits at %ar2",
        ),
    ] {
        let (out, took) = systole(&["eval", "--replicas", "2"], file);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{file}:\n{t}");
        assert!(t.contains("deadlock"), "{file}:\n{t}");
        assert!(t.contains(waits), "{file}:\n{t}");
        assert!(t.contains("replica 0: "), "{file}:\n{t}");
        // The process includes start-up, parsing and verification; the detection itself is
        // immediate (no timeout), so this bound is generous.
        assert!(took < Duration::from_secs(2), "{file}: took {took:?}");
    }
}

#[test]
fn eval_multi_replica_case_exits_0() {
    let case = repo("tests/conformance/pmap_psum_in_while");
    let (out, _) = systole(
        &["eval", "--inputs", case.to_str().expect("utf-8 path")],
        "tests/conformance/pmap_psum_in_while/module.hlo",
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("replica 3:"), "{t}");
}
