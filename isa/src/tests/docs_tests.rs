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

#[test]
fn field_widths_hold_the_arch_limits() {
    // The arch crate's validation limits must be encodable in the table's fields.
    let width = |m: &str, f: &str| {
        let op = Opcode::from_mnemonic(m).unwrap();
        op.info().fields.iter().find(|x| x.name == f).unwrap().bits
    };
    for m in ["mxu.ldw", "mxu.matmul", "mxu.st"] {
        assert!(
            (arch::MAX_MXUS as u64 - 1) < 1 << width(m, "mxu"),
            "{m}.mxu"
        );
    }
    assert!((arch::MAX_MXU_DIM as u64) < 1 << width("mxu.ldw", "k"));
    assert!((arch::MAX_MXU_DIM as u64) < 1 << width("mxu.ldw", "n"));
    assert!((arch::MAX_MXU_DIM as u64) < 1 << width("mxu.matmul", "k"));
    assert!((arch::MAX_MXU_DIM as u64) < 1 << width("mxu.st", "n"));
}

#[test]
fn sync_accessor_finds_wait_and_signal() {
    use crate::{Inst, MemRef, SReg, Sem, Space};
    let m = MemRef {
        space: Space::Vmem,
        base: SReg(0),
        off: 0,
    };
    let i = Inst::Infeed {
        dst: m,
        len: 4,
        wait: Some(Sem(3)),
        signal: Some(Sem(7)),
    };
    assert_eq!(i.sync(), (Some(Sem(3)), Some(Sem(7))));
    let i = Inst::Outfeed {
        src: m,
        len: 4,
        wait: None,
        signal: Some(Sem(1)),
    };
    assert_eq!(i.sync(), (None, Some(Sem(1))));
    assert_eq!(Inst::Halt {}.sync(), (None, None));
}

#[test]
fn prelude_example_assembles() {
    // The example program in src/prelude.md (```asm block) must assemble and round-trip.
    let pre = include_str!("../prelude.md");
    let start = pre.find("```asm\n").expect("prelude has an ```asm example") + 7;
    let end = start + pre[start..].find("```").unwrap();
    let p = crate::asm::assemble(&pre[start..end])
        .unwrap_or_else(|e| panic!("{}", e.render("prelude.md")));
    assert!(p.code.len() > 5);
    assert_eq!(crate::asm::assemble(&crate::disasm::disasm(&p)).unwrap(), p);
}
