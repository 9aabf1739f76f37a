//! The syntax of typed attribute values: integer lists `{1,2}`, slices `{[0:4:2]}`, padding
//! `0_0x1_2_1`, windows `{size=3x3 stride=2x1 pad=1_1x0_0 ...}`, convolution `dim_labels`,
//! replica groups (list and iota forms), source-target pairs, precision lists, triangular
//! solve options. Each parser here has its inverse in `crate::print`.

use super::lexer::{Cursor, PResult};
use crate::attrs::{
    ConvDims, MeshAxisRef, PadDim, Precision, ReplicaGroups, SliceDim, TransposeKind,
    TriangularSolveOptions, WindowDim,
};

impl<'a> Cursor<'a> {
    /// `{a, b, ...}` of integers (possibly empty).
    pub fn i64_list(&mut self) -> PResult<Vec<i64>> {
        self.expect(b'{', "'{' to start a list of integers")?;
        let mut v = Vec::new();
        if self.eat(b'}')? {
            return Ok(v);
        }
        loop {
            v.push(self.int("an integer")?);
            if self.eat(b'}')? {
                return Ok(v);
            }
            self.expect(b',', "',' or '}' in list of integers")?;
        }
    }

    /// `{{a,b},{c}}` (possibly empty at either level).
    pub fn i64_list_list(&mut self) -> PResult<Vec<Vec<i64>>> {
        self.expect(b'{', "'{' to start a list of lists")?;
        let mut v = Vec::new();
        if self.eat(b'}')? {
            return Ok(v);
        }
        loop {
            v.push(self.i64_list()?);
            if self.eat(b'}')? {
                return Ok(v);
            }
            self.expect(b',', "',' or '}' in list of lists")?;
        }
    }

    /// `[a,b,...]` of integers.
    fn bracket_list(&mut self) -> PResult<Vec<i64>> {
        self.expect(b'[', "'['")?;
        let mut v = Vec::new();
        if self.eat(b']')? {
            return Ok(v);
        }
        loop {
            v.push(self.int("an integer")?);
            if self.eat(b']')? {
                return Ok(v);
            }
            self.expect(b',', "',' or ']'")?;
        }
    }

    /// `{[start:limit(:stride)?], ...}`.
    pub fn slice_dims(&mut self) -> PResult<Vec<SliceDim>> {
        self.expect(b'{', "'{' to start slice dimensions")?;
        let mut v = Vec::new();
        if self.eat(b'}')? {
            return Ok(v);
        }
        loop {
            self.expect(b'[', "'[' to start a slice dimension [start:limit:stride]")?;
            let start = self.int("the slice start")?;
            self.expect(b':', "':' after the slice start")?;
            let limit = self.int("the slice limit")?;
            let stride = if self.eat(b':')? {
                self.int("the slice stride")?
            } else {
                1
            };
            self.expect(b']', "']' to end the slice dimension")?;
            v.push(SliceDim {
                start,
                limit,
                stride,
            });
            if self.eat(b'}')? {
                return Ok(v);
            }
            self.expect(b',', "',' or '}' in slice dimensions")?;
        }
    }

    /// Integers joined by `sep` with no whitespace: `3x3`, `1_2`.
    fn joined_ints(&mut self, sep: u8, what: &str) -> PResult<Vec<i64>> {
        let mut v = vec![self.int(what)?];
        while self.byte_at(0) == Some(sep)
            && self
                .byte_at(1)
                .is_some_and(|b| b.is_ascii_digit() || b == b'-')
        {
            self.pos += 1;
            v.push(self.int(what)?);
        }
        Ok(v)
    }

    /// `lo_hi[_interior]x...` (pad) or `lo_hi x ...` (window pad, `allow_interior = false`).
    pub fn padding_dims(&mut self, allow_interior: bool) -> PResult<Vec<PadDim>> {
        self.skip_ws()?;
        let mut v = Vec::new();
        loop {
            let at = self.pos;
            let parts = self.joined_ints(b'_', "a padding amount")?;
            let d = match (parts.as_slice(), allow_interior) {
                ([lo, hi], _) => PadDim {
                    lo: *lo,
                    hi: *hi,
                    interior: 0,
                },
                ([lo, hi, int], true) => PadDim {
                    lo: *lo,
                    hi: *hi,
                    interior: *int,
                },
                _ => {
                    let form = if allow_interior {
                        "low_high or low_high_interior"
                    } else {
                        "low_high"
                    };
                    return self.err_at(at, format!("expected padding of the form {form}"));
                }
            };
            v.push(d);
            if self.byte_at(0) == Some(b'x')
                && self
                    .byte_at(1)
                    .is_some_and(|b| b.is_ascii_digit() || b == b'-')
            {
                self.pos += 1;
            } else {
                return Ok(v);
            }
        }
    }

