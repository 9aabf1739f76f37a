    jmp @100
