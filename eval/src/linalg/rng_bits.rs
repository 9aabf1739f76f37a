//! RngBitGenerator (`rng-bit-generator`), bit-exact with XLA's expansion of the op
//! (`RngBitGeneratorExpander` + the ThreeFry/Philox bit generators of XLA's `prng` library).
//!
//! State: `u64[2]` (Philox also `u64[3]`); `state[0]` is the key, the rest the counter.
//! - `rng_three_fry`: ThreeFry-2x32 with 20 rounds. For 32-bit (and narrower) outputs the shape
//!   is split in halves along its first even dimension (else its largest, rounded up): each
//!   ThreeFry call on counter `state[1] + j` (j = row-major index in the half shape) yields the
//!   two words for positions `2·(j along the split dim)` and `+1`. 64-bit outputs use one call
//!   per element (`lo | hi << 32`). New state: `[key, state[1] + calls]`.
//! - `rng_philox` (and `rng_default`, which XLA:CPU/GPU expand to Philox): Philox-4x32-10 on the
//!   128-bit counter `(low = state[1], high = state[2] or, for a 2-word state, state[0])` plus
//!   `i` for block `i`; the four words of each block are consecutive outputs (64-bit outputs:
//!   two words each). New state: `[key, counter + blocks]` (2-word state: low word only).
//! - Narrow outputs (8/16-bit) take the low bits of the 32-bit stream; signed outputs and f32/f64
//!   reinterpret the bits.

use super::convert::check_result;
use super::{KResult, KernelError};
use hlo::attrs::{Attrs, RngAlgorithm};
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use hlo::shape::Shape;
use hlo::types::ElementType;

/// ThreeFry-2x32, 20 rounds (Salmon et al. 2011), as XLA computes it.
pub fn threefry2x32(input: [u32; 2], key: [u32; 2]) -> [u32; 2] {
    const ROT: [u32; 8] = [13, 15, 26, 6, 17, 29, 16, 24];
    let ks = [key[0], key[1], 0x1BD1_1BDA ^ key[0] ^ key[1]];
    let mut x = [input[0].wrapping_add(ks[0]), input[1].wrapping_add(ks[1])];
    let round = |x: &mut [u32; 2], r: u32| {
        x[0] = x[0].wrapping_add(x[1]);
        x[1] = x[1].rotate_left(r) ^ x[0];
    };
    for block in 0..5usize {
        let rots = if block % 2 == 0 { &ROT[..4] } else { &ROT[4..] };
        for &r in rots {
            round(&mut x, r);
        }
        // Key injection after every 4 rounds.
        x[0] = x[0].wrapping_add(ks[(block + 1) % 3]);
        x[1] = x[1]
            .wrapping_add(ks[(block + 2) % 3])
            .wrapping_add(block as u32 + 1);
    }
    x
}

/// Philox-4x32 with 10 rounds, as XLA computes it.
pub fn philox4x32(mut x: [u32; 4], mut key: [u32; 2]) -> [u32; 4] {
    const M_A: u64 = 0xD251_1F53;
    const M_B: u64 = 0xCD9E_8D57;
    for _ in 0..10 {
        let p0 = x[0] as u64 * M_A;
        let p1 = x[2] as u64 * M_B;
        x = [
            ((p1 >> 32) as u32) ^ x[1] ^ key[0],
            p1 as u32,
            ((p0 >> 32) as u32) ^ x[3] ^ key[1],
            p0 as u32,
        ];
        key = [
            key[0].wrapping_add(0x9E37_79B9),
            key[1].wrapping_add(0xBB67_AE85),
        ];
    }
    x
}

fn split_u64(v: u64) -> [u32; 2] {
    [v as u32, (v >> 32) as u32]
}

/// ThreeFry 32-bit words for `dims`, and the number of counter values used.
fn threefry_words32(key: u64, ctr: u64, dims: &[usize]) -> (Vec<u32>, u64) {
    let n: usize = dims.iter().product();
    // The split dimension and the half shape (outer, ceil(d/2), inner).
    let (outer, half, inner, d) = if dims.is_empty() {
        (1, 1, 1, 1)
    } else {
        let split = dims.iter().position(|&d| d % 2 == 0).unwrap_or_else(|| {
            let mut best = 0;
            for (i, &d) in dims.iter().enumerate() {
                if d > dims[best] {
                    best = i;
                }
            }
            best
        });
        let outer: usize = dims[..split].iter().product();
        let inner: usize = dims[split + 1..].iter().product();
        (outer, dims[split].div_ceil(2), inner, dims[split])
    };
    let calls = (outer * half * inner) as u64;
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return (out, calls);
    }
    let k = split_u64(key);
    let mut pairs = Vec::with_capacity(outer * half * inner);
    for j in 0..outer * half * inner {
        pairs.push(threefry2x32(split_u64(ctr.wrapping_add(j as u64)), k));
    }
    for o in 0..outer {
        for s in 0..d {
            for r in 0..inner {
                out.push(pairs[(o * half + s / 2) * inner + r][s % 2]);
            }
        }
    }
    (out, calls)
}

