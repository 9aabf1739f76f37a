//! The ISA table's operand roles against the simulator: for every instruction that touches
//! memory (built from its table row, with and without an address pattern), the bytes the
//! simulator actually read and wrote (its VMEM access log) are the bytes `isa::Inst::accesses`
//! derives from the row — writes exactly, reads at least (a gathered source: within its index
//! table's reach).

mod common;

use arch::ArchConfig;
use isa::{Role, TypeClass, TABLE};
use sim::{SimOptions, System};
use std::collections::BTreeSet;

/// Registers: s1..s4 address the vector operands, s5 is the scalar operand (a limit of 6),
/// s6 an index table's address.
const BASES: [u64; 4] = [0x100, 0x600, 0xb00, 0x1000];
const SREG: u64 = 6;
const TABLE_AT: u64 = 0x1400;

/// The program's descriptors and patterns, and the index tables as the data segment holds
/// them (the instruction under test writes no table).
struct Ctx<'a>(&'a isa::Program, &'a [u8]);

impl isa::AccessCtx for Ctx<'_> {
    fn dma_desc(&self, d: u32) -> Option<&isa::DmaDesc> {
        self.0.dma.get(d as usize)
    }
    fn pattern(&self, p: u32) -> Option<&isa::Pattern> {
        self.0.pats.get(p as usize)
    }
    fn indices(&self, table: u64, n: u64) -> Option<Vec<u64>> {
        let b = self.1.get(table as usize..(table + 4 * n) as usize)?;
        Some(
            b.chunks_exact(4)
                .map(|w| u32::from_le_bytes(w.try_into().unwrap()) as u64)
                .collect(),
        )
    }
}

/// Assembly of `row`'s instruction with small operands; `pat`: with `pat=0`, the pattern
/// naming every element operand (returned as the `.pat` line).
fn inst_text(row: &isa::InstInfo, pat: bool) -> Option<(String, String)> {
    let mut parts = Vec::new();
    let mut vk = 0;
    for f in row.fields.iter().filter(|f| !f.keyword) {
        parts.push(match f.kind {
            "vaddr" => {
                vk += 1;
                format!("[s{vk}]")
            }
            "memref" => {
                vk += 1;
                format!("vmem[s{vk}]")
            }
            "accaddr" => "acc[s0]".into(),
            // an index table's address, or the scalar operand (a limit, a value)
            "sreg" if f.name == "idx" => "s6".into(),
            "sreg" => "s5".into(),
            _ => return None,
        });
    }
    let t = match row.types {
        TypeClass::Int | TypeClass::IntPred => "s32",
        _ => "f32",
    };
    for f in row.fields.iter().filter(|f| f.keyword) {
        let v = match f.name {
            "n" => "6",
            "t" => t,
            "rows" | "m" => "3",
            "cols" => "5",
            "k" => "4",
            "stride" => "16",
            "mode" => "int8",
            "mxu" => "0",
            "desc" => "0",
            "len" => "16",
            "div" => "2",
            "modulo" => "3",
            "op" => "add",
            "set" | "accumulate" => "0",
            "cmp" => "lt",
            "to" => "f32",
            "from" => "s32",
            "pat" if pat => "0",
            _ if f.optional => continue,
            _ => return None,
        };
        parts.push(format!("{}={v}", f.name));
    }
    let inst = format!("{} {}", row.mnemonic, parts.join(", "));
    let mut pat_line = String::new();
    if pat {
        let mut ops = Vec::new();
        for u in row.uses {
            if u.rule.starts_with("elems") || u.rule.starts_with("runs") {
                ops.push(match (u.field, u.role) {
                    // rows of 2 at a 16-byte pitch, in blocks 48 apart (conv rows)
                    ("src", _) => "src=[(2,16),(2,48)]".to_string(),
                    // every other element slot
                    (f, Role::Write) => format!("{f}=[(6,8)]"),
                    // a row of 2 repeated, then the next rows
                    (f, _) => format!("{f}=[(2,4),(2,0),(3,8)]"),
                });
            }
        }
        pat_line = format!(".pat 0 {}\n", ops.join(" "));
    }
    Some((inst, pat_line))
}

fn bytes_of(runs: &[isa::Access]) -> BTreeSet<u64> {
    let mut s = BTreeSet::new();
    for a in runs {
        for r in 0..a.rows {
            for b in 0..a.row_bytes {
                s.insert(a.start + r * a.stride + b);
            }
        }
    }
    s
}

