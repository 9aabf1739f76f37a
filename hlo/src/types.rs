//! XLA element types: the one table of names, widths and kinds.
//!
//! Every element type XLA's text format names is here. The evaluator computes on the "full"
//! types (pred, s8..s64, u8..u64, f16, bf16, f32, f64, c64, c128); the sub-byte integers and
//! the 8-bit (and smaller) float types are parsed, carried through shapes and literals (as raw
//! bit patterns, one element per byte) and refused with "not supported yet" where arithmetic
//! would be needed.

use std::fmt;

/// What family an element type belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TypeKind {
    Pred,
    Signed,
    Unsigned,
    Float,
    Complex,
}

macro_rules! element_types {
    ($( $(#[$doc:meta])* $v:ident => $name:literal, bits: $bits:expr, $kind:ident; )*) => {
        /// An XLA primitive element type (`PrimitiveType` minus tuple/token/opaque).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ElementType { $( $(#[$doc])* $v, )* }

        impl ElementType {
            /// Every element type, in table order.
            pub const ALL: &'static [ElementType] = &[ $( ElementType::$v, )* ];

            /// The name used in HLO text (`f32`, `bf16`, `pred`, ...).
            pub fn name(self) -> &'static str {
                match self { $( ElementType::$v => $name, )* }
            }

            /// Width of one element in bits (pred counts as 8, complex as both parts).
            pub fn bits(self) -> u32 {
                match self { $( ElementType::$v => $bits, )* }
            }

            /// The family of this type.
            pub fn kind(self) -> TypeKind {
                match self { $( ElementType::$v => TypeKind::$kind, )* }
            }

            /// Looks a type up by its HLO text name.
            pub fn from_name(s: &str) -> Option<ElementType> {
                match s { $( $name => Some(ElementType::$v), )* _ => None }
            }
        }
    };
}

element_types! {
    Pred => "pred", bits: 8, Pred;
    S2 => "s2", bits: 2, Signed;
    S4 => "s4", bits: 4, Signed;
    S8 => "s8", bits: 8, Signed;
    S16 => "s16", bits: 16, Signed;
    S32 => "s32", bits: 32, Signed;
    S64 => "s64", bits: 64, Signed;
    U2 => "u2", bits: 2, Unsigned;
    U4 => "u4", bits: 4, Unsigned;
    U8 => "u8", bits: 8, Unsigned;
    U16 => "u16", bits: 16, Unsigned;
    U32 => "u32", bits: 32, Unsigned;
    U64 => "u64", bits: 64, Unsigned;
    F16 => "f16", bits: 16, Float;
    BF16 => "bf16", bits: 16, Float;
    F32 => "f32", bits: 32, Float;
    F64 => "f64", bits: 64, Float;
    C64 => "c64", bits: 64, Complex;
    C128 => "c128", bits: 128, Complex;
    F4E2M1FN => "f4e2m1fn", bits: 4, Float;
    F8E3M4 => "f8e3m4", bits: 8, Float;
    F8E4M3 => "f8e4m3", bits: 8, Float;
    F8E4M3FN => "f8e4m3fn", bits: 8, Float;
    F8E4M3B11FNUZ => "f8e4m3b11fnuz", bits: 8, Float;
    F8E4M3FNUZ => "f8e4m3fnuz", bits: 8, Float;
    F8E5M2 => "f8e5m2", bits: 8, Float;
    F8E5M2FNUZ => "f8e5m2fnuz", bits: 8, Float;
    F8E8M0FNU => "f8e8m0fnu", bits: 8, Float;
}

impl ElementType {
    /// True for the floating-point types (not complex).
    pub fn is_float(self) -> bool {
        self.kind() == TypeKind::Float
    }
    /// True for signed and unsigned integers (not pred).
    pub fn is_integer(self) -> bool {
        matches!(self.kind(), TypeKind::Signed | TypeKind::Unsigned)
    }
    pub fn is_signed_int(self) -> bool {
        self.kind() == TypeKind::Signed
    }
    pub fn is_unsigned_int(self) -> bool {
        self.kind() == TypeKind::Unsigned
    }
    pub fn is_complex(self) -> bool {
        self.kind() == TypeKind::Complex
    }
    pub fn is_pred(self) -> bool {
        self == ElementType::Pred
    }
    /// Float or complex: the types arithmetic such as `exp` is defined on.
    pub fn is_floating_or_complex(self) -> bool {
        self.is_float() || self.is_complex()
    }
    /// Types stored as raw bit patterns (one element per byte) because systole carries but does
    /// not compute on them yet: sub-byte integers and the small float formats.
    pub fn is_carried_only(self) -> bool {
        self.bits() < 8
            || matches!(
                self,
                ElementType::F8E3M4
                    | ElementType::F8E4M3
                    | ElementType::F8E4M3FN
                    | ElementType::F8E4M3B11FNUZ
                    | ElementType::F8E4M3FNUZ
                    | ElementType::F8E5M2
                    | ElementType::F8E5M2FNUZ
                    | ElementType::F8E8M0FNU
            )
    }
    /// Bytes one element occupies in a dense buffer (sub-byte types: one byte each).
    pub fn byte_size(self) -> usize {
        (self.bits() as usize).div_ceil(8)
    }
    /// The real type of a complex type's components (`c64` → `f32`), else itself.
    pub fn component_type(self) -> ElementType {
        match self {
            ElementType::C64 => ElementType::F32,
            ElementType::C128 => ElementType::F64,
            t => t,
        }
    }
    /// The complex type whose components are this float type (`f32` → `c64`).
    pub fn complex_of(self) -> Option<ElementType> {
        match self {
            ElementType::F32 => Some(ElementType::C64),
            ElementType::F64 => Some(ElementType::C128),
            _ => None,
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &t in ElementType::ALL {
            assert_eq!(ElementType::from_name(t.name()), Some(t));
        }
        assert_eq!(ElementType::from_name("f31"), None);
    }
}
