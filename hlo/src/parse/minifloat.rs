//! The small float formats systole carries as raw bit patterns (`f8e4m3fn`, `f8e5m2`, ...,
//! `f4e2m1fn`, `f8e8m0fnu`): decoding to `f64`, and encoding a parsed value by nearest
//! representable value (ties to even), so constants of these types parse and print bit-exactly.
//!
//! One table ([`format_of`]) gives each type's exponent/mantissa widths, bias and how it spells
//! infinities and NaNs. Encoding searches all codes (at most 256), which is obviously correct
//! and fast enough for constants.

use crate::types::ElementType;

/// How a format spells non-finite values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    /// IEEE-like: all-ones exponent is inf (mantissa 0) or NaN.
    Ieee,
    /// "FN": no infinities; only all-ones exponent and mantissa is NaN (both signs).
    Fn,
    /// "FNUZ": no infinities, no negative zero; the single NaN is the sign bit alone.
    Fnuz,
    /// No infinities and no NaNs.
    None,
    /// `f8e8m0fnu`: unsigned, no zero; all ones is NaN.
    E8M0,
}

/// A small float format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MiniFormat {
    pub exp_bits: u32,
    pub man_bits: u32,
    pub bias: i32,
    pub special: Special,
}

/// The one table of small float formats.
pub fn format_of(t: ElementType) -> Option<MiniFormat> {
    use ElementType as T;
    let f = |exp_bits, man_bits, bias, special| {
        Some(MiniFormat {
            exp_bits,
            man_bits,
            bias,
            special,
        })
    };
    match t {
        T::F8E3M4 => f(3, 4, 3, Special::Ieee),
        T::F8E4M3 => f(4, 3, 7, Special::Ieee),
        T::F8E4M3FN => f(4, 3, 7, Special::Fn),
        T::F8E4M3B11FNUZ => f(4, 3, 11, Special::Fnuz),
        T::F8E4M3FNUZ => f(4, 3, 8, Special::Fnuz),
        T::F8E5M2 => f(5, 2, 15, Special::Ieee),
        T::F8E5M2FNUZ => f(5, 2, 16, Special::Fnuz),
        T::F8E8M0FNU => f(8, 0, 127, Special::E8M0),
        T::F4E2M1FN => f(2, 1, 1, Special::None),
        _ => None,
    }
}

impl MiniFormat {
    fn signed(&self) -> bool {
        self.special != Special::E8M0
    }
    fn total_bits(&self) -> u32 {
        self.exp_bits + self.man_bits + self.signed() as u32
    }
    fn sign_bit(&self) -> u8 {
        if self.signed() {
            1 << (self.exp_bits + self.man_bits)
        } else {
            0
        }
    }
    fn exp_mask(&self) -> u8 {
        (((1u32 << self.exp_bits) - 1) << self.man_bits) as u8
    }
    fn man_mask(&self) -> u8 {
        ((1u32 << self.man_bits) - 1) as u8
    }

    /// True if `code` is a NaN.
    pub fn is_nan(&self, code: u8) -> bool {
        let (e, m) = (code & self.exp_mask(), code & self.man_mask());
        match self.special {
            Special::Ieee => e == self.exp_mask() && m != 0,
            Special::Fn => e == self.exp_mask() && m == self.man_mask(),
            Special::Fnuz => code == self.sign_bit(),
            Special::None => false,
            Special::E8M0 => code == 0xff,
        }
    }

    /// The value of `code` (NaN for NaN codes).
    pub fn decode(&self, code: u8) -> f64 {
        if self.is_nan(code) {
            return f64::NAN;
        }
        let neg = code & self.sign_bit() != 0;
        let e = ((code & self.exp_mask()) >> self.man_bits) as i32;
        let m = (code & self.man_mask()) as f64;
        let scale = (1u32 << self.man_bits) as f64;
        let mag = if self.special == Special::E8M0 {
            2f64.powi(e - self.bias)
        } else if self.special == Special::Ieee && e == (1 << self.exp_bits) - 1 {
            f64::INFINITY
        } else if e == 0 {
            m / scale * 2f64.powi(1 - self.bias)
        } else {
            (1.0 + m / scale) * 2f64.powi(e - self.bias)
        };
        if neg {
            -mag
        } else {
            mag
        }
    }

    /// The NaN code with sign `neg` and mantissa `payload` (`None`: the default NaN).
    pub fn nan(&self, neg: bool, payload: Option<u64>) -> Result<u8, String> {
        let sign = if neg { self.sign_bit() } else { 0 };
        match self.special {
            Special::Ieee => {
                let p = payload.unwrap_or(1 << (self.man_bits - 1));
                if p == 0 || p > self.man_mask() as u64 {
                    return Err(format!(
                        "NaN payload 0x{p:x} does not fit the type's mantissa"
                    ));
                }
                Ok(sign | self.exp_mask() | p as u8)
            }
            Special::Fn => match payload {
                None => Ok(sign | self.exp_mask() | self.man_mask()),
                Some(p) if p == self.man_mask() as u64 => {
                    Ok(sign | self.exp_mask() | self.man_mask())
                }
                Some(p) => Err(format!(
                    "NaN payload 0x{p:x} is not representable in this type"
                )),
            },
            Special::Fnuz if payload.is_none() => Ok(self.sign_bit()),
            Special::E8M0 if payload.is_none() => Ok(0xff),
            Special::Fnuz | Special::E8M0 => Err("this type has no NaN payloads".to_string()),
            Special::None => Err("this type has no NaN".to_string()),
        }
    }

