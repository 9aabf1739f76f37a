//! The configuration types. Field names are the dotted override paths (`mxu.rows`,
//! `hbm.gbps`, ...). Units are in the field names where they are not plain counts:
//! `_mhz`, `_ns`, `gbps` (10^9 bytes per second), `bytes`, `bytes_per_cycle`, cycles otherwise.
//! Cycles are cycles of the core clock `clock_mhz`.

use serde::{Deserialize, Serialize};

/// One chip (and the pod it sits in): every hardware number of the project.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchConfig {
    /// Short name (the preset name for presets).
    pub name: String,
    /// One line saying what this models.
    pub description: String,
    /// Dotted paths (a section name covers all of its fields) whose numbers are estimates,
    /// not public figures.
    #[serde(default)]
    pub guessed: Vec<String>,
    /// Free-form notes: sources, derivations.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Core clock in MHz; every `cycles` number below counts cycles of this clock.
    pub clock_mhz: f64,
    /// TensorCores per chip; each runs its own copy of the program.
    pub cores_per_chip: u32,
    /// The scalar unit that issues instructions.
    pub sequencer: SequencerConfig,
    /// Matrix units, per core.
    pub mxu: MxuConfig,
    /// Vector unit, per core.
    pub vpu: VpuConfig,
    /// On-chip vector memory, per core.
    pub vmem: VmemConfig,
    /// DMA engines, per core.
    pub dma: DmaConfig,
    /// Off-chip memory (HBM, or DDR on TPUv1), per chip.
    pub hbm: HbmConfig,
    /// Host link carrying infeed and outfeed, per chip.
    pub host: HostLinkConfig,
    /// Inter-chip interconnect and the pod topology.
    pub ici: IciConfig,
}

/// The sequencer (scalar unit): in-order issue, one instruction per cycle at most.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequencerConfig {
    /// Entries in each unit's instruction queue; the sequencer stalls when the target is full.
    pub queue_depth: u32,
    /// Latency of a scalar ALU instruction, cycles.
    pub scalar_latency: u32,
    /// Latency of a scalar load/store to VMEM, cycles.
    pub scalar_mem_latency: u32,
    /// Extra cycles lost on a taken branch.
    pub branch_penalty: u32,
}

/// Input element type of the MXU, which fixes its accumulator type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MxuDtype {
    /// int8 × int8 → int32 accumulation.
    Int8,
    /// bf16 × bf16 → f32 accumulation.
    Bf16,
}

/// Accumulator element type of an MXU mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccDtype {
    /// Two's-complement 32-bit integer, wrapping.
    Int32,
    /// IEEE binary32.
    F32,
}

impl MxuDtype {
    /// Accumulator type of this mode (see docs/mxu-contract.md).
    pub fn acc(self) -> AccDtype {
        match self {
            MxuDtype::Int8 => AccDtype::Int32,
            MxuDtype::Bf16 => AccDtype::F32,
        }
    }
    /// Bytes of one input element.
    pub fn bytes(self) -> u64 {
        match self {
            MxuDtype::Int8 => 1,
            MxuDtype::Bf16 => 2,
        }
    }
    /// Lower-case name as in JSON (`int8`, `bf16`).
    pub fn name(self) -> &'static str {
        match self {
            MxuDtype::Int8 => "int8",
            MxuDtype::Bf16 => "bf16",
        }
    }
}

impl AccDtype {
    /// Bytes of one accumulator element (always 4).
    pub fn bytes(self) -> u64 {
        4
    }
}

/// How operands move through the systolic array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dataflow {
    /// Weights stay in the PEs; activations flow through (the only one supported).
    WeightStationary,
    /// Partial sums stay in the PEs (described, not supported yet).
    OutputStationary,
}

