    s.li s1, 1
    haÿlt
