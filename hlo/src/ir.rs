//! The HLO IR: a module owns computations in an arena; each computation owns its
//! instructions in an arena. Handles ([`CompId`], [`InstId`]) are plain indices.
//!
//! Invariants (established by the parser or builder, checked by the verifier):
//! - an [`InstId`] is only meaningful inside the computation that owns the instruction;
//! - instruction names are unique within the module, computation names are unique;
//! - arena order is the textual order; the verifier checks that the operand graph is acyclic
//!   and gives a topological order (`Computation::post_order`);
//! - `Computation::root` is the `ROOT` instruction (or the last one when none is marked).

use crate::attrs::AttrBox;
use crate::diag::Span;
use crate::opcode::Opcode;
use crate::shape::{ProgramShape, Shape};
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// A typed index into an [`Arena`].
pub struct Handle<T> {
    index: u32,
    _marker: PhantomData<fn() -> T>,
}

impl<T> Handle<T> {
    pub fn new(index: usize) -> Self {
        Handle {
            index: index as u32,
            _marker: PhantomData,
        }
    }
    pub fn index(self) -> usize {
        self.index as usize
    }
}
impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Handle<T> {}
impl<T> PartialEq for Handle<T> {
    fn eq(&self, o: &Self) -> bool {
        self.index == o.index
    }
}
impl<T> Eq for Handle<T> {}
impl<T> PartialOrd for Handle<T> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Handle<T> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.index.cmp(&o.index)
    }
}
impl<T> std::hash::Hash for Handle<T> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.index.hash(h)
    }
}
impl<T> std::fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.index)
    }
}

/// A vector of `T` addressed by `Handle<T>`.
#[derive(Clone, Debug, PartialEq)]
pub struct Arena<T> {
    items: Vec<T>,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena { items: Vec::new() }
    }
}

impl<T> Arena<T> {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn push(&mut self, item: T) -> Handle<T> {
        self.items.push(item);
        Handle::new(self.items.len() - 1)
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn get(&self, h: Handle<T>) -> Option<&T> {
        self.items.get(h.index())
    }
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (Handle<T>, &T)> + ExactSizeIterator {
        self.items
            .iter()
            .enumerate()
            .map(|(i, t)| (Handle::new(i), t))
    }
    pub fn handles(&self) -> impl DoubleEndedIterator<Item = Handle<T>> + ExactSizeIterator {
        (0..self.items.len()).map(Handle::new)
    }
    pub fn values_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.items.iter_mut()
    }
    pub fn values(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }
}

impl<T> Index<Handle<T>> for Arena<T> {
    type Output = T;
    fn index(&self, h: Handle<T>) -> &T {
        &self.items[h.index()]
    }
}
impl<T> IndexMut<Handle<T>> for Arena<T> {
    fn index_mut(&mut self, h: Handle<T>) -> &mut T {
        &mut self.items[h.index()]
    }
}

pub type InstId = Handle<Instruction>;
pub type CompId = Handle<Computation>;

/// One HLO instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    pub name: String,
    pub opcode: Opcode,
    pub shape: Shape,
    pub operands: Vec<InstId>,
    pub attrs: AttrBox,
    /// Where the instruction was written (its name); [`Span::NONE`] for built instructions.
    pub span: Span,
}

/// A computation: instructions in an arena, one of them the root.
#[derive(Clone, Debug, PartialEq)]
pub struct Computation {
    pub name: String,
    pub insts: Arena<Instruction>,
    pub root: InstId,
    pub span: Span,
}

impl Computation {
    /// Parameter instructions ordered by parameter number (gaps and duplicates are verifier
    /// errors; this just sorts what is there).
    pub fn parameters(&self) -> Vec<InstId> {
        let mut ps: Vec<(i64, InstId)> = self
            .insts
            .iter()
            .filter(|(_, i)| i.opcode == Opcode::Parameter)
            .map(|(h, i)| (i.parameter_number().map_or(-1, |n| n as i64), h))
            .collect();
        ps.sort_by_key(|p| p.0);
        ps.into_iter().map(|p| p.1).collect()
    }

