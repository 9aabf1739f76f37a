//! Expands `rng-bit-generator` (ThreeFry-2x32-20 and Philox-4x32-10) and `rng`
//! (`rng_uniform`, `rng_normal`) into integer and float ops the VPU runs, bit-identical with the
//! reference evaluator (`eval::linalg::rng_bits` and `rng`; read their docs for the exact
//! streams):
//!
//! * **Philox** (`rng_philox`, `rng_default`): `B = ⌈words/4⌉` blocks side by side as `u32[B]`
//!   arrays; the block counter is `(lo + iota, hi + carry)` in u64; each of the 10 rounds is two
//!   32×32→64 products done as u64 multiplies (the VPU emulates 64-bit types), their high and
//!   low words (`>> 32` and a u64→u32 convert, which keeps the low bits), three xors and the key
//!   schedule's two adds. The four words of a block are stacked (`concatenate` of `[B,1]`
//!   columns) into consecutive outputs; 64-bit outputs pair words `w0 | w1 << 32`.
//! * **ThreeFry**: one call per counter `state[1] + j` as `u32[C]` arrays, 20 rounds of
//!   add / rotate (`shl`, `shr`, `or`) / xor and 5 key injections; for 32-bit outputs the two
//!   words of call `j` land at positions `2s` and `2s+1` of the split dimension (stacked along a
//!   new dimension and reshaped), as XLA lays them out.
//! * **rng**: the evaluator's stream is Philox keyed by the seed (0) with counter `(c, 0)`
//!   where `c` starts at 0 and advances by each `rng`'s block count in evaluation order (each
//!   computation's post order; a loop body's `rng`s draw again every iteration, a branch's only
//!   when taken). Two forms:
//!   * every `rng` in the entry computation (and no `rng-get-and-update-state`): each gets its
//!     constant counter base in post order;
//!   * otherwise (an `rng` in a while body or condition, a branch, a called computation): the
//!     counter advances at run time. Each `rng` becomes `rng-get-and-update-state(),
//!     delta=blocks` (which returns `[counter, seed]` and advances the counter: the evaluator's
//!     own definition; `lower/rng_state.rs` keeps it in HBM) feeding the same Philox expansion.
//!     The evaluation order is pinned with control edges: in every computation that draws, the
//!     draws and the instructions calling computations that draw (while, conditional, …) are
//!     chained in their original post order (`control-predecessors`), so neither later passes
//!     nor the lowering's post order can reorder the stream.
//!
//!   Uniform floats: `a + (b−a)·u` in f64 with `u` from the top 24
//!   (53 for f64) bits of a 64-bit word, rounded to the type, a value rounded up to `b` replaced
//!   by the next value below `b` (bit arithmetic on the VPU); uniform integers `a + w mod (b−a)`
//!   in 64 bits; normal: Box–Muller in f64 (`log`, `sqrt`, `cos`, `sin` on the VPU) on the two
//!   64-bit words of each block. (`rng-bit-generator` is a pure function of its state operand,
//!   so it expands the same way in every computation.)
//!
//! Cost (VPU instructions of `B` or `C` elements): Philox about 16 per round, 160 in all, half
//! of them on 64-bit types (`vpu.emulated_64bit_factor` slower); ThreeFry about 5 per round plus
//! injections, about 115, all 32-bit; plus a few data-movement instructions to interleave.

use super::rewrite::{run_expander, OpExpander, Rw};
use crate::error::CResult;
use crate::pass::Pass;
use hlo::CompId;
use hlo::{
    ComparisonDirection as D, ElementType as T, InstId, Instruction, Module, Opcode, RngAlgorithm,
    RngDistribution,
};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// See the module docs.
pub struct RngExpander;

