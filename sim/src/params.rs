//! `Params`: the `ArchConfig` numbers the simulator uses, converted once to cycles and bytes per
//! cycle of the core clock. This is the only place where the simulator turns a hardware number
//! into a timing number (the formulas are in `docs/timing.md`).

use arch::{ArchConfig, MxuDtype, OpTiming};
use isa::{DType, TimingClass};

/// Timing of one VPU pipeline class, ready to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VpuClass {
    /// Result latency after the last element entered, cycles.
    pub latency: u64,
    /// Elements accepted per cycle (32-bit and narrower types).
    pub elems_per_cycle: u64,
}

/// Which VPU pipeline executes a class (pipelines run concurrently; each is in order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VpuPipe {
    /// The ALU array: alu, mul, div, cvt.
    Main = 0,
    /// The transcendental unit.
    Trans = 1,
    /// The cross-lane unit.
    Xlane = 2,
}

/// Derived simulator parameters of one chip.
#[derive(Clone, Debug)]
pub struct Params {
    /// Cores per chip.
    pub cores: usize,
    /// Unit queue depth.
    pub queue_depth: usize,
    /// Cycles of a scalar ALU instruction.
    pub scalar_latency: u64,
    /// Cycles of a scalar VMEM access.
    pub scalar_mem_latency: u64,
    /// Extra cycles of a taken branch.
    pub branch_penalty: u64,
    /// MXUs per core.
    pub mxus: usize,
    /// MXU rows `R`.
    pub mxu_rows: usize,
    /// MXU columns `C`.
    pub mxu_cols: usize,
    /// Accumulator rows `A`.
    pub mxu_acc_rows: usize,
    /// The MXU's built mode.
    pub mxu_dtype: MxuDtype,
    /// All accepted MXU modes.
    pub mxu_dtypes: Vec<MxuDtype>,
    /// VPU classes: alu, mul, div, cvt, transcendental, cross_lane.
    pub vpu: [VpuClass; 6],
    /// Divisor of `elems_per_cycle` for 64-bit element types.
    pub vpu_64bit_factor: u64,
    /// VMEM capacity, bytes.
    pub vmem_bytes: u64,
    /// VMEM bandwidth, bytes per cycle.
    pub vmem_bpc: u64,
    /// DMA engines per core.
    pub dma_engines: usize,
    /// DMA setup cycles.
    pub dma_setup: u64,
    /// DMA engine peak, bytes per cycle.
    pub dma_bpc: f64,
    /// Queued DMA copies the front end looks at (`dma.queues`).
    pub dma_queues: usize,
    /// Engine cycles per contiguous chunk (`dma.chunk_cycles`).
    pub dma_chunk_cycles: u64,
    /// HBM access granularity, bytes (`hbm.burst_bytes`).
    pub hbm_burst: u64,
    /// HBM capacity, bytes.
    pub hbm_bytes: u64,
    /// HBM bandwidth, bytes per cycle.
    pub hbm_bpc: f64,
    /// HBM latency, cycles.
    pub hbm_latency: u64,
    /// Host link bandwidth per direction, bytes per cycle.
    pub host_bpc: f64,
    /// Host link latency, cycles.
    pub host_latency: u64,
    /// Chips per ICI dimension (`ici.dims`; chip `id = x0 + d0·(x1 + d1·x2)`).
    pub ici_dims: Vec<u32>,
    /// One ICI link's bandwidth, bytes per cycle (the rate an ICI transfer's VMEM side books).
    pub ici_link_bpc: f64,
}

