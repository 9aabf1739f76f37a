//! The HLO text parser: `HloModule` header, computations, instructions, attributes, constants.
//!
//! Grammar (what XLA's printer emits, short or long form):
//!
//! ```text
//! module      ::= 'HloModule' name (',' key '=' value)* section* computation+ section*
//! section     ::= ('FileNames' | 'FunctionNames' | 'FileLocations' | 'StackFrames') lines
//! computation ::= 'ENTRY'? name ('(' (name ':' shape),* ')' '->' shape)? '{' instruction+ '}'
//! instruction ::= 'ROOT'? name '=' shape opcode '(' operands ')' (',' key '=' value)*
//! operand     ::= shape? name            names: '%'? [A-Za-z_][A-Za-z0-9_.-]*
//! ```
//!
//! Invariants of the result: instruction names are unique in the module and computation
//! names are unique; every operand, control predecessor and computation reference is resolved
//! (operands within their computation after it is read, computations after the whole module
//! is read, so definition order is free); spans point at names. The parser never panics,
//! bounds all nesting (see [`lexer::MAX_DEPTH`]) and allocates in proportion to the text.
//! Semantic checks (arity, shapes, attribute ranges) are the verifier's job.

mod attrs;
pub(crate) mod lexer;
mod literal;
mod minifloat;
pub(crate) mod number;
mod shape;
mod values;

pub use attrs::{AttrDef, ATTRS, VERBATIM_KEYS};
pub use literal::parse_literal_text;
pub use shape::parse_shape;

use crate::attrs::Attrs;
use crate::diag::Error;
use crate::ir::{Arena, CompId, Computation, InstId, Instruction, Module, ModuleConfig};
use crate::opcode::Opcode;
use crate::shape::Shape;
use attrs::{CompSlot, InstCtx};
use lexer::{Cursor, PResult};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Parses a whole module from HLO text.
pub fn parse(text: &str) -> Result<Module, Error> {
    let mut p = Parser::new(text);
    match p.module() {
        Ok(m) => Ok(m),
        Err(e) => Err(Error::Parse(p.c.diagnostic(e))),
    }
}

/// FNV-1a: a small, deterministic hasher for name tables.
#[derive(Default)]
pub(crate) struct Fnv(u64);
impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf29ce484222325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x100000001b3);
        }
        self.0 = h;
    }
}
type NameMap<'a, V> = HashMap<&'a str, V, BuildHasherDefault<Fnv>>;

/// Section keywords of the source-location tables XLA prints with the module.
const SECTIONS: &[&str] = &["FileNames", "FunctionNames", "FileLocations", "StackFrames"];

