//! Unit tests of presets, validation and overrides.

use arch::{ArchConfig, ArchError, MxuDtype, Topology, PRESETS};

#[test]
fn every_preset_loads_and_validates() {
    for (name, _) in PRESETS {
        let c = ArchConfig::preset(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(c.name, *name);
    }
}

#[test]
fn preset_peaks_match_public_figures() {
    // Published peaks: TPUv1 92 TOPS, v4 275 TFLOPS, v5e 197 TFLOPS, v5p 459 TFLOPS, v6e 918
    // TFLOPS (within 1%).
    for (name, peak) in [
        ("tpu-v1", 92e12),
        ("tpu-v4", 275e12),
        ("tpu-v5e", 197e12),
        ("tpu-v5p", 459e12),
        ("tpu-v6e", 918e12),
    ] {
        let c = ArchConfig::preset(name).unwrap();
        let got = c.peak_ops_per_second();
        assert!((got / peak - 1.0).abs() < 0.01, "{name}: {got} vs {peak}");
    }
}

#[test]
fn ici_links_match_published_per_chip_bandwidth() {
    // Google Cloud TPU pages: bidirectional ICI bandwidth per chip (GB/s) and ports per chip;
    // per link per direction = total / links / 2. v4 has no per-chip figure: its pod
    // all-reduce bandwidth (1.1 PB/s over 4096 chips) is per chip, links x one direction.
    for (name, links, bidi_per_chip) in [
        ("tpu-v5e", 4, 400.0),
        ("tpu-v5p", 6, 1200.0),
        ("tpu-v6e", 4, 800.0),
        ("tpu-v4", 6, 2.0 * 1.1e6 / 4096.0),
    ] {
        let c = ArchConfig::preset(name).unwrap();
        assert_eq!(c.ici.links_per_chip, links, "{name}");
        let got = 2.0 * links as f64 * c.ici.gbps_per_link;
        assert!(
            (got / bidi_per_chip - 1.0).abs() < 0.01,
            "{name}: {got} vs {bidi_per_chip}"
        );
        assert!(!c.is_guessed("ici.gbps_per_link"), "{name}");
        assert!(
            c.is_guessed("ici.hop_latency_ns"),
            "{name}: no public figure"
        );
    }
}

#[test]
fn ici_default_slices_follow_the_wraparound_rules() {
    // v4/v5p: a full 4x4x4 cube wraps on every axis (optical switches); v5e/v6e: an axis wraps
    // only when it spans the full 16 chips of the pod, so the default is the full 16x16 pod.
    for (name, topo, dims) in [
        ("tpu-v4", Topology::Torus3d, vec![4, 4, 4]),
        ("tpu-v5p", Topology::Torus3d, vec![4, 4, 4]),
        ("tpu-v5e", Topology::Torus2d, vec![16, 16]),
        ("tpu-v6e", Topology::Torus2d, vec![16, 16]),
    ] {
        let c = ArchConfig::preset(name).unwrap();
        assert_eq!(c.ici.topology, topo, "{name}");
        assert_eq!(c.ici.dims, dims, "{name}");
        assert!(c.ici.wrap.is_empty(), "{name}: every dimension wraps");
    }
    // The full pods and the no-wrap sub-slices the notes describe resolve.
    let v5p = ArchConfig::resolve("tpu-v5p", &["ici.dims=[16,20,28]"]).unwrap();
    assert_eq!(v5p.ici.chips(), 8960);
    let v6e = ArchConfig::resolve(
        "tpu-v6e",
        &[
            r#"ici={"topology":"torus2d","dims":[4,4],"links_per_chip":4,"gbps_per_link":100,"hop_latency_ns":1000,"wrap":[false,false]}"#,
            "ici.dims=[8,16]",
            "ici.wrap=[false,true]",
        ],
    )
    .unwrap();
    assert_eq!(v6e.ici.wrap, vec![false, true]);
    assert_eq!(v6e.ici.chips(), 128);
}

#[test]
fn every_preset_has_the_same_keys() {
    // arch/PRESETS.md lists one row per key of the first preset: every preset must have the
    // same leaves (e.g. all or none list ici.wrap).
    fn keys(prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    keys(&format!("{prefix}.{k}"), x, out);
                }
            }
            _ => out.push(prefix.to_string()),
        }
    }
    let all: Vec<Vec<String>> = PRESETS
        .iter()
        .map(|(n, _)| {
            let mut out = Vec::new();
            keys(
                "",
                &serde_json::to_value(ArchConfig::preset(n).unwrap()).unwrap(),
                &mut out,
            );
            out
        })
        .collect();
    for (k, (name, _)) in PRESETS.iter().enumerate() {
        assert_eq!(all[k], all[0], "{name} vs {}", PRESETS[0].0);
    }
}

#[test]
fn v1_accumulators_are_4_mib() {
    let c = ArchConfig::preset("tpu-v1").unwrap();
    assert_eq!(c.mxu.acc_bytes(), 4 << 20);
    assert_eq!(c.vmem.bytes, 24 << 20);
}