/// ThreeFry 64-bit words for `n` elements.
fn threefry_words64(key: u64, ctr: u64, n: usize) -> Vec<u64> {
    let k = split_u64(key);
    (0..n)
        .map(|j| {
            let w = threefry2x32(split_u64(ctr.wrapping_add(j as u64)), k);
            w[0] as u64 | (w[1] as u64) << 32
        })
        .collect()
}

/// Philox 32-bit words: `blocks` blocks of four from the 128-bit counter `(lo, hi)`.
fn philox_words32(key: u64, lo: u64, hi: u64, blocks: usize) -> Vec<u32> {
    let k = split_u64(key);
    let mut out = Vec::with_capacity(blocks * 4);
    for i in 0..blocks as u64 {
        let (l, h) = add_u128(lo, hi, i);
        let [a, b] = split_u64(l);
        let [c, d] = split_u64(h);
        out.extend(philox4x32([a, b, c, d], k));
    }
    out
}

/// `(lo, hi) + v` on a 128-bit number, as XLA's Uint128AddUint64.
fn add_u128(lo: u64, hi: u64, v: u64) -> (u64, u64) {
    let l = lo.wrapping_add(v);
    (l, if l < lo { hi.wrapping_add(1) } else { hi })
}

/// Raw 64-bit words (low bits used for narrower types) and the new state.
fn generate(
    alg: RngAlgorithm,
    state: &[u64],
    ty: ElementType,
    dims: &[usize],
) -> KResult<(Vec<u64>, Vec<u64>)> {
    let n: usize = dims.iter().product();
    let bits = ty.bits();
    let key = state[0];
    match alg {
        RngAlgorithm::ThreeFry => {
            if state.len() != 2 {
                return Err(KernelError::invalid(format!(
                    "rng-bit-generator: rng_three_fry needs a u64[2] state, got u64[{}]",
                    state.len()
                )));
            }
            if bits == 64 {
                let w = threefry_words64(key, state[1], n);
                Ok((w, vec![key, state[1].wrapping_add(n as u64)]))
            } else {
                let (w, calls) = threefry_words32(key, state[1], dims);
                Ok((
                    w.into_iter().map(u64::from).collect(),
                    vec![key, state[1].wrapping_add(calls)],
                ))
            }
        }
        RngAlgorithm::Philox | RngAlgorithm::Default => {
            let (lo, hi) = match state.len() {
                2 => (state[1], state[0]),
                3 => (state[1], state[2]),
                k => {
                    return Err(KernelError::invalid(format!(
                    "rng-bit-generator: rng_philox needs a u64[2] or u64[3] state, got u64[{k}]"
                )))
                }
            };
            let words32 = if bits == 64 { 2 * n } else { n };
            let blocks = words32.div_ceil(4);
            let w = philox_words32(key, lo, hi, blocks);
            let vals: Vec<u64> = if bits == 64 {
                // bits64[0] = w0 | w1 << 32, bits64[1] = w2 | w3 << 32, interleaved per block.
                w.chunks(2)
                    .take(n)
                    .map(|p| p[0] as u64 | (p[1] as u64) << 32)
                    .collect()
            } else {
                w.into_iter().take(n).map(u64::from).collect()
            };
            let (nl, nh) = add_u128(lo, hi, blocks as u64);
            let new_state = if state.len() == 2 {
                vec![key, nl]
            } else {
                vec![key, nl, nh]
            };
            Ok((vals, new_state))
        }
    }
}

fn bits_to_data(v: &[u64], ty: ElementType) -> KResult<ArrayData> {
    use ElementType as T;
    Ok(match ty {
        T::U8 => ArrayData::U8(v.iter().map(|&x| x as u8).collect()),
        T::S8 => ArrayData::S8(v.iter().map(|&x| x as i8).collect()),
        T::U16 => ArrayData::U16(v.iter().map(|&x| x as u16).collect()),
        T::S16 => ArrayData::S16(v.iter().map(|&x| x as i16).collect()),
        T::F16 => ArrayData::F16(v.iter().map(|&x| half::f16::from_bits(x as u16)).collect()),
        T::BF16 => ArrayData::BF16(v.iter().map(|&x| half::bf16::from_bits(x as u16)).collect()),
        T::U32 => ArrayData::U32(v.iter().map(|&x| x as u32).collect()),
        T::S32 => ArrayData::S32(v.iter().map(|&x| x as i32).collect()),
        T::F32 => ArrayData::F32(v.iter().map(|&x| f32::from_bits(x as u32)).collect()),
        T::U64 => ArrayData::U64(v.to_vec()),
        T::S64 => ArrayData::S64(v.iter().map(|&x| x as i64).collect()),
        T::F64 => ArrayData::F64(v.iter().map(|&x| f64::from_bits(x)).collect()),
        t => {
            return Err(KernelError::unsupported(format!(
                "rng-bit-generator output of element type {t}"
            )))
        }
    })
}

