//! The inter-chip interconnect (ICI): chips at coordinates of a ring or torus, directed links
//! between neighbours, and matched `ici.send`/`ici.recv` transfers routed over them.
//!
//! Model (the formulas are in `docs/ici.md`):
//! * **Topology.** Chip `id` sits at coordinates `(x0, x1, x2)` with `id = x0 + d0·(x1 + d1·x2)`
//!   (`ici.dims = [d0, d1, d2]`, dimension 0 fastest). Every chip has two directed links per
//!   dimension (`+` and `−`), each moving `ici.gbps_per_link` per direction; a dimension
//!   without wrap-around (`ici.wrap`) has no link from its last chip forward or its first chip
//!   back.
//! * **Routing.** Dimension order (dimension 0 first), each dimension the shorter way round
//!   (ties: `+`); a transfer holds every link of its path for its whole data phase (a fluid,
//!   cut-through model).
//! * **Transfers.** An `ici.send` and the `ici.recv` that matches it (same source chip,
//!   destination chip and tag; in posting order) form one transfer, which starts when the later
//!   of the two is posted. Its bytes flow at the max-min fair share of the links on its path
//!   (progressive filling: the most loaded link's flows are frozen at its equal share, then the
//!   next, ...), recomputed whenever a transfer starts or ends. When its last byte has left, it
//!   arrives `hops · ici.hop_latency_ns` later: the receiver's memory is written and both
//!   instructions complete.
//!
//! Invariants: the fabric has its own deterministic event queue, merged with the chips' by
//! `(time, priority)` with the fabric first on ties; rates and progress are computed in f64 in
//! a fixed order (flows in start order, links in index order), so a run is reproducible bit for
//! bit. A posted instruction whose partner never comes stays in the pending tables and is named
//! by the deadlock report.

use crate::cycle::Cycle;
use crate::engine::{EventKey, EventQueue, Priority};
use crate::link::EPS_BYTES;
use crate::stats::{StatId, Stats};
use isa::Space;
use std::collections::{BTreeMap, VecDeque};

/// One posted `ici.send` or `ici.recv`.
#[derive(Clone, Debug)]
pub struct Post {
    /// Chip that posted it.
    pub chip: u32,
    /// Core that posted it.
    pub core: u16,
    /// Program counter.
    pub pc: u32,
    /// Assembly text (for reports).
    pub inst: String,
    /// The other chip.
    pub peer: u32,
    /// Tag.
    pub tag: u32,
    /// Bytes.
    pub len: u64,
    /// Semaphore to signal on completion.
    pub signal: Option<u8>,
    /// Id in the posting chip's race tracker.
    pub race_id: u64,
    /// Memory space of the source (send) or destination (recv).
    pub space: Space,
    /// Address of the source (send) or destination (recv).
    pub addr: u64,
    /// The bytes sent (a functional send; empty otherwise).
    pub data: Vec<u8>,
    /// Cycle it was posted.
    pub posted: Cycle,
}

/// A transfer whose data has arrived: the System writes the receiver's memory and completes
/// both instructions.
#[derive(Debug)]
pub struct Arrival {
    /// The send.
    pub send: Post,
    /// The matching receive.
    pub recv: Post,
    /// When the transfer started (both posted).
    pub start: Cycle,
    /// When it arrives.
    pub at: Cycle,
}

/// The error (for the later-posted instruction) of a send and a receive that pair up by
/// (source, destination, tag) but disagree on the length.
pub fn check_match(s: &Post, r: &Post) -> Result<(), String> {
    if s.len != r.len {
        return Err(format!(
            "ici.recv of {} bytes from chip {} (tag {}) on chip {} pc {} matched an \
             ici.send of {} bytes (chip {} pc {} `{}`)",
            r.len, r.peer, r.tag, r.chip, r.pc, s.len, s.chip, s.pc, s.inst
        ));
    }
    Ok(())
}

/// Unmatched sends and receives by key, each key's in posting order: the one pairing of
/// `ici.send` with `ici.recv`, shared by the fabric (keys `(source, destination, tag)`) and
/// a chip's transfers to itself (`Chip::post_self`, keys: the tag).
#[derive(Debug)]
pub struct Matcher<K> {
    /// `[sends, receives]`.
    posts: [BTreeMap<K, VecDeque<Post>>; 2],
}

