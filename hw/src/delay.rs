//! [`DelayLine`]: `DEPTH` registers of `W` bits (depth 0 is a wire), in `#[hdl_gen]` rust-hdl.
//! Used for the input skew, the weight-bus skew, the output de-skew and the control pipeline that
//! travels beside the data.
//!
//! Invariant: `q` at cycle `c` equals `d` at cycle `c - DEPTH` (power-on contents are zero).
//!
//! The registers are one packed shift register of `S = W · MAXD` bits (stage `s`, 0 the newest,
//! at bits `[W·s +: W]`), shifted by `W` each cycle; `q` taps stage `DEPTH - 1`. `MAXD` is a type
//! parameter (`Bits<S>` needs a constant width), `DEPTH ≤ MAXD` a [`Constant`]: the tap offset
//! `tap = W·(DEPTH-1)` and `is_wire = (DEPTH == 0)` are rust-hdl `localparam`s, which
//! [`crate::emit`] derives from a module parameter `DEPTH` so one module per width serves every
//! delay line of the mesh. Stages past the tap are unread, and synthesis removes them.
//! (A packed register, not an array shifted by a loop: Verilator does not unroll loops of more
//! than 64 iterations holding delayed array assignments, `BLKLOOPINIT`.)

use crate::arith::comment;
use rust_hdl::prelude::*;

/// A `depth`-stage shift register of `W`-bit values; `S = W · MAXD` bits of registers.
#[derive(LogicBlock)]
pub struct DelayLine<const W: usize, const S: usize> {
    pub clock: Signal<In, Clock>,
    pub d: Signal<In, Bits<W>>,
    pub q: Signal<Out, Bits<W>>,
    stages: DFF<Bits<S>>,
    width: Constant<Bits<16>>,
    is_wire: Constant<Bit>,
    tap: Constant<Bits<16>>,
    sel: Signal<Local, Bits<S>>,
}

impl<const W: usize, const S: usize> DelayLine<W, S> {
    /// The largest depth this type holds.
    pub const MAX_DEPTH: usize = S / W;

    /// A line of `depth ≤ S / W` stages. The register holds at least two stages (`S ≥ 2W`): a
    /// one-bit register is a Verilog scalar, which cannot be part-selected.
    pub fn new(depth: usize) -> Self {
        assert!(
            S.is_multiple_of(W) && S >= 2 * W && depth <= Self::MAX_DEPTH,
            "delay line of depth {depth} in {S} bits of {W}-bit stages"
        );
        Self {
            clock: Default::default(),
            d: Default::default(),
            q: Default::default(),
            stages: Default::default(),
            width: crate::arith::k(W as u64),
            is_wire: Constant::new(depth == 0),
            tap: crate::arith::k((W * depth.saturating_sub(1)) as u64),
            sel: Default::default(),
        }
    }
}

impl<const W: usize, const S: usize> Logic for DelayLine<W, S> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, stages);
        comment!("verilator lint_off WIDTH");
        self.stages.d.next =
            (self.stages.q.val() << self.width.val()) | bit_cast::<S, W>(self.d.val());
        comment!("verilator lint_on WIDTH");
        self.sel.next = self.stages.q.val() >> self.tap.val();
        if self.is_wire.val() {
            self.q.next = self.d.val();
        } else {
            self.q.next = self.sel.val().get_bits::<W>(0);
        }
    }
}

#[cfg(test)]
mod tests {
    //! Every depth of a line in rust-hdl's simulator: `q(c) = d(c - DEPTH)`.
    use super::*;
    use crate::ops::Rng;

    fn check<const W: usize, const S: usize>(depth: usize) {
        let mut uut = DelayLine::<W, S>::new(depth);
        uut.connect_all();
        let mut rng = Rng::new(depth as u64);
        let mask = (1u64 << W) - 1;
        let xs: Vec<u64> = (0..3 * S / W + 8).map(|_| rng.next_u64() & mask).collect();
        for (i, &x) in xs.iter().enumerate() {
            uut.d.next = x.into();
            assert!(simulate(&mut uut, 1000));
            if depth == 0 {
                let q: LiteralType = uut.q.val().into();
                assert_eq!(q, x, "wire, cycle {i}");
            }
            uut.clock.next = true.into();
            assert!(simulate(&mut uut, 1000));
            if depth > 0 {
                // After edge i the line holds d(i), …, d(i - depth + 1): q = d(i + 1 - depth).
                let want = (i + 1).checked_sub(depth).map_or(0, |j| xs[j]);
                let q: LiteralType = uut.q.val().into();
                assert_eq!(q, want, "depth {depth}, cycle {i}");
            }
            uut.clock.next = false.into();
            assert!(simulate(&mut uut, 1000));
        }
    }

    #[test]
    fn every_depth_delays_by_its_depth() {
        for depth in 0..=8 {
            check::<16, 128>(depth);
            check::<1, 8>(depth);
            check::<32, 256>(depth);
        }
        check::<16, { 16 * 512 }>(511);
    }

    #[test]
    #[should_panic(expected = "delay line of depth 9")]
    fn a_line_deeper_than_its_register_is_refused() {
        let _ = DelayLine::<16, 128>::new(9);
    }
}
