//! Every module of the conformance corpus (`tests/conformance/*/module.hlo`, printed by real
//! XLA) parses and passes the verifier.

use std::path::Path;

#[test]
fn every_conformance_module_verifies() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/conformance exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.join("module.hlo").is_file())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 100,
        "expected the 109-case corpus, found {}",
        cases.len()
    );
    let mut failures = Vec::new();
    for c in &cases {
        let path = c.join("module.hlo");
        let text = std::fs::read_to_string(&path).expect("readable");
        let name = c.file_name().unwrap().to_string_lossy().to_string();
        match hlo::parse(&text).and_then(|m| hlo::verify(&m)) {
            Ok(()) => {}
            Err(e) => failures.push(format!(
                "{name}:\n{}",
                e.render(&path.display().to_string(), &text)
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} corpus modules failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
