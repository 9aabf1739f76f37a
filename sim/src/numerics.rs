//! The MXU's arithmetic, bit for bit as `docs/mxu-contract.md` fixes it (shared with `hw`).
//!
//! Values travel as raw bits: bf16 as `u16`, f32 as `u32`, int8 as `i8`, int32 as `i32`.
//! Invariants (from the contract):
//! * bf16 inputs are read with subnormals as zero of the same sign (DAZ).
//! * A bf16 product is exact in f32; one below the smallest normal f32 becomes zero with sign
//!   `sa ⊕ sw`; one above the largest finite f32 becomes ±inf; `inf · 0` is NaN.
//! * `f32_add` is IEEE-754 binary32 addition rounded to nearest even, whose subnormal result is
//!   flushed to zero keeping its sign.
//! * Every NaN these functions return is the canonical quiet NaN [`CANONICAL_NAN`].
//! * A column sum starts at `+0.0` and adds products in row order `k = 0 … R−1` (top to bottom),
//!   padding rows included.
//! * int8: products exact in i32, sums and accumulation wrap (two's complement).

/// The canonical quiet NaN every NaN result is replaced by.
pub const CANONICAL_NAN: u32 = 0x7FC0_0000;

const F32_EXP_MASK: u32 = 0x7F80_0000;
const F32_SIGN: u32 = 0x8000_0000;

/// Widens bf16 bits to f32 bits, reading a subnormal as a zero of the same sign (DAZ).
#[inline]
pub fn bf16_to_f32_daz(x: u16) -> u32 {
    let bits = (x as u32) << 16;
    if bits & F32_EXP_MASK == 0 {
        bits & F32_SIGN
    } else {
        bits
    }
}

/// Flushes an f32 subnormal to zero (sign kept) and canonicalizes NaN.
#[inline]
pub fn f32_ftz_canonical(bits: u32) -> u32 {
    // Branch-free (selects), so loops over columns vectorize.
    let r = if bits & F32_EXP_MASK == 0 {
        bits & F32_SIGN
    } else {
        bits
    };
    if r & 0x7FFF_FFFF > F32_EXP_MASK {
        CANONICAL_NAN
    } else {
        r
    }
}

/// The MXU's bf16 product `a · w` as f32 bits (exact; FTZ below the smallest normal; see module docs).
#[inline]
pub fn bf16_product(a: u16, w: u16) -> u32 {
    let fa = f32::from_bits(bf16_to_f32_daz(a));
    let fw = f32::from_bits(bf16_to_f32_daz(w));
    // Exact: 8-bit × 8-bit significands fit in 24 bits. Out of range: IEEE gives ±inf above (the
    // exact product of two bf16 is then ≥ 2^128) and a subnormal or zero below, which we flush
    // with the sign of the product (`f32_ftz_canonical` keeps the sign IEEE computed: sa ⊕ sw).
    f32_ftz_canonical((fa * fw).to_bits())
}

/// The MXU's f32 addition: IEEE-754 round to nearest even, subnormal result flushed to zero
/// (sign kept), NaN canonicalized. Inputs are taken as they are (the MXU never produces
/// subnormals, so its adders never see one).
#[inline]
pub fn f32_add(a: u32, b: u32) -> u32 {
    f32_ftz_canonical((f32::from_bits(a) + f32::from_bits(b)).to_bits())
}

/// The int8 product `a · w`, exact in i32.
#[inline]
pub fn int8_product(a: i8, w: i8) -> i32 {
    a as i32 * w as i32
}

/// The int32 addition of the int8 path: two's-complement wrap-around.
#[inline]
pub fn i32_add(a: i32, b: i32) -> i32 {
    a.wrapping_add(b)
}

/// One bf16 column sum `p_{R−1}` over rows `k = 0 … len−1` (`a[k] · w[k]`), starting at `+0.0`.
///
/// `a` and `w` have the same length, the full array height `R` (padding rows included).
pub fn bf16_column_sum(a: &[u16], w: &[u16]) -> u32 {
    debug_assert_eq!(a.len(), w.len());
    let mut p = 0u32; // +0.0
    for (&x, &y) in a.iter().zip(w) {
        p = f32_add(p, bf16_product(x, y));
    }
    p
}

