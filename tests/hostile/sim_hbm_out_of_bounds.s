    s.li s1, 1073741824
    dma.copy vmem[s0], hbm[s1], desc=0, signal=sem0
    sem.wait sem0, n=1
    halt
.dma 0 len=64
