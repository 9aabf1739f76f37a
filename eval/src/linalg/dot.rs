//! DotGeneral (`dot` opcode): batch and contracting dimensions, any element types.
//!
//! Method: both operands are permuted into `[batch, M, K]` and `[batch, K, N]` (batch dims in
//! the order listed, then the free dims in increasing order, then the contracting dims in the
//! order listed — `lhs_contracting_dims[i]` pairs with `rhs_contracting_dims[i]`), multiplied
//! by the batched GEMM core, and the `[batch, M, N]` result is already the output layout
//! (batch dims, lhs free dims, rhs free dims). Arithmetic happens in the join domain of the two
//! operand types and the result type (see [`super::convert`]); `operand_precision` and
//! `algorithm=` do not change the value (evaluation is exact in that domain).

use super::convert::{check_result, Domain, Values};
use super::gemm::batched_gemm;
use super::permute::permute_values;
use super::{KResult, KernelError};
use hlo::attrs::Attrs;
use hlo::literal::ArrayLiteral;
use hlo::shape::ArrayShape;

/// Dimension numbers of a dot, validated against the operand ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DotDims {
    pub lhs_batch: Vec<usize>,
    pub rhs_batch: Vec<usize>,
    pub lhs_contracting: Vec<usize>,
    pub rhs_contracting: Vec<usize>,
}

fn to_dims(v: &[i64], rank: usize, what: &str) -> KResult<Vec<usize>> {
    v.iter()
        .map(|&d| {
            if d < 0 || d as usize >= rank {
                Err(KernelError::invalid(format!(
                    "dot: {what} dimension {d} out of range for rank {rank}"
                )))
            } else {
                Ok(d as usize)
            }
        })
        .collect()
}

impl DotDims {
    /// Reads and validates the dimension numbers of `attrs` for operands of the given dims.
    pub fn from_attrs(attrs: &Attrs, lhs: &[usize], rhs: &[usize]) -> KResult<DotDims> {
        let hlo::View::Dot(v) = hlo::View::of(hlo::Opcode::Dot, attrs) else {
            return Err(KernelError::invalid("dot: no dimension numbers"));
        };
        let d = DotDims {
            lhs_batch: to_dims(v.lhs_batch, lhs.len(), "lhs_batch")?,
            rhs_batch: to_dims(v.rhs_batch, rhs.len(), "rhs_batch")?,
            lhs_contracting: to_dims(v.lhs_contracting, lhs.len(), "lhs_contracting")?,
            rhs_contracting: to_dims(v.rhs_contracting, rhs.len(), "rhs_contracting")?,
        };
        if d.lhs_batch.len() != d.rhs_batch.len()
            || d.lhs_contracting.len() != d.rhs_contracting.len()
        {
            return Err(KernelError::invalid(
                "dot: lhs and rhs must list the same number of batch and of contracting dimensions",
            ));
        }
        for (side, dims, b, c) in [
            ("lhs", lhs, &d.lhs_batch, &d.lhs_contracting),
            ("rhs", rhs, &d.rhs_batch, &d.rhs_contracting),
        ] {
            let mut seen = vec![false; dims.len()];
            for &x in b.iter().chain(c.iter()) {
                if std::mem::replace(&mut seen[x], true) {
                    return Err(KernelError::invalid(format!(
                        "dot: {side} dimension {x} listed twice"
                    )));
                }
            }
        }
        for (&l, &r) in d
            .lhs_batch
            .iter()
            .zip(&d.rhs_batch)
            .chain(d.lhs_contracting.iter().zip(&d.rhs_contracting))
        {
            if lhs[l] != rhs[r] {
                return Err(KernelError::invalid(format!(
                    "dot: lhs dimension {l} (size {}) and rhs dimension {r} (size {}) must match",
                    lhs[l], rhs[r]
                )));
            }
        }
        Ok(d)
    }

    /// Free (non-batch, non-contracting) dimensions of one side, in increasing order.
    fn free(rank: usize, batch: &[usize], contracting: &[usize]) -> Vec<usize> {
        (0..rank)
            .filter(|d| !batch.contains(d) && !contracting.contains(d))
            .collect()
    }
}