#[test]
fn json_round_trip() {
    for (name, _) in PRESETS {
        let c = ArchConfig::preset(name).unwrap();
        let back = ArchConfig::from_json(&c.to_json(), "round trip").unwrap();
        assert_eq!(c, back);
    }
}

#[test]
fn save_and_load_file() {
    let c = ArchConfig::resolve("mini", &["mxu.rows=16"]).unwrap();
    let path = std::env::temp_dir().join(format!("arch-test-{}.json", std::process::id()));
    c.save(&path).unwrap();
    let back = ArchConfig::resolve(path.to_str().unwrap(), &["mxu.cols=4"]).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(back.mxu.rows, 16);
    assert_eq!(back.mxu.cols, 4);
}

#[test]
fn overrides_of_every_kind() {
    let c = ArchConfig::resolve(
        "mini",
        &[
            "mxu.rows=16",
            "mxu.dtype=bf16",
            "hbm.gbps=3.5",
            "vmem.bytes=1MiB",
            "ici.topology=torus2d",
            "ici.dims=[2,3]",
            "ici.links_per_chip=4",
            "ici.dims.1=5",
            "description=hello world",
            "mxu.double_buffered_weights=true",
            "vpu.transcendental.latency=20",
        ],
    )
    .unwrap();
    assert_eq!(c.mxu.rows, 16);
    assert_eq!(c.mxu.dtype, MxuDtype::Bf16);
    assert_eq!(c.hbm.gbps, 3.5);
    assert_eq!(c.vmem.bytes, 1 << 20);
    assert_eq!(c.ici.topology, Topology::Torus2d);
    assert_eq!(c.ici.dims, vec![2, 5]);
    assert_eq!(c.description, "hello world");
    assert_eq!(c.vpu.transcendental.latency, 20);
}

#[test]
fn unknown_key_lists_nearby_keys() {
    let e = ArchConfig::resolve("mini", &["mxu.rowz=16"]).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, ArchError::UnknownKey { .. }), "{msg}");
    assert!(msg.contains("mxu.rowz"), "{msg}");
    assert!(msg.contains("mxu.rows"), "{msg}");
    let e = ArchConfig::resolve("mini", &["mxx.rows=16"]).unwrap_err();
    assert!(e.to_string().contains("nearby keys: mxu"), "{e}");
    let e = ArchConfig::resolve("mini", &["ici.dims.7=1"]).unwrap_err();
    assert!(e.to_string().contains("has 1 entries"), "{e}");
    let e = ArchConfig::resolve("mini", &["mxu.rows.x=1"]).unwrap_err();
    assert!(e.to_string().contains("plain value"), "{e}");
}

#[test]
fn bad_values_are_clear() {
    let e = ArchConfig::resolve("mini", &["mxu.rows=abc"]).unwrap_err();
    assert!(e.to_string().contains("expected an integer"), "{e}");
    let e = ArchConfig::resolve("mini", &["mxu.rows=1.5"]).unwrap_err();
    assert!(e.to_string().contains("expected an integer"), "{e}");
    let e = ArchConfig::resolve("mini", &["mxu.dtype=fp8"]).unwrap_err();
    assert!(e.to_string().contains("unknown variant"), "{e}");
    let e = ArchConfig::resolve("mini", &["mxu.double_buffered_weights=yes"]).unwrap_err();
    assert!(e.to_string().contains("true or false"), "{e}");
    let e = ArchConfig::resolve("mini", &["norows"]).unwrap_err();
    assert!(matches!(e, ArchError::OverrideSyntax { .. }), "{e}");
}

#[test]
fn validation_rules() {
    let cases: &[(&[&str], &str)] = &[
        (&["mxu.rows=0"], "mxu.rows must be >= 1 and <= 1024"),
        (&["mxu.rows=1025"], "mxu.rows must be >= 1 and <= 1024"),
        (&["mxu.cols=0"], "mxu.cols"),
        (&["mxu.count=17"], "mxu.count"),
        (&["mxu.acc_rows=0"], "mxu.acc_rows"),
        (
            &["vmem.bytes=64"],
            "must hold at least one 8x8 weight tile (128 bytes)",
        ),
        (
            &["mxu.dtypes=[\"int8\"]", "mxu.dtype=bf16"],
            "must be one of mxu.dtypes",
        ),
        (&["mxu.dtypes=[]"], "mxu.dtypes must not be empty"),
        (&["mxu.dtypes=[\"int8\",\"int8\"]"], "twice"),
        (&["mxu.dataflow=output_stationary"], "not supported yet"),
        (&["mxu.double_buffered_weights=false"], "not supported yet"),
        (&["clock_mhz=0"], "clock_mhz"),
        (&["cores_per_chip=0"], "cores_per_chip"),
        (&["hbm.gbps=-1"], "hbm.gbps"),
        (&["ici.topology=torus3d"], "ici.dims must have 3 entries"),
        (&["ici.dims=[0]"], "ici.dims entries"),
        (&["ici.links_per_chip=1"], "ici.links_per_chip must be >= 2"),
        (&["vpu.alu.elems_per_cycle=0"], "vpu.alu.elems_per_cycle"),
        (&["guessed=[\"mxu.nope\"]"], "guessed lists `mxu.nope`"),
        (&["sequencer.queue_depth=0"], "queue_depth"),
    ];
    for (ov, want) in cases {
        let e = ArchConfig::resolve("mini", ov).unwrap_err();
        assert!(matches!(e, ArchError::Invalid { .. }), "{ov:?} gave {e}");
        assert!(e.to_string().contains(want), "{ov:?}: `{e}` lacks `{want}`");
    }
}

