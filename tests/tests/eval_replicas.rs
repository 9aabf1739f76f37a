//! The multi-replica evaluator (`eval::replica::run_replicas`): the spec's worked
//! examples of the collectives, replica groups and channels, send/recv and feeds, deadlock
//! reports (fast, per replica), and bit-for-bit determinism of all-reduce.

use eval::replica::run_replicas;
use eval::{EvalError, EvalOptions, HostIo, ReplicaInput, ReplicaOutput};
use hlo::{ArrayData, Literal};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn f32v(dims: &[usize], v: &[f32]) -> Literal {
    Literal::array(dims.to_vec(), ArrayData::F32(v.to_vec()))
}

fn run_io(
    text: &str,
    inputs: Vec<(Vec<Literal>, HostIo)>,
) -> Result<Vec<ReplicaOutput>, EvalError> {
    let module =
        hlo::parse(text).unwrap_or_else(|e| panic!("test module does not parse: {e}\n{text}"));
    let module = hlo::verified(module)
        .unwrap_or_else(|e| panic!("test module does not verify: {e}\n{text}"));
    let replicas = inputs
        .into_iter()
        .map(|(args, io)| ReplicaInput { args, io })
        .collect();
    run_replicas(&module, replicas, &EvalOptions::default())
}

fn run(text: &str, inputs: Vec<Vec<Literal>>) -> Result<Vec<Literal>, EvalError> {
    let outs = run_io(
        text,
        inputs.into_iter().map(|a| (a, HostIo::default())).collect(),
    )?;
    Ok(outs.into_iter().map(|o| o.result).collect())
}

const ADD: &str = "add {\n  add.a = f32[] parameter(0)\n  add.b = f32[] parameter(1)\n  ROOT add.s = f32[] add(add.a, add.b)\n}\n";

fn module(header: &str, entry: &str) -> String {
    format!("HloModule {header}\n\n{ADD}\nENTRY main {{\n{entry}\n}}\n")
}

// ---- the spec's two-replica examples -------------------------------------------------------

#[test]
fn spec_all_reduce_two_replicas() {
    let m = module(
        "ar, replica_count=2",
        "  x = f32[2] parameter(0)\n  ROOT r = f32[2] all-reduce(x), replica_groups={}, to_apply=add",
    );
    let out = run(
        &m,
        vec![
            vec![f32v(&[2], &[1.0, 2.5])],
            vec![f32v(&[2], &[3.0, 5.25])],
        ],
    )
    .unwrap();
    assert_eq!(out, vec![f32v(&[2], &[4.0, 7.75]); 2]);
}

#[test]
fn spec_all_gather_two_replicas() {
    let m = module(
        "ag, replica_count=2",
        "  x = f32[2] parameter(0)\n  ROOT r = f32[4] all-gather(x), replica_groups={}, dimensions={0}",
    );
    let out = run(
        &m,
        vec![
            vec![f32v(&[2], &[1.0, 2.5])],
            vec![f32v(&[2], &[3.0, 5.25])],
        ],
    )
    .unwrap();
    assert_eq!(out, vec![f32v(&[4], &[1.0, 2.5, 3.0, 5.25]); 2]);
}

#[test]
fn spec_reduce_scatter_two_replicas() {
    let m = module(
        "rs, replica_count=2",
        "  x = f32[2] parameter(0)\n  ROOT r = f32[1] reduce-scatter(x), replica_groups={}, dimensions={0}, to_apply=add",
    );
    let out = run(
        &m,
        vec![
            vec![f32v(&[2], &[1.0, 2.25])],
            vec![f32v(&[2], &[3.0, 5.25])],
        ],
    )
    .unwrap();
    assert_eq!(out, vec![f32v(&[1], &[4.0]), f32v(&[1], &[7.5])]);
}

fn four_inputs() -> Vec<Vec<Literal>> {
    (0..4)
        .map(|r| vec![f32v(&[2], &[r as f32 + 1.0, -(r as f32) - 0.5])])
        .collect()
}

