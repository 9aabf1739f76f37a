; a DMA of 2^32 x 2^32 x 64 bytes over the same 64 bytes (stride 0)
.dma 0 len=64 dims=[(4294967295,0,0),(4294967295,0,0)]
    dma.copy vmem[s0], hbm[s0], desc=0, signal=sem0
    sem.wait sem0, n=1
    halt
