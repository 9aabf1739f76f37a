//! Convolution against a direct loop written from the definition (module docs of `conv`).

use super::*;
use crate::linalg::convert::strides;
use crate::linalg::test_util::{f32s, f64s, shape, Lcg};
use hlo::literal::ArrayData;
use hlo::types::ElementType as T;
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Case {
    labels: ConvDims,
    lhs_dims: Vec<usize>,
    rhs_dims: Vec<usize>,
    out_dims: Vec<usize>,
    attrs: Attrs,
}

/// Direct evaluation in f64, index by index.
fn naive(c: &Case, l: &[f64], r: &[f64]) -> Vec<f64> {
    let lb = &c.labels;
    let ns = lb.input_spatial.len();
    let (ls, rs, os) = (
        strides(&c.lhs_dims),
        strides(&c.rhs_dims),
        strides(&c.out_dims),
    );
    let n = c.lhs_dims[lb.input_batch as usize];
    let cin = c.lhs_dims[lb.input_feature as usize];
    let o_total = c.rhs_dims[lb.kernel_output_feature as usize];
    let g = c.attrs.feature_group_count.unwrap_or(1) as usize;
    let bg = c.attrs.batch_group_count.unwrap_or(1) as usize;
    let (cg, og, obg, nb) = (cin / g, o_total / g, o_total / bg, n / bg);
    let win = c.attrs.window.clone().unwrap();
    let total: usize = c.out_dims.iter().product();
    let mut out = vec![0.0; total];
    let ksp: Vec<usize> = lb
        .kernel_spatial
        .iter()
        .map(|&d| c.rhs_dims[d as usize])
        .collect();
    let nk: usize = ksp.iter().product();
    for (flat, slot) in out.iter_mut().enumerate() {
        let idx: Vec<usize> = (0..c.out_dims.len())
            .map(|d| flat / os[d] % c.out_dims[d])
            .collect();
        let b = idx[lb.output_batch as usize];
        let o = idx[lb.output_feature as usize];
        let (fg, bgi) = (o / og, o / obg);
        let mut acc = 0.0;
        for ci in 0..cg {
            'tap: for kf in 0..nk {
                let mut lo = (bgi * nb + b) * ls[lb.input_batch as usize]
                    + (fg * cg + ci) * ls[lb.input_feature as usize];
                let mut ro = ci * rs[lb.kernel_input_feature as usize]
                    + o * rs[lb.kernel_output_feature as usize];
                let mut rem = kf;
                for d in (0..ns).rev() {
                    let k = rem % ksp[d];
                    rem /= ksp[d];
                    let w = &win[d];
                    let y = idx[lb.output_spatial[d] as usize] as i64;
                    let p = y * w.stride + k as i64 * w.rhs_dilate;
                    let q = p - w.pad_lo;
                    let input = c.lhs_dims[lb.input_spatial[d] as usize] as i64;
                    if q < 0 || q % w.lhs_dilate != 0 || q / w.lhs_dilate >= input {
                        continue 'tap;
                    }
                    lo += (q / w.lhs_dilate) as usize * ls[lb.input_spatial[d] as usize];
                    let kk = if w.reversal { ksp[d] - 1 - k } else { k };
                    ro += kk * rs[lb.kernel_spatial[d] as usize];
                }
                acc += l[lo] * r[ro];
            }
        }
        *slot = acc;
    }
    out
}

fn shuffled(n: usize, rng: &mut Lcg) -> Vec<i64> {
    let mut p: Vec<i64> = (0..n as i64).collect();
    for i in (1..n).rev() {
        p.swap(i, rng.below(i + 1));
    }
    p
}

