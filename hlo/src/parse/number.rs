//! Numbers in constants: lexing (`1`, `-2.5e-3`, `inf`, `-inf`, `nan`, `-nan`, `nan(0x1)`,
//! `true`/`false`), conversion to each element type with range checks, and the inverse:
//! printing a value so that it re-parses to the same bits (shortest round-trip digits; NaN
//! payloads as `nan(0xMANTISSA)`; `-0`).
//!
//! NaN payload convention: `nan(0xP)` sets the mantissa field of the target type to `P`
//! (`P != 0`); plain `nan` is the quiet NaN whose mantissa has only its top bit set. A `-`
//! sets the sign bit.

use super::lexer::{is_ident_char, Cursor, PResult};
use super::minifloat::format_of;
use half::{bf16, f16};

/// A lexed number or boolean.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num<'a> {
    /// `-?[0-9]+`
    Int(&'a str),
    /// A decimal with a point or an exponent.
    Dec(&'a str),
    Inf {
        neg: bool,
    },
    Nan {
        neg: bool,
        payload: Option<u64>,
    },
    Bool(bool),
}

impl<'a> Cursor<'a> {
    /// Lexes one number; returns its offset too.
    pub fn num(&mut self, what: &str) -> PResult<(usize, Num<'a>)> {
        self.skip_ws()?;
        let start = self.pos;
        let s = &self.src[start..];
        let neg = s.first() == Some(&b'-');
        let body = &s[neg as usize..];
        let word_end = |n: usize| !body.get(n).is_some_and(|&b| is_ident_char(b));
        if body.starts_with(b"inf") && word_end(3) {
            self.pos = start + neg as usize + 3;
            return Ok((start, Num::Inf { neg }));
        }
        if body.starts_with(b"nan") && (word_end(3) || body.get(3) == Some(&b'(')) {
            self.pos = start + neg as usize + 3;
            let mut payload = None;
            if self.src.get(self.pos) == Some(&b'(') {
                let pstart = self.pos;
                let rest = &self.src[self.pos + 1..];
                if !(rest.starts_with(b"0x") || rest.starts_with(b"0X")) {
                    return self.err_at(pstart + 1, "expected a hexadecimal NaN payload '0x...'");
                }
                let hex_len = rest[2..]
                    .iter()
                    .take_while(|b| b.is_ascii_hexdigit())
                    .count();
                let hex = &self.text[self.pos + 3..self.pos + 3 + hex_len];
                if rest.get(2 + hex_len) != Some(&b')') || hex_len == 0 {
                    return self.err_at(pstart, "malformed NaN payload, expected 'nan(0xHEX)'");
                }
                match u64::from_str_radix(hex, 16) {
                    Ok(p) if p != 0 => payload = Some(p),
                    _ => {
                        return self
                            .err_at(pstart + 1, "NaN payload must be nonzero and fit in 64 bits")
                    }
                }
                self.pos += 3 + hex_len + 1;
            }
            return Ok((start, Num::Nan { neg, payload }));
        }
        if !neg {
            if self.eat_keyword("true")? {
                return Ok((start, Num::Bool(true)));
            }
            if self.eat_keyword("false")? {
                return Ok((start, Num::Bool(false)));
            }
        }
        let mut p = start + neg as usize;
        let digits = |p: &mut usize, src: &[u8]| {
            let s = *p;
            while src.get(*p).is_some_and(|b| b.is_ascii_digit()) {
                *p += 1;
            }
            *p - s
        };
        let mut n = digits(&mut p, self.src);
        let mut dec = false;
        if self.src.get(p) == Some(&b'.') {
            p += 1;
            n += digits(&mut p, self.src);
            dec = true;
        }
        if n == 0 {
            return self.expected(what);
        }
        if matches!(self.src.get(p), Some(b'e' | b'E')) {
            let mut q = p + 1;
            if matches!(self.src.get(q), Some(b'+' | b'-')) {
                q += 1;
            }
            if digits(&mut q, self.src) == 0 {
                return self.err_at(start, "malformed exponent in number");
            }
            p = q;
            dec = true;
        }
        if self
            .src
            .get(p)
            .is_some_and(|&b| is_ident_char(b) && b != b'-')
        {
            return self.err_at(start, format!("malformed number, expected {what}"));
        }
        self.pos = p;
        let text = &self.text[start..p];
        Ok((start, if dec { Num::Dec(text) } else { Num::Int(text) }))
    }
}

/// Integer value of `num` in `[lo, hi]`.
pub fn to_int(num: Num, lo: i128, hi: i128, ty: &str) -> Result<i128, String> {
    let v = match num {
        Num::Int(t) => t
            .parse::<i128>()
            .map_err(|_| format!("integer {t} is out of range for {ty}"))?,
        Num::Bool(b) => b as i128,
        Num::Dec(t) => return Err(format!("expected an integer for {ty}, found {t}")),
        Num::Inf { .. } | Num::Nan { .. } => return Err(format!("expected an integer for {ty}")),
    };
    if v < lo || v > hi {
        return Err(format!("value {v} is out of range for {ty} [{lo}, {hi}]"));
    }
    Ok(v)
}

/// A float type's bit layout, for NaN payloads.
struct Bits {
    man: u32,
    exp_mask: u64,
    sign: u64,
}

fn nan_bits(b: Bits, neg: bool, payload: Option<u64>) -> Result<u64, String> {
    let p = payload.unwrap_or(1 << (b.man - 1));
    if p == 0 || p >> b.man != 0 {
        return Err(format!(
            "NaN payload 0x{p:x} does not fit the {}-bit mantissa",
            b.man
        ));
    }
    Ok(if neg { b.sign } else { 0 } | b.exp_mask | p)
}

const F64_BITS: Bits = Bits {
    man: 52,
    exp_mask: 0x7ff << 52,
    sign: 1 << 63,
};
const F32_BITS: Bits = Bits {
    man: 23,
    exp_mask: 0xff << 23,
    sign: 1 << 31,
};
const F16_BITS: Bits = Bits {
    man: 10,
    exp_mask: 0x1f << 10,
    sign: 1 << 15,
};
const BF16_BITS: Bits = Bits {
    man: 7,
    exp_mask: 0xff << 7,
    sign: 1 << 15,
};

fn finite_check(text: &str, ok: bool, ty: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("value {text} is out of range for {ty}"))
    }
}

