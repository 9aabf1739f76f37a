//! Every conformance module and every optimized-HLO sample parses, print→parse gives an equal
//! module, and printing is a fixed point: print(parse(print(parse(x)))) == print(parse(x)).

use std::path::{Path, PathBuf};

fn hlo_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            hlo_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "hlo") {
            out.push(p);
        }
    }
}

fn corpus() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    hlo_files(&root.join("conformance"), &mut files);
    hlo_files(&root.join("hlo"), &mut files);
    files
}

fn round_trip(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let name = path.display().to_string();
    let m1 = hlo::parse(&text).map_err(|e| e.render(&name, &text))?;
    let p1 = hlo::print(&m1);
    let m2 = hlo::parse(&p1).map_err(|e| {
        format!(
            "re-parse of printed text failed:\n{}\n{p1}",
            e.render(&name, &p1)
        )
    })?;
    if m1 != m2 {
        return Err(format!(
            "{name}: print→parse gives a different module\n{p1}"
        ));
    }
    let p2 = hlo::print(&m2);
    if p1 != p2 {
        return Err(format!(
            "{name}: printing is not a fixed point\n--- first\n{p1}\n--- second\n{p2}"
        ));
    }
    if m1.to_string() != p1 {
        return Err(format!("{name}: Display differs from print"));
    }
    Ok(())
}

#[test]
fn every_corpus_module_round_trips() {
    let files = corpus();
    let conformance = files
        .iter()
        .filter(|p| p.to_string_lossy().contains("conformance"))
        .count();
    assert!(
        conformance >= 100,
        "expected the conformance corpus, found {conformance} modules"
    );
    let failures: Vec<String> = files.iter().filter_map(|p| round_trip(p).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} modules failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// Regression (found by the mutation fuzzer): a name only `%` allows (`%.4`, `%4x`) must be
/// printed with its `%` so the printed text parses back.
#[test]
fn names_that_need_percent_round_trip() {
    let text = "HloModule m\n\n%1c {\n  %.p = f32[] parameter(0)\n  ROOT %.4 = f32[] negate(%.p)\n}\n\nENTRY main {\n  a = f32[] parameter(0)\n  ROOT %9r = f32[] call(a), to_apply=%1c\n}\n";
    let m = hlo::parse(text).unwrap_or_else(|e| panic!("{}", e.render("t", text)));
    let p = hlo::print(&m);
    let m2 = hlo::parse(&p).unwrap_or_else(|e| panic!("{}\n{p}", e.render("printed", &p)));
    assert_eq!(m, m2);
    assert_eq!(hlo::print(&m2), p);
}
