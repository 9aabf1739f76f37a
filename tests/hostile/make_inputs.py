"""Writes the hostile-input suite (the input files and MANIFEST) into this folder.

Run from anywhere: `python3 tests/hostile/make_inputs.py` (needs a built `systole`, found via
$SYSTOLE or target/release/systole, to assemble the program-binary seeds and print the `mini`
arch). The expected exit codes and fragments were each checked by hand; `cli/tests/hostile.rs`
runs the suite.
"""
import os, struct, random, json, subprocess, tempfile
D=os.path.dirname(os.path.abspath(__file__))
os.chdir(D)
S=os.environ.get('SYSTOLE', os.path.join(D, '..', '..', 'target', 'release', 'systole'))
M=[]  # (exit, args, fragment)
def w(name, data):
    mode='wb' if isinstance(data,bytes) else 'w'
    with open(name,mode) as f: f.write(data)
def hlo(body, header="HloModule m"):
    return header+"\n\n"+body
def entry(lines):
    return hlo("ENTRY main {\n"+"\n".join("  "+l for l in lines)+"\n}\n")
def add(exit, args, frag): M.append((exit,args,frag))

# ---------- HLO: check ----------
hc = {
 'hlo_empty.hlo': ("", 2, ""),
 'hlo_whitespace.hlo': ("   \n\n\t\n", 2, ""),
 'hlo_truncated.hlo': ("HloModule m\n\nENTRY main {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] neg", 2, "hlo_truncated.hlo:"),
 'hlo_unknown_opcode.hlo': (entry(["ROOT x = f32[] frobnicate()"]), 2, "hlo_unknown_opcode.hlo:4:"),
 'hlo_bad_type.hlo': (entry(["ROOT x = q99[2] parameter(0)"]), 2, "hlo_bad_type.hlo:4:"),
 'hlo_negative_dim.hlo': (entry(["ROOT x = f32[-5] parameter(0)"]), 2, "hlo_negative_dim.hlo:4:"),
 'hlo_dim_overflow.hlo': (entry(["ROOT x = f32[99999999999999999999999] parameter(0)"]), 2, "hlo_dim_overflow.hlo:4:"),
 'hlo_elements_overflow.hlo': (entry(["ROOT x = f32[4294967296,4294967296,4294967296] parameter(0)"]), 2, "hlo_elements_overflow.hlo:"),
 'hlo_no_entry.hlo': (hlo("c {\n  ROOT x = f32[] constant(1)\n}\n"), 0, "hlo_no_entry.hlo: ok"),
 'hlo_duplicate_names.hlo': (entry(["a = f32[] constant(1)","a = f32[] constant(2)","ROOT r = f32[] add(a, a)"]), 2, "hlo_duplicate_names.hlo:5:"),
 'hlo_undefined_operand.hlo': (entry(["ROOT r = f32[] add(a, b)"]), 2, "hlo_undefined_operand.hlo:4:"),
 'hlo_self_cycle.hlo': (entry(["a = f32[] add(b, b)","b = f32[] add(a, a)","ROOT r = f32[] add(a, b)"]), 2, "hlo_self_cycle.hlo"),
 'hlo_recursive_call.hlo': (hlo("c {\n  cp = f32[] parameter(0)\n  ROOT cr = f32[] call(cp), to_apply=c\n}\n\nENTRY main {\n  x = f32[] constant(1)\n  ROOT r = f32[] call(x), to_apply=c\n}\n"), 2, "hlo_recursive_call.hlo"),
 'hlo_unclosed_brace.hlo': ("HloModule m\n\nENTRY main {\n  ROOT x = f32[] constant(1)\n", 2, "hlo_unclosed_brace.hlo:"),
 'hlo_deep_tuple_shape.hlo': (entry(["ROOT x = "+"("*100000+"f32[]"+")"*100000+" parameter(0)"]), 2, "hlo_deep_tuple_shape.hlo:4:"),
 'hlo_deep_parens_constant.hlo': (entry(["ROOT x = f32[1] constant("+"{"*100000+"1"+"}"*100000+")"]), 2, "hlo_deep_parens_constant.hlo:4:"),
 'hlo_huge_constant_number.hlo': (entry(["ROOT x = s32[] constant(99999999999999999999999999999999)"]), 2, "hlo_huge_constant_number.hlo:4:"),
 'hlo_constant_count_mismatch.hlo': (entry(["ROOT x = f32[3] constant({1, 2})"]), 2, "hlo_constant_count_mismatch.hlo:4:"),
 'hlo_big_shape_constant.hlo': (entry(["ROOT x = f32[1000000000000] constant({1})"]), 2, "hlo_big_shape_constant.hlo:4:"),
 'hlo_replica_count_huge.hlo': ("HloModule m, replica_count=99999999999\n\nENTRY main {\n  ROOT x = f32[] constant(1)\n}\n", 2, "replica_count"),
 'hlo_replica_count_zero.hlo': ("HloModule m, replica_count=0\n\nENTRY main {\n  ROOT x = f32[] constant(1)\n}\n", 2, "replica_count"),
 'hlo_bad_layout.hlo': (entry(["ROOT x = f32[2,3]{5,7} parameter(0)"]), 2, "hlo_bad_layout.hlo:4:"),
 'hlo_rank_mismatch_add.hlo': (entry(["a = f32[2] parameter(0)","b = f32[3] parameter(1)","ROOT r = f32[2] add(a, b)"]), 2, "hlo_rank_mismatch_add.hlo:6:"),
 'hlo_binary_garbage.hlo': (bytes(random.Random(7).randrange(256) for _ in range(4096)), 2, "hlo_binary_garbage.hlo:1:"),
 'hlo_nul_bytes.hlo': (b"HloModule m\n\nENTRY main {\n  ROOT x = f32[] con\x00stant(1)\n}\n", 2, "hlo_nul_bytes.hlo:4:"),
 'hlo_bom.hlo': ("\ufeff"+entry(["ROOT x = f32[] constant(1)"]), 2, "hlo_bom.hlo:1:1: error: expected 'HloModule'"),
 'hlo_invalid_utf8_header.hlo': (b"HloModule m\xc3\n\nENTRY main {\n  ROOT x = f32[] constant(1)\n}\n", 2, "hlo_invalid_utf8_header.hlo:1:12: error: invalid UTF-8"),
 'hlo_invalid_utf8_comment.hlo': (b"HloModule m\n\n/* \xe2\x82 */ENTRY main {\n  ROOT x = f32[] constant(1)\n}\n", 2, "hlo_invalid_utf8_comment.hlo:3:4: error: invalid UTF-8"),
 'hlo_huge_window_attr.hlo': (entry(["x = f32[4] parameter(0)","z = f32[] constant(0)","ROOT r = f32[4] reduce-window(x, z), window={size=99999999999999999999}, to_apply=add"]), 2, "hlo_huge_window_attr.hlo:6:"),
 'hlo_many_dims.hlo': (entry(["ROOT x = f32["+",".join(["1"]*5000)+"] parameter(0)"]), 2, "hlo_many_dims.hlo:4:"),
}
for n,(t,e,f) in hc.items():
    w(n,t); add(e, f"check {n}", f)
