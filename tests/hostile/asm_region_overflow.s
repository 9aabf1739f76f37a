.region "r" hbm 18446744073709551615 10
    halt
