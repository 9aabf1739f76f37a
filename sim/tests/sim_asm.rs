//! Hand-written assembly programs run on the `mini` preset: each checks the output bits against
//! a reference computed here and the cycle count against docs/timing.md's formulas, evaluated
//! here from the arch's fields.

mod common;

use arch::ArchConfig;
use common::{bf16ref, hex, run, Doc, Lcg};
use sim::{SimOptions, System};

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

/// Double buffering: tile 1's DMA starts when tile 0's weights are in (ldw0 signals) and runs
/// while matmul 0 streams, so matmul 1 follows matmul 0 back to back.
#[test]
fn dma_overlaps_compute() {
    let a = mini();
    let d = Doc::new(&a);
    let (r, c) = (d.r, d.c);
    let (k, m) = (4u64, 64u64); // two K' = 4 tiles of a K = 8 GEMM
    let mut g = Lcg(99);
    let w: Vec<i8> = (0..2 * k * c).map(|_| g.i8()).collect(); // tile j rows j·k..
    let x: Vec<i8> = (0..m * 2 * k).map(|_| g.i8()).collect(); // M × 8
    let tile = |j: u64| -> Vec<u8> {
        let mut v: Vec<u8> = w[(j * k * c) as usize..((j + 1) * k * c) as usize]
            .iter()
            .map(|&b| b as u8)
            .collect();
        for i in 0..m {
            for kk in 0..k {
                v.push(x[(i * 2 * k + j * k + kk) as usize] as u8);
            }
        }
        v
    };
    let (t0, t1) = (tile(0), tile(1));
    let bytes = t0.len() as u64;
    let xo = k * c;
    let asm = format!(
        r#"
.data hbm 0 {h0}
.data hbm 4096 {h1}
.dma 0 len={bytes}
.dma 1 len={ob}
    dma.copy vmem[s0+0], hbm[s0+0], desc=0, signal=sem0
    mxu.ldw [s0+0], mxu=0, k={k}, n={c}, stride={c}, mode=int8, wait=sem0, signal=sem5
    mxu.matmul [s0+{xo}], acc[s0+0], mxu=0, m={m}, k={k}, stride={k}, mode=int8, accumulate=0
    dma.copy vmem[s0+4096], hbm[s0+4096], desc=0, wait=sem5, signal=sem1
    mxu.ldw [s0+4096], mxu=0, k={k}, n={c}, stride={c}, mode=int8, wait=sem1
    mxu.matmul [s0+{xo1}], acc[s0+0], mxu=0, m={m}, k={k}, stride={k}, mode=int8, accumulate=1
    mxu.st [s0+8192], acc[s0+0], mxu=0, m={m}, n={c}, stride={st}, signal=sem2
    dma.copy hbm[s0+16384], vmem[s0+8192], desc=1, wait=sem2
    halt
"#,
        h0 = hex(&t0),
        h1 = hex(&t1),
        ob = 4 * m * c,
        xo1 = 4096 + xo,
        st = 4 * c,
    );
    for functional in [true, false] {
        let (sys, cycles) = run(&asm, &a, functional, None);
        let s0 = d.dma_alone(bytes);
        let t0 = s0 + 1;
        let ldw0_done = s0 + r + c - 1; // all weights written: visible R + C − 1 after the start
        let dma1_done = ldw0_done + d.dma_alone(bytes);
        let s1 = dma1_done.max(s0 + r).max(t0);
        let t1 = (s1 + 1).max(t0 + m);
        assert_eq!(
            t1,
            t0 + m,
            "test design: the second DMA must hide under matmul 0"
        );
        let complete = t1 + m - 1 + r + c;
        let want = complete + d.st(m, c) + d.dma_alone(4 * m * c);
        assert_eq!(cycles, want, "functional={functional}");
        // Without overlap (tile 1's DMA after matmul 0 completes) it would end much later.
        let serial = (t0 + m - 1 + r + c) + d.dma_alone(bytes) + 1 + m - 1 + r + c;
        assert!(complete + 40 < serial, "{complete} vs {serial}");
        if functional {
            let out = sys.hbm(0).unwrap().read_vec(16384, 4 * m * c).unwrap();
            for i in 0..m {
                for n in 0..c {
                    let mut acc = 0i32;
                    for kk in 0..2 * k {
                        acc = acc.wrapping_add(
                            x[(i * 2 * k + kk) as usize] as i32 * w[(kk * c + n) as usize] as i32,
                        );
                    }
                    let o = ((i * c + n) * 4) as usize;
                    assert_eq!(i32::from_le_bytes(out[o..o + 4].try_into().unwrap()), acc);
                }
            }
        }
    }
}