/// A random convolution: 0-2 spatial dims, random layouts, groups, window options.
fn random_case(seed: u64) -> Case {
    let mut rng = Lcg::new(seed);
    let ns = rng.below(3);
    let (g, bg) = match rng.below(3) {
        0 => (1, 1),
        1 => (1 + rng.below(3), 1),
        _ => (1, 1 + rng.below(3)),
    };
    let cg = 1 + rng.below(3);
    let og = 1 + rng.below(3);
    let cin = cg * g;
    let o = og * g * bg;
    let n = bg * (1 + rng.below(2));
    let lp = shuffled(ns + 2, &mut rng);
    let rp = shuffled(ns + 2, &mut rng);
    let op = shuffled(ns + 2, &mut rng);
    let labels = ConvDims {
        input_batch: lp[0],
        input_feature: lp[1],
        input_spatial: lp[2..].to_vec(),
        kernel_input_feature: rp[0],
        kernel_output_feature: rp[1],
        kernel_spatial: rp[2..].to_vec(),
        output_batch: op[0],
        output_feature: op[1],
        output_spatial: op[2..].to_vec(),
    };
    let mut win = Vec::new();
    let mut in_sp = Vec::new();
    let mut k_sp = Vec::new();
    let mut out_sp = Vec::new();
    for _ in 0..ns {
        let size = 1 + rng.below(3) as i64;
        let w = WindowDim {
            size,
            stride: 1 + rng.below(2) as i64,
            pad_lo: rng.below(4) as i64 - 1,
            pad_hi: rng.below(4) as i64 - 1,
            lhs_dilate: 1 + rng.below(2) as i64,
            rhs_dilate: 1 + rng.below(2) as i64,
            reversal: rng.below(2) == 1,
        };
        let input = 1 + rng.below(6);
        in_sp.push(input);
        k_sp.push(size as usize);
        out_sp.push(out_size(input, &w).unwrap());
        win.push(w);
    }
    let mut lhs_dims = vec![0; ns + 2];
    lhs_dims[labels.input_batch as usize] = n;
    lhs_dims[labels.input_feature as usize] = cin;
    let mut rhs_dims = vec![0; ns + 2];
    rhs_dims[labels.kernel_input_feature as usize] = cg;
    rhs_dims[labels.kernel_output_feature as usize] = o;
    let mut out_dims = vec![0; ns + 2];
    out_dims[labels.output_batch as usize] = n / bg;
    out_dims[labels.output_feature as usize] = o;
    for d in 0..ns {
        lhs_dims[labels.input_spatial[d] as usize] = in_sp[d];
        rhs_dims[labels.kernel_spatial[d] as usize] = k_sp[d];
        out_dims[labels.output_spatial[d] as usize] = out_sp[d];
    }
    let attrs = Attrs {
        window: Some(win),
        dim_labels: Some(labels.clone()),
        feature_group_count: Some(g as i64),
        batch_group_count: Some(bg as i64),
        ..Attrs::default()
    };
    Case {
        labels,
        lhs_dims,
        rhs_dims,
        out_dims,
        attrs,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn convolution_equals_direct_loop(seed in any::<u64>()) {
        let c = random_case(seed);
        let mut rng = Lcg::new(seed ^ 0x5eed);
        let l = rng.f64s(c.lhs_dims.iter().product());
        let r = rng.f64s(c.rhs_dims.iter().product());
        let want = naive(&c, &l, &r);
        let lit = |d: &[usize], v: &[f64]| ArrayLiteral { dims: d.to_vec(), data: ArrayData::F64(v.to_vec()) };
        let got = convolution(&lit(&c.lhs_dims, &l), &lit(&c.rhs_dims, &r), &c.attrs, &shape(T::F64, &c.out_dims)).unwrap();
        prop_assert_eq!(&got.dims, &c.out_dims);
        for (x, y) in f64s(&got).iter().zip(&want) {
            prop_assert!((x - y).abs() <= 1e-12 * (1.0 + y.abs()), "{:?}: {} vs {}", c, x, y);
        }
        let lit32 = |d: &[usize], v: &[f64]| ArrayLiteral { dims: d.to_vec(), data: ArrayData::F32(v.iter().map(|&x| x as f32).collect()) };
        let got32 = convolution(&lit32(&c.lhs_dims, &l), &lit32(&c.rhs_dims, &r), &c.attrs, &shape(T::F32, &c.out_dims)).unwrap();
        for (x, y) in f32s(&got32).iter().zip(&want) {
            prop_assert!((*x as f64 - y).abs() <= 1e-5 * (1.0 + y.abs()));
        }
    }
}

#[test]
fn batch_groups_take_contiguous_batch_slices() {
    // lhs [N=2, C=1] (0 spatial), rhs [I=1, O=2], batch_group_count 2: output feature 0 reads
    // batch 0, feature 1 reads batch 1.
    let labels = ConvDims {
        input_batch: 0,
        input_feature: 1,
        input_spatial: vec![],
        kernel_input_feature: 0,
        kernel_output_feature: 1,
        kernel_spatial: vec![],
        output_batch: 0,
        output_feature: 1,
        output_spatial: vec![],
    };
    let attrs = Attrs {
        dim_labels: Some(labels),
        batch_group_count: Some(2),
        ..Attrs::default()
    };
    let l = ArrayLiteral {
        dims: vec![2, 1],
        data: ArrayData::F32(vec![3.0, 5.0]),
    };
    let r = ArrayLiteral {
        dims: vec![1, 2],
        data: ArrayData::F32(vec![10.0, 100.0]),
    };
    let got = convolution(&l, &r, &attrs, &shape(T::F32, &[1, 2])).unwrap();
    assert_eq!(f32s(&got), &[30.0, 500.0]);
}

#[test]
fn f16_accumulates_in_f32() {
    // 2048 + 1 + 1 in f16 steps would stay 2048; in f32 it is 2050 (representable in f16).
    let h = |v: &[f32]| ArrayData::F16(v.iter().map(|&x| half::f16::from_f32(x)).collect());
    let labels = ConvDims {
        input_batch: 0,
        input_feature: 1,
        input_spatial: vec![2],
        kernel_input_feature: 0,
        kernel_output_feature: 1,
        kernel_spatial: vec![2],
        output_batch: 0,
        output_feature: 1,
        output_spatial: vec![2],
    };
    let attrs = Attrs {
        dim_labels: Some(labels),
        window: Some(vec![WindowDim::of_size(3)]),
        ..Attrs::default()
    };
    let l = ArrayLiteral {
        dims: vec![1, 1, 3],
        data: h(&[2048.0, 1.0, 1.0]),
    };
    let r = ArrayLiteral {
        dims: vec![1, 1, 3],
        data: h(&[1.0, 1.0, 1.0]),
    };
    let got = convolution(&l, &r, &attrs, &shape(T::F16, &[1, 1, 1])).unwrap();
    assert_eq!(got.data, h(&[2050.0]));
}

#[test]
fn mismatched_groups_are_errors() {
    let mut c = random_case(1);
    c.attrs.feature_group_count = Some(7);
    let l = ArrayLiteral {
        dims: c.lhs_dims.clone(),
        data: ArrayData::zeros(T::F32, c.lhs_dims.iter().product()),
    };
    let r = ArrayLiteral {
        dims: c.rhs_dims.clone(),
        data: ArrayData::zeros(T::F32, c.rhs_dims.iter().product()),
    };
    let e = convolution(&l, &r, &c.attrs, &shape(T::F32, &c.out_dims)).unwrap_err();
    assert!(matches!(e, KernelError::Invalid(_)), "{e}");
}
