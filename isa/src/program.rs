//! [`Program`]: code plus everything a simulator needs to run it and a person to read it —
//! initial memory contents, DMA descriptors, a memory map and a symbol table mapping
//! instruction ranges back to HLO instruction names.
//!
//! Invariant: a program produced by the assembler or the binary reader has passed
//! [`Program::validate`]; a valid program round-trips through text and binary unchanged.

use crate::operand::{DType, Space, Target};
use crate::table::Inst;
use thiserror::Error;

/// Up to this many outer dimensions per DMA descriptor.
pub const MAX_DMA_DIMS: usize = 3;

/// A program for one core.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    /// Instructions; execution starts at index 0.
    pub code: Vec<Inst>,
    /// Initial memory contents, written in order before execution starts.
    pub data: Vec<DataSegment>,
    /// DMA descriptors, referenced by index from `dma.copy`.
    pub dma: Vec<DmaDesc>,
    /// Address patterns (`.pat`), referenced by index from the `pat=` operand.
    pub pats: Vec<Pattern>,
    /// Named memory regions (buffers the compiler allocated), informational.
    pub regions: Vec<Region>,
    /// Instruction ranges and the HLO instruction each came from: sorted, non-overlapping.
    pub symbols: Vec<SymbolRange>,
    /// Semaphores declared with counts or as chip-shared (`.sem`); sorted by index, at most
    /// one per index. An undeclared semaphore waits for 1, signals 1 and belongs to its core.
    pub sems: Vec<SemDecl>,
}

/// How a program uses one semaphore (the `.sem` directive): the counts a unit instruction's
/// `wait=` takes and its `signal=` gives, and whether the cores of a chip share it. The
/// sequencer's `sem.wait`/`sem.signal` keep their explicit `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SemDecl {
    /// Semaphore index.
    pub sem: u8,
    /// `wait=` waits until the value is at least this, then subtracts it (fan-in: one wait
    /// for several producers). At least 1.
    pub wait: u32,
    /// `signal=` adds this on completion (fan-out: one signal for several consumers). At
    /// least 1.
    pub signal: u32,
    /// One semaphore for every core of the chip (else one per core).
    pub shared: bool,
}

impl SemDecl {
    /// The use of an undeclared semaphore.
    pub fn plain(sem: u8) -> Self {
        SemDecl {
            sem,
            wait: 1,
            signal: 1,
            shared: false,
        }
    }
}

/// Up to this many dimensions per operand layout of a [`Pattern`].
pub const MAX_PAT_DIMS: usize = 4;

/// An address pattern (`.pat N a=[(COUNT,STRIDE),...] ...`): for each operand it names, where
/// that operand's elements (VPU) or rows (`mxu.matmul`'s `src`) lie. Operands it does not name
/// keep their default layout.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pattern {
    /// Operand field name and its layout, in the order written.
    pub operands: Vec<(String, Layout)>,
}

impl Pattern {
    /// What is wrong with the pattern on its own (`None`: nothing).
    pub fn check(&self) -> Option<String> {
        if self.operands.is_empty() {
            return Some("a pattern names at least one operand".into());
        }
        for (i, (f, l)) in self.operands.iter().enumerate() {
            if self.operands[..i].iter().any(|(g, _)| g == f) {
                return Some(format!("operand `{f}` is named twice"));
            }
            if l.dims.is_empty() || l.dims.len() > MAX_PAT_DIMS {
                return Some(format!(
                    "operand `{f}`: {} dimensions, expected 1 to {MAX_PAT_DIMS}",
                    l.dims.len()
                ));
            }
            if l.dims.iter().any(|d| d.count == 0) {
                return Some(format!("operand `{f}`: every count must be >= 1"));
            }
        }
        None
    }

    /// What is wrong with instruction `inst` using this pattern (`None`: nothing): every
    /// operand it names must be one of the instruction's element or row operands.
    pub fn check_use(&self, inst: &Inst) -> Option<String> {
        let uses = inst.operand_uses();
        for (f, _) in &self.operands {
            match uses.iter().find(|u| u.field == f) {
                Some(u)
                    if matches!(
                        u.extent,
                        crate::roles::Extent::Elems(_) | crate::roles::Extent::Rows { .. }
                    ) => {}
                _ => {
                    return Some(format!(
                        "pattern names operand `{f}`, which `{}` has no element layout for",
                        inst.mnemonic()
                    ))
                }
            }
        }
        None
    }

