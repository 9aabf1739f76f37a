//! Validation: every rule a config must meet before a compiler, simulator or RTL generator may
//! use it. All violations are collected, so one run reports them all.

use crate::{ArchConfig, ArchError, Dataflow, OpTiming};

/// Largest MXU dimension (rows, cols) accepted.
pub const MAX_MXU_DIM: u32 = 1024;
/// Largest number of MXUs per core (the ISA's MXU index field is 4 bits wide).
pub const MAX_MXUS: u32 = 16;
/// Largest HBM per chip: 1 TiB (today's largest parts carry 192 GiB).
pub const MAX_HBM_BYTES: u64 = 1 << 40;
/// Largest VMEM per core: 64 GiB.
pub const MAX_VMEM_BYTES: u64 = 1 << 36;
/// Bandwidths (GB/s) must lie in this range: slower links make one byte take longer than a
/// simulated hour, faster ones exceed any interconnect by orders of magnitude.
pub const GBPS_RANGE: (f64, f64) = (1e-3, 1e7);
/// Latencies (ns) must be at most one second.
pub const MAX_LATENCY_NS: f64 = 1e9;
/// Largest count of simple things (DMA engines, queue entries, lanes, registers, ...).
pub const MAX_COUNT: u32 = 1 << 16;
/// Largest cycle count of a fixed delay (latencies, setup, penalties).
pub const MAX_DELAY_CYCLES: u32 = 1_000_000;
/// Largest per-cycle byte or element rate.
pub const MAX_PER_CYCLE: u64 = 1 << 30;
/// Largest number of chips in a pod (product of `ici.dims`).
pub const MAX_CHIPS: u64 = 1 << 16;

/// Largest number of accumulator rows per MXU: a sanity bound (TPUv1's 4 MiB of accumulators
/// are 4096 rows of 256).
pub const MAX_ACC_ROWS: u32 = 1 << 20;