#[test]
fn spec_collective_permute_pairs_and_zeros() {
    // Each pair sends source's operand to target; a replica that is no target gets zeros.
    let m = module(
        "cp, replica_count=4",
        "  x = f32[2] parameter(0)\n  ROOT r = f32[2] collective-permute(x), source_target_pairs={{0,1},{1,2},{2,3}}",
    );
    let ins = four_inputs();
    let out = run(&m, ins.clone()).unwrap();
    assert_eq!(out[0], f32v(&[2], &[0.0, 0.0]));
    for r in 1..4 {
        assert_eq!(out[r], ins[r - 1][0], "replica {r}");
    }
    // A ring, and a permutation that leaves replicas 0 and 3 out entirely.
    let ring = m.replace("{{0,1},{1,2},{2,3}}", "{{0,1},{1,2},{2,3},{3,0}}");
    let out = run(&ring, ins.clone()).unwrap();
    for r in 0..4 {
        assert_eq!(out[r], ins[(r + 3) % 4][0], "ring replica {r}");
    }
    let partial = m.replace("{{0,1},{1,2},{2,3}}", "{{2,1}}");
    let out = run(&partial, ins.clone()).unwrap();
    assert_eq!(out[1], ins[2][0]);
    for r in [0, 2, 3] {
        assert_eq!(out[r], f32v(&[2], &[0.0, 0.0]), "replica {r}");
    }
}

// ---- groups, channels, other collectives ----------------------------------------------------

#[test]
fn replica_groups_list_and_iota_forms() {
    for groups in ["{{0,2},{1,3}}", "[2,2]<=[2,2]T(1,0)"] {
        let m = module(
            "g, replica_count=4",
            &format!("  x = f32[2] parameter(0)\n  ROOT r = f32[4] all-gather(x), replica_groups={groups}, dimensions={{0}}"),
        );
        let ins = four_inputs();
        let out = run(&m, ins.clone()).unwrap();
        let cat = |a: usize, b: usize| {
            let (x, y) = (ins[a][0].as_array().unwrap(), ins[b][0].as_array().unwrap());
            let ArrayData::F32(x) = &x.data else {
                unreachable!()
            };
            let ArrayData::F32(y) = &y.data else {
                unreachable!()
            };
            f32v(&[4], &[x.as_slice(), y.as_slice()].concat())
        };
        assert_eq!(
            out,
            vec![cat(0, 2), cat(1, 3), cat(0, 2), cat(1, 3)],
            "{groups}"
        );
    }
}

#[test]
fn same_channel_in_different_branches_matches() {
    // Replica 0 runs the all-reduce of the true branch, replica 1 the one of the false branch;
    // both carry channel_id=1, so they are one collective.
    let text = std::fs::read_to_string(deadlock_dir().join("channel_mismatch.hlo")).unwrap();
    let text = text.replace("channel_id=2", "channel_id=1");
    let out = run(
        &text,
        vec![
            vec![f32v(&[2], &[1.0, 2.0])],
            vec![f32v(&[2], &[10.0, 20.0])],
        ],
    )
    .unwrap();
    assert_eq!(out, vec![f32v(&[2], &[11.0, 22.0]); 2]);
}