    /// Text form after `.pat N`: `a=[(8,4),(16,0)] b=[(128,4)]`.
    pub fn text(&self) -> String {
        self.operands
            .iter()
            .map(|(f, l)| {
                let d: Vec<String> = l
                    .dims
                    .iter()
                    .map(|d| format!("({},{})", d.count, d.stride))
                    .collect();
                format!("{f}=[{}]", d.join(","))
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Parses [`Pattern::text`] (whitespace inside brackets allowed); checks it.
    pub fn parse(spec: &str) -> Result<Pattern, String> {
        let owned: String = spec.split_whitespace().collect();
        let mut rest: &str = &owned;
        let mut p = Pattern::default();
        while !rest.is_empty() {
            let (field, after) = rest
                .split_once("=[")
                .ok_or("expected OPERAND=[(COUNT,STRIDE),...]")?;
            if field.is_empty() || !field.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("expected an operand name, got `{field}`"));
            }
            let (inner, tail) = after
                .split_once(']')
                .ok_or("expected `]` closing the dimension list")?;
            let mut dims = Vec::new();
            for t in inner.split("),") {
                let t = t.trim_start_matches('(').trim_end_matches(')');
                let v: Vec<&str> = t.split(',').collect();
                if v.len() != 2 {
                    return Err(format!("dimension `({t})` needs 2 numbers: count, stride"));
                }
                let count = u32::try_from(crate::parse_int(v[0])?)
                    .map_err(|_| format!("count `{}` out of range", v[0]))?;
                let stride = u64::try_from(crate::parse_int(v[1])?)
                    .map_err(|_| format!("stride `{}` out of range (0 to 2^64-1)", v[1]))?;
                dims.push(PatDim { count, stride });
            }
            p.operands.push((field.to_string(), Layout { dims }));
            rest = tail.trim_start_matches(',');
        }
        if let Some(why) = p.check() {
            return Err(why);
        }
        Ok(p)
    }

    /// The layout of operand `field`, if the pattern names it.
    pub fn layout(&self, field: &str) -> Option<&Layout> {
        self.operands
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, l)| l)
    }
}

/// One dimension of a [`Layout`]: `count` indices, `stride` bytes apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PatDim {
    /// Indices along this dimension (at least 1).
    pub count: u32,
    /// Bytes between consecutive indices (0: the same bytes repeat — a broadcast).
    pub stride: u64,
}

/// Where index `i` of an operand lies: `dims` innermost first; with `P_j` the product of the
/// counts inside dimension `j`, index `i` is at byte offset `Σ_j ((i / P_j) mod count_j) ·
/// stride_j` from the operand's address (the outermost dimension wraps too). Examples, for
/// 4-byte elements: contiguous `[(n,4)]`; a scalar broadcast `[(n,0)]`; a row of 8 repeated
/// `[(8,4),(R,0)]`; a column repeated along rows `[(8,0),(R,4)]`; rows of 8 in a 48-byte-wide
/// matrix `[(8,4),(R,48)]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// Dimensions, innermost first (1 to [`MAX_PAT_DIMS`]).
    pub dims: Vec<PatDim>,
}

impl Layout {
    /// Byte offset of index `i`.
    pub fn offset(&self, i: u64) -> u64 {
        let mut q = i;
        let mut off = 0u64;
        for d in &self.dims {
            let c = d.count.max(1) as u64;
            off = off.wrapping_add((q % c).wrapping_mul(d.stride));
            q /= c;
        }
        off
    }

    /// How many of the indices `0 .. n` the hardware fetches: an index whose digit along a
    /// zero-stride dimension is not 0 repeats an earlier index's bytes and is not fetched
    /// again. (Exact for layouts whose non-zero strides do not alias.)
    pub fn distinct(&self, n: u64) -> u64 {
        // full[j]: fetched indices in one whole block of dimensions 0..j.
        let mut full = vec![1u64; self.dims.len() + 1];
        let mut size = vec![1u64; self.dims.len() + 1];
        for (j, d) in self.dims.iter().enumerate() {
            let c = d.count.max(1) as u64;
            full[j + 1] = full[j].saturating_mul(if d.stride == 0 { 1 } else { c });
            size[j + 1] = size[j].saturating_mul(c);
        }
        let top = self.dims.len();
        // Whole periods of the outermost dimension, then the partial one digit by digit.
        let periods = n / size[top].max(1);
        let mut count = periods.saturating_mul(full[top]);
        let mut r = n % size[top].max(1);
        for j in (0..top).rev() {
            let digit = r / size[j];
            r %= size[j];
            if self.dims[j].stride == 0 {
                if digit > 0 {
                    count += full[j];
                    return count;
                }
            } else {
                count += digit * full[j];
            }
        }
        count
    }

