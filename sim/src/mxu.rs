//! `MxuModel`: the matrix unit, cycle for cycle and bit for bit as `docs/mxu-contract.md` fixes it.
//!
//! This is a pure component: no event queue, no memories other than its own weight registers and
//! accumulator. The simulator's MXU unit drives it, and `hw`'s co-simulation drives it the same
//! way to compare against the RTL. Operations are given **in program order**, each with the cycle
//! it is issued to the MXU; the model answers when it starts and when each result row is visible.
//!
//! Timing (contract, `R` rows, `C` columns):
//! * `LoadWeights` starts at `s = max(issue, s_prev + R, t_swap_prev)`; its port is busy `[s, s+R)`.
//! * `Matmul` of `M` rows starts at `t = max(issue, t_prev + M_prev, s_pending + 1)`; it swaps in a
//!   pending weight tile; result row `m` is visible from `t + m + R + C`.
//!
//! Invariants enforced (errors, never silent): `1 ≤ M`, `K' ≤ R`, `N' ≤ C`, `acc_addr < A`, operand
//! lengths match their shapes and the mode, and a `LoadWeights` never follows another one whose
//! tile was not yet swapped in by a `Matmul` (the contract forbids overwriting an unswapped shadow;
//! in program order that wait could never end).
//!
//! Modes: the model is built in `geometry.mode` (as the RTL is). A simulated chip whose MXU
//! accepts several input types ([`MxuModel::allow_modes`]) takes a weight tile of any allowed
//! type; a `Matmul`'s input must then have the type of the active weights.
//!
//! Reset state: shadow and active weights and the accumulator are all zero (in `geometry.mode`),
//! no load is pending.
//! With `functional = false` only the timing is modelled (operands may be omitted).

use crate::cycle::Cycle;
use crate::numerics::{bf16_to_f32_daz, f32_add, f32_ftz_canonical, i32_add};
use thiserror::Error;

/// The numeric mode of an MXU (each mode is its own hardware design).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MxuMode {
    /// i8 × i8 → i32, wrapping accumulation.
    Int8,
    /// bf16 × bf16 → f32, RNE additions with flush-to-zero.
    Bf16,
}

/// The shape of an MXU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MxuGeometry {
    /// `R`: array rows, the contraction (K) side.
    pub rows: usize,
    /// `C`: array columns, the output (N) side.
    pub cols: usize,
    /// `A`: accumulator rows (each `C` elements).
    pub acc_rows: usize,
    /// The numeric mode.
    pub mode: MxuMode,
}

/// Row-major operand data in the MXU's input type.
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    /// bf16 bits.
    Bf16(&'a [u16]),
    /// int8 values.
    Int8(&'a [i8]),
}

impl Operand<'_> {
    fn len(&self) -> usize {
        match self {
            Operand::Bf16(d) => d.len(),
            Operand::Int8(d) => d.len(),
        }
    }
    fn mode(&self) -> MxuMode {
        match self {
            Operand::Bf16(_) => MxuMode::Bf16,
            Operand::Int8(_) => MxuMode::Int8,
        }
    }
    /// Element `i` widened to the PE's input register form (f32 bits with DAZ, or i8 as i32).
    #[inline]
    fn widened(&self, i: usize) -> u32 {
        match self {
            Operand::Bf16(d) => bf16_to_f32_daz(d[i]),
            Operand::Int8(d) => d[i] as i32 as u32,
        }
    }
}

/// Errors: operations the contract does not define.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum MxuError {
    /// An operand shape exceeds the array or is empty.
    #[error("MXU {what}: {detail}")]
    Shape {
        /// Which operation.
        what: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// The operand's element type is not accepted (not an allowed mode, or a matmul input that
    /// differs from the active weights' type).
    #[error("MXU {what}: operand is {got:?} but {want:?} is required")]
    Mode {
        /// Which operation.
        what: &'static str,
        /// The operand's type.
        got: MxuMode,
        /// The type required.
        want: MxuMode,
    },
    /// A load would overwrite a shadow tile that was never swapped in.
    #[error("MXU LoadWeights: the previous weight tile (loaded at cycle {0}) was never used by a Matmul; the contract forbids overwriting it")]
    UnswappedShadow(Cycle),
}

/// When a `LoadWeights` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadTiming {
    /// `s`: the cycle the first weight row enters.
    pub start: Cycle,
    /// `s + R`: the weight port is free again.
    pub port_free: Cycle,
}

