//! `Cycle`: a point in simulated time, counted in clock cycles of the chip's core clock.
//!
//! Invariant: a `Cycle` is never confused with a count of bytes, rows or instructions; durations
//! are plain `u64` and are added with `+`. Adding saturates at [`Cycle::NEVER`] (≈ 580 years at
//! 1 GHz), which is past every `max_cycles`, so an absurd duration ends the run with a timeout
//! instead of wrapping around to an early time.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time (clock cycles since the start of the run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cycle(pub u64);

impl Cycle {
    /// Cycle 0, the start of every run.
    pub const ZERO: Cycle = Cycle(0);
    /// A time that never comes (used for "not yet known").
    pub const NEVER: Cycle = Cycle(u64::MAX);

    /// The raw cycle number.
    #[inline]
    pub fn get(self) -> u64 {
        self.0
    }

    /// Cycles from `earlier` to `self` (0 if `earlier` is later).
    #[inline]
    pub fn since(self, earlier: Cycle) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl Add<u64> for Cycle {
    type Output = Cycle;
    #[inline]
    fn add(self, d: u64) -> Cycle {
        Cycle(self.0.saturating_add(d))
    }
}

impl AddAssign<u64> for Cycle {
    #[inline]
    fn add_assign(&mut self, d: u64) {
        self.0 = self.0.saturating_add(d);
    }
}

impl Sub<Cycle> for Cycle {
    type Output = u64;
    #[inline]
    fn sub(self, o: Cycle) -> u64 {
        self.0.saturating_sub(o.0)
    }
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
