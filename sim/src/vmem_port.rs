//! `VmemPort`: the VMEM bandwidth of one core, `vmem.bytes_per_cycle` bytes read plus written
//! per cycle, shared by every requester (MXU operand streaming, weight loads and `mxu.st`, VPU
//! operands and results, the VMEM side of DMA copies).
//!
//! Arbitration: **per-cycle grants in booking order** (oldest first). A requester books its
//! bytes when its unit starts the command, from its start cycle on, at up to its own peak rate
//! `r` bytes per cycle (an MXU row per cycle, the VPU's element rate, a DMA engine's rate); in
//! each cycle it is granted `min(r, cap − already granted to earlier bookings)`. It is done at
//! the end of the cycle its last byte is granted. Alone it therefore takes
//! `⌈bytes / min(r, cap)⌉` cycles, the formula each unit used before the port was shared; with
//! other bookings in the way it takes longer, and the difference is the unit's `vmem` stall.
//!
//! Invariants: the grants of any cycle never exceed `cap`; a booking never changes an earlier
//! one (the timing of a started command is final when it starts, as the units need); all
//! arithmetic is integer, so results are exact and deterministic. Usage before the oldest cycle
//! any unit can still book from is dropped ([`prune`](VmemPort::prune)).

/// The VMEM bandwidth calendar of one core (see module docs).
#[derive(Clone, Debug)]
pub struct VmemPort {
    cap: u64,
    /// Piecewise-constant granted bytes per cycle, as `(key, usage)` sorted by key: the usage
    /// at key `k` holds from `k` up to the next key; before the first key and after the last
    /// the usage is 0 (the last key always carries 0). A sorted vector: it holds a handful of
    /// segments (the past is pruned), and is searched by bisection.
    used: Vec<(u64, u64)>,
    /// Bytes granted in total (statistics).
    granted: u64,
}

impl VmemPort {
    /// A port of `cap` bytes per cycle (> 0).
    pub fn new(cap: u64) -> Self {
        assert!(cap > 0, "VMEM bandwidth must be positive");
        VmemPort {
            cap,
            used: Vec::new(),
            granted: 0,
        }
    }

    /// Bytes per cycle.
    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// Bytes granted so far.
    pub fn granted(&self) -> u64 {
        self.granted
    }

    /// The number of keys at or before `t`.
    #[inline]
    fn upto(&self, t: u64) -> usize {
        self.used.partition_point(|&(k, _)| k <= t)
    }

    /// The number of keys before `t`.
    #[inline]
    fn before(&self, t: u64) -> usize {
        self.used.partition_point(|&(k, _)| k < t)
    }

    /// Usage at cycle `t`.
    fn at(&self, t: u64) -> u64 {
        match self.upto(t) {
            0 => 0,
            i => self.used[i - 1].1,
        }
    }

    /// The first change of usage after `t` (`u64::MAX` if none).
    fn next_change(&self, t: u64) -> u64 {
        self.used.get(self.upto(t)).map_or(u64::MAX, |&(k, _)| k)
    }

    /// Makes `t` a key (splitting the range that holds it); returns its index.
    fn split(&mut self, t: u64) -> usize {
        let i = self.before(t);
        if self.used.get(i).is_none_or(|&(k, _)| k != t) {
            let u = if i == 0 { 0 } else { self.used[i - 1].1 };
            // Insert at `i` by shifting the few later keys (cheaper than a memmove call).
            self.used.push((t, u));
            for j in (i + 1..self.used.len()).rev() {
                self.used.swap(j, j - 1);
            }
        }
        i
    }

    /// Drops the first `n` keys.
    fn drop_front(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        for j in n..self.used.len() {
            self.used[j - n] = self.used[j];
        }
        self.used.truncate(self.used.len() - n);
    }

    /// Adds `x` bytes per cycle over `[a, b)`.
    fn add(&mut self, a: u64, b: u64, x: u64) {
        if a >= b || x == 0 {
            return;
        }
        self.split(a);
        let hi = self.split(b);
        let lo = self.before(a);
        for (_, u) in &mut self.used[lo..hi] {
            *u += x;
            debug_assert!(*u <= self.cap);
        }
    }

