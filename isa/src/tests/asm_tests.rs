//! Assembler behaviour on hand-written text: syntax, labels, directives, errors with line:col.

use crate::asm::assemble;
use crate::disasm::disasm;
use crate::*;

const SAMPLE: &str = r#"
; a tiny matmul: load W and X with DMA, multiply, store, halt
.region "w" hbm 0 64
.region "x" vmem 0 64
.dma 0 len=64
.dma 1 len=8 dims=[(8,8,16)]
.data hbm 0 0102030405060708
start:
    s.li s1, 4096
    dma.copy vmem[s0+0], hbm[s0], desc=0, signal=sem1
    dma.copy vmem[s0+64], hbm[s1-8], desc=1, signal=sem2
.hlo "dot.3"
    mxu.ldw [s0], mxu=0, k=8, n=8, stride=8, mode=int8, wait=sem1
    mxu.matmul [s0+64], acc[s0+0], mxu=0, m=8, k=8, stride=16, mode=int8, accumulate=0, wait=sem2, signal=sem3
    mxu.st [s0+256], acc[s0], mxu=0, m=8, n=8, stride=32, signal=sem4
.hlo -
    sem.wait sem4, n=1
    s.addi s2, s2, 1
    blt s2, s1, start
    halt
"#;

#[test]
fn sample_assembles() {
    let p = assemble(SAMPLE).unwrap();
    assert_eq!(p.code.len(), 10);
    assert_eq!(p.regions.len(), 2);
    assert_eq!(p.dma[1].dims[0].dst_stride, 16);
    assert_eq!(p.data[0].bytes, vec![1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(p.symbol_at(3), Some("dot.3"));
    assert_eq!(p.symbol_at(5), Some("dot.3"));
    assert_eq!(p.symbol_at(6), None);
    match p.code[8] {
        Inst::Blt { target, .. } => assert_eq!(target, Target(0)),
        ref other => panic!("{other}"),
    }
    match p.code[2] {
        Inst::DmaCopy { src, signal, .. } => {
            assert_eq!(
                src,
                MemRef {
                    space: Space::Hbm,
                    base: SReg(1),
                    off: -8
                }
            );
            assert_eq!(signal, Some(Sem(2)));
        }
        ref other => panic!("{other}"),
    }
    assert_eq!(assemble(&disasm(&p)).unwrap(), p);
    assert_eq!(Program::from_bytes(&p.to_bytes().unwrap()).unwrap(), p);
}

fn err(text: &str) -> (usize, usize, String) {
    let e = assemble(text).unwrap_err();
    (e.line, e.col, e.msg)
}

#[test]
fn errors_point_at_the_token() {
    let (l, c, m) = err("  nop\n  s.add s1, s2, s99\n");
    assert_eq!((l, c), (2, 17), "{m}");
    assert!(m.contains("s0..s31"), "{m}");

    let (l, c, m) = err("frobnicate s1\n");
    assert_eq!((l, c), (1, 1));
    assert!(m.contains("unknown mnemonic"), "{m}");

    let (l, c, m) = err("vpu.add [s1], [s2], [s3], n=4, t=f32, colour=red\nhalt\n");
    assert_eq!((l, c), (1, 39), "{m}");
    assert!(
        m.contains("unknown operand `colour=`") && m.contains("wait"),
        "{m}"
    );

    let (_, _, m) = err("vpu.add [s1], [s2], n=4, t=f32\n");
    assert!(m.contains("missing operand `b`"), "{m}");

    let (_, _, m) = err("vpu.add [s1], [s2], [s3], t=f32\n");
    assert!(m.contains("missing operand `n=`"), "{m}");

    let (l, c, m) = err("vpu.add [s1], [s2], [s3], n=2000000, t=f32\n");
    assert_eq!((l, c), (1, 1));
    assert!(m.contains("does not fit its 20-bit field"), "{m}");

    let (_, _, m) = err("vpu.exp [s1], [s2], n=4, t=s32\n");
    assert!(m.contains("expects float"), "{m}");

    let (l, _, m) = err("nop\njmp nowhere\n");
    assert_eq!(l, 2);
    assert!(m.contains("undefined label `nowhere`"), "{m}");

    let (_, _, m) = err("jmp @5\n");
    assert!(m.contains("past the end"), "{m}");

    let (_, _, m) = err("dma.copy vmem[s0], hbm[s0], desc=0\n");
    assert!(m.contains("DMA descriptor 0 is not defined"), "{m}");

    let (l, _, m) = err("a:\nnop\na:\nnop\n");
    assert_eq!(l, 3);
    assert!(m.contains("defined twice"), "{m}");

    let (_, _, m) = err(".dma 1 len=4\n");
    assert!(m.contains("in order"), "{m}");

    let (_, _, m) = err(".hlo \"x\"\n.hlo \"y\"\nnop\n");
    assert!(m.contains("covers no instruction"), "{m}");

    let (_, _, m) = err(".bogus 1\n");
    assert!(m.contains("unknown directive"), "{m}");

    let (l, c, m) = err("nop\n.sem sem40 wait=2\n");
    assert_eq!((l, c), (2, 6));
    assert!(m.contains(".sem"), "{m}");
    let (_, c, m) = err(".sem sem1 wait=0\n");
    assert_eq!(c, 11);
    assert!(m.contains("count must be"), "{m}");
    let (_, c, m) = err(".sem sem1 often\n");
    assert_eq!(c, 11);
    assert!(m.contains("unknown `often`"), "{m}");
    let (l, _, m) = err(".sem sem1 shared\n.sem sem1 wait=2\n");
    assert_eq!(l, 2);
    assert!(m.contains("declared twice"), "{m}");

    // Region annotations: the array must fill the region, places are held once, live ranges
    // run forward.
    let (_, c, m) = err(".region \"a\" hbm 0 60 f32[4,4]{1,0}\n");
    assert_eq!(c, 22);
    assert!(m.contains("64 bytes, the region 60"), "{m}");
    let (_, c, m) = err(".region \"a\" hbm 0 64 f32[4,4]{1,1}\n");
    assert_eq!(c, 22);
    assert!(m.contains("not a permutation"), "{m}");
    let (_, c, m) = err(".region \"a\" hbm 0 4 c32[1]\n");
    assert_eq!(c, 21);
    assert!(m.contains("unknown element type `c32`"), "{m}");
    let (_, c, m) = err(".region \"a\" hbm 0 4 c64[1]\n");
    assert_eq!(c, 21);
    assert!(m.contains("c64[1]{0} is 8 bytes, the region 4"), "{m}");
    let (l, c, m) = err(".region \"a\" hbm 0 4 io=param0\n.region \"b\" hbm 4 4 io=param0\n");
    assert_eq!((l, c), (2, 21));
    assert!(m.contains("held by two regions"), "{m}");
    let (_, c, m) = err(".region \"a\" vmem 0 4 live=9..3\n");
    assert_eq!(c, 22);
    assert!(m.contains("FROM <= TO"), "{m}");
    let (_, _, m) = err(".region \"a\" vmem 0 4 io=parm0\n");
    assert!(m.contains("expected paramN"), "{m}");

    let (_, _, m) = err("dma.copy smem[s0], hbm[s0], desc=0\n");
    assert!(m.contains("unknown memory space `smem`"), "{m}");

    let (_, _, m) = err(".data hbm 0 a\u{e9}b\n");
    assert!(m.contains("bad hex digit"), "{m}");

    let (_, _, m) = err("vpu.add [s1], [s2], [s3], n=4, n=5, t=f32\n");
    assert!(m.contains("given twice"), "{m}");
}

#[test]
fn rendered_error_has_file_line_col_and_caret() {
    let e = assemble("nop\n  s.li s1, zz\n").unwrap_err();
    let r = e.render("prog.s");
    assert!(r.starts_with("prog.s:2:12: error: "), "{r}");
    assert!(r.ends_with("  |            ^"), "{r:?}");
}

#[test]
fn quoted_names_survive() {
    let text = ".region \"a \\\"b\\\" ;c\\n\" vmem 0 16\n.hlo \"%fusion.1; x\"\nnop\n";
    let p = assemble(text).unwrap();
    assert_eq!(p.regions[0].name, "a \"b\" ;c\n");
    assert_eq!(p.symbols[0].hlo, "%fusion.1; x");
    assert_eq!(assemble(&disasm(&p)).unwrap(), p);
}

#[test]
fn encoding_layout_is_as_documented() {
    // s.add s1, s2, s3: opcode 0x11 in bits 0..8, rd at 8, ra at 13, rb at 18.
    let w = Inst::SAdd {
        rd: SReg(1),
        ra: SReg(2),
        rb: SReg(3),
    }
    .encode()
    .unwrap();
    assert_eq!(w.0, 0x11 | (1 << 8) | (2 << 13) | (3 << 18));
    // Negative offsets are two's complement in their field: [s1-1] = reg 1, offset 0xffff.
    let w = Inst::SLd {
        rd: SReg(0),
        addr: VAddr {
            base: SReg(1),
            off: -1,
        },
        t: DType::U8,
    }
    .encode()
    .unwrap();
    assert_eq!(w.0, 0x28 | (1 << 13) | (0xffff << 18) | (5 << 34));
}

#[test]
fn decode_rejects_bad_words() {
    assert!(matches!(
        Inst::decode(Word(0xff)),
        Err(DecodeError::UnknownOpcode(0xff))
    ));
    // halt with a reserved bit set.
    assert!(matches!(
        Inst::decode(Word(0x01 | 1 << 100)),
        Err(DecodeError::Reserved { .. })
    ));
    // s.ld with dtype code 15 (none).
    let bad = 0x28u128 | (15 << 34);
    assert!(matches!(
        Inst::decode(Word(bad)),
        Err(DecodeError::BadField { field: "t", .. })
    ));
    // Encoding an out-of-range register fails cleanly.
    assert!(Inst::SAdd {
        rd: SReg(40),
        ra: SReg(0),
        rb: SReg(0)
    }
    .encode()
    .is_err());
}

#[test]
fn bad_binary_files() {
    assert!(matches!(
        Program::from_bytes(b"nope"),
        Err(ProgramError::Format { .. })
    ));
    let mut b = Program::default().to_bytes().unwrap();
    b[8] = 9; // version
    let e = Program::from_bytes(&b).unwrap_err().to_string();
    assert!(e.contains("version 9"), "{e}");
    let mut b = Program::default().to_bytes().unwrap();
    b.push(0);
    assert!(Program::from_bytes(&b).is_err());
}

#[test]
fn region_annotations_round_trip_and_give_vmem_occupancy() {
    let text = ".region \"x\" hbm 0 64 f32[4,4]{1,0} io=param0{1,2}\n\
                .region \"y\" hbm 64 8 s32[2] io=result\n\
                .region \"t0\" vmem 0 128 live=1..3\n\
                .region \"t1\" vmem 0 64 bf16[32]{0} live=2..4\n\
                .region \"img\" vmem 4096 16\n\
                .region \"z\" hbm 128 16 c64[2]\n\
                nop\nnop\nnop\nnop\nhalt\n";
    let p = assemble(text).unwrap();
    assert_eq!(
        p.regions[0].io,
        Some(crate::RegionIo::Param {
            number: 0,
            index: vec![1, 2]
        })
    );
    assert_eq!(p.regions[1].array.as_ref().unwrap().text(), "s32[2]{0}");
    // Per instruction: the program-image region (16) always, t0 at 1..3, t1 at 2..4.
    assert_eq!(
        p.live_bytes_by_pc(crate::Space::Vmem),
        vec![16, 144, 208, 80, 16]
    );
    assert_eq!(p.live_bytes_by_pc(crate::Space::Hbm), vec![88; 5]);
    assert_eq!(
        p.region("z").unwrap().array.as_ref().unwrap().text(),
        "c64[2]{0}"
    );
    let again = assemble(&disasm(&p)).unwrap();
    assert_eq!(again, p);
    assert_eq!(Program::from_bytes(&p.to_bytes().unwrap()).unwrap(), p);
    assert!(p
        .io_region(&crate::RegionIo::Result { index: vec![] })
        .is_some_and(|r| r.name == "y"));
}