#[test]
fn all_violations_are_reported_together() {
    let e = ArchConfig::resolve("mini", &["mxu.rows=0", "mxu.cols=0"]).unwrap_err();
    match e {
        ArchError::Invalid { errors, .. } => assert_eq!(errors.len(), 2, "{errors:?}"),
        other => panic!("{other}"),
    }
}

#[test]
fn single_chip_needs_no_links() {
    let c = ArchConfig::preset("tpu-v1").unwrap();
    assert_eq!(c.ici.chips(), 1);
    assert_eq!(c.ici.links_per_chip, 0);
}

#[test]
fn unknown_arch_names_presets() {
    let e = ArchConfig::resolve("tpu-v9", &[] as &[&str]).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("tpu-v4") && msg.contains("mini"), "{msg}");
}

#[test]
fn unknown_json_field_is_rejected() {
    let mut v: serde_json::Value =
        serde_json::from_str(&ArchConfig::preset("mini").unwrap().to_json()).unwrap();
    v["mxu"]["bogus"] = serde_json::json!(1);
    let e = ArchConfig::from_json(&v.to_string(), "x.json").unwrap_err();
    assert!(e.to_string().contains("bogus"), "{e}");
}

#[test]
fn guessed_marks_sections() {
    let c = ArchConfig::preset("tpu-v4").unwrap();
    assert!(c.is_guessed("vmem.bytes"));
    assert!(c.is_guessed("ici.hop_latency_ns"));
    assert!(!c.is_guessed("mxu.rows"));
    assert!(!c.is_guessed("hbm.gbps"));
}

#[test]
fn derived_helpers() {
    let c = ArchConfig::preset("mini").unwrap();
    // 100 MHz: 1 cycle = 10 ns; 1.6 GB/s = 16 bytes per cycle.
    assert_eq!(c.cycles_from_ns(100.0), 10);
    assert_eq!(c.cycles_from_ns(101.0), 11);
    assert!((c.bytes_per_cycle(c.hbm.gbps) - 16.0).abs() < 1e-9);
    assert_eq!(c.vpu.alu.busy_cycles(17), 2);
    assert_eq!(c.vpu.elems_per_vreg(), 16);
}

#[test]
fn presets_md_is_fresh() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("PRESETS.md");
    let want = arch::presets_markdown();
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "arch/PRESETS.md is stale: regenerate it with `BLESS=1 cargo test -p arch presets_md`"
    );
}

/// Every leaf of every preset is overridable: setting it to its own printed value is a no-op,
/// and setting a number to a different valid value changes exactly that field.
#[test]
fn every_field_is_overridable() {
    fn leaves(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, serde_json::Value)>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    leaves(&p, x, out);
                }
            }
            other => out.push((prefix.to_string(), other.clone())),
        }
    }
    for (name, _) in PRESETS {
        let c = ArchConfig::preset(name).unwrap();
        let mut all = Vec::new();
        leaves("", &serde_json::to_value(&c).unwrap(), &mut all);
        assert!(all.len() > 40, "{name}: {} leaves", all.len());
        for (path, v) in &all {
            let text = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let o = format!("{path}={text}");
            let back =
                ArchConfig::resolve(name, &[o.as_str()]).unwrap_or_else(|e| panic!("{o}: {e}"));
            assert_eq!(back, c, "{o}");
        }
    }
    let c = ArchConfig::resolve(
        "tpu-v4",
        &["hbm.latency_ns=123.5", "vpu.cross_lane.latency=9"],
    )
    .unwrap();
    assert_eq!(c.hbm.latency_ns, 123.5);
    assert_eq!(c.vpu.cross_lane.latency, 9);
    let mut expect = ArchConfig::preset("tpu-v4").unwrap();
    expect.hbm.latency_ns = 123.5;
    expect.vpu.cross_lane.latency = 9;
    assert_eq!(c, expect);
}

/// `ici.wrap` is documented as a `--set` key; it was rejected as unknown while an empty list was
/// left out of the JSON tree the overrides walk.
#[test]
fn ici_wrap_is_settable_with_set_even_when_the_preset_leaves_it_empty() {
    let c = ArchConfig::resolve(
        "tpu-v4",
        &["ici.dims=[4,2,1]", "ici.wrap=[false,true,true]"],
    )
    .unwrap();
    assert_eq!(c.ici.wrap, vec![false, true, true]);
    let e = ArchConfig::resolve("tpu-v4", &["ici.wrap=[false]"]).unwrap_err();
    assert!(e.to_string().contains("ici.wrap must be empty"), "{e}");
}
