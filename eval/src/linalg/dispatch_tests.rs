//! The kernels through the whole path: HLO text → parser → interpreter → `eval_op`.

use crate::{evaluate, EvalError, EvalOptions, Evaluator, RngState, SingleReplica};
use hlo::literal::{ArrayData, Literal};

fn run(text: &str, args: &[Literal]) -> Result<Literal, EvalError> {
    let m = hlo::verified(hlo::parse(text).expect("test module parses")).expect("verifies");
    evaluate(&m, args)
}

#[test]
fn dot_and_convolution_from_text() {
    let text =
        "HloModule m\n\nENTRY e {\n  a = f32[2,3] parameter(0)\n  b = f32[3,1] parameter(1)\n  \
                d = f32[2,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  \
                x = f32[1,4,1] parameter(2)\n  k = f32[2,1,1] parameter(3)\n  \
                c = f32[1,3,1] convolution(x, k), window={size=2}, dim_labels=b0f_0io->b0f\n  \
                ROOT t = (f32[2,1], f32[1,3,1]) tuple(d, c)\n}\n";
    let f = |dims: Vec<usize>, v: Vec<f32>| Literal::array(dims, ArrayData::F32(v));
    let args = [
        f(vec![2, 3], vec![1., 2., 3., 4., 5., 6.]),
        f(vec![3, 1], vec![1., 0., -1.]),
        f(vec![1, 4, 1], vec![1., 2., 4., 8.]),
        f(vec![2, 1, 1], vec![1., 10.]),
    ];
    let r = run(text, &args).unwrap();
    assert_eq!(
        r,
        Literal::Tuple(vec![
            f(vec![2, 1], vec![-2., -2.]),
            f(vec![1, 3, 1], vec![21., 42., 84.])
        ])
    );
}

#[test]
fn rng_get_and_update_state_advances_by_delta() {
    let text = "HloModule m\n\nENTRY e {\n  s = u64[2] rng-get-and-update-state(), delta=16\n  \
                s2 = u64[2] rng-get-and-update-state(), delta=16\n  ROOT t = (u64[2], u64[2]) tuple(s, s2)\n}\n";
    let m = hlo::verified(hlo::parse(text).unwrap()).unwrap();
    let mut rt = SingleReplica {
        rng: RngState {
            seed: 9,
            counter: 5,
        },
        ..SingleReplica::default()
    };
    let r = Evaluator::new(&m).run(&[], &mut rt).unwrap();
    let u = |v: Vec<u64>| Literal::array(vec![2], ArrayData::U64(v));
    // Operands are evaluated in program order: s first.
    assert_eq!(r, Literal::Tuple(vec![u(vec![5, 9]), u(vec![21, 9])]));
    assert_eq!(rt.rng.counter, 37);
}

#[test]
fn custom_call_uses_the_registry_and_names_unknown_targets() {
    let text = "HloModule m\n\nENTRY e {\n  x = s32[3] parameter(0)\n  \
                ROOT c = s32[3] custom-call(x), custom_call_target=\"negate_all\"\n}\n";
    let m = hlo::verified(hlo::parse(text).unwrap()).unwrap();
    let x = Literal::array(vec![3], ArrayData::S32(vec![1, -2, 3]));
    let e = evaluate(&m, std::slice::from_ref(&x)).unwrap_err();
    assert!(e.is_unknown_custom_call(), "{e}");
    assert!(e.to_string().contains("negate_all"), "{e}");
    let mut opts = EvalOptions::default();
    opts.custom_calls
        .register("negate_all", |_, ops| match ops {
            [Literal::Array(a)] => match &a.data {
                ArrayData::S32(v) => Ok(Literal::array(
                    a.dims.clone(),
                    ArrayData::S32(v.iter().map(|x| -x).collect()),
                )),
                _ => Err(EvalError::invalid("s32 only")),
            },
            _ => Err(EvalError::invalid("one array operand")),
        });
    let r = Evaluator::new(&m)
        .with_options(opts)
        .run(&[x], &mut SingleReplica::default())
        .unwrap();
    assert_eq!(r, Literal::array(vec![3], ArrayData::S32(vec![-1, 2, -3])));
}

#[test]
fn topk_on_pred_is_accepted_and_orders_false_before_true() {
    // XLA accepts topk on pred (false < true); the verifier used to refuse it.
    let m = hlo::parse(
        "HloModule t\nENTRY e {\n  p = pred[5] parameter(0)\n  \
         ROOT t = (pred[2], s32[2]) topk(p), k=2, largest=true\n}\n",
    )
    .unwrap();
    let m = hlo::verified(m).unwrap();
    let arg = hlo::Literal::Array(hlo::ArrayLiteral {
        dims: vec![5],
        data: hlo::ArrayData::Pred(vec![false, true, false, true, true]),
    });
    let r = crate::evaluate(&m, &[arg]).unwrap();
    let hlo::Literal::Tuple(v) = r else {
        panic!("topk returns a tuple")
    };
    assert_eq!(
        v[0],
        hlo::Literal::Array(hlo::ArrayLiteral {
            dims: vec![2],
            data: hlo::ArrayData::Pred(vec![true, true]),
        })
    );
    assert_eq!(
        v[1],
        hlo::Literal::Array(hlo::ArrayLiteral {
            dims: vec![2],
            data: hlo::ArrayData::S32(vec![1, 3]),
        })
    );
}
