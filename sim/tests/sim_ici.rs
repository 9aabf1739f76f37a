//! The inter-chip interconnect (docs/ici.md): matched send/receive, data delivery, link
//! bandwidth and sharing, hop latency, and the errors and deadlocks of mismatched programs.
//! Expected cycle differences are recomputed from `ArchConfig` fields by the documented
//! formulas, never from the simulator's own numbers.

use arch::ArchConfig;
use sim::{SimError, SimOptions, System};

fn mini(set: &[&str]) -> ArchConfig {
    ArchConfig::preset("mini")
        .unwrap()
        .with_overrides(set)
        .unwrap()
}

fn run(asm: &str, a: &ArchConfig, chips: u32, functional: bool) -> Result<(System, u64), SimError> {
    let prog = isa::asm::assemble(asm).unwrap_or_else(|e| panic!("{}", e.render("test.s")));
    let mut sys = System::new(
        a,
        prog,
        chips,
        SimOptions {
            functional,
            ..Default::default()
        },
    )?;
    let c = sys.run()?.cycles;
    Ok((sys, c))
}

/// Every chip sends `len` bytes (its replica id first) to the next chip of the ring and
/// receives from the previous one.
fn ring_shift(len: u64) -> String {
    format!(
        r#"
    s.csr s1, csr=replica_id
    s.csr s2, csr=num_replicas
    s.st s1, [s0+0], t=s64
    s.addi s3, s1, 1
    s.rem s3, s3, s2
    s.add s4, s1, s2
    s.addi s4, s4, -1
    s.rem s4, s4, s2
    ici.recv s4, vmem[s0+32768], len={len}, tag=7, signal=sem1
    ici.send s3, vmem[s0+0], len={len}, tag=7, signal=sem0
    sem.wait sem0, n=1
    sem.wait sem1, n=1
    halt
"#
    )
}

#[test]
fn ring_shift_delivers_each_chips_bytes_to_its_neighbour() {
    let a = mini(&[]);
    let (sys, _) = run(&ring_shift(64), &a, 4, true).unwrap();
    for chip in 0..4usize {
        let b = sys.vmem(chip, 0).unwrap().read_vec(32768, 8).unwrap();
        let got = u64::from_le_bytes(b.try_into().unwrap());
        assert_eq!(got, ((chip + 3) % 4) as u64, "chip {chip}");
    }
    assert_eq!(sys.stats().value("ici.bytes"), Some(4 * 64));
    assert_eq!(sys.stats().value("ici.chip0.x+.bytes"), Some(64));
}

#[test]
fn ici_queue_time_adds_up() {
    let a = mini(&[]);
    let (sys, cycles) = run(&ring_shift(8192), &a, 4, false).unwrap();
    let st = sys.stats();
    for chip in 0..4 {
        let get = |s: &str| st.value(&format!("chip{chip}.core0.ici.{s}")).unwrap();
        let (busy, stall, idle) = (get("busy_cycles"), get("stall_cycles"), get("idle_cycles"));
        assert_eq!(busy + stall + idle, cycles, "chip {chip}");
        assert!(busy > 0, "chip {chip}");
    }
    assert!(st.value("ici.chip2.x+.busy").unwrap() > 0);
}

#[test]
fn transfer_time_is_bytes_over_link_bandwidth() {
    // Doubling the bytes adds exactly ceil(2L/bw) - ceil(L/bw) cycles (one link per transfer,
    // no sharing); the timing-only run takes the same cycles as the functional one.
    let a = mini(&[]);
    let bw = a.bytes_per_cycle(a.ici.gbps_per_link);
    let (l1, l2) = (4096u64, 8192u64);
    let c1 = run(&ring_shift(l1), &a, 4, true).unwrap().1;
    let c2 = run(&ring_shift(l2), &a, 4, true).unwrap().1;
    let t2 = run(&ring_shift(l2), &a, 4, false).unwrap().1;
    let want = (l2 as f64 / bw).ceil() as u64 - (l1 as f64 / bw).ceil() as u64;
    assert_eq!(c2 - c1, want, "bw {bw} B/cycle");
    assert_eq!(c2, t2);
}