fn check(row: &isa::InstInfo, pat: bool) -> bool {
    let Some((inst, pat_line)) = inst_text(row, pat) else {
        return false;
    };
    // VMEM words 0..8 repeating: every index table names elements 0..7 (6 and 7 are past a
    // scatter's limit of 6 and dropped).
    let data: Vec<u8> = (0..0x1800u32).flat_map(|i| (i % 8).to_le_bytes()).collect();
    let text = format!(
        ".dma 0 len=8 dims=[(3,16,24)]\n{pat_line}.data vmem 0 {}\n\
         s.li s1, {}\ns.li s2, {}\ns.li s3, {}\ns.li s4, {}\ns.li s5, {SREG}\n\
         s.li s6, {TABLE_AT}\n{inst}\nhalt\n",
        common::hex(&data),
        BASES[0],
        BASES[1],
        BASES[2],
        BASES[3]
    );
    let prog = isa::asm::assemble(&text).unwrap_or_else(|e| panic!("{}\n{text}", e.render("t.s")));
    let i = *prog.code.iter().rev().nth(1).unwrap();
    let arch = ArchConfig::resolve("mini", &[] as &[String]).unwrap();
    let mut sys = System::new(
        &arch,
        prog.clone(),
        1,
        SimOptions {
            functional: true,
            ..Default::default()
        },
    )
    .unwrap();
    sys.set_infeed(0, 0, vec![7; 64]).unwrap();
    sys.log_accesses();
    sys.run().unwrap_or_else(|e| panic!("{inst}: {e}"));
    let log = sys.vmem(0, 0).unwrap().access_log();
    let mut regs = [0u64; 32];
    regs[1..5].copy_from_slice(&BASES);
    regs[5] = SREG;
    regs[6] = TABLE_AT;
    let a = i.resolve(&regs).unwrap();
    let mut reads = BTreeSet::new();
    let mut writes = BTreeSet::new();
    let mut may_read = BTreeSet::new();
    for t in i.accesses(&a, &Ctx(&prog, &data)) {
        let b = bytes_of(&t.runs);
        if let isa::Extent::Gathered(_) = t.use_.extent {
            // Indices are 0..7: the gathered elements lie in the first 8.
            let size = t.use_.elem.bytes();
            let at = a[row.position(t.use_.field).unwrap()];
            may_read.extend(at..at + 8 * size);
            continue;
        }
        if let isa::Extent::IndexedRows { .. } = t.use_.extent {
            // Exact here: the context reads the table.
            assert!(!t.runs.is_empty(), "{inst}: indexed rows listed");
        }
        if t.use_.role.reads() {
            reads.extend(b.iter().copied());
        }
        if t.use_.role.writes() {
            writes.extend(b);
        }
    }
    let mut got_r = BTreeSet::new();
    let mut got_w = BTreeSet::new();
    for (addr, len, w) in log {
        let s = if w { &mut got_w } else { &mut got_r };
        s.extend(addr..addr + len);
    }
    assert_eq!(
        got_w, writes,
        "{inst} (pattern: {pat_line:?}): bytes written"
    );
    assert!(
        reads.is_subset(&got_r),
        "{inst} ({pat_line:?}): derived reads {:?} not all read",
        reads.difference(&got_r).take(8).collect::<Vec<_>>()
    );
    let allowed: BTreeSet<u64> = reads.union(&writes).chain(&may_read).copied().collect();
    assert!(
        got_r.is_subset(&allowed),
        "{inst} ({pat_line:?}): read bytes outside the derived accesses: {:?}",
        got_r.difference(&allowed).take(8).collect::<Vec<_>>()
    );
    true
}

/// Every instruction with a memory operand, except the ICI transfers (they need a peer chip):
/// the simulator touches exactly the derived bytes.
#[test]
fn simulator_touches_the_bytes_the_table_derives() {
    let mut checked = Vec::new();
    for row in TABLE {
        if row.uses.is_empty() || row.unit == isa::Unit::Ici {
            continue;
        }
        assert!(check(row, false), "{}: no test instruction", row.mnemonic);
        checked.push(row.mnemonic);
        if row.fields.iter().any(|f| f.name == "pat") {
            assert!(check(row, true));
            checked.push(row.mnemonic);
        }
    }
    // Every memory-touching row but the two ICI transfers was run.
    let expected = TABLE
        .iter()
        .filter(|r| !r.uses.is_empty() && r.unit != isa::Unit::Ici)
        .count();
    assert!(checked.len() > expected, "{checked:?}");
}
