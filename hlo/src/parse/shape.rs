//! Shapes in HLO text: `f32[2,3]{1,0}`, `f32[<=6]`, `f32[?]`, `(s32[], token[])`, layouts with
//! verbatim tails (`{1,0:T(8,128)}`), and program shapes `(p0, p1)->r`.
//!
//! A shape never allocates in proportion to its dimension sizes: `f32[4000000000000,8]` is just
//! two integers. Tuple nesting is bounded by [`MAX_DEPTH`].

use super::lexer::{is_ident_char, Cursor, PResult, MAX_DEPTH};
use crate::shape::{ArrayShape, Layout, ProgramShape, Shape, UNBOUNDED};
use crate::types::ElementType;

impl<'a> Cursor<'a> {
    /// True if the next token starts a shape (`(`, `token[`, or an element type name and `[`).
    pub fn at_shape(&mut self) -> PResult<bool> {
        Ok(match self.peek()? {
            Some(b'(') => true,
            Some(b) if b.is_ascii_alphabetic() => {
                let rest = &self.src[self.pos..];
                let n = rest.iter().take_while(|&&c| is_ident_char(c)).count();
                rest.get(n) == Some(&b'[')
                    && (ElementType::from_name(&self.text[self.pos..self.pos + n]).is_some()
                        || &rest[..n] == b"token")
            }
            _ => false,
        })
    }

    /// Any shape.
    pub fn shape(&mut self) -> PResult<Shape> {
        self.shape_at_depth(0)
    }

    fn shape_at_depth(&mut self, depth: usize) -> PResult<Shape> {
        if depth > MAX_DEPTH {
            let at = self.pos;
            return self.err_at(
                at,
                format!("tuple shapes nested deeper than {MAX_DEPTH} levels"),
            );
        }
        if self.eat(b'(')? {
            let mut elems = Vec::new();
            if !self.eat(b')')? {
                loop {
                    elems.push(self.shape_at_depth(depth + 1)?);
                    if self.eat(b')')? {
                        break;
                    }
                    self.expect(b',', "',' or ')' in tuple shape")?;
                }
            }
            return Ok(Shape::Tuple(elems));
        }
        self.skip_ws()?;
        let at = self.pos;
        let ty_name = self.ident("a shape")?;
        if ty_name == "token" {
            self.expect(b'[', "'[' after 'token'")?;
            self.expect(b']', "']' (token shapes have no dimensions)")?;
            return Ok(Shape::Token);
        }
        let Some(ty) = ElementType::from_name(ty_name) else {
            return self.err_at(
                at,
                format!("expected a shape, found unknown element type '{ty_name}'"),
            );
        };
        Ok(Shape::Array(self.array_shape_rest(ty)?))
    }

    /// An array shape (tuples and tokens are an error).
    pub fn array_shape(&mut self) -> PResult<ArrayShape> {
        self.skip_ws()?;
        let at = self.pos;
        match self.shape()? {
            Shape::Array(a) => Ok(a),
            _ => self.err_at(at, "expected an array shape"),
        }
    }

    /// `[dims]{layout}` after the element type.
    fn array_shape_rest(&mut self, ty: ElementType) -> PResult<ArrayShape> {
        if self.src.get(self.pos) != Some(&b'[') {
            return self.expected("'[' after the element type");
        }
        self.pos += 1;
        let mut dims = Vec::new();
        let mut dynamic = Vec::new();
        if !self.eat(b']')? {
            loop {
                if self.eat_str("<=")? {
                    dims.push(self.uint("a dimension bound")?);
                    dynamic.push(true);
                } else if self.eat(b'?')? {
                    dims.push(UNBOUNDED);
                    dynamic.push(true);
                } else {
                    dims.push(self.uint("a dimension size")?);
                    dynamic.push(false);
                }
                if self.eat(b']')? {
                    break;
                }
                self.expect(b',', "',' or ']' in dimensions")?;
            }
        }
        let layout = if self.peek()? == Some(b'{') && self.layout_follows() {
            Some(self.layout()?)
        } else {
            None
        };
        Ok(ArrayShape {
            ty,
            dims,
            dynamic,
            layout,
        })
    }

    /// True if the `{` at the cursor opens a layout (digits, `:` or `}` follow), not a literal
    /// or an attribute dictionary.
    fn layout_follows(&self) -> bool {
        let rest = &self.src[self.pos + 1..];
        let first = rest.iter().find(|b| !b.is_ascii_whitespace());
        matches!(first, Some(b'0'..=b'9' | b':' | b'}'))
    }

