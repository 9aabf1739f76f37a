//! Differential tests of the expander passes and the host link on shapes beyond the corpus:
//! the compiled program on the simulated chip (tpu-v4, one chip, race detection on) against the
//! reference evaluator, on random inputs. Bit-level ops (reduce-precision, the random number
//! generators, dynamic sizes) must agree exactly; float math within 1e-4.

mod chip_common;

use chip_common::on_chip;
use eval::case::{check_value, Check, Tolerance};
use hlo::Literal;
use systole_tests::{random_literal, Rng};

/// Compiles and runs `text` on one chip with random inputs (seed `seed`) and `infeed` on the
/// host stream; returns (expected, on chip, outfeed bytes).
fn run(text: &str, seed: u64, infeed: &[Literal]) -> (Literal, Literal, Vec<u8>) {
    let m = hlo::parse(text).unwrap_or_else(|e| panic!("{}", e.render("<test>", text)));
    let m = hlo::verified(m).unwrap_or_else(|e| panic!("{}", e.render("<test>", text)));
    let mut g = Rng(seed);
    let args: Vec<Literal> = m
        .entry()
        .program_shape()
        .params
        .iter()
        .map(|s| random_literal(s, &mut g).expect("supported test type"))
        .collect();
    let input = eval::ReplicaInput {
        args: args.clone(),
        io: eval::HostIo {
            infeed: infeed.iter().cloned().collect(),
            ..Default::default()
        },
    };
    let want = eval::replica::run_replicas(&m, vec![input], &Default::default())
        .expect("the evaluator runs it")
        .remove(0)
        .result;
    let (c, mut sys) = on_chip(&m, &args, true, text);
    if !infeed.is_empty() {
        // A tuple's leaves follow each other on the stream.
        fn leaves(l: &Literal) -> Vec<&hlo::ArrayLiteral> {
            match l {
                Literal::Tuple(ts) => ts.iter().flat_map(leaves).collect(),
                Literal::Array(a) => vec![a],
                _ => vec![],
            }
        }
        let stream: Vec<u8> = infeed
            .iter()
            .flat_map(leaves)
            .flat_map(compiler::io::to_bytes)
            .collect();
        sys.set_infeed(0, 0, stream).unwrap();
    }
    sys.run().expect("the program runs to halt without races");
    let hbm = sys.hbm(0).unwrap();
    let have =
        compiler::io::read_literal(&c.io.result, &mut |a, n| hbm.read_vec(a, n).ok()).unwrap();
    let out = sys.outfeed(0, 0).unwrap_or(&[]).to_vec();
    (want, have, out)
}

fn close(text: &str, seeds: &[u64], tol: f64) {
    for &s in seeds {
        let (want, have, _) = run(text, s, &[]);
        let t = Tolerance {
            rtol: tol,
            atol: tol,
        };
        check_value(Check::Close, t, None, &want, &have)
            .unwrap_or_else(|m| panic!("seed {s}: {m}"));
    }
}

fn exact(text: &str, seeds: &[u64]) {
    for &s in seeds {
        let (want, have, _) = run(text, s, &[]);
        assert_eq!(want, have, "seed {s}");
    }
}

#[test]
fn batch_norm_training_inference_grad_on_chip() {
    let text = r#"
HloModule bn

ENTRY main {
  x = f32[5,8,3]{2,1,0} parameter(0)
  scale = f32[5]{0} parameter(1)
  offset = f32[5]{0} parameter(2)
  m = f32[5]{0} parameter(3)
  v0 = f32[5]{0} parameter(4)
  v = f32[5]{0} multiply(v0, v0)
  dy = f32[5,8,3]{2,1,0} parameter(5)
  t = (f32[5,8,3]{2,1,0}, f32[5]{0}, f32[5]{0}) batch-norm-training(x, scale, offset), epsilon=0.01, feature_index=0
  i = f32[5,8,3]{2,1,0} batch-norm-inference(x, scale, offset, m, v), epsilon=0.01, feature_index=0
  g = (f32[5,8,3]{2,1,0}, f32[5]{0}, f32[5]{0}) batch-norm-grad(x, scale, m, v, dy), epsilon=0.01, feature_index=0
  xb = bf16[4,6,7]{2,1,0} parameter(6)
  sb = bf16[7]{0} parameter(7)
  ob = bf16[7]{0} parameter(8)
  tb = (bf16[4,6,7]{2,1,0}, bf16[7]{0}, bf16[7]{0}) batch-norm-training(xb, sb, ob), epsilon=0.001, feature_index=2
  ROOT r = ((f32[5,8,3]{2,1,0}, f32[5]{0}, f32[5]{0}), f32[5,8,3]{2,1,0}, (f32[5,8,3]{2,1,0}, f32[5]{0}, f32[5]{0}), (bf16[4,6,7]{2,1,0}, bf16[7]{0}, bf16[7]{0})) tuple(t, i, g, tb)
}
"#;
    // bf16 results round once from f32; two bf16 ulps of slack.
    close(text, &[1, 2], 2e-2);
}