/// `y = a·x + b` over L chunks of 16 f32 in a sequencer loop; the VPU is the bottleneck.
#[test]
fn vpu_elementwise_loop() {
    let a = mini();
    let d = Doc::new(&a);
    let l = 32u64;
    let n = 16u64;
    let mut g = Lcg(5);
    let mut f = || (g.next() as i32 as f32) / 1e6;
    let xs: Vec<f32> = (0..l * n).map(|_| f()).collect();
    let as_: Vec<f32> = (0..l * n).map(|_| f()).collect();
    let bs: Vec<f32> = (0..l * n).map(|_| f()).collect();
    let hx = |v: &[f32]| hex(&v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>());
    let asm = format!(
        r#"
.data vmem 0 {x}
.data vmem 4096 {a}
.data vmem 8192 {b}
    s.li s1, 0
    s.li s2, {end}
loop:
    vpu.mul [s0+16384], [s1+4096], [s1+0], n={n}, t=f32
    vpu.add [s1+12288], [s0+16384], [s1+8192], n={n}, t=f32
    s.addi s1, s1, {step}
    blt s1, s2, loop
    halt
"#,
        x = hx(&xs),
        a = hx(&as_),
        b = hx(&bs),
        end = l * n * 4,
        step = n * 4,
    );
    for functional in [true, false] {
        let (sys, cycles) = run(&asm, &a, functional, None);
        // docs/timing.md VPU: B = max(⌈n/epc⌉, ⌈bytes/vmem_bpc⌉), visible B − 1 + max(L, 1) after
        // the start; the add reads the mul's result (RAW); the next mul waits for the add's pipe.
        let busy = |epc: u32| (n.div_ceil(epc as u64)).max((3 * 4 * n).div_ceil(d.vmem_bpc));
        let (bm, lm) = (
            busy(a.vpu.mul.elems_per_cycle),
            a.vpu.mul.latency.max(1) as u64,
        );
        let (ba, la) = (
            busy(a.vpu.alu.elems_per_cycle),
            a.vpu.alu.latency.max(1) as u64,
        );
        let gap = bm - 1 + lm; // mul start → add start
        let period = gap + ba;
        let seq_period = 4 * d.scalar + d.penalty;
        assert!(
            seq_period <= period,
            "test design: the VPU must be the bottleneck"
        );
        let c0 = 2 * d.scalar;
        let want = c0 + (l - 1) * period + gap + ba - 1 + la;
        assert_eq!(cycles, want, "functional={functional}");
        if functional {
            let y = sys.vmem(0, 0).unwrap().read_vec(12288, l * n * 4).unwrap();
            for i in 0..(l * n) as usize {
                let want = as_[i] * xs[i] + bs[i];
                let got = f32::from_le_bytes(y[i * 4..i * 4 + 4].try_into().unwrap());
                assert_eq!(got.to_bits(), want.to_bits(), "element {i}");
            }
        }
    }
}

/// A loop driven by the host: each infeed waits for its 64 bytes to arrive at the host link
/// rate; the VPU adds a constant; the results leave through the outfeed.
#[test]
fn infeed_driven_loop() {
    let a = mini();
    let d = Doc::new(&a);
    let l = 10u64;
    let mut g = Lcg(3);
    let stream: Vec<u8> = (0..l * 64).map(|_| g.next() as u8).collect();
    let k: Vec<i32> = (0..16).map(|i| i * 1000 - 7).collect();
    let kb: Vec<u8> = k.iter().flat_map(|v| v.to_le_bytes()).collect();
    let asm = format!(
        r#"
.data vmem 8192 {kb}
    s.li s1, 0
    s.li s2, {end}
    sem.signal sem1, n=1
loop:
    infeed vmem[s0+0], len=64, wait=sem1, signal=sem0
    vpu.add [s1+4096], [s0+0], [s0+8192], n=16, t=s32, wait=sem0, signal=sem1
    s.addi s1, s1, 64
    blt s1, s2, loop
    fence
    outfeed vmem[s0+4096], len={end}
    halt
"#,
        kb = hex(&kb),
        end = l * 64,
    );
    for functional in [true, false] {
        let (sys, cycles) = run(&asm, &a, functional, Some(stream.clone()));
        // docs/timing.md host link: the host pushes from cycle 0; bytes [0, e) have arrived at
        // L_host + ⌈e / bw⌉; an infeed completes at max(start + 1, arrival of its last byte).
        let b = 1u64.max((3 * 64u64).div_ceil(d.vmem_bpc));
        let vpu_lat = b - 1 + a.vpu.alu.latency.max(1) as u64;
        let mut ready = 3 * d.scalar; // first infeed dispatched after s.li, s.li, sem.signal
        let mut vdone = 0;
        for j in 0..l {
            let arrival = d.host_lat + ((64 * (j + 1)) as f64 / d.host_bpc).ceil() as u64;
            let idone = (ready + 1).max(arrival);
            vdone = idone + vpu_lat;
            ready = vdone;
        }
        let out_xfer = ((64 * l) as f64 / d.host_bpc).ceil() as u64;
        let want = vdone + d.scalar + out_xfer + d.host_lat;
        assert_eq!(cycles, want, "functional={functional}");
        if functional {
            let out = sys.outfeed(0, 0).unwrap();
            assert_eq!(out.len() as u64, 64 * l);
            for (i, ch) in out.chunks(4).enumerate() {
                let v = i32::from_le_bytes(stream[i * 4..i * 4 + 4].try_into().unwrap());
                let got = i32::from_le_bytes(ch.try_into().unwrap());
                assert_eq!(got, v.wrapping_add(k[i % 16]), "element {i}");
            }
        }
    }
}