    /// `{d0,d1,...[:tail]}`.
    pub fn layout(&mut self) -> PResult<Layout> {
        self.expect(b'{', "'{' to start a layout")?;
        let mut minor_to_major = Vec::new();
        let mut tail = None;
        if !self.eat(b'}')? {
            loop {
                if self.peek()? == Some(b':') {
                    break;
                }
                minor_to_major.push(self.uint("a layout dimension")?);
                if self.peek()? != Some(b',') {
                    break;
                }
                self.pos += 1;
            }
            if self.eat(b':')? {
                self.skip_ws()?;
                let start = self.pos;
                let mut depth = 0usize;
                loop {
                    match self.src.get(self.pos) {
                        None => return self.expected("'}' to close the layout"),
                        Some(b'(' | b'[' | b'{') => depth += 1,
                        Some(b')' | b']') => depth = depth.saturating_sub(1),
                        Some(b'}') if depth == 0 => break,
                        Some(b'}') => depth -= 1,
                        Some(b'\n') => return self.expected("'}' to close the layout"),
                        _ => {}
                    }
                    if depth > MAX_DEPTH {
                        return self.err_at(self.pos, "layout nested too deeply");
                    }
                    self.pos += 1;
                }
                tail = Some(self.text[start..self.pos].trim_end().to_string());
            }
            self.expect(b'}', "',' or '}' in layout")?;
        }
        Ok(Layout {
            minor_to_major,
            tail,
        })
    }

    /// `(shape, ...)->shape`.
    pub fn program_shape(&mut self) -> PResult<ProgramShape> {
        self.expect(b'(', "'(' to start a program shape")?;
        let mut params = Vec::new();
        if !self.eat(b')')? {
            loop {
                params.push(self.shape()?);
                if self.eat(b')')? {
                    break;
                }
                self.expect(b',', "',' or ')' in parameter shapes")?;
            }
        }
        if !self.eat_str("->")? {
            return self.expected("'->' in program shape");
        }
        let result = self.shape()?;
        Ok(ProgramShape { params, result })
    }
}

/// Parses a shape from text (the whole text must be one shape).
pub fn parse_shape(text: &str) -> Result<Shape, crate::Error> {
    let mut c = Cursor::new(text);
    let r = c.shape().and_then(|s| {
        if c.at_end()? {
            Ok(s)
        } else {
            c.expected("end of shape")
        }
    });
    r.map_err(|e| crate::Error::Parse(c.diagnostic(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(s: &str) -> Shape {
        parse_shape(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn array_shapes_and_layouts() {
        let s = sh("f32[2,3]{1,0}");
        let a = s.as_array().unwrap();
        assert_eq!(a.dims, vec![2, 3]);
        assert_eq!(a.layout.as_ref().unwrap().minor_to_major, vec![1, 0]);
        assert_eq!(sh("pred[]").to_string(), "pred[]");
        let t = sh("f32[8,128]{1,0:T(8,128)(2,1)}");
        assert_eq!(
            t.as_array()
                .unwrap()
                .layout
                .as_ref()
                .unwrap()
                .tail
                .as_deref(),
            Some("T(8,128)(2,1)")
        );
        assert_eq!(t.to_string(), "f32[8,128]{1,0:T(8,128)(2,1)}");
        assert_eq!(sh("f32[]{:S(1)}").to_string(), "f32[]{:S(1)}");
    }

    #[test]
    fn every_element_type() {
        for &t in ElementType::ALL {
            let text = format!("{}[1,2]{{1,0}}", t.name());
            assert_eq!(sh(&text).to_string(), text);
        }
    }

    #[test]
    fn dynamic_tuples_tokens() {
        let s = sh("(f32[<=6], s32[?], (token[], /*index=2*/ u8[3]{0}))");
        assert_eq!(s.to_string(), "(f32[<=6], s32[?], (token[], u8[3]{0}))");
        let a = sh("f32[<=6]");
        assert_eq!(a.as_array().unwrap().dynamic, vec![true]);
        assert_eq!(sh("s32[?]").as_array().unwrap().dims, vec![UNBOUNDED]);
    }

    #[test]
    fn absurd_sizes_do_not_allocate() {
        let s = sh("f32[4000000000000,8000000000000]");
        assert_eq!(
            s.as_array().unwrap().dims,
            vec![4_000_000_000_000, 8_000_000_000_000]
        );
    }

    #[test]
    fn deep_tuples_are_an_error_not_a_crash() {
        let text = "(".repeat(100_000);
        let e = parse_shape(&text).unwrap_err();
        assert!(e.to_string().contains("nested deeper"), "{e}");
    }

    #[test]
    fn errors() {
        let e = parse_shape("f31[2]").unwrap_err().to_string();
        assert!(
            e.contains("1:1") && e.contains("unknown element type 'f31'"),
            "{e}"
        );
        let e = parse_shape("f32[2,x]").unwrap_err().to_string();
        assert!(e.contains("1:7"), "{e}");
        let e = parse_shape("f32[-1]").unwrap_err().to_string();
        assert!(e.contains("negative"), "{e}");
    }
}
