//! Dimension permutation of dense row-major buffers (the data movement in front of a GEMM).
//!
//! `permute(src, dims, perm)` returns the buffer whose dimension `i` is the source's dimension
//! `perm[i]`; `perm` must be a permutation of `0..dims.len()` (callers build it).

use super::convert::{strides, Values};

/// Copies `src` (row-major, dimensions `dims`) into the order `perm`.
pub fn permute<T: Copy>(src: &[T], dims: &[usize], perm: &[usize]) -> Vec<T> {
    debug_assert_eq!(dims.len(), perm.len());
    let n: usize = dims.iter().product();
    if n == 0 {
        return Vec::new();
    }
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return src[..n].to_vec();
    }
    let sstr = strides(dims);
    let odims: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
    let ostr: Vec<usize> = perm.iter().map(|&p| sstr[p]).collect();
    let rank = odims.len();
    let inner = odims[rank - 1];
    let inner_stride = ostr[rank - 1];
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; rank];
    let mut base = 0usize;
    loop {
        if inner_stride == 1 {
            out.extend_from_slice(&src[base..base + inner]);
        } else {
            out.extend((0..inner).map(|j| src[base + j * inner_stride]));
        }
        // Advance the odometer over the outer dimensions.
        let mut d = rank - 1;
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            idx[d] += 1;
            base += ostr[d];
            if idx[d] < odims[d] {
                break;
            }
            base -= ostr[d] * odims[d];
            idx[d] = 0;
        }
    }
}

/// [`permute`] on a buffer in any domain.
pub fn permute_values(v: &Values, dims: &[usize], perm: &[usize]) -> Values {
    match v {
        Values::I64(x) => Values::I64(permute(x, dims, perm)),
        Values::F32(x) => Values::F32(permute(x, dims, perm)),
        Values::F64(x) => Values::F64(permute(x, dims, perm)),
        Values::C64(x) => Values::C64(permute(x, dims, perm)),
        Values::C128(x) => Values::C128(permute(x, dims, perm)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_2d_and_3d() {
        let a: Vec<i32> = (0..6).collect();
        assert_eq!(permute(&a, &[2, 3], &[1, 0]), vec![0, 3, 1, 4, 2, 5]);
        let b: Vec<i32> = (0..24).collect();
        let p = permute(&b, &[2, 3, 4], &[2, 0, 1]);
        // out[k][i][j] = b[i][j][k]
        for i in 0..2 {
            for j in 0..3 {
                for k in 0..4 {
                    assert_eq!(p[k * 6 + i * 3 + j], b[i * 12 + j * 4 + k]);
                }
            }
        }
        assert_eq!(permute(&[7], &[], &[]), vec![7]);
    }
}
