    s.li s1, 3
here:
    beq s1, s1, here
    halt
