//! `systole plot INPUT --kind timeline|utilization|roofline|ops|sweep -o OUT.png|OUT.svg`:
//! pictures of a run or a sweep, drawn with `plotters` (PNG or SVG by the output's extension).
//!
//! Inputs: the trace of `run --trace` (timeline), the report of `run --report` (utilization,
//! roofline, ops), the CSV or JSON of `sweep` (sweep). Text is drawn with the DejaVu Sans font
//! compiled into the binary (`cli/assets`), so PNGs need no system fonts; SVGs name the
//! `sans-serif` family and leave the font to the viewer. Output is deterministic: the same input
//! gives the same bytes.
//!
//! Invariant: every input problem (unreadable file, the wrong kind of file, a missing column or
//! field) is a [`UserError`] naming the file and what is wrong (exit 2), never a panic.

use crate::UserError;
use anyhow::Result;
use clap::Args;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn user(msg: String) -> anyhow::Error {
    anyhow::Error::new(UserError(msg))
}

/// What to draw.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Gantt chart of every unit's operations (input: `run --trace` JSON).
    Timeline,
    /// Busy / stall / idle share of every unit (input: `run --report` JSON).
    Utilization,
    /// Per-HLO-op achieved FLOP/s vs arithmetic intensity under the preset's ceilings
    /// (input: `run --report` JSON).
    Roofline,
    /// The HLO ops that take the most unit time, by unit kind (input: `run --report` JSON).
    Ops,
    /// A metric against a swept parameter, one line per combination of the other parameters
    /// (input: `sweep` CSV or JSON).
    Sweep,
}

/// What colours a timeline's slices.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorBy {
    /// The HLO instruction the slice comes from.
    Op,
    /// The ISA instruction (mnemonic) the unit executed.
    Instruction,
}

/// `systole plot`.
#[derive(Args)]
pub struct PlotArgs {
    /// Trace JSON (timeline), report JSON (utilization, roofline, ops) or sweep CSV/JSON (sweep).
    input: PathBuf,
    /// What to draw.
    #[arg(long, value_enum)]
    kind: Kind,
    /// Output picture: `.png` or `.svg`.
    #[arg(short = 'o', value_name = "OUT.png|OUT.svg")]
    out: PathBuf,
    /// sweep: the metric on the y axis (any numeric column of the sweep).
    #[arg(long, value_name = "COLUMN", default_value = "cycles")]
    y: String,
    /// sweep: the parameter on the x axis (default: the first swept one).
    #[arg(long, value_name = "PATH")]
    x: Option<String>,
    /// sweep: logarithmic x axis.
    #[arg(long)]
    log_x: bool,
    /// sweep: logarithmic y axis.
    #[arg(long)]
    log_y: bool,
    /// ops, roofline: how many ops to show (ops) or label (roofline).
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u32).range(1..=200))]
    top: u32,
    /// timeline, utilization: only this chip's units (default: every chip, or chip 0 when
    /// there are more than 64 lanes or units).
    #[arg(long)]
    chip: Option<u32>,
    /// timeline: colour slices by HLO op or by instruction (`mxu.matmul`, `dma.copy`, ...).
    #[arg(long, value_enum, default_value_t = ColorBy::Op)]
    color_by: ColorBy,
    /// timeline: one lane per unit, overlapping slices drawn over each other (default: a
    /// unit's overlapping slices on lanes of their own, `#1`, `#2`, ...).
    #[arg(long)]
    merge_lanes: bool,
    /// Picture size in pixels, `WIDTHxHEIGHT` (default depends on the kind).
    #[arg(long, value_name = "WxH")]
    size: Option<String>,
    /// Title (default: one naming the input).
    #[arg(long)]
    title: Option<String>,
}

// ------------------------------------------------------------------------------------------
// Style.

const FONT: &str = "sans-serif";
const TITLE: u32 = 26;
const DESC: u32 = 18;
const LABEL: u32 = 15;
const SMALL: u32 = 13;

/// Tableau-like categorical colours, then lighter variants.
const PALETTE: [(u8, u8, u8); 20] = [
    (0x4e, 0x79, 0xa7),
    (0xf2, 0x8e, 0x2b),
    (0xe1, 0x57, 0x59),
    (0x76, 0xb7, 0xb2),
    (0x59, 0xa1, 0x4f),
    (0xed, 0xc9, 0x48),
    (0xb0, 0x7a, 0xa1),
    (0xff, 0x9d, 0xa7),
    (0x9c, 0x75, 0x5f),
    (0x49, 0x98, 0x94),
    (0xa0, 0xcb, 0xe8),
    (0xff, 0xbe, 0x7d),
    (0x8c, 0xd1, 0x7d),
    (0xb6, 0x99, 0x2d),
    (0xf1, 0xce, 0x63),
    (0x86, 0xbc, 0xb6),
    (0xff, 0x9d, 0x9a),
    (0x79, 0x70, 0x6e),
    (0xd3, 0x72, 0x95),
    (0xd4, 0xa6, 0xc8),
];
const GREY: RGBColor = RGBColor(0xc8, 0xc8, 0xc8);
const DARK: RGBColor = RGBColor(0x33, 0x33, 0x33);

fn color(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

/// The bundled font, registered once for `sans-serif` (the family every text here uses).
fn register_font() -> Result<()> {
    static DONE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *DONE.get_or_init(|| {
        plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            include_bytes!("../assets/DejaVuSans.ttf"),
        )
        .is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(anyhow::anyhow!("the bundled font does not load"))
    }
}

/// `1234567` → `1.23M`; `0.00012` → `120µ`: three significant digits with an SI prefix.
fn si(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    const P: [(f64, &str); 9] = [
        (1e15, "P"),
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
        (1.0, ""),
        (1e-3, "m"),
        (1e-6, "µ"),
        (1e-9, "n"),
    ];
    let a = v.abs();
    let (scale, p) = P
        .iter()
        .copied()
        .find(|(s, _)| a >= *s * 0.9995)
        .unwrap_or((1e-9, "n"));
    let x = v / scale;
    let s = if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    // 2.50 → 2.5, 3.00 → 3
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s}{p}")
}

/// `275e12, "FLOP/s"` → `275 TFLOP/s`.
fn si_unit(v: f64, unit: &str) -> String {
    let s = si(v);
    let split = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '-'))
        .map_or(s.len(), |(i, _)| i);
    format!("{} {}{unit}", &s[..split], &s[split..])
}

// ------------------------------------------------------------------------------------------
// Data of each kind.

/// Horizontal stacked bars: utilization, ops.
struct Stacked {
    title: String,
    subtitle: String,
    x_desc: String,
    /// Legend entries (one per stack part, in stack order).
    parts: Vec<(String, RGBColor)>,
    /// One bar per row, top to bottom: its label and one value per part.
    bars: Vec<(String, Vec<f64>)>,
    /// Right end of the x axis.
    x_max: f64,
    /// Axis labels as percentages of `x_max` (utilization).
    percent: bool,
}

/// Gantt chart.
struct Timeline {
    title: String,
    subtitle: String,
    lanes: Vec<String>,
    /// `(lane, start, end, key)`: already merged to at most about one slice per pixel.
    slices: Vec<(usize, u64, u64, usize)>,
    keys: Vec<(String, RGBColor)>,
    /// The legend's title.
    key_title: &'static str,
    /// Lanes where a new chip starts (a rule is drawn above them).
    chip_starts: Vec<usize>,
    end: u64,
}

struct Roofline {
    title: String,
    subtitle: String,
    peak: f64,
    vpu_peak: Option<f64>,
    bw: f64,
    /// `(label, category, intensity, flop/s)`.
    points: Vec<(Option<String>, usize, f64, f64)>,
    categories: Vec<(String, RGBColor)>,
    program: Option<(f64, f64)>,
}

struct SweepPlot {
    title: String,
    subtitle: String,
    x_desc: String,
    y_desc: String,
    /// Category names when the x parameter is not numeric (points at 0, 1, ...).
    x_categories: Option<Vec<String>>,
    /// Every distinct x with the parameter's text, in x order.
    x_ticks: Vec<(f64, String)>,
    series: Vec<(String, Vec<(f64, f64)>)>,
    log_x: bool,
    log_y: bool,
}

enum Plot {
    Stacked(Stacked),
    Timeline(Timeline),
    Roofline(Roofline),
    Sweep(SweepPlot),
}

// ------------------------------------------------------------------------------------------
// Reading the inputs.

