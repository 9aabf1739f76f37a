//! `dot` streamed from HBM on every core of the chip.
//!
//! Taken from the program's start when both operands are entry parameters (so they are in HBM
//! from the start), in a streamed order (`lhs[B][M][K]`, `rhs[B][K][N]` or `rhs[B][N][K]`, the
//! second loaded into the MXUs transposed), of a native MXU type (bf16 × bf16 → f32, s8 × s8 →
//! s32), and the result is only used as (part of) the module's result: then no core waits for
//! another, the result is written straight to its HBM output slot, and the work can be split
//! across cores without cross-core synchronization. "Late" (where it stands,
//! [`Lowerer::streams_late`]): a dot in that form, or a convolution in the streamed layout, whose operand
//! lives in HBM or that is larger than a quarter of VMEM; on two-core chips core 0 forks the
//! other core's share and joins it. Where VMEM is short the plan takes chunks of fewer rows and
//! columns than below.
//!
//! Chunks: the result is cut into chunks of `Mc` rows × `Nc = mxu.count × mxu.cols` columns,
//! listed batch, panel of columns, rows, and cut into one contiguous run per core (so a
//! core's consecutive chunks share their `rhs` panel, which stays in VMEM). `Mc` halves from
//! half the accumulator rows while a core has too few chunks for its result writes to overlap
//! its compute (and the writes are long enough to matter); the core's last chunk gets a short
//! tail. `K` goes in DMA blocks (a first block of one weight load, then blocks with rows of at
//! least 512 bytes); a job is one block of one chunk: every MXU loads its weights for each
//! `mxu.rows` of it and streams the chunk's rows. Blocks are loaded `depth` jobs ahead (the
//! DMA latency in jobs of compute), the first job's alone. After a chunk's last job its
//! accumulators go to a result buffer (`mxu.st`) and to HBM with one strided DMA a few jobs
//! later. docs/compiler.md ("Dots on the MXUs") has the reasons and measurements.

use super::dot::{emit_op, MxuOp};
use super::emit::{Access, Queue};
use super::{Lowerer, Val};
use crate::error::{CResult, CompileError};
use arch::MxuDtype;
use hlo::{ElementType, InstId};
use isa::{Inst, Space};

/// The second operand of an epilogue step, read from HBM once: one value per result column
/// (a bias) or a scalar.
#[derive(Clone, Debug)]
pub struct EpiArg {
    /// HBM address of the vector (`N` elements) or scalar.
    pub hbm: u64,
    /// One value per column (else a scalar).
    pub per_column: bool,
    /// The chunk's value is the op's first operand (else the second).
    pub acc_first: bool,
}

/// One element-wise step applied to each chunk of a streamed dot's result in VMEM before it
/// goes to HBM (fusion of the dot's consumers into its epilogue: bias, activation, convert).
#[derive(Clone, Debug)]
pub struct EpiStep {
    /// The HLO op (`convert` included).
    pub op: hlo::Opcode,
    /// The second operand of a binary op.
    pub arg: Option<EpiArg>,
    /// Element type of the value after the step.
    pub ty: hlo::ElementType,
}

/// Where a streamed dot's operands and result live, and its shape.
#[derive(Clone, Debug)]
pub struct StreamDot {
    /// HLO instruction name (symbol of the emitted code).
    pub name: String,
    /// HBM address of `lhs[B][M][K]`.
    pub lhs: u64,
    /// HBM address of `rhs[B][K][N]`, or `rhs[B][N][K]` with `rhs_t`.
    pub rhs: u64,
    /// `rhs` is `[B][N][K]`: a block of it is `nc` rows of `kd` in VMEM, loaded into the
    /// MXUs transposed (`mxu.ldw tr=1`).
    pub rhs_t: bool,
    /// HBM address of the result `[B][M][N]` (accumulator type).
    pub out: u64,
    /// `(B, M, K, N)`.
    pub dims: (usize, usize, usize, usize),
    /// MXU mode.
    pub mode: MxuDtype,
    /// Steps applied to each chunk before its write (the result is the last step's value).
    pub epilogue: Vec<EpiStep>,
    /// VMEM its buffers may take (every core plans the same): three quarters of VMEM for a dot
    /// streamed from the start, what is free where a late one stands.
    pub budget: u64,
}

/// Chunk shape, schedule and buffering of a streamed dot (the same on every core).
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// Rows of `lhs` per chunk.
    mc: usize,
    /// Result columns per chunk (`mxu.count × mxu.cols` at most).
    nc: usize,
    /// `K` rows per weight load (`mxu.rows`).
    kb: usize,
    /// `K` per DMA block (a multiple of `kb`; rows of at least 512 bytes where `K` allows).
    kd: usize,
    /// Blocks per chunk (`⌈K / kd⌉`).
    nblk: usize,
    /// Whether a core keeps the `K × nc` panel of `rhs` in VMEM for all chunks of one
    /// `(b, n0)` (else every job loads its own block of `rhs`).
    panel: bool,
    /// Panel buffers (2: the next panel loads while the last chunks of the previous one run).
    panels: usize,
    /// Result buffers.
    cbufs: usize,
    /// Jobs whose DMAs are issued ahead of the job being computed (`depth + 2` rotating slots).
    depth: usize,
    /// `K` of the first block (0: all blocks `kd`).
    first_block: usize,
    /// Rows of the extra last chunk of each core (0: none).
    tail_rows: usize,
    /// Rows of each core's first chunk of a panel (`mc`, or a multiple of it up to half the
    /// accumulator rows, so that the chunk that also loads the panel is not memory-bound).
    first_rows: usize,
}

