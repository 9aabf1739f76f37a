//! The arithmetic blocks of [`crate::arith`] in rust-hdl's own simulator (the same `update` the
//! Verilog is generated from) against an independent reference: Rust's f32 arithmetic and
//! `half::bf16`, with the contract's flush rules written here (DAZ inputs, FTZ results, the
//! canonical NaN). Exhaustive where affordable (every int8 × int8 product; every pair of bf16
//! exponents, i.e. every class: zero/subnormal, normal, inf/NaN), random elsewhere, and a
//! mutation check: an adder with a wrong rounding mode must fail the same vectors.

use crate::arith::{AddF32, MacBf16, MacI8, MulBf16, Rounding};
use crate::ops::Rng;
use rust_hdl::prelude::*;

const NAN: u32 = 0x7FC0_0000;

/// f32 bits read with DAZ (a zero exponent is a zero of the same sign).
fn daz(x: u32) -> f32 {
    if x & 0x7F80_0000 == 0 {
        f32::from_bits(x & 0x8000_0000)
    } else {
        f32::from_bits(x)
    }
}

/// A result with FTZ (subnormal → zero, sign kept) and canonical NaN.
fn ftz(x: f32) -> u32 {
    if x.is_nan() {
        NAN
    } else if x.is_subnormal() {
        x.to_bits() & 0x8000_0000
    } else {
        x.to_bits()
    }
}

/// bf16 bits to f32 through `half`, DAZ.
fn bf(x: u16) -> f32 {
    let v = half::bf16::from_bits(x).to_f32();
    if v.is_subnormal() {
        if v.is_sign_negative() {
            -0.0
        } else {
            0.0
        }
    } else {
        v
    }
}

pub(crate) fn ref_add(a: u32, b: u32) -> u32 {
    ftz(daz(a) + daz(b))
}

pub(crate) fn ref_mul(a: u16, w: u16) -> u32 {
    ftz(bf(a) * bf(w))
}

/// Settles a combinational block after its inputs changed (rust-hdl's `simulate`).
fn settle<B: Block>(uut: &mut B) {
    assert!(simulate(uut, 10_000), "the block settles");
}

fn v32(x: Bits<32>) -> u32 {
    let v: LiteralType = x.into();
    v as u32
}

fn add_hw(uut: &mut AddF32, a: u32, b: u32) -> u32 {
    uut.a.next = (a as LiteralType).into();
    uut.b.next = (b as LiteralType).into();
    settle(uut);
    v32(uut.y.val())
}

/// f32 operands that exercise the adder: every class, near and far exponents, cancellation,
/// carries and exact ties (operands whose sum has exactly a half ulp below the result).
fn add_vectors(rng: &mut Rng, n: usize) -> Vec<(u32, u32)> {
    let mut v = Vec::with_capacity(n);
    let specials = [
        0x0000_0000,
        0x8000_0000,
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0000,
        0xFFC0_0001,
        0x7F80_0001,
        0x0000_0001,
        0x807F_FFFF,
        0x0080_0000,
        0x8080_0000,
        0x7F7F_FFFF,
        0xFF7F_FFFF,
        0x3F80_0000,
        0xBF80_0000,
    ];
    for &a in &specials {
        for &b in &specials {
            v.push((a, b));
        }
    }
    while v.len() < n {
        let a = rng.next_u64() as u32;
        let b = match rng.range(0, 6) {
            // Any pair.
            0 => rng.next_u64() as u32,
            // Near exponents (alignment of 0..3), either sign: carries and cancellation.
            1 => {
                let e = ((a >> 23) & 0xFF) as i64 + rng.range(0, 7) as i64 - 3;
                let e = e.clamp(0, 255) as u32;
                (rng.next_u64() as u32 & 0x807F_FFFF) | (e << 23)
            }
            // The negation with a few low bits changed: massive cancellation.
            2 => (a ^ 0x8000_0000) ^ (rng.next_u64() as u32 & 0xFF),
            // A tie: `b` is exactly half an ulp of `a` (times a power of two), or just off it.
            3 => {
                let ea = (a >> 23) & 0xFF;
                let d = rng.range(24, 27) as u32;
                let eb = ea.saturating_sub(d);
                let frac = if rng.pct(50) {
                    0
                } else {
                    rng.next_u64() as u32 & 0x7
                };
                (rng.next_u64() as u32 & 0x8000_0000) | (eb << 23) | frac
            }
            // Far exponents around the 62-bit alignment limit.
            4 => {
                let ea = (a >> 23) & 0xFF;
                let eb = ea.saturating_sub(rng.range(40, 70) as u32);
                (rng.next_u64() as u32 & 0x807F_FFFF) | (eb << 23)
            }
            // Results near the smallest normal (flush) and the largest finite (overflow).
            _ => {
                let e = if rng.pct(50) {
                    rng.range(0, 3)
                } else {
                    rng.range(252, 256)
                } as u32;
                let a2 = (rng.next_u64() as u32 & 0x807F_FFFF) | (e << 23);
                v.push((a2, (rng.next_u64() as u32 & 0x807F_FFFF) | (e << 23)));
                (rng.next_u64() as u32 & 0x807F_FFFF) | ((e ^ 1) << 23)
            }
        };
        v.push((a, b));
    }
    v.truncate(n);
    v
}

