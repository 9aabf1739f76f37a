//! Validation: every rule a config must meet before a compiler, simulator or RTL generator may
//! use it. All violations are collected, so one run reports them all.

use crate::{ArchConfig, ArchError, Dataflow, OpTiming};

/// Largest MXU dimension (rows, cols) accepted.
pub const MAX_MXU_DIM: u32 = 1024;
/// Largest number of MXUs per core (the ISA's MXU index field is 4 bits wide).
pub const MAX_MXUS: u32 = 16;
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

fn positive(need: &mut impl FnMut(bool, String), name: &str, v: f64) {
    need(
        v.is_finite() && v > 0.0,
        format!("{name} must be a finite number > 0, got {v}"),
    );
}

fn non_negative(need: &mut impl FnMut(bool, String), name: &str, v: f64) {
    need(
        v.is_finite() && v >= 0.0,
        format!("{name} must be a finite number >= 0, got {v}"),
    );
}

fn lookup<'a>(v: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    path.split('.').try_fold(v, |cur, seg| match cur {
        serde_json::Value::Object(m) => m.get(seg),
        serde_json::Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}
