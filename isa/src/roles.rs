//! Operand roles: which memory operands an instruction reads and writes, their element type and
//! their extent, declared once per table row in its `[ ... ]` clause (src/table.rs), e.g.
//! `[dst: W elems(t, n), a: R elems(t, n)]`. From them derive:
//!
//! * [`Inst::operand_uses`](crate::Inst::operand_uses): the uses of one instruction, with its
//!   field values;
//! * [`Inst::accesses`](crate::Inst::accesses): the bytes it touches once its addresses are
//!   resolved (the simulator's race detector and VMEM port bookings, the compiler's emitter);
//! * [`Inst::vmem_operands`](crate::Inst::vmem_operands) and the operand tables of
//!   docs/isa.md ([`InstInfo::uses`](crate::InstInfo)).
//!
//! Invariants (checked by `tests::roles_tests`): every positional memory operand (`vaddr`,
//! `memref`) of every row has exactly one use, every use names a positional memory operand, and
//! an operand's address is the value [`Inst::resolve`](crate::Inst::resolve) puts at that
//! operand's position. A use's extent is relative to the operand's address `A(x)`.

use crate::access::Access;
use crate::inst::Role;
use crate::operand::{DType, Space};
use crate::program::{DmaDesc, Pattern};
use crate::table::Inst;

/// Where an operand's elements lie relative to its address `A(x)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extent {
    /// `n` elements: element `i` at `A(x) + i·size` (or at the instruction's pattern's offset
    /// of `i` when it has one: [`Pattern`]).
    Elems(u64),
    /// `rows` runs of `cols` elements; run `r` at `A(x) + r·stride` (or at the pattern's
    /// offset of `r`).
    Rows {
        /// Runs.
        rows: u64,
        /// Elements per run.
        cols: u64,
        /// Bytes between runs.
        stride: u64,
    },
    /// The source (`src = true`) or destination side of DMA descriptor `desc`.
    Desc {
        /// Descriptor index.
        desc: u32,
        /// Source side.
        src: bool,
    },
    /// `n` elements at `A(x) + k·size` for each u32 index `k` of the table operand `idx`
    /// (data-dependent: the bytes are known only from the table's contents).
    Gathered(u64),
    /// The `s[lim]` elements from `A(x)` (the register `lim` read at dispatch), of which the
    /// `n` named by the table operand `idx` are read and written.
    Scattered(u64),
    /// Rows of an indexed DMA (`dma.gather`/`dma.scatter`) with one-dimensional descriptor
    /// `desc` (`len` bytes per row, `n` rows): row `i` (of those whose index `k = idx[i]` is
    /// below `s[lim]`) at `A(x) + k·stride` (`by_index`) or `A(x) + i·stride`, with the
    /// `src` or destination stride (data-dependent).
    IndexedRows {
        /// Descriptor index.
        desc: u32,
        /// Source side.
        src: bool,
        /// Row address from the index (else from the row number).
        by_index: bool,
    },
    /// The `n` u32 row indices of an indexed DMA with descriptor `desc`.
    IndexTable(u32),
}

/// One memory operand of an instruction: its field, role, element type and extent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperandUse {
    /// Field name in the table row.
    pub field: &'static str,
    /// Its index among the row's positional operands (where [`Inst::resolve`](crate::Inst::resolve)
    /// puts its address), a constant the table's macro works out at compile time.
    pub position: usize,
    /// Read, written, or both.
    pub role: Role,
    /// Element type.
    pub elem: DType,
    /// Where its elements lie.
    pub extent: Extent,
    /// Memory space of the operand (`vaddr`: VMEM; `memref`: its space).
    pub space: Space,
    /// The operand's address pattern, if the instruction gives it one (`pat=`).
    pub pattern: Option<u32>,
}

impl Default for OperandUse {
    /// A placeholder (an empty read of VMEM), for the unused slots of a [`UseList`].
    fn default() -> Self {
        OperandUse {
            field: "",
            position: 0,
            role: Role::Read,
            elem: DType::U8,
            extent: Extent::Elems(0),
            space: Space::Vmem,
            pattern: None,
        }
    }
}

