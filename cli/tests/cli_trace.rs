//! `systole run --trace` of the transformer block (tests/models/transformer_block_opt): valid
//! Chrome trace JSON with named processes and unit tracks, counter tracks per chip, slices that
//! never overlap on a track, and aggregation (`--trace-granularity`) that cuts the slices while
//! keeping every track's busy time; the same bytes on a re-run.

mod common;
use common::*;
use std::collections::{BTreeMap, BTreeSet};

const MODEL: &str = "tests/models/transformer_block_opt/module.hlo";

/// Runs the transformer block timing-only with `--trace` and `extra`; the trace's bytes.
fn trace(tag: &str, extra: &[&str]) -> Vec<u8> {
    let path =
        std::env::temp_dir().join(format!("systole-trace-{tag}-{}.json", std::process::id()));
    let p = path.to_str().unwrap();
    let mut args = vec!["run", MODEL, "--timing-only", "--trace", p];
    args.extend_from_slice(extra);
    let o = systole(&args);
    assert_eq!(o.status.code(), Some(0), "{}", all_text(&o));
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).ok();
    bytes
}

/// A slice: ts µs, dur µs, cycle, cycles, busy cycles.
type Slice = (f64, f64, u64, u64, u64);

struct Parsed {
    clock_mhz: f64,
    /// Track name (`chipN/unit`) → slices (ts µs, dur µs, cycle, cycles, busy cycles).
    tracks: BTreeMap<String, Vec<Slice>>,
    /// Counter name → chips that have it.
    counters: BTreeMap<String, BTreeSet<u64>>,
    /// Counter name → values.
    values: BTreeMap<String, Vec<f64>>,
    processes: BTreeSet<String>,
    slices: usize,
}

fn parse(bytes: &[u8]) -> Parsed {
    let j: serde_json::Value = serde_json::from_slice(bytes).expect("valid JSON");
    let ev = j["traceEvents"].as_array().expect("traceEvents");
    assert_eq!(j["otherData"]["time_unit"], "us");
    let clock_mhz = j["otherData"]["clock_mhz"].as_f64().unwrap();
    let mut threads = BTreeMap::new();
    let mut processes = BTreeSet::new();
    for e in ev.iter().filter(|e| e["ph"] == "M") {
        let name = e["args"]["name"].as_str().unwrap().to_string();
        match e["name"].as_str().unwrap() {
            "process_name" => {
                processes.insert(name);
            }
            "thread_name" => {
                let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
                assert!(threads.insert(key, name).is_none(), "{key:?} named twice");
            }
            other => panic!("unexpected metadata {other}"),
        }
    }
    let mut tracks: BTreeMap<String, Vec<_>> = BTreeMap::new();
    let mut counters: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut slices = 0;
    for e in ev {
        match e["ph"].as_str().unwrap() {
            "X" => {
                slices += 1;
                let pid = e["pid"].as_u64().unwrap();
                let key = (pid, e["tid"].as_u64().unwrap());
                let name = threads
                    .get(&key)
                    .unwrap_or_else(|| panic!("unnamed track {e}"));
                let a = &e["args"];
                let cycles = a["cycles"].as_u64().unwrap();
                tracks
                    .entry(format!("chip{pid}/{name}"))
                    .or_default()
                    .push((
                        e["ts"].as_f64().unwrap(),
                        e["dur"].as_f64().unwrap(),
                        a["cycle"].as_u64().unwrap(),
                        cycles,
                        a["busy_cycles"].as_u64().unwrap_or(cycles),
                    ));
            }
            "C" => {
                let name = e["name"].as_str().unwrap().to_string();
                counters
                    .entry(name.clone())
                    .or_default()
                    .insert(e["pid"].as_u64().unwrap());
                let args = e["args"].as_object().unwrap();
                assert_eq!(args.len(), 1, "{e}");
                values
                    .entry(name)
                    .or_default()
                    .push(args.values().next().unwrap().as_f64().unwrap());
            }
            "M" => {}
            other => panic!("unexpected phase {other}"),
        }
    }
    Parsed {
        clock_mhz,
        tracks,
        counters,
        values,
        processes,
        slices,
    }
}

#[test]
fn transformer_block_trace_has_named_tracks_counters_and_no_overlap() {
    let bytes = trace("full", &["--trace-granularity", "0"]);
    let t = parse(&bytes);
    assert_eq!(t.processes, BTreeSet::from(["chip0".to_string()]));
    for unit in [
        "core0.seq",
        "core0.dma",
        "core0.vpu",
        "core0.mxu0",
        "core0.mxu3",
    ] {
        assert!(
            t.tracks.contains_key(&format!("chip0/{unit}")),
            "no {unit} track: {:?}",
            t.tracks.keys()
        );
    }
    for c in ["HBM bandwidth", "VMEM bandwidth", "MXU utilization"] {
        assert_eq!(
            t.counters.get(c),
            Some(&BTreeSet::from([0])),
            "counter {c}: {:?}",
            t.counters
        );
    }
    // The block loads its weights from HBM and runs its matmuls on the MXUs.
    let max = |c: &str| t.values[c].iter().cloned().fold(0.0, f64::max);
    assert!(max("HBM bandwidth") > 0.0 && max("VMEM bandwidth") > 0.0);
    assert!(max("MXU utilization") > 0.0 && max("MXU utilization") <= 100.0);
    // The compiled program carries its VMEM plan: core 0's occupancy rises above zero while
    // its buffers are live and never exceeds the chip's VMEM (tpu-v4: 16 MiB per core).
    assert_eq!(
        t.counters.get("core0 VMEM occupancy"),
        Some(&BTreeSet::from([0]))
    );
    let occ = max("core0 VMEM occupancy");
    assert!(occ > 0.0 && occ <= 16.0, "{occ}");
    for (name, v) in &t.tracks {
        let mut v = v.clone();
        v.sort_by_key(|s| s.2);
        for w in v.windows(2) {
            // In cycles exactly, and in µs up to the printed precision.
            assert!(
                w[0].2 + w[0].3 <= w[1].2,
                "{name}: {:?} overlaps {:?}",
                w[0],
                w[1]
            );
            assert!(
                w[0].0 + w[0].1 <= w[1].0 + 1e-9,
                "{name}: {:?} {:?}",
                w[0],
                w[1]
            );
        }
        for s in &v {
            // ts is the cycle at the preset's clock.
            assert!(
                (s.0 - s.2 as f64 / t.clock_mhz).abs() < 1e-6,
                "{name}: {s:?}"
            );
        }
    }
    // Deterministic: the same bytes again.
    assert!(bytes == trace("again", &["--trace-granularity", "0"]));
}

