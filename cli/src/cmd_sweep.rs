//! `systole sweep FILE.hlo --arch A --set PATH=v1,v2,... [...] [-j N] [--shard K/N] -o OUT.csv`:
//! one compiled-and-simulated run per point of the cartesian grid of the `--set` lists, and
//! `systole sweep merge PARTS... -o OUT.csv` to join the shards of a sweep.
//!
//! Invariants: points are numbered in grid order (the first `--set` varies slowest); every
//! output row carries `point` as `i/total`, and rows are written in point order whatever `-j`,
//! so a sweep's CSV and JSON are the same bytes for any thread count, and `merge` of its shards
//! (point `i` belongs to shard `i mod N`) is byte for byte the unsharded file. A point that fails
//! (invalid arch value, does not fit, deadlock) is a row with `status` `error` and its message.

use crate::cmd_run::IciBackend;
use crate::{Outcome, UserError};
use anyhow::Result;
use clap::{Args, Subcommand};
use compiler::CompileOptions;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `systole sweep`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SweepArgs {
    #[command(subcommand)]
    sub: Option<SweepSub>,
    /// HLO text file.
    #[arg(required = true)]
    file: Option<PathBuf>,
    /// Architecture preset or JSON file.
    #[arg(long, default_value = "tpu-v4")]
    arch: String,
    /// A grid axis `PATH=v1,v2,...` (commas inside `[...]`/`{...}` belong to one value) or a
    /// fixed override `PATH=v` (repeatable; the first varies slowest).
    #[arg(long = "set", value_name = "K=V1,V2,...")]
    sets: Vec<String>,
    /// Parallel points.
    #[arg(short = 'j', long = "jobs", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    jobs: u32,
    /// Timing only: no data moves (faster; no random inputs).
    #[arg(long)]
    timing_only: bool,
    /// ICI backend (see `systole run --help`).
    #[arg(long, value_enum, default_value_t = IciBackend::Detailed)]
    ici: IciBackend,
    /// At least this many bf16 passes per f32 dot (1, 3 or 6).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=6))]
    f32_dot_passes: u32,
    /// Run only the points `i` with `i mod N = K`: `K/N`, or `N` to take `K` from
    /// `SLURM_ARRAY_TASK_ID` or `JOB_COMPLETION_INDEX` (Kubernetes Indexed Jobs).
    #[arg(long, value_name = "K/N")]
    shard: Option<String>,
    /// Output CSV.
    #[arg(short = 'o', value_name = "SWEEP.csv")]
    out: Option<PathBuf>,
    /// Also write the rows as JSON.
    #[arg(long, value_name = "SWEEP.json")]
    json: Option<PathBuf>,
}

#[derive(Subcommand)]
enum SweepSub {
    /// Join the CSV shards of one sweep into the file the unsharded sweep writes.
    Merge {
        /// The shards' CSV files.
        #[arg(required = true)]
        parts: Vec<PathBuf>,
        /// Output CSV.
        #[arg(short = 'o', value_name = "SWEEP.csv", required = true)]
        out: PathBuf,
    },
}

fn user(msg: String) -> anyhow::Error {
    anyhow::Error::new(UserError(msg))
}

/// One grid axis: the path and its values.
struct Axis {
    path: String,
    values: Vec<String>,
}

