//! Enumerated operands (element types, memory spaces, comparisons, reduction ops, machine
//! registers, MXU modes): one declaration per enum gives its codes and assembly names.

#[cfg(any(test, feature = "arbitrary"))]
use super::TypeClass;
use super::{mask, FmtCtx, Operand, ParseCtx};
use arch::MxuDtype;

/// Declares a field-less enum operand with its names and codes (one table per enum).
macro_rules! enum_operand {
    ($(#[$m:meta])* $name:ident, $kind:literal { $($(#[$vm:meta])* $v:ident = $code:literal, $text:literal;)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vm])* $v = $code,)* }
        impl $name {
            /// Every value, in code order.
            pub const ALL: &'static [$name] = &[$($name::$v,)*];
            /// Assembly name.
            pub fn name(self) -> &'static str {
                match self { $($name::$v => $text,)* }
            }
            /// Value of an assembly name.
            pub fn from_name(s: &str) -> Option<Self> {
                match s { $($text => Some($name::$v),)* _ => None }
            }
        }
        impl Operand for $name {
            const KIND: &'static str = $kind;
            fn to_raw(self, bits: u32) -> Option<u64> {
                let v = self as u64;
                (v <= mask(bits)).then_some(v)
            }
            fn from_raw(raw: u64, _: u32) -> Option<Self> {
                match raw { $($code => Some($name::$v),)* _ => None }
            }
            fn fmt_asm(&self, _: &FmtCtx) -> String {
                self.name().to_string()
            }
            fn parse_asm(s: &str, _: &ParseCtx) -> Result<Self, String> {
                $name::from_name(s).ok_or_else(|| {
                    let all: Vec<&str> = $name::ALL.iter().map(|v| v.name()).collect();
                    format!("expected one of {}, got `{}`", all.join(" "), s)
                })
            }
            enum_operand!(@dtype $name);
            #[cfg(any(test, feature = "arbitrary"))]
            fn strategy(_: u32, tc: TypeClass) -> proptest::strategy::BoxedStrategy<Self> {
                use proptest::prelude::*;
                let vals: Vec<$name> = $name::ALL
                    .iter()
                    .copied()
                    .filter(|v| match v.as_dtype() {
                        Some(d) => tc.allows(d),
                        None => true,
                    })
                    .collect();
                proptest::sample::select(vals).boxed()
            }
        }
    };
    (@dtype DType) => {
        fn as_dtype(&self) -> Option<DType> { Some(*self) }
    };
    (@dtype $other:ident) => {};
}

enum_operand!(
    /// Element type of VPU and scalar memory operands (HLO's names).
    DType, "dtype" {
        /// Boolean, one byte holding 0 or 1.
        Pred = 0, "pred";
        /// Signed 8-bit integer.
        S8 = 1, "s8";
        /// Signed 16-bit integer.
        S16 = 2, "s16";
        /// Signed 32-bit integer.
        S32 = 3, "s32";
        /// Signed 64-bit integer.
        S64 = 4, "s64";
        /// Unsigned 8-bit integer.
        U8 = 5, "u8";
        /// Unsigned 16-bit integer.
        U16 = 6, "u16";
        /// Unsigned 32-bit integer.
        U32 = 7, "u32";
        /// Unsigned 64-bit integer.
        U64 = 8, "u64";
        /// bfloat16.
        Bf16 = 9, "bf16";
        /// IEEE binary16.
        F16 = 10, "f16";
        /// IEEE binary32.
        F32 = 11, "f32";
        /// IEEE binary64.
        F64 = 12, "f64";
    }
);

impl DType {
    /// Bytes of one element.
    pub fn bytes(self) -> u64 {
        match self {
            DType::Pred | DType::S8 | DType::U8 => 1,
            DType::S16 | DType::U16 | DType::Bf16 | DType::F16 => 2,
            DType::S32 | DType::U32 | DType::F32 => 4,
            DType::S64 | DType::U64 | DType::F64 => 8,
        }
    }
    /// bf16, f16, f32 or f64.
    pub fn is_float(self) -> bool {
        matches!(self, DType::Bf16 | DType::F16 | DType::F32 | DType::F64)
    }
    /// A signed or unsigned integer (not pred).
    pub fn is_int(self) -> bool {
        !self.is_float() && self != DType::Pred
    }
    /// A signed integer.
    pub fn is_signed_int(self) -> bool {
        matches!(self, DType::S8 | DType::S16 | DType::S32 | DType::S64)
    }
}