/// Mismatches of an adder built with `rounding` on `vectors`, and the first one.
fn add_mismatches(rounding: Rounding, vectors: &[(u32, u32)]) -> (usize, Option<String>) {
    let mut uut = AddF32::new(rounding);
    uut.connect_all();
    let mut bad = 0;
    let mut first = None;
    for &(a, b) in vectors {
        let (got, want) = (add_hw(&mut uut, a, b), ref_add(a, b));
        if got != want {
            bad += 1;
            first.get_or_insert_with(|| {
                format!("{a:#010x} + {b:#010x}: hw {got:#010x}, ref {want:#010x}")
            });
        }
    }
    (bad, first)
}

const ADD_CASES: usize = 400_000;

#[test]
fn add_f32_matches_rust_f32_with_flush_rules() {
    let v = add_vectors(&mut Rng::new(11), ADD_CASES);
    assert_eq!(v.len(), ADD_CASES);
    let (bad, first) = add_mismatches(Rounding::NearestEven, &v);
    assert_eq!(bad, 0, "{bad} of {ADD_CASES} differ; first: {first:?}");
    // Both operand orders.
    let swapped: Vec<(u32, u32)> = v.iter().map(|&(a, b)| (b, a)).take(10_000).collect();
    let (bad, first) = add_mismatches(Rounding::NearestEven, &swapped);
    assert_eq!(bad, 0, "swapped: {first:?}");
}

#[test]
fn wrong_rounding_modes_are_caught() {
    // The mutation check: the same vectors must expose an adder that rounds ties away from zero
    // or truncates. A test set that passed these would not be testing the rounding.
    let v = add_vectors(&mut Rng::new(11), 20_000);
    for mode in [Rounding::NearestAway, Rounding::TowardZero] {
        let (bad, first) = add_mismatches(mode, &v);
        assert!(bad > 0, "{mode:?} passed the adder's vectors");
        eprintln!(
            "{mode:?}: {bad} of {} vectors differ, e.g. {}",
            v.len(),
            first.unwrap()
        );
    }
}

#[test]
fn add_f32_ties_round_to_even() {
    // 1 + 2^-24 is a tie between 1 and 1 + 2^-23: even is 1. 1 + 3·2^-24 rounds up to 1 + 2^-22.
    let mut uut = AddF32::default();
    uut.connect_all();
    assert_eq!(add_hw(&mut uut, 0x3F80_0000, 0x3380_0000), 0x3F80_0000);
    assert_eq!(add_hw(&mut uut, 0x3F80_0001, 0x3380_0000), 0x3F80_0002);
    // Cancellation gives +0; (-0) + (-0) = -0; a sum below the smallest normal flushes.
    assert_eq!(add_hw(&mut uut, 0x4040_0000, 0xC040_0000), 0);
    assert_eq!(add_hw(&mut uut, 0x8000_0000, 0x8000_0000), 0x8000_0000);
    assert_eq!(add_hw(&mut uut, 0x0080_0001, 0x8080_0000), 0);
    assert_eq!(add_hw(&mut uut, 0x8080_0001, 0x0080_0000), 0x8000_0000);
    // Overflow to inf, inf - inf is the canonical NaN.
    assert_eq!(add_hw(&mut uut, 0x7F7F_FFFF, 0x7F7F_FFFF), 0x7F80_0000);
    assert_eq!(add_hw(&mut uut, 0x7F80_0000, 0xFF80_0000), NAN);
}

fn mul_hw(uut: &mut MulBf16, a: u16, w: u16) -> u32 {
    uut.a.next = (a as LiteralType).into();
    uut.w.next = (w as LiteralType).into();
    settle(uut);
    v32(uut.y.val())
}

