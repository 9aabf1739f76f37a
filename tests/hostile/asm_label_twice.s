a:
a:
    halt
