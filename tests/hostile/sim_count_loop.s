loop:
    s.addi s1, s1, 1
    bne s1, s0, loop
    halt