#[test]
fn mul_bf16_every_exponent_pair() {
    // All 256 × 256 exponent pairs (zero/subnormal, every normal exponent, inf/NaN), each with
    // random signs and fractions, and the fraction 0 and 0x7F (inf vs NaN at exponent 255, the
    // extremes of the significand product).
    let mut rng = Rng::new(5);
    let mut uut = MulBf16::default();
    uut.connect_all();
    let mut n = 0;
    for ea in 0..256u16 {
        for ew in 0..256u16 {
            let fracs = [
                (
                    rng.next_u64() as u16 & 0x807F,
                    rng.next_u64() as u16 & 0x807F,
                ),
                (0, 0x807F),
                (0x7F, 0x8000),
            ];
            for (fa, fw) in fracs {
                let (a, w) = (fa | (ea << 7), fw | (ew << 7));
                let (got, want) = (mul_hw(&mut uut, a, w), ref_mul(a, w));
                assert_eq!(
                    got, want,
                    "{a:#06x} * {w:#06x}: hw {got:#010x}, ref {want:#010x}"
                );
                n += 1;
            }
        }
    }
    assert_eq!(n, 3 * 65_536);
}

#[test]
fn mul_bf16_random_pairs() {
    // Any bit patterns (all classes in proportion to their codes), 400 000 pairs.
    let mut rng = Rng::new(6);
    let mut uut = MulBf16::default();
    uut.connect_all();
    for _ in 0..400_000 {
        let (a, w) = (rng.next_u64() as u16, rng.next_u64() as u16);
        let (got, want) = (mul_hw(&mut uut, a, w), ref_mul(a, w));
        assert_eq!(
            got, want,
            "{a:#06x} * {w:#06x}: hw {got:#010x}, ref {want:#010x}"
        );
    }
}

#[test]
fn signed_bit_cast_extends_every_int8() {
    // Including -128, on which rust-hdl 0.46's own `signed_bit_cast` recurses without end.
    for v in -128i64..=127 {
        let x: Signed<8> = signed_cast(((v as u8) as LiteralType).into());
        let y: Signed<16> = crate::arith::signed_bit_cast::<16, 8>(x);
        assert_eq!(y.bigint(), v.into(), "{v}");
    }
}

#[test]
fn mac_i8_every_product() {
    // All 65 536 int8 × int8 products, with random (garbage) high bytes and random partial sums
    // (wrapping included).
    let mut rng = Rng::new(3);
    let mut uut = MacI8::default();
    uut.connect_all();
    for a in 0..256u16 {
        for w in 0..256u16 {
            let p = rng.next_u64() as u32;
            let (ha, hw) = (
                rng.next_u64() as u16 & 0xFF00,
                rng.next_u64() as u16 & 0xFF00,
            );
            uut.a.next = ((a | ha) as LiteralType).into();
            uut.w.next = ((w | hw) as LiteralType).into();
            uut.p.next = (p as LiteralType).into();
            settle(&mut uut);
            let want = (p as i32).wrapping_add(a as u8 as i8 as i32 * w as u8 as i8 as i32) as u32;
            assert_eq!(v32(uut.y.val()), want, "{p:#x} + {a} * {w}");
        }
    }
}

#[test]
fn mac_bf16_random() {
    // p + a·w through both blocks, p drawn from sums the array makes (products and their sums).
    let mut rng = Rng::new(9);
    let mut uut = MacBf16::default();
    uut.connect_all();
    let mut p = 0u32;
    for i in 0..100_000 {
        let a = crate::ops::random_elem(&mut rng, crate::Mode::Bf16);
        let w = crate::ops::random_elem(&mut rng, crate::Mode::Bf16);
        uut.a.next = (a as LiteralType).into();
        uut.w.next = (w as LiteralType).into();
        uut.p.next = (p as LiteralType).into();
        settle(&mut uut);
        let want = ref_add(p, ref_mul(a, w));
        assert_eq!(v32(uut.y.val()), want, "step {i}: {p:#x} + {a:#x} * {w:#x}");
        p = if i % 16 == 0 {
            rng.next_u64() as u32
        } else {
            want
        };
    }
}

#[test]
fn blocks_pass_rust_hdl_checks() {
    // rust-hdl's structural checks (every input driven, no combinational loop, no latch-like
    // write of an input) on each block with its inputs marked as driven from outside.
    fn check<B: Block>(mut b: B, inputs: impl Fn(&mut B)) {
        inputs(&mut b);
        b.connect_all();
        check_all(&b).expect("rust-hdl checks");
    }
    check(AddF32::default(), |b| {
        b.a.connect();
        b.b.connect();
    });
    check(MulBf16::default(), |b| {
        b.a.connect();
        b.w.connect();
    });
    check(MacBf16::default(), |b| {
        b.a.connect();
        b.w.connect();
        b.p.connect();
    });
    check(MacI8::default(), |b| {
        b.a.connect();
        b.w.connect();
        b.p.connect();
    });
}
