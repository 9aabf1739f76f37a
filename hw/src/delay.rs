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

    fn hdl(&self) -> Verilog {
        let w = T::BITS;
        let n = self._depth;
        if n == 0 {
            return Verilog::Custom("always @(*) q = d;\n".into());
        }
        let mut s = String::new();
        s += &format!("reg [{}:0] stage [0:{}];\n", w - 1, n - 1);
        s += "integer i;\ninitial begin\n";
        s += &format!("   for (i = 0; i < {n}; i = i + 1) stage[i] = {w}'d0;\nend\n");
        s += "always @(posedge clock) begin\n   stage[0] <= d;\n";
        if n > 1 {
            s += &format!("   for (i = 1; i < {n}; i = i + 1) stage[i] <= stage[i - 1];\n");
        }
        s += "end\n";
        s += &format!("always @(*) q = stage[{}];\n", n - 1);
        Verilog::Custom(s)
    }
}
