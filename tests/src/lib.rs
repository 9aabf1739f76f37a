//! Shared helpers for the workspace integration tests (tests/tests/*.rs).

use hlo::{ArrayData, ArrayLiteral, ElementType, Literal, Shape};

/// A small deterministic generator (SplitMix64) for test inputs.
pub struct Rng(pub u64);

impl Rng {
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// A random literal of `shape`: floats uniform in [-2, 2), integers in [-8, 8) (unsigned
/// [0, 16)), pred a fair coin. `None` for element types the helper does not make.
pub fn random_literal(shape: &Shape, g: &mut Rng) -> Option<Literal> {
    Some(match shape {
        Shape::Tuple(t) => Literal::Tuple(
            t.iter()
                .map(|s| random_literal(s, g))
                .collect::<Option<_>>()?,
        ),
        Shape::Token => Literal::Token,
        Shape::Array(a) => {
            let n: usize = a.udims().iter().product();
            let f: Vec<f64> = (0..n).map(|_| g.uniform(-2.0, 2.0)).collect();
            let i = |g: &mut Rng, lo: i64| lo + (g.next_u64() % 16) as i64;
            use ElementType as T;
            let data = match a.ty {
                T::F32 => ArrayData::F32(f.iter().map(|&x| x as f32).collect()),
                T::F64 => ArrayData::F64(f),
                T::BF16 => ArrayData::BF16(f.iter().map(|&x| half::bf16::from_f64(x)).collect()),
                T::F16 => ArrayData::F16(f.iter().map(|&x| half::f16::from_f64(x)).collect()),
                T::S8 => ArrayData::S8((0..n).map(|_| i(g, -8) as i8).collect()),
                T::S32 => ArrayData::S32((0..n).map(|_| i(g, -8) as i32).collect()),
                T::S64 => ArrayData::S64((0..n).map(|_| i(g, -8)).collect()),
                T::U8 => ArrayData::U8((0..n).map(|_| i(g, 0) as u8).collect()),
                T::U32 => ArrayData::U32((0..n).map(|_| i(g, 0) as u32).collect()),
                T::Pred => ArrayData::Pred((0..n).map(|_| g.next_u64() & 1 == 1).collect()),
                _ => return None,
            };
            Literal::Array(ArrayLiteral {
                dims: a.udims(),
                data,
            })
        }
    })
}
