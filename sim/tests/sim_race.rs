//! Race detection (`sim::race`): the documented example program of docs/isa.md runs; each
//! variant with one semaphore removed from a real dependency stops with a race naming both
//! instructions, in functional and timing-only runs alike.

mod common;

use sim::SimError;

const EXAMPLE: &str = r#"
.region "A" hbm 0 64
.region "W" hbm 64 64
.region "bias" hbm 128 32
.region "C" hbm 256 256
.dma 0 len=64
.dma 1 len=32
.dma 2 len=256
.data hbm 0 01010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101
.data hbm 64 01000000000000000001000000000000000001000000000000000001000000000000000001000000000000000001000000000000000001000000000000000001
.data hbm 128 0100000002000000030000000400000005000000060000000700000008000000
    s.li s1, 64
    s.li s2, 128
    s.li s3, 256
    dma.copy vmem[s0], hbm[s0], desc=0, signal=sem0
    dma.copy vmem[s1], hbm[s1], desc=0, signal=sem1
    dma.copy vmem[s2], hbm[s2], desc=1, signal=sem2
    mxu.ldw [s1], mxu=0, k=8, n=8, stride=8, mode=int8, wait=sem1
    mxu.matmul [s0], acc[s0], mxu=0, m=8, k=8, stride=8, mode=int8, accumulate=0, wait=sem0, signal=sem6
    dma.copy vmem[s0], hbm[s1], desc=0, wait=sem6
    mxu.st [s3], acc[s0], mxu=0, m=8, n=8, stride=32, signal=sem3
    s.li s4, 512
    vpu.bcast [s4], [s2], n=8, rows=8, t=s32, wait=sem2
    vpu.add [s3], [s3], [s4], n=64, t=s32, wait=sem3
    vpu.splat [s4], s0, n=64, t=s32
    vpu.max [s3], [s3], [s4], n=64, t=s32, signal=sem4
    dma.copy hbm[s3], vmem[s3], desc=2, wait=sem4, signal=sem5
    sem.wait sem5, n=1
    fence
    halt
"#;

fn run(text: &str, functional: bool) -> Result<u64, SimError> {
    common::try_run_mini(text, functional)
}

fn race_of(text: &str, functional: bool) -> String {
    match run(text, functional) {
        Err(SimError::Race { msg, .. }) => msg,
        other => panic!("expected a race, got {other:?}"),
    }
}

#[test]
fn the_synchronized_example_runs_without_race() {
    run(EXAMPLE, true).unwrap();
    run(EXAMPLE, false).unwrap();
}

#[test]
fn raw_dma_to_mxu_without_its_wait_is_a_race() {
    // W's copy first, then A's: the matmul (behind the weight load that waits for W) starts
    // while A's copy is still in flight. (A race whose accesses do not overlap in time in the
    // run is not detected: see the module docs of sim::race.)
    let t = EXAMPLE
        .replace(
            "    dma.copy vmem[s0], hbm[s0], desc=0, signal=sem0\n    dma.copy vmem[s1], hbm[s1], desc=0, signal=sem1\n",
            "    dma.copy vmem[s1], hbm[s1], desc=0, signal=sem1\n    dma.copy vmem[s0], hbm[s0], desc=0, signal=sem0\n",
        )
        .replace("accumulate=0, wait=sem0, signal=sem6", "accumulate=0, signal=sem6");
    assert_ne!(t, EXAMPLE);
    run(
        &t.replace(
            "accumulate=0, signal=sem6",
            "accumulate=0, wait=sem0, signal=sem6",
        ),
        true,
    )
    .unwrap();
    for functional in [true, false] {
        let m = race_of(&t, functional);
        assert!(
            m.contains("core0.dma pc 4 `dma.copy vmem[s0], hbm[s0]"),
            "{m}"
        );
        assert!(m.contains("core0.mxu0 pc 7 `mxu.matmul"), "{m}");
        assert!(m.contains("VMEM") && m.contains("write/read"), "{m}");
    }
}

#[test]
fn raw_vpu_to_dma_without_its_wait_is_a_race() {
    let t = EXAMPLE.replace("desc=2, wait=sem4, signal=sem5", "desc=2, signal=sem5");
    for functional in [true, false] {
        let m = race_of(&t, functional);
        // The copy out reads C while the units that write it (mxu.st, then the VPU ops) are
        // unordered with it; the first pair found is reported.
        assert!(m.contains("`dma.copy hbm[s3], vmem[s3]"), "{m}");
        assert!(m.contains("`mxu.st") || m.contains("`vpu."), "{m}");
        assert!(m.contains("write/read") || m.contains("read/write"), "{m}");
    }
}

