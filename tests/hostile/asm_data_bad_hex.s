.data hbm 0 0g
    halt