/// Reads a text input within the memory budget; `parsed` is how many times its size the
/// parsed form may take (JSON values are several times their text).
fn read_input(p: &Path, parsed: u64) -> Result<String> {
    let text = crate::bounded::read_text(p)?;
    crate::bounded::budget()
        .memory(
            format_args!("parsing {}", p.display()),
            (text.len() as u64).checked_mul(parsed),
        )
        .map_err(|e| crate::bounded::over(&p.display().to_string(), e))?;
    Ok(text)
}

fn read_json(p: &Path) -> Result<serde_json::Value> {
    let text = read_input(p, 10)?;
    serde_json::from_str(&text).map_err(|e| {
        user(format!(
            "{}:{}:{}: not JSON: {e}",
            p.display(),
            e.line(),
            e.column()
        ))
    })
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| p.display().to_string())
}

/// The report's object, or an error saying which file the kind wants.
fn report<'a>(
    p: &Path,
    v: &'a serde_json::Value,
    kind: &str,
) -> Result<&'a serde_json::Map<String, serde_json::Value>> {
    let o = v
        .as_object()
        .filter(|o| o.contains_key("cycles") && o.contains_key("stats"));
    o.ok_or_else(|| {
        let what = if v.get("traceEvents").is_some() {
            " (it is a trace: --kind timeline draws traces)"
        } else if v.is_array() {
            " (it looks like a sweep's JSON: --kind sweep draws sweeps)"
        } else {
            ""
        };
        user(format!(
            "{}: not a run report{what}; --kind {kind} needs the JSON written by `systole run --report`",
            p.display()
        ))
    })
}

fn num(o: &serde_json::Map<String, serde_json::Value>, p: &Path, key: &str) -> Result<f64> {
    o.get(key).and_then(|v| v.as_f64()).ok_or_else(|| {
        user(format!(
            "{}: the report has no number `{key}` (written by an older systole? re-run `systole run --report`)",
            p.display()
        ))
    })
}

fn utilization(a: &PlotArgs, v: &serde_json::Value) -> Result<Plot> {
    let p = &a.input;
    let r = report(p, v, "utilization")?;
    let cycles = num(r, p, "cycles")?;
    let stats = r.get("stats").and_then(|s| s.as_object()).ok_or_else(|| {
        user(format!(
            "{}: the report's `stats` is not an object",
            p.display()
        ))
    })?;
    let val = |k: &str| stats.get(k).and_then(|e| e["value"].as_f64());
    // Units: every PREFIX with PREFIX.busy_cycles; stall reasons from PREFIX.stall_cycles.R.
    let mut units: Vec<&str> = stats
        .keys()
        .filter_map(|k| k.strip_suffix(".busy_cycles"))
        .collect();
    units.sort_by_key(|x| unit_order(x));
    let mut reasons: Vec<String> = Vec::new();
    for u in &units {
        let pre = format!("{u}.stall_cycles.");
        for k in stats.keys() {
            if let Some(r) = k.strip_prefix(&pre) {
                if val(k).unwrap_or(0.0) > 0.0 && !reasons.iter().any(|x| x == r) {
                    reasons.push(r.to_string());
                }
            }
        }
    }
    reasons.sort_by_key(|r| reason_rank(r));
    let chips: std::collections::BTreeSet<&str> =
        units.iter().filter_map(|u| u.split('.').next()).collect();
    // Units that never worked nor waited are left out (counted in the subtitle).
    let used = |u: &&str| {
        val(&format!("{u}.busy_cycles")).unwrap_or(0.0) > 0.0
            || val(&format!("{u}.stall_cycles")).unwrap_or(0.0) > 0.0
    };
    let all_units = units.clone();
    units.retain(used);
    // A pod: one chip's units when they would not fit a picture (--chip picks which).
    let mut note = String::new();
    let only: Option<String> = match a.chip {
        Some(c) => {
            let name = format!("chip{c}");
            if !chips.contains(name.as_str()) {
                return Err(user(format!(
                    "{}: --chip {c}: the report has no units of chip {c} ({} chip(s))",
                    p.display(),
                    chips.len()
                )));
            }
            Some(name)
        }
        None if units.len() > 64 && chips.len() > 1 => {
            note = format!("; chip 0 of {} (--chip K for another)", chips.len());
            Some("chip0".to_string())
        }
        None => None,
    };
    let shown_chip = |u: &&str| {
        only.as_deref()
            .is_none_or(|c| u.split('.').next() == Some(c))
    };
    units.retain(shown_chip);
    let hidden = all_units
        .iter()
        .filter(|u| shown_chip(u) && !used(u))
        .count();
    let one_chip = chips.len() == 1 || only.is_some();
    let mut bars = Vec::new();
    for u in &units {
        let busy = val(&format!("{u}.busy_cycles")).unwrap_or(0.0);
        let stall = val(&format!("{u}.stall_cycles")).unwrap_or(0.0);
        let mut parts = vec![busy];
        let mut by_reason = 0.0;
        for r in &reasons {
            let s = val(&format!("{u}.stall_cycles.{r}")).unwrap_or(0.0);
            by_reason += s;
            parts.push(s);
        }
        // Stall cycles no reason accounts for (none today) stay in the picture as "other".
        let other = (stall - by_reason).max(0.0);
        parts.push(other);
        let idle = val(&format!("{u}.idle_cycles")).unwrap_or((cycles - busy - stall).max(0.0));
        parts.push(idle);
        let label = if one_chip {
            u.split_once('.').map_or(*u, |x| x.1).to_string()
        } else {
            u.to_string()
        };
        bars.push((label, parts));
    }
    if bars.is_empty() {
        return Err(user(format!(
            "{}: the report's stats have no unit with busy or stall cycles",
            p.display()
        )));
    }
    let mut legend = vec![("busy".to_string(), RGBColor(0x59, 0xa1, 0x4f))];
    for r in &reasons {
        legend.push((format!("stall: {}", r.replace('_', " ")), reason_color(r)));
    }
    legend.push(("stall: other".into(), RGBColor(0x79, 0x70, 0x6e)));
    legend.push(("idle".into(), RGBColor(0xe4, 0xe4, 0xe4)));
    // Drop the "other" column when it is empty everywhere.
    let oi = 1 + reasons.len();
    if bars.iter().all(|b| b.1[oi] == 0.0) {
        legend.remove(oi);
        for b in &mut bars {
            b.1.remove(oi);
        }
    }
    // In percent of the run's cycles.
    for b in &mut bars {
        for v in &mut b.1 {
            *v *= 100.0 / cycles.max(1.0);
        }
    }
    let arch = r.get("arch").and_then(|x| x.as_str()).unwrap_or("?");
    Ok(Plot::Stacked(Stacked {
        title: a
            .title
            .clone()
            .unwrap_or_else(|| format!("Unit utilization: {}", file_name(p))),
        subtitle: format!(
            "{arch}, {} cycles; share of the run's cycles per unit{}{note}",
            cycles as u64,
            if hidden > 0 {
                format!(" ({hidden} units never used are not shown)")
            } else {
                String::new()
            }
        ),
        x_desc: "share of the run's cycles (%)".into(),
        parts: legend,
        bars,
        x_max: 100.0,
        percent: true,
    }))
}

/// Sort key of a unit path: chip, core, then seq, mxu, vpu, dma, the rest.
fn unit_order(u: &str) -> (String, u8, String) {
    let (head, last) = u.rsplit_once('.').unwrap_or(("", u));
    let kind = last.trim_end_matches(|c: char| c.is_ascii_digit());
    let rank = match kind {
        "seq" => 0,
        "mxu" => 1,
        "vpu" => 2,
        "dma" => 3,
        "ici" => 4,
        "infeed" => 5,
        "outfeed" => 6,
        _ => 7,
    };
    // Numbers compare by value: `mxu10` after `mxu9`.
    let digits = &last[kind.len()..];
    (
        head.to_string(),
        rank,
        format!("{kind}{:>8}", digits.parse::<u64>().unwrap_or(0)),
    )
}

fn reason_rank(r: &str) -> u8 {
    match r {
        "semaphore" => 0,
        "dependency" => 1,
        "fence" => 2,
        "queue_full" => 3,
        "halt" => 4,
        _ => 5,
    }
}

