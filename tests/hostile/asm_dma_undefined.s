    dma.copy vmem[s0], hbm[s0], desc=3, signal=sem0
    halt