    /// Books `bytes` from cycle `start` at up to `rate` bytes per cycle (see module docs) and
    /// returns the cycle after the last grant (`start` if `bytes` is 0).
    pub fn book(&mut self, start: u64, bytes: u64, rate: u64) -> u64 {
        let rate = rate.max(1);
        let mut t = start;
        let mut rem = bytes;
        self.granted += bytes;
        while rem > 0 {
            let used = self.at(t);
            let next = self.next_change(t);
            let avail = rate.min(self.cap - used);
            if avail == 0 {
                t = next; // full: the requester stalls until the usage drops
                continue;
            }
            let need = rem.div_ceil(avail);
            let span = next.saturating_sub(t);
            if need <= span {
                // (need − 1) full cycles, then the remainder in the last one.
                let last = rem - (need - 1) * avail;
                self.add(t, t + need - 1, avail);
                self.add(t + need - 1, t + need, last);
                t += need;
                rem = 0;
            } else {
                self.add(t, next, avail);
                rem -= span * avail;
                t = next;
            }
        }
        self.coalesce_from(start);
        t
    }

    /// Merges neighbouring keys with equal usage from `t`'s range on (keeps the map small).
    fn coalesce_from(&mut self, t: u64) {
        // The first key of `t`'s range (or of the keys from `t` on, if none holds it).
        let from = match self.upto(t) {
            0 => 0,
            i => i - 1,
        };
        let mut prev: Option<u64> = from.checked_sub(1).map(|i| self.used[i].1);
        let mut w = from;
        for r in from..self.used.len() {
            let u = self.used[r].1;
            if prev == Some(u) || (prev.is_none() && u == 0) {
                continue; // dropped
            }
            prev = Some(u);
            self.used[w] = self.used[r];
            w += 1;
        }
        self.used.truncate(w);
    }

    /// Forgets usage before `t` (no booking will start before it).
    pub fn prune(&mut self, t: u64) {
        let i = self.upto(t);
        if i == 0 {
            return;
        }
        let (k, u) = self.used[i - 1];
        if k == t {
            self.drop_front(i - 1);
        } else if u != 0 {
            self.used[i - 1] = (t, u);
            self.drop_front(i - 1);
        } else {
            self.drop_front(i);
        }
    }

    /// Number of usage segments held (for tests of pruning).
    pub fn segments(&self) -> usize {
        self.used.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alone_takes_bytes_over_the_smaller_of_rate_and_cap() {
        let mut p = VmemPort::new(64);
        assert_eq!(p.book(10, 192, 1000), 10 + 3);
        let mut p = VmemPort::new(64);
        assert_eq!(p.book(0, 100, 16), 7); // ⌈100/16⌉
    }

    #[test]
    fn a_later_booking_gets_what_the_earlier_left() {
        let mut p = VmemPort::new(64);
        // first: 48 B/cycle for 10 cycles → 16 B/cycle left in [0, 10)
        assert_eq!(p.book(0, 480, 48), 10);
        // second wants 64 B/cycle: 16 × 10 = 160 in [0, 10), then 64/cycle: 480 − 160 = 320
        // → 5 more cycles
        assert_eq!(p.book(0, 480, 64), 15);
        // a third from 0 at 64: nothing left until 15, then alone
        assert_eq!(p.book(0, 128, 64), 17);
    }

    #[test]
    fn grants_never_exceed_the_cap_and_bytes_are_conserved() {
        let mut p = VmemPort::new(100);
        let mut total = 0;
        for i in 0..50u64 {
            let bytes = 37 * (i % 7 + 1) + i;
            total += bytes;
            p.book(i % 13, bytes, 10 + (i * 17) % 90);
        }
        let mut sum = 0;
        let keys = p.used.clone();
        for w in keys.windows(2) {
            assert!(w[0].1 <= 100);
            sum += (w[1].0 - w[0].0) * w[0].1;
        }
        assert_eq!(keys.last().unwrap().1, 0);
        assert_eq!(sum, total);
    }

    #[test]
    fn pruning_keeps_the_future_and_drops_the_past() {
        let mut p = VmemPort::new(64);
        p.book(0, 640, 64); // full [0, 10)
        p.book(20, 64, 32); // half [20, 22)
        p.prune(5);
        assert_eq!(p.book(5, 64, 64), 11); // still full until 10
        p.prune(30);
        assert_eq!(p.segments(), 0);
    }
}
