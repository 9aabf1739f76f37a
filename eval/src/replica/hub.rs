//! The rendezvous shared by the replica threads: collective slots, device-to-device mailboxes,
//! per-replica status, and deadlock detection.
//!
//! One mutex guards the whole [`State`]; one condition variable is notified on every change.
//! Invariants:
//! - a replica's status is `Waiting` only while its thread sleeps in [`Hub::wait`] (or is about
//!   to re-check after a wake-up); the waiter itself, not the notifier, sets it back to
//!   `Running`;
//! - **deadlock** = no replica is `Running`, and no `Waiting` replica's condition holds in the
//!   current state. Whoever observes that (a thread going to sleep, finishing or failing, always
//!   under the lock) records the report in `abort` and wakes everyone. Because the check reads
//!   the conditions themselves (not only the statuses), a waiter that has been satisfied but not
//!   yet scheduled counts as able to progress: there are no false alarms and no timeouts. Once
//!   the condition holds nothing can change any more, so the report does not depend on thread
//!   timing;
//! - a collective slot is keyed by ([`CollKey`]): kind, identity (channel id, else the
//!   instruction's name), group members and the per-replica occurrence number. It is removed
//!   once every member has taken its result.

use crate::error::{EResult, EvalError};
use hlo::literal::Literal;
use hlo::opcode::Opcode;
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// What makes two collective executions the same collective.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CollIdent {
    /// `channel_id=N`: every collective of this kind with this channel matches.
    Channel(i64),
    /// No channel id: the instruction itself (names are unique in a module).
    Inst(String),
}

/// Identity of one collective execution across its group.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CollKey {
    /// The synchronous opcode (`all-reduce-start` is keyed as `all-reduce`).
    pub kind: Opcode,
    pub ident: CollIdent,
    /// Members in group order.
    pub group: Vec<usize>,
    /// How many times this replica executed this (kind, ident, group) before: 0, 1, ...
    pub seq: u64,
}

/// A device-to-device channel queue: values sent on `channel` from `src` to `dst`, FIFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MailKey {
    pub channel: i64,
    pub src: usize,
    pub dst: usize,
}

/// What a waiting replica waits for.
#[derive(Clone, Debug)]
pub enum WaitOn {
    Collective(CollKey),
    Mail(MailKey),
    /// Data that can never arrive (an exhausted infeed or host channel: all host data is given
    /// up front). The replica waits only so that the report can name everyone's position.
    Never,
}

/// A waiting replica: the condition, the instruction and a human description.
#[derive(Clone, Debug)]
pub struct Wait {
    pub on: WaitOn,
    pub inst: String,
    pub what: String,
}

#[derive(Clone, Debug)]
enum Status {
    Running,
    Waiting(Wait),
    Finished,
    Failed,
}

struct Slot {
    contrib: Vec<Option<Arc<Literal>>>,
    arrived: usize,
    taken: usize,
}

#[derive(Default)]
struct State {
    status: Vec<Status>,
    slots: BTreeMap<CollKey, Slot>,
    mail: BTreeMap<MailKey, VecDeque<Arc<Literal>>>,
    /// Set once: the deadlock report, or the replica whose failure stopped the run.
    abort: Option<Abort>,
    /// Replicas whose wait ended because another replica failed.
    stopped: Vec<bool>,
}

#[derive(Clone, Debug)]
enum Abort {
    Deadlock(String),
    Failed(usize),
}

/// The shared rendezvous of one multi-replica run.
pub struct Hub {
    state: Mutex<State>,
    cv: Condvar,
}

impl State {
    fn holds(&self, on: &WaitOn) -> bool {
        match on {
            WaitOn::Collective(k) => self
                .slots
                .get(k)
                .is_some_and(|s| s.arrived == s.contrib.len()),
            WaitOn::Mail(k) => self.mail.get(k).is_some_and(|q| !q.is_empty()),
            WaitOn::Never => false,
        }
    }

    /// The report if no replica can ever make progress again.
    fn deadlock(&self) -> Option<String> {
        let mut any_waiting = false;
        for s in &self.status {
            match s {
                Status::Running => return None,
                Status::Waiting(w) if self.holds(&w.on) => return None,
                Status::Waiting(_) => any_waiting = true,
                Status::Finished | Status::Failed => {}
            }
        }
        any_waiting.then(|| self.report())
    }

