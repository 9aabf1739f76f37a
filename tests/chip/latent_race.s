.dma 0 len=64
    vpu.splat [s0+512], s0, n=16, t=s32, signal=sem1
    dma.copy hbm[s0+0], vmem[s0+512], desc=0
    fence
    halt
