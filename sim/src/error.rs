//! Errors of a simulation run. A user-visible problem (bad program, bad input, deadlock) is a
//! `SimError`; a broken simulator invariant is a panic.

use thiserror::Error;

/// What stopped a run.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SimError {
    /// An instruction could not execute (bad address, bad operand, overflow, ...).
    #[error("chip {chip} core {core} pc {pc} `{inst}`: {msg}")]
    Exec {
        /// Chip index.
        chip: u32,
        /// Core index.
        core: u32,
        /// Program counter.
        pc: u32,
        /// The instruction's assembly text.
        inst: String,
        /// What went wrong.
        msg: String,
    },
    /// No unit can make progress and the program has not halted.
    #[error("{0}")]
    Deadlock(DeadlockReport),
    /// The program ran longer than the configured limit, or time stopped advancing.
    #[error("{0}")]
    Timeout(TimeoutReport),
    /// Two unordered conflicting accesses (see `sim::race`).
    #[error("chip {chip}: {msg}")]
    Race {
        /// Chip index.
        chip: u32,
        /// Both instructions, the bytes and the cycles.
        msg: String,
    },
    /// A feature the simulator does not model yet.
    #[error("not supported yet: {0}")]
    Unsupported(String),
    /// Inputs that do not fit the system (wrong chip/core index, ...).
    #[error("bad input: {0}")]
    Input(String),
}

/// Why a run was stopped (cycle limit, no progress) and where every unit was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeoutReport {
    /// The cycle limit in force.
    pub limit: u64,
    /// What stopped the run.
    pub reason: String,
    /// Every core's sequencer and unit queue head at the last event.
    pub units: DeadlockReport,
}

impl std::fmt::Display for TimeoutReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}; units at cycle {}:", self.reason, self.units.cycle)?;
        for w in &self.units.waits {
            writeln!(f, "  {w}")?;
        }
        Ok(())
    }
}

/// What every blocked unit waits for when the simulation deadlocked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadlockReport {
    /// The cycle at which the last event happened.
    pub cycle: u64,
    /// One line per waiting unit: `chip0.core0.seq: sem.wait sem3 (value 0, needs 1) at pc 7`.
    pub waits: Vec<String>,
}

impl std::fmt::Display for DeadlockReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "deadlock at cycle {}: no unit can make progress; waiting:",
            self.cycle
        )?;
        for w in &self.waits {
            writeln!(f, "  {w}")?;
        }
        Ok(())
    }
}