impl<K> Default for Matcher<K> {
    fn default() -> Self {
        Matcher {
            posts: [BTreeMap::new(), BTreeMap::new()],
        }
    }
}

impl<K: Ord + Copy> Matcher<K> {
    /// Posts a send (`send`) or receive under `key`: the oldest partner waiting under the same
    /// key pairs with it, as `(send, receive)` (checked by [`check_match`]: an error message
    /// for the posting instruction on a length mismatch); with none, `p` waits (`None`).
    pub fn post(&mut self, key: K, send: bool, p: Post) -> Result<Option<(Post, Post)>, String> {
        let [sends, recvs] = &mut self.posts;
        let (mine, other) = if send { (sends, recvs) } else { (recvs, sends) };
        let partner = other.get_mut(&key).and_then(|q| q.pop_front());
        if other.get(&key).is_some_and(|q| q.is_empty()) {
            other.remove(&key);
        }
        let Some(partner) = partner else {
            mine.entry(key).or_default().push_back(p);
            return Ok(None);
        };
        let (s, r) = if send { (p, partner) } else { (partner, p) };
        check_match(&s, &r)?;
        Ok(Some((s, r)))
    }

    /// The posts still waiting (`true`: sends), by key and in posting order within a key.
    pub fn waiting(&self, send: bool) -> impl Iterator<Item = (K, &Post)> {
        self.posts[usize::from(!send)]
            .iter()
            .flat_map(|(k, q)| q.iter().map(move |p| (*k, p)))
    }
}

/// The deadlock-report line of a posted instruction still waiting for its partner.
pub fn wait_line(send: bool, p: &Post) -> String {
    if send {
        format!(
            "chip{}.core{}.ici pc {} `{}` (posted at cycle {}): send to chip {} tag {} waits \
             for the matching ici.recv on chip {}",
            p.chip, p.core, p.pc, p.inst, p.posted, p.peer, p.tag, p.peer
        )
    } else {
        format!(
            "chip{}.core{}.ici pc {} `{}` (posted at cycle {}): receive from chip {} tag {} \
             waits for the matching ici.send on chip {}",
            p.chip, p.core, p.pc, p.inst, p.posted, p.peer, p.tag, p.peer
        )
    }
}

/// Chips at coordinates and the links between them.
#[derive(Clone, Debug)]
pub struct Topo {
    /// Chips per dimension.
    pub dims: Vec<u32>,
    /// Wrap-around per dimension.
    pub wrap: Vec<bool>,
}

impl Topo {
    /// The topology of `ici`.
    pub fn new(ici: &arch::IciConfig) -> Topo {
        let wrap = (0..ici.dims.len())
            .map(|d| ici.wrap.get(d).copied().unwrap_or(true))
            .collect();
        Topo {
            dims: ici.dims.clone(),
            wrap,
        }
    }

    /// Chips in the pod.
    pub fn chips(&self) -> u64 {
        self.dims.iter().map(|&d| d as u64).product()
    }

    /// Coordinates of chip `id`.
    pub fn coords(&self, id: u32) -> Vec<u32> {
        Self::coords_in(&self.dims, id)
    }

    /// Coordinates of chip `id` in a pod of `dims` (dimension 0 fastest).
    pub fn coords_in(dims: &[u32], id: u32) -> Vec<u32> {
        let mut r = id;
        dims.iter()
            .map(|&d| {
                let d = d.max(1);
                let c = r % d;
                r /= d;
                c
            })
            .collect()
    }

    /// Position of chip `id` on the boustrophedon ("snake") walk of the pod: dimension 0
    /// fastest, each row and plane walked in the direction opposite to the previous one, so
    /// consecutive chips of the walk are one hop apart (and, with even sizes and wrap-around,
    /// so are its last and first).
    pub fn snake_index(&self, id: u32) -> u64 {
        let c = self.coords(id);
        // `idx` is the walk's ordinal over the slower dimensions: odd ones run backwards.
        let mut idx = 0u64;
        for k in (0..self.dims.len()).rev() {
            let d = self.dims[k] as u64;
            let x = c[k] as u64;
            let x = if idx % 2 == 1 { d - 1 - x } else { x };
            idx = idx * d + x;
        }
        idx
    }

