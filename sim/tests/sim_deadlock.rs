//! Waits that can never be satisfied end in a deadlock report naming what each unit waits for.

use arch::ArchConfig;
use sim::{SimError, SimOptions, System};

fn run(asm: &str, infeed: Option<Vec<u8>>) -> Result<u64, SimError> {
    let prog = isa::asm::assemble(asm).unwrap();
    let a = ArchConfig::preset("mini").unwrap();
    let mut sys = System::new(&a, prog, 1, SimOptions::default()).unwrap();
    if let Some(b) = infeed {
        sys.set_infeed(0, 0, b).unwrap();
    }
    sys.run().map(|r| r.cycles)
}

fn deadlock(asm: &str, infeed: Option<Vec<u8>>) -> String {
    match run(asm, infeed) {
        Err(SimError::Deadlock(r)) => r.to_string(),
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

#[test]
fn infeed_without_data_is_a_deadlock() {
    let msg = deadlock(
        "infeed vmem[s0+0], len=64, signal=sem0\nsem.wait sem0, n=1\nhalt\n",
        Some(vec![0; 32]),
    );
    assert!(msg.contains("infeed"), "{msg}");
    assert!(msg.contains("host pushes only 32 bytes"), "{msg}");
    assert!(msg.contains("sem.wait sem0 needs 1, has 0"), "{msg}");
}

#[test]
fn semaphore_never_signalled_is_a_deadlock() {
    let msg = deadlock("s.li s1, 5\nsem.wait sem3, n=2\nhalt\n", None);
    assert!(msg.contains("sem.wait sem3 needs 2, has 0"), "{msg}");
}

#[test]
fn unit_wait_never_signalled_is_a_deadlock() {
    let msg = deadlock(
        "vpu.add [s0+0], [s0+64], [s0+128], n=16, t=f32, wait=sem4\nhalt\n",
        None,
    );
    assert!(msg.contains("wait=sem4"), "{msg}");
    assert!(msg.contains("halt: 1 instructions outstanding"), "{msg}");
}

#[test]
fn running_past_the_end_is_an_error_not_a_hang() {
    match run("nop\n", None) {
        Err(SimError::Exec { msg, .. }) => {
            assert!(msg.contains("past the last instruction"), "{msg}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn out_of_range_access_is_an_error() {
    match run(
        "s.li s1, 65530\nvpu.add [s1+0], [s0+0], [s0+0], n=16, t=f32\nhalt\n",
        None,
    ) {
        Err(SimError::Exec { msg, .. }) => assert!(msg.contains("outside capacity"), "{msg}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_program_that_never_halts_times_out() {
    // s1 counts up from 1 and only meets s0 (0) after 2^64 steps: a halt is reachable.
    let prog = isa::asm::assemble("loop:\n    s.addi s1, s1, 1\n    bne s1, s0, loop\n    halt\n")
        .unwrap();
    let a = ArchConfig::preset("mini").unwrap();
    let opts = SimOptions {
        max_cycles: 100_000,
        ..Default::default()
    };
    let mut sys = System::new(&a, prog, 1, opts).unwrap();
    match sys.run().unwrap_err() {
        SimError::Timeout(r) => {
            assert_eq!(r.limit, 100_000);
            let text = r.to_string();
            assert!(text.contains("did not halt within 100000 cycles"), "{text}");
            // The report names the instruction the sequencer was at.
            assert!(text.contains("chip0.core0.seq at pc"), "{text}");
        }
        e => panic!("expected a timeout, got {e}"),
    }
}

#[test]
fn a_dma_that_cannot_finish_in_time_stops_the_run_when_it_starts() {
    let prog = isa::asm::assemble(
        ".dma 0 len=64 dims=[(4294967295,0,0),(4294967295,0,0)]\n    \
         dma.copy vmem[s0], hbm[s0], desc=0, signal=sem0\n    sem.wait sem0, n=1\n    halt\n",
    )
    .unwrap();
    let a = ArchConfig::preset("mini").unwrap();
    let opts = SimOptions {
        max_cycles: 1_000_000,
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let mut sys = System::new(&a, prog, 1, opts).unwrap();
    match sys.run().unwrap_err() {
        SimError::Timeout(r) => {
            let text = r.to_string();
            assert!(text.contains("past the limit of 1000000 cycles"), "{text}");
            assert!(text.contains("chip0.core0.seq at pc 0"), "{text}");
        }
        e => panic!("expected a timeout, got {e}"),
    }
    assert!(started.elapsed().as_secs() < 5, "the copy was not skipped");
}

#[test]
fn the_default_cycle_limit_grows_with_the_program_and_is_capped() {
    let small = isa::asm::assemble("    halt\n").unwrap();
    let spin: String = "    s.addi s1, s1, 1\n".repeat(1000) + "    halt\n";
    let big = isa::asm::assemble(&spin).unwrap();
    assert_eq!(sim::default_max_cycles(&small), 100_000_000 + 100_000);
    assert_eq!(sim::default_max_cycles(&big), 100_000_000 + 1001 * 100_000);
    let huge = isa::Program {
        code: vec![isa::asm::parse_inst("halt").unwrap(); 1_000_000],
        ..Default::default()
    };
    assert_eq!(sim::default_max_cycles(&huge), sim::MAX_DEFAULT_CYCLES);
}

#[test]
fn simulated_memories_stay_within_the_memory_limit() {
    // Writes 64 KiB pages across 1 GiB of HBM with a 16 MiB limit (8.5 MiB of it taken by
    // the accumulators and vector registers).
    let prog = isa::asm::assemble(
        ".dma 0 len=65536 dims=[(16384,0,65536)]\n    \
         dma.copy hbm[s0], vmem[s0], desc=0, signal=sem0\n    sem.wait sem0, n=1\n    halt\n",
    )
    .unwrap();
    let a = ArchConfig::resolve("tpu-v4", &["hbm.bytes=1073741824"]).unwrap();
    let opts = SimOptions {
        max_cycles: 1 << 40,
        ..Default::default()
    };
    let mut sys = System::with_memory_limit(&a, prog, 1, opts, 16 << 20).unwrap();
    let e = sys.run().unwrap_err().to_string();
    assert!(
        e.contains("budget of 7864320 bytes for all simulated memories"),
        "{e}"
    );
}

#[test]
fn a_core_jumping_to_itself_stops_at_once() {
    for asm in [
        "loop:\n    jmp loop\n",
        "    s.li s1, 3\nh:\n    beq s1, s1, h\n    halt\n",
    ] {
        let prog = isa::asm::assemble(asm).unwrap();
        let a = ArchConfig::preset("mini").unwrap();
        let mut sys = System::new(&a, prog, 1, SimOptions::default()).unwrap();
        match sys.run().unwrap_err() {
            SimError::Timeout(r) => {
                let text = r.to_string();
                assert!(
                    text.contains("jumps to itself and can never halt"),
                    "{text}"
                );
            }
            e => panic!("expected no progress, got {e}"),
        }
    }
    // A self-branch not taken falls through.
    let prog = isa::asm::assemble("    s.li s1, 3\nh:\n    bne s1, s1, h\n    halt\n").unwrap();
    let a = ArchConfig::preset("mini").unwrap();
    let mut sys = System::new(&a, prog, 1, SimOptions::default()).unwrap();
    assert!(sys.run().is_ok());
}

#[test]
fn a_loop_with_no_path_to_halt_stops_at_once() {
    // A loop whose exit leads to a halt runs normally.
    let ok = isa::asm::assemble(
        "    s.li s2, 5\nloop:\n    s.addi s1, s1, 1\n    blt s1, s2, loop\n    halt\n",
    )
    .unwrap();
    let a = ArchConfig::preset("mini").unwrap();
    assert!(System::new(&a, ok, 1, SimOptions::default())
        .unwrap()
        .run()
        .is_ok());
    let prog = isa::asm::assemble(
        "    s.li s2, 5\nloop:\n    s.addi s1, s1, 1\n    blt s1, s2, loop\nrest:\n    \
         s.addi s3, s3, 1\n    jmp rest\n    halt\n",
    )
    .unwrap();
    let a = ArchConfig::preset("mini").unwrap();
    let mut sys = System::new(&a, prog, 1, SimOptions::default()).unwrap();
    match sys.run().unwrap_err() {
        SimError::Timeout(r) => {
            let text = r.to_string();
            // The first loop exits only into the second, which has no exit: no halt is
            // reachable from the first loop either, so its first back branch stops the run.
            assert!(
                text.contains("pc 2 `blt s1, s2, @1` goes to pc 1"),
                "{text}"
            );
            assert!(text.contains("no path reaches a halt"), "{text}");
        }
        e => panic!("expected no progress, got {e}"),
    }
}