    /// `{size=.. stride=.. pad=.. lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}`.
    pub fn window(&mut self) -> PResult<Vec<WindowDim>> {
        self.expect(b'{', "'{' to start a window")?;
        let mut size: Option<Vec<i64>> = None;
        let mut fields: Vec<(&str, usize, Vec<i64>)> = Vec::new();
        let mut pad: Option<(usize, Vec<PadDim>)> = None;
        while !self.eat(b'}')? {
            self.skip_ws()?;
            let key_at = self.pos;
            let key = self.ident(
                "a window field (size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal)",
            )?;
            self.expect(b'=', "'=' after the window field")?;
            let dup = || format!("window field '{key}' given twice");
            match key {
                "size" => {
                    if size.is_some() {
                        return self.err_at(key_at, dup());
                    }
                    size = Some(self.joined_ints(b'x', "a window size")?);
                }
                "pad" => {
                    if pad.is_some() {
                        return self.err_at(key_at, dup());
                    }
                    pad = Some((key_at, self.padding_dims(false)?));
                }
                "stride" | "lhs_dilate" | "rhs_dilate" | "rhs_reversal" => {
                    if fields.iter().any(|f| f.0 == key) {
                        return self.err_at(key_at, dup());
                    }
                    let v = self.joined_ints(b'x', "a window value")?;
                    fields.push((key, key_at, v));
                }
                _ => return self.err_at(key_at, format!("unknown window field '{key}'")),
            }
            self.eat(b',')?;
        }
        let Some(size) = size else {
            if fields.is_empty() && pad.is_none() {
                return Ok(Vec::new());
            }
            let at = self.pos - 1;
            return self.err_at(at, "window has no 'size' field");
        };
        let n = size.len();
        let mut dims: Vec<WindowDim> = size.iter().map(|&s| WindowDim::of_size(s)).collect();
        if let Some((at, p)) = pad {
            if p.len() != n {
                return self.err_at(
                    at,
                    format!("window pad has {} dimensions, size has {n}", p.len()),
                );
            }
            for (d, p) in dims.iter_mut().zip(p) {
                d.pad_lo = p.lo;
                d.pad_hi = p.hi;
            }
        }
        for (key, at, v) in fields {
            if v.len() != n {
                return self.err_at(
                    at,
                    format!("window {key} has {} dimensions, size has {n}", v.len()),
                );
            }
            for (d, x) in dims.iter_mut().zip(v) {
                match key {
                    "stride" => d.stride = x,
                    "lhs_dilate" => d.lhs_dilate = x,
                    "rhs_dilate" => d.rhs_dilate = x,
                    _ => match x {
                        0 => d.reversal = false,
                        1 => d.reversal = true,
                        _ => return self.err_at(at, "rhs_reversal entries must be 0 or 1"),
                    },
                }
            }
        }
        Ok(dims)
    }

