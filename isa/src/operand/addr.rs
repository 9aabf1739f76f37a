//! Address operands: `[sB+OFF]` (VMEM), `acc[sB+OFF]` (accumulator rows) and
//! `hbm[sB+OFF]` / `vmem[sB+OFF]` (memory references).

#[cfg(any(test, feature = "arbitrary"))]
use super::TypeClass;
use super::{parse_int, FmtCtx, Operand, ParseCtx, SReg, Space};

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

/// `s[base] + off` as a byte address (negative is an error).
fn resolve_base_off(regs: &[u64; 32], base: SReg, off: i64) -> Result<u64, String> {
    let a = (regs[base.0 as usize] as i64).wrapping_add(off);
    u64::try_from(a).map_err(|_| format!("negative address {a}"))
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
            fn as_vaddr(&self) -> Option<VAddr> {
                ($kind == "vaddr").then_some(VAddr {
                    base: self.base,
                    off: self.off,
                })
            }
            fn mem_space(&self) -> Option<Space> {
                ($kind == "vaddr").then_some(Space::Vmem)
            }
            fn resolve(&self, regs: &[u64; 32]) -> Option<Result<u64, String>> {
                Some(resolve_base_off(regs, self.base, self.off as i64))
            }
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
    fn mem_space(&self) -> Option<Space> {
        Some(self.space)
    }
    fn resolve(&self, regs: &[u64; 32]) -> Option<Result<u64, String>> {
        Some(resolve_base_off(regs, self.base, self.off))
    }
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