fn reason_color(r: &str) -> RGBColor {
    match r {
        "semaphore" => RGBColor(0xf2, 0x8e, 0x2b),
        "dependency" => RGBColor(0xe1, 0x57, 0x59),
        "fence" => RGBColor(0xb0, 0x7a, 0xa1),
        "queue_full" => RGBColor(0x9c, 0x75, 0x5f),
        "halt" => RGBColor(0xff, 0x9d, 0xa7),
        _ => RGBColor(0x4e, 0x79, 0xa7),
    }
}

fn ops_table<'a>(
    p: &Path,
    r: &'a serde_json::Map<String, serde_json::Value>,
) -> Result<&'a Vec<serde_json::Value>> {
    r.get("ops")
        .and_then(|o| o.as_array())
        .ok_or_else(|| user(format!("{}: the report has no `ops` table", p.display())))
}

fn ops(a: &PlotArgs, v: &serde_json::Value) -> Result<Plot> {
    let p = &a.input;
    let r = report(p, v, "ops")?;
    let table = ops_table(p, r)?;
    if table.is_empty() {
        return Err(user(format!(
            "{}: the report's `ops` table is empty (a timing-only run of a program with no HLO symbols?)",
            p.display()
        )));
    }
    let top = (a.top as usize).min(table.len());
    let total: f64 = table
        .iter()
        .map(|o| o["busy_cycles"].as_f64().unwrap_or(0.0))
        .sum();
    // Unit kinds in a fixed order: by total cycles over the shown ops, largest first.
    let mut kinds: BTreeMap<String, f64> = BTreeMap::new();
    for o in &table[..top] {
        for (k, c) in o["by_unit"].as_object().into_iter().flatten() {
            *kinds.entry(k.clone()).or_default() += c.as_f64().unwrap_or(0.0);
        }
    }
    let mut kinds: Vec<(String, f64)> = kinds.into_iter().collect();
    kinds.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    let mut bars = Vec::new();
    let mut x_max: f64 = 0.0;
    for (i, o) in table[..top].iter().enumerate() {
        let name = o["hlo"]
            .as_str()
            .ok_or_else(|| user(format!("{}: ops[{i}] has no `hlo` name", p.display())))?;
        let busy = o["busy_cycles"]
            .as_f64()
            .ok_or_else(|| user(format!("{}: ops[{i}] has no `busy_cycles`", p.display())))?;
        x_max = x_max.max(busy);
        let parts: Vec<f64> = kinds
            .iter()
            .map(|(k, _)| o["by_unit"][k].as_f64().unwrap_or(0.0))
            .collect();
        let label = match o["opcode"].as_str() {
            Some(op) if !op.is_empty() => format!("{name} ({op})"),
            _ => name.to_string(),
        };
        bars.push((label, parts));
    }
    let shown: f64 = bars.iter().map(|b| b.1.iter().sum::<f64>()).sum();
    let arch = r.get("arch").and_then(|x| x.as_str()).unwrap_or("?");
    Ok(Plot::Stacked(Stacked {
        title: a
            .title
            .clone()
            .unwrap_or_else(|| format!("Top {top} HLO ops by unit-busy cycles: {}", file_name(p))),
        subtitle: format!(
            "{arch}; {top} of {} ops, {:.1}% of all unit-busy cycles; each bar split by unit kind",
            table.len(),
            100.0 * shown / total.max(1.0)
        ),
        x_desc: "unit-busy cycles (summed over units)".into(),
        parts: kinds
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.to_uppercase(), color(i)))
            .collect(),
        bars,
        x_max: x_max.max(1.0),
        percent: false,
    }))
}

fn roofline(a: &PlotArgs, v: &serde_json::Value) -> Result<Plot> {
    let p = &a.input;
    let r = report(p, v, "roofline")?;
    let roof = r
        .get("roofline")
        .and_then(|x| x.as_object())
        .ok_or_else(|| {
            user(format!(
                "{}: the report has no `roofline` object",
                p.display()
            ))
        })?;
    let peak = num(roof, p, "peak_flops_per_second")?;
    let bw = num(roof, p, "hbm_bytes_per_second")?;
    let vpu_peak = roof.get("vpu_ops_per_second").and_then(|x| x.as_f64());
    let table = ops_table(p, r)?;
    if table.iter().any(|o| o.get("flops").is_none()) {
        return Err(user(format!(
            "{}: the report's ops have no `flops`/`bytes_accessed` (written by an older systole); re-run `systole run --report`",
            p.display()
        )));
    }
    let cat = |op: &str| -> usize {
        match op {
            "dot" | "convolution" => 0,
            "reduce" | "reduce-window" => 2,
            "fusion" | "call" => 3,
            _ => 1,
        }
    };
    let categories: Vec<(String, RGBColor)> = [
        "dot / convolution (MXU)",
        "elementwise (VPU)",
        "reduce (VPU)",
        "fusion / call",
    ]
    .iter()
    .enumerate()
    .map(|(i, n)| (n.to_string(), color(i)))
    .collect();
    let mut points = Vec::new();
    let mut skipped = 0;
    let mut labelled = 0;
    // The table is sorted by busy cycles: the first ones get labels.
    for o in table {
        let ai = o["arithmetic_intensity"].as_f64();
        let fs = o["flops_per_second"].as_f64();
        match (ai, fs) {
            (Some(ai), Some(fs)) if ai > 0.0 && fs > 0.0 => {
                let label = (labelled < a.top.min(8) as usize)
                    .then(|| o["hlo"].as_str().unwrap_or("?").to_string());
                labelled += label.is_some() as usize;
                points.push((label, cat(o["opcode"].as_str().unwrap_or("")), ai, fs));
            }
            _ => skipped += 1,
        }
    }
    if points.is_empty() {
        return Err(user(format!(
            "{}: no op of the report does arithmetic (every op has 0 FLOPs); nothing to place on a roofline",
            p.display()
        )));
    }
    let prog = match (
        roof.get("arithmetic_intensity").and_then(|x| x.as_f64()),
        r.get("flops_per_second").and_then(|x| x.as_f64()),
    ) {
        (Some(ai), Some(fs)) if ai.is_finite() && ai > 0.0 && fs > 0.0 => Some((ai, fs)),
        _ => None,
    };
    let arch = r.get("arch").and_then(|x| x.as_str()).unwrap_or("?");
    Ok(Plot::Roofline(Roofline {
        title: a
            .title
            .clone()
            .unwrap_or_else(|| format!("Roofline per HLO op: {}", file_name(p))),
        subtitle: format!(
            "{arch}: {} op(s) with FLOPs{}; FLOP/s = the op's FLOPs ÷ its span on the chip, intensity = FLOPs ÷ bytes of its operands and result; points above the HBM slope work on data already in VMEM",
            points.len(),
            if skipped > 0 {
                format!(" ({skipped} without FLOPs not shown)")
            } else {
                String::new()
            }
        ),
        peak,
        vpu_peak,
        bw,
        points,
        categories,
        program: prog,
    }))
}

/// The key with the largest count of a `{name: count}` object (the first of equals): the
/// HLO op or instruction an aggregate slice (`N × op`, see the `traces` crate) is coloured by.
fn most_frequent(v: &serde_json::Value) -> Option<&str> {
    let mut best: Option<(&str, u64)> = None;
    for (k, n) in v.as_object()? {
        let n = n.as_u64().unwrap_or(0);
        if best.is_none_or(|(_, b)| n > b) {
            best = Some((k.as_str(), n));
        }
    }
    best.map(|(k, _)| k)
}