    /// The bytes of indices `0 .. n`, each `unit` bytes long, from `base` in `space`: one
    /// strided run per block of the innermost dimension (consecutive equal blocks merged; past
    /// 4096 blocks, one run over the hull — conservative).
    pub fn runs(&self, space: Space, base: u64, n: u64, unit: u64) -> Vec<crate::Access> {
        use crate::Access;
        if n == 0 || unit == 0 {
            return Vec::new();
        }
        let d0 = self.dims.first().copied().unwrap_or(PatDim {
            count: 1,
            stride: unit,
        });
        let c0 = d0.count.max(1) as u64;
        let blocks = n.div_ceil(c0);
        if blocks > 4096 {
            return vec![Access::runs(space, base, self.max_offset(n) + unit, 0, 1)];
        }
        let mut out: Vec<Access> = Vec::new();
        // The runs in `out`, counted (a block equal to one of them adds nothing); with few
        // blocks `out` itself is searched.
        let mut seen: Option<std::collections::HashMap<Access, u32>> =
            (blocks > 16).then(std::collections::HashMap::new);
        fn count(seen: &mut Option<std::collections::HashMap<Access, u32>>, a: Access, add: bool) {
            if let Some(m) = seen {
                let e = m.entry(a).or_insert(0);
                if add {
                    *e += 1;
                } else {
                    *e -= 1;
                    if *e == 0 {
                        m.remove(&a);
                    }
                }
            }
        }
        for b in 0..blocks {
            let cnt = c0.min(n - b * c0);
            let a = Access::runs(space, base + self.offset(b * c0), unit, d0.stride, cnt);
            let present = match &seen {
                Some(m) => m.contains_key(&a),
                None => out.contains(&a),
            };
            if present {
                continue;
            }
            // Single runs at a constant spacing merge into one strided access.
            if let Some(last) = out.last_mut() {
                if a.rows == 1 && last.row_bytes == a.row_bytes && a.start > last.start {
                    let gap = a.start - last.start;
                    let old = *last;
                    if last.rows == 1 && gap >= a.row_bytes {
                        last.stride = gap;
                        last.rows = 2;
                        let new = *last;
                        count(&mut seen, old, false);
                        count(&mut seen, new, true);
                        continue;
                    }
                    if last.rows > 1 && a.start == last.start + last.rows * last.stride {
                        last.rows += 1;
                        let new = *last;
                        count(&mut seen, old, false);
                        count(&mut seen, new, true);
                        continue;
                    }
                }
            }
            out.push(a);
            count(&mut seen, a, true);
        }
        out
    }

    /// An upper bound of the offsets of indices `0 .. n` (the largest digit along each
    /// dimension times its stride).
    pub fn max_offset(&self, n: u64) -> u64 {
        let mut off = 0u64;
        let mut inner = 1u64;
        for d in &self.dims {
            let c = d.count.max(1) as u64;
            let top = (c - 1).min(n.saturating_sub(1) / inner);
            off = off.saturating_add(top.saturating_mul(d.stride));
            inner = inner.saturating_mul(c);
        }
        off
    }
}

/// Bytes placed in memory before the program starts (constants, weights).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataSegment {
    /// Memory space.
    pub space: Space,
    /// First byte address.
    pub addr: u64,
    /// Contents.
    pub bytes: Vec<u8>,
}

/// A strided DMA transfer shape: `len` contiguous bytes per chunk, repeated over up to three
/// outer dimensions (innermost first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaDesc {
    /// Bytes per contiguous chunk (>= 1).
    pub len: u32,
    /// Outer dimensions, innermost first (at most [`MAX_DMA_DIMS`]).
    pub dims: Vec<DmaDim>,
}

/// One outer dimension of a [`DmaDesc`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaDim {
    /// Iterations (>= 1).
    pub count: u32,
    /// Byte step of the source address per iteration.
    pub src_stride: i64,
    /// Byte step of the destination address per iteration.
    pub dst_stride: i64,
}

impl DmaDesc {
    /// Total bytes moved: `len · Π count`.
    pub fn total_bytes(&self) -> u64 {
        self.dims
            .iter()
            .fold(self.len as u64, |acc, d| acc.saturating_mul(d.count as u64))
    }
    /// Number of chunks: `Π count`.
    pub fn chunks(&self) -> u64 {
        self.dims.iter().map(|d| d.count as u64).product()
    }
    /// `(src_offset, dst_offset)` of every chunk, in execution order (innermost dimension
    /// fastest). Lazy: nothing is allocated however many chunks there are.
    pub fn chunk_offsets(&self) -> ChunkOffsets<'_> {
        ChunkOffsets {
            dims: &self.dims,
            idx: [0; MAX_DMA_DIMS],
            done: self.dims.iter().any(|d| d.count == 0),
        }
    }
}

/// Iterator over the chunk offsets of a [`DmaDesc`] (see [`DmaDesc::chunk_offsets`]).
#[derive(Clone, Debug)]
pub struct ChunkOffsets<'a> {
    dims: &'a [DmaDim],
    idx: [u32; MAX_DMA_DIMS],
    done: bool,
}

