//! Property test of race detection (`sim::race`): random programs of DMA copies and VPU ops
//! (and, in the second test, the sequencer's own `s.ld`/`s.st`) over a few VMEM buffers,
//! synchronized by the sequencer (`sem.wait` on the producer's semaphore before dispatching a
//! consumer or before its own load or store), never report a race; dropping one wait that a
//! conflicting pair needs always does, in functional and timing-only runs alike.
//!
//! "Needed" is decided here from the documented ordering rules (docs/timing.md, Races), by
//! reachability written out independently of the simulator: an edge `j → i` when the
//! sequencer waited on `j`'s semaphore before dispatching (or executing) `i`, when `j` and `i`
//! are VPU ops (one unit, program order), or when `j` is a sequencer load or store before `i`
//! (program order into dispatch); a pair of conflicting tasks on different units (or two DMA
//! copies) must be ordered.

use proptest::prelude::*;
mod common;

use sim::SimError;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Dma,
    Vpu,
    /// `s.ld` of `src`.
    Load,
    /// `s.st` to `dst`.
    Store,
}

#[derive(Clone, Copy, Debug)]
struct Task {
    kind: Kind,
    src: usize,
    dst: usize,
}

impl Task {
    fn vpu(&self) -> bool {
        self.kind == Kind::Vpu
    }

    /// The sequencer's own access (no semaphore: later tasks are ordered after it).
    fn seq(&self) -> bool {
        matches!(self.kind, Kind::Load | Kind::Store)
    }

    fn reads(&self) -> Option<usize> {
        (self.kind != Kind::Store).then_some(self.src)
    }

    fn writes(&self) -> Option<usize> {
        (self.kind != Kind::Load).then_some(self.dst)
    }
}

const BUF: u64 = 64;
const BASE: u64 = 4096;

fn addr(b: usize) -> u64 {
    BASE + b as u64 * 256
}

/// Which earlier tasks each task conflicts with (overlapping buffer, one a write).
fn conflicts(t: &[Task]) -> Vec<Vec<usize>> {
    (0..t.len())
        .map(|i| {
            (0..i)
                .filter(|&j| {
                    let (a, b) = (t[j], t[i]);
                    let meets = |x: Option<usize>, y: Option<usize>| x.is_some() && x == y;
                    meets(a.writes(), b.writes())
                        || meets(a.writes(), b.reads())
                        || meets(a.reads(), b.writes())
                })
                .collect()
        })
        .collect()
}

/// The waits of a well-synchronized program: before task `i`, wait for every conflicting
/// earlier task not yet waited for and not ordered by the VPU's or the sequencer's program
/// order.
fn waits(t: &[Task]) -> Vec<Vec<usize>> {
    let conf = conflicts(t);
    let mut waited = vec![false; t.len()];
    (0..t.len())
        .map(|i| {
            let mut w = Vec::new();
            for &j in &conf[i] {
                if !(waited[j] || t[j].vpu() && t[i].vpu() || t[j].seq()) {
                    waited[j] = true;
                    w.push(j);
                }
            }
            w
        })
        .collect()
}

/// Whether every conflicting pair is ordered under `waits` (reachability, see module docs).
fn all_ordered(t: &[Task], waits: &[Vec<usize>]) -> bool {
    let n = t.len();
    // before[i][j]: j happens before i.
    let mut before = vec![vec![false; n]; n];
    let mut seq = vec![false; n]; // what the sequencer has waited for (transitively)
    let or_into = |dst: &mut Vec<bool>, src: &[bool]| {
        for (d, &x) in dst.iter_mut().zip(src) {
            *d |= x;
        }
    };
    for i in 0..n {
        for &j in &waits[i] {
            seq[j] = true;
            let bj = before[j].clone();
            or_into(&mut seq, &bj);
        }
        let mut mine = seq.clone(); // what the sequencer knows when dispatching i
        for j in 0..i {
            if t[j].vpu() && t[i].vpu() {
                mine[j] = true;
                or_into(&mut mine, &before[j]);
            }
        }
        before[i] = mine;
        if t[i].seq() {
            seq[i] = true; // everything the sequencer does later comes after it
        }
    }
    let conf = conflicts(t);
    (0..n).all(|i| conf[i].iter().all(|&j| before[i][j]))
}

