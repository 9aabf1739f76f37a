//! Memory allocators of the lowering: VMEM first-fit with coalescing free list (buffers are
//! freed after their last use, so VMEM is reused along the program), and an HBM bump allocator
//! for the module's inputs, outputs and constants. Reuse is safe because the emitter orders a
//! write to reused bytes after every pending access to them.

/// Alignment of every buffer (bytes).
pub const ALIGN: u64 = 64;

fn align(x: u64) -> u64 {
    x.div_ceil(ALIGN) * ALIGN
}

/// First-fit allocator over `[0, cap)`.
#[derive(Debug)]
pub struct Vmem {
    cap: u64,
    /// Free blocks `(start, len)`, sorted by start, never adjacent.
    free: Vec<(u64, u64)>,
    /// Bytes in use now and at most.
    pub in_use: u64,
    /// Peak of `in_use`.
    pub peak: u64,
    /// End of the highest byte any buffer has used so far.
    high: u64,
    /// Start of the static region at the top (`cap` when empty): program-image data that is
    /// in VMEM from the start, so no buffer may ever have used it.
    floor: u64,
}

impl Vmem {
    /// An empty VMEM of `cap` bytes.
    pub fn new(cap: u64) -> Vmem {
        Vmem {
            cap,
            free: vec![(0, cap)],
            in_use: 0,
            peak: 0,
            high: 0,
            floor: cap,
        }
    }

    /// Capacity.
    pub fn capacity(&self) -> u64 {
        self.cap
    }

    /// `bytes` (rounded up to [`ALIGN`]), or `None` if no free block is large enough.
    pub fn alloc(&mut self, bytes: u64) -> Option<u64> {
        let n = align(bytes.max(1));
        let k = self.free.iter().position(|&(_, len)| len >= n)?;
        let (start, len) = self.free[k];
        if len == n {
            self.free.remove(k);
        } else {
            self.free[k] = (start + n, len - n);
        }
        self.in_use += n;
        self.peak = self.peak.max(self.in_use);
        self.high = self.high.max(start + n);
        Some(start)
    }

    /// `bytes` at the top of VMEM for the whole program (never freed), disjoint from every
    /// buffer allocated so far or later; `None` if buffers already used those bytes.
    pub fn alloc_static(&mut self, bytes: u64) -> Option<u64> {
        let n = align(bytes.max(1));
        let start = self.floor.checked_sub(n)?;
        if start < self.high {
            return None;
        }
        // The top free block must reach the floor (everything between `high` and the floor is
        // free: nothing was ever allocated there).
        let last = self.free.last_mut()?;
        if last.0 > start || last.0 + last.1 != self.floor {
            return None;
        }
        last.1 -= n;
        if last.1 == 0 {
            self.free.pop();
        }
        self.floor = start;
        self.in_use += n;
        self.peak = self.peak.max(self.in_use);
        Some(start)
    }

    /// The largest block [`Vmem::alloc`] could return now.
    pub fn largest_free(&self) -> u64 {
        self.free.iter().map(|&(_, len)| len).max().unwrap_or(0)
    }

    /// Returns the block of `bytes` at `addr`.
    pub fn free(&mut self, addr: u64, bytes: u64) {
        let n = align(bytes.max(1));
        self.in_use -= n;
        let k = self.free.partition_point(|&(s, _)| s < addr);
        self.free.insert(k, (addr, n));
        // Coalesce with the next, then the previous block.
        if k + 1 < self.free.len() && self.free[k].0 + self.free[k].1 == self.free[k + 1].0 {
            self.free[k].1 += self.free[k + 1].1;
            self.free.remove(k + 1);
        }
        if k > 0 && self.free[k - 1].0 + self.free[k - 1].1 == self.free[k].0 {
            self.free[k - 1].1 += self.free[k].1;
            self.free.remove(k);
        }
    }
}

/// Bump allocator over HBM.
#[derive(Debug)]
pub struct Hbm {
    cap: u64,
    /// Next free byte.
    pub top: u64,
}

impl Hbm {
    /// An empty HBM of `cap` bytes.
    pub fn new(cap: u64) -> Hbm {
        Hbm { cap, top: 0 }
    }
    /// `bytes` more, or `None` if HBM is full.
    pub fn alloc(&mut self, bytes: u64) -> Option<u64> {
        let start = self.top;
        let end = start.checked_add(align(bytes.max(1)))?;
        if end > self.cap {
            return None;
        }
        self.top = end;
        Some(start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_blocks_come_from_the_top_and_avoid_every_used_byte() {
        let mut v = Vmem::new(1024);
        let a = v.alloc(100).unwrap();
        assert_eq!(a, 0);
        v.free(a, 100);
        // The top, below every other static block.
        assert_eq!(v.alloc_static(64), Some(960));
        assert_eq!(v.alloc_static(10), Some(896));
        // Buffers never reach it afterwards.
        assert_eq!(v.alloc(896), Some(0));
        assert_eq!(v.alloc(1), None);
        v.free(0, 896);
        // Bytes a buffer used once cannot become static.
        assert_eq!(v.alloc_static(64), None);
    }

    #[test]
    fn freed_blocks_coalesce_and_are_reused_first_fit() {
        let mut v = Vmem::new(1024);
        let a = v.alloc(100).unwrap();
        let b = v.alloc(64).unwrap();
        let c = v.alloc(64).unwrap();
        assert_eq!((a, b, c), (0, 128, 192));
        v.free(b, 64);
        v.free(a, 100);
        assert_eq!(v.alloc(192), Some(0));
        assert_eq!(v.alloc(2048), None);
        assert_eq!(v.peak, 256);
        v.free(0, 192);
        v.free(c, 64);
        assert_eq!(v.in_use, 0);
        assert_eq!(v.alloc(1024), Some(0));
    }
}
