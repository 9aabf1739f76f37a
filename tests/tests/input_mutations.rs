//! Property tests (docs/bounded.md): byte-level mutations of case files, assembly text and
//! program binaries never make the readers panic, and never let a file claim more memory than
//! the budget; what still reads back round-trips, and mutated programs that load run to an end
//! (halt, deadlock, timeout or error) on the simulator within a small cycle and memory limit.

use arch::Budget;
use proptest::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Conformance case files (a sample: every 7th, sorted).
fn cases() -> &'static [String] {
    static C: OnceLock<Vec<String>> = OnceLock::new();
    C.get_or_init(|| {
        let mut paths: Vec<_> = std::fs::read_dir(root().join("conformance"))
            .expect("conformance corpus")
            .filter_map(|e| e.ok().map(|e| e.path().join("case.json")))
            .filter(|p| p.exists())
            .collect();
        paths.sort();
        paths
            .iter()
            .step_by(7)
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect()
    })
}

/// Assembly sources: the hostile suite's valid programs.
fn sources() -> &'static [String] {
    static S: OnceLock<Vec<String>> = OnceLock::new();
    S.get_or_init(|| {
        ["sim_example.s", "sim_count_loop.s", "sim_halt.s"]
            .iter()
            .map(|f| std::fs::read_to_string(root().join("hostile").join(f)).unwrap())
            .collect()
    })
}

fn program_bytes() -> &'static [u8] {
    static B: OnceLock<Vec<u8>> = OnceLock::new();
    B.get_or_init(|| {
        isa::asm::assemble(&sources()[0])
            .unwrap()
            .to_bytes()
            .unwrap()
    })
}

const SNIPPETS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\"",
    b"null",
    b"-1",
    b"4611686018427387904",
    b"99999999999999999999999",
    b"1e308",
    b"\xff",
    b"\n",
    b" ",
    b"dims=[(4294967295,0,0)]",
    b"sem31",
    b"s31",
    b"@0",
    b"hbm[",
    b"vmem[",
    b"0x",
    b".dma",
    b".data hbm 0 ",
    b"jmp",
];

#[derive(Clone, Debug)]
enum Mutation {
    Flip(usize, u8),
    Delete(usize, usize),
    Insert(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), 1usize..16).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (any::<usize>(), 0..SNIPPETS.len()).prop_map(|(i, s)| Mutation::Insert(i, s)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(mut b: Vec<u8>, muts: &[Mutation]) -> Vec<u8> {
    for m in muts {
        if b.is_empty() {
            break;
        }
        match *m {
            Mutation::Flip(i, bit) => {
                let i = i % b.len();
                b[i] ^= 1 << bit;
            }
            Mutation::Delete(i, n) => {
                let i = i % b.len();
                let end = (i + n).min(b.len());
                b.drain(i..end);
            }
            Mutation::Insert(i, s) => {
                let i = i % (b.len() + 1);
                b.splice(i..i, SNIPPETS[s].iter().copied());
            }
            Mutation::Truncate(i) => b.truncate(i % (b.len() + 1)),
        }
    }
    b
}

const BUDGET: Budget = Budget {
    max_memory: 64 << 20,
    max_work: 10_000_000,
};

proptest! {
    #![proptest_config(ProptestConfig { cases: 20_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_case_files_never_panic_or_exceed_the_budget(
        which in any::<usize>(),
        muts in prop::collection::vec(mutation(), 1..5),
    ) {
        let c = cases();
        let text = apply(c[which % c.len()].as_bytes().to_vec(), &muts);
        let Ok(text) = String::from_utf8(text) else { return Ok(()) };
        if let Ok(case) = eval::case::parse_case_in(&text, String::new(), &BUDGET) {
            let bytes: u64 = case
                .inputs
                .iter()
                .chain(&case.infeed)
                .flatten()
                .chain(&case.outputs)
                .map(lit_bytes)
                .sum();
            prop_assert!(bytes <= BUDGET.max_memory, "{bytes} bytes read");
        }
    }

    #[test]
    fn mutated_assembly_never_panics_and_round_trips(
        which in any::<usize>(),
        muts in prop::collection::vec(mutation(), 1..5),
    ) {
        let s = sources();
        let text = apply(s[which % s.len()].as_bytes().to_vec(), &muts);
        let Ok(text) = String::from_utf8(text) else { return Ok(()) };
        if let Ok(p) = isa::asm::assemble(&text) {
            if let Ok(bytes) = p.to_bytes() {
                let back = isa::Program::from_bytes(&bytes);
                prop_assert_eq!(back.as_ref().ok(), Some(&p));
            }
        }
    }

    #[test]
    fn mutated_programs_never_panic_and_runs_end(muts in prop::collection::vec(mutation(), 1..4)) {
        let bytes = apply(program_bytes().to_vec(), &muts);
        let Ok(p) = isa::Program::from_bytes(&bytes) else { return Ok(()) };
        let again = p.to_bytes().expect("a program read back writes");
        let back = isa::Program::from_bytes(&again).ok();
        prop_assert_eq!(back.as_ref(), Some(&p));
        let a = arch::ArchConfig::preset("mini").unwrap();
        let opts = sim::SimOptions { max_cycles: 100_000, ..Default::default() };
        if let Ok(mut sys) = sim::System::with_memory_limit(&a, p, 1, opts, BUDGET.max_memory) {
            // Any outcome but a panic or a hang is fine; the run must end.
            let _ = sys.run();
        }
    }
}

fn lit_bytes(l: &hlo::Literal) -> u64 {
    match l {
        hlo::Literal::Array(a) => a.data.len() as u64 * a.element_type().byte_size().max(1) as u64,
        hlo::Literal::Tuple(t) => t.iter().map(lit_bytes).sum(),
        hlo::Literal::Token => 0,
    }
}