impl Iterator for ChunkOffsets<'_> {
    type Item = (i64, i64);

    fn next(&mut self) -> Option<(i64, i64)> {
        if self.done {
            return None;
        }
        let mut off = (0i64, 0i64);
        for (d, &i) in self.dims.iter().zip(&self.idx) {
            off.0 = off.0.wrapping_add((i as i64).wrapping_mul(d.src_stride));
            off.1 = off.1.wrapping_add((i as i64).wrapping_mul(d.dst_stride));
        }
        // Advance the odometer, innermost dimension first.
        self.done = true;
        for (j, d) in self.dims.iter().enumerate().take(MAX_DMA_DIMS) {
            self.idx[j] += 1;
            if self.idx[j] < d.count {
                self.done = false;
                break;
            }
            self.idx[j] = 0;
        }
        Some(off)
    }
}

/// A named buffer in HBM or VMEM.
///
/// Invariants ([`Program::validate`]): names are unique; an [`RegionArray`]'s bytes equal
/// `size` and its layout is a permutation of its dimensions; each [`RegionIo`] place is held by
/// at most one region; `live` lies within the code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// Name (unique in the program).
    pub name: String,
    /// Memory space.
    pub space: Space,
    /// First byte address.
    pub addr: u64,
    /// Size in bytes.
    pub size: u64,
    /// The array the bytes hold, when the producer of the program knows it.
    pub array: Option<RegionArray>,
    /// The place of the compiled module's interface the region holds (a parameter's or the
    /// result's array leaf): the host writes inputs there before the run and reads results
    /// from there after it.
    pub io: Option<RegionIo>,
    /// Instructions `from..to` during which the buffer is allocated (the compiler's plan, in
    /// program order): VMEM occupancy at instruction `pc` is the sum of the sizes of the VMEM
    /// regions live at `pc`. `None`: the whole run.
    pub live: Option<(u32, u32)>,
}

impl Region {
    /// A region with no array, interface role or lifetime.
    pub fn plain(name: impl Into<String>, space: Space, addr: u64, size: u64) -> Region {
        Region {
            name: name.into(),
            space,
            addr,
            size,
            array: None,
            io: None,
            live: None,
        }
    }
}

/// The array in a region: element type, dimensions and layout (`minor_to_major` as in HLO:
/// `{1,0}` is row-major for rank 2). Text form: `f32[4,8]{1,0}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionArray {
    /// Element type (of each part, for a complex array).
    pub dtype: DType,
    /// Complex: each element is a (real, imaginary) pair of `dtype` (`c64` is f32 pairs,
    /// `c128` f64 pairs).
    pub complex: bool,
    /// Dimensions.
    pub dims: Vec<u64>,
    /// Dimension numbers from most minor to most major (a permutation of `0..dims.len()`).
    pub minor_to_major: Vec<u8>,
}

