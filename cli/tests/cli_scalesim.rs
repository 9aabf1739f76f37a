//! `systole run --scalesim-topology`: the bundled topologies (tests/data/scalesim) layer by
//! layer, SCALE-Sim's weight-stationary formula per layer, the CSV, and the errors.

mod common;
use common::{out_err, systole};

fn tmp(name: &str) -> String {
    let d = std::env::temp_dir().join(format!("systole-scalesim-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name).to_str().unwrap().to_string()
}

const CONV: &str = "tests/data/scalesim/lenet_resnet.csv";
const GEMM: &str = "tests/data/scalesim/gemm.csv";

/// ⌈K/R⌉·⌈N/C⌉·(2R + C + M − 2) − 1, written out again here.
fn ws(m: u64, k: u64, n: u64, r: u64, c: u64) -> u64 {
    k.div_ceil(r) * n.div_ceil(c) * (2 * r + c + m - 2) - 1
}

/// The CSV's rows: layer → (M, K, N, cycles, formula, ratio).
fn rows(csv: &str) -> Vec<(String, [u64; 5], f64)> {
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("layer,kind,M,K,N,cycles,scalesim_ws_cycles,ratio,error")
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 9, "{l}");
            assert_eq!(f[8], "", "a layer failed: {l}");
            let n = |i: usize| f[i].parse::<u64>().unwrap_or_else(|_| panic!("{l}"));
            (
                f[0].to_string(),
                [n(2), n(3), n(4), n(5), n(6)],
                f[7].parse().unwrap(),
            )
        })
        .collect()
}

fn run(args: &[&str]) -> String {
    let o = systole(args);
    let (out, err) = out_err(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    out
}

#[test]
fn conv_layers_are_im2col_gemms_beside_the_fold_formula() {
    let csv = tmp("conv.csv");
    let out = run(&[
        "run",
        "--scalesim-topology",
        CONV,
        "--arch",
        "tpu-v4",
        "-o",
        &csv,
    ]);
    assert!(
        out.contains("8 layer(s) on tpu-v4 (8 MXU(s) of 128x128 bf16, 2 core(s))"),
        "{out}"
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let r = rows(&text);
    // (name, M = Ho·Wo, K = Fh·Fw·C, N): LeNet 32x32 5x5 → 28x28; ResNet 28x28 1x1 stride 2
    // → SCALE-Sim's ⌈(28 − 1 + 2)/2⌉ = 15.
    let want = [
        ("LeNet_C1", 28 * 28, 25, 6),
        ("LeNet_C3", 10 * 10, 150, 16),
        ("LeNet_C5", 1, 400, 120),
        ("LeNet_F6", 1, 120, 84),
        ("ResNet_CB2a_2", 54 * 54, 576, 64),
        ("ResNet_IB3b_2", 26 * 26, 1152, 128),
        ("ResNet_CB4a_1", 15 * 15, 512, 256),
        ("ResNet_FC6", 1, 2048, 1000),
    ];
    assert_eq!(r.len(), want.len());
    for ((name, v, ratio), (wn, m, k, n)) in r.iter().zip(want) {
        assert_eq!(name, wn);
        assert_eq!(&v[..3], &[m, k, n], "{name}");
        assert_eq!(v[4], ws(m, k, n, 128, 128), "{name}");
        assert!(v[3] > 0, "{name}: no cycles");
        let expect = v[3] as f64 / v[4] as f64;
        assert!(
            (ratio - expect).abs() < 1e-3,
            "{name}: ratio {ratio} vs {expect}"
        );
        // The table on stdout has the same numbers.
        assert!(
            out.lines().any(|l| l.starts_with(name.as_str())
                && l.contains(&v[3].to_string())
                && l.contains(&v[4].to_string())),
            "{name} not on stdout:\n{out}"
        );
    }
    // Deterministic: the same file again.
    let again = tmp("conv2.csv");
    run(&[
        "run",
        "--scalesim-topology",
        CONV,
        "--arch",
        "tpu-v4",
        "-o",
        &again,
    ]);
    assert_eq!(text, std::fs::read_to_string(&again).unwrap());
    // One MXU on one core: the formula stays, the big layers' simulated cycles grow.
    let one = tmp("one.csv");
    run(&[
        "run",
        "--scalesim-topology",
        CONV,
        "--arch",
        "tpu-v4",
        "--set",
        "mxu.count=1",
        "--set",
        "cores_per_chip=1",
        "-o",
        &one,
    ]);
    let r1 = rows(&std::fs::read_to_string(&one).unwrap());
    let big = r.iter().position(|x| x.0 == "ResNet_CB2a_2").unwrap();
    assert_eq!(r1[big].1[4], r[big].1[4]);
    assert!(r1[big].1[3] > r[big].1[3], "{:?} vs {:?}", r1[big], r[big]);
}

#[test]
fn gemm_layers_and_the_array_size_in_the_formula() {
    let csv = tmp("gemm.csv");
    run(&[
        "run",
        "--scalesim-topology",
        GEMM,
        "--arch",
        "tpu-v4",
        "--set",
        "mxu.rows=64",
        "--set",
        "mxu.cols=64",
        "-o",
        &csv,
    ]);
    let r = rows(&std::fs::read_to_string(&csv).unwrap());
    // Rows are `M, N, K`.
    let want = [
        ("QKT", 256, 64, 256),
        ("QKTV", 256, 256, 64),
        ("Linear1", 256, 256, 768),
        ("MLP_up", 128, 512, 1024),
    ];
    for ((name, v, _), (wn, m, k, n)) in r.iter().zip(want) {
        assert_eq!((name.as_str(), v[0], v[1], v[2]), (wn, m, k, n));
        assert_eq!(v[4], ws(m, k, n, 64, 64), "{name}");
    }
}

#[test]
fn bad_topologies_are_exit_2_at_file_and_line() {
    let bad = tmp("bad.csv");
    std::fs::write(&bad, "Layer, M, N, K,\nA,4,4,4,\nB,4,four,4,\n").unwrap();
    let dp = tmp("dp.csv");
    std::fs::write(
        &dp,
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\nConv_DP,8,8,3,3,4,4,1,\n",
    )
    .unwrap();
    let x = tmp("x.csv");
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["run", "--scalesim-topology", &bad],
            format!("{bad}:3: layer `B`: N is `four`"),
        ),
        (
            vec!["run", "--scalesim-topology", &dp],
            format!("{dp}:2: layer `Conv_DP`: depthwise"),
        ),
        (
            vec!["run", "--scalesim-topology", "tests/data/npy/mlp.hlo"],
            "not a SCALE-Sim topology header".into(),
        ),
        (
            vec!["run", "--scalesim-topology", "no/such.csv"],
            "no/such.csv".into(),
        ),
        (
            vec!["run", "tests/data/npy/mlp.hlo", "--scalesim-topology", GEMM],
            "give one or the other".into(),
        ),
        (
            vec!["run", "tests/data/npy/mlp.hlo", "-o", &x],
            "--scalesim-topology".into(),
        ),
        (vec!["run"], "the HLO file is required".into()),
    ];
    for (args, want) in cases {
        let o = systole(&args);
        let (_, err) = out_err(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(&want), "{args:?}: wanted {want:?} in {err}");
    }
}