/// Two DMAs on the HBM link at once share its bandwidth (docs/timing.md: each of `n` transfers
/// moves `min(engine, bw / n)` bytes per cycle).
#[test]
fn concurrent_dmas_share_hbm_bandwidth() {
    let a = mini();
    let d = Doc::new(&a);
    let (b1, b2) = (96u64, 64u64);
    let asm = format!(
        r#"
.dma 0 len={b1}
.dma 1 len={b2}
    dma.copy vmem[s0+0], hbm[s0+0], desc=0
    dma.copy vmem[s0+4096], hbm[s0+4096], desc=1
    halt
"#
    );
    let (_, cycles) = run(&asm, &a, true, None);
    // Fluid model, written out for two transfers joining at j1 < j2.
    let (j1, j2) = (
        (d.dma_setup + d.hbm_lat) as f64,
        (1 + d.dma_setup + d.hbm_lat) as f64,
    );
    let rate = |n: f64| d.dma_bpc.min(d.hbm_bpc / n);
    let mut rem1 = b1 as f64 - (j2 - j1) * rate(1.0);
    let mut rem2 = b2 as f64;
    // both active: the one with less left finishes first (at a whole cycle)
    let t_first = j2 + (rem1.min(rem2) / rate(2.0)).ceil();
    let moved = (t_first - j2) * rate(2.0);
    rem1 -= moved;
    rem2 -= moved;
    let left = rem1.max(rem2).max(0.0);
    let t_last = t_first + (left / rate(1.0)).ceil();
    assert_eq!(cycles, t_last as u64);
    // and the sharing mattered: alone, the second would have finished earlier
    assert!(t_last as u64 > 1 + d.dma_alone(b2));
}

/// docs/timing.md, VMEM port: per-cycle grants in booking order. Each booking `(start, bytes,
/// rate)` is granted `min(rate, cap − earlier grants)` bytes per cycle from `start` until its
/// bytes are through; returns the cycle after each booking's last grant. Written out cycle by
/// cycle, independently of the simulator's segment calendar.
/// A VMEM booking: start cycle, bytes, peak bytes per cycle.
type Booking = (u64, u64, u64);

fn vmem_grants(cap: u64, bookings: &[Booking]) -> Vec<u64> {
    let mut used: Vec<u64> = Vec::new();
    bookings
        .iter()
        .map(|&(start, bytes, rate)| {
            let (mut t, mut rem) = (start as usize, bytes);
            while rem > 0 {
                if used.len() <= t {
                    used.resize(t + 1, 0);
                }
                let g = rate.min(cap - used[t]).min(rem);
                used[t] += g;
                rem -= g;
                t += 1;
            }
            t.max(start as usize) as u64
        })
        .collect()
}