    /// The chip `delta` steps from `id` along dimension `dim`, round the dimension (its
    /// coordinate taken modulo the size).
    pub fn step(&self, id: u32, dim: usize, delta: i64) -> u32 {
        let mut c = self.coords(id);
        c[dim] = (c[dim] as i64 + delta).rem_euclid(self.dims[dim].max(1) as i64) as u32;
        self.id_of(&c)
    }

    fn id_of(&self, c: &[u32]) -> u32 {
        let mut id = 0u32;
        for (k, &d) in self.dims.iter().enumerate().rev() {
            id = id * d + c[k];
        }
        id
    }

    /// Index of the directed link leaving chip `chip` along `dim` in direction `neg` (`−`).
    pub fn link(&self, chip: u32, dim: usize, neg: bool) -> u32 {
        ((chip * self.dims.len() as u32) + dim as u32) * 2 + neg as u32
    }

    /// Name of a link, e.g. `chip3.x+`.
    pub fn link_name(&self, link: u32) -> String {
        let neg = link % 2 == 1;
        let dim = (link / 2) as usize % self.dims.len();
        let chip = link / 2 / self.dims.len() as u32;
        format!(
            "chip{chip}.{}{}",
            ["x", "y", "z"].get(dim).unwrap_or(&"w"),
            if neg { "-" } else { "+" }
        )
    }

    /// The links from `src` to `dst`: dimension order, each dimension the shorter way round.
    pub fn route(&self, src: u32, dst: u32) -> Vec<u32> {
        let mut cur = self.coords(src);
        let to = self.coords(dst);
        let mut path = Vec::new();
        for d in 0..self.dims.len() {
            let n = self.dims[d];
            let (a, b) = (cur[d], to[d]);
            if a == b {
                continue;
            }
            let (neg, hops) = if self.wrap[d] {
                let fwd = (b + n - a) % n;
                let back = n - fwd;
                if fwd <= back {
                    (false, fwd)
                } else {
                    (true, back)
                }
            } else if b > a {
                (false, b - a)
            } else {
                (true, a - b)
            };
            for _ in 0..hops {
                path.push(self.link(self.id_of(&cur), d, neg));
                cur[d] = if neg {
                    (cur[d] + n - 1) % n
                } else {
                    (cur[d] + 1) % n
                };
            }
        }
        path
    }

    /// Hops from `src` to `dst`.
    pub fn hops(&self, src: u32, dst: u32) -> u64 {
        self.route(src, dst).len() as u64
    }
}

struct Flow {
    path: Vec<u32>,
    remaining: f64,
    rate: f64,
    start: Cycle,
    send: Post,
    recv: Post,
}

#[derive(Clone, Copy, Debug)]
enum FabEv {
    /// Flows may have finished (generation).
    Check(u64),
    /// A finished transfer arrives (index into `arriving`).
    Arrive(usize),
}

struct LinkStats {
    bytes: StatId,
    busy: StatId,
}

/// The interconnect of one system (see module docs).
pub struct Fabric {
    topo: Topo,
    link_bpc: f64,
    hop_cycles: u64,
    /// Pending sends and receives by `(src, dst, tag)`.
    posts: Matcher<(u32, u32, u32)>,
    flows: Vec<Flow>,
    last: Cycle,
    generation: u64,
    q: EventQueue<FabEv>,
    arriving: Vec<Option<Arrival>>,
    free_arriving: Vec<usize>,
    /// Per-link bytes carried (f64 for the fluid model) and statistics, declared on first use.
    link_bytes: BTreeMap<u32, (f64, LinkStats, u64)>,
    total_bytes: Option<StatId>,
}

impl Fabric {
    /// The fabric of `arch`.
    pub fn new(arch: &arch::ArchConfig) -> Fabric {
        Fabric {
            topo: Topo::new(&arch.ici),
            link_bpc: arch.bytes_per_cycle(arch.ici.gbps_per_link),
            hop_cycles: arch.cycles_from_ns(arch.ici.hop_latency_ns),
            posts: Matcher::default(),
            flows: Vec::new(),
            last: Cycle::ZERO,
            generation: 0,
            q: EventQueue::new(),
            arriving: Vec::new(),
            free_arriving: Vec::new(),
            link_bytes: BTreeMap::new(),
            total_bytes: None,
        }
    }

