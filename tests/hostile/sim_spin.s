loop:
    jmp loop