impl ArchConfig {
    /// Checks every rule; the error lists all violations.
    pub fn validate(&self) -> Result<(), ArchError> {
        let mut e: Vec<String> = Vec::new();
        let mut need = |ok: bool, msg: String| {
            if !ok {
                e.push(msg)
            }
        };
        need(
            !self.name.trim().is_empty(),
            "name must not be empty".into(),
        );
        need(
            self.clock_mhz.is_finite() && self.clock_mhz > 0.0 && self.clock_mhz <= 100_000.0,
            format!("clock_mhz must be in (0, 100000], got {}", self.clock_mhz),
        );
        need(
            (1..=64).contains(&self.cores_per_chip),
            format!(
                "cores_per_chip must be in 1..=64, got {}",
                self.cores_per_chip
            ),
        );

        let s = &self.sequencer;
        need(
            s.queue_depth >= 1,
            "sequencer.queue_depth must be >= 1".into(),
        );
        need(
            s.scalar_latency >= 1,
            "sequencer.scalar_latency must be >= 1".into(),
        );
        need(
            s.scalar_mem_latency >= 1,
            "sequencer.scalar_mem_latency must be >= 1".into(),
        );

        let m = &self.mxu;
        need(
            (1..=MAX_MXUS).contains(&m.count),
            format!("mxu.count must be in 1..={MAX_MXUS}, got {}", m.count),
        );
        need(
            (1..=MAX_MXU_DIM).contains(&m.rows),
            format!("mxu.rows must be >= 1 and <= {MAX_MXU_DIM}, got {}", m.rows),
        );
        need(
            (1..=MAX_MXU_DIM).contains(&m.cols),
            format!("mxu.cols must be >= 1 and <= {MAX_MXU_DIM}, got {}", m.cols),
        );
        need(
            (1..=MAX_ACC_ROWS).contains(&m.acc_rows),
            format!(
                "mxu.acc_rows must be in 1..={MAX_ACC_ROWS}, got {}",
                m.acc_rows
            ),
        );
        need(!m.dtypes.is_empty(), "mxu.dtypes must not be empty".into());
        let mut seen = m.dtypes.clone();
        seen.sort();
        seen.dedup();
        need(
            seen.len() == m.dtypes.len(),
            "mxu.dtypes lists a type twice".into(),
        );
        need(
            m.dtypes.contains(&m.dtype),
            format!(
                "mxu.dtype `{}` must be one of mxu.dtypes [{}]",
                m.dtype.name(),
                m.dtypes
                    .iter()
                    .map(|d| d.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
        need(
            m.dataflow == Dataflow::WeightStationary,
            "mxu.dataflow: not supported yet: only weight_stationary".into(),
        );
        need(
            m.double_buffered_weights,
            "mxu.double_buffered_weights: not supported yet: only true (shadow weight buffer)"
                .into(),
        );

        let v = &self.vpu;
        need(v.lanes >= 1, "vpu.lanes must be >= 1".into());
        need(v.sublanes >= 1, "vpu.sublanes must be >= 1".into());
        need(v.vregs >= 1, "vpu.vregs must be >= 1".into());
        need(
            v.emulated_64bit_factor >= 1,
            "vpu.emulated_64bit_factor must be >= 1".into(),
        );
        let timings: [(&str, &OpTiming); 6] = [
            ("alu", &v.alu),
            ("mul", &v.mul),
            ("div", &v.div),
            ("cvt", &v.cvt),
            ("transcendental", &v.transcendental),
            ("cross_lane", &v.cross_lane),
        ];
        for (n, t) in timings {
            need(
                t.elems_per_cycle >= 1,
                format!("vpu.{n}.elems_per_cycle must be >= 1"),
            );
            need(
                t.latency <= 1_000_000,
                format!("vpu.{n}.latency must be <= 1000000, got {}", t.latency),
            );
        }

        let tile = m
            .dtypes
            .iter()
            .map(|&d| m.weight_tile_bytes(d))
            .max()
            .unwrap_or(0);
        need(
            self.vmem.bytes >= tile,
            format!(
                "vmem.bytes ({}) must hold at least one {}x{} weight tile ({} bytes)",
                self.vmem.bytes, m.rows, m.cols, tile
            ),
        );
        need(
            self.vmem.bytes_per_cycle >= 1,
            "vmem.bytes_per_cycle must be >= 1".into(),
        );

        need(self.dma.engines >= 1, "dma.engines must be >= 1".into());
        need(
            self.dma.bytes_per_cycle >= 1,
            "dma.bytes_per_cycle must be >= 1".into(),
        );

        need(self.hbm.bytes >= 1, "hbm.bytes must be >= 1".into());
        positive(&mut need, "hbm.gbps", self.hbm.gbps);
        non_negative(&mut need, "hbm.latency_ns", self.hbm.latency_ns);
        positive(&mut need, "host.gbps", self.host.gbps);
        non_negative(&mut need, "host.latency_ns", self.host.latency_ns);

        let i = &self.ici;
        let nd = i.topology.ndims();
        need(
            i.dims.len() == nd,
            format!(
                "ici.dims must have {nd} entries for topology {:?}, got {}",
                i.topology,
                i.dims.len()
            ),
        );
        need(
            i.dims.iter().all(|&d| d >= 1),
            "ici.dims entries must be >= 1".into(),
        );
        need(
            i.wrap.is_empty() || i.wrap.len() == nd,
            format!(
                "ici.wrap must be empty (every dimension wraps) or have {nd} entries for \
                 topology {:?}, got {}",
                i.topology,
                i.wrap.len()
            ),
        );
        if i.chips() > 1 {
            need(
                i.links_per_chip as usize >= 2 * nd,
                format!(
                    "ici.links_per_chip must be >= {} for a {:?} of more than one chip, got {}",
                    2 * nd,
                    i.topology,
                    i.links_per_chip
                ),
            );
            positive(&mut need, "ici.gbps_per_link", i.gbps_per_link);
        }
        non_negative(&mut need, "ici.hop_latency_ns", i.hop_latency_ns);

        bounded(&mut need, self);

        let tree = serde_json::to_value(self).expect("ArchConfig serializes");
        for g in &self.guessed {
            need(
                lookup(&tree, g).is_some(),
                format!("guessed lists `{g}`, which is no config key"),
            );
        }

        if e.is_empty() {
            Ok(())
        } else {
            Err(ArchError::Invalid {
                name: self.name.clone(),
                errors: e,
            })
        }
    }

    /// Whether the number at dotted `path` is marked as guessed (directly or by a section).
    pub fn is_guessed(&self, path: &str) -> bool {
        self.guessed
            .iter()
            .any(|g| path == g || path.starts_with(&format!("{g}.")))
    }
}

/// Upper bounds of every size, rate, delay and count (lower bounds are checked above), so
/// that no derived quantity (page tables, cycle sums, chip counts) can overflow or exhaust
/// memory: each message names the field, the value and the allowed range.
fn bounded(need: &mut impl FnMut(bool, String), c: &ArchConfig) {
    let mut int = |name: &str, v: u64, lo: u64, hi: u64| {
        need(
            (lo..=hi).contains(&v),
            format!("{name} = {v} is out of range: allowed {lo}..={hi}"),
        )
    };
    let cnt = MAX_COUNT as u64;
    let dly = MAX_DELAY_CYCLES as u64;
    let s = &c.sequencer;
    int("sequencer.queue_depth", s.queue_depth.into(), 1, cnt);
    int("sequencer.scalar_latency", s.scalar_latency.into(), 1, dly);
    int(
        "sequencer.scalar_mem_latency",
        s.scalar_mem_latency.into(),
        1,
        dly,
    );
    int("sequencer.branch_penalty", s.branch_penalty.into(), 0, dly);
    let v = &c.vpu;
    int("vpu.lanes", v.lanes.into(), 1, cnt);
    int("vpu.sublanes", v.sublanes.into(), 1, cnt);
    int("vpu.vregs", v.vregs.into(), 1, cnt);
    int(
        "vpu.emulated_64bit_factor",
        v.emulated_64bit_factor.into(),
        1,
        1024,
    );
    int(
        "vpu.lanes*vpu.sublanes",
        v.lanes as u64 * v.sublanes as u64,
        1,
        cnt,
    );
    for (n, t) in [
        ("alu", &v.alu),
        ("mul", &v.mul),
        ("div", &v.div),
        ("cvt", &v.cvt),
        ("transcendental", &v.transcendental),
        ("cross_lane", &v.cross_lane),
    ] {
        int(
            &format!("vpu.{n}.elems_per_cycle"),
            t.elems_per_cycle.into(),
            1,
            MAX_PER_CYCLE,
        );
    }
    int("vmem.bytes", c.vmem.bytes, 1, MAX_VMEM_BYTES);
    int(
        "vmem.bytes_per_cycle",
        c.vmem.bytes_per_cycle,
        1,
        MAX_PER_CYCLE,
    );
    int("dma.engines", c.dma.engines.into(), 1, 1024);
    int("dma.setup_cycles", c.dma.setup_cycles.into(), 0, dly);
    int("dma.queues", c.dma.queues.into(), 1, 64);
    int("dma.chunk_cycles", c.dma.chunk_cycles.into(), 0, dly);
    int("hbm.burst_bytes", c.hbm.burst_bytes, 1, 1 << 20);
    int(
        "dma.bytes_per_cycle",
        c.dma.bytes_per_cycle,
        1,
        MAX_PER_CYCLE,
    );
    int("hbm.bytes", c.hbm.bytes, 1, MAX_HBM_BYTES);
    let i = &c.ici;
    int("ici.links_per_chip", i.links_per_chip.into(), 0, 64);
    for (k, &d) in i.dims.iter().enumerate() {
        int(&format!("ici.dims[{k}]"), d.into(), 1, MAX_CHIPS);
    }
    let chips = i
        .dims
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d as u64));
    need(
        chips.is_some_and(|n| n <= MAX_CHIPS),
        format!(
            "ici.dims {:?} make {} chips, out of range: allowed 1..={MAX_CHIPS}",
            i.dims,
            chips.map_or("more than 2^64".to_string(), |n| n.to_string())
        ),
    );
    let (lo, hi) = GBPS_RANGE;
    let mut rate = |name: &str, g: f64| {
        need(
            !(g.is_finite() && g > 0.0) || (lo..=hi).contains(&g),
            format!("{name} = {g:?} is out of range: allowed {lo:?}..={hi:?} GB/s"),
        )
    };
    rate("hbm.gbps", c.hbm.gbps);
    rate("host.gbps", c.host.gbps);
    if i.chips() > 1 {
        rate("ici.gbps_per_link", i.gbps_per_link);
    }
    let mut lat = |name: &str, ns: f64| {
        need(
            !(ns.is_finite() && ns >= 0.0) || ns <= MAX_LATENCY_NS,
            format!("{name} = {ns:?} is out of range: allowed 0..={MAX_LATENCY_NS:?} ns"),
        )
    };
    lat("hbm.latency_ns", c.hbm.latency_ns);
    lat("host.latency_ns", c.host.latency_ns);
    lat("ici.hop_latency_ns", c.ici.hop_latency_ns);
}

fn positive(need: &mut impl FnMut(bool, String), name: &str, v: f64) {
    need(
        v.is_finite() && v > 0.0,
        format!("{name} must be a finite number > 0, got {v:?}"),
    );
}

fn non_negative(need: &mut impl FnMut(bool, String), name: &str, v: f64) {
    need(
        v.is_finite() && v >= 0.0,
        format!("{name} must be a finite number >= 0, got {v:?}"),
    );
}

fn lookup<'a>(v: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    path.split('.').try_fold(v, |cur, seg| match cur {
        serde_json::Value::Object(m) => m.get(seg),
        serde_json::Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use crate::ArchConfig;