    /// Largest finite value.
    pub fn max_finite(&self) -> f64 {
        (0..1u32 << self.total_bits())
            .map(|c| self.decode(c as u8))
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max)
    }

    /// The code nearest to `v` (ties to even codes); errors for values out of range and for
    /// infinities/NaN the format cannot hold.
    pub fn encode(&self, v: f64) -> Result<u8, String> {
        if v.is_nan() {
            return self.nan(v.is_sign_negative(), None);
        }
        if v.is_infinite() {
            if self.special == Special::Ieee {
                let sign = if v < 0.0 { self.sign_bit() } else { 0 };
                return Ok(sign | self.exp_mask());
            }
            return Err("this type has no infinity".to_string());
        }
        if v.abs() > self.max_finite() {
            return Err(format!(
                "value {v} is out of range (largest finite value {})",
                self.max_finite()
            ));
        }
        if !self.signed() && v < 0.0 {
            return Err(format!(
                "value {v} is out of range for an unsigned float type"
            ));
        }
        let mut best: Option<(u8, f64)> = None;
        for c in 0..1u32 << self.total_bits() {
            let code = c as u8;
            let d = self.decode(code);
            if !d.is_finite() {
                continue;
            }
            let dist = (d - v).abs();
            let better = match best {
                None => true,
                Some((bc, bd)) => {
                    dist < bd
                        || (dist == bd && {
                            let bsign = self.decode(bc).is_sign_negative() == v.is_sign_negative();
                            let csign = d.is_sign_negative() == v.is_sign_negative();
                            (csign && !bsign) || (csign == bsign && code & 1 == 0 && bc & 1 == 1)
                        })
                }
            };
            if better {
                best = Some((code, dist));
            }
        }
        best.map(|b| b.0)
            .ok_or_else(|| "no representable value".to_string())
    }

    /// The NaN payload to print (`None` for the default NaN) and whether to print a sign.
    pub fn nan_parts(&self, code: u8) -> (bool, Option<u64>) {
        match self.special {
            Special::Ieee => {
                let m = (code & self.man_mask()) as u64;
                let p = if m == 1 << (self.man_bits - 1) {
                    None
                } else {
                    Some(m)
                };
                (code & self.sign_bit() != 0, p)
            }
            Special::Fn => (code & self.sign_bit() != 0, None),
            _ => (false, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        let e4m3fn = format_of(ElementType::F8E4M3FN).unwrap();
        assert_eq!(e4m3fn.max_finite(), 448.0);
        assert_eq!(e4m3fn.encode(1.0).unwrap(), 0x38);
        assert!(e4m3fn.is_nan(0x7f) && e4m3fn.is_nan(0xff));
        assert!(e4m3fn.encode(f64::INFINITY).is_err());
        let e5m2 = format_of(ElementType::F8E5M2).unwrap();
        assert_eq!(e5m2.max_finite(), 57344.0);
        assert_eq!(e5m2.encode(f64::NEG_INFINITY).unwrap(), 0xfc);
        assert_eq!(e5m2.encode(-0.0).unwrap(), 0x80);
        let fnuz = format_of(ElementType::F8E4M3FNUZ).unwrap();
        assert_eq!(fnuz.encode(-0.0).unwrap(), 0x00);
        assert_eq!(fnuz.nan(false, None).unwrap(), 0x80);
        let e8m0 = format_of(ElementType::F8E8M0FNU).unwrap();
        assert_eq!(e8m0.decode(127), 1.0);
        assert_eq!(e8m0.encode(0.25).unwrap(), 125);
        let f4 = format_of(ElementType::F4E2M1FN).unwrap();
        assert_eq!(f4.max_finite(), 6.0);
        assert_eq!(f4.encode(-1.5).unwrap(), 0b1011);
    }

    #[test]
    fn every_code_round_trips() {
        for &t in ElementType::ALL {
            let Some(f) = format_of(t) else { continue };
            for c in 0..1u32 << f.total_bits() {
                let c = c as u8;
                let v = f.decode(c);
                if v.is_nan() {
                    let (neg, p) = f.nan_parts(c);
                    assert_eq!(f.nan(neg, p).unwrap(), c, "{t:?} {c:#x}");
                } else {
                    assert_eq!(f.encode(v).unwrap(), c, "{t:?} {c:#x} {v}");
                }
            }
        }
    }
}