impl Params {
    /// Derives the parameters of one chip.
    pub fn new(a: &ArchConfig) -> Self {
        let c = |t: &OpTiming| VpuClass {
            latency: t.latency as u64,
            elems_per_cycle: t.elems_per_cycle.max(1) as u64,
        };
        Params {
            cores: a.cores_per_chip as usize,
            queue_depth: a.sequencer.queue_depth.max(1) as usize,
            scalar_latency: a.sequencer.scalar_latency.max(1) as u64,
            scalar_mem_latency: a.sequencer.scalar_mem_latency.max(1) as u64,
            branch_penalty: a.sequencer.branch_penalty as u64,
            mxus: a.mxu.count as usize,
            mxu_rows: a.mxu.rows as usize,
            mxu_cols: a.mxu.cols as usize,
            mxu_acc_rows: a.mxu.acc_rows as usize,
            mxu_dtype: a.mxu.dtype,
            mxu_dtypes: a.mxu.dtypes.clone(),
            vpu: [
                c(&a.vpu.alu),
                c(&a.vpu.mul),
                c(&a.vpu.div),
                c(&a.vpu.cvt),
                c(&a.vpu.transcendental),
                c(&a.vpu.cross_lane),
            ],
            vpu_64bit_factor: a.vpu.emulated_64bit_factor.max(1) as u64,
            vmem_bytes: a.vmem.bytes,
            vmem_bpc: a.vmem.bytes_per_cycle.max(1),
            dma_engines: a.dma.engines.max(1) as usize,
            dma_setup: a.dma.setup_cycles as u64,
            dma_bpc: a.dma.bytes_per_cycle.max(1) as f64,
            dma_queues: a.dma.queues.max(1) as usize,
            dma_chunk_cycles: a.dma.chunk_cycles as u64,
            hbm_burst: a.hbm.burst_bytes.max(1),
            hbm_bytes: a.hbm.bytes,
            hbm_bpc: a.bytes_per_cycle(a.hbm.gbps),
            hbm_latency: a.cycles_from_ns(a.hbm.latency_ns),
            host_bpc: a.bytes_per_cycle(a.host.gbps),
            host_latency: a.cycles_from_ns(a.host.latency_ns),
            ici_dims: a.ici.dims.clone(),
            ici_link_bpc: a.bytes_per_cycle(a.ici.gbps_per_link),
        }
    }

    /// The VPU class and pipeline of a timing class (`None` for non-VPU classes).
    pub fn vpu_class(&self, t: TimingClass) -> Option<(VpuClass, VpuPipe)> {
        Some(match t {
            TimingClass::VpuAlu => (self.vpu[0], VpuPipe::Main),
            TimingClass::VpuMul => (self.vpu[1], VpuPipe::Main),
            TimingClass::VpuDiv => (self.vpu[2], VpuPipe::Main),
            TimingClass::VpuCvt => (self.vpu[3], VpuPipe::Main),
            TimingClass::VpuTrans => (self.vpu[4], VpuPipe::Trans),
            TimingClass::VpuXlane => (self.vpu[5], VpuPipe::Xlane),
            _ => return None,
        })
    }

    /// `(busy, latency)` of a VPU op over `n` elements of type `t`:
    /// busy `⌈n / epc⌉` (64-bit types: `epc / factor`, at least 1), latency as configured.
    pub fn vpu_cost(&self, class: VpuClass, t: DType, n: u64) -> (u64, u64) {
        let epc = if t.bytes() == 8 {
            (class.elems_per_cycle / self.vpu_64bit_factor).max(1)
        } else {
            class.elems_per_cycle
        };
        (n.div_ceil(epc), class.latency)
    }

    /// Cycles a contiguous, burst-aligned DMA of `bytes` takes alone:
    /// `setup + L + ⌈bytes / min(engine, link)⌉`, where the link is HBM (latency `hbm_latency`)
    /// if `hbm` is set, else the VMEM port, of which a VMEM→VMEM copy needs two bytes per byte
    /// copied (no latency).
    pub fn dma_alone_cycles(&self, bytes: u64, hbm: bool) -> u64 {
        let (bw, lat) = if hbm {
            (self.hbm_bpc, self.hbm_latency)
        } else {
            (self.vmem_bpc as f64 / 2.0, 0)
        };
        self.dma_setup + lat + (bytes as f64 / self.dma_bpc.min(bw)).ceil() as u64
    }
}