fn timeline(a: &PlotArgs, v: &serde_json::Value, plot_width: u32) -> Result<Plot> {
    let p = &a.input;
    let events = v
        .get("traceEvents")
        .and_then(|e| e.as_array())
        .ok_or_else(|| {
            let hint = if v.get("stats").is_some() {
                " (it is a run report: --kind utilization, roofline or ops draw reports)"
            } else {
                ""
            };
            user(format!(
                "{}: not a trace (no `traceEvents`){hint}; --kind timeline needs the JSON written by `systole run --trace` or `systole sim --trace`",
                p.display()
            ))
        })?;
    let mut names: BTreeMap<(u64, u64), String> = BTreeMap::new();
    let mut chips: BTreeMap<u64, String> = BTreeMap::new();
    struct Ev<'a> {
        pid: u64,
        tid: u64,
        ts: u64,
        dur: u64,
        key: &'a str,
    }
    let mut evs = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let bad = |what: &str| user(format!("{}: traceEvents[{i}]: {what}", p.display()));
        let ph = e["ph"].as_str().ok_or_else(|| bad("no `ph`"))?;
        let pid = e["pid"].as_u64().ok_or_else(|| bad("no integer `pid`"))?;
        match ph {
            "M" => {
                let n = e["args"]["name"].as_str().unwrap_or("").to_string();
                match e["name"].as_str() {
                    Some("thread_name") => {
                        let tid = e["tid"].as_u64().ok_or_else(|| bad("no integer `tid`"))?;
                        names.insert((pid, tid), n);
                    }
                    Some("process_name") => {
                        chips.insert(pid, n);
                    }
                    _ => {}
                }
            }
            "X" => {
                let tid = e["tid"].as_u64().ok_or_else(|| bad("no integer `tid`"))?;
                // Cycles: `args.cycle`/`args.cycles` (traces written in simulated µs), else
                // integer `ts`/`dur` (older traces counted cycles there).
                let ts = e["args"]["cycle"]
                    .as_u64()
                    .or_else(|| e["ts"].as_u64())
                    .ok_or_else(|| bad("no integer `args.cycle` or `ts`"))?;
                let dur = e["args"]["cycles"]
                    .as_u64()
                    .or_else(|| e["dur"].as_u64())
                    .ok_or_else(|| bad("no integer `args.cycles` or `dur`"))?;
                if dur == 0 {
                    // Nothing to draw (and no lane to open for it).
                    continue;
                }
                // An aggregate slice (`N × op`, see the `traces` crate) counts its HLO ops and
                // instructions in `args.hlo` / `args.ops`: it takes the colour of the most
                // frequent (the first of equals).
                let key = match a.color_by {
                    ColorBy::Op => e["args"]["hlo"]
                        .as_str()
                        .or_else(|| most_frequent(&e["args"]["hlo"]))
                        .or_else(|| e["name"].as_str()),
                    ColorBy::Instruction => {
                        most_frequent(&e["args"]["ops"]).or_else(|| e["name"].as_str())
                    }
                }
                .unwrap_or("?");
                evs.push(Ev {
                    pid,
                    tid,
                    ts,
                    dur,
                    key,
                });
            }
            _ => {}
        }
    }
    if evs.is_empty() {
        return Err(user(format!(
            "{}: the trace has no slices (`ph: X` events)",
            p.display()
        )));
    }
    // A lane: chip and track name (`core0.mxu0`, or `core0.mxu0 #1` for overlapping slices
    // unless --merge-lanes folds them onto their unit's lane).
    let lane_of = |pid: u64, tid: u64| -> (u64, String) {
        let n = names
            .get(&(pid, tid))
            .cloned()
            .unwrap_or_else(|| format!("thread {tid}"));
        let n = match n.split_once(" #") {
            Some((unit, _)) if a.merge_lanes => unit.to_string(),
            _ => n,
        };
        (pid, n)
    };
    let all_lanes: std::collections::BTreeSet<(u64, String)> =
        evs.iter().map(|e| lane_of(e.pid, e.tid)).collect();
    let n_chips = all_lanes
        .iter()
        .map(|l| l.0)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let mut note = String::new();
    let chip = match a.chip {
        Some(c) => {
            if !all_lanes.iter().any(|l| l.0 == c as u64) {
                return Err(user(format!(
                    "{}: --chip {c}: the trace has no slices of chip {c}",
                    p.display()
                )));
            }
            Some(c as u64)
        }
        None if all_lanes.len() > 64 => {
            let first = all_lanes.iter().next().map_or(0, |l| l.0);
            note = format!("; chip {first} of {n_chips} (--chip K for another)");
            Some(first)
        }
        None => None,
    };
    let mut lane_keys: Vec<(u64, String)> = all_lanes
        .into_iter()
        .filter(|l| chip.is_none_or(|c| l.0 == c))
        .collect();
    // Lanes in unit order (seq, mxu, vpu, dma, ...), overlap lanes (`#k`) after their unit.
    lane_keys.sort_by_key(|l| {
        let (unit, k) = match l.1.split_once(" #") {
            Some((u, k)) => (u.to_string(), k.parse::<u64>().unwrap_or(0)),
            None => (l.1.clone(), 0),
        };
        (l.0, unit_order(&unit), k)
    });
    let show_chip = chip.is_none() && n_chips > 1;
    let lanes: Vec<String> = lane_keys
        .iter()
        .map(|l| {
            if show_chip {
                let c = chips.get(&l.0).cloned().unwrap_or(format!("chip{}", l.0));
                format!("{c} {}", l.1)
            } else {
                l.1.clone()
            }
        })
        .collect();
    let chip_starts: Vec<usize> = (1..lane_keys.len())
        .filter(|&i| lane_keys[i].0 != lane_keys[i - 1].0)
        .collect();
    let index: BTreeMap<(u64, String), usize> = lane_keys
        .iter()
        .enumerate()
        .map(|(i, l)| (l.clone(), i))
        .collect();
    let evs: Vec<(usize, &Ev)> = evs
        .iter()
        .filter_map(|e| index.get(&lane_of(e.pid, e.tid)).map(|&i| (i, e)))
        .collect();
    // Colours: the 12 keys (HLO ops) with the most time; the rest grey.
    let mut time: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, e) in &evs {
        *time.entry(e.key).or_default() += e.dur;
    }
    let mut ranked: Vec<(&str, u64)> = time.into_iter().collect();
    ranked.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(y.0)));
    let shown = ranked.len().min(12);
    let key_index: BTreeMap<&str, usize> = ranked
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (*k, i.min(shown)))
        .collect();
    let mut keys: Vec<(String, RGBColor)> = ranked[..shown]
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (k.to_string(), color(i)))
        .collect();
    if ranked.len() > shown {
        keys.push((
            format!(
                "{} other {}",
                ranked.len() - shown,
                match a.color_by {
                    ColorBy::Op => "ops",
                    ColorBy::Instruction => "instructions",
                }
            ),
            GREY,
        ));
    }
    let end = evs
        .iter()
        .map(|e| e.1.ts + e.1.dur)
        .max()
        .unwrap_or(1)
        .max(1);
    // Merge slices closer than a pixel on the same lane with the same colour (a picture of
    // 100k slices would be no clearer and the SVG far bigger).
    let px = (end as f64 / plot_width.max(1) as f64).max(1.0) as u64;
    let mut sorted: Vec<(usize, u64, u64, usize)> = evs
        .iter()
        .map(|&(lane, e)| (lane, e.ts, e.ts + e.dur, key_index[e.key]))
        .collect();
    sorted.sort();
    let mut slices: Vec<(usize, u64, u64, usize)> = Vec::new();
    // Per lane, the open slice of each colour.
    for s in sorted {
        match slices.last_mut() {
            Some(l) if l.0 == s.0 && l.3 == s.3 && s.1 <= l.2 + px => l.2 = l.2.max(s.2),
            _ => slices.push(s),
        }
    }
    Ok(Plot::Timeline(Timeline {
        title: a
            .title
            .clone()
            .unwrap_or_else(|| format!("Timeline: {}", file_name(p))),
        subtitle: format!(
            "{} slices on {} lanes, {end} cycles; colour = {}{}{note}",
            evs.len(),
            lanes.len(),
            match a.color_by {
                ColorBy::Op => "HLO op",
                ColorBy::Instruction => "instruction",
            },
            if a.merge_lanes {
                "; a unit's overlapping slices share its lane"
            } else {
                ""
            }
        ),
        lanes,
        slices,
        keys,
        key_title: match a.color_by {
            ColorBy::Op => "HLO op",
            ColorBy::Instruction => "instruction",
        },
        chip_starts,
        end,
    }))
}

