//! `transpose` of a value that lives in HBM or is larger than a quarter of VMEM, HBM to HBM
//! on core 0, its result staying in HBM (read like a spill by a reader that needs VMEM).
//!
//! The permutation is first [`collapse`]d to its fewest dimensions (groups). Then:
//! * **the last group stays last** (`[B,S,H,D] → [B,H,S,D]`): every output row of the last
//!   group is a contiguous run of the source, so the transpose is DMA descriptors only, HBM to
//!   HBM: runs of the last group's bytes over up to [`isa::MAX_DMA_DIMS`] outer groups per
//!   descriptor (more outer groups loop, one descriptor each), cut along the outermost so
//!   every DMA engine takes a piece;
//! * **the last group moves** (`[M,N] → [N,M]`, `[B,S,D] → [B,D,S]`): tiles of `tA` rows of
//!   the group that becomes last by `tC` elements of the source's last group are copied in
//!   (one strided DMA), turned by `vpu.transpose`, and written out (one strided DMA), two
//!   tile sets alternating so the next tile's copy and the last one's write overlap this
//!   one's turn. Tiles are at most 512 KiB (or a sixteenth of VMEM).
//!
//! A transpose of more than [`MAX_PIECES`] descriptors or tiles is refused as not supported
//! yet (the program would be that long).

use super::emit::Access;
use super::movement::collapse;
use super::{Lowerer, Slot, Val};
use crate::error::{CResult, CompileError};
use hlo::{InstId, Opcode};
use isa::{Inst, Space};

/// Most DMA descriptors or tiles one streamed transpose emits.
pub const MAX_PIECES: u64 = 1 << 16;

/// Whether `h` of `c` is a transpose whose operand or result is larger than a quarter of
/// VMEM `vmem` (so it streams even with its operand in VMEM).
pub fn big_transpose(c: &hlo::Computation, h: InstId, vmem: u64) -> bool {
    let inst = &c.insts[h];
    let limit = vmem / super::stream_ew::BIG_FRACTION;
    inst.opcode == Opcode::Transpose
        && inst.operands.len() == 1
        && c.insts[inst.operands[0]]
            .shape
            .byte_size()
            .is_some_and(|b| b > limit)
}

/// Row-major strides (in elements) of `sizes`.
fn strides(sizes: &[usize]) -> Vec<u64> {
    let mut s = vec![1u64; sizes.len()];
    for k in (0..sizes.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * sizes[k + 1] as u64;
    }
    s
}

/// Every index of `counts` in row-major order.
fn indices(counts: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = counts.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; counts.len()];
    for _ in 0..n {
        out.push(idx.clone());
        hlo::shape::next_index(&mut idx, counts);
    }
    out
}