#[test]
fn reduce_precision_is_bit_exact_on_chip() {
    let text = r#"
HloModule rp

ENTRY main {
  x = f32[9,7]{1,0} parameter(0)
  big = f32[] constant(1e5)
  bb = f32[9,7]{1,0} broadcast(big), dimensions={}
  tiny = f32[] constant(1e-6)
  tb = f32[9,7]{1,0} broadcast(tiny), dimensions={}
  xl = f32[9,7]{1,0} multiply(x, bb)
  xs = f32[9,7]{1,0} multiply(x, tb)
  a = f32[9,7]{1,0} reduce-precision(xl), exponent_bits=5, mantissa_bits=10
  b = f32[9,7]{1,0} reduce-precision(xs), exponent_bits=5, mantissa_bits=2
  c = f32[9,7]{1,0} reduce-precision(x), exponent_bits=4, mantissa_bits=3
  h = f16[9,7]{1,0} convert(x)
  d = f16[9,7]{1,0} reduce-precision(h), exponent_bits=3, mantissa_bits=4
  y = f64[9,7]{1,0} convert(xl)
  e = f64[9,7]{1,0} reduce-precision(y), exponent_bits=8, mantissa_bits=23
  ROOT r = (f32[9,7]{1,0}, f32[9,7]{1,0}, f32[9,7]{1,0}, f16[9,7]{1,0}, f64[9,7]{1,0}) tuple(a, b, c, d, e)
}
"#;
    exact(text, &[1, 2, 3]);
}

#[test]
fn rng_bit_generators_and_rng_are_bit_exact_on_chip() {
    let text = r#"
HloModule rng

ENTRY main {
  k = u32[6]{0} parameter(0)
  k2 = u32[3,2]{1,0} reshape(k)
  s3 = u64[3]{0} bitcast-convert(k2)
  k4 = u32[4]{0} slice(k), slice={[0:4]}
  k22 = u32[2,2]{1,0} reshape(k4)
  s = u64[2]{0} bitcast-convert(k22)
  a = (u64[2]{0}, u32[7,3]{1,0}) rng-bit-generator(s), algorithm=rng_three_fry
  b = (u64[2]{0}, u64[5]{0}) rng-bit-generator(s), algorithm=rng_three_fry
  c = (u64[3]{0}, s32[3,11]{1,0}) rng-bit-generator(s3), algorithm=rng_philox
  d = (u64[2]{0}, u16[13]{0}) rng-bit-generator(s), algorithm=rng_philox
  e = (u64[3]{0}, s64[9]{0}) rng-bit-generator(s3), algorithm=rng_default
  lo = f32[] parameter(1)
  w = f32[] parameter(2)
  w2 = f32[] multiply(w, w)
  hi = f32[] add(lo, w2)
  u = f32[33]{0} rng(lo, hi), distribution=rng_uniform
  n = f32[9,5]{1,0} rng(lo, w2), distribution=rng_normal
  i0 = s32[] parameter(3)
  i1 = s32[] parameter(4)
  ui = s32[17]{0} rng(i0, i1), distribution=rng_uniform
  ROOT r = ((u64[2]{0}, u32[7,3]{1,0}), (u64[2]{0}, u64[5]{0}), (u64[3]{0}, s32[3,11]{1,0}), (u64[2]{0}, u16[13]{0}), (u64[3]{0}, s64[9]{0}), f32[33]{0}, f32[9,5]{1,0}, s32[17]{0}) tuple(a, b, c, d, e, u, n, ui)
}
"#;
    exact(text, &[1, 2]);
}