# check of valid file & eval examples already present
add(0, "check small.hlo", "small.hlo: ok")
add(2, "check small.hlo missing.hlo", "missing.hlo: error: cannot read file")
add(2, "check hlo_empty.hlo hlo_unknown_opcode.hlo", "\\nhlo_unknown_opcode.hlo:4:")
add(2, "check .", ".: error: is a directory")
add(0, "fmt small.hlo", "ROOT")
add(2, "fmt hlo_truncated.hlo", "hlo_truncated.hlo:")
add(2, "check check_invalid_utf8.hlo", "check_invalid_utf8.hlo:5:22: error: invalid UTF-8")

# ---------- HLO: eval ----------
add(2, "eval eval_big_broadcast.hlo", "%b (result f32[1000000000]")
add(2, "eval eval_big_iota.hlo", "%i (result s32[200000000]")
add(0, "eval eval_reduce_window_huge_window.hlo", "{5}")
add(2, "eval eval_while_heavy.hlo --max-work 100000000", "--max-work")
add(2, "eval eval_call_fanout.hlo --max-work 10000000", "--max-work")
add(2, "eval eval_replicas_65536.hlo", "65536 replicas: the evaluator runs 1 to 4096")
add(2, "eval small.hlo --replicas 0", "0 replicas")
add(2, "eval small.hlo --replicas 100000", "100000 replicas")
add(2, "eval small.hlo --inputs case_dims_overflow.json", "needs more than 2^64 bytes")
add(2, "eval small.hlo --inputs case_null_huge.json", "literal f32[100000,100000]")
add(0, "eval small.hlo --random 5", "{")
add(2, "eval small.hlo --json /nonexistent-dir/out.json", "/nonexistent-dir/out.json: error: cannot write")
add(2, "eval small.hlo --max-memory 4X", "unknown unit")
add(2, "eval small.hlo --max-memory 99999999999999T", "more than 2^64")
add(2, "eval eval_iota_1m.hlo --max-memory 1M", "--max-memory")
add(2, "eval eval_iota_1m.hlo --max-work 1000", "--max-work")

