//! Unit tests of the MXU model against the contract's formulas and a naive reference.

use super::*;
use crate::numerics::{bf16_column_sum, f32_add, int8_column_sum};

fn geom(r: usize, c: usize, mode: MxuMode) -> MxuGeometry {
    MxuGeometry {
        rows: r,
        cols: c,
        acc_rows: 64,
        mode,
    }
}

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    fn bf16(&mut self) -> u16 {
        // mostly moderate values, some special ones
        match self.next() % 50 {
            0 => 0x8000,
            1 => 0x0001, // subnormal
            2 => 0x7F80, // inf
            _ => {
                let sign = (self.next() & 1) as u16;
                let exp = 120 + (self.next() % 14) as u16;
                let man = (self.next() & 0x7F) as u16;
                (sign << 15) | (exp << 7) | man
            }
        }
    }
}

#[test]
fn back_to_back_tiles_follow_the_contract_formula() {
    for (r, c, m, tiles) in [(8usize, 8usize, 8usize, 5u64), (4, 6, 10, 3), (8, 4, 3, 4)] {
        let mut mx = MxuModel::new(geom(r, c, MxuMode::Int8), false);
        let mut last = None;
        for _ in 0..tiles {
            mx.load_weights(Cycle(0), r, c, None).unwrap();
            last = Some(mx.matmul(Cycle(0), m, r, 0, true, None).unwrap());
        }
        let done = last.unwrap().complete().get();
        let (r, c, m) = (r as u64, c as u64, m as u64);
        let want = if m >= r {
            // contract: T·M + R + C − 1 is the last visible cycle's index + ... complete = t_last + M − 1 + R + C
            tiles * m + r + c
        } else {
            // weight port bound: load j starts at j·R, matmul j at j·R + 1
            (tiles - 1) * r + 1 + m - 1 + r + c
        };
        assert_eq!(done, want, "R={r} C={c} M={m} T={tiles}");
    }
}

#[test]
fn load_waits_for_swap_and_unswapped_reload_is_an_error() {
    let mut mx = MxuModel::new(geom(8, 8, MxuMode::Int8), false);
    let l0 = mx.load_weights(Cycle(10), 8, 8, None).unwrap();
    assert_eq!(l0.start, Cycle(10));
    assert!(matches!(
        mx.load_weights(Cycle(11), 8, 8, None),
        Err(MxuError::UnswappedShadow(_))
    ));
    let mm = mx.matmul(Cycle(30), 2, 8, 0, false, None).unwrap();
    assert_eq!(mm.start, Cycle(30));
    // next load waits for the swap at 30 (later than 10 + R)
    let l1 = mx.load_weights(Cycle(12), 8, 8, None).unwrap();
    assert_eq!(l1.start, Cycle(30));
    let mm1 = mx.matmul(Cycle(0), 1, 8, 0, false, None).unwrap();
    assert_eq!(mm1.start, Cycle(32)); // max(input free 32, s+1 = 31)
    assert_eq!(mm1.row_visible(0), Cycle(32 + 16));
}

