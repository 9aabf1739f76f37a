    s.li s1, 0
    s.li s2, 40
    s.li s3, 65536
loop:
    mxu.ldw [s0+0], mxu=0, k=128, n=128, stride=256, mode=bf16
    mxu.matmul [s3+0], acc[s0+0], mxu=0, m=1024, k=128, stride=256, mode=bf16, accumulate=1
    s.addi s1, s1, 1
    blt s1, s2, loop
    halt
