//! Statistics add up (busy + stall + idle = total cycles for every unit) and count what the
//! program did; trace events carry the HLO symbol of their instruction.

use arch::ArchConfig;
use sim::trace::{OwnedTraceEvent, TraceEvent, TraceSink};
use sim::{SimOptions, System};
use std::sync::{Arc, Mutex};

const PROG: &str = r#"
.data hbm 0 0102030405060708
.dma 0 len=64
.dma 1 len=256
.hlo "load.1"
    dma.copy vmem[s0+0], hbm[s0+0], desc=0, signal=sem0
.hlo "dot.2"
    mxu.ldw [s0+0], mxu=0, k=8, n=8, stride=8, mode=int8, wait=sem0
    mxu.matmul [s0+0], acc[s0+0], mxu=0, m=8, k=8, stride=8, mode=int8, accumulate=0
    mxu.st [s0+1024], acc[s0+0], mxu=0, m=8, n=8, stride=32, signal=sem1
.hlo "add.3"
    vpu.add [s0+2048], [s0+1024], [s0+1024], n=64, t=s32, wait=sem1, signal=sem2
.hlo -
    sem.wait sem2, n=1
    s.li s1, 3
loop:
    s.addi s1, s1, -1
    bne s1, s0, loop
    dma.copy hbm[s0+4096], vmem[s0+2048], desc=1
    halt
"#;

struct Shared(Arc<Mutex<Vec<OwnedTraceEvent>>>);
impl TraceSink for Shared {
    fn event(&mut self, e: &TraceEvent<'_>) {
        self.0.lock().unwrap().push(e.into());
    }
}

fn run(functional: bool) -> (System, u64, Vec<OwnedTraceEvent>) {
    let prog = isa::asm::assemble(PROG).unwrap();
    let a = ArchConfig::preset("mini").unwrap();
    let mut sys = System::new(
        &a,
        prog,
        1,
        SimOptions {
            functional,
            ..Default::default()
        },
    )
    .unwrap();
    let ev = Arc::new(Mutex::new(Vec::new()));
    sys.set_trace(Box::new(Shared(ev.clone())));
    let cycles = sys.run().unwrap().cycles;
    let v = ev.lock().unwrap().clone();
    (sys, cycles, v)
}

#[test]
fn busy_stall_idle_add_up_for_every_unit() {
    for functional in [true, false] {
        let (sys, cycles, _) = run(functional);
        let st = sys.stats();
        assert_eq!(st.value("chip0.cycles"), Some(cycles));
        let mut units = 0;
        for e in st.iter() {
            let Some(prefix) = e.decl.name.strip_suffix(".busy_cycles") else {
                continue;
            };
            units += 1;
            let get = |s: &str| st.value(&format!("{prefix}.{s}")).unwrap();
            let (busy, stall, idle) = (get("busy_cycles"), get("stall_cycles"), get("idle_cycles"));
            assert_eq!(
                busy + stall + idle,
                cycles,
                "{prefix}: {busy} + {stall} + {idle} != {cycles}"
            );
            let by_reason: u64 = st
                .iter()
                .filter(|x| x.decl.name.starts_with(&format!("{prefix}.stall_cycles.")))
                .map(|x| x.value)
                .sum();
            assert_eq!(by_reason, stall, "{prefix}: stall reasons");
        }
        assert_eq!(units, 7, "seq, dma, vpu, infeed, outfeed, mxu0, ici");
        // Somebody waited on something: the MXU for its weights' DMA, the sequencer for sem2.
        assert!(st.value("chip0.core0.mxu0.stall_cycles.semaphore").unwrap() > 0);
        assert!(st.value("chip0.core0.seq.stall_cycles.semaphore").unwrap() > 0);
        assert!(st.value("chip0.core0.mxu0.busy_cycles").unwrap() > 0);
    }
}

#[test]
fn counters_count_what_the_program_did() {
    let (sys, _, _) = run(true);
    let st = sys.stats();
    // 5 unit instructions + sem.wait + s.li + 3 × (addi, bne) + halt
    assert_eq!(
        st.value("chip0.core0.seq.instructions"),
        Some(5 + 1 + 1 + 6 + 1 + 1)
    );
    assert_eq!(st.value("chip0.core0.seq.dispatched"), Some(6));
    assert_eq!(st.value("chip0.core0.seq.branches_taken"), Some(2));
    assert_eq!(st.value("chip0.core0.mxu0.instructions"), Some(3));
    assert_eq!(st.value("chip0.core0.mxu0.flops"), Some(2 * 8 * 8 * 8));
    assert_eq!(st.value("chip0.core0.vpu.elements"), Some(64));
    assert_eq!(
        st.value("chip0.core0.vpu.flops"),
        Some(0),
        "s32 adds are not FLOPs"
    );
    assert_eq!(st.value("chip0.hbm.bytes_read"), Some(64));
    assert_eq!(st.value("chip0.hbm.bytes_written"), Some(256));
    assert_eq!(st.value("chip0.core0.dma.bytes"), Some(64 + 256));
    for e in st.iter() {
        assert!(
            !e.decl.unit.is_empty() && !e.decl.desc.is_empty(),
            "{}",
            e.decl.name
        );
    }
    // Functional result: 2 × (X·W) where X = W = the 8×8 bytes (first 8 set, rest 0).
    let out = sys.hbm(0).unwrap().read_vec(4096, 256).unwrap();
    let w: Vec<i32> = (0..64).map(|i| if i < 8 { i + 1 } else { 0 }).collect();
    for i in 0..8 {
        for j in 0..8 {
            let dot: i32 = (0..8).map(|k| w[i * 8 + k] * w[k * 8 + j]).sum();
            let o = (i * 8 + j) * 4;
            assert_eq!(
                i32::from_le_bytes(out[o..o + 4].try_into().unwrap()),
                2 * dot
            );
        }
    }
}