impl Pass for RngExpander {
    fn name(&self) -> &'static str {
        "rng-expander"
    }
    fn run(&self, m: &mut Module) -> CResult<bool> {
        let mut changed = run_expander(&BitGen, m)?;
        let entry = m.entry;
        let draws = drawing_comps(m);
        if draws.iter().all(|&c| c == entry)
            && !m.comps[entry]
                .insts
                .values()
                .any(|i| i.opcode == Opcode::RngGetAndUpdateState)
        {
            // Every draw in the entry computation: constant counters in post order.
            let Some(order) = m.comps[entry].post_order() else {
                return Ok(changed);
            };
            let rngs: Vec<InstId> = order
                .into_iter()
                .filter(|&h| m.comps[entry].insts[h].opcode == Opcode::Rng)
                .collect();
            let x = RngOp {
                counter: Cell::new(0),
                only: rngs,
                state: None,
            };
            changed |= super::rewrite::run_expander_in(&x, m, entry)?;
            return Ok(changed);
        }
        // A run-time counter, the order pinned by control edges.
        for &c in &draws {
            let Some(order) = m.comps[c].post_order() else {
                continue;
            };
            // (`call` and `fusion` are inlined by now: what is left of them is dead.)
            let calls_draw = |i: &Instruction| {
                !matches!(i.opcode, Opcode::Call | Opcode::Fusion)
                    && i.attrs
                        .called_computations()
                        .iter()
                        .any(|d| draws.contains(d))
            };
            let stream: Vec<InstId> = order
                .into_iter()
                .filter(|&h| {
                    let i = &m.comps[c].insts[h];
                    matches!(i.opcode, Opcode::Rng | Opcode::RngGetAndUpdateState) || calls_draw(i)
                })
                .collect();
            let rngs: Vec<InstId> = stream
                .iter()
                .copied()
                .filter(|&h| m.comps[c].insts[h].opcode == Opcode::Rng)
                .collect();
            let x = RngOp {
                counter: Cell::new(0),
                only: rngs,
                state: Some(RefCell::new(HashMap::new())),
            };
            changed |= super::rewrite::run_expander_in(&x, m, c)?;
            let got = x.state.expect("run-time form").into_inner();
            let stream: Vec<InstId> = stream
                .iter()
                .map(|h| got.get(h).copied().unwrap_or(*h))
                .collect();
            for w in stream.windows(2) {
                let preds = &mut m.comps[c].insts[w[1]].attrs.control_predecessors;
                if !preds.contains(&w[0]) {
                    preds.push(w[0]);
                    changed = true;
                }
            }
        }
        Ok(changed)
    }
}

/// The computations that draw from the `rng` stream: those with an `rng` or
/// `rng-get-and-update-state`, and those calling one that draws.
fn drawing_comps(m: &Module) -> Vec<CompId> {
    let direct = |c: CompId| {
        m.comps[c]
            .insts
            .values()
            .any(|i| matches!(i.opcode, Opcode::Rng | Opcode::RngGetAndUpdateState))
    };
    let mut draws: Vec<bool> = m.comps.handles().map(direct).collect();
    loop {
        let mut more = false;
        for c in m.comps.handles() {
            if !draws[c.index()]
                && m.comps[c].insts.values().any(|i| {
                    i.attrs
                        .called_computations()
                        .iter()
                        .any(|d| draws.get(d.index()).copied().unwrap_or(false))
                })
            {
                draws[c.index()] = true;
                more = true;
            }
        }
        if !more {
            break;
        }
    }
    m.comps.handles().filter(|c| draws[c.index()]).collect()
}

struct BitGen;

/// The unsigned integer type of `ty`'s width.
fn uns(ty: T) -> T {
    match ty.bits() {
        8 => T::U8,
        16 => T::U16,
        64 => T::U64,
        _ => T::U32,
    }
}

/// Splats of scalar constants and shorthands over one array shape.
struct K<'a, 'm> {
    rw: &'a mut Rw<'m>,
    dims: Vec<i64>,
}

impl K<'_, '_> {
    fn c(&mut self, ty: T, v: u64) -> CResult<InstId> {
        let c = self.rw.iconst(ty, v)?;
        self.rw.splat(c, &self.dims)
    }
    fn op(&mut self, op: Opcode, a: InstId, b: InstId) -> CResult<InstId> {
        self.rw.op(op, &[a, b])
    }
    /// `a op constant`.
    fn opk(&mut self, op: Opcode, a: InstId, v: u64) -> CResult<InstId> {
        let ty = self.rw.arr(a)?.ty;
        let k = self.c(ty, v)?;
        self.rw.op(op, &[a, k])
    }
    /// The low 32 bits of a u64 array.
    fn lo32(&mut self, x: InstId) -> CResult<InstId> {
        self.rw.convert(x, T::U32)
    }
    /// The high 32 bits of a u64 array.
    fn hi32(&mut self, x: InstId) -> CResult<InstId> {
        let s = self.opk(Opcode::ShiftRightLogical, x, 32)?;
        self.rw.convert(s, T::U32)
    }
    /// `lo | hi << 32` of two u32 arrays.
    fn join(&mut self, lo: InstId, hi: InstId) -> CResult<InstId> {
        let l = self.rw.convert(lo, T::U64)?;
        let h = self.rw.convert(hi, T::U64)?;
        let hs = self.opk(Opcode::ShiftLeft, h, 32)?;
        self.op(Opcode::Or, l, hs)
    }
    /// Scalar `x` (any shape with one element) broadcast to the shape.
    fn spread(&mut self, x: InstId) -> CResult<InstId> {
        let s = self.rw.reshape(x, &[])?;
        self.rw.splat(s, &self.dims)
    }
}

