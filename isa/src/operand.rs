//! Operand types of the instruction table and their encoding, text form and random generation.
//!
//! Every operand type implements [`Operand`]: it packs into a bit field of the width the table
//! gives it (`to_raw` fails if the value does not fit, `from_raw` rejects invalid encodings), it
//! prints and parses its assembly text, and (for property tests) generates random valid values.

use arch::MxuDtype;

/// Context for printing operands: how branch targets are named.
#[derive(Clone, Copy, Debug, Default)]
pub struct FmtCtx {
    /// If set, targets `< code_len` print as labels `L<n>`, others as `@<n>`.
    pub labels_below: Option<u32>,
}

/// Context for parsing operands: the label table of the program being assembled.
#[derive(Clone, Debug, Default)]
pub struct ParseCtx {
    /// Label name → instruction index.
    pub labels: std::collections::BTreeMap<String, u32>,
}

/// Which element types an instruction's [`DType`] operands accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TypeClass {
    /// The instruction has no element type.
    NoType,
    /// Every element type.
    Any,
    /// Integers and floats, not `pred`.
    Numeric,
    /// Floats: bf16, f16, f32, f64.
    Float,
    /// Integers: s8..s64, u8..u64.
    Int,
    /// Integers and `pred`.
    IntPred,
}

impl TypeClass {
    /// Whether `t` is accepted.
    pub fn allows(self, t: DType) -> bool {
        match self {
            TypeClass::NoType | TypeClass::Any => true,
            TypeClass::Numeric => t != DType::Pred,
            TypeClass::Float => t.is_float(),
            TypeClass::Int => t.is_int(),
            TypeClass::IntPred => t.is_int() || t == DType::Pred,
        }
    }
    /// Text for the docs.
    pub fn describe(self) -> &'static str {
        match self {
            TypeClass::NoType => "-",
            TypeClass::Any => "any",
            TypeClass::Numeric => "integer or float",
            TypeClass::Float => "float",
            TypeClass::Int => "integer",
            TypeClass::IntPred => "integer or pred",
        }
    }
}

/// An instruction operand: bit-field encoding plus text form.
pub trait Operand: Sized + Copy {
    /// Name of the operand kind in docs/isa.md.
    const KIND: &'static str;
    /// Whether the operand may be left out in text (then [`Operand::default_value`] is used).
    const OPTIONAL: bool = false;
    /// Packs into `bits` bits; `None` if the value does not fit.
    fn to_raw(self, bits: u32) -> Option<u64>;
    /// Unpacks from `bits` bits; `None` if the encoding is invalid.
    fn from_raw(raw: u64, bits: u32) -> Option<Self>;
    /// Assembly text.
    fn fmt_asm(&self, ctx: &FmtCtx) -> String;
    /// Parses assembly text; the error says what was expected.
    fn parse_asm(s: &str, ctx: &ParseCtx) -> Result<Self, String>;
    /// Value used when a keyword operand is left out (`None`: it is required).
    fn default_value() -> Option<Self> {
        None
    }
    /// The element type, for type-class checks.
    fn as_dtype(&self) -> Option<DType> {
        None
    }
    /// The value, if this is an optional semaphore (`wait=` / `signal=`).
    fn as_opt_sem(&self) -> Option<Option<Sem>> {
        None
    }
    /// Visits branch targets (for label resolution and relocation).
    fn visit_target(&mut self, _f: &mut dyn FnMut(&mut Target)) {}
    /// Random valid values of `bits` bits whose element types satisfy `tc`.
    #[cfg(any(test, feature = "arbitrary"))]
    fn strategy(bits: u32, tc: TypeClass) -> proptest::strategy::BoxedStrategy<Self>;
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Parses a decimal or `0x` hexadecimal integer with optional sign.
pub fn parse_int(s: &str) -> Result<i128, String> {
    let t = s.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        i128::from_str_radix(&h.replace('_', ""), 16)
    } else {
        body.replace('_', "").parse::<i128>()
    }
    .map_err(|_| format!("expected an integer, got `{t}`"))?;
    Ok(if neg { -v } else { v })
}

macro_rules! unsigned_operand {
    ($t:ty) => {
        impl Operand for $t {
            const KIND: &'static str = "uint";
            fn to_raw(self, bits: u32) -> Option<u64> {
                let v = self as u64;
                (v <= mask(bits)).then_some(v)
            }
            fn from_raw(raw: u64, _bits: u32) -> Option<Self> {
                <$t>::try_from(raw).ok()
            }
            fn fmt_asm(&self, _: &FmtCtx) -> String {
                self.to_string()
            }
            fn parse_asm(s: &str, _: &ParseCtx) -> Result<Self, String> {
                let v = parse_int(s)?;
                <$t>::try_from(v).map_err(|_| format!("`{s}` is out of range"))
            }
            #[cfg(any(test, feature = "arbitrary"))]
            fn strategy(bits: u32, _: TypeClass) -> proptest::strategy::BoxedStrategy<Self> {
                use proptest::prelude::*;
                (0..=mask(bits).min(<$t>::MAX as u64))
                    .prop_map(|v| v as $t)
                    .boxed()
            }
        }
    };
}
unsigned_operand!(u32);
unsigned_operand!(u64);