    fn report(&self) -> String {
        let mut out = String::from("no replica can make progress:");
        for (r, s) in self.status.iter().enumerate() {
            let _ = write!(out, "\n  replica {r}: ");
            match s {
                Status::Running => out.push_str("running"),
                Status::Finished => out.push_str("finished"),
                Status::Failed => out.push_str("failed"),
                Status::Waiting(w) => {
                    let _ = write!(out, "waits at %{} ({}", w.inst, w.what);
                    if let WaitOn::Collective(k) = &w.on {
                        let arrived: Vec<usize> = match self.slots.get(k) {
                            Some(slot) => k
                                .group
                                .iter()
                                .zip(&slot.contrib)
                                .filter(|(_, c)| c.is_some())
                                .map(|(&m, _)| m)
                                .collect(),
                            None => vec![],
                        };
                        let missing: Vec<usize> = k
                            .group
                            .iter()
                            .copied()
                            .filter(|m| !arrived.contains(m))
                            .collect();
                        let who = match missing.as_slice() {
                            [one] => format!("replica {one}"),
                            many => format!("replicas {}", list(many)),
                        };
                        let _ = write!(
                            out,
                            "; {} of {} arrived, waiting for {who}",
                            arrived.len(),
                            k.group.len()
                        );
                    }
                    out.push(')');
                }
            }
        }
        out
    }
}

/// `{0,1,2}`.
pub fn list(ids: &[usize]) -> String {
    let inner: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
    format!("{{{}}}", inner.join(","))
}

