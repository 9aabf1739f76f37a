//! `hw`: the matrix unit (MXU) as synthesizable RTL, described in rust-hdl 0.46 and generated from
//! `arch::ArchConfig`, plus Verilog emission, Verilator co-simulation against `sim`'s MXU model
//! and Yosys synthesis. The behaviour implemented is `docs/mxu-contract.md`, cycle for cycle.

pub mod acc;
pub mod arith;
pub mod cosim;
pub mod delay;
pub mod emit;
pub mod flow;
pub mod harness;
pub mod mxu;
pub mod ops;
pub mod params;
pub mod pe;
pub mod synth;
pub mod tb;
pub mod tools;

pub use params::{Mode, MxuParams};

/// Errors of the hardware flow.
#[derive(Debug, thiserror::Error)]
pub enum HwError {
    #[error("not supported yet: {0}")]
    Unsupported(String),
    #[error("bad input: {0}")]
    BadInput(String),
    #[error("{tool} failed: {msg}")]
    Tool { tool: String, msg: String },
    #[error("io error on {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

impl MxuParams {
    /// The MXU of `cfg` (one of its `mxu.count` identical units), in its `mxu.dtype` mode.
    pub fn from_arch(cfg: &arch::ArchConfig) -> Result<Self, HwError> {
        let m = &cfg.mxu;
        let p = MxuParams {
            rows: m.rows as usize,
            cols: m.cols as usize,
            acc_rows: m.acc_rows as usize,
            mode: match m.dtype {
                arch::MxuDtype::Int8 => Mode::Int8,
                arch::MxuDtype::Bf16 => Mode::Bf16,
            },
        };
        p.validate()?;
        Ok(p)
    }
}

#[cfg(test)]
mod arith_tests;
#[cfg(test)]
mod pe_tests;
