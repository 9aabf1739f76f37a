//! One column of the accumulator memory (`A` words of 32 bits) with its read-modify-write stage.
//!
//! Timing: the read address arrives one cycle before the row's data (`raddr` at cycle `c - 1`, a
//! synchronous read, so the memory maps onto block RAM); at cycle `c` with `valid`, the stage
//! computes `new = acc ? add(old, sum) : sum`, writes `mem[addr] <= new` and registers `out <= new`
//! (visible from `c + 1`). A write at `c - 1` to the address read at `c - 1` is forwarded, so
//! back-to-back rows to one address see each other.

use crate::fpv;
use crate::numerics;
use crate::params::Mode;
use rust_hdl::prelude::*;

/// Accumulator column: `depth` words, i32 (wrapping) or f32 (`add_f32`) accumulation.
#[derive(LogicBlock)]
pub struct AccColumn {
    pub clock: Signal<In, Clock>,
    pub raddr: Signal<In, Bits<16>>,
    pub valid: Signal<In, Bit>,
    pub addr: Signal<In, Bits<16>>,
    pub acc: Signal<In, Bit>,
    pub sum: Signal<In, Bits<32>>,
    pub out: Signal<Out, Bits<32>>,
    _mode: Mode,
    _mem: Vec<u32>,
    _rd: u32,
    _byp: Option<u32>,
}

impl AccColumn {
    pub fn new(mode: Mode, depth: usize) -> Self {
        Self {
            clock: Default::default(),
            raddr: Default::default(),
            valid: Default::default(),
            addr: Default::default(),
            acc: Default::default(),
            sum: Default::default(),
            out: Default::default(),
            _mode: mode,
            _mem: vec![0; depth],
            _rd: 0,
            _byp: None,
        }
    }

    fn combine(&self, old: u32, sum: u32) -> u32 {
        match self._mode {
            Mode::Int8 => old.wrapping_add(sum),
            Mode::Bf16 => numerics::add_f32_bits(old, sum),
        }
    }
}

fn lit(v: impl Into<LiteralType>) -> u64 {
    v.into()
}

impl Logic for AccColumn {
    fn update(&mut self) {
        if self.clock.pos_edge() {
            let old = self._byp.unwrap_or(self._rd);
            let sum = lit(self.sum.val()) as u32;
            let new = if self.acc.val() {
                self.combine(old, sum)
            } else {
                sum
            };
            let ra = lit(self.raddr.val()) as usize % self._mem.len();
            let wa = lit(self.addr.val()) as usize % self._mem.len();
            let we = self.valid.val();
            self._rd = self._mem[ra];
            self._byp = (we && wa == ra).then_some(new);
            if we {
                self._mem[wa] = new;
                self.out.next = (new as LiteralType).into();
            }
        }
    }

    fn connect(&mut self) {
        self.out.connect();
    }

    fn hdl(&self) -> Verilog {
        let depth = self._mem.len();
        let (funcs, add) = match self._mode {
            Mode::Int8 => (String::new(), "old + sum"),
            Mode::Bf16 => (fpv::ADD_F32.to_string(), "add_f32(old, sum)"),
        };
        Verilog::Custom(format!(
            r#"{funcs}
reg [31:0] mem [0:{last}];
reg [31:0] rd;
reg byp;
reg [31:0] bypd;
wire [31:0] old = byp ? bypd : rd;
wire [31:0] nv = acc ? {add} : sum;
integer i;
initial begin
   for (i = 0; i < {depth}; i = i + 1) mem[i] = 32'd0;
   rd = 32'd0;
   byp = 1'b0;
   bypd = 32'd0;
   out = 32'd0;
end
always @(posedge clock) begin
   rd <= mem[raddr[{aw}:0]];
   byp <= valid && (addr == raddr);
   bypd <= nv;
   if (valid) begin
      mem[addr[{aw}:0]] <= nv;
      out <= nv;
   end
end
"#,
            last = depth - 1,
            aw = addr_bits(depth) - 1,
        ))
    }
}

/// Bits needed to address `depth` words (at least 1).
pub fn addr_bits(depth: usize) -> usize {
    let mut b = 1;
    while (1usize << b) < depth {
        b += 1;
    }
    b
}
