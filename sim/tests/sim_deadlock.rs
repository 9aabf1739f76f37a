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
    let prog = isa::asm::assemble("loop:\n    s.addi s1, s1, 1\n    jmp loop\n").unwrap();
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
