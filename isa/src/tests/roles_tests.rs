//! Operand roles (src/roles.rs): every memory operand of every row has a declared use, and the
//! accesses derived from the uses are the bytes the documented semantics name.

use crate::roles::{AccessCtx, Extent};
use crate::{Access, Layout, PatDim, Pattern, Program, Role, Space, TABLE};

/// Every positional memory operand (`vaddr`, `memref`) of every row has exactly one use;
/// every use names a positional memory operand (or a register holding a VMEM address); unit instructions' positional operands fit the
/// four values `Inst::resolve` returns.
#[test]
fn every_memory_operand_has_a_role() {
    for row in TABLE {
        for f in row.fields.iter().filter(|f| !f.keyword) {
            let mem = f.kind == "vaddr" || f.kind == "memref";
            let n = row.uses.iter().filter(|u| u.field == f.name).count();
            if f.kind == "sreg" && n == 1 {
                continue; // a register holding a VMEM address (an indexed DMA's table)
            }
            assert_eq!(
                n, mem as usize,
                "{}: operand `{}` ({}) has {n} uses",
                row.mnemonic, f.name, f.kind
            );
        }
        for u in row.uses {
            let f = row.fields.iter().find(|f| f.name == u.field);
            // A memory operand, or a register holding a VMEM address (an indexed DMA's table).
            assert!(
                f.is_some_and(
                    |f| !f.keyword && (f.kind == "vaddr" || f.kind == "memref" || f.kind == "sreg")
                ),
                "{}: use `{}` names no positional memory operand",
                row.mnemonic,
                u.field
            );
        }
        if row.unit != crate::Unit::Seq {
            assert!(row.fields.iter().filter(|f| !f.keyword).count() <= 4);
        }
    }
}

fn acc(p: &Program, text: &str, regs: &[(usize, u64)]) -> Vec<(String, Role, Vec<Access>, u64)> {
    let i = crate::asm::parse_inst(text).unwrap();
    let mut r = [0u64; 32];
    for &(k, v) in regs {
        r[k] = v;
    }
    let a = i.resolve(&r).unwrap();
    i.accesses(&a, p as &dyn AccessCtx)
        .into_iter()
        .map(|t| {
            (
                t.use_.field.to_string(),
                t.use_.role,
                t.runs.to_vec(),
                t.moved,
            )
        })
        .collect()
}

#[test]
fn derived_accesses_follow_the_semantics() {
    let p = Program::default();
    // vpu.cmp: dst is pred (one byte per element), sources four bytes each.
    let v = acc(
        &p,
        "vpu.cmp [s1+8], [s2], [s3+4], n=4, t=f32, cmp=lt",
        &[(1, 100), (2, 200), (3, 300)],
    );
    assert_eq!(
        v[0],
        ("dst".into(), Role::Write, vec![Access::vmem(108, 4)], 4)
    );
    assert_eq!(
        v[1],
        ("a".into(), Role::Read, vec![Access::vmem(200, 16)], 16)
    );
    assert_eq!(
        v[2],
        ("b".into(), Role::Read, vec![Access::vmem(304, 16)], 16)
    );
    // mxu.ldw transposed: n rows of k elements.
    let v = acc(
        &p,
        "mxu.ldw [s1], mxu=0, k=4, n=2, stride=64, mode=bf16, tr=1",
        &[(1, 1000)],
    );
    assert_eq!(v[0].2, vec![Access::vmem_rows(1000, 8, 64, 2)]);
    assert_eq!(v[0].3, 16);
    // vpu.scatter: the destination is s[lim] elements, read and written once per update.
    let v = acc(
        &p,
        "vpu.scatter [s1], [s2], [s3], s4, n=3, t=s32, op=add, set=0",
        &[(1, 0), (2, 64), (3, 128), (4, 10)],
    );
    assert_eq!(
        v[0],
        ("dst".into(), Role::Update, vec![Access::vmem(0, 40)], 24)
    );
    // infeed into HBM: the space comes from the operand.
    let v = acc(&p, "infeed hbm[s1+4], len=12", &[(1, 4)]);
    assert_eq!(v[0].2, vec![Access::hbm(8, 12)]);
    // A gathered operand without a readable table is unknown (no runs), but moves n elements.
    let v = acc(&p, "vpu.gather [s1], [s2], [s3], n=5, t=f32", &[]);
    assert!(v[1].2.is_empty());
    assert_eq!(v[1].3, 20);
}