/// Splits `v1,v2,...` at commas outside brackets, braces and quotes.
fn split_values(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth, mut quoted) = (Vec::new(), String::new(), 0i32, false);
    for c in s.chars() {
        match c {
            '"' => quoted = !quoted,
            '[' | '{' if !quoted => depth += 1,
            ']' | '}' if !quoted => depth -= 1,
            ',' if depth == 0 && !quoted => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out
}

fn axes(sets: &[String]) -> Result<Vec<Axis>> {
    sets.iter()
        .map(|s| {
            let (path, vals) = s
                .split_once('=')
                .ok_or_else(|| user(format!("--set {s}: expected PATH=v1,v2,...")))?;
            let values = split_values(vals);
            if values.iter().any(|v| v.trim().is_empty()) {
                return Err(user(format!("--set {s}: an empty value")));
            }
            Ok(Axis {
                path: path.trim().to_string(),
                values,
            })
        })
        .collect()
}

/// `(K, N)` of `--shard`.
fn shard(spec: &str) -> Result<(usize, usize)> {
    let bad = || {
        user(format!("--shard {spec}: expected K/N (0 <= K < N) or N with SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX set"))
    };
    let (k, n) = match spec.split_once('/') {
        Some((k, n)) => (
            k.trim().parse::<usize>().map_err(|_| bad())?,
            n.trim().parse::<usize>().map_err(|_| bad())?,
        ),
        None => {
            let n = spec.trim().parse::<usize>().map_err(|_| bad())?;
            let k = ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"]
                .iter()
                .find_map(|v| std::env::var(v).ok())
                .ok_or_else(bad)?;
            (k.trim().parse::<usize>().map_err(|_| bad())?, n)
        }
    };
    if n == 0 || k >= n {
        return Err(bad());
    }
    Ok((k, n))
}

/// Quotes a CSV field if it needs it.
fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One point's outcome.
struct Row {
    values: Vec<String>,
    result: Result<Metrics, String>,
}

struct Metrics {
    cycles: u64,
    seconds: f64,
    mxu_utilization: f64,
    tflops: f64,
    busiest: String,
    busiest_fraction: f64,
}

/// The result columns after the swept parameters, in order (the plot reads them by name).
pub const FIXED_COLUMNS: [&str; 8] = [
    "status",
    "cycles",
    "seconds",
    "mxu_utilization",
    "tflop_per_s",
    "busiest_unit",
    "busiest_fraction",
    "error",
];

fn header(axes: &[Axis]) -> String {
    let mut cols = vec!["point".to_string()];
    cols.extend(axes.iter().map(|a| csv(&a.path)));
    cols.extend(FIXED_COLUMNS.iter().map(|s| s.to_string()));
    cols.join(",")
}

fn csv_row(i: usize, total: usize, r: &Row) -> String {
    let mut f = vec![format!("{i}/{total}")];
    f.extend(r.values.iter().map(|v| csv(v)));
    match &r.result {
        Ok(m) => f.extend([
            "ok".to_string(),
            m.cycles.to_string(),
            format!("{:.6e}", m.seconds),
            format!("{:.6}", m.mxu_utilization),
            format!("{:.6}", m.tflops),
            csv(&m.busiest),
            format!("{:.4}", m.busiest_fraction),
            String::new(),
        ]),
        Err(e) => {
            f.extend(["error".to_string()]);
            f.extend(std::iter::repeat_n(String::new(), 6));
            f.push(csv(e));
        }
    }
    f.join(",")
}

fn json_row(i: usize, total: usize, axes: &[Axis], r: &Row) -> serde_json::Value {
    let params: serde_json::Map<String, serde_json::Value> = axes
        .iter()
        .zip(&r.values)
        .map(|(a, v)| (a.path.clone(), serde_json::Value::String(v.clone())))
        .collect();
    match &r.result {
        Ok(m) => serde_json::json!({
            "point": format!("{i}/{total}"), "params": params, "status": "ok",
            "cycles": m.cycles, "seconds": m.seconds, "mxu_utilization": m.mxu_utilization,
            "tflop_per_s": m.tflops, "busiest_unit": m.busiest,
            "busiest_fraction": m.busiest_fraction,
        }),
        Err(e) => serde_json::json!({
            "point": format!("{i}/{total}"), "params": params, "status": "error", "error": e,
        }),
    }
}

/// Compiles and simulates one point.
fn run_point(
    a: &SweepArgs,
    module: &hlo::VerifiedModule,
    sets: &[String],
) -> Result<Metrics, String> {
    let arch = arch::ArchConfig::resolve(&a.arch, sets).map_err(|e| e.to_string())?;
    let analytic = a.ici == IciBackend::Analytic;
    let opts = CompileOptions {
        f32_dot_passes: a.f32_dot_passes,
        ici_analytic: analytic,
        ..CompileOptions::default()
    };
    let c = compiler::compile(module, &arch, &opts).map_err(|e| e.render("<module>"))?;
    let timing_only = a.timing_only || analytic;
    let args = if timing_only {
        Vec::new()
    } else {
        crate::cmd_run::random_args(module, 0).map_err(|e| e.to_string())?
    };
    let ex = crate::cmd_run::execute_batch(&c, &arch, &args, !timing_only)
        .map_err(|m| m.lines().next().unwrap_or("").to_string())?;
    let cycles = ex.run.cycles;
    let seconds = cycles as f64 / (arch.clock_mhz * 1e6);
    let peak = (arch.mxu.count * arch.mxu.rows * arch.mxu.cols) as f64 * arch.cores_per_chip as f64;
    let ideal = c.stats.flops as f64 / 2.0 / peak;
    let mut busiest = (String::new(), 0u64);
    for e in ex.system.stats().iter() {
        if let Some(u) = e.decl.name.strip_suffix(".busy_cycles") {
            if e.value > busiest.1 {
                busiest = (u.to_string(), e.value);
            }
        }
    }
    Ok(Metrics {
        cycles,
        seconds,
        mxu_utilization: if cycles > 0 {
            ideal / cycles as f64
        } else {
            0.0
        },
        tflops: c.stats.flops as f64 / seconds.max(1e-30) / 1e12,
        busiest: busiest.0,
        busiest_fraction: busiest.1 as f64 / cycles.max(1) as f64,
    })
}

/// `systole sweep`.
pub fn run(a: SweepArgs) -> Result<Outcome> {
    if let Some(SweepSub::Merge { parts, out }) = &a.sub {
        return merge(parts, out);
    }
    let file = a.file.clone().expect("clap requires FILE");
    let out = a
        .out
        .clone()
        .ok_or_else(|| user("sweep: -o SWEEP.csv is required".into()))?;
    for p in std::iter::once(&out).chain(a.json.iter()) {
        crate::bounded::check_output(p)?;
    }
    let (_, module) = crate::cmd_hlo::load_verified(&file)?;
    let axes = axes(&a.sets)?;
    let total = axes
        .iter()
        .try_fold(1usize, |n, ax| n.checked_mul(ax.values.len()))
        .filter(|&n| n <= 1 << 20)
        .ok_or_else(|| user("sweep: more than 2^20 points".into()))?;
    let (k, n) = match &a.shard {
        Some(s) => shard(s)?,
        None => (0, 1),
    };
    let mine: Vec<usize> = (0..total).filter(|i| i % n == k).collect();
    let point_values = |i: usize| -> Vec<String> {
        let mut rest = i;
        let mut v = vec![String::new(); axes.len()];
        for (j, ax) in axes.iter().enumerate().rev() {
            v[j] = ax.values[rest % ax.values.len()].clone();
            rest /= ax.values.len();
        }
        v
    };
    let bar = indicatif::ProgressBar::new(mine.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} points, ETA {eta}")
            .expect("a valid template"),
    );
    let rows: Vec<Mutex<Option<Row>>> = mine.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..(a.jobs as usize).min(mine.len().max(1)) {
            s.spawn(|| loop {
                let j = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = mine.get(j) else { break };
                let values = point_values(i);
                let sets: Vec<String> = axes
                    .iter()
                    .zip(&values)
                    .map(|(ax, v)| format!("{}={v}", ax.path))
                    .collect();
                // One line per row: messages are folded onto one line.
                let result = run_point(&a, &module, &sets)
                    .map_err(|e| e.split_whitespace().collect::<Vec<_>>().join(" "));
                *rows[j].lock().expect("row") = Some(Row { values, result });
                bar.inc(1);
            });
        }
    });
    bar.finish_and_clear();
    let rows: Vec<(usize, Row)> = mine
        .iter()
        .zip(rows)
        .map(|(&i, r)| (i, r.into_inner().expect("row").expect("every point ran")))
        .collect();
    let mut text = header(&axes) + "\n";
    for (i, r) in &rows {
        text += &csv_row(*i, total, r);
        text.push('\n');
    }
    std::fs::write(&out, &text)
        .map_err(|e| user(format!("{}: cannot write: {e}", out.display())))?;
    if let Some(j) = &a.json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|(i, r)| json_row(*i, total, &axes, r))
            .collect();
        std::fs::write(j, serde_json::to_string_pretty(&v)? + "\n")
            .map_err(|e| user(format!("{}: cannot write: {e}", j.display())))?;
    }
    let failed = rows.iter().filter(|(_, r)| r.result.is_err()).count();
    println!(
        "{} point(s) of {total}{}: {} ok, {failed} with an error; wrote {}",
        rows.len(),
        if n > 1 {
            format!(" (shard {k}/{n})")
        } else {
            String::new()
        },
        rows.len() - failed,
        out.display()
    );
    Ok(Outcome::Ok)
}

