//! `DelayLine<T>`: a chain of `depth` registers (depth 0 is a wire). Used for the input skew, the
//! weight-bus skew, the output de-skew and the control pipeline that travels beside the data.
//!
//! Invariant: `q` at cycle `c` equals `d` at cycle `c - depth` (power-on contents are zero).

use rust_hdl::prelude::*;
use std::collections::VecDeque;

/// A `depth`-stage shift register of `T` (a leaf: its Verilog body is generated here).
#[derive(LogicBlock)]
pub struct DelayLine<T: Synth> {
    pub clock: Signal<In, Clock>,
    pub d: Signal<In, T>,
    pub q: Signal<Out, T>,
    _depth: usize,
    _state: VecDeque<T>,
}

impl<T: Synth> DelayLine<T> {
    pub fn new(depth: usize) -> Self {
        Self {
            clock: Default::default(),
            d: Default::default(),
            q: Default::default(),
            _depth: depth,
            _state: (0..depth).map(|_| T::default()).collect(),
        }
    }
}

impl<T: Synth> Logic for DelayLine<T> {
    fn update(&mut self) {
        if self._depth == 0 {
            self.q.next = self.d.val();
            return;
        }
        if self.clock.pos_edge() {
            self._state.push_front(self.d.val());
            self._state.pop_back();
        }
        self.q.next = *self._state.back().expect("depth > 0");
    }

    fn connect(&mut self) {
        self.q.connect();
    }

    /// The body has a `DEPTH` parameter (default: this line's depth), so one module per element
    /// width serves every delay line of the design.
    fn hdl(&self) -> Verilog {
        let w = T::BITS;
        let n = self._depth;
        // A packed shift register, not an array shifted by a `for` loop: Verilator cannot unroll
        // loops of more than 64 iterations holding delayed array assignments (BLKLOOPINIT).
        Verilog::Custom(format!(
            r#"parameter DEPTH = {n};
generate
   if (DEPTH == 0) begin : g_wire
      always @(*) q = d;
   end else begin : g_regs
      // Stage s (0 = the newest) at bits [{w}*s +: {w}].
      reg [{w}*DEPTH-1:0] stages;
      initial stages = {{({w}*DEPTH){{1'b0}}}};
      if (DEPTH == 1) begin : g_one
         always @(posedge clock) stages <= d;
      end else begin : g_many
         always @(posedge clock) stages <= {{stages[{w}*DEPTH-{w}-1:0], d}};
      end
      always @(*) q = stages[{w}*DEPTH-1 -: {w}];
   end
endgenerate
"#
        ))
    }
}