#[test]
fn triangular_solve_and_cholesky_on_chip() {
    // Well-conditioned inputs made in the module: a + 6·I; SPD s = a·aᵀ + 6·I.
    let text = r#"
HloModule la

ENTRY main {
  a0 = f32[3,6,6]{2,1,0} parameter(0)
  i = s32[3,6,6]{2,1,0} iota(), iota_dimension=1
  j = s32[3,6,6]{2,1,0} iota(), iota_dimension=2
  eq = pred[3,6,6]{2,1,0} compare(i, j), direction=EQ
  six = f32[] constant(6)
  sixes = f32[3,6,6]{2,1,0} broadcast(six), dimensions={}
  zero = f32[] constant(0)
  zeros = f32[3,6,6]{2,1,0} broadcast(zero), dimensions={}
  d = f32[3,6,6]{2,1,0} select(eq, sixes, zeros)
  a = f32[3,6,6]{2,1,0} add(a0, d)
  aat = f32[3,6,6]{2,1,0} dot(a0, a0), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}
  s = f32[3,6,6]{2,1,0} add(aat, d)
  b = f32[3,6,4]{2,1,0} parameter(1)
  c = f32[3,4,6]{2,1,0} parameter(2)
  x1 = f32[3,6,4]{2,1,0} triangular-solve(a, b), left_side=true, lower=false, transpose_a=ADJOINT
  x2 = f32[3,4,6]{2,1,0} triangular-solve(a, c), left_side=false, lower=true, unit_diagonal=true, transpose_a=NO_TRANSPOSE
  x3 = f32[3,4,6]{2,1,0} triangular-solve(a, c), left_side=false, lower=false, transpose_a=TRANSPOSE
  l = f32[3,6,6]{2,1,0} cholesky(s), lower=true
  u = f32[3,6,6]{2,1,0} cholesky(s), lower=false
  ROOT r = (f32[3,6,4]{2,1,0}, f32[3,4,6]{2,1,0}, f32[3,4,6]{2,1,0}, f32[3,6,6]{2,1,0}, f32[3,6,6]{2,1,0}) tuple(x1, x2, x3, l, u)
}
"#;
    close(text, &[1, 2], 1e-4);
}

#[test]
fn complex_arithmetic_and_every_fft_kind_on_chip() {
    let text = r#"
HloModule cf

ENTRY main {
  re = f32[4,16]{1,0} parameter(0)
  im = f32[4,16]{1,0} parameter(1)
  z = c64[4,16]{1,0} complex(re, im)
  w = c64[4,16]{1,0} complex(im, re)
  p = c64[4,16]{1,0} multiply(z, w)
  q = c64[4,16]{1,0} divide(p, w)
  n = c64[4,16]{1,0} negate(q)
  s = c64[4,16]{1,0} add(n, z)
  ab = f32[4,16]{1,0} abs(p)
  f = c64[4,16]{1,0} fft(z), fft_type=FFT, fft_length={16}
  g = c64[4,16]{1,0} fft(z), fft_type=IFFT, fft_length={4,16}
  rf = c64[4,9]{1,0} fft(re), fft_type=RFFT, fft_length={4,16}
  ir = f32[4,16]{1,0} fft(rf), fft_type=IRFFT, fft_length={4,16}
  x3 = f32[2,3,6]{2,1,0} parameter(2)
  r3 = c64[2,3,4]{2,1,0} fft(x3), fft_type=RFFT, fft_length={2,3,6}
  i3 = f32[2,3,6]{2,1,0} fft(r3), fft_type=IRFFT, fft_length={2,3,6}
  ROOT r = (c64[4,16]{1,0}, f32[4,16]{1,0}, c64[4,16]{1,0}, c64[4,16]{1,0}, c64[4,9]{1,0}, f32[4,16]{1,0}, c64[2,3,4]{2,1,0}, f32[2,3,6]{2,1,0}) tuple(s, ab, f, g, rf, ir, r3, i3)
}
"#;
    close(text, &[1, 2], 1e-4);
}