#[test]
fn variadic_all_reduce_and_all_to_all_forms() {
    let m = module(
        "v, replica_count=2",
        "  x = f32[2] parameter(0)\n  y = f32[3] parameter(1)\n  ROOT r = (f32[2], f32[3]) all-reduce(x, y), replica_groups={}, to_apply=add",
    );
    let ins = vec![
        vec![f32v(&[2], &[1.0, 2.0]), f32v(&[3], &[1.0, 1.0, 1.0])],
        vec![f32v(&[2], &[3.0, 4.0]), f32v(&[3], &[0.5, 0.25, 0.125])],
    ];
    let out = run(&m, ins).unwrap();
    let want = Literal::Tuple(vec![
        f32v(&[2], &[4.0, 6.0]),
        f32v(&[3], &[1.5, 1.25, 1.125]),
    ]);
    assert_eq!(out, vec![want.clone(), want]);

    // Array form: split and concatenate along dimension 1.
    let m = module(
        "a2a, replica_count=2",
        "  x = f32[2,2] parameter(0)\n  ROOT r = f32[2,2] all-to-all(x), replica_groups={{0,1}}, dimensions={1}",
    );
    let ins = vec![
        vec![f32v(&[2, 2], &[1.0, 2.0, 3.0, 4.0])],
        vec![f32v(&[2, 2], &[5.0, 6.0, 7.0, 8.0])],
    ];
    let out = run(&m, ins).unwrap();
    assert_eq!(
        out,
        vec![
            f32v(&[2, 2], &[1.0, 5.0, 3.0, 7.0]),
            f32v(&[2, 2], &[2.0, 6.0, 4.0, 8.0])
        ]
    );

    // Tuple form: replica r gets operand r of every replica.
    let m = module(
        "a2at, replica_count=2",
        "  a = f32[1] parameter(0)\n  b = f32[1] parameter(1)\n  ROOT r = (f32[1], f32[1]) all-to-all(a, b), replica_groups={{0,1}}",
    );
    let ins = vec![
        vec![f32v(&[1], &[1.0]), f32v(&[1], &[2.0])],
        vec![f32v(&[1], &[3.0]), f32v(&[1], &[4.0])],
    ];
    let out = run(&m, ins).unwrap();
    assert_eq!(
        out,
        vec![
            Literal::Tuple(vec![f32v(&[1], &[1.0]), f32v(&[1], &[3.0])]),
            Literal::Tuple(vec![f32v(&[1], &[2.0]), f32v(&[1], &[4.0])])
        ]
    );
}

#[test]
fn async_forms_and_collective_broadcast() {
    let m = module(
        "async, replica_count=2",
        "  x = f32[2] parameter(0)\n  \
         ars = f32[2] all-reduce-start(x), replica_groups={}, to_apply=add\n  \
         ard = f32[2] all-reduce-done(ars)\n  \
         ags = (f32[2], f32[4]) all-gather-start(x), replica_groups={}, dimensions={0}\n  \
         agd = f32[4] all-gather-done(ags)\n  \
         cps = (f32[2], f32[2], u32[], u32[]) collective-permute-start(x), source_target_pairs={{0,1},{1,0}}\n  \
         cpd = f32[2] collective-permute-done(cps)\n  \
         cb = f32[2] collective-broadcast(x), replica_groups={{1,0}}\n  \
         ROOT t = (f32[2], f32[4], f32[2], f32[2]) tuple(ard, agd, cpd, cb)",
    );
    let (a, b) = (f32v(&[2], &[1.0, 2.0]), f32v(&[2], &[10.0, 20.0]));
    let out = run(&m, vec![vec![a.clone()], vec![b.clone()]]).unwrap();
    let sum = f32v(&[2], &[11.0, 22.0]);
    let cat = f32v(&[4], &[1.0, 2.0, 10.0, 20.0]);
    // collective-broadcast: the group {1,0} is rooted at its first member, replica 1.
    assert_eq!(
        out[0],
        Literal::Tuple(vec![sum.clone(), cat.clone(), b.clone(), b.clone()])
    );
    assert_eq!(out[1], Literal::Tuple(vec![sum, cat, a, b]));
}

#[test]
fn replica_id_and_partition_id() {
    let m = module(
        "rid, replica_count=3",
        "  r = u32[] replica-id()\n  p = u32[] partition-id()\n  ROOT t = (u32[], u32[]) tuple(r, p)",
    );
    let out = run(&m, vec![vec![]; 3]).unwrap();
    for (r, o) in out.iter().enumerate() {
        let u = |v: u32| Literal::array(vec![], ArrayData::U32(vec![v]));
        assert_eq!(*o, Literal::Tuple(vec![u(r as u32), u(0)]));
    }
}

#[test]
fn reduction_folds_left_in_group_order() {
    // subtract is not associative: the documented order ((x_g0 - x_g1) - x_g2) is visible.
    let m = String::from(
        "HloModule sub, replica_count=6\n\nsub {\n  s.a = f32[] parameter(0)\n  s.b = f32[] parameter(1)\n  \
         ROOT s.d = f32[] subtract(s.a, s.b)\n}\n\nENTRY main {\n  x = f32[1] parameter(0)\n  \
         ROOT r = f32[1] all-reduce(x), replica_groups={{3,1,0},{2,5,4}}, to_apply=sub\n}\n"
    );
    let ins: Vec<Vec<Literal>> = [1.0f32, 10.0, 100.0, 1000.0, 10000.0, 100000.0]
        .iter()
        .map(|&v| vec![f32v(&[1], &[v])])
        .collect();
    let out = run(&m, ins).unwrap();
    let g = f32v(&[1], &[1000.0 - 10.0 - 1.0]);
    let h = f32v(&[1], &[100.0 - 100000.0 - 10000.0]);
    assert_eq!(out, vec![g.clone(), g.clone(), h.clone(), g, h.clone(), h]);
}