/// Most memory operands one instruction has (checked at compile time by the table's macro).
pub const MAX_USES: usize = 4;

/// Up to [`MAX_USES`] items, inline (no allocation): an instruction's uses or accesses, in the
/// row's order. Reads as a slice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UseList<T> {
    len: usize,
    items: [T; MAX_USES],
}

impl<T: Default> Default for UseList<T> {
    fn default() -> Self {
        UseList {
            len: 0,
            items: std::array::from_fn(|_| T::default()),
        }
    }
}

impl<T: Default> UseList<T> {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }
    /// Appends `x`; panics past [`MAX_USES`] (the table's macro rules that out).
    pub fn push(&mut self, x: T) {
        assert!(self.len < MAX_USES, "more than {MAX_USES} memory operands");
        self.items[self.len] = x;
        self.len += 1;
    }
}

impl<T> std::ops::Deref for UseList<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.items[..self.len]
    }
}

impl<'a, T> IntoIterator for &'a UseList<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items[..self.len].iter()
    }
}

impl<T> IntoIterator for UseList<T> {
    type Item = T;
    type IntoIter = std::iter::Take<std::array::IntoIter<T, MAX_USES>>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter().take(self.len)
    }
}

/// The index of `field` among `positional` (the table's macro calls it in constants, so a use
/// naming no positional operand fails to compile).
pub const fn position_of(field: &str, positional: &[&str]) -> usize {
    match find_position(field, positional) {
        Some(i) => i,
        None => panic!("a memory operand's use names no positional operand"),
    }
}

/// The index of `field` among `positional`, if it is one (usable in constants).
pub const fn find_position(field: &str, positional: &[&str]) -> Option<usize> {
    let f = field.as_bytes();
    let mut i = 0;
    while i < positional.len() {
        let p = positional[i].as_bytes();
        if p.len() == f.len() {
            let mut j = 0;
            while j < f.len() && p[j] == f[j] {
                j += 1;
            }
            if j == f.len() {
                return Some(i);
            }
        }
        i += 1;
    }
    None
}

/// The runs of bytes one use touches: none, one (the common case, inline) or several.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Runs {
    /// No bytes (or not listed).
    #[default]
    None,
    /// One run set.
    One(Access),
    /// Several.
    Many(Vec<Access>),
}

impl Runs {
    /// Keeps the runs with at least one byte.
    fn nonempty(self) -> Runs {
        match self {
            Runs::One(a) if a.row_bytes == 0 => Runs::None,
            Runs::Many(mut v) => {
                v.retain(|a| a.row_bytes > 0);
                Runs::from(v)
            }
            r => r,
        }
    }
}

impl From<Vec<Access>> for Runs {
    fn from(v: Vec<Access>) -> Runs {
        match v.len() {
            0 => Runs::None,
            1 => Runs::One(v[0]),
            _ => Runs::Many(v),
        }
    }
}

impl std::ops::Deref for Runs {
    type Target = [Access];
    fn deref(&self) -> &[Access] {
        match self {
            Runs::None => &[],
            Runs::One(a) => std::slice::from_ref(a),
            Runs::Many(v) => v,
        }
    }
}

impl PartialEq<Vec<Access>> for Runs {
    fn eq(&self, o: &Vec<Access>) -> bool {
        **self == **o
    }
}

/// The docs' view of one use: field, role, element type and extent as written in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UseInfo {
    /// Field name.
    pub field: &'static str,
    /// Role.
    pub role: Role,
    /// The extent rule as written in the table, e.g. `elems(t, n)`.
    pub rule: &'static str,
}

impl Extent {
    /// Elements the operand moves (its share of the unit's element work).
    pub fn count(&self) -> u64 {
        match *self {
            Extent::Elems(n) | Extent::Gathered(n) | Extent::Scattered(n) => n,
            Extent::Rows { rows, cols, .. } => rows.saturating_mul(cols),
            Extent::Desc { .. } | Extent::IndexedRows { .. } | Extent::IndexTable(_) => 0,
        }
    }
}