#[test]
fn war_dma_over_an_mxu_input_without_its_wait_is_a_race() {
    let t = EXAMPLE.replace(
        "dma.copy vmem[s0], hbm[s1], desc=0, wait=sem6",
        "dma.copy vmem[s0], hbm[s1], desc=0",
    );
    for functional in [true, false] {
        let m = race_of(&t, functional);
        assert!(m.contains("`mxu.matmul"), "{m}");
        assert!(m.contains("pc 8 `dma.copy vmem[s0], hbm[s1]"), "{m}");
        assert!(m.contains("read/write"), "{m}");
    }
}

/// A VPU result copied out by a DMA long after the VPU finished, with nothing ordering them:
/// the accesses never overlap in time in this run, and happens-before tracking still reports
/// the race (a slower VPU would expose it). With the semaphore wait it runs.
#[test]
fn latent_race_without_overlap_in_time_is_reported() {
    let prog = |wait: &str| {
        format!(
            ".dma 0 len=64\n    vpu.splat [s0+512], s0, n=16, t=s32, signal=sem1\n    s.li s1, 0\n    s.li s2, 200\nspin:\n    s.addi s1, s1, 1\n    blt s1, s2, spin\n    dma.copy hbm[s0+0], vmem[s0+512], desc=0{wait}\n    fence\n    halt\n"
        )
    };
    run(&prog(", wait=sem1"), true).unwrap();
    for functional in [true, false] {
        let m = race_of(&prog(""), functional);
        assert!(m.contains("core0.vpu pc 0 `vpu.splat"), "{m}");
        assert!(
            m.contains("core0.dma pc 5 `dma.copy hbm[s0], vmem[s0+512]"),
            "{m}"
        );
        assert!(m.contains("write/read") && m.contains("latent race"), "{m}");
    }
}

/// A matmul whose rows overlap (row stride 2 < row length 8, as convolution rows are read)
/// reads exactly bytes 0..22: a VPU write just past them is no race, one inside them is.
#[test]
fn overlapping_matmul_rows_cover_exactly_their_union() {
    let prog = |at: u32| {
        format!(
            "    s.li s1, 128\n    mxu.ldw [s1], mxu=0, k=8, n=8, stride=8, mode=int8\n    mxu.matmul [s0], acc[s0], mxu=0, m=8, k=8, stride=2, mode=int8, accumulate=0\n    vpu.splat [s0+{at}], s0, n=16, t=s32\n    fence\n    halt\n"
        )
    };
    for functional in [true, false] {
        run(&prog(24), functional).unwrap();
        let m = race_of(&prog(20), functional);
        assert!(m.contains("mxu.matmul") && m.contains("vpu.splat"), "{m}");
    }
}

/// The sequencer's own `s.ld` of bytes a DMA copy is still writing, with nothing ordering
/// them, is a race naming both (the sequencer as `core0.seq`); after `sem.wait` on the copy's
/// semaphore it runs. Read back later without the wait, it is still reported (latent).
#[test]
fn raw_seq_load_of_a_dma_write_without_its_wait_is_a_race() {
    let prog = |wait: &str, spin: u32| {
        format!(
            ".dma 0 len=64\n    dma.copy vmem[s0+512], hbm[s0], desc=0, signal=sem1\n    s.li s1, 0\n    s.li s2, {spin}\nspin:\n    s.addi s1, s1, 1\n    blt s1, s2, spin\n{wait}    s.ld s3, [s0+520], t=s32\n    fence\n    halt\n"
        )
    };
    for functional in [true, false] {
        run(&prog("    sem.wait sem1, n=1\n", 1), functional).unwrap();
        for spin in [1, 500] {
            let m = race_of(&prog("", spin), functional);
            assert!(
                m.contains("core0.dma pc 0 `dma.copy vmem[s0+512], hbm[s0]"),
                "{m}"
            );
            assert!(m.contains("core0.seq pc 5 `s.ld s3, [s0+520]"), "{m}");
            assert!(m.contains("VMEM") && m.contains("write/read"), "{m}");
            assert_eq!(m.contains("latent race"), spin == 500, "{m}");
        }
    }
}

