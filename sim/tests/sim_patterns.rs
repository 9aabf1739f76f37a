//! Address patterns (`.pat`, `pat=`) and transposed weight loads: numerics against values
//! computed here from the documented layout, and the documented VPU cost with the bytes a
//! pattern actually fetches (docs/timing.md).

mod common;

use arch::ArchConfig;
use common::{hex, run, Lcg};

fn mini() -> ArchConfig {
    ArchConfig::resolve("mini", &[] as &[String]).unwrap()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn f32b(v: &[f32]) -> String {
    hex(&v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())
}

/// `y = a + b` over 32 f32 with `b` a broadcast row of 8 (4 rows), `z = a · s` with `s` a
/// scalar broadcast, `w = a + c` with `c` a column broadcast (element r across row r), and a
/// strided destination: each against the layout's formula.
#[test]
fn broadcast_and_strided_operands_compute_by_their_layout() {
    let a: Vec<f32> = (0..32).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..8).map(|j| 100.0 + j as f32).collect();
    let text = format!(
        ".pat 0 b=[(8,4),(4,0)]\n\
         .pat 1 b=[(32,0)]\n\
         .pat 2 b=[(8,0),(4,4)]\n\
         .pat 3 dst=[(8,4),(4,64)]\n\
         .data vmem 0 {}\n.data vmem 512 {}\n\
         s.li s1, 512\ns.li s2, 1024\ns.li s3, 2048\ns.li s4, 3072\ns.li s5, 4096\n\
         vpu.add [s2], [s0], [s1], n=32, t=f32, pat=0\n\
         vpu.mul [s3], [s0], [s1], n=32, t=f32, pat=1\n\
         vpu.add [s4], [s0], [s1], n=32, t=f32, pat=2\n\
         vpu.mov [s5], [s0], n=32, t=f32, pat=3\n\
         halt\n",
        f32b(&a),
        f32b(&b)
    );
    let (sys, _) = run(&text, &mini(), true, None);
    let vm = sys.vmem(0, 0).unwrap();
    let y = f32s(&vm.read_vec(1024, 128).unwrap());
    let z = f32s(&vm.read_vec(2048, 128).unwrap());
    let w = f32s(&vm.read_vec(3072, 128).unwrap());
    for i in 0..32 {
        assert_eq!(y[i], a[i] + b[i % 8], "row broadcast {i}");
        assert_eq!(z[i], a[i] * b[0], "scalar broadcast {i}");
        assert_eq!(w[i], a[i] + b[i / 8], "column broadcast {i}");
    }
    // Strided destination: row r of 8 at 4096 + 64·r; the gaps are untouched (zero).
    let d = f32s(&vm.read_vec(4096, 256).unwrap());
    for r in 0..4 {
        for j in 0..16 {
            let want = if j < 8 { a[r * 8 + j] } else { 0.0 };
            assert_eq!(d[r * 16 + j], want, "strided dst row {r} slot {j}");
        }
    }
}

/// The VPU cost `B = max(⌈n / epc⌉, ⌈bytes / vmem.bytes_per_cycle⌉)` counts the bytes the
/// operands fetch: a broadcast row is read once. The same add with a materialized operand
/// and with a broadcast one differ by exactly the two formulas' difference.
#[test]
fn a_broadcast_operand_costs_only_the_bytes_it_fetches() {
    let arch = mini();
    let (n, row) = (256u64, 8u64);
    let epc = arch.vpu.alu.elems_per_cycle as u64;
    let cap = arch.vmem.bytes_per_cycle;
    let b_of = |bytes: u64| n.div_ceil(epc).max(bytes.div_ceil(cap));
    let prog = |pat: &str, p: &str| {
        format!(
            "{pat}s.li s1, 2048\ns.li s2, 4096\n\
             vpu.add [s2], [s0], [s1], n={n}, t=f32{p}\nhalt\n"
        )
    };
    let (_, full) = run(&prog("", ""), &arch, false, None);
    let (_, bcast) = run(
        &prog(
            &format!(".pat 0 b=[({row},4),({},0)]\n", n / row),
            ", pat=0",
        ),
        &arch,
        false,
        None,
    );
    let (_, scalar) = run(
        &prog(&format!(".pat 0 b=[({n},0)]\n"), ", pat=0"),
        &arch,
        false,
        None,
    );
    let b_full = b_of(3 * 4 * n);
    let b_row = b_of(2 * 4 * n + 4 * row);
    let b_scalar = b_of(2 * 4 * n + 4);
    assert!(b_full > b_row, "the example must be VMEM-bound");
    assert_eq!(full - bcast, b_full - b_row);
    assert_eq!(full - scalar, b_full - b_scalar);
}

