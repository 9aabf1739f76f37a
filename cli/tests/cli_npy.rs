//! NumPy inputs and outputs of `run` and `eval`: `.npy` per parameter, `.npz` by name or
//! position (stored or compressed), every element type, Fortran order, bf16 from float32
//! (rounded to nearest even), `--outputs OUT.npz` checked against numpy's own results
//! (tests/data/npy, made by scripts/gen_npy_data.py), and the errors.

mod common;
use common::{out_err, systole};
use std::collections::BTreeMap;
use std::io::Read;

const D: &str = "tests/data/npy";

fn tmp(name: &str) -> String {
    let d = std::env::temp_dir().join(format!("systole-npy-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name).to_str().unwrap().to_string()
}

fn data(name: &str) -> String {
    format!("{D}/{name}")
}

/// One array of an archive: dtype descr, shape text and the raw data bytes.
#[derive(Debug, PartialEq)]
struct Npy {
    descr: String,
    shape: Vec<u64>,
    data: Vec<u8>,
}

fn parse_npy(bytes: &[u8]) -> Npy {
    assert_eq!(&bytes[..6], b"\x93NUMPY", "not an .npy");
    let (hlen, start) = if bytes[6] == 1 {
        (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10)
    } else {
        (
            u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize,
            12,
        )
    };
    let header = std::str::from_utf8(&bytes[start..start + hlen]).unwrap();
    let field = |k: &str| {
        let at = header
            .find(k)
            .unwrap_or_else(|| panic!("no {k} in {header}"))
            + k.len();
        let rest = header[at..].trim_start_matches([':', ' ']);
        let end = if rest.starts_with('(') {
            rest.find(')').unwrap() + 1
        } else {
            rest.find(',').unwrap()
        };
        rest[..end].trim_matches('\'').replace(' ', "")
    };
    assert_eq!(field("'fortran_order'"), "False", "{header}");
    Npy {
        descr: field("'descr'"),
        // `(2, 3)` and `(2,3,)` are the same tuple.
        shape: field("'shape'")
            .trim_matches(['(', ')'])
            .split(',')
            .filter(|d| !d.is_empty())
            .map(|d| d.parse().unwrap())
            .collect(),
        data: bytes[start + hlen..].to_vec(),
    }
}

fn read_npz(path: &str) -> BTreeMap<String, Npy> {
    // Relative paths are the repository's (the binary runs from its root).
    let path = common::root().join(path);
    let path = path.to_str().unwrap();
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut z = zip::ZipArchive::new(f).unwrap();
    let mut out = BTreeMap::new();
    for i in 0..z.len() {
        let mut e = z.by_index(i).unwrap();
        let name = e.name().trim_end_matches(".npy").to_string();
        let mut b = Vec::new();
        e.read_to_end(&mut b).unwrap();
        out.insert(name, parse_npy(&b));
    }
    out
}

fn ok(args: &[&str]) -> String {
    let o = systole(args);
    let (out, err) = out_err(&o);
    assert_eq!(o.status.code(), Some(0), "{args:?}\n{out}\n{err}");
    out
}

fn fails(args: &[&str], want: &str) {
    let o = systole(args);
    let (_, err) = out_err(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: wanted {want:?} in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

fn type_files() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(common::root().join(D))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("types_") && n.ends_with(".npy"))
        .map(|n| data(&n))
        .collect();
    v.sort();
    assert_eq!(v.len(), 13);
    v
}

/// Every element type: the evaluator's x + x equals numpy's, bit for bit, from an npz by
/// parameter name, by position, and from one .npy per parameter; the three outputs are the
/// same bytes.
#[test]
fn every_element_type_round_trips_through_eval() {
    let expected = read_npz(&data("types_expected.npz"));
    let hlo = data("types.hlo");
    let by_name = tmp("by_name.npz");
    let by_pos = tmp("by_pos.npz");
    let by_npy = tmp("by_npy.npz");
    ok(&[
        "eval",
        &hlo,
        "--inputs",
        &data("types_args.npz"),
        "--outputs",
        &by_name,
    ]);
    ok(&[
        "eval",
        &hlo,
        "--inputs",
        &data("types_args_positional.npz"),
        "--outputs",
        &by_pos,
    ]);
    // One --inputs with a comma-separated list.
    let files = type_files().join(",");
    ok(&["eval", &hlo, "--inputs", &files, "--outputs", &by_npy]);
    let got = read_npz(&by_name);
    assert_eq!(got.len(), 13);
    for i in 0..13 {
        let g = &got[&format!("out_{i}")];
        let e = &expected[&format!("arr_{i}")];
        assert_eq!(g, e, "output {i}");
    }
    // Types as numpy names them (bf16 as ml_dtypes saves it).
    let descrs: Vec<&str> = (0..13)
        .map(|i| got[&format!("out_{i}")].descr.as_str())
        .collect();
    assert_eq!(
        descrs,
        [
            "<f4", "<f8", "<f2", "<V2", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8",
            "|b1"
        ]
    );
    let bytes = std::fs::read(&by_name).unwrap();
    // Stored entries with fixed timestamps: the same run writes the same bytes.
    assert_eq!(bytes, std::fs::read(&by_pos).unwrap());
    assert_eq!(bytes, std::fs::read(&by_npy).unwrap());
}

/// A float32 array for a bf16 parameter is rounded to nearest even.
#[test]
fn bf16_takes_float32_rounded_to_nearest_even() {
    let mut files = type_files();
    files[3] = data("bf16_as_f32.npy");
    let out = tmp("bf16.npz");
    // --inputs repeated, one file each, before the module's path.
    let mut args = vec!["eval"];
    for f in &files {
        args.extend(["--inputs", f.as_str()]);
    }
    args.extend(["--outputs", &out, "tests/data/npy/types.hlo"]);
    ok(&args);
    let got = read_npz(&out);
    // 2 * [[1, 1.015625], [-2.5, 300]] as bf16 bits: 2.0, 2.03125, -5, 600.
    let bits: Vec<u16> = got["out_3"]
        .data
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(bits, [0x4000, 0x4002, 0xc0a0, 0x4416]);
}

/// The simulated chip on NumPy inputs: per-parameter .npy (one in Fortran order) and a
/// compressed .npz give the same results, close to numpy's float64 reference.
#[test]
fn run_on_the_chip_from_npy_and_compressed_npz() {
    let hlo = data("mlp.hlo");
    let a = tmp("mlp_a.npz");
    let b = tmp("mlp_b.npz");
    let (x, w1, b1, w2) = (
        data("mlp_x.npy"),
        data("mlp_w1_fortran.npy"),
        data("mlp_b1.npy"),
        data("mlp_w2.npy"),
    );
    let all = [x, w1, b1, w2].join(",");
    let text = ok(&[
        "run",
        &hlo,
        "--f32-dot-passes",
        "6",
        "--inputs",
        &all,
        "--outputs",
        &a,
    ]);
    assert!(text.contains("outputs match the evaluator"), "{text}");
    // 512 elements: summarized, not printed whole.
    assert!(text.contains("f32[32,16] (512 elements): min "), "{text}");
    assert!(text.contains("--full prints every element"), "{text}");
    ok(&[
        "run",
        &hlo,
        "--f32-dot-passes",
        "6",
        "--inputs",
        &data("mlp_args_compressed.npz"),
        "--outputs",
        &b,
    ]);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let got = &read_npz(&a)["out"];
    let want = &read_npz(&data("mlp_expected.npz"))["out"];
    assert_eq!(
        (got.descr.as_str(), got.shape.as_slice()),
        ("<f4", &[32u64, 16][..])
    );
    assert_eq!(got.shape, want.shape);
    let f = |d: &[u8]| -> Vec<f32> {
        d.chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let (g, w) = (f(&got.data), f(&want.data));
    let worst = g
        .iter()
        .zip(&w)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(worst < 1e-4, "max |chip - numpy| = {worst}");
    // --full prints every element.
    let full = ok(&[
        "run",
        &hlo,
        "--f32-dot-passes",
        "6",
        "--inputs",
        &data("mlp_args_compressed.npz"),
        "--full",
    ]);
    assert!(!full.contains("elements): min"), "{full}");
}

/// Several replicas: every one gets the NumPy arguments, found by the parameter's name without
/// HLO's numbering (`shard_map` for `shard_map.2`); results `replicaR_out`.
#[test]
fn replicas_share_npy_arguments_and_write_one_output_each() {
    let out = tmp("replicas.npz");
    let text = ok(&[
        "eval",
        "tests/conformance/pmap_psum_in_while/module.hlo",
        "--inputs",
        &data("pmap_args.npz"),
        "--outputs",
        &out,
    ]);
    assert!(text.contains("replica 3:"), "{text}");
    let got = read_npz(&out);
    let keys: Vec<&str> = got.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "replica0_out",
            "replica1_out",
            "replica2_out",
            "replica3_out"
        ]
    );
    for v in got.values() {
        assert_eq!(
            (v.descr.as_str(), v.shape.as_slice()),
            ("<f4", &[1u64, 3][..])
        );
        // The same arguments everywhere: the same results everywhere.
        assert_eq!(v.data, got["replica0_out"].data);
    }
}

#[test]
fn npy_errors_name_the_file_and_the_parameter() {
    let hlo = data("mlp.hlo");
    let (x, w1, b1, w2) = (
        data("mlp_x.npy"),
        data("mlp_w1_fortran.npy"),
        data("mlp_b1.npy"),
        data("mlp_w2.npy"),
    );
    let wt = data("mlp_w2_transposed.npy");
    fails(
        &[
            "run",
            &hlo,
            "--inputs",
            &[x.as_str(), &w1, &b1, &wt].join(","),
        ],
        "mlp_w2_transposed.npy for parameter 3 `w2` (f32[128,16]): the array has shape (16, 128)",
    );
    let x64 = data("mlp_x_f64.npy");
    fails(
        &[
            "eval",
            &hlo,
            "--inputs",
            &[x64.as_str(), &w1, &b1, &w2].join(","),
        ],
        "parameter 0 `x` (f32[32,64]): dtype <f8 does not fit f32",
    );
    fails(
        &["run", &hlo, "--inputs", &x],
        "1 .npy file(s) for the module's 4 parameter(s) (x, w1, b1, w2)",
    );
    fails(
        &["eval", &hlo, "--inputs", &data("types_args.npz")],
        "no array for parameter 0 `x` (f32[32,64]) (looked for `x`, `arr_0`",
    );
    fails(
        &[
            "eval",
            &data("types.hlo"),
            "--inputs",
            &data("mlp_args_compressed.npz"),
        ],
        "no array for parameter 0 `f32`",
    );
    fails(
        &["run", &hlo, "--inputs", &format!("{hlo},{x}")],
        "give a case.json",
    );
    fails(
        &[
            "run",
            &hlo,
            "--inputs",
            &data("mlp_args_compressed.npz"),
            "--outputs",
            &tmp("o.npy"),
        ],
        "must end in .npz",
    );
    fails(
        &[
            "run",
            &hlo,
            "--timing-only",
            "--inputs",
            &data("mlp_args_compressed.npz"),
            "--outputs",
            &tmp("o.npz"),
        ],
        "--outputs needs a functional run",
    );
    // An archive with an array no parameter takes.
    let one = tmp("one.hlo");
    std::fs::write(
        &one,
        "HloModule one\nENTRY e {\n  p = f32[2,3]{1,0} parameter(0)\n  ROOT n = f32[2,3]{1,0} negate(p)\n}\n",
    )
    .unwrap();
    fails(
        &["eval", &one, "--inputs", &data("types_args_positional.npz")],
        "array `arr_1` matches no parameter",
    );
    let garbage = tmp("garbage.npy");
    std::fs::write(&garbage, b"not numpy").unwrap();
    fails(
        &[
            "run",
            &hlo,
            "--inputs",
            &[garbage.as_str(), &w1, &b1, &w2].join(","),
        ],
        "garbage.npy for parameter 0 `x` (f32[32,64]): not an .npy file",
    );
    let not_zip = tmp("not_zip.npz");
    std::fs::write(&not_zip, b"not a zip").unwrap();
    fails(
        &["eval", &hlo, "--inputs", &not_zip],
        "not an .npz (zip) archive",
    );
}

/// A compiled program file runs on its own: `systole sim PROG.bin --inputs` writes the
/// arguments into the regions the program names as its parameters and reads the result from
/// its result regions, giving the same bytes as `systole run` on the HLO.
#[test]
fn compiled_program_file_runs_alone_through_its_io_regions() {
    let hlo = data("mlp.hlo");
    let (prog, a, b) = (tmp("mlp.bin"), tmp("mlp_run.npz"), tmp("mlp_sim.npz"));
    let common = ["--arch", "tpu-v4", "--f32-dot-passes", "6"];
    let mut args = vec!["compile", hlo.as_str(), "-o", prog.as_str()];
    args.extend(common);
    ok(&args);
    let npz = data("mlp_args_compressed.npz");
    let mut args = vec!["run", hlo.as_str(), "--inputs", &npz, "--outputs", &a];
    args.extend(common);
    ok(&args);
    let text = ok(&[
        "sim",
        &prog,
        "--arch",
        "tpu-v4",
        "--inputs",
        &npz,
        "--outputs",
        &b,
    ]);
    assert!(text.contains("f32[32,16] (512 elements): min "), "{text}");
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    // The disassembly shows the interface and the plan.
    let asm = ok(&["disasm", &prog]);
    assert!(asm.contains(" f32[32,16]{1,0} io=result"), "{asm}");
    assert!(asm.contains(" live="), "{asm}");
    // Errors: missing arguments, a case.json, a program without interface regions.
    fails(
        &["sim", &prog, "--arch", "tpu-v4", "--outputs", &b],
        "the program has 4 parameter(s): give them with --inputs",
    );
    fails(
        &[
            "sim",
            &prog,
            "--arch",
            "tpu-v4",
            "--inputs",
            "tests/conformance/binary_arith_f32/case.json",
        ],
        "reads .npy or .npz arguments",
    );
    fails(
        &["sim", "tests/chip/latent_race.s", "--outputs", &b],
        "names no parameter or result regions",
    );
}
