    sem.wait sem3, n=1
    halt
