//! Window arithmetic shared by convolution, reduce-window and select-and-scatter: the output
//! size of a dilated, padded, strided window, computed with checked arithmetic.

use super::InferResult;
use crate::attrs::WindowDim;

/// Output size of one windowed dimension of size `base` (checked arithmetic): the base dilated
/// and padded, then `(padded - dilated_window) / stride + 1`, or 0 if the window is larger.
pub(crate) fn window_out(base: i64, w: &WindowDim, i: usize) -> InferResult<i64> {
    if w.size <= 0 {
        return Err(format!(
            "window dimension {i}: size must be positive, got {}",
            w.size
        ));
    }
    if w.stride <= 0 {
        return Err(format!(
            "window dimension {i}: stride must be positive, got {}",
            w.stride
        ));
    }
    if w.lhs_dilate <= 0 || w.rhs_dilate <= 0 {
        return Err(format!(
            "window dimension {i}: dilations must be positive, got lhs_dilate={} rhs_dilate={}",
            w.lhs_dilate, w.rhs_dilate
        ));
    }
    let ovf = || format!("window dimension {i}: size arithmetic overflows");
    let dilated_base = if base == 0 {
        0
    } else {
        (base - 1)
            .checked_mul(w.lhs_dilate)
            .and_then(|v| v.checked_add(1))
            .ok_or_else(ovf)?
    };
    let padded = dilated_base
        .checked_add(w.pad_lo)
        .and_then(|v| v.checked_add(w.pad_hi))
        .ok_or_else(ovf)?;
    if padded < 0 {
        return Err(format!(
            "window dimension {i}: negative padding {}/{} removes more than the {dilated_base} elements of the dilated base",
            w.pad_lo, w.pad_hi
        ));
    }
    let dilated_window = (w.size - 1)
        .checked_mul(w.rhs_dilate)
        .and_then(|v| v.checked_add(1))
        .ok_or_else(ovf)?;
    if padded < dilated_window {
        return Ok(0);
    }
    Ok((padded - dilated_window) / w.stride + 1)
}

/// Output dims of a window applied to `dims` (window length must equal the rank).
pub(crate) fn window_dims(dims: &[i64], window: &[WindowDim], what: &str) -> InferResult<Vec<i64>> {
    if window.len() != dims.len() {
        return Err(format!(
            "{what}: window has {} dimensions, expected {} (the operand rank)",
            window.len(),
            dims.len()
        ));
    }
    dims.iter()
        .zip(window)
        .enumerate()
        .map(|(i, (&d, w))| window_out(d, w, i))
        .collect()
}
