//! XLA's broadcasting rules for elementwise binary ops (the broadcasting document):
//!
//! 1. **Scalar broadcasting**: a scalar combines with an array of any shape, no dimensions needed.
//! 2. **`broadcast_dimensions` for a rank mismatch**: the lower-rank operand's dimension `i` is
//!    matched to dimension `broadcast_dimensions[i]` of the higher-rank one; the tuple must have
//!    one entry per lower-rank dimension and be strictly increasing. Without it a rank mismatch
//!    (other than a scalar) is an error.
//! 3. **Degenerate dimensions**: two same-rank shapes are compatible when every dimension pair is
//!    equal or one of them is 1; the result takes the other size ("outer operation" when the
//!    ones sit at different indices).
//! 4. **Composition**: after rule 2 maps the lower-rank operand's dimensions, rule 3 applies per
//!    matched dimension (a 4-vector with `(0)` plus a 1×2 matrix gives 4×2).
//!
//! The builder then emits, per operand that differs from the result, XLA's "broadcast
//! sequence": a `reshape` dropping the degenerate (size-1, stretched) dimensions, then a
//! `broadcast` whose `dimensions` place the remaining ones.

use super::{err, BResult, XlaBuilder, XlaOp};
use crate::attrs::Attrs;
use crate::opcode::Opcode;
use crate::shape::{ArrayShape, Shape};

/// The outcome of broadcasting two operands: the result dimensions and, per operand, the
/// result dimension each of its dimensions maps to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BroadcastPlan {
    pub out: Vec<i64>,
    pub lhs_map: Vec<i64>,
    pub rhs_map: Vec<i64>,
}

/// Broadcasts `lhs` with `rhs` under `broadcast_dimensions` (see the module docs).
pub fn broadcast_shapes(
    lhs: &[i64],
    rhs: &[i64],
    broadcast_dimensions: &[i64],
) -> Result<BroadcastPlan, String> {
    let show = |d: &[i64]| format!("{d:?}");
    if lhs.len() == rhs.len() {
        let identity: Vec<i64> = (0..lhs.len() as i64).collect();
        if !broadcast_dimensions.is_empty() && broadcast_dimensions != identity.as_slice() {
            return Err(format!(
                "broadcast_dimensions {} given for operands of equal rank {}; only the identity is allowed",
                show(broadcast_dimensions),
                lhs.len()
            ));
        }
        let mut out = Vec::with_capacity(lhs.len());
        for (i, (&a, &b)) in lhs.iter().zip(rhs).enumerate() {
            out.push(combine(a, b).ok_or_else(|| {
                format!(
                    "shapes {} and {} are incompatible: dimension {i} has sizes {a} and {b} (must be equal or one of them 1)",
                    show(lhs),
                    show(rhs)
                )
            })?);
        }
        return Ok(BroadcastPlan {
            out,
            lhs_map: identity.clone(),
            rhs_map: identity,
        });
    }
    let lhs_is_lower = lhs.len() < rhs.len();
    let (lo, hi) = if lhs_is_lower { (lhs, rhs) } else { (rhs, lhs) };
    let map: Vec<i64> = if lo.is_empty() {
        if !broadcast_dimensions.is_empty() {
            return Err(format!(
                "broadcast_dimensions {} has {} entries but the lower-rank operand is a scalar",
                show(broadcast_dimensions),
                broadcast_dimensions.len()
            ));
        }
        Vec::new()
    } else {
        if broadcast_dimensions.is_empty() {
            return Err(format!(
                "shapes {} and {} have different ranks: broadcast_dimensions are required (one per dimension of the lower-rank operand)",
                show(lhs),
                show(rhs)
            ));
        }
        if broadcast_dimensions.len() != lo.len() {
            return Err(format!(
                "broadcast_dimensions {} must have one entry per dimension of the lower-rank operand {} ({} entries)",
                show(broadcast_dimensions),
                show(lo),
                lo.len()
            ));
        }
        for (i, &d) in broadcast_dimensions.iter().enumerate() {
            if d < 0 || d as usize >= hi.len() {
                return Err(format!(
                    "broadcast_dimensions[{i}] = {d} is out of range for the higher-rank operand {} (rank {})",
                    show(hi),
                    hi.len()
                ));
            }
            if i > 0 && d <= broadcast_dimensions[i - 1] {
                return Err(format!(
                    "broadcast_dimensions {} must be strictly increasing",
                    show(broadcast_dimensions)
                ));
            }
        }
        broadcast_dimensions.to_vec()
    };
    let mut out = hi.to_vec();
    for (i, &d) in map.iter().enumerate() {
        let h = hi[d as usize];
        out[d as usize] = combine(lo[i], h).ok_or_else(|| {
            format!(
                "dimension {i} of {} (size {}) cannot be matched to dimension {d} of {} (size {h}): sizes must be equal or one of them 1",
                show(lo),
                lo[i],
                show(hi)
            )
        })?;
    }
    let identity: Vec<i64> = (0..hi.len() as i64).collect();
    let (lhs_map, rhs_map) = if lhs_is_lower {
        (map, identity)
    } else {
        (identity, map)
    };
    Ok(BroadcastPlan {
        out,
        lhs_map,
        rhs_map,
    })
}