#[test]
fn dynamic_sizes_on_chip() {
    let text = r#"
HloModule dyn

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

max {
  ma = f32[] parameter(0)
  mb = f32[] parameter(1)
  ROOT mm = f32[] maximum(ma, mb)
}

ENTRY main {
  x = f32[5,9]{1,0} parameter(0)
  k = s32[] parameter(1)
  n = s32[] add(k, k)
  xd = f32[5,<=9]{1,0} set-dimension-size(x, n), dimensions={1}
  y = f32[5,<=9]{1,0} exponential(xd)
  zero = f32[] constant(0)
  sums = f32[5]{0} reduce(y, zero), dimensions={1}, to_apply=add
  ninf = f32[] constant(-inf)
  m = f32[] reduce(xd, ninf), dimensions={0,1}, to_apply=max
  g = s32[] get-dimension-size(y), dimensions={1}
  ROOT r = (f32[5]{0}, f32[], s32[]) tuple(sums, m, g)
}
"#;
    // k is in [-8, 8): sizes from clamped-at-0 (the evaluator rejects negative sizes) to 9.
    let mut ran = 0;
    for seed in 1..40 {
        let m = hlo::parse(text).unwrap();
        let mut g = Rng(seed);
        let shapes = m.entry().program_shape().params;
        let _x = random_literal(&shapes[0], &mut g);
        let k = random_literal(&shapes[1], &mut g).unwrap();
        let kv = k.as_array().unwrap().data.bits_at(0) as i32;
        if !(0..=4).contains(&kv) {
            continue;
        }
        let (want, have, _) = run(text, seed, &[]);
        let t = Tolerance {
            rtol: 1e-6,
            atol: 1e-6,
        };
        check_value(Check::Close, t, None, &want, &have).unwrap_or_else(|e| panic!("{e}"));
        ran += 1;
    }
    assert!(ran >= 3, "only {ran} seeds gave a size in range");
}

#[test]
fn tuple_infeed_and_outfeed_on_chip() {
    let text = r#"
HloModule io

ENTRY main {
  p = f32[3,2]{1,0} parameter(0)
  t0 = token[] after-all()
  in = ((f32[3,2]{1,0}, (s32[4]{0}, f32[])), token[]) infeed(t0)
  d = (f32[3,2]{1,0}, (s32[4]{0}, f32[])) get-tuple-element(in), index=0
  a = f32[3,2]{1,0} get-tuple-element(d), index=0
  e = (s32[4]{0}, f32[]) get-tuple-element(d), index=1
  v = s32[4]{0} get-tuple-element(e), index=0
  s = f32[] get-tuple-element(e), index=1
  sb = f32[3,2]{1,0} broadcast(s), dimensions={}
  y = f32[3,2]{1,0} multiply(a, sb)
  z = f32[3,2]{1,0} add(y, p)
  t1 = token[] get-tuple-element(in), index=1
  t2 = token[] outfeed((f32[3,2]{1,0}, s32[4]{0}) tuple(z, v), t1), outfeed_shape=(f32[3,2]{1,0}, s32[4]{0})
  ROOT r = f32[3,2]{1,0} subtract(z, p)
}
"#;
    let text = text.replace(
        "outfeed((f32[3,2]{1,0}, s32[4]{0}) tuple(z, v), t1)",
        "outfeed(zv, t1)",
    );
    let text = text.replace(
        "  t2 = token[]",
        "  zv = (f32[3,2]{1,0}, s32[4]{0}) tuple(z, v)\n  t2 = token[]",
    );
    let a = Literal::array(
        vec![3, 2],
        hlo::ArrayData::F32(vec![1.0, -2.0, 3.5, 0.25, 8.0, -1.0]),
    );
    let v = Literal::array(vec![4], hlo::ArrayData::S32(vec![7, -3, 11, 0]));
    let s = Literal::array(vec![], hlo::ArrayData::F32(vec![-1.5]));
    let value = Literal::Tuple(vec![a, Literal::Tuple(vec![v, s])]);
    let m = hlo::parse(&text).unwrap();
    let m = hlo::verified(m).unwrap();
    let mut g = Rng(5);
    let p = random_literal(&m.entry().program_shape().params[0], &mut g).unwrap();
    let input = eval::ReplicaInput {
        args: vec![p],
        io: eval::HostIo {
            infeed: vec![value.clone()].into(),
            ..Default::default()
        },
    };
    let out = eval::replica::run_replicas(&m, vec![input], &Default::default())
        .unwrap()
        .remove(0);
    let (want, have, bytes) = run(&text, 5, &[value]);
    assert_eq!(want, have);
    assert_eq!(out.result, want);
    let expected: Vec<u8> = match &out.io.outfeed[..] {
        [Literal::Tuple(ts)] => ts
            .iter()
            .flat_map(|t| compiler::io::to_bytes(t.as_array().unwrap()))
            .collect(),
        o => panic!("one tuple outfeed expected, got {o:?}"),
    };
    assert_eq!(bytes, expected);
}

