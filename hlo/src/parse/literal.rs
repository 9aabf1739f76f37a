//! Constant literals: `constant(1)`, `{1, 2}`, `{ {1, 2}, {3, 4} }`, complex `(1, -2)`, pred
//! `true`/`false`, tuples `({1, 2}, 3)`, empty arrays `{}`.
//!
//! The literal is read against its declared shape: nesting must follow the rank and each
//! brace level must hold exactly the dimension's number of entries. Elements are appended as
//! they are read, so memory grows with the text, never with the declared shape (a shape of
//! 10^15 elements fails on the first brace that closes early, having allocated nothing big).

use super::lexer::{Cursor, PResult, MAX_DEPTH};
use super::number::{self, Num};
use crate::literal::{ArrayData, ArrayLiteral, Literal};
use crate::shape::{ArrayShape, Shape};
use crate::types::ElementType as T;
use num_complex::{Complex32, Complex64};

/// Appends one parsed number to `data`, converting to its element type.
fn push_num(data: &mut ArrayData, num: Num) -> Result<(), String> {
    let int = |lo: i128, hi: i128, ty: &str| number::to_int(num, lo, hi, ty);
    match data {
        ArrayData::Pred(v) => v.push(int(0, 1, "pred")? == 1),
        ArrayData::S8(v) => v.push(int(i8::MIN.into(), i8::MAX.into(), "s8")? as i8),
        ArrayData::S16(v) => v.push(int(i16::MIN.into(), i16::MAX.into(), "s16")? as i16),
        ArrayData::S32(v) => v.push(int(i32::MIN.into(), i32::MAX.into(), "s32")? as i32),
        ArrayData::S64(v) => v.push(int(i64::MIN.into(), i64::MAX.into(), "s64")? as i64),
        ArrayData::U8(v) => v.push(int(0, u8::MAX.into(), "u8")? as u8),
        ArrayData::U16(v) => v.push(int(0, u16::MAX.into(), "u16")? as u16),
        ArrayData::U32(v) => v.push(int(0, u32::MAX.into(), "u32")? as u32),
        ArrayData::U64(v) => v.push(int(0, u64::MAX.into(), "u64")? as u64),
        ArrayData::F16(v) => v.push(number::to_f16(num)?),
        ArrayData::BF16(v) => v.push(number::to_bf16(num)?),
        ArrayData::F32(v) => v.push(number::to_f32(num)?),
        ArrayData::F64(v) => v.push(number::to_f64(num)?),
        ArrayData::C64(_) | ArrayData::C128(_) => {
            return Err("expected a complex value '(real, imag)'".to_string());
        }
        ArrayData::Raw(t, v) => {
            let t = *t;
            let code = match t {
                T::S2 => int(-2, 1, "s2")? as u8 & 0x3,
                T::S4 => int(-8, 7, "s4")? as u8 & 0xf,
                T::U2 => int(0, 3, "u2")? as u8,
                T::U4 => int(0, 15, "u4")? as u8,
                _ => number::to_mini(num, t)?,
            };
            v.push(code);
        }
    }
    Ok(())
}

impl<'a> Cursor<'a> {
    /// A literal of `shape`.
    pub fn literal(&mut self, shape: &Shape) -> PResult<Literal> {
        self.literal_at_depth(shape, 0)
    }

    fn literal_at_depth(&mut self, shape: &Shape, depth: usize) -> PResult<Literal> {
        if depth > MAX_DEPTH {
            let at = self.pos;
            return self.err_at(
                at,
                format!("tuple literal nested deeper than {MAX_DEPTH} levels"),
            );
        }
        match shape {
            Shape::Token => self.expected("no literal (token constants are not supported)"),
            Shape::Tuple(elems) => {
                self.expect(b'(', "'(' to start a tuple literal")?;
                let mut out = Vec::with_capacity(elems.len().min(1024));
                for (i, s) in elems.iter().enumerate() {
                    if i > 0 {
                        self.expect_with(b',', || {
                            format!("',' and tuple element {i} of {}", elems.len())
                        })?;
                    }
                    out.push(self.literal_at_depth(s, depth + 1)?);
                }
                self.expect_with(b')', || format!("')' after {} tuple elements", elems.len()))?;
                Ok(Literal::Tuple(out))
            }
            Shape::Array(a) => Ok(Literal::Array(self.array_literal(a)?)),
        }
    }

    fn array_literal(&mut self, a: &ArrayShape) -> PResult<ArrayLiteral> {
        self.skip_ws()?;
        let at = self.pos;
        if a.is_dynamic() {
            return self.err_at(at, "not supported yet: constants of dynamic shape");
        }
        if a.rank() > MAX_DEPTH {
            return self.err_at(
                at,
                format!(
                    "not supported: constant of rank {} (limit {MAX_DEPTH})",
                    a.rank()
                ),
            );
        }
        let mut data = ArrayData::zeros(a.ty, 0);
        if a.rank() == 0 {
            self.element(&mut data)?;
        } else {
            if self.peek()? != Some(b'{') {
                return self.expected(&format!("'{{' to start an array constant of shape {a}"));
            }
            self.nested(a, 0, &mut data)?;
        }
        let dims = a.udims();
        Ok(ArrayLiteral { dims, data })
    }

