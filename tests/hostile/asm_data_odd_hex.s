.data hbm 0 012
    halt
