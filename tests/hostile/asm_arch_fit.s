mxu.ldw [s1], mxu=9, k=8, n=8, stride=8, mode=int8
halt