    /// The topology.
    pub fn topo(&self) -> &Topo {
        &self.topo
    }

    /// The key of the fabric's next event.
    pub fn peek_key(&self) -> Option<EventKey> {
        self.q.peek_key()
    }

    /// Posts a send or receive at `now`; starts the transfer if its partner is waiting.
    /// Returns an error message (for the posting instruction) on a length mismatch.
    pub fn post(
        &mut self,
        now: Cycle,
        send: bool,
        p: Post,
        stats: &mut Stats,
    ) -> Result<(), String> {
        let key = if send {
            (p.chip, p.peer, p.tag)
        } else {
            (p.peer, p.chip, p.tag)
        };
        if let Some((s, r)) = self.posts.post(key, send, p)? {
            self.start(now, s, r, stats);
        }
        Ok(())
    }

    /// The fewest cycles from a post to the arrival it can cause on another chip: one hop's
    /// latency, at least a cycle (a transfer between two chips crosses at least one link). The
    /// parallel run's lookahead (`sim::system`).
    pub fn lookahead(&self) -> u64 {
        self.hop_cycles.max(1)
    }

    /// The cycle of the earliest transfer arrival already scheduled, if any.
    pub fn next_arrival(&self) -> Option<Cycle> {
        self.arriving.iter().flatten().map(|a| a.at).min()
    }

    fn start(&mut self, now: Cycle, send: Post, recv: Post, stats: &mut Stats) {
        let path = self.topo.route(send.chip, recv.chip);
        if path.is_empty() || send.len == 0 {
            // Nothing crosses a link: arrives after the path latency (at least a cycle).
            let lat = (path.len() as u64 * self.hop_cycles).max(1);
            self.arrive_at(now + lat, send, recv, now);
            return;
        }
        self.progress_to(now, stats);
        for &l in &path {
            self.declare_link(l, stats);
        }
        self.flows.push(Flow {
            remaining: send.len as f64,
            rate: 0.0,
            start: now,
            path,
            send,
            recv,
        });
        self.reschedule(stats);
    }

    fn declare_link(&mut self, l: u32, stats: &mut Stats) {
        if self.link_bytes.contains_key(&l) {
            return;
        }
        let name = self.topo.link_name(l);
        let st = LinkStats {
            bytes: stats.declare(
                format!("ici.{name}.bytes"),
                "bytes",
                "bytes carried by this directed ICI link",
            ),
            busy: stats.declare(
                format!("ici.{name}.busy"),
                "cycles",
                "cycles this directed ICI link carried data",
            ),
        };
        self.link_bytes.insert(l, (0.0, st, 0));
        if self.total_bytes.is_none() {
            self.total_bytes = Some(stats.declare(
                "ici.bytes".into(),
                "bytes",
                "bytes delivered over ICI links (each transfer counted once; a chip's transfers to \
                 itself cross no link and are not counted)",
            ));
        }
    }

    fn arrive_at(&mut self, t: Cycle, send: Post, recv: Post, start: Cycle) {
        let a = Arrival {
            send,
            recv,
            start,
            at: t,
        };
        let i = match self.free_arriving.pop() {
            Some(i) => {
                self.arriving[i] = Some(a);
                i
            }
            None => {
                self.arriving.push(Some(a));
                self.arriving.len() - 1
            }
        };
        self.q.schedule(t, Priority::Complete, FabEv::Arrive(i));
    }

    fn progress_to(&mut self, now: Cycle, stats: &mut Stats) {
        if now > self.last && !self.flows.is_empty() {
            let dt = (now - self.last) as f64;
            let mut busy: Vec<u32> = Vec::new();
            for f in &mut self.flows {
                let moved = f.rate * dt;
                f.remaining -= moved;
                for &l in &f.path {
                    if let Some(e) = self.link_bytes.get_mut(&l) {
                        e.0 += moved;
                    }
                    busy.push(l);
                }
            }
            busy.sort_unstable();
            busy.dedup();
            for l in busy {
                if let Some(e) = self.link_bytes.get_mut(&l) {
                    stats.add(e.1.busy, now - self.last);
                }
            }
        }
        self.last = now;
    }