    fn errors(sets: &[&str]) -> String {
        match ArchConfig::resolve("mini", sets) {
            Ok(_) => String::new(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn every_preset_is_within_the_bounds() {
        for (name, _) in crate::PRESETS {
            ArchConfig::preset(name).unwrap();
        }
    }

    #[test]
    fn out_of_range_values_name_field_value_and_range() {
        let e = errors(&["hbm.bytes=18446744073709551615"]);
        assert!(
            e.contains(
                "hbm.bytes = 18446744073709551615 is out of range: allowed 1..=1099511627776"
            ),
            "{e}"
        );
        let e = errors(&["hbm.gbps=1e-25"]);
        assert!(
            e.contains("hbm.gbps = 1e-25 is out of range: allowed 0.001..="),
            "{e}"
        );
        let e = errors(&["hbm.latency_ns=1e300"]);
        assert!(
            e.contains("hbm.latency_ns = 1e300 is out of range: allowed 0..="),
            "{e}"
        );
        let e = errors(&["dma.setup_cycles=4000000000"]);
        assert!(
            e.contains("dma.setup_cycles = 4000000000 is out of range"),
            "{e}"
        );
        let e = errors(&["ici.dims=[4294967295]"]);
        assert!(
            e.contains("ici.dims [4294967295] make 4294967295 chips"),
            "{e}"
        );
        assert_eq!(errors(&["hbm.gbps=0.001", "hbm.latency_ns=1000000000"]), "");
    }

    #[test]
    fn json_errors_are_placed_at_line_and_column() {
        let e = ArchConfig::from_json("{\n  x", "f.json").unwrap_err();
        assert_eq!(e.to_string(), "f.json:2:3: key must be a string");
    }
}