/// A sweep's table: column names and rows of text fields.
struct Table {
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

/// Splits one CSV line into fields (quotes as the sweep writes them).
fn csv_fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    let mut it = line.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '"' if quoted && it.peek() == Some(&'"') => {
                cur.push('"');
                it.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn sweep_table(p: &Path) -> Result<Table> {
    let text = read_input(p, 10)?;
    if text.trim_start().starts_with('[') || text.trim_start().starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            user(format!(
                "{}:{}:{}: not JSON: {e}",
                p.display(),
                e.line(),
                e.column()
            ))
        })?;
        let rows = v.as_array().ok_or_else(|| {
            let hint = if v.get("traceEvents").is_some() {
                " (it is a trace)"
            } else if v.get("stats").is_some() {
                " (it is a run report)"
            } else {
                ""
            };
            user(format!(
                "{}: not a sweep{hint}; --kind sweep needs the CSV or JSON written by `systole sweep`",
                p.display()
            ))
        })?;
        let mut columns = vec!["point".to_string()];
        for (i, r) in rows.iter().enumerate() {
            let params = r["params"].as_object().ok_or_else(|| {
                user(format!(
                    "{}: row {i} has no `params` object: not a sweep's JSON",
                    p.display()
                ))
            })?;
            for k in params.keys() {
                if i == 0 {
                    columns.push(k.clone());
                }
            }
        }
        let n_params = columns.len() - 1;
        columns.extend(
            crate::cmd_sweep::FIXED_COLUMNS
                .iter()
                .map(|s| s.to_string()),
        );
        let mut out = Vec::new();
        for r in rows {
            let mut f = vec![r["point"].as_str().unwrap_or("").to_string()];
            for c in &columns[1..=n_params] {
                f.push(match &r["params"][c] {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Null => String::new(),
                    x => x.to_string(),
                });
            }
            for c in crate::cmd_sweep::FIXED_COLUMNS {
                f.push(match &r[c] {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Null => String::new(),
                    x => x.to_string(),
                });
            }
            out.push(f);
        }
        return Ok(Table { columns, rows: out });
    }
    let mut lines = text.lines();
    let header = lines
        .next()
        .ok_or_else(|| user(format!("{}: empty file", p.display())))?;
    let columns = csv_fields(header);
    if columns.first().map(String::as_str) != Some("point")
        || !columns.iter().any(|c| c == "status")
    {
        return Err(user(format!(
            "{}:1: not a sweep's CSV (its header starts `point,` and has a `status` column); --kind sweep needs the CSV or JSON written by `systole sweep`",
            p.display()
        )));
    }
    let mut rows = Vec::new();
    for (n, l) in lines.enumerate() {
        if l.is_empty() {
            continue;
        }
        let f = csv_fields(l);
        if f.len() != columns.len() {
            return Err(user(format!(
                "{}:{}: {} fields, the header has {}",
                p.display(),
                n + 2,
                f.len(),
                columns.len()
            )));
        }
        rows.push(f);
    }
    Ok(Table { columns, rows })
}

/// The unit of a sweep column or parameter, for the axis label.
fn unit_of(col: &str) -> &'static str {
    match col {
        "seconds" => " (s)",
        "tflop_per_s" => " (TFLOP/s)",
        "mxu_utilization" | "busiest_fraction" => " (fraction)",
        c if c.ends_with("gbps") || c.ends_with("gbps_per_link") => " (GB/s)",
        c if c.ends_with("_mhz") => " (MHz)",
        c if c.ends_with("_ns") => " (ns)",
        c if c.ends_with("bytes") => " (bytes)",
        c if c.ends_with("latency") => " (cycles)",
        _ => "",
    }
}

fn sweep(a: &PlotArgs) -> Result<Plot> {
    let p = &a.input;
    let t = sweep_table(p)?;
    let status = t
        .columns
        .iter()
        .position(|c| c == "status")
        .expect("checked");
    let params: Vec<&str> = t.columns[1..status].iter().map(String::as_str).collect();
    if params.is_empty() {
        return Err(user(format!(
            "{}: the sweep has no parameter column (no --set axis)",
            p.display()
        )));
    }
    let x = match &a.x {
        Some(x) => x.as_str(),
        None => params[0],
    };
    let xi = t.columns[1..status]
        .iter()
        .position(|c| c == x)
        .map(|i| i + 1)
        .ok_or_else(|| {
            user(format!(
                "{}: --x {x}: no such swept parameter; the sweep's parameters: {}",
                p.display(),
                params.join(", ")
            ))
        })?;
    let yi = t.columns.iter().position(|c| *c == a.y).ok_or_else(|| {
        user(format!(
            "{}: --y {}: no such column; numeric columns: cycles, seconds, mxu_utilization, tflop_per_s, busiest_fraction",
            p.display(),
            a.y
        ))
    })?;
    let ok: Vec<&Vec<String>> = t.rows.iter().filter(|r| r[status] == "ok").collect();
    if ok.is_empty() {
        return Err(user(format!(
            "{}: no point of the sweep has status ok; nothing to plot",
            p.display()
        )));
    }
    let mut ys = Vec::new();
    for r in &ok {
        let y: f64 = r[yi].parse().map_err(|_| {
            user(format!(
                "{}: point {}: column `{}` is `{}`, not a number",
                p.display(),
                r[0],
                a.y,
                r[yi]
            ))
        })?;
        ys.push(y);
    }
    // x: numeric if every value parses, else categories in first-seen order.
    let numeric: Option<Vec<f64>> = ok.iter().map(|r| r[xi].parse::<f64>().ok()).collect();
    let mut categories: Vec<String> = Vec::new();
    let xs: Vec<f64> = match numeric {
        Some(v) => v,
        None => ok
            .iter()
            .map(|r| {
                let i = categories
                    .iter()
                    .position(|c| *c == r[xi])
                    .unwrap_or_else(|| {
                        categories.push(r[xi].clone());
                        categories.len() - 1
                    });
                i as f64
            })
            .collect(),
    };
    let is_cat = !categories.is_empty();
    if a.log_x && (is_cat || xs.iter().any(|&v| v <= 0.0)) {
        return Err(user(format!(
            "--log-x: `{x}` has values that are not positive numbers"
        )));
    }
    if a.log_y && ys.iter().any(|&v| v <= 0.0) {
        return Err(user(format!(
            "--log-y: `{}` has values that are not positive",
            a.y
        )));
    }
    // Series: one per combination of the other parameters, in point (grid) order.
    let others: Vec<usize> = (1..status).filter(|&i| i != xi).collect();
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (k, r) in ok.iter().enumerate() {
        let name = others
            .iter()
            .map(|&i| format!("{}={}", t.columns[i], r[i]))
            .collect::<Vec<_>>()
            .join(", ");
        match series.iter_mut().find(|s| s.0 == name) {
            Some(s) => s.1.push((xs[k], ys[k])),
            None => series.push((name, vec![(xs[k], ys[k])])),
        }
    }
    for s in &mut series {
        s.1.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let mut x_ticks: Vec<(f64, String)> = Vec::new();
    for (k, r) in ok.iter().enumerate() {
        if !x_ticks.iter().any(|t| t.0 == xs[k]) {
            x_ticks.push((xs[k], r[xi].clone()));
        }
    }
    x_ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
    let failed = t.rows.len() - ok.len();
    Ok(Plot::Sweep(SweepPlot {
        title: a
            .title
            .clone()
            .unwrap_or_else(|| format!("{} vs {x}: {}", a.y, file_name(p))),
        subtitle: format!(
            "{} points{}{}",
            ok.len(),
            if failed > 0 {
                format!(" ({failed} with an error not shown)")
            } else {
                String::new()
            },
            if series.len() > 1 {
                format!(
                    "; one line per {}{}",
                    if others.len() > 1 {
                        "combination of "
                    } else {
                        ""
                    },
                    {
                        others
                            .iter()
                            .map(|&i| t.columns[i].as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                )
            } else {
                String::new()
            }
        ),
        x_desc: format!("{x}{}", unit_of(x)),
        y_desc: format!("{}{}", a.y, unit_of(&a.y)),
        x_categories: is_cat.then_some(categories),
        x_ticks,
        series,
        log_x: a.log_x,
        log_y: a.log_y,
    }))
}

// ------------------------------------------------------------------------------------------
// Drawing.

/// A picture area split in two (plot, legend).
type Split<DB> = (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>);

type DResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn text_style(size: u32) -> TextStyle<'static> {
    (FONT, size).into_font().color(&DARK)
}

/// Title and subtitle at the top; returns the area below them.
fn header<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    subtitle: &str,
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, _) = root.dim_in_pixel();
    let center = Pos::new(HPos::Center, VPos::Top);
    root.draw(&Text::new(
        title.to_string(),
        (w as i32 / 2, 10),
        text_style(TITLE).pos(center),
    ))?;
    let mut y = 10 + TITLE as i32 + 8;
    if !subtitle.is_empty() {
        // Long subtitles wrap at the picture's width.
        for line in wrap(root, subtitle, w.saturating_sub(60), SMALL)? {
            root.draw(&Text::new(
                line,
                (w as i32 / 2, y),
                (FONT, SMALL)
                    .into_font()
                    .color(&RGBColor(0x66, 0x66, 0x66))
                    .pos(center),
            ))?;
            y += SMALL as i32 + 5;
        }
    }
    Ok(root.margin(y as u32 + 6, 0, 0, 0))
}