/// `mxu.matmul` with conv rows: row `r` at `A(src) + (r mod n1)·s0 + (r / n1)·s1`
/// (overlapping windows), against an int8 reference computed from that formula.
#[test]
fn matmul_conv_rows_read_two_strides() {
    let arch = mini();
    let (k, n, m) = (4usize, 8usize, 6usize);
    let (n1, s0, s1) = (3usize, 2usize, 20usize);
    let mut g = Lcg(7);
    let w: Vec<i8> = (0..k * n).map(|_| g.i8()).collect();
    let x: Vec<i8> = (0..64).map(|_| g.i8()).collect();
    let text = format!(
        ".pat 0 src=[({n1},{s0}),({m},{s1})]\n\
         .data vmem 0 {}\n.data vmem 256 {}\n\
         s.li s1, 256\n\
         mxu.ldw [s0], mxu=0, k={k}, n={n}, stride={n}, mode=int8\n\
         mxu.matmul [s1], acc[s0], mxu=0, m={m}, k={k}, stride=0, mode=int8, accumulate=0, pat=0, signal=sem1\n\
         sem.wait sem1, n=1\nhalt\n",
        hex(&w.iter().map(|&v| v as u8).collect::<Vec<_>>()),
        hex(&x.iter().map(|&v| v as u8).collect::<Vec<_>>()),
    );
    let (sys, _) = run(&text, &arch, true, None);
    for r in 0..m {
        let at = (r % n1) * s0 + (r / n1) * s1;
        let got = sys.acc_row(0, 0, 0, r).unwrap();
        for j in 0..n {
            let want: i32 = (0..k).map(|i| x[at + i] as i32 * w[i * n + j] as i32).sum();
            assert_eq!(got[j] as i32, want, "row {r} col {j}");
        }
    }
}

/// A transposed weight load (`tr=1`, the tile stored as `n` rows of `k`) gives the same
/// accumulators and the same cycles as the plain load of the same tile.
#[test]
fn transposed_weight_load_equals_the_plain_load() {
    let arch = ArchConfig::resolve("mini", &["mxu.dtype=bf16".to_string()]).unwrap();
    let (k, n, m) = (5usize, 7usize, 4usize);
    let mut g = Lcg(11);
    let w: Vec<u16> = (0..k * n).map(|_| g.bf16()).collect();
    let wt: Vec<u16> = (0..n * k).map(|q| w[(q % k) * n + q / k]).collect();
    let x: Vec<u16> = (0..m * k).map(|_| g.bf16()).collect();
    let b = |v: &[u16]| hex(&v.iter().flat_map(|e| e.to_le_bytes()).collect::<Vec<u8>>());
    let prog = |tile: &str, stride: usize, tr: &str| {
        format!(
            ".data vmem 0 {tile}\n.data vmem 512 {}\ns.li s1, 512\n\
             mxu.ldw [s0], mxu=0, k={k}, n={n}, stride={stride}, mode=bf16{tr}\n\
             mxu.matmul [s1], acc[s0], mxu=0, m={m}, k={k}, stride={}, mode=bf16, accumulate=0, signal=sem1\n\
             sem.wait sem1, n=1\nhalt\n",
            b(&x),
            2 * k
        )
    };
    let (plain, c_plain) = run(&prog(&b(&w), 2 * n, ""), &arch, true, None);
    let (trans, c_trans) = run(&prog(&b(&wt), 2 * k, ", tr=1"), &arch, true, None);
    assert_eq!(c_plain, c_trans);
    for r in 0..m {
        assert_eq!(
            plain.acc_row(0, 0, 0, r),
            trans.acc_row(0, 0, 0, r),
            "row {r}"
        );
    }
    let any_nonzero = (0..m).any(|r| plain.acc_row(0, 0, 0, r).unwrap().iter().any(|&v| v != 0));
    assert!(any_nonzero);
}

/// Vector ↔ scalar moves (docs/isa.md `s.ld`, `s.st`, `vpu.splat`): a VMEM element into a
/// scalar register (sign-extended for signed types, zero-extended for unsigned, float bits
/// raw), a VPU result read back after its semaphore, a scalar's low bytes stored, and a
/// scalar broadcast into a vector.
#[test]
fn vector_scalar_moves() {
    let mut data = vec![0u8; 12];
    data[0] = (-3i8) as u8;
    data[2..4].copy_from_slice(&0xfffeu16.to_le_bytes());
    data[4..8].copy_from_slice(&1.5f32.to_le_bytes());
    data[8..12].copy_from_slice(&(-7i32).to_le_bytes());
    let text = format!(
        ".data vmem 0 {}\n\
         s.ld s1, [s0+0], t=s8\ns.ld s2, [s0+2], t=u16\ns.ld s3, [s0+4], t=f32\n\
         s.ld s4, [s0+8], t=s32\n\
         vpu.add [s0+64], [s0+8], [s0+8], n=1, t=s32, signal=sem1\n\
         sem.wait sem1, n=1\n\
         s.ld s5, [s0+64], t=s32\n\
         s.st s5, [s0+128], t=s16\n\
         vpu.splat [s0+256], s5, n=4, t=s32\n\
         halt\n",
        hex(&data)
    );
    for functional in [true, false] {
        let (sys, _) = run(&text, &mini(), functional, None);
        let r = |i| sys.reg(0, 0, i).unwrap();
        assert_eq!(r(1) as i64, -3);
        assert_eq!(r(2), 0xfffe);
        assert_eq!(r(3), 1.5f32.to_bits() as u64);
        assert_eq!(r(4) as i64, -7);
        if !functional {
            continue; // timing-only runs do not compute the VPU's result
        }
        assert_eq!(r(5) as i64, -14);
        let vm = sys.vmem(0, 0).unwrap();
        assert_eq!(vm.read_vec(128, 4).unwrap(), vec![0xf2, 0xff, 0, 0]);
        let splat = vm.read_vec(256, 16).unwrap();
        for e in splat.chunks_exact(4) {
            assert_eq!(i32::from_le_bytes(e.try_into().unwrap()), -14);
        }
    }
}