impl Hub {
    pub fn new(replicas: usize) -> Hub {
        let state = State {
            status: vec![Status::Running; replicas],
            stopped: vec![false; replicas],
            ..State::default()
        };
        Hub {
            state: Mutex::new(state),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another replica thread panicked; the state itself is
        // consistent at every unlock, so keep going (that replica is marked failed).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn abort_error(abort: &Abort) -> EvalError {
        match abort {
            Abort::Deadlock(report) => EvalError::Deadlock(report.clone()),
            Abort::Failed(r) => EvalError::invalid(format!("stopped because replica {r} failed")),
        }
    }

    /// Records a status change that may leave everyone stuck; reports a deadlock if so.
    fn settle(&self, st: &mut State) {
        if st.abort.is_none() {
            if let Some(report) = st.deadlock() {
                st.abort = Some(Abort::Deadlock(report));
            }
        }
        self.cv.notify_all();
    }

    /// Sleeps as replica `me` until `take` yields a value (checked under the lock after every
    /// change), or the run is aborted (deadlock or another replica's failure).
    fn wait<T>(
        &self,
        mut st: MutexGuard<'_, State>,
        me: usize,
        wait: Wait,
        mut take: impl FnMut(&mut State) -> Option<T>,
    ) -> EResult<T> {
        let on = wait.on.clone();
        let mut wait = Some(wait);
        loop {
            if let Some(a) = &st.abort {
                let err = Self::abort_error(a);
                if matches!(a, Abort::Failed(_)) {
                    st.stopped[me] = true;
                }
                return Err(err);
            }
            if st.holds(&on) {
                if let Some(v) = take(&mut st) {
                    st.status[me] = Status::Running;
                    return Ok(v);
                }
            }
            if let Some(w) = wait.take() {
                st.status[me] = Status::Waiting(w);
                self.settle(&mut st);
                continue;
            }
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Contributes `value` as member `pos` of collective `key` and waits until every member has
    /// contributed. Returns all contributions in group order.
    pub fn exchange(
        &self,
        me: usize,
        key: CollKey,
        pos: usize,
        value: Arc<Literal>,
        inst: &str,
        what: String,
    ) -> EResult<Vec<Arc<Literal>>> {
        let mut st = self.lock();
        let n = key.group.len();
        let slot = st.slots.entry(key.clone()).or_insert_with(|| Slot {
            contrib: vec![None; n],
            arrived: 0,
            taken: 0,
        });
        if slot.contrib[pos].is_some() {
            return Err(EvalError::invalid(format!(
                "replica {me} contributed twice to one collective execution"
            )));
        }
        slot.contrib[pos] = Some(value);
        slot.arrived += 1;
        if slot.arrived == n {
            self.cv.notify_all();
        }
        let wait = Wait {
            on: WaitOn::Collective(key.clone()),
            inst: inst.to_string(),
            what,
        };
        self.wait(st, me, wait, |st| {
            let slot = st.slots.get_mut(&key)?;
            let all: Vec<Arc<Literal>> = slot.contrib.iter().flatten().cloned().collect();
            slot.taken += 1;
            if slot.taken == n {
                st.slots.remove(&key);
            }
            Some(all)
        })
    }

    /// Appends `value` to a device-to-device channel queue (never blocks: sends are buffered).
    pub fn post(&self, key: MailKey, value: Arc<Literal>) {
        let mut st = self.lock();
        st.mail.entry(key).or_default().push_back(value);
        self.cv.notify_all();
    }

    /// Takes the oldest value of a channel queue, waiting for it if needed.
    pub fn take(&self, me: usize, key: MailKey, inst: &str, what: String) -> EResult<Arc<Literal>> {
        let st = self.lock();
        let wait = Wait {
            on: WaitOn::Mail(key),
            inst: inst.to_string(),
            what,
        };
        self.wait(st, me, wait, |st| st.mail.get_mut(&key)?.pop_front())
    }

    /// Waits for something that can never come; returns the error that ends the run (the
    /// deadlock report once every other replica is finished or stuck too).
    pub fn wait_forever(&self, me: usize, inst: &str, what: String) -> EvalError {
        let st = self.lock();
        let wait = Wait {
            on: WaitOn::Never,
            inst: inst.to_string(),
            what,
        };
        match self.wait(st, me, wait, |_| None::<()>) {
            Err(e) => e,
            Ok(()) => EvalError::invalid("a wait on nothing ended"),
        }
    }

    /// Replica `me` returned a result.
    pub fn finish(&self, me: usize) {
        let mut st = self.lock();
        st.status[me] = Status::Finished;
        self.settle(&mut st);
    }

    /// Replica `me` stopped with an error of its own: stop everyone waiting.
    pub fn fail(&self, me: usize) {
        let mut st = self.lock();
        st.status[me] = Status::Failed;
        if st.abort.is_none() {
            st.abort = Some(Abort::Failed(me));
        }
        self.cv.notify_all();
    }

    /// True if replica `me` stopped only because another replica failed.
    pub fn stopped_by_other(&self, me: usize) -> bool {
        self.lock().stopped.get(me).copied().unwrap_or(false)
    }

    /// The deadlock report, if the run ended in one.
    pub fn deadlock_report(&self) -> Option<String> {
        match &self.lock().abort {
            Some(Abort::Deadlock(r)) => Some(r.clone()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hlo::literal::ArrayData;

    fn lit(v: i32) -> Arc<Literal> {
        Arc::new(Literal::array(vec![], ArrayData::S32(vec![v])))
    }

    fn key(group: &[usize], seq: u64) -> CollKey {
        CollKey {
            kind: Opcode::AllReduce,
            ident: CollIdent::Inst("ar".into()),
            group: group.to_vec(),
            seq,
        }
    }

    /// Many exchanges and channel messages in tight loops: no false deadlock alarm, every
    /// exchange sees every member's value of the same occurrence.
    #[test]
    fn stress_without_false_alarms() {
        const N: usize = 4;
        const ROUNDS: u64 = 2000;
        let hub = Hub::new(N);
        std::thread::scope(|s| {
            for me in 0..N {
                let hub = &hub;
                s.spawn(move || {
                    let group: Vec<usize> = (0..N).collect();
                    for seq in 0..ROUNDS {
                        let v = lit((seq as i32) * 10 + me as i32);
                        let all = hub
                            .exchange(me, key(&group, seq), me, v, "ar", String::new())
                            .unwrap();
                        for (m, c) in all.iter().enumerate() {
                            assert_eq!(**c, *lit((seq as i32) * 10 + m as i32));
                        }
                        // A ring of messages: send to the next replica, receive from the previous.
                        let to = MailKey {
                            channel: 1,
                            src: me,
                            dst: (me + 1) % N,
                        };
                        hub.post(to, lit(seq as i32));
                        let from = MailKey {
                            channel: 1,
                            src: (me + N - 1) % N,
                            dst: me,
                        };
                        assert_eq!(
                            *hub.take(me, from, "rcv", String::new()).unwrap(),
                            *lit(seq as i32)
                        );
                    }
                    hub.finish(me);
                });
            }
        });
        assert_eq!(hub.deadlock_report(), None);
        assert!(
            hub.lock().slots.is_empty(),
            "every slot is removed once taken"
        );
    }

    #[test]
    fn report_names_every_replica() {
        let hub = Hub::new(3);
        std::thread::scope(|s| {
            let h = &hub;
            s.spawn(move || h.finish(0));
            let a = s.spawn(move || {
                h.exchange(1, key(&[1, 2], 0), 0, lit(1), "ar", "all-reduce".into())
            });
            let b = s.spawn(move || h.wait_forever(2, "in", "infeed".into()));
            assert!(matches!(a.join().unwrap(), Err(EvalError::Deadlock(_))));
            assert!(matches!(b.join().unwrap(), EvalError::Deadlock(_)));
        });
        let r = hub.deadlock_report().expect("a deadlock");
        assert!(r.contains("replica 0: finished"), "{r}");
        assert!(
            r.contains(
                "replica 1: waits at %ar (all-reduce; 1 of 2 arrived, waiting for replica 2)"
            ),
            "{r}"
        );
        assert!(r.contains("replica 2: waits at %in (infeed)"), "{r}");
    }
}