pub fn to_f64(num: Num) -> Result<f64, String> {
    match num {
        Num::Int(t) | Num::Dec(t) => {
            let v: f64 = t.parse().map_err(|_| format!("malformed number {t}"))?;
            finite_check(t, v.is_finite(), "f64")?;
            Ok(v)
        }
        Num::Bool(b) => Ok(b as u8 as f64),
        Num::Inf { neg } => Ok(if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }),
        Num::Nan { neg, payload } => Ok(f64::from_bits(nan_bits(F64_BITS, neg, payload)?)),
    }
}

pub fn to_f32(num: Num) -> Result<f32, String> {
    match num {
        Num::Int(t) | Num::Dec(t) => {
            let v: f32 = t.parse().map_err(|_| format!("malformed number {t}"))?;
            finite_check(t, v.is_finite(), "f32")?;
            Ok(v)
        }
        Num::Bool(b) => Ok(b as u8 as f32),
        Num::Inf { neg } => Ok(if neg {
            f32::NEG_INFINITY
        } else {
            f32::INFINITY
        }),
        Num::Nan { neg, payload } => Ok(f32::from_bits(nan_bits(F32_BITS, neg, payload)? as u32)),
    }
}

pub fn to_f16(num: Num) -> Result<f16, String> {
    match num {
        Num::Nan { neg, payload } => Ok(f16::from_bits(nan_bits(F16_BITS, neg, payload)? as u16)),
        Num::Int(t) | Num::Dec(t) => {
            let v = f16::from_f64(to_f64(num)?);
            finite_check(t, v.is_finite(), "f16")?;
            Ok(v)
        }
        _ => Ok(f16::from_f64(to_f64(num)?)),
    }
}

pub fn to_bf16(num: Num) -> Result<bf16, String> {
    match num {
        Num::Nan { neg, payload } => Ok(bf16::from_bits(nan_bits(BF16_BITS, neg, payload)? as u16)),
        Num::Int(t) | Num::Dec(t) => {
            let v = bf16::from_f64(to_f64(num)?);
            finite_check(t, v.is_finite(), "bf16")?;
            Ok(v)
        }
        _ => Ok(bf16::from_f64(to_f64(num)?)),
    }
}