#[test]
fn collectives_in_a_loop_pair_up_by_iteration() {
    // Three iterations of x <- all-reduce(x) on two replicas: x0 + x1, then doubled twice.
    let text = std::fs::read_to_string(deadlock_dir().join("collective_count.hlo")).unwrap();
    let text = text.replace(
        "  cond.rid = u32[] replica-id()\n  cond.r = s32[] convert(cond.rid)\n  cond.one = s32[] constant(1)\n  \
         cond.n = s32[] add(cond.r, cond.one)\n",
        "  cond.n = s32[] constant(3)\n",
    );
    assert!(!text.contains("replica-id"), "the test edit did not apply");
    let out = run(
        &text,
        vec![vec![f32v(&[2], &[1.0, 2.0])], vec![f32v(&[2], &[3.0, 5.0])]],
    )
    .unwrap();
    assert_eq!(out, vec![f32v(&[2], &[16.0, 28.0]); 2]);
}

#[test]
fn a_failing_replica_stops_the_others_with_its_own_error() {
    // Replica 1's infeed data has the wrong shape; replica 0 waits in the all-reduce meanwhile.
    let m = module(
        "fail, replica_count=2",
        "  tok = token[] after-all()\n  in = (f32[2], token[]) infeed(tok)\n  \
         v = f32[2] get-tuple-element(in), index=0\n  \
         ROOT r = f32[2] all-reduce(v), replica_groups={}, to_apply=add",
    );
    let io = |l: Literal| HostIo {
        infeed: vec![l].into(),
        ..HostIo::default()
    };
    let t0 = Instant::now();
    let res = run_io(
        &m,
        vec![
            (vec![], io(f32v(&[2], &[1.0, 1.0]))),
            (vec![], io(f32v(&[3], &[1.0, 1.0, 1.0]))),
        ],
    );
    assert!(t0.elapsed() < Duration::from_secs(1));
    let err = res.expect_err("replica 1 must fail");
    assert!(matches!(err.root_cause(), EvalError::BadInput(_)), "{err}");
    assert!(err.to_string().contains("infeed"), "{err}");
}

#[test]
fn replica_count_must_match_the_module() {
    let m = module("rc, replica_count=4", "  ROOT r = u32[] replica-id()");
    let err = run(&m, vec![vec![]; 2]).expect_err("2 replicas for a 4-replica module");
    assert!(matches!(err, EvalError::BadInput(_)), "{err}");
}

// ---- send/recv and feeds --------------------------------------------------------------------

#[test]
fn send_recv_in_spec_schedule_order() {
    // recv; send; recv-done: the receive only waits at recv-done, so both replicas send first.
    let m = module(
        "sr, replica_count=2",
        "  x = f32[2] parameter(0)\n  tok = token[] after-all()\n  \
         rcv = (f32[2], u32[], token[]) recv(tok), channel_id=3, frontend_attributes={_xla_send_recv_source_target_pairs={{0,1},{1,0}}}\n  \
         snd = (f32[2], u32[], token[]) send(x, tok), channel_id=3, frontend_attributes={_xla_send_recv_source_target_pairs={{0,1},{1,0}}}\n  \
         rd = (f32[2], token[]) recv-done(rcv), channel_id=3\n  \
         sd = token[] send-done(snd), channel_id=3\n  \
         ROOT got = f32[2] get-tuple-element(rd), index=0",
    );
    let out = run(
        &m,
        vec![vec![f32v(&[2], &[1.0, 2.0])], vec![f32v(&[2], &[3.0, 4.0])]],
    )
    .unwrap();
    assert_eq!(out, vec![f32v(&[2], &[3.0, 4.0]), f32v(&[2], &[1.0, 2.0])]);
}