impl RegionArray {
    /// A row-major array.
    pub fn row_major(dtype: DType, dims: Vec<u64>) -> RegionArray {
        let minor_to_major = (0..dims.len() as u8).rev().collect();
        RegionArray {
            dtype,
            complex: false,
            dims,
            minor_to_major,
        }
    }
    /// The element type's name (`f32`, or `c64` for complex f32).
    pub fn type_name(&self) -> &'static str {
        match (self.complex, self.dtype) {
            (true, DType::F32) => "c64",
            (true, DType::F64) => "c128",
            (_, d) => d.name(),
        }
    }
    /// Elements.
    pub fn elems(&self) -> Option<u64> {
        self.dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d))
    }
    /// Bytes (`None` on overflow).
    pub fn bytes(&self) -> Option<u64> {
        self.elems()?
            .checked_mul(self.dtype.bytes() * if self.complex { 2 } else { 1 })
    }
    /// Text form, `f32[4,8]{1,0}`.
    pub fn text(&self) -> String {
        let d: Vec<String> = self.dims.iter().map(u64::to_string).collect();
        let l: Vec<String> = self.minor_to_major.iter().map(u8::to_string).collect();
        format!("{}[{}]{{{}}}", self.type_name(), d.join(","), l.join(","))
    }
    /// Parses the text form (the layout may be left out: row-major).
    pub fn parse(s: &str) -> Result<RegionArray, String> {
        let bad = || format!("expected an array type like f32[4,8]{{1,0}}, got `{s}`");
        let (ty, rest) = s.split_once('[').ok_or_else(bad)?;
        let (dtype, complex) = match ty {
            "c64" => (DType::F32, true),
            "c128" => (DType::F64, true),
            _ => (
                DType::from_name(ty).ok_or_else(|| format!("unknown element type `{ty}`"))?,
                false,
            ),
        };
        let (dims, rest) = rest.split_once(']').ok_or_else(bad)?;
        let dims: Vec<u64> = if dims.is_empty() {
            Vec::new()
        } else {
            dims.split(',')
                .map(|d| d.trim().parse::<u64>().map_err(|_| bad()))
                .collect::<Result<_, _>>()?
        };
        if dims.len() > 255 {
            return Err(format!("{} dimensions, at most 255", dims.len()));
        }
        let minor_to_major = if rest.is_empty() {
            (0..dims.len() as u8).rev().collect()
        } else {
            let l = rest
                .strip_prefix('{')
                .and_then(|r| r.strip_suffix('}'))
                .ok_or_else(bad)?;
            if l.is_empty() {
                Vec::new()
            } else {
                l.split(',')
                    .map(|d| d.trim().parse::<u8>().map_err(|_| bad()))
                    .collect::<Result<_, _>>()?
            }
        };
        Ok(RegionArray {
            dtype,
            complex,
            dims,
            minor_to_major,
        })
    }
    /// What is wrong with it as the contents of `size` bytes, if anything.
    pub fn check(&self, size: u64) -> Option<String> {
        if self.complex && !matches!(self.dtype, DType::F32 | DType::F64) {
            return Some(format!(
                "complex {} (only f32 and f64 pairs)",
                self.dtype.name()
            ));
        }
        let mut seen = vec![false; self.dims.len()];
        let perm = self.minor_to_major.len() == self.dims.len()
            && self.minor_to_major.iter().all(|&d| {
                let ok = (d as usize) < seen.len() && !seen[d as usize];
                if ok {
                    seen[d as usize] = true;
                }
                ok
            });
        if !perm {
            return Some(format!(
                "layout {:?} is not a permutation of the {} dimensions",
                self.minor_to_major,
                self.dims.len()
            ));
        }
        match self.bytes() {
            Some(b) if b == size => None,
            Some(b) => Some(format!("{} is {b} bytes, the region {size}", self.text())),
            None => Some(format!("{} overflows", self.text())),
        }
    }
}

/// A place of the compiled module's interface: parameter `number`'s or the result's array
/// leaf at tuple `index` (empty for a non-tuple). Text form: `param0`, `param1{0,2}`,
/// `result`, `result{1}`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RegionIo {
    /// An entry parameter's leaf.
    Param {
        /// Parameter number.
        number: u32,
        /// Tuple index path.
        index: Vec<u32>,
    },
    /// The result's leaf.
    Result {
        /// Tuple index path.
        index: Vec<u32>,
    },
}

impl RegionIo {
    /// The tuple index path.
    pub fn index(&self) -> &[u32] {
        match self {
            RegionIo::Param { index, .. } | RegionIo::Result { index } => index,
        }
    }
    /// The tuple index path as text: empty, or `{0,2}`.
    pub fn index_text(&self) -> String {
        let i = self.index();
        if i.is_empty() {
            String::new()
        } else {
            let v: Vec<String> = i.iter().map(u32::to_string).collect();
            format!("{{{}}}", v.join(","))
        }
    }
    /// Text form.
    pub fn text(&self) -> String {
        match self {
            RegionIo::Param { number, .. } => format!("param{number}{}", self.index_text()),
            RegionIo::Result { .. } => format!("result{}", self.index_text()),
        }
    }
    /// Parses the text form.
    pub fn parse(s: &str) -> Result<RegionIo, String> {
        let bad = || format!("expected paramN, paramN{{I,J}}, result or result{{I}}, got `{s}`");
        let (head, index) = match s.split_once('{') {
            Some((h, r)) => {
                let r = r.strip_suffix('}').ok_or_else(bad)?;
                let v: Vec<u32> = if r.is_empty() {
                    Vec::new()
                } else {
                    r.split(',')
                        .map(|d| d.trim().parse::<u32>().map_err(|_| bad()))
                        .collect::<Result<_, _>>()?
                };
                (h, v)
            }
            None => (s, Vec::new()),
        };
        if head == "result" {
            Ok(RegionIo::Result { index })
        } else {
            let number = head
                .strip_prefix("param")
                .and_then(|n| n.parse::<u32>().ok())
                .ok_or_else(bad)?;
            Ok(RegionIo::Param { number, index })
        }
    }
}

/// Instructions `start..end` were emitted for HLO instruction `hlo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolRange {
    /// First instruction index.
    pub start: u32,
    /// One past the last instruction index.
    pub end: u32,
    /// HLO instruction name.
    pub hlo: String,
}