macro_rules! signed_operand {
    ($t:ty) => {
        impl Operand for $t {
            const KIND: &'static str = "int";
            fn to_raw(self, bits: u32) -> Option<u64> {
                let v = self as i64;
                let lo = if bits >= 64 {
                    i64::MIN
                } else {
                    -(1i64 << (bits - 1))
                };
                let hi = if bits >= 64 {
                    i64::MAX
                } else {
                    (1i64 << (bits - 1)) - 1
                };
                (lo..=hi).contains(&v).then_some(v as u64 & mask(bits))
            }
            fn from_raw(raw: u64, bits: u32) -> Option<Self> {
                let shift = 64 - bits;
                let v = ((raw << shift) as i64) >> shift;
                <$t>::try_from(v).ok()
            }
            fn fmt_asm(&self, _: &FmtCtx) -> String {
                self.to_string()
            }
            fn parse_asm(s: &str, _: &ParseCtx) -> Result<Self, String> {
                let v = parse_int(s)?;
                <$t>::try_from(v).map_err(|_| format!("`{s}` is out of range"))
            }
            #[cfg(any(test, feature = "arbitrary"))]
            fn strategy(bits: u32, _: TypeClass) -> proptest::strategy::BoxedStrategy<Self> {
                use proptest::prelude::*;
                let lo = if bits >= 64 {
                    i64::MIN
                } else {
                    -(1i64 << (bits - 1))
                };
                let hi = if bits >= 64 {
                    i64::MAX
                } else {
                    (1i64 << (bits - 1)) - 1
                };
                (lo.max(<$t>::MIN as i64)..=hi.min(<$t>::MAX as i64))
                    .prop_map(|v| v as $t)
                    .boxed()
            }
        }
    };
}
signed_operand!(i32);
signed_operand!(i64);