/// When a `Matmul` runs and its rows become visible.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulTiming {
    /// `t`: the cycle row 0 enters the array.
    pub start: Cycle,
    /// `M`: rows.
    pub rows: u64,
    /// `R + C`: the latency from a row entering to it being visible.
    pub latency: u64,
    /// The accumulator row of result row 0.
    pub acc_addr: usize,
    /// True if this matmul swapped in a newly loaded weight tile.
    pub swapped: bool,
}

impl MatmulTiming {
    /// The first cycle result row `m` is visible: `t + m + R + C`.
    #[inline]
    pub fn row_visible(&self, m: u64) -> Cycle {
        self.start + m + self.latency
    }
    /// The cycle the last row is visible (the matmul is complete): `t + M − 1 + R + C`.
    #[inline]
    pub fn complete(&self) -> Cycle {
        self.start + (self.rows - 1) + self.latency
    }
    /// `t + M`: the input port is free again.
    #[inline]
    pub fn port_free(&self) -> Cycle {
        self.start + self.rows
    }
}

/// One result row as the result port reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultRow {
    /// First cycle the row is visible.
    pub visible: Cycle,
    /// The accumulator row written.
    pub acc_row: usize,
    /// `C` values as raw bits (f32 bits, or i32 as u32).
    pub values: Vec<u32>,
}

/// The MXU model (see module docs).
pub struct MxuModel {
    geom: MxuGeometry,
    functional: bool,
    last_load_start: Option<Cycle>,
    pending_load: Option<Cycle>,
    last_swap_start: Option<Cycle>,
    input_free: Cycle,
    /// Shadow weights, widened, row-major `[k][n]` (a row of the array is contiguous).
    shadow: Vec<u32>,
    shadow_k: usize,
    shadow_mode: MxuMode,
    active: Vec<u32>,
    active_k: usize,
    active_mode: MxuMode,
    allowed: [bool; 2],
    acc: Vec<u32>,
    /// Scratch: one partial sum per column.
    psum: Vec<u32>,
}

impl MxuModel {
    /// A model in its reset state. `functional = false` models timing only.
    pub fn new(geom: MxuGeometry, functional: bool) -> Self {
        let (r, c, a) = (geom.rows, geom.cols, geom.acc_rows);
        let sz = |n: usize| {
            if functional {
                vec![0u32; n]
            } else {
                Vec::new()
            }
        };
        MxuModel {
            geom,
            functional,
            last_load_start: None,
            pending_load: None,
            last_swap_start: None,
            input_free: Cycle::ZERO,
            shadow: sz(r * c),
            shadow_k: 0,
            shadow_mode: geom.mode,
            active: sz(r * c),
            active_k: 0,
            active_mode: geom.mode,
            allowed: [geom.mode == MxuMode::Int8, geom.mode == MxuMode::Bf16],
            acc: sz(a * c),
            psum: Vec::new(),
        }
    }

    /// Also accepts weight tiles (and then inputs) of these types.
    pub fn allow_modes(&mut self, modes: &[MxuMode]) {
        for &m in modes {
            self.allowed[m as usize] = true;
        }
    }

    /// The geometry.
    pub fn geometry(&self) -> MxuGeometry {
        self.geom
    }

    /// The cycle a `LoadWeights` issued at `issue` would start (no state changes).
    pub fn load_start(&self, issue: Cycle) -> Cycle {
        let mut s = issue;
        if let Some(prev) = self.last_load_start {
            s = s.max(prev + self.geom.rows as u64);
        }
        if let Some(sw) = self.last_swap_start {
            s = s.max(sw);
        }
        s
    }

    /// The cycle a `Matmul` issued at `issue` would start (no state changes).
    pub fn matmul_start(&self, issue: Cycle) -> Cycle {
        let t = issue.max(self.input_free);
        match self.pending_load {
            Some(s) => t.max(s + 1),
            None => t,
        }
    }