/// An invalid program, or a binary file that is no program.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ProgramError {
    /// Violations of the program's invariants.
    #[error("invalid program:\n  - {}", .0.join("\n  - "))]
    Invalid(Vec<String>),
    /// A malformed binary file.
    #[error("bad program file at byte {offset}: {msg}")]
    Format { offset: usize, msg: String },
}

impl Program {
    /// The declaration of semaphore `s` (or its plain use).
    pub fn sem_decl(&self, s: u8) -> SemDecl {
        self.sems
            .iter()
            .find(|d| d.sem == s)
            .copied()
            .unwrap_or(SemDecl::plain(s))
    }

    /// Checks: operands fit their fields, element types suit their instructions, branch targets
    /// and descriptor indices are in range, descriptors, regions, symbols and semaphore
    /// declarations are well-formed.
    pub fn validate(&self) -> Result<(), ProgramError> {
        let mut e = Vec::new();
        for (i, d) in self.sems.iter().enumerate() {
            if d.sem >= crate::operand::NUM_SEMS {
                e.push(format!(".sem {}: no such semaphore (sem0..sem31)", d.sem));
            }
            if d.wait == 0 || d.signal == 0 {
                e.push(format!(
                    ".sem {}: wait= and signal= counts must be >= 1",
                    d.sem
                ));
            }
            if i > 0 && self.sems[i - 1].sem >= d.sem {
                e.push(format!(
                    ".sem {}: declarations must be sorted by index, each once",
                    d.sem
                ));
            }
        }
        let n = self.code.len() as u32;
        for (pc, inst) in self.code.iter().enumerate() {
            if let Err(err) = inst.encode() {
                e.push(format!("instruction {pc}: {err}"));
            }
            if let Err(err) = inst.check_types() {
                e.push(format!("instruction {pc}: {err}"));
            }
            let mut i = *inst;
            i.for_each_target(&mut |t: &mut Target| {
                if t.0 >= n {
                    e.push(format!(
                        "instruction {pc}: branch target {} is past the end ({n} instructions)",
                        t.0
                    ));
                }
            });
            if let Some(pat) = inst.pat() {
                match self.pats.get(pat.0 as usize) {
                    None => e.push(format!(
                        "instruction {pc}: pattern {} does not exist ({} patterns)",
                        pat.0,
                        self.pats.len()
                    )),
                    Some(p) => {
                        if let Some(why) = p.check_use(inst) {
                            e.push(format!("instruction {pc}: {why}"));
                        }
                    }
                }
            }
            if let Some(desc) = inst.dma_desc() {
                if inst.is_indexed_dma()
                    && self
                        .dma
                        .get(desc as usize)
                        .is_some_and(|d| d.dims.len() != 1)
                {
                    e.push(format!(
                        "instruction {pc}: `{}` needs a descriptor with exactly one dimension",
                        inst.mnemonic()
                    ));
                }
                if desc as usize >= self.dma.len() {
                    e.push(format!(
                        "instruction {pc}: DMA descriptor {desc} does not exist ({} descriptors)",
                        self.dma.len()
                    ));
                }
            }
        }
        for (i, p) in self.pats.iter().enumerate() {
            if let Some(why) = p.check() {
                e.push(format!("pattern {i}: {why}"));
            }
        }
        for (i, d) in self.dma.iter().enumerate() {
            if d.len == 0 {
                e.push(format!("DMA descriptor {i}: len must be >= 1"));
            }
            if d.dims.len() > MAX_DMA_DIMS {
                e.push(format!(
                    "DMA descriptor {i}: {} dimensions, at most {MAX_DMA_DIMS}",
                    d.dims.len()
                ));
            }
            if d.dims.iter().any(|x| x.count == 0) {
                e.push(format!("DMA descriptor {i}: every count must be >= 1"));
            }
        }
        let mut names: Vec<&str> = self.regions.iter().map(|r| r.name.as_str()).collect();
        names.sort_unstable();
        for w in names.windows(2) {
            if w[0] == w[1] {
                e.push(format!("region `{}` is defined twice", w[0]));
            }
        }
        let mut places = std::collections::BTreeSet::new();
        for r in &self.regions {
            if r.name.is_empty() {
                e.push("a region has an empty name".into());
            }
            if r.addr.checked_add(r.size).is_none() {
                e.push(format!("region `{}` overflows the address space", r.name));
            }
            if let Some(why) = r.array.as_ref().and_then(|a| a.check(r.size)) {
                e.push(format!("region `{}`: {why}", r.name));
            }
            if let Some(io) = &r.io {
                if !places.insert(io) {
                    e.push(format!("region `{}`: {} is held twice", r.name, io.text()));
                }
            }
            if let Some((from, to)) = r.live {
                if from > to || to > n {
                    e.push(format!(
                        "region `{}`: live range {from}..{to} is reversed or past the end \
                         ({n} instructions)",
                        r.name
                    ));
                }
            }
        }
        let mut prev_end = 0;
        for s in &self.symbols {
            if s.start >= s.end || s.end > n {
                e.push(format!(
                    "symbol `{}`: range {}..{} is empty or past the end ({n} instructions)",
                    s.hlo, s.start, s.end
                ));
            }
            if s.start < prev_end {
                e.push(format!(
                    "symbol `{}`: range {}..{} overlaps or precedes the previous one",
                    s.hlo, s.start, s.end
                ));
            }
            if s.hlo.is_empty() {
                e.push(format!(
                    "symbol at {}..{} has an empty name",
                    s.start, s.end
                ));
            }
            prev_end = s.end;
        }
        if e.is_empty() {
            Ok(())
        } else {
            Err(ProgramError::Invalid(e))
        }
    }

