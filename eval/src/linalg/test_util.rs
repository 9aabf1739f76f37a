//! Helpers for the kernels' unit tests: a tiny deterministic generator and literal builders.

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::ArrayShape;
use hlo::types::ElementType;

/// A 64-bit LCG (Knuth's MMIX constants); deterministic test data without extra crates.
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Lcg {
        Lcg(seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 11
    }
    /// Uniform in [-1, 1).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
    pub fn f64s(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.f64()).collect()
    }
    pub fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f64() as f32).collect()
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

pub fn f32_lit(dims: &[usize], v: Vec<f32>) -> ArrayLiteral {
    ArrayLiteral {
        dims: dims.to_vec(),
        data: ArrayData::F32(v),
    }
}

pub fn f64_lit(dims: &[usize], v: Vec<f64>) -> ArrayLiteral {
    ArrayLiteral {
        dims: dims.to_vec(),
        data: ArrayData::F64(v),
    }
}

pub fn shape(ty: ElementType, dims: &[usize]) -> ArrayShape {
    ArrayShape::new(ty, &dims.iter().map(|&d| d as i64).collect::<Vec<_>>())
}

pub fn f32s(l: &ArrayLiteral) -> &[f32] {
    match &l.data {
        ArrayData::F32(v) => v,
        d => panic!("expected f32 data, got {}", d.element_type()),
    }
}

pub fn f64s(l: &ArrayLiteral) -> &[f64] {
    match &l.data {
        ArrayData::F64(v) => v,
        d => panic!("expected f64 data, got {}", d.element_type()),
    }
}