    /// Max-min fair rates (progressive filling), then the next completion check.
    fn reschedule(&mut self, _stats: &mut Stats) {
        self.generation += 1;
        let n = self.flows.len();
        if n == 0 {
            return;
        }
        // Flows per link.
        let mut on: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (i, f) in self.flows.iter().enumerate() {
            for &l in &f.path {
                on.entry(l).or_default().push(i);
            }
        }
        if on.values().all(|v| v.len() == 1) {
            for f in &mut self.flows {
                f.rate = self.link_bpc;
            }
        } else {
            let mut cap: BTreeMap<u32, f64> = on.keys().map(|&l| (l, self.link_bpc)).collect();
            let mut frozen = vec![false; n];
            let mut left = n;
            while left > 0 {
                // The bottleneck: the least share among links with unfrozen flows.
                let mut best: Option<(f64, u32)> = None;
                for (&l, fl) in &on {
                    let k = fl.iter().filter(|&&i| !frozen[i]).count();
                    if k == 0 {
                        continue;
                    }
                    let share = cap[&l].max(0.0) / k as f64;
                    if best.is_none_or(|(b, _)| share < b) {
                        best = Some((share, l));
                    }
                }
                let Some((share, l)) = best else { break };
                for &i in &on[&l] {
                    if frozen[i] {
                        continue;
                    }
                    frozen[i] = true;
                    left -= 1;
                    self.flows[i].rate = share;
                    for &pl in &self.flows[i].path {
                        *cap.get_mut(&pl).expect("link on path") -= share;
                    }
                }
            }
        }
        let next = self
            .flows
            .iter()
            .map(|f| ((f.remaining - EPS_BYTES).max(0.0) / f.rate).ceil() as u64)
            .min()
            .expect("flows");
        self.q.schedule(
            self.last + next,
            Priority::Complete,
            FabEv::Check(self.generation),
        );
    }

    /// Handles the fabric's next event; returns a transfer that arrived, if any.
    pub fn step(&mut self, stats: &mut Stats) -> Option<(Cycle, Arrival)> {
        let (now, ev) = self.q.pop()?;
        match ev {
            FabEv::Check(g) => {
                if g != self.generation {
                    return None;
                }
                self.progress_to(now, stats);
                let mut i = 0;
                let mut finished = false;
                while i < self.flows.len() {
                    if self.flows[i].remaining <= EPS_BYTES {
                        let f = self.flows.remove(i);
                        let lat = (f.path.len() as u64 * self.hop_cycles).max(1);
                        self.arrive_at(now + lat, f.send, f.recv, f.start);
                        finished = true;
                    } else {
                        i += 1;
                    }
                }
                if finished || !self.flows.is_empty() {
                    self.reschedule(stats);
                }
                None
            }
            FabEv::Arrive(i) => {
                let a = self.arriving[i].take().expect("arrival");
                self.free_arriving.push(i);
                if let Some(t) = self.total_bytes {
                    stats.add(t, a.send.len);
                }
                Some((now, a))
            }
        }
    }

    /// Writes the whole bytes carried per link into the statistics (at the end of a run).
    pub fn finish(&mut self, stats: &mut Stats) {
        for (b, st, reported) in self.link_bytes.values_mut() {
            let whole = b.round() as u64;
            stats.add(st.bytes, whole - *reported);
            *reported = whole;
        }
    }