    /// Issues `LoadWeights` of a `k × n` tile at `issue`. `data` (row-major `k × n`) is required
    /// when the model is functional and ignored otherwise.
    pub fn load_weights(
        &mut self,
        issue: Cycle,
        k: usize,
        n: usize,
        data: Option<Operand<'_>>,
    ) -> Result<LoadTiming, MxuError> {
        let (r, c) = (self.geom.rows, self.geom.cols);
        if k == 0 || n == 0 || k > r || n > c {
            return Err(MxuError::Shape {
                what: "LoadWeights",
                detail: format!("tile {k}×{n} must be non-empty and fit the {r}×{c} array"),
            });
        }
        if let Some(p) = self.pending_load {
            return Err(MxuError::UnswappedShadow(p));
        }
        let s = self.load_start(issue);
        if self.functional {
            let d = self.check_operand("LoadWeights", data, k * n, None)?;
            self.shadow_mode = d.mode();
            self.shadow.fill(0);
            for kk in 0..k {
                for nn in 0..n {
                    self.shadow[kk * c + nn] = d.widened(kk * n + nn);
                }
            }
            self.shadow_k = k;
        }
        self.last_load_start = Some(s);
        self.pending_load = Some(s);
        Ok(LoadTiming {
            start: s,
            port_free: s + r as u64,
        })
    }

    /// Issues `Matmul` of an `m × k` input at `issue`, results to accumulator rows
    /// `(acc_addr + i) mod A`, overwriting or accumulating. `data` (row-major `m × k`) is required
    /// when functional.
    pub fn matmul(
        &mut self,
        issue: Cycle,
        m: usize,
        k: usize,
        acc_addr: usize,
        accumulate: bool,
        data: Option<Operand<'_>>,
    ) -> Result<MatmulTiming, MxuError> {
        let (r, c, a) = (self.geom.rows, self.geom.cols, self.geom.acc_rows);
        if m == 0 || k == 0 || k > r {
            return Err(MxuError::Shape {
                what: "Matmul",
                detail: format!("input {m}×{k} must be non-empty with K ≤ R = {r}"),
            });
        }
        if acc_addr >= a {
            return Err(MxuError::Shape {
                what: "Matmul",
                detail: format!("accumulator address {acc_addr} out of range (A = {a})"),
            });
        }
        let t = self.matmul_start(issue);
        let swapped = if self.pending_load.take().is_some() {
            self.last_swap_start = Some(t);
            if self.functional {
                std::mem::swap(&mut self.active, &mut self.shadow);
                self.active_k = self.shadow_k;
                self.active_mode = self.shadow_mode;
            }
            true
        } else {
            false
        };
        self.input_free = t + m as u64;
        if self.functional {
            let d = self.check_operand("Matmul", data, m * k, Some(self.active_mode))?;
            self.compute(d, m, k, acc_addr, accumulate);
        }
        Ok(MatmulTiming {
            start: t,
            rows: m as u64,
            latency: (r + c) as u64,
            acc_addr,
            swapped,
        })
    }

    /// Like [`matmul`](Self::matmul), and also returns every result row as the result port
    /// reports it (visible cycle, accumulator row, values after this matmul). Functional only.
    #[allow(clippy::too_many_arguments)]
    pub fn matmul_rows(
        &mut self,
        issue: Cycle,
        m: usize,
        k: usize,
        acc_addr: usize,
        accumulate: bool,
        data: Operand<'_>,
    ) -> Result<(MatmulTiming, Vec<ResultRow>), MxuError> {
        assert!(self.functional, "matmul_rows needs a functional model");
        let t = self.matmul(issue, m, k, acc_addr, accumulate, Some(data))?;
        let rows = (0..m)
            .map(|i| {
                let row = (acc_addr + i) % self.geom.acc_rows;
                ResultRow {
                    visible: t.row_visible(i as u64),
                    acc_row: row,
                    values: self.acc_row(row).to_vec(),
                }
            })
            .collect();
        Ok((t, rows))
    }

    /// Accumulator row `row` (`C` raw values). Functional only; empty otherwise.
    pub fn acc_row(&self, row: usize) -> &[u32] {
        let c = self.geom.cols;
        if self.functional {
            &self.acc[row * c..(row + 1) * c]
        } else {
            &[]
        }
    }