/// Philox-4x32-10 on counters `(lo, hi)` (u64 arrays) with key `(k0, k1)` (u32 arrays).
fn philox(
    k: &mut K<'_, '_>,
    lo: InstId,
    hi: InstId,
    mut k0: InstId,
    mut k1: InstId,
) -> CResult<[InstId; 4]> {
    let mut x = [k.lo32(lo)?, k.hi32(lo)?, k.lo32(hi)?, k.hi32(hi)?];
    for round in 0..10 {
        let a = k.rw.convert(x[0], T::U64)?;
        let c = k.rw.convert(x[2], T::U64)?;
        let p0 = k.opk(Opcode::Multiply, a, 0xD251_1F53)?;
        let p1 = k.opk(Opcode::Multiply, c, 0xCD9E_8D57)?;
        let h1 = k.hi32(p1)?;
        let t0 = k.op(Opcode::Xor, h1, x[1])?;
        let n0 = k.op(Opcode::Xor, t0, k0)?;
        let n1 = k.lo32(p1)?;
        let h0 = k.hi32(p0)?;
        let t2 = k.op(Opcode::Xor, h0, x[3])?;
        let n2 = k.op(Opcode::Xor, t2, k1)?;
        let n3 = k.lo32(p0)?;
        x = [n0, n1, n2, n3];
        if round < 9 {
            k0 = k.opk(Opcode::Add, k0, 0x9E37_79B9)?;
            k1 = k.opk(Opcode::Add, k1, 0xBB67_AE85)?;
        }
    }
    Ok(x)
}

/// ThreeFry-2x32-20 of counters `ctr` (u64 array) with key `key` (u64 array, all equal).
fn threefry(k: &mut K<'_, '_>, ctr: InstId, key: InstId) -> CResult<[InstId; 2]> {
    const ROT: [u64; 8] = [13, 15, 26, 6, 17, 29, 16, 24];
    let k0 = k.lo32(key)?;
    let k1 = k.hi32(key)?;
    let kx = k.op(Opcode::Xor, k0, k1)?;
    let k2 = k.opk(Opcode::Xor, kx, 0x1BD1_1BDA)?;
    let ks = [k0, k1, k2];
    let c0 = k.lo32(ctr)?;
    let c1 = k.hi32(ctr)?;
    let mut x0 = k.op(Opcode::Add, c0, ks[0])?;
    let mut x1 = k.op(Opcode::Add, c1, ks[1])?;
    for block in 0..5usize {
        let rots = if block % 2 == 0 { &ROT[..4] } else { &ROT[4..] };
        for &r in rots {
            x0 = k.op(Opcode::Add, x0, x1)?;
            let l = k.opk(Opcode::ShiftLeft, x1, r)?;
            let h = k.opk(Opcode::ShiftRightLogical, x1, 32 - r)?;
            let rot = k.op(Opcode::Or, l, h)?;
            x1 = k.op(Opcode::Xor, rot, x0)?;
        }
        x0 = k.op(Opcode::Add, x0, ks[(block + 1) % 3])?;
        let y = k.op(Opcode::Add, x1, ks[(block + 2) % 3])?;
        x1 = k.opk(Opcode::Add, y, block as u64 + 1)?;
    }
    Ok([x0, x1])
}

/// The first `n` elements of the flat `x`, reshaped to `dims`.
fn first(rw: &mut Rw<'_>, x: InstId, n: i64, dims: &[i64]) -> CResult<InstId> {
    let len = rw.arr(x)?.dims.iter().product::<i64>();
    let flat = rw.reshape(x, &[len])?;
    let s = if len == n {
        flat
    } else {
        rw.slice(flat, &[0], &[n])?
    };
    rw.reshape(s, dims)
}

/// 32-bit words (u32) reinterpreted as element type `ty` of 8, 16 or 32 bits.
fn words_as(rw: &mut Rw<'_>, w: InstId, ty: T) -> CResult<InstId> {
    let ut = match ty.bits() {
        8 => T::U8,
        16 => T::U16,
        _ => T::U32,
    };
    let u = rw.convert(w, ut)?;
    if ut == ty {
        Ok(u)
    } else {
        rw.bitcast(u, ty)
    }
}

/// u64 words reinterpreted as a 64-bit `ty`.
fn words64_as(rw: &mut Rw<'_>, w: InstId, ty: T) -> CResult<InstId> {
    if ty == T::U64 {
        Ok(w)
    } else {
        rw.bitcast(w, ty)
    }
}

impl OpExpander for BitGen {
    fn matches(&self, i: &Instruction) -> bool {
        i.opcode == Opcode::RngBitGenerator
    }

