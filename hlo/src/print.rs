//! The HLO text printer: canonical text that [`crate::parse`] reads back to an equal module.
//!
//! Form: `HloModule name, is_scheduled=.., entry_computation_layout={..}, replica_count=..,
//! num_partitions=..` then header extras verbatim; the source-location sections (if any); then
//! each computation (arena order) separated by blank lines, `ENTRY` on the entry, two-space
//! indented instructions, `ROOT` on the root, names without `%`. Instruction attributes follow
//! the attribute table's order (`parse::ATTRS`), then `Attrs::extra` verbatim in source order.
//! Floats use the shortest digits that re-parse to the same bits; NaN payloads and `-0`
//! survive. Printing is a fixed point: `print(parse(print(m))) == print(m)`.

use crate::attrs::*;
use crate::ir::{CompId, Computation, InstId, Instruction, Module};
use crate::literal::{ArrayData, ArrayLiteral, Literal};
use crate::parse::number;
use crate::parse::ATTRS;
use crate::shape::Shape;
use crate::types::ElementType;
use std::fmt::{self, Write};

/// Prints a module as canonical HLO text.
pub fn print(m: &Module) -> String {
    let mut p = Printer {
        out: String::with_capacity(4096),
        module: Some(m),
        comp: None,
    };
    p.module(m);
    p.out
}

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print(self))
    }
}

/// Prints one instruction of `comp` (as it appears in a module, without indentation).
pub fn print_instruction(m: &Module, comp: &Computation, inst: InstId) -> String {
    let mut p = Printer {
        out: String::new(),
        module: Some(m),
        comp: Some(comp),
    };
    if let Some(i) = comp.insts.get(inst) {
        p.instruction(i, opcode_root(comp, inst));
    }
    p.out
}

fn opcode_root(comp: &Computation, inst: InstId) -> bool {
    comp.root == inst
}

/// Prints a literal in HLO constant syntax (what goes inside `constant(...)`).
pub fn print_literal(l: &Literal) -> String {
    let mut p = Printer {
        out: String::new(),
        module: None,
        comp: None,
    };
    p.literal(l);
    p.out
}

/// The printer's output buffer and naming context. Attribute print functions in the
/// attribute table write through its helpers.
pub struct Printer<'m> {
    pub out: String,
    module: Option<&'m Module>,
    comp: Option<&'m Computation>,
}