/// The matrix units of one core (see docs/mxu-contract.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MxuConfig {
    /// MXUs per core.
    pub count: u32,
    /// Rows R of the array: the contraction (K) side.
    pub rows: u32,
    /// Columns C of the array: the output (N) side.
    pub cols: u32,
    /// Accumulator memory rows A (each of `cols` 32-bit elements), per MXU.
    pub acc_rows: u32,
    /// The numeric mode the hardware is built in (the RTL generator's mode; the compiler's
    /// default). Must be one of `dtypes`.
    pub dtype: MxuDtype,
    /// All input types the MXU accepts (the simulator rejects a matmul in another mode).
    pub dtypes: Vec<MxuDtype>,
    /// Dataflow; only `weight_stationary` is supported.
    pub dataflow: Dataflow,
    /// Shadow weight buffer (the next tile loads while the current one computes); only `true`
    /// is supported.
    pub double_buffered_weights: bool,
}

impl MxuConfig {
    /// Bytes of one full `rows × cols` weight tile in mode `d`.
    pub fn weight_tile_bytes(&self, d: MxuDtype) -> u64 {
        self.rows as u64 * self.cols as u64 * d.bytes()
    }
    /// Bytes of one MXU's accumulator memory.
    pub fn acc_bytes(&self) -> u64 {
        self.acc_rows as u64 * self.cols as u64 * 4
    }
}

/// Latency and throughput of one class of VPU operation.
///
/// An operation over `n` elements occupies its unit for `ceil(n / elems_per_cycle)` cycles and
/// its result is complete `latency` cycles after the last element entered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpTiming {
    /// Pipeline latency, cycles.
    pub latency: u32,
    /// Elements accepted per cycle (32-bit elements; 8/16-bit ones count as one element).
    pub elems_per_cycle: u32,
}

impl OpTiming {
    /// Cycles the unit is busy for `n` elements: `ceil(n / elems_per_cycle)`.
    pub fn busy_cycles(&self, n: u64) -> u64 {
        n.div_ceil(self.elems_per_cycle as u64)
    }
}

/// The vector unit of one core: `lanes × sublanes` 32-bit ALUs, a transcendental unit and a
/// cross-lane unit. One row of the per-op timing table per field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VpuConfig {
    /// Lanes (the minor dimension of a vector register).
    pub lanes: u32,
    /// Sublanes (the major dimension of a vector register).
    pub sublanes: u32,
    /// Vector registers of `lanes × sublanes` 32-bit words; they stage VMEM operands.
    pub vregs: u32,
    /// Add, sub, min, max, logic, shifts, compare, select, moves, iota, splat, broadcast.
    pub alu: OpTiming,
    /// Multiply.
    pub mul: OpTiming,
    /// Divide and remainder.
    pub div: OpTiming,
    /// Conversions between element types.
    pub cvt: OpTiming,
    /// Transcendental unit: exp, log, tanh, logistic, sqrt, rsqrt, sin, cos, pow, ...
    pub transcendental: OpTiming,
    /// Cross-lane unit: reductions, transposes, gathers (permutes).
    pub cross_lane: OpTiming,
    /// Slow-down of 64-bit element types (f64, s64, u64), emulated on 32-bit ALUs: their
    /// `elems_per_cycle` is divided by this factor (rounded up to at least 1).
    pub emulated_64bit_factor: u32,
}

impl VpuConfig {
    /// 32-bit elements in one vector register.
    pub fn elems_per_vreg(&self) -> u64 {
        self.lanes as u64 * self.sublanes as u64
    }
}

/// On-chip vector memory of one core.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmemConfig {
    /// Capacity in bytes.
    pub bytes: u64,
    /// Bytes per cycle the VMEM can move (reads plus writes, all units together).
    pub bytes_per_cycle: u64,
}