impl Lowerer<'_> {
    /// Whether transpose `h` of the entry streams (module docs): its operand in HBM, or the
    /// operand larger than a quarter of VMEM.
    pub(crate) fn transpose_streams(&self, h: InstId) -> CResult<bool> {
        let c = self.comp();
        let inst = &c.insts[h];
        if self.depth() != 0 || inst.opcode != Opcode::Transpose || inst.operands.len() != 1 {
            return Ok(false);
        }
        if c.insts[inst.operands[0]]
            .shape
            .as_array()
            .is_none_or(|a| a.is_dynamic())
        {
            return Ok(false);
        }
        let hbm = matches!(self.val(inst.operands[0])?, Val::Hbm(_));
        Ok(hbm || big_transpose(c, h, self.arch.vmem.bytes))
    }

    /// Lowers transpose `h` ([`Self::transpose_streams`]) from HBM to HBM.
    pub(crate) fn transpose_streamed(&mut self, h: InstId) -> CResult<Val> {
        let inst = &self.comp().insts[h];
        let x = inst.operands[0];
        let hlo::View::Transpose { permutation } = inst.view() else {
            return Err(CompileError::Internal("transpose view".into()));
        };
        let perm: Vec<usize> = permutation.iter().map(|&p| p as usize).collect();
        let src_dims = self.comp().insts[x]
            .shape
            .as_array()
            .ok_or_else(|| CompileError::Internal("transpose of a non-array".into()))?
            .udims();
        let (ty, dims) = self.out_shape(h)?;
        let lu = self.last_use_of(h);
        let (_, rank) = collapse(&src_dims, &perm);
        if rank.len() <= 1 || rank.iter().enumerate().all(|(i, &r)| i == r) {
            // No data moves: the same bytes with the output's dimensions, where they are.
            let v = match self.val(x)? {
                Val::Hbm(s) => Val::Hbm(Slot { dims, ..s }),
                Val::Array(b) => Val::Array(b.with_dims(dims)),
                _ => return Err(CompileError::Internal("transpose of a non-array".into())),
            };
            self.extend_life(&v, h);
            return Ok(v);
        }
        let src = self.hbm_copy_of(x)?;
        self.untouch(&[x]);
        let slot = self.hbm_array(ty, dims, &inst.name)?;
        self.transpose_hbm(slot.addr, src, &src_dims, &perm, ty)?;
        self.stats.transpose_streams += 1;
        Ok(self.in_hbm(&slot, lu))
    }

    /// `dst = transpose(src, perm)` for arrays of `ty` in HBM (`src_dims` the source's).
    pub(crate) fn transpose_hbm(
        &mut self,
        dst: u64,
        src: u64,
        src_dims: &[usize],
        perm: &[usize],
        ty: hlo::ElementType,
    ) -> CResult<()> {
        if src_dims.contains(&0) {
            return Ok(());
        }
        let (sizes, rank) = collapse(src_dims, perm);
        let w = ty.byte_size() as u64;
        let unit_waits = std::mem::replace(&mut self.e.unit_waits, true);
        let r = if rank.len() <= 1 || rank.last() == Some(&(rank.len() - 1)) {
            self.transpose_runs((Space::Hbm, dst), (Space::Hbm, src), &sizes, &rank, w)
        } else {
            self.vty(ty)
                .and_then(|t| self.transpose_tiles(dst, src, &sizes, &rank, t, w))
        };
        self.e.unit_waits = unit_waits;
        r
    }

    /// A transpose whose last group stays last (groups and `rank` from [`collapse`]; `w`-byte
    /// elements): descriptors of contiguous runs, `src` to `dst` (HBM to HBM here; VMEM to
    /// VMEM for `movement`'s in-VMEM transposes).
    pub(crate) fn transpose_runs(
        &mut self,
        (dsp, dst): (Space, u64),
        (ssp, src): (Space, u64),
        sizes: &[usize],
        rank: &[usize],
        w: u64,
    ) -> CResult<()> {
        let g = rank.len();
        let total: u64 = sizes.iter().map(|&s| s as u64).product::<u64>() * w;
        if total == 0 {
            return Ok(());
        }
        if g <= 1 {
            return self.dma((dsp, dst), (ssp, src), total);
        }
        let ss = strides(sizes);
        let out_sizes: Vec<usize> = rank.iter().map(|&r| sizes[r]).collect();
        let ds = strides(&out_sizes);
        let len = sizes[g - 1] as u64 * w;
        // Outer groups in output order; the innermost MAX_DMA_DIMS go in the descriptor.
        let outer = g - 1;
        let nd = outer.min(isa::MAX_DMA_DIMS);
        let looped = outer - nd;
        let loops: Vec<usize> = out_sizes[..looped].to_vec();
        let n_loops: u64 = loops.iter().map(|&s| s as u64).product();
        // Pieces of the outermost descriptor dimension, so every engine takes one.
        let engines = u64::from(self.arch.dma.engines.max(1));
        let top = out_sizes[looped] as u64;
        let cut = if n_loops < engines && total >= 256 * 1024 {
            engines.div_ceil(n_loops).min(top)
        } else {
            1
        };
        if n_loops * cut > MAX_PIECES {
            return Err(self.unsupported(format!(
                "a streamed transpose of {} copies (at most {MAX_PIECES})",
                n_loops * cut
            )));
        }
        let step = top.div_ceil(cut);
        for idx in indices(&loops) {
            let so: u64 = (0..looped).map(|k| idx[k] as u64 * ss[rank[k]]).sum();
            let d0: u64 = (0..looped).map(|k| idx[k] as u64 * ds[k]).sum();
            let mut t0 = 0;
            while t0 < top {
                let cnt = step.min(top - t0);
                // Innermost first: output groups g-2, g-3, ... down to `looped`.
                let mut ddims = Vec::with_capacity(nd);
                for k in (looped..outer).rev() {
                    let count = if k == looped {
                        cnt
                    } else {
                        out_sizes[k] as u64
                    };
                    ddims.push((
                        u32::try_from(count)
                            .map_err(|_| self.unsupported("a transposed dimension of 2^32"))?,
                        (ss[rank[k]] * w) as i64,
                        (ds[k] * w) as i64,
                    ));
                }
                let s_at = src + (so + t0 * ss[rank[looped]]) * w;
                let d_at = dst + (d0 + t0 * ds[looped]) * w;
                let len = u32::try_from(len)
                    .map_err(|_| self.unsupported("a transposed run of 2^32 bytes"))?;
                self.dma_nd((dsp, d_at), (ssp, s_at), len as u64, &ddims);
                t0 += cnt;
            }
        }
        Ok(())
    }

    /// The last group moves: tiles turned by `vpu.transpose` in VMEM.
    fn transpose_tiles(
        &mut self,
        dst: u64,
        src: u64,
        sizes: &[usize],
        rank: &[usize],
        t: isa::DType,
        w: u64,
    ) -> CResult<()> {
        let g = rank.len();
        let ss = strides(sizes);
        let out_sizes: Vec<usize> = rank.iter().map(|&r| sizes[r]).collect();
        let ds = strides(&out_sizes);
        // Source group `j` becomes the last of the output; the source's last group sits at
        // output position `kc`.
        let j = rank[g - 1];
        let kc = rank
            .iter()
            .position(|&r| r == g - 1)
            .ok_or_else(|| CompileError::Internal("transpose groups".into()))?;
        let (a, c) = (sizes[j] as u64, sizes[g - 1] as u64);
        let others: Vec<usize> = (0..g - 1).filter(|&k| k != kc).collect();
        let counts: Vec<usize> = others.iter().map(|&k| out_sizes[k]).collect();
        let n_other: u64 = counts.iter().map(|&s| s as u64).product();
        // Tiles of tA × tC elements.
        let tile_bytes = (512 * 1024).min(self.arch.vmem.bytes / 16).max(64 * w);
        let elems = (tile_bytes / w).min(super::VPU_CHUNK);
        let mut ta = a.min(256).min(elems);
        let tc = c.min((elems / ta).max(1)).min((1 << 20) - 1);
        if tc == c {
            ta = a.min((elems / c.max(1)).max(1)).min((1 << 20) - 1);
        }
        let tiles = n_other * a.div_ceil(ta) * c.div_ceil(tc);
        if tiles > MAX_PIECES {
            return Err(self.unsupported(format!(
                "a streamed transpose of {tiles} tiles (at most {MAX_PIECES})"
            )));
        }
        let tb = ta * tc * w;
        self.make_room(4 * (tb + super::alloc::ALIGN))?;
        let ins = [
            self.tmp(hlo::ElementType::U8, vec![tb as usize])?,
            self.tmp(hlo::ElementType::U8, vec![tb as usize])?,
        ];
        let outs = [
            self.tmp(hlo::ElementType::U8, vec![tb as usize])?,
            self.tmp(hlo::ElementType::U8, vec![tb as usize])?,
        ];
        // (source offset, output offset, a0, rows, c0, cols) per tile.
        let mut list = Vec::with_capacity(tiles as usize);
        for idx in indices(&counts) {
            let so: u64 = others
                .iter()
                .zip(&idx)
                .map(|(&k, &i)| i as u64 * ss[rank[k]])
                .sum();
            let d0: u64 = others
                .iter()
                .zip(&idx)
                .map(|(&k, &i)| i as u64 * ds[k])
                .sum();
            for a0 in (0..a).step_by(ta as usize) {
                for c0 in (0..c).step_by(tc as usize) {
                    list.push((so, d0, a0, ta.min(a - a0), c0, tc.min(c - c0)));
                }
            }
        }
        let load = |l: &mut Self, i: usize| {
            let (so, _, a0, ra, c0, cc) = list[i];
            l.dma_strided(
                (Space::Vmem, ins[i % 2].addr),
                (Space::Hbm, src + (so + a0 * ss[j] + c0) * w),
                cc * w,
                ra,
                ss[j] * w,
                cc * w,
            );
        };
        if !list.is_empty() {
            load(self, 0);
        }
        for i in 0..list.len() {
            if i + 1 < list.len() {
                load(self, i + 1);
            }
            let (_, d0, a0, ra, c0, cc) = list[i];
            let (inb, outb) = (ins[i % 2].addr, outs[i % 2].addr);
            let (dv, sv) = (self.e.vaddr(outb), self.e.vaddr(inb));
            self.e.unit(
                Inst::VTranspose {
                    dst: dv,
                    a: sv,
                    rows: ra as u32,
                    cols: cc as u32,
                    t,
                    wait: None,
                    signal: None,
                },
                super::emit::Queue::Vpu,
                &[Access::vmem(inb, ra * cc * w)],
                &[Access::vmem(outb, ra * cc * w)],
            );
            // `cc` rows (the source's last group, at output position `kc`) of `ra` elements.
            self.dma_strided(
                (Space::Hbm, dst + (d0 + c0 * ds[kc] + a0) * w),
                (Space::Vmem, outb),
                ra * w,
                cc,
                ra * w,
                ds[kc] * w,
            );
        }
        Ok(())
    }
}
