//! `Memory`: a byte-addressed memory (VMEM, HBM) holding real bytes, allocated in pages on first
//! write so a 32 GiB HBM costs only what a program touches.
//!
//! Invariants: every access is bounds-checked against the configured capacity and fails with a
//! [`MemError`] (never a panic); unwritten bytes read as zero; contents never depend on the order
//! pages were allocated in.

use thiserror::Error;

const PAGE_BITS: u32 = 16;
const PAGE: usize = 1 << PAGE_BITS;

/// An access outside a memory.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{mem}: access [{addr:#x}, {addr:#x}+{len}) outside capacity {cap:#x}")]
pub struct MemError {
    /// The memory's name.
    pub mem: &'static str,
    /// First byte.
    pub addr: u64,
    /// Length.
    pub len: u64,
    /// Capacity in bytes.
    pub cap: u64,
}

/// A paged byte memory.
pub struct Memory {
    name: &'static str,
    cap: u64,
    pages: Vec<Option<Box<[u8]>>>,
}

impl Memory {
    /// A zeroed memory of `cap` bytes.
    pub fn new(name: &'static str, cap: u64) -> Self {
        let npages = cap.div_ceil(PAGE as u64) as usize;
        Memory {
            name,
            cap,
            pages: (0..npages).map(|_| None).collect(),
        }
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.cap
    }

    /// The memory's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Checks `[addr, addr+len)` is inside the memory.
    pub fn check(&self, addr: u64, len: u64) -> Result<(), MemError> {
        match addr.checked_add(len) {
            Some(end) if end <= self.cap => Ok(()),
            _ => Err(MemError {
                mem: self.name,
                addr,
                len,
                cap: self.cap,
            }),
        }
    }

    /// Reads `out.len()` bytes from `addr`.
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        self.check(addr, out.len() as u64)?;
        let mut done = 0usize;
        while done < out.len() {
            let a = addr + done as u64;
            let (p, off) = ((a >> PAGE_BITS) as usize, (a as usize) & (PAGE - 1));
            let n = (PAGE - off).min(out.len() - done);
            match &self.pages[p] {
                Some(pg) => out[done..done + n].copy_from_slice(&pg[off..off + n]),
                None => out[done..done + n].fill(0),
            }
            done += n;
        }
        Ok(())
    }

    /// Reads `len` bytes from `addr` into a new vector.
    pub fn read_vec(&self, addr: u64, len: u64) -> Result<Vec<u8>, MemError> {
        self.check(addr, len)?;
        let mut v = vec![0u8; len as usize];
        self.read(addr, &mut v)?;
        Ok(v)
    }

    /// Writes `data` at `addr`.
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), MemError> {
        self.check(addr, data.len() as u64)?;
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let (p, off) = ((a >> PAGE_BITS) as usize, (a as usize) & (PAGE - 1));
            let n = (PAGE - off).min(data.len() - done);
            let pg = self.pages[p].get_or_insert_with(|| vec![0u8; PAGE].into_boxed_slice());
            pg[off..off + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
        Ok(())
    }

    /// Copies `len` bytes within this memory (overlapping ranges behave like `memmove`).
    pub fn copy_within(&mut self, src: u64, dst: u64, len: u64) -> Result<(), MemError> {
        let v = self.read_vec(src, len)?;
        self.write(dst, &v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_across_pages_and_zero_fills() {
        let mut m = Memory::new("hbm", 3 * PAGE as u64);
        let data: Vec<u8> = (0..PAGE + 100).map(|i| i as u8).collect();
        m.write(PAGE as u64 - 50, &data).unwrap();
        assert_eq!(
            m.read_vec(PAGE as u64 - 50, data.len() as u64).unwrap(),
            data
        );
        assert_eq!(m.read_vec(0, 4).unwrap(), vec![0; 4]);
        assert!(m.write(3 * PAGE as u64 - 1, &[1, 2]).is_err());
        assert!(m.read_vec(u64::MAX, 2).is_err());
    }
}