/// Evaluates `rng-bit-generator(state)` into the declared `(state, data)` tuple shape.
pub fn rng_bit_generator(state: &ArrayLiteral, attrs: &Attrs, out: &Shape) -> KResult<Literal> {
    let hlo::View::RngBitGenerator { algorithm: alg } =
        hlo::View::of(hlo::Opcode::RngBitGenerator, attrs)
    else {
        unreachable!("every rng-bit-generator has a view")
    };
    let ArrayData::U64(s) = &state.data else {
        return Err(KernelError::invalid(format!(
            "rng-bit-generator: state must be u64[2] or u64[3], got {}",
            state.shape()
        )));
    };
    if state.dims.len() != 1 {
        return Err(KernelError::invalid(format!(
            "rng-bit-generator: state must be rank 1, got {}",
            state.shape()
        )));
    }
    let parts = out.as_tuple().filter(|t| t.len() == 2);
    let (Some(sshape), Some(dshape)) = (
        parts.and_then(|t| t[0].as_array()),
        parts.and_then(|t| t[1].as_array()),
    ) else {
        return Err(KernelError::invalid(
            "rng-bit-generator: result must be a (state, data) tuple of arrays",
        ));
    };
    check_result(
        "rng-bit-generator state",
        sshape,
        &state.dims,
        ElementType::U64,
    )?;
    let dims = dshape.udims();
    let (words, new_state) = generate(alg, s, dshape.ty, &dims)?;
    Ok(Literal::Tuple(vec![
        Literal::Array(ArrayLiteral {
            dims: state.dims.clone(),
            data: ArrayData::U64(new_state),
        }),
        Literal::Array(ArrayLiteral {
            dims,
            data: bits_to_data(&words, dshape.ty)?,
        }),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threefry_known_answer() {
        // Random123 known-answer vectors for threefry2x32_20.
        assert_eq!(threefry2x32([0, 0], [0, 0]), [0x6b20_0159, 0x99ba_4efe]);
        assert_eq!(
            threefry2x32([u32::MAX, u32::MAX], [u32::MAX, u32::MAX]),
            [0x1cb9_96fc, 0xbb00_2be7]
        );
        assert_eq!(
            threefry2x32([0x243f_6a88, 0x85a3_08d3], [0x1319_8a2e, 0x0370_7344]),
            [0xc492_3a9c, 0x483d_f7a0]
        );
    }

    #[test]
    fn philox_known_answer() {
        // Random123 known-answer vectors for philox4x32_10.
        assert_eq!(
            philox4x32([0; 4], [0; 2]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }

    #[test]
    fn state_advances_by_calls_and_blocks() {
        let st = [7u64, 100];
        let (_, ns) = generate(RngAlgorithm::ThreeFry, &st, ElementType::U32, &[4, 5]).unwrap();
        assert_eq!(ns, vec![7, 110]);
        let (_, ns) = generate(RngAlgorithm::ThreeFry, &st, ElementType::U32, &[3, 3]).unwrap();
        assert_eq!(ns, vec![7, 106]); // split the largest dim: [2 (rounded up), 3] halves
        let (_, ns) = generate(RngAlgorithm::Philox, &st, ElementType::U32, &[6, 4]).unwrap();
        assert_eq!(ns, vec![7, 106]);
        let (_, ns) = generate(
            RngAlgorithm::Philox,
            &[7, u64::MAX, 0],
            ElementType::U64,
            &[3],
        )
        .unwrap();
        assert_eq!(ns, vec![7, 1, 1]); // 6 words = 2 blocks, carry into the high word
    }

    #[test]
    fn odd_shapes_drop_the_last_word() {
        // [3] splits into 2 calls giving 4 words; the 4th is dropped.
        let (w, _) = generate(RngAlgorithm::ThreeFry, &[1, 2], ElementType::U32, &[3]).unwrap();
        let a = threefry2x32([2, 0], [1, 0]);
        let b = threefry2x32([3, 0], [1, 0]);
        assert_eq!(w, vec![a[0] as u64, a[1] as u64, b[0] as u64]);
    }
}
