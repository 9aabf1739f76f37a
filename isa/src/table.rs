//! THE instruction table. Every fact about an instruction (opcode, mnemonic, unit, timing
//! class, element types, operands with their widths, and its semantics) is in its row here;
//! `define_isa!` (src/define.rs) derives the rest. Rules shared by a whole group (addressing,
//! element-wise conventions, rounding, synchronization) are in src/prelude.md, which opens
//! docs/isa.md. Notation: `s[r]` is the value of scalar register `r`, `A(x)` the byte address of
//! a VMEM operand `x` (`s[base] + off`), `x[i]` the element `i` of type `t` at `A(x) + i·size(t)`.

use crate::inst::{check_dtype, FieldInfo, InstInfo, TimingClass, Unit};
use crate::operand::{
    AccAddr, CmpOp, Csr, DType, Flag, FmtCtx, MemRef, Operand, ParseCtx, Pat, RedOp, SReg, Sem,
    Target, TypeClass, VAddr,
};
use arch::MxuDtype;

define_isa! {
    // ------------------------------------------------------------------ control (sequencer)
    /// No operation.
    Nop = 0x00, "nop", Seq, Scalar, NoType, () {};
    /// Stops the core: the sequencer issues nothing more, waits until every unit queue is empty
    /// and every issued instruction has completed, then the core is done. A program must end
    /// every path in `halt`; running past the last instruction is an error.
    Halt = 0x01, "halt", Seq, Halt, NoType, () {};
    /// Waits until every instruction issued before it (on every unit of this core) has
    /// completed, then continues.
    Fence = 0x02, "fence", Seq, Sync, NoType, () {};
    /// `sem += n` (wrapping past 2³²−1 is an error). Issued and completed by the sequencer.
    SemSignal = 0x03, "sem.signal", Seq, Sync, NoType, (sem: Sem = 5) { n: u32 = 16 };
    /// Blocks the sequencer until `sem >= n`, then `sem -= n`.
    SemWait = 0x04, "sem.wait", Seq, Sync, NoType, (sem: Sem = 5) { n: u32 = 16 };

    // ------------------------------------------------------------------ scalar
    /// `s[rd] = imm` (64-bit immediate).
    SLi = 0x10, "s.li", Seq, Scalar, NoType, (rd: SReg = 5, imm: i64 = 64) {};
    /// `s[rd] = s[ra] + s[rb]` (wrapping).
    SAdd = 0x11, "s.add", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, rb: SReg = 5) {};
    /// `s[rd] = s[ra] - s[rb]` (wrapping).
    SSub = 0x12, "s.sub", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, rb: SReg = 5) {};
    /// `s[rd] = s[ra] * s[rb]` (low 64 bits).
    SMul = 0x13, "s.mul", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, rb: SReg = 5) {};
    /// `s[rd] = s[ra] / s[rb]`, signed, rounding toward zero; `x / 0 = -1`; `MIN / -1 = MIN`.
    SDiv = 0x14, "s.div", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, rb: SReg = 5) {};
    /// `s[rd] = s[ra] rem s[rb]`, signed, sign of the dividend; `x rem 0 = x`; `MIN rem -1 = 0`.
    SRem = 0x15, "s.rem", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, rb: SReg = 5) {};
    /// `s[rd] = s[ra] & s[rb]`.
    SAnd = 0x16, "s.and", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, rb: SReg = 5) {};
    /// `s[rd] = s[ra] | s[rb]`.
    SOr = 0x17, "s.or", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, rb: SReg = 5) {};
    /// `s[rd] = s[ra] ^ s[rb]`.
    SXor = 0x18, "s.xor", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, rb: SReg = 5) {};
    /// `s[rd] = s[ra] << s[rb]`; a shift amount (unsigned) of 64 or more gives 0.
    SShl = 0x19, "s.shl", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, rb: SReg = 5) {};
    /// Logical right shift; a shift amount (unsigned) of 64 or more gives 0.
    SShr = 0x1a, "s.shr", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, rb: SReg = 5) {};
    /// Arithmetic right shift; a shift amount (unsigned) of 64 or more gives 0 or -1 (sign).
    SSra = 0x1b, "s.sra", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, rb: SReg = 5) {};
    /// `s[rd] = min(s[ra], s[rb])`, signed.
    SMin = 0x1c, "s.min", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, rb: SReg = 5) {};
    /// `s[rd] = max(s[ra], s[rb])`, signed.
    SMax = 0x1d, "s.max", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, rb: SReg = 5) {};
    /// `s[rd] = (s[ra] < s[rb]) ? 1 : 0`, signed.
    SSlt = 0x1e, "s.slt", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, rb: SReg = 5) {};
    /// `s[rd] = (s[ra] < s[rb]) ? 1 : 0`, unsigned.
    SSltu = 0x1f, "s.sltu", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, rb: SReg = 5) {};
    /// `s[rd] = s[ra] + imm` (wrapping).
    SAddi = 0x20, "s.addi", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, imm: i64 = 32) {};
    /// `s[rd] = s[ra] * imm` (low 64 bits).
    SMuli = 0x21, "s.muli", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, imm: i64 = 32) {};
    /// `s[rd] = s[ra] & imm` (imm sign-extended).
    SAndi = 0x22, "s.andi", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, imm: i64 = 32) {};
    /// `s[rd] = s[ra] << imm` (`0 <= imm < 64`, else an error).
    SShli = 0x23, "s.shli", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, imm: u32 = 6) {};
    /// `s[rd] = s[ra] >> imm`, logical (`0 <= imm < 64`).
    SShri = 0x24, "s.shri", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, imm: u32 = 6) {};
    /// `s[rd] = s[ra] >> imm`, arithmetic (`0 <= imm < 64`).
    SSrai = 0x25, "s.srai", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, imm: u32 = 6) {};
    /// `s[rd] = (s[ra] < imm) ? 1 : 0`, signed.
    SSlti = 0x26, "s.slti", Seq, Scalar, NoType, (rd: SReg = 5, ra: SReg = 5, imm: i64 = 32) {};
    /// Scalar load from VMEM: reads `size(t)` bytes at `A(addr)` (little-endian); integers and
    /// pred are sign- (signed types) or zero-extended (unsigned, pred) to 64 bits; floats are
    /// loaded as their raw bit pattern, zero-extended. Sees VMEM as it is when the sequencer
    /// executes it (order it after unit writes with semaphores: an unordered one is reported
    /// as a race, docs/timing.md).
    SLd = 0x28, "s.ld", Seq, ScalarMem, Any, (rd: SReg = 5, addr: VAddr = 21) { t: DType = 4 }
        [addr: Read elems(t, 1)];
    /// Scalar store to VMEM: writes the low `size(t)` bytes of `s[rs]` at `A(addr)`. Order it
    /// after dispatched unit instructions that read or write those bytes with semaphores (an
    /// unordered one is reported as a race, docs/timing.md); instructions dispatched after it
    /// see the store.
    SSt = 0x29, "s.st", Seq, ScalarMem, Any, (rs: SReg = 5, addr: VAddr = 21) { t: DType = 4 }
        [addr: Write elems(t, 1)];
    /// `s[rd] = ` the machine value `csr` (replica id, number of replicas, core id, cores).
    SCsr = 0x2a, "s.csr", Seq, Scalar, NoType, (rd: SReg = 5) { csr: Csr = 3 };

    // ------------------------------------------------------------------ branches
    /// Continue at instruction `target`.
    Jmp = 0x30, "jmp", Seq, Branch, NoType, (target: Target = 24) {};
    /// Branch to `target` if `s[ra] == s[rb]`.
    Beq = 0x31, "beq", Seq, Branch, NoType, (ra: SReg = 5, rb: SReg = 5, target: Target = 24) {};
    /// Branch to `target` if `s[ra] != s[rb]`.
    Bne = 0x32, "bne", Seq, Branch, NoType, (ra: SReg = 5, rb: SReg = 5, target: Target = 24) {};
    /// Branch to `target` if `s[ra] < s[rb]`, signed.
    Blt = 0x33, "blt", Seq, Branch, NoType, (ra: SReg = 5, rb: SReg = 5, target: Target = 24) {};
    /// Branch to `target` if `s[ra] >= s[rb]`, signed.
    Bge = 0x34, "bge", Seq, Branch, NoType, (ra: SReg = 5, rb: SReg = 5, target: Target = 24) {};

    // ------------------------------------------------------------------ DMA
    /// Strided copy between HBM and VMEM (either direction, or within one space) described by
    /// the program's DMA descriptor `desc` (`len` bytes per chunk, up to 3 outer dimensions of
    /// `(count, src_stride, dst_stride)`, innermost first). For every index `(i0, i1, i2)` with
    /// `ij < count_j`, copies `len` bytes from `A(src) + Σ ij·src_stride_j` to
    /// `A(dst) + Σ ij·dst_stride_j` (`A(x) = s[base] + off` in the space of `x`). Chunks are
    /// copied in index order (i0 fastest); a destination byte written twice keeps the later
    /// chunk. Up to `dma.engines` copies are in flight; they may complete in any order.
    DmaCopy = 0x40, "dma.copy", Dma, Dma, NoType,
        (dst: MemRef = 39, src: MemRef = 39)
        { desc: u32 = 16, wait: Option<Sem> = 6, signal: Option<Sem> = 6 }
        [dst: Write chunks(desc, false), src: Read chunks(desc, true)];

    /// Indexed gather (rows by an index list): descriptor `desc` must have exactly one
    /// dimension `(n, src_stride, dst_stride)` and gives the row length `len`. For `i = 0 ..
    /// n-1` in order, `k = idx[i]` (the `n` u32 at VMEM address `s[idx]`); if `k < s[lim]`,
    /// copies `len` bytes from `A(src) + k·src_stride` to `A(dst) + i·dst_stride`; a row with
    /// `k >= s[lim]` is dropped (its destination row is left as it was; no access, no error).
    /// `s[idx]` and `s[lim]` are read at dispatch, the table when the copy starts. Costs as a
    /// `dma.copy` of the rows it moves (bursts counted per row).
    DmaGather = 0x41, "dma.gather", Dma, Dma, NoType,
        (dst: MemRef = 39, src: MemRef = 39, idx: SReg = 5, lim: SReg = 5)
        { desc: u32 = 16, wait: Option<Sem> = 6, signal: Option<Sem> = 6 }
        [dst: Write indexed(desc, false, false), src: Read indexed(desc, true, true),
         idx: Read index_table(desc)];
    /// Indexed scatter: as `dma.gather` with the index on the destination side: for `i = 0 ..
    /// n-1` in order, if `k = idx[i] < s[lim]`, copies `len` bytes from `A(src) +
    /// i·src_stride` to `A(dst) + k·dst_stride` (a row named twice keeps the later one); rows
    /// with `k >= s[lim]` are dropped.
    DmaScatter = 0x42, "dma.scatter", Dma, Dma, NoType,
        (dst: MemRef = 39, src: MemRef = 39, idx: SReg = 5, lim: SReg = 5)
        { desc: u32 = 16, wait: Option<Sem> = 6, signal: Option<Sem> = 6 }
        [dst: Write indexed(desc, false, true), src: Read indexed(desc, true, false),
         idx: Read index_table(desc)];

    // ------------------------------------------------------------------ MXU
    /// Load a `k × n` weight tile into the **shadow** weight buffer of MXU `mxu`
    /// (docs/mxu-contract.md `LoadWeights`): element `W[i][j]` (type `mode`: int8 or bf16) is
    /// read at `A(src) + i·stride + j·size(mode)`, `1 <= k <= mxu.rows`, `1 <= n <= mxu.cols`;
    /// the tile is zero-padded to `rows × cols`. The next `mxu.matmul` on this MXU swaps it in.
    /// With `tr=1` (a transposed load) `W[i][j]` is read at `A(src) + j·stride + i·size(mode)`:
    /// the tile is stored as its transpose (`n` rows of `k`); the address generator hands the
    /// array the same `k × n` tile, so timing and docs/mxu-contract.md are unchanged.
    MxuLdw = 0x50, "mxu.ldw", Mxu, MxuLoad, NoType,
        (src: VAddr = 21)
        { mxu: u32 = 4, k: u32 = 11, n: u32 = 11, stride: u32 = 20, mode: MxuDtype = 1,
          wait: Option<Sem> = 6, signal: Option<Sem> = 6, tr: Flag = 1 }
        [src: Read weights(mode, k, n, stride, tr)];
    /// Multiply `m` rows of activations by the weights of MXU `mxu` (docs/mxu-contract.md
    /// `Matmul`): `X[r][i]` (type `mode`) is read at `A(src) + r·stride + i·size(mode)` for
    /// `r < m`, `i < k` (`1 <= k <= mxu.rows`, zero-padded to `rows`; `m >= 1`). If a weight
    /// tile was loaded since the last swap, it is swapped in first. Result row `r` (`cols`
    /// values of the accumulator type: i32 for int8, f32 for bf16) goes to accumulator row
    /// `(a + r) mod mxu.acc_rows`, `a = s[acc.base] + acc.off` (`0 <= a < acc_rows`),
    /// overwriting it if `accumulate = 0`, adding to it if `1`. `mode` must equal the mode of
    /// the weights being used, and be one of `mxu.dtypes`. Before the first weight load the
    /// active weights are all zero, in mode `mxu.dtype`. With `pat=N` naming `src`, row `r` is
    /// read at the pattern's offset of `r` instead of `r·stride` (two strides for convolution
    /// rows: `src=[(n1,s0),(m,s1)]` puts row `r` at `A(src) + (r mod n1)·s0 + (r / n1)·s1`).
    MxuMatmul = 0x51, "mxu.matmul", Mxu, MxuMatmul, NoType,
        (src: VAddr = 21, acc: AccAddr = 21)
        { mxu: u32 = 4, m: u32 = 20, k: u32 = 11, stride: u32 = 20, mode: MxuDtype = 1,
          accumulate: bool = 1, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 9 }
        [src: Read runs(mxu_elem(mode), m, k, stride)];
    /// Move accumulator rows out to VMEM: for `r < m`, `j < n` (`1 <= n <= mxu.cols`), the
    /// 32-bit accumulator element `j` of row `(a + r) mod acc_rows` (`a` as in `mxu.matmul`)
    /// is written little-endian at `A(dst) + r·stride + 4·j`. Starts after every earlier
    /// `mxu.matmul` of the same MXU that writes one of these accumulator rows has completed
    /// (matmuls into other rows may still be in flight); the accumulators are left unchanged.
    MxuSt = 0x52, "mxu.st", Mxu, MxuStore, NoType,
        (dst: VAddr = 21, acc: AccAddr = 21)
        { mxu: u32 = 4, m: u32 = 20, n: u32 = 11, stride: u32 = 20,
          wait: Option<Sem> = 6, signal: Option<Sem> = 6 }
        [dst: Write runs(S32, m, n, stride)];

    // ------------------------------------------------------------------ VPU binary
    /// `dst[i] = a[i] + b[i]`.
    VAdd = 0x60, "vpu.add", Vpu, VpuAlu, Numeric,
        (dst: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n), b: Read elems(t, n)];
    /// `dst[i] = a[i] - b[i]`.
    VSub = 0x61, "vpu.sub", Vpu, VpuAlu, Numeric,
        (dst: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n), b: Read elems(t, n)];
    /// `dst[i] = a[i] * b[i]`.
    VMul = 0x62, "vpu.mul", Vpu, VpuMul, Numeric,
        (dst: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n), b: Read elems(t, n)];
    /// `dst[i] = a[i] / b[i]`: floats IEEE; integers round toward zero, `x / 0 = -1` (all ones
    /// for unsigned), signed `MIN / -1 = MIN`.
    VDiv = 0x63, "vpu.div", Vpu, VpuDiv, Numeric,
        (dst: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n), b: Read elems(t, n)];
    /// `dst[i] = a[i] rem b[i]`, sign of the dividend: floats as C `fmod`; integers
    /// `x rem 0 = x`, signed `MIN rem -1 = 0`.
    VRem = 0x64, "vpu.rem", Vpu, VpuDiv, Numeric,
        (dst: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n), b: Read elems(t, n)];
    /// `dst[i] = min(a[i], b[i])`; floats: NaN if either is NaN, `min(-0, +0) = -0`.
    VMin = 0x65, "vpu.min", Vpu, VpuAlu, Numeric,
        (dst: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n), b: Read elems(t, n)];
    /// `dst[i] = max(a[i], b[i])`; floats: NaN if either is NaN, `max(-0, +0) = +0`.
    VMax = 0x66, "vpu.max", Vpu, VpuAlu, Numeric,
        (dst: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n), b: Read elems(t, n)];
    /// `dst[i] = a[i] & b[i]` (pred: logical and).
    VAnd = 0x67, "vpu.and", Vpu, VpuAlu, IntPred,
        (dst: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n), b: Read elems(t, n)];
    /// `dst[i] = a[i] | b[i]` (pred: logical or).
    VOr = 0x68, "vpu.or", Vpu, VpuAlu, IntPred,
        (dst: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n), b: Read elems(t, n)];
    /// `dst[i] = a[i] ^ b[i]` (pred: logical xor).
    VXor = 0x69, "vpu.xor", Vpu, VpuAlu, IntPred,
        (dst: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n), b: Read elems(t, n)];
    /// `dst[i] = a[i] << b[i]`; `b[i]` read as unsigned; `>= bits(t)` gives 0.
    VShl = 0x6a, "vpu.shl", Vpu, VpuAlu, Int,
        (dst: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n), b: Read elems(t, n)];
    /// Logical right shift; `b[i]` read as unsigned; `>= bits(t)` gives 0.
    VShr = 0x6b, "vpu.shr", Vpu, VpuAlu, Int,
        (dst: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n), b: Read elems(t, n)];
    /// Arithmetic right shift (sign fill, also for unsigned types); `b[i]` read as unsigned;
    /// `>= bits(t)` fills with the sign bit.
    VSra = 0x6c, "vpu.sra", Vpu, VpuAlu, Int,
        (dst: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n), b: Read elems(t, n)];
    /// `dst[i] = pow(a[i], b[i])` (C `pow` semantics).
    VPow = 0x6d, "vpu.pow", Vpu, VpuTrans, Float,
        (dst: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n), b: Read elems(t, n)];
    /// `dst[i] = atan2(a[i], b[i])` (C `atan2` semantics).
    VAtan2 = 0x6e, "vpu.atan2", Vpu, VpuTrans, Float,
        (dst: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n), b: Read elems(t, n)];

    // ------------------------------------------------------------------ VPU unary (ALU)
    /// `dst[i] = a[i]` (copy).
    VMov = 0x70, "vpu.mov", Vpu, VpuAlu, Any,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = -a[i]` (integers wrap: `-MIN = MIN`; unsigned: `0 - a`; floats flip the sign
    /// bit, NaN included: `-NaN` keeps the payload, as XLA's negate).
    VNeg = 0x71, "vpu.neg", Vpu, VpuAlu, Numeric,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = |a[i]|` (signed `|MIN| = MIN`; unsigned: identity; floats clear the sign bit).
    VAbs = 0x72, "vpu.abs", Vpu, VpuAlu, Numeric,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = sign(a[i])`: -1, 0 or 1; floats: ±1.0, ±0 kept, NaN stays NaN.
    VSign = 0x73, "vpu.sign", Vpu, VpuAlu, Numeric,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = floor(a[i])`.
    VFloor = 0x74, "vpu.floor", Vpu, VpuAlu, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = ceil(a[i])`.
    VCeil = 0x75, "vpu.ceil", Vpu, VpuAlu, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// Round to the nearest integer, halfway cases away from zero.
    VRound = 0x76, "vpu.round", Vpu, VpuAlu, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// Round to the nearest integer, halfway cases to even.
    VRoundEven = 0x77, "vpu.roundeven", Vpu, VpuAlu, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = !a[i]` (bitwise; pred: logical not).
    VNot = 0x78, "vpu.not", Vpu, VpuAlu, IntPred,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = ` number of one bits of `a[i]`.
    VPopcnt = 0x79, "vpu.popcnt", Vpu, VpuAlu, Int,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = ` number of leading zero bits of `a[i]` within `bits(t)`.
    VClz = 0x7a, "vpu.clz", Vpu, VpuAlu, Int,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = ` 1 if `a[i]` is finite (not ±inf, not NaN), else 0; `dst` has type **pred**
    /// (one byte per element), `a` has type `t`.
    VIsFinite = 0x7b, "vpu.isfinite", Vpu, VpuAlu, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(PRED, n), a: Read elems(t, n)];

    // ------------------------------------------------------------------ VPU transcendental
    /// `dst[i] = e^a[i]`.
    VExp = 0x80, "vpu.exp", Vpu, VpuTrans, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = e^a[i] - 1`.
    VExpm1 = 0x81, "vpu.expm1", Vpu, VpuTrans, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = ln(a[i])`.
    VLog = 0x82, "vpu.log", Vpu, VpuTrans, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = ln(1 + a[i])`.
    VLog1p = 0x83, "vpu.log1p", Vpu, VpuTrans, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = 1 / (1 + e^-a[i])`.
    VLogistic = 0x84, "vpu.logistic", Vpu, VpuTrans, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = sqrt(a[i])`.
    VSqrt = 0x85, "vpu.sqrt", Vpu, VpuTrans, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = 1 / sqrt(a[i])`.
    VRsqrt = 0x86, "vpu.rsqrt", Vpu, VpuTrans, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = cbrt(a[i])`.
    VCbrt = 0x87, "vpu.cbrt", Vpu, VpuTrans, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = tanh(a[i])`.
    VTanh = 0x88, "vpu.tanh", Vpu, VpuTrans, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = sin(a[i])`.
    VSin = 0x89, "vpu.sin", Vpu, VpuTrans, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = cos(a[i])`.
    VCos = 0x8a, "vpu.cos", Vpu, VpuTrans, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = tan(a[i])`.
    VTan = 0x8b, "vpu.tan", Vpu, VpuTrans, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];
    /// `dst[i] = erf(a[i])`.
    VErf = 0x8c, "vpu.erf", Vpu, VpuTrans, Float,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(t, n), a: Read elems(t, n)];

    // ------------------------------------------------------------------ VPU other
    /// `dst[i] = (a[i] cmp b[i]) ? 1 : 0`; `dst` has type **pred**, `a` and `b` type `t`.
    /// Floats compare as IEEE (`ne` is true and all others false if either is NaN;
    /// `-0 == +0`).
    VCmp = 0x90, "vpu.cmp", Vpu, VpuAlu, Any,
        (dst: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, cmp: CmpOp = 3, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(PRED, n), a: Read elems(t, n), b: Read elems(t, n)];
    /// `dst[i] = p[i] != 0 ? a[i] : b[i]`; `p` has type **pred**, `a`, `b`, `dst` type `t`.
    VSelect = 0x91, "vpu.select", Vpu, VpuAlu, Any,
        (dst: VAddr = 21, p: VAddr = 21, a: VAddr = 21, b: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6 }
        [dst: Write elems(t, n), p: Read elems(PRED, n), a: Read elems(t, n), b: Read elems(t, n)];
    /// `dst[i] = convert(a[i])` from type `from` to type `to` (conversion rules in the
    /// prelude); `dst` elements have type `to`, `a` elements type `from`.
    VCvt = 0x92, "vpu.cvt", Vpu, VpuCvt, Any,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, to: DType = 4, from: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6, pat: Option<Pat> = 16 }
        [dst: Write elems(to, n), a: Read elems(from, n)];
    /// `dst[i] = ` the low `size(t)` bytes of `s[src]` (read at issue), for `i < n`: fills a
    /// vector with a scalar (floats: put the bit pattern in the register).
    VSplat = 0x93, "vpu.splat", Vpu, VpuAlu, Any,
        (dst: VAddr = 21, src: SReg = 5)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6 }
        [dst: Write elems(t, n)];
    /// `dst[i] = convert_t((i / div) mod modulo)` for `i < n` (`div >= 1`, `modulo >= 1`):
    /// the index along one dimension of a row-major array, as HLO `iota` needs.
    VIota = 0x94, "vpu.iota", Vpu, VpuAlu, Numeric,
        (dst: VAddr = 21)
        { n: u32 = 20, div: u32 = 20, modulo: u32 = 20, t: DType = 4,
          wait: Option<Sem> = 6, signal: Option<Sem> = 6 }
        [dst: Write elems(t, n)];
    /// Broadcast a row: `dst[r·n + j] = a[j]` for `r < rows`, `j < n`.
    VBcast = 0x95, "vpu.bcast", Vpu, VpuAlu, Any,
        (dst: VAddr = 21, a: VAddr = 21)
        { n: u32 = 20, rows: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6 }
        [dst: Write matrix(t, rows, n), a: Read elems(t, n)];
    /// Transpose a row-major `rows × cols` matrix: `dst[j·rows + i] = a[i·cols + j]` for
    /// `i < rows`, `j < cols`. Cross-lane unit.
    VTranspose = 0x96, "vpu.transpose", Vpu, VpuXlane, Any,
        (dst: VAddr = 21, a: VAddr = 21)
        { rows: u32 = 20, cols: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6 }
        [dst: Write matrix(t, cols, rows), a: Read matrix(t, rows, cols)];
    /// Reduce each row of a row-major `rows × cols` matrix (`cols >= 1`): for `r < rows`,
    /// `acc = a[r·cols]`, then `acc = op(acc, a[r·cols + j])` for `j = 1 .. cols-1` in order
    /// (floats rounded after every step); `dst[r] = acc`. `and`/`or`/`xor` need integer or
    /// pred types; `add`/`mul` need integer or float types. Cross-lane unit.
    VReduce = 0x97, "vpu.reduce", Vpu, VpuXlane, Any,
        (dst: VAddr = 21, a: VAddr = 21)
        { rows: u32 = 20, cols: u32 = 20, t: DType = 4, op: RedOp = 3,
          wait: Option<Sem> = 6, signal: Option<Sem> = 6 }
        [dst: Write elems(t, rows), a: Read matrix(t, rows, cols)];
    /// Gather (general permute): `dst[i] = a[idx[i]]` for `i < n`, where `idx` holds u32
    /// element indices (4 bytes each, little-endian) and `a[k]` is at `A(a) + k·size(t)`.
    /// Cross-lane unit.
    VGather = 0x98, "vpu.gather", Vpu, VpuXlane, Any,
        (dst: VAddr = 21, a: VAddr = 21, idx: VAddr = 21)
        { n: u32 = 20, t: DType = 4, wait: Option<Sem> = 6, signal: Option<Sem> = 6 }
        [dst: Write elems(t, n), a: Read gathered(t, n), idx: Read elems(U32, n)];
    /// Scatter with a combiner: for `i = 0 .. n-1` **in order**, `k = idx[i]` (u32 element
    /// indices as in `vpu.gather`); if `k < s[lim]` (`lim` read at dispatch) then
    /// `dst[k] = a[i]` when `set = 1`, else `dst[k] = op(dst[k], a[i])` (`op` as in
    /// `vpu.reduce`, floats rounded after every step). An index `k >= s[lim]` is dropped: no
    /// access, no error (out-of-range updates are discarded in hardware). Duplicate indices
    /// combine in the order of `i`, so the result is deterministic. `dst` is the `s[lim]`
    /// elements at `A(dst)` (read and written); `a` and `idx` are read before `dst` is
    /// written. Cross-lane unit; busy as for `n` elements.
    VScatter = 0x99, "vpu.scatter", Vpu, VpuXlane, Any,
        (dst: VAddr = 21, a: VAddr = 21, idx: VAddr = 21, lim: SReg = 5)
        { n: u32 = 20, t: DType = 4, op: RedOp = 3, set: bool = 1,
          wait: Option<Sem> = 6, signal: Option<Sem> = 6 }
        [dst: Update scattered(t, n), a: Read elems(t, n), idx: Read elems(U32, n)];

    // ------------------------------------------------------------------ host queues
    /// Take the next `len` bytes of this core's infeed stream (in the order the host pushed
    /// them) and write them at `A(dst)`; completes when all have arrived.
    Infeed = 0xa0, "infeed", Infeed, Infeed, NoType,
        (dst: MemRef = 39)
        { len: u32 = 32, wait: Option<Sem> = 6, signal: Option<Sem> = 6 }
        [dst: Write bytes(len)];
    /// Append the `len` bytes at `A(src)` to this core's outfeed stream; completes when the
    /// host has received them.
    Outfeed = 0xa1, "outfeed", Outfeed, Outfeed, NoType,
        (src: MemRef = 39)
        { len: u32 = 32, wait: Option<Sem> = 6, signal: Option<Sem> = 6 }
        [src: Read bytes(len)];

    // ------------------------------------------------------------------ ICI
    /// Send the `len` bytes at `A(src)` to the chip whose replica id is `s[peer]` (read at
    /// issue), with tag `tag`. Matches, in FIFO order, the `ici.recv` on that chip with the
    /// same tag whose `peer` is this chip. Completes when the data has been delivered.
    IciSend = 0xb0, "ici.send", Ici, Ici, NoType,
        (peer: SReg = 5, src: MemRef = 39)
        { len: u32 = 32, tag: u32 = 16, wait: Option<Sem> = 6, signal: Option<Sem> = 6 }
        [src: Read bytes(len)];
    /// Receive `len` bytes from the chip whose replica id is `s[peer]` sent with tag `tag`,
    /// writing them at `A(dst)`; a length mismatch with the matching send is an error.
    /// Completes when all bytes have arrived.
    IciRecv = 0xb1, "ici.recv", Ici, Ici, NoType,
        (peer: SReg = 5, dst: MemRef = 39)
        { len: u32 = 32, tag: u32 = 16, wait: Option<Sem> = 6, signal: Option<Sem> = 6 }
        [dst: Write bytes(len)];
    /// Occupies this core's ICI unit for `cycles` cycles, then completes; moves no data. The
    /// analytic backend's stand-in for a collective's transfers (`--ici analytic`: their
    /// α-β closed form, `sim::ici_model`).
    IciModel = 0xb2, "ici.model", Ici, Ici, NoType,
        ()
        { cycles: u32 = 32, wait: Option<Sem> = 6, signal: Option<Sem> = 6 };
}