/// `systole sweep merge`: checks the parts are shards of one sweep (same header, the same
/// total, every point exactly once) and writes the rows in point order.
fn merge(parts: &[PathBuf], out: &Path) -> Result<Outcome> {
    crate::bounded::check_output(out)?;
    let mut header: Option<String> = None;
    let mut rows: Vec<(usize, usize, String)> = Vec::new();
    for p in parts {
        let text = std::fs::read_to_string(p)
            .map_err(|e| user(format!("{}: cannot read: {e}", p.display())))?;
        let mut lines = text.lines();
        let h = lines
            .next()
            .ok_or_else(|| user(format!("{}: empty file", p.display())))?;
        match &header {
            Some(x) if x != h => {
                return Err(user(format!(
                    "{}:1: the header differs from the first part's: not a shard of the same sweep",
                    p.display()
                )))
            }
            _ => header = Some(h.to_string()),
        }
        for (n, line) in lines.enumerate() {
            let first = line.split(',').next().unwrap_or("");
            let parsed = first
                .split_once('/')
                .and_then(|(i, t)| Some((i.parse::<usize>().ok()?, t.parse::<usize>().ok()?)));
            let Some((i, t)) = parsed else {
                return Err(user(format!(
                    "{}:{}: expected a row starting with point i/total",
                    p.display(),
                    n + 2
                )));
            };
            rows.push((i, t, line.to_string()));
        }
    }
    rows.sort_by_key(|r| r.0);
    let total = rows.first().map(|r| r.1).unwrap_or(0);
    for (k, r) in rows.iter().enumerate() {
        if r.1 != total || r.0 != k {
            return Err(user(format!(
                "the parts do not hold every point of a {total}-point sweep exactly once (at point {k}: found {}/{})",
                r.0, r.1
            )));
        }
    }
    if rows.len() != total {
        return Err(user(format!(
            "the parts hold {} of the sweep's {total} points",
            rows.len()
        )));
    }
    let mut text = header.unwrap_or_default() + "\n";
    for r in &rows {
        text += &r.2;
        text.push('\n');
    }
    std::fs::write(out, text).map_err(|e| user(format!("{}: cannot write: {e}", out.display())))?;
    println!(
        "merged {} part(s): {total} points; wrote {}",
        parts.len(),
        out.display()
    );
    Ok(Outcome::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_split_at_top_level_commas_only() {
        assert_eq!(split_values("64,128"), vec!["64", "128"]);
        assert_eq!(split_values("[4,4],[8]"), vec!["[4,4]", "[8]"]);
        assert_eq!(split_values("{\"a\":[1,2]},x"), vec!["{\"a\":[1,2]}", "x"]);
    }

    #[test]
    fn shards_need_k_below_n() {
        assert_eq!(shard("1/2").unwrap(), (1, 2));
        assert!(shard("2/2").is_err());
        assert!(shard("0/0").is_err());
    }
}