#[test]
fn hop_latency_is_paid_per_hop() {
    // Sending two hops instead of one adds one hop latency (a 0-byte message: latency only).
    let a = mini(&[]);
    let hop = a.cycles_from_ns(a.ici.hop_latency_ns);
    let prog = |dist: u32| {
        format!(
            r#"
    s.csr s1, csr=replica_id
    s.li s2, {dist}
    beq s1, s0, sender
    beq s1, s2, receiver
    halt
sender:
    ici.send s2, vmem[s0+0], len=0, tag=1, signal=sem0
    sem.wait sem0, n=1
    halt
receiver:
    ici.recv s0, vmem[s0+0], len=0, tag=1, signal=sem0
    sem.wait sem0, n=1
    halt
"#
        )
    };
    let (_, one) = run(&prog(1), &a, 4, true).unwrap();
    let (_, two) = run(&prog(2), &a, 4, true).unwrap();
    // The receiver runs the same instructions either way (s2 names it).
    assert_eq!(two - one, hop);
}

#[test]
fn two_transfers_on_one_link_share_its_bandwidth() {
    // Ring of 4: chip 0 -> chip 2 (x+ links 0->1, 1->2) and chip 1 -> chip 2 (x+ link 1->2)
    // share link 1->2: each moves at half the link rate, so both take twice as long as one.
    let a = mini(&[]);
    let bw = a.bytes_per_cycle(a.ici.gbps_per_link);
    let len = 8192u64;
    let prog = |both: bool| {
        format!(
            r#"
    s.csr s1, csr=replica_id
    s.li s2, 2
    s.li s3, 1
    beq s1, s0, send
    beq s1, s3, second
    beq s1, s2, recv
    halt
second:
    {second}
    halt
send:
    ici.send s2, vmem[s0+0], len={len}, tag=1, signal=sem0
    sem.wait sem0, n=1
    halt
recv:
    ici.recv s0, vmem[s0+0], len={len}, tag=1, signal=sem0
    {recv2}
    sem.wait sem0, n={n}
    halt
"#,
            second = if both {
                format!("ici.send s2, vmem[s0+0], len={len}, tag=2, signal=sem0\n    sem.wait sem0, n=1")
            } else {
                String::new()
            },
            recv2 = if both {
                format!("ici.recv s3, vmem[s0+{len}], len={len}, tag=2, signal=sem0")
            } else {
                String::new()
            },
            n = if both { 2 } else { 1 },
        )
    };
    let (_, alone) = run(&prog(false), &a, 4, true).unwrap();
    let (sys, shared) = run(&prog(true), &a, 4, true).unwrap();
    let one = (len as f64 / bw).ceil() as u64;
    // Sharing adds about one transfer time (±2 cycles of issue skew between the senders).
    let extra = shared - alone;
    assert!(
        extra + 2 >= one && extra <= one + 2,
        "alone {alone}, shared {shared}, one transfer {one}"
    );
    assert_eq!(sys.stats().value("ici.chip1.x+.bytes"), Some(2 * len));
    assert_eq!(sys.stats().value("ici.chip0.x+.bytes"), Some(len));
}

#[test]
fn send_without_receive_is_a_deadlock_naming_both_chips() {
    let a = mini(&[]);
    let asm = r#"
    s.csr s1, csr=replica_id
    s.li s2, 1
    bne s1, s0, done
    ici.send s2, vmem[s0+0], len=64, tag=9, signal=sem0
    sem.wait sem0, n=1
done:
    halt
"#;
    match run(asm, &a, 2, true) {
        Err(SimError::Deadlock(r)) => {
            let m = r.to_string();
            assert!(
                m.contains("send to chip 1 tag 9 waits for the matching ici.recv on chip 1"),
                "{m}"
            );
            assert!(m.contains("chip0.core0.seq"), "{m}");
        }
        other => panic!("expected a deadlock, got {:?}", other.map(|x| x.1)),
    }
}

