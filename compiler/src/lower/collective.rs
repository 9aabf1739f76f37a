//! Collectives on the ICI: all-reduce, reduce-scatter, all-gather, all-to-all,
//! collective-permute, and `replica-id`.
//!
//! **One program, many chips.** Every chip runs the same program; what differs per chip (its
//! position in its replica group, its ring neighbours, the group's members, its permute source
//! and target) is a per-replica record of a table the compiler builds from `replica_groups` or
//! `source_target_pairs` and places in VMEM as part of the program image (a `.data vmem`
//! segment, on every chip before it starts; collectives with equal tables share one). The code reads the chip's record with `s.csr
//! replica_id` and `s.ld`, and computes runtime addresses from the position (`s.rem`, `s.muli`).
//!
//! **A collective is a block.** It starts with a `fence` (its operands are complete), issues
//! its `ici.send`/`ici.recv` and VPU work with explicit semaphores (every signal has its wait
//! inside the block), and ends with a `fence`; the emitter's tracking resumes after it.
//! Scratch registers: `s28` (runtime address), `s29` (the chip's record), `s30` (position in
//! the group), `s31` (peer, temporaries).
//!
//! **Algorithms** (costs in docs/ici.md):
//! * all-reduce: a ring over the group in the pod's snake order (neighbours one hop apart), reduce-scatter then all-gather, as two
//!   counter-rotating rings each carrying half of every chunk (so both directed links of a ring
//!   carry data). Step `s` of the reduce-scatter: receive a chunk from the upstream neighbour
//!   into a scratch buffer, send a chunk downstream, combine the received chunk into place on
//!   the VPU with the reducer's op. `g − 1` steps each phase; every chip moves
//!   `2·(g−1)/g · n` bytes, half per direction.
//! * reduce-scatter: the reduce-scatter phase alone (operand blocks along the scatter
//!   dimension made contiguous first).
//! * all-gather: the all-gather phase alone, own block placed first.
//! * all-to-all: every member posts `g` receives and `g` sends at once.
//! * collective-permute: a receive from the chip's source (or zeros if it has none) and a send
//!   to its target (if any), chosen by branches on the record.
//! * collective-broadcast: the group's first member sends to every other member at once.
//!
//! **Streamed through HBM.** An all-reduce whose operand is a parameter too large for VMEM
//! ([`streamable`]: more than half of `vmem.bytes`) and whose result is the module's leaves
//! both in HBM ([`Lowerer::all_reduce_streamed`]): the bidirectional ring runs over chunks as
//! large as two of them fit the free VMEM. Per chunk: its DMA from HBM into one of two
//! buffers (issued a chunk ahead, so it overlaps the transfers), the reduce-scatter in VMEM,
//! the chip's reduced block copied to the result in HBM, then the all-gather straight between
//! the chips' HBM (`ici.send`/`ici.recv` of HBM addresses). Chunk `k`'s reduce-scatter steps
//! run together with chunk `k − 1`'s all-gather steps (one ring phase of four lanes), so the
//! hop latencies of the two overlap; the ICI reads and writes HBM outside the HBM link model.
//!
//! **Asynchronous collectives** (`all-reduce-start`, `all-gather-start`,
//! `collective-permute-start`, an `async-start` wrapping one reduce-scatter or all-to-all
//! ([`Lowerer::async_wrapped`]) and their dones, kept by [`crate::passes::sync_async`] in the
//! entry and in while/conditional bodies; lowering follows each computation's textual order,
//! so the work XLA scheduled between start and done is lowered between them; a start in a
//! body has its done in the body, so each execution of the body issues and waits). On a flat ring the start
//! issues the whole collective into the unit queues and the sequencer moves on: no `fence`,
//! no `sem.wait`. The ordering the synchronous block gets from the sequencer is carried by
//! the units' own `wait=`/`signal=` ([`Lowerer::ring_all_reduce_async`]): per lane, a
//! reduce-scatter step's receive and send wait for the previous step's combine (a fan-out
//! semaphore declared `.sem semN signal=2`, one of [`FANOUT_SEMS`], never in the emitter's
//! pool), its VPU combine waits for its receive; an all-gather step's receive waits for the
//! reduce-scatter send of the chunk it overwrites, its send for the previous receive (step 0:
//! the last combine). The all-gather's sends and last receive signal one completion
//! semaphore; the done is `sem.wait` on it for all of them. Before the issue, the sequencer
//! waits only for the pending instructions that touch the collective's buffers (the emitter's
//! `seq_write`); its buffers and scratch live until the done, so nothing lowered in between
//! reuses them. The semaphores are held across fences ([`super::emit::Emitter::hold`]).
//! An all-gather start ([`Lowerer::ring_all_gather_async`], a flat ring) loads the chip's own
//! block on the VPU and runs the all-gather steps the same way (gathering along an inner
//! dimension, into a staging buffer of blocks that its done rearranges into the result once
//! the transfers are complete: [`InFlight::post`], as an all-to-all split along an inner
//! dimension); a permute start ([`Lowerer::permute_async`], every chip a
//! source and a target) posts its receive and send; the operand lives until the done.
//!
//! What overlaps: the ICI transfers and the VPU combines with every instruction lowered
//! between start and done on other units (MXU, DMA) and with the sequencer's issue. What
//! does not: the ICI queue is in order and holds `sequencer.queue_depth` commands, and the
//! ring needs `4(g−1)` per lane, so on larger rings (`g = 8` on tpu-v4: 56) the sequencer
//! would stall on the full ICI queue until the ring's first steps have started: an
//! all-reduce start then defers its all-gather steps into the MXU instructions of a dot
//! lowered right after it ([`super::emit::Emitter::deferred`]; measured: docs/ici.md); VPU work lowered between start and done queues behind the combines (one VPU
//! queue) and waits for them; a `fence` in between (control flow, the emitter out of
//! semaphores) or a synchronous collective waits for the collectives in flight to finish.
//! **Several in flight:** a start lowered while others are in flight issues without waiting
//! for them ([`Lowerer::hold_async`]): each holds its own semaphores (the all-reduces share
//! the fan-out ones, see [`Lowerer::ring_all_reduce_async`]) and buffers until its done, the
//! scratch registers are used only while issuing, and every command of the earlier ones
//! precedes the later ones' on the ICI and the VPU queues (in order), so the compute lowered
//! after the last start runs under all of them while their transfers follow one another on
//! the ICI. When the emitter has too few semaphores free, the oldest in flight complete
//! first.
//! A partial permute start ([`Lowerer::permute_async_partial`]) has the chips that are no
//! target send zeros to those that are no source.
//! Torus stages ([`Lowerer::torus_async`]) are issued at the start too, every stage's ring
//! into the queues, the stage boundaries ordered on the units' semaphores (a fan-out
//! semaphore signalled by a reduce-scatter stage's last combine; after an all-gather stage a
//! counted semaphore and a one-cycle `ici.model` relay on the ICI queue). All-reduces
//! streamed through HBM, torus stages with chunks too small for two lanes and starts when
//! too few semaphores are free run the synchronous block at the start (right values, no
//! overlap); `async-start`/`async-done` of anything but one such
//! collective reach this file as their synchronous ops. A tuple all-reduce-start runs one
//! asynchronous ring per element type (its operands copied into one buffer each); its done
//! waits for all of them. With the analytic backend the start is one `ici.model` that
//! signals a held semaphore, and the done waits for it.

use super::elementwise::{binary, chunks};
use super::emit::FANOUT_SEMS;
use super::{Buf, Lowerer, Val, VPU_CHUNK};
use crate::error::{CResult, CompileError};
use hlo::groups::{all_groups, device_pairs};
use hlo::{ElementType, InstId, Opcode};
use isa::{Csr, DType, Inst, MemRef, SReg, Sem, SemDecl, Space, VAddr};
use sim::ici_model::{CollKind, Collective};

const R_ADDR: SReg = SReg(28);
const R_REC: SReg = SReg(29);
const R_POS: SReg = SReg(30);
const R_PEER: SReg = SReg(31);

/// Record fields of ring collectives: position, downstream, upstream, then the members.
const F_POS: usize = 0;
const F_NEXT: usize = 1;
const F_PREV: usize = 2;
const F_MEMBERS: usize = 3;

/// Where a ring finds its chip's position and neighbours in the record (and, for a stage of
/// the torus all-reduce, the byte offset of the chip's segment).
#[derive(Clone, Copy, Debug)]
struct Frame {
    pos: usize,
    next: usize,
    prev: usize,
    seg: Option<usize>,
}

/// The flat ring's frame.
const FLAT: Frame = Frame {
    pos: F_POS,
    next: F_NEXT,
    prev: F_PREV,
    seg: None,
};

/// One ring of a ring collective: `g` chunks of `len` elements at `base + k·stride` (plus the
/// chip's segment offset for a torus stage).
#[derive(Clone, Copy, Debug)]
struct Lane {
    f: Frame,
    /// Where the chunks are: VMEM, or HBM for an all-gather phase streamed through HBM
    /// (a combining phase works in VMEM).
    space: Space,
    base: u64,
    stride: u64,
    len: u64,
    /// Data flows to the next member (else to the previous one).
    fwd: bool,
    tag: u32,
    /// Scratch for a received chunk (reduce-scatter).
    tmp: u64,
    /// Semaphores: send, receive, combine.
    sems: [u8; 3],
}