    /// The computation's signature (parameter shapes by number → root shape).
    pub fn program_shape(&self) -> ProgramShape {
        ProgramShape {
            params: self
                .parameters()
                .iter()
                .map(|&p| self.insts[p].shape.clone())
                .collect(),
            result: self.insts[self.root].shape.clone(),
        }
    }

    /// Every instruction once, operands (and control predecessors) before users: a depth-first
    /// post-order seeded in arena order, so a textually ordered computation comes back in
    /// textual order (side effects then happen in program order) and instructions unreachable
    /// from the root are included. Returns `None` if the operand graph has a cycle.
    pub fn post_order(&self) -> Option<Vec<InstId>> {
        let n = self.insts.len();
        // 0 = new, 1 = on stack, 2 = done
        let mut state = vec![0u8; n];
        let mut order = Vec::with_capacity(n);
        for s in self.insts.handles() {
            if s.index() >= n || state[s.index()] != 0 {
                continue;
            }
            let mut stack: Vec<(InstId, usize)> = vec![(s, 0)];
            state[s.index()] = 1;
            while let Some(&mut (h, ref mut next)) = stack.last_mut() {
                let inst = &self.insts[h];
                let preds = inst.operands.len() + inst.attrs.control_predecessors.len();
                if *next < preds {
                    let o = if *next < inst.operands.len() {
                        inst.operands[*next]
                    } else {
                        inst.attrs.control_predecessors[*next - inst.operands.len()]
                    };
                    *next += 1;
                    if o.index() >= n {
                        continue;
                    }
                    match state[o.index()] {
                        0 => {
                            state[o.index()] = 1;
                            stack.push((o, 0));
                        }
                        1 => return None,
                        _ => {}
                    }
                } else {
                    state[h.index()] = 2;
                    order.push(h);
                    stack.pop();
                }
            }
        }
        Some(order)
    }

    /// Finds an instruction by name.
    pub fn find(&self, name: &str) -> Option<InstId> {
        self.insts
            .iter()
            .find(|(_, i)| i.name == name)
            .map(|(h, _)| h)
    }
}

/// Module-level settings from the `HloModule` header.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModuleConfig {
    pub entry_computation_layout: Option<ProgramShape>,
    pub replica_count: Option<i64>,
    pub num_partitions: Option<i64>,
    pub is_scheduled: Option<bool>,
    /// Other header attributes (`input_output_alias`, `frontend_attributes`, ...), verbatim.
    pub extra: Vec<(String, String)>,
}

/// An HLO module.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    pub name: String,
    pub comps: Arena<Computation>,
    pub entry: CompId,
    pub config: ModuleConfig,
    /// The debug-info sections (`FileNames`, `FunctionNames`, `FileLocations`, `StackFrames`),
    /// verbatim. XLA prints them after the header; the parser accepts them there or after the
    /// computations, and the printer writes them after the header.
    pub trailer: Option<String>,
}

impl Module {
    pub fn entry(&self) -> &Computation {
        &self.comps[self.entry]
    }
    /// Number of replicas the module runs on (`replica_count`, default 1).
    pub fn replica_count(&self) -> i64 {
        self.config.replica_count.unwrap_or(1)
    }
    /// Partitions per replica (SPMD), 1 unless the header says `num_partitions`.
    pub fn num_partitions(&self) -> i64 {
        self.config.num_partitions.unwrap_or(1)
    }
    /// Devices the module runs on: `replica_count × num_partitions` (at least 1), device
    /// `replica · num_partitions + partition`.
    pub fn num_devices(&self) -> usize {
        (self.replica_count().max(1) as usize).saturating_mul(self.num_partitions().max(1) as usize)
    }
    pub fn find_computation(&self, name: &str) -> Option<CompId> {
        self.comps
            .iter()
            .find(|(_, c)| c.name == name)
            .map(|(h, _)| h)
    }
}
