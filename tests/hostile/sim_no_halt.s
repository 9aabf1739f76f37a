loop:
    s.addi s1, s1, 1
    jmp loop