impl Inst {
    /// The DMA descriptor an instruction names (`desc=`), if any.
    pub fn dma_desc(&self) -> Option<u32> {
        match *self {
            Inst::DmaCopy { desc, .. }
            | Inst::DmaGather { desc, .. }
            | Inst::DmaScatter { desc, .. } => Some(desc),
            _ => None,
        }
    }
    /// Whether an instruction's DMA descriptor is indexed by a row list (exactly one
    /// dimension).
    pub fn is_indexed_dma(&self) -> bool {
        matches!(self, Inst::DmaGather { .. } | Inst::DmaScatter { .. })
    }
    /// Assembly mnemonic.
    pub fn mnemonic(&self) -> &'static str {
        self.opcode().mnemonic()
    }
    /// Executing unit.
    pub fn unit(&self) -> Unit {
        self.opcode().unit()
    }
    /// Timing class.
    pub fn timing(&self) -> TimingClass {
        self.opcode().timing()
    }
    /// Assembly text with the given context (labels or `@N` targets).
    pub fn to_asm(&self, ctx: &FmtCtx) -> String {
        let ops = self.fmt_operands(ctx);
        if ops.is_empty() {
            self.mnemonic().to_string()
        } else {
            format!("{} {}", self.mnemonic(), ops)
        }
    }
}

impl std::fmt::Display for Inst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_asm(&FmtCtx::default()))
    }
}
