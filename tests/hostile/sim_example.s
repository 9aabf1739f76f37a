; C[8x8] (s32) = max(A[8x8] · W[8x8] + bias[8], 0); A all ones, W the identity.
.region "A" hbm 0 64
.region "W" hbm 64 64
.region "bias" hbm 128 32
.region "C" hbm 256 256
.dma 0 len=64                                            ; 64 contiguous bytes
.dma 1 len=32
.dma 2 len=256
.data hbm 0 01010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101
.data hbm 64 01000000000000000001000000000000000001000000000000000001000000000000000001000000000000000001000000000000000001000000000000000001
.data hbm 128 0100000002000000030000000400000005000000060000000700000008000000
.hlo "dot.1"
    s.li s1, 64
    s.li s2, 128
    s.li s3, 256
    dma.copy vmem[s0], hbm[s0], desc=0, signal=sem0        ; A -> VMEM 0
    dma.copy vmem[s1], hbm[s1], desc=0, signal=sem1        ; W -> VMEM 64
    dma.copy vmem[s2], hbm[s2], desc=1, signal=sem2        ; bias -> VMEM 128
    mxu.ldw [s1], mxu=0, k=8, n=8, stride=8, mode=int8, wait=sem1
    mxu.matmul [s0], acc[s0], mxu=0, m=8, k=8, stride=8, mode=int8, accumulate=0, wait=sem0
    mxu.st [s3], acc[s0], mxu=0, m=8, n=8, stride=32, signal=sem3   ; s32 rows -> VMEM 256
.hlo "add.2"
    s.li s4, 512
    vpu.bcast [s4], [s2], n=8, rows=8, t=s32, wait=sem2    ; bias row x 8 -> VMEM 512
    vpu.add [s3], [s3], [s4], n=64, t=s32, wait=sem3
.hlo "maximum.3"
    vpu.splat [s4], s0, n=64, t=s32                        ; zeros (in order after the add)
    vpu.max [s3], [s3], [s4], n=64, t=s32, signal=sem4
    dma.copy hbm[s3], vmem[s3], desc=2, wait=sem4, signal=sem5
.hlo -
    sem.wait sem5, n=1
    halt