#[test]
fn dynamic_slice_and_update_of_columns_on_chip() {
    // Boxes whose innermost dimension has size 1 (a column of a matrix, a middle slab of a
    // 3-D array): runs of one element, not the kept dimension's elements side by side.
    let text = r#"
HloModule cols

ENTRY main {
  a = f32[9,7]{1,0} parameter(0)
  b = f32[4,6,5]{2,1,0} parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  z = s32[] constant(0)
  c = f32[9,1]{1,0} dynamic-slice(a, z, i), dynamic_slice_sizes={9,1}
  d = f32[4,2,1]{2,1,0} dynamic-slice(b, z, j, i), dynamic_slice_sizes={4,2,1}
  u = f32[9,7]{1,0} dynamic-update-slice(a, c, z, j)
  ROOT r = (f32[9,1]{1,0}, f32[4,2,1]{2,1,0}, f32[9,7]{1,0}) tuple(c, d, u)
}
"#;
    exact(text, &[1, 2, 3, 4]);
}

#[test]
fn blocked_triangular_solve_and_cholesky_on_chip() {
    // m = 100: three 32-row blocks and a partial one, their updates on the MXU.
    let text = r#"
HloModule blk

ENTRY main {
  a0 = f32[2,100,100]{2,1,0} parameter(0)
  i = s32[2,100,100]{2,1,0} iota(), iota_dimension=1
  j = s32[2,100,100]{2,1,0} iota(), iota_dimension=2
  eq = pred[2,100,100]{2,1,0} compare(i, j), direction=EQ
  k = f32[] constant(24)
  ks = f32[2,100,100]{2,1,0} broadcast(k), dimensions={}
  zero = f32[] constant(0)
  zs = f32[2,100,100]{2,1,0} broadcast(zero), dimensions={}
  d = f32[2,100,100]{2,1,0} select(eq, ks, zs)
  a = f32[2,100,100]{2,1,0} add(a0, d)
  b = f32[2,100,7]{2,1,0} parameter(1)
  c = f32[2,5,100]{2,1,0} parameter(2)
  x = f32[2,100,7]{2,1,0} triangular-solve(a, b), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
  y = f32[2,5,100]{2,1,0} triangular-solve(a, c), left_side=false, lower=false, transpose_a=TRANSPOSE
  aat = f32[2,100,100]{2,1,0} dot(a0, a0), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}, operand_precision={highest,highest}
  s = f32[2,100,100]{2,1,0} add(aat, d)
  l = f32[2,100,100]{2,1,0} cholesky(s), lower=true
  u = f32[2,100,100]{2,1,0} cholesky(s), lower=false
  ROOT r = (f32[2,100,7]{2,1,0}, f32[2,5,100]{2,1,0}, f32[2,100,100]{2,1,0}, f32[2,100,100]{2,1,0}) tuple(x, y, l, u)
}
"#;
    close(text, &[1], 1e-4);
}
