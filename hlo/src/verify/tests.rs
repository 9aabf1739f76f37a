//! Unit tests of the verifier on hand-built modules (the text-based negative suite lives in
//! `tests/negative`).

use super::*;
use crate::attrs::Attrs;
use crate::ir::{Arena, Instruction, ModuleConfig};
use crate::opcode::Opcode;
use crate::types::ElementType::F32;

fn inst(
    name: &str,
    opcode: Opcode,
    shape: Shape,
    operands: Vec<usize>,
    attrs: Attrs,
) -> Instruction {
    Instruction {
        name: name.into(),
        opcode,
        shape,
        operands: operands.into_iter().map(crate::ir::Handle::new).collect(),
        attrs: attrs.into(),
        span: Span::NONE,
    }
}

fn param(name: &str, n: i64, shape: Shape) -> Instruction {
    inst(
        name,
        Opcode::Parameter,
        shape,
        vec![],
        Attrs {
            parameter_number: Some(n),
            ..Default::default()
        },
    )
}

fn module(insts: Vec<Instruction>) -> Module {
    let mut arena = Arena::new();
    let mut root = None;
    for i in insts {
        root = Some(arena.push(i));
    }
    let mut comps = Arena::new();
    let entry = comps.push(Computation {
        name: "main".into(),
        insts: arena,
        root: root.unwrap(),
        span: Span::NONE,
    });
    Module {
        name: "m".into(),
        comps,
        entry,
        config: ModuleConfig::default(),
        trailer: None,
    }
}

fn messages(m: &Module) -> Vec<String> {
    match verify(m) {
        Ok(()) => vec![],
        Err(Error::Verify(ds)) => ds.into_iter().map(|d| d.message).collect(),
        Err(e) => panic!("unexpected {e}"),
    }
}

#[test]
fn well_typed_module_passes() {
    let s = Shape::array(F32, &[2, 3]);
    let m = module(vec![
        param("x", 0, s.clone()),
        param("y", 1, s.clone()),
        inst("z", Opcode::Add, s, vec![0, 1], Attrs::default()),
    ]);
    assert_eq!(messages(&m), Vec::<String>::new());
}

#[test]
fn mismatch_reported_once_not_cascaded() {
    let s = Shape::array(F32, &[2, 3]);
    let m = module(vec![
        param("x", 0, s.clone()),
        inst(
            "bad",
            Opcode::Negate,
            Shape::array(F32, &[3, 2]),
            vec![0],
            Attrs::default(),
        ),
        inst(
            "user",
            Opcode::Negate,
            Shape::array(F32, &[3, 2]),
            vec![1],
            Attrs::default(),
        ),
    ]);
    let ms = messages(&m);
    assert_eq!(ms.len(), 1, "{ms:?}");
    assert!(
        ms[0].contains("does not match the inferred shape f32[2,3]"),
        "{ms:?}"
    );
}

#[test]
fn operand_out_of_range_and_cycles() {
    let s = Shape::scalar(F32);
    let m = module(vec![
        param("x", 0, s.clone()),
        inst("n", Opcode::Negate, s.clone(), vec![7], Attrs::default()),
    ]);
    assert!(messages(&m)[0].contains("does not exist"));
    let m = module(vec![
        param("x", 0, s.clone()),
        inst("a", Opcode::Add, s.clone(), vec![0, 2], Attrs::default()),
        inst("b", Opcode::Add, s, vec![0, 1], Attrs::default()),
    ]);
    assert!(messages(&m)[0].contains("has a cycle"));
}

#[test]
fn parameters_dense_and_unique() {
    let s = Shape::scalar(F32);
    let m = module(vec![
        param("x", 0, s.clone()),
        param("y", 0, s.clone()),
        inst("r", Opcode::Add, s, vec![0, 1], Attrs::default()),
    ]);
    assert!(messages(&m)[0].contains("already used"));
}

#[test]
fn replica_count_bounded() {
    let s = Shape::scalar(F32);
    let mut m = module(vec![param("x", 0, s)]);
    m.config.replica_count = Some(0);
    assert!(messages(&m)[0].contains("replica_count=0"));
}

#[test]
fn long_call_chains_do_not_overflow_the_stack() {
    // main -> c0 -> c1 -> ... -> c4999, each a `call` of the next; the last is the identity.
    let s = Shape::scalar(F32);
    let n = 5000;
    let mut comps = Arena::new();
    for k in 0..n {
        let mut insts = Arena::new();
        insts.push(param("p", 0, s.clone()));
        let root = if k + 1 < n {
            let to = Some(crate::ir::Handle::new(k + 1));
            insts.push(inst(
                "c",
                Opcode::Call,
                s.clone(),
                vec![0],
                Attrs {
                    to_apply: to,
                    ..Default::default()
                },
            ))
        } else {
            crate::ir::Handle::new(0)
        };
        // Unique names across the module.
        let mut insts2 = Arena::new();
        for (h, i) in insts.iter() {
            let mut i = i.clone();
            i.name = format!("{}{k}_{}", i.opcode, h.index());
            insts2.push(i);
        }
        comps.push(Computation {
            name: format!("c{k}"),
            insts: insts2,
            root,
            span: Span::NONE,
        });
    }
    let mut entry_insts = Arena::new();
    entry_insts.push(param("x", 0, s.clone()));
    let to = Some(crate::ir::Handle::new(0));
    let root = entry_insts.push(inst(
        "r",
        Opcode::Call,
        s,
        vec![0],
        Attrs {
            to_apply: to,
            ..Default::default()
        },
    ));
    let entry = comps.push(Computation {
        name: "main".into(),
        insts: entry_insts,
        root,
        span: Span::NONE,
    });
    let m = Module {
        name: "m".into(),
        comps,
        entry,
        config: ModuleConfig::default(),
        trailer: None,
    };
    assert_eq!(messages(&m), Vec::<String>::new());
}

#[test]
fn topk_on_pred_is_accepted() {
    // XLA accepts topk on pred (false < true); the verifier used to refuse it. The evaluator's
    // order is pinned in eval's dispatch tests.
    let m = crate::parse(
        "HloModule t\nENTRY e {\n  p = pred[5] parameter(0)\n  \
         ROOT t = (pred[2], s32[2]) topk(p), k=2, largest=true\n}\n",
    )
    .unwrap();
    verify(&m).unwrap();
}