#[test]
fn bf16_matmul_matches_naive_column_order_reference() {
    let (r, c) = (8usize, 6usize);
    let mut rng = Lcg(7);
    let mut mx = MxuModel::new(geom(r, c, MxuMode::Bf16), true);
    let mut acc_ref = vec![vec![0u32; c]; 64];
    for round in 0..4 {
        let (k, n, m) = (3 + round, 2 + round, 5 + 2 * round);
        let w: Vec<u16> = (0..k * n).map(|_| rng.bf16()).collect();
        let x: Vec<u16> = (0..m * k).map(|_| rng.bf16()).collect();
        let acc_addr = 60 + round; // wraps around A = 64
        let accumulate = round % 2 == 1;
        mx.load_weights(Cycle(0), k, n, Some(Operand::Bf16(&w)))
            .unwrap();
        let (t, rows) = mx
            .matmul_rows(Cycle(0), m, k, acc_addr, accumulate, Operand::Bf16(&x))
            .unwrap();
        for i in 0..m {
            let row = (acc_addr + i) % 64;
            for col in 0..c {
                let a: Vec<u16> = (0..r)
                    .map(|kk| if kk < k { x[i * k + kk] } else { 0 })
                    .collect();
                let wc: Vec<u16> = (0..r)
                    .map(|kk| {
                        if kk < k && col < n {
                            w[kk * n + col]
                        } else {
                            0
                        }
                    })
                    .collect();
                let p = bf16_column_sum(&a, &wc);
                acc_ref[row][col] = if accumulate {
                    f32_add(acc_ref[row][col], p)
                } else {
                    p
                };
            }
            assert_eq!(rows[i].acc_row, row);
            assert_eq!(rows[i].values, acc_ref[row], "round {round} row {i}");
            assert_eq!(rows[i].visible, t.start + i as u64 + (r + c) as u64);
        }
    }
}

#[test]
fn int8_matmul_wraps_like_the_reference() {
    let (r, c) = (4usize, 4usize);
    let mut mx = MxuModel::new(geom(r, c, MxuMode::Int8), true);
    let w: Vec<i8> = (0..16)
        .map(|i| if i % 3 == 0 { -128 } else { 127 })
        .collect();
    let x: Vec<i8> = (0..8)
        .map(|i| if i % 2 == 0 { -128 } else { 127 })
        .collect();
    mx.load_weights(Cycle(0), 4, 4, Some(Operand::Int8(&w)))
        .unwrap();
    mx.matmul(Cycle(0), 2, 4, 0, false, Some(Operand::Int8(&x)))
        .unwrap();
    mx.matmul(Cycle(0), 2, 4, 0, true, Some(Operand::Int8(&x)))
        .unwrap();
    for i in 0..2 {
        for n in 0..4 {
            let wc: Vec<i8> = (0..4).map(|k| w[k * 4 + n]).collect();
            let p = int8_column_sum(&x[i * 4..i * 4 + 4], &wc);
            assert_eq!(mx.acc_row(i)[n] as i32, p.wrapping_add(p));
        }
    }
}

#[test]
fn bad_shapes_and_modes_are_errors() {
    let mut mx = MxuModel::new(geom(4, 4, MxuMode::Bf16), true);
    assert!(mx.load_weights(Cycle(0), 5, 4, None).is_err());
    assert!(mx
        .load_weights(Cycle(0), 1, 1, Some(Operand::Int8(&[1])))
        .is_err());
    assert!(mx
        .load_weights(Cycle(0), 1, 2, Some(Operand::Bf16(&[1])))
        .is_err());
    assert!(mx.matmul(Cycle(0), 0, 4, 0, false, None).is_err());
    assert!(mx.matmul(Cycle(0), 1, 4, 64, false, None).is_err());
}

#[test]
fn docs_timing_example_beside_scale_sim() {
    // docs/timing.md: M = 256, K = N = 256 on a 128×128 array → T = 4 tiles.
    let (r, c, m, t) = (128usize, 128usize, 256usize, 4u64);
    let mut mx = MxuModel::new(
        MxuGeometry {
            rows: r,
            cols: c,
            acc_rows: 2048,
            mode: MxuMode::Bf16,
        },
        false,
    );
    let mut last = None;
    for _ in 0..t {
        mx.load_weights(Cycle(0), r, c, None).unwrap();
        last = Some(mx.matmul(Cycle(0), m, r, 0, true, None).unwrap());
    }
    let ours = last.unwrap().complete().get();
    let (r, c, m) = (r as u64, c as u64, m as u64);
    assert_eq!(ours, (t - 1) * m.max(r) + m + r + c);
    assert_eq!(ours, 1280);
    let scale_sim = t * (2 * r + c + m - 2) - 1;
    assert_eq!(scale_sim, 2551);
    assert_eq!(scale_sim - ours, 4 * r + 3 * (r + c - 2) - 2 - 1);
}
