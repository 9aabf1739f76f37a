//! Operand types of the instruction table and their encoding, text form and random generation.
//!
//! Every operand type implements [`Operand`]: it packs into a bit field of the width the table
//! gives it (`to_raw` fails if the value does not fit, `from_raw` rejects invalid encodings), it
//! prints and parses its assembly text, and (for property tests) generates random valid values.

mod addr;
mod enums;

pub use addr::{AccAddr, MemRef, VAddr};
pub use enums::{CmpOp, Csr, DType, RedOp, Space};

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
    /// The value, if this is a VMEM vector address (`VAddr`).
    fn as_vaddr(&self) -> Option<VAddr> {
        None
    }
    /// The value, if this is an address-pattern operand (`pat=`).
    fn as_pat(&self) -> Option<Option<Pat>> {
        None
    }
    /// The memory space of a memory operand (`vaddr`: VMEM; `memref`: its space).
    fn mem_space(&self) -> Option<Space> {
        None
    }
    /// The value a unit reads at dispatch for this operand: a memory operand's byte address
    /// (`s[base] + off`; negative is an error), an accumulator row, or a register's value.
    fn resolve(&self, _regs: &[u64; 32]) -> Option<Result<u64, String>> {
        None
    }
    /// Visits an address-pattern operand (`pat=`).
    fn visit_pat(&mut self, _f: &mut dyn FnMut(&mut Option<Pat>)) {}
    /// Visits branch targets (for label resolution and relocation).
    fn visit_target(&mut self, _f: &mut dyn FnMut(&mut Target)) {}
    /// Visits an optional semaphore operand (`wait=` / `signal=`), for a compiler that
    /// attaches a signal to an instruction it emitted earlier.
    fn visit_opt_sem(&mut self, _f: &mut dyn FnMut(&mut Option<Sem>)) {}
    /// Random valid values of `bits` bits whose element types satisfy `tc`.
    #[cfg(any(test, feature = "arbitrary"))]
    fn strategy(bits: u32, tc: TypeClass) -> proptest::strategy::BoxedStrategy<Self>;
}

pub(crate) fn mask(bits: u32) -> u64 {
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

/// An optional flag (`name=1`), 0 when left out; left out in text when 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flag(pub bool);

impl Operand for Flag {
    const KIND: &'static str = "flag?";
    const OPTIONAL: bool = true;
    fn to_raw(self, b: u32) -> Option<u64> {
        self.0.to_raw(b)
    }
    fn from_raw(raw: u64, b: u32) -> Option<Self> {
        bool::from_raw(raw, b).map(Flag)
    }
    fn fmt_asm(&self, c: &FmtCtx) -> String {
        self.0.fmt_asm(c)
    }
    fn parse_asm(s: &str, c: &ParseCtx) -> Result<Self, String> {
        bool::parse_asm(s, c).map(Flag)
    }
    fn default_value() -> Option<Self> {
        Some(Flag(false))
    }
    #[cfg(any(test, feature = "arbitrary"))]
    fn strategy(b: u32, tc: TypeClass) -> proptest::strategy::BoxedStrategy<Self> {
        use proptest::prelude::*;
        bool::strategy(b, tc).prop_map(Flag).boxed()
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
    fn resolve(&self, regs: &[u64; 32]) -> Option<Result<u64, String>> {
        Some(Ok(regs[self.0 as usize % 32]))
    }
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
    fn visit_opt_sem(&mut self, f: &mut dyn FnMut(&mut Option<Sem>)) {
        f(self)
    }
    #[cfg(any(test, feature = "arbitrary"))]
    fn strategy(bits: u32, tc: TypeClass) -> proptest::strategy::BoxedStrategy<Self> {
        use proptest::prelude::*;
        proptest::option::of(Sem::strategy(bits - 1, tc)).boxed()
    }
}

/// An address pattern of the program's pattern table (`.pat N`), named by an instruction's
/// optional `pat=N` operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pat(pub u32);

/// The optional `pat=N` operand: field value 0 means none, `k + 1` pattern `k`. Left out in
/// text when absent.
impl Operand for Option<Pat> {
    const KIND: &'static str = "pat?";
    const OPTIONAL: bool = true;
    fn to_raw(self, bits: u32) -> Option<u64> {
        match self {
            None => Some(0),
            Some(p) => {
                let v = p.0 as u64 + 1;
                (v <= mask(bits)).then_some(v)
            }
        }
    }
    fn from_raw(raw: u64, _: u32) -> Option<Self> {
        Some(if raw == 0 {
            None
        } else {
            Some(Pat(u32::try_from(raw - 1).ok()?))
        })
    }
    fn fmt_asm(&self, _: &FmtCtx) -> String {
        match self {
            None => "none".into(),
            Some(p) => p.0.to_string(),
        }
    }
    fn parse_asm(s: &str, _: &ParseCtx) -> Result<Self, String> {
        if s == "none" {
            return Ok(None);
        }
        let v = parse_int(s)?;
        u32::try_from(v)
            .map(|v| Some(Pat(v)))
            .map_err(|_| format!("pattern index `{s}` is out of range"))
    }
    fn default_value() -> Option<Self> {
        Some(None)
    }
    fn as_pat(&self) -> Option<Option<Pat>> {
        Some(*self)
    }
    fn visit_pat(&mut self, f: &mut dyn FnMut(&mut Option<Pat>)) {
        f(self)
    }
    #[cfg(any(test, feature = "arbitrary"))]
    fn strategy(bits: u32, _: TypeClass) -> proptest::strategy::BoxedStrategy<Self> {
        use proptest::prelude::*;
        proptest::option::of((0..mask(bits) as u32).prop_map(Pat)).boxed()
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
