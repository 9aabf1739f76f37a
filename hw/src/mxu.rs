//! The MXU top block: control (ready/valid, weight-load counter, pending-swap flag, matmul row
//! counter and accumulator addresses), input skew, weight-bus skew, the `R × C` mesh of [`Pe`]s,
//! output de-skew, the control pipeline that travels beside the data, and the accumulator.
//!
//! Cycle contract (`docs/mxu-contract.md`), with `s` a load's first accepted weight row and `t` a
//! matmul's first accepted input row:
//! * weight row `k` is accepted at `s + k`; the bus of column `n` is delayed by `n`, so PE `(k, n)`
//!   writes its shadow at the end of `s + k + n`;
//! * input row `m` is accepted at `t + m`; element `k` is delayed by `k` (skew) and moves one PE
//!   right per cycle, so PE `(k, n)` sees it in cycle `t + m + k + n`; partial sums move down one
//!   row per cycle; column `n` leaves the bottom row in `t + m + R + n` and is delayed by `C-1-n`
//!   (de-skew), reaching the accumulator stage in `t + m + R + C - 1`; the result is registered
//!   and visible (result port) from `t + m + R + C`;
//! * the first row of a matmul that follows an unswapped load carries the swap token;
//! * `w_ready` for a load's first row is low while a loaded tile awaits its swap (unless the swap
//!   happens in this very cycle); `x_ready` is always high.
//!
//! Ops must be presented in program order (an op is offered only after the previous one was
//! accepted), as the core's sequencer issues them.

use crate::acc::AccColumn;
use crate::delay::DelayLine;
use crate::params::MxuParams;
use crate::pe::Pe;
use rust_hdl::prelude::*;

/// The generated matrix unit. Field names become Verilog names (`top` with `$`-separated paths).
#[derive(LogicBlock)]
pub struct Mxu {
    pub clock: Signal<In, Clock>,
    // Matmul port: one input row per beat; `x_rows`, `x_addr`, `x_acc` are read on a first beat.
    pub x_valid: Signal<In, Bit>,
    pub x_ready: Signal<Out, Bit>,
    pub x_data: Vec<Signal<In, Bits<16>>>,
    pub x_rows: Signal<In, Bits<32>>,
    pub x_addr: Signal<In, Bits<16>>,
    pub x_acc: Signal<In, Bit>,
    // Weight port: one weight row per beat, `R` beats per load.
    pub w_valid: Signal<In, Bit>,
    pub w_ready: Signal<Out, Bit>,
    pub w_data: Vec<Signal<In, Bits<16>>>,
    // Result port: the accumulator row written in the previous cycle.
    pub r_valid: Signal<Out, Bit>,
    pub r_addr: Signal<Out, Bits<16>>,
    pub r_data: Vec<Signal<Out, Bits<32>>>,
    // Constants.
    rows_m1: Constant<Bits<16>>,
    acc_last: Constant<Bits<16>>,
    z16: Constant<Bits<16>>,
    o16: Constant<Bits<16>>,
    z32: Constant<Bits<32>>,
    o32: Constant<Bits<32>>,
    // Control state.
    wcnt: DFF<Bits<16>>,
    pending: DFF<Bit>,
    xrem: DFF<Bits<32>>,
    xaddr: DFF<Bits<16>>,
    xacc: DFF<Bit>,
    rv: DFF<Bit>,
    ra: DFF<Bits<16>>,
    // Control wires.
    x_first: Signal<Local, Bit>,
    swap_now: Signal<Local, Bit>,
    w_first: Signal<Local, Bit>,
    w_fire: Signal<Local, Bit>,
    row_addr: Signal<Local, Bits<16>>,
    row_acc: Signal<Local, Bit>,
    // Data path.
    xskew: Vec<DelayLine<Bits<16>>>,
    sskew: Vec<DelayLine<Bit>>,
    wdskew: Vec<DelayLine<Bits<16>>>,
    wvskew: Vec<DelayLine<Bit>>,
    wrskew: Vec<DelayLine<Bits<16>>>,
    pes: Vec<Pe>,
    deskew: Vec<DelayLine<Bits<32>>>,
    pvalid: DelayLine<Bit>,
    paddr: DelayLine<Bits<16>>,
    pacc: DelayLine<Bit>,
    praddr: DelayLine<Bits<16>>,
    accs: Vec<AccColumn>,
    _rows: usize,
    _cols: usize,
}