/// Bits of a carried-only float type.
pub fn to_mini(num: Num, ty: crate::ElementType) -> Result<u8, String> {
    let f = format_of(ty).ok_or_else(|| format!("{} is not a small float type", ty.name()))?;
    match num {
        Num::Nan { neg, payload } => f.nan(neg, payload),
        _ => f
            .encode(to_f64(num)?)
            .map_err(|e| format!("{e} for {}", ty.name())),
    }
}

/// Writes `digits` (no leading zeros, at least one) times 10^(exp) with the decimal point
/// after the first digit, in positional form when that is short, else `d.ddde±x`.
fn tidy(neg: bool, digits: &str, exp: i32, out: &mut String) {
    if neg {
        out.push('-');
    }
    let n = digits.len() as i32;
    if (-5..17).contains(&exp) {
        if exp < 0 {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(digits);
        } else if exp + 1 >= n {
            out.push_str(digits);
            for _ in 0..(exp + 1 - n) {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..(exp + 1) as usize]);
            out.push('.');
            out.push_str(&digits[(exp + 1) as usize..]);
        }
    } else {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        if exp >= 0 {
            out.push('+');
        }
        out.push_str(&exp.to_string());
    }
}

/// Writes `v` (finite) with the fewest significant digits for which `same` accepts the text.
fn shortest(v: f64, same: impl Fn(&str) -> bool, out: &mut String) {
    if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    for p in 0..17 {
        let s = format!("{:.*e}", p, v);
        if same(&s) || p == 16 {
            let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
            let neg = mant.starts_with('-');
            let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
            let digits = digits.trim_end_matches('0');
            let digits = if digits.is_empty() { "0" } else { digits };
            tidy(neg, digits, exp.parse().unwrap_or(0), out);
            return;
        }
    }
}

fn write_nan(neg: bool, payload: Option<u64>, out: &mut String) {
    if neg {
        out.push('-');
    }
    out.push_str("nan");
    if let Some(p) = payload {
        out.push_str(&format!("(0x{p:x})"));
    }
}

fn write_nonfinite(bits: u64, b: Bits, inf: bool, out: &mut String) {
    let neg = bits & b.sign != 0;
    if inf {
        out.push_str(if neg { "-inf" } else { "inf" });
    } else {
        let m = bits & ((1 << b.man) - 1);
        write_nan(neg, if m == 1 << (b.man - 1) { None } else { Some(m) }, out);
    }
}

pub fn write_f64(v: f64, out: &mut String) {
    if !v.is_finite() {
        return write_nonfinite(v.to_bits(), F64_BITS, v.is_infinite(), out);
    }
    let digits = format!("{v:e}");
    let (mant, exp) = digits.split_once('e').unwrap_or((&digits, "0"));
    let neg = mant.starts_with('-');
    let d: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    if v == 0.0 {
        out.push_str(if neg { "-0" } else { "0" });
        return;
    }
    tidy(neg, d.trim_end_matches('0'), exp.parse().unwrap_or(0), out);
}

pub fn write_f32(v: f32, out: &mut String) {
    if !v.is_finite() {
        return write_nonfinite(v.to_bits() as u64, F32_BITS, v.is_infinite(), out);
    }
    if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    let digits = format!("{v:e}");
    let (mant, exp) = digits.split_once('e').unwrap_or((&digits, "0"));
    let neg = mant.starts_with('-');
    let d: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    tidy(neg, d.trim_end_matches('0'), exp.parse().unwrap_or(0), out);
}

pub fn write_f16(v: f16, out: &mut String) {
    if !v.is_finite() {
        return write_nonfinite(v.to_bits() as u64, F16_BITS, v.is_infinite(), out);
    }
    shortest(
        v.to_f64(),
        |s| to_f16(Num::Dec(s)).is_ok_and(|x| x.to_bits() == v.to_bits()),
        out,
    )
}

pub fn write_bf16(v: bf16, out: &mut String) {
    if !v.is_finite() {
        return write_nonfinite(v.to_bits() as u64, BF16_BITS, v.is_infinite(), out);
    }
    shortest(
        v.to_f64(),
        |s| to_bf16(Num::Dec(s)).is_ok_and(|x| x.to_bits() == v.to_bits()),
        out,
    )
}

