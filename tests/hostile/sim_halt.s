    halt
