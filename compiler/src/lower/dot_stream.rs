//! `dot` streamed from HBM on every core of the chip.
//!
//! Taken when both operands are entry parameters (so they are in HBM from the start), already
//! in canonical form (`lhs[B][M][K]`, `rhs[B][K][N]`), of a native MXU type (bf16 × bf16 → f32,
//! s8 × s8 → s32), and the result is only used as (part of) the module's result: then no core
//! waits for another, the result is written straight to its HBM output slot, and the work can
//! be split across cores without cross-core synchronization.
//!
//! Tiling (per core): the result is cut into tiles of `Mc × Nc` (`Mc` = half the accumulator
//! rows, `Nc` = `mxu.count × mxu.cols`); tiles go to cores round-robin. A tile is computed in
//! `K` steps of `Kb = mxu.rows`: a strided DMA brings the `Mc × Kb` block of `lhs` and the
//! `Kb × Nc` block of `rhs` into VMEM (triple-buffered: the DMA of step `s+1` is issued before
//! the matmuls of step `s`, into a buffer last read at step `s-2`), then each MXU loads its
//! `Kb × cols` slice of weights and streams the `Mc` rows through it, accumulating in its half
//! of the accumulators. The tile's accumulators go to VMEM with `mxu.st` and to HBM with one
//! strided DMA, emitted two steps into the next tile so the sequencer never waits on a store
//! while the MXUs have nothing queued; accumulator halves alternate between tiles.

use super::dot::{emit_op, MxuOp};
use super::Lowerer;
use crate::error::CResult;
use arch::MxuDtype;
use isa::Space;

/// Where a streamed dot's operands and result live, and its shape.
#[derive(Clone, Debug)]
pub struct StreamDot {
    /// HLO instruction name (symbol of the emitted code).
    pub name: String,
    /// HBM address of `lhs[B][M][K]`.
    pub lhs: u64,
    /// HBM address of `rhs[B][K][N]`.
    pub rhs: u64,
    /// HBM address of the result `[B][M][N]` (accumulator type).
    pub out: u64,
    /// `(B, M, K, N)`.
    pub dims: (usize, usize, usize, usize),
    /// MXU mode.
    pub mode: MxuDtype,
}

/// VMEM layout of one core's streaming buffers.
struct Bufs {
    a: [u64; 3],
    b: [u64; 3],
    c: [u64; 2],
}

const DEFER: usize = 2;

impl StreamDot {
    /// Tile sizes `(Mc, Nc, Kb)` for `arch`.
    fn tiles(&self, l: &Lowerer<'_>) -> (usize, usize, usize) {
        let (_, m, k, n) = self.dims;
        let half = (l.arch.mxu.acc_rows as usize / 2).max(1);
        let nc_max = (l.arch.mxu.count * l.arch.mxu.cols) as usize;
        (
            half.min(m),
            nc_max.min(n),
            (l.arch.mxu.rows as usize).min(k),
        )
    }

    /// Sizes of the buffers [`StreamDot::emit`] asks for, in order.
    pub fn buffer_sizes(&self, l: &Lowerer<'_>) -> Vec<u64> {
        let (mc, nc, kb) = self.tiles(l);
        let iw = self.mode.bytes() as usize;
        let a = (mc * kb * iw) as u64;
        let b = (kb * nc * iw) as u64;
        let c = (mc * nc * 4) as u64;
        vec![a, a, a, b, b, b, c, c]
    }

    /// VMEM bytes one core needs.
    pub fn vmem_bytes(&self, l: &Lowerer<'_>) -> u64 {
        let al = |x: u64| x.div_ceil(64) * 64;
        self.buffer_sizes(l).into_iter().map(al).sum()
    }

    /// The tiles `(b, m0, n0)` in order.
    fn tile_list(&self, l: &Lowerer<'_>) -> Vec<(usize, usize, usize)> {
        let (nb, m, _, n) = self.dims;
        let (mc, nc, _) = self.tiles(l);
        let mut t = Vec::new();
        for b in 0..nb {
            for m0 in (0..m).step_by(mc) {
                for n0 in (0..n).step_by(nc) {
                    t.push((b, m0, n0));
                }
            }
        }
        t
    }