/// What a torus collective does ([`Lowerer::torus_run`]).
#[derive(Clone, Copy)]
enum Torus<'a> {
    AllReduce(Opcode),
    ReduceScatter(Opcode, &'a Buf),
    AllGather(&'a Buf),
}

/// An asynchronous collective issued at its start and not yet waited for at its done.
#[derive(Clone, Debug)]
pub struct InFlight {
    /// The start instruction.
    start: InstId,
    /// What the done waits for: `sem.wait sem, n=count`.
    waits: Vec<(u8, u32)>,
    /// Semaphores it holds (returned to the emitter's pool at the done).
    held: Vec<u8>,
    /// Whether it holds the fan-out semaphores.
    fanout: bool,
    /// Blocks rearranged at the done, once the transfers are complete: `[g, A, Dk, B]` at
    /// `.1` into `[A, g, Dk, B]` at `.0` (an all-gather along an inner dimension, an
    /// all-to-all split along one). Kept (its waits done) when a drain completes it early.
    post: Option<(Buf, Buf)>,
}

/// What [`Lowerer::runtime_vpu`] does between the runtime address `[s28]` and a static one.
#[derive(Clone, Copy, Debug)]
enum RtVpu {
    /// `[s28] = op([s28], [b])`.
    Combine(Opcode),
    /// `[b] = [s28]`.
    Store,
    /// `[s28] = [b]`.
    Load,
}

/// An all-reduce streamed through HBM (module docs): one operand, a parameter larger than half
/// of VMEM; its result is the module's result (or an element of the root tuple). Decided before
/// the parameters are placed: such a parameter stays in HBM.
pub fn streamable(
    m: &hlo::Module,
    h: InstId,
    users: &[Vec<InstId>],
    arch: &arch::ArchConfig,
) -> bool {
    let c = m.entry();
    let inst = &c.insts[h];
    // An all-reduce, or an all-reduce-start whose done is the value the module returns (it
    // then runs synchronously at the start: streamed through HBM).
    let fin = match inst.opcode {
        Opcode::AllReduce => h,
        Opcode::AllReduceStart => match users[h.index()][..] {
            [d] if c.insts[d].opcode == Opcode::AllReduceDone => d,
            _ => return false,
        },
        _ => return false,
    };
    if inst.operands.len() != 1 {
        return false;
    }
    let x = &c.insts[inst.operands[0]];
    let (Some(xs), Some(_)) = (x.shape.as_array(), inst.shape.as_array()) else {
        return false;
    };
    if x.opcode != Opcode::Parameter || xs.is_dynamic() {
        return false;
    }
    let bytes = xs.udims().iter().map(|&d| d as u64).product::<u64>() * xs.ty.byte_size() as u64;
    if bytes.saturating_mul(2) <= arch.vmem.bytes {
        return false;
    }
    let root = c.root;
    users[fin.index()]
        .iter()
        .all(|&u| u == root && c.insts[u].opcode == Opcode::Tuple)
        || (root == fin && users[fin.index()].is_empty())
}

/// Lowers collectives and `replica-id`; `None` if `h` is not one.
pub fn lower(l: &mut Lowerer<'_>, h: InstId) -> CResult<Option<Val>> {
    let op = l.comp().insts[h].opcode;
    Ok(Some(match op {
        Opcode::ReplicaId => l.replica_id(h)?,
        Opcode::PartitionId => l.partition_id(h)?,
        Opcode::AllReduce => l.all_reduce(h)?,
        Opcode::AllReduceStart => l.async_start(h, Lowerer::all_reduce)?,
        Opcode::AllGatherStart => l.async_start(h, Lowerer::all_gather)?,
        Opcode::CollectivePermuteStart => l.async_start(h, Lowerer::collective_permute)?,
        Opcode::AsyncStart => l.async_wrapped(h)?,
        Opcode::AllReduceDone
        | Opcode::AllGatherDone
        | Opcode::CollectivePermuteDone
        | Opcode::AsyncDone => l.async_done(h)?,
        Opcode::ReduceScatter => l.reduce_scatter(h)?,
        Opcode::AllGather => l.all_gather(h)?,
        Opcode::AllToAll => l.all_to_all(h)?,
        Opcode::CollectivePermute => l.collective_permute(h)?,
        Opcode::CollectiveBroadcast => l.collective_broadcast(h)?,
        _ => return Ok(None),
    }))
}

/// `(A, D, B)`: the elements before, along and after dimension `d`.
fn split3(dims: &[usize], d: usize) -> (usize, usize, usize) {
    (
        dims[..d].iter().product(),
        dims[d],
        dims[d + 1..].iter().product(),
    )
}

impl Lowerer<'_> {
    /// Holds the fan-out semaphores for `lanes` ring lanes and declares them `signal=2` (a
    /// step's transfer and combine both wait for one signal of the step before).
    fn take_fanout(&mut self, lanes: usize) {
        self.e.hold_fanout();
        for &sem in FANOUT_SEMS.iter().take(lanes) {
            self.e.b.declare_sem(SemDecl {
                sem,
                wait: 1,
                signal: 2,
                shared: false,
            });
        }
    }

    fn replica_id(&mut self, h: InstId) -> CResult<Val> {
        self.chip_coord(
            h,
            Inst::SDiv {
                rd: R_PEER,
                ra: R_PEER,
                rb: R_ADDR,
            },
        )
    }

    fn partition_id(&mut self, h: InstId) -> CResult<Val> {
        self.chip_coord(
            h,
            Inst::SRem {
                rd: R_PEER,
                ra: R_PEER,
                rb: R_ADDR,
            },
        )
    }

    /// `replica-id` or `partition-id`: the chip's index (`s.csr replica_id`, the device
    /// `r·P + p`) divided by or modulo `P` with `op`, stored as the scalar result.
    fn chip_coord(&mut self, h: InstId, op: Inst) -> CResult<Val> {
        let (ty, dims) = self.out_shape(h)?;
        let buf = self.new_buf(h, ty, dims)?;
        self.e.seq_write(buf.access());
        self.e.seq(Inst::SCsr {
            rd: R_PEER,
            csr: Csr::ReplicaId,
        });
        self.e.seq(Inst::SLi {
            rd: R_ADDR,
            imm: self.devs.partitions as i64,
        });
        self.e.seq(op);
        let a = self.e.vaddr(buf.addr);
        self.e.seq(Inst::SSt {
            rs: R_PEER,
            addr: a,
            t: self.vty(ty)?,
        });
        Ok(Val::Array(buf))
    }

    /// The replica groups of `h`, all of one size.
    fn groups(&self, h: InstId) -> CResult<Vec<Vec<usize>>> {
        let inst = &self.comp().insts[h];
        let g = all_groups(inst, self.devs).map_err(|e| CompileError::Invalid {
            what: format!("%{}: {e}", inst.name),
            span: self.span,
        })?;
        let covered: usize = g.iter().map(|x| x.len()).sum();
        if covered != self.chips {
            return Err(self.unsupported("replica groups that leave some devices out"));
        }
        if g.iter().any(|x| x.len() != g[0].len()) {
            return Err(self.unsupported("replica groups of different sizes"));
        }
        Ok(g)
    }

    /// The torus stages of an all-reduce whose every group is a box of the pod (full extents
    /// along at least two dimensions, one coordinate along the others): the varying
    /// dimensions, in order. `None`: the flat ring.
    fn torus_stages(&self, groups: &[Vec<usize>]) -> Option<Vec<usize>> {
        let topo = sim::ici::Topo::new(&self.arch.ici);
        let mut dims: Option<Vec<usize>> = None;
        for grp in groups {
            if grp.iter().any(|&c| c as u64 >= topo.chips()) {
                return None;
            }
            let coords: Vec<Vec<u32>> = grp.iter().map(|&c| topo.coords(c as u32)).collect();
            let varying: Vec<usize> = (0..topo.dims.len())
                .filter(|&k| coords.iter().any(|c| c[k] != coords[0][k]))
                .collect();
            let full: usize = varying.iter().map(|&k| topo.dims[k] as usize).product();
            if varying.len() < 2
                || full != grp.len()
                || dims.as_ref().is_some_and(|d| *d != varying)
            {
                return None;
            }
            dims = Some(varying);
        }
        dims
    }

    /// A collective on a torus, dimension by dimension, over `total` elements at `base`
    /// (divisible by the group): the stages run along the dimensions of `order` in turn, each a
    /// bidirectional ring over the segment the previous stage left (`n_k = n/Π_{j<k} g_j`).
    /// All-reduce: the reduce-scatter stages, then the all-gather stages in reverse.
    /// Reduce-scatter: the reduce-scatter stages, then the chip's block (at the byte offset
    /// the record's last field holds) is stored to `out`. All-gather: the chip's block is
    /// loaded from `own` to that offset, then the all-gather stages in reverse.
    ///
    /// Inside an asynchronous start (`async_until` set) with two lanes per stage, the
    /// stages are issued without waiting ([`Self::torus_async`]); else a synchronous block.
    ///
    /// Record per chip: per stage `s` `[pos_s, next_s, prev_s, seg_s]` (position along the
    /// dimension, ring neighbours, byte offset of the segment the stage works on), then the
    /// byte offset of the chip's final block.
    fn torus_run(
        &mut self,
        h: InstId,
        order: &[usize],
        base: u64,
        total: u64,
        ty: ElementType,
        what: Torus<'_>,
    ) -> CResult<()> {
        self.vty(ty)?;
        let w = ty.byte_size() as u64;
        let topo = sim::ici::Topo::new(&self.arch.ici);
        let ext: Vec<u64> = order.iter().map(|&k| topo.dims[k] as u64).collect();
        // Chunk elements per stage.
        let mut ce = Vec::with_capacity(order.len());
        let mut n = total;
        for &g in &ext {
            n /= g;
            ce.push(n);
        }
        let last = 4 * order.len();
        let mut recs = vec![vec![-1i64; last + 1]; self.chips];
        for (c, rec) in recs.iter_mut().enumerate() {
            if c as u64 >= topo.chips() {
                continue;
            }
            let xs = topo.coords(c as u32);
            let mut seg = 0i64;
            for (s, &k) in order.iter().enumerate() {
                rec[4 * s] = xs[k] as i64;
                rec[4 * s + 1] = topo.step(c as u32, k, 1) as i64;
                rec[4 * s + 2] = topo.step(c as u32, k, -1) as i64;
                rec[4 * s + 3] = seg * w as i64;
                seg += xs[k] as i64 * ce[s] as i64;
            }
            rec[last] = seg * w as i64;
        }
        let combine = match what {
            Torus::AllReduce(op) | Torus::ReduceScatter(op, _) => Some(op),
            Torus::AllGather(_) => None,
        };
        let mut lanes = Vec::new();
        for (s, &chunk) in ce.iter().enumerate() {
            let f = Frame {
                pos: 4 * s,
                next: 4 * s + 1,
                prev: 4 * s + 2,
                seg: Some(4 * s + 3),
            };
            lanes.push(self.lanes_in(f, base, chunk, ty, combine.is_some())?);
        }
        let block = *ce.last().unwrap_or(&total);
        if self.async_until.is_some() && lanes.iter().all(|l| l.len() == FANOUT_SEMS.len()) {
            return self.torus_async(h, &recs, &lanes, &ext, base, block, ty, what);
        }
        self.torus_sync(&recs, &lanes, &ext, base, block, ty, what)
    }

    /// The synchronous block of [`Self::torus_run`].
    #[allow(clippy::too_many_arguments)]
    fn torus_sync(
        &mut self,
        recs: &[Vec<i64>],
        lanes: &[Vec<Lane>],
        ext: &[u64],
        base: u64,
        block: u64,
        ty: ElementType,
        what: Torus<'_>,
    ) -> CResult<()> {
        let t = self.vty(ty)?;
        let w = ty.byte_size() as u64;
        let last = 4 * lanes.len();
        let combine = match what {
            Torus::AllReduce(op) | Torus::ReduceScatter(op, _) => Some(op),
            Torus::AllGather(_) => None,
        };
        if self.coll_begin(recs)? {
            if let Torus::AllGather(own) = what {
                self.block_addr(last, base);
                let pieces = self.runtime_vpu(RtVpu::Load, own.addr, block, t, w, 0);
                self.wait(0, pieces);
            }
            if let Some(op) = combine {
                for (s, l) in lanes.iter().enumerate() {
                    self.ring_phase(l, ext[s], t, w, Some(op));
                }
            }
            if !matches!(what, Torus::ReduceScatter(..)) {
                for (s, l) in lanes.iter().enumerate().rev() {
                    self.ring_phase(l, ext[s], t, w, None);
                }
            }
            if let Torus::ReduceScatter(_, out) = what {
                self.block_addr(last, base);
                let pieces = self.runtime_vpu(RtVpu::Store, out.addr, block, t, w, 0);
                self.wait(0, pieces);
            }
            self.coll_end();
        }
        Ok(())
    }

    /// `s28 = base + record[field]`.
    fn block_addr(&mut self, field: usize, base: u64) {
        self.ld_field(R_ADDR, field);
        self.e.seq(Inst::SAddi {
            rd: R_ADDR,
            ra: R_ADDR,
            imm: base as i64,
        });
    }

    /// The torus stages of a reduce-scatter or all-gather: as [`Self::torus_stages`], and each
    /// group listed in ascending chip order (so member `p`'s block is the one the stages leave
    /// on it), slowest dimension first.
    fn torus_block_stages(&self, groups: &[Vec<usize>]) -> Option<Vec<usize>> {
        if groups.iter().any(|g| g.windows(2).any(|w| w[0] > w[1])) {
            return None;
        }
        let mut dims = self.torus_stages(groups)?;
        dims.reverse();
        Some(dims)
    }

    /// Each group's members in the order of the pod's snake walk ([`sim::ici::Topo::snake_index`]):
    /// ring neighbours one hop apart where the group allows it. Groups naming chips outside
    /// the configured pod keep their order.
    fn snake_order(&self, mut groups: Vec<Vec<usize>>) -> Vec<Vec<usize>> {
        let topo = sim::ici::Topo::new(&self.arch.ici);
        if groups.iter().flatten().all(|&c| (c as u64) < topo.chips()) {
            for g in &mut groups {
                g.sort_by_key(|&c| topo.snake_index(c as u32));
            }
        }
        groups
    }

    /// Records a collective for the report (algorithm, bytes, closed form); `torus`: the
    /// dimensions of its torus stages, in order (empty: one ring per group, or direct).
    pub(crate) fn note(
        &mut self,
        h: InstId,
        kind: CollKind,
        groups: &[Vec<usize>],
        bytes: u64,
        torus: &[usize],
    ) {
        self.stats.collectives.push(Collective {
            hlo: self.comp().insts[h].name.clone(),
            kind,
            groups: groups
                .iter()
                .map(|g| g.iter().map(|&x| x as u32).collect())
                .collect(),
            bytes,
            torus_dims: torus.to_vec(),
        });
    }

    /// Per-replica ring records: position, next, previous, members.
    /// `members`: also list the group's members (all-to-all and broadcast address them).
    fn ring_records(&self, groups: &[Vec<usize>], members: bool) -> Vec<Vec<i64>> {
        let mut recs = vec![Vec::new(); self.chips];
        for grp in groups {
            let g = grp.len();
            for (p, &r) in grp.iter().enumerate() {
                let mut rec = vec![
                    p as i64,
                    grp[(p + 1) % g] as i64,
                    grp[(p + g - 1) % g] as i64,
                ];
                if members {
                    rec.extend(grp.iter().map(|&m| m as i64));
                }
                recs[r] = rec;
            }
        }
        recs
    }

    /// A fresh tag for one collective's transfers.
    pub(crate) fn next_tag(&mut self) -> u32 {
        let t = self.coll_tag;
        self.coll_tag = self.coll_tag.wrapping_add(2) & 0xffff;
        t
    }

    /// Starts a collective block: places the table of per-replica records in VMEM, waits for
    /// everything issued so far, and loads the chip's record address (`s29`) and its first
    /// field (`s30`).
    ///
    /// With the analytic backend (`ici_analytic`) it emits the last noted collective as one
    /// `ici.model` of its α-β closed form instead, and returns false: the caller skips the
    /// block (its result buffers hold no data: timing only).
    fn coll_begin(&mut self, recs: &[Vec<i64>]) -> CResult<bool> {
        self.drain_async();
        if self.opts.ici_analytic {
            self.model_last()?;
            return Ok(false);
        }
        self.e.fence();
        self.load_record(recs)?;
        Ok(true)
    }

    /// Places the table of per-replica records in VMEM (shared by collectives with equal
    /// tables) and loads the chip's record address (`s29`) and its first field (`s30`).
    fn load_record(&mut self, recs: &[Vec<i64>]) -> CResult<()> {
        let k = recs.iter().map(|r| r.len()).max().unwrap_or(1).max(1);
        let mut flat = Vec::with_capacity(recs.len() * k);
        for r in recs {
            flat.extend(r.iter().copied());
            flat.extend(std::iter::repeat_n(-1, k - r.len()));
        }
        let table = match self.coll_tables.get(&flat) {
            Some(&a) => a,
            None => {
                // Part of the program image: in every chip's VMEM from the start (like the
                // scalar memory of a TPU core), shared by collectives with the same records.
                let bytes: Vec<u8> = flat.iter().flat_map(|x| x.to_le_bytes()).collect();
                let n = bytes.len() as u64;
                let a = self.vmem.alloc_static(n).ok_or_else(|| {
                    self.too_large(format!(
                        "a collective's replica table ({n} bytes: {} chips × {k} fields) does not \
                         fit at the top of VMEM, free for the whole program",
                        recs.len()
                    ))
                })?;
                self.e.b.data(Space::Vmem, a, bytes);
                self.e.b.region_full(isa::Region::plain(
                    format!("collective-table@{a}"),
                    Space::Vmem,
                    a,
                    n,
                ));
                self.coll_tables.insert(flat, a);
                a
            }
        };
        self.coll_rec = (table, k);
        self.reload_record(F_POS);
        Ok(())
    }

    /// Loads the chip's record address of the last table placed (`s29`) and its field
    /// `pos_field` (`s30`).
    fn reload_record(&mut self, pos_field: usize) {
        let (table, k) = self.coll_rec;
        self.e.seq(Inst::SCsr {
            rd: R_REC,
            csr: Csr::ReplicaId,
        });
        self.e.seq(Inst::SMuli {
            rd: R_REC,
            ra: R_REC,
            imm: 8 * k as i64,
        });
        self.e.seq(Inst::SLi {
            rd: R_ADDR,
            imm: table as i64,
        });
        self.e.seq(Inst::SAdd {
            rd: R_REC,
            ra: R_REC,
            rb: R_ADDR,
        });
        self.ld_field(R_POS, pos_field);
    }

    /// The α-β closed form of the last noted collective, in cycles.
    fn model_cycles(&self) -> CResult<u64> {
        let c =
            self.stats.collectives.last().ok_or_else(|| {
                CompileError::Internal("a collective block without its note".into())
            })?;
        let f = sim::ici_model::closed_form(self.arch, c);
        Ok((f.seconds * self.arch.clock_mhz * 1e6).ceil().max(1.0) as u64)
    }

    /// One `ici.model` block for the last noted collective: a fence, the modelled transfer
    /// time on the ICI unit, a fence.
    fn model_last(&mut self) -> CResult<()> {
        let mut cycles = self.model_cycles()?;
        self.e.fence();
        while cycles > 0 {
            let k = cycles.min(u32::MAX as u64);
            self.e.seq(Inst::IciModel {
                cycles: k as u32,
                wait: None,
                signal: Some(Sem(0)),
            });
            self.e.seq(Inst::SemWait { sem: Sem(0), n: 1 });
            cycles -= k;
        }
        self.e.fence();
        Ok(())
    }

    /// Ends a collective block (every instruction of it complete).
    fn coll_end(&mut self) {
        self.e.fence();
    }

    fn ld_field(&mut self, rd: SReg, field: usize) {
        self.e.seq(Inst::SLd {
            rd,
            addr: VAddr {
                base: R_REC,
                off: 8 * field as i32,
            },
            t: DType::S64,
        });
    }

    /// `s28 = ((pos + k) mod g) · stride + base`.
    fn chunk_addr(&mut self, k: i64, g: u64, stride: u64, base: u64, seg: Option<usize>) {
        let g = g as i64;
        self.e.seq(Inst::SLi { rd: R_PEER, imm: g });
        self.e.seq(Inst::SAddi {
            rd: R_ADDR,
            ra: R_POS,
            imm: 2 * g + k,
        });
        self.e.seq(Inst::SRem {
            rd: R_ADDR,
            ra: R_ADDR,
            rb: R_PEER,
        });
        self.e.seq(Inst::SLi {
            rd: R_PEER,
            imm: stride as i64,
        });
        self.e.seq(Inst::SMul {
            rd: R_ADDR,
            ra: R_ADDR,
            rb: R_PEER,
        });
        self.e.seq(Inst::SLi {
            rd: R_PEER,
            imm: base as i64,
        });
        self.e.seq(Inst::SAdd {
            rd: R_ADDR,
            ra: R_ADDR,
            rb: R_PEER,
        });
        if let Some(f) = seg {
            self.ld_field(R_PEER, f);
            self.e.seq(Inst::SAdd {
                rd: R_ADDR,
                ra: R_ADDR,
                rb: R_PEER,
            });
        }
    }

    /// Posts an `ici.send` (or `ici.recv`) of `len` bytes at `mem` to (from) the chip named by
    /// record field `peer_field`.
    fn post(&mut self, send: bool, peer_field: usize, mem: MemRef, len: u64, tag: u32, sem: u8) {
        self.post_sync(send, peer_field, mem, len, tag, None, Some(sem));
    }

    /// [`Self::post`] with the transfer's own `wait=` and `signal=`.
    #[allow(clippy::too_many_arguments)]
    fn post_sync(
        &mut self,
        send: bool,
        peer_field: usize,
        mem: MemRef,
        len: u64,
        tag: u32,
        wait: Option<u8>,
        signal: Option<u8>,
    ) {
        self.ld_field(R_PEER, peer_field);
        let len = len as u32;
        let (wait, signal) = (wait.map(Sem), signal.map(Sem));
        self.e.seq(if send {
            Inst::IciSend {
                peer: R_PEER,
                src: mem,
                len,
                tag,
                wait,
                signal,
            }
        } else {
            Inst::IciRecv {
                peer: R_PEER,
                dst: mem,
                len,
                tag,
                wait,
                signal,
            }
        });
    }

    fn wait(&mut self, sem: u8, n: u32) {
        if n > 0 {
            self.e.seq(Inst::SemWait { sem: Sem(sem), n });
        }
    }

    /// `how` between `[s28]` and `[b]` over `n` elements in VPU-sized pieces, each signalling `sem`; returns
    /// the number of pieces. Advances `s28`.
    fn runtime_vpu(&mut self, how: RtVpu, b: u64, n: u64, t: DType, w: u64, sem: u8) -> u32 {
        self.runtime_vpu_with(how, b, n, t, w, |_, _| (None, Some(sem)))
    }

    /// [`Self::runtime_vpu`] with piece `j`'s `(wait, signal)` from `sync(j, last)`.
    #[allow(clippy::too_many_arguments)]
    fn runtime_vpu_with(
        &mut self,
        how: RtVpu,
        b: u64,
        n: u64,
        t: DType,
        w: u64,
        sync: impl Fn(u32, bool) -> (Option<u8>, Option<u8>),
    ) -> u32 {
        let mut pieces = 0;
        let total = n.div_ceil(VPU_CHUNK) as u32;
        for (s, k) in chunks(n) {
            let rt = VAddr {
                base: R_ADDR,
                off: 0,
            };
            let st = self.e.vaddr(b + s * w);
            let mut inst = match how {
                RtVpu::Combine(op) => binary(op, rt, rt, st, k, t).expect("checked op"),
                RtVpu::Store => Inst::VMov {
                    dst: st,
                    a: rt,
                    n: k,
                    t,
                    pat: None,
                    wait: None,
                    signal: None,
                },
                RtVpu::Load => Inst::VMov {
                    dst: rt,
                    a: st,
                    n: k,
                    t,
                    pat: None,
                    wait: None,
                    signal: None,
                },
            };
            let (wait, signal) = sync(pieces, pieces + 1 == total);
            inst.set_sync("wait", wait.map(Sem));
            inst.set_sync("signal", signal.map(Sem));
            self.e.seq(inst);
            pieces += 1;
            if s + VPU_CHUNK < n {
                self.e.seq(Inst::SAddi {
                    rd: R_ADDR,
                    ra: R_ADDR,
                    imm: (k as u64 * w) as i64,
                });
            }
        }
        pieces
    }

    /// The `g − 1` steps of a ring phase over `lanes`: reduce-scatter (`combine` given: chip
    /// at position `p` ends with chunk `p` fully reduced) or all-gather (chip `p` starts with
    /// chunk `p` and ends with all).
    fn ring_phase(&mut self, lanes: &[Lane], g: u64, t: DType, w: u64, combine: Option<Opcode>) {
        let mixed: Vec<(Lane, Option<Opcode>)> = lanes.iter().map(|&l| (l, combine)).collect();
        self.ring_phase_mixed(&mixed, g, t, w);
    }

    /// [`Self::ring_phase`] with each lane's own `combine`: reduce-scatter and all-gather lanes
    /// (of different data) step together, so their steps' latencies overlap.
    fn ring_phase_mixed(&mut self, lanes: &[(Lane, Option<Opcode>)], g: u64, t: DType, w: u64) {
        // Chunks sent and received, relative to the position.
        let hops = |c: &Option<Opcode>| -> (i64, i64) {
            if c.is_some() {
                (1, 2)
            } else {
                (0, 1)
            }
        };
        if let Some((l, _)) = lanes.first() {
            self.ld_field(R_POS, l.f.pos);
        }
        for s in 0..g as i64 - 1 {
            // Chunk indices relative to the position: downstream-flowing lanes count down.
            let k = |lane: &Lane, d: i64| if lane.fwd { -(s + d) } else { s + d };
            for (lane, combine) in lanes {
                let from = if lane.fwd { lane.f.prev } else { lane.f.next };
                let dst = if combine.is_some() {
                    self.e.memref(Space::Vmem, lane.tmp)
                } else {
                    self.chunk_addr(
                        k(lane, hops(combine).1),
                        g,
                        lane.stride,
                        lane.base,
                        lane.f.seg,
                    );
                    MemRef {
                        space: lane.space,
                        base: R_ADDR,
                        off: 0,
                    }
                };
                self.post(false, from, dst, lane.len * w, lane.tag, lane.sems[1]);
            }
            for (lane, combine) in lanes {
                let to = if lane.fwd { lane.f.next } else { lane.f.prev };
                self.chunk_addr(
                    k(lane, hops(combine).0),
                    g,
                    lane.stride,
                    lane.base,
                    lane.f.seg,
                );
                let src = MemRef {
                    space: lane.space,
                    base: R_ADDR,
                    off: 0,
                };
                self.post(true, to, src, lane.len * w, lane.tag, lane.sems[0]);
            }
            let mut pieces = vec![0u32; lanes.len()];
            for (i, (lane, combine)) in lanes.iter().enumerate() {
                if let Some(op) = *combine {
                    self.wait(lane.sems[1], 1);
                    self.chunk_addr(
                        k(lane, hops(combine).1),
                        g,
                        lane.stride,
                        lane.base,
                        lane.f.seg,
                    );
                    pieces[i] = self.runtime_vpu(
                        RtVpu::Combine(op),
                        lane.tmp,
                        lane.len,
                        t,
                        w,
                        lane.sems[2],
                    );
                }
            }
            for (i, (lane, combine)) in lanes.iter().enumerate() {
                self.wait(lane.sems[0], 1);
                if combine.is_none() {
                    self.wait(lane.sems[1], 1);
                }
                self.wait(lane.sems[2], pieces[i]);
            }
        }
    }

    /// Two counter-rotating lanes over `g` chunks of `ce` elements at `base` (one lane if a
    /// chunk has a single element), each with a scratch buffer when combining.
    fn lanes(&mut self, base: u64, ce: u64, ty: ElementType, combine: bool) -> CResult<Vec<Lane>> {
        self.lanes_in(FLAT, base, ce, ty, combine)
    }

    /// [`Self::lanes`] of a ring with frame `f`.
    fn lanes_in(
        &mut self,
        f: Frame,
        base: u64,
        ce: u64,
        ty: ElementType,
        combine: bool,
    ) -> CResult<Vec<Lane>> {
        let w = ty.byte_size() as u64;
        let h0 = ce.div_ceil(2);
        let parts: Vec<(u64, u64)> = if ce >= 2 {
            vec![(0, h0), (h0, ce - h0)]
        } else {
            vec![(0, ce)]
        };
        let tag = self.next_tag();
        let mut lanes = Vec::new();
        for (i, &(off, len)) in parts.iter().enumerate() {
            let tmp = if combine {
                // An asynchronous collective's scratch lives until its done.
                let until = self.async_until.unwrap_or(self.pos);
                self.buf_until(until, ty, vec![len as usize])?.addr
            } else {
                0
            };
            lanes.push(Lane {
                f,
                space: Space::Vmem,
                base: base + off * w,
                stride: ce * w,
                len,
                fwd: i == 0,
                tag: tag + i as u32,
                tmp,
                sems: [3 * i as u8, 3 * i as u8 + 1, 3 * i as u8 + 2],
            });
        }
        Ok(lanes)
    }

    /// The reducer's binary op, checked to run on the VPU for `t`.
    fn reducer(&self, h: InstId, t: DType) -> CResult<Opcode> {
        let inst = &self.comp().insts[h];
        let comp = inst
            .attrs
            .to_apply
            .ok_or_else(|| CompileError::Internal("collective without to_apply".into()))?;
        let probe = VAddr {
            base: SReg(0),
            off: 0,
        };
        super::reduce::reducer_op(self.m, comp)
            .filter(|&op| binary(op, probe, probe, probe, 0, t).is_some())
            .ok_or_else(|| {
                self.unsupported(format!(
                    "{} whose reducer is not one binary VPU op of its parameters",
                    inst.opcode.name()
                ))
            })
    }

    fn all_reduce(&mut self, h: InstId) -> CResult<Val> {
        let ops = self.comp().insts[h].operands.clone();
        if let [x] = ops[..] {
            if let Some(Val::Hbm(slot)) = self.vals[x.index()].clone() {
                return self.all_reduce_streamed(h, slot);
            }
        }
        // Where a chunk ends up is internal to all-reduce: the ring may visit the members in
        // the order that keeps neighbours one hop apart.
        let groups = self.snake_order(self.groups(h)?);
        let outs: Vec<(ElementType, Vec<usize>)> = match self.comp().insts[h].shape.as_array() {
            Some(_) => vec![self.out_shape(h)?],
            None => self.comp().insts[h]
                .shape
                .as_tuple()
                .unwrap_or(&[])
                .iter()
                .map(|s| {
                    s.as_array()
                        .map(|a| (a.ty, a.udims()))
                        .ok_or_else(|| self.unsupported("nested tuples"))
                })
                .collect::<CResult<_>>()?,
        };
        // Operands of one element type are reduced together in one buffer (one ring instead
        // of one per operand: XLA's all-reduce combining), each result a view into it.
        let mut by_type: Vec<(ElementType, Vec<usize>)> = Vec::new();
        for (i, (ty, _)) in outs.iter().enumerate() {
            match by_type.iter_mut().find(|(t, _)| t == ty) {
                Some((_, v)) => v.push(i),
                None => by_type.push((*ty, vec![i])),
            }
        }
        let mut vals: Vec<Option<Val>> = vec![None; ops.len()];
        for (ty, idx) in by_type {
            let t = self.vty(ty)?;
            let op = self.reducer(h, t)?;
            let g = groups[0].len() as u64;
            let w = ty.byte_size() as u64;
            let xs: Vec<Buf> = idx
                .iter()
                .map(|&i| self.arr(ops[i]))
                .collect::<CResult<_>>()?;
            let n: u64 = xs.iter().map(|x| x.elems()).sum();
            let ce = n.div_ceil(g).max(1);
            // In place when a single operand dies here and needs no padding; else copies.
            let work = if xs.len() == 1
                && n == g * ce
                && xs[0].bytes() == n * w
                && self.take_over(&xs[0], h)
            {
                xs[0].with_dims(vec![n as usize])
            } else {
                let work = self.new_buf(h, ty, vec![(g * ce) as usize])?;
                let mut off = 0;
                for x in &xs {
                    let view = Buf {
                        addr: work.addr + off * w,
                        dims: vec![x.elems() as usize],
                        ..work.clone()
                    };
                    self.copy_into(&view, &x.with_dims(vec![x.elems() as usize]))?;
                    off += x.elems();
                }
                work
            };
            if let Some(tor) = self.torus_stages(&groups) {
                self.note(h, CollKind::AllReduce, &groups, n * w, &tor);
                self.torus_run(h, &tor, work.addr, g * ce, ty, Torus::AllReduce(op))?;
            } else if g > 1 {
                self.note(h, CollKind::AllReduce, &groups, n * w, &[]);
                let lanes = self.lanes(work.addr, ce, ty, true)?;
                let recs = self.ring_records(&groups, false);
                if self.async_until.is_some() {
                    self.ring_all_reduce_async(h, &recs, &lanes, &work, g, op)?;
                } else if self.coll_begin(&recs)? {
                    self.ring_phase(&lanes, g, t, w, Some(op));
                    self.ring_phase(&lanes, g, t, w, None);
                    self.coll_end();
                }
            }
            let mut off = 0;
            for (k, &i) in idx.iter().enumerate() {
                vals[i] = Some(Val::Array(Buf {
                    addr: work.addr + off * w,
                    dims: outs[i].1.clone(),
                    ..work.clone()
                }));
                off += xs[k].elems();
            }
        }
        let mut vals: Vec<Val> = vals
            .into_iter()
            .map(|v| v.expect("every operand"))
            .collect();
        Ok(if self.comp().insts[h].shape.as_array().is_some() {
            vals.pop().expect("one operand")
        } else {
            Val::Tuple(vals)
        })
    }

    /// An all-reduce of the parameter at `x` in HBM into a result slot in HBM (module docs,
    /// "Streamed through HBM").
    fn all_reduce_streamed(&mut self, h: InstId, x: crate::io::Slot) -> CResult<Val> {
        let (ty, dims) = self.out_shape(h)?;
        let t = self.vty(ty)?;
        let op = self.reducer(h, t)?;
        let groups = self.snake_order(self.groups(h)?);
        let g = groups[0].len() as u64;
        let w = ty.byte_size() as u64;
        let n: u64 = dims.iter().map(|&d| d as u64).product();
        let name = self.comp().insts[h].name.clone();
        self.note(h, CollKind::AllReduce, &groups, n * w, &[]);
        if g == 1 {
            let out = self.hbm_slot(n * w, &name)?;
            self.dma((Space::Hbm, out), (Space::Hbm, x.addr), n * w)?;
            return Ok(Val::Hbm(crate::io::Slot {
                addr: out,
                ty,
                dims,
            }));
        }
        // Chunks of `e` elements (a multiple of 2g): two buffers and the lanes' scratch
        // (`e/g` elements) in the largest free block of VMEM.
        let free = self
            .vmem
            .largest_free()
            .saturating_sub(4 * super::alloc::ALIGN);
        let step = 2 * g;
        let fit = free * g / (w * (2 * g + 1)) / step * step;
        if fit < step {
            return Err(self.too_large(format!(
                "%{name}: streaming an all-reduce through HBM needs two VMEM buffers of at least \
                 {step} elements; {free} bytes of VMEM are free"
            )));
        }
        // As few chunks as fit, of equal size (the padding of the last is under 2g elements).
        let k_chunks = n.div_ceil(fit);
        let e = n.div_ceil(k_chunks).div_ceil(step) * step;
        // The result slot holds whole chunks (the last one's padding is never read).
        let out = self.hbm_slot(k_chunks * e * w, &name)?;
        let bufs = [
            self.tmp(ty, vec![e as usize])?.addr,
            self.tmp(ty, vec![e as usize])?.addr,
        ];
        let ce = e / g;
        let lanes0 = self.lanes(bufs[0], ce, ty, true)?;
        let result = Val::Hbm(crate::io::Slot {
            addr: out,
            ty,
            dims,
        });
        let recs = self.ring_records(&groups, false);
        if !self.coll_begin(&recs)? {
            return Ok(result);
        }
        // Sems: the reduce-scatter lanes 0..=5, the all-gather lanes 6..=11, the reduced
        // blocks' copies 12.
        const COPY: u8 = 12;
        self.e.reserve(0..=COPY);
        let len = |k: u64| e.min(n - k * e);
        for k in 0..k_chunks.min(2) {
            let b = bufs[k as usize % 2];
            self.dma(
                (Space::Vmem, b),
                (Space::Hbm, x.addr + k * e * w),
                len(k) * w,
            )?;
        }
        // Chunk k's reduce-scatter steps together with chunk k−1's all-gather.
        let mut gather: Vec<Lane> = Vec::new();
        for k in 0..=k_chunks {
            let b = bufs[k as usize % 2];
            if (2..k_chunks).contains(&(k + 1)) {
                // The other buffer's chunk (k − 1) is reduced and copied out: the next comes in
                // during this step.
                let nb = bufs[(k as usize + 1) % 2];
                let src = x.addr + (k + 1) * e * w;
                self.dma((Space::Vmem, nb), (Space::Hbm, src), len(k + 1) * w)?;
            }
            let mut phase: Vec<(Lane, Option<Opcode>)> =
                gather.iter().map(|&l| (l, None)).collect();
            let scatter: Vec<Lane> = lanes0
                .iter()
                .map(|l| Lane {
                    base: l.base - bufs[0] + b,
                    ..*l
                })
                .collect();
            if k < k_chunks {
                // Chunk k is in VMEM.
                self.e.seq_read(isa::Access {
                    space: Space::Vmem,
                    start: b,
                    row_bytes: len(k) * w,
                    stride: len(k) * w,
                    rows: 1,
                });
                phase.extend(scatter.iter().map(|&l| (l, Some(op))));
            }
            self.ring_phase_mixed(&phase, g, t, w);
            if k == k_chunks {
                break;
            }
            // The chip's reduced block (chunk `pos` of each lane) to the result in HBM.
            let dst = out + k * e * w;
            self.ld_field(R_POS, F_POS);
            for l in &scatter {
                self.chunk_addr(0, g, l.stride, l.base, None);
                self.e.seq(Inst::SLi {
                    rd: R_PEER,
                    imm: dst as i64 - b as i64,
                });
                self.e.seq(Inst::SAdd {
                    rd: R_PEER,
                    ra: R_ADDR,
                    rb: R_PEER,
                });
                let desc = self.e.b.dma_desc(isa::DmaDesc {
                    len: (l.len * w) as u32,
                    dims: vec![],
                });
                self.e.seq(Inst::DmaCopy {
                    dst: MemRef {
                        space: Space::Hbm,
                        base: R_PEER,
                        off: 0,
                    },
                    src: MemRef {
                        space: Space::Vmem,
                        base: R_ADDR,
                        off: 0,
                    },
                    desc,
                    wait: None,
                    signal: Some(Sem(COPY)),
                });
            }
            self.wait(COPY, scatter.len() as u32);
            // Its all-gather runs between the chips' HBM, with the next chunk's reduce-scatter.
            gather = scatter
                .iter()
                .map(|l| Lane {
                    space: Space::Hbm,
                    base: l.base - b + dst,
                    sems: l.sems.map(|s| s + 6),
                    ..*l
                })
                .collect();
        }
        self.coll_end();
        Ok(result)
    }

    /// The single dimension of `dimensions={d}`.
    fn one_dim(&self, h: InstId) -> CResult<usize> {
        match self.comp().insts[h].attrs.dimensions.as_deref() {
            Some([d]) => Ok(*d as usize),
            _ => Err(self.unsupported(format!(
                "{} without exactly one dimension",
                self.comp().insts[h].opcode.name()
            ))),
        }
    }

    fn reduce_scatter(&mut self, h: InstId) -> CResult<Val> {
        let x = self.sole_operand(h, "reduce-scatter")?;
        let (ty, dims) = self.out_shape(h)?;
        let d = self.one_dim(h)?;
        let groups = self.groups(h)?;
        let g = groups[0].len();
        let t = self.vty(ty)?;
        let op = self.reducer(h, t)?;
        let w = ty.byte_size() as u64;
        let (a, dd, b) = split3(&x.dims, d);
        let dk = dd / g;
        // Blocks along d made contiguous: [g, A, Dk, B]; an asynchronous one's lives until
        // its done.
        let until = self.async_until.unwrap_or(self.pos);
        let stage = self.buf_until(until, ty, vec![g, a, dk, b])?;
        self.permute_into(&stage, &x.with_dims(vec![a, g, dk, b]), &[1, 0, 2, 3])?;
        let out = self.new_buf(h, ty, dims)?;
        let ce = (a * dk * b) as u64;
        if g == 1 {
            self.copy_into(&out, &stage.with_dims(out.dims.clone()))?;
            return Ok(Val::Array(out));
        }
        if let Some(tor) = self.torus_block_stages(&groups) {
            self.note(h, CollKind::ReduceScatter, &groups, g as u64 * ce * w, &tor);
            self.torus_run(
                h,
                &tor,
                stage.addr,
                g as u64 * ce,
                ty,
                Torus::ReduceScatter(op, &out),
            )?;
            return Ok(Val::Array(out));
        }
        self.note(h, CollKind::ReduceScatter, &groups, g as u64 * ce * w, &[]);
        let lanes = self.lanes(stage.addr, ce, ty, true)?;
        let recs = self.ring_records(&groups, false);
        if self.async_until.is_some() {
            self.ring_reduce_scatter_async(h, &recs, &lanes, &stage, &out, g as u64, op)?;
        } else if self.coll_begin(&recs)? {
            self.ring_phase(&lanes, g as u64, t, w, Some(op));
            // This chip's block: chunk `pos`.
            self.chunk_addr(0, g as u64, ce * w, stage.addr, None);
            let pieces = self.runtime_vpu(RtVpu::Store, out.addr, ce, t, w, 0);
            self.wait(0, pieces);
            self.coll_end();
        }
        Ok(Val::Array(out))
    }

    /// The one array operand of `h` (`what` of several operands is not supported yet).
    fn sole_operand(&self, h: InstId, what: &str) -> CResult<Buf> {
        let ops = &self.comp().insts[h].operands;
        if ops.len() != 1 {
            return Err(self.unsupported(format!("{what} of several operands")));
        }
        self.arr(ops[0])
    }

    /// Every member gets the operand of its group's first member: the root sends it to each
    /// other member (`g − 1` sends at once, sharing the root's links), the others receive.
    fn collective_broadcast(&mut self, h: InstId) -> CResult<Val> {
        let x = self.sole_operand(h, "collective-broadcast")?;
        let (ty, dims) = self.out_shape(h)?;
        let groups = self.groups(h)?;
        let g = groups[0].len();
        let t = self.vty(ty)?;
        let out = self.new_buf(h, ty, dims)?;
        self.note(h, CollKind::Broadcast, &groups, x.bytes(), &[]);
        let recs = self.ring_records(&groups, true);
        let tag = self.next_tag();
        if self.coll_begin(&recs)? {
            let (not_root, done) = (self.e.b.new_label(), self.e.b.new_label());
            self.e.b.emit_branch(
                Inst::Bne {
                    ra: R_POS,
                    rb: SReg(0),
                    target: isa::Target(0),
                },
                not_root,
            );
            // The root: send to members 1..g, keep its own operand.
            for k in 1..g {
                let m = self.e.memref(Space::Vmem, x.addr);
                self.post(true, F_MEMBERS + k, m, x.bytes(), tag, 0);
            }
            let mut pieces = 0;
            for (s, k) in chunks(out.elems()) {
                let off = s * ty.byte_size() as u64;
                let (dst, a) = (self.e.vaddr(out.addr + off), self.e.vaddr(x.addr + off));
                self.e.seq(Inst::VMov {
                    dst,
                    a,
                    n: k,
                    t,
                    pat: None,
                    wait: None,
                    signal: Some(Sem(1)),
                });
                pieces += 1;
            }
            self.wait(1, pieces);
            self.wait(0, g as u32 - 1);
            self.e.b.emit_branch(
                Inst::Jmp {
                    target: isa::Target(0),
                },
                done,
            );
            // Everyone else: receive from the root.
            self.e.b.bind(not_root);
            self.e.join();
            let m = self.e.memref(Space::Vmem, out.addr);
            self.post(false, F_MEMBERS, m, out.bytes(), tag, 0);
            self.wait(0, 1);
            self.e.b.bind(done);
            self.e.join();
            self.coll_end();
        }
        Ok(Val::Array(out))
    }

    fn all_gather(&mut self, h: InstId) -> CResult<Val> {
        let x = self.sole_operand(h, "all-gather")?;
        let (ty, dims) = self.result_shape(h)?;
        let d = self.one_dim(h)?;
        let groups = self.groups(h)?;
        let g = groups[0].len();
        let t = self.vty(ty)?;
        let w = ty.byte_size() as u64;
        let (a, dk, b) = split3(&x.dims, d);
        let ce = (a * dk * b) as u64;
        let direct = a == 1;
        let asynchronous = self.async_until.is_some() && g > 1;
        let stage = if direct {
            self.new_buf(h, ty, vec![g, a, dk, b])?
        } else {
            // Rearranged at the done when asynchronous: it lives until then.
            self.buf_until(self.async_until.unwrap_or(self.pos), ty, vec![g, a, dk, b])?
        };
        let before = self.async_pushes;
        if let Some(tor) = self.torus_block_stages(&groups) {
            self.note(h, CollKind::AllGather, &groups, g as u64 * ce * w, &tor);
            self.torus_run(h, &tor, stage.addr, g as u64 * ce, ty, Torus::AllGather(&x))?;
        } else {
            self.note(h, CollKind::AllGather, &groups, g as u64 * ce * w, &[]);
            let recs = self.ring_records(&groups, false);
            // Own block at position `pos`, then the all-gather ring.
            let lanes = self.lanes(stage.addr, ce, ty, false)?;
            if asynchronous {
                self.ring_all_gather_async(h, &recs, &lanes, &x, g as u64)?;
            } else if self.coll_begin(&recs)? {
                self.chunk_addr(0, g as u64, ce * w, stage.addr, None);
                let pieces = self.runtime_vpu(RtVpu::Load, x.addr, ce, t, w, 0);
                self.wait(0, pieces);
                if g > 1 {
                    self.ring_phase(&lanes, g as u64, t, w, None);
                }
                self.coll_end();
            }
        }
        if direct {
            return Ok(Val::Array(stage.with_dims(dims)));
        }
        let out = self.new_buf(h, ty, dims)?;
        let dst = out.with_dims(vec![a, g, dk, b]);
        if asynchronous {
            self.attach_post(before, dst, stage)?;
        } else {
            self.permute_into(&dst, &stage, &[1, 0, 2, 3])?;
        }
        Ok(Val::Array(out))
    }

    fn all_to_all(&mut self, h: InstId) -> CResult<Val> {
        let inst = &self.comp().insts[h];
        let ops = inst.operands.clone();
        let groups = self.groups(h)?;
        let g = groups[0].len();
        let recs = self.ring_records(&groups, true);
        let tag = self.next_tag();
        if inst.attrs.dimensions.is_none() {
            // Tuple form: operand j goes to member j; result j comes from member j.
            if ops.len() != g {
                return Err(CompileError::Invalid {
                    what: format!(
                        "%{}: tuple all-to-all has {} operands but its replica group has {g} \
                         members",
                        inst.name,
                        ops.len()
                    ),
                    span: self.span,
                });
            }
            let xs: Vec<Buf> = ops.iter().map(|&o| self.arr(o)).collect::<CResult<_>>()?;
            let outs: Vec<Buf> = xs
                .iter()
                .map(|x| self.new_buf(h, x.ty, x.dims.clone()))
                .collect::<CResult<_>>()?;
            let total: u64 = xs.iter().map(|x| x.bytes()).sum();
            self.note(h, CollKind::AllToAll, &groups, total, &[]);
            if self.async_until.is_some() {
                for x in &xs {
                    // The sends read the operands after the start.
                    self.extend_life(&Val::Array(x.clone()), h);
                }
                self.all_to_all_async(h, &recs, &outs, &xs, tag)?;
            } else if self.coll_begin(&recs)? {
                for (j, o) in outs.iter().enumerate() {
                    let m = self.e.memref(Space::Vmem, o.addr);
                    self.post(false, F_MEMBERS + j, m, o.bytes(), tag, 0);
                }
                for (j, x) in xs.iter().enumerate() {
                    let m = self.e.memref(Space::Vmem, x.addr);
                    self.post(true, F_MEMBERS + j, m, x.bytes(), tag, 0);
                }
                self.wait(0, 2 * g as u32);
                self.coll_end();
            }
            return Ok(Val::Tuple(outs.into_iter().map(Val::Array).collect()));
        }
        if ops.len() != 1 {
            return Err(self.unsupported("array all-to-all of several operands"));
        }
        let x = self.arr(ops[0])?;
        let (ty, dims) = self.out_shape(h)?;
        let d = self.one_dim(h)?;
        let (a, dd, b) = split3(&x.dims, d);
        let dk = dd / g;
        let blk = (a * dk * b) as u64 * ty.byte_size() as u64;
        let direct = a == 1;
        // An asynchronous one sends from `send` after the start and, unless direct, rearranges
        // `recv` at the done: both live until the done.
        let asynchronous = self.async_until.is_some();
        let send = if asynchronous {
            self.buf_until(self.async_until.unwrap_or(self.pos), ty, vec![g, a, dk, b])?
        } else {
            self.tmp(ty, vec![g, a, dk, b])?
        };
        self.permute_into(&send, &x.with_dims(vec![a, g, dk, b]), &[1, 0, 2, 3])?;
        let recv = if direct {
            self.new_buf(h, ty, vec![g, a, dk, b])?
        } else {
            self.buf_until(self.async_until.unwrap_or(self.pos), ty, vec![g, a, dk, b])?
        };
        let before = self.async_pushes;
        self.note(h, CollKind::AllToAll, &groups, g as u64 * blk, &[]);
        if asynchronous {
            let view = |b: &Buf, j: usize| Buf {
                addr: b.addr + j as u64 * blk,
                dims: vec![(blk / ty.byte_size() as u64) as usize],
                ..b.clone()
            };
            let outs: Vec<Buf> = (0..g).map(|j| view(&recv, j)).collect();
            let xs: Vec<Buf> = (0..g).map(|j| view(&send, j)).collect();
            self.all_to_all_async(h, &recs, &outs, &xs, tag)?;
        } else if self.coll_begin(&recs)? {
            for j in 0..g {
                let m = self.e.memref(Space::Vmem, recv.addr + j as u64 * blk);
                self.post(false, F_MEMBERS + j, m, blk, tag, 0);
            }
            for j in 0..g {
                let m = self.e.memref(Space::Vmem, send.addr + j as u64 * blk);
                self.post(true, F_MEMBERS + j, m, blk, tag, 0);
            }
            self.wait(0, 2 * g as u32);
            self.coll_end();
        }
        if direct {
            return Ok(Val::Array(recv.with_dims(dims)));
        }
        let out = self.new_buf(h, ty, dims)?;
        let dst = out.with_dims(vec![a, g, dk, b]);
        if asynchronous {
            self.attach_post(before, dst, recv)?;
        } else {
            self.permute_into(&dst, &recv, &[1, 0, 2, 3])?;
        }
        Ok(Val::Array(out))
    }

    fn collective_permute(&mut self, h: InstId) -> CResult<Val> {
        let inst = &self.comp().insts[h];
        if inst.operands.len() != 1 {
            return Err(self.unsupported("collective-permute with several operands"));
        }
        let pairs = inst.attrs.source_target_pairs.clone().unwrap_or_default();
        let pairs = device_pairs(inst, &pairs, self.devs).map_err(|e| CompileError::Invalid {
            what: format!("%{}: {e}", inst.name),
            span: self.span,
        })?;
        let x = self.arr(inst.operands[0])?;
        let (ty, dims) = self.result_shape(h)?;
        let out = self.new_buf(h, ty, dims)?;
        let tag = self.next_tag();
        // Every chip a source and a target: issued asynchronously at a start.
        let full = |side: fn(&(usize, usize)) -> usize| {
            let mut seen = vec![false; self.chips];
            pairs.iter().for_each(|p| seen[side(p)] = true);
            seen.iter().all(|&b| b)
        };
        if self.async_until.is_some() && full(|p| p.0) && full(|p| p.1) {
            self.permute_async(h, &pairs, &x, &out, tag)?;
            // The send reads the operand until the done.
            self.extend_life(&Val::Array(x.clone()), h);
            return Ok(Val::Tuple(vec![Val::Array(x), Val::Array(out)]));
        }
        if self.async_until.is_some() {
            self.permute_async_partial(h, &pairs, &x, &out, tag)?;
            self.extend_life(&Val::Array(x.clone()), h);
            return Ok(Val::Tuple(vec![Val::Array(x), Val::Array(out)]));
        }
        self.exchange(h, &pairs, Some(&x), Some(&out), tag)?;
        Ok(Val::Array(out))
    }

    /// One block of a permutation `pairs` (source → target): a chip that is a target receives
    /// into `recv` (a chip that is none gets zeros), a chip that is a source sends `send`; either
    /// side may be absent (split send/recv). Waits for both.
    /// Recorded as `h`'s collective-permute.
    pub(crate) fn exchange(
        &mut self,
        h: InstId,
        pairs: &[(usize, usize)],
        send: Option<&Buf>,
        recv: Option<&Buf>,
        tag: u32,
    ) -> CResult<()> {
        let as_groups: Vec<Vec<usize>> = pairs.iter().map(|&(s, d)| vec![s, d]).collect();
        let bytes = send.or(recv).map_or(0, |b| b.bytes());
        self.note(h, CollKind::Permute, &as_groups, bytes, &[]);
        // Record: [source or -1, target or -1].
        let mut recs = vec![vec![-1i64, -1]; self.chips];
        for &(s, d) in pairs {
            recs[d][0] = s as i64;
            recs[s][1] = d as i64;
        }
        if self.coll_begin(&recs)? {
            if let Some(out) = recv {
                let t = self.vty(out.ty)?;
                // Receive from the source, or zeros.
                let (no_src, src_done) = (self.e.b.new_label(), self.e.b.new_label());
                self.e.b.emit_branch(
                    Inst::Blt {
                        ra: R_POS,
                        rb: SReg(0),
                        target: isa::Target(0),
                    },
                    no_src,
                );
                let m = self.e.memref(Space::Vmem, out.addr);
                self.post(false, 0, m, out.bytes(), tag, 1);
                self.e.b.emit_branch(
                    Inst::Jmp {
                        target: isa::Target(0),
                    },
                    src_done,
                );
                self.e.b.bind(no_src);
                self.e.join();
                let mut pieces = 0;
                for (s, k) in chunks(out.elems()) {
                    let dst = self.e.vaddr(out.addr + s * out.ty.byte_size() as u64);
                    self.e.seq(Inst::VSplat {
                        dst,
                        src: SReg(0),
                        n: k,
                        t,
                        wait: None,
                        signal: Some(Sem(2)),
                    });
                    pieces += 1;
                }
                self.wait(2, pieces);
                self.e.b.bind(src_done);
                self.e.join();
            }
            if let Some(x) = send {
                // Send to the target, if any.
                let no_tgt = self.e.b.new_label();
                self.ld_field(R_PEER, 1);
                self.e.b.emit_branch(
                    Inst::Blt {
                        ra: R_PEER,
                        rb: SReg(0),
                        target: isa::Target(0),
                    },
                    no_tgt,
                );
                let m = self.e.memref(Space::Vmem, x.addr);
                self.post(true, 1, m, x.bytes(), tag, 0);
                self.wait(0, 1);
                self.e.b.bind(no_tgt);
                self.e.join();
            }
            if recv.is_some() {
                // The receive, if there was one.
                let no_wait = self.e.b.new_label();
                self.e.b.emit_branch(
                    Inst::Blt {
                        ra: R_POS,
                        rb: SReg(0),
                        target: isa::Target(0),
                    },
                    no_wait,
                );
                self.wait(1, 1);
                self.e.b.bind(no_wait);
                self.e.join();
            }
            self.coll_end();
        }
        Ok(())
    }
}