/// A VPU op and two VMEM→VMEM DMAs that each fit `vmem.bytes_per_cycle` alone but not
/// together: together they take longer than either alone, exactly as the grants say.
#[test]
fn vpu_and_vmem_dmas_share_vmem_bandwidth() {
    let a = mini();
    let d = Doc::new(&a);
    let n = 64u64; // f32 divides: ⌈n / epc_div⌉ busy cycles
    let len = 1024u64; // bytes per DMA
    let div = a.vpu.div;
    let busy = n.div_ceil(div.elems_per_cycle as u64);
    let vbytes = 3 * 4 * n;
    let vrate = vbytes.div_ceil(busy);
    let drate = 2 * d.dma_bpc as u64; // read + write per cycle, each side at the engine's rate
    assert!(
        vrate <= d.vmem_bpc && drate * 2 <= d.vmem_bpc && vrate + 2 * drate > d.vmem_bpc,
        "test design: each fits alone, not together"
    );
    let dmas = "    dma.copy vmem[s0+4096], vmem[s0+8192], desc=0\n    dma.copy vmem[s0+12288], vmem[s0+16384], desc=0\n";
    let vpu = "    vpu.div [s0+20480], [s0+21504], [s0+22528], n=64, t=f32\n";
    let prog = |body: &str| format!(".dma 0 len={len}\n{body}    halt\n");
    let run_t = |body: &str| {
        let p = prog(body);
        let (_, c1) = run(&p, &a, true, None);
        let (_, c2) = run(&p, &a, false, None);
        assert_eq!(c1, c2, "functional and timing-only agree");
        c1
    };
    let lat = (div.latency as u64).max(1);
    // Dispatch at cycles 0, 1, 2 (one instruction per cycle); a DMA's data phase begins
    // dma.setup_cycles after its start; the VPU books from its start.
    let vpu_done = |end: u64, start: u64| {
        let stall = (end - start).saturating_sub(busy);
        start + stall + busy - 1 + lat
    };
    let alone_v = run_t(vpu);
    let e = vmem_grants(d.vmem_bpc, &[(0, vbytes, vrate)]);
    assert_eq!(alone_v, vpu_done(e[0], 0));
    let alone_d = run_t(dmas);
    let e = vmem_grants(
        d.vmem_bpc,
        &[
            (d.dma_setup, 2 * len, drate),
            (1 + d.dma_setup, 2 * len, drate),
        ],
    );
    assert_eq!(alone_d, e[0].max(e[1]));
    assert_eq!(
        alone_d,
        1 + d.dma_setup + (len as f64 / d.dma_bpc).ceil() as u64
    );
    let both = run_t(&format!("{dmas}{vpu}"));
    // Booking order: the VPU starts at 2, before the DMAs' data phases (4 and 5 on mini).
    let e = vmem_grants(
        d.vmem_bpc,
        &[
            (2, vbytes, vrate),
            (d.dma_setup, 2 * len, drate),
            (1 + d.dma_setup, 2 * len, drate),
        ],
    );
    let want = vpu_done(e[0], 2).max(e[1]).max(e[2]);
    assert_eq!(both, want);
    assert!(both > alone_d.max(alone_v + 2), "sharing must cost time");
}

/// An MXU weight load and matmul behind a VPU op that takes the whole VMEM port: the MXU
/// stalls (reason `vmem`) until grants are left for it.
#[test]
fn mxu_matmul_slowed_by_a_concurrent_vpu_stream() {
    let a = mini();
    let d = Doc::new(&a);
    let m = 16u64;
    let mut g = Lcg(11);
    let w: Vec<u8> = (0..64).map(|_| g.next() as u8).collect();
    let x: Vec<u8> = (0..m * 8).map(|_| g.next() as u8).collect();
    let mxu = format!(
        ".data vmem 0 {}\n    mxu.ldw [s0+0], mxu=0, k=8, n=8, stride=8, mode=int8\n    mxu.matmul [s0+64], acc[s0+0], mxu=0, m={m}, k=8, stride=8, mode=int8, accumulate=0\n",
        hex(&w.iter().chain(&x).copied().collect::<Vec<u8>>())
    );
    let vpu = "    vpu.add [s0+4096], [s0+8192], [s0+12288], n=256, t=f32\n";
    let alu = a.vpu.alu;
    let vbusy = 256u64.div_ceil(alu.elems_per_cycle as u64);
    let vbytes = 3 * 4 * 256u64;
    assert!(
        vbytes.div_ceil(vbusy) >= d.vmem_bpc,
        "test design: the VPU op takes the whole port"
    );
    let run_t = |body: &str| {
        let p = format!("{body}    halt\n");
        let (sys, c1) = run(&p, &a, true, None);
        let (_, c2) = run(&p, &a, false, None);
        assert_eq!(c1, c2, "functional and timing-only agree");
        (sys, c1)
    };
    // docs/timing.md MXU with the VMEM port: the load books k rows of n bytes at one row per
    // cycle from its start s0; stall = max(0, end − s0 − R); then the contract's formulas from
    // s0 + stall. The matmul books m rows of k bytes from t0 = s + 1; stall = end − t0 − m.
    let mxu_done = |grants: &dyn Fn(&[Booking]) -> Vec<u64>, s0: u64| {
        let e = grants(&[(s0, 64, 8)]);
        let s = s0 + (e[0] - s0).saturating_sub(d.r);
        let t0 = s + 1;
        let e = grants(&[(s0, 64, 8), (t0, m * 8, 8)]);
        let t = t0 + (e[1] - t0).saturating_sub(m);
        t + m - 1 + d.r + d.c
    };
    let (_, alone) = run_t(&mxu);
    assert_eq!(
        alone,
        mxu_done(&|b: &[Booking]| vmem_grants(d.vmem_bpc, b), 0)
    );
    // The VPU op first (starts at 0), the MXU instructions dispatched at 1 and 2.
    let (sys, both) = run_t(&format!("{vpu}{mxu}"));
    let vb = (0u64, vbytes, vbytes.div_ceil(vbusy));
    let with_vpu = |b: &[Booking]| {
        let mut all = vec![vb];
        all.extend_from_slice(b);
        vmem_grants(d.vmem_bpc, &all)[1..].to_vec()
    };
    let want = mxu_done(&with_vpu, 1);
    assert_eq!(both, want);
    assert!(both > alone + 1, "the VPU stream must slow the MXU");
    let stats = sys.stats();
    let stall = stats
        .value("chip0.core0.mxu0.stall_cycles.vmem")
        .expect("vmem stall statistic");
    assert!(stall > 0, "the MXU records vmem stall cycles");
}