#[test]
fn trace_events_carry_hlo_symbols() {
    let (_, cycles, ev) = run(true);
    // The units' slices; the sequencer's track has its own (checked below).
    let (seq, ev): (Vec<_>, Vec<_>) = ev.into_iter().partition(|e| e.unit == "core0.seq");
    let find = |name: &str| {
        ev.iter()
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    // The sequencer issues every instruction (one slice each: the loop's 3 `s.addi`), and its
    // wait at `sem.wait sem2` is a blocked slice ending when the VPU's add signals.
    assert_eq!(seq.iter().filter(|e| e.name == "s.addi").count(), 3);
    assert_eq!(seq.iter().filter(|e| e.name == "mxu.matmul").count(), 1);
    let blocked = seq
        .iter()
        .find(|e| e.name == "blocked: semaphore")
        .expect("a blocked slice");
    assert!(blocked.end > blocked.start);
    assert!(blocked.end >= find("vpu.add").end, "{blocked:?}");
    assert_eq!(find("mxu.matmul").symbol.as_deref(), Some("dot.2"));
    assert_eq!(find("mxu.matmul").unit, "core0.mxu0");
    assert_eq!(find("vpu.add").symbol.as_deref(), Some("add.3"));
    let dmas: Vec<_> = ev.iter().filter(|e| e.name == "dma.copy").collect();
    assert_eq!(dmas.len(), 2);
    assert_eq!(dmas[0].symbol.as_deref(), Some("load.1"));
    assert_eq!(dmas[1].symbol, None);
    assert!(ev.iter().all(|e| e.start <= e.end && e.end <= cycles));
    // Bytes for the counter tracks: the load moves 64 bytes over the HBM link (whole bursts)
    // and into VMEM; the matmul reads its 8x8 int8 operand from VMEM; the scalar loop none.
    assert!(dmas[0].hbm_bytes >= 64, "{:?}", dmas[0]);
    assert_eq!(dmas[0].vmem_bytes, 64);
    assert_eq!(find("mxu.matmul").vmem_bytes, 64);
    assert_eq!(find("mxu.matmul").hbm_bytes, 0);
    assert!(
        find("vpu.add").vmem_bytes >= 3 * 256,
        "{:?}",
        find("vpu.add")
    );
}

#[test]
fn runs_are_deterministic() {
    let (s1, c1, e1) = run(true);
    let (s2, c2, e2) = run(true);
    assert_eq!(c1, c2);
    assert_eq!(e1, e2);
    assert_eq!(s1.stats().to_json(), s2.stats().to_json());
}

#[test]
fn replicas_run_concurrently_with_their_own_ids() {
    // Each chip writes its replica id and the number of replicas to HBM, then waits a number
    // of cycles proportional to its id: the system ends when the slowest chip halts.
    let asm = r#"
.dma 0 len=16
    s.csr s1, csr=replica_id
    s.csr s2, csr=num_replicas
    s.st s1, [s0+0], t=s64
    s.st s2, [s0+8], t=s64
    dma.copy hbm[s0+0], vmem[s0+0], desc=0, signal=sem0
    sem.wait sem0, n=1
loop:
    beq s1, s0, done
    s.addi s1, s1, -1
    jmp loop
done:
    halt
"#;
    let prog = isa::asm::assemble(asm).unwrap();
    let a = ArchConfig::preset("mini").unwrap(); // a ring of 4 chips, one core each
    let run = || {
        let mut sys = System::new(&a, prog.clone(), 3, SimOptions::default()).unwrap();
        let c = sys.run().unwrap().cycles;
        (sys, c)
    };
    let (sys, cycles) = run();
    let mut per_chip = Vec::new();
    for chip in 0..3 {
        let b = sys.hbm(chip).unwrap().read_vec(0, 16).unwrap();
        assert_eq!(u64::from_le_bytes(b[..8].try_into().unwrap()), chip as u64);
        assert_eq!(u64::from_le_bytes(b[8..].try_into().unwrap()), 3);
        per_chip.push(
            sys.stats()
                .value(&format!("chip{chip}.core0.seq.busy_cycles"))
                .unwrap(),
        );
    }
    // chip i loops i times (beq not taken, addi, jmp taken = 1 + 1 + 1 + penalty cycles more)
    let pen = a.sequencer.branch_penalty as u64;
    assert_eq!(per_chip[1] - per_chip[0], 3 + pen);
    assert_eq!(per_chip[2] - per_chip[1], 3 + pen);
    assert_eq!(sys.stats().value("chip2.cycles"), Some(cycles));
    assert_eq!(run().1, cycles);
    assert!(
        System::new(&a, prog, 5, SimOptions::default()).is_err(),
        "the mini pod has 4 chips"
    );
}
