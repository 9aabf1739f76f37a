    s.li s1
    halt
