    sem.wait sem999, n=1
    halt