/// VMEM layout of one core's streaming buffers.
struct Bufs {
    /// `depth + 2` rotating blocks of `lhs`.
    a: Vec<u64>,
    /// The panel(s) (`panels × nblk` blocks), or `depth + 2` rotating blocks of `rhs`.
    b: Vec<u64>,
    c: Vec<u64>,
    /// Per epilogue step with an operand: the operand (all `N` columns, or the scalar) and
    /// a tile of it the shape of a chunk's result buffer.
    epi: Vec<(u64, u64)>,
}

/// Which tile each epilogue step holds (the `n0` of its columns; scalars: built once).
struct EpiState {
    tile_n0: Vec<Option<usize>>,
}

/// Jobs between a chunk's `mxu.st` and its DMA to HBM (the sequencer waits for the store, so
/// it waits only once the MXUs have later jobs queued).
const DEFER: usize = 3;
/// Most jobs of lookahead VMEM left over may buy (`StreamDot::plan_with`).
const MAX_DEPTH: usize = 12;
/// Chunks a core should get at least, so result writes overlap later chunks' compute.
const MIN_CHUNKS_PER_CORE: usize = 4;
/// Bytes of an HBM row below which a DMA's rate is set by its request count.
const MIN_RUN_BYTES: usize = 512;

/// Fewest rows per chunk [`StreamDot::plan`] cuts down to where VMEM is short.
const MIN_CHUNK_ROWS: usize = 8;

/// Most rows and result columns per chunk (where the buffers would not fit the budget).
#[derive(Clone, Copy, Debug)]
struct Cap {
    rows: usize,
    cols: usize,
}

/// Rows `m0 .. m0 + rows` of batch `b`, result columns from `n0`.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    b: usize,
    m0: usize,
    rows: usize,
    n0: usize,
}

/// One job: block `s` of chunk `i` (both indices into the core's lists).
#[derive(Clone, Copy, Debug)]
struct Job {
    i: usize,
    s: usize,
}

impl StreamDot {
    /// Chunk shape and schedule for `arch` and `cores` cores: DMA blocks of rows long enough
    /// for the engine's full rate and loads far enough ahead, made shorter and fewer while
    /// the buffers do not fit the budget, then chunks of fewer rows and columns.
    fn plan(&self, l: &Lowerer<'_>, cores: usize) -> Plan {
        let iw = self.mode.bytes() as usize;
        let kb = (l.arch.mxu.rows as usize).min(self.dims.2).max(1);
        let mut f = MIN_RUN_BYTES.div_ceil(kb * iw).max(1);
        let mut dmax = MAX_DEPTH;
        let mut cap = Cap {
            rows: usize::MAX,
            cols: usize::MAX,
        };
        let cols = l.arch.mxu.cols as usize;
        loop {
            let p = self.plan_with(l, cores, f, dmax, cap);
            let bytes: u64 = self.sizes(&p).iter().map(|x| x.div_ceil(64) * 64).sum();
            if bytes <= self.budget {
                return p;
            }
            if f > 1 {
                f /= 2;
            } else if dmax > 1 {
                dmax -= 1;
            } else if p.mc > MIN_CHUNK_ROWS {
                cap.rows = (p.mc.max(p.first_rows) / 2).max(MIN_CHUNK_ROWS);
            } else if p.nc > cols {
                cap.cols = (p.nc / 2).max(cols);
            } else {
                return p;
            }
        }
    }

