//! The cycle-approximate, functional simulator of a TPU-like chip (timing model:
//! `docs/timing.md`; MXU contract: `docs/mxu-contract.md`).
//!
//! Layers, bottom up: [`cycle`] (the time type), [`engine`] (the deterministic event queue),
//! [`numerics`] and [`mxu`] (the MXU contract, shared with `hw`), [`link`] (bandwidth shared by
//! concurrent transfers), [`vmem_port`] (a core's VMEM bandwidth, granted in booking order), [`memory`], [`stats`] and [`account`] (declared hierarchical
//! statistics; busy/stall/idle accounting), [`trace`] (trace events), [`elem`] and [`vpu_ops`]
//! (VPU arithmetic), then the machine: [`params`] (arch numbers as cycles), `core`/`chip`
//! (state and events), the sequencer, units and DMA, and [`system`] (chips, the run loop,
//! deadlock detection).

pub mod account;
mod chip;
mod core;
pub mod cycle;
mod dma;
pub mod elem;
pub mod engine;
pub mod error;
mod host;
pub mod ici;
pub mod ici_model;
pub mod link;
pub mod memory;
pub mod mxu;
pub mod numerics;
pub mod params;
pub mod prog;
pub mod race;
mod seq;
pub mod stats;
pub mod system;
pub mod trace;
mod units;
pub mod vmem_port;
mod vpu;
pub mod vpu_ops;

pub use chip::{MxuRecord, MxuRecordOp};
pub use cycle::Cycle;
pub use error::{DeadlockReport, SimError, TimeoutReport};
pub use system::{
    default_max_cycles, RaceCheck, RunResult, SimOptions, System, MAX_DEFAULT_CYCLES,
    MAX_EVENTS_PER_CYCLE, MAX_RACE_WARNINGS,
};