#[test]
fn infeed_outfeed_and_host_transfers_per_replica() {
    let m = module(
        "io, replica_count=2",
        "  tok = token[] after-all()\n  in = (f32[2], token[]) infeed(tok)\n  \
         v = f32[2] get-tuple-element(in), index=0\n  t1 = token[] get-tuple-element(in), index=1\n  \
         o = token[] outfeed(v, t1), outfeed_shape=f32[2]\n  \
         snd = (f32[2], u32[], token[]) send(v, o), channel_id=4, is_host_transfer=true\n  \
         sd = token[] send-done(snd), channel_id=4, is_host_transfer=true\n  \
         rcv = (f32[2], u32[], token[]) recv(sd), channel_id=5, is_host_transfer=true\n  \
         rd = (f32[2], token[]) recv-done(rcv), channel_id=5, is_host_transfer=true\n  \
         ROOT got = f32[2] get-tuple-element(rd), index=0",
    );
    let io = |r: f32| HostIo {
        infeed: vec![f32v(&[2], &[r, r])].into(),
        host_recv: vec![(5, f32v(&[2], &[-r, -r]))].into(),
        ..HostIo::default()
    };
    let outs = run_io(&m, vec![(vec![], io(1.0)), (vec![], io(2.0))]).unwrap();
    for (r, o) in outs.iter().enumerate() {
        let x = r as f32 + 1.0;
        assert_eq!(o.result, f32v(&[2], &[-x, -x]));
        assert_eq!(o.io.outfeed, vec![f32v(&[2], &[x, x])]);
        assert_eq!(o.io.host_send, vec![(4, f32v(&[2], &[x, x]))]);
        assert!(o.io.infeed.is_empty() && o.io.host_recv.is_empty());
    }
}

// ---- the corpus's multi-replica and side-effect cases ---------------------------------------

#[test]
fn corpus_replica_and_host_io_cases_pass() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance");
    let mut ran = Vec::new();
    for dir in eval::case::case_dirs(&root).unwrap() {
        let case = eval::case::load_case(&dir).unwrap();
        let host_io = !(case.infeed.is_empty()
            && case.outfeed.is_empty()
            && case.host_send.is_empty()
            && case.host_recv.is_empty());
        let p2p = case.hlo_opcodes.iter().any(|o| o == "send" || o == "recv");
        if case.replicas <= 1 && !host_io && !p2p {
            continue;
        }
        let outcome = eval::corpus::run_case(&case, &EvalOptions::default());
        assert!(outcome.passed(), "{}: {outcome:?}", case.name);
        ran.push(case.name);
    }
    // The corpus README lists 12 multi-replica cases and 2 one-replica host I/O cases.
    for name in [
        "pmap_psum_in_while",
        "send_recv_replicas",
        "send_recv_host",
        "infeed_outfeed",
        "shard_map_2d_groups",
    ] {
        assert!(ran.iter().any(|n| n == name), "{name} not run: {ran:?}");
    }
    assert_eq!(ran.len(), 14, "{ran:?}");
}

// ---- deadlocks ------------------------------------------------------------------------------

fn deadlock_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("hlo/deadlock")
}

/// Runs a deadlock example; returns the report and asserts it came fast.
fn deadlock(file: &str, inputs: Vec<(Vec<Literal>, HostIo)>) -> String {
    let text = std::fs::read_to_string(deadlock_dir().join(file)).unwrap();
    // The examples are valid modules: the CLI (which verifies first) must reach the deadlock.
    let module = hlo::parse(&text).unwrap();
    if let Err(e) = hlo::verify(&module) {
        panic!("{file} does not verify:\n{}", e.render(file, &text));
    }
    let t0 = Instant::now();
    let res = run_io(&text, inputs);
    let took = t0.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "{file}: deadlock found after {took:?}"
    );
    match res {
        Err(EvalError::Deadlock(report)) => report,
        other => panic!("{file}: expected a deadlock, got {other:?}"),
    }
}

fn two(v: Literal) -> Vec<(Vec<Literal>, HostIo)> {
    vec![
        (vec![v.clone()], HostIo::default()),
        (vec![v], HostIo::default()),
    ]
}

