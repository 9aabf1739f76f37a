//! [`Budget`]: the one resource budget every crate checks before allocating or iterating.
//!
//! Two numbers (see `docs/bounded.md`):
//! * `max_memory`, bytes: the largest amount of memory one run may ask for, checked *before* an
//!   allocation whose size comes from input (a literal's shape, an evaluator result, random
//!   inputs, simulator memories, RTL op sequences). Default: half of the smaller of physical
//!   memory and the process's address-space limit (`ulimit -v`), see [`default_max_memory`].
//! * `max_work`, element operations: the evaluator's total work (every instruction counts the
//!   elements it reads and writes, at least 1), checked before each instruction runs. Default
//!   [`DEFAULT_MAX_WORK`].
//!
//! Exceeding either is a [`BudgetError`] naming what needed how much and the limit; front ends
//! report it as bad input (exit 2).

use std::fmt;

/// Default `max_work`: 4·10⁹ element operations (tens of seconds of evaluator time at most).
pub const DEFAULT_MAX_WORK: u64 = 4_000_000_000;
/// Fallback `max_memory` where physical memory cannot be read: 4 GiB.
pub const FALLBACK_MAX_MEMORY: u64 = 4 << 30;

/// Memory and work limits of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Bytes one run may allocate for input-sized data.
    pub max_memory: u64,
    /// Element operations the evaluator may perform.
    pub max_work: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_memory: default_max_memory(),
            max_work: DEFAULT_MAX_WORK,
        }
    }
}

/// Which limit a [`BudgetError`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// `max_memory` (bytes).
    Memory,
    /// `max_work` (element operations).
    Work,
}

/// Something needed more than the budget allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetError {
    /// What needed it, e.g. "literal f32[4611686018427387904]".
    pub what: String,
    /// How much it needed (`None`: more than 2⁶⁴).
    pub needed: Option<u64>,
    /// The limit.
    pub limit: u64,
    /// Which limit.
    pub resource: Resource,
}

impl fmt::Display for BudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (unit, flag) = match self.resource {
            Resource::Memory => ("bytes", "--max-memory"),
            Resource::Work => ("element operations", "--max-work"),
        };
        let needed = match self.needed {
            Some(n) => format!("{n} {unit}{}", human(n, self.resource)),
            None => format!("more than 2^64 {unit}"),
        };
        write!(
            f,
            "resource limit: {} needs {needed}, more than the budget of {} {unit}{} ({flag})",
            self.what,
            self.limit,
            human(self.limit, self.resource)
        )
    }
}

impl std::error::Error for BudgetError {}

fn human(n: u64, r: Resource) -> String {
    if r != Resource::Memory || n < 1 << 20 {
        return String::new();
    }
    let (v, u) = if n >= 1 << 40 {
        (n as f64 / (1u64 << 40) as f64, "TiB")
    } else if n >= 1 << 30 {
        (n as f64 / (1u64 << 30) as f64, "GiB")
    } else {
        (n as f64 / (1u64 << 20) as f64, "MiB")
    };
    format!(" ({v:.1} {u})")
}

impl Budget {
    /// No limits (tests and trusted callers).
    pub const UNLIMITED: Budget = Budget {
        max_memory: u64::MAX,
        max_work: u64::MAX,
    };

    /// `Ok` if `bytes` (`None`: overflowed) fit `max_memory`; `what` names the allocation.
    pub fn memory(&self, what: impl fmt::Display, bytes: Option<u64>) -> Result<(), BudgetError> {
        match bytes {
            Some(b) if b <= self.max_memory => Ok(()),
            _ => Err(BudgetError {
                what: what.to_string(),
                needed: bytes,
                limit: self.max_memory,
                resource: Resource::Memory,
            }),
        }
    }

    /// `Ok` if `work` (`None`: overflowed) fits `max_work`.
    pub fn work(&self, what: impl fmt::Display, work: Option<u64>) -> Result<(), BudgetError> {
        match work {
            Some(w) if w <= self.max_work => Ok(()),
            _ => Err(BudgetError {
                what: what.to_string(),
                needed: work,
                limit: self.max_work,
                resource: Resource::Work,
            }),
        }
    }

    /// `count` items of `size` bytes each, checked (`None` on overflow).
    pub fn bytes(count: u64, size: u64) -> Option<u64> {
        count.checked_mul(size)
    }

    /// One of `parts` equal shares of this budget (e.g. for replicas run at once).
    pub fn share(&self, parts: u64) -> Budget {
        Budget {
            max_memory: self.max_memory / parts.max(1),
            max_work: self.max_work / parts.max(1),
        }
    }
}

/// Half of the smaller of physical memory (`MemTotal` in `/proc/meminfo`) and the address-space
/// limit (`Max address space` in `/proc/self/limits`); [`FALLBACK_MAX_MEMORY`] where neither is
/// readable.
pub fn default_max_memory() -> u64 {
    let phys = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| meminfo_total(&t));
    let rlimit = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| address_space_limit(&t));
    match (phys, rlimit) {
        (Some(p), Some(r)) => p.min(r) / 2,
        (Some(x), None) | (None, Some(x)) => x / 2,
        (None, None) => FALLBACK_MAX_MEMORY,
    }
}

/// `MemTotal` of `/proc/meminfo` text, in bytes.
fn meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// The soft `Max address space` of `/proc/self/limits` text, in bytes (`None`: unlimited).
fn address_space_limit(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("Max address space"))?;
    line["Max address space".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Parses a byte count: a number with an optional suffix K, M, G, T (powers of 1024; `KiB`,
/// `MB`, ... accepted as the same), e.g. `4G`, `512MiB`, `1000000`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '_')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| format!("`{s}` is not a byte count (e.g. 4G, 512M, 1000000)"))?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(format!("`{s}`: unknown unit (use K, M, G or T)")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("`{s}` is more than 2^64 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_name_what_and_limit() {
        let b = Budget {
            max_memory: 1000,
            max_work: 10,
        };
        assert!(b.memory("x", Some(1000)).is_ok());
        let e = b.memory("literal f32[300]", Some(1200)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "resource limit: literal f32[300] needs 1200 bytes, more than the budget of 1000 \
             bytes (--max-memory)"
        );
        let e = b.memory("y", None).unwrap_err();
        assert!(e.to_string().contains("more than 2^64 bytes"), "{e}");
        assert!(b.work("loop", Some(11)).is_err());
        assert!(b.work("loop", Some(10)).is_ok());
        assert_eq!(b.share(4).max_memory, 250);
        assert_eq!(b.share(4).max_work, 2);
        assert_eq!(b.share(0).max_memory, 1000);
    }

    #[test]
    fn parses_sizes_and_proc_files() {
        assert_eq!(parse_bytes("4G"), Ok(4 << 30));
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("1_000"), Ok(1000));
        assert!(parse_bytes("4X").is_err());
        assert!(parse_bytes("").is_err());
        assert!(parse_bytes("99999999999T").is_err());
        assert_eq!(
            meminfo_total("MemTotal:       24000 kB\nMemFree: 1 kB\n"),
            Some(24000 * 1024)
        );
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max address space         4096000000           unlimited            bytes\n";
        assert_eq!(address_space_limit(limits), Some(4_096_000_000));
        let unl = "Max address space         unlimited            unlimited            bytes\n";
        assert_eq!(address_space_limit(unl), None);
        assert!(default_max_memory() > 0);
    }
}
