//! The cycle-approximate, functional simulator of a TPU-like chip (see `docs/timing.md`).
//!
//! Layers, bottom up: [`cycle`] (the time type), [`engine`] (the deterministic event queue),
//! [`numerics`] and [`mxu`] (the MXU contract, shared with `hw`), [`link`] (bandwidth shared by
//! concurrent transfers), [`stats`] (declared, hierarchical statistics), [`trace`] (trace events).

pub mod account;
pub mod cycle;
pub mod engine;
pub mod mxu;
pub mod numerics;

pub use cycle::Cycle;
pub mod link;
pub mod memory;
pub mod stats;
pub mod trace;