    /// `b01f_01io->b01f`.
    pub fn dim_labels(&mut self) -> PResult<ConvDims> {
        self.skip_ws()?;
        let at = self.pos;
        let len = self.src[self.pos..]
            .iter()
            .take_while(|&&b| {
                b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'>' || b == b'?'
            })
            .count();
        let text = &self.text[self.pos..self.pos + len];
        let bad =
            |m: &str| format!("malformed dim_labels '{text}': {m} (expected e.g. b01f_01io->b01f)");
        let (lhs, out) = match text.split_once("->") {
            Some(x) => x,
            None => return self.err_at(at, bad("missing '->'")),
        };
        let (inp, ker) = match lhs.split_once('_') {
            Some(x) => x,
            None => return self.err_at(at, bad("missing '_'")),
        };
        let parse = |s: &str, a: u8, b: u8| -> Result<(i64, i64, Vec<i64>), String> {
            let mut pa = None;
            let mut pb = None;
            let mut spatial: Vec<Option<i64>> = vec![None; s.len()];
            let nsp = s.len().saturating_sub(2);
            for (i, c) in s.bytes().enumerate() {
                let slot = match c {
                    c if c == a => &mut pa,
                    c if c == b => &mut pb,
                    b'0'..=b'9' if ((c - b'0') as usize) < nsp => &mut spatial[(c - b'0') as usize],
                    _ => return Err(bad(&format!("unexpected label '{}'", c as char))),
                };
                if slot.replace(i as i64).is_some() {
                    return Err(bad(&format!("label '{}' repeated", c as char)));
                }
            }
            let sp: Option<Vec<i64>> = spatial[..nsp].iter().copied().collect();
            match (pa, pb, sp) {
                (Some(x), Some(y), Some(sp)) => Ok((x, y, sp)),
                _ => Err(bad("a label is missing")),
            }
        };
        let r = (
            parse(inp, b'b', b'f'),
            parse(ker, b'i', b'o'),
            parse(out, b'b', b'f'),
        );
        let (i, k, o) = match r {
            (Ok(i), Ok(k), Ok(o)) => (i, k, o),
            (Err(m), _, _) | (_, Err(m), _) | (_, _, Err(m)) => return self.err_at(at, m),
        };
        if i.2.len() != k.2.len() || i.2.len() != o.2.len() {
            return self.err_at(
                at,
                bad("the three parts have different numbers of spatial dimensions"),
            );
        }
        self.pos += len;
        Ok(ConvDims {
            input_batch: i.0,
            input_feature: i.1,
            input_spatial: i.2,
            kernel_input_feature: k.0,
            kernel_output_feature: k.1,
            kernel_spatial: k.2,
            output_batch: o.0,
            output_feature: o.1,
            output_spatial: o.2,
        })
    }

    /// `{{0,1},{2,3}}` or `[G,S]<=[dims]` or `[G,S]<=[dims]T(perm)`.
    pub fn replica_groups(&mut self) -> PResult<ReplicaGroups> {
        if self.eat_keyword("mesh")? {
            return self.mesh_replica_groups();
        }
        if self.peek()? == Some(b'[') {
            let group_dims = self.bracket_list()?;
            if !self.eat_str("<=")? {
                return self.expected("'<=' in iota replica groups [G,S]<=[dims]");
            }
            let reshape_dims = self.bracket_list()?;
            let transpose = if self.byte_at(0) == Some(b'T') && self.byte_at(1) == Some(b'(') {
                self.pos += 2;
                let mut v = Vec::new();
                if !self.eat(b')')? {
                    loop {
                        v.push(self.int("a permutation entry")?);
                        if self.eat(b')')? {
                            break;
                        }
                        self.expect(b',', "',' or ')' in transpose permutation")?;
                    }
                }
                Some(v)
            } else {
                None
            };
            return Ok(ReplicaGroups::Iota {
                group_dims,
                reshape_dims,
                transpose,
            });
        }
        Ok(ReplicaGroups::List(self.i64_list_list()?))
    }

    /// After `mesh`: `['x'=2,'y'=4] {'y','x':(1)2}` (names quoted with `'` or bare).
    fn mesh_replica_groups(&mut self) -> PResult<ReplicaGroups> {
        self.expect(b'[', "'[' after 'mesh' in replica_groups")?;
        let mut axes: Vec<(String, i64)> = Vec::new();
        loop {
            let name = self.mesh_axis_name()?;
            if axes.iter().any(|a| a.0 == name) {
                return self.expected("a mesh axis name not listed before");
            }
            self.expect(b'=', "'=' after a mesh axis name")?;
            let size = self.uint("a mesh axis size")?;
            axes.push((name, size));
            if self.eat(b']')? {
                break;
            }
            self.expect(b',', "',' or ']' in the mesh axes")?;
        }
        self.expect(b'{', "'{' and the grouped axes after the mesh")?;
        let mut refs = Vec::new();
        loop {
            let at = self.pos;
            let name = self.mesh_axis_name()?;
            let Some(axis) = axes.iter().position(|a| a.0 == name) else {
                return self.err_at(at, format!("'{name}' is not an axis of the mesh"));
            };
            let sub = if self.eat(b':')? {
                self.expect(b'(', "'(' and a pre-size in a sub-axis 'x':(pre)size")?;
                let pre = self.uint("a sub-axis pre-size")?;
                self.expect(b')', "')' after the sub-axis pre-size")?;
                Some((pre, self.uint("a sub-axis size")?))
            } else {
                None
            };
            refs.push(MeshAxisRef { axis, sub });
            if self.eat(b'}')? {
                break;
            }
            self.expect(b',', "',' or '}' in the grouped axes")?;
        }
        Ok(ReplicaGroups::Mesh { axes, refs })
    }

