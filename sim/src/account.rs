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

/// Pending intervals that trigger a classification pass.
pub const BATCH: usize = 256;

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
    /// The latest horizon promised by `flush_until` (classification may lag behind it).
    promised: u64,
    /// Scratch of `flush_until`: interval ends, as sort keys (see [`end_key`]).
    events: Vec<u128>,
    /// Scratch of `flush_until`: the stall intervals covering the sweep position.
    active: Vec<u32>,
}

/// The sort key of an interval end: by cycle, then ends before starts, then by report order
/// (the interval's index).
#[inline]
fn end_key(at: u64, start: bool, i: u32) -> u128 {
    (at as u128) << 64 | (start as u128) << 32 | i as u128
}

/// The cycle, kind and interval index of an [`end_key`].
#[inline]
fn key_parts(k: u128) -> (u64, bool, u32) {
    ((k >> 64) as u64, (k >> 32) & 1 == 1, k as u32)
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
            events: Vec::new(),
            active: Vec::new(),
            promised: 0,
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

    /// The unit promises no later interval starts before `horizon`: the cycles before it may
    /// be classified. Classification is batched (it runs once [`BATCH`] intervals are pending,
    /// or at [`finish`](Timeline::finish)), so the statistics are complete after `finish`.
    pub fn flush_until(&mut self, stats: &mut Stats, horizon: u64) {
        self.promised = self.promised.max(horizon);
        if self.pending.len() >= BATCH {
            self.classify(stats, self.promised);
        }
    }

    /// Classifies all cycles before `horizon` (no later interval starts before it).
    fn classify(&mut self, stats: &mut Stats, horizon: u64) {
        if horizon <= self.cursor {
            return;
        }
        // Fast path: nothing pending → idle.
        if self.pending.is_empty() {
            stats.add(self.idle, horizon - self.cursor);
            self.cursor = horizon;
            return;
        }
        // Disjoint intervals in order (a sequencer's issues and blocks, usually): each cycle
        // is covered by at most one, so one pass classifies it.
        if self.pending.windows(2).all(|w| w[0].to <= w[1].from) {
            let mut at = self.cursor;
            for iv in &self.pending {
                let (from, to) = (iv.from.max(self.cursor), iv.to.min(horizon));
                if from >= to {
                    continue;
                }
                if from > at {
                    stats.add(self.idle, from - at);
                }
                match iv.kind {
                    Kind::Busy => stats.add(self.busy, to - from),
                    Kind::Stall(r) => {
                        stats.add(self.stall, to - from);
                        stats.add(self.stall_by_reason[r as usize], to - from);
                    }
                }
                at = to;
            }
            if horizon > at {
                stats.add(self.idle, horizon - at);
            }
            self.cursor = horizon;
            self.pending.retain_mut(|iv| {
                iv.from = iv.from.max(horizon);
                iv.to > horizon
            });
            return;
        }
        // Sweep over the interval ends in [cursor, horizon): +1/−1 busy count, and the set of
        // covering stall intervals (by report order: the first reported one names the reason).
        let mut ev = std::mem::take(&mut self.events);
        ev.clear();
        for (i, iv) in self.pending.iter().enumerate() {
            let (from, to) = (iv.from.max(self.cursor), iv.to.min(horizon));
            if from < to {
                ev.push(end_key(from, true, i as u32));
                ev.push(end_key(to, false, i as u32));
            }
        }
        // Ends before starts at the same cycle; then by report order.
        ev.sort_unstable();
        let mut busy = 0u32;
        let mut stalls: Vec<u32> = std::mem::take(&mut self.active);
        stalls.clear();
        let mut at = self.cursor;
        let mut k = 0;
        while at < horizon {
            let next = ev.get(k).map_or(horizon, |&e| key_parts(e).0.min(horizon));
            if next > at {
                let d = next - at;
                if busy > 0 {
                    stats.add(self.busy, d);
                } else if let Some(&first) = stalls.iter().min() {
                    let Kind::Stall(r) = self.pending[first as usize].kind else {
                        unreachable!("only stall intervals are in the stall set")
                    };
                    stats.add(self.stall, d);
                    stats.add(self.stall_by_reason[r as usize], d);
                } else {
                    stats.add(self.idle, d);
                }
                at = next;
            }
            while let Some(&e) = ev.get(k) {
                let (x, start, i) = key_parts(e);
                if x != at {
                    break;
                }
                match (self.pending[i as usize].kind, start) {
                    (Kind::Busy, true) => busy += 1,
                    (Kind::Busy, false) => busy -= 1,
                    (Kind::Stall(_), true) => stalls.push(i),
                    (Kind::Stall(_), false) => stalls.retain(|&j| j != i),
                }
                k += 1;
            }
            if k >= ev.len() && at < horizon && busy == 0 && stalls.is_empty() {
                stats.add(self.idle, horizon - at);
                at = horizon;
            }
        }
        self.events = ev;
        self.active = stalls;
        self.cursor = horizon;
        self.pending.retain_mut(|iv| {
            iv.from = iv.from.max(horizon);
            iv.to > horizon
        });
    }

    /// Closes the accounting at `end` (the run's total cycles); intervals past `end` are cut.
    pub fn finish(&mut self, stats: &mut Stats, end: u64) {
        self.classify(stats, end);
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

    /// Against a cycle-by-cycle classification, on random intervals: disjoint in order (the
    /// one-pass path) and overlapping (the sweep).
    #[test]
    fn classification_matches_cycle_by_cycle() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for case in 0..200 {
            let disjoint = case % 2 == 0;
            let mut ivs = Vec::new();
            let mut at = 0;
            for _ in 0..1 + rnd(40) {
                let kind = match rnd(3) {
                    0 => Kind::Busy,
                    r => Kind::Stall(r as u8 - 1),
                };
                let (from, to) = if disjoint {
                    let from = at + rnd(4);
                    at = from + rnd(6);
                    (from, at)
                } else {
                    let from = rnd(100);
                    (from, from + rnd(10))
                };
                ivs.push((kind, from, to));
            }
            let end = 120;
            let mut s = Stats::new();
            let mut t = Timeline::declare(&mut s, "u", &[("a", "x"), ("b", "y")]);
            for &(k, f, e) in &ivs {
                t.add(k, f, e);
            }
            t.finish(&mut s, end);
            let (mut busy, mut idle, mut st) = (0, 0, [0u64; 2]);
            for c in 0..end {
                let cover: Vec<Kind> = ivs
                    .iter()
                    .filter(|&&(_, f, e)| f <= c && c < e)
                    .map(|&(k, _, _)| k)
                    .collect();
                if cover.contains(&Kind::Busy) {
                    busy += 1;
                } else if let Some(Kind::Stall(r)) = cover.first() {
                    st[*r as usize] += 1;
                } else {
                    idle += 1;
                }
            }
            assert_eq!(s.value("u.busy_cycles"), Some(busy), "{ivs:?}");
            assert_eq!(s.value("u.stall_cycles.a"), Some(st[0]), "{ivs:?}");
            assert_eq!(s.value("u.stall_cycles.b"), Some(st[1]), "{ivs:?}");
            assert_eq!(s.value("u.idle_cycles"), Some(idle), "{ivs:?}");
        }
    }

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