/// docs/timing.md, DMA access shape: HBM moves whole aligned bursts (`hbm.burst_bytes`) and an
/// engine issues one request per contiguous run (`dma.chunk_cycles` each), so gathering 2-byte
/// elements with a stride costs far more than one contiguous copy of the same bytes.
#[test]
fn strided_two_byte_dma_is_slower_than_a_contiguous_one_by_the_formula() {
    let a = mini();
    let d = Doc::new(&a);
    let burst = a.hbm.burst_bytes;
    let chunk = a.dma.chunk_cycles as u64;
    let n = 64u64; // elements of 2 bytes
    let stride = 4 * burst; // every element in its own burst
    let contiguous = format!(
        ".dma 0 len={}\n    dma.copy vmem[s0+0], hbm[s0+0], desc=0\n    halt\n",
        2 * n
    );
    let strided = format!(
        ".dma 0 len=2 dims=[({n},{stride},2)]\n    dma.copy vmem[s0+0], hbm[s0+0], desc=0\n    halt\n"
    );
    let cycles = |p: &str| {
        let (_, c1) = run(p, &a, true, None);
        let (_, c2) = run(p, &a, false, None);
        assert_eq!(c1, c2);
        c1
    };
    // Alone: setup + L_hbm + max(⌈hbm bytes / min(engine, hbm)⌉, runs · chunk_cycles), where
    // hbm bytes = Σ over runs of the aligned bursts they touch, and the VMEM side (2n bytes at
    // the same rate) is never the bottleneck here.
    let rate = d.dma_bpc.min(d.hbm_bpc);
    let phase =
        |hbm_bytes: u64, runs: u64| ((hbm_bytes as f64 / rate).ceil() as u64).max(runs * chunk);
    let c = cycles(&contiguous);
    assert_eq!(
        c,
        d.dma_setup + d.hbm_lat + phase((2 * n).div_ceil(burst) * burst, 1)
    );
    let s = cycles(&strided);
    assert_eq!(s, d.dma_setup + d.hbm_lat + phase(n * burst, n));
    assert!(s > c, "strided {s} must be slower than contiguous {c}");
}

/// A copy blocked on its `wait=` does not hold back an unrelated prefetch behind it when
/// `dma.queues` > 1; with one queue it does.
#[test]
fn a_blocked_dma_does_not_hold_back_a_prefetch() {
    let prog = ".dma 0 len=64\n    dma.copy vmem[s0+0], hbm[s0+0], desc=0, wait=sem1\n    dma.copy vmem[s0+1024], hbm[s0+1024], desc=0, signal=sem2\n    sem.wait sem2, n=1\n    sem.signal sem1, n=1\n    fence\n    halt\n";
    let mut a = mini();
    a.dma.queues = 2;
    let (_, two) = run(prog, &a, true, None);
    a.dma.queues = 1;
    let sys = System::new(
        &a,
        isa::asm::assemble(prog).unwrap(),
        1,
        SimOptions::default(),
    )
    .unwrap()
    .run();
    // One queue: the prefetch waits behind the copy that waits for sem1, which the sequencer
    // signals only after the prefetch completed: a deadlock, reported.
    let e = sys.expect_err("one queue deadlocks").to_string();
    assert!(e.contains("sem1"), "{e}");
    let d = Doc::new(&a);
    // Two queues: the prefetch runs at once (start 1), the first copy after sem1 is signalled.
    let alone = d.dma_alone(64);
    assert_eq!(two, 1 + alone + d.scalar + d.scalar + alone);
}