/// What [`Inst::accesses`](crate::Inst::accesses) needs beyond the instruction: the program's
/// descriptors and, for data-dependent operands, the index table's contents.
pub trait AccessCtx {
    /// DMA descriptor `d`.
    fn dma_desc(&self, d: u32) -> Option<&DmaDesc>;
    /// Address pattern `p` (`.pat`).
    fn pattern(&self, p: u32) -> Option<&Pattern>;
    /// The `n` u32 indices at VMEM address `table`, if they can be read.
    fn indices(&self, _table: u64, _n: u64) -> Option<Vec<u64>> {
        None
    }
    /// The largest of the `n` u32 indices at VMEM address `table`, if it can be read.
    fn max_index(&self, table: u64, n: u64) -> Option<u64> {
        self.indices(table, n)?.into_iter().max()
    }
}

impl AccessCtx for crate::Program {
    fn dma_desc(&self, d: u32) -> Option<&DmaDesc> {
        self.dma.get(d as usize)
    }
    fn pattern(&self, p: u32) -> Option<&Pattern> {
        self.pats.get(p as usize)
    }
}

/// The bytes one use touches, once its address is known.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Touched {
    /// The use.
    pub use_: OperandUse,
    /// The exact bytes, as runs (empty if unknown: a gathered operand whose table cannot be
    /// read, or a DMA side with more runs than [`MAX_RUNS`]).
    pub runs: Runs,
    /// Bytes the operand moves through its memory's port (reads plus writes; an element a
    /// pattern repeats is read once).
    pub moved: u64,
    /// `[lo, hi)`: every byte it may touch (data-dependent operands: `None`).
    pub hull: Option<(u64, u64)>,
}

/// At most this many runs groups per DMA side are listed (past it, the side is not listed).
pub const MAX_RUNS: u64 = 4096;

/// The accesses of a DMA descriptor's side starting at `base` in `space`: one strided run set
/// per combination of the outer dimensions beyond the first (`None` if a run would start below
/// 0 or there are more than [`MAX_RUNS`] groups).
pub fn dma_side(space: Space, base: u64, desc: &DmaDesc, src: bool) -> Option<Vec<Access>> {
    let len = desc.len as u64;
    let stride_of = |d: &crate::DmaDim| if src { d.src_stride } else { d.dst_stride };
    let (rows, stride) = match desc.dims.first() {
        Some(d) if stride_of(d) >= 0 => (d.count as u64, stride_of(d) as u64),
        Some(_) => return None,
        None => (1, len),
    };
    let outer: Vec<&crate::DmaDim> = desc.dims.iter().skip(1).collect();
    let groups: u64 = outer.iter().map(|d| d.count as u64).product();
    if groups.saturating_mul(rows.max(1)) > MAX_RUNS * 1024 || groups > MAX_RUNS {
        return None;
    }
    let mut out = Vec::new();
    let mut idx = vec![0u64; outer.len()];
    for _ in 0..groups {
        let mut off: i64 = 0;
        for (d, &i) in outer.iter().zip(&idx) {
            off += i as i64 * stride_of(d);
        }
        let start = base as i64 + off;
        if start < 0 {
            return None;
        }
        out.push(Access::runs(space, start as u64, len, stride, rows));
        for (k, d) in outer.iter().enumerate() {
            idx[k] += 1;
            if idx[k] < d.count as u64 {
                break;
            }
            idx[k] = 0;
        }
    }
    Some(out)
}

fn hull_of(runs: &[Access]) -> Option<(u64, u64)> {
    let lo = runs.iter().map(|a| a.start).min()?;
    let hi = runs
        .iter()
        .map(|a| a.start + a.rows.saturating_sub(1) * a.stride + a.row_bytes)
        .max()?;
    Some((lo, hi))
}