evals = {
 'eval_iota_big_2d.hlo': (entry(["ROOT i = f32[100000,100000] iota(), iota_dimension=1"]), 2, "--max-memory"),
 'eval_dot_huge_contraction.hlo': (entry(["a = f32[1,2000000] broadcast(f32[] constant(1)), dimensions={}" ]), None, None),
 'eval_pad_huge.hlo': (entry(["x = f32[1] constant({1})","z = f32[] constant(0)","ROOT p = f32[3000000000] pad(x, z), padding=0_2999999999"]), 2, "--max-memory"),
 'eval_concat_big.hlo': (entry(["x = f32[300000000] parameter(0)","ROOT c = f32[600000000] concatenate(x, x), dimensions={0}"]), 2, "--max-memory"),
 'eval_random_unbounded_dynamic.hlo': (entry(["ROOT p = f32[<=1000000000000] parameter(0)"]), 2, "random"),
 'eval_broadcast_tuple_big.hlo': (entry(["c = f32[] constant(1)","a = f32[200000000] broadcast(c), dimensions={}","ROOT t = (f32[200000000], f32[200000000]) tuple(a, a)"]), 2, "--max-memory"),
 'eval_sort_big.hlo': (hlo("cmp {\n  ca = f32[] parameter(0)\n  cb = f32[] parameter(1)\n  ROOT lt = pred[] compare(ca, cb), direction=LT\n}\n\nENTRY main {\n  i = f32[50000000] iota(), iota_dimension=0\n  ROOT s = f32[50000000] sort(i), dimensions={0}, to_apply=cmp\n}\n"), 2, "--max-work"),
 'eval_infinite_while.hlo': (hlo("cond {\n  cp = s32[] parameter(0)\n  ROOT t = pred[] constant(true)\n}\n\nbody {\n  bp = s32[] parameter(0)\n  ROOT bq = s32[] add(bp, bp)\n}\n\nENTRY main {\n  z = s32[] constant(1)\n  ROOT w = s32[] while(z), condition=cond, body=body\n}\n"), 2, "resource limit"),
}
evals['eval_print_huge.hlo'] = (entry(["ROOT i = f32[30000000] iota(), iota_dimension=0"]), 2, "printing 30000000 result elements")
evals.pop('eval_dot_huge_contraction.hlo')
w('eval_dot_huge_contraction.hlo', entry(["c = f32[] constant(1)","a = f32[1000,5000] broadcast(c), dimensions={}","b = f32[5000,1000] broadcast(c), dimensions={}","ROOT d = f32[1000,1000] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"]))
add(2, "eval eval_dot_huge_contraction.hlo", "multiply-adds")
for n,(t,e,f) in evals.items():
    w(n,t); add(e, f"eval {n}" + (" --max-work 100000000" if 'sort' in n else ''), f)