/// `mxu.st` holds the accumulator's result port one row per cycle: two stores of one MXU run
/// one after the other, so storing 8 rows as 4 + 4 ends when one store of 8 rows would
/// (docs/timing.md: `mxu.st` starts after the earlier matmuls into its rows and every earlier
/// store of its MXU).
#[test]
fn two_stores_of_one_mxu_share_its_result_port() {
    let a = mini();
    let d = Doc::new(&a);
    let head = ".data vmem 0 01010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101\n    mxu.ldw [s0+0], mxu=0, k=8, n=8, stride=8, mode=int8\n    mxu.matmul [s0+64], acc[s0+0], mxu=0, m=8, k=8, stride=8, mode=int8, accumulate=0\n";
    let one =
        format!("{head}    mxu.st [s0+1024], acc[s0+0], mxu=0, m=8, n=8, stride=32\n    halt\n");
    let two = format!("{head}    mxu.st [s0+1024], acc[s0+0], mxu=0, m=4, n=8, stride=32\n    mxu.st [s0+1152], acc[s0+4], mxu=0, m=4, n=8, stride=32\n    halt\n");
    let (_, c1) = run(&one, &a, true, None);
    let (_, c2) = run(&two, &a, true, None);
    // load at 0, matmul from 1, last row visible at 1 + 8 − 1 + R + C; then 8 store rows.
    let done = 1 + 8 - 1 + d.r + d.c;
    assert_eq!(c1, done + d.st(8, 8));
    assert_eq!(c2, c1, "the second store waits for the port");
}

/// `mxu.st` waits only for the matmuls that write one of its accumulator rows (docs/timing.md):
/// a store of rows 0..8 issued after a second matmul into rows 8..16 starts when the first
/// matmul completes, 8 cycles before the second does; if the second matmul accumulates into
/// rows 0..8 instead, the store waits for it.
#[test]
fn a_store_waits_only_for_the_matmuls_into_its_accumulator_rows() {
    let a = mini();
    assert!(a.mxu.acc_rows >= 16, "test design: two 8-row halves");
    let d = Doc::new(&a);
    let head = ".data vmem 0 01010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101\n    mxu.ldw [s0+0], mxu=0, k=8, n=8, stride=8, mode=int8\n    mxu.matmul [s0+64], acc[s0+0], mxu=0, m=8, k=8, stride=8, mode=int8, accumulate=0\n";
    let st = "    mxu.st [s0+1024], acc[s0+0], mxu=0, m=8, n=8, stride=32\n    halt\n";
    let other = format!("{head}    mxu.matmul [s0+64], acc[s0+8], mxu=0, m=8, k=8, stride=8, mode=int8, accumulate=0\n{st}");
    let same = format!("{head}    mxu.matmul [s0+64], acc[s0+0], mxu=0, m=8, k=8, stride=8, mode=int8, accumulate=1\n{st}");
    let (_, c_other) = run(&other, &a, true, None);
    let (_, c_same) = run(&same, &a, true, None);
    // load at 0; the first matmul streams from 1 and completes at 1 + 8 − 1 + R + C; the
    // second streams from 9 and completes 8 cycles later.
    let first = 1 + 8 - 1 + d.r + d.c;
    assert!(
        d.st(8, 8) >= 8,
        "test design: the store outlasts the second matmul"
    );
    assert_eq!(
        c_other,
        first + d.st(8, 8),
        "the store overlaps the other rows' matmul"
    );
    assert_eq!(
        c_same,
        first + 8 + d.st(8, 8),
        "the store waits for its rows' matmul"
    );
}