/// One int8 column sum over rows `k = 0 … len−1`, starting at 0, wrapping.
pub fn int8_column_sum(a: &[i8], w: &[i8]) -> i32 {
    debug_assert_eq!(a.len(), w.len());
    let mut p = 0i32;
    for (&x, &y) in a.iter().zip(w) {
        p = i32_add(p, int8_product(x, y));
    }
    p
}

/// Rounds f32 bits to bf16 bits (round to nearest even; NaN stays a quiet NaN). Used to store
/// f32 results as bf16 (VPU conversions), not inside the MXU.
#[inline]
pub fn f32_to_bf16_rne(bits: u32) -> u16 {
    if bits & 0x7FFF_FFFF > 0x7F80_0000 {
        return ((bits >> 16) as u16) | 0x0040;
    }
    let lsb = (bits >> 16) & 1;
    ((bits.wrapping_add(0x7FFF + lsb)) >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bf(x: f32) -> u16 {
        (x.to_bits() >> 16) as u16
    }

    #[test]
    fn product_is_exact_and_signed() {
        assert_eq!(f32::from_bits(bf16_product(bf(1.5), bf(-2.25))), -3.375);
        // smallest normal bf16 squared underflows: flushed, sign a ⊕ w
        let tiny = 0x0080u16; // 2^-126
        assert_eq!(bf16_product(tiny, tiny), 0);
        assert_eq!(bf16_product(tiny | 0x8000, tiny), 0x8000_0000);
        // largest bf16 squared overflows to inf
        let big = 0x7F7Fu16;
        assert_eq!(bf16_product(big, big), 0x7F80_0000);
        assert_eq!(bf16_product(big | 0x8000, big), 0xFF80_0000);
        // inf · 0 = NaN (canonical)
        assert_eq!(bf16_product(0x7F80, 0), CANONICAL_NAN);
        // DAZ: a subnormal input reads as signed zero
        assert_eq!(bf16_product(0x8001, bf(3.0)), 0x8000_0000);
    }

    #[test]
    fn add_rounds_to_nearest_even_and_flushes() {
        let one = 1.0f32.to_bits();
        let half_ulp = 2f32.powi(-24).to_bits();
        assert_eq!(f32_add(one, half_ulp), one); // tie to even
        let min = f32::MIN_POSITIVE;
        // min normal − 1.5·min normal... gives −0.5·min = subnormal → −0
        let r = f32_add(min.to_bits(), (-1.5 * min).to_bits());
        assert_eq!(r, 0x8000_0000);
        assert_eq!(f32_add(one, (-1.0f32).to_bits()), 0); // x + (−x) = +0
        assert_eq!(f32_add(0x8000_0000, 0x8000_0000), 0x8000_0000);
        assert_eq!(f32_add(0x7F80_0000, 0xFF80_0000), CANONICAL_NAN);
    }

    #[test]
    fn column_of_negative_zeros_sums_to_plus_zero() {
        let a = [bf(-0.0), bf(-0.0)];
        let w = [bf(1.0), bf(1.0)];
        assert_eq!(bf16_column_sum(&a, &w), 0);
    }

    #[test]
    fn int8_wraps() {
        let a = [127i8; 4];
        let w = [127i8; 4];
        assert_eq!(int8_column_sum(&a, &w), 4 * 127 * 127);
        assert_eq!(i32_add(i32::MAX, 1), i32::MIN);
    }

    #[test]
    fn bf16_rounding() {
        assert_eq!(f32_to_bf16_rne(1.0f32.to_bits()), 0x3F80);
        assert_eq!(f32_to_bf16_rne(0x3F80_8000), 0x3F80); // tie to even (down)
        assert_eq!(f32_to_bf16_rne(0x3F81_8000), 0x3F82); // tie to even (up)
    }
}