/// Evaluates `dot(lhs, rhs)` with the dimension numbers in `attrs` into the declared shape.
pub fn dot_general(
    lhs: &ArrayLiteral,
    rhs: &ArrayLiteral,
    attrs: &Attrs,
    out: &ArrayShape,
) -> KResult<ArrayLiteral> {
    let d = DotDims::from_attrs(attrs, &lhs.dims, &rhs.dims)?;
    let lfree = DotDims::free(lhs.dims.len(), &d.lhs_batch, &d.lhs_contracting);
    let rfree = DotDims::free(rhs.dims.len(), &d.rhs_batch, &d.rhs_contracting);
    let size = |dims: &[usize], of: &[usize]| -> usize { of.iter().map(|&x| dims[x]).product() };
    let batch = size(&lhs.dims, &d.lhs_batch);
    let m = size(&lhs.dims, &lfree);
    let k = size(&lhs.dims, &d.lhs_contracting);
    let n = size(&rhs.dims, &rfree);

    let out_dims: Vec<usize> = d
        .lhs_batch
        .iter()
        .map(|&x| lhs.dims[x])
        .chain(lfree.iter().map(|&x| lhs.dims[x]))
        .chain(rfree.iter().map(|&x| rhs.dims[x]))
        .collect();
    check_result("dot", out, &out_dims, out.ty)?;

    let domain = Domain::join(&[lhs.element_type(), rhs.element_type(), out.ty])?;
    let lperm: Vec<usize> = d
        .lhs_batch
        .iter()
        .chain(&lfree)
        .chain(&d.lhs_contracting)
        .copied()
        .collect();
    let rperm: Vec<usize> = d
        .rhs_batch
        .iter()
        .chain(&d.rhs_contracting)
        .chain(&rfree)
        .copied()
        .collect();
    let a = permute_values(&Values::read(&lhs.data, domain)?, &lhs.dims, &lperm);
    let b = permute_values(&Values::read(&rhs.data, domain)?, &rhs.dims, &rperm);
    let c = batched_gemm(&a, &b, batch, m, k, n);
    Ok(ArrayLiteral {
        dims: out_dims,
        data: c.write(out.ty)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::test_util::{f32_lit, f32s, shape, Lcg};
    use hlo::literal::ArrayData;
    use hlo::types::ElementType as T;
    use proptest::prelude::*;

    fn attrs(lb: &[i64], rb: &[i64], lc: &[i64], rc: &[i64]) -> Attrs {
        Attrs {
            lhs_batch_dims: Some(lb.to_vec()),
            rhs_batch_dims: Some(rb.to_vec()),
            lhs_contracting_dims: Some(lc.to_vec()),
            rhs_contracting_dims: Some(rc.to_vec()),
            ..Attrs::default()
        }
    }

    /// Index-by-index definition of DotGeneral, in f64.
    fn naive(
        l: &[f64],
        ld: &[usize],
        r: &[f64],
        rd: &[usize],
        dd: &DotDims,
    ) -> (Vec<usize>, Vec<f64>) {
        let lfree = DotDims::free(ld.len(), &dd.lhs_batch, &dd.lhs_contracting);
        let rfree = DotDims::free(rd.len(), &dd.rhs_batch, &dd.rhs_contracting);
        let out_dims: Vec<usize> = dd
            .lhs_batch
            .iter()
            .map(|&x| ld[x])
            .chain(lfree.iter().map(|&x| ld[x]))
            .chain(rfree.iter().map(|&x| rd[x]))
            .collect();
        let cdims: Vec<usize> = dd.lhs_contracting.iter().map(|&x| ld[x]).collect();
        let (ls, rs) = (
            super::super::convert::strides(ld),
            super::super::convert::strides(rd),
        );
        let n_out: usize = out_dims.iter().product();
        let n_c: usize = cdims.iter().product();
        let mut out = vec![0.0; n_out];
        for (o, slot) in out.iter_mut().enumerate() {
            let oi = unravel(o, &out_dims);
            let nb = dd.lhs_batch.len();
            let (bi, rest) = oi.split_at(nb);
            let (li, ri) = rest.split_at(lfree.len());
            for c in 0..n_c {
                let ci = unravel(c, &cdims);
                let mut lo = 0;
                let mut ro = 0;
                for (j, &x) in dd.lhs_batch.iter().enumerate() {
                    lo += bi[j] * ls[x];
                    ro += bi[j] * rs[dd.rhs_batch[j]];
                }
                for (j, &x) in lfree.iter().enumerate() {
                    lo += li[j] * ls[x];
                }
                for (j, &x) in rfree.iter().enumerate() {
                    ro += ri[j] * rs[x];
                }
                for (j, &x) in dd.lhs_contracting.iter().enumerate() {
                    lo += ci[j] * ls[x];
                    ro += ci[j] * rs[dd.rhs_contracting[j]];
                }
                *slot += l[lo] * r[ro];
            }
        }
        (out_dims, out)
    }

    fn unravel(mut i: usize, dims: &[usize]) -> Vec<usize> {
        let mut v = vec![0; dims.len()];
        for d in (0..dims.len()).rev() {
            v[d] = i % dims[d];
            i /= dims[d];
        }
        v
    }

    /// A random dot problem: a role per lhs dim and a random rhs arrangement.
    fn problem() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, Attrs, u64)> {
        (
            0usize..3,
            0usize..3,
            0usize..3,
            0usize..3,
            any::<u64>(),
            any::<u64>(),
        )
            .prop_map(|(nb, nc, nlf, nrf, perm_seed, data_seed)| {
                let mut rng = Lcg::new(perm_seed);
                let sizes: Vec<usize> =
                    (0..nb + nc + nlf + nrf).map(|_| 1 + rng.below(4)).collect();
                // Roles: batch [0,nb), contracting [nb,nb+nc), lhs free, rhs free.
                let shuffle = |n: usize, rng: &mut Lcg| {
                    let mut p: Vec<usize> = (0..n).collect();
                    for i in (1..n).rev() {
                        p.swap(i, rng.below(i + 1));
                    }
                    p
                };
                let lroles: Vec<usize> = (0..nb + nc + nlf).collect();
                let rroles: Vec<usize> = (0..nb + nc)
                    .chain(nb + nc + nlf..nb + nc + nlf + nrf)
                    .collect();
                let lp = shuffle(lroles.len(), &mut rng);
                let rp = shuffle(rroles.len(), &mut rng);
                let lpos = |role: usize| lp.iter().position(|&q| lroles[q] == role).unwrap() as i64;
                let rpos = |role: usize| rp.iter().position(|&q| rroles[q] == role).unwrap() as i64;
                let ld: Vec<usize> = lp.iter().map(|&q| sizes[lroles[q]]).collect();
                let rd: Vec<usize> = rp.iter().map(|&q| sizes[rroles[q]]).collect();
                let a = attrs(
                    &(0..nb).map(lpos).collect::<Vec<_>>(),
                    &(0..nb).map(rpos).collect::<Vec<_>>(),
                    &(nb..nb + nc).map(lpos).collect::<Vec<_>>(),
                    &(nb..nb + nc).map(rpos).collect::<Vec<_>>(),
                );
                (ld, rd, a, data_seed)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn dot_general_equals_naive_loops((ld, rd, a, seed) in problem()) {
            let mut rng = Lcg::new(seed);
            let l = rng.f64s(ld.iter().product());
            let r = rng.f64s(rd.iter().product());
            let dd = DotDims::from_attrs(&a, &ld, &rd).unwrap();
            let (odims, want) = naive(&l, &ld, &r, &rd, &dd);
            let lit = |dims: &[usize], v: &[f64]| ArrayLiteral { dims: dims.to_vec(), data: ArrayData::F64(v.to_vec()) };
            let got = dot_general(&lit(&ld, &l), &lit(&rd, &r), &a, &shape(T::F64, &odims)).unwrap();
            prop_assert_eq!(&got.dims, &odims);
            let ArrayData::F64(g) = &got.data else { panic!() };
            for (x, y) in g.iter().zip(&want) {
                prop_assert!((x - y).abs() <= 1e-12 * (1.0 + y.abs()), "{} vs {}", x, y);
            }
            // The f32 path (sgemm) agrees too.
            let l32 = ArrayLiteral { dims: ld.clone(), data: ArrayData::F32(l.iter().map(|&x| x as f32).collect()) };
            let r32 = ArrayLiteral { dims: rd.clone(), data: ArrayData::F32(r.iter().map(|&x| x as f32).collect()) };
            let got32 = dot_general(&l32, &r32, &a, &shape(T::F32, &odims)).unwrap();
            for (x, y) in f32s(&got32).iter().zip(&want) {
                prop_assert!((*x as f64 - y).abs() <= 1e-5 * (1.0 + y.abs()));
            }
            // The integer path (s8 x s8 -> s32) is exact: compare with the naive loop on
            // small integers.
            let li: Vec<f64> = l.iter().map(|x| (x * 100.0).round()).collect();
            let ri: Vec<f64> = r.iter().map(|x| (x * 100.0).round()).collect();
            let (_, wanti) = naive(&li, &ld, &ri, &rd, &dd);
            let s8 = |dims: &[usize], v: &[f64]| ArrayLiteral { dims: dims.to_vec(), data: ArrayData::S8(v.iter().map(|&x| x as i8).collect()) };
            let goti = dot_general(&s8(&ld, &li), &s8(&rd, &ri), &a, &shape(T::S32, &odims)).unwrap();
            let ArrayData::S32(gi) = &goti.data else { panic!() };
            for (x, y) in gi.iter().zip(&wanti) {
                prop_assert_eq!(*x as f64, *y);
            }
        }
    }

    #[test]
    fn int8_into_s32_and_bf16_into_f32() {
        let a = ArrayLiteral {
            dims: vec![1, 3],
            data: ArrayData::S8(vec![127, -128, 5]),
        };
        let b = ArrayLiteral {
            dims: vec![3, 1],
            data: ArrayData::S8(vec![127, -128, -7]),
        };
        let at = attrs(&[], &[], &[1], &[0]);
        let got = dot_general(&a, &b, &at, &shape(T::S32, &[1, 1])).unwrap();
        assert_eq!(got.data, ArrayData::S32(vec![127 * 127 + 128 * 128 - 35]));

        let h = |v: &[f32]| ArrayData::BF16(v.iter().map(|&x| half::bf16::from_f32(x)).collect());
        let a = ArrayLiteral {
            dims: vec![1, 2],
            data: h(&[1.0078125, 3.0]),
        };
        let b = ArrayLiteral {
            dims: vec![2, 1],
            data: h(&[1.0078125, 1.0]),
        };
        let got = dot_general(&a, &b, &at, &shape(T::F32, &[1, 1])).unwrap();
        // Exact f32 product 1.0078125^2 = 1.01568603515625, not rounded to bf16.
        assert_eq!(f32s(&got), &[4.0 + 1.0 / 64.0 + 1.0 / 16384.0]);
    }

    #[test]
    fn bad_dimension_numbers_are_errors() {
        let a = f32_lit(&[2, 3], vec![0.0; 6]);
        let b = f32_lit(&[4, 2], vec![0.0; 8]);
        let e = dot_general(
            &a,
            &b,
            &attrs(&[], &[], &[1], &[0]),
            &shape(T::F32, &[2, 2]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("must match"), "{e}");
        let e = dot_general(
            &a,
            &b,
            &attrs(&[], &[], &[2], &[0]),
            &shape(T::F32, &[2, 2]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        let e = dot_general(
            &a,
            &b,
            &attrs(&[], &[], &[0], &[1]),
            &shape(T::F32, &[2, 2]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("declared result shape"), "{e}");
    }
}