/// docs/timing.md, MXU: a matmul into accumulator rows an earlier `mxu.st` is still reading
/// does not overwrite a row before the store has read it. The store reads rows 0..48 (row `i`
/// at `E − 48 + i`); the next matmul overwrites rows 24..64, so its row `j` (visible at
/// `t + j + R + C`) replaces the store's row `24 + j` and must start at
/// `t ≥ E − 48 + 24 − (R + C) + 1`, later than the array alone would allow.
#[test]
fn a_matmul_waits_for_the_store_reading_its_accumulator_rows() {
    let a = mini();
    assert!(a.mxu.acc_rows >= 64, "test design: 64 accumulator rows");
    let d = Doc::new(&a);
    let prog = "    mxu.ldw [s0+0], mxu=0, k=8, n=8, stride=8, mode=int8\n    mxu.matmul [s0+64], acc[s0+0], mxu=0, m=64, k=8, stride=8, mode=int8, accumulate=0\n    mxu.st [s0+4096], acc[s0+0], mxu=0, m=48, n=8, stride=32\n    mxu.matmul [s0+64], acc[s0+24], mxu=0, m=40, k=8, stride=8, mode=int8, accumulate=0\n    halt\n";
    // load at 0; the first matmul streams from 1 and completes at S = 1 + 64 − 1 + R + C, when
    // the store starts; it ends at E = S + st(48, 8).
    let s = 1 + 64 - 1 + d.r + d.c;
    let e = s + d.st(48, 8);
    let t = (1 + 64).max(s).max(e - 48 + 24 + 1 - (d.r + d.c));
    assert!(
        t > s,
        "test design: the store's read of row 24 + j is later than row j could land"
    );
    let want = e.max(t + 40 - 1 + d.r + d.c);
    for functional in [true, false] {
        let (_, cycles) = run(prog, &a, functional, None);
        assert_eq!(cycles, want, "functional={functional}");
    }
}

/// docs/timing.md, VMEM port: infeed and outfeed book their VMEM bytes too. A long VPU stream
/// that takes the whole port holds back an infeed (which drains into VMEM at the port's full
/// rate from `max(start, arrival − ⌈len / cap⌉)`) and an outfeed (at the link's rate `⌈bw⌉`
/// from its start): each completes when the grants say, not when the host link alone would.
#[test]
fn infeed_and_outfeed_share_vmem_bandwidth() {
    let a = mini();
    let d = Doc::new(&a);
    let alu = a.vpu.alu;
    let n = 2048u64;
    let busy = n.div_ceil(alu.elems_per_cycle as u64);
    let vbytes = 3 * 4 * n;
    let vrate = vbytes.div_ceil(busy);
    assert!(
        vrate >= d.vmem_bpc,
        "test design: the VPU op takes the whole port"
    );
    let lat = (alu.latency as u64).max(1);
    let vpu_done = |end: u64| end.saturating_sub(busy) + busy - 1 + lat; // the VPU starts at 0
    let vpu = format!("    vpu.add [s0+0], [s0+8192], [s0+16384], n={n}, t=f32\n");
    let len = 64u64;
    let cap = d.vmem_bpc;
    let run_t = |body: &str, infeed: Option<Vec<u8>>| {
        let p = format!("{body}    halt\n");
        let (sys, c1) = run(&p, &a, true, infeed.clone());
        let (_, c2) = run(&p, &a, false, infeed);
        assert_eq!(c1, c2, "functional and timing-only agree");
        (sys, c1)
    };
    // Infeed (dispatched at 1, after the VPU op at 0): its bytes have arrived at
    // L_host + ⌈len / bw⌉; it books from max(1, arrival − ⌈len / cap⌉) at cap.
    let arrival = d.host_lat + (len as f64 / d.host_bpc).ceil() as u64;
    let body = format!("{vpu}    infeed vmem[s0+24576], len={len}\n");
    let (sys, both) = run_t(&body, Some(vec![5; len as usize]));
    let from = 1u64.max(arrival - len.div_ceil(cap));
    let e = vmem_grants(cap, &[(0, vbytes, vrate), (from, len, cap)]);
    let infeed_done = arrival.max(2).max(e[1]);
    assert_eq!(both, vpu_done(e[0]).max(infeed_done));
    assert!(infeed_done > arrival, "the infeed waited for the port");
    assert_eq!(
        sys.vmem(0, 0).unwrap().read_vec(24576, len).unwrap(),
        vec![5; len as usize]
    );
    let (_, alone) = run_t(
        &format!("    infeed vmem[s0+24576], len={len}\n"),
        Some(vec![5; 64]),
    );
    assert_eq!(alone, arrival.max(1));
    // Outfeed (dispatched at 1): the link is busy ⌈len / bw⌉ cycles, the port grants its
    // bytes at ⌈bw⌉ per cycle after the VPU's; it completes L_host after the later.
    let body = format!("{vpu}    outfeed vmem[s0+25600], len={len}\n");
    let (_, both) = run_t(&body, None);
    let xfer = (len as f64 / d.host_bpc).ceil() as u64;
    let e = vmem_grants(
        cap,
        &[(0, vbytes, vrate), (1, len, d.host_bpc.ceil() as u64)],
    );
    let out_done = (1 + xfer).max(e[1]) + d.host_lat;
    assert_eq!(both, vpu_done(e[0]).max(out_done));
    assert!(
        out_done > 1 + xfer + d.host_lat,
        "the outfeed waited for the port"
    );
}

