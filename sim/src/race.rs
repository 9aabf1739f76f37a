//! Race detection: two accesses to overlapping bytes, at least one a write, by different units
//! (or by two DMA copies, which complete in any order), whose lifetimes overlap in the run, are
//! a race: nothing the program did ordered them. A program that orders its units with
//! semaphores or fences never has such a pair, because the consumer starts only after the
//! producer completed.
//!
//! What is checked: every unit instruction's VMEM/HBM bytes (as [`isa::Access`] runs) over
//! `[start, completion)`, against every instruction still in flight, in functional and
//! timing-only runs alike. HBM is shared by the cores of a chip; VMEM is per core. Not checked
//! (documented in docs/timing.md): races whose accesses do not overlap in time in this run
//! (latent races a different timing would expose), the table-indexed source of `vpu.gather`
//! in timing-only runs, DMA descriptors whose outer dimensions expand to more than
//! [`MAX_RUNS`] runs, scalar `s.ld`/`s.st`, and ICI transfers.

use isa::{Access, Space};

/// Largest number of strided runs one DMA operand is expanded into for checking.
pub const MAX_RUNS: u64 = 4096;

/// One memory operand of an instruction.
#[derive(Clone, Debug)]
pub struct Touch {
    /// The bytes.
    pub acc: Access,
    /// Written (else read).
    pub write: bool,
}

/// An instruction in flight.
#[derive(Clone, Debug)]
pub struct Live {
    /// Core.
    pub core: u32,
    /// Unit index within the core.
    pub unit: usize,
    /// The unit is the DMA queue (its copies are unordered among themselves).
    pub dma: bool,
    /// Unique id (for DMA completion).
    pub id: u64,
    /// Program counter.
    pub pc: u32,
    /// Unit name, e.g. `core0.vpu`.
    pub unit_name: String,
    /// Assembly text.
    pub inst: String,
    /// HLO symbol, if any.
    pub symbol: Option<String>,
    /// First cycle.
    pub start: u64,
    /// Completion (`u64::MAX` until known).
    pub done: u64,
    /// Its memory operands.
    pub touches: Vec<Touch>,
}

impl Live {
    fn describe(&self) -> String {
        let sym = self
            .symbol
            .as_deref()
            .map(|s| format!(" (HLO `{s}`)"))
            .unwrap_or_default();
        let done = if self.done == u64::MAX {
            "in flight".to_string()
        } else {
            format!("{}", self.done)
        };
        format!(
            "{} pc {} `{}`{sym}, cycles [{}, {done})",
            self.unit_name, self.pc, self.inst, self.start
        )
    }
}

/// The in-flight instructions of one chip.
#[derive(Default)]
pub struct RaceTracker {
    live: Vec<Live>,
    next: u64,
}

fn space_name(s: Space) -> &'static str {
    match s {
        Space::Hbm => "HBM",
        Space::Vmem => "VMEM",
    }
}

impl RaceTracker {
    /// A fresh id for an instruction.
    pub fn next_id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Forgets instructions completed by `now`.
    pub fn prune(&mut self, now: u64) {
        self.live.retain(|l| l.done > now);
    }

    /// Sets the completion of the instruction with `id` (a DMA copy).
    pub fn set_done(&mut self, id: u64, done: u64) {
        if let Some(l) = self.live.iter_mut().find(|l| l.id == id) {
            l.done = done;
        }
    }

    /// Checks `new` against everything in flight; records it unless it races (then the
    /// description of the race).
    pub fn add(&mut self, new: Live) -> Result<(), String> {
        for l in &self.live {
            let ordered = l.core == new.core && l.unit == new.unit && !new.dma;
            if ordered || !(l.start < new.done && new.start < l.done) {
                continue;
            }
            for a in &l.touches {
                for b in &new.touches {
                    if !(a.write || b.write) || a.acc.space != b.acc.space {
                        continue;
                    }
                    if a.acc.space == Space::Vmem && l.core != new.core {
                        continue;
                    }
                    if a.acc.overlaps(&b.acc) {
                        let kind = match (a.write, b.write) {
                            (true, true) => "write/write",
                            (true, false) => "write/read",
                            _ => "read/write",
                        };
                        let lo = a.acc.start.max(b.acc.start);
                        return Err(format!(
                            "race ({kind}) on {} bytes near {lo:#x} (first access [{:#x}, +{}) \
                             x{} stride {}, second [{:#x}, +{}) x{} stride {}): nothing orders\n  \
                             {}\n  and\n  {}\n(add a semaphore wait or a fence between them)",
                            space_name(a.acc.space),
                            a.acc.start,
                            a.acc.row_bytes,
                            a.acc.rows,
                            a.acc.stride,
                            b.acc.start,
                            b.acc.row_bytes,
                            b.acc.rows,
                            b.acc.stride,
                            l.describe(),
                            new.describe()
                        ));
                    }
                }
            }
        }
        self.live.push(new);
        Ok(())
    }
}

/// The accesses of a DMA descriptor's side starting at `base` in `space`: one strided run set
/// per combination of the outer dimensions beyond the first (`None` if more than
/// [`MAX_RUNS`] runs, which is not checked).
pub fn dma_side(space: Space, base: u64, desc: &isa::DmaDesc, src: bool) -> Option<Vec<Access>> {
    let len = desc.len as u64;
    let stride_of = |d: &isa::DmaDim| if src { d.src_stride } else { d.dst_stride };
    let (rows, stride) = match desc.dims.first() {
        Some(d) if stride_of(d) >= 0 => (d.count as u64, stride_of(d) as u64),
        Some(_) => return None,
        None => (1, len),
    };
    let outer: Vec<&isa::DmaDim> = desc.dims.iter().skip(1).collect();
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
        out.push(Access {
            space,
            start: start as u64,
            row_bytes: len,
            stride: stride.max(len),
            rows,
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    fn live(unit: usize, dma: bool, start: u64, done: u64, acc: Access, write: bool) -> Live {
        Live {
            core: 0,
            unit,
            dma,
            id: 0,
            pc: 0,
            unit_name: format!("u{unit}"),
            inst: "x".into(),
            symbol: None,
            start,
            done,
            touches: vec![Touch { acc, write }],
        }
    }

    #[test]
    fn overlapping_lifetimes_and_bytes_race_unless_same_ordered_unit() {
        let mut t = RaceTracker::default();
        t.add(live(1, false, 0, 10, Access::vmem(0, 64), true))
            .unwrap();
        // Same unit: ordered by its queue.
        t.add(live(1, false, 5, 12, Access::vmem(0, 64), false))
            .unwrap();
        // Another unit reading while the write is in flight: a race.
        let e = t
            .add(live(2, false, 5, 8, Access::vmem(32, 4), false))
            .unwrap_err();
        assert!(e.contains("write/read") && e.contains("VMEM"), "{e}");
        // After it completed: fine.
        t.prune(12);
        t.add(live(2, false, 12, 20, Access::vmem(0, 64), false))
            .unwrap();
        // Two DMA copies writing the same bytes at once race even on one queue.
        t.add(live(3, true, 30, 40, Access::hbm(0, 8), true))
            .unwrap();
        assert!(t
            .add(live(3, true, 31, 41, Access::hbm(4, 8), true))
            .is_err());
    }
}
