//! `dynamic-slice` and `dynamic-update-slice`: a box copied by one strided DMA (VMEM to VMEM)
//! whose address on the indexed side is computed at run time on the sequencer.
//!
//! **Starts.** Each start index is a scalar array in VMEM (or an element of the old rank-1
//! start operand); the sequencer loads it with `s.ld` (sign- or zero-extended by type), clamps
//! it to `[0, dim − size]` with `s.max`/`s.min` as the spec requires, and accumulates
//! `start · stride` into `s28`, which then holds the indexed side's address. `u64` starts are
//! not supported yet (the scalar unit compares signed).
//!
//! **The box.** Dimensions of size 1 drop out, and a dimension merges with its inner
//! neighbour when that neighbour is whole, so the box becomes `len` contiguous bytes repeated
//! over at most three strided dimensions per DMA; a box with more dimensions is split into
//! several DMAs over its outer ones (their addresses `s29 = s28 + offset`).
//!
//! **Cost.** The scalar work (a few instructions per start), one DMA per box (the shape-aware
//! DMA cost of docs/timing.md: a row per contiguous run), and for `dynamic-update-slice` a
//! whole-operand copy first (the result is a new buffer; in-place update is not done yet).
//! The emitter sees the indexed side as the whole buffer (reads or writes of all of it), so
//! ordering is conservative; the simulator's race check sees the real addresses.

use super::emit::{Access, Queue};
use super::movement::strides;
use super::{Buf, Lowerer, Val};
use crate::error::{CResult, CompileError};
use hlo::{ElementType, InstId, Opcode};
use isa::{DmaDesc, DmaDim, Inst, MemRef, SReg, Space};

const R_ADDR: SReg = SReg(28);
const R_TMP: SReg = SReg(29);
const R_LIM: SReg = SReg(30);
const R_ROW: SReg = SReg(31);

/// Lowers `dynamic-slice` and `dynamic-update-slice`; `None` for other ops.
pub fn lower(l: &mut Lowerer<'_>, h: InstId) -> CResult<Option<Val>> {
    let inst = &l.comp().insts[h];
    match inst.opcode {
        Opcode::DynamicSlice => {
            let ops = inst.operands.clone();
            let src = l.arr(ops[0])?;
            let (ty, dims) = l.out_shape(h)?;
            let out = l.new_buf(h, ty, dims.clone())?;
            l.load_starts(&ops[1..], &src, &dims)?;
            l.box_copy(&src, &out, &dims, Side::Src)?;
            Ok(Some(Val::Array(out)))
        }
        Opcode::DynamicUpdateSlice => {
            let ops = inst.operands.clone();
            let src = l.arr(ops[0])?;
            let upd = l.arr(ops[1])?;
            let (ty, dims) = l.out_shape(h)?;
            let out = l.new_buf(h, ty, dims)?;
            l.dma(
                (Space::Vmem, out.addr),
                (Space::Vmem, src.addr),
                src.bytes(),
            )?;
            let box_dims = upd.dims.clone();
            l.load_starts(&ops[2..], &out, &box_dims)?;
            l.box_copy(&out, &upd, &box_dims, Side::Dst)?;
            Ok(Some(Val::Array(out)))
        }
        _ => Ok(None),
    }
}

/// Which side of a box copy is indexed at run time (the other is a whole contiguous buffer).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Src,
    Dst,
}

