//! Hand-written assembly programs run on the `mini` preset: each checks the output bits against
//! a reference computed here and the cycle count against docs/timing.md's formulas, evaluated
//! here from the arch's fields.

mod common;

use arch::ArchConfig;
use common::{bf16ref, hex, run, Doc, Lcg};

fn mini() -> ArchConfig {
    ArchConfig::preset("mini").unwrap()
}

/// One int8 tile: DMA in (weights + activations in one copy), ldw, matmul, st, DMA out.
fn single_tile(k: u64, n: u64, m: u64) {
    let a = mini();
    let d = Doc::new(&a);
    let mut g = Lcg(k * 100 + n * 10 + m);
    let w: Vec<i8> = (0..k * n).map(|_| g.i8()).collect();
    let x: Vec<i8> = (0..m * k).map(|_| g.i8()).collect();
    let inb: Vec<u8> = w.iter().chain(&x).map(|&v| v as u8).collect();
    let (wb, xb) = (k * n, m * k);
    let out_bytes = 4 * m * n;
    let asm = format!(
        r#"
.data hbm 0 {data}
.dma 0 len={inlen}
.dma 1 len={out_bytes}
    dma.copy vmem[s0+0], hbm[s0+0], desc=0, signal=sem0
    mxu.ldw [s0+0], mxu=0, k={k}, n={n}, stride={n}, mode=int8, wait=sem0
    mxu.matmul [s0+{wb}], acc[s0+0], mxu=0, m={m}, k={k}, stride={k}, mode=int8, accumulate=0
    mxu.st [s0+2048], acc[s0+0], mxu=0, m={m}, n={n}, stride={stride}, signal=sem1
    dma.copy hbm[s0+8192], vmem[s0+2048], desc=1, wait=sem1
    halt
"#,
        data = hex(&inb),
        inlen = wb + xb,
        stride = 4 * n,
    );
    for functional in [true, false] {
        let (sys, cycles) = run(&asm, &a, functional, None);
        // docs/timing.md: DMA alone; load at s = D; matmul at t = s + 1; complete at
        // t + M − 1 + R + C; st from there for max(M, ⌈4MN/vmem⌉); DMA out alone.
        let dma_in = d.dma_alone(wb + xb);
        let s = dma_in;
        let t = s + 1;
        let complete = t + m - 1 + d.r + d.c;
        let st_done = complete + d.st(m, n);
        let want = st_done + d.dma_alone(out_bytes);
        assert_eq!(cycles, want, "k={k} n={n} m={m} functional={functional}");
        if functional {
            let out = sys.hbm(0).unwrap().read_vec(8192, out_bytes).unwrap();
            for i in 0..m {
                for j in 0..n {
                    let mut acc = 0i32;
                    for kk in 0..k {
                        acc = acc.wrapping_add(
                            x[(i * k + kk) as usize] as i32 * w[(kk * n + j) as usize] as i32,
                        );
                    }
                    let o = ((i * n + j) * 4) as usize;
                    let got = i32::from_le_bytes(out[o..o + 4].try_into().unwrap());
                    assert_eq!(got, acc, "row {i} col {j}");
                }
            }
        }
    }
}

#[test]
fn single_mxu_tile_full() {
    single_tile(8, 8, 8);
}

#[test]
fn single_mxu_tile_padded_and_tall() {
    single_tile(5, 6, 13);
}

/// K = T·R split over T weight tiles, accumulating in the MXU (bf16), M ≥ R and M < R.
fn k_split(tiles: u64, m: u64) {
    let mut a = mini();
    a.mxu.dtype = arch::MxuDtype::Bf16;
    let d = Doc::new(&a);
    let (r, c) = (d.r, d.c);
    let kk = tiles * r;
    let mut g = Lcg(tiles * 7 + m);
    // weights: tile j is R×C row-major at j·R·C·2; activations M×K row-major after them.
    let w: Vec<u16> = (0..kk * c).map(|_| g.bf16()).collect(); // K×C row-major == tiles stacked
    let x: Vec<u16> = (0..m * kk).map(|_| g.bf16()).collect();
    let bytes: Vec<u8> = w.iter().chain(&x).flat_map(|v| v.to_le_bytes()).collect();
    let xoff = kk * c * 2;
    let mut body = String::new();
    for j in 0..tiles {
        let wait = if j == 0 { ", wait=sem0" } else { "" };
        body += &format!(
            "    mxu.ldw [s0+{wa}], mxu=0, k={r}, n={c}, stride={ws}, mode=bf16{wait}\n",
            wa = j * r * c * 2,
            ws = c * 2
        );
        body += &format!(
            "    mxu.matmul [s0+{xa}], acc[s0+0], mxu=0, m={m}, k={r}, stride={xs}, mode=bf16, accumulate={acc}\n",
            xa = xoff + j * r * 2,
            xs = kk * 2,
            acc = (j > 0) as u8
        );
    }
    let out_bytes = 4 * m * c;
    let asm = format!(
        r#"
.data hbm 0 {data}
.dma 0 len={inlen}
.dma 1 len={out_bytes}
    dma.copy vmem[s0+0], hbm[s0+0], desc=0, signal=sem0
{body}    mxu.st [s0+16384], acc[s0+0], mxu=0, m={m}, n={c}, stride={st}, signal=sem1
    dma.copy hbm[s0+65536], vmem[s0+16384], desc=1, wait=sem1
    halt
"#,
        data = hex(&bytes),
        inlen = bytes.len(),
        st = 4 * c,
    );
    let (sys, cycles) = run(&asm, &a, true, None);
    // Contract: T tiles back to back from load 0 at D complete at D + (T−1)·max(M, R) + M + R + C.
    let dma_in = d.dma_alone(bytes.len() as u64);
    let complete = dma_in + (tiles - 1) * m.max(r) + m + r + c;
    let want = complete + d.st(m, c) + d.dma_alone(out_bytes);
    assert_eq!(cycles, want, "T={tiles} M={m}");
    // Numerics: per tile, column sums from +0 in row order, then acc = add(acc, p).
    let out = sys.hbm(0).unwrap().read_vec(65536, out_bytes).unwrap();
    for i in 0..m {
        for n in 0..c {
            let mut acc = 0f32;
            for j in 0..tiles {
                let mut p = 0f32;
                for k in 0..r {
                    let kx = j * r + k;
                    p = bf16ref::add(
                        p,
                        bf16ref::prod(x[(i * kk + kx) as usize], w[(kx * c + n) as usize]),
                    );
                }
                acc = if j == 0 { p } else { bf16ref::add(acc, p) };
            }
            let o = ((i * c + n) * 4) as usize;
            let got = u32::from_le_bytes(out[o..o + 4].try_into().unwrap());
            assert_eq!(got, acc.to_bits(), "row {i} col {n}");
        }
    }
}

#[test]
fn k_split_gemm_accumulates_in_the_mxu() {
    k_split(3, 12);
}

#[test]
fn k_split_gemm_weight_port_bound() {
    k_split(4, 3);
}