    fn expand(&self, rw: &mut Rw<'_>, h: InstId) -> CResult<Option<InstId>> {
        let i = rw.m.comps[rw.c].insts[h].clone();
        let state = i.operands[0];
        let st = rw.arr(state)?;
        let Some(out) = i
            .shape
            .as_tuple()
            .and_then(|t| t.get(1))
            .and_then(|s| s.as_array())
            .cloned()
        else {
            return Ok(None);
        };
        if st.ty != T::U64 || st.dims.len() != 1 || out.is_dynamic() {
            return Ok(None);
        }
        let ty = out.ty;
        if !matches!(
            ty,
            T::U8
                | T::S8
                | T::U16
                | T::S16
                | T::F16
                | T::BF16
                | T::U32
                | T::S32
                | T::F32
                | T::U64
                | T::S64
                | T::F64
        ) {
            return Ok(None);
        }
        let wide = ty.bits() == 64;
        let dims = out.dims.clone();
        let n: i64 = dims.iter().product();
        let words = st.dims[0];
        let word = |rw: &mut Rw<'_>, j: i64| rw.slice(state, &[j], &[j + 1]);
        let key1 = word(rw, 0)?;
        let hlo::View::RngBitGenerator { algorithm: alg } = i.view() else {
            return Ok(None);
        };
        match alg {
            RngAlgorithm::ThreeFry => {
                if words != 2 {
                    return Ok(None);
                }
                let ctr1 = word(rw, 1)?;
                // Calls and how their words are laid out.
                let (outer, half, inner, d) = if dims.is_empty() {
                    (1, 1, 1, 1)
                } else {
                    let split = dims.iter().position(|&d| d % 2 == 0).unwrap_or_else(|| {
                        let mut best = 0;
                        for (k, &d) in dims.iter().enumerate() {
                            if d > dims[best] {
                                best = k;
                            }
                        }
                        best
                    });
                    let outer: i64 = dims[..split].iter().product();
                    let inner: i64 = dims[split + 1..].iter().product();
                    (outer, (dims[split] + 1) / 2, inner, dims[split])
                };
                let calls = if wide { n } else { outer * half * inner };
                let data = if calls == 0 {
                    let z = rw.iconst(uns(ty), 0)?;
                    let z = rw.splat(z, &dims)?;
                    if uns(ty) == ty {
                        z
                    } else {
                        rw.bitcast(z, ty)?
                    }
                } else {
                    let mut k = K {
                        rw,
                        dims: vec![calls],
                    };
                    let base = k.spread(ctr1)?;
                    let key = k.spread(key1)?;
                    let io = k.rw.iota(T::U64, &[calls], 0)?;
                    let ctr = k.op(Opcode::Add, base, io)?;
                    let [x0, x1] = threefry(&mut k, ctr, key)?;
                    if wide {
                        let w = k.join(x0, x1)?;
                        let w = rw.reshape(w, &dims)?;
                        words64_as(rw, w, ty)?
                    } else {
                        let sh = [outer, half, inner];
                        let a = rw.reshape(x0, &sh)?;
                        let b = rw.reshape(x1, &sh)?;
                        let s = rw.stack(&[a, b], 2)?;
                        let s = rw.reshape(s, &[outer, 2 * half, inner])?;
                        let s = if 2 * half != d {
                            rw.slice(s, &[0, 0, 0], &[outer, d, inner])?
                        } else {
                            s
                        };
                        let w = rw.reshape(s, &dims)?;
                        words_as(rw, w, ty)?
                    }
                };
                let c = rw.iconst(T::U64, calls as u64)?;
                let c1 = rw.reshape(c, &[1])?;
                let nctr = rw.op(Opcode::Add, &[ctr1, c1])?;
                let ns = rw.concat(&[key1, nctr], 0)?;
                Ok(Some(rw.op(Opcode::Tuple, &[ns, data])?))
            }
            RngAlgorithm::Philox | RngAlgorithm::Default => {
                let (lo1, hi1) = match words {
                    2 => (word(rw, 1)?, key1),
                    3 => (word(rw, 1)?, word(rw, 2)?),
                    _ => return Ok(None),
                };
                let w32 = if wide { 2 * n } else { n };
                let blocks = (w32 + 3) / 4;
                let data = philox_words(rw, key1, lo1, hi1, blocks, 0, wide, n, &dims)?;
                let data = if wide {
                    words64_as(rw, data, ty)?
                } else {
                    words_as(rw, data, ty)?
                };
                // New state: the counter advanced by the blocks drawn (carry into `hi`).
                let b = rw.iconst(T::U64, blocks as u64)?;
                let b1 = rw.reshape(b, &[1])?;
                let nlo = rw.op(Opcode::Add, &[lo1, b1])?;
                let ns = if words == 2 {
                    rw.concat(&[key1, nlo], 0)?
                } else {
                    let carry = rw.cmp(nlo, lo1, D::Lt)?;
                    let c = rw.convert(carry, T::U64)?;
                    let nhi = rw.op(Opcode::Add, &[hi1, c])?;
                    rw.concat(&[key1, nlo, nhi], 0)?
                };
                Ok(Some(rw.op(Opcode::Tuple, &[ns, data])?))
            }
        }
    }
}

