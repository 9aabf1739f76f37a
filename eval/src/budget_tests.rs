//! The evaluator's memory and work budget (`docs/bounded.md`).

use crate::{EvalError, EvalOptions, Evaluator, SingleReplica};
use arch::Budget;
use hlo::literal::Literal;

fn run(text: &str, budget: Budget) -> Result<Literal, EvalError> {
    let m = hlo::verified(hlo::parse(text).expect("parses")).expect("verifies");
    let opts = EvalOptions {
        budget,
        ..EvalOptions::default()
    };
    Evaluator::new(&m)
        .with_options(opts)
        .run(&[], &mut SingleReplica::default())
}

fn budget(max_memory: u64, max_work: u64) -> Budget {
    Budget {
        max_memory,
        max_work,
    }
}

#[test]
fn a_result_over_the_memory_budget_is_refused_before_it_is_made() {
    let text = "HloModule m\n\nENTRY main {\n  c = f32[] constant(1)\n  \
                ROOT b = f32[1000000] broadcast(c), dimensions={}\n}\n";
    let e = run(text, budget(1 << 20, u64::MAX)).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e.root_cause(), EvalError::Limit(_)), "{msg}");
    assert!(msg.contains("%b (result f32[1000000]"), "{msg}");
    assert!(msg.contains("--max-memory"), "{msg}");
    // 4 MB of result plus 16 bytes per element of working space fit 64 MB.
    assert!(run(text, budget(64 << 20, u64::MAX)).is_ok());
}

#[test]
fn live_values_count_together() {
    // Each value fits alone; the second does not fit next to the first.
    let text = "HloModule m\n\nENTRY main {\n  c = f32[] constant(1)\n  \
                a = f32[10000] broadcast(c), dimensions={}\n  \
                b = f32[10000] negate(a)\n  ROOT t = (f32[10000], f32[10000]) tuple(a, b)\n}\n";
    let one = 40_000 + 16 * 10_000;
    let e = run(text, budget(one + 1000, u64::MAX)).unwrap_err();
    assert!(e.to_string().contains("bytes of live values"), "{e}");
}

#[test]
fn loops_stop_at_the_work_budget() {
    let text = "HloModule m\n\ncond {\n  cp = s32[] parameter(0)\n  \
                ROOT t = pred[] constant(true)\n}\n\nbody {\n  bp = s32[] parameter(0)\n  \
                ROOT bq = s32[] add(bp, bp)\n}\n\nENTRY main {\n  z = s32[] constant(1)\n  \
                ROOT w = s32[] while(z), condition=cond, body=body\n}\n";
    let e = run(text, budget(u64::MAX, 1_000_000)).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("--max-work"), "{msg}");
    assert!(
        msg.contains("budget of 1000000 element operations"),
        "{msg}"
    );
}

#[test]
fn a_huge_window_over_padding_costs_only_the_real_elements() {
    let text = "HloModule m\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
                ROOT s = f32[] add(a, b)\n}\n\nENTRY main {\n  x = f32[1] constant({5})\n  \
                z = f32[] constant(0)\n  ROOT r = f32[1] reduce-window(x, z), \
                window={size=1000000000 pad=999999999_0}, to_apply=add\n}\n";
    let r = run(text, budget(1 << 30, 100_000)).expect("small work");
    assert_eq!(hlo::print_literal(&r), "{5}");
}

#[test]
fn dots_count_their_multiply_adds() {
    let text = "HloModule m\n\nENTRY main {\n  c = f32[] constant(1)\n  \
                a = f32[100,1000] broadcast(c), dimensions={}\n  \
                b = f32[1000,100] broadcast(c), dimensions={}\n  \
                ROOT d = f32[100,100] dot(a, b), lhs_contracting_dims={1}, \
                rhs_contracting_dims={0}\n}\n";
    // 10^4 results x 10^3 multiply-adds = 10^7, more than the 10^6 allowed.
    let e = run(text, budget(u64::MAX, 1_000_000)).unwrap_err();
    assert!(e.to_string().contains("multiply-adds"), "{e}");
    assert!(run(text, budget(u64::MAX, 100_000_000)).is_ok());
}

#[test]
fn case_literals_are_checked_before_they_are_allocated() {
    let json = r#"{"outputs":[],"inputs":[[{"type":"f32","dims":[4611686018427387904]}]]}"#;
    let e = crate::case::parse_case_in(json, String::new(), &budget(1 << 30, 0)).unwrap_err();
    assert!(e.to_string().contains("more than 2^64 bytes"), "{e}");
    // Two literals of 600 bytes each: each fits 1000 bytes, both do not.
    let two =
        r#"{"outputs":[],"inputs":[[{"type":"f32","dims":[150]},{"type":"f32","dims":[150]}]]}"#;
    let e = crate::case::parse_case_in(two, String::new(), &budget(1000, 0)).unwrap_err();
    assert!(e.to_string().contains("inputs[0][1]"), "{e}");
    assert!(crate::case::parse_case_in(two, String::new(), &budget(1200, 0)).is_ok());
}

#[test]
fn case_syntax_errors_have_a_line_and_column() {
    let e = crate::case::parse_case_in(
        "{\n  \"outputs\": [,]\n}",
        String::new(),
        &budget(1 << 20, 0),
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "2:15: error: expected value");
}
