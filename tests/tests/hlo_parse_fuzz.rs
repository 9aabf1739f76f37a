//! Property test: byte- and token-level mutations of the conformance modules never make the
//! parser panic, hang or blow up; when a mutant parses, print→parse gives an equal module and
//! printing is a fixed point. Bounded case count so it runs in a few seconds in release.

use proptest::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

fn corpus() -> &'static [String] {
    static C: OnceLock<Vec<String>> = OnceLock::new();
    C.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance");
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .expect("conformance corpus")
            .filter_map(|e| e.ok().map(|e| e.path().join("module.hlo")))
            .filter(|p| p.exists())
            .collect();
        paths.sort();
        let mut texts: Vec<String> = paths
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        let opt = Path::new(env!("CARGO_MANIFEST_DIR")).join("hlo/optimized");
        if let Ok(rd) = std::fs::read_dir(opt) {
            let mut more: Vec<_> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
            more.sort();
            texts.extend(more.iter().filter_map(|p| std::fs::read_to_string(p).ok()));
        }
        texts
    })
}

/// Fragments that are likely to reach interesting parser states.
const SNIPPETS: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    "=",
    "%",
    ":",
    "->",
    "<=",
    "?",
    "\"",
    "/*",
    "*/",
    "//",
    "\n",
    " ",
    "-",
    "_",
    "x",
    ".",
    "0",
    "-1",
    "99999999999999999999999",
    "nan",
    "-nan",
    "nan(0x1)",
    "inf",
    "true",
    "ROOT ",
    "ENTRY ",
    "f32[]",
    "(f32[], s32[])",
    "token[]",
    "{1,0}",
    "{1,0:T(8,128)}",
    "f32[<=4]",
    "s32[?]",
    "constant(",
    "parameter(",
    "tuple(",
    ", dimensions={0}",
    ", to_apply=",
    ", metadata={",
    ", window={size=2x2 pad=0_0x1_1}",
    ", dim_labels=b01f_01io->b01f",
    ", slice={[0:1:1]}",
    ", padding=0_0_1",
    ", replica_groups=[2,2]<=[4]T(1,0)",
    "FileNames\n1 \"a\"\n",
    "{{{{{{{{",
    "((((((((",
    "f32[4000000000000,8000000000000]",
    "c64[] constant((1, 2))",
];

#[derive(Clone, Debug)]
enum Mutation {
    Delete { at: usize, len: usize },
    Insert { at: usize, snippet: usize },
    ReplaceByte { at: usize, byte: u8 },
    DuplicateRange { at: usize, len: usize },
    SwapTokens { a: usize, b: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..40).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), 0..SNIPPETS.len())
            .prop_map(|(at, snippet)| Mutation::Insert { at, snippet }),
        (any::<usize>(), 0x20u8..0x7f).prop_map(|(at, byte)| Mutation::ReplaceByte { at, byte }),
        (any::<usize>(), 1usize..200).prop_map(|(at, len)| Mutation::DuplicateRange { at, len }),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapTokens { a, b }),
    ]
}

/// Token boundaries: maximal runs of identifier characters, or single other bytes.
fn tokens(b: &[u8]) -> Vec<(usize, usize)> {
    let word = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-' | b'%');
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let s = i;
        if word(b[i]) {
            while i < b.len() && word(b[i]) {
                i += 1;
            }
        } else {
            i += 1;
        }
        if !b[s].is_ascii_whitespace() {
            out.push((s, i));
        }
    }
    out
}

fn apply(text: &str, muts: &[Mutation]) -> String {
    let mut b = text.as_bytes().to_vec();
    for m in muts {
        let n = b.len().max(1);
        match *m {
            Mutation::Delete { at, len } => {
                let s = at % n;
                let e = (s + len).min(b.len());
                b.drain(s.min(b.len())..e);
            }
            Mutation::Insert { at, snippet } => {
                let s = (at % n).min(b.len());
                b.splice(s..s, SNIPPETS[snippet].bytes());
            }
            Mutation::ReplaceByte { at, byte } => {
                if !b.is_empty() {
                    let s = at % b.len();
                    b[s] = byte;
                }
            }
            Mutation::DuplicateRange { at, len } => {
                let s = (at % n).min(b.len());
                let e = (s + len).min(b.len());
                let chunk = b[s..e].to_vec();
                b.splice(e..e, chunk);
            }
            Mutation::SwapTokens { a, b: c } => {
                let t = tokens(&b);
                if t.len() >= 2 {
                    let (x, y) = (t[a % t.len()], t[c % t.len()]);
                    let (x, y) = if x.0 <= y.0 { (x, y) } else { (y, x) };
                    if x.1 <= y.0 {
                        let mut nb = b[..x.0].to_vec();
                        nb.extend_from_slice(&b[y.0..y.1]);
                        nb.extend_from_slice(&b[x.1..y.0]);
                        nb.extend_from_slice(&b[x.0..x.1]);
                        nb.extend_from_slice(&b[y.1..]);
                        b = nb;
                    }
                }
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn check(text: &str) -> Result<(), TestCaseError> {
    if let Ok(m) = hlo::parse(text) {
        let p1 = hlo::print(&m);
        let m2 = hlo::parse(&p1)
            .map_err(|e| TestCaseError::fail(format!("printed text does not parse: {e}\n{p1}")))?;
        prop_assert!(
            m == m2,
            "print→parse differs for\n{}\nprinted\n{}",
            text,
            p1
        );
        prop_assert_eq!(hlo::print(&m2), p1);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 20_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_modules_never_panic(which in any::<usize>(), muts in prop::collection::vec(mutation(), 1..6)) {
        let c = corpus();
        let text = apply(&c[which % c.len()], &muts);
        check(&text)?;
    }
}

#[test]
fn unmutated_corpus_passes_the_same_check() {
    for t in corpus() {
        check(t).unwrap();
    }
}