    /// [`StreamDot::plan`] with DMA blocks of `f` weight loads and at most `dmax` jobs of
    /// lookahead.
    fn plan_with(&self, l: &Lowerer<'_>, cores: usize, f: usize, dmax: usize, cap: Cap) -> Plan {
        let (nb, m, k, n) = self.dims;
        let a = l.arch;
        let iw = self.mode.bytes() as usize;
        let acc = (a.mxu.acc_rows as usize).max(2);
        let rows = a.mxu.rows as usize;
        let nc = ((a.mxu.count * a.mxu.cols) as usize)
            .min(cap.cols)
            .min(n)
            .max(1);
        let kb = rows.min(k).max(1);
        let kd = (kb * f).min(k.div_ceil(kb) * kb).max(kb);
        let first_block = if k > kd { kb } else { 0 };
        let nblk = usize::from(first_block > 0) + (k - first_block).div_ceil(kd);
        // Smaller chunks until every core has a few (down to one weight tile of rows): a
        // chunk's result write then overlaps later chunks' compute and only the last one is
        // exposed. Each chunk costs one drain of the array (`mxu.st` waits for the matmuls).
        // Beyond one chunk per core, only while the smaller chunk's write takes longer than a
        // copy's setup and HBM latency plus the drain of the array an extra chunk costs: tiny
        // results gain nothing from more chunks.
        let l_hbm = a.cycles_from_ns(a.hbm.latency_ns) as usize;
        let overhead = a.dma.setup_cycles as usize + l_hbm + rows + a.mxu.cols as usize;
        let write = |rows: usize| rows * nc * 4 / (a.dma.bytes_per_cycle.max(1) as usize);
        let mut mc = (acc / 2).min(cap.rows).min(m).max(1);
        let chunks = |mc: usize| nb * m.div_ceil(mc) * n.div_ceil(nc);
        while mc > rows
            && (chunks(mc) < cores
                || (chunks(mc).div_ceil(cores.max(1)) < MIN_CHUNKS_PER_CORE
                    && write(mc / 2) > overhead))
        {
            mc = (mc / 2).max(rows);
        }
        // The first chunk of a panel also loads the panel (`K × nc`), `cores` times over the
        // shared HBM: grow it (up to half the accumulators) until the bytes it needs per cycle
        // of compute, `cores · e · R · (rows + nc) / rows`, are within the HBM's rate, so the
        // array does not wait for the panel's load.
        let bw_cyc = a.bytes_per_cycle(a.hbm.gbps);
        let need = |r: usize| (cores.max(1) * iw * kb * (r + nc)) as f64 / r as f64;
        let mut first_rows = mc;
        while first_rows * 2 <= (acc / 2).min(cap.rows) && need(first_rows) > bw_cyc {
            first_rows *= 2;
        }
        // One chunk at a time: a wavefront of several live chunks (each round every live
        // chunk does its next block, so the first rounds need one block of `rhs`, not a whole
        // panel) measured slower on tpu-v4 (1024³: 13,765 cycles against 13,347), the more
        // so the deeper the prefetch: the HBM is shared fairly among copies in flight, so
        // blocks needed later slow down the one needed now. It was removed.
        // Loads run ahead by the time a block's DMA takes (setup, HBM latency, the bytes of
        // every core at the HBM's rate) in jobs of compute, plus one.
        let job_cycles = kd.div_ceil(kb) * mc.max(rows);
        let bw = a.bytes_per_cycle(a.hbm.gbps).max(1.0);
        let l_hbm = l_hbm as f64;
        let job_bytes = ((mc + nc) * kd * iw * cores.max(1)) as f64;
        let est = a.dma.setup_cycles as f64 + l_hbm + job_bytes / bw;
        let depth = ((est / job_cycles.max(1) as f64).ceil() as usize + 1)
            .clamp(2, 8)
            .min(dmax)
            .max(1);
        let slots = (depth + 2) as u64;
        let al = |x: usize| (x.div_ceil(64) * 64) as u64;
        let budget = self.budget;
        let mr = mc.max(first_rows);
        let a_bytes = slots * al(mr * kd * iw);
        let blk = al(kd * nc * iw);
        let c = al(mr * nc * 4);
        let e_bytes: u64 = self.epi_sizes(mr, nc).iter().map(|&x| al(x as usize)).sum();
        let fits = |b: u64, cb: u64| a_bytes + b + cb * c + e_bytes <= budget;
        let (panel, panels) = if fits(2 * nblk as u64 * blk, 3) {
            (true, 2)
        } else if fits(nblk as u64 * blk, 2) {
            (true, 1)
        } else {
            (false, 0)
        };
        let b_bytes = if panel {
            panels as u64 * nblk as u64 * blk
        } else {
            slots * blk
        };
        let cbufs = if fits(b_bytes, 3) { 3 } else { 2 };
        // With several cores, deeper where VMEM is left over (up to `MAX_DEPTH` jobs): the
        // slot reloads wait for their readers in the DMA queue, not on the sequencer, so a
        // deeper lookahead only costs VMEM, and it keeps the shared HBM busy while a long
        // result write waits for its chunk (1024³ on tpu-v4: 12,077 cycles at the depth the
        // latency needs, 11,547 here; tpu-v5p 13,165 and 12,764). On one core the blocks
        // needed later only slow the one needed now (tpu-v5e: 22,396 and 24,113).
        let spare = budget.saturating_sub(a_bytes + b_bytes + cbufs as u64 * c + e_bytes);
        let extra = if cores > 1 {
            (spare / al(mr * kd * iw).max(1)) as usize
        } else {
            0
        };
        let depth = (depth + extra)
            .min(MAX_DEPTH.max(depth))
            .min(dmax.max(depth));
        Plan {
            mc,
            nc,
            kb,
            kd,
            nblk,
            panel,
            panels,
            cbufs,
            depth,
            first_block,
            // A short last chunk only where its write would be long.
            tail_rows: if write(mc) > overhead { rows } else { 0 },
            first_rows,
        }
    }

    /// Sizes of the buffers [`StreamDot::emit`] asks for, in order.
    pub fn buffer_sizes(&self, l: &Lowerer<'_>, cores: usize) -> Vec<u64> {
        self.sizes(&self.plan(l, cores))
    }

    fn sizes(&self, p: &Plan) -> Vec<u64> {
        let iw = self.mode.bytes() as usize;
        let mr = p.mc.max(p.first_rows);
        let a = (mr * p.kd * iw) as u64;
        let b = (p.kd * p.nc * iw) as u64;
        let c = (mr * p.nc * 4) as u64;
        let slots = p.depth + 2;
        let nbb = if p.panel { p.panels * p.nblk } else { slots };
        let mut v = vec![a; slots];
        v.extend(std::iter::repeat_n(b, nbb));
        v.extend(std::iter::repeat_n(c, p.cbufs));
        v.extend(self.epi_sizes(mr, p.nc));
        v
    }

    /// Sizes of the epilogue's buffers: per step with an operand, the operand (`N` columns
    /// rounded up to whole `nc` panels, or one element) and its tile (`mr × nc`).
    fn epi_sizes(&self, mr: usize, nc: usize) -> Vec<u64> {
        let n = self.dims.3;
        let mut v = Vec::new();
        let mut ty = self.acc_type();
        for s in &self.epilogue {
            if let Some(a) = &s.arg {
                let w = ty.byte_size();
                let cols = if a.per_column { n.div_ceil(nc) * nc } else { 1 };
                v.push((cols * w) as u64);
                v.push((mr * nc * w) as u64);
            }
            ty = s.ty;
        }
        v
    }

    /// The MXU's accumulator type (the dot's own result type).
    fn acc_type(&self) -> hlo::ElementType {
        match self.mode {
            MxuDtype::Int8 => hlo::ElementType::S32,
            _ => hlo::ElementType::F32,
        }
    }

    /// The element type written to HBM.
    fn out_type(&self) -> hlo::ElementType {
        self.epilogue.last().map_or(self.acc_type(), |s| s.ty)
    }

