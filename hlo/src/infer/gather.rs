//! Gather and scatter: the dimension-number rules of the spec (including the batching
//! dimensions `operand_batching_dims`/`start_indices_batching_dims` and
//! `input_batching_dims`/`scatter_indices_batching_dims`).

use super::{array, check_reducer, dims_in_range, Args, InferResult};
use crate::attrs::Attrs;
use crate::opcode::Opcode;
use crate::shape::{ArrayShape, Shape};

/// The gather or scatter whose rules are checked: its opcode (for messages and the attribute
/// names) and attributes.
#[derive(Clone, Copy)]
struct Op<'a> {
    op: Opcode,
    attrs: &'a Attrs,
}

impl<'a> Op<'a> {
    fn req<T>(&self, v: &'a Option<T>, name: &str) -> InferResult<&'a T> {
        v.as_ref()
            .ok_or_else(|| format!("{} requires attribute {name}=", self.op))
    }
}

/// Checks `index_vector_dim` against the indices and returns (index vector size, the batch
/// dimensions of the indices in order).
fn index_layout(a: Op, idx: &ArrayShape, what: &str) -> InferResult<(i64, Vec<usize>)> {
    if !idx.ty.is_integer() {
        return Err(format!(
            "{} {what} must have an integer element type, got {idx}",
            a.op
        ));
    }
    let ivd = *a.req(&a.attrs.index_vector_dim, "index_vector_dim")?;
    if ivd < 0 || ivd as u64 > idx.rank() as u64 {
        return Err(format!(
            "index_vector_dim={ivd} must be in 0..={} (the rank of {what} {idx})",
            idx.rank()
        ));
    }
    let ivd = ivd as usize;
    let size = if ivd == idx.rank() { 1 } else { idx.dims[ivd] };
    Ok((size, (0..idx.rank()).filter(|&d| d != ivd).collect()))
}

/// Checks the batching dimension pair (operand side, indices side).
fn batching(
    a: Op,
    x: &ArrayShape,
    idx: &ArrayShape,
    names: (&str, &str),
) -> InferResult<(Vec<usize>, Vec<usize>)> {
    let (op_rank, idx_rank) = (x.rank(), idx.rank());
    let none = Vec::new();
    let (ob, ib) = if a.op == Opcode::Gather {
        (
            &a.attrs.operand_batching_dims,
            &a.attrs.start_indices_batching_dims,
        )
    } else {
        (
            &a.attrs.input_batching_dims,
            &a.attrs.scatter_indices_batching_dims,
        )
    };
    let ob = dims_in_range(ob.as_ref().unwrap_or(&none), op_rank, names.0, true)?;
    let ivd = a.attrs.index_vector_dim.unwrap_or(-1);
    let ibv = ib.as_ref().unwrap_or(&none);
    let ib = dims_in_range(ibv, idx_rank, names.1, false)?;
    if ibv.contains(&ivd) {
        return Err(format!(
            "{} must not contain index_vector_dim={ivd}",
            names.1
        ));
    }
    if ob.len() != ib.len() {
        return Err(format!(
            "{} and {} must have the same length, got {} and {}",
            names.0,
            names.1,
            ob.len(),
            ib.len()
        ));
    }
    for (&o, &i) in ob.iter().zip(&ib) {
        if x.dims[o] != idx.dims[i] {
            return Err(format!(
                "batching dimension {o} of the operand {x} (size {}) and dimension {i} of the indices {idx} (size {}) must have the same size",
                x.dims[o], idx.dims[i]
            ));
        }
    }
    Ok((ob, ib))
}

/// Checks the start-index map: one entry per index vector element, in range, unique, not a
/// batching dimension.
fn index_map(ds: &[i64], rank: usize, size: i64, batch: &[usize], what: &str) -> InferResult<()> {
    if ds.len() as i64 != size {
        return Err(format!(
            "{what} has {} entries, expected {size} (the size of the index vector)",
            ds.len()
        ));
    }
    for d in dims_in_range(ds, rank, what, false)? {
        if batch.contains(&d) {
            return Err(format!(
                "{what} must not contain the batching dimension {d}"
            ));
        }
    }
    Ok(())
}

pub(super) fn gather(a: &Args) -> InferResult {
    let (x, idx) = (a.array(0)?, a.array(1)?);
    let dims = gather_dims(a.attrs, x, idx)?;
    if x.is_dynamic() || idx.is_dynamic() {
        return Err(super::unsupported("gather of dynamic shapes"));
    }
    Ok(array(x.ty, dims, None))
}

/// The verifier's gather rules (the dimension numbers against operand `x` and start indices
/// `idx`): the result dimensions, or the first rule broken. Shape inference and
/// [`crate::indexing::GatherGeometry::resolve`] both check through it.
pub(crate) fn gather_dims(at: &Attrs, x: &ArrayShape, idx: &ArrayShape) -> InferResult<Vec<i64>> {
    let a = Op {
        op: Opcode::Gather,
        attrs: at,
    };
    let (vsize, batch_dims) = index_layout(a, idx, "start indices")?;
    let none = Vec::new();
    let collapsed = dims_in_range(
        at.collapsed_slice_dims.as_ref().unwrap_or(&none),
        x.rank(),
        "collapsed_slice_dims",
        true,
    )?;
    let (ob, _) = batching(
        a,
        x,
        idx,
        ("operand_batching_dims", "start_indices_batching_dims"),
    )?;
    if let Some(d) = collapsed.iter().find(|d| ob.contains(d)) {
        return Err(format!(
            "dimension {d} is both in collapsed_slice_dims and in operand_batching_dims"
        ));
    }
    index_map(
        a.req(&at.start_index_map, "start_index_map")?,
        x.rank(),
        vsize,
        &ob,
        "start_index_map",
    )?;
    let sizes = a.req(&at.slice_sizes, "slice_sizes")?;
    if sizes.len() != x.rank() {
        return Err(format!(
            "slice_sizes has {} entries, expected {} (the rank of {x})",
            sizes.len(),
            x.rank()
        ));
    }
    for (i, (&s, &n)) in sizes.iter().zip(&x.dims).enumerate() {
        if s < 0 || s > n {
            return Err(format!(
                "slice_sizes[{i}] = {s} must be in 0..={n} (the operand dimension)"
            ));
        }
    }
    for &d in collapsed.iter().chain(&ob) {
        if sizes[d] > 1 {
            return Err(format!(
                "slice_sizes[{d}] = {} but a collapsed or batching dimension must have slice size at most 1",
                sizes[d]
            ));
        }
    }
    let offset_sizes: Vec<i64> = (0..x.rank())
        .filter(|d| !collapsed.contains(d) && !ob.contains(d))
        .map(|d| sizes[d])
        .collect();
    let offsets = at.offset_dims.as_ref().unwrap_or(&none);
    if offsets.len() != offset_sizes.len() {
        return Err(format!(
            "offset_dims has {} entries, expected {} (operand rank {} minus {} collapsed and {} batching dimensions)",
            offsets.len(),
            offset_sizes.len(),
            x.rank(),
            collapsed.len(),
            ob.len()
        ));
    }
    let out_rank = offsets.len() + batch_dims.len();
    let od = dims_in_range(offsets, out_rank, "offset_dims", true)?;
    let (mut oi, mut bi) = (0, 0);
    let mut dims = Vec::with_capacity(out_rank);
    for d in 0..out_rank {
        if od.contains(&d) {
            dims.push(offset_sizes[oi]);
            oi += 1;
        } else {
            dims.push(idx.dims[batch_dims[bi]]);
            bi += 1;
        }
    }
    Ok(dims)
}

pub(super) fn scatter(a: &Args) -> InferResult {
    if a.ops.len().is_multiple_of(2) {
        return Err(format!(
            "scatter takes N operands, the indices and N updates, got {} operands",
            a.ops.len()
        ));
    }
    let n = a.ops.len() / 2;
    let xs = a.arrays()?;
    let (ops, idx, ups) = (&xs[..n], xs[n], &xs[n + 1..]);
    let x = ops[0];
    for (i, (o, u)) in ops.iter().zip(ups).enumerate() {
        if o.dims != x.dims {
            return Err(format!(
                "scatter operands must have the same dimensions, got {x} and {o}"
            ));
        }
        if u.dims != ups[0].dims {
            return Err(format!(
                "scatter updates must have the same dimensions, got {} and {u}",
                ups[0]
            ));
        }
        if u.ty != o.ty {
            return Err(format!(
                "scatter update {i} {u} must have the element type of operand {i}, {}",
                o.ty
            ));
        }
    }
    scatter_check(a.attrs, x, idx, ups[0])?;
    let tys: Vec<_> = ops.iter().map(|o| o.ty).collect();
    let sig = a.comp(a.attrs.to_apply, "to_apply")?;
    check_reducer(&sig, &tys, "scatter to_apply")?;
    if xs.iter().any(|s| s.is_dynamic()) {
        return Err(super::unsupported("scatter of dynamic shapes"));
    }
    let out: Vec<Shape> = ops
        .iter()
        .map(|o| array(o.ty, o.dims.clone(), None))
        .collect();
    Ok(if out.len() == 1 {
        out.into_iter().next().expect("one")
    } else {
        Shape::Tuple(out)
    })
}

/// The verifier's scatter rules (the dimension numbers against operand `x`, indices `idx`
/// and updates `u`), or the first rule broken. Shape inference and
/// [`crate::indexing::ScatterGeometry::resolve`] both check through it.
pub(crate) fn scatter_check(
    at: &Attrs,
    x: &ArrayShape,
    idx: &ArrayShape,
    u: &ArrayShape,
) -> InferResult<()> {
    let a = Op {
        op: Opcode::Scatter,
        attrs: at,
    };
    let (vsize, scatter_dims) = index_layout(a, idx, "indices")?;
    let none = Vec::new();
    let uwd = dims_in_range(
        at.update_window_dims.as_ref().unwrap_or(&none),
        u.rank(),
        "update_window_dims",
        true,
    )?;
    let iwd = dims_in_range(
        at.inserted_window_dims.as_ref().unwrap_or(&none),
        x.rank(),
        "inserted_window_dims",
        true,
    )?;
    let (ib, _) = batching(
        a,
        x,
        idx,
        ("input_batching_dims", "scatter_indices_batching_dims"),
    )?;
    if let Some(d) = iwd.iter().find(|d| ib.contains(d)) {
        return Err(format!(
            "dimension {d} is both in inserted_window_dims and in input_batching_dims"
        ));
    }
    index_map(
        a.req(
            &at.scatter_dims_to_operand_dims,
            "scatter_dims_to_operand_dims",
        )?,
        x.rank(),
        vsize,
        &ib,
        "scatter_dims_to_operand_dims",
    )?;
    if uwd.len() + iwd.len() + ib.len() != x.rank() {
        return Err(format!(
            "update_window_dims ({}) + inserted_window_dims ({}) + input_batching_dims ({}) must equal the operand rank {}",
            uwd.len(),
            iwd.len(),
            ib.len(),
            x.rank()
        ));
    }
    if u.rank() != uwd.len() + scatter_dims.len() {
        return Err(format!(
            "scatter updates {u} must have rank {} (update_window_dims plus the {} scatter dimensions of the indices)",
            uwd.len() + scatter_dims.len(),
            scatter_dims.len()
        ));
    }
    let window_bounds: Vec<i64> = (0..x.rank())
        .filter(|d| !iwd.contains(d) && !ib.contains(d))
        .map(|d| x.dims[d])
        .collect();
    for (k, &d) in uwd.iter().enumerate() {
        if u.dims[d] > window_bounds[k] {
            return Err(format!(
                "scatter update window dimension {d} has size {}, larger than the operand's bound {}",
                u.dims[d], window_bounds[k]
            ));
        }
    }
    for (si, d) in (0..u.rank()).filter(|d| !uwd.contains(d)).enumerate() {
        let want = idx.dims[scatter_dims[si]];
        if u.dims[d] != want {
            return Err(format!(
                "scatter updates dimension {d} has size {}, expected {want} (indices dimension {})",
                u.dims[d], scatter_dims[si]
            ));
        }
    }
    Ok(())
}