/// Philox output words: `blocks` blocks on counters `(lo + base + i, hi + carry)` with key
/// `key` (each a `u64[1]` array); the first `n` 32-bit words (`wide`: 64-bit words, u64) as
/// `dims`. `n = 0` gives zeros.
#[allow(clippy::too_many_arguments)]
fn philox_words(
    rw: &mut Rw<'_>,
    key1: InstId,
    lo1: InstId,
    hi1: InstId,
    blocks: i64,
    base: u64,
    wide: bool,
    n: i64,
    dims: &[i64],
) -> CResult<InstId> {
    let wt = if wide { T::U64 } else { T::U32 };
    if n == 0 {
        let z = rw.iconst(wt, 0)?;
        return rw.splat(z, dims);
    }
    let mut k = K {
        rw,
        dims: vec![blocks],
    };
    let lo = k.spread(lo1)?;
    let hi = k.spread(hi1)?;
    let key = k.spread(key1)?;
    let io = k.rw.iota(T::U64, &[blocks], 0)?;
    let io = if base != 0 {
        k.opk(Opcode::Add, io, base)?
    } else {
        io
    };
    let clo = k.op(Opcode::Add, lo, io)?;
    let carry = k.rw.cmp(clo, lo, D::Lt)?;
    let c = k.rw.convert(carry, T::U64)?;
    let chi = k.op(Opcode::Add, hi, c)?;
    let k0 = k.lo32(key)?;
    let k1 = k.hi32(key)?;
    let x = philox(&mut k, clo, chi, k0, k1)?;
    let words = if wide {
        let a = k.join(x[0], x[1])?;
        let b = k.join(x[2], x[3])?;
        rw.stack(&[a, b], 1)?
    } else {
        rw.stack(&x, 1)?
    };
    first(rw, words, n, dims)
}

/// Expands the listed `rng` instructions: counters in list order, or (`state`) from an
/// `rng-get-and-update-state` each, recorded by the `rng` it replaces.
struct RngOp {
    counter: Cell<u64>,
    only: Vec<InstId>,
    state: Option<RefCell<HashMap<InstId, InstId>>>,
}

impl super::rewrite::OpExpander for RngOp {
    fn matches(&self, i: &Instruction) -> bool {
        i.opcode == Opcode::Rng
    }

    fn expand(&self, rw: &mut Rw<'_>, h: InstId) -> CResult<Option<InstId>> {
        if !self.only.contains(&h) {
            return Ok(None);
        }
        let i = rw.m.comps[rw.c].insts[h].clone();
        let Some(out) = i.shape.as_array().cloned() else {
            return Ok(None);
        };
        let hlo::View::Rng { distribution: dist } = i.view() else {
            return Ok(None);
        };
        if out.is_dynamic() || i.operands.len() != 2 {
            return Ok(None);
        }
        let ty = out.ty;
        let dims = out.dims.clone();
        let n: i64 = dims.iter().product();
        let (a, b) = (i.operands[0], i.operands[1]);
        // Every value takes one 64-bit word; normal takes them in pairs.
        let w64 = match dist {
            RngDistribution::Normal => (n + 1) / 2 * 2,
            RngDistribution::Uniform => n,
        };
        let float = matches!(ty, T::F16 | T::BF16 | T::F32 | T::F64);
        let int = matches!(
            ty,
            T::U8 | T::S8 | T::U16 | T::S16 | T::U32 | T::S32 | T::U64 | T::S64
        );
        match dist {
            RngDistribution::Uniform if !(float || int) => return Ok(None),
            RngDistribution::Normal if !float => return Ok(None),
            _ => {}
        }
        let blocks = (2 * w64 + 3) / 4;
        let zero = rw.iconst(T::U64, 0)?;
        let z1 = rw.reshape(zero, &[1])?;
        // Counter (base + ctr + i, 0), key the seed.
        let (ctr, key, base) = match &self.state {
            None => {
                // Seed 0: key 0.
                let base = self.counter.get();
                self.counter.set(base.wrapping_add(blocks as u64));
                (z1, z1, base)
            }
            Some(got) => {
                let mut attrs = hlo::Attrs::default();
                attrs.extra.push(("delta".into(), blocks.to_string()));
                let st = rw.add(Opcode::RngGetAndUpdateState, &[], attrs, None)?;
                got.borrow_mut().insert(h, st);
                let ctr = rw.slice(st, &[0], &[1])?;
                let key = rw.slice(st, &[1], &[2])?;
                (ctr, key, 0)
            }
        };
        let r = match dist {
            RngDistribution::Uniform => {
                let w = philox_words(rw, key, ctr, z1, blocks, base, true, n, &[n])?;
                if float {
                    uniform_float(rw, w, a, b, ty, n)?
                } else {
                    uniform_int(rw, w, a, b, ty, n)?
                }
            }
            RngDistribution::Normal => {
                let w = philox_words(rw, key, ctr, z1, blocks, base, true, w64, &[w64 / 2, 2])?;
                normal(rw, w, a, b, ty, w64 / 2, n)?
            }
        };
        Ok(Some(rw.reshape(r, &dims)?))
    }
}

