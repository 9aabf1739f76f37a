//! `SharedLink`: a channel (HBM, the host link) whose bandwidth is shared by concurrent transfers.
//!
//! Model (documented in `docs/timing.md`): a transfer of `b` bytes first waits the link latency
//! `L` (the caller schedules its [`join`](SharedLink::join) at `start + L`); from then on the
//! `n` transfers in their data phase each move `min(cap, bw / n)` bytes per cycle (processor
//! sharing, a fluid model; `cap` is the per-transfer peak, e.g. one DMA engine's). Alone, a
//! transfer therefore takes `L + ⌈b / min(cap, bw)⌉` cycles.
//!
//! Invariants: transfers complete at whole cycles; a transfer completes at the first cycle at which
//! its remaining bytes are ≤ [`EPS_BYTES`]; with `n` fixed between two events the progress is
//! exactly `elapsed · bw / n`. The order of completions in one cycle is the order of joining.
//! Everything is computed in IEEE f64 in a fixed order, so results are deterministic.

use crate::cycle::Cycle;

/// Remaining bytes at or below this count as transferred (absorbs f64 rounding).
pub const EPS_BYTES: f64 = 1e-6;

#[derive(Clone, Debug)]
struct Active {
    id: u64,
    remaining: f64,
}

/// A bandwidth-shared link (see module docs).
#[derive(Clone, Debug)]
pub struct SharedLink {
    bytes_per_cycle: f64,
    cap: f64,
    active: Vec<Active>,
    last: Cycle,
    /// Bumped whenever the next completion time may have changed; a caller's wake-up event for an
    /// older generation is stale and ignored.
    generation: u64,
}

impl SharedLink {
    /// A link moving `bytes_per_cycle` bytes per cycle in total, at most `cap` per transfer
    /// (both must be > 0; use `f64::INFINITY` for no cap).
    pub fn new(bytes_per_cycle: f64, cap: f64) -> Self {
        assert!(
            bytes_per_cycle > 0.0 && cap > 0.0,
            "link bandwidth must be positive"
        );
        SharedLink {
            bytes_per_cycle,
            cap,
            active: Vec::new(),
            last: Cycle::ZERO,
            generation: 0,
        }
    }

    /// Bytes per cycle each of `n` concurrent transfers gets.
    #[inline]
    pub fn rate(&self, n: usize) -> f64 {
        self.cap.min(self.bytes_per_cycle / n.max(1) as f64)
    }

    /// Bytes per cycle.
    pub fn bytes_per_cycle(&self) -> f64 {
        self.bytes_per_cycle
    }

    /// The current generation (see [`next_completion`](Self::next_completion)).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Transfers in their data phase.
    pub fn active(&self) -> usize {
        self.active.len()
    }

    fn progress_to(&mut self, now: Cycle) {
        let n = self.active.len();
        if n > 0 && now > self.last {
            let moved = (now - self.last) as f64 * self.rate(n);
            for a in &mut self.active {
                a.remaining -= moved;
            }
        }
        self.last = now;
    }

    /// A transfer `id` of `bytes` enters its data phase at `now`.
    pub fn join(&mut self, now: Cycle, id: u64, bytes: u64) {
        self.progress_to(now);
        self.active.push(Active {
            id,
            remaining: bytes as f64,
        });
        self.generation += 1;
    }

    /// Advances to `now` and returns the ids of transfers complete by then (in joining order).
    pub fn complete_until(&mut self, now: Cycle, done: &mut Vec<u64>) {
        self.progress_to(now);
        let before = self.active.len();
        self.active.retain(|a| {
            if a.remaining <= EPS_BYTES {
                done.push(a.id);
                false
            } else {
                true
            }
        });
        if self.active.len() != before {
            self.generation += 1;
        }
    }

    /// The cycle the next transfer completes if nothing else joins, with the current generation.
    pub fn next_completion(&self) -> Option<(Cycle, u64)> {
        let rate = self.rate(self.active.len());
        let min = self
            .active
            .iter()
            .map(|a| a.remaining)
            .fold(f64::INFINITY, f64::min);
        if !min.is_finite() {
            return None;
        }
        let cycles = ((min - EPS_BYTES).max(0.0) / rate).ceil() as u64;
        Some((self.last + cycles, self.generation))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(link: &mut SharedLink, joins: &[(u64, u64, u64)]) -> Vec<(u64, u64)> {
        // joins: (cycle, id, bytes), sorted by cycle
        let mut out = Vec::new();
        let mut done = Vec::new();
        let mut i = 0;
        loop {
            let next_join = joins.get(i).map(|j| j.0);
            let next_done = link.next_completion().map(|(c, _)| c.get());
            let now = match (next_join, next_done) {
                (None, None) => break,
                (Some(j), Some(d)) => j.min(d),
                (Some(j), None) => j,
                (None, Some(d)) => d,
            };
            link.complete_until(Cycle(now), &mut done);
            out.extend(done.drain(..).map(|id| (id, now)));
            while i < joins.len() && joins[i].0 == now {
                link.join(Cycle(now), joins[i].1, joins[i].2);
                i += 1;
            }
        }
        out
    }

    #[test]
    fn alone_takes_bytes_over_bandwidth_rounded_up() {
        let mut l = SharedLink::new(3.0, f64::INFINITY);
        assert_eq!(run(&mut l, &[(5, 1, 10)]), vec![(1, 5 + 4)]);
    }

    #[test]
    fn two_equal_transfers_share_the_bandwidth() {
        let mut l = SharedLink::new(4.0, f64::INFINITY);
        // both 40 bytes from cycle 0: each gets 2 B/cycle → both done at 20
        assert_eq!(
            run(&mut l, &[(0, 1, 40), (0, 2, 40)]),
            vec![(1, 20), (2, 20)]
        );
    }

    #[test]
    fn per_transfer_cap_limits_a_lone_transfer() {
        let mut l = SharedLink::new(100.0, 8.0);
        // alone: min(8, 100) = 8 B/cycle; two: min(8, 50) = 8 each
        assert_eq!(run(&mut l, &[(0, 1, 64), (0, 2, 64)]), vec![(1, 8), (2, 8)]);
    }

    #[test]
    fn late_joiner_slows_the_first() {
        let mut l = SharedLink::new(4.0, f64::INFINITY);
        // t=0..10 alone: 40 of 80 bytes. Then shared: the second (20 B) needs 10 cycles → done 20;
        // the first has 20 left at 20 → alone again → 5 cycles → 25.
        assert_eq!(
            run(&mut l, &[(0, 1, 80), (10, 2, 20)]),
            vec![(2, 20), (1, 25)]
        );
    }
}
