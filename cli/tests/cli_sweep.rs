//! `systole sweep` and `systole sweep merge` end to end on the fresh binary.

mod common;
use common::systole_env as systole;
use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("systole-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

const BLOCK: &str = "tests/models/transformer_block_opt/module.hlo";
const GRID: [&str; 4] = ["--set", "mxu.rows=64,128,256", "--set", "hbm.gbps=600,1200"];

fn sweep(extra: &[&str], out: &Path, env: &[(&str, &str)]) -> String {
    let o = out.to_str().unwrap();
    let mut args = vec!["sweep", BLOCK, "--timing-only"];
    args.extend(GRID);
    args.extend(extra);
    args.extend(["-o", o]);
    let r = systole(&args, env);
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn a_sweep_is_the_same_bytes_for_any_thread_count_and_for_merged_shards() {
    let one = sweep(&["-j", "1"], &tmp("j1.csv"), &[]);
    let lines: Vec<&str> = one.lines().collect();
    assert_eq!(lines.len(), 7, "{one}");
    assert!(
        lines[0].starts_with("point,mxu.rows,hbm.gbps,status,cycles"),
        "{one}"
    );
    for l in &lines[1..] {
        assert!(l.contains(",ok,"), "{l}");
    }
    // The MXU size is a grid axis: rows 64 and 256 do not cost the same.
    assert_ne!(
        lines[1].split(',').nth(4),
        lines[5].split(',').nth(4),
        "{one}"
    );
    let two = sweep(&["-j", "2"], &tmp("j2.csv"), &[]);
    assert_eq!(one, two);
    // Shards: K/N explicit, and K from Slurm's array index.
    sweep(&["--shard", "0/2"], &tmp("p0.csv"), &[]);
    sweep(
        &["--shard", "2"],
        &tmp("p1.csv"),
        &[("SLURM_ARRAY_TASK_ID", "1")],
    );
    let merged = tmp("m.csv");
    let p = [tmp("p1.csv"), tmp("p0.csv")];
    let r = systole(
        &[
            "sweep",
            "merge",
            p[0].to_str().unwrap(),
            p[1].to_str().unwrap(),
            "-o",
            merged.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert_eq!(std::fs::read_to_string(&merged).unwrap(), one);
    // An incomplete set of parts is refused.
    let r = systole(
        &[
            "sweep",
            "merge",
            p[1].to_str().unwrap(),
            "-o",
            merged.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("exactly once"));
}

#[test]
fn a_failing_point_is_a_row_with_its_error_not_an_aborted_sweep() {
    let out = tmp("err.csv");
    let json = tmp("err.json");
    let r = systole(
        &[
            "sweep",
            BLOCK,
            "--timing-only",
            "--set",
            "mxu.rows=0,128",
            "-o",
            out.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[1].starts_with("0/2,0,error,"), "{text}");
    assert!(lines[1].contains("mxu.rows must be"), "{text}");
    assert!(lines[2].starts_with("1/2,128,ok,"), "{text}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j.as_array().unwrap().len(), 2);
    assert_eq!(j[0]["status"], "error");
    assert_eq!(j[1]["params"]["mxu.rows"], "128");
}