    fn check_operand<'a>(
        &self,
        what: &'static str,
        data: Option<Operand<'a>>,
        len: usize,
        need: Option<MxuMode>,
    ) -> Result<Operand<'a>, MxuError> {
        let d = data.ok_or_else(|| MxuError::Shape {
            what,
            detail: "a functional model needs the operand data".into(),
        })?;
        let want = need.unwrap_or(self.geom.mode);
        let ok = match need {
            Some(m) => d.mode() == m,
            None => self.allowed[d.mode() as usize],
        };
        if !ok {
            return Err(MxuError::Mode {
                what,
                got: d.mode(),
                want,
            });
        }
        if d.len() != len {
            return Err(MxuError::Shape {
                what,
                detail: format!("operand has {} elements, shape needs {len}", d.len()),
            });
        }
        Ok(d)
    }

    /// Computes the result rows into the accumulator, in the contract's order.
    /// Column sums of input rows `rows` (each `c` values, row-major into `out`): for each
    /// row, a partial sum per column from `+0`, rows `k = 0 … kmax−1` added top to bottom (the
    /// contract's order) while the column loop (independent columns) vectorizes.
    fn column_sums(
        &self,
        x: &Operand<'_>,
        k: usize,
        kmax: usize,
        rows: std::ops::Range<usize>,
        out: &mut [u32],
    ) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked above). Same IEEE operations, wider
            // vectors: the same bits.
            unsafe { self.column_sums_avx2(x, k, kmax, rows, out) };
            return;
        }
        self.column_sums_generic(x, k, kmax, rows, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn column_sums_avx2(
        &self,
        x: &Operand<'_>,
        k: usize,
        kmax: usize,
        rows: std::ops::Range<usize>,
        out: &mut [u32],
    ) {
        self.column_sums_generic(x, k, kmax, rows, out)
    }

    #[inline(always)]
    fn column_sums_generic(
        &self,
        x: &Operand<'_>,
        k: usize,
        kmax: usize,
        rows: std::ops::Range<usize>,
        out: &mut [u32],
    ) {
        let c = self.geom.cols;
        for (i, p) in rows.zip(out.chunks_exact_mut(c)) {
            p.fill(0); // +0.0 / 0
            for kk in 0..kmax {
                let xv = if kk < k { x.widened(i * k + kk) } else { 0 };
                let w = &self.active[kk * c..(kk + 1) * c];
                match self.active_mode {
                    MxuMode::Bf16 => {
                        let xf = f32::from_bits(xv);
                        for (pn, &wv) in p.iter_mut().zip(w) {
                            let prod = f32_ftz_canonical((xf * f32::from_bits(wv)).to_bits());
                            *pn = f32_add(*pn, prod);
                        }
                    }
                    MxuMode::Int8 => {
                        let xi = xv as i32;
                        for (pn, &wv) in p.iter_mut().zip(w) {
                            *pn = i32_add(*pn as i32, xi.wrapping_mul(wv as i32)) as u32;
                        }
                    }
                }
            }
        }
    }

    fn compute(&mut self, x: Operand<'_>, m: usize, k: usize, acc_addr: usize, accumulate: bool) {
        let (r, c, a) = (self.geom.rows, self.geom.cols, self.geom.acc_rows);
        // Rows ≥ kmax are +0 × +0 in both operands: they only turn a −0 partial sum into +0.
        let kmax = k.max(self.active_k);
        let tail = kmax < r;
        let mut p = std::mem::take(&mut self.psum);
        p.clear();
        p.resize(m * c, 0);
        // Rows are independent: large matmuls split them over threads (the bits are the same
        // whatever the split: each row's sums run in the contract's order on one thread).
        let threads = if m * c * kmax >= PARALLEL_MACS {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(m)
                .min(MAX_THREADS)
        } else {
            1
        };
        if threads > 1 {
            let per = m.div_ceil(threads);
            let this = &*self;
            std::thread::scope(|s| {
                for (t, out) in p.chunks_mut(per * c).enumerate() {
                    let x = &x;
                    let lo = t * per;
                    s.spawn(move || this.column_sums(x, k, kmax, lo..(lo + per).min(m), out));
                }
            });
        } else {
            self.column_sums(&x, k, kmax, 0..m, &mut p);
        }
        for (i, pr) in p.chunks_exact(c).enumerate() {
            let row = (acc_addr + i) % a;
            let acc = &mut self.acc[row * c..(row + 1) * c];
            match self.active_mode {
                MxuMode::Bf16 => {
                    for (av, &pv) in acc.iter_mut().zip(pr) {
                        let pv = if tail && pv == 0x8000_0000 { 0 } else { pv };
                        *av = if accumulate { f32_add(*av, pv) } else { pv };
                    }
                }
                MxuMode::Int8 => {
                    for (av, &pv) in acc.iter_mut().zip(pr) {
                        *av = if accumulate {
                            i32_add(*av as i32, pv as i32) as u32
                        } else {
                            pv
                        };
                    }
                }
            }
        }
        self.psum = p;
    }
}

/// Multiply-accumulates of one matmul above which its rows are split over threads.
const PARALLEL_MACS: usize = 1 << 21;
/// At most this many threads per matmul.
const MAX_THREADS: usize = 8;

#[cfg(test)]
mod tests;