    /// One line per posted instruction still waiting for its partner, and per transfer in
    /// flight (for deadlock and timeout reports). `own` are the chips' unmatched transfers to
    /// themselves (matched on the chip, `Chip::self_waits`): listed with the fabric's, sends
    /// then receives, each by (source, destination, tag) and in posting order.
    pub fn waits(&self, own: &[(bool, &Post)]) -> Vec<String> {
        let mut w = Vec::new();
        for send in [true, false] {
            let mut lines: Vec<((u32, u32, u32), String)> = self
                .posts
                .waiting(send)
                .map(|(k, p)| (k, wait_line(send, p)))
                .collect();
            lines.extend(
                own.iter()
                    .filter(|(s, _)| *s == send)
                    .map(|(_, p)| ((p.chip, p.chip, p.tag), wait_line(send, p))),
            );
            // Stable: one key's posts stay in posting order.
            lines.sort_by_key(|(k, _)| *k);
            w.extend(lines.into_iter().map(|(_, l)| l));
        }
        for f in &self.flows {
            w.push(format!(
                "ici transfer chip{} -> chip{} tag {} in flight since cycle {} ({:.0} bytes left)",
                f.send.chip, f.recv.chip, f.send.tag, f.start, f.remaining
            ));
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(dims: &[u32], wrap: &[bool]) -> Topo {
        Topo {
            dims: dims.to_vec(),
            wrap: wrap.to_vec(),
        }
    }

    /// The one matcher pairs the oldest waiting partner under a key, keeps the others
    /// waiting in posting order, and refuses a pair whose lengths differ.
    #[test]
    fn the_matcher_pairs_oldest_first_per_key() {
        let post = |pc: u32, len: u64| Post {
            chip: 0,
            core: 0,
            pc,
            inst: format!("i{pc}"),
            peer: 0,
            tag: 7,
            len,
            signal: None,
            race_id: 0,
            space: Space::Vmem,
            addr: 0,
            data: Vec::new(),
            posted: Cycle::ZERO,
        };
        let mut m = Matcher::<u32>::default();
        assert!(m.post(7, true, post(1, 4)).unwrap().is_none());
        assert!(m.post(7, true, post(2, 4)).unwrap().is_none());
        assert!(m.post(8, false, post(3, 4)).unwrap().is_none());
        let (s, r) = m.post(7, false, post(4, 4)).unwrap().expect("paired");
        assert_eq!((s.pc, r.pc), (1, 4));
        let sends: Vec<u32> = m.waiting(true).map(|(_, p)| p.pc).collect();
        let recvs: Vec<(u32, u32)> = m.waiting(false).map(|(k, p)| (k, p.pc)).collect();
        assert_eq!((sends, recvs), (vec![2], vec![(8, 3)]));
        let e = m.post(7, false, post(5, 8)).unwrap_err();
        assert!(e.contains("ici.recv of 8 bytes"), "{e}");
    }

    #[test]
    fn the_snake_walk_of_a_torus_moves_one_hop_at_a_time() {
        for dims in [vec![8], vec![4, 4], vec![4, 2, 4], vec![2, 4, 4]] {
            let t = Topo {
                wrap: vec![true; dims.len()],
                dims: dims.clone(),
            };
            let n = t.chips() as u32;
            let mut walk: Vec<u32> = (0..n).collect();
            walk.sort_by_key(|&c| t.snake_index(c));
            for k in 0..n as usize {
                let (a, b) = (walk[k], walk[(k + 1) % n as usize]);
                assert_eq!(t.hops(a, b), 1, "{dims:?}: {a} -> {b}");
            }
        }
    }

    #[test]
    fn ring_routes_the_shorter_way() {
        let t = topo(&[8], &[true]);
        assert_eq!(t.route(0, 1), vec![t.link(0, 0, false)]);
        assert_eq!(t.route(0, 7), vec![t.link(0, 0, true)]);
        assert_eq!(t.hops(1, 5), 4); // tie: + way
        assert_eq!(t.route(1, 5)[0], t.link(1, 0, false));
        assert_eq!(t.hops(6, 1), 3);
    }

    #[test]
    fn torus_routes_dimension_order() {
        let t = topo(&[4, 4], &[true, true]);
        // chip 0 (0,0) -> chip 5 (1,1): x+ from 0, then y+ from chip 1.
        assert_eq!(
            t.route(0, 5),
            vec![t.link(0, 0, false), t.link(1, 1, false)]
        );
        assert_eq!(t.coords(13), vec![1, 3]);
        assert_eq!(t.hops(0, 15), 2); // x- then y- around the wrap
    }

    #[test]
    fn no_wraparound_goes_the_long_way() {
        let t = topo(&[4], &[false]);
        assert_eq!(t.hops(0, 3), 3);
        assert_eq!(t.route(3, 0)[0], t.link(3, 0, true));
    }
}