# ---------- case.json ----------
def case(obj): return json.dumps(obj)
cases = {
 'case_not_json.json': ("{not json", 2, "case_not_json.json:1:2: error: key must be a string"),
 'case_empty.json': ("", 2, "case_empty.json:1:1: error: EOF while parsing"),
 'case_deep_nesting.json': ("["*100000+"]"*100000, 2, "case_deep_nesting.json:1:128: error: recursion limit exceeded"),
 'case_dims_negative.json': (case({"outputs":[],"inputs":[[{"type":"f32","dims":[-2],"data":[1,2]}]]}), 2, "bad dim -2"),
 'case_dims_string.json': (case({"outputs":[],"inputs":[[{"type":"f32","dims":["2"],"data":[1,2]}]]}), 2, "bad dim"),
 'case_dims_float.json': (case({"outputs":[],"inputs":[[{"type":"f32","dims":[2.5],"data":[1,2]}]]}), 2, "bad dim"),
 'case_dims_many.json': (case({"outputs":[],"inputs":[[{"type":"f32","dims":[1]*100,"data":[1]}]]}), 2, "more than the largest rank"),
 'case_count_mismatch.json': (case({"outputs":[],"inputs":[[{"type":"f32","dims":[2],"data":[1,2,3]}]]}), 2, "3 values for dims"),
 'case_unknown_type.json': (case({"outputs":[],"inputs":[[{"type":"f99","dims":[2],"data":[1,2]}]]}), 2, "unknown type f99"),
 'case_wrong_shape.json': (case({"outputs":[],"inputs":[[{"type":"f32","dims":[3],"data":[1,2,3]}]]}), 2, "argument 0 has shape f32[3]"),
 'case_wrong_type.json': (case({"outputs":[],"inputs":[[{"type":"s32","dims":[2],"data":[1,2]}]]}), 2, "argument 0"),
 'case_too_few_args.json': (case({"outputs":[],"inputs":[[]]}), 2, "takes 1 arguments, 0 given"),
 'case_no_inputs.json': (case({"outputs":[]}), 2, "inputs for 0 replica(s), 1 needed"),
 'case_data_not_list.json': (case({"outputs":[],"inputs":[[{"type":"f32","dims":[2],"data":"xy"}]]}), 2, "data must be a list"),
 'case_value_out_of_range.json': (case({"outputs":[],"inputs":[[{"type":"s8","dims":[2],"data":[1,1000]}]]}), 2, "1000 does not fit s8"),
 'case_replicas_huge.json': (case({"replicas":18446744073709551615,"outputs":[],"inputs":[[{"type":"f32","dims":[2],"data":[1,2]}]]}), 2, "replicas"),
 'case_many_null_literals.json': (case({"outputs":[],"inputs":[[{"type":"f32","dims":[20000,20000],"data":None}]*10]}), 2, "(with the literals before it)"),
 'case_tuple_nested_huge.json': (case({"outputs":[],"inputs":[[{"tuple":[{"type":"f64","dims":[100000,100000]}]}]]}), 2, "literal f64[100000,100000]"),
 'case_outputs_huge.json': (case({"outputs":[{"type":"c128","dims":[1000000,1000000]}],"inputs":[[{"type":"f32","dims":[2],"data":[1,2]}]]}), 2, "outputs[0]"),
 'case_infeed_huge.json': (case({"outputs":[],"infeed":[[{"type":"f32","dims":[4000000000]}]],"inputs":[[{"type":"f32","dims":[2],"data":[1,2]}]]}), 2, "infeed[0][0]"),
 'case_invalid_utf8.json': (b'{"outputs":[], "name":"\xff"}', 2, "case_invalid_utf8.json:1:24: error: invalid UTF-8"),
 'case_ok.json': (case({"outputs":[],"inputs":[[{"type":"f32","dims":[2],"data":[1,"nan"]}]]}), 0, "{-1, -nan}"),
}
for n,(t,e,f) in cases.items():
    w(n,t); add(e, f"eval small.hlo --inputs {n}", f)
add(2, "eval small.hlo --inputs case_dims_overflow.json --max-memory 100G", "more than 2^64")
add(2, "eval small.hlo --inputs nonexistent.json", "nonexistent.json: error: cannot read file")

