//! A small instruction builder for expander passes: adds instructions to one computation of a
//! module, inferring each result shape with [`hlo::infer_shape`] (so an expansion that builds an
//! ill-typed instruction is an internal compiler error where it is built, not later), with
//! fresh names and the span of the instruction being expanded (errors in the expansion point
//! at it).
//!
//! [`OpExpander`] is the shape of every expander (as XLA's `OpExpanderPass`): `matches` picks
//! instructions, `expand` builds their replacement, and [`run_expander`] rewrites every
//! computation of the module and points the uses at the replacement.

use super::{fresh_name, replace_uses};
use crate::error::{CResult, CompileError};
use hlo::{
    ArrayData, ArrayShape, Attrs, CompId, ComparisonDirection, Computation, ElementType, InstId,
    Instruction, Literal, Module, Opcode, Shape, Span,
};
use std::collections::HashSet;

/// Builds instructions into computation `c` of a module.
pub(crate) struct Rw<'m> {
    pub m: &'m mut Module,
    pub c: CompId,
    names: HashSet<String>,
    span: Span,
    /// Integer scalar constants built so far, by (type, bits): one instruction each (every
    /// constant is its own HBM data and DMA).
    iconsts: std::collections::HashMap<(ElementType, u64), InstId>,
}

/// Every instruction name of `m`.
pub(crate) fn module_names(m: &Module) -> HashSet<String> {
    m.comps
        .values()
        .flat_map(|c| c.insts.values().map(|i| i.name.clone()))
        .collect()
}

fn internal(what: impl Into<String>) -> CompileError {
    CompileError::Internal(what.into())
}