fn combine(a: i64, b: i64) -> Option<i64> {
    if a == b {
        Some(a)
    } else if a == 1 {
        Some(b)
    } else if b == 1 {
        Some(a)
    } else {
        None
    }
}

impl XlaBuilder {
    /// Brings `op` (whose dimension `i` maps to result dimension `map[i]`) to `out` dims with
    /// XLA's broadcast sequence; returns `op` itself when nothing is needed.
    pub(super) fn broadcast_to(&mut self, op: XlaOp, map: &[i64], out: &[i64]) -> BResult<XlaOp> {
        let s = self.array_shape(op, "broadcast")?;
        if s.dims == out {
            return Ok(op);
        }
        // Keep the dimensions that are not stretched degenerate ones.
        let keep: Vec<usize> = (0..s.rank())
            .filter(|&i| s.dims[i] == out[map[i] as usize])
            .collect();
        let mut cur = op;
        if keep.len() != s.rank() {
            let dims: Vec<i64> = keep.iter().map(|&i| s.dims[i]).collect();
            cur = self.reshape(cur, &dims)?;
        }
        let bdims: Vec<i64> = keep.iter().map(|&i| map[i]).collect();
        let shape = Shape::Array(ArrayShape::new(s.ty, out));
        let attrs = Attrs {
            dimensions: Some(bdims),
            ..Default::default()
        };
        self.add_instruction(Opcode::Broadcast, &[cur], attrs, Some(shape))
    }

    /// An elementwise binary op with XLA broadcasting (`broadcast_dimensions` may be empty).
    pub fn binary_op(
        &mut self,
        opcode: Opcode,
        lhs: XlaOp,
        rhs: XlaOp,
        broadcast_dimensions: &[i64],
    ) -> BResult<XlaOp> {
        let (l, r) = (
            self.array_shape(lhs, opcode.name())?,
            self.array_shape(rhs, opcode.name())?,
        );
        let plan = broadcast_shapes(&l.dims, &r.dims, broadcast_dimensions)
            .map_err(|m| err(format!("{opcode}: {m}")))?;
        let lhs = self.broadcast_to(lhs, &plan.lhs_map, &plan.out)?;
        let rhs = self.broadcast_to(rhs, &plan.rhs_map, &plan.out)?;
        self.add_instruction(opcode, &[lhs, rhs], Attrs::default(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::broadcast_shapes;

    fn out(l: &[i64], r: &[i64], bd: &[i64]) -> Result<Vec<i64>, String> {
        broadcast_shapes(l, r, bd).map(|p| p.out)
    }

    #[test]
    fn degenerate_examples_of_the_document() {
        assert_eq!(out(&[2, 1], &[2, 3], &[]).unwrap(), vec![2, 3]);
        assert_eq!(out(&[1, 2, 5], &[7, 2, 5], &[]).unwrap(), vec![7, 2, 5]);
        assert_eq!(out(&[7, 2, 5], &[7, 1, 5], &[]).unwrap(), vec![7, 2, 5]);
        assert!(out(&[7, 2, 5], &[7, 2, 6], &[]).is_err());
        assert_eq!(out(&[2, 1], &[1, 3], &[]).unwrap(), vec![2, 3]);
    }

    #[test]
    fn rank_mismatch_needs_strictly_increasing_dimensions() {
        assert!(out(&[2, 3], &[3], &[]).is_err());
        assert!(
            out(&[2, 3], &[3], &[0]).is_err(),
            "2x3 + 3-vector with (0) is invalid"
        );
        assert_eq!(out(&[2, 3], &[3], &[1]).unwrap(), vec![2, 3]);
        assert!(out(&[2, 3, 4], &[3, 4], &[2, 1]).is_err());
        assert!(out(&[2, 3, 4], &[3, 3], &[1, 1]).is_err());
        assert_eq!(out(&[2, 3, 4], &[3, 4], &[1, 2]).unwrap(), vec![2, 3, 4]);
    }

    #[test]
    fn composition_examples_of_the_document() {
        assert_eq!(out(&[4], &[1, 2], &[0]).unwrap(), vec![4, 2]);
        assert_eq!(out(&[1, 2], &[4, 3, 1], &[1, 2]).unwrap(), vec![4, 3, 2]);
    }
}
