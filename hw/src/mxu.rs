//! The MXU's control block, [`MxuCtrl`]: ready/valid handshakes, the weight-load row counter,
//! the pending-swap flag, the matmul row counter and accumulator addresses, and the control
//! pipeline that travels beside the data to the accumulator stage. The datapath (skews, the
//! `R × C` mesh of PEs ([`crate::pe::PeI8`] or [`crate::pe::PeBf16`]), de-skew, accumulator
//! columns) is instantiated around it by the structural top module `mxu` that [`crate::emit`]
//! writes with `generate` loops.
//!
//! Cycle contract (`docs/mxu-contract.md`), with `s` a load's first accepted weight row and `t` a
//! matmul's first accepted input row:
//! * weight row `k` is accepted at `s + k` (`w_fire`, with its index on `w_row`); the bus of
//!   column `n` is delayed by `n`, so PE `(k, n)` writes its shadow at the end of `s + k + n`;
//! * input row `m` is accepted at `t + m`; element `k` is delayed by `k` (skew) and moves one PE
//!   right per cycle, so PE `(k, n)` sees it in cycle `t + m + k + n`; partial sums move down one
//!   row per cycle; column `n` leaves the bottom row in `t + m + R + n` and is delayed by `C-1-n`
//!   (de-skew), reaching the accumulator stage in `t + m + R + C - 1` together with this block's
//!   `acc_valid`/`acc_addr`/`acc_acc` (`R + C - 1` stages; `acc_raddr` one stage earlier, for the
//!   synchronous read); the result is registered and visible (result port) from `t + m + R + C`;
//! * the first row of a matmul that follows an unswapped load carries the swap token
//!   (`swap_now`);
//! * `w_ready` for a load's first row is low while a loaded tile awaits its swap (unless the swap
//!   happens in this very cycle); `x_ready` is always high.
//!
//! Ops must be presented in program order (an op is offered only after the previous one was
//! accepted), as the core's sequencer issues them.

use crate::delay::DelayLine;
use crate::params::MxuParams;
use rust_hdl::prelude::*;

/// Register stages the control pipeline's delay lines hold for `p`: `R + C - 1` rounded up to a
/// power of two (one Rust type per size, see [`crate::emit`]). Each line is its own module
/// (`mxu_ctrl$pvalid` …) with its tap fixed by rust-hdl; unread stages past the tap are removed
/// by synthesis.
pub fn ctrl_depth(p: &MxuParams) -> usize {
    (p.rows + p.cols - 1).next_power_of_two()
}

/// The control block of the matrix unit (a rust-hdl `#[hdl_gen]` block; its Verilog is the
/// module `mxu_ctrl` and its registers' modules `mxu_ctrl$…`). `D` is [`ctrl_depth`], `D16` is
/// `16 · D` (the bits of the 16-bit lines).
#[derive(LogicBlock)]
pub struct MxuCtrl<const D: usize, const D16: usize> {
    pub clock: Signal<In, Clock>,
    // Matmul port: `x_rows`, `x_addr`, `x_acc` are read on a matmul's first beat.
    pub x_valid: Signal<In, Bit>,
    pub x_ready: Signal<Out, Bit>,
    pub x_rows: Signal<In, Bits<32>>,
    pub x_addr: Signal<In, Bits<16>>,
    pub x_acc: Signal<In, Bit>,
    // Weight port.
    pub w_valid: Signal<In, Bit>,
    pub w_ready: Signal<Out, Bit>,
    /// A weight row is accepted in this cycle ...
    pub w_fire: Signal<Out, Bit>,
    /// ... and this is its row index `k`.
    pub w_row: Signal<Out, Bits<16>>,
    /// The swap token: this cycle's input row is a matmul's first and swaps in a pending tile.
    pub swap_now: Signal<Out, Bit>,
    // Accumulator stage (`R + C - 1` cycles after the row's acceptance; `acc_raddr` one earlier).
    pub acc_raddr: Signal<Out, Bits<16>>,
    pub acc_valid: Signal<Out, Bit>,
    pub acc_addr: Signal<Out, Bits<16>>,
    pub acc_acc: Signal<Out, Bit>,
    // Result port: the accumulator row written in the previous cycle (valid and address).
    pub r_valid: Signal<Out, Bit>,
    pub r_addr: Signal<Out, Bits<16>>,
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
    w_first: Signal<Local, Bit>,
    row_addr: Signal<Local, Bits<16>>,
    row_acc: Signal<Local, Bit>,
    // Control pipeline beside the data.
    pvalid: DelayLine<1, D>,
    paddr: DelayLine<16, D16>,
    pacc: DelayLine<1, D>,
    praddr: DelayLine<16, D16>,
}

impl<const D: usize, const D16: usize> MxuCtrl<D, D16> {
    /// Builds the block for validated parameters (`D ≥ R + C - 1`, `D16 = 16 · D`).
    pub fn new(p: &MxuParams) -> Self {
        let (r, c) = (p.rows, p.cols);
        assert!(
            D16 == 16 * D && r + c - 1 <= D,
            "control pipeline of {D} stages for {r}x{c}"
        );
        Self {
            clock: Default::default(),
            x_valid: Default::default(),
            x_ready: Default::default(),
            x_rows: Default::default(),
            x_addr: Default::default(),
            x_acc: Default::default(),
            w_valid: Default::default(),
            w_ready: Default::default(),
            w_fire: Default::default(),
            w_row: Default::default(),
            swap_now: Default::default(),
            acc_raddr: Default::default(),
            acc_valid: Default::default(),
            acc_addr: Default::default(),
            acc_acc: Default::default(),
            r_valid: Default::default(),
            r_addr: Default::default(),
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
            w_first: Default::default(),
            row_addr: Default::default(),
            row_acc: Default::default(),
            pvalid: DelayLine::new(r + c - 1),
            paddr: DelayLine::new(r + c - 1),
            pacc: DelayLine::new(r + c - 1),
            praddr: DelayLine::new(r + c - 2),
        }
    }
}

impl<const D: usize, const D16: usize> Logic for MxuCtrl<D, D16> {
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
        self.w_row.next = self.wcnt.q.val();

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
        self.pvalid.d.next = self.x_valid.val().into();
        self.paddr.d.next = self.row_addr.val();
        self.pacc.d.next = self.row_acc.val().into();
        self.praddr.d.next = self.row_addr.val();

        // Accumulator stage and result port.
        self.acc_raddr.next = self.praddr.q.val();
        self.acc_valid.next = self.pvalid.q.val().into();
        self.acc_addr.next = self.paddr.q.val();
        self.acc_acc.next = self.pacc.q.val().into();
        self.rv.d.next = self.pvalid.q.val().into();
        self.ra.d.next = self.paddr.q.val();
        self.r_valid.next = self.rv.q.val();
        self.r_addr.next = self.ra.q.val();
    }
}
