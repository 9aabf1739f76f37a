//! `Timeline`: splits one unit's time into busy, stall (per reason) and idle cycles.
//!
//! A unit reports intervals: `busy [s, e)` while it works, `stall(reason) [d, s)` while a command
//! waits (dispatched at `d`, started at `s`). Intervals may overlap (an MXU loads weights while it
//! multiplies) and may arrive out of order, but a unit promises, through
//! [`flush_until`](Timeline::flush_until), that no later interval starts before a horizon.
//!
//! Classification of each cycle: busy if any busy interval covers it, else stall (the reason of
//! the covering stall interval reported first) if any stall interval covers it, else idle.
//! Invariant: after [`finish`](Timeline::finish) at `end`, `busy + Σ stall[r] + idle = end`, and
//! no cycle is counted twice.

use crate::stats::{StatId, Stats};

/// What an interval says about the unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The unit works.
    Busy,
    /// A command waits; the reason index refers to the unit's reason table.
    Stall(u8),
}

#[derive(Clone, Copy, Debug)]
struct Iv {
    from: u64,
    to: u64,
    kind: Kind,
}

/// The accountant of one unit (see module docs).
#[derive(Clone, Debug)]
pub struct Timeline {
    /// Cycles before this are classified.
    cursor: u64,
    pending: Vec<Iv>,
    busy: StatId,
    idle: StatId,
    stall: StatId,
    stall_by_reason: Vec<StatId>,
    cuts: Vec<u64>,
}

impl Timeline {
    /// Declares `PREFIX.busy_cycles`, `.stall_cycles`, one `.stall_cycles.REASON` per reason
    /// (reason `i` of the slice is `Kind::Stall(i)`) and `.idle_cycles`.
    pub fn declare(stats: &mut Stats, prefix: &str, reasons: &[(&str, &'static str)]) -> Self {
        let busy = stats.declare(
            format!("{prefix}.busy_cycles"),
            "cycles",
            "cycles doing work",
        );
        let stall = stats.declare(
            format!("{prefix}.stall_cycles"),
            "cycles",
            "cycles with a command waiting to start (all reasons)",
        );
        let stall_by_reason = reasons
            .iter()
            .map(|(r, d)| stats.declare(format!("{prefix}.stall_cycles.{r}"), "cycles", d))
            .collect();
        let idle = stats.declare(
            format!("{prefix}.idle_cycles"),
            "cycles",
            "cycles with no work",
        );
        Timeline {
            cursor: 0,
            pending: Vec::new(),
            busy,
            idle,
            stall,
            stall_by_reason,
            cuts: Vec::new(),
        }
    }

    /// Reports an interval `[from, to)` (empty intervals are ignored).
    #[inline]
    pub fn add(&mut self, kind: Kind, from: u64, to: u64) {
        if to > from && to > self.cursor {
            self.pending.push(Iv {
                from: from.max(self.cursor),
                to,
                kind,
            });
        }
    }

    /// Classifies all cycles before `horizon`: the unit promises no later interval starts
    /// before it.
    pub fn flush_until(&mut self, stats: &mut Stats, horizon: u64) {
        if horizon <= self.cursor {
            return;
        }
        // Fast path: nothing pending → idle.
        if self.pending.is_empty() {
            stats.add(self.idle, horizon - self.cursor);
            self.cursor = horizon;
            return;
        }
        self.cuts.clear();
        self.cuts.push(self.cursor);
        self.cuts.push(horizon);
        for iv in &self.pending {
            for x in [iv.from, iv.to] {
                if x > self.cursor && x < horizon {
                    self.cuts.push(x);
                }
            }
        }
        self.cuts.sort_unstable();
        self.cuts.dedup();
        for w in 0..self.cuts.len() - 1 {
            let (a, b) = (self.cuts[w], self.cuts[w + 1]);
            let mut stall: Option<u8> = None;
            let mut busy = false;
            for iv in &self.pending {
                if iv.from <= a && iv.to >= b {
                    match iv.kind {
                        Kind::Busy => busy = true,
                        Kind::Stall(r) => {
                            if stall.is_none() {
                                stall = Some(r)
                            }
                        }
                    }
                }
            }
            let d = b - a;
            if busy {
                stats.add(self.busy, d);
            } else if let Some(r) = stall {
                stats.add(self.stall, d);
                stats.add(self.stall_by_reason[r as usize], d);
            } else {
                stats.add(self.idle, d);
            }
        }
        self.cursor = horizon;
        self.pending.retain_mut(|iv| {
            iv.from = iv.from.max(horizon);
            iv.to > horizon
        });
    }

    /// Closes the accounting at `end` (the run's total cycles); intervals past `end` are cut.
    pub fn finish(&mut self, stats: &mut Stats, end: u64) {
        self.flush_until(stats, end);
        self.pending.clear();
    }

    /// Handles of the busy, stall (total) and idle statistics.
    pub fn ids(&self) -> (StatId, StatId, StatId) {
        (self.busy, self.stall, self.idle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_out_of_order_intervals_add_up() {
        let mut s = Stats::new();
        let mut t = Timeline::declare(&mut s, "u", &[("a", "x"), ("b", "y")]);
        t.add(Kind::Stall(0), 2, 10);
        t.add(Kind::Busy, 10, 20);
        t.add(Kind::Busy, 5, 8); // overlaps the stall: busy wins
        t.flush_until(&mut s, 6);
        t.add(Kind::Stall(1), 18, 30);
        t.finish(&mut s, 40);
        assert_eq!(s.value("u.busy_cycles"), Some(3 + 10));
        assert_eq!(s.value("u.stall_cycles.a"), Some(3 + 2));
        assert_eq!(s.value("u.stall_cycles.b"), Some(10));
        assert_eq!(s.value("u.stall_cycles"), Some(15));
        assert_eq!(s.value("u.idle_cycles"), Some(2 + 10));
    }
}