#[test]
fn deadlock_mismatched_collective_counts() {
    let report = deadlock("collective_count.hlo", two(f32v(&[2], &[1.0, 2.0])));
    assert!(report.contains("replica 0: finished"), "{report}");
    assert!(
        report.contains("replica 1: waits at %ar (all-reduce over replicas {0,1}, occurrence #2"),
        "{report}"
    );
    assert!(report.contains("waiting for replica 0"), "{report}");
}

#[test]
fn deadlock_recv_without_send() {
    let report = deadlock("recv_without_send.hlo", two(f32v(&[3], &[1.0, 2.0, 3.0])));
    assert!(report.contains("replica 0: finished"), "{report}");
    assert!(report.contains("replica 1: waits at %rcv"), "{report}");
    assert!(report.contains("channel 7 from replica 0"), "{report}");
}

#[test]
fn deadlock_different_channels_never_match() {
    let report = deadlock("channel_mismatch.hlo", two(f32v(&[2], &[1.0, 2.0])));
    assert!(
        report.contains("replica 0: waits at %ar1 (all-reduce channel 1"),
        "{report}"
    );
    assert!(
        report.contains("replica 1: waits at %ar2 (all-reduce channel 2"),
        "{report}"
    );
}

#[test]
fn deadlock_empty_infeed_names_every_replica() {
    // Replica 0 has infeed data, replica 1 has none; replica 0 then waits in the all-reduce.
    let m = module(
        "inf, replica_count=2",
        "  tok = token[] after-all()\n  in = (f32[2], token[]) infeed(tok)\n  \
         v = f32[2] get-tuple-element(in), index=0\n  \
         ROOT r = f32[2] all-reduce(v), replica_groups={}, to_apply=add",
    );
    let fed = HostIo {
        infeed: vec![f32v(&[2], &[1.0, 1.0])].into(),
        ..HostIo::default()
    };
    let t0 = Instant::now();
    let res = run_io(&m, vec![(vec![], fed), (vec![], HostIo::default())]);
    assert!(t0.elapsed() < Duration::from_secs(1));
    let Err(EvalError::Deadlock(report)) = res else {
        panic!("expected a deadlock, got {res:?}")
    };
    assert!(
        report.contains("replica 0: waits at %r (all-reduce"),
        "{report}"
    );
    assert!(
        report.contains("replica 1: waits at %in (infeed"),
        "{report}"
    );
}

// ---- determinism ----------------------------------------------------------------------------

#[test]
fn all_reduce_f32_is_bit_identical_across_runs() {
    const N: usize = 8;
    const LEN: usize = 64;
    // Values spread over many magnitudes, so that the summation order changes the rounding.
    let mut seed = 0x2545_f491_u32;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    let inputs: Vec<Vec<f32>> = (0..N)
        .map(|_| {
            (0..LEN)
                .map(|_| {
                    let m = (next() % 20_000) as f32 / 1000.0 - 10.0;
                    m * 10f32.powi((next() % 15) as i32 - 7)
                })
                .collect()
        })
        .collect();
    // The documented order: a left fold over the group in replica order.
    let want: Vec<f32> = (0..LEN)
        .map(|i| (1..N).fold(inputs[0][i], |acc, r| acc + inputs[r][i]))
        .collect();
    let m = module(
        &format!("det, replica_count={N}"),
        &format!("  x = f32[{LEN}] parameter(0)\n  ROOT r = f32[{LEN}] all-reduce(x), replica_groups={{}}, to_apply=add"),
    );
    let args: Vec<Vec<Literal>> = inputs.iter().map(|v| vec![f32v(&[LEN], v)]).collect();
    let bits = |l: &Literal| -> Vec<u32> {
        let ArrayData::F32(v) = &l.as_array().unwrap().data else {
            panic!("not f32")
        };
        v.iter().map(|x| x.to_bits()).collect()
    };
    let want_bits: Vec<u32> = want.iter().map(|x| x.to_bits()).collect();
    for run_no in 0..20 {
        let out = run(&m, args.clone()).unwrap();
        for (r, o) in out.iter().enumerate() {
            assert_eq!(bits(o), want_bits, "run {run_no}, replica {r}");
        }
    }
}