/// docs/isa.md `dma.gather` / `dma.scatter`: rows by an index list, rows whose index is at or
/// past `s[lim]` dropped (their destination untouched), a row named twice keeps the later one;
/// docs/timing.md: an indexed copy costs as a copy of the rows it moves, bursts counted per
/// row: `setup + L_hbm + max(⌈hbm bytes / min(engine, hbm)⌉, runs · chunk_cycles)`.
#[test]
fn indexed_dma_gathers_and_scatters_rows_by_an_index_list() {
    let a = mini();
    let d = Doc::new(&a);
    let burst = a.hbm.burst_bytes;
    let chunk = a.dma.chunk_cycles as u64;
    let (len, pitch) = (8u64, 64u64);
    // HBM rows: row k = [10k, 10k+1, ...] at k·64.
    let mut hbm = vec![0u8; 16 * pitch as usize];
    for k in 0..16 {
        for j in 0..len as usize {
            hbm[k * pitch as usize + j] = (10 * k + j) as u8;
        }
    }
    let idx: Vec<u32> = vec![3, 0, 7, 9, 2];
    let table: Vec<u8> = idx.iter().flat_map(|k| k.to_le_bytes()).collect();
    let gather = format!(
        ".dma 0 len={len} dims=[(5,{pitch},{len})]\n\
         .data hbm 0 {}\n.data vmem 4096 {}\n.data vmem 1024 {}\n\
         s.li s1, 1024\ns.li s5, 8\ns.li s2, 4096\n\
         dma.gather vmem[s1], hbm[s0], s2, s5, desc=0\nhalt\n",
        hex(&hbm),
        hex(&table),
        hex(&[0xee; 40])
    );
    let cycles = |p: &str| {
        let (sys, c1) = run(p, &a, true, None);
        let (_, c2) = run(p, &a, false, None);
        assert_eq!(c1, c2, "functional and timing-only agree");
        (sys, c1)
    };
    let (sys, c) = cycles(&gather);
    let got = sys.vmem(0, 0).unwrap().read_vec(1024, 5 * len).unwrap();
    for (i, &k) in idx.iter().enumerate() {
        let row = &got[i * len as usize..(i + 1) * len as usize];
        if k < 8 {
            let want: Vec<u8> = (0..len as usize)
                .map(|j| (10 * k as usize + j) as u8)
                .collect();
            assert_eq!(row, &want[..], "row {i} = source row {k}");
        } else {
            assert_eq!(row, &[0xee; 8], "row {i} (index {k} >= lim) untouched");
        }
    }
    // Four rows moved, each its own run of one aligned burst; dispatched after three s.li.
    let rate = d.dma_bpc.min(d.hbm_bpc);
    let runs = 4u64;
    let hbm_bytes = runs * len.div_ceil(burst) * burst;
    let phase = ((hbm_bytes as f64 / rate).ceil() as u64).max(runs * chunk);
    assert_eq!(c, 3 * d.scalar + d.dma_setup + d.hbm_lat + phase);
    // Scatter VMEM rows into HBM rows: indices 1, 4, 1 (later wins), 12 (dropped).
    let idx: Vec<u32> = vec![1, 4, 1, 12];
    let table: Vec<u8> = idx.iter().flat_map(|k| k.to_le_bytes()).collect();
    let src: Vec<u8> = (0..4 * len as u8).collect();
    let scatter = format!(
        ".dma 0 len={len} dims=[(4,{len},{pitch})]\n\
         .data vmem 4096 {}\n.data vmem 0 {}\n\
         s.li s5, 8\ns.li s2, 4096\ns.li s1, 0\n\
         dma.scatter hbm[s1], vmem[s0], s2, s5, desc=0\nhalt\n",
        hex(&table),
        hex(&src)
    );
    let (sys, _) = cycles(&scatter);
    let h = sys.hbm(0).unwrap().read_vec(0, 16 * pitch).unwrap();
    let row = |k: usize| h[k * pitch as usize..k * pitch as usize + len as usize].to_vec();
    assert_eq!(row(1), src[16..24].to_vec(), "row 1 keeps the later update");
    assert_eq!(row(4), src[8..16].to_vec());
    assert_eq!(row(12), vec![0; 8], "index 12 >= lim dropped");
    assert_eq!(row(0), vec![0; 8]);
}
