//! Per-HLO-instruction cost for the run report's roofline: FLOPs and bytes accessed, counted
//! from the module's shapes the way XLA's cost analysis counts them (2 per multiply-add of a
//! dot or convolution; 1 per output element of an elementwise op; 1 per input element of a
//! reduce; the sum over the called computation for fusions and calls; bytes accessed = every
//! operand's bytes + the result's bytes, whatever the chip's memories did with them).

use hlo::{Computation, Instruction, Module, Opcode};
use std::collections::{BTreeMap, BTreeSet};

/// One instruction's cost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OpCost {
    pub flops: u64,
    pub bytes: u64,
}

/// `(opcode name, cost)` of every instruction of `module`, by instruction name.
pub fn op_costs(module: &Module) -> BTreeMap<String, (&'static str, OpCost)> {
    let mut out = BTreeMap::new();
    for (_, comp) in module.comps.iter() {
        for (_, i) in comp.insts.iter() {
            let cost = OpCost {
                flops: flops(module, comp, i, &mut BTreeSet::new()),
                bytes: bytes_accessed(comp, i),
            };
            out.insert(i.name.clone(), (i.opcode.name(), cost));
        }
    }
    out
}

fn elements(s: &hlo::Shape) -> u64 {
    match s {
        hlo::Shape::Array(a) => a.element_count().unwrap_or(0),
        hlo::Shape::Tuple(t) => t.iter().map(elements).sum(),
        hlo::Shape::Token => 0,
    }
}

fn dims(s: &hlo::Shape) -> &[i64] {
    s.as_array().map_or(&[], |a| a.dims.as_slice())
}

fn bytes_accessed(comp: &Computation, i: &Instruction) -> u64 {
    let operands: u64 = i
        .operands
        .iter()
        .filter_map(|&o| comp.insts.get(o))
        .map(|o| o.shape.byte_size().unwrap_or(0))
        .sum();
    operands.saturating_add(i.shape.byte_size().unwrap_or(0))
}

/// FLOPs of `i` (see the module docs); `seen` guards against recursive calls.
fn flops(module: &Module, comp: &Computation, i: &Instruction, seen: &mut BTreeSet<usize>) -> u64 {
    let operand = |k: usize| i.operands.get(k).and_then(|&o| comp.insts.get(o));
    let out = elements(&i.shape);
    match i.opcode {
        Opcode::Dot => {
            let Some(lhs) = operand(0) else { return 0 };
            let ld = dims(&lhs.shape);
            let k: u64 = i
                .attrs
                .lhs_contracting_dims
                .iter()
                .flatten()
                .filter_map(|&d| ld.get(d as usize))
                .map(|&d| d.max(0) as u64)
                .product();
            2 * out * k
        }
        Opcode::Convolution => {
            let (Some(kernel), Some(labels)) = (operand(1), i.attrs.dim_labels.as_ref()) else {
                return 0;
            };
            let kd = dims(&kernel.shape);
            let per_output: u64 = labels
                .kernel_spatial
                .iter()
                .chain(std::iter::once(&labels.kernel_input_feature))
                .filter_map(|&d| kd.get(d as usize))
                .map(|&d| d.max(0) as u64)
                .product();
            2 * out * per_output
        }
        Opcode::Reduce | Opcode::ReduceWindow => {
            // One operation per input element of the reduced operands (the first half).
            let n = i.operands.len() / 2;
            (0..n.max(1))
                .filter_map(operand)
                .map(|o| elements(&o.shape))
                .sum()
        }
        Opcode::Fusion | Opcode::Call => i
            .attrs
            .called_computations()
            .into_iter()
            .map(|c| {
                if !seen.insert(c.index()) {
                    return 0;
                }
                let sub = &module.comps[c];
                let f = sub
                    .insts
                    .values()
                    .map(|j| flops(module, sub, j, seen))
                    .sum::<u64>();
                seen.remove(&c.index());
                f
            })
            .sum(),
        op => match op.class() {
            hlo::opcode::OpClass::Unary | hlo::opcode::OpClass::Binary => out,
            hlo::opcode::OpClass::Other => 0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_conv_elementwise_and_reduce_are_counted_from_shapes() {
        let m = hlo::parse(
            r#"HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[8,16]{1,0} parameter(0)
  b = f32[16,4]{1,0} parameter(1)
  d = f32[8,4]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  m = f32[8,4]{1,0} multiply(d, d)
  z = f32[] constant(0)
  r = f32[8]{0} reduce(m, z), dimensions={1}, to_apply=add
  i = f32[1,6,6,3]{3,2,1,0} parameter(2)
  k = f32[3,3,3,5]{3,2,1,0} parameter(3)
  ROOT c = f32[1,4,4,5]{3,2,1,0} convolution(i, k), window={size=3x3}, dim_labels=b01f_01io->b01f
}
"#,
        )
        .unwrap();
        let c = op_costs(&m);
        // 2 * M * N * K; bytes: 8*16*4 + 16*4*4 + 8*4*4.
        assert_eq!(
            c["d"],
            (
                "dot",
                OpCost {
                    flops: 2 * 8 * 4 * 16,
                    bytes: 512 + 256 + 128
                }
            )
        );
        assert_eq!(c["m"].1.flops, 32);
        assert_eq!(c["r"].1.flops, 32);
        // 2 * (1*4*4*5 outputs) * (3*3 window * 3 input features).
        assert_eq!(c["c"].1.flops, 2 * 80 * 27);
        assert_eq!(c["z"].1.flops, 0);
    }
}
