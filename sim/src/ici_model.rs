//! The α-β model of collectives: what a collective should cost on the ICI, in closed form from
//! the preset's numbers, to set beside what the detailed fabric ([`crate::ici`]) measures.
//!
//! A collective is a sequence of `steps` identical **phases**; in each, a set of flows (source
//! chip, destination chip, bytes) runs at once. A phase takes
//!
//! ```text
//!   T_phase = α · h_max + L_max / β
//! ```
//!
//! with `α = ici.hop_latency_ns`, `h_max` the most hops any flow of the phase takes
//! (dimension-order routing the shorter way round, as the fabric routes), `L_max` the most bytes
//! any directed link carries in the phase (the sum over the flows routed through it), and
//! `β = ici.gbps_per_link` per direction. The collective takes `steps · T_phase`.
//!
//! The algorithms are the compiler's (`compiler/src/lower/collective.rs`), for `g` members and
//! `n` bytes per chip (the unreduced operand of all-reduce and reduce-scatter, the gathered
//! result of all-gather, the whole send buffer of all-to-all):
//! * **all-reduce**: two counter-rotating rings (each member sends half of a chunk of
//!   `c = n/g` bytes to each ring neighbour per step), `2(g−1)` steps; on a ring whose members
//!   are one hop apart this is `2(g−1)·α + (g−1)/g · n/β`.
//! * **reduce-scatter**, **all-gather**: the same rings, `g−1` steps:
//!   `(g−1)·α + (g−1)/g · n/(2β)` one hop apart.
//! * **all-to-all**: one phase, every member sends `n/g` to every other.
//! * **collective-permute**, **send/recv**: one phase, each pair's flow.
//! * **collective-broadcast**: one phase, the root sends `n` to every other member.
//!
//! Link contention between groups (several groups' rings sharing links) is in `L_max`; the
//! model ignores the VPU and DMA work of the algorithm and the start-up skew between chips,
//! which the detailed run includes.

use crate::ici::Topo;
use arch::ArchConfig;
use std::collections::HashMap;

/// The collectives the compiler emits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollKind {
    AllReduce,
    ReduceScatter,
    AllGather,
    AllToAll,
    Permute,
    Broadcast,
}

impl CollKind {
    /// The HLO-style name.
    pub fn name(self) -> &'static str {
        match self {
            CollKind::AllReduce => "all-reduce",
            CollKind::ReduceScatter => "reduce-scatter",
            CollKind::AllGather => "all-gather",
            CollKind::AllToAll => "all-to-all",
            CollKind::Permute => "collective-permute",
            CollKind::Broadcast => "collective-broadcast",
        }
    }

    /// The algorithm the compiler uses.
    pub fn algorithm(self) -> &'static str {
        match self {
            CollKind::AllReduce => "bidirectional ring: reduce-scatter then all-gather",
            CollKind::ReduceScatter => "bidirectional ring reduce-scatter",
            CollKind::AllGather => "bidirectional ring all-gather",
            CollKind::AllToAll => "direct: every pair at once",
            CollKind::Permute => "direct: every pair at once",
            CollKind::Broadcast => "direct from the root",
        }
    }
}

/// One collective of a compiled program: what it moves between which chips.
#[derive(Clone, Debug, PartialEq)]
pub struct Collective {
    /// The HLO instruction.
    pub hlo: String,
    pub kind: CollKind,
    /// Groups (chip indices, in group order); for permutes, the `(source, target)` pairs as
    /// two-member groups.
    pub groups: Vec<Vec<u32>>,
    /// Bytes per chip (see the module docs).
    pub bytes: u64,
    /// All-reduce only: the torus dimensions it runs along, one stage each (empty: one ring
    /// over each group).
    pub torus_dims: Vec<usize>,
}

impl Collective {
    /// The algorithm, in words.
    pub fn algorithm(&self) -> String {
        match (self.torus_dims.is_empty(), self.kind) {
            (true, k) => k.algorithm().to_string(),
            (false, CollKind::AllGather) => format!(
                "torus: bidirectional-ring all-gathers along dims {:?}",
                self.torus_dims.iter().rev().collect::<Vec<_>>()
            ),
            (false, CollKind::ReduceScatter) => format!(
                "torus: bidirectional-ring reduce-scatters along dims {:?}",
                self.torus_dims
            ),
            (false, _) => format!(
                "torus: bidirectional-ring reduce-scatter along dims {:?}, then all-gathers in reverse",
                self.torus_dims
            ),
        }
    }
}

/// A collective's closed-form time.
#[derive(Clone, Debug, PartialEq)]
pub struct ClosedForm {
    /// Seconds.
    pub seconds: f64,
    /// Phases.
    pub steps: u64,
    /// Most hops of a flow in a phase.
    pub hops: u64,
    /// Most bytes on one directed link in a phase.
    pub link_bytes: f64,
}

/// The closed-form time of `c` on `arch`'s ICI.
pub fn closed_form(arch: &ArchConfig, c: &Collective) -> ClosedForm {
    let topo = Topo::new(&arch.ici);
    if !c.torus_dims.is_empty() {
        return torus_stages(arch, &topo, c);
    }
    let (steps, flows) = phase(c);
    let (per, hops, link_bytes) = phase_time(arch, &topo, &flows);
    ClosedForm {
        seconds: steps as f64 * per,
        steps,
        hops,
        link_bytes,
    }
}

