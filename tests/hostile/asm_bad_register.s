    s.li s99, 1
    halt