/// `text` in lines no wider than `width` pixels (at word boundaries).
fn wrap<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    text: &str,
    width: u32,
    size: u32,
) -> Result<Vec<String>, DrawingAreaErrorKind<DB::ErrorType>> {
    let style = text_style(size);
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        let cand = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        if !cur.is_empty() && root.estimate_text_size(&cand, &style)?.0 > width {
            lines.push(std::mem::replace(&mut cur, word.to_string()));
        } else {
            cur = cand;
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    Ok(lines)
}

/// A legend: a coloured square and a name per entry, top-left at `(x, y)` of `area`.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    entries: &[(String, RGBColor)],
    (x, mut y): (i32, i32),
    line: bool,
) -> DResult<DB> {
    if !title.is_empty() {
        area.draw(&Text::new(title.to_string(), (x, y), text_style(LABEL)))?;
        y += LABEL as i32 + 8;
    }
    for (name, c) in entries {
        if line {
            area.draw(&PathElement::new(
                vec![(x, y + 7), (x + 22, y + 7)],
                c.stroke_width(3),
            ))?;
            area.draw(&Circle::new((x + 11, y + 7), 4, c.filled()))?;
        } else {
            area.draw(&Rectangle::new([(x, y), (x + 14, y + 14)], c.filled()))?;
            area.draw(&Rectangle::new(
                [(x, y), (x + 14, y + 14)],
                RGBColor(0x88, 0x88, 0x88).stroke_width(1),
            ))?;
        }
        let (aw, _) = area.dim_in_pixel();
        let room = (aw as i32 - x - 40).max(60) as u32;
        area.draw(&Text::new(
            fit(area, name, room, SMALL)?,
            (x + if line { 30 } else { 22 }, y),
            text_style(SMALL),
        ))?;
        y += SMALL as i32 + 9;
    }
    Ok(())
}

/// `text`, shortened in the middle with `…` until it is at most `max` pixels wide at `size`.
fn fit<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    text: &str,
    max: u32,
    size: u32,
) -> Result<String, DrawingAreaErrorKind<DB::ErrorType>> {
    let style = text_style(size);
    if root.estimate_text_size(text, &style)?.0 <= max {
        return Ok(text.to_string());
    }
    let chars: Vec<char> = text.chars().collect();
    let mut keep = chars.len();
    while keep > 2 {
        keep -= 1;
        let head = keep.div_ceil(2);
        let tail = keep - head;
        let cand: String = chars[..head]
            .iter()
            .chain(std::iter::once(&'…'))
            .chain(&chars[chars.len() - tail..])
            .collect();
        if root.estimate_text_size(&cand, &style)?.0 <= max {
            return Ok(cand);
        }
    }
    Ok("…".into())
}

/// The width in pixels of the widest of `labels` at `size`.
fn widest<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    labels: impl Iterator<Item = String>,
    size: u32,
) -> Result<u32, DrawingAreaErrorKind<DB::ErrorType>> {
    let style = text_style(size);
    let mut w = 0;
    for l in labels {
        w = w.max(root.estimate_text_size(&l, &style)?.0);
    }
    Ok(w)
}

/// Splits off a legend column on the right sized to its entries; returns (plot, legend) areas.
fn with_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    entries: &[(String, RGBColor)],
) -> Result<Split<DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let w = widest(area, entries.iter().map(|e| e.0.clone()), SMALL)?.max(widest(
        area,
        std::iter::once(title.to_string()),
        LABEL,
    )?) + 60;
    let (aw, _) = area.dim_in_pixel();
    let w = w.min(aw * 3 / 10);
    Ok(area.split_horizontally(aw - w))
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, plot: &Plot) -> DResult<DB> {
    root.fill(&WHITE)?;
    match plot {
        Plot::Stacked(s) => draw_stacked(root, s),
        Plot::Timeline(t) => draw_timeline(root, t),
        Plot::Roofline(r) => draw_roofline(root, r),
        Plot::Sweep(s) => draw_sweep(root, s),
    }
}

/// Draws row labels right-aligned left of the plotting area, one per row centred on `y = i`.
fn row_labels<DB: DrawingBackend, X: Ranged<ValueType = f64>>(
    root: &DrawingArea<DB, Shift>,
    chart: &ChartContext<DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    labels: &[String],
    x0: f64,
    size: u32,
) -> DResult<DB> {
    let style = text_style(size).pos(Pos::new(HPos::Right, VPos::Center));
    let area = chart.plotting_area();
    let (ox, oy) = (root.get_base_pixel().0, root.get_base_pixel().1);
    let room = (area.get_pixel_range().0.start - ox - 12).max(40) as u32;
    for (i, l) in labels.iter().enumerate() {
        let (px, py) = area.map_coordinate(&(x0, i as f64 + 0.5));
        root.draw(&Text::new(
            fit(root, l, room, size)?,
            (px - ox - 8, py - oy),
            style.clone(),
        ))?;
    }
    Ok(())
}

fn draw_stacked<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, s: &Stacked) -> DResult<DB> {
    let body = header(root, &s.title, &s.subtitle)?;
    let (plot_area, legend_area) = with_legend(&body, "", &s.parts)?;
    let label_w = (widest(root, s.bars.iter().map(|b| b.0.clone()), LABEL)? + 20)
        .min(root.dim_in_pixel().0 * 2 / 5);
    let n = s.bars.len();
    let mut chart = ChartBuilder::on(&plot_area)
        .margin(10)
        .margin_right(20)
        .x_label_area_size(55)
        .y_label_area_size(label_w)
        .build_cartesian_2d(
            0f64..s.x_max * if s.percent { 1.0 } else { 1.05 },
            0f64..n as f64,
        )?;
    let xfmt = |v: &f64| {
        if s.percent {
            format!("{v:.0}")
        } else {
            si(*v)
        }
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .y_label_formatter(&|_| String::new())
        .x_labels(if s.percent { 11 } else { 10 })
        .x_label_formatter(&xfmt)
        .x_desc(s.x_desc.clone())
        .axis_desc_style((FONT, DESC))
        .label_style((FONT, LABEL))
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
        .draw()?;
    // Rows top to bottom: bar i at y = n-1-i.
    for (i, (_, parts)) in s.bars.iter().enumerate() {
        let y = (n - 1 - i) as f64;
        let mut x = 0.0;
        for (k, v) in parts.iter().enumerate() {
            if *v <= 0.0 {
                continue;
            }
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x, y + 0.15), (x + v, y + 0.85)],
                s.parts[k].1.filled(),
            )))?;
            x += v;
        }
        if !s.percent {
            chart.draw_series(std::iter::once(Text::new(
                si(x),
                (x, y + 0.5),
                text_style(SMALL).pos(Pos::new(HPos::Left, VPos::Center)),
            )))?;
        }
    }
    let labels: Vec<String> = s.bars.iter().rev().map(|b| b.0.clone()).collect();
    row_labels(root, &chart, &labels, 0.0, LABEL)?;
    legend(&legend_area, "", &s.parts, (10, 20), false)
}

