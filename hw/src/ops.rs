//! MXU operation sequences for co-simulation: the ops, their padded operand data, a seeded random
//! generator covering the contract's cases, and the in-order issue schedule.
//!
//! Invariants of a generated sequence: it starts with a `Load`; a `Load` is always followed by a
//! `Matmul` (the contract forbids overwriting an unswapped tile); `1 ≤ M ≤ A` (the reference
//! reports each row's accumulator value after its matmul, which is the value the result port
//! shows as long as a matmul does not wrap onto its own rows); `acc_addr < A`.

use crate::params::{Mode, MxuParams};

/// One MXU operation, operands already zero-padded to the array (`R × C` weights, `M × R` input)
/// as raw element bits (int8 in the low byte, or bf16).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `LoadWeights` of a `k × n` tile; `w` is `R × C` row-major, zero outside `k × n`.
    Load { k: usize, n: usize, w: Vec<u16> },
    /// `Matmul` of `m` rows of `k` elements; `x` is `m × R` row-major, zero beyond column `k`.
    Matmul {
        m: usize,
        k: usize,
        addr: usize,
        acc: bool,
        x: Vec<u16>,
    },
}

/// An op with the cycle the program issues it (before the in-order rule).
#[derive(Clone, Debug)]
pub struct Issued {
    pub op: Op,
    pub issue: u64,
}

/// splitmix64: a small deterministic generator (reproducible sequences from `--seed`).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5157_0113_DEAD_BEEF)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
    /// True with probability `pct` percent.
    pub fn pct(&mut self, pct: u64) -> bool {
        self.next_u64() % 100 < pct
    }
}

/// A random element in `mode`: int8 over its full range; bf16 mostly moderate normals, with
/// zeros of both signs, subnormals, infinities, NaNs and extreme exponents mixed in.
pub fn random_elem(rng: &mut Rng, mode: Mode) -> u16 {
    match mode {
        Mode::Int8 => rng.range(0, 255) as u16,
        Mode::Bf16 => {
            let sign = (rng.range(0, 1) as u16) << 15;
            let mant = rng.range(0, 127) as u16;
            let roll = rng.range(0, 999);
            let exp: u16 = match roll {
                0..=9 => 0,                            // ±0 and subnormals (DAZ)
                10..=12 => 255,                        // inf / NaN
                13..=29 => rng.range(1, 12) as u16,    // tiny: products flush
                30..=44 => rng.range(190, 254) as u16, // huge: products overflow
                _ => rng.range(112, 142) as u16,       // moderate
            };
            let mant = if exp == 255 && roll.is_multiple_of(2) {
                0
            } else {
                mant
            };
            sign | (exp << 7) | mant
        }
    }
}

/// A random op sequence of `count` ops (see module invariants).
pub fn random_sequence(p: &MxuParams, rng: &mut Rng, count: usize) -> Vec<Issued> {
    let (r, c, a) = (p.rows, p.cols, p.acc_rows);
    let mut out = Vec::with_capacity(count);
    let mut issue = 0u64;
    let mut last_was_load = false;
    for i in 0..count {
        let load = i == 0 || (!last_was_load && rng.pct(40));
        // Mostly back-to-back issue, sometimes a gap that lets the array drain.
        issue += match rng.range(0, 9) {
            0..=5 => 0,
            6..=8 => rng.range(1, 4),
            _ => rng.range(1, 2 * (r + c) as u64),
        };
        let op = if load {
            let k = if rng.pct(60) {
                r
            } else {
                rng.range(1, r as u64) as usize
            };
            let n = if rng.pct(60) {
                c
            } else {
                rng.range(1, c as u64) as usize
            };
            let mut w = vec![0u16; r * c];
            for kk in 0..k {
                for nn in 0..n {
                    w[kk * c + nn] = random_elem(rng, p.mode);
                }
            }
            Op::Load { k, n, w }
        } else {
            let max_m = a.min(3 * r + 2) as u64;
            let m = match rng.range(0, 9) {
                0..=1 => 1,
                2..=3 => r.min(a) as u64,
                4..=6 => rng.range(1, max_m),
                _ => rng.range((r as u64 + 1).min(max_m), max_m),
            } as usize;
            let k = if rng.pct(60) {
                r
            } else {
                rng.range(1, r as u64) as usize
            };
            let mut x = vec![0u16; m * r];
            for mm in 0..m {
                for kk in 0..k {
                    x[mm * r + kk] = random_elem(rng, p.mode);
                }
            }
            Op::Matmul {
                m,
                k,
                addr: rng.range(0, a as u64 - 1) as usize,
                acc: rng.pct(50),
                x,
            }
        };
        last_was_load = load;
        out.push(Issued { op, issue });
    }
    out
}

/// `T` K-tiles back to back: `Load` then `Matmul` of `m` rows, alternating, all issued at cycle 0
/// (the in-order rule then spaces them), accumulating into the same rows after the first.
pub fn k_tile_sequence(p: &MxuParams, rng: &mut Rng, tiles: usize, m: usize) -> Vec<Issued> {
    let (r, c) = (p.rows, p.cols);
    let mut out = Vec::new();
    for t in 0..tiles {
        let w = (0..r * c).map(|_| random_elem(rng, p.mode)).collect();
        out.push(Issued {
            op: Op::Load { k: r, n: c, w },
            issue: 0,
        });
        let x = (0..m * r).map(|_| random_elem(rng, p.mode)).collect();
        out.push(Issued {
            op: Op::Matmul {
                m,
                k: r,
                addr: 0,
                acc: t > 0,
                x,
            },
            issue: 0,
        });
    }
    out
}
