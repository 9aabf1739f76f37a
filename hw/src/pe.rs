//! The processing element: one weight-stationary multiply-accumulate cell with a double-buffered
//! weight (`shadow` is written by the weight bus, `active` feeds the multiplier), in `#[hdl_gen]`
//! rust-hdl: [`PeI8`] and [`PeBf16`], the same cell around the mode's MAC ([`MacI8`],
//! [`MacBf16`]).
//!
//! Behaviour per clock edge (all registers, see `docs/mxu-contract.md`):
//! * `w = sw_in ? shadow : active` (the swap token travels with the first row of a matmul, so a
//!   PE switches to the new tile exactly when that row reaches it);
//! * `psum_out <= mac(a_in, w, psum_in)`, `a_out <= a_in`, `sw_out <= sw_in`; if `sw_in`,
//!   `active <= shadow`;
//! * if `w_valid && w_row == ROW`: `shadow <= w_in` (the shadow is read before it is written).
//!
//! `ROW` is a rust-hdl [`Constant`] (a `localparam` in rust-hdl's Verilog); [`crate::emit`]
//! turns that one declaration into the module parameter `parameter [15:0] ROW` so one module
//! serves every row of the mesh (`#(.ROW(k))`), defaulting to this instance's row.

use crate::arith::{MacBf16, MacI8};
use rust_hdl::prelude::*;

macro_rules! pe_block {
    ($(#[$doc:meta])* $name:ident, $mac:ident) => {
        $(#[$doc])*
        #[derive(LogicBlock)]
        #[allow(non_snake_case)]
        pub struct $name {
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
            /// The weight row this PE answers to (the Verilog parameter `ROW`).
            pub ROW: Constant<Bits<16>>,
            active: DFF<Bits<16>>,
            shadow: DFF<Bits<16>>,
            a_reg: DFF<Bits<16>>,
            sw_reg: DFF<Bit>,
            psum: DFF<Bits<32>>,
            w: Signal<Local, Bits<16>>,
            pub mac: $mac,
        }

        impl $name {
            /// The PE of weight row `row` (`row < 65536`).
            pub fn new(row: usize) -> Self {
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
                    ROW: crate::arith::k(row as u64),
                    active: Default::default(),
                    shadow: Default::default(),
                    a_reg: Default::default(),
                    sw_reg: Default::default(),
                    psum: Default::default(),
                    w: Default::default(),
                    mac: Default::default(),
                }
            }
        }

        impl Logic for $name {
            #[hdl_gen]
            fn update(&mut self) {
                dff_setup!(self, clock, active, shadow, a_reg, sw_reg, psum);
                if self.sw_in.val() {
                    self.w.next = self.shadow.q.val();
                    self.active.d.next = self.shadow.q.val();
                } else {
                    self.w.next = self.active.q.val();
                }
                if self.w_valid.val() & (self.w_row.val() == self.ROW.val()) {
                    self.shadow.d.next = self.w_in.val();
                }
                self.mac.a.next = self.a_in.val();
                self.mac.w.next = self.w.val();
                self.mac.p.next = self.psum_in.val();
                self.psum.d.next = self.mac.y.val();
                self.a_reg.d.next = self.a_in.val();
                self.sw_reg.d.next = self.sw_in.val();
                self.a_out.next = self.a_reg.q.val();
                self.sw_out.next = self.sw_reg.q.val();
                self.psum_out.next = self.psum.q.val();
            }
        }
    };
}

pe_block!(
    /// The int8 PE: `psum_out <= psum_in + a·w` (i32, wrapping).
    PeI8,
    MacI8
);

pe_block!(
    /// The bf16 PE: `psum_out <= add_f32(psum_in, a·w)` (see [`crate::arith`]).
    PeBf16,
    MacBf16
);
