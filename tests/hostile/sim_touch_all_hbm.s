.dma 0 len=65536 dims=[(16384,0,65536)]
    dma.copy hbm[s0], vmem[s0], desc=0, signal=sem0
    sem.wait sem0, n=1
    halt