# ---------- assembly ----------
asms = {
 'asm_empty.s': ("", 0, "0 instructions"),
 'asm_unknown_mnemonic.s': ("    frob s1, s2\n    halt\n", 2, "asm_unknown_mnemonic.s:1:5:"),
 'asm_bad_register.s': ("    s.li s99, 1\n    halt\n", 2, "asm_bad_register.s:1:"),
 'asm_label_twice.s': ("a:\na:\n    halt\n", 2, "asm_label_twice.s:2:1: error: label `a` defined twice"),
 'asm_branch_past_end.s': ("    jmp @100\n", 2, "asm_branch_past_end.s:1:"),
 'asm_huge_immediate.s': ("    s.li s1, 999999999999999999999999999\n    halt\n", 2, "asm_huge_immediate.s:1:"),
 'asm_dma_undefined.s': ("    dma.copy vmem[s0], hbm[s0], desc=3, signal=sem0\n    halt\n", 2, "asm_dma_undefined.s:1:"),
 'asm_dma_many_dims.s': (".dma 0 len=4 dims=[(1,0,0),(1,0,0),(1,0,0),(1,0,0),(1,0,0)]\n    halt\n", 2, "asm_dma_many_dims.s:1:"),
 'asm_data_bad_hex.s': (".data hbm 0 0g\n    halt\n", 2, "asm_data_bad_hex.s:1:"),
 'asm_data_odd_hex.s': (".data hbm 0 012\n    halt\n", 2, "asm_data_odd_hex.s:1:"),
 'asm_region_overflow.s': (".region \"r\" hbm 18446744073709551615 10\n    halt\n", 2, "asm_region_overflow.s"),
 'asm_unknown_directive.s': (".frob 1\n    halt\n", 2, "asm_unknown_directive.s:1:"),
 'asm_invalid_utf8.s': (b"    s.li s1, 1\n    ha\xfflt\n", 2, "asm_invalid_utf8.s:2:7: error: invalid UTF-8"),
 'asm_binary_garbage.s': (bytes(random.Random(11).randrange(256) for _ in range(2048)), 2, "asm_binary_garbage.s:1:"),
 'asm_missing_operand.s': ("    s.li s1\n    halt\n", 2, "asm_missing_operand.s:1:"),
 'asm_sem_out_of_range.s': ("    sem.wait sem999, n=1\n    halt\n", 2, "asm_sem_out_of_range.s:1:"),
}
for n,(t,e,f) in asms.items():
    w(n,t); add(e, f"asm {n} -o {{tmp}}/out.bin", f)
add(2, "asm asm_arch_fit.s --arch mini -o {tmp}/out.bin", "asm_arch_fit.s:1:1: error: does not fit arch `mini`")
add(2, "asm sim_halt.s -o /nonexistent-dir/out.bin", "/nonexistent-dir/out.bin: error: cannot write")
add(2, "asm sim_halt.s --arch no-such-arch -o {tmp}/out.bin", "unknown arch `no-such-arch`")
add(0, "asm sim_example.s -o {tmp}/out.bin", "17 instructions")

