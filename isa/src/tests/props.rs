//! Property tests: `decode(encode(i)) == i` and `asm(disasm(p)) == p`, binary round trip.

use crate::arbitrary::{arbitrary_inst, arbitrary_program};
use crate::asm::assemble;
use crate::disasm::{disasm, disasm_with, DisasmOptions};
use crate::{Inst, Program, Word};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn decode_encode_round_trip(i in arbitrary_inst()) {
        let w = i.encode().expect("arbitrary instructions fit their fields");
        prop_assert_eq!(Inst::decode(w), Ok(i));
        prop_assert_eq!(Word::from_bytes(w.to_bytes()), w);
    }

    #[test]
    fn inst_text_round_trip(i in arbitrary_inst()) {
        let text = i.to_string();
        prop_assert_eq!(crate::asm::parse_inst(&text), Ok(i), "{}", text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn asm_disasm_round_trip(p in arbitrary_program()) {
        p.validate().expect("arbitrary programs are valid");
        let text = disasm(&p);
        let back = assemble(&text).map_err(|e| TestCaseError::fail(format!("{}\n{text}", e.render("gen.s"))))?;
        prop_assert_eq!(&back, &p);
        let annotated = disasm_with(&p, DisasmOptions { pcs: true, words: true });
        prop_assert_eq!(assemble(&annotated).unwrap(), p);
    }

    #[test]
    fn binary_round_trip(p in arbitrary_program()) {
        let bytes = p.to_bytes().unwrap();
        prop_assert_eq!(Program::from_bytes(&bytes).unwrap(), p);
    }

    #[test]
    fn truncated_binary_is_an_error_not_a_panic(p in arbitrary_program(), cut in any::<prop::sample::Index>()) {
        let bytes = p.to_bytes().unwrap();
        let n = cut.index(bytes.len());
        prop_assert!(Program::from_bytes(&bytes[..n]).is_err());
    }

    #[test]
    fn random_words_decode_or_error(lo in any::<u64>(), hi in any::<u64>(), op in any::<u8>()) {
        let w = Word(((hi as u128) << 64 | lo as u128) & !0xff | op as u128);
        if let Ok(i) = Inst::decode(w) {
            prop_assert_eq!(i.encode().unwrap(), w);
        }
    }
}

/// Fragments of valid and invalid syntax, to shake the assembler.
const FRAGMENTS: &[&str] = &[
    "vpu.add",
    "s.li",
    "dma.copy",
    ".data",
    ".dma",
    ".region",
    ".hlo",
    "mxu.matmul",
    "halt",
    "[s1+4]",
    "acc[s2-1]",
    "hbm[s3]",
    "vmem[",
    "n=",
    "t=f32",
    "wait=sem1",
    "=",
    ",",
    " ",
    "\"",
    "\\x",
    "é",
    "0x",
    "-",
    "@",
    ":",
    ";",
    "L1",
    "(1,2,3)",
    "dims=[",
    "]",
    "len=4",
    "s99",
    "sem40",
    "aé",
    "00ff",
    "hbm",
    "\t",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn assembler_never_panics(parts in proptest::collection::vec(
        prop_oneof![
            proptest::sample::select(FRAGMENTS).prop_map(|s| s.to_string()),
            "\\PC{0,6}",
        ],
        0..12,
    ), newlines in proptest::collection::vec(any::<bool>(), 12)) {
        let mut text = String::new();
        for (i, p) in parts.iter().enumerate() {
            text.push_str(p);
            text.push(if newlines[i] { '\n' } else { ' ' });
        }
        let _ = assemble(&text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn arch_check_never_panics(p in arbitrary_program()) {
        for (name, _) in arch::PRESETS {
            let a = arch::ArchConfig::preset(name).unwrap();
            let _ = p.check_against(&a);
        }
    }
}