/// The bytes `u` touches at address `addr` (`lim`: the value of `s[lim]` for a scattered
/// operand).
pub fn touched(u: OperandUse, addr: u64, lim: u64, idx: u64, ctx: &dyn AccessCtx) -> Touched {
    let size = u.elem.bytes();
    let lay = u
        .pattern
        .and_then(|p| ctx.pattern(p))
        .and_then(|p| p.layout(u.field));
    let (runs, moved) = match u.extent {
        Extent::Elems(n) => match lay {
            Some(l) => (l.runs(u.space, addr, n, size).into(), l.distinct(n) * size),
            None => (
                Runs::One(Access::runs(u.space, addr, n * size, 0, 1)),
                n * size,
            ),
        },
        Extent::Rows { rows, cols, stride } => {
            let row = cols * size;
            match lay {
                Some(l) => (
                    l.runs(u.space, addr, rows, row).into(),
                    l.distinct(rows) * row,
                ),
                None => (
                    Runs::One(Access::runs(u.space, addr, row, stride, rows)),
                    rows * row,
                ),
            }
        }
        Extent::Desc { desc, src } => match ctx.dma_desc(desc) {
            Some(d) => (
                dma_side(u.space, addr, d, src).unwrap_or_default().into(),
                d.total_bytes(),
            ),
            None => (Runs::None, 0),
        },
        Extent::Gathered(n) => {
            let runs = if n == 0 {
                Runs::None
            } else {
                ctx.max_index(idx, n)
                    .map(|hi| Runs::One(Access::runs(u.space, addr, (hi + 1) * size, 0, 1)))
                    .unwrap_or_default()
            };
            (runs, n * size)
        }
        Extent::IndexTable(desc) => {
            let n = ctx
                .dma_desc(desc)
                .and_then(|d| d.dims.first())
                .map_or(0, |d| d.count as u64);
            (Runs::One(Access::runs(u.space, addr, 4 * n, 0, 1)), 4 * n)
        }
        Extent::IndexedRows {
            desc,
            src,
            by_index,
        } => {
            match ctx
                .dma_desc(desc)
                .and_then(|d| Some((d.len as u64, *d.dims.first()?)))
            {
                None => (Runs::None, 0),
                Some((len, dim)) => {
                    let stride = if src { dim.src_stride } else { dim.dst_stride };
                    let n = dim.count as u64;
                    let at = |r: u64| (addr as i64).checked_add((r as i64).checked_mul(stride)?);
                    match ctx.indices(idx, n) {
                        Some(ks) => {
                            let mut runs = Vec::new();
                            let mut rows = 0;
                            for (i, k) in ks.into_iter().enumerate() {
                                if k >= lim {
                                    continue;
                                }
                                rows += 1;
                                let r = if by_index { k } else { i as u64 };
                                if let Some(a) = at(r).filter(|a| *a >= 0) {
                                    runs.push(Access::runs(u.space, a as u64, len, 0, 1));
                                }
                            }
                            if runs.len() as u64 > MAX_RUNS {
                                runs.clear(); // too many to list: not checked
                            }
                            (runs.into(), rows * len)
                        }
                        // Unknown indices: every row the side can reach.
                        None => {
                            let reach = if by_index { lim } else { n };
                            let runs = match (stride >= 0, reach) {
                                (_, 0) => Runs::None,
                                (true, r) => {
                                    Runs::One(Access::runs(u.space, addr, len, stride as u64, r))
                                }
                                (false, _) => Runs::None,
                            };
                            (runs, n * len)
                        }
                    }
                }
            }
        }
        Extent::Scattered(n) => (
            Runs::One(Access::runs(u.space, addr, lim.saturating_mul(size), 0, 1)),
            2 * n * size,
        ),
    };
    let runs = runs.nonempty();
    let hull = match u.extent {
        Extent::Gathered(_) | Extent::IndexedRows { .. } => None,
        _ => Some(hull_of(&runs).unwrap_or((addr, addr))),
    };
    Touched {
        use_: u,
        runs,
        moved,
        hull,
    }
}

/// Extent constructors, as the table's `[ ... ]` clauses write them (`elems(t, n)`, ...); each
/// gives the element type and the extent.
pub mod rule {
    use super::Extent;
    use crate::operand::DType;
    use arch::MxuDtype;

    /// One-byte predicate elements.
    pub const PRED: DType = DType::Pred;
    /// u32 elements (index tables).
    pub const U32: DType = DType::U32;
    /// 32-bit accumulator elements.
    pub const S32: DType = DType::S32;
    /// Bytes.
    pub const U8: DType = DType::U8;

