//! [`Access`]: the bytes an instruction touches in one memory space, as equally spaced runs.
//! The compiler's emitter orders conflicting accesses with it and the simulator's race
//! detector checks them with it, so both mean the same thing by "overlap".

use crate::operand::Space;

/// Bytes an instruction touches: `rows` runs of `row_bytes` bytes, `stride` apart, from
/// `start` in `space`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Access {
    /// Memory space.
    pub space: Space,
    /// First byte.
    pub start: u64,
    /// Bytes per run.
    pub row_bytes: u64,
    /// Distance between runs.
    pub stride: u64,
    /// Number of runs.
    pub rows: u64,
}

impl Access {
    /// `len` contiguous bytes of VMEM from `start`.
    pub fn vmem(start: u64, len: u64) -> Access {
        Access {
            space: Space::Vmem,
            start,
            row_bytes: len,
            stride: len,
            rows: 1,
        }
    }
    /// `len` contiguous bytes of HBM from `start`.
    pub fn hbm(start: u64, len: u64) -> Access {
        Access {
            space: Space::Hbm,
            ..Access::vmem(start, len)
        }
    }
    /// `rows` runs of `row_bytes` bytes, `stride` apart, in VMEM.
    pub fn vmem_rows(start: u64, row_bytes: u64, stride: u64, rows: u64) -> Access {
        Access {
            space: Space::Vmem,
            start,
            row_bytes,
            stride,
            rows,
        }
    }
    /// `rows` runs of `row_bytes` bytes starting `stride` apart in `space`, as the exact set of
    /// bytes: runs that touch or overlap (`stride <= row_bytes`, `stride` 0 included) are one
    /// contiguous run from the first byte of the first to the last byte of the last.
    pub fn runs(space: Space, start: u64, row_bytes: u64, stride: u64, rows: u64) -> Access {
        if rows > 1 && stride <= row_bytes {
            let len = (rows - 1) * stride + row_bytes;
            return Access {
                space,
                start,
                row_bytes: len,
                stride: len,
                rows: 1,
            };
        }
        Access {
            space,
            start,
            row_bytes,
            stride: stride.max(row_bytes),
            rows,
        }
    }
    fn end(&self) -> u64 {
        self.start + self.rows.saturating_sub(1) * self.stride + self.row_bytes
    }
    /// Whether the two may share a byte (exact for equal strides, else conservative).
    pub fn overlaps(&self, o: &Access) -> bool {
        if self.space != o.space || self.row_bytes == 0 || o.row_bytes == 0 || self.rows == 0 {
            return false;
        }
        if self.end() <= o.start || o.end() <= self.start {
            return false;
        }
        if self.rows == 1 && o.rows == 1 {
            return true;
        }
        // The period both repeat with (a single run repeats with any period).
        let s = match (self.rows, o.rows) {
            (1, _) => o.stride,
            (_, 1) => self.stride,
            _ if self.stride == o.stride => self.stride,
            _ => return true,
        };
        if s >= self.row_bytes.max(1) && s >= o.row_bytes.max(1) {
            // Compare phases on the circle of one period.
            let a = self.start % s;
            let b = o.start % s;
            let hits = |x: u64, xl: u64, y: u64| (y + s - x) % s < xl;
            return hits(a, self.row_bytes, b) || hits(b, o.row_bytes, a);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_stride_tiles_side_by_side_do_not_overlap() {
        // Two 16-byte column blocks of one 64-byte-wide matrix.
        let a = Access::vmem_rows(0, 16, 64, 8);
        let b = Access::vmem_rows(16, 16, 64, 8);
        assert!(!a.overlaps(&b));
        assert!(a.overlaps(&Access::vmem_rows(8, 16, 64, 8)));
        assert!(a.overlaps(&Access::vmem(64 * 3 + 15, 1)));
        assert!(!a.overlaps(&Access::vmem(64 * 3 + 16, 1)));
        assert!(!a.overlaps(&Access::hbm(0, 16)));
    }

    #[test]
    fn overlapping_rows_are_their_exact_union() {
        // Conv rows: 8 runs of 48 bytes, 16 apart, cover bytes 0..160 and nothing past them.
        let a = Access::runs(Space::Vmem, 0, 48, 16, 8);
        assert_eq!((a.start, a.row_bytes, a.rows), (0, 160, 1));
        assert!(!a.overlaps(&Access::vmem(160, 64)));
        assert!(a.overlaps(&Access::vmem(159, 1)));
        // A repeated row (stride 0) is the row once.
        assert_eq!(Access::runs(Space::Vmem, 64, 32, 0, 5).row_bytes, 32);
        // Rows apart stay strided.
        assert_eq!(
            Access::runs(Space::Vmem, 0, 16, 64, 8),
            Access::vmem_rows(0, 16, 64, 8)
        );
    }
}