impl Mxu {
    /// Builds the block for validated parameters.
    pub fn new(p: &MxuParams) -> Self {
        let (r, c) = (p.rows, p.cols);
        Self {
            clock: Default::default(),
            x_valid: Default::default(),
            x_ready: Default::default(),
            x_data: (0..r).map(|_| Default::default()).collect(),
            x_rows: Default::default(),
            x_addr: Default::default(),
            x_acc: Default::default(),
            w_valid: Default::default(),
            w_ready: Default::default(),
            w_data: (0..c).map(|_| Default::default()).collect(),
            r_valid: Default::default(),
            r_addr: Default::default(),
            r_data: (0..c).map(|_| Default::default()).collect(),
            rows_m1: Constant::new(((r - 1) as LiteralType).into()),
            acc_last: Constant::new(((p.acc_rows - 1) as LiteralType).into()),
            z16: Constant::new(0.into()),
            o16: Constant::new(1.into()),
            z32: Constant::new(0.into()),
            o32: Constant::new(1.into()),
            wcnt: Default::default(),
            pending: Default::default(),
            xrem: Default::default(),
            xaddr: Default::default(),
            xacc: Default::default(),
            rv: Default::default(),
            ra: Default::default(),
            x_first: Default::default(),
            swap_now: Default::default(),
            w_first: Default::default(),
            w_fire: Default::default(),
            row_addr: Default::default(),
            row_acc: Default::default(),
            xskew: (0..r).map(DelayLine::new).collect(),
            sskew: (0..r).map(DelayLine::new).collect(),
            wdskew: (0..c).map(DelayLine::new).collect(),
            wvskew: (0..c).map(DelayLine::new).collect(),
            wrskew: (0..c).map(DelayLine::new).collect(),
            pes: (0..r * c).map(|i| Pe::new(p.mode, i / c)).collect(),
            deskew: (0..c).map(|n| DelayLine::new(c - 1 - n)).collect(),
            pvalid: DelayLine::new(r + c - 1),
            paddr: DelayLine::new(r + c - 1),
            pacc: DelayLine::new(r + c - 1),
            praddr: DelayLine::new(r + c - 2),
            accs: (0..c).map(|_| AccColumn::new(p.mode, p.acc_rows)).collect(),
            _rows: r,
            _cols: c,
        }
    }
}

