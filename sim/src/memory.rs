//! `Memory`: a byte-addressed memory (VMEM, HBM) holding real bytes, allocated in pages on first
//! write so a 32 GiB HBM costs only what a program touches.
//!
//! Invariants: every access is bounds-checked against the configured capacity and fails with a
//! [`MemError`] (never a panic); unwritten bytes read as zero; contents never depend on the order
//! pages were allocated in; pages are kept in a map, so creating a memory costs nothing
//! whatever its capacity; all memories of a chip draw their pages from one [`Pool`] whose
//! limit is the chip's share of the run's memory budget (`--max-memory`; one pool per chip, so
//! which chip runs out does not depend on the order threads touch pages in).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use thiserror::Error;

/// Bytes of pages all memories of a run hold, and their limit.
#[derive(Clone, Debug)]
pub struct Pool {
    used: Arc<AtomicU64>,
    limit: Arc<AtomicU64>,
}

impl Pool {
    /// A pool of at most `limit` bytes of pages.
    pub fn new(limit: u64) -> Pool {
        Pool {
            used: Arc::new(AtomicU64::new(0)),
            limit: Arc::new(AtomicU64::new(limit)),
        }
    }
    /// The limit in bytes.
    pub fn limit(&self) -> u64 {
        self.limit.load(Ordering::Relaxed)
    }
    /// Changes the limit (for every memory drawing from this pool).
    pub fn set_limit(&self, limit: u64) {
        self.limit.store(limit, Ordering::Relaxed)
    }
    /// Bytes of pages held now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }
    fn take(&self, n: u64) -> bool {
        let prev = self.used.fetch_add(n, Ordering::Relaxed);
        if prev.saturating_add(n) > self.limit() {
            self.used.fetch_sub(n, Ordering::Relaxed);
            return false;
        }
        true
    }
}

impl Default for Pool {
    fn default() -> Pool {
        Pool::new(u64::MAX)
    }
}

const PAGE_BITS: u32 = 16;
const PAGE: usize = 1 << PAGE_BITS;

/// An access outside a memory, or one whose pages would exceed the run's memory budget
/// (`budget` set).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{}", describe(self))]
pub struct MemError {
    /// The memory budget in bytes, if that is what the access exceeded.
    pub budget: Option<u64>,
    /// The memory's name.
    pub mem: &'static str,
    /// First byte.
    pub addr: u64,
    /// Length.
    pub len: u64,
    /// Capacity in bytes.
    pub cap: u64,
}

fn describe(e: &MemError) -> String {
    match e.budget {
        None => format!(
            "{}: access [{:#x}, {:#x}+{}) outside capacity {:#x}",
            e.mem, e.addr, e.addr, e.len, e.cap
        ),
        Some(b) => format!(
            "resource limit: {}: accessing [{:#x}, {:#x}+{}) needs more touched memory than the \
             budget of {b} bytes for all simulated memories (--max-memory) of the chip (the \
             chips of a pod share the budget evenly)",
            e.mem, e.addr, e.addr, e.len
        ),
    }
}

/// A paged byte memory.
pub struct Memory {
    name: &'static str,
    cap: u64,
    pages: HashMap<u64, Box<[u8]>>,
    pool: Pool,
    /// Every read and write `(addr, len, write)` since logging was turned on (tests compare
    /// it with the accesses the ISA table derives).
    log: Option<std::sync::Mutex<Vec<(u64, u64, bool)>>>,
}

impl Drop for Memory {
    fn drop(&mut self) {
        let held = self.pages.len() as u64 * PAGE as u64;
        self.pool.used.fetch_sub(held, Ordering::Relaxed);
    }
}

impl Memory {
    /// A zeroed memory of `cap` bytes (pages from an unlimited pool).
    pub fn new(name: &'static str, cap: u64) -> Self {
        Self::in_pool(name, cap, Pool::default())
    }

    /// A zeroed memory of `cap` bytes whose pages count against `pool`.
    pub fn in_pool(name: &'static str, cap: u64, pool: Pool) -> Self {
        Memory {
            name,
            cap,
            pages: HashMap::new(),
            pool,
            log: None,
        }
    }

    /// Starts (or restarts, empty) the access log.
    pub fn log_accesses(&mut self) {
        self.log = Some(Default::default());
    }

    /// The accesses logged since [`Memory::log_accesses`]: `(addr, len, written)`.
    pub fn access_log(&self) -> Vec<(u64, u64, bool)> {
        self.log
            .as_ref()
            .map(|l| l.lock().expect("log").clone())
            .unwrap_or_default()
    }

    fn note(&self, addr: u64, len: u64, write: bool) {
        if let Some(l) = &self.log {
            if len > 0 {
                l.lock().expect("log").push((addr, len, write));
            }
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
                budget: None,
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
        self.note(addr, out.len() as u64, false);
        let mut done = 0usize;
        while done < out.len() {
            let a = addr + done as u64;
            let (p, off) = (a >> PAGE_BITS, (a as usize) & (PAGE - 1));
            let n = (PAGE - off).min(out.len() - done);
            match self.pages.get(&p) {
                Some(pg) => out[done..done + n].copy_from_slice(&pg[off..off + n]),
                None => out[done..done + n].fill(0),
            }
            done += n;
        }
        Ok(())
    }

    /// Reads `len` bytes from `addr` into a new vector (its size counts against the pool).
    pub fn read_vec(&self, addr: u64, len: u64) -> Result<Vec<u8>, MemError> {
        self.check(addr, len)?;
        if len > self.pool.limit().saturating_sub(self.pool.used()) {
            return Err(MemError {
                budget: Some(self.pool.limit()),
                mem: self.name,
                addr,
                len,
                cap: self.cap,
            });
        }
        let mut v = vec![0u8; len as usize];
        self.read(addr, &mut v)?;
        Ok(v)
    }

    /// Writes `data` at `addr`.
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), MemError> {
        self.check(addr, data.len() as u64)?;
        self.note(addr, data.len() as u64, true);
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let (p, off) = (a >> PAGE_BITS, (a as usize) & (PAGE - 1));
            let n = (PAGE - off).min(data.len() - done);
            if !self.pages.contains_key(&p) && !self.pool.take(PAGE as u64) {
                return Err(MemError {
                    budget: Some(self.pool.limit()),
                    mem: self.name,
                    addr,
                    len: data.len() as u64,
                    cap: self.cap,
                });
            }
            let pg = self
                .pages
                .entry(p)
                .or_insert_with(|| vec![0u8; PAGE].into_boxed_slice());
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

    #[test]
    fn pages_count_against_the_pool() {
        let pool = Pool::new(2 * PAGE as u64);
        let mut a = Memory::in_pool("hbm", 1 << 40, pool.clone());
        let mut b = Memory::in_pool("vmem", 1 << 40, pool.clone());
        a.write(0, &[1]).unwrap();
        b.write(5 * PAGE as u64, &[1]).unwrap();
        a.write(1, &[2]).unwrap();
        assert_eq!(pool.used(), 2 * PAGE as u64);
        let e = a.write(PAGE as u64, &[3]).unwrap_err();
        assert_eq!(e.budget, Some(2 * PAGE as u64));
        assert!(e.to_string().contains("--max-memory"), "{e}");
        drop(b);
        assert_eq!(pool.used(), PAGE as u64);
        a.write(PAGE as u64, &[3]).unwrap();
        assert!(a.read_vec(0, 1 << 30).is_err());
    }
}
