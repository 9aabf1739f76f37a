.frob 1
    halt