/// `u = (w >> (64 − bits)) · 2^−bits` in f64.
fn unit(k: &mut K<'_, '_>, w: InstId, bits: u32) -> CResult<InstId> {
    let s = k.opk(Opcode::ShiftRightLogical, w, 64 - bits as u64)?;
    let f = k.rw.convert(s, T::F64)?;
    let c = k.rw.fconst(T::F64, (-(bits as f64)).exp2())?;
    let c = k.rw.splat(c, &k.dims)?;
    k.op(Opcode::Multiply, f, c)
}

/// Uniform floats in `[a, b)` from 64-bit words `w` (`u64[n]`).
fn uniform_float(
    rw: &mut Rw<'_>,
    w: InstId,
    a: InstId,
    b: InstId,
    ty: T,
    n: i64,
) -> CResult<InstId> {
    let bits = if ty == T::F64 { 53 } else { 24 };
    let a64 = rw.convert(a, T::F64)?;
    let b64 = rw.convert(b, T::F64)?;
    let d = rw.op(Opcode::Subtract, &[b64, a64])?;
    let up = rw.cmp(b64, a64, D::Gt)?;
    let mut k = K { rw, dims: vec![n] };
    let u = unit(&mut k, w, bits)?;
    let dn = k.rw.splat(d, &[n])?;
    let an = k.rw.splat(a64, &[n])?;
    let t = k.op(Opcode::Multiply, dn, u)?;
    let v = k.op(Opcode::Add, an, t)?;
    let upn = k.rw.splat(up, &[n])?;
    let v = k.rw.op(Opcode::Select, &[upn, v, an])?;
    let v = k.rw.convert(v, ty)?;
    // The largest value below `b` (b's bits stepped toward −inf), for values rounded up to b.
    let bt = k.rw.convert(b, ty)?;
    let ut = uns(ty);
    let nb = ty.bits();
    let sign = 1u64 << (nb - 1);
    let bits_b = k.rw.bitcast(bt, ut)?;
    let c = |rw: &mut Rw<'_>, v: u64| rw.iconst(ut, v);
    let ks = c(k.rw, sign)?;
    let km = c(k.rw, sign - 1)?;
    let k1 = c(k.rw, 1)?;
    let k0 = c(k.rw, 0)?;
    let mag = k.rw.op(Opcode::And, &[bits_b, km])?;
    let sb = k.rw.op(Opcode::And, &[bits_b, ks])?;
    let is0 = k.rw.cmp(mag, k0, D::Eq)?;
    let pos = k.rw.cmp(sb, k0, D::Eq)?;
    let dec = k.rw.op(Opcode::Subtract, &[bits_b, k1])?;
    let inc = k.rw.op(Opcode::Add, &[bits_b, k1])?;
    let step = k.rw.op(Opcode::Select, &[pos, dec, inc])?;
    let tiny = k.rw.op(Opcode::Or, &[ks, k1])?;
    let topb = k.rw.op(Opcode::Select, &[is0, tiny, step])?;
    let top = k.rw.bitcast(topb, ty)?;
    let topn = k.rw.splat(top, &[n])?;
    let bn = k.rw.splat(bt, &[n])?;
    let hit = k.rw.cmp(v, bn, D::Ge)?;
    let hit = k.op(Opcode::And, hit, upn)?;
    k.rw.op(Opcode::Select, &[hit, topn, v])
}

