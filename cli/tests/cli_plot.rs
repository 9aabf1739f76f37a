//! `systole plot` end to end: every kind renders a real PNG and SVG from the files `run` and
//! `sweep` write, the same bytes twice, and bad inputs are exit-2 errors naming the problem.

mod common;
use common::{out_err, systole};
use std::path::PathBuf;
use std::sync::OnceLock;

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("systole-plot-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn p(name: &str) -> String {
    dir().join(name).to_str().unwrap().to_string()
}

const BLOCK: &str = "tests/models/transformer_block_opt/module.hlo";

/// The trace, report and sweep every test draws (made once per test binary).
fn inputs() -> &'static (String, String, String) {
    static I: OnceLock<(String, String, String)> = OnceLock::new();
    I.get_or_init(|| {
        let (t, r, s) = (p("t.json"), p("r.json"), p("s.csv"));
        let o = systole(&[
            "run",
            BLOCK,
            "--inputs",
            "tests/models/transformer_block_opt/case.json",
            "--f32-dot-passes",
            "6",
            "--trace",
            &t,
            "--report",
            &r,
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", out_err(&o).1);
        let o = systole(&[
            "sweep",
            "tests/golden/compiler/gemm_bf16_512x256x384.hlo",
            "--timing-only",
            "--set",
            "mxu.rows=64,128",
            "--set",
            "hbm.gbps=300,1200",
            "-o",
            &s,
            "--json",
            &p("s.json"),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", out_err(&o).1);
        (t, r, s)
    })
}

fn plot(args: &[&str]) -> (Option<i32>, String, String) {
    let mut a = vec!["plot"];
    a.extend(args);
    let o = systole(&a);
    let (out, err) = out_err(&o);
    (o.status.code(), out, err)
}

/// PNG width and height from the IHDR chunk, after checking the signature.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

/// Renders `kind` from `input` as PNG and SVG; checks the PNG (signature, size, not blank) and
/// returns the SVG text.
fn render(kind: &str, input: &str, extra: &[&str]) -> String {
    // One file name per call: tests run in parallel and may draw the same input alike.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tag: String = format!("{kind}{}{}{n}", input, extra.concat())
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let png = p(&format!("{tag}.png"));
    let mut a = vec![input, "--kind", kind, "-o", &png];
    a.extend(extra);
    let (code, out, err) = plot(&a);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("wrote"), "{out}");
    let bytes = std::fs::read(&png).unwrap();
    let (w, h) = png_size(&bytes);
    assert!(w >= 1000 && h >= 400, "{w}x{h}");
    // A picture with axes, bars and text compresses to tens of kB; a blank one to a few hundred bytes.
    assert!(bytes.len() > 20_000, "{kind}: PNG of {} bytes", bytes.len());
    let svg = p(&format!("{tag}.svg"));
    let mut a = vec![input, "--kind", kind, "-o", &svg];
    a.extend(extra);
    let (code, _, err) = plot(&a);
    assert_eq!(code, Some(0), "{err}");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "{}", &text[..100.min(text.len())]);
    assert!(text.trim_end().ends_with("</svg>"));
    text
}

#[test]
fn timeline_draws_every_unit_lane_and_the_top_ops() {
    let (t, _, _) = inputs();
    let svg = render("timeline", t, &[]);
    assert!(svg.contains("time (cycles)"), "no x axis label");
    for lane in ["core0.mxu0", "core0.dma", "core0.vpu"] {
        assert!(svg.contains(&format!("\n{lane}\n")), "no lane {lane}");
    }
    // The legend names the op with the most unit time (the report's first op).
    assert!(svg.contains("dot_general"), "no HLO op in the legend");
    assert!(svg.matches("<rect").count() > 100, "too few slices");
}

#[test]
fn timeline_lanes_can_merge_and_colour_by_instruction() {
    let (t, _, _) = inputs();
    let split = render("timeline", t, &[]);
    let merged = render(
        "timeline",
        t,
        &["--merge-lanes", "--color-by", "instruction"],
    );
    assert!(
        split.contains("\ncore0.mxu0 #1\n"),
        "overlap lanes by default"
    );
    assert!(
        !merged.contains(" #1\n"),
        "--merge-lanes keeps one lane per unit"
    );
    assert!(merged.contains("\ncore0.mxu0\n"));
    for i in ["mxu.matmul", "mxu.ldw", "dma.copy"] {
        assert!(merged.contains(&format!("\n{i}\n")), "no {i} in the legend");
    }
    assert!(merged.contains("colour = instruction"));
}

#[test]
fn a_pods_chips_are_drawn_together_or_one_by_one() {
    let (t, r) = (p("pod_t.json"), p("pod_r.json"));
    let o = systole(&[
        "run",
        "tests/golden/compiler/pod_collectives_torus_2x2.hlo",
        "--timing-only",
        "--trace",
        &t,
        "--report",
        &r,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", out_err(&o).1);
    let all = render("utilization", &r, &[]);
    assert!(all.contains("\nchip3.core0.ici\n"), "every chip's units");
    let one = render("utilization", &r, &["--chip", "2"]);
    assert!(
        one.contains("\ncore0.ici\n") && !one.contains("chip3"),
        "chip 2 only"
    );
    let tl = render("timeline", &t, &["--chip", "1"]);
    assert!(
        tl.contains("\ncore0.ici\n") && !tl.contains("chip0 "),
        "chip 1 only"
    );
    let tl = render("timeline", &t, &[]);
    assert!(tl.contains("\nchip3 core0.ici\n"), "every chip's lanes");
    let (code, _, err) = plot(&[
        &r,
        "--kind",
        "utilization",
        "--chip",
        "9",
        "-o",
        &p("x.png"),
    ]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--chip 9: the report has no units of chip 9 (4 chip(s))"),
        "{err}"
    );
}

#[test]
fn utilization_stacks_busy_stall_idle_per_unit() {
    let (_, r, _) = inputs();
    let svg = render("utilization", r, &[]);
    assert!(svg.contains("share of the run"), "no x axis label");
    for w in ["\nbusy\n", "\nidle\n", "stall: semaphore", "\ncore0.mxu0\n"] {
        assert!(svg.contains(w), "missing {w:?}");
    }
}

#[test]
fn roofline_places_ops_under_the_presets_ceilings() {
    let (_, r, _) = inputs();
    let svg = render("roofline", r, &[]);
    assert!(svg.contains("arithmetic intensity (FLOP/byte)"));
    assert!(svg.contains("achieved (FLOP/s)"));
    // tpu-v4: 2 cores x 4 MXUs x 128 x 128 x 2 x 1050 MHz.
    assert!(svg.contains("MXU peak 275 TFLOP/s"), "no compute ceiling");
    assert!(svg.contains("HBM 1.2 TB/s"), "no bandwidth ceiling");
    assert!(svg.matches("<circle").count() >= 8, "too few op points");
}

#[test]
fn ops_bars_are_the_reports_top_ops() {
    let (_, r, _) = inputs();
    let svg = render("ops", r, &["--top", "5"]);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r).unwrap()).unwrap();
    let ops = report["ops"].as_array().unwrap();
    for o in &ops[..5] {
        let name = o["hlo"].as_str().unwrap();
        assert!(svg.contains(name), "top op {name} not drawn");
    }
    assert!(
        !svg.contains(ops[6]["hlo"].as_str().unwrap()),
        "--top 5 shows more"
    );
    assert!(svg.contains("unit-busy cycles"));
}

#[test]
fn sweep_draws_one_line_per_other_parameter_from_csv_and_json() {
    let (_, _, s) = inputs();
    let svg = render("sweep", s, &[]);
    assert!(
        svg.contains("\nmxu.rows\n"),
        "x axis is the first swept parameter"
    );
    assert!(svg.contains("hbm.gbps=300") && svg.contains("hbm.gbps=1200"));
    let svg = render(
        "sweep",
        &p("s.json"),
        &["--x", "hbm.gbps", "--y", "tflop_per_s", "--log-x"],
    );
    assert!(svg.contains("hbm.gbps (GB/s)"));
    assert!(svg.contains("tflop_per_s (TFLOP/s)"));
    assert!(svg.contains("mxu.rows=64") && svg.contains("mxu.rows=128"));
}

#[test]
fn sweep_of_long_text_values_is_categorical_with_shortened_labels() {
    // A sweep over whole JSON objects (quoted CSV fields), one point failed.
    let csv = p("objects.csv");
    let long = |n: u32| {
        format!("\"{{\"\"count\"\":{n},\"\"rows\"\":128,\"\"cols\"\":128,\"\"acc_rows\"\":2048,\"\"dtype\"\":\"\"bf16\"\",\"\"dataflow\"\":\"\"weight_stationary\"\"}}\"")
    };
    let text = format!(
        "point,mxu,hbm.gbps,status,cycles,seconds,mxu_utilization,tflop_per_s,busiest_unit,busiest_fraction,error\n\
         0/4,{a},300,ok,8000,1e-5,0.5,10,chip0.core0.dma,0.9,\n\
         1/4,{a},1200,ok,5000,1e-5,0.5,10,chip0.core0.dma,0.9,\n\
         2/4,{b},300,ok,7000,1e-5,0.5,10,chip0.core0.dma,0.9,\n\
         3/4,{b},1200,error,,,,,,,\"does not fit, really\"\n",
        a = long(1),
        b = long(2)
    );
    std::fs::write(&csv, text).unwrap();
    let svg = render("sweep", &csv, &[]);
    assert!(
        svg.contains("3 points (1 with an error not shown)"),
        "subtitle"
    );
    // Tick labels are the values themselves, shortened in the middle to fit.
    // (SVG escapes the quotes.)
    assert!(svg.contains("{&quot;count&quot;:1,"), "no category label");
    assert!(svg.contains('…'), "long labels are not shortened");
    let (code, _, err) = plot(&[&csv, "--kind", "sweep", "--log-x", "-o", &p("o.png")]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--log-x: `mxu` has values that are not positive numbers"),
        "{err}"
    );
}

#[test]
fn the_same_input_gives_the_same_bytes() {
    let (_, r, _) = inputs();
    let a = p("det-a.png");
    let b = p("det-b.png");
    assert_eq!(plot(&[r, "--kind", "ops", "-o", &a]).0, Some(0));
    assert_eq!(plot(&[r, "--kind", "ops", "-o", &b]).0, Some(0));
    assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
}

#[test]
fn bad_inputs_are_exit_2_with_the_reason() {
    let (t, r, s) = inputs();
    let out = p("bad.png");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![r, "--kind", "timeline"], "not a trace"),
        (vec![t, "--kind", "utilization"], "not a run report"),
        (vec![s, "--kind", "roofline"], "not JSON"),
        (vec![r, "--kind", "sweep"], "not a sweep"),
        (
            vec![s, "--kind", "sweep", "--y", "watts"],
            "--y watts: no such column",
        ),
        (
            vec![s, "--kind", "sweep", "--x", "vmem.bytes"],
            "--x vmem.bytes: no such swept parameter",
        ),
        (
            vec![s, "--kind", "sweep", "--y", "busiest_unit"],
            "not a number",
        ),
        (vec!["no/such/file.json", "--kind", "ops"], "cannot read"),
        (vec![r, "--kind", "ops", "--size", "10x10"], "--size 10x10"),
    ];
    for (args, want) in cases {
        let mut a = args.clone();
        a.extend(["-o", &out]);
        let (code, _, err) = plot(&a);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let (code, _, err) = plot(&[r, "--kind", "ops", "-o", &p("x.jpg")]);
    assert_eq!(code, Some(2));
    assert!(err.contains(".png or .svg"), "{err}");
    // A report from before per-op costs: the roofline says what is missing.
    let mut old: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r).unwrap()).unwrap();
    for o in old["ops"].as_array_mut().unwrap() {
        o.as_object_mut().unwrap().remove("flops");
    }
    let old_path = p("old.json");
    std::fs::write(&old_path, old.to_string()).unwrap();
    let (code, _, err) = plot(&[&old_path, "--kind", "roofline", "-o", &out]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no `flops`"), "{err}");
}