    /// Core `core`'s chunks `(b, m0, n0)` in order: all chunks, `m` fastest so consecutive
    /// chunks share their `rhs` panel, cut into `cores` contiguous runs.
    fn my_chunks(&self, p: &Plan, core: usize, cores: usize) -> Vec<Chunk> {
        let (nb, m, _, n) = self.dims;
        let mut t = Vec::new();
        for b in 0..nb {
            for n0 in (0..n).step_by(p.nc) {
                for m0 in (0..m).step_by(p.mc) {
                    t.push(Chunk {
                        b,
                        m0,
                        rows: p.mc.min(m - m0),
                        n0,
                    });
                }
            }
        }
        let cores = cores.max(1);
        let (q, r) = (t.len() / cores, t.len() % cores);
        let lo = core * q + core.min(r);
        let hi = lo + q + usize::from(core < r);
        let mut mine = t[lo..hi].to_vec();
        // The core's first chunk of each panel grows to `first_rows` (it loads the panel).
        let mut i = 0;
        while i + 1 < mine.len() {
            let (c, d) = (mine[i], mine[i + 1]);
            let first = i == 0 || (mine[i - 1].b, mine[i - 1].n0) != (c.b, c.n0);
            if first
                && (c.b, c.n0) == (d.b, d.n0)
                && c.m0 + c.rows == d.m0
                && c.rows + d.rows <= p.first_rows
            {
                mine[i].rows += d.rows;
                mine.remove(i + 1);
            } else {
                i += 1;
            }
        }
        // The core's last chunk is cut so that its tail is short: its result write has no
        // compute left to hide behind.
        if let Some(last) = mine.last().copied() {
            let tail = p.tail_rows;
            if tail > 0 && last.rows >= 2 * tail {
                let head = Chunk {
                    rows: last.rows - tail,
                    ..last
                };
                let end = Chunk {
                    m0: last.m0 + last.rows - tail,
                    rows: tail,
                    ..last
                };
                mine.pop();
                mine.push(head);
                mine.push(end);
            }
        }
        mine
    }

    /// The `K` blocks `(k0, len)` of every chunk: a first block of one weight load (the
    /// first matmuls wait for less data), then blocks of `kd`.
    fn blocks(&self, p: &Plan) -> Vec<(usize, usize)> {
        let k = self.dims.2;
        let mut v = Vec::new();
        let mut k0 = 0;
        let first = p.first_block;
        if first > 0 && first < k {
            v.push((0, first));
            k0 = first;
        }
        while k0 < k {
            let len = p.kd.min(k - k0);
            v.push((k0, len));
            k0 += len;
        }
        v
    }