/// Uniform integers `a + w mod (b − a)` (`a` if `b ≤ a`) from 64-bit words `w` (`u64[n]`).
fn uniform_int(rw: &mut Rw<'_>, w: InstId, a: InstId, b: InstId, ty: T, n: i64) -> CResult<InstId> {
    // Bounds widened to 64 bits with their signedness, then seen as u64 for the arithmetic.
    let wt = if ty.is_signed_int() { T::S64 } else { T::U64 };
    let a64 = rw.convert(a, wt)?;
    let b64 = rw.convert(b, wt)?;
    let up = rw.cmp(b64, a64, D::Gt)?;
    let au = if wt == T::U64 {
        a64
    } else {
        rw.bitcast(a64, T::U64)?
    };
    let bu = if wt == T::U64 {
        b64
    } else {
        rw.bitcast(b64, T::U64)?
    };
    let d = rw.op(Opcode::Subtract, &[bu, au])?;
    // A zero range would divide by zero: the select below discards it, use 1.
    let one = rw.iconst(T::U64, 1)?;
    let d = rw.op(Opcode::Select, &[up, d, one])?;
    let dn = rw.splat(d, &[n])?;
    let an = rw.splat(au, &[n])?;
    let r = rw.op(Opcode::Remainder, &[w, dn])?;
    let v = rw.op(Opcode::Add, &[an, r])?;
    let upn = rw.splat(up, &[n])?;
    let v = rw.op(Opcode::Select, &[upn, v, an])?;
    let v = if wt == T::U64 {
        v
    } else {
        rw.bitcast(v, T::S64)?
    };
    rw.convert(v, ty)
}