    /// The element type of an MXU mode (int8: s8, bf16: bf16).
    pub fn mxu_elem(mode: MxuDtype) -> DType {
        match mode {
            MxuDtype::Int8 => DType::S8,
            MxuDtype::Bf16 => DType::Bf16,
        }
    }
    /// `n` elements of type `t`.
    pub fn elems(t: DType, n: u32) -> (DType, Extent) {
        (t, Extent::Elems(n as u64))
    }
    /// `rows` runs of `cols` elements of type `t`, `stride` bytes apart.
    pub fn runs(t: DType, rows: u32, cols: u32, stride: u32) -> (DType, Extent) {
        (
            t,
            Extent::Rows {
                rows: rows as u64,
                cols: cols as u64,
                stride: stride as u64,
            },
        )
    }
    /// `rows · cols` elements of type `t` (a row-major matrix).
    pub fn matrix(t: DType, rows: u32, cols: u32) -> (DType, Extent) {
        (t, Extent::Elems(rows as u64 * cols as u64))
    }
    /// An MXU weight tile of `k × n` elements of mode `mode`: `k` rows of `n` elements
    /// `stride` bytes apart, or with `tr` (transposed load) `n` rows of `k` elements.
    pub fn weights(
        mode: MxuDtype,
        k: u32,
        n: u32,
        stride: u32,
        tr: crate::Flag,
    ) -> (DType, Extent) {
        let (rows, cols) = if tr.0 { (n, k) } else { (k, n) };
        runs(mxu_elem(mode), rows, cols, stride)
    }
    /// `len` bytes.
    pub fn bytes(len: u32) -> (DType, Extent) {
        (DType::U8, Extent::Elems(len as u64))
    }
    /// A side of DMA descriptor `desc`.
    pub fn chunks(desc: u32, src: bool) -> (DType, Extent) {
        (DType::U8, Extent::Desc { desc, src })
    }
    /// The rows of an indexed DMA's side (`src`), addressed by the index (`by_index`) or by
    /// the row number.
    pub fn indexed(desc: u32, src: bool, by_index: bool) -> (DType, Extent) {
        (
            DType::U8,
            Extent::IndexedRows {
                desc,
                src,
                by_index,
            },
        )
    }
    /// The u32 row index table of an indexed DMA.
    pub fn index_table(desc: u32) -> (DType, Extent) {
        (DType::U32, Extent::IndexTable(desc))
    }
    /// `n` elements of type `t` named by the index table `idx`.
    pub fn gathered(t: DType, n: u32) -> (DType, Extent) {
        (t, Extent::Gathered(n as u64))
    }
    /// Up to `s[lim]` elements of type `t`, `n` of them updated at the indices of `idx`.
    pub fn scattered(t: DType, n: u32) -> (DType, Extent) {
        (t, Extent::Scattered(n as u64))
    }
}

impl Inst {
    /// The bytes each memory operand touches, given the values [`Inst::resolve`] read at
    /// dispatch (`a`): one [`Touched`] per declared use, in the row's order. A scattered
    /// operand's limit is the value of the positional operand `lim`; a gathered or scattered
    /// operand's index table is the operand `idx`.
    pub fn accesses(&self, a: &[u64; 4], ctx: &dyn AccessCtx) -> UseList<Touched> {
        let (lim, idx) = self.opcode().lim_idx_positions();
        let at = |p: Option<usize>| p.and_then(|p| a.get(p).copied()).unwrap_or(0);
        let (lim, idx) = (at(lim), at(idx));
        let mut out = UseList::new();
        for u in self.operand_uses() {
            out.push(touched(u, at(Some(u.position)), lim, idx, ctx));
        }
        out
    }

    /// The VMEM vector operands (`vaddr`) of this instruction, in operand order, with their
    /// role (derived from the table's `[ ... ]` clause).
    pub fn vmem_operands(&self) -> Vec<(crate::VAddr, Role)> {
        let uses = self.operand_uses();
        let mut out = Vec::new();
        let info = self.opcode().info();
        let vals = self.positional_vaddrs();
        for (f, v) in info.fields.iter().filter(|f| !f.keyword).zip(vals) {
            if let (Some(v), Some(u)) = (v, uses.iter().find(|u| u.field == f.name)) {
                out.push((v, u.role));
            }
        }
        out
    }
}