    /// The HLO instruction instruction `pc` was emitted for, if recorded.
    pub fn symbol_at(&self, pc: u32) -> Option<&str> {
        let i = self.symbols.partition_point(|s| s.end <= pc);
        self.symbols
            .get(i)
            .filter(|s| s.start <= pc)
            .map(|s| s.hlo.as_str())
    }

    /// The region named `name`.
    pub fn region(&self, name: &str) -> Option<&Region> {
        self.regions.iter().find(|r| r.name == name)
    }

    /// The region holding interface place `io`.
    pub fn io_region(&self, io: &RegionIo) -> Option<&Region> {
        self.regions.iter().find(|r| r.io.as_ref() == Some(io))
    }

    /// Bytes of `space` allocated at each instruction (one entry per instruction): the sum of
    /// the sizes of the regions of `space` whose `live` range holds it, plus those with no
    /// range (live for the whole run). Regions that overlap in address but not in lifetime
    /// (a buffer reused) count once each while live.
    pub fn live_bytes_by_pc(&self, space: Space) -> Vec<u64> {
        let n = self.code.len();
        let mut delta = vec![0i128; n + 1];
        for r in self.regions.iter().filter(|r| r.space == space) {
            let (from, to) = r.live.unwrap_or((0, n as u32));
            let (from, to) = ((from as usize).min(n), (to as usize).min(n));
            if from < to {
                delta[from] += r.size as i128;
                delta[to] -= r.size as i128;
            }
        }
        let mut acc = 0i128;
        delta[..n]
            .iter()
            .map(|d| {
                acc += d;
                acc.max(0) as u64
            })
            .collect()
    }
}

