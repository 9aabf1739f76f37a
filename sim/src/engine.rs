//! The discrete-event core: a priority queue of events ordered by `(time, priority, sequence)`.
//!
//! Invariants:
//! * Events pop in non-decreasing time; among equal times, lower `Priority` first; among equal
//!   `(time, priority)`, in the order they were scheduled (`sequence`, a per-queue counter).
//!   The order never depends on hashing, addresses or wall-clock time.
//! * Time only moves forward: scheduling an event before `now()` is a simulator bug (panics).
//! * Idle time is skipped: the queue jumps from one event's time to the next, it never ticks.
//!
//! A multi-chip `System` keeps one `EventQueue` per chip and merges them by
//! `(time, priority, chip index, sequence)` (see [`EventQueue::peek_key`]).

use crate::cycle::Cycle;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Tie-break between events of the same cycle: lower runs first.
///
/// Completions run before issues, so that a unit freed at cycle `t` can accept work issued at `t`,
/// and a semaphore signalled at `t` is seen by a wait re-tried at `t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    /// An ICI transfer's arrival: before the chip's other events of its cycle, as the
    /// fabric's arrivals are (`sim::system` applies those before a chip's events of the cycle).
    Arrive = 0,
    /// Data arrivals, transfer completions, unit completions.
    Complete = 1,
    /// A unit starting the next operation of its queue.
    UnitStart = 2,
    /// The sequencer issuing (or retrying) an instruction.
    Issue = 3,
}

/// The ordering key of an event, as exposed for merging several queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EventKey {
    /// When the event fires.
    pub time: Cycle,
    /// Tie-break within a cycle.
    pub prio: Priority,
    /// Scheduling order within one queue.
    pub seq: u64,
}

/// Sequence numbers stay below this (the packed key's low 56 bits).
const SEQ_LIMIT: u64 = 1 << 56;

impl EventKey {
    /// The key as one integer with the same order: time, then priority, then sequence.
    #[inline]
    fn packed(self) -> u128 {
        (self.time.get() as u128) << 64 | (self.prio as u128) << 56 | self.seq as u128
    }

    #[inline]
    fn unpack(k: u128) -> EventKey {
        let prio = match (k >> 56) as u8 {
            0 => Priority::Arrive,
            1 => Priority::Complete,
            2 => Priority::UnitStart,
            _ => Priority::Issue,
        };
        EventKey {
            time: Cycle((k >> 64) as u64),
            prio,
            seq: k as u64 & (SEQ_LIMIT - 1),
        }
    }
}

struct Entry<E> {
    /// [`EventKey::packed`].
    key: u128,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the smallest key pops first.
        o.key.cmp(&self.key)
    }
}

/// A deterministic event queue.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now: Cycle,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue at cycle 0.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            seq: 0,
            now: Cycle::ZERO,
        }
    }

    /// The time of the last event popped (cycle 0 before any).
    #[inline]
    pub fn now(&self) -> Cycle {
        self.now
    }

    /// Schedules `ev` at `time` (must not be in the past).
    #[inline]
    pub fn schedule(&mut self, time: Cycle, prio: Priority, ev: E) {
        assert!(
            time >= self.now,
            "event scheduled in the past ({time} < {})",
            self.now
        );
        let key = EventKey {
            time,
            prio,
            seq: self.seq,
        };
        self.seq += 1;
        assert!(self.seq < SEQ_LIMIT, "event sequence numbers exhausted");
        self.heap.push(Entry {
            key: key.packed(),
            ev,
        });
    }

    /// Moves `now` forward to `t` (≤ the next event's time) for work done inline, without an
    /// event; later events may not be scheduled before it.
    #[inline]
    pub fn advance_to(&mut self, t: Cycle) {
        debug_assert!(!matches!(self.peek_key(), Some(k) if k.time < t) && t >= self.now);
        self.now = t;
    }

    /// The key of the next event, if any.
    #[inline]
    pub fn peek_key(&self) -> Option<EventKey> {
        self.heap.peek().map(|e| EventKey::unpack(e.key))
    }

    /// Pops the next event and advances `now` to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Cycle, E)> {
        let e = self.heap.pop()?;
        self.now = Cycle((e.key >> 64) as u64);
        Some((self.now, e.ev))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True if no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_priority_sequence() {
        let mut q = EventQueue::new();
        q.schedule(Cycle(5), Priority::Issue, "c");
        q.schedule(Cycle(5), Priority::Complete, "a");
        q.schedule(Cycle(5), Priority::Complete, "b");
        q.schedule(Cycle(1), Priority::Issue, "first");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!["first", "a", "b", "c"]);
        assert_eq!(q.now(), Cycle(5));
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn past_events_are_a_bug() {
        let mut q = EventQueue::new();
        q.schedule(Cycle(5), Priority::Issue, ());
        q.pop();
        q.schedule(Cycle(4), Priority::Issue, ());
    }
}