impl Logic for Mxu {
    #[hdl_gen]
    fn update(&mut self) {
        // Clocks and register defaults (hold).
        dff_setup!(self, clock, wcnt, pending, xrem, xaddr, xacc, rv, ra);
        self.pvalid.clock.next = self.clock.val();
        self.paddr.clock.next = self.clock.val();
        self.pacc.clock.next = self.clock.val();
        self.praddr.clock.next = self.clock.val();

        // Handshake.
        self.x_ready.next = true;
        self.x_first.next = self.xrem.q.val() == self.z32.val();
        self.swap_now.next = self.x_valid.val() & self.x_first.val() & self.pending.q.val();
        self.w_first.next = self.wcnt.q.val() == self.z16.val();
        self.w_ready.next = !self.w_first.val() | !self.pending.q.val() | self.swap_now.val();
        self.w_fire.next = self.w_valid.val() & self.w_ready.val();

        // Weight-load row counter and the pending-swap flag.
        if self.w_fire.val() {
            if self.wcnt.q.val() == self.rows_m1.val() {
                self.wcnt.d.next = self.z16.val();
            } else {
                self.wcnt.d.next = self.wcnt.q.val() + self.o16.val();
            }
        }
        if self.swap_now.val() {
            self.pending.d.next = false;
        }
        if self.w_fire.val() & self.w_first.val() {
            self.pending.d.next = true;
        }

        // Matmul row counter and accumulator address of the row on the port.
        self.row_addr.next = self.xaddr.q.val();
        self.row_acc.next = self.xacc.q.val();
        if self.x_first.val() {
            self.row_addr.next = self.x_addr.val();
            self.row_acc.next = self.x_acc.val();
        }
        if self.x_valid.val() {
            if self.row_addr.val() == self.acc_last.val() {
                self.xaddr.d.next = self.z16.val();
            } else {
                self.xaddr.d.next = self.row_addr.val() + self.o16.val();
            }
            if self.x_first.val() {
                self.xacc.d.next = self.x_acc.val();
                if self.x_rows.val() > self.o32.val() {
                    self.xrem.d.next = self.x_rows.val() - self.o32.val();
                } else {
                    self.xrem.d.next = self.z32.val();
                }
            } else {
                self.xrem.d.next = self.xrem.q.val() - self.o32.val();
            }
        }

        // Control pipeline beside the data (R + C - 1 stages; the read address one stage less).
        self.pvalid.d.next = self.x_valid.val();
        self.paddr.d.next = self.row_addr.val();
        self.pacc.d.next = self.row_acc.val();
        self.praddr.d.next = self.row_addr.val();

        // Input skew: row k delayed by k; the swap token rides with the data.
        for k in 0..self._rows {
            self.xskew[k].clock.next = self.clock.val();
            self.sskew[k].clock.next = self.clock.val();
            self.xskew[k].d.next = self.z16.val();
            if self.x_valid.val() {
                self.xskew[k].d.next = self.x_data[k].val();
            }
            self.sskew[k].d.next = self.swap_now.val();
        }

        // Weight bus skew: column n delayed by n, with the row index and a valid bit.
        for n in 0..self._cols {
            self.wdskew[n].clock.next = self.clock.val();
            self.wvskew[n].clock.next = self.clock.val();
            self.wrskew[n].clock.next = self.clock.val();
            self.wdskew[n].d.next = self.w_data[n].val();
            self.wvskew[n].d.next = self.w_fire.val();
            self.wrskew[n].d.next = self.wcnt.q.val();
            self.deskew[n].clock.next = self.clock.val();
            self.accs[n].clock.next = self.clock.val();
        }

        // The mesh: activations move right, partial sums move down.
        for nc in self._cols..(self._cols + 1) {
            for k in 0..self._rows {
                for n in 0..self._cols {
                    self.pes[k * nc + n].clock.next = self.clock.val();
                    self.pes[k * nc + n].w_in.next = self.wdskew[n].q.val();
                    self.pes[k * nc + n].w_valid.next = self.wvskew[n].q.val();
                    self.pes[k * nc + n].w_row.next = self.wrskew[n].q.val();
                }
            }
            for k in 0..self._rows {
                self.pes[k * nc].a_in.next = self.xskew[k].q.val();
                self.pes[k * nc].sw_in.next = self.sskew[k].q.val();
                for n in 1..self._cols {
                    self.pes[k * nc + n].a_in.next = self.pes[k * nc + n - 1].a_out.val();
                    self.pes[k * nc + n].sw_in.next = self.pes[k * nc + n - 1].sw_out.val();
                }
            }
            for n in 0..self._cols {
                self.pes[n].psum_in.next = self.z32.val();
                for k in 1..self._rows {
                    self.pes[k * nc + n].psum_in.next = self.pes[k * nc + n - nc].psum_out.val();
                }
            }
            for nr in self._rows..(self._rows + 1) {
                for n in 0..self._cols {
                    self.deskew[n].d.next = self.pes[nr * nc - nc + n].psum_out.val();
                }
            }
        }

        // Accumulator stage and result port.
        for n in 0..self._cols {
            self.accs[n].raddr.next = self.praddr.q.val();
            self.accs[n].valid.next = self.pvalid.q.val();
            self.accs[n].addr.next = self.paddr.q.val();
            self.accs[n].acc.next = self.pacc.q.val();
            self.accs[n].sum.next = self.deskew[n].q.val();
            self.r_data[n].next = self.accs[n].out.val();
        }
        self.rv.d.next = self.pvalid.q.val();
        self.ra.d.next = self.paddr.q.val();
        self.r_valid.next = self.rv.q.val();
        self.r_addr.next = self.ra.q.val();
    }
}