impl Lowerer<'_> {
    /// `s28 = big.addr + Σ clamp(start_i, 0, big.dims_i − size_i) · stride_i` (bytes).
    fn load_starts(&mut self, starts: &[InstId], big: &Buf, size: &[usize]) -> CResult<()> {
        let r = big.dims.len();
        // The start of dimension i: (buffer, byte offset, type).
        let mut at: Vec<(Buf, u64, ElementType)> = Vec::with_capacity(r);
        if starts.len() == r {
            for &s in starts {
                let b = self.arr(s)?;
                at.push((b.clone(), 0, b.ty));
            }
        } else if starts.len() == 1 && r != 1 {
            let b = self.arr(starts[0])?;
            let w = b.ty.byte_size() as u64;
            for i in 0..r {
                at.push((b.clone(), i as u64 * w, b.ty));
            }
        } else {
            return Err(CompileError::Internal(format!(
                "{} start operands for rank {r}",
                starts.len()
            )));
        }
        let w = big.ty.byte_size() as u64;
        let st = strides(&big.dims);
        self.e.seq(Inst::SLi {
            rd: R_ADDR,
            imm: big.addr as i64,
        });
        for (i, (b, off, ty)) in at.into_iter().enumerate() {
            if ty == ElementType::U64 {
                return Err(self.unsupported("u64 start indices"));
            }
            let limit = big.dims[i] - size[i];
            if limit == 0 {
                // The start is clamped to 0 whatever it is.
                continue;
            }
            let t = self.vty(ty)?;
            self.e
                .seq_read(Access::vmem(b.addr + off, ty.byte_size() as u64));
            let a = self.e.vaddr(b.addr + off);
            self.e.seq(Inst::SLd {
                rd: R_TMP,
                addr: a,
                t,
            });
            self.e.seq(Inst::SMax {
                rd: R_TMP,
                ra: R_TMP,
                rb: SReg(0),
            });
            self.e.seq(Inst::SLi {
                rd: R_LIM,
                imm: limit as i64,
            });
            self.e.seq(Inst::SMin {
                rd: R_TMP,
                ra: R_TMP,
                rb: R_LIM,
            });
            self.e.seq(Inst::SMuli {
                rd: R_TMP,
                ra: R_TMP,
                imm: (st[i] as u64 * w) as i64,
            });
            self.e.seq(Inst::SAdd {
                rd: R_ADDR,
                ra: R_ADDR,
                rb: R_TMP,
            });
        }
        Ok(())
    }

    /// Copies the box `size` between `big` (indexed at `s28`, on side `side`) and the whole
    /// contiguous buffer `small`.
    fn box_copy(&mut self, big: &Buf, small: &Buf, size: &[usize], side: Side) -> CResult<()> {
        let w = big.ty.byte_size() as u64;
        // Canonical box: (extent, big's extent) per dimension, outer to inner.
        let mut dims: Vec<(u64, u64)> = size
            .iter()
            .zip(&big.dims)
            .filter(|(&z, _)| z != 1)
            .map(|(&z, &d)| (z as u64, d as u64))
            .collect();
        if dims.iter().any(|d| d.0 == 0) {
            return Ok(());
        }
        if dims.is_empty() {
            dims.push((1, 1));
        }
        // Strides of big's dimensions among the kept ones.
        let all_st = strides(&big.dims);
        let mut big_st: Vec<u64> = size
            .iter()
            .zip(&all_st)
            .filter(|(&z, _)| z != 1)
            .map(|(_, &s)| s as u64 * w)
            .collect();
        if big_st.is_empty() {
            big_st.push(w);
        }
        // The contiguous run is the innermost kept dimension only if big's innermost
        // dimension is among the kept ones (a column `[n, 1]` of `[n, m]` is n runs of one
        // element, `m·w` apart).
        if big_st.last() != Some(&w) {
            dims.push((1, 1));
            big_st.push(w);
        }
        // Merge a dimension into its inner neighbour when the neighbour is whole.
        let mut k = dims.len() - 1;
        while k > 0 {
            let (zi, di) = dims[k];
            if zi == di && big_st[k - 1] == big_st[k] * di {
                let (zo, dout) = dims[k - 1];
                dims[k - 1] = (zo * zi, dout * di);
                big_st[k - 1] = big_st[k];
                dims.remove(k);
                big_st.remove(k);
            }
            k -= 1;
        }
        let rank = dims.len();
        let len = dims[rank - 1].0 * w;
        if len > u32::MAX as u64 {
            return Err(self.unsupported("a dynamic slice row of 4 GiB or more"));
        }
        let mut small_st = vec![w; rank];
        for i in (0..rank - 1).rev() {
            small_st[i] = small_st[i + 1] * dims[i + 1].0;
        }
        // Up to three outer dimensions per DMA; the rest are unrolled.
        let inner_outer = (rank - 1).min(isa::MAX_DMA_DIMS);
        let unrolled = rank - 1 - inner_outer;
        let outer: Vec<u64> = dims[..unrolled].iter().map(|d| d.0).collect();
        let n_outer: u64 = outer.iter().product();
        if n_outer > 1 << 16 {
            return Err(self.unsupported("a dynamic slice of more than 65536 DMA boxes"));
        }
        let desc_dims: Vec<DmaDim> = (unrolled..rank - 1)
            .rev()
            .map(|i| {
                let (s, d) = match side {
                    Side::Src => (big_st[i], small_st[i]),
                    Side::Dst => (small_st[i], big_st[i]),
                };
                DmaDim {
                    count: dims[i].0 as u32,
                    src_stride: s as i64,
                    dst_stride: d as i64,
                }
            })
            .collect();
        let desc = self.e.b.dma_desc(DmaDesc {
            len: len as u32,
            dims: desc_dims,
        });
        let mut idx = vec![0u64; unrolled];
        for _ in 0..n_outer {
            let big_off: u64 = idx.iter().zip(&big_st).map(|(i, s)| i * s).sum();
            let small_off: u64 = idx.iter().zip(&small_st).map(|(i, s)| i * s).sum();
            let reg = if big_off == 0 {
                R_ADDR
            } else {
                self.e.seq(Inst::SAddi {
                    rd: R_ROW,
                    ra: R_ADDR,
                    imm: big_off as i64,
                });
                R_ROW
            };
            let rt = MemRef {
                space: Space::Vmem,
                base: reg,
                off: 0,
            };
            let st = self.e.memref(Space::Vmem, small.addr + small_off);
            let (dst, src) = match side {
                Side::Src => (st, rt),
                Side::Dst => (rt, st),
            };
            let (reads, writes) = match side {
                Side::Src => (big.access(), small.access()),
                Side::Dst => (small.access(), big.access()),
            };
            self.e.unit(
                Inst::DmaCopy {
                    dst,
                    src,
                    desc,
                    wait: None,
                    signal: None,
                },
                Queue::Dma,
                &[reads],
                &[writes],
            );
            for d in (0..unrolled).rev() {
                idx[d] += 1;
                if idx[d] < outer[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        Ok(())
    }
}