/// DMA engines of one core (HBM↔VMEM, VMEM↔VMEM, HBM↔HBM).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DmaConfig {
    /// Descriptors that can be in flight at once.
    pub engines: u32,
    /// Fixed cycles to start one descriptor.
    pub setup_cycles: u32,
    /// Peak bytes per cycle of one engine (HBM bandwidth is shared on top of this).
    pub bytes_per_cycle: u64,
    /// How many queued copies the front end looks at: it starts the oldest of the first
    /// `queues` whose `wait=` semaphore is available, so a copy blocked on a semaphore does not
    /// hold back the prefetches behind it (1: strictly in order). Default 1.
    #[serde(default = "one_u32")]
    pub queues: u32,
    /// Cycles an engine spends issuing each contiguous chunk of a descriptor (a copy's data
    /// phase lasts at least `chunks × chunk_cycles`). Default 0.
    #[serde(default)]
    pub chunk_cycles: u32,
}

fn one_u32() -> u32 {
    1
}

fn one_u64() -> u64 {
    1
}

/// Off-chip memory of one chip, shared by all cores and DMAs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HbmConfig {
    /// Memory technology, descriptive only (`hbm2`, `ddr3`, ...).
    pub kind: String,
    /// Capacity in bytes.
    pub bytes: u64,
    /// Bandwidth in GB/s (10^9 bytes per second).
    pub gbps: f64,
    /// Access latency in ns.
    pub latency_ns: f64,
    /// Access granularity in bytes: every HBM chunk of a DMA moves whole aligned bursts, so a
    /// 2-byte chunk costs a burst of link bandwidth. Default 1 (byte granular).
    #[serde(default = "one_u64")]
    pub burst_bytes: u64,
}

/// The host link carrying infeed (host → chip) and outfeed (chip → host).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostLinkConfig {
    /// Bandwidth per direction in GB/s.
    pub gbps: f64,
    /// One-way latency in ns.
    pub latency_ns: f64,
}

/// Pod topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Topology {
    /// One dimension, wrap-around.
    Ring,
    /// Two dimensions, wrap-around in both.
    Torus2d,
    /// Three dimensions, wrap-around in all.
    Torus3d,
}

impl Topology {
    /// Number of dimensions (`ici.dims` must have this many entries).
    pub fn ndims(self) -> usize {
        match self {
            Topology::Ring => 1,
            Topology::Torus2d => 2,
            Topology::Torus3d => 3,
        }
    }
}

/// Inter-chip interconnect (simulated by `sim::ici`; model in docs/ici.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IciConfig {
    /// Topology kind.
    pub topology: Topology,
    /// Chips along each dimension of the pod (slice) this config describes.
    pub dims: Vec<u32>,
    /// ICI links per chip.
    pub links_per_chip: u32,
    /// Bandwidth of one link per direction, GB/s.
    pub gbps_per_link: f64,
    /// Latency per hop, ns.
    pub hop_latency_ns: f64,
    /// Wrap-around links per dimension (a torus dimension without them is a line); empty means
    /// every dimension wraps.
    #[serde(default)]
    pub wrap: Vec<bool>,
}

impl IciConfig {
    /// Chips in the pod: the product of `dims`.
    pub fn chips(&self) -> u64 {
        self.dims
            .iter()
            .fold(1u64, |a, &d| a.saturating_mul(d as u64))
    }
}

impl ArchConfig {
    /// Cycles for `ns` nanoseconds at the core clock, rounded up.
    pub fn cycles_from_ns(&self, ns: f64) -> u64 {
        (ns * self.clock_mhz / 1000.0).ceil() as u64
    }
    /// Bytes per core-clock cycle of a bandwidth in GB/s.
    pub fn bytes_per_cycle(&self, gbps: f64) -> f64 {
        gbps * 1000.0 / self.clock_mhz
    }
    /// Peak multiply-accumulate throughput of the chip in operations per second (2 per MAC).
    pub fn peak_ops_per_second(&self) -> f64 {
        2.0 * self.cores_per_chip as f64
            * self.mxu.count as f64
            * self.mxu.rows as f64
            * self.mxu.cols as f64
            * self.clock_mhz
            * 1e6
    }
}