fn program(t: &[Task], waits: &[Vec<usize>]) -> String {
    let mut s = format!(".dma 0 len={BUF}\n");
    // Every buffer starts with data (functional runs read it).
    let init: String = (0..BUF)
        .map(|i| format!("{:02x}", 0x3f ^ (i as u8 & 7)))
        .collect();
    for b in 0..6 {
        s += &format!(".data vmem {} {init}\n", addr(b));
    }
    for (i, task) in t.iter().enumerate() {
        for &j in &waits[i] {
            s += &format!("    sem.wait sem{}, n=1\n", j);
        }
        s += &format!(
            "    s.li s1, {}\n    s.li s2, {}\n",
            addr(task.dst),
            addr(task.src)
        );
        let off = 4 * (i % 16);
        s += &match task.kind {
            Kind::Vpu => format!("    vpu.add [s1], [s2], [s2], n=16, t=f32, signal=sem{i}\n"),
            Kind::Dma => format!("    dma.copy vmem[s1], vmem[s2], desc=0, signal=sem{i}\n"),
            Kind::Load => format!("    s.ld s3, [s2+{off}], t=s32\n"),
            Kind::Store => format!("    s.st s2, [s1+{off}], t=s32\n"),
        };
    }
    s += "    fence\n    halt\n";
    s
}

fn run(text: &str, functional: bool) -> Result<u64, SimError> {
    common::try_run_mini(text, functional)
}

/// A DMA copy or VPU op (`seq`: or the sequencer's `s.ld`/`s.st`).
fn task(seq: bool) -> impl Strategy<Value = Task> {
    let kinds: usize = if seq { 4 } else { 2 };
    (0..kinds, 0usize..6, 0usize..6).prop_map(|(k, src, dst)| Task {
        kind: [Kind::Dma, Kind::Vpu, Kind::Load, Kind::Store][k],
        src,
        dst: if dst == src { (dst + 1) % 6 } else { dst },
    })
}

/// The property: the synchronized program runs; dropping one needed wait (picked by `pick`)
/// is a race.
fn check(tasks: &[Task], pick: prop::sample::Index) -> Result<(), TestCaseError> {
    let w = waits(tasks);
    prop_assert!(
        all_ordered(tasks, &w),
        "generator: the waits order every conflict"
    );
    let text = program(tasks, &w);
    for functional in [true, false] {
        let r = run(&text, functional);
        prop_assert!(r.is_ok(), "synchronized program reported {:?}\n{}", r, text);
    }
    // Every single wait whose removal leaves a conflicting pair unordered.
    let mut needed = Vec::new();
    for i in 0..tasks.len() {
        for k in 0..w[i].len() {
            let mut d = w.clone();
            d[i].remove(k);
            if !all_ordered(tasks, &d) {
                needed.push((i, k));
            }
        }
    }
    if !needed.is_empty() {
        let (i, k) = needed[pick.index(needed.len())];
        let mut d = w.clone();
        let j = d[i].remove(k);
        let text = program(tasks, &d);
        for functional in [true, false] {
            match run(&text, functional) {
                Err(SimError::Race { msg, .. }) => {
                    prop_assert!(msg.contains("race ("), "{}", msg);
                }
                other => prop_assert!(
                    false,
                    "dropping the wait for task {} before task {} gave {:?}\n{}",
                    j,
                    i,
                    other,
                    text
                ),
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn synchronized_programs_never_race_and_dropping_a_needed_wait_always_does(
        tasks in prop::collection::vec(task(false), 2..24),
        pick in any::<prop::sample::Index>(),
    ) {
        check(&tasks, pick)?;
    }

    /// The same with the sequencer's own `s.ld`/`s.st` among the tasks.
    #[test]
    fn with_sequencer_loads_and_stores_too(
        tasks in prop::collection::vec(task(true), 2..24),
        pick in any::<prop::sample::Index>(),
    ) {
        check(&tasks, pick)?;
    }
}
