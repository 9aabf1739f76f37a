//! Literals: concrete values of any shape and element type.
//!
//! Arrays are dense, logically row-major (a layout in the shape never changes how a literal
//! stores its values), in a typed buffer ([`ArrayData`]) so evaluation runs tight loops over
//! `Vec<f32>`, `Vec<i32>`, ... rather than boxed values. The carried-only types (s2/s4/u2/u4
//! and the small floats) are stored as raw bit patterns, one element per byte.
//!
//! Equality is bitwise for floats: `NaN == NaN` when the bits agree and `-0 != +0`. Use the
//! conformance comparisons (`crate::compare`) for value tolerance.

use crate::shape::{ArrayShape, Shape};
use crate::types::ElementType;
use half::{bf16, f16};
use num_complex::{Complex32, Complex64};

/// Calls `$body` with `$v` bound to the typed vector inside an [`ArrayData`], for every
/// variant. `Raw` is bound too (as `Vec<u8>`).
#[macro_export]
macro_rules! with_array_data {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            $crate::literal::ArrayData::Pred($v) => $body,
            $crate::literal::ArrayData::S8($v) => $body,
            $crate::literal::ArrayData::S16($v) => $body,
            $crate::literal::ArrayData::S32($v) => $body,
            $crate::literal::ArrayData::S64($v) => $body,
            $crate::literal::ArrayData::U8($v) => $body,
            $crate::literal::ArrayData::U16($v) => $body,
            $crate::literal::ArrayData::U32($v) => $body,
            $crate::literal::ArrayData::U64($v) => $body,
            $crate::literal::ArrayData::F16($v) => $body,
            $crate::literal::ArrayData::BF16($v) => $body,
            $crate::literal::ArrayData::F32($v) => $body,
            $crate::literal::ArrayData::F64($v) => $body,
            $crate::literal::ArrayData::C64($v) => $body,
            $crate::literal::ArrayData::C128($v) => $body,
            $crate::literal::ArrayData::Raw(_, $v) => $body,
        }
    };
}

/// A typed dense buffer.
#[derive(Clone, Debug)]
pub enum ArrayData {
    Pred(Vec<bool>),
    S8(Vec<i8>),
    S16(Vec<i16>),
    S32(Vec<i32>),
    S64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    C64(Vec<Complex32>),
    C128(Vec<Complex64>),
    /// Carried-only types: raw bit patterns, one element per byte.
    Raw(ElementType, Vec<u8>),
}

impl ArrayData {
    /// A zero-filled buffer of `n` elements of `ty`.
    pub fn zeros(ty: ElementType, n: usize) -> ArrayData {
        use ElementType as T;
        match ty {
            T::Pred => ArrayData::Pred(vec![false; n]),
            T::S8 => ArrayData::S8(vec![0; n]),
            T::S16 => ArrayData::S16(vec![0; n]),
            T::S32 => ArrayData::S32(vec![0; n]),
            T::S64 => ArrayData::S64(vec![0; n]),
            T::U8 => ArrayData::U8(vec![0; n]),
            T::U16 => ArrayData::U16(vec![0; n]),
            T::U32 => ArrayData::U32(vec![0; n]),
            T::U64 => ArrayData::U64(vec![0; n]),
            T::F16 => ArrayData::F16(vec![f16::ZERO; n]),
            T::BF16 => ArrayData::BF16(vec![bf16::ZERO; n]),
            T::F32 => ArrayData::F32(vec![0.0; n]),
            T::F64 => ArrayData::F64(vec![0.0; n]),
            T::C64 => ArrayData::C64(vec![Complex32::new(0.0, 0.0); n]),
            T::C128 => ArrayData::C128(vec![Complex64::new(0.0, 0.0); n]),
            t => ArrayData::Raw(t, vec![0; n]),
        }
    }

    pub fn element_type(&self) -> ElementType {
        use ElementType as T;
        match self {
            ArrayData::Pred(_) => T::Pred,
            ArrayData::S8(_) => T::S8,
            ArrayData::S16(_) => T::S16,
            ArrayData::S32(_) => T::S32,
            ArrayData::S64(_) => T::S64,
            ArrayData::U8(_) => T::U8,
            ArrayData::U16(_) => T::U16,
            ArrayData::U32(_) => T::U32,
            ArrayData::U64(_) => T::U64,
            ArrayData::F16(_) => T::F16,
            ArrayData::BF16(_) => T::BF16,
            ArrayData::F32(_) => T::F32,
            ArrayData::F64(_) => T::F64,
            ArrayData::C64(_) => T::C64,
            ArrayData::C128(_) => T::C128,
            ArrayData::Raw(t, _) => *t,
        }
    }