/// Writes a carried-only float code of type `ty`.
pub fn write_mini(code: u8, ty: crate::ElementType, out: &mut String) {
    let Some(f) = format_of(ty) else {
        out.push_str(&code.to_string());
        return;
    };
    if f.is_nan(code) {
        let (neg, p) = f.nan_parts(code);
        return write_nan(neg, p, out);
    }
    let v = f.decode(code);
    if v.is_infinite() {
        out.push_str(if v < 0.0 { "-inf" } else { "inf" });
        return;
    }
    shortest(v, |s| to_mini(Num::Dec(s), ty) == Ok(code), out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ElementType;

    fn lex(s: &str) -> Num<'_> {
        let mut c = Cursor::new(s);
        c.num("a number").unwrap().1
    }

    #[test]
    fn lexes_all_forms() {
        assert_eq!(lex("-12"), Num::Int("-12"));
        assert_eq!(lex("1.5e-3"), Num::Dec("1.5e-3"));
        assert_eq!(lex("2e+10"), Num::Dec("2e+10"));
        assert_eq!(lex(".5"), Num::Dec(".5"));
        assert_eq!(lex("-inf"), Num::Inf { neg: true });
        assert_eq!(
            lex("-nan"),
            Num::Nan {
                neg: true,
                payload: None
            }
        );
        assert_eq!(
            lex("nan(0x7f)"),
            Num::Nan {
                neg: false,
                payload: Some(0x7f)
            }
        );
        assert_eq!(lex("true"), Num::Bool(true));
        assert!(Cursor::new("1x").num("n").is_err());
        assert!(Cursor::new("nan(12)").num("n").is_err());
    }

    fn p32(v: f32) -> String {
        let mut s = String::new();
        write_f32(v, &mut s);
        s
    }

    #[test]
    fn floats_print_short_and_round_trip() {
        assert_eq!(p32(1.0), "1");
        assert_eq!(p32(0.1), "0.1");
        assert_eq!(p32(-0.0), "-0");
        assert_eq!(p32(1e30), "1e+30");
        assert_eq!(p32(1.5e-7), "1.5e-07".replace("e-07", "e-7"));
        assert_eq!(p32(f32::NAN), "nan");
        assert_eq!(p32(-f32::NAN), "-nan");
        assert_eq!(p32(f32::from_bits(0x7f800001)), "nan(0x1)");
        assert_eq!(p32(f32::NEG_INFINITY), "-inf");
        for bits in [
            0x7f800001u32,
            0xffc00000,
            0x00000001,
            0x7f7fffff,
            0x3dcccccd,
            0x80000000,
        ] {
            let v = f32::from_bits(bits);
            let s = p32(v);
            let back = to_f32(lex(&s)).unwrap();
            assert_eq!(back.to_bits(), bits, "{s}");
        }
        for bits in [
            1u64,
            0x7ff0000000000001,
            0x3fb999999999999a,
            0x7fefffffffffffff,
        ] {
            let mut s = String::new();
            write_f64(f64::from_bits(bits), &mut s);
            assert_eq!(to_f64(lex(&s)).unwrap().to_bits(), bits, "{s}");
        }
    }

    #[test]
    fn every_half_and_bf16_round_trips() {
        for bits in 0..=u16::MAX {
            let mut s = String::new();
            write_f16(f16::from_bits(bits), &mut s);
            assert_eq!(to_f16(lex(&s)).unwrap().to_bits(), bits, "f16 {s}");
            let mut s = String::new();
            write_bf16(bf16::from_bits(bits), &mut s);
            assert_eq!(to_bf16(lex(&s)).unwrap().to_bits(), bits, "bf16 {s}");
        }
        let mut s = String::new();
        write_bf16(bf16::from_f32(0.1), &mut s);
        assert_eq!(s, "0.1");
    }

    #[test]
    fn every_small_float_round_trips() {
        for &t in ElementType::ALL {
            let Some(f) = format_of(t) else { continue };
            let n = 1u32
                << (f.exp_bits
                    + f.man_bits
                    + (f.special != super::super::minifloat::Special::E8M0) as u32);
            for c in 0..n {
                let mut s = String::new();
                write_mini(c as u8, t, &mut s);
                assert_eq!(to_mini(lex(&s), t), Ok(c as u8), "{t:?} {s}");
            }
        }
    }

    #[test]
    fn range_errors() {
        assert!(to_f32(lex("1e39")).is_err());
        assert!(to_f16(lex("70000")).is_err());
        assert!(to_int(lex("128"), -128, 127, "s8").is_err());
        assert!(to_int(lex("1.5"), -128, 127, "s8").is_err());
        assert!(to_f32(lex("nan(0x800000)")).is_err());
    }
}