/// Asynchronous forms (module docs, "Asynchronous all-reduce").
impl Lowerer<'_> {
    /// A `*-start` (`all-reduce-start`, `all-gather-start`, `collective-permute-start`): the
    /// collective `lower`, issued without waiting for it where it can be (a flat ring, any
    /// permute); its `*-done` waits.
    fn async_start(
        &mut self,
        h: InstId,
        lower: fn(&mut Self, InstId) -> CResult<Val>,
    ) -> CResult<Val> {
        self.check_start(h)?;
        self.async_until = Some(self.last_use[h.index()]);
        let v = lower(self, h);
        self.async_until = None;
        v
    }

    /// A `*-done`: waits for its start's collective if that is still in flight; its value is
    /// the start's result (a permute start's value is `(operand, result)`).
    fn async_done(&mut self, h: InstId) -> CResult<Val> {
        let s = self.comp().insts[h].operands[0];
        // A tuple all-reduce runs one ring per element type.
        while let Some(k) = self.in_flight.iter().position(|f| f.start == s) {
            let mut f = self.in_flight.remove(k);
            self.complete(&mut f);
            if let Some((dst, src)) = f.post {
                self.permute_into(&dst, &src, &[1, 0, 2, 3])?;
            }
        }
        let v = match self.val(s)? {
            Val::Tuple(vs)
                if matches!(
                    self.comp().insts[h].opcode,
                    Opcode::CollectivePermuteDone | Opcode::AsyncDone
                ) =>
            {
                vs.get(1).cloned().ok_or_else(|| {
                    CompileError::Internal("a permute start without its result".into())
                })?
            }
            v => v,
        };
        self.extend_life(&v, h);
        Ok(v)
    }

    /// A start must have its done as its only user (one that is also read otherwise, e.g.
    /// through a `get-tuple-element` of its context, is refused).
    fn check_start(&self, h: InstId) -> CResult<()> {
        let c = self.comp();
        let users: Vec<&hlo::Instruction> = c
            .insts
            .values()
            .filter(|i| i.operands.contains(&h))
            .collect();
        match users[..] {
            [d] if d.opcode.name().ends_with("-done") => Ok(()),
            _ => Err(self.unsupported(format!(
                "{} whose value is used other than by its done",
                c.insts[h].opcode
            ))),
        }
    }

    /// The array result of `h`, or of its done if `h` is a start (whose shape is a tuple).
    fn result_shape(&self, h: InstId) -> CResult<(ElementType, Vec<usize>)> {
        let c = self.comp();
        if matches!(
            c.insts[h].opcode,
            Opcode::AllGatherStart | Opcode::CollectivePermuteStart
        ) && c.insts[h].shape.as_array().is_none()
        {
            let done = c
                .insts
                .iter()
                .find(|(_, i)| i.operands.first() == Some(&h) && i.opcode.name().ends_with("-done"))
                .map(|(d, _)| d)
                .ok_or_else(|| {
                    self.unsupported(format!("{} without its done", c.insts[h].opcode))
                })?;
            return self.out_shape(done);
        }
        self.out_shape(h)
    }

    /// A permutation in which every chip sends `x` to its target and receives `out` from its
    /// source, issued without waiting: both transfers signal one semaphore the done waits for.
    fn permute_async(
        &mut self,
        h: InstId,
        pairs: &[(usize, usize)],
        x: &Buf,
        out: &Buf,
        tag: u32,
    ) -> CResult<()> {
        let as_groups: Vec<Vec<usize>> = pairs.iter().map(|&(s, d)| vec![s, d]).collect();
        self.note(h, CollKind::Permute, &as_groups, x.bytes(), &[]);
        if self.opts.ici_analytic {
            return self.model_async(h);
        }
        let mut recs = vec![vec![-1i64, -1]; self.chips];
        for &(s, d) in pairs {
            recs[d][0] = s as i64;
            recs[s][1] = d as i64;
        }
        let Some(held) = self.hold_async(1) else {
            // No semaphore free: the synchronous block (which notes it again).
            self.stats.collectives.pop();
            return self.exchange(h, pairs, Some(x), Some(out), tag);
        };
        let done = held[0];
        self.e.seq_read(x.access());
        self.e.seq_write(out.access());
        self.load_record(&recs)?;
        let m = self.e.memref(Space::Vmem, out.addr);
        self.post_sync(false, 0, m, out.bytes(), tag, None, Some(done));
        let m = self.e.memref(Space::Vmem, x.addr);
        self.post_sync(true, 1, m, x.bytes(), tag, None, Some(done));
        self.push_in_flight(InFlight {
            start: h,
            waits: vec![(done, 2)],
            held,
            fanout: false,
            post: None,
        });
        Ok(())
    }

    /// A permutation in which some chips are no source or no target (a pipeline's shift),
    /// issued without waiting and without branches: every chip posts one receive and one
    /// send. The chips that are no target send zeros (a buffer the VPU fills at the start)
    /// to the chips that are no source (as many), whose results must be zeros: a chip that is
    /// neither to itself (no link), the others paired in chip order. Both transfers signal
    /// the semaphore the done waits for (`n = 2`). The zeros' transfers are not in the
    /// report's closed form.
    fn permute_async_partial(
        &mut self,
        h: InstId,
        pairs: &[(usize, usize)],
        x: &Buf,
        out: &Buf,
        tag: u32,
    ) -> CResult<()> {
        let n = self.chips;
        let (mut src, mut tgt) = (vec![None; n], vec![None; n]);
        for &(s, d) in pairs {
            tgt[s] = Some(d);
            src[d] = Some(s);
        }
        // Record: [receive from, send to, address sent from].
        let mut recs = vec![vec![-1i64, -1, x.addr as i64]; n];
        let (mut zero_to, mut zero_from) = (Vec::new(), Vec::new());
        for c in 0..n {
            match (src[c], tgt[c]) {
                (None, None) => {
                    zero_to.insert(0, c);
                    zero_from.insert(0, c);
                }
                (None, _) => zero_to.push(c),
                (_, None) => zero_from.push(c),
                _ => {}
            }
            recs[c][0] = src[c].map_or(-1, |s| s as i64);
            recs[c][1] = tgt[c].map_or(-1, |d| d as i64);
        }
        // Isolated chips first in both lists (paired with themselves), then the rest.
        let iso = zero_to
            .iter()
            .filter(|&&c| src[c].is_none() && tgt[c].is_none())
            .count();
        zero_to[..iso].sort_unstable();
        zero_from[..iso].sort_unstable();
        if zero_to.len() != zero_from.len() {
            return Err(CompileError::Internal(
                "a permutation's sides differ".into(),
            ));
        }
        let as_groups: Vec<Vec<usize>> = pairs.iter().map(|&(s, d)| vec![s, d]).collect();
        self.note(h, CollKind::Permute, &as_groups, x.bytes(), &[]);
        if self.opts.ici_analytic {
            return self.model_async(h);
        }
        let Some(held) = self.hold_async(2) else {
            // No semaphores free: the synchronous block (which notes it again).
            self.stats.collectives.pop();
            return self.exchange(h, pairs, Some(x), Some(out), tag);
        };
        let (done, zs) = (held[0], held[1]);
        let until = self.async_until.unwrap_or(self.pos);
        let zeros = self.buf_until(until, x.ty, x.dims.clone())?;
        for (&a, &b) in zero_to.iter().zip(&zero_from) {
            recs[a][0] = b as i64;
            recs[b][1] = a as i64;
            recs[b][2] = zeros.addr as i64;
        }
        let t = self.vty(x.ty)?;
        self.e.seq_write(zeros.access());
        let total = chunks(zeros.elems()).count();
        for (j, (s, k)) in chunks(zeros.elems()).enumerate() {
            let dst = self.e.vaddr(zeros.addr + s * x.ty.byte_size() as u64);
            self.e.seq(Inst::VSplat {
                dst,
                src: SReg(0),
                n: k,
                t,
                wait: None,
                signal: (j + 1 == total).then_some(Sem(zs)),
            });
        }
        self.e.seq_read(x.access());
        self.e.seq_write(out.access());
        self.load_record(&recs)?;
        let m = self.e.memref(Space::Vmem, out.addr);
        self.post_sync(false, 0, m, out.bytes(), tag, None, Some(done));
        self.ld_field(R_ADDR, 2);
        let m = MemRef {
            space: Space::Vmem,
            base: R_ADDR,
            off: 0,
        };
        self.post_sync(true, 1, m, x.bytes(), tag, Some(zs), Some(done));
        self.push_in_flight(InFlight {
            start: h,
            waits: vec![(done, 2)],
            held,
            fanout: false,
            post: None,
        });
        Ok(())
    }

    /// The bidirectional ring all-gather of `x` into the chunks of `lanes` (the gathered
    /// result), issued without waiting: per lane, the chip's own block (its half of chunk
    /// `pos`) is loaded on the VPU; all-gather step `s` receives into chunk `pos − s − 1`
    /// (nothing else touches it before) and sends chunk `pos − s`, waiting for the load (step
    /// 0) or for the previous receive. The sends and the last receive signal the completion
    /// semaphore the done waits for.
    fn ring_all_gather_async(
        &mut self,
        h: InstId,
        recs: &[Vec<i64>],
        lanes: &[Lane],
        x: &Buf,
        g: u64,
    ) -> CResult<()> {
        if self.opts.ici_analytic {
            return self.model_async(h);
        }
        let t = self.vty(x.ty)?;
        let w = x.ty.byte_size() as u64;
        let nl = lanes.len();
        let stage = lanes[0].base;
        let chunk = lanes[0].stride;
        let Some(held) = self.hold_async(2 * nl + 1) else {
            // No semaphores free: the synchronous block.
            if self.coll_begin(recs)? {
                self.chunk_addr(0, g, chunk, stage, None);
                let pieces = self.runtime_vpu(RtVpu::Load, x.addr, chunk / w, t, w, 0);
                self.wait(0, pieces);
                self.ring_phase(lanes, g, t, w, None);
                self.coll_end();
            }
            return Ok(());
        };
        self.e.seq_read(x.access());
        self.e.seq_write(isa::Access::vmem(stage, chunk * g));
        // The VPU reads the operand after the start: it lives until the done.
        self.extend_life(&Val::Array(x.clone()), h);
        self.load_record(recs)?;
        let done = held[2 * nl];
        for (i, lane) in lanes.iter().enumerate() {
            let kl = held[2 * i];
            let off = lane.base - stage;
            self.chunk_addr(0, g, lane.stride, lane.base, None);
            self.runtime_vpu_with(RtVpu::Load, x.addr + off, lane.len, t, w, |_, last| {
                (None, last.then_some(kl))
            });
        }
        self.async_gather_steps(lanes, g, w, done, &|i| (None, held[2 * i], held[2 * i + 1]));
        self.push_in_flight(InFlight {
            start: h,
            waits: vec![(done, nl as u32 * g as u32)],
            held,
            fanout: false,
            post: None,
        });
        Ok(())
    }

    /// The all-gather steps of an asynchronous ring over `lanes`, issued without waiting:
    /// `sems(i)` gives lane `i`'s `(receive gate, first send's gate, step semaphore)`. Step
    /// `s` receives chunk `k + 1` (signalling the step semaphore, or `done` after the last
    /// step) and sends chunk `k` once its gate is signalled (the first step's own block, then
    /// the previous step's receive); every send signals `done`.
    fn async_gather_steps(
        &mut self,
        lanes: &[Lane],
        g: u64,
        w: u64,
        done: u8,
        sems: &dyn Fn(usize) -> (Option<u8>, u8, u8),
    ) {
        self.async_gather_steps_deferred(lanes, g, w, done, sems, false)
    }

    /// [`Self::async_gather_steps`]; `defer`: each step's commands (with the record reloaded)
    /// are a deferred group of the emitter, emitted between the MXU instructions of a dot
    /// lowered next or before anything else ([`super::emit::Emitter::flush_deferred`]).
    fn async_gather_steps_deferred(
        &mut self,
        lanes: &[Lane],
        g: u64,
        w: u64,
        done: u8,
        sems: &dyn Fn(usize) -> (Option<u8>, u8, u8),
        defer: bool,
    ) {
        let steps = g as i64 - 1;
        let at = |space| MemRef {
            space,
            base: R_ADDR,
            off: 0,
        };
        let hlo = self.e.b.current_hlo().unwrap_or("").to_string();
        for s in 0..steps {
            if defer {
                self.e.begin_capture();
                self.reload_record(lanes[0].f.pos);
            }
            let k = |lane: &Lane, d: i64| if lane.fwd { -(s + d) } else { s + d };
            for (i, lane) in lanes.iter().enumerate() {
                let (recv_gate, first, kg) = sems(i);
                let (from, to) = if lane.fwd {
                    (lane.f.prev, lane.f.next)
                } else {
                    (lane.f.next, lane.f.prev)
                };
                let sig = if s + 1 < steps { kg } else { done };
                self.chunk_addr(k(lane, 1), g, lane.stride, lane.base, lane.f.seg);
                let dst = at(lane.space);
                let len = lane.len * w;
                self.post_sync(false, from, dst, len, lane.tag, recv_gate, Some(sig));
                let gate = if s == 0 { first } else { kg };
                self.chunk_addr(k(lane, 0), g, lane.stride, lane.base, lane.f.seg);
                let src = at(lane.space);
                self.post_sync(true, to, src, len, lane.tag, Some(gate), Some(done));
            }
            if defer {
                self.e.end_capture(&hlo);
            }
        }
    }

    /// Waits for every asynchronous collective in flight: before a synchronous collective,
    /// before a `while`/`conditional` whose body talks to other chips, and before the outputs
    /// are stored.
    pub(crate) fn drain_async(&mut self) {
        self.drain_async_from(0);
    }

    /// Completes the collectives in flight from the `base`-th on (those a loop body or branch
    /// started: the ones before it started outside and complete at their own done, never in
    /// code that runs once per iteration or on one branch only).
    pub(crate) fn drain_async_from(&mut self, base: usize) {
        let base = base.min(self.in_flight.len());
        let mut mine = self.in_flight.split_off(base);
        for f in &mut mine {
            self.complete(f);
        }
        // What still has its blocks to rearrange does that at its done.
        mine.retain(|f| f.post.is_some());
        self.in_flight.extend(mine);
    }

    /// The sequencer waits for `f`'s completion semaphores; its semaphores return to the pool
    /// (`f` then waits for nothing and holds nothing).
    fn complete(&mut self, f: &mut InFlight) {
        // Its deferred commands are issued before the sequencer waits for them.
        self.e.flush_deferred();
        for (sem, n) in std::mem::take(&mut f.waits) {
            self.wait(sem, n);
        }
        self.e.give_back(&std::mem::take(&mut f.held));
        if std::mem::take(&mut f.fanout) && !self.in_flight.iter().any(|g| g.fanout) {
            self.e.give_back(&FANOUT_SEMS);
        }
    }

    /// Hands `post` (module docs of [`InFlight::post`]) to the asynchronous collective just
    /// pushed (`before`: the held semaphores of the last entry before it), or, when the
    /// collective ran synchronously, rearranges the blocks now.
    fn attach_post(&mut self, before: u64, dst: Buf, src: Buf) -> CResult<()> {
        if let Some(f) = self.pushed_since(before) {
            f.post = Some((dst, src));
            return Ok(());
        }
        self.permute_into(&dst, &src, &[1, 0, 2, 3])
    }

    /// Enters `f` in flight.
    fn push_in_flight(&mut self, f: InFlight) {
        self.async_pushes += 1;
        self.in_flight.push(f);
    }

    /// The collective entered in flight since [`Lowerer::async_pushes`] was `before` (at most
    /// one was: the last), if any. Comparing the entries themselves cannot tell: completing
    /// the last one to free semaphores can hand the same ones to the next.
    fn pushed_since(&mut self, before: u64) -> Option<&mut InFlight> {
        if self.async_pushes == before {
            return None;
        }
        self.in_flight.last_mut()
    }

    /// `n` semaphores for an asynchronous collective issued while others may be in flight
    /// (each holds its own semaphores, registers are only used while issuing, buffers live
    /// until each one's done, and the commands of all of them queue in program order on the
    /// ICI and the VPU, so they can be in flight together): when too few are free, the
    /// collectives in flight complete, oldest first, until enough are. `None` if even then too
    /// few are free.
    fn hold_async(&mut self, n: usize) -> Option<Vec<u8>> {
        self.hold_async_counted(n, &[]).map(|(s, _)| s)
    }

    /// [`Self::hold_async`] of `n` semaphores and one counted semaphore per entry of `counts`
    /// ([`super::emit::Emitter::hold_counted`]).
    fn hold_async_counted(&mut self, n: usize, counts: &[u32]) -> Option<(Vec<u8>, Vec<u8>)> {
        // A collective deferred part of its commands (another ring of a tuple all-reduce):
        // they go first, so each collective's commands keep their order on the ICI queue.
        self.e.flush_deferred();
        loop {
            if let Some(s) = self.e.hold(n) {
                match self.e.hold_counted(counts) {
                    Some(c) => return Some((s, c)),
                    None => self.e.give_back(&s),
                }
            }
            // The oldest that still waits for something.
            let k = self.in_flight.iter().position(|f| !f.held.is_empty())?;
            let mut f = self.in_flight.remove(k);
            self.complete(&mut f);
            if f.post.is_some() {
                self.in_flight.insert(k, f);
            }
        }
    }

    /// The analytic backend's asynchronous collective: the `ici.model` of the last noted
    /// collective signals a held semaphore that the done waits for (no fences).
    fn model_async(&mut self, h: InstId) -> CResult<()> {
        let Some(held) = self.hold_async(1) else {
            return self.model_last();
        };
        let mut cycles = self.model_cycles()?;
        let mut n = 0;
        while cycles > 0 {
            let k = cycles.min(u32::MAX as u64);
            self.e.seq(Inst::IciModel {
                cycles: k as u32,
                wait: None,
                signal: Some(Sem(held[0])),
            });
            n += 1;
            cycles -= k;
        }
        self.push_in_flight(InFlight {
            start: h,
            waits: vec![(held[0], n)],
            held,
            fanout: false,
            post: None,
        });
        Ok(())
    }

    /// An `async-start` wrapping one reduce-scatter of its operand or one all-to-all (kept by
    /// [`crate::passes::sync_async::wraps_lowered_async`]): the wrapped collective is
    /// lowered in place of the start, with the wrapped computation's instructions in view
    /// (its parameter bound to the operand; every value it makes lives until the done), and
    /// issued like an all-reduce start ([`Self::ring_reduce_scatter_async`] on a flat ring,
    /// [`Self::all_to_all_async`] for an all-to-all that needs no rearranging after its
    /// transfers; a reduce-scatter in torus stages by [`Self::torus_async`]; the other all-to-alls run synchronously at the start). Its value is `((operand), result,
    /// context)`; the `async-done` waits and takes the result.
    fn async_wrapped(&mut self, h: InstId) -> CResult<Val> {
        let inst = &self.comp().insts[h];
        if !crate::passes::sync_async::wraps_lowered_async(self.m, inst) {
            return Err(self.unsupported(
                "an async-start of anything but one all-reduce, all-gather, collective-permute, \
                 reduce-scatter or all-to-all of its parameters",
            ));
        }
        self.check_start(h)?;
        let callee = inst.attrs.calls.expect("checked");
        let wc = &self.m.comps[callee];
        let until = self.last_use[h.index()];
        let args: Vec<Val> = inst
            .operands
            .iter()
            .map(|&o| self.val(o))
            .collect::<CResult<_>>()?;
        let vals = std::mem::replace(&mut self.vals, vec![None; wc.insts.len()]);
        let last_use = std::mem::replace(&mut self.last_use, vec![until; wc.insts.len()]);
        let comp = std::mem::replace(&mut self.comp, callee);
        for (p, a) in wc.parameters().iter().zip(&args) {
            self.vals[p.index()] = Some(a.clone());
        }
        let before = self.async_pushes;
        let notes = self.stats.collectives.len();
        let name = inst.name.clone();
        self.async_until = Some(until);
        let r = match wc.insts[wc.root].opcode {
            Opcode::AllToAll => self.all_to_all(wc.root),
            _ => self.reduce_scatter(wc.root),
        };
        self.async_until = None;
        self.vals = vals;
        self.last_use = last_use;
        self.comp = comp;
        // The report measures it by the start, whose instructions these are.
        if let Some(c) = self.stats.collectives.get_mut(notes) {
            c.hlo = name;
        }
        // The done finds its collective by the start (at most one was pushed, last).
        if let Some(f) = self.pushed_since(before) {
            f.start = h;
        }
        Ok(Val::Tuple(vec![Val::Tuple(args), r?, Val::Token]))
    }

    /// An all-to-all issued without waiting: member `j`'s block of `outs[j]` received from it
    /// and `xs[j]` sent to it, every transfer signalling the completion semaphore the done
    /// waits for (`2g`).
    fn all_to_all_async(
        &mut self,
        h: InstId,
        recs: &[Vec<i64>],
        outs: &[Buf],
        xs: &[Buf],
        tag: u32,
    ) -> CResult<()> {
        if self.opts.ici_analytic {
            return self.model_async(h);
        }
        let Some(held) = self.hold_async(1) else {
            // No semaphore free: the synchronous block.
            if self.coll_begin(recs)? {
                for (j, o) in outs.iter().enumerate() {
                    let m = self.e.memref(Space::Vmem, o.addr);
                    self.post(false, F_MEMBERS + j, m, o.bytes(), tag, 0);
                }
                for (j, x) in xs.iter().enumerate() {
                    let m = self.e.memref(Space::Vmem, x.addr);
                    self.post(true, F_MEMBERS + j, m, x.bytes(), tag, 0);
                }
                self.wait(0, 2 * outs.len() as u32);
                self.coll_end();
            }
            return Ok(());
        };
        let done = held[0];
        for o in outs {
            self.e.seq_write(o.access());
        }
        for x in xs {
            self.e.seq_read(x.access());
        }
        self.load_record(recs)?;
        for (j, o) in outs.iter().enumerate() {
            let m = self.e.memref(Space::Vmem, o.addr);
            self.post_sync(false, F_MEMBERS + j, m, o.bytes(), tag, None, Some(done));
        }
        for (j, x) in xs.iter().enumerate() {
            let m = self.e.memref(Space::Vmem, x.addr);
            self.post_sync(true, F_MEMBERS + j, m, x.bytes(), tag, None, Some(done));
        }
        self.push_in_flight(InFlight {
            start: h,
            waits: vec![(done, (outs.len() + xs.len()) as u32)],
            held,
            fanout: false,
            post: None,
        });
        Ok(())
    }

    /// The bidirectional ring reduce-scatter of `lanes` over `stage` (the operand's blocks
    /// made contiguous) into `out`, issued without waiting: the reduce-scatter steps of
    /// [`Self::ring_all_reduce_async`] (each step's receive and send gated by the previous
    /// combine, a fan-out semaphore; the combine by its receive), then the chip's block
    /// stored to `out` on the VPU (after the last combines in the VPU's order). The sends and
    /// the store's last piece signal the completion semaphore the done waits for.
    #[allow(clippy::too_many_arguments)]
    fn ring_reduce_scatter_async(
        &mut self,
        h: InstId,
        recs: &[Vec<i64>],
        lanes: &[Lane],
        stage: &Buf,
        out: &Buf,
        g: u64,
        op: Opcode,
    ) -> CResult<()> {
        let t = self.vty(stage.ty)?;
        let w = stage.ty.byte_size() as u64;
        if self.opts.ici_analytic {
            return self.model_async(h);
        }
        let nl = lanes.len();
        let ce = lanes[0].stride / w;
        let held = match self.hold_async(nl + 1) {
            Some(s) if nl <= FANOUT_SEMS.len() => s,
            other => {
                // Not enough semaphores free: the synchronous block.
                if let Some(s) = other {
                    self.e.give_back(&s);
                }
                if self.coll_begin(recs)? {
                    self.ring_phase(lanes, g, t, w, Some(op));
                    self.chunk_addr(0, g, ce * w, stage.addr, None);
                    let pieces = self.runtime_vpu(RtVpu::Store, out.addr, ce, t, w, 0);
                    self.wait(0, pieces);
                    self.coll_end();
                }
                return Ok(());
            }
        };
        // Shared with the all-reduces in flight (see `ring_all_reduce_async`).
        self.take_fanout(lanes.len());
        self.e.seq_write(stage.access());
        self.e.seq_write(out.access());
        for l in lanes {
            self.e.seq_write(isa::Access::vmem(l.tmp, l.len * w));
        }
        self.load_record(recs)?;
        let done = held[nl];
        let steps = g as i64 - 1;
        let at = |space| MemRef {
            space,
            base: R_ADDR,
            off: 0,
        };
        for s in 0..steps {
            let k = |lane: &Lane, d: i64| if lane.fwd { -(s + d) } else { s + d };
            for (i, lane) in lanes.iter().enumerate() {
                let gate = (s > 0).then_some(FANOUT_SEMS[i]);
                let (from, to) = if lane.fwd {
                    (lane.f.prev, lane.f.next)
                } else {
                    (lane.f.next, lane.f.prev)
                };
                let dst = self.e.memref(Space::Vmem, lane.tmp);
                self.post_sync(
                    false,
                    from,
                    dst,
                    lane.len * w,
                    lane.tag,
                    gate,
                    Some(held[i]),
                );
                self.chunk_addr(k(lane, 1), g, lane.stride, lane.base, lane.f.seg);
                let src = at(lane.space);
                self.post_sync(true, to, src, lane.len * w, lane.tag, gate, Some(done));
            }
            for (i, lane) in lanes.iter().enumerate() {
                // The last step's combine signals nothing: the store follows it on the VPU.
                let sig = (s + 1 < steps).then_some(FANOUT_SEMS[i]);
                self.chunk_addr(k(lane, 2), g, lane.stride, lane.base, lane.f.seg);
                self.runtime_vpu_with(RtVpu::Combine(op), lane.tmp, lane.len, t, w, |j, last| {
                    ((j == 0).then_some(held[i]), if last { sig } else { None })
                });
            }
        }
        // This chip's block: chunk `pos`.
        self.chunk_addr(0, g, ce * w, stage.addr, None);
        self.runtime_vpu_with(RtVpu::Store, out.addr, ce, t, w, |_, last| {
            (None, last.then_some(done))
        });
        self.push_in_flight(InFlight {
            start: h,
            waits: vec![(done, nl as u32 * steps as u32 + 1)],
            held,
            fanout: true,
            post: None,
        });
        Ok(())
    }

    /// The bidirectional ring all-reduce of `lanes` over `work`, issued into the unit queues
    /// with the ordering on the units' own `wait=`/`signal=` (the sequencer never waits for
    /// it): per lane, reduce-scatter step `s` posts the receive into the scratch buffer and
    /// the send of the chunk combined at step `s − 1` (both gated by that combine), and its
    /// VPU combine waits for the receive; all-gather step `s` posts the receive into the chunk
    /// the reduce-scatter's step `s` sent (gated by that send's completion) and the send of
    /// the chunk received at step `s − 1` (or, at step 0, of the fully reduced chunk). Every
    /// all-gather send and the last receive signal one completion semaphore that the done
    /// waits for. Semaphores per lane: the combine's fan-out to the next step's receive and
    /// send (a fan-out semaphore declared `signal=2`), the last combine, receive, send,
    /// all-gather receive; plus the shared completion semaphore.
    fn ring_all_reduce_async(
        &mut self,
        h: InstId,
        recs: &[Vec<i64>],
        lanes: &[Lane],
        work: &Buf,
        g: u64,
        op: Opcode,
    ) -> CResult<()> {
        let t = self.vty(work.ty)?;
        let w = work.ty.byte_size() as u64;
        if self.opts.ici_analytic {
            return self.model_async(h);
        }
        let nl = lanes.len();
        let held = match self.hold_async(4 * nl + 1) {
            Some(s) if nl <= FANOUT_SEMS.len() => s,
            other => {
                // Not enough semaphores free: the synchronous block.
                if let Some(s) = other {
                    self.e.give_back(&s);
                }
                if self.coll_begin(recs)? {
                    self.ring_phase(lanes, g, t, w, Some(op));
                    self.ring_phase(lanes, g, t, w, None);
                    self.coll_end();
                }
                return Ok(());
            }
        };
        // The fan-out semaphores are shared by every all-reduce in flight: their combines
        // queue in program order on the VPU and their transfers on the ICI, whose front end
        // starts its commands in order, so a later all-reduce's first combine signals only
        // after every wait of the earlier ones' steps has taken its signal (each all-reduce
        // leaves them at 0).
        self.take_fanout(lanes.len());
        // What was issued before and touches the collective's memory completes first.
        self.e
            .seq_write(work.with_dims(vec![work.elems() as usize]).access());
        for l in lanes {
            self.e.seq_write(isa::Access::vmem(l.tmp, l.len * w));
        }
        self.load_record(recs)?;
        let done = held[4 * nl];
        // Per lane: (combine fan-out, last combine, receive, send, all-gather receive).
        let sem = |i: usize| {
            (
                FANOUT_SEMS[i],
                held[4 * i],
                held[4 * i + 1],
                held[4 * i + 2],
                held[4 * i + 3],
            )
        };
        let steps = g as i64 - 1;
        let at = |space| MemRef {
            space,
            base: R_ADDR,
            off: 0,
        };
        // Reduce-scatter.
        for s in 0..steps {
            let k = |lane: &Lane, d: i64| if lane.fwd { -(s + d) } else { s + d };
            for (i, lane) in lanes.iter().enumerate() {
                let (kc, _, kr, ks, _) = sem(i);
                let gate = (s > 0).then_some(kc);
                let (from, to) = if lane.fwd {
                    (lane.f.prev, lane.f.next)
                } else {
                    (lane.f.next, lane.f.prev)
                };
                let dst = self.e.memref(Space::Vmem, lane.tmp);
                self.post_sync(false, from, dst, lane.len * w, lane.tag, gate, Some(kr));
                self.chunk_addr(k(lane, 1), g, lane.stride, lane.base, lane.f.seg);
                let src = at(lane.space);
                self.post_sync(true, to, src, lane.len * w, lane.tag, gate, Some(ks));
            }
            for (i, lane) in lanes.iter().enumerate() {
                let (kc, kc1, kr, _, _) = sem(i);
                let sig = if s + 1 < steps { kc } else { kc1 };
                self.chunk_addr(k(lane, 2), g, lane.stride, lane.base, lane.f.seg);
                self.runtime_vpu_with(RtVpu::Combine(op), lane.tmp, lane.len, t, w, |j, last| {
                    ((j == 0).then_some(kr), last.then_some(sig))
                });
            }
        }
        // All-gather: where the ring's commands are more than the ICI queue holds, its steps
        // are deferred (emitted between the MXU instructions of a dot lowered next), so the
        // sequencer does not stall on the full queue before it issues that dot.
        let defer = 4 * nl * steps as usize > self.arch.sequencer.queue_depth as usize;
        self.async_gather_steps_deferred(
            lanes,
            g,
            w,
            done,
            &|i| {
                let (_, kc1, _, ks, kg) = sem(i);
                (Some(ks), kc1, kg)
            },
            defer,
        );
        self.push_in_flight(InFlight {
            start: h,
            waits: vec![(done, nl as u32 * g as u32)],
            held,
            fanout: true,
            post: None,
        });
        Ok(())
    }

    /// A torus collective ([`Self::torus_run`]) issued without waiting, its stages ordered on
    /// the units' own semaphores like the flat ring's ([`Self::ring_all_reduce_async`]); two
    /// lanes per stage. Within a stage, the flat ring's order: a reduce-scatter step's
    /// receive and send wait for the lane's previous combine (a fan-out semaphore), its
    /// combine for its receive; an all-gather step's send for the lane's previous receive, its
    /// receive (all-reduce) for the reduce-scatter send of the chunk it overwrites. Between
    /// stages, the next stage's first sends (both lanes) read the segment the whole previous
    /// stage wrote:
    /// * after a reduce-scatter stage (or the all-gather's load of the chip's block), its last
    ///   VPU instruction (the second lane's last combine, after the first lane's on the
    ///   in-order VPU) signals the second fan-out semaphore (`signal=2`), one count for each
    ///   lane's first send. The next reduce-scatter stage posts its first sends before its
    ///   first receives, so no receive of a stage signals the lanes' receive semaphores (shared
    ///   by the stages) before the previous stage's combines have taken theirs;
    /// * after an all-gather stage, whose receives complete in any order: its sends and its
    ///   last receives (`2g`) signal a counted semaphore (`wait=2g`, [`super::emit::Emitter::hold_counted`]),
    ///   and a one-cycle `ici.model` at the head of the next stage's commands waits for it and
    ///   signals the second fan-out semaphore for the two first sends (a relay on the ICI
    ///   queue, in order: every command of the next stage starts after it).
    ///
    /// The last all-gather stage's sends and last receives (a reduce-scatter: every send and
    /// the store of the chip's block) signal the completion semaphore the done waits for;
    /// every other command's completion is ordered before one of those.
    #[allow(clippy::too_many_arguments)]
    fn torus_async(
        &mut self,
        h: InstId,
        recs: &[Vec<i64>],
        stages: &[Vec<Lane>],
        ext: &[u64],
        base: u64,
        block: u64,
        ty: ElementType,
        what: Torus<'_>,
    ) -> CResult<()> {
        if self.opts.ici_analytic {
            return self.model_async(h);
        }
        let t = self.vty(ty)?;
        let w = ty.byte_size() as u64;
        let n = stages.len();
        let nl = FANOUT_SEMS.len();
        let total: u64 = ext.iter().product::<u64>() * block;
        let combine = match what {
            Torus::AllReduce(op) | Torus::ReduceScatter(op, _) => Some(op),
            Torus::AllGather(_) => None,
        };
        let gather = !matches!(what, Torus::ReduceScatter(..));
        let reduce = matches!(what, Torus::AllReduce(_));
        // Held: the completion semaphore; per lane the reduce-scatter receives' and the
        // all-gather receives' (each shared by the stages); per stage and lane the
        // reduce-scatter sends' (all-reduce: an all-gather receive waits for the send of its
        // chunk, stages apart). Counted: one per all-gather stage size that ends before another.
        let n_rs = if combine.is_some() { nl } else { 0 };
        let n_ag = if gather { nl } else { 0 };
        let n_ks = if reduce { nl * n } else { 0 };
        let mut counts: Vec<u32> = Vec::new();
        if gather {
            for &g in &ext[1..] {
                let k = (nl as u64 * g) as u32;
                if !counts.contains(&k) {
                    counts.push(k);
                }
            }
        }
        let Some((held, counted)) = self.hold_async_counted(1 + n_rs + n_ag + n_ks, &counts) else {
            // Too few semaphores free: the synchronous block.
            return self.torus_sync(recs, stages, ext, base, block, ty, what);
        };
        self.take_fanout(nl);
        let region = isa::Access::vmem(base, total * w);
        match what {
            Torus::AllGather(own) => {
                self.e.seq_read(own.access());
                // The VPU reads the operand after the start: it lives until the done.
                self.extend_life(&Val::Array(own.clone()), h);
            }
            Torus::ReduceScatter(_, out) => self.e.seq_write(out.access()),
            Torus::AllReduce(_) => {}
        }
        self.e.seq_write(region);
        for l in stages.iter().flatten().filter(|_| combine.is_some()) {
            self.e.seq_write(isa::Access::vmem(l.tmp, l.len * w));
        }
        self.load_record(recs)?;
        let done = held[0];
        let kr = |i: usize| held[1 + i];
        let kg = |i: usize| held[1 + n_rs + i];
        let ks = |k: usize, i: usize| held[1 + n_rs + n_ag + nl * k + i];
        let boundary = |g: u64| {
            let k = (nl as u64 * g) as u32;
            counted[counts.iter().position(|&c| c == k).expect("held per size")]
        };
        let relay = FANOUT_SEMS[nl - 1];
        let at = |space| MemRef {
            space,
            base: R_ADDR,
            off: 0,
        };
        let last_field = 4 * n;
        // What the next stage's first sends wait for.
        let mut gate: Option<u8> = None;
        let mut done_count = 0u32;
        if let Torus::AllGather(own) = what {
            self.block_addr(last_field, base);
            self.runtime_vpu_with(RtVpu::Load, own.addr, block, t, w, |_, last| {
                (None, last.then_some(relay))
            });
            gate = Some(relay);
        }
        if let Some(op) = combine {
            for (k, lanes) in stages.iter().enumerate() {
                let g = ext[k];
                let steps = g as i64 - 1;
                // The next stage's (or the all-gather's) first sends wait for this stage's
                // last combine; a reduce-scatter's last store follows it on the VPU.
                let hand_on = k + 1 < n || gather;
                self.ld_field(R_POS, lanes[0].f.pos);
                for s in 0..steps {
                    let kk = |lane: &Lane, d: i64| if lane.fwd { -(s + d) } else { s + d };
                    let sends_first = s == 0 && gate.is_some();
                    for (i, lane) in lanes.iter().enumerate() {
                        let (from, to) = if lane.fwd {
                            (lane.f.prev, lane.f.next)
                        } else {
                            (lane.f.next, lane.f.prev)
                        };
                        let (rgate, sgate) = if s > 0 {
                            (Some(FANOUT_SEMS[i]), Some(FANOUT_SEMS[i]))
                        } else {
                            (None, gate)
                        };
                        let ssig = if reduce { ks(k, i) } else { done };
                        let len = lane.len * w;
                        let dst = self.e.memref(Space::Vmem, lane.tmp);
                        if !sends_first {
                            self.post_sync(false, from, dst, len, lane.tag, rgate, Some(kr(i)));
                        }
                        self.chunk_addr(kk(lane, 1), g, lane.stride, lane.base, lane.f.seg);
                        self.post_sync(true, to, at(lane.space), len, lane.tag, sgate, Some(ssig));
                        if sends_first {
                            self.post_sync(false, from, dst, len, lane.tag, rgate, Some(kr(i)));
                        }
                    }
                    if !reduce {
                        done_count += nl as u32;
                    }
                    for (i, lane) in lanes.iter().enumerate() {
                        let sig = if s + 1 < steps {
                            Some(FANOUT_SEMS[i])
                        } else if i + 1 == nl && hand_on {
                            Some(relay)
                        } else {
                            None
                        };
                        self.chunk_addr(kk(lane, 2), g, lane.stride, lane.base, lane.f.seg);
                        let kri = kr(i);
                        self.runtime_vpu_with(
                            RtVpu::Combine(op),
                            lane.tmp,
                            lane.len,
                            t,
                            w,
                            |j, last| ((j == 0).then_some(kri), if last { sig } else { None }),
                        );
                    }
                }
                gate = Some(relay);
            }
        }
        if let Torus::ReduceScatter(_, out) = what {
            self.block_addr(last_field, base);
            self.runtime_vpu_with(RtVpu::Store, out.addr, block, t, w, |_, last| {
                (None, last.then_some(done))
            });
            done_count += 1;
        }
        if gather {
            // An all-reduce whose commands are more than the ICI queue holds defers its
            // all-gather stages (as the flat ring's, `ring_all_reduce_async`).
            let per_ring: usize = ext.iter().map(|&g| 2 * nl * (g as usize - 1)).sum();
            let defer = reduce && 2 * per_ring > self.arch.sequencer.queue_depth as usize;
            let hlo = self.e.b.current_hlo().unwrap_or("").to_string();
            for (k, lanes) in stages.iter().enumerate().rev() {
                if k + 1 < n {
                    // The relay: after every command of the stage before.
                    if defer {
                        self.e.begin_capture();
                    }
                    self.e.seq(Inst::IciModel {
                        cycles: 1,
                        wait: Some(Sem(boundary(ext[k + 1]))),
                        signal: Some(Sem(relay)),
                    });
                    if defer {
                        self.e.end_capture(&hlo);
                    }
                }
                let end = if k == 0 { done } else { boundary(ext[k]) };
                if !defer {
                    self.ld_field(R_POS, lanes[0].f.pos);
                }
                let first = gate.expect("the all-gather's first sends have a gate");
                self.async_gather_steps_deferred(
                    lanes,
                    ext[k],
                    w,
                    end,
                    &|i| (reduce.then(|| ks(k, i)), first, kg(i)),
                    defer,
                );
                gate = Some(relay);
            }
            done_count = nl as u32 * ext[0] as u32;
        }
        let mut all = held;
        all.extend(counted);
        self.push_in_flight(InFlight {
            start: h,
            waits: vec![(done, done_count)],
            held: all,
            fanout: true,
            post: None,
        });
        Ok(())
    }
}
