//! docs/isa.md must equal `docs::render()`; `BLESS=1 cargo test -p isa` rewrites it.

use crate::{Opcode, TABLE, WORD_BITS};

#[test]
fn docs_isa_md_is_fresh() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/isa.md");
    let want = crate::docs::render();
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &want).expect("write docs/isa.md");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/isa.md is stale: regenerate it with `BLESS=1 cargo test -p isa docs_isa_md_is_fresh`"
    );
}

#[test]
fn table_is_consistent() {
    assert_eq!(TABLE.len(), Opcode::ALL.len());
    for (row, op) in TABLE.iter().zip(Opcode::ALL) {
        assert_eq!(row.opcode, *op);
        assert_eq!(op.info().mnemonic, row.mnemonic);
        assert_eq!(Opcode::from_code(*op as u8), Some(*op));
        assert_eq!(Opcode::from_mnemonic(row.mnemonic), Some(*op));
        assert!(row.used_bits() <= WORD_BITS, "{}", row.mnemonic);
        assert!(!row.doc.trim().is_empty(), "{} has no doc", row.mnemonic);
        let mut names: Vec<&str> = row.fields.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(
            names.len(),
            row.fields.len(),
            "{}: duplicate operand names",
            row.mnemonic
        );
    }
}

#[test]
fn every_unit_instruction_can_synchronize() {
    for row in TABLE {
        let has = |n: &str| row.fields.iter().any(|f| f.name == n && f.optional);
        let unit = row.unit != crate::Unit::Seq;
        assert_eq!(unit, has("wait") && has("signal"), "{}", row.mnemonic);
    }
}