    /// Emits core `core`'s share of the chunks (of `cores`), with buffers from `alloc`.
    pub fn emit(
        &self,
        l: &mut Lowerer<'_>,
        core: usize,
        cores: usize,
        alloc: &mut dyn FnMut(u64) -> CResult<u64>,
    ) -> CResult<()> {
        let p = self.plan(l, cores);
        let sizes = self.buffer_sizes(l, cores);
        let mut addrs = Vec::with_capacity(sizes.len());
        for &sz in &sizes {
            addrs.push(alloc(sz)?);
        }
        // Every dependency of the stream waits in its unit's queue (the DMA front end lets
        // unrelated copies pass a waiting one): the sequencer runs ahead issuing.
        let unit_waits = std::mem::replace(&mut l.e.unit_waits, true);
        let slots = p.depth + 2;
        let ne = self.epi_sizes(p.mc.max(p.first_rows), p.nc).len();
        let nbb = sizes.len() - slots - p.cbufs - ne;
        let ce = slots + nbb + p.cbufs;
        let bufs = Bufs {
            a: addrs[..slots].to_vec(),
            b: addrs[slots..slots + nbb].to_vec(),
            c: addrs[slots + nbb..ce].to_vec(),
            epi: addrs[ce..].chunks(2).map(|x| (x[0], x[1])).collect(),
        };
        // The epilogue's operands, once, from HBM (their tiles are built when first needed).
        let mut epi = EpiState {
            tile_n0: vec![None; bufs.epi.len()],
        };
        self.load_epilogue_args(l, &bufs);
        let n = self.dims.3;
        let iw = self.mode.bytes() as usize;
        let cols = l.arch.mxu.cols as usize;
        let mine = self.my_chunks(&p, core, cores);
        // Panel group of each chunk: consecutive chunks of one (b, n0).
        let mut group = Vec::with_capacity(mine.len());
        for (i, c) in mine.iter().enumerate() {
            let g = match i {
                0 => 0,
                _ if (mine[i - 1].b, mine[i - 1].n0) == (c.b, c.n0) => group[i - 1],
                _ => group[i - 1] + 1,
            };
            group.push(g);
        }
        let blocks = self.blocks(&p);
        let nblk = blocks.len();
        // One chunk after the other, block by block.
        let jobs: Vec<Job> = (0..mine.len())
            .flat_map(|i| (0..nblk).map(move |s| Job { i, s }))
            .collect();
        // B slot of job `g`, and whether the job loads it (the first job of its panel group
        // to use block s; every job without a panel).
        let mut b_of = Vec::with_capacity(jobs.len());
        let mut seen = std::collections::HashSet::new();
        for (g, j) in jobs.iter().enumerate() {
            if p.panel {
                let slot = (group[j.i] % p.panels) * nblk + j.s;
                b_of.push((slot, seen.insert((group[j.i], j.s))));
            } else {
                b_of.push((g % slots, true));
            }
        }
        // The last earlier job that reads the B slot a job loads (it must be emitted before
        // the load: a panel slot is reused by a later panel).
        let mut prev_reader = vec![None; jobs.len()];
        let mut last_reader: std::collections::HashMap<usize, usize> = Default::default();
        for (g, &(slot, with_b)) in b_of.iter().enumerate() {
            if with_b {
                prev_reader[g] = last_reader.get(&slot).copied();
            }
            last_reader.insert(slot, g);
        }
        let mut done_chunks = 0usize;
        let mut cbuf_of = vec![0usize; mine.len()];
        let mut pending_out: Vec<(usize, usize)> = Vec::new(); // (chunk, jobs until emit)
                                                               // Job 0's blocks alone first (the sequencer then waits for them before the first
                                                               // weight load): the first matmul does not share the HBM with prefetches. Later jobs'
                                                               // blocks are issued `depth` jobs ahead, into the slot job g - 2 read (long done).
        let mut loaded = 0;
        let drain = (l.arch.mxu.rows + l.arch.mxu.cols - 1) as usize;
        // Stores of the last chunk waiting to follow enough rows of the next: (MXU, chunk,
        // rows since).
        let mut deferred_st: Vec<(usize, usize, usize, MxuOp)> = Vec::new();
        for (g, j) in jobs.iter().enumerate() {
            // Before job 0 (whose data the sequencer then waits for): its blocks and the
            // next two jobs', so the HBM is busy while the sequencer waits. The lookahead
            // then grows by one job per job up to `depth`: blocks issued together share the
            // HBM fairly, so a deep prefetch at the start would delay the blocks needed
            // first.
            let upto = if g == 0 {
                1 + p.depth.min(2)
            } else {
                g + 1 + p.depth.min(g)
            }
            .min(jobs.len());
            while loaded < upto && prev_reader[loaded].is_none_or(|r| r < g) {
                let jl = jobs[loaded];
                let (bs, with_b) = b_of[loaded];
                let blk = blocks[jl.s];
                self.load(l, &bufs, (loaded % slots, bs), mine[jl.i], blk, &p, with_b);
                loaded += 1;
            }
            let c = mine[j.i];
            let mm = c.rows;
            let ncur = p.nc.min(n - c.n0);
            let kdd = blocks[j.s].1;
            // Chunks alternate accumulator halves (a first chunk may be longer than `mc`).
            let base = ((j.i % 2) * (l.arch.mxu.acc_rows as usize / 2)) as u64;
            let (aslot, bs) = (g % slots, b_of[g].0);
            for sub in 0..kdd.div_ceil(p.kb) {
                let kk = p.kb.min(kdd - sub * p.kb);
                for q in 0..ncur.div_ceil(cols) {
                    let nq = cols.min(ncur - q * cols);
                    // A block is `kd × nc` (`k` rows), or `nc × kd` with `rhs_t`.
                    let (off, stride) = if self.rhs_t {
                        (q * cols * p.kd + sub * p.kb, p.kd)
                    } else {
                        (sub * p.kb * p.nc + q * cols, p.nc)
                    };
                    let ldw = MxuOp::Ldw {
                        addr: bufs.b[bs] + (off * iw) as u64,
                        k: kk,
                        n: nq,
                        stride: stride * iw,
                        tr: self.rhs_t,
                    };
                    emit_op(l, q as u8, &ldw, self.mode, iw);
                    let matmul = MxuOp::Matmul {
                        addr: bufs.a[aslot] + (sub * p.kb * iw) as u64,
                        m: mm,
                        k: kk,
                        stride: p.kd * iw,
                        base,
                        accumulate: j.s > 0 || sub > 0,
                    };
                    emit_op(l, q as u8, &matmul, self.mode, iw);
                    l.stats.mxu_macs += (mm * l.arch.mxu.rows as usize * cols) as u64;
                    // The previous chunk's store follows enough rows of matmuls into the
                    // other accumulator half to cover the array's drain (`R + C − 1`): it
                    // waits only for its own rows, so the drain overlaps these rows.
                    if let Some(k) = deferred_st.iter().position(|d| d.0 == q) {
                        deferred_st[k].2 += mm;
                        if deferred_st[k].2 >= drain {
                            let (_, _, _, st) = deferred_st.remove(k);
                            emit_op(l, q as u8, &st, self.mode, iw);
                        }
                    }
                }
            }
            if j.s + 1 == nblk {
                // A store still deferred goes first (its chunk's half is the next chunk's).
                for (q, _, _, st) in std::mem::take(&mut deferred_st) {
                    emit_op(l, q as u8, &st, self.mode, iw);
                }
                // Accumulators to VMEM (same MXU queues: in order after the matmuls).
                cbuf_of[j.i] = done_chunks % p.cbufs;
                done_chunks += 1;
                // A write still deferred from this buffer leaves first (short chunks finish
                // faster than the deferral).
                while let Some(k) = pending_out
                    .iter()
                    .position(|&(i0, _)| cbuf_of[i0] == cbuf_of[j.i])
                {
                    let (i0, _) = pending_out.remove(k);
                    self.store(l, &bufs, &mut epi, bufs.c[cbuf_of[i0]], mine[i0], &p, None);
                }
                let cbuf = bufs.c[cbuf_of[j.i]];
                for q in 0..ncur.div_ceil(cols) {
                    let st = MxuOp::St {
                        addr: cbuf + (q * cols * 4) as u64,
                        m: mm,
                        n: cols.min(ncur - q * cols),
                        stride: p.nc * 4,
                        base,
                    };
                    if g + 1 < jobs.len() {
                        // Emitted among the next jobs' matmuls (other accumulator half).
                        deferred_st.push((q, j.i, 0, st));
                    } else {
                        emit_op(l, q as u8, &st, self.mode, iw);
                    }
                }
                pending_out.push((j.i, DEFER + 1));
            }
            // Stores to HBM, a few jobs later.
            for po in pending_out.iter_mut() {
                po.1 = po.1.saturating_sub(1);
            }
            // (Not before the chunk's `mxu.st`s, which may still wait for rows of the next.)
            while let Some(&(i0, 0)) = pending_out.first() {
                if deferred_st.iter().any(|d| d.1 == i0) {
                    break;
                }
                self.store(l, &bufs, &mut epi, bufs.c[cbuf_of[i0]], mine[i0], &p, None);
                pending_out.remove(0);
            }
        }
        for (q, _, _, st) in std::mem::take(&mut deferred_st) {
            emit_op(l, q as u8, &st, self.mode, iw);
        }
        // The last chunks' writes: no compute is left to overlap, so one copy per MXU's
        // columns (each leaves when its MXU's `mxu.st` is done; they use several engines).
        for (i0, _) in std::mem::take(&mut pending_out) {
            self.store(
                l,
                &bufs,
                &mut epi,
                bufs.c[cbuf_of[i0]],
                mine[i0],
                &p,
                Some(cols),
            );
        }
        l.e.unit_waits = unit_waits;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn strided_dma(
        l: &mut Lowerer<'_>,
        dst: (Space, u64),
        src: (Space, u64),
        len: usize,
        rows: usize,
        src_stride: usize,
        dst_stride: usize,
    ) {
        l.dma_strided(
            dst,
            src,
            len as u64,
            rows as u64,
            src_stride as u64,
            dst_stride as u64,
        );
    }

    /// DMAs block `s` of tile `(b0, m0, n0)`: `lhs` into A slot `slots.0` and, if `with_b`,
    /// `rhs` into B slot `slots.1`.
    #[allow(clippy::too_many_arguments)]
    fn load(
        &self,
        l: &mut Lowerer<'_>,
        bufs: &Bufs,
        slots: (usize, usize),
        c: Chunk,
        (k0, kk): (usize, usize),
        p: &Plan,
        with_b: bool,
    ) {
        let (_, m, k, n) = self.dims;
        let iw = self.mode.bytes() as usize;
        let (b0, m0, n0, mm) = (c.b, c.m0, c.n0, c.rows);
        let ncur = p.nc.min(n - n0);
        let a_src = self.lhs + (((b0 * m + m0) * k + k0) * iw) as u64;
        Self::strided_dma(
            l,
            (Space::Vmem, bufs.a[slots.0]),
            (Space::Hbm, a_src),
            kk * iw,
            mm,
            k * iw,
            p.kd * iw,
        );
        if with_b && self.rhs_t {
            // `ncur` rows of `kk` elements from `rhs[b0][n0..][k0..]`.
            let b_src = self.rhs + (((b0 * n + n0) * k + k0) * iw) as u64;
            Self::strided_dma(
                l,
                (Space::Vmem, bufs.b[slots.1]),
                (Space::Hbm, b_src),
                kk * iw,
                ncur,
                k * iw,
                p.kd * iw,
            );
        } else if with_b {
            let b_src = self.rhs + (((b0 * k + k0) * n + n0) * iw) as u64;
            Self::strided_dma(
                l,
                (Space::Vmem, bufs.b[slots.1]),
                (Space::Hbm, b_src),
                ncur * iw,
                kk,
                n * iw,
                p.nc * iw,
            );
        }
    }

    /// Runs the epilogue on a chunk's result (in `cbuf`) and DMAs it to HBM: one copy, or one
    /// per `cols` columns.
    #[allow(clippy::too_many_arguments)]
    fn store(
        &self,
        l: &mut Lowerer<'_>,
        bufs: &Bufs,
        epi: &mut EpiState,
        cbuf: u64,
        c: Chunk,
        p: &Plan,
        split: Option<usize>,
    ) {
        let (_, m, _, n) = self.dims;
        let (b0, m0, n0, mm) = (c.b, c.m0, c.n0, c.rows);
        // Without an epilogue the copies wait for the chunk's `mxu.st`s in the DMA queue and
        // the sequencer goes on issuing the next jobs. An epilogue's VPU steps come first and
        // wait on the sequencer; a copy waiting for them would take over their accesses, and
        // the next chunk's steps (reading the same bias tile) would then wait for the copy
        // (the 1000×512×260 dense layer: 5,475 cycles, against 6,703).
        let unit_waits = std::mem::replace(&mut l.e.unit_waits, self.epilogue.is_empty());
        self.run_epilogue(l, bufs, epi, cbuf, c, p);
        let ow = self.out_type().byte_size();
        let ncur = p.nc.min(n - n0);
        let cols = split.unwrap_or(ncur).max(1);
        for q in 0..ncur.div_ceil(cols) {
            let nq = cols.min(ncur - q * cols);
            let dst = self.out + (((b0 * m + m0) * n + n0 + q * cols) * ow) as u64;
            Self::strided_dma(
                l,
                (Space::Hbm, dst),
                (Space::Vmem, cbuf + (q * cols * ow) as u64),
                nq * ow,
                mm,
                p.nc * ow,
                n * ow,
            );
        }
        l.e.unit_waits = unit_waits;
    }

    /// DMAs each epilogue operand from HBM into its buffer.
    fn load_epilogue_args(&self, l: &mut Lowerer<'_>, bufs: &Bufs) {
        let n = self.dims.3;
        let mut ty = self.acc_type();
        let mut k = 0;
        for s in &self.epilogue {
            if let Some(a) = &s.arg {
                let w = ty.byte_size();
                let bytes = if a.per_column { n * w } else { w };
                Self::strided_dma(
                    l,
                    (Space::Vmem, bufs.epi[k].0),
                    (Space::Hbm, a.hbm),
                    bytes,
                    1,
                    bytes,
                    bytes,
                );
                k += 1;
            }
            ty = s.ty;
        }
    }

    /// The epilogue on the `rows × nc` result in `cbuf`, in place (a `convert` narrows the
    /// elements where they are: element `i` moves from `i·w` to `i·w'` with `w' ≤ w`, and one
    /// VPU instruction reads its operands before it writes, so no chunk overwrites bytes a
    /// later one reads). A binary step's tile holds the operand for the chunk's columns (one
    /// `vpu.bcast` of its `nc` values per panel) or the scalar (built once).
    fn run_epilogue(
        &self,
        l: &mut Lowerer<'_>,
        bufs: &Bufs,
        epi: &mut EpiState,
        cbuf: u64,
        c: Chunk,
        p: &Plan,
    ) {
        use super::elementwise::{binary, chunks, unary};
        let mr = p.mc.max(p.first_rows);
        let total = (c.rows * p.nc) as u64;
        let mut ty = self.acc_type();
        let mut k = 0;
        for s in &self.epilogue {
            let t = super::dtype(ty).expect("checked when the epilogue was matched");
            let w = ty.byte_size() as u64;
            let to = super::dtype(s.ty).expect("checked when the epilogue was matched");
            let ow = s.ty.byte_size() as u64;
            let tile = if let Some(a) = &s.arg {
                let (arg, tile) = bufs.epi[k];
                let want = if a.per_column { c.n0 } else { 0 };
                if epi.tile_n0[k] != Some(want) {
                    let (src, row, rows) = if a.per_column {
                        (arg + c.n0 as u64 * w, p.nc as u64, mr as u64)
                    } else {
                        (arg, 1, (mr * p.nc) as u64)
                    };
                    l.bcast_at(tile, src, row, rows, t, w);
                    epi.tile_n0[k] = Some(want);
                }
                k += 1;
                Some((tile, a.acc_first))
            } else {
                None
            };
            for (e0, nn) in chunks(total) {
                let d = l.e.vaddr(cbuf + e0 * ow);
                let x = l.e.vaddr(cbuf + e0 * w);
                let mut reads = vec![Access::vmem(cbuf + e0 * w, nn as u64 * w)];
                let inst = match (s.op, tile) {
                    (hlo::Opcode::Convert, _) => Inst::VCvt {
                        dst: d,
                        a: x,
                        n: nn,
                        to,
                        from: t,
                        pat: None,
                        wait: None,
                        signal: None,
                    },
                    (op, None) => unary(op, d, x, nn, t).expect("checked when matched"),
                    (op, Some((tile, acc_first))) => {
                        let y = l.e.vaddr(tile + e0 * w);
                        reads.push(Access::vmem(tile + e0 * w, nn as u64 * w));
                        let (a, b) = if acc_first { (x, y) } else { (y, x) };
                        binary(op, d, a, b, nn, t).expect("checked when matched")
                    }
                };
                l.e.unit(
                    inst,
                    Queue::Vpu,
                    &reads,
                    &[Access::vmem(cbuf + e0 * ow, nn as u64 * ow)],
                );
            }
            ty = s.ty;
        }
    }
}

/// Work streamed from HBM on every core: a dot or a convolution.
#[derive(Clone, Debug)]
pub enum Streamed {
    Dot(StreamDot),
    Conv(super::conv::StreamConv),
}

impl Streamed {
    /// HLO instruction name.
    pub fn name(&self) -> &str {
        match self {
            Streamed::Dot(d) => &d.name,
            Streamed::Conv(c) => &c.name,
        }
    }