# ---------- sim ----------
add(1, "sim sim_count_loop.s --max-cycles 100000", "did not halt within 100000 cycles")
add(1, "sim sim_count_loop.s", "chip0.core0.seq at pc")
add(1, "sim sim_spin.s", "no progress: chip 0 core 0 pc 0 `jmp @0` jumps to itself")
add(1, "sim sim_self_branch.s", "pc 1 `beq s1, s1, @1` jumps to itself")
add(1, "sim sim_no_halt.s", "pc 1 `jmp @0` goes to pc 0, from which no path reaches a halt")
add(1, "sim sim_deadlock.s", "deadlock at cycle 0")
add(1, "sim sim_dma_huge.s", "past the limit of")
add(1, "sim sim_dma_huge.s --timing-only", "past the limit of")
add(0, "sim sim_example.s", "cycles: 116")
add(0, "sim sim_example.s --set hbm.gbps=0.001", "cycles:")
add(1, "sim sim_example.s --set hbm.latency_ns=1e9 --set clock_mhz=100000", "did not halt within")
add(2, "sim sim_halt.s --set hbm.gbps=1e-25", "hbm.gbps = 1e-25 is out of range")
add(2, "sim sim_halt.s --set hbm.latency_ns=1e300", "hbm.latency_ns = 1e300 is out of range")
add(2, "sim sim_halt.s --set hbm.bytes=18446744073709551615", "hbm.bytes = 18446744073709551615 is out of range")
add(2, "sim sim_halt.s --set hbm.gbps=nan", "hbm.gbps")
add(2, "sim sim_halt.s --set clock_mhz=0", "clock_mhz")
add(2, "sim sim_halt.s --set ici.dims=[65536,65536,65536]", "ici.dims")
add(2, "sim sim_halt.s --set mxu.acc_rows=1048576 --set mxu.cols=1024 --set mxu.rows=1024 --set mxu.count=16 --set cores_per_chip=64 --set vmem.bytes=68719476736", "accumulators and vector registers")
add(2, "sim sim_halt.s --replicas 0", "at least one replica")
add(2, "sim sim_halt.s --replicas 4294967295", "replicas do not fit")
add(2, "sim sim_halt.s --trace /nonexistent-dir/t.json", "/nonexistent-dir/t.json: error: cannot write")
add(2, "sim sim_halt.s --stats-json /nonexistent-dir/s.json", "/nonexistent-dir/s.json: error: cannot write")
add(2, "sim sim_halt.s --infeed nonexistent.bin", "nonexistent.bin: error: cannot read file")
add(0, "sim sim_halt.s --max-cycles 0", "cycles: 0")
add(1, "sim sim_count_loop.s --max-cycles 0", "did not halt within 0 cycles")
add(2, "sim asm_invalid_utf8.s", "asm_invalid_utf8.s:2:7: error: invalid UTF-8")
add(2, "sim asm_unknown_mnemonic.s", "asm_unknown_mnemonic.s:1:5:")
add(2, "sim hlo_binary_garbage.hlo", "hlo_binary_garbage.hlo:1:")
w('sim_hbm_out_of_bounds.s', "    s.li s1, 1073741824\n    dma.copy vmem[s0], hbm[s1], desc=0, signal=sem0\n    sem.wait sem0, n=1\n    halt\n.dma 0 len=64\n")
add(2, "sim sim_hbm_out_of_bounds.s", "outside capacity")
w('sim_touch_all_hbm.s', ".dma 0 len=65536 dims=[(16384,0,65536)]\n    dma.copy hbm[s0], vmem[s0], desc=0, signal=sem0\n    sem.wait sem0, n=1\n    halt\n")
add(2, "sim sim_touch_all_hbm.s --arch tpu-v4 --max-memory 64M --max-cycles 100000000000", "bytes for all simulated memories (--max-memory)")

