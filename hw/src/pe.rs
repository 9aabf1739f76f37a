//! The processing element: one weight-stationary multiply-accumulate cell with a double-buffered
//! weight (`shadow` is written by the weight bus, `active` feeds the multiplier).
//!
//! Behaviour per clock edge (all registers, see `docs/mxu-contract.md`):
//! * `w = sw_in ? shadow : active` (the swap token travels with the first row of a matmul, so a
//!   PE switches to the new tile exactly when that row reaches it);
//! * `psum_out <= psum_in + a_in · w` (mode-specific arithmetic), `a_out <= a_in`,
//!   `sw_out <= sw_in`; if `sw_in`, `active <= shadow`;
//! * if `w_valid && w_row == ROW`: `shadow <= w_in` (the shadow is read before it is written).
//!
//! A leaf: the Verilog body is generated here (mode baked in; the row index is the module parameter
//! `ROW`, defaulting to this instance's row, so one module serves every row of the mesh), and
//! `update` runs the same arithmetic through [`crate::numerics`] for rust-hdl simulation.

use crate::fpv;
use crate::numerics;
use crate::params::Mode;
use rust_hdl::prelude::*;

/// One PE. `a_in`/`w_in` carry an int8 in their low byte or a bf16; `psum` is i32 or f32 bits.
#[derive(LogicBlock)]
pub struct Pe {
    pub clock: Signal<In, Clock>,
    pub a_in: Signal<In, Bits<16>>,
    pub sw_in: Signal<In, Bit>,
    pub psum_in: Signal<In, Bits<32>>,
    pub w_in: Signal<In, Bits<16>>,
    pub w_valid: Signal<In, Bit>,
    pub w_row: Signal<In, Bits<16>>,
    pub a_out: Signal<Out, Bits<16>>,
    pub sw_out: Signal<Out, Bit>,
    pub psum_out: Signal<Out, Bits<32>>,
    _mode: Mode,
    _row: usize,
    _active: u16,
    _shadow: u16,
}

impl Pe {
    /// The PE in weight row `row` of a `mode` array.
    pub fn new(mode: Mode, row: usize) -> Self {
        Self {
            clock: Default::default(),
            a_in: Default::default(),
            sw_in: Default::default(),
            psum_in: Default::default(),
            w_in: Default::default(),
            w_valid: Default::default(),
            w_row: Default::default(),
            a_out: Default::default(),
            sw_out: Default::default(),
            psum_out: Default::default(),
            _mode: mode,
            _row: row,
            _active: 0,
            _shadow: 0,
        }
    }
}

fn lit16(b: Bits<16>) -> u16 {
    let v: LiteralType = b.into();
    v as u16
}

fn lit32(b: Bits<32>) -> u32 {
    let v: LiteralType = b.into();
    v as u32
}

impl Logic for Pe {
    fn update(&mut self) {
        if self.clock.pos_edge() {
            let sw = self.sw_in.val();
            let w = if sw { self._shadow } else { self._active };
            let a = lit16(self.a_in.val());
            let p = lit32(self.psum_in.val());
            let out = match self._mode {
                Mode::Int8 => numerics::mac_i8(p, a as u8 as i8, w as u8 as i8),
                Mode::Bf16 => numerics::mac_bf16(p, a, w),
            };
            self.psum_out.next = (out as LiteralType).into();
            self.a_out.next = self.a_in.val();
            self.sw_out.next = sw;
            if sw {
                self._active = self._shadow;
            }
            let row: LiteralType = self.w_row.val().into();
            if self.w_valid.val() && row == self._row as LiteralType {
                self._shadow = lit16(self.w_in.val());
            }
        }
    }

    fn connect(&mut self) {
        self.a_out.connect();
        self.sw_out.connect();
        self.psum_out.connect();
    }

    fn hdl(&self) -> Verilog {
        let (funcs, mac) = match self._mode {
            Mode::Int8 => (
                fpv::MUL_I8.to_string(),
                "psum_in + mul_i8(a_in[7:0], w[7:0])",
            ),
            Mode::Bf16 => (
                format!("{}{}", fpv::MUL_BF16, fpv::ADD_F32),
                "add_f32(psum_in, mul_bf16(a_in, w))",
            ),
        };
        Verilog::Custom(format!(
            r#"parameter [15:0] ROW = 16'd{row};
{funcs}
reg [15:0] active;
reg [15:0] shadow;
wire [15:0] w = sw_in ? shadow : active;
initial begin
   active = 16'd0;
   shadow = 16'd0;
   a_out = 16'd0;
   sw_out = 1'b0;
   psum_out = 32'd0;
end
always @(posedge clock) begin
   psum_out <= {mac};
   a_out <= a_in;
   sw_out <= sw_in;
   if (sw_in) active <= shadow;
   if (w_valid && (w_row == ROW)) shadow <= w_in;
end
"#,
            row = self._row
        ))
    }
}