#[test]
fn aggregation_cuts_slices_and_keeps_busy_time_per_track() {
    let full = parse(&trace("g0", &["--trace-granularity", "0"]));
    let agg = parse(&trace("g64", &["--trace-granularity", "64"]));
    assert!(
        agg.slices < full.slices,
        "{} slices aggregated, {} not",
        agg.slices,
        full.slices
    );
    assert_eq!(
        full.tracks.keys().collect::<Vec<_>>(),
        agg.tracks.keys().collect::<Vec<_>>()
    );
    for (name, f) in &full.tracks {
        let a = &agg.tracks[name];
        let busy = |v: &[Slice]| v.iter().map(|s| s.4).sum::<u64>();
        assert_eq!(busy(f), busy(a), "{name}: busy cycles");
        let us_full: f64 = f.iter().map(|s| s.1).sum();
        let us_agg: f64 = a
            .iter()
            .map(|s| {
                if s.3 == s.4 {
                    s.1
                } else {
                    s.4 as f64 / agg.clock_mhz
                }
            })
            .sum();
        assert!(
            (us_full - us_agg).abs() <= 1e-6 * (f.len() + a.len()) as f64,
            "{name}: busy {us_full} µs vs {us_agg} µs"
        );
        // Short slices (under 64 cycles) only are merged: long ones stay.
        let long = |v: &[Slice]| v.iter().filter(|s| s.3 >= 64 && s.3 == s.4).count();
        assert!(long(a) >= long(f), "{name}");
    }
}

#[test]
fn auto_granularity_keeps_a_trace_under_its_slice_budget() {
    let full = parse(&trace("auto-full", &[]));
    let j: serde_json::Value =
        serde_json::from_slice(&trace("auto-200", &["--trace-max-slices", "200"])).unwrap();
    let g = j["otherData"]["granularity_cycles"].as_u64().unwrap();
    let written = j["otherData"]["slices_written"].as_u64().unwrap() as usize;
    assert_eq!(
        j["otherData"]["slices"].as_u64().unwrap() as usize,
        full.slices
    );
    assert!(full.slices > 200, "{} slices", full.slices);
    // The smallest power of two that fits: half of it would not.
    assert!(
        g.is_power_of_two() && written <= 200,
        "{g} cycles: {written}"
    );
    let half = parse(&trace(
        "auto-half",
        &["--trace-granularity", &(g / 2).to_string()],
    ));
    assert!(
        half.slices > 200,
        "{} cycles: {} slices",
        g / 2,
        half.slices
    );
}

#[test]
fn bad_trace_options_are_user_errors() {
    for (flag, v, msg) in [
        ("--trace-granularity", "soon", "--trace-granularity must be"),
        (
            "--trace-interval",
            "0",
            "--trace-interval must be at least 1",
        ),
    ] {
        let p = std::env::temp_dir().join(format!("systole-trace-bad-{}.json", std::process::id()));
        let o = systole(&[
            "run",
            MODEL,
            "--timing-only",
            "--trace",
            p.to_str().unwrap(),
            flag,
            v,
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", all_text(&o));
        assert!(all_text(&o).contains(msg), "{}", all_text(&o));
    }
}

#[test]
fn timeline_plot_colours_aggregates_by_their_most_frequent_op() {
    let dir = std::env::temp_dir().join(format!("systole-trace-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = dir.join("t.json");
    let svg = dir.join("t.svg");
    let o = systole(&[
        "run",
        MODEL,
        "--timing-only",
        "--trace",
        t.to_str().unwrap(),
        "--trace-granularity",
        "64",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", all_text(&o));
    for (by, want) in [("op", "dot_general"), ("instruction", "mxu.matmul")] {
        let o = systole(&[
            "plot",
            t.to_str().unwrap(),
            "--kind",
            "timeline",
            "--color-by",
            by,
            "-o",
            svg.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", all_text(&o));
        let text = std::fs::read_to_string(&svg).unwrap();
        // The legend names ops or instructions, never an aggregate's `N × op` / `N ops`.
        assert!(text.contains(want), "--color-by {by}: no {want}");
        assert!(
            !text.contains(" × "),
            "--color-by {by}: an aggregate's name in the legend"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