# ---------- program binaries ----------
_tmp = tempfile.mkdtemp()
subprocess.check_call([S, 'asm', 'sim_example.s', '-o', _tmp + '/example.bin'], stderr=subprocess.DEVNULL)
ex = open(_tmp + '/example.bin','rb').read()
w('prog_ok.bin', ex)
bins = {
 'prog_empty.bin': (b"", 2, "prog_empty.bin"),
 'prog_magic_only.bin': (b"SYSTPRG\0", 2, "prog_magic_only.bin: error:"),
 'prog_bad_version.bin': (b"SYSTPRG\0"+struct.pack('<II', 99, 0), 2, "unsupported format version 99"),
 'prog_truncated.bin': (ex[:len(ex)//2], 2, "prog_truncated.bin: error:"),
 'prog_huge_section_len.bin': (b"SYSTPRG\0"+struct.pack('<II',1,1)+b"CODE"+struct.pack('<Q', 2**63), 2, "prog_huge_section_len.bin: error:"),
 'prog_huge_count.bin': (b"SYSTPRG\0"+struct.pack('<II',1,0xffffffff), 2, "prog_huge_count.bin: error:"),
 'prog_unknown_section.bin': (b"SYSTPRG\0"+struct.pack('<II',1,1)+b"ZZZZ"+struct.pack('<Q', 0), 2, "unknown section"),
 'prog_code_count_lie.bin': (b"SYSTPRG\0"+struct.pack('<II',1,1)+b"CODE"+struct.pack('<Q', 4)+struct.pack('<I',0xffffffff), 2, "prog_code_count_lie.bin: error:"),
 'prog_random.bin': (b"SYSTPRG\0"+bytes(random.Random(3).randrange(256) for _ in range(1000)), 2, "prog_random.bin: error:"),
}
for n,(t,e,f) in bins.items():
    w(n,t); add(e, f"disasm {n}", f)
rng=random.Random(99)
# Expected outcomes of the bit-flipped programs (reviewed): (sim exit, fragment), (disasm exit, fragment).
flips = [
 ((1, "deadlock at cycle"), (0, ".region")),
 ((2, "prog_flip1.bin: error: chip 0 core 0 pc 14"), (0, ".dma 2 len=131328")),
 ((2, "instruction 11: vpu.add: invalid value 0x2"), (2, "instruction 11: vpu.add: invalid value 0x2")),
 ((0, "cycles: 116"), (0, ".data hbm 0")),
 ((2, "symbol `dot.1`"), (2, "symbol `dot.1`")),
 ((2, "instruction 16: halt: reserved bits"), (2, "instruction 16: halt: reserved bits")),
 ((2, "data segment: HBM: access"), (0, ".data hbm 0")),
 ((2, "pc 8 `mxu.st"), (0, 'hbm 140737488355456')),
]
for i in range(8):
    b=bytearray(ex)
    for _ in range(3):
        b[rng.randrange(16,len(b))]^=1<<rng.randrange(8)
    n=f'prog_flip{i}.bin'; w(n, bytes(b))
    (se,sf),(de,df)=flips[i]
    add(se, f"sim {n} --max-cycles 1000000", sf)
    add(de, f"disasm {n}", df)
add(0, "disasm prog_ok.bin", "dma.copy")
add(0, "sim prog_ok.bin", "cycles: 116")
add(2, "disasm prog_ok.bin -o /nonexistent-dir/x.s", "/nonexistent-dir/x.s: error: cannot write")
add(2, "sim prog_empty.bin", "prog_empty.bin:")

# ---------- arch JSON ----------
mini = json.loads(subprocess.check_output([S,'arch','show','mini']))
def arch(n, mut, e, frag):
    a=json.loads(json.dumps(mini)); mut(a); w(n, json.dumps(a)); add(e, f"arch show {n}", frag)
def setp(path, v):
    def f(a):
        o=a; ks=path.split('.')
        for k in ks[:-1]: o=o[k]
        o[ks[-1]]=v
    return f
arch('arch_ok.json', lambda a: None, 0, '"name"')
arch('arch_hbm_huge.json', setp('hbm.bytes', 2**64-1), 2, "hbm.bytes = 18446744073709551615 is out of range: allowed 1..=1099511627776")
arch('arch_vmem_huge.json', setp('vmem.bytes', 2**63), 2, "vmem.bytes = 9223372036854775808 is out of range")
arch('arch_gbps_tiny.json', setp('hbm.gbps', 1e-300), 2, "hbm.gbps = 1e-300 is out of range")
arch('arch_latency_huge.json', setp('hbm.latency_ns', 1e300), 2, "hbm.latency_ns = 1e300 is out of range")
arch('arch_latency_negative.json', setp('host.latency_ns', -1), 2, "host.latency_ns must be a finite number >= 0")
arch('arch_clock_zero.json', setp('clock_mhz', 0), 2, "clock_mhz must be in (0, 100000]")
arch('arch_cores_huge.json', setp('cores_per_chip', 4294967295), 2, "cores_per_chip must be in 1..=64")
arch('arch_dims_overflow.json', setp('ici.dims', [4294967295, 4294967295, 4294967295]), 2, "ici.dims")
arch('arch_queue_huge.json', setp('sequencer.queue_depth', 4294967295), 2, "sequencer.queue_depth = 4294967295 is out of range")
arch('arch_dma_engines_huge.json', setp('dma.engines', 4294967295), 2, "dma.engines = 4294967295 is out of range")
arch('arch_lanes_huge.json', setp('vpu.lanes', 4294967295), 2, "vpu.lanes = 4294967295 is out of range")
arch('arch_setup_huge.json', setp('dma.setup_cycles', 4294967295), 2, "dma.setup_cycles = 4294967295 is out of range")
arch('arch_wrong_type.json', setp('hbm.bytes', "lots"), 2, 'invalid type: string "lots", expected u64')
arch('arch_missing_field.json', lambda a: a.pop('hbm'), 2, "missing field `hbm`")
w('arch_not_json.json', "{hbm: 1"); add(2, "arch show arch_not_json.json", "arch_not_json.json:1:2: key must be a string")
w('arch_invalid_utf8.json', b'{"name": "\xff"}'); add(2, "arch show arch_invalid_utf8.json", "arch_invalid_utf8.json:1:11: invalid UTF-8")
w('arch_deep.json', "["*100000+"]"*100000); add(2, "arch show arch_deep.json", "arch_deep.json:")
add(2, "arch show mini --set mxu.rows=99999999999", "mxu.rows")
add(2, "arch show mini --set no.such.key=1", "unknown config key `no.such.key`")
add(2, "arch show mini --set hbm.bytes", "bad override")
add(2, "arch show mini --set vpu.lanes=1e300", "vpu.lanes")
add(2, "sim sim_halt.s --arch arch_latency_huge.json", "hbm.latency_ns = 1e300 is out of range")
add(2, "sim sim_halt.s --arch nonexistent-arch.json", "unknown arch `nonexistent-arch.json`")

# ---------- rtl ----------
add(2, "rtl sim --arch mini --ops 18446744073709551615", "--ops 18446744073709551615")
add(2, "rtl sim --arch mini --ops 1000000000", "--ops 1000000000")
add(2, "rtl sim --arch mini --ops 0", "--ops must be at least 1")
add(2, "rtl sim --arch mini --trials 0", "--trials must be at least 1")
add(2, "rtl sim --arch mini --vcd /nonexistent-dir/x.vcd", "/nonexistent-dir/x.vcd: error: cannot write")
add(2, "rtl gen --arch mini -o /nonexistent-dir/x.v", "/nonexistent-dir/x.v: error: cannot write")
add(2, "rtl gen --arch mini -o .", ".: error: cannot write: is a folder")
add(2, "rtl gen --arch arch_hbm_huge.json -o {tmp}/x.v", "hbm.bytes")

# ---------- conformance folders ----------
os.makedirs('conf_hostile/huge_literal', exist_ok=True)
w('conf_hostile/huge_literal/module.hlo', open('small.hlo').read())
w('conf_hostile/huge_literal/case.json', case({"outputs":[],"inputs":[[{"type":"f32","dims":[100000,100000]}]]}))
os.makedirs('conf_hostile/not_utf8', exist_ok=True)
w('conf_hostile/not_utf8/module.hlo', b"HloModule m\xff\n")
w('conf_hostile/not_utf8/case.json', case({"outputs":[]}))
add(1, "conformance conf_hostile", "FAIL huge_literal: error: bad case: inputs[0][0]: resource limit: literal f32[100000,100000]")
add(1, "conformance conf_hostile", "FAIL not_utf8: error: bad case: conf_hostile/not_utf8/module.hlo:1:12: error: invalid UTF-8")
add(2, "conformance no-such-folder", "no-such-folder")
add(2, "conformance conf_hostile --engine sim", "not supported yet")

# ---------- usage ----------
add(2, "frobnicate", "unrecognized subcommand")
add(2, "eval", "Usage")
add(2, "sim sim_halt.s --max-cycles -1", "")
add(2, "eval small.hlo --max-work lots", "invalid value")

with open('MANIFEST','w') as f:
    f.write("# The hostile-input suite (docs/bounded.md): one case per line,\n")
    f.write("#   EXIT | ARGS | FRAGMENT\n")
    f.write("# EXIT: the expected exit code, or `any` where 0, 1 or 2 are all acceptable (mutated binaries);\n")
    f.write("# ARGS: systole's arguments, run in this folder ({tmp} is a fresh temporary folder);\n")
    f.write("# FRAGMENT: text the output (stdout + stderr) must contain (may be empty).\n")
    f.write("# Every case runs under `ulimit -v 4000000` and a 20 s timeout; a panic, abort, signal or timeout fails.\n")
    for e,a,fr in M:
        f.write(f"{'any' if e is None else e} | {a} | {fr}\n")
print(len(M))