#[test]
fn pattern_layouts_give_offsets_runs_and_fetched_elements() {
    let l = |d: &[(u32, u64)]| Layout {
        dims: d
            .iter()
            .map(|&(count, stride)| PatDim { count, stride })
            .collect(),
    };
    // Scalar broadcast: one element, fetched once.
    let s = l(&[(16, 0)]);
    assert_eq!(s.distinct(16), 1);
    assert_eq!(s.runs(Space::Vmem, 100, 16, 4), vec![Access::vmem(100, 4)]);
    // Row broadcast: a row of 8 repeated 3 times: 8 fetched, one run; partial last row too.
    let r = l(&[(8, 4), (3, 0)]);
    assert_eq!(r.distinct(24), 8);
    assert_eq!(r.distinct(5), 5);
    assert_eq!(r.offset(13), 20);
    assert_eq!(r.runs(Space::Vmem, 0, 24, 4), vec![Access::vmem(0, 32)]);
    // Column broadcast: element r of a column repeated along a row of 8.
    let c = l(&[(8, 0), (4, 4)]);
    assert_eq!(c.distinct(32), 4);
    assert_eq!(c.distinct(9), 2);
    assert_eq!(c.offset(9), 4);
    // Strided rows of a wider matrix: rows of 8 f32 in a 48-byte-wide one.
    let w = l(&[(8, 4), (4, 48)]);
    assert_eq!(w.distinct(32), 32);
    assert_eq!(
        w.runs(Space::Vmem, 0, 32, 4),
        vec![Access::vmem_rows(0, 32, 48, 4)]
    );
    // distinct counts by brute force agree on a few irregular layouts.
    for d in [
        vec![(3, 4), (2, 0), (5, 12)],
        vec![(2, 0), (3, 4), (2, 0)],
        vec![(4, 4)],
        vec![(1, 0), (7, 0), (3, 100)],
    ] {
        let x = l(&d);
        for n in 0..80u64 {
            let brute = (0..n)
                .filter(|&i| {
                    let mut q = i;
                    x.dims.iter().all(|dd| {
                        let digit = q % dd.count as u64;
                        q /= dd.count as u64;
                        dd.stride != 0 || digit == 0
                    })
                })
                .count() as u64;
            assert_eq!(x.distinct(n), brute, "{d:?} n={n}");
            // Every index's bytes lie inside the runs.
            let runs = x.runs(Space::Vmem, 0, n, 4);
            for i in 0..n {
                let o = x.offset(i);
                assert!(
                    runs.iter().any(|a| a.overlaps(&Access::vmem(o, 4))),
                    "{d:?} n={n} i={i}"
                );
            }
        }
    }
}

#[test]
fn patterns_assemble_print_and_are_checked() {
    let text = ".pat 0 a=[(8,4),(4,0)] b=[(32,0)]\n\
                vpu.add [s1], [s2], [s3], n=32, t=f32, pat=0\n\
                halt\n";
    let p = crate::asm::assemble(text).unwrap();
    assert_eq!(
        p.pats[0].layout("b").unwrap().dims,
        vec![PatDim {
            count: 32,
            stride: 0
        }]
    );
    let back = crate::disasm::disasm(&p);
    assert_eq!(crate::asm::assemble(&back).unwrap(), p);
    assert_eq!(Program::from_bytes(&p.to_bytes().unwrap()).unwrap(), p);
    let v = acc(
        &p,
        "vpu.add [s1], [s2], [s3], n=32, t=f32, pat=0",
        &[(2, 64), (3, 512)],
    );
    assert_eq!(v[1].3, 32); // a row of 8 f32, fetched once
    assert_eq!(
        v[2],
        ("b".into(), Role::Read, vec![Access::vmem(512, 4)], 4)
    );
    // Errors: an undefined pattern, an operand the instruction lacks, a bad dimension.
    for (bad, want) in [
        (
            "vpu.add [s1], [s2], [s3], n=4, t=f32, pat=0\nhalt\n",
            "1:1: pattern 0 is not defined",
        ),
        (
            ".pat 0 c=[(4,4)]\nvpu.add [s1], [s2], [s3], n=4, t=f32, pat=0\nhalt\n",
            "operand `c`",
        ),
        (
            ".pat 0 a=[(0,4)]\nhalt\n",
            "1:8: .pat: operand `a`: every count must be >= 1",
        ),
        (
            ".pat 1 a=[(4,4)]\nhalt\n",
            ".pat 1: patterns must be numbered in order",
        ),
        (".pat 0 a=[(4)]\nhalt\n", "needs 2 numbers"),
    ] {
        let e = crate::asm::assemble(bad).unwrap_err().to_string();
        assert!(e.contains(want), "{bad:?}: {e}");
    }
    let _ = Pattern::default();
    let _ = Extent::Elems(0);
}

/// `Layout::runs` (which counts its runs in a map past 16 blocks) gives exactly what the plain
/// search of its output gives, on layouts with many blocks, repeats and mergeable runs.
#[test]
fn layout_runs_dedup_matches_the_linear_search() {
    fn reference(x: &Layout, base: u64, n: u64, unit: u64) -> Vec<Access> {
        let d0 = x.dims[0];
        let c0 = d0.count.max(1) as u64;
        let blocks = n.div_ceil(c0);
        let mut out: Vec<Access> = Vec::new();
        for b in 0..blocks {
            let cnt = c0.min(n - b * c0);
            let a = Access::runs(Space::Vmem, base + x.offset(b * c0), unit, d0.stride, cnt);
            if out.contains(&a) {
                continue;
            }
            if let Some(last) = out.last_mut() {
                if a.rows == 1 && last.row_bytes == a.row_bytes && a.start > last.start {
                    let gap = a.start - last.start;
                    if last.rows == 1 && gap >= a.row_bytes {
                        last.stride = gap;
                        last.rows = 2;
                        continue;
                    }
                    if last.rows > 1 && a.start == last.start + last.rows * last.stride {
                        last.rows += 1;
                        continue;
                    }
                }
            }
            out.push(a);
        }
        out
    }
    let dims: &[&[(u32, u64)]] = &[
        &[(1, 4), (40, 8)],
        &[(1, 4), (5, 0), (9, 16)],
        &[(2, 4), (3, 100), (4, 0), (5, 8)],
        &[(1, 0), (7, 12), (3, 0), (4, 84)],
        &[(1, 4), (6, 4), (6, 0), (3, 20)],
        &[(3, 8), (2, 0), (2, 24), (5, 4)],
        &[(1, 4), (4, 16), (4, 4), (4, 64)],
    ];
    for d in dims {
        let x = Layout {
            dims: d
                .iter()
                .map(|&(count, stride)| PatDim { count, stride })
                .collect(),
        };
        for n in [1u64, 17, 33, 64, 100, 240, 400] {
            assert_eq!(
                x.runs(Space::Vmem, 64, n, 4),
                reference(&x, 64, n, 4),
                "{d:?} n={n}"
            );
        }
    }
}
