//! Functional coverage of the VPU's data-movement and conversion instructions, checked element
//! by element against references computed here from the ISA's definitions.

mod common;

use common::{hex, run};

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn vpu_movement_reduction_conversion() {
    let a: Vec<f32> = vec![1.5, -300.25, 7.0, 2.0, f32::NAN, -0.5];
    let idx: Vec<u32> = vec![5, 0, 3, 3];
    let data: Vec<u8> = a.iter().flat_map(|x| x.to_le_bytes()).collect();
    let idxb: Vec<u8> = idx.iter().flat_map(|x| x.to_le_bytes()).collect();
    let bf: Vec<u16> = vec![0x3F80, 0x3F81, 0x3B80, 0x3B80]; // a = [1, 1 + 2^-7], b = [2^-8, 2^-8]
    let bfb: Vec<u8> = bf.iter().flat_map(|x| x.to_le_bytes()).collect();
    let asm = format!(
        r#"
.data vmem 0 {data}
.data vmem 300 {idxb}
.data vmem 1200 {bfb}
    vpu.transpose [s0+100], [s0+0], rows=2, cols=3, t=f32
    vpu.reduce [s0+200], [s0+0], rows=2, cols=3, t=f32, op=add
    vpu.reduce [s0+220], [s0+0], rows=1, cols=4, t=f32, op=max
    vpu.gather [s0+400], [s0+0], [s0+300], n=4, t=f32
    vpu.iota [s0+500], n=6, div=2, modulo=3, t=s32
    vpu.cmp [s0+600], [s0+0], [s0+12], n=3, t=f32, cmp=lt
    vpu.select [s0+700], [s0+600], [s0+0], [s0+12], n=3, t=f32
    vpu.cvt [s0+800], [s0+0], n=6, to=s8, from=f32
    s.li s1, 305419896
    vpu.splat [s0+900], s1, n=3, t=s16
    vpu.bcast [s0+1000], [s0+0], n=3, rows=2, t=f32
    vpu.exp [s0+1100], [s0+0], n=3, t=f32
    vpu.add [s0+1300], [s0+1200], [s0+1204], n=2, t=bf16
    halt
"#,
        data = hex(&data),
        idxb = hex(&idxb),
        bfb = hex(&bfb),
    );
    let a_arch = arch::ArchConfig::preset("mini").unwrap();
    let (sys, _) = run(&asm, &a_arch, true, None);
    let vm = sys.vmem(0, 0).unwrap();
    let get = |addr: u64, len: u64| vm.read_vec(addr, len).unwrap();
    let same = |x: f32, y: f32| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
    // transpose: dst[j·rows + i] = a[i·cols + j]
    let t = f32s(&get(100, 24));
    for i in 0..2 {
        for j in 0..3 {
            assert!(same(t[j * 2 + i], a[i * 3 + j]), "transpose {i},{j}");
        }
    }
    // reduce add per row, in order; max propagates NaN (row 0 of a 1×4 view hits no NaN)
    let r = f32s(&get(200, 8));
    assert!(same(r[0], (a[0] + a[1]) + a[2]));
    assert!(
        r[1].is_nan() && r[1].to_bits() == 0x7FC0_0000,
        "NaN is canonical"
    );
    assert_eq!(f32s(&get(220, 4))[0], 7.0);
    // gather
    let g = f32s(&get(400, 16));
    for (k, &i) in idx.iter().enumerate() {
        assert!(same(g[k], a[i as usize]), "gather {k}");
    }
    // iota: (i / 2) mod 3
    let io: Vec<i32> = get(500, 24)
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(io, vec![0, 0, 1, 1, 2, 2]);
    // cmp lt (a[0..3] < a[3..6]): 1.5 < 2 → 1; -300.25 < NaN → 0; 7 < -0.5 → 0
    assert_eq!(get(600, 3), vec![1, 0, 0]);
    // select: p ? a : b
    let s = f32s(&get(700, 12));
    assert!(same(s[0], a[0]) && same(s[1], a[4]) && same(s[2], a[5]));
    // cvt f32 → s8: truncate toward zero, saturate, NaN → 0
    let c: Vec<i8> = get(800, 6).iter().map(|&b| b as i8).collect();
    assert_eq!(c, vec![1, -128, 7, 2, 0, 0]);
    // splat: low 16 bits of 0x12345678
    assert_eq!(get(900, 6), vec![0x78, 0x56, 0x78, 0x56, 0x78, 0x56]);
    // bcast
    let b = f32s(&get(1000, 24));
    for r in 0..2 {
        for j in 0..3 {
            assert!(same(b[r * 3 + j], a[j]));
        }
    }
    // exp: evaluated in f64, rounded once to f32 (within one f32 ulp of the host's exp)
    let e = f32s(&get(1100, 12));
    for i in 0..3 {
        let want = ((a[i] as f64).exp() as f32).to_bits() as i64;
        assert!(
            (e[i].to_bits() as i64 - want).abs() <= 1,
            "exp({}) = {}",
            a[i],
            e[i]
        );
    }
    // bf16 add computes in f32 and rounds once: 1 + 2^-8 → tie → even (1.0); 2^-9 + 2^-8
    let h: Vec<u16> = get(1300, 4)
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    // 1 + 2^-8 is a tie → even (1.0); 1 + 2^-7 + 2^-8 is a tie → even (1 + 2^-6)
    assert_eq!(h, vec![0x3F80, 0x3F82]);
}