/// A VPU result read by `s.ld`: ordered by `sem.wait` (or a `fence`), else a race.
#[test]
fn raw_seq_load_of_a_vpu_write_is_ordered_only_by_a_wait_or_fence() {
    let prog = |sync: &str| {
        format!(
            "    vpu.splat [s0+1024], s0, n=256, t=s32, signal=sem2\n{sync}    s.ld s3, [s0+1100], t=s32\n    fence\n    halt\n"
        )
    };
    for functional in [true, false] {
        run(&prog("    sem.wait sem2, n=1\n"), functional).unwrap();
        run(&prog("    fence\n"), functional).unwrap();
        let m = race_of(&prog(""), functional);
        assert!(m.contains("core0.vpu pc 0 `vpu.splat"), "{m}");
        assert!(m.contains("core0.seq pc 1 `s.ld"), "{m}");
        assert!(m.contains("write/read"), "{m}");
    }
}

/// `s.st` over bytes a dispatched command reads: a race unless the sequencer waited for the
/// command first, whether the command is already running (a VPU op) or still queued when the
/// store happens (a DMA copy waiting for a long VPU op: its start then finds the store
/// unordered before it).
#[test]
fn war_seq_store_over_a_unit_read_without_its_wait_is_a_race() {
    let running = |wait: &str| {
        format!(
            "    vpu.add [s0+1024], [s0+512], [s0+512], n=16, t=s32, signal=sem1\n    s.li s1, 7\n{wait}    s.st s1, [s0+540], t=s32\n    fence\n    halt\n"
        )
    };
    let queued = |wait: &str| {
        format!(
            ".dma 0 len=64\n    vpu.splat [s0+8192], s0, n=4096, t=s32, signal=sem2\n    dma.copy hbm[s0], vmem[s0+512], desc=0, wait=sem2, signal=sem1\n    s.li s1, 7\n{wait}    s.st s1, [s0+540], t=s32\n    fence\n    halt\n"
        )
    };
    let wait = "    sem.wait sem1, n=1\n";
    for functional in [true, false] {
        run(&running(wait), functional).unwrap();
        let m = race_of(&running(""), functional);
        assert!(m.contains("core0.vpu pc 0 `vpu.add"), "{m}");
        assert!(m.contains("core0.seq pc 2 `s.st s1, [s0+540]"), "{m}");
        assert!(m.contains("read/write") && m.contains("VMEM"), "{m}");

        run(&queued(wait), functional).unwrap();
        let m = race_of(&queued(""), functional);
        let (st, copy) = (
            m.find("core0.seq pc 3 `s.st s1, [s0+540]").expect(&m),
            m.find("core0.dma pc 1 `dma.copy hbm[s0], vmem[s0+512]")
                .expect(&m),
        );
        assert!(st < copy, "the store is the first access: {m}");
        assert!(m.contains("write/read") && m.contains("latent race"), "{m}");
    }
}

/// Program order through dispatch: a command dispatched after an `s.st` (or after an `s.ld`)
/// is ordered after it, even while it runs long after; a queued command that waits on a
/// semaphore the sequencer signals after its `s.st` is ordered after it too.
#[test]
fn seq_store_then_a_dispatched_unit_access_is_ordered() {
    let after = "    s.li s1, 7\n    s.st s1, [s0+512], t=s32\n    vpu.add [s0+1024], [s0+512], [s0+512], n=16, t=s32\n    s.ld s2, [s0+1024], t=s32\n    vpu.splat [s0+1024], s0, n=16, t=s32\n    fence\n    s.ld s2, [s0+1024], t=s32\n    halt\n";
    let signalled = "    vpu.add [s0+1024], [s0+512], [s0+512], n=16, t=s32, wait=sem3\n    s.li s1, 7\n    s.st s1, [s0+512], t=s32\n    sem.signal sem3, n=1\n    fence\n    halt\n";
    for functional in [true, false] {
        // The s.ld at pc 3 reads what the vpu.add writes: a race; the rest is ordered.
        let m = race_of(after, functional);
        assert!(
            m.contains("`vpu.add") && m.contains("core0.seq pc 3 `s.ld"),
            "{m}"
        );
        let fixed = after.replace(
            "    s.ld s2, [s0+1024], t=s32\n    vpu.splat",
            "    s.ld s2, [s0+2048], t=s32\n    vpu.splat",
        );
        run(&fixed, functional).unwrap();
        run(signalled, functional).unwrap();
    }
}