    /// Emits core `core`'s share of the tiles (of `cores`), with buffers from `alloc`.
    pub fn emit(
        &self,
        l: &mut Lowerer<'_>,
        core: usize,
        cores: usize,
        alloc: &mut dyn FnMut(u64) -> CResult<u64>,
    ) -> CResult<()> {
        let (mc, nc, kb) = self.tiles(l);
        let iw = self.mode.bytes() as usize;
        let a_sz = (mc * kb * iw) as u64;
        let b_sz = (kb * nc * iw) as u64;
        let c_sz = (mc * nc * 4) as u64;
        let bufs = Bufs {
            a: [alloc(a_sz)?, alloc(a_sz)?, alloc(a_sz)?],
            b: [alloc(b_sz)?, alloc(b_sz)?, alloc(b_sz)?],
            c: [alloc(c_sz)?, alloc(c_sz)?],
        };
        debug_assert_eq!(
            self.buffer_sizes(l),
            vec![a_sz, a_sz, a_sz, b_sz, b_sz, b_sz, c_sz, c_sz]
        );
        let (_, m, k, n) = self.dims;
        let cols = l.arch.mxu.cols as usize;
        let half = (l.arch.mxu.acc_rows as u64 / 2).max(1);
        let mine: Vec<_> = self
            .tile_list(l)
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % cores == core)
            .map(|(_, t)| t)
            .collect();
        let ksteps = k.div_ceil(kb);
        // Every (tile, step) in order; the DMA of the next one is emitted before the compute
        // of this one.
        let steps: Vec<(usize, usize)> = (0..mine.len())
            .flat_map(|t| (0..ksteps).map(move |s| (t, s)))
            .collect();
        let mut pending_out: Vec<(usize, usize)> = Vec::new(); // (tile index, steps until emit)
        if let Some(&(t, s)) = steps.first() {
            self.load(l, &bufs, 0, mine[t], s, (mc, nc, kb));
        }
        for (g, &(t, s)) in steps.iter().enumerate() {
            if let Some(&(t2, s2)) = steps.get(g + 1) {
                self.load(l, &bufs, (g + 1) % 3, mine[t2], s2, (mc, nc, kb));
            }
            let (_, m0, n0) = mine[t];
            let mm = mc.min(m - m0);
            let ncur = nc.min(n - n0);
            let kk = kb.min(k - s * kb);
            let base = (t as u64 % 2) * half;
            let slot = g % 3;
            for q in 0..ncur.div_ceil(cols) {
                let nq = cols.min(ncur - q * cols);
                let ldw = MxuOp::Ldw {
                    addr: bufs.b[slot] + (q * cols * iw) as u64,
                    k: kk,
                    n: nq,
                    stride: nc * iw,
                };
                emit_op(l, q as u8, &ldw, self.mode, iw);
                let matmul = MxuOp::Matmul {
                    addr: bufs.a[slot],
                    m: mm,
                    k: kk,
                    stride: kb * iw,
                    base,
                    accumulate: s > 0,
                };
                emit_op(l, q as u8, &matmul, self.mode, iw);
                l.stats.mxu_macs += (mm * l.arch.mxu.rows as usize * cols) as u64;
            }
            if s + 1 == ksteps {
                // Accumulators to VMEM now (same MXU queues: in order after the matmuls).
                let cbuf = bufs.c[t % 2];
                for q in 0..ncur.div_ceil(cols) {
                    let st = MxuOp::St {
                        addr: cbuf + (q * cols * 4) as u64,
                        m: mm,
                        n: cols.min(ncur - q * cols),
                        stride: nc * 4,
                        base,
                    };
                    emit_op(l, q as u8, &st, self.mode, iw);
                }
                pending_out.push((t, DEFER));
            }
            // Stores to HBM, a few steps later.
            for p in pending_out.iter_mut() {
                p.1 = p.1.saturating_sub(1);
            }
            while let Some(&(t0, 0)) = pending_out.first() {
                self.store(l, &bufs, mine[t0], t0, (mc, nc));
                pending_out.remove(0);
            }
        }
        for (t0, _) in std::mem::take(&mut pending_out) {
            self.store(l, &bufs, mine[t0], t0, (mc, nc));
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn strided_dma(
        l: &mut Lowerer<'_>,
        dst: (Space, u64),
        src: (Space, u64),
        len: usize,
        rows: usize,
        src_stride: usize,
        dst_stride: usize,
    ) {
        l.dma_strided(
            dst,
            src,
            len as u64,
            rows as u64,
            src_stride as u64,
            dst_stride as u64,
        );
    }

    fn load(
        &self,
        l: &mut Lowerer<'_>,
        bufs: &Bufs,
        slot: usize,
        (b0, m0, n0): (usize, usize, usize),
        s: usize,
        (mc, nc, kb): (usize, usize, usize),
    ) {
        let (_, m, k, n) = self.dims;
        let iw = self.mode.bytes() as usize;
        let k0 = s * kb;
        let kk = kb.min(k - k0);
        let mm = mc.min(m - m0);
        let ncur = nc.min(n - n0);
        let a_src = self.lhs + (((b0 * m + m0) * k + k0) * iw) as u64;
        Self::strided_dma(
            l,
            (Space::Vmem, bufs.a[slot]),
            (Space::Hbm, a_src),
            kk * iw,
            mm,
            k * iw,
            kb * iw,
        );
        let b_src = self.rhs + (((b0 * k + k0) * n + n0) * iw) as u64;
        Self::strided_dma(
            l,
            (Space::Vmem, bufs.b[slot]),
            (Space::Hbm, b_src),
            ncur * iw,
            kk,
            n * iw,
            nc * iw,
        );
    }

    fn store(
        &self,
        l: &mut Lowerer<'_>,
        bufs: &Bufs,
        (b0, m0, n0): (usize, usize, usize),
        t: usize,
        (mc, nc): (usize, usize),
    ) {
        let (_, m, _, n) = self.dims;
        let mm = mc.min(m - m0);
        let ncur = nc.min(n - n0);
        let dst = self.out + (((b0 * m + m0) * n + n0) * 4) as u64;
        Self::strided_dma(
            l,
            (Space::Hbm, dst),
            (Space::Vmem, bufs.c[t % 2]),
            ncur * 4,
            mm,
            nc * 4,
            n * 4,
        );
    }
}