    /// HBM address of the result.
    pub fn out(&self) -> u64 {
        match self {
            Streamed::Dot(d) => d.out,
            Streamed::Conv(c) => c.out,
        }
    }

    /// Multiply-adds ×2.
    pub fn flops(&self) -> u64 {
        match self {
            Streamed::Dot(d) => 2 * (d.dims.0 * d.dims.1 * d.dims.2 * d.dims.3) as u64,
            Streamed::Conv(c) => c.flops(),
        }
    }

    /// Sizes of the buffers `emit` asks for, in order.
    pub fn buffer_sizes(&self, l: &Lowerer<'_>, cores: usize) -> Vec<u64> {
        match self {
            Streamed::Dot(d) => d.buffer_sizes(l, cores),
            Streamed::Conv(c) => c.buffer_sizes(l, cores),
        }
    }

    /// VMEM bytes one core needs.
    pub fn vmem_bytes(&self, l: &Lowerer<'_>, cores: usize) -> u64 {
        let al = |x: u64| x.div_ceil(64) * 64;
        self.buffer_sizes(l, cores).into_iter().map(al).sum()
    }

    /// Emits core `core`'s share (of `cores`), with buffers from `alloc`.
    pub fn emit(
        &self,
        l: &mut Lowerer<'_>,
        core: usize,
        cores: usize,
        alloc: &mut dyn FnMut(u64) -> CResult<u64>,
    ) -> CResult<()> {
        match self {
            Streamed::Dot(d) => d.emit(l, core, cores, alloc),
            Streamed::Conv(c) => c.emit(l, core, cores, alloc),
        }
    }
}

/// Whether convolution `h` of `c` has its input or result larger than a quarter of VMEM
/// `vmem` (it streams late if in the streamed form: [`super::conv::StreamConv::new`]).
pub fn big_conv(c: &hlo::Computation, h: InstId, vmem: u64) -> bool {
    let limit = vmem / super::stream_ew::BIG_FRACTION;
    let big = |x: InstId| c.insts[x].shape.byte_size().is_some_and(|b| b > limit);
    c.insts[h].opcode == hlo::Opcode::Convolution
        && (big(h) || c.insts[h].operands.first().is_some_and(|&o| big(o)))
}

/// Whether dot `h` of `c` is in the streamed form and an operand or its result is larger than
/// a quarter of VMEM `vmem` (so it streams late even with operands in VMEM).
pub fn big_dot(c: &hlo::Computation, h: InstId, vmem: u64) -> bool {
    let limit = vmem / super::stream_ew::BIG_FRACTION;
    let big = |x: InstId| c.insts[x].shape.byte_size().is_some_and(|b| b > limit);
    super::dot::stream_form(c, h).is_some()
        && (big(h) || c.insts[h].operands.iter().any(|&o| big(o)))
}

impl Lowerer<'_> {
    /// Whether dot or convolution `h` of the entry streams from HBM where it stands: it is in
    /// [`super::dot::stream_form`] (a convolution: [`super::conv::StreamConv::new`] has a
    /// plan), was not planned to stream from the program's start, and an operand lives in HBM
    /// or it is larger than a quarter of VMEM ([`big_dot`], [`big_conv`]).
    pub(crate) fn streams_late(&self, h: InstId) -> CResult<bool> {
        if self.depth() != 0 || self.stream[h.index()].is_some() || self.fused[h.index()] {
            return Ok(false);
        }
        let c = self.m.entry();
        let conv = c.insts[h].opcode == hlo::Opcode::Convolution;
        if conv {
            if super::conv::StreamConv::new(self, h, 0, 0, 0).is_none() {
                return Ok(false);
            }
        } else if super::dot::stream_form(c, h).is_none() {
            return Ok(false);
        }
        let mut hbm = false;
        for &o in &c.insts[h].operands {
            hbm |= matches!(self.val(o)?, Val::Hbm(_));
        }
        Ok(hbm
            || big_dot(c, h, self.arch.vmem.bytes)
            || (conv && big_conv(c, h, self.arch.vmem.bytes)))
    }