fn draw_timeline<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, t: &Timeline) -> DResult<DB> {
    let body = header(root, &t.title, &t.subtitle)?;
    let (plot_area, legend_area) = with_legend(&body, t.key_title, &t.keys)?;
    let label_w =
        (widest(root, t.lanes.iter().cloned(), SMALL)? + 20).min(root.dim_in_pixel().0 * 2 / 5);
    let n = t.lanes.len();
    let mut chart = ChartBuilder::on(&plot_area)
        .margin(10)
        .margin_right(20)
        .x_label_area_size(55)
        .y_label_area_size(label_w)
        .build_cartesian_2d(0f64..t.end as f64, 0f64..n as f64)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .y_label_formatter(&|_| String::new())
        .x_labels(10)
        .x_label_formatter(&|v| si(*v))
        .x_desc("time (cycles)")
        .axis_desc_style((FONT, DESC))
        .label_style((FONT, LABEL))
        .light_line_style(RGBColor(0xf0, 0xf0, 0xf0))
        .bold_line_style(RGBColor(0xe0, 0xe0, 0xe0))
        .draw()?;
    // Alternate lane shading.
    chart.draw_series((0..n).filter(|i| i % 2 == 1).map(|i| {
        let y = (n - 1 - i) as f64;
        Rectangle::new(
            [(0.0, y), (t.end as f64, y + 1.0)],
            RGBColor(0xf7, 0xf7, 0xf7).filled(),
        )
    }))?;
    chart.draw_series(t.slices.iter().map(|&(lane, s, e, k)| {
        let y = (n - 1 - lane) as f64;
        let c = t.keys.get(k).map_or(GREY, |x| x.1);
        Rectangle::new([(s as f64, y + 0.12), (e as f64, y + 0.88)], c.filled())
    }))?;
    let labels: Vec<String> = t.lanes.iter().rev().cloned().collect();
    row_labels(root, &chart, &labels, 0.0, SMALL)?;
    // A rule between chips.
    chart.draw_series(t.chip_starts.iter().map(|&i| {
        let y = (n - i) as f64;
        PathElement::new(
            vec![(0.0, y), (t.end as f64, y)],
            RGBColor(0x88, 0x88, 0x88).stroke_width(1),
        )
    }))?;
    legend(&legend_area, t.key_title, &t.keys, (10, 20), false)
}