/// An instruction's unresolved references.
struct PendingInst<'a> {
    /// Operand names with offsets and the shapes written with them (boxed: rare, and large
    /// next to the name, which matters for modules of millions of instructions).
    operands: Vec<(&'a str, usize, Option<Box<Shape>>)>,
    preds: Vec<(&'a str, usize)>,
    comp_refs: Vec<(CompSlot, Vec<(&'a str, usize)>)>,
}

/// A computation reference to resolve: computation, instruction, slot, names with offsets.
type PendingCompRef<'a> = (CompId, InstId, CompSlot, Vec<(&'a str, usize)>);

struct Parser<'a> {
    c: Cursor<'a>,
    comps: Arena<Computation>,
    comp_names: NameMap<'a, CompId>,
    inst_names: NameMap<'a, ()>,
    /// Computation references to resolve: computation, instruction, slot, names.
    comp_refs: Vec<PendingCompRef<'a>>,
    entry: Option<CompId>,
    sections: Vec<&'a str>,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Parser<'a> {
        Parser {
            c: Cursor::new(text),
            comps: Arena::new(),
            comp_names: NameMap::default(),
            inst_names: NameMap::default(),
            comp_refs: Vec::new(),
            entry: None,
            sections: Vec::new(),
        }
    }

    fn module(&mut self) -> PResult<Module> {
        if !self.c.eat_keyword("HloModule")? {
            return self.c.expected("'HloModule' at the start of the module");
        }
        let name = self.c.name("the module name")?.to_string();
        let config = self.header()?;
        loop {
            if self.c.at_end()? {
                break;
            }
            if !self.section()? {
                self.computation()?;
            }
        }
        if self.comps.is_empty() {
            return self.c.expected("a computation");
        }
        self.resolve_computations()?;
        let entry = self.entry.unwrap_or(CompId::new(self.comps.len() - 1));
        let trailer = if self.sections.is_empty() {
            None
        } else {
            Some(self.sections.join("\n\n"))
        };
        let comps = std::mem::take(&mut self.comps);
        Ok(Module {
            name,
            comps,
            entry,
            config,
            trailer,
        })
    }

    /// `, key=value` pairs after the module name.
    fn header(&mut self) -> PResult<ModuleConfig> {
        let mut cfg = ModuleConfig::default();
        let mut seen: Vec<&str> = Vec::new();
        while self.c.eat(b',')? {
            self.c.skip_ws()?;
            let at = self.c.pos;
            let key = self.c.ident("a module attribute")?;
            if seen.contains(&key) {
                return self
                    .c
                    .err_at(at, format!("module attribute '{key}' given twice"));
            }
            seen.push(key);
            self.c.expect_with(b'=', || format!("'=' after '{key}'"))?;
            match key {
                "entry_computation_layout" => {
                    self.c
                        .expect(b'{', "'{' to start the entry computation layout")?;
                    cfg.entry_computation_layout = Some(self.c.program_shape()?);
                    self.c
                        .expect(b'}', "'}' to end the entry computation layout")?;
                }
                "replica_count" => cfg.replica_count = Some(self.c.int("the replica count")?),
                "num_partitions" => {
                    cfg.num_partitions = Some(self.c.int("the number of partitions")?)
                }
                "is_scheduled" => cfg.is_scheduled = Some(self.c.boolean()?),
                _ => {
                    let v = self.c.raw_value("a module attribute value")?;
                    cfg.extra.push((key.to_string(), v.to_string()));
                }
            }
        }
        Ok(cfg)
    }

    /// A run of source-location sections, kept verbatim. Returns false if none is here.
    fn section(&mut self) -> PResult<bool> {
        self.c.skip_ws()?;
        let start = self.c.pos;
        if !SECTIONS
            .iter()
            .any(|s| self.c.eat_keyword(s).unwrap_or(false))
        {
            return Ok(false);
        }
        // Consume whole lines while they are blank, start with a digit or name a section.
        let src = self.c.src;
        let mut p = self.c.pos;
        while p < src.len() && src[p] != b'\n' {
            p += 1;
        }
        let mut end = p;
        while p < src.len() {
            let line_start = p + 1;
            let mut q = line_start;
            while q < src.len() && src[q] != b'\n' {
                q += 1;
            }
            let line = self.c.text[line_start.min(src.len())..q].trim();
            let is_section =
                line.is_empty() || line.as_bytes()[0].is_ascii_digit() || SECTIONS.contains(&line);
            if !is_section {
                break;
            }
            if !line.is_empty() {
                end = q;
            }
            p = q;
        }
        self.sections.push(self.c.text[start..end].trim_end());
        self.c.pos = end;
        Ok(true)
    }

    fn computation(&mut self) -> PResult<()> {
        let is_entry = self.c.eat_keyword("ENTRY")?;
        self.c.skip_ws()?;
        let at = self.c.pos;
        let name = self.c.name("a computation name (or 'ENTRY')")?;
        let id = CompId::new(self.comps.len());
        if self.comp_names.insert(name, id).is_some() {
            return self
                .c
                .err_at(at, format!("duplicate computation name '{name}'"));
        }
        if is_entry {
            if self.entry.is_some() {
                return self.c.err_at(at, "second ENTRY computation");
            }
            self.entry = Some(id);
        }
        let span = self.c.span_at(at);
        // Optional signature `(p: shape, ...) -> shape`; it repeats the parameters' shapes.
        if self.c.eat(b'(')? {
            if !self.c.eat(b')')? {
                loop {
                    self.c.name("a parameter name")?;
                    self.c.expect(b':', "':' after the parameter name")?;
                    self.c.shape()?;
                    if self.c.eat(b')')? {
                        break;
                    }
                    self.c.expect(b',', "',' or ')' in the parameter list")?;
                }
            }
            if !self.c.eat_str("->")? {
                return self.c.expected("'->' after the parameter list");
            }
            self.c.shape()?;
        }
        self.c.expect(b'{', "'{' to start the computation body")?;
        let mut insts: Arena<Instruction> = Arena::new();
        let mut pending: Vec<PendingInst<'a>> = Vec::new();
        let mut local: NameMap<'a, InstId> = NameMap::default();
        let mut root: Option<InstId> = None;
        while !self.c.eat(b'}')? {
            if self.c.at_end()? {
                return self.c.expected("'}' to end the computation");
            }
            let (inst, pend, is_root, name, at) = self.instruction()?;
            let h = insts.push(inst);
            if self.inst_names.insert(name, ()).is_some() {
                return self
                    .c
                    .err_at(at, format!("duplicate instruction name '{name}'"));
            }
            local.insert(name, h);
            if is_root {
                if root.is_some() {
                    return self
                        .c
                        .err_at(at, "second ROOT instruction in the computation");
                }
                root = Some(h);
            }
            pending.push(pend);
        }
        if insts.is_empty() {
            let at = self.c.pos - 1;
            return self
                .c
                .err_at(at, format!("computation '{name}' has no instructions"));
        }
        // `, execution_thread="..."` after the body.
        let save = self.c.pos;
        if self.c.eat(b',')? {
            self.c.skip_ws()?;
            let kat = self.c.pos;
            if self.c.eat_keyword("execution_thread")? {
                self.c.expect(b'=', "'='")?;
                let t = self.c.string("a thread name")?;
                if t != "main" {
                    return self
                        .c
                        .err_at(kat, format!("not supported yet: execution_thread=\"{t}\""));
                }
            } else {
                self.c.pos = save;
            }
        }
        // Resolve operands and control predecessors within this computation.
        for (i, pend) in pending.into_iter().enumerate() {
            let h = InstId::new(i);
            let mut ops = Vec::with_capacity(pend.operands.len());
            for (n, off, shape) in pend.operands {
                let Some(&o) = local.get(n) else {
                    return self.c.err_at(
                        off,
                        format!("unknown operand '{n}' in computation '{name}'"),
                    );
                };
                if let Some(s) = shape {
                    if !s.compatible(&insts[o].shape) {
                        let msg = format!(
                            "operand '{n}' is written with shape {s} but has shape {}",
                            insts[o].shape
                        );
                        return self.c.err_at(off, msg);
                    }
                }
                ops.push(o);
            }
            insts[h].operands = ops;
            for (n, off) in pend.preds {
                let Some(&o) = local.get(n) else {
                    return self.c.err_at(
                        off,
                        format!("unknown control predecessor '{n}' in computation '{name}'"),
                    );
                };
                insts[h].attrs.control_predecessors.push(o);
            }
            for (slot, names) in pend.comp_refs {
                self.comp_refs.push((id, h, slot, names));
            }
        }
        let root = root.unwrap_or(InstId::new(insts.len() - 1));
        self.comps.push(Computation {
            name: name.to_string(),
            insts,
            root,
            span,
        });
        Ok(())
    }

    #[allow(clippy::type_complexity)]
    fn instruction(&mut self) -> PResult<(Instruction, PendingInst<'a>, bool, &'a str, usize)> {
        let is_root = self.c.eat_keyword("ROOT")?;
        self.c.skip_ws()?;
        let at = self.c.pos;
        let name = self.c.name("an instruction name (or 'ROOT' or '}')")?;
        let span = self.c.span_at(at);
        self.c
            .expect_with(b'=', || format!("'=' after instruction name '{name}'"))?;
        let shape = self.c.shape()?;
        self.c.skip_ws()?;
        let op_at = self.c.pos;
        let op_name = self.c.ident("an opcode")?;
        let Some(opcode) = Opcode::from_name(op_name) else {
            return self.c.err_at(op_at, format!("unknown opcode '{op_name}'"));
        };
        let mut ctx = InstCtx::new(opcode);
        let mut operands = Vec::new();
        self.c
            .expect_with(b'(', || format!("'(' after opcode '{op_name}'"))?;
        match opcode {
            Opcode::Constant => {
                let lit = self.c.literal(&shape)?;
                ctx.attrs.literal = Some(Box::new(lit));
                self.c.expect(b')', "')' after the constant value")?;
            }
            Opcode::Parameter => {
                ctx.attrs.parameter_number = Some(self.c.uint("a parameter number")?);
                self.c.expect(b')', "')' after the parameter number")?;
            }
            _ => {
                if !self.c.eat(b')')? {
                    loop {
                        let op_shape = if self.c.at_shape()? {
                            Some(Box::new(self.c.shape()?))
                        } else {
                            None
                        };
                        self.c.skip_ws()?;
                        let oat = self.c.pos;
                        let n = self.c.name("an operand name")?;
                        operands.push((n, oat, op_shape));
                        if self.c.eat(b')')? {
                            break;
                        }
                        self.c.expect(b',', "',' or ')' in the operand list")?;
                    }
                }
            }
        }
        self.attributes(&mut ctx)?;
        ctx.finish();
        let pend = PendingInst {
            operands,
            preds: std::mem::take(&mut ctx.preds),
            comp_refs: std::mem::take(&mut ctx.comp_refs),
        };
        let inst = Instruction {
            name: name.to_string(),
            opcode,
            shape,
            operands: Vec::new(),
            attrs: ctx.attrs.into(),
            span,
        };
        Ok((inst, pend, is_root, name, at))
    }

    /// `(, key=value)*` after the operands.
    fn attributes(&mut self, ctx: &mut InstCtx<'a>) -> PResult<()> {
        let mut seen: Vec<&'a str> = Vec::new();
        while self.c.eat(b',')? {
            self.c.skip_ws()?;
            let at = self.c.pos;
            let key = self.c.ident("an attribute name")?;
            if seen.contains(&key) {
                return self.c.err_at(at, format!("attribute '{key}' given twice"));
            }
            seen.push(key);
            self.c
                .expect_with(b'=', || format!("'=' after attribute '{key}'"))?;
            if let Some(def) = attrs::lookup(key) {
                (def.parse)(&mut self.c, ctx)?;
            } else if VERBATIM_KEYS.contains(&key) {
                let v = self.c.raw_value(key)?;
                ctx.attrs.extra.push((key.to_string(), v.to_string()));
            } else {
                return self.c.err_at(at, format!("unknown attribute '{key}'"));
            }
        }
        Ok(())
    }

    /// Resolves computation references by name now that every computation is known.
    fn resolve_computations(&mut self) -> PResult<()> {
        let refs = std::mem::take(&mut self.comp_refs);
        for (cid, iid, slot, names) in refs {
            let mut ids = Vec::with_capacity(names.len());
            for (n, off) in names {
                match self.comp_names.get(n) {
                    Some(&id) => ids.push(id),
                    None => return self.c.err_at(off, format!("unknown computation '{n}'")),
                }
            }
            let a: &mut Attrs = &mut self.comps[cid].insts[iid].attrs;
            let one = ids.first().copied();
            match slot {
                CompSlot::ToApply => a.to_apply = one,
                CompSlot::Calls => a.calls = one,
                CompSlot::Condition => a.condition = one,
                CompSlot::Body => a.body = one,
                CompSlot::TrueComputation => a.true_computation = one,
                CompSlot::FalseComputation => a.false_computation = one,
                CompSlot::Select => a.select = one,
                CompSlot::Scatter => a.scatter = one,
                CompSlot::BranchComputations => a.branch_computations = Some(ids),
                CompSlot::CalledComputations => a.called_computations = Some(ids),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
