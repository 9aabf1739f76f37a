//! The parameters the RTL is generated from, taken from `arch::ArchConfig` (the same object the
//! simulator reads): array rows `R`, columns `C`, accumulator rows `A` and the numeric mode.

use crate::HwError;

/// Numeric mode of a generated design (each mode is its own design).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// int8 × int8 → int32 (wrapping accumulation).
    Int8,
    /// bf16 × bf16 → f32 (round to nearest even, flush-to-zero).
    Bf16,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Int8 => "int8",
            Mode::Bf16 => "bf16",
        }
    }
}

/// Geometry and mode of one generated MXU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MxuParams {
    /// `R`: the contraction (K) side.
    pub rows: usize,
    /// `C`: the output (N) side.
    pub cols: usize,
    /// `A`: accumulator rows.
    pub acc_rows: usize,
    pub mode: Mode,
}

/// Largest array side the generator accepts (port widths and counters are 16 bits).
pub const MAX_SIDE: usize = 256;
/// Largest accumulator the generator accepts (16-bit accumulator addresses).
pub const MAX_ACC_ROWS: usize = 1 << 16;

impl MxuParams {
    /// Checks the limits of the generator; every violation is a clear error.
    pub fn validate(&self) -> Result<(), HwError> {
        if self.rows < 2 || self.cols < 2 {
            return Err(HwError::Unsupported(format!(
                "arrays smaller than 2×2 (got {}×{})",
                self.rows, self.cols
            )));
        }
        if self.rows > MAX_SIDE || self.cols > MAX_SIDE {
            return Err(HwError::Unsupported(format!(
                "array sides above {MAX_SIDE} (got {}×{})",
                self.rows, self.cols
            )));
        }
        if self.acc_rows == 0 || self.acc_rows > MAX_ACC_ROWS {
            return Err(HwError::Unsupported(format!(
                "accumulator rows outside 1..={MAX_ACC_ROWS} (got {})",
                self.acc_rows
            )));
        }
        Ok(())
    }

    /// Short name used in file names and reports, e.g. `8x8_int8_a256`.
    pub fn tag(&self) -> String {
        format!(
            "{}x{}_{}_a{}",
            self.rows,
            self.cols,
            self.mode.name(),
            self.acc_rows
        )
    }
}
