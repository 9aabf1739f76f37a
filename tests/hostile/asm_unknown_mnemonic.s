    frob s1, s2
    halt