#[test]
fn length_mismatch_is_an_error_naming_both_instructions() {
    let a = mini(&[]);
    let asm = r#"
    s.csr s1, csr=replica_id
    s.li s2, 1
    bne s1, s0, other
    ici.send s2, vmem[s0+0], len=64, tag=3, signal=sem0
    sem.wait sem0, n=1
    halt
other:
    ici.recv s0, vmem[s0+0], len=32, tag=3, signal=sem0
    sem.wait sem0, n=1
    halt
"#;
    match run(asm, &a, 2, true) {
        Err(SimError::Exec { msg, .. }) => {
            assert!(msg.contains("ici.recv of 32 bytes"), "{msg}");
            assert!(msg.contains("ici.send of 64 bytes"), "{msg}");
        }
        other => panic!("expected an error, got {:?}", other.map(|x| x.1)),
    }
}

#[test]
fn peer_out_of_range_is_an_error() {
    let a = mini(&[]);
    let asm = "s.li s2, 9\nici.send s2, vmem[s0+0], len=4, tag=0, signal=sem0\nsem.wait sem0, n=1\nhalt\n";
    match run(asm, &a, 2, true) {
        Err(SimError::Exec { msg, .. }) => {
            assert!(msg.contains("peer chip 9 does not exist"), "{msg}")
        }
        other => panic!("expected an error, got {:?}", other.map(|x| x.1)),
    }
}

/// Chip 1's VPU reads the receive buffer while the transfer from chip 0 may still write it.
const RACY_RECV: &str = r#"
    s.csr s1, csr=replica_id
    s.li s2, 1
    bne s1, s0, other
    ici.send s2, vmem[s0+0], len=4096, tag=3, signal=sem0
    sem.wait sem0, n=1
    halt
other:
    ici.recv s0, vmem[s0+0], len=4096, tag=3, signal=sem0
    vpu.add [s0+8192], [s0+0], [s0+0], n=16, t=f32
    sem.wait sem0, n=1
    halt
"#;

#[test]
fn receive_racing_a_vpu_read_is_a_race() {
    // The VPU reads the receive buffer while the transfer may still write it.
    let a = mini(&[]);
    let asm = RACY_RECV;
    match run(asm, &a, 2, true) {
        Err(SimError::Race { msg, .. }) => {
            assert!(msg.contains("ici.recv"), "{msg}");
            assert!(msg.contains("vpu.add"), "{msg}");
        }
        other => panic!("expected a race, got {:?}", other.map(|x| x.1)),
    }
}

#[test]
fn runs_are_deterministic() {
    let a = mini(&[]);
    let (s1, c1) = run(&ring_shift(4096), &a, 4, true).unwrap();
    let (s2, c2) = run(&ring_shift(4096), &a, 4, true).unwrap();
    assert_eq!(c1, c2);
    assert_eq!(s1.stats().to_json(), s2.stats().to_json());
}

#[test]
fn chips_read_their_torus_coordinates() {
    // 2x3x2 torus: chip id = x + 2·(y + 3·z).
    let a = mini(&[
        "ici={\"topology\":\"torus3d\",\"dims\":[2,3,2],\"links_per_chip\":6,\"gbps_per_link\":10,\"hop_latency_ns\":100}",
    ]);
    let asm = r#"
    s.csr s1, csr=chip_x
    s.csr s2, csr=chip_y
    s.csr s3, csr=chip_z
    s.st s1, [s0+0], t=s64
    s.st s2, [s0+8], t=s64
    s.st s3, [s0+16], t=s64
    halt
"#;
    let (sys, _) = run(asm, &a, 12, true).unwrap();
    for chip in 0..12usize {
        let b = sys.vmem(chip, 0).unwrap().read_vec(0, 24).unwrap();
        let v: Vec<u64> = b
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(
            v,
            vec![(chip % 2) as u64, (chip / 2 % 3) as u64, (chip / 6) as u64],
            "chip {chip}"
        );
    }
}