/// The longest phase of `flows` as (seconds, hops, max link bytes).
fn phase_time(arch: &ArchConfig, topo: &Topo, flows: &[(u32, u32, f64)]) -> (f64, u64, f64) {
    let mut load: HashMap<u32, f64> = HashMap::new();
    let mut hops = 0u64;
    for &(s, d, b) in flows {
        if s == d || b <= 0.0 {
            continue;
        }
        let path = topo.route(s, d);
        hops = hops.max(path.len() as u64);
        for l in path {
            *load.entry(l).or_default() += b;
        }
    }
    let link_bytes = load.values().fold(0.0f64, |a, &b| a.max(b));
    let beta = arch.ici.gbps_per_link * 1e9;
    let alpha = arch.ici.hop_latency_ns * 1e-9;
    let t = if flows.is_empty() {
        0.0
    } else {
        alpha * hops as f64 + link_bytes / beta
    };
    (t, hops, link_bytes)
}

/// A torus collective: per dimension `k` of `c.torus_dims` a stage of `g_k − 1` ring steps,
/// each member sending half of a chunk of `n_k / g_k` bytes to each neighbour along `k`
/// (`n_0 = n`, `n_{k+1} = n_k / g_k`): `Σ_k (g_k − 1) · (α·h_k + L_k/β)` for reduce-scatter
/// or all-gather (its stages in reverse, same sizes), twice that for all-reduce; one hop apart
/// with wrap-around, all-reduce is `2·Σ(g_k−1)·α + (1 − 1/Πg_k) · n/β`.
fn torus_stages(arch: &ArchConfig, topo: &Topo, c: &Collective) -> ClosedForm {
    let phases = if c.kind == CollKind::AllReduce { 2 } else { 1 };
    let mut n = c.bytes as f64;
    let (mut total, mut steps, mut hops, mut link) = (0.0, 0u64, 0u64, 0.0f64);
    for &k in &c.torus_dims {
        let g = topo.dims[k];
        let chunk = n / g as f64;
        let mut flows = Vec::new();
        for grp in &c.groups {
            for &m in grp {
                for delta in [1, -1] {
                    flows.push((m, topo.step(m, k, delta), chunk / 2.0));
                }
            }
        }
        let (t, h, l) = phase_time(arch, topo, &flows);
        total += phases as f64 * (g - 1) as f64 * t;
        steps += phases * (g as u64 - 1);
        hops = hops.max(h);
        link = link.max(l);
        n = chunk;
    }
    ClosedForm {
        seconds: total,
        steps,
        hops,
        link_bytes: link,
    }
}

/// `(steps, flows of one phase)` of a collective's algorithm.
fn phase(c: &Collective) -> (u64, Vec<(u32, u32, f64)>) {
    let n = c.bytes as f64;
    let mut flows = Vec::new();
    let mut steps = 0;
    for grp in &c.groups {
        let g = grp.len();
        if g < 2 {
            continue;
        }
        let gf = g as f64;
        match c.kind {
            CollKind::AllReduce | CollKind::ReduceScatter | CollKind::AllGather => {
                steps = if c.kind == CollKind::AllReduce {
                    2 * (g as u64 - 1)
                } else {
                    g as u64 - 1
                };
                let half = n / gf / 2.0;
                for p in 0..g {
                    flows.push((grp[p], grp[(p + 1) % g], half));
                    flows.push((grp[p], grp[(p + g - 1) % g], half));
                }
            }
            CollKind::AllToAll => {
                steps = 1;
                for &s in grp {
                    for &d in grp {
                        if s != d {
                            flows.push((s, d, n / gf));
                        }
                    }
                }
            }
            CollKind::Permute => {
                steps = 1;
                flows.push((grp[0], grp[1], n));
            }
            CollKind::Broadcast => {
                steps = 1;
                for &d in &grp[1..] {
                    flows.push((grp[0], d, n));
                }
            }
        }
    }
    (steps, flows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(p: u32) -> ArchConfig {
        let mut a = arch::ArchConfig::preset("tpu-v4").unwrap();
        a.ici.topology = arch::Topology::Ring;
        a.ici.dims = vec![p];
        a.ici.wrap = vec![];
        a
    }

    #[test]
    fn a_ring_all_reduce_is_the_textbook_bidirectional_bound_plus_latency() {
        let a = ring(8);
        let n = 64u64 << 20;
        let c = Collective {
            hlo: "ar".into(),
            kind: CollKind::AllReduce,
            groups: vec![(0..8).collect()],
            bytes: n,
            torus_dims: vec![],
        };
        let f = closed_form(&a, &c);
        let beta = a.ici.gbps_per_link * 1e9;
        let alpha = a.ici.hop_latency_ns * 1e-9;
        let want = 14.0 * alpha + 7.0 / 8.0 * n as f64 / beta;
        assert!((f.seconds - want).abs() < 1e-12 * want, "{f:?} vs {want}");
        assert_eq!((f.steps, f.hops), (14, 1));
    }

    #[test]
    fn all_to_all_on_a_ring_is_limited_by_its_busiest_link() {
        // 4 chips on a ring, 4 KiB per chip: each pair 1 KiB. Link 0->1 carries 0->1 and the
        // tie-broken (+) two-hop flows 3->1 and 0->2: 3 KiB.
        let a = ring(4);
        let c = Collective {
            hlo: "a2a".into(),
            kind: CollKind::AllToAll,
            groups: vec![(0..4).collect()],
            bytes: 4096,
            torus_dims: vec![],
        };
        let f = closed_form(&a, &c);
        assert_eq!(f.link_bytes, 3072.0);
        assert_eq!(f.hops, 2);
    }
}