    /// Lowers dot or convolution `h` ([`Self::streams_late`]) streamed where it stands (core 0,
    /// and the other core of a two-core chip when the plan fits): operands from HBM
    /// (a VMEM operand without an HBM copy is written out first), the result into an HBM
    /// slot, reloadable like a spill.
    pub(crate) fn lower_late_stream(&mut self, h: InstId) -> CResult<Val> {
        let c = self.m.entry();
        let inst = &c.insts[h];
        let lhs = self.hbm_copy_of(inst.operands[0])?;
        let rhs = self.hbm_copy_of(inst.operands[1])?;
        // Read from HBM only: their VMEM buffers may move out to make room.
        self.untouch(&inst.operands);
        let (ty, dims) = self.out_shape(h)?;
        let slot = self.hbm_array(ty, dims, &inst.name)?;
        let addr = slot.addr;
        let conv = inst.opcode == hlo::Opcode::Convolution;
        let sd = if conv {
            Streamed::Conv(
                super::conv::StreamConv::new(self, h, lhs, rhs, addr).ok_or_else(|| {
                    CompileError::Internal("late streamed convolution has no plan".into())
                })?,
            )
        } else {
            let g = super::dot::stream_form(c, h).ok_or_else(|| {
                CompileError::Internal("late streamed dot not in stream form".into())
            })?;
            Streamed::Dot(StreamDot {
                name: inst.name.clone(),
                lhs,
                rhs,
                rhs_t: g.rhs_t,
                out: addr,
                dims: (g.nb, g.m, g.k, g.n),
                mode: g.mode,
                // A bf16 result is the accumulator rounded, as on the VMEM-resident path.
                epilogue: if g.out == ElementType::BF16 {
                    vec![EpiStep {
                        op: hlo::Opcode::Convert,
                        arg: None,
                        ty: ElementType::BF16,
                    }]
                } else {
                    Vec::new()
                },
                budget: 0,
            })
        };
        self.stats.flops += sd.flops();
        // Every core takes a share: the others wait for core 0's go (its operands written),
        // and core 0 waits for their ends before anything reads the result.
        let most = self.arch.vmem.bytes / 4 * 3;
        self.make_room(most)?;
        let mut sd = sd;
        let budget = self.vmem_largest_free().min(most);
        if let Streamed::Dot(d) = &mut sd {
            d.budget = budget;
        }
        // Both cores of a two-core chip where its plan fits the VMEM free here (each core plans
        // the same). The go/join semaphores count per chip, not per core: with three or more
        // cores a fast one could take a slower one's go of this dot for its share of the next.
        let all = self.arch.cores_per_chip.max(1) as usize;
        let cores = if all == 2 && sd.vmem_bytes(self, all) <= budget {
            all
        } else {
            1
        };
        // A convolution's plan does not shrink to the VMEM free (a dot's does).
        if conv && sd.vmem_bytes(self, cores) > budget {
            return Err(self.too_large(format!(
                "convolution `{}` streamed from HBM needs {} bytes of VMEM per core for its \
                 input share, kernel columns and results; {budget} are free here",
                inst.name,
                sd.vmem_bytes(self, cores)
            )));
        }
        let mut pool = Vec::new();
        for n in sd.buffer_sizes(self, cores) {
            pool.push(self.tmp(ElementType::U8, vec![n as usize])?.addr);
        }
        if cores > 1 {
            self.declare_join_sems();
            self.e.fence();
            self.e.seq(Inst::SemSignal {
                sem: isa::Sem(super::emit::JOIN_SEMS[0]),
                n: cores as u32 - 1,
            });
        }
        let mut it = pool.into_iter();
        sd.emit(self, 0, cores, &mut |_| {
            it.next()
                .ok_or_else(|| CompileError::Internal("stream buffer pool exhausted".into()))
        })?;
        if cores > 1 {
            self.e.seq(Inst::SemWait {
                sem: isa::Sem(super::emit::JOIN_SEMS[1]),
                n: cores as u32 - 1,
            });
            for c in 1..cores {
                self.push_side(c, sd.clone(), true);
            }
        }
        self.stats.late_streams += 1;
        let lu = self.last_use_of(h);
        Ok(self.in_hbm(&slot, lu))
    }
}