/// `asm` on `chips` chips and `threads` threads: the outcome (cycles, or the error's text),
/// every statistic, every trace event and each chip's first 64 KiB of core 0's VMEM.
fn on_threads(
    asm: &str,
    a: &ArchConfig,
    chips: u32,
    threads: usize,
) -> (
    Result<u64, String>,
    String,
    Vec<sim::trace::OwnedTraceEvent>,
    Vec<Vec<u8>>,
) {
    use std::sync::{Arc, Mutex};
    struct Shared(Arc<Mutex<sim::trace::VecSink>>);
    impl sim::trace::TraceSink for Shared {
        fn event(&mut self, ev: &sim::trace::TraceEvent<'_>) {
            self.0.lock().unwrap().event(ev)
        }
    }
    let prog = isa::asm::assemble(asm).unwrap_or_else(|e| panic!("{}", e.render("test.s")));
    let opts = SimOptions {
        threads,
        ..Default::default()
    };
    let mut sys = System::new(a, prog, chips, opts).unwrap();
    let sink = Arc::new(Mutex::new(sim::trace::VecSink::default()));
    sys.set_trace(Box::new(Shared(sink.clone())));
    let r = sys.run().map(|r| r.cycles).map_err(|e| e.to_string());
    let mems = (0..chips as usize)
        .map(|c| sys.vmem(c, 0).unwrap().read_vec(0, 65536).unwrap())
        .collect();
    let events = sink.lock().unwrap().events.clone();
    (r, sys.stats().to_json().to_string(), events, mems)
}

#[test]
fn a_run_is_the_same_on_any_number_of_threads() {
    let a = mini(&[]);
    let racy = RACY_RECV;
    for (asm, chips) in [
        (ring_shift(4096), 4),
        (ring_shift(64), 3),
        (racy.to_string(), 2),
    ] {
        let one = on_threads(&asm, &a, chips, 1);
        assert!(!one.2.is_empty());
        for threads in 2..=chips as usize + 1 {
            let other = on_threads(&asm, &a, chips, threads);
            assert_eq!(other.0, one.0, "{chips} chips on {threads} threads");
            assert!(other.1 == one.1, "statistics on {threads} threads");
            assert!(other.2 == one.2, "trace on {threads} threads");
            assert!(other.3 == one.3, "memories on {threads} threads");
        }
    }
    // The racy program's race is reported the same way every time.
    let r = on_threads(racy, &a, 2, 2).0.unwrap_err();
    assert!(r.contains("vpu.add"), "{r}");
}

#[test]
fn a_chip_sends_to_itself_and_a_missing_partner_is_named() {
    let a = mini(&[]);
    // Each chip sends its replica id to itself, then the receive is posted.
    let asm = r#"
    s.csr s1, csr=replica_id
    s.st s1, [s0+0], t=s64
    ici.send s1, vmem[s0+0], len=8, tag=5, signal=sem0
    ici.recv s1, vmem[s0+4096], len=8, tag=5, signal=sem1
    sem.wait sem0, n=1
    sem.wait sem1, n=1
    halt
"#;
    let (sys, _) = run(asm, &a, 2, true).unwrap();
    for chip in 0..2usize {
        let b = sys.vmem(chip, 0).unwrap().read_vec(4096, 8).unwrap();
        assert_eq!(u64::from_le_bytes(b.try_into().unwrap()), chip as u64);
    }
    // No link carried anything.
    assert_eq!(sys.stats().value("ici.bytes"), None);
    let lonely = "s.csr s1, csr=replica_id\nici.send s1, vmem[s0+0], len=8, tag=5, signal=sem0\nsem.wait sem0, n=1\nhalt\n";
    match run(lonely, &a, 2, true) {
        Err(SimError::Deadlock(r)) => {
            let m = r.to_string();
            for c in 0..2 {
                assert!(
                    m.contains(&format!(
                        "send to chip {c} tag 5 waits for the matching ici.recv on chip {c}"
                    )),
                    "{m}"
                );
            }
        }
        other => panic!("expected a deadlock, got {:?}", other.map(|x| x.1)),
    }
}