    pub fn len(&self) -> usize {
        with_array_data!(self, v => v.len())
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bit pattern of element `i` zero-extended to 128 bits (complex: real in the low half).
    pub fn bits_at(&self, i: usize) -> u128 {
        match self {
            ArrayData::Pred(v) => v[i] as u128,
            ArrayData::S8(v) => v[i] as u8 as u128,
            ArrayData::S16(v) => v[i] as u16 as u128,
            ArrayData::S32(v) => v[i] as u32 as u128,
            ArrayData::S64(v) => v[i] as u64 as u128,
            ArrayData::U8(v) => v[i] as u128,
            ArrayData::U16(v) => v[i] as u128,
            ArrayData::U32(v) => v[i] as u128,
            ArrayData::U64(v) => v[i] as u128,
            ArrayData::F16(v) => v[i].to_bits() as u128,
            ArrayData::BF16(v) => v[i].to_bits() as u128,
            ArrayData::F32(v) => v[i].to_bits() as u128,
            ArrayData::F64(v) => v[i].to_bits() as u128,
            ArrayData::C64(v) => (v[i].re.to_bits() as u128) | ((v[i].im.to_bits() as u128) << 32),
            ArrayData::C128(v) => (v[i].re.to_bits() as u128) | ((v[i].im.to_bits() as u128) << 64),
            ArrayData::Raw(_, v) => v[i] as u128,
        }
    }
}

impl PartialEq for ArrayData {
    fn eq(&self, other: &ArrayData) -> bool {
        self.element_type() == other.element_type()
            && self.len() == other.len()
            && (0..self.len()).all(|i| self.bits_at(i) == other.bits_at(i))
    }
}

/// A dense array value.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayLiteral {
    /// Logical dimensions (for a dynamic shape: the actual sizes).
    pub dims: Vec<usize>,
    pub data: ArrayData,
}

impl ArrayLiteral {
    pub fn element_type(&self) -> ElementType {
        self.data.element_type()
    }
    pub fn element_count(&self) -> usize {
        self.dims.iter().product()
    }
    /// The static array shape of this value (no layout).
    pub fn shape(&self) -> ArrayShape {
        let dims: Vec<i64> = self.dims.iter().map(|&d| d as i64).collect();
        ArrayShape::new(self.element_type(), &dims)
    }
}

/// Any value: an array, a tuple of values, or a token.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Array(ArrayLiteral),
    Tuple(Vec<Literal>),
    Token,
}

impl Literal {
    /// An array literal; panics if `data.len()` does not match `dims` (an internal bug).
    pub fn array(dims: Vec<usize>, data: ArrayData) -> Literal {
        assert_eq!(
            dims.iter().product::<usize>(),
            data.len(),
            "literal data length mismatch"
        );
        Literal::Array(ArrayLiteral { dims, data })
    }
    /// A zero-valued literal of `shape` (tuples recursively); `None` if the shape is too large.
    pub fn zeros(shape: &Shape) -> Option<Literal> {
        Some(match shape {
            Shape::Array(a) => {
                let n = usize::try_from(a.element_count()?).ok()?;
                Literal::array(a.udims(), ArrayData::zeros(a.ty, n))
            }
            Shape::Tuple(t) => Literal::Tuple(t.iter().map(Literal::zeros).collect::<Option<_>>()?),
            Shape::Token => Literal::Token,
        })
    }
    pub fn scalar_f32(v: f32) -> Literal {
        Literal::array(vec![], ArrayData::F32(vec![v]))
    }
    pub fn scalar_s32(v: i32) -> Literal {
        Literal::array(vec![], ArrayData::S32(vec![v]))
    }
    pub fn scalar_pred(v: bool) -> Literal {
        Literal::array(vec![], ArrayData::Pred(vec![v]))
    }
    pub fn as_array(&self) -> Option<&ArrayLiteral> {
        match self {
            Literal::Array(a) => Some(a),
            _ => None,
        }
    }
    pub fn as_tuple(&self) -> Option<&[Literal]> {
        match self {
            Literal::Tuple(t) => Some(t),
            _ => None,
        }
    }
    /// The shape of this value (static, no layouts).
    pub fn shape(&self) -> Shape {
        match self {
            Literal::Array(a) => Shape::Array(a.shape()),
            Literal::Tuple(t) => Shape::Tuple(t.iter().map(Literal::shape).collect()),
            Literal::Token => Shape::Token,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitwise_equality_of_floats() {
        let a = Literal::array(vec![2], ArrayData::F32(vec![f32::NAN, -0.0]));
        let b = Literal::array(vec![2], ArrayData::F32(vec![f32::NAN, -0.0]));
        let c = Literal::array(vec![2], ArrayData::F32(vec![f32::NAN, 0.0]));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