/// Random valid programs (for round-trip property tests).
#[cfg(any(test, feature = "arbitrary"))]
pub fn arbitrary_program() -> proptest::strategy::BoxedStrategy<Program> {
    use proptest::prelude::*;
    let name = "[a-z%][a-z0-9._ \"\\\\-]{0,10}";
    let space = prop_oneof![Just(Space::Hbm), Just(Space::Vmem)];
    let dim = (1u32..100, any::<i32>(), any::<i32>()).prop_map(|(count, s, d)| DmaDim {
        count,
        src_stride: s as i64,
        dst_stride: d as i64,
    });
    let desc = (
        1u32..100_000,
        proptest::collection::vec(dim, 0..=MAX_DMA_DIMS),
    )
        .prop_map(|(len, dims)| DmaDesc { len, dims });
    let seg = (
        space.clone(),
        any::<u32>(),
        proptest::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(|(space, addr, bytes)| DataSegment {
            space,
            addr: addr as u64,
            bytes,
        });
    let array = proptest::option::of((
        proptest::sample::select(DType::ALL.to_vec()),
        proptest::collection::vec(1u64..6, 0..4),
        any::<bool>(),
    ));
    let io = proptest::option::of((
        proptest::option::of(0u32..4),
        proptest::collection::vec(0u32..3, 0..3),
    ));
    let region = (
        name,
        space,
        any::<u32>(),
        any::<u32>(),
        array,
        io,
        proptest::option::of((0u32..50, 0u32..50)),
    )
        .prop_map(|(name, space, a, s, array, io, live)| {
            let array = array.map(|(dtype, dims, rev)| {
                let mut a = RegionArray::row_major(dtype, dims);
                if rev {
                    a.minor_to_major.reverse();
                }
                a
            });
            let size = match &array {
                Some(a) => a.bytes().unwrap_or(0),
                None => s as u64,
            };
            Region {
                name,
                space,
                addr: a as u64,
                size,
                array,
                io: io.map(|(p, index)| match p {
                    Some(number) => RegionIo::Param { number, index },
                    None => RegionIo::Result { index },
                }),
                live: live.map(|(a, b)| (a.min(b), a.max(b))),
            }
        });
    (
        proptest::collection::vec(crate::table::arbitrary_inst(), 1..40),
        proptest::collection::vec(desc, 1..4),
        proptest::collection::vec(seg, 0..3),
        proptest::collection::vec(region, 0..4),
        proptest::collection::vec((any::<u32>(), any::<u32>(), name), 0..6),
        proptest::collection::btree_map(
            0..crate::operand::NUM_SEMS,
            (1u32..5, 1u32..5, any::<bool>()),
            0..4,
        ),
    )
        .prop_map(|(mut code, mut dma, data, mut regions, syms, sems)| {
            let n = code.len() as u32;
            // A pattern per instruction that names one: its first element operand, laid out
            // from the generated index's bits.
            let mut pats: Vec<Pattern> = Vec::new();
            for inst in code.iter_mut() {
                let Some(pat) = inst.pat() else { continue };
                let field = inst.operand_uses().first().map(|u| u.field.to_string());
                let Some(field) = field else { continue };
                let k = pat.0;
                let dims = vec![
                    PatDim {
                        count: k % 7 + 1,
                        stride: (k % 13) as u64,
                    },
                    PatDim {
                        count: k % 5 + 1,
                        stride: (k % 3) as u64 * 64,
                    },
                ];
                pats.push(Pattern {
                    operands: vec![(field, Layout { dims })],
                });
                let idx = crate::operand::Pat(pats.len() as u32 - 1);
                inst.set_pat(Some(idx));
            }
            for inst in code.iter_mut() {
                inst.for_each_target(&mut |t| t.0 %= n);
                if let Inst::DmaCopy { desc, .. } = inst {
                    *desc %= dma.len() as u32;
                }
                // Indexed copies need a one-dimensional descriptor: one of their own.
                if let Inst::DmaGather { desc, .. } | Inst::DmaScatter { desc, .. } = inst {
                    dma.push(DmaDesc {
                        len: *desc % 64 + 1,
                        dims: vec![DmaDim {
                            count: *desc % 9 + 1,
                            src_stride: 64,
                            dst_stride: 128,
                        }],
                    });
                    *desc = dma.len() as u32 - 1;
                }
            }
            regions.sort_by(|a, b| a.name.cmp(&b.name));
            regions.dedup_by(|a, b| a.name == b.name);
            let mut held = std::collections::BTreeSet::new();
            for r in regions.iter_mut() {
                if let Some(io) = &r.io {
                    if !held.insert(io.clone()) {
                        r.io = None;
                    }
                }
                if let Some((a, b)) = r.live {
                    r.live = Some((a.min(n), b.min(n)));
                }
            }
            // Symbol ranges from sorted distinct cut points.
            let mut cuts: Vec<u32> = syms
                .iter()
                .flat_map(|(a, b, _)| [a % (n + 1), b % (n + 1)])
                .collect();
            cuts.sort_unstable();
            cuts.dedup();
            let symbols = cuts
                .chunks_exact(2)
                .zip(syms.iter())
                .map(|(c, (_, _, name))| SymbolRange {
                    start: c[0],
                    end: c[1],
                    hlo: name.clone(),
                })
                .collect();
            let sems = sems
                .into_iter()
                .map(|(sem, (wait, signal, shared))| SemDecl {
                    sem,
                    wait,
                    signal,
                    shared,
                })
                .collect();
            Program {
                code,
                data,
                dma,
                pats,
                regions,
                symbols,
                sems,
            }
        })
        .boxed()
}

#[cfg(test)]
mod chunk_tests {
    use crate::program::{DmaDesc, DmaDim};

    #[test]
    fn chunk_offsets_in_order() {
        let d = DmaDesc {
            len: 4,
            dims: vec![
                DmaDim {
                    count: 2,
                    src_stride: 10,
                    dst_stride: 1,
                },
                DmaDim {
                    count: 3,
                    src_stride: 100,
                    dst_stride: -5,
                },
            ],
        };
        let got: Vec<(i64, i64)> = d.chunk_offsets().collect();
        let mut want = Vec::new();
        for j in 0..3i64 {
            for i in 0..2i64 {
                want.push((10 * i + 100 * j, i - 5 * j));
            }
        }
        assert_eq!(got, want);
        assert_eq!(d.chunks(), 6);
        assert_eq!(d.total_bytes(), 24);
        let one = DmaDesc {
            len: 8,
            dims: vec![],
        };
        assert_eq!(one.chunk_offsets().collect::<Vec<_>>(), vec![(0, 0)]);
        let huge = DmaDesc {
            len: 1,
            dims: vec![
                DmaDim {
                    count: u32::MAX,
                    src_stride: 1,
                    dst_stride: 1
                };
                3
            ],
        };
        assert_eq!(huge.chunk_offsets().nth(5), Some((5, 5)));
    }
}
