//! Runs the whole conformance corpus (`tests/conformance/`) through the reference evaluator
//! and requires every case to pass (see the corpus README for the checks).

use eval::case::{case_dirs, load_case};
use eval::corpus::{run_case, Outcome};
use eval::EvalOptions;
use std::path::Path;

#[test]
fn corpus_passes_on_the_evaluator() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance");
    let dirs = case_dirs(&root).expect("corpus folder");
    assert!(dirs.len() >= 100, "corpus has only {} cases", dirs.len());
    let opts = EvalOptions::default();
    let mut failures = Vec::new();
    for d in &dirs {
        let name = d.file_name().unwrap().to_string_lossy().to_string();
        let case = match load_case(d) {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("{name}: bad case: {e}"));
                continue;
            }
        };
        match run_case(&case, &opts) {
            Outcome::Pass(_) => {}
            Outcome::Mismatch(m) => failures.push(format!("{name}: mismatch: {m}")),
            Outcome::Error(e) => failures.push(format!("{name}: error: {e}")),
        }
    }
    let passed = dirs.len() - failures.len();
    assert!(
        failures.is_empty(),
        "{passed} passed, {} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