#[test]
fn vpu_scatter_combines_in_order_and_drops_out_of_range() {
    // dst = [10, 20, 30, 40] (s32); updates a = [1, 2, 3, 4, 5, 6]; idx = [2, 9, 2, 0, 4, 2]:
    // index 9 and 4 are >= lim = 4 and dropped; index 2 three times, combined in order.
    let dst: Vec<u8> = [10i32, 20, 30, 40]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let a: Vec<u8> = [1i32, 2, 3, 4, 5, 6]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let idx: Vec<u8> = [2u32, 9, 2, 0, 4, 2]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let guard: Vec<u8> = vec![0xAB; 4];
    let negs: Vec<u8> = [f32::from_bits(0x7FC0_0123), 1.5f32]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let asm = format!(
        r#"
.data vmem 0 {dst}
.data vmem 100 {dst}
.data vmem 200 {dst}
.data vmem 16 {guard}
.data vmem 116 {guard}
.data vmem 300 {a}
.data vmem 400 {idx}
.data vmem 500 {negs}
    s.li s5, 4
    vpu.scatter [s0+0], [s0+300], [s0+400], s5, n=6, t=s32, op=add, set=0
    vpu.scatter [s0+100], [s0+300], [s0+400], s5, n=6, t=s32, op=add, set=1
    vpu.scatter [s0+200], [s0+300], [s0+400], s5, n=6, t=s32, op=mul, set=0
    vpu.neg [s0+600], [s0+500], n=2, t=f32
    halt
"#,
        dst = hex(&dst),
        guard = hex(&guard),
        a = hex(&a),
        idx = hex(&idx),
        negs = hex(&negs),
    );
    let a_arch = arch::ArchConfig::preset("mini").unwrap();
    let (sys, _) = run(&asm, &a_arch, true, None);
    let vm = sys.vmem(0, 0).unwrap();
    let s32s = |addr: u64| -> Vec<i32> {
        vm.read_vec(addr, 16)
            .unwrap()
            .chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    assert_eq!(s32s(0), vec![14, 20, 30 + 1 + 3 + 6, 40]);
    assert_eq!(
        s32s(100),
        vec![4, 20, 6, 40],
        "set: the last duplicate wins"
    );
    assert_eq!(s32s(200), vec![40, 20, 30 * 18, 40]);
    // Nothing past lim elements is touched.
    assert_eq!(vm.read_vec(16, 4).unwrap(), guard);
    assert_eq!(vm.read_vec(116, 4).unwrap(), guard);
    // vpu.neg flips the sign bit of a NaN and keeps its payload.
    let n = f32s(&vm.read_vec(600, 8).unwrap());
    assert_eq!(n[0].to_bits(), 0xFFC0_0123);
    assert_eq!(n[1], -1.5);
}