impl<'m> Printer<'m> {
    fn module(&mut self, m: &'m Module) {
        self.out.push_str("HloModule ");
        self.out.push_str(&m.name);
        let c = &m.config;
        if let Some(v) = c.is_scheduled {
            self.key("is_scheduled");
            self.boolean(v);
        }
        if let Some(l) = &c.entry_computation_layout {
            self.key("entry_computation_layout");
            self.out.push_str("{(");
            for (i, s) in l.params.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.shape(s);
            }
            self.out.push_str(")->");
            self.shape(&l.result);
            self.out.push('}');
        }
        if let Some(v) = c.replica_count {
            self.key("replica_count");
            self.int(v);
        }
        if let Some(v) = c.num_partitions {
            self.key("num_partitions");
            self.int(v);
        }
        for (k, v) in &c.extra {
            self.key(k);
            self.out.push_str(v);
        }
        self.out.push_str("\n\n");
        if let Some(t) = &m.trailer {
            self.out.push_str(t.trim_end());
            self.out.push_str("\n\n");
        }
        for (id, comp) in m.comps.iter() {
            self.computation(comp, id == m.entry);
            self.out.push('\n');
        }
    }

    fn computation(&mut self, comp: &'m Computation, is_entry: bool) {
        self.comp = Some(comp);
        if is_entry {
            self.out.push_str("ENTRY ");
        }
        push_name(&mut self.out, &comp.name);
        self.out.push_str(" {\n");
        for (h, inst) in comp.insts.iter() {
            self.out.push_str("  ");
            self.instruction(inst, h == comp.root);
            self.out.push('\n');
        }
        self.out.push_str("}\n");
    }

    fn instruction(&mut self, inst: &Instruction, is_root: bool) {
        if is_root {
            self.out.push_str("ROOT ");
        }
        push_name(&mut self.out, &inst.name);
        self.out.push_str(" = ");
        self.shape(&inst.shape);
        self.out.push(' ');
        self.out.push_str(inst.opcode.name());
        self.out.push('(');
        let a = &inst.attrs;
        if let Some(n) = a.parameter_number {
            self.int(n);
        } else if let Some(l) = &a.literal {
            self.literal(l);
        }
        for (i, &o) in inst.operands.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.inst_name(o);
        }
        self.out.push(')');
        for def in ATTRS {
            (def.print)(a, inst.opcode, self);
        }
        for (k, v) in &a.extra {
            self.key(k);
            self.out.push_str(v);
        }
    }

    // ---- helpers used by the attribute table ----

    /// Writes `, key=`.
    pub fn key(&mut self, k: &str) {
        self.out.push_str(", ");
        self.out.push_str(k);
        self.out.push('=');
    }
    pub fn word(&mut self, s: &str) {
        self.out.push_str(s);
    }
    pub fn int(&mut self, v: i64) {
        let _ = write!(self.out, "{v}");
    }
    pub fn boolean(&mut self, v: bool) {
        self.out.push_str(if v { "true" } else { "false" });
    }
    pub fn float(&mut self, v: f32) {
        number::write_f32(v, &mut self.out);
    }
    /// A double-quoted string with `"`, `\` and control characters escaped.
    pub fn string(&mut self, s: &str) {
        self.out.push('"');
        for ch in s.chars() {
            match ch {
                '"' => self.out.push_str("\\\""),
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                '\t' => self.out.push_str("\\t"),
                '\r' => self.out.push_str("\\r"),
                c if (c as u32) < 0x20 => {
                    let _ = write!(self.out, "\\x{:02x}", c as u32);
                }
                c => self.out.push(c),
            }
        }
        self.out.push('"');
    }
    /// A shape as XLA prints it: tuples mark every fifth element with `/*index=N*/`.
    pub fn shape(&mut self, s: &Shape) {
        match s {
            Shape::Tuple(t) => {
                self.out.push('(');
                for (i, e) in t.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                        if i % 5 == 0 {
                            let _ = write!(self.out, "/*index={i}*/");
                        }
                    }
                    self.shape(e);
                }
                self.out.push(')');
            }
            _ => {
                let _ = write!(self.out, "{s}");
            }
        }
    }
    pub fn i64_list(&mut self, v: &[i64]) {
        self.out.push('{');
        self.joined(v, ",");
        self.out.push('}');
    }
    fn joined(&mut self, v: &[i64], sep: &str) {
        for (i, x) in v.iter().enumerate() {
            if i > 0 {
                self.out.push_str(sep);
            }
            let _ = write!(self.out, "{x}");
        }
    }
    pub fn slice(&mut self, v: &[SliceDim]) {
        self.out.push('{');
        let strided = v.iter().any(|d| d.stride != 1);
        for (i, d) in v.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            if !strided {
                let _ = write!(self.out, "[{}:{}]", d.start, d.limit);
            } else {
                let _ = write!(self.out, "[{}:{}:{}]", d.start, d.limit, d.stride);
            }
        }
        self.out.push('}');
    }
    /// `lo_hi` per dimension joined by `x`; with `_interior` on every dimension when any
    /// dimension has interior padding (as XLA prints it).
    pub fn padding(&mut self, v: &[PadDim]) {
        let interior = v.iter().any(|d| d.interior != 0);
        for (i, d) in v.iter().enumerate() {
            if i > 0 {
                self.out.push('x');
            }
            if !interior {
                let _ = write!(self.out, "{}_{}", d.lo, d.hi);
            } else {
                let _ = write!(self.out, "{}_{}_{}", d.lo, d.hi, d.interior);
            }
        }
    }
    /// `{size=.. stride=.. pad=.. lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}`, omitting
    /// fields at their defaults.
    pub fn window(&mut self, v: &[WindowDim]) {
        self.out.push('{');
        if !v.is_empty() {
            let field = |p: &mut Self, name: &str, f: &dyn Fn(&WindowDim) -> i64, default: i64| {
                if v.iter().any(|d| f(d) != default) || name == "size" {
                    if name != "size" {
                        p.out.push(' ');
                    }
                    p.out.push_str(name);
                    p.out.push('=');
                    let vals: Vec<i64> = v.iter().map(f).collect();
                    p.joined(&vals, "x");
                }
            };
            field(self, "size", &|d| d.size, 0);
            field(self, "stride", &|d| d.stride, 1);
            if v.iter().any(|d| d.pad_lo != 0 || d.pad_hi != 0) {
                self.out.push_str(" pad=");
                let pads: Vec<PadDim> = v
                    .iter()
                    .map(|d| PadDim {
                        lo: d.pad_lo,
                        hi: d.pad_hi,
                        interior: 0,
                    })
                    .collect();
                self.padding(&pads);
            }
            field(self, "lhs_dilate", &|d| d.lhs_dilate, 1);
            field(self, "rhs_dilate", &|d| d.rhs_dilate, 1);
            field(self, "rhs_reversal", &|d| d.reversal as i64, 0);
        }
        self.out.push('}');
    }
    /// `b01f_01io->b01f`; dimension numbers that do not form valid label strings are printed
    /// with `?` in the gaps (the verifier rejects them).
    pub fn dim_labels(&mut self, d: &ConvDims) {
        let part = |a: i64, ac: char, b: i64, bc: char, sp: &[i64]| -> String {
            let n = sp.len() + 2;
            let mut s = vec!['?'; n];
            let mut put = |pos: i64, c: char| {
                if pos >= 0 && (pos as usize) < n {
                    s[pos as usize] = c;
                }
            };
            put(a, ac);
            put(b, bc);
            for (k, &pos) in sp.iter().enumerate() {
                put(pos, char::from_digit(k as u32 % 10, 10).unwrap_or('?'));
            }
            s.into_iter().collect()
        };
        let i = part(d.input_batch, 'b', d.input_feature, 'f', &d.input_spatial);
        let k = part(
            d.kernel_input_feature,
            'i',
            d.kernel_output_feature,
            'o',
            &d.kernel_spatial,
        );
        let o = part(
            d.output_batch,
            'b',
            d.output_feature,
            'f',
            &d.output_spatial,
        );
        let _ = write!(self.out, "{i}_{k}->{o}");
    }
    pub fn replica_groups(&mut self, g: &ReplicaGroups) {
        match g {
            ReplicaGroups::List(l) => self.list_list(l.iter().map(|v| v.as_slice())),
            ReplicaGroups::Iota {
                group_dims,
                reshape_dims,
                transpose,
            } => {
                self.out.push('[');
                self.joined(group_dims, ",");
                self.out.push_str("]<=[");
                self.joined(reshape_dims, ",");
                self.out.push(']');
                if let Some(t) = transpose {
                    self.out.push_str("T(");
                    self.joined(t, ",");
                    self.out.push(')');
                }
            }
            ReplicaGroups::Mesh { axes, refs } => {
                self.out.push_str("mesh[");
                for (i, (name, size)) in axes.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    let _ = write!(self.out, "'{name}'={size}");
                }
                self.out.push_str("] {");
                for (i, r) in refs.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    let name = axes.get(r.axis).map_or("?", |a| a.0.as_str());
                    let _ = write!(self.out, "'{name}'");
                    if let Some((pre, size)) = r.sub {
                        let _ = write!(self.out, ":({pre}){size}");
                    }
                }
                self.out.push('}');
            }
        }
    }
    fn list_list<'x>(&mut self, l: impl Iterator<Item = &'x [i64]>) {
        self.out.push('{');
        for (i, g) in l.enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.i64_list(g);
        }
        self.out.push('}');
    }
    pub fn pairs(&mut self, v: &[(i64, i64)]) {
        let l: Vec<[i64; 2]> = v.iter().map(|&(a, b)| [a, b]).collect();
        self.list_list(l.iter().map(|p| p.as_slice()));
    }
    pub fn precisions(&mut self, v: &[Precision]) {
        self.out.push('{');
        for (i, p) in v.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.out.push_str(p.name());
        }
        self.out.push('}');
    }
    /// The flat form XLA prints: `left_side=true, lower=true, unit_diagonal=true` (each only
    /// when true), then `transpose_a=..`.
    pub fn triangular_solve_options(&mut self, o: &TriangularSolveOptions) {
        for (name, v) in [
            ("left_side", o.left_side),
            ("lower", o.lower),
            ("unit_diagonal", o.unit_diagonal),
        ] {
            if v {
                self.key(name);
                self.boolean(true);
            }
        }
        self.key("transpose_a");
        self.out.push_str(o.transpose_a.name());
    }
    pub fn comp(&mut self, id: CompId) {
        match self.module.and_then(|m| m.comps.get(id)) {
            Some(c) => push_name(&mut self.out, &c.name),
            None => {
                let _ = write!(self.out, "<invalid computation {}>", id.index());
            }
        }
    }
    pub fn comp_list(&mut self, ids: &[CompId]) {
        self.out.push('{');
        for (i, &id) in ids.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.comp(id);
        }
        self.out.push('}');
    }
    pub fn inst_name(&mut self, id: InstId) {
        match self.comp.and_then(|c| c.insts.get(id)) {
            Some(i) => push_name(&mut self.out, &i.name),
            None => {
                let _ = write!(self.out, "<invalid instruction {}>", id.index());
            }
        }
    }
    pub fn inst_list(&mut self, ids: &[InstId]) {
        self.out.push('{');
        for (i, &id) in ids.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.inst_name(id);
        }
        self.out.push('}');
    }

    // ---- literals ----

    pub fn literal(&mut self, l: &Literal) {
        match l {
            Literal::Token => self.out.push_str("token"),
            Literal::Tuple(t) => {
                self.out.push('(');
                for (i, e) in t.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.literal(e);
                }
                self.out.push(')');
            }
            Literal::Array(a) => self.array_literal(a),
        }
    }

    fn array_literal(&mut self, a: &ArrayLiteral) {
        if a.dims.is_empty() {
            if !a.data.is_empty() {
                self.element(&a.data, 0);
            }
            return;
        }
        let count: usize = a.dims.iter().product();
        if count != a.data.len() {
            let _ = write!(
                self.out,
                "<malformed literal: {} elements for dims {:?}>",
                a.data.len(),
                a.dims
            );
            return;
        }
        let mut next = 0usize;
        self.nested(a, 0, &mut next);
    }

    fn nested(&mut self, a: &ArrayLiteral, d: usize, next: &mut usize) {
        let last = d + 1 == a.dims.len();
        self.out.push('{');
        if !last && a.dims[d] > 0 {
            self.out.push(' ');
        }
        for i in 0..a.dims[d] {
            if i > 0 {
                self.out.push_str(", ");
            }
            if last {
                self.element(&a.data, *next);
                *next += 1;
            } else {
                self.nested(a, d + 1, next);
            }
        }
        if !last && a.dims[d] > 0 {
            self.out.push(' ');
        }
        self.out.push('}');
    }

    fn element(&mut self, data: &ArrayData, i: usize) {
        let o = &mut self.out;
        match data {
            ArrayData::Pred(v) => o.push_str(if v[i] { "true" } else { "false" }),
            ArrayData::S8(v) => push_int(o, v[i]),
            ArrayData::S16(v) => push_int(o, v[i]),
            ArrayData::S32(v) => push_int(o, v[i]),
            ArrayData::S64(v) => push_int(o, v[i]),
            ArrayData::U8(v) => push_int(o, v[i]),
            ArrayData::U16(v) => push_int(o, v[i]),
            ArrayData::U32(v) => push_int(o, v[i]),
            ArrayData::U64(v) => push_int(o, v[i]),
            ArrayData::F16(v) => number::write_f16(v[i], o),
            ArrayData::BF16(v) => number::write_bf16(v[i], o),
            ArrayData::F32(v) => number::write_f32(v[i], o),
            ArrayData::F64(v) => number::write_f64(v[i], o),
            ArrayData::C64(v) => {
                o.push('(');
                number::write_f32(v[i].re, o);
                o.push_str(", ");
                number::write_f32(v[i].im, o);
                o.push(')');
            }
            ArrayData::C128(v) => {
                o.push('(');
                number::write_f64(v[i].re, o);
                o.push_str(", ");
                number::write_f64(v[i].im, o);
                o.push(')');
            }
            ArrayData::Raw(t, v) => {
                let b = v[i];
                match t {
                    ElementType::S2 => push_int(o, ((b << 6) as i8) >> 6),
                    ElementType::S4 => push_int(o, ((b << 4) as i8) >> 4),
                    ElementType::U2 | ElementType::U4 => push_int(o, b),
                    t => number::write_mini(b, *t, o),
                }
            }
        }
    }
}

fn push_int(o: &mut String, v: impl fmt::Display) {
    let _ = write!(o, "{v}");
}

/// A computation or instruction name: bare when it starts like an identifier, else with the
/// `%` prefix the parser needs to read it back (names such as `.4` or `4x` that only `%` allows).
fn push_name(out: &mut String, name: &str) {
    if !name
        .as_bytes()
        .first()
        .is_some_and(|&b| crate::parse::lexer::is_ident_start(b))
    {
        out.push('%');
    }
    out.push_str(name);
}