enum_operand!(
    /// Memory space of a [`MemRef`].
    Space, "space" {
        /// Off-chip memory (HBM; DDR on TPUv1).
        Hbm = 0, "hbm";
        /// On-chip vector memory of this core.
        Vmem = 1, "vmem";
    }
);

enum_operand!(
    /// Comparison of `vpu.cmp`.
    CmpOp, "cmp" {
        /// Equal.
        Eq = 0, "eq";
        /// Not equal.
        Ne = 1, "ne";
        /// Less than.
        Lt = 2, "lt";
        /// Less or equal.
        Le = 3, "le";
        /// Greater than.
        Gt = 4, "gt";
        /// Greater or equal.
        Ge = 5, "ge";
    }
);

enum_operand!(
    /// Combiner of `vpu.reduce`.
    RedOp, "redop" {
        /// Sum.
        Add = 0, "add";
        /// Product.
        Mul = 1, "mul";
        /// Minimum (floats: NaN-propagating).
        Min = 2, "min";
        /// Maximum (floats: NaN-propagating).
        Max = 3, "max";
        /// Bitwise and (integers, pred).
        And = 4, "and";
        /// Bitwise or (integers, pred).
        Or = 5, "or";
        /// Bitwise xor (integers, pred).
        Xor = 6, "xor";
    }
);

enum_operand!(
    /// Read-only machine registers of `s.csr`.
    Csr, "csr" {
        /// This chip's replica id, `0..num_replicas`.
        ReplicaId = 0, "replica_id";
        /// Number of replicas (chips) running the program.
        NumReplicas = 1, "num_replicas";
        /// This core's index on its chip, `0..num_cores`.
        CoreId = 2, "core_id";
        /// Cores per chip.
        NumCores = 3, "num_cores";
        /// This chip's coordinate along ICI dimension 0 (`ici.dims`; chip id
        /// `= x0 + d0·(x1 + d1·x2)`).
        ChipX = 4, "chip_x";
        /// Coordinate along ICI dimension 1 (0 on a ring).
        ChipY = 5, "chip_y";
        /// Coordinate along ICI dimension 2 (0 on a ring or 2-D torus).
        ChipZ = 6, "chip_z";
    }
);

/// MXU numeric mode (`int8`: i8×i8→i32; `bf16`: bf16×bf16→f32), shared with `arch`.
impl Operand for MxuDtype {
    const KIND: &'static str = "mode";
    fn to_raw(self, bits: u32) -> Option<u64> {
        let v = match self {
            MxuDtype::Int8 => 0,
            MxuDtype::Bf16 => 1,
        };
        (v <= mask(bits)).then_some(v)
    }
    fn from_raw(raw: u64, _: u32) -> Option<Self> {
        match raw {
            0 => Some(MxuDtype::Int8),
            1 => Some(MxuDtype::Bf16),
            _ => None,
        }
    }
    fn fmt_asm(&self, _: &FmtCtx) -> String {
        self.name().to_string()
    }
    fn parse_asm(s: &str, _: &ParseCtx) -> Result<Self, String> {
        match s {
            "int8" => Ok(MxuDtype::Int8),
            "bf16" => Ok(MxuDtype::Bf16),
            _ => Err(format!("expected int8 or bf16, got `{s}`")),
        }
    }
    #[cfg(any(test, feature = "arbitrary"))]
    fn strategy(_: u32, _: TypeClass) -> proptest::strategy::BoxedStrategy<Self> {
        use proptest::prelude::*;
        prop_oneof![Just(MxuDtype::Int8), Just(MxuDtype::Bf16)].boxed()
    }
}