/// Box–Muller normals `mu + sigma·z` from `pairs` rows of two 64-bit words (`u64[pairs, 2]`).
fn normal(
    rw: &mut Rw<'_>,
    w: InstId,
    mu: InstId,
    sigma: InstId,
    ty: T,
    pairs: i64,
    n: i64,
) -> CResult<InstId> {
    let w0 = rw.slice(w, &[0, 0], &[pairs, 1])?;
    let w1 = rw.slice(w, &[0, 1], &[pairs, 2])?;
    let w0 = rw.reshape(w0, &[pairs])?;
    let w1 = rw.reshape(w1, &[pairs])?;
    let mut k = K {
        rw,
        dims: vec![pairs],
    };
    let u0 = unit(&mut k, w0, 53)?;
    let one = k.rw.fconst(T::F64, 1.0)?;
    let one = k.rw.splat(one, &[pairs])?;
    let u1 = k.op(Opcode::Subtract, one, u0)?;
    let u2 = unit(&mut k, w1, 53)?;
    let l = k.rw.op(Opcode::Log, &[u1])?;
    let m2 = k.rw.fconst(T::F64, -2.0)?;
    let m2 = k.rw.splat(m2, &[pairs])?;
    let l2 = k.op(Opcode::Multiply, m2, l)?;
    let r = k.rw.op(Opcode::Sqrt, &[l2])?;
    let tp = k.rw.fconst(T::F64, 2.0 * std::f64::consts::PI)?;
    let tp = k.rw.splat(tp, &[pairs])?;
    let t = k.op(Opcode::Multiply, tp, u2)?;
    let mu = k.rw.convert(mu, T::F64)?;
    let sg = k.rw.convert(sigma, T::F64)?;
    let mun = k.rw.splat(mu, &[pairs])?;
    let sgn = k.rw.splat(sg, &[pairs])?;
    let sr = k.op(Opcode::Multiply, sgn, r)?;
    let cs = k.rw.op(Opcode::Cos, &[t])?;
    let sn = k.rw.op(Opcode::Sin, &[t])?;
    let zc = k.op(Opcode::Multiply, sr, cs)?;
    let zs = k.op(Opcode::Multiply, sr, sn)?;
    let zc = k.op(Opcode::Add, mun, zc)?;
    let zs = k.op(Opcode::Add, mun, zs)?;
    let z = rw.stack(&[zc, zs], 1)?;
    let z = first(rw, z, n, &[n])?;
    rw.convert(z, ty)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, args: Vec<hlo::Literal>) {
        let (m, x) = crate::passes::testing::expand(text, &[&RngExpander]);
        assert!(!x
            .entry()
            .insts
            .values()
            .any(|i| matches!(i.opcode, Opcode::Rng | Opcode::RngBitGenerator)));
        let (want, have) = crate::passes::testing::eval_both(&m, &x, &args);
        crate::passes::testing::assert_matches(eval::case::Check::Exact, 0.0, &want, &have);
    }

    #[test]
    fn bit_generators_match_the_evaluator_bit_for_bit() {
        let text = r#"
HloModule rbg

ENTRY main {
  s = u64[2]{0} parameter(0)
  s3 = u64[3]{0} parameter(1)
  a = (u64[2]{0}, u32[3,5]{1,0}) rng-bit-generator(s), algorithm=rng_three_fry
  b = (u64[2]{0}, s64[7]{0}) rng-bit-generator(s), algorithm=rng_three_fry
  c = (u64[2]{0}, s32[5,2,3]{2,1,0}) rng-bit-generator(s), algorithm=rng_philox
  d = (u64[3]{0}, u64[3]{0}) rng-bit-generator(s3), algorithm=rng_philox
  e = (u64[2]{0}, u8[9]{0}) rng-bit-generator(s), algorithm=rng_default
  ROOT r = ((u64[2]{0}, u32[3,5]{1,0}), (u64[2]{0}, s64[7]{0}), (u64[2]{0}, s32[5,2,3]{2,1,0}), (u64[3]{0}, u64[3]{0}), (u64[2]{0}, u8[9]{0})) tuple(a, b, c, d, e)
}
"#;
        let s = hlo::Literal::array(
            vec![2],
            hlo::ArrayData::U64(vec![0x0123_4567_89ab_cdef, u64::MAX - 2]),
        );
        let s3 = hlo::Literal::array(vec![3], hlo::ArrayData::U64(vec![42, u64::MAX - 1, 7]));
        check(text, vec![s, s3]);
    }

    #[test]
    fn rng_in_loops_and_branches_draws_from_a_run_time_counter_in_evaluation_order() {
        // Two draws per iteration, one in a taken branch, one in a branch not taken, one
        // before and one after the loop, listed in an order that differs from the text's
        // (the root names `after` first): the expansion's get-and-update-state chain must keep
        // the evaluator's order.
        let text = r#"
HloModule rngloop

cond {
  p.c = (s32[], f32[3]) parameter(0)
  k.c = s32[] get-tuple-element(p.c), index=0
  n.c = s32[] constant(4)
  ROOT lt.c = pred[] compare(k.c, n.c), direction=LT
}

body {
  p.b = (s32[], f32[3]) parameter(0)
  k.b = s32[] get-tuple-element(p.b), index=0
  x.b = f32[3] get-tuple-element(p.b), index=1
  one.b = s32[] constant(1)
  k1.b = s32[] add(k.b, one.b)
  a.b = f32[] constant(0)
  b.b = f32[] constant(1)
  u.b = f32[3] rng(a.b, b.b), distribution=rng_uniform
  v.b = f32[3] rng(a.b, b.b), distribution=rng_normal
  w.b = f32[3] multiply(u.b, v.b)
  x1.b = f32[3] add(x.b, w.b)
  ROOT t.b = (s32[], f32[3]) tuple(k1.b, x1.b)
}

yes {
  q.y = f32[] parameter(0)
  ROOT r.y = f32[2] rng(q.y, q.y), distribution=rng_normal
}

no {
  q.n = f32[] parameter(0)
  z.n = f32[] constant(5)
  ROOT r.n = f32[2] rng(z.n, q.n), distribution=rng_uniform
}

ENTRY main {
  lo = f32[] parameter(0)
  hi = f32[] parameter(1)
  before = f32[2] rng(lo, hi), distribution=rng_uniform
  zero = s32[] constant(0)
  z3 = f32[3] broadcast(lo), dimensions={}
  init = (s32[], f32[3]) tuple(zero, z3)
  loop = (s32[], f32[3]) while(init), condition=cond, body=body
  t = pred[] constant(true)
  c = f32[2] conditional(t, lo, hi), true_computation=yes, false_computation=no
  after = f32[5] rng(lo, hi), distribution=rng_uniform
  ROOT r = (f32[5], f32[2], (s32[], f32[3]), f32[2]) tuple(after, before, loop, c)
}
"#;
        let (m, x) = crate::passes::testing::expand(text, &[&RngExpander]);
        for c in x.comps.values() {
            assert!(!c.insts.values().any(|i| i.opcode == Opcode::Rng));
        }
        let f = |v: f32| hlo::Literal::array(vec![], hlo::ArrayData::F32(vec![v]));
        let (want, have) = crate::passes::testing::eval_both(&m, &x, &[f(-2.0), f(3.0)]);
        crate::passes::testing::assert_matches(eval::case::Check::Exact, 0.0, &want, &have);
    }

    #[test]
    fn rng_uniform_and_normal_match_the_evaluator_bit_for_bit() {
        let text = r#"
HloModule rng

ENTRY main {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  u = f32[4,5]{1,0} rng(a, b), distribution=rng_uniform
  n = f32[7]{0} rng(a, b), distribution=rng_normal
  k = s32[6]{0} rng(i, j), distribution=rng_uniform
  ROOT r = (f32[4,5]{1,0}, f32[7]{0}, s32[6]{0}) tuple(u, n, k)
}
"#;
        let f = |v: f32| hlo::Literal::array(vec![], hlo::ArrayData::F32(vec![v]));
        let s = |v: i32| hlo::Literal::array(vec![], hlo::ArrayData::S32(vec![v]));
        check(text, vec![f(-1.0), f(3.0), s(-5), s(1000)]);
    }
}