    fn mesh_axis_name(&mut self) -> PResult<String> {
        if self.peek()? == Some(b'\'') {
            self.pos += 1;
            let start = self.pos;
            while self
                .src
                .get(self.pos)
                .is_some_and(|&b| b != b'\'' && b != b'\n')
            {
                self.pos += 1;
            }
            if self.src.get(self.pos) != Some(&b'\'') {
                return self.err_at(start - 1, "unterminated quoted mesh axis name");
            }
            let name = self.text[start..self.pos].to_string();
            self.pos += 1;
            return Ok(name);
        }
        Ok(self.ident("a mesh axis name")?.to_string())
    }

    /// `{{0,1},{1,0}}` pairs.
    pub fn pairs(&mut self) -> PResult<Vec<(i64, i64)>> {
        self.skip_ws()?;
        let at = self.pos;
        let ll = self.i64_list_list()?;
        let mut v = Vec::with_capacity(ll.len());
        for p in ll {
            match p.as_slice() {
                [a, b] => v.push((*a, *b)),
                _ => return self.err_at(at, "expected pairs {source,target}"),
            }
        }
        Ok(v)
    }

    /// `{default,high,highest}` (case-insensitive).
    pub fn precisions(&mut self) -> PResult<Vec<Precision>> {
        self.expect(b'{', "'{' to start the operand precisions")?;
        let mut v = Vec::new();
        if self.eat(b'}')? {
            return Ok(v);
        }
        loop {
            self.skip_ws()?;
            let at = self.pos;
            let s = self.ident("a precision (default, high, highest)")?;
            match Precision::from_name(s) {
                Some(p) => v.push(p),
                None => {
                    return self.err_at(
                        at,
                        format!("unknown precision '{s}', expected default, high or highest"),
                    )
                }
            }
            if self.eat(b'}')? {
                return Ok(v);
            }
            self.expect(b',', "',' or '}' in operand precisions")?;
        }
    }

    /// An enum spelled as an identifier, looked up by `from_name`.
    pub fn enum_ident<E>(
        &mut self,
        what: &str,
        all: &[E],
        from: fn(&str) -> Option<E>,
        name: fn(&E) -> &'static str,
    ) -> PResult<E> {
        self.skip_ws()?;
        let at = self.pos;
        let s = self.ident(what)?;
        match from(s) {
            Some(e) => Ok(e),
            None => {
                let names: Vec<&str> = all.iter().map(name).collect();
                self.err_at(
                    at,
                    format!("unknown {what} '{s}', expected one of {}", names.join(", ")),
                )
            }
        }
    }

    /// `{left_side=true lower=true unit_diagonal=false transpose_a=NO_TRANSPOSE}`.
    pub fn triangular_solve_options(&mut self) -> PResult<TriangularSolveOptions> {
        self.expect(b'{', "'{' to start triangular solve options")?;
        let mut o = TriangularSolveOptions {
            left_side: false,
            lower: false,
            unit_diagonal: false,
            transpose_a: TransposeKind::NoTranspose,
        };
        while !self.eat(b'}')? {
            self.skip_ws()?;
            let at = self.pos;
            let key = self.ident("a triangular solve option")?;
            self.expect(b'=', "'='")?;
            match key {
                "left_side" => o.left_side = self.boolean()?,
                "lower" => o.lower = self.boolean()?,
                "unit_diagonal" => o.unit_diagonal = self.boolean()?,
                "transpose_a" => o.transpose_a = self.transpose_kind()?,
                _ => return self.err_at(at, format!("unknown triangular solve option '{key}'")),
            }
            self.eat(b',')?;
        }
        Ok(o)
    }

    pub fn transpose_kind(&mut self) -> PResult<TransposeKind> {
        self.enum_ident(
            "transpose kind",
            &TransposeKind::ALL,
            TransposeKind::from_name,
            |t| t.name(),
        )
    }

    /// A float attribute (`epsilon=0.001`).
    pub fn float_attr(&mut self) -> PResult<f32> {
        let (at, n) = self.num("a number")?;
        super::number::to_f32(n).or_else(|m| self.err_at(at, m))
    }