impl<'m> Rw<'m> {
    /// A builder for computation `c`; new instructions carry `span`.
    pub fn new(m: &'m mut Module, c: CompId, span: Span) -> Rw<'m> {
        let names = module_names(m);
        Rw::with_names(m, c, span, names)
    }

    /// [`Rw::new`] with the module's names already collected (by [`module_names`], or
    /// [`Rw::into_names`] of the builder before): collecting them is linear in the module, so
    /// an expander with many hits collects once.
    pub fn with_names(m: &'m mut Module, c: CompId, span: Span, names: HashSet<String>) -> Rw<'m> {
        Rw {
            m,
            c,
            names,
            span,
            iconsts: Default::default(),
        }
    }

    /// The names in use, for the next builder ([`Rw::with_names`]).
    pub fn into_names(self) -> HashSet<String> {
        self.names
    }

    /// Takes in the names the module gained behind this builder's back (a computation added
    /// while it was alive), so fresh names stay unique.
    pub fn rescan_names(&mut self) {
        self.names.extend(
            self.m
                .comps
                .values()
                .flat_map(|c| c.insts.values().map(|i| i.name.clone())),
        );
    }

    /// The shape of `h`.
    pub fn shape(&self, h: InstId) -> &Shape {
        &self.m.comps[self.c].insts[h].shape
    }

    /// The array shape of `h`.
    pub fn arr(&self, h: InstId) -> CResult<ArrayShape> {
        self.shape(h)
            .as_array()
            .cloned()
            .ok_or_else(|| internal("expander: an array operand expected"))
    }

    /// Adds `opcode(operands)` with `attrs`; `declared` for ops whose shape is not inferred.
    pub fn add(
        &mut self,
        opcode: Opcode,
        operands: &[InstId],
        attrs: Attrs,
        declared: Option<Shape>,
    ) -> CResult<InstId> {
        let shape = {
            let comp = &self.m.comps[self.c];
            let shapes: Vec<&Shape> = operands.iter().map(|o| &comp.insts[*o].shape).collect();
            let comps = &self.m.comps;
            let called = |c: CompId| (c.index() < comps.len()).then(|| comps[c].program_shape());
            let cx = hlo::InferCtx {
                called: &called,
                replica_count: self.m.replica_count().max(1),
                num_partitions: self.m.config.num_partitions.unwrap_or(1).max(1),
            };
            hlo::infer_shape(&cx, opcode, &shapes, &attrs, declared.as_ref())
                .map_err(|e| internal(format!("expander builds an ill-typed {opcode}: {e}")))?
        };
        let name = fresh_name(&mut self.names, opcode.name());
        Ok(self.m.comps[self.c].insts.push(Instruction {
            name,
            opcode,
            shape,
            operands: operands.to_vec(),
            attrs: attrs.into(),
            span: self.span,
        }))
    }

    /// `transpose(x)` with `dimensions = perm`.
    pub fn transpose(&mut self, x: InstId, perm: &[i64]) -> CResult<InstId> {
        let attrs = Attrs {
            dimensions: Some(perm.to_vec()),
            ..Default::default()
        };
        self.add(Opcode::Transpose, &[x], attrs, None)
    }

    /// A unary or binary elementwise op.
    pub fn op(&mut self, opcode: Opcode, operands: &[InstId]) -> CResult<InstId> {
        self.add(opcode, operands, Attrs::default(), None)
    }

    /// A constant.
    pub fn lit(&mut self, l: Literal) -> CResult<InstId> {
        let shape = l.shape();
        let attrs = Attrs {
            literal: Some(Box::new(l)),
            ..Default::default()
        };
        self.add(Opcode::Constant, &[], attrs, Some(shape))
    }

    /// A scalar constant of float type `ty` (rounded from `v`).
    pub fn fconst(&mut self, ty: ElementType, v: f64) -> CResult<InstId> {
        use ElementType as T;
        let data = match ty {
            T::F32 => ArrayData::F32(vec![v as f32]),
            T::F64 => ArrayData::F64(vec![v]),
            T::F16 => ArrayData::F16(vec![half::f16::from_f64(v)]),
            T::BF16 => ArrayData::BF16(vec![half::bf16::from_f64(v)]),
            t => return Err(internal(format!("expander: float constant of type {t}"))),
        };
        self.lit(Literal::array(vec![], data))
    }

    /// A scalar constant of integer type `ty` holding the low bits of `v`.
    pub fn iconst(&mut self, ty: ElementType, v: u64) -> CResult<InstId> {
        if let Some(&h) = self.iconsts.get(&(ty, v)) {
            return Ok(h);
        }
        let h = self.iconst_new(ty, v)?;
        self.iconsts.insert((ty, v), h);
        Ok(h)
    }

    fn iconst_new(&mut self, ty: ElementType, v: u64) -> CResult<InstId> {
        use ElementType as T;
        let data = match ty {
            T::U8 => ArrayData::U8(vec![v as u8]),
            T::U16 => ArrayData::U16(vec![v as u16]),
            T::U32 => ArrayData::U32(vec![v as u32]),
            T::U64 => ArrayData::U64(vec![v]),
            T::S8 => ArrayData::S8(vec![v as i8]),
            T::S16 => ArrayData::S16(vec![v as i16]),
            T::S32 => ArrayData::S32(vec![v as i32]),
            T::S64 => ArrayData::S64(vec![v as i64]),
            t => return Err(internal(format!("expander: integer constant of type {t}"))),
        };
        self.lit(Literal::array(vec![], data))
    }

    /// `broadcast(x)` to `dims` with `x`'s dimensions mapped to `bdims`.
    pub fn bcast(&mut self, x: InstId, dims: &[i64], bdims: &[i64]) -> CResult<InstId> {
        let ty = self.arr(x)?.ty;
        let attrs = Attrs {
            dimensions: Some(bdims.to_vec()),
            ..Default::default()
        };
        self.add(
            Opcode::Broadcast,
            &[x],
            attrs,
            Some(Shape::Array(ArrayShape::new(ty, dims))),
        )
    }

    /// A scalar `x` broadcast to `dims`.
    pub fn splat(&mut self, x: InstId, dims: &[i64]) -> CResult<InstId> {
        self.bcast(x, dims, &[])
    }

    /// `convert(x)` to `ty` (no instruction if it is already `ty`).
    pub fn convert(&mut self, x: InstId, ty: ElementType) -> CResult<InstId> {
        let a = self.arr(x)?;
        if a.ty == ty {
            return Ok(x);
        }
        self.add(
            Opcode::Convert,
            &[x],
            Attrs::default(),
            Some(Shape::Array(a.with_type(ty))),
        )
    }

    /// `bitcast-convert(x)` to `ty` (a narrower type adds a last dimension of the width
    /// ratio, a wider one removes it).
    pub fn bitcast(&mut self, x: InstId, ty: ElementType) -> CResult<InstId> {
        let a = self.arr(x)?;
        let (wi, wo) = (a.ty.bits() as i64, ty.bits() as i64);
        let mut dims = a.dims.clone();
        if wi > wo {
            dims.push(wi / wo);
        } else if wi < wo {
            dims.pop();
        }
        self.add(
            Opcode::BitcastConvert,
            &[x],
            Attrs::default(),
            Some(Shape::Array(ArrayShape::new(ty, &dims))),
        )
    }

    /// `compare(a, b), direction=dir` (the operands' natural comparison type).
    pub fn cmp(&mut self, a: InstId, b: InstId, dir: ComparisonDirection) -> CResult<InstId> {
        let attrs = Attrs {
            direction: Some(dir),
            ..Default::default()
        };
        self.add(Opcode::Compare, &[a, b], attrs, None)
    }

    /// `reshape(x)` to `dims`.
    pub fn reshape(&mut self, x: InstId, dims: &[i64]) -> CResult<InstId> {
        let ty = self.arr(x)?.ty;
        self.add(
            Opcode::Reshape,
            &[x],
            Attrs::default(),
            Some(Shape::Array(ArrayShape::new(ty, dims))),
        )
    }

    /// `slice(x)` from `start` to `limit` (stride 1) in every dimension.
    pub fn slice(&mut self, x: InstId, start: &[i64], limit: &[i64]) -> CResult<InstId> {
        let attrs = Attrs {
            slice: Some(
                start
                    .iter()
                    .zip(limit)
                    .map(|(&start, &limit)| hlo::SliceDim {
                        start,
                        limit,
                        stride: 1,
                    })
                    .collect(),
            ),
            ..Default::default()
        };
        self.add(Opcode::Slice, &[x], attrs, None)
    }

    /// `concatenate(xs)` along `dim`.
    pub fn concat(&mut self, xs: &[InstId], dim: i64) -> CResult<InstId> {
        let attrs = Attrs {
            dimensions: Some(vec![dim]),
            ..Default::default()
        };
        self.add(Opcode::Concatenate, xs, attrs, None)
    }

    /// Arrays of one shape `dims` stacked along a new dimension `at`: a `concatenate` along a
    /// new leading dimension (whole-array copies) and a `transpose` moving it to `at` (the
    /// VPU's transpose), not a concatenate of `[..., 1, ...]` pieces, whose DMA would move one
    /// element per row.
    pub fn stack(&mut self, xs: &[InstId], at: usize) -> CResult<InstId> {
        let dims = self.arr(xs[0])?.dims;
        let mut d1 = vec![1];
        d1.extend(&dims);
        let parts: Vec<InstId> = xs
            .iter()
            .map(|&x| self.reshape(x, &d1))
            .collect::<CResult<_>>()?;
        let cat = self.concat(&parts, 0)?;
        if at == 0 {
            return Ok(cat);
        }
        let mut perm: Vec<i64> = (1..=at as i64).collect();
        perm.push(0);
        perm.extend(at as i64 + 1..=dims.len() as i64);
        let attrs = Attrs {
            dimensions: Some(perm),
            ..Default::default()
        };
        self.add(Opcode::Transpose, &[cat], attrs, None)
    }

    /// `iota` of `ty[dims]` along `dim`.
    pub fn iota(&mut self, ty: ElementType, dims: &[i64], dim: i64) -> CResult<InstId> {
        let attrs = Attrs {
            iota_dimension: Some(dim),
            ..Default::default()
        };
        self.add(
            Opcode::Iota,
            &[],
            attrs,
            Some(Shape::Array(ArrayShape::new(ty, dims))),
        )
    }

    /// `reduce(x, init)` over `dims` with the scalar computation `op(a, b)`.
    pub fn reduce(&mut self, x: InstId, init: InstId, dims: &[i64], op: Opcode) -> CResult<InstId> {
        let ty = self.arr(x)?.ty;
        let f = self.reducer(ty, op);
        let attrs = Attrs {
            dimensions: Some(dims.to_vec()),
            to_apply: Some(f),
            ..Default::default()
        };
        self.add(Opcode::Reduce, &[x, init], attrs, None)
    }

    /// A computation `(a: ty[], b: ty[]) -> op(a, b)` added to the module.
    fn reducer(&mut self, ty: ElementType, op: Opcode) -> CompId {
        let taken: HashSet<&str> = self.m.comps.values().map(|c| c.name.as_str()).collect();
        let mut k = 1;
        let name = loop {
            let n = format!("{}_{}.r{k}", op.name().replace('-', "_"), ty.name());
            if !taken.contains(n.as_str()) {
                break n;
            }
            k += 1;
        };
        let mut insts = hlo::Arena::new();
        let scalar = Shape::scalar(ty);
        let param = |n: i64, names: &mut HashSet<String>| Instruction {
            name: fresh_name(names, if n == 0 { "a" } else { "b" }),
            opcode: Opcode::Parameter,
            shape: scalar.clone(),
            operands: vec![],
            attrs: Attrs {
                parameter_number: Some(n),
                ..Default::default()
            }
            .into(),
            span: Span::NONE,
        };
        let a = insts.push(param(0, &mut self.names));
        let b = insts.push(param(1, &mut self.names));
        let root = insts.push(Instruction {
            name: fresh_name(&mut self.names, op.name()),
            opcode: op,
            shape: Shape::scalar(ty),
            operands: vec![a, b],
            attrs: Attrs::default().into(),
            span: Span::NONE,
        });
        self.m.comps.push(Computation {
            name,
            insts,
            root,
            span: Span::NONE,
        })
    }
}

/// An expander: replaces each instruction it matches with instructions it builds.
pub(crate) trait OpExpander {
    /// Whether `i` is rewritten.
    fn matches(&self, i: &Instruction) -> bool;
    /// Builds the replacement of `h` (same shape) with `rw`; returns its root, or `None` to
    /// leave `h` alone (lowering then reports it as not supported).
    fn expand(&self, rw: &mut Rw<'_>, h: InstId) -> CResult<Option<InstId>>;
}

/// Runs `x` over every computation of `m`; returns whether anything changed.
pub(crate) fn run_expander(x: &dyn OpExpander, m: &mut Module) -> CResult<bool> {
    let mut changed = false;
    let comps: Vec<CompId> = m.comps.handles().collect();
    for c in comps {
        changed |= run_expander_in(x, m, c)?;
    }
    Ok(changed)
}

/// Runs `x` over computation `c` of `m`.
pub(crate) fn run_expander_in(x: &dyn OpExpander, m: &mut Module, c: CompId) -> CResult<bool> {
    let mut changed = false;
    {
        let hits: Vec<InstId> = m.comps[c]
            .insts
            .iter()
            .filter(|(_, i)| x.matches(i))
            .map(|(h, _)| h)
            .collect();
        let mut names = module_names(m);
        for h in hits {
            let span = m.comps[c].insts[h].span;
            let mut rw = Rw::with_names(m, c, span, names);
            // An expansion that adds computations behind the builder's back rescans itself
            // (`Rw::rescan_names`), so the names stay complete.
            let expanded = x.expand(&mut rw, h);
            names = rw.into_names();
            if let Some(new) = expanded? {
                if m.comps[c].insts[new].shape.without_layout()
                    != m.comps[c].insts[h].shape.without_layout()
                {
                    return Err(internal(format!(
                        "expander changed the shape of {}",
                        m.comps[c].insts[h].name
                    )));
                }
                replace_uses(&mut m.comps[c], h, new);
                // The old instruction becomes a dead copy of the new one, so dead-code
                // elimination drops it even if its op had side effects (rng).
                let old = &mut m.comps[c].insts[h];
                old.opcode = Opcode::Copy;
                old.operands = vec![new];
                old.attrs = Attrs::default().into();
                changed = true;
            }
        }
    }
    Ok(changed)
}