impl Operand for bool {
    const KIND: &'static str = "flag";
    fn to_raw(self, _: u32) -> Option<u64> {
        Some(self as u64)
    }
    fn from_raw(raw: u64, _: u32) -> Option<Self> {
        match raw {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
    fn fmt_asm(&self, _: &FmtCtx) -> String {
        (*self as u8).to_string()
    }
    fn parse_asm(s: &str, _: &ParseCtx) -> Result<Self, String> {
        match s {
            "0" | "false" => Ok(false),
            "1" | "true" => Ok(true),
            _ => Err(format!("expected 0 or 1, got `{s}`")),
        }
    }
    #[cfg(any(test, feature = "arbitrary"))]
    fn strategy(_: u32, _: TypeClass) -> proptest::strategy::BoxedStrategy<Self> {
        use proptest::prelude::*;
        any::<bool>().boxed()
    }
}

/// A scalar register `s0`..`s31` (64-bit; `s0` reads as zero, writes to it are dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SReg(pub u8);

/// Number of scalar registers.
pub const NUM_SREGS: u8 = 32;
/// Number of semaphores.
pub const NUM_SEMS: u8 = 32;

fn parse_indexed(s: &str, prefix: &str, count: u8, what: &str) -> Result<u8, String> {
    s.strip_prefix(prefix)
        .and_then(|d| d.parse::<u8>().ok())
        .filter(|&i| i < count)
        .ok_or_else(|| {
            format!(
                "expected {what} {prefix}0..{prefix}{}, got `{s}`",
                count - 1
            )
        })
}

impl Operand for SReg {
    const KIND: &'static str = "sreg";
    fn to_raw(self, bits: u32) -> Option<u64> {
        (self.0 < NUM_SREGS && (self.0 as u64) <= mask(bits)).then_some(self.0 as u64)
    }
    fn from_raw(raw: u64, _: u32) -> Option<Self> {
        (raw < NUM_SREGS as u64).then_some(SReg(raw as u8))
    }
    fn fmt_asm(&self, _: &FmtCtx) -> String {
        format!("s{}", self.0)
    }
    fn parse_asm(s: &str, _: &ParseCtx) -> Result<Self, String> {
        parse_indexed(s, "s", NUM_SREGS, "a scalar register").map(SReg)
    }
    #[cfg(any(test, feature = "arbitrary"))]
    fn strategy(_: u32, _: TypeClass) -> proptest::strategy::BoxedStrategy<Self> {
        use proptest::prelude::*;
        (0..NUM_SREGS).prop_map(SReg).boxed()
    }
}

/// A semaphore `sem0`..`sem31` (a 32-bit counter, initially 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sem(pub u8);

impl Operand for Sem {
    const KIND: &'static str = "sem";
    fn to_raw(self, bits: u32) -> Option<u64> {
        (self.0 < NUM_SEMS && (self.0 as u64) <= mask(bits)).then_some(self.0 as u64)
    }
    fn from_raw(raw: u64, _: u32) -> Option<Self> {
        (raw < NUM_SEMS as u64).then_some(Sem(raw as u8))
    }
    fn fmt_asm(&self, _: &FmtCtx) -> String {
        format!("sem{}", self.0)
    }
    fn parse_asm(s: &str, _: &ParseCtx) -> Result<Self, String> {
        parse_indexed(s, "sem", NUM_SEMS, "a semaphore").map(Sem)
    }
    #[cfg(any(test, feature = "arbitrary"))]
    fn strategy(_: u32, _: TypeClass) -> proptest::strategy::BoxedStrategy<Self> {
        use proptest::prelude::*;
        (0..NUM_SEMS).prop_map(Sem).boxed()
    }
}

/// An optional semaphore (the `wait=` / `signal=` operands of unit instructions): the top bit of
/// the field says present, the rest is the index. Left out in text when absent.
impl Operand for Option<Sem> {
    const KIND: &'static str = "sem?";
    const OPTIONAL: bool = true;
    fn to_raw(self, bits: u32) -> Option<u64> {
        match self {
            None => Some(0),
            Some(s) => Some((1 << (bits - 1)) | s.to_raw(bits - 1)?),
        }
    }
    fn from_raw(raw: u64, bits: u32) -> Option<Self> {
        if raw == 0 {
            Some(None)
        } else if raw >> (bits - 1) == 1 {
            Sem::from_raw(raw & mask(bits - 1), bits - 1).map(Some)
        } else {
            None
        }
    }
    fn fmt_asm(&self, ctx: &FmtCtx) -> String {
        match self {
            None => "none".into(),
            Some(s) => s.fmt_asm(ctx),
        }
    }
    fn parse_asm(s: &str, ctx: &ParseCtx) -> Result<Self, String> {
        if s == "none" {
            Ok(None)
        } else {
            Sem::parse_asm(s, ctx).map(Some)
        }
    }
    fn default_value() -> Option<Self> {
        Some(None)
    }
    fn as_opt_sem(&self) -> Option<Option<Sem>> {
        Some(*self)
    }
    #[cfg(any(test, feature = "arbitrary"))]
    fn strategy(bits: u32, tc: TypeClass) -> proptest::strategy::BoxedStrategy<Self> {
        use proptest::prelude::*;
        proptest::option::of(Sem::strategy(bits - 1, tc)).boxed()
    }
}

/// A branch target: an absolute instruction index. Text: a label, or `@N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Target(pub u32);

impl Operand for Target {
    const KIND: &'static str = "target";
    fn to_raw(self, bits: u32) -> Option<u64> {
        self.0.to_raw(bits)
    }
    fn from_raw(raw: u64, bits: u32) -> Option<Self> {
        u32::from_raw(raw, bits).map(Target)
    }
    fn fmt_asm(&self, ctx: &FmtCtx) -> String {
        match ctx.labels_below {
            Some(n) if self.0 < n => format!("L{}", self.0),
            _ => format!("@{}", self.0),
        }
    }
    fn parse_asm(s: &str, ctx: &ParseCtx) -> Result<Self, String> {
        if let Some(n) = s.strip_prefix('@') {
            let v = parse_int(n)?;
            return u32::try_from(v)
                .map(Target)
                .map_err(|_| format!("`{s}` is out of range"));
        }
        ctx.labels
            .get(s)
            .copied()
            .map(Target)
            .ok_or_else(|| format!("undefined label `{s}`"))
    }
    fn visit_target(&mut self, f: &mut dyn FnMut(&mut Target)) {
        f(self)
    }
    #[cfg(any(test, feature = "arbitrary"))]
    fn strategy(bits: u32, tc: TypeClass) -> proptest::strategy::BoxedStrategy<Self> {
        use proptest::prelude::*;
        u32::strategy(bits, tc).prop_map(Target).boxed()
    }
}

/// Splits `base+off` / `base-off` / `base` (the text inside brackets).
fn parse_base_off(inner: &str) -> Result<(SReg, i128), String> {
    let inner = inner.trim();
    let split = inner.find(['+', '-']);
    let (reg, off) = match split {
        Some(i) => (&inner[..i], parse_int(&inner[i..].replace(' ', ""))?),
        None => (inner, 0),
    };
    let reg = SReg::parse_asm(reg.trim(), &ParseCtx::default())?;
    Ok((reg, off))
}

fn fmt_base_off(base: SReg, off: i64) -> String {
    match off {
        0 => format!("s{}", base.0),
        o if o < 0 => format!("s{}-{}", base.0, -(o as i128)),
        o => format!("s{}+{}", base.0, o),
    }
}

macro_rules! reg_offset_operand {
    ($(#[$m:meta])* $name:ident, $prefix:literal, $kind:literal) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct $name {
            /// Base register.
            pub base: SReg,
            /// Signed offset added to the base register's value.
            pub off: i32,
        }
        impl Operand for $name {
            const KIND: &'static str = $kind;
            fn to_raw(self, bits: u32) -> Option<u64> {
                Some(self.base.to_raw(5)? | (self.off.to_raw(bits - 5)? << 5))
            }
            fn from_raw(raw: u64, bits: u32) -> Option<Self> {
                Some($name {
                    base: SReg::from_raw(raw & 31, 5)?,
                    off: i32::from_raw(raw >> 5, bits - 5)?,
                })
            }
            fn fmt_asm(&self, _: &FmtCtx) -> String {
                format!("{}[{}]", $prefix, fmt_base_off(self.base, self.off as i64))
            }
            fn parse_asm(s: &str, _: &ParseCtx) -> Result<Self, String> {
                let inner = s
                    .strip_prefix(concat!($prefix, "["))
                    .and_then(|r| r.strip_suffix(']'))
                    .ok_or_else(|| {
                        format!(concat!("expected ", $prefix, "[sN+OFFSET], got `{}`"), s)
                    })?;
                let (base, off) = parse_base_off(inner)?;
                let off = i32::try_from(off).map_err(|_| format!("offset in `{s}` is out of range"))?;
                Ok($name { base, off })
            }
            #[cfg(any(test, feature = "arbitrary"))]
            fn strategy(bits: u32, tc: TypeClass) -> proptest::strategy::BoxedStrategy<Self> {
                use proptest::prelude::*;
                (SReg::strategy(5, tc), i32::strategy(bits - 5, tc))
                    .prop_map(|(base, off)| $name { base, off })
                    .boxed()
            }
        }
    };
}

reg_offset_operand!(
    /// A VMEM byte address: scalar register + signed offset. Text `[s1+64]`.
    VAddr, "", "vaddr"
);
reg_offset_operand!(
    /// An accumulator row address: scalar register + signed offset. Text `acc[s2+8]`.
    AccAddr, "acc", "accaddr"
);

/// A byte address in a memory space: space, scalar register and signed offset.
/// Text `hbm[s1+4096]`, `vmem[s2]`. Encoding: space (2 bits), register (5), offset (rest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MemRef {
    /// Memory space.
    pub space: Space,
    /// Base register.
    pub base: SReg,
    /// Signed offset added to the base register's value.
    pub off: i64,
}

impl Operand for MemRef {
    const KIND: &'static str = "memref";
    fn to_raw(self, bits: u32) -> Option<u64> {
        Some(
            self.space.to_raw(2)? | (self.base.to_raw(5)? << 2) | (self.off.to_raw(bits - 7)? << 7),
        )
    }
    fn from_raw(raw: u64, bits: u32) -> Option<Self> {
        Some(MemRef {
            space: Space::from_raw(raw & 3, 2)?,
            base: SReg::from_raw((raw >> 2) & 31, 5)?,
            off: i64::from_raw(raw >> 7, bits - 7)?,
        })
    }
    fn fmt_asm(&self, _: &FmtCtx) -> String {
        format!(
            "{}[{}]",
            self.space.name(),
            fmt_base_off(self.base, self.off)
        )
    }
    fn parse_asm(s: &str, _: &ParseCtx) -> Result<Self, String> {
        let open = s
            .find('[')
            .filter(|_| s.ends_with(']'))
            .ok_or_else(|| format!("expected hbm[sN+OFFSET] or vmem[sN+OFFSET], got `{s}`"))?;
        let space = Space::from_name(&s[..open]).ok_or_else(|| {
            format!(
                "unknown memory space `{}` (expected hbm or vmem)",
                &s[..open]
            )
        })?;
        let (base, off) = parse_base_off(&s[open + 1..s.len() - 1])?;
        let off = i64::try_from(off).map_err(|_| format!("offset in `{s}` is out of range"))?;
        Ok(MemRef { space, base, off })
    }
    #[cfg(any(test, feature = "arbitrary"))]
    fn strategy(bits: u32, tc: TypeClass) -> proptest::strategy::BoxedStrategy<Self> {
        use proptest::prelude::*;
        (
            Space::strategy(2, tc),
            SReg::strategy(5, tc),
            i64::strategy(bits - 7, tc),
        )
            .prop_map(|(space, base, off)| MemRef { space, base, off })
            .boxed()
    }
}

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