    /// A `{name, name}` list of names with their offsets.
    pub fn name_list(&mut self, what: &str) -> PResult<Vec<(&'a str, usize)>> {
        self.expect_with(b'{', || format!("'{{' to start the {what} list"))?;
        let mut v = Vec::new();
        if self.eat(b'}')? {
            return Ok(v);
        }
        loop {
            self.skip_ws()?;
            let at = self.pos;
            v.push((self.name(what)?, at));
            if self.eat(b'}')? {
                return Ok(v);
            }
            self.expect_with(b',', || format!("',' or '}}' in the {what} list"))?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> Cursor<'_> {
        Cursor::new(s)
    }

    #[test]
    fn lists_slices_padding() {
        assert_eq!(c("{1, -2,3}").i64_list().unwrap(), vec![1, -2, 3]);
        assert_eq!(c("{}").i64_list().unwrap(), Vec::<i64>::new());
        assert_eq!(
            c("{{0,1},{}}").i64_list_list().unwrap(),
            vec![vec![0, 1], vec![]]
        );
        let s = c("{[0:4:2], [1:3]}").slice_dims().unwrap();
        assert_eq!(
            s[0],
            SliceDim {
                start: 0,
                limit: 4,
                stride: 2
            }
        );
        assert_eq!(s[1].stride, 1);
        let p = c("0_0x1_2_1x-1_0").padding_dims(true).unwrap();
        assert_eq!(
            p[1],
            PadDim {
                lo: 1,
                hi: 2,
                interior: 1
            }
        );
        assert_eq!(p[2].lo, -1);
        assert!(c("1_2_3").padding_dims(false).is_err());
    }

    #[test]
    fn windows() {
        let w =
            c("{size=3x3 stride=2x1 pad=1_1x0_2 lhs_dilate=1x2 rhs_dilate=3x1 rhs_reversal=0x1}")
                .window()
                .unwrap();
        assert_eq!(w.len(), 2);
        assert_eq!(
            w[0],
            WindowDim {
                size: 3,
                stride: 2,
                pad_lo: 1,
                pad_hi: 1,
                lhs_dilate: 1,
                rhs_dilate: 3,
                reversal: false
            }
        );
        assert_eq!(
            w[1],
            WindowDim {
                size: 3,
                stride: 1,
                pad_lo: 0,
                pad_hi: 2,
                lhs_dilate: 2,
                rhs_dilate: 1,
                reversal: true
            }
        );
        assert_eq!(c("{}").window().unwrap(), vec![]);
        let e = c("{size=3x3 stride=2}").window().unwrap_err();
        assert!(e.message.contains("stride has 1"), "{}", e.message);
        assert!(c("{size=3 bogus=1}").window().is_err());
    }

    #[test]
    fn dim_labels() {
        let d = c("b01f_01io->b01f").dim_labels().unwrap();
        assert_eq!(
            (d.input_batch, d.input_feature, d.input_spatial.clone()),
            (0, 3, vec![1, 2])
        );
        assert_eq!((d.kernel_input_feature, d.kernel_output_feature), (2, 3));
        let d = c("bf0_oi0->bf0").dim_labels().unwrap();
        assert_eq!(d.kernel_output_feature, 0);
        assert!(c("b0f_0io->bf").dim_labels().is_err());
        assert!(c("bb0_0io->b0f").dim_labels().is_err());
    }

    #[test]
    fn replica_groups_forms() {
        assert_eq!(
            c("{{0,1},{2,3}}").replica_groups().unwrap(),
            ReplicaGroups::List(vec![vec![0, 1], vec![2, 3]])
        );
        let g = c("[2,2]<=[4]").replica_groups().unwrap();
        assert_eq!(g.expand().unwrap(), vec![vec![0, 1], vec![2, 3]]);
        let g = c("[2,2]<=[2,2]T(1,0)").replica_groups().unwrap();
        assert_eq!(g.expand().unwrap(), vec![vec![0, 2], vec![1, 3]]);
        assert_eq!(c("{{0,1},{1,0}}").pairs().unwrap(), vec![(0, 1), (1, 0)]);
        assert!(c("{{0,1,2}}").pairs().is_err());
    }

    #[test]
    fn precisions_and_options() {
        assert_eq!(
            c("{default,HIGHEST}").precisions().unwrap(),
            vec![Precision::Default, Precision::Highest]
        );
        assert!(c("{medium}").precisions().is_err());
        let o = c("{left_side=true lower=true unit_diagonal=false transpose_a=ADJOINT}")
            .triangular_solve_options()
            .unwrap();
        assert!(o.left_side && o.lower && !o.unit_diagonal);
        assert_eq!(o.transpose_a, TransposeKind::Adjoint);
    }
}