fn draw_roofline<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &Roofline) -> DResult<DB> {
    let body = header(root, &r.title, &r.subtitle)?;
    // Only the kinds that have points.
    let mut entries: Vec<(String, RGBColor)> = r
        .categories
        .iter()
        .enumerate()
        .filter(|(i, _)| r.points.iter().any(|p| p.1 == *i))
        .map(|(_, c)| c.clone())
        .collect();
    if r.program.is_some() {
        entries.push(("whole program".into(), DARK));
    }
    let (plot_area, legend_area) = with_legend(&body, "HLO op kind", &entries)?;
    let ridge = r.peak / r.bw;
    let xs = r.points.iter().map(|p| p.2).chain(r.program.map(|p| p.0));
    let ys = r.points.iter().map(|p| p.3).chain(r.program.map(|p| p.1));
    let (xmin, xmax) = xs.fold((ridge, ridge), |a, x| (a.0.min(x), a.1.max(x)));
    let ymin = ys.fold(r.peak, f64::min);
    let floor10 = |v: f64| 10f64.powf(v.log10().floor());
    let ceil10 = |v: f64| 10f64.powf(v.log10().ceil());
    let (x0, x1) = (floor10(xmin / 2.0), ceil10(xmax * 2.0));
    let (y0, y1) = (floor10(ymin / 2.0), ceil10(r.peak * 2.0));
    let mut chart = ChartBuilder::on(&plot_area)
        .margin(10)
        .margin_right(30)
        .x_label_area_size(55)
        .y_label_area_size(80)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("arithmetic intensity (FLOP/byte)")
        .y_desc("achieved (FLOP/s)")
        .x_label_formatter(&|v| si(*v))
        .y_label_formatter(&|v| si(*v))
        .axis_desc_style((FONT, DESC))
        .label_style((FONT, LABEL))
        .light_line_style(RGBColor(0xf0, 0xf0, 0xf0))
        .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
        .draw()?;
    // Ceilings: HBM bandwidth slope up to the ridge, then the MXU peak.
    let roof_style = RGBColor(0x22, 0x22, 0x22).stroke_width(2);
    let start = (x0, (r.bw * x0).max(y0));
    let start = if r.bw * x0 < y0 {
        (y0 / r.bw, y0)
    } else {
        start
    };
    chart.draw_series(std::iter::once(PathElement::new(
        vec![start, (ridge, r.peak), (x1, r.peak)],
        roof_style,
    )))?;
    let area = chart.plotting_area();
    let (tx, ty) = area.map_coordinate(&(x1, r.peak));
    let (ox, oy) = root.get_base_pixel();
    root.draw(&Text::new(
        format!("MXU peak {}", si_unit(r.peak, "FLOP/s")),
        (tx - ox - 6, ty - oy - 6),
        text_style(LABEL).pos(Pos::new(HPos::Right, VPos::Bottom)),
    ))?;
    let (rx, ry) = area.map_coordinate(&(ridge, r.peak));
    root.draw(&Text::new(
        format!("ridge {}", si_unit(ridge, "FLOP/B")),
        (rx - ox, ry - oy + 8),
        text_style(SMALL).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    // The bandwidth label above the middle of the slope (log scale), left of it.
    let bx = (start.0 * ridge).sqrt();
    let (lx, ly) = area.map_coordinate(&(bx, r.bw * bx));
    root.draw(&Text::new(
        format!("HBM {}", si_unit(r.bw, "B/s")),
        (lx - ox - 10, ly - oy - 10),
        text_style(LABEL).pos(Pos::new(HPos::Right, VPos::Bottom)),
    ))?;
    let vpu = r
        .vpu_peak
        .filter(|v| *v > y0 && *v < y1)
        .map(|v| (v, area.map_coordinate(&(x1, v))));
    if let Some((v, (vx, vy))) = vpu {
        chart.draw_series(DashedLineSeries::new(
            vec![((v / r.bw).max(x0), v), (x1, v)],
            8,
            5,
            color(1).stroke_width(2),
        ))?;
        root.draw(&Text::new(
            format!("VPU peak {}", si_unit(v, "op/s")),
            (vx - ox - 6, vy - oy - 6),
            text_style(SMALL).pos(Pos::new(HPos::Right, VPos::Bottom)),
        ))?;
    }
    // Points: small ops first so big ones stay on top; labels for the biggest.
    for &(_, c, x, y) in r.points.iter().rev() {
        chart.draw_series(std::iter::once(Circle::new(
            (x, y),
            5,
            r.categories[c].1.mix(0.85).filled(),
        )))?;
    }
    if let Some((x, y)) = r.program {
        chart.draw_series(std::iter::once(TriangleMarker::new(
            (x, y),
            9,
            DARK.filled(),
        )))?;
    }
    // Labels: points closer than a few pixels share one ("name (+k)"); each label goes to the
    // first free corner around its point, or is left out if all four are taken.
    let area = chart.plotting_area();
    let (ox, oy) = root.get_base_pixel();
    let ((ax0, ay0), (ax1, ay1)) = {
        let r = area.get_pixel_range();
        ((r.0.start, r.1.start), (r.0.end, r.1.end))
    };
    let mut groups: Vec<(String, usize, (i32, i32))> = Vec::new();
    for (l, _, x, y) in &r.points {
        let Some(l) = l else { continue };
        let p = area.map_coordinate(&(*x, *y));
        match groups
            .iter_mut()
            .find(|g| (g.2 .0 - p.0).abs() <= 6 && (g.2 .1 - p.1).abs() <= 6)
        {
            Some(g) => g.1 += 1,
            None => groups.push((l.clone(), 0, p)),
        }
    }
    let mut taken: Vec<(i32, i32, i32, i32)> = Vec::new();
    if let Some((x, y)) = r.program {
        let (px, py) = area.map_coordinate(&(x, y));
        taken.push((px - 10, py - 10, px + 10, py + 10));
    }
    let style = text_style(SMALL);
    for (name, more, (px, py)) in groups {
        let text = if more > 0 {
            format!("{name} (+{more})")
        } else {
            name
        };
        let (w, h) = root.estimate_text_size(&text, &style)?;
        let (w, h) = (w as i32, h as i32);
        let spots = [
            (px + 7, py - 5 - h),
            (px + 7, py + 5),
            (px - 7 - w, py - 5 - h),
            (px - 7 - w, py + 5),
        ];
        let free = spots.iter().copied().find(|&(x, y)| {
            x >= ax0
                && y >= ay0
                && x + w <= ax1
                && y + h <= ay1
                && !taken
                    .iter()
                    .any(|t| x < t.2 && t.0 < x + w && y < t.3 && t.1 < y + h)
        });
        if let Some((x, y)) = free {
            taken.push((x, y, x + w, y + h));
            root.draw(&Text::new(text, (x - ox, y - oy), style.clone()))?;
        }
    }
    legend(&legend_area, "HLO op kind", &entries, (10, 20), false)
}

fn draw_sweep<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, s: &SweepPlot) -> DResult<DB> {
    let body = header(root, &s.title, &s.subtitle)?;
    let entries: Vec<(String, RGBColor)> = s
        .series
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let n = if x.0.is_empty() {
                "all points".to_string()
            } else {
                x.0.clone()
            };
            (n, color(i))
        })
        .collect();
    let (plot_area, legend_area) = if s.series.len() > 1 {
        let (a, b) = with_legend(&body, "", &entries)?;
        (a, Some(b))
    } else {
        (body.clone(), None)
    };
    let xs = s.series.iter().flat_map(|x| x.1.iter().map(|p| p.0));
    let ys = s.series.iter().flat_map(|x| x.1.iter().map(|p| p.1));
    let (xmin, xmax) = xs.fold((f64::MAX, f64::MIN), |a, v| (a.0.min(v), a.1.max(v)));
    let (ymin, ymax) = ys.fold((f64::MAX, f64::MIN), |a, v| (a.0.min(v), a.1.max(v)));
    let pad = |lo: f64, hi: f64, log: bool, zero: bool| -> (f64, f64) {
        if log {
            (lo / 1.3, hi * 1.3)
        } else {
            let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
            let lo2 = if zero && lo >= 0.0 {
                0.0
            } else {
                lo - 0.05 * span
            };
            (lo2, hi + 0.08 * span)
        }
    };
    let (x0, x1) = if s.x_categories.is_some() {
        (-0.5, xmax + 0.5)
    } else {
        pad(xmin, xmax, s.log_x, false)
    };
    let (y0, y1) = pad(ymin, ymax, s.log_y, true);
    // Few distinct x values (the usual sweep): ticks and grid lines at exactly those values,
    // labelled with the parameter's own text; otherwise the axis's own round ticks.
    let ticks = &s.x_ticks;
    let custom = ticks.len() <= 16;
    let xfmt = |v: &f64| si(*v);
    let blank = |_: &f64| String::new();
    let xfmt: &dyn Fn(&f64) -> String = if custom { &blank } else { &xfmt };
    let yfmt = |v: &f64| si(*v);
    let (ox, oy) = root.get_base_pixel();
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart;
            let mut mesh = chart.configure_mesh();
            mesh.x_desc(s.x_desc.clone())
                .y_desc(s.y_desc.clone())
                .x_label_formatter(xfmt)
                .y_label_formatter(&yfmt)
                .axis_desc_style((FONT, DESC))
                .label_style((FONT, LABEL))
                .light_line_style(RGBColor(0xf0, 0xf0, 0xf0))
                .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd));
            if custom {
                mesh.disable_x_mesh()
                    .x_labels(0)
                    .set_tick_mark_size(LabelAreaPosition::Bottom, 0);
            }
            mesh.draw()?;
            if custom {
                chart.draw_series(ticks.iter().map(|t| {
                    PathElement::new(vec![(t.0, y0), (t.0, y1)], RGBColor(0xdd, 0xdd, 0xdd))
                }))?;
                let area = chart.plotting_area();
                let pts: Vec<(i32, i32)> = ticks
                    .iter()
                    .map(|t| area.map_coordinate(&(t.0, y0)))
                    .collect();
                // Each label no wider than the space to its neighbours.
                let gap = pts
                    .windows(2)
                    .map(|w| (w[1].0 - w[0].0).unsigned_abs())
                    .min()
                    .unwrap_or(400)
                    .saturating_sub(12)
                    .max(30);
                for ((px, py), t) in pts.into_iter().zip(ticks.iter()) {
                    root.draw(&PathElement::new(
                        vec![(px - ox, py - oy), (px - ox, py - oy + 5)],
                        DARK,
                    ))?;
                    root.draw(&Text::new(
                        fit(root, &t.1, gap, LABEL)?,
                        (px - ox, py - oy + 9),
                        text_style(LABEL).pos(Pos::new(HPos::Center, VPos::Top)),
                    ))?;
                }
            }
            for (i, (_, pts)) in s.series.iter().enumerate() {
                let c = color(i);
                chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?;
                chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))?;
            }
        }};
    }
    let mut b = ChartBuilder::on(&plot_area);
    b.margin(10)
        .margin_right(30)
        .x_label_area_size(55)
        .y_label_area_size(80);
    match (s.log_x, s.log_y) {
        (false, false) => body!(b.build_cartesian_2d(x0..x1, y0..y1)?),
        (true, false) => body!(b.build_cartesian_2d((x0..x1).log_scale(), y0..y1)?),
        (false, true) => body!(b.build_cartesian_2d(x0..x1, (y0..y1).log_scale())?),
        (true, true) => body!(b.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?),
    }
    if let Some(l) = legend_area {
        legend(&l, "", &entries, (10, 20), true)?;
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------

fn parse_size(s: &str) -> Result<(u32, u32)> {
    let bad = || {
        user(format!(
            "--size {s}: expected WIDTHxHEIGHT, e.g. 1200x700 (each 200..=8000)"
        ))
    };
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let w: u32 = w.trim().parse().map_err(|_| bad())?;
    let h: u32 = h.trim().parse().map_err(|_| bad())?;
    if !(200..=8000).contains(&w) || !(200..=8000).contains(&h) {
        return Err(bad());
    }
    Ok((w, h))
}

/// `systole plot`.
pub fn run(a: PlotArgs) -> Result<crate::Outcome> {
    let ext = a
        .out
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let png = match ext.as_deref() {
        Some("png") => true,
        Some("svg") => false,
        _ => {
            return Err(user(format!(
                "{}: the output must end in .png or .svg",
                a.out.display()
            )))
        }
    };
    crate::bounded::check_output(&a.out)?;
    register_font()?;
    let size = a.size.as_deref().map(parse_size).transpose()?;
    let plot = match a.kind {
        Kind::Timeline => {
            let v = read_json(&a.input)?;
            let w = size.map_or(1400, |s| s.0);
            // The plot area is about the picture's width less labels and legend.
            timeline(&a, &v, w.saturating_sub(500).max(200))?
        }
        Kind::Utilization => utilization(&a, &read_json(&a.input)?)?,
        Kind::Roofline => roofline(&a, &read_json(&a.input)?)?,
        Kind::Ops => ops(&a, &read_json(&a.input)?)?,
        Kind::Sweep => sweep(&a)?,
    };
    let rows = match &plot {
        Plot::Stacked(s) => s.bars.len(),
        Plot::Timeline(t) => t.lanes.len(),
        _ => 0,
    };
    let size = size.unwrap_or(match &plot {
        Plot::Timeline(_) => (1400, (190 + 24 * rows as u32).max(500)),
        Plot::Stacked(_) => (1200, (190 + 30 * rows as u32).max(450)),
        _ => (1200, 750),
    });
    let err = |e: String| user(format!("{}: cannot draw: {e}", a.out.display()));
    if png {
        let root = BitMapBackend::new(&a.out, size).into_drawing_area();
        draw(&root, &plot).map_err(|e| err(e.to_string()))?;
        root.present().map_err(|e| err(e.to_string()))?;
    } else {
        let root = SVGBackend::new(&a.out, size).into_drawing_area();
        draw(&root, &plot).map_err(|e| err(e.to_string()))?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    println!(
        "wrote {} ({}x{}, {})",
        a.out.display(),
        size.0,
        size.1,
        match a.kind {
            Kind::Timeline => "timeline",
            Kind::Utilization => "utilization",
            Kind::Roofline => "roofline",
            Kind::Ops => "ops",
            Kind::Sweep => "sweep",
        }
    );
    Ok(crate::Outcome::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_prefixes() {
        assert_eq!(si(275e12), "275T");
        assert_eq!(si(1.2e9), "1.2G");
        assert_eq!(si(0.5), "500m");
        assert_eq!(si(1000.0), "1k");
        assert_eq!(si(0.0), "0");
        assert_eq!(si_unit(275e12, "FLOP/s"), "275 TFLOP/s");
        assert_eq!(si_unit(12.0, "B"), "12 B");
    }

    #[test]
    fn csv_quotes() {
        assert_eq!(csv_fields("a,\"b,c\",\"d\"\"e\""), vec!["a", "b,c", "d\"e"]);
    }

    #[test]
    fn units_sort_by_kind_then_number() {
        let mut u = vec![
            "chip0.core0.mxu10",
            "chip0.core0.dma",
            "chip0.core0.mxu9",
            "chip0.core0.seq",
        ];
        u.sort_by_key(|x| unit_order(x));
        assert_eq!(
            u,
            vec![
                "chip0.core0.seq",
                "chip0.core0.mxu9",
                "chip0.core0.mxu10",
                "chip0.core0.dma"
            ]
        );
    }
}
