//! The pod end to end: multi-replica modules compiled with their collectives and send/recv,
//! run on one simulated chip per replica over the ICI, checked against the evaluator.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn systole(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_systole"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("the systole binary runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn every_multi_replica_conformance_case_passes_on_the_chip() {
    let o = systole(&[
        "conformance",
        "tests/conformance",
        "--engine",
        "sim",
        "--json",
    ]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let start = out.find('{').expect("a JSON report");
    let end = out.rfind('}').expect("a JSON report");
    let j: serde_json::Value = serde_json::from_str(&out[start..=end]).expect("valid JSON");
    let mut multi = 0;
    for case in j["cases"].as_array().expect("cases") {
        let name = case["case"].as_str().unwrap();
        let cj = std::fs::read_to_string(
            root()
                .join("tests/conformance")
                .join(name)
                .join("case.json"),
        )
        .unwrap();
        let cj: serde_json::Value = serde_json::from_str(&cj).unwrap();
        if cj["replicas"].as_u64().unwrap_or(1) > 1 {
            multi += 1;
            assert_eq!(case["status"], "pass", "{name}: {case}");
        }
    }
    assert_eq!(multi, 12, "the corpus has 12 multi-replica cases");
}

#[test]
fn send_recv_between_replicas_matches_the_evaluator() {
    // One-way pairs with the receive issued before the send (non-targets get zeros), and two
    // channels in opposite ring directions with both sends before both receives.
    for f in [
        "tests/pod/sendrecv_oneway_reordered.hlo",
        "tests/pod/sendrecv_two_channels_ring.hlo",
    ] {
        let o = systole(&["run", f, "--arch", "tpu-v4", "--random", "7"]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "{f}: {t}");
        assert!(t.contains("outputs match the evaluator"), "{f}: {t}");
    }
}

#[test]
fn async_collective_forms_and_collective_broadcast_match_the_evaluator() {
    // all-reduce/all-gather/collective-permute start+done, async-start wrapping an all-reduce
    // (run synchronously on chip), collective-broadcast from a group's first member.
    let o = systole(&[
        "run",
        "tests/pod/async_and_broadcast.hlo",
        "--random",
        "3",
        "--rtol",
        "1e-6",
        "--atol",
        "1e-6",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("outputs match the evaluator"), "{t}");
}

#[test]
fn mismatched_collectives_are_a_deadlock_report_naming_each_chip() {
    // Replica 0 enters an all-reduce the other three never join.
    let o = systole(&[
        "run",
        "tests/pod/mismatched_allreduce_deadlock.hlo",
        "--arch",
        "tpu-v4",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("deadlock at cycle"), "{t}");
    for chip in 1..4 {
        assert!(t.contains(&format!("chip{chip}: halted at cycle")), "{t}");
    }
    assert!(
        t.contains("waits for the matching ici.recv on chip 1"),
        "{t}"
    );
    assert!(t.contains("chip0.core0.seq at pc"), "{t}");
}

#[test]
fn spmd_modules_exported_from_jax_pass_on_the_evaluator_and_the_chip() {
    // tests/spmd: jax.jit with shardings on 8 devices, compiled by XLA:CPU (num_partitions=8),
    // per-device inputs and outputs from XLA:CPU (see tests/spmd/README.md).
    let o = systole(&["conformance", "tests/spmd", "--engine", "eval"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("7 passed, 0 failed"), "{t}");
    let o = systole(&["conformance", "tests/spmd", "--engine", "sim", "--json"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let last = t.trim_end().lines().last().unwrap_or_default();
    assert!(last.contains(" 0 failed"), "{t}");
    let start = t.find('{').expect("a JSON report");
    let end = t.rfind('}').expect("a JSON report");
    let j: serde_json::Value = serde_json::from_str(&t[start..=end]).expect("valid JSON");
    for case in j["cases"].as_array().expect("cases") {
        let name = case["case"].as_str().unwrap();
        if case["status"] != "pass" {
            // Only ops the chip does not run yet may skip, and they say so.
            assert_eq!(case["status"], "unsupported", "{name}: {case}");
            assert!(
                case["message"]
                    .as_str()
                    .unwrap()
                    .contains("not supported on chip yet"),
                "{name}: {case}"
            );
        }
    }
}