    /// `{ ... }` for dimension `d` (the cursor is on `{`).
    fn nested(&mut self, a: &ArrayShape, d: usize, data: &mut ArrayData) -> PResult<()> {
        self.expect_with(b'{', || format!("'{{' for dimension {d}"))?;
        let want = a.dims[d];
        let mut seen: i64 = 0;
        let last = d + 1 == a.rank();
        if !self.eat(b'}')? {
            loop {
                self.skip_ws()?;
                let item_at = self.pos;
                if seen >= want {
                    return self.err_at(
                        item_at,
                        format!("too many entries in dimension {d} of {a}: expected {want}"),
                    );
                }
                if self.src[self.pos..].starts_with(b"...") {
                    return self.err_at(item_at, "not supported yet: elided constant values '...' (print the module with large constants)");
                }
                if last {
                    self.element(data)?;
                } else {
                    if self.peek()? != Some(b'{') {
                        return self.expected(&format!("'{{' for dimension {} of {a}", d + 1));
                    }
                    self.nested(a, d + 1, data)?;
                }
                seen += 1;
                if self.eat(b'}')? {
                    break;
                }
                self.expect(b',', "',' or '}' in array constant")?;
            }
        }
        if seen != want {
            let at = self.pos - 1;
            return self.err_at(
                at,
                format!("expected {want} entries in dimension {d} of {a}, found {seen}"),
            );
        }
        Ok(())
    }

    /// One element (complex types: `(re, im)`).
    fn element(&mut self, data: &mut ArrayData) -> PResult<()> {
        match data {
            ArrayData::C64(v) => {
                let (re, im) = self.complex_parts(number::to_f32)?;
                v.push(Complex32::new(re, im));
            }
            ArrayData::C128(v) => {
                let (re, im) = self.complex_parts(number::to_f64)?;
                v.push(Complex64::new(re, im));
            }
            _ => {
                let (at, num) = self.num("a number")?;
                if let Err(m) = push_num(data, num) {
                    return self.err_at(at, m);
                }
            }
        }
        Ok(())
    }

    fn complex_parts<F: Copy>(&mut self, conv: fn(Num) -> Result<F, String>) -> PResult<(F, F)> {
        self.expect(b'(', "'(' to start a complex value (real, imag)")?;
        let (at, re) = self.num("the real part")?;
        let re = conv(re).or_else(|m| self.err_at(at, m))?;
        self.expect(b',', "',' between real and imaginary parts")?;
        let (at, im) = self.num("the imaginary part")?;
        let im = conv(im).or_else(|m| self.err_at(at, m))?;
        self.expect(b')', "')' after the imaginary part")?;
        Ok((re, im))
    }
}

/// Parses a literal of `shape` from text in HLO constant syntax (what goes inside
/// `constant(...)`), e.g. `parse_literal_text("{1, 2}", &f32[2])`.
pub fn parse_literal_text(text: &str, shape: &Shape) -> Result<Literal, crate::Error> {
    let mut c = Cursor::new(text);
    let r = c.literal(shape).and_then(|l| {
        if c.at_end()? {
            Ok(l)
        } else {
            c.expected("end of literal")
        }
    });
    r.map_err(|e| crate::Error::Parse(c.diagnostic(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::shape::parse_shape;

    fn lit(text: &str, shape: &str) -> Result<Literal, String> {
        parse_literal_text(text, &parse_shape(shape).unwrap()).map_err(|e| e.to_string())
    }

    #[test]
    fn arrays_scalars_tuples() {
        let l = lit("{ {1, 2}, {3, 4} }", "s32[2,2]").unwrap();
        assert_eq!(
            l,
            Literal::array(vec![2, 2], ArrayData::S32(vec![1, 2, 3, 4]))
        );
        assert_eq!(lit("true", "pred[]").unwrap(), Literal::scalar_pred(true));
        assert_eq!(
            lit("{}", "f32[0]").unwrap(),
            Literal::array(vec![0], ArrayData::F32(vec![]))
        );
        assert_eq!(
            lit("{ {}, {} }", "f32[2,0]").unwrap(),
            Literal::array(vec![2, 0], ArrayData::F32(vec![]))
        );
        let t = lit("({1, 2}, (-nan))", "(s8[2], (f32[]))").unwrap();
        let inner = &t.as_tuple().unwrap()[1].as_tuple().unwrap()[0];
        let ArrayData::F32(v) = &inner.as_array().unwrap().data else {
            panic!()
        };
        assert_eq!(v[0].to_bits(), 0xffc00000);
        let c = lit("{(1, -2), (0.5, inf)}", "c64[2]").unwrap();
        let ArrayData::C64(v) = &c.as_array().unwrap().data else {
            panic!()
        };
        assert_eq!(v[1], Complex32::new(0.5, f32::INFINITY));
        let s4 = lit("{-8, 7}", "s4[2]").unwrap();
        assert_eq!(
            s4.as_array().unwrap().data,
            ArrayData::Raw(T::S4, vec![8, 7])
        );
    }

    #[test]
    fn count_mismatches_are_errors() {
        assert!(lit("{1, 2, 3}", "f32[2]").unwrap_err().contains("too many"));
        let e = lit("{1}", "f32[2]").unwrap_err();
        assert!(e.contains("1:3") && e.contains("expected 2 entries"), "{e}");
        assert!(lit("{1, 2}", "f32[4000000000000,8000000000000]").is_err());
        assert!(lit("1", "f32[2]").is_err());
        assert!(lit("{1, 2}", "f32[]").is_err());
        assert!(lit("300", "u8[]").unwrap_err().contains("out of range"));
        assert!(lit("1", "c64[]").is_err());
        assert!(lit("{...}", "f32[9]").unwrap_err().contains("elided"));
    }
}
