//! Evaluator error paths: bad arguments, unsupported constructs and resource limits are error
//! values that name the instruction, never panics; plus XLA's integer-division corners end to end.

use eval::{evaluate, EvalError, EvalOptions, Evaluator, SingleReplica};
use hlo::{ArrayData, ArrayLiteral, Literal};

fn module(text: &str) -> hlo::VerifiedModule {
    let m = hlo::parse(text).unwrap_or_else(|e| panic!("{}", e.render("t.hlo", text)));
    hlo::verified(m).unwrap_or_else(|e| panic!("{}", e.render("t.hlo", text)))
}

fn s32s(v: &[i32]) -> Literal {
    Literal::Array(ArrayLiteral {
        dims: vec![v.len()],
        data: ArrayData::S32(v.to_vec()),
    })
}

#[test]
fn argument_shape_mismatch_is_bad_input() {
    let m = module(
        "HloModule m\nENTRY e {\n  x = s32[3] parameter(0)\n  ROOT n = s32[3] negate(x)\n}\n",
    );
    let e = evaluate(&m, &[s32s(&[1, 2])]).unwrap_err();
    assert!(matches!(e, EvalError::BadInput(_)), "{e}");
    let e = evaluate(&m, &[]).unwrap_err();
    assert!(e.to_string().contains("takes 1 arguments, 0 given"), "{e}");
}

#[test]
fn unknown_custom_call_names_the_instruction() {
    let m = module("HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n  ROOT cc.7 = f32[2] custom-call(x), custom_call_target=\"nope\"\n}\n");
    let x = Literal::Array(ArrayLiteral {
        dims: vec![2],
        data: ArrayData::F32(vec![1.0, 2.0]),
    });
    let e = evaluate(&m, &[x]).unwrap_err();
    assert!(e.is_unknown_custom_call(), "{e}");
    assert!(e.to_string().starts_with("in %cc.7: "), "{e}");
}

#[test]
fn runaway_while_hits_the_iteration_limit() {
    let text = "HloModule m\ncond {\n  p = s32[] parameter(0)\n  ROOT t = pred[] constant(true)\n}\nbody {\n  q = s32[] parameter(0)\n  one = s32[] constant(1)\n  ROOT a = s32[] add(q, one)\n}\nENTRY e {\n  z = s32[] constant(0)\n  ROOT w = s32[] while(z), condition=cond, body=body\n}\n";
    let m = module(text);
    let opts = EvalOptions {
        max_while_iterations: 1000,
        ..EvalOptions::default()
    };
    let e = Evaluator::new(&m)
        .with_options(opts)
        .run(&[], &mut SingleReplica::default())
        .unwrap_err();
    assert!(matches!(e.root_cause(), EvalError::Limit(_)), "{e}");
    assert!(e.to_string().starts_with("in %w: "), "{e}");
}

#[test]
fn integer_division_corners_end_to_end() {
    let text = "HloModule m\nENTRY e {\n  a = s32[4] parameter(0)\n  b = s32[4] parameter(1)\n  d = s32[4] divide(a, b)\n  r = s32[4] remainder(a, b)\n  ROOT t = (s32[4], s32[4]) tuple(d, r)\n}\n";
    let m = module(text);
    let r = evaluate(&m, &[s32s(&[7, i32::MIN, -7, 5]), s32s(&[0, -1, 2, -3])]).unwrap();
    assert_eq!(
        r,
        Literal::Tuple(vec![s32s(&[-1, i32::MIN, -3, -1]), s32s(&[7, 0, -1, 2])])
    );
}

#[test]
fn conditional_out_of_range_index_runs_last_branch() {
    let text = "HloModule m\nb0 {\n  p0 = s32[] parameter(0)\n  ROOT c0 = s32[] constant(10)\n}\nb1 {\n  p1 = s32[] parameter(0)\n  ROOT c1 = s32[] constant(11)\n}\nENTRY e {\n  i = s32[] parameter(0)\n  x = s32[] constant(0)\n  ROOT c = s32[] conditional(i, x, x), branch_computations={b0, b1}\n}\n";
    let m = module(text);
    let sc = |v: i32| {
        Literal::Array(ArrayLiteral {
            dims: vec![],
            data: ArrayData::S32(vec![v]),
        })
    };
    for (i, want) in [(0, 10), (1, 11), (7, 11), (-1, 11)] {
        assert_eq!(evaluate(&m, &[sc(i)]).unwrap(), sc(want), "index {i}");
    }
}
