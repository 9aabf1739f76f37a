//! The pod end to end: multi-replica modules compiled with their collectives and send/recv,
//! run on one simulated chip per replica over the ICI, checked against the evaluator.

mod common;
use common::{all_text as text, root, systole};

/// Runs `systole ARGS`, which must exit 0 with outputs matching the evaluator; returns its text.
fn matches_evaluator(args: &[&str]) -> String {
    let o = systole(args);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {t}");
    assert!(t.contains("outputs match the evaluator"), "{args:?}: {t}");
    t
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
        matches_evaluator(&["run", f, "--arch", "tpu-v4", "--random", "7"]);
    }
}

#[test]
fn send_recv_inside_while_and_conditional_bodies_matches_the_evaluator() {
    // Five iterations of a ring shift on channel 1 (receive before send in the text), then a
    // conditional whose branches exchange on channels 2 and 3.
    matches_evaluator(&[
        "run",
        "tests/pod/sendrecv_while_conditional.hlo",
        "--random",
        "3",
        "--rtol",
        "0",
        "--atol",
        "0",
    ]);
    // A send queued outside a body and received inside it is refused, naming the recv-done.
    let o = systole(&[
        "run",
        "tests/pod/sendrecv_queued_outside_body.hlo",
        "--random",
        "3",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("sendrecv_queued_outside_body.hlo:17:3")
            && t.contains("not supported on chip yet: recv-done on channel 1 inside a while"),
        "{t}"
    );
}

#[test]
fn async_collective_forms_and_collective_broadcast_match_the_evaluator() {
    // all-reduce/all-gather/collective-permute start+done, async-start wrapping an all-reduce
    // (run synchronously on chip), collective-broadcast from a group's first member.
    matches_evaluator(&[
        "run",
        "tests/pod/async_and_broadcast.hlo",
        "--random",
        "3",
        "--rtol",
        "1e-6",
        "--atol",
        "1e-6",
    ]);
    // An all-reduce started before a while loop that runs all-reduces, done after it.
    matches_evaluator(&[
        "run",
        "tests/pod/async/allreduce_start_around_while.hlo",
        "--random",
        "3",
        "--rtol",
        "0",
        "--atol",
        "0",
    ]);
    // ... and before a loop and a conditional that run none: it stays in flight across them
    // (draining it inside the body deadlocked on the second iteration).
    matches_evaluator(&[
        "run",
        "tests/pod/async/allreduce_start_around_plain_loops.hlo",
        "--random",
        "3",
        "--rtol",
        "0",
        "--atol",
        "0",
    ]);
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

/// Runs `args` with `--report` and returns the report.
fn report(args: &[&str]) -> serde_json::Value {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    args.hash(&mut h);
    let path = std::env::temp_dir().join(format!(
        "systole-pod-{}-{:x}.json",
        std::process::id(),
        h.finish()
    ));
    let p = path.to_str().unwrap().to_string();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--report", &p]);
    let o = systole(&all);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).ok();
    j
}

#[test]
fn torus_all_reduce_stages_match_the_evaluator_on_2d_and_3d_tori() {
    // Groups that are boxes of the pod run dimension by dimension: all-reduce over two groups
    // of 8, reduce-scatter and all-gather over all 16 (along a leading and a middle
    // dimension) and over groups that are (rows: stages) and are not (columns: a ring) boxes.
    for (topo, dims, file) in [
        ("torus2d", "ici.dims=[4,4]", "allreduce_two_groups_16.hlo"),
        ("torus3d", "ici.dims=[2,4,2]", "allreduce_two_groups_16.hlo"),
        ("torus2d", "ici.dims=[4,4]", "rs_ag_torus_16.hlo"),
        ("torus3d", "ici.dims=[2,4,2]", "rs_ag_torus_16.hlo"),
    ] {
        let t = format!("ici.topology={topo}");
        let f = format!("tests/pod/bench/{file}");
        let o = systole(&[
            "run", &f, "--set", &t, "--set", dims, "--rtol", "1e-5", "--atol", "1e-5",
        ]);
        let s = text(&o);
        assert_eq!(o.status.code(), Some(0), "{topo}: {s}");
        assert!(s.contains("outputs match the evaluator"), "{topo}: {s}");
        assert!(s.contains("torus: bidirectional-ring"), "{s}");
    }
}

#[test]
fn detailed_and_analytic_ici_backends_agree_within_5_percent() {
    // Ring of 8, 2-D torus of 16, 3-D torus of 64 (tpu-v4's default 4x4x4 slice): all-reduce,
    // all-gather, reduce-scatter and all-to-all in one program; and the transformer block's
    // data-parallel training step on 8 chips.
    let runs: [(&str, &[&str]); 4] = [
        (
            "tests/pod/bench/collectives_8.hlo",
            &["--set", "ici.topology=ring", "--set", "ici.dims=[8]"],
        ),
        (
            "tests/pod/bench/collectives_16.hlo",
            &["--set", "ici.topology=torus2d", "--set", "ici.dims=[4,4]"],
        ),
        ("tests/pod/bench/collectives_64.hlo", &[]),
        (
            "tests/pod/models/transformer_dp_train_8/module.hlo",
            &["--set", "ici.topology=ring", "--set", "ici.dims=[8]"],
        ),
    ];
    for (file, sets) in runs {
        let mut cycles = Vec::new();
        for ici in ["detailed", "analytic"] {
            let mut args = vec!["run", file, "--timing-only", "--ici", ici];
            args.extend_from_slice(sets);
            let j = report(&args);
            cycles.push(j["cycles"].as_f64().unwrap());
            for c in j["collectives"].as_array().unwrap() {
                assert!(c["measured_seconds"].as_f64().unwrap() > 0.0, "{c}");
            }
        }
        let ratio = cycles[0] / cycles[1];
        assert!(
            (0.95..=1.05).contains(&ratio),
            "{file}: detailed {} vs analytic {}",
            cycles[0],
            cycles[1]
        );
    }
}

#[test]
fn a_4096_chip_pod_runs_on_the_analytic_backend() {
    // A full tpu-v4 pod (16x16x16): chip 0 simulated, the all-reduce timed by its closed form.
    let j = report(&[
        "run",
        "tests/pod/bench/allreduce_4096.hlo",
        "--ici",
        "analytic",
        "--set",
        "ici.dims=[16,16,16]",
    ]);
    let c = &j["collectives"][0];
    assert_eq!(c["chips"], 4096, "{c}");
    assert!(c["algorithm"].as_str().unwrap().starts_with("torus"), "{c}");
    let r = c["ratio"].as_f64().unwrap();
    assert!((0.999..1.01).contains(&r), "{c}");
}

#[test]
fn an_8_chip_ring_all_reduce_is_within_15_percent_of_the_bidirectional_ring_bound() {
    // 16 MiB per chip on tpu-v6e's links (8-chip ring): measured between 1.0x and 1.15x of
    // (p-1)/p * n / link_bw. The 64 MiB benchmark of docs/ici.md is the same command with a
    // bigger operand.
    let j = report(&[
        "run",
        "tests/pod/bench/allreduce_ring_8.hlo",
        "--arch",
        "tpu-v6e",
        "--timing-only",
        "--set",
        "ici.topology=ring",
        "--set",
        "ici.dims=[8]",
    ]);
    let c = &j["collectives"][0];
    let n = c["bytes_per_chip"].as_f64().unwrap();
    let beta = c["closed_form"]["beta_bytes_per_second"].as_f64().unwrap();
    let bound = 7.0 / 8.0 * n / beta;
    let r = c["measured_seconds"].as_f64().unwrap() / bound;
    assert!((1.0..=1.15).contains(&r), "{r}: {c}");
}

#[test]
fn the_data_parallel_transformer_training_step_runs_on_8_chips_and_matches_xla() {
    // jax.jit data-parallel training step (num_partitions=8), per-device inputs and outputs
    // from XLA:CPU (tests/pod/models/README.md).
    let o = systole(&["conformance", "tests/pod/models", "--engine", "sim"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("1 passed, 0 failed"), "{t}");
}

#[test]
fn the_trace_has_a_track_per_ici_link_with_its_transfers() {
    let path = std::env::temp_dir().join(format!("systole-pod-trace-{}.json", std::process::id()));
    let p = path.to_str().unwrap();
    let o = systole(&[
        "run",
        "tests/pod/sendrecv_two_channels_ring.hlo",
        "--set",
        "ici.topology=ring",
        "--set",
        "ici.dims=[4]",
        "--trace",
        p,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).ok();
    let ev = j["traceEvents"].as_array().expect("trace events");
    let links: std::collections::BTreeSet<String> = ev
        .iter()
        .filter(|e| e["name"] == "transfer")
        .map(|e| format!("{}:{}", e["pid"], e["cat"].as_str().unwrap_or("")))
        .collect();
    // A forward and a backward ring over 4 chips use both directed links of every chip.
    for chip in 0..4 {
        for l in ["ici.x+", "ici.x-"] {
            assert!(links.contains(&format!("{chip}:{l}")), "{links:?}");
        }
    }
}

#[test]
fn the_report_names_the_bottleneck_with_its_roofline_numbers() {
    // On tpu-v4 a 4096^3 bf16 GEMM is compute-bound; a 1024^3 one is below the ridge point
    // (arithmetic intensity 204.8 FLOP/B against 229.4: memory-bound, as docs/compiler.md
    // explains its utilization); an 8-chip ring all-reduce of 16 MiB is interconnect-bound.
    let j = report(&["run", "tests/chip/gemm_bf16_4096.hlo", "--timing-only"]);
    assert_eq!(
        j["roofline"]["verdict"], "compute-bound",
        "{}",
        j["roofline"]
    );
    let j = report(&[
        "run",
        "tests/golden/compiler/gemm_bf16_1024.hlo",
        "--timing-only",
    ]);
    let r = &j["roofline"];
    assert_eq!(r["verdict"], "memory-bound", "{r}");
    assert!(
        r["arithmetic_intensity"].as_f64() < r["ridge_point"].as_f64(),
        "{r}"
    );
    let j = report(&[
        "run",
        "tests/pod/bench/allreduce_ring_8.hlo",
        "--arch",
        "tpu-v6e",
        "--timing-only",
        "--set",
        "ici.topology=ring",
        "--set",
        "ici.dims=[8]",
    ]);
    assert_eq!(
        j["roofline"]["verdict"], "interconnect-bound",
        "{}",
        j["roofline"]
    );
}

/// Runs `args` on `threads` threads with `--report` and `--trace`: its exit code, its output
/// without the line of host seconds, the report and the trace file.
fn threaded(args: &[&str], threads: usize) -> (Option<i32>, String, String, String) {
    // One name per call: the tests of this binary run concurrently in one process.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir();
    let tag = format!("{}-{threads}-{call}", std::process::id());
    let (rep, tr) = (
        dir.join(format!("systole-threads-{tag}.json")),
        dir.join(format!("systole-threads-{tag}.trace.json")),
    );
    let n = threads.to_string();
    let mut all: Vec<&str> = args.to_vec();
    all.extend([
        "--threads",
        &n,
        "--report",
        rep.to_str().unwrap(),
        "--trace",
        tr.to_str().unwrap(),
    ]);
    let o = systole(&all);
    let out: String = text(&o)
        .replace(tr.to_str().unwrap(), "TRACE")
        .replace(rep.to_str().unwrap(), "REPORT")
        .lines()
        .filter(|l| !l.starts_with("simulated in"))
        .map(|l| format!("{l}\n"))
        .collect();
    let ok = o.status.code() == Some(0);
    let read = |p: &std::path::Path| {
        // A successful run must have written the file; a failed one may not have.
        let s = match std::fs::read_to_string(p) {
            Ok(s) => s,
            Err(e) if ok => panic!("{} after a successful run: {e}", p.display()),
            Err(_) => String::new(),
        };
        std::fs::remove_file(p).ok();
        s
    };
    (o.status.code(), out, read(&rep), read(&tr))
}

#[test]
fn a_pod_run_is_bit_identical_on_1_2_and_4_threads() {
    // Outputs (checked against the evaluator), cycles, every statistic and the trace: all four
    // collectives on a ring of 8 (the all-to-all sends to the chip itself too), the
    // data-parallel training step, and an all-reduce-start overlapping a dot.
    let ring = ["--set", "ici.topology=ring", "--set", "ici.dims=[8]"];
    let runs: [Vec<&str>; 3] = [
        [&["run", "tests/pod/bench/collectives_8.hlo"][..], &ring].concat(),
        [
            &["run", "tests/pod/models/transformer_dp_train_8/module.hlo"][..],
            &ring,
        ]
        .concat(),
        [
            &[
                "run",
                "tests/pod/async/allreduce_overlap_8.hlo",
                "--random",
                "2",
                "--rtol",
                "0",
                "--atol",
                "0",
            ][..],
            &ring,
        ]
        .concat(),
    ];
    for args in runs {
        let one = threaded(&args, 1);
        assert_eq!(one.0, Some(0), "{args:?}: {}", one.1);
        assert!(one.1.contains("outputs match the evaluator"), "{}", one.1);
        let j: serde_json::Value = serde_json::from_str(&one.2).unwrap();
        assert!(j["cycles"].as_u64().unwrap() > 0);
        assert!(
            one.3.contains("\"transfer\""),
            "the trace has ICI transfers"
        );
        for threads in [2, 4] {
            let other = threaded(&args, threads);
            assert_eq!(other.0, one.0, "{args:?} on {threads} threads");
            assert_eq!(other.1, one.1, "{args:?} on {threads} threads: output");
            assert!(
                other.2 == one.2,
                "{args:?} on {threads} threads: the report differs"
            );
            assert!(
                other.3 == one.3,
                "{args:?} on {threads} threads: the trace differs"
            );
        }
    }
}

#[test]
fn a_deadlock_report_is_the_same_on_1_and_2_threads() {
    let args = [
        "run",
        "tests/pod/mismatched_allreduce_deadlock.hlo",
        "--arch",
        "tpu-v4",
    ];
    let one = threaded(&args, 1);
    let two = threaded(&args, 2);
    assert_eq!(one.0, Some(1), "{}", one.1);
    assert!(one.1.contains("deadlock at cycle"), "{}", one.1);
    assert!(
        one.1.contains("waits for the matching ici.recv on chip 1"),
        "{}",
        one.1
    );
    assert_eq!(two.0, one.0);
    assert_eq!(two.1, one.1);
}

#[test]
fn threads_must_be_at_least_one() {
    let o = systole(&[
        "run",
        "tests/pod/sendrecv_two_channels_ring.hlo",
        "--threads",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--threads"), "{}", text(&o));
}

#[test]
fn an_all_reduce_larger_than_vmem_streams_through_hbm_and_matches_the_evaluator() {
    // 160,012 bytes per chip against 128 KiB of VMEM: three chunks through two buffers, the
    // last padded; on a ring of 8 and, as one ring in the snake order, on a 2x4 torus.
    for dims in [
        ["ici.topology=ring", "ici.dims=[8]"],
        ["ici.topology=torus2d", "ici.dims=[2,4]"],
    ] {
        let o = systole(&[
            "run",
            "tests/pod/allreduce_streamed.hlo",
            "--set",
            dims[0],
            "--set",
            dims[1],
            "--set",
            "vmem.bytes=131072",
        ]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "{dims:?}: {t}");
        assert!(t.contains("outputs match the evaluator"), "{dims:?}: {t}");
    }
}

#[test]
fn a_64_mib_all_reduce_streams_through_v4s_16_mib_of_vmem_within_15_percent_of_the_bound() {
    // tpu-v4's default 16 MiB of VMEM, 64 MiB per chip on a ring of 8: measured between 1.0x
    // and 1.15x of the bidirectional-ring bound (p-1)/p * n / link_bw.
    let j = report(&[
        "run",
        "tests/pod/bench/allreduce_ring_8_64mib.hlo",
        "--arch",
        "tpu-v4",
        "--timing-only",
        "--set",
        "ici.topology=ring",
        "--set",
        "ici.dims=[8]",
    ]);
    let c = &j["collectives"][0];
    let n = c["bytes_per_chip"].as_f64().unwrap();
    assert_eq!(n, 67108864.0);
    let beta = c["closed_form"]["beta_bytes_per_second"].as_f64().unwrap();
    let bound = 7.0 / 8.0 * n / beta;
    let r = c["measured_seconds"].as_f64().unwrap() / bound;
    assert!((1.0..=1.15).contains(&r), "{r}: {c}");
}

/// Runs `async_file` and `sync_file` (the same work, the collective written asynchronously
/// with independent compute between start and done, and synchronously) with exact output
/// checks; asserts that the asynchronous run overlaps: its cycles are at most the
/// synchronous run's minus half of the smaller of the collective (its measured time in the
/// synchronous run) and the rest of the synchronous run. Returns (async, sync) cycles.
fn assert_overlaps(async_file: &str, sync_file: &str, sets: &[&str]) -> (f64, f64) {
    assert_overlaps_by(async_file, sync_file, sets, 0.5)
}

/// [`assert_overlaps`] with the fraction `frac` of the smaller part instead of a half.
fn assert_overlaps_by(async_file: &str, sync_file: &str, sets: &[&str], frac: f64) -> (f64, f64) {
    let run = |f: &str| {
        let mut args = vec!["run", f, "--random", "5", "--rtol", "0", "--atol", "0"];
        args.extend_from_slice(sets);
        let j = report(&args);
        assert_eq!(j["max_abs_error"].as_f64(), Some(0.0), "{f}: {j}");
        j
    };
    let (a, s) = (run(async_file), run(sync_file));
    let cycles = |j: &serde_json::Value| j["cycles"].as_f64().unwrap();
    let clock = cycles(&s) / s["seconds"].as_f64().unwrap();
    let colls = s["collectives"].as_array().unwrap();
    assert_eq!(colls.len(), 1, "{s}");
    let coll = colls[0]["measured_seconds"].as_f64().unwrap() * clock;
    assert_saves(async_file, cycles(&a), cycles(&s), coll, frac);
    // The asynchronous run reports its collective too.
    let ac = a["collectives"].as_array().unwrap();
    assert_eq!(ac.len(), 1, "{a}");
    assert!(ac[0]["measured_seconds"].as_f64().unwrap() > 0.0, "{a}");
    (cycles(&a), cycles(&s))
}

#[test]
fn an_all_reduce_start_overlaps_the_dot_before_its_done_on_4_and_8_chips() {
    // all-reduce-start, an independent s8 dot, all-reduce-done: outputs exactly the
    // evaluator's; the cycles measurably below the same module written with `all-reduce`.
    assert_overlaps(
        "tests/pod/async/allreduce_overlap.hlo",
        "tests/pod/async/allreduce_overlap_sync.hlo",
        &[],
    );
    // The analytic backend: the start's `ici.model` runs under the dot too.
    let analytic = |f: &str| {
        report(&["run", f, "--timing-only", "--ici", "analytic"])["cycles"]
            .as_f64()
            .unwrap()
    };
    let (a, s) = (
        analytic("tests/pod/async/allreduce_overlap.hlo"),
        analytic("tests/pod/async/allreduce_overlap_sync.hlo"),
    );
    assert!(a < s, "analytic: async {a} cycles, sync {s}");
    let ring8 = ["--set", "ici.topology=ring", "--set", "ici.dims=[8]"];
    assert_overlaps(
        "tests/pod/async/allreduce_overlap_8.hlo",
        "tests/pod/async/allreduce_overlap_sync_8.hlo",
        &ring8,
    );
}

#[test]
fn all_gather_permute_and_async_start_forms_overlap_the_dot_before_their_done() {
    // all-gather-start (a ring, own block loaded on the VPU), collective-permute-start (a
    // ring shift) and async-start wrapping an all-reduce, each with an independent s8 dot
    // before the done; outputs exactly the evaluator's.
    for (a, s) in [
        (
            "tests/pod/async/allgather_overlap.hlo",
            "tests/pod/async/allgather_overlap_sync.hlo",
        ),
        (
            "tests/pod/async/permute_overlap.hlo",
            "tests/pod/async/permute_overlap_sync.hlo",
        ),
        // A pipeline's shift (chip 0 receives zeros, chip 3 sends nothing): every chip posts
        // one receive and one send, chip 3 sending zeros to chip 0 (measured 9504 vs 15330).
        (
            "tests/pod/async/permute_partial_overlap.hlo",
            "tests/pod/async/permute_partial_overlap_sync.hlo",
        ),
        // async-start/async-done wrapping the all-reduce.
        (
            "tests/pod/async/async_start_overlap.hlo",
            "tests/pod/async/allreduce_overlap_sync.hlo",
        ),
    ] {
        assert_overlaps(a, s, &[]);
    }
    // Element-wise VPU work between start and done queues behind the ring's combines (one
    // in-order VPU queue): the reduce-scatter phase blocks it, the all-gather phase overlaps
    // (measured: 15573 vs 19331 cycles, docs/ici.md), so a quarter, not a half.
    assert_overlaps_by(
        "tests/pod/async/allreduce_elementwise.hlo",
        "tests/pod/async/allreduce_elementwise_sync.hlo",
        &[],
        0.25,
    );
}

/// Asserts that the asynchronous run (`a` cycles) saves at least `frac` of the smaller of the
/// synchronous run's (`s` cycles) collective time `coll` and the rest of it.
fn assert_saves(async_file: &str, a: f64, s: f64, coll: f64, frac: f64) {
    let rest = s - coll;
    assert!(coll > 0.0 && rest > 0.0, "collectives {coll}, rest {rest}");
    let bound = s - frac * coll.min(rest);
    assert!(
        a <= bound,
        "{async_file}: {a} cycles, not overlapped: synchronous {s} cycles (collectives \
         {coll:.0}, the rest {rest:.0}) minus {frac} of the smaller part is {bound:.0}"
    );
}

/// `f`'s report from `systole run --random 5` with exact outputs, on 1 and 2 threads (same
/// cycles and collectives); the first run's report.
fn exact_on_1_and_2_threads(f: &str) -> serde_json::Value {
    exact_on_1_and_2_threads_with(f, &[])
}

/// [`exact_on_1_and_2_threads`] with the options `sets` (`--set ...`).
fn exact_on_1_and_2_threads_with(f: &str, sets: &[&str]) -> serde_json::Value {
    let mut first: Option<serde_json::Value> = None;
    for t in ["1", "2"] {
        let mut args = vec![
            "run",
            f,
            "--random",
            "5",
            "--rtol",
            "0",
            "--atol",
            "0",
            "--threads",
            t,
        ];
        args.extend_from_slice(sets);
        let j = report(&args);
        assert_eq!(j["max_abs_error"].as_f64(), Some(0.0), "{f}: {j}");
        if let Some(j1) = &first {
            assert_eq!(j1["cycles"], j["cycles"], "{f}: 1 vs 2 threads");
            assert_eq!(j1["collectives"], j["collectives"], "{f}: 1 vs 2 threads");
        }
        first = Some(j);
    }
    first.unwrap()
}

/// Runs `async_file` and `sync_file` (the same module with synchronous collectives, each in
/// a while body or a conditional branch executed `execs[i]` times for the report's collective
/// `i`) with exact output checks, on 1 and 2 threads (identical reports); asserts that the
/// asynchronous run saves at least `frac` of the smaller of the collectives' time (their
/// closed forms times their executions: the report measures no op inside a body) and the rest
/// of the synchronous run. Returns (async, sync) cycles.
fn assert_overlaps_in_bodies(
    async_file: &str,
    sync_file: &str,
    execs: &[f64],
    frac: f64,
) -> (f64, f64) {
    let run = exact_on_1_and_2_threads;
    let (a, s) = (run(async_file), run(sync_file));
    let cycles = |j: &serde_json::Value| j["cycles"].as_f64().unwrap();
    let clock = cycles(&s) / s["seconds"].as_f64().unwrap();
    let colls = s["collectives"].as_array().unwrap();
    assert_eq!(colls.len(), execs.len(), "{s}");
    let coll: f64 = colls
        .iter()
        .zip(execs)
        .map(|(c, n)| c["closed_form_seconds"].as_f64().unwrap() * clock * n)
        .sum();
    assert_saves(async_file, cycles(&a), cycles(&s), coll, frac);
    (cycles(&a), cycles(&s))
}

#[test]
fn async_collectives_in_while_bodies_and_conditional_branches_overlap_the_dot() {
    // A while loop (3 iterations) whose body starts an all-reduce of the carried gradient, runs
    // an independent dot and waits at the done: every iteration overlaps (measured 53119 vs
    // 69232 cycles, docs/ici.md).
    assert_overlaps_in_bodies(
        "tests/pod/async/allreduce_in_while.hlo",
        "tests/pod/async/allreduce_in_while_sync.hlo",
        &[3.0],
        0.4,
    );
    // A conditional nested in a while body (2 iterations): an all-reduce-start in the even
    // branch, a collective-permute-start in the odd one, each with a dot before its done.
    assert_overlaps_in_bodies(
        "tests/pod/async/collectives_in_conditional.hlo",
        "tests/pod/async/collectives_in_conditional_sync.hlo",
        &[1.0, 1.0],
        0.4,
    );
}

#[test]
fn several_asynchronous_collectives_are_in_flight_at_once() {
    // `in_flight` issues its starts one after the other, then an independent dot, then the
    // dones; `one_at_a_time` is the same module with every done but the last right after its
    // start (one collective in flight at a time, as the chip ran them before); `sync` uses the
    // synchronous ops. Exact outputs, 1 and 2 threads identical. With several in flight, the
    // dot is issued at once and runs under all of them, so `in_flight` saves at least `frac`
    // of the smaller of the collectives before the last (measured in `one_at_a_time`) and
    // the rest of the synchronous run (its cycles outside its collectives). The collectives'
    // transfers still follow one another on the in-order ICI queue, so where they add up to
    // more than the dot (the three on 4 chips) the run is bound by them: a smaller `frac`.
    let run = exact_on_1_and_2_threads;
    let cycles = |j: &serde_json::Value| j["cycles"].as_f64().unwrap();
    let coll_cycles = |j: &serde_json::Value| -> Vec<f64> {
        let clock = cycles(j) / j["seconds"].as_f64().unwrap();
        j["collectives"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["measured_seconds"].as_f64().unwrap() * clock)
            .collect()
    };
    for (in_flight, one_at_a_time, sync, frac) in [
        (
            "tests/pod/async/two_allreduces_in_flight.hlo",
            "tests/pod/async/two_allreduces_one_at_a_time.hlo",
            "tests/pod/async/two_allreduces_in_flight_sync.hlo",
            0.5,
        ),
        (
            "tests/pod/async/three_in_flight.hlo",
            "tests/pod/async/three_one_at_a_time.hlo",
            "tests/pod/async/three_in_flight_sync.hlo",
            0.2,
        ),
    ] {
        let (a, o, s) = (run(in_flight), run(one_at_a_time), run(sync));
        let oc = coll_cycles(&o);
        let before_last: f64 = oc[..oc.len() - 1].iter().sum();
        let rest = cycles(&s) - coll_cycles(&s).iter().sum::<f64>();
        assert!(before_last > 0.0 && rest > 0.0, "{before_last} {rest}");
        let bound = cycles(&o) - frac * before_last.min(rest);
        assert!(
            cycles(&a) <= bound,
            "{in_flight}: {} cycles; one at a time {} (collectives before the last \
             {before_last:.0}, the synchronous run's rest {rest:.0}): bound {bound:.0}",
            cycles(&a),
            cycles(&o)
        );
        assert!(cycles(&o) < cycles(&s), "{one_at_a_time} vs {sync}");
    }
}

#[test]
fn a_tuple_all_reduce_start_overlaps_the_dot_before_its_done() {
    // XLA's combined all-reduce of several gradients as one all-reduce-start of three
    // operands (one ring over the buffer they are copied into), an independent dot, the done:
    // exact, and overlapped like the single-operand start (measured 12360 vs 18613 cycles,
    // docs/ici.md).
    assert_overlaps(
        "tests/pod/async/tuple_allreduce_overlap.hlo",
        "tests/pod/async/tuple_allreduce_overlap_sync.hlo",
        &[],
    );
}

#[test]
fn async_reduce_scatter_all_to_all_and_inner_all_gather_overlap_the_dot_before_their_done() {
    // XLA makes a reduce-scatter or an all-to-all asynchronous as an async-start wrapping it
    // (there is no reduce-scatter-start or all-to-all-start): the start issues the ring's
    // reduce-scatter steps and the store of the chip's block, or every block's receive and
    // send; an independent dot runs; the async-done waits. An all-gather along an inner
    // dimension runs its ring into a staging buffer at the start and rearranges the blocks at
    // the done. Exact, overlapped (measured 8361 vs 13775, 9113 vs 14870 and 8970 vs 16149
    // cycles, docs/ici.md), also on the analytic backend.
    let analytic = |f: &str| {
        report(&["run", f, "--timing-only", "--ici", "analytic"])["cycles"]
            .as_f64()
            .unwrap()
    };
    for (a, s) in [
        (
            "tests/pod/async/reducescatter_overlap.hlo",
            "tests/pod/async/reducescatter_overlap_sync.hlo",
        ),
        (
            "tests/pod/async/alltoall_overlap.hlo",
            "tests/pod/async/alltoall_overlap_sync.hlo",
        ),
        (
            "tests/pod/async/allgather_inner_overlap.hlo",
            "tests/pod/async/allgather_inner_overlap_sync.hlo",
        ),
    ] {
        assert_overlaps(a, s, &[]);
        let (x, y) = (analytic(a), analytic(s));
        assert!(x < y, "{a}: analytic: async {x} cycles, sync {y}");
    }
}

#[test]
fn torus_staged_async_collectives_overlap_the_dot_before_their_done() {
    // Groups spanning more than one ICI dimension run in torus stages; asynchronous, the start
    // issues every stage into the unit queues (stage boundaries on the units' semaphores) and
    // the done waits. An all-reduce-start, an async-start wrapping a reduce-scatter and an
    // all-gather-start, each with an independent s8 dot before its done, on a 2x2 torus
    // (tpu-v4 with ici.dims=[2,2,1]); the 8-chip all-reduce on 2x2x2 (three stages). Exact,
    // no race (a race stops the run), 1 and 2 threads identical, and at least half of the
    // smaller of the collective (measured in the synchronous run) and the synchronous run's
    // rest saved (measured 15766 vs 21685, 8772 vs 14975, 8625 vs 14471, 19345 vs 23470 and
    // 20706 vs 24275 cycles, docs/ici.md).
    let t221 = ["--set", "ici.dims=[2,2,1]"];
    let t222 = ["--set", "ici.dims=[2,2,2]"];
    let t44 = ["--set", "ici.topology=torus2d", "--set", "ici.dims=[4,4]"];
    for (a, s, sets) in [
        (
            "tests/pod/async/torus_allreduce_overlap.hlo",
            "tests/pod/async/torus_allreduce_overlap_sync.hlo",
            &t221[..],
        ),
        (
            "tests/pod/async/reducescatter_overlap.hlo",
            "tests/pod/async/reducescatter_overlap_sync.hlo",
            &t221[..],
        ),
        (
            "tests/pod/async/allgather_overlap.hlo",
            "tests/pod/async/allgather_overlap_sync.hlo",
            &t221[..],
        ),
        (
            "tests/pod/async/allreduce_overlap_8.hlo",
            "tests/pod/async/allreduce_overlap_sync_8.hlo",
            &t222[..],
        ),
        // 16 chips on 4x4: 48 ICI commands, more than the queue holds, so the all-gather
        // stages are deferred into the dot's MXU instructions.
        (
            "tests/pod/async/torus_allreduce_overlap_16.hlo",
            "tests/pod/async/torus_allreduce_overlap_sync_16.hlo",
            &t44[..],
        ),
    ] {
        let (ja, js) = (
            exact_on_1_and_2_threads_with(a, sets),
            exact_on_1_and_2_threads_with(s, sets),
        );
        for j in [&ja, &js] {
            let c = j["collectives"].as_array().unwrap();
            assert_eq!(c.len(), 1, "{j}");
            let alg = c[0]["algorithm"].as_str().unwrap();
            assert!(alg.starts_with("torus:"), "{a}: {alg}");
        }
        let cycles = |j: &serde_json::Value| j["cycles"].as_f64().unwrap();
        let clock = cycles(&js) / js["seconds"].as_f64().unwrap();
        let coll = js["collectives"][0]["measured_seconds"].as_f64().unwrap() * clock;
        assert_saves(a, cycles(&ja), cycles(&js), coll, 0.5);
    }
    // Several in flight on 16 chips, on a 2-D and a 3-D torus: two all-reduces (one over two
    // boxes of 8 on 2x4x2, over rings on 4x4), a reduce-scatter and an all-gather in stages,
    // and an all-reduce too small for two lanes per stage (synchronous at its start).
    for (topo, dims) in [
        ("ici.topology=torus2d", "ici.dims=[4,4]"),
        ("ici.topology=torus3d", "ici.dims=[2,4,2]"),
    ] {
        let j = exact_on_1_and_2_threads_with(
            "tests/pod/async/torus_stages_in_flight_16.hlo",
            &["--set", topo, "--set", dims],
        );
        assert_eq!(j["collectives"].as_array().unwrap().len(), 5, "{j}");
    }
}

#[test]
fn an_8_chip_ring_start_does_not_stall_the_dot_behind_the_full_ici_queue() {
    // The ring of 8 needs 56 ICI commands, the ICI queue holds 32: the start issues the
    // reduce-scatter's and defers the all-gather's into the MXU instructions of the dot
    // lowered next, so the sequencer issues the dot instead of waiting for queue slots.
    // Timing only: as fast as with a queue deep enough never to stall (measured 24224 cycles
    // both; 28397 when the start issued all 56), and faster than the synchronous all-reduce
    // (41812).
    let f = "tests/pod/async/allreduce_overlap_8_large_dot.hlo";
    let run = |f: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            f,
            "--timing-only",
            "--set",
            "ici.topology=ring",
            "--set",
            "ici.dims=[8]",
        ];
        args.extend_from_slice(extra);
        report(&args)["cycles"].as_f64().unwrap()
    };
    let (a, deep) = (
        run(f, &[]),
        run(f, &["--set", "sequencer.queue_depth=1024"]),
    );
    assert!(a <= deep * 1.01, "{a} cycles, {deep} with a deep ICI queue");
    let s = run(
        "tests/pod/async/allreduce_overlap_sync_8_large_dot.hlo",
        &[],
    );
    assert!(a < s, "{a} cycles, synchronous {s}");
}
