//! Helpers of the simulator's integration tests: assembling and running programs, and the
//! documented timing formulas (docs/timing.md) recomputed from `ArchConfig` fields — never from
//! the simulator's own `Params` — so a test checks the simulator against the document.

#![allow(dead_code)]

use arch::ArchConfig;
use sim::{SimOptions, System};

/// Hex text of bytes for `.data`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Assembles and runs `asm` on `arch`, with an infeed stream for core 0.
pub fn run(
    asm: &str,
    arch: &ArchConfig,
    functional: bool,
    infeed: Option<Vec<u8>>,
) -> (System, u64) {
    let prog = isa::asm::assemble(asm).unwrap_or_else(|e| panic!("{}", e.render("test.s")));
    let mut sys = System::new(
        arch,
        prog,
        1,
        SimOptions {
            functional,
            ..Default::default()
        },
    )
    .unwrap();
    if let Some(b) = infeed {
        if functional {
            sys.set_infeed(0, 0, b).unwrap();
        } else {
            sys.set_infeed_len(0, 0, b.len() as u64).unwrap();
        }
    }
    let r = sys.run().unwrap_or_else(|e| panic!("{e}"));
    (sys, r.cycles)
}

/// Assembles `text` and runs it on the `mini` preset (one chip, a cycle limit of 2^30),
/// returning the cycles or the simulator's error (a race, a deadlock).
pub fn try_run_mini(text: &str, functional: bool) -> Result<u64, sim::SimError> {
    let prog = isa::asm::assemble(text).unwrap_or_else(|e| panic!("{}", e.render("t.s")));
    let arch = ArchConfig::resolve("mini", &[] as &[String]).unwrap();
    let mut s = System::new(
        &arch,
        prog,
        1,
        SimOptions {
            functional,
            max_cycles: 1 << 30,
            ..Default::default()
        },
    )
    .unwrap();
    s.run().map(|r| r.cycles)
}

/// The documented timing numbers, from the arch's own fields.
pub struct Doc {
    pub r: u64,
    pub c: u64,
    pub hbm_bpc: f64,
    pub hbm_lat: u64,
    pub dma_bpc: f64,
    pub dma_setup: u64,
    pub vmem_bpc: u64,
    pub host_bpc: f64,
    pub host_lat: u64,
    pub scalar: u64,
    pub penalty: u64,
}

impl Doc {
    pub fn new(a: &ArchConfig) -> Doc {
        let cyc = |ns: f64| (ns * a.clock_mhz / 1000.0).ceil() as u64;
        let bpc = |gbps: f64| gbps * 1e9 / (a.clock_mhz * 1e6);
        Doc {
            r: a.mxu.rows as u64,
            c: a.mxu.cols as u64,
            hbm_bpc: bpc(a.hbm.gbps),
            hbm_lat: cyc(a.hbm.latency_ns),
            dma_bpc: a.dma.bytes_per_cycle as f64,
            dma_setup: a.dma.setup_cycles as u64,
            vmem_bpc: a.vmem.bytes_per_cycle,
            host_bpc: bpc(a.host.gbps),
            host_lat: cyc(a.host.latency_ns),
            scalar: a.sequencer.scalar_latency as u64,
            penalty: a.sequencer.branch_penalty as u64,
        }
    }

    /// An HBM↔VMEM DMA alone on the link: `setup + L_hbm + ⌈bytes / min(engine, hbm)⌉`.
    pub fn dma_alone(&self, bytes: u64) -> u64 {
        self.dma_setup
            + self.hbm_lat
            + (bytes as f64 / self.dma_bpc.min(self.hbm_bpc)).ceil() as u64
    }

    /// `mxu.st` of `m` rows of `n` columns: `max(m, ⌈4mn / vmem_bpc⌉)`.
    pub fn st(&self, m: u64, n: u64) -> u64 {
        m.max((4 * m * n).div_ceil(self.vmem_bpc))
    }
}

/// A tiny deterministic generator.
pub struct Lcg(pub u64);
impl Lcg {
    pub fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    pub fn i8(&mut self) -> i8 {
        self.next() as i8
    }
    /// A bf16 of moderate magnitude (both signs), sometimes zero.
    pub fn bf16(&mut self) -> u16 {
        if self.next().is_multiple_of(16) {
            return 0;
        }
        let sign = (self.next() & 1) as u16;
        let exp = 120 + (self.next() % 12) as u16;
        (sign << 15) | (exp << 7) | (self.next() & 0x7F) as u16
    }
}

/// The contract's bf16 numerics, written out independently for the tests: exact product with
/// DAZ inputs and FTZ result, f32 RNE additions with FTZ, canonical NaN.
pub mod bf16ref {
    fn ftz(x: f32) -> f32 {
        if x.is_nan() {
            f32::from_bits(0x7FC0_0000)
        } else if x != 0.0 && x.abs() < f32::MIN_POSITIVE {
            if x < 0.0 {
                -0.0
            } else {
                0.0
            }
        } else {
            x
        }
    }
    pub fn widen(b: u16) -> f32 {
        ftz(f32::from_bits((b as u32) << 16))
    }
    pub fn add(a: f32, b: f32) -> f32 {
        ftz(a + b)
    }
    pub fn prod(a: u16, w: u16) -> f32 {
        ftz(widen(a) * widen(w))
    }
}
