//! One column of the accumulator memory with its read-modify-write stage, in `#[hdl_gen]`
//! rust-hdl: [`AccI8`] (wrapping i32 add) and [`AccBf16`] ([`AddF32`]), both over rust-hdl's
//! [`RAM`] of `2^N` words of 32 bits (`N` = [`addr_bits`]`(A)`; addresses stay below `A`
//! because the control wraps them at `A`).
//!
//! Timing: the read address arrives one cycle before the row's data (`raddr` at cycle `c - 1`, a
//! synchronous read, so the memory maps onto block RAM); at cycle `c` with `valid`, the stage
//! computes `new = acc ? add(old, sum) : sum`, writes `mem[addr] <= new` and registers `out <= new`
//! (visible from `c + 1`). A write at `c - 1` to the address read at `c - 1` is forwarded
//! (`byp`/`bypd`), so back-to-back rows to one address see each other. Power-on contents are
//! zero (the RAM's initial values).

use crate::arith::{AddF32, AddI32};
use rust_hdl::prelude::*;

macro_rules! acc_block {
    ($(#[$doc:meta])* $name:ident, $add:ident) => {
        $(#[$doc])*
        #[derive(LogicBlock)]
        pub struct $name<const N: usize> {
            pub clock: Signal<In, Clock>,
            pub raddr: Signal<In, Bits<16>>,
            pub valid: Signal<In, Bit>,
            pub addr: Signal<In, Bits<16>>,
            pub acc: Signal<In, Bit>,
            pub sum: Signal<In, Bits<32>>,
            pub out: Signal<Out, Bits<32>>,
            ram: RAM<Bits<32>, N>,
            byp: DFF<Bit>,
            bypd: DFF<Bits<32>>,
            outr: DFF<Bits<32>>,
            old: Signal<Local, Bits<32>>,
            nv: Signal<Local, Bits<32>>,
            pub add: $add,
        }

        impl<const N: usize> $name<N> {
            /// The column, its `2^N` words zero at power-on.
            pub fn new() -> Self {
                Self {
                    clock: Default::default(),
                    raddr: Default::default(),
                    valid: Default::default(),
                    addr: Default::default(),
                    acc: Default::default(),
                    sum: Default::default(),
                    out: Default::default(),
                    // Empty: rust-hdl reads a word never written as zero (its power-on
                    // value); `crate::emit` writes the matching `initial` zero fill.
                    ram: Default::default(),
                    byp: Default::default(),
                    bypd: Default::default(),
                    outr: Default::default(),
                    old: Default::default(),
                    nv: Default::default(),
                    add: Default::default(),
                }
            }
        }

        impl<const N: usize> Default for $name<N> {
            fn default() -> Self {
                Self::new()
            }
        }

        impl<const N: usize> Logic for $name<N> {
            #[hdl_gen]
            fn update(&mut self) {
                dff_setup!(self, clock, byp, bypd, outr);
                self.ram.read_clock.next = self.clock.val();
                self.ram.write_clock.next = self.clock.val();
                self.ram.read_address.next = self.raddr.val().get_bits::<N>(0);
                if self.byp.q.val() {
                    self.old.next = self.bypd.q.val();
                } else {
                    self.old.next = self.ram.read_data.val();
                }
                self.add.a.next = self.old.val();
                self.add.b.next = self.sum.val();
                if self.acc.val() {
                    self.nv.next = self.add.y.val();
                } else {
                    self.nv.next = self.sum.val();
                }
                self.ram.write_address.next = self.addr.val().get_bits::<N>(0);
                self.ram.write_data.next = self.nv.val();
                self.ram.write_enable.next = self.valid.val();
                self.byp.d.next = self.valid.val() & (self.addr.val() == self.raddr.val());
                self.bypd.d.next = self.nv.val();
                if self.valid.val() {
                    self.outr.d.next = self.nv.val();
                }
                self.out.next = self.outr.q.val();
            }
        }
    };
}

acc_block!(
    /// The int8 accumulator column (wrapping i32 accumulation).
    AccI8,
    AddI32
);

acc_block!(
    /// The bf16 accumulator column (f32 accumulation, [`AddF32`]).
    AccBf16,
    AddF32
);

/// Bits needed to address `depth` words (at least 1).
pub fn addr_bits(depth: usize) -> usize {
    let mut b = 1;
    while (1usize << b) < depth {
        b += 1;
    }
    b
}

#[cfg(test)]
mod tests {
    //! The accumulator column in rust-hdl's simulator against a plain memory with sequential
    //! semantics: a row at cycle `c` sees every write before it, including the one at `c - 1`
    //! (forwarding), with the read address presented at `c - 1` as the control does.
    use super::*;
    use crate::arith_tests::ref_add;
    use crate::ops::Rng;

    macro_rules! run {
        ($uut:expr, $rows:expr, $add:expr) => {{
            let mut uut = $uut;
            uut.connect_all();
            let rows: Vec<(bool, u16, bool, u32)> = $rows;
            let words = 1usize << addr_bits(16);
            let mut mem = vec![0u32; words];
            let mut checked = 0;
            for (i, &(valid, addr, acc, sum)) in rows.iter().enumerate() {
                // Cycle i: this row; the read address of the next row (one cycle ahead).
                let next = rows.get(i + 1).map_or(0, |r| r.1);
                uut.valid.next = valid;
                uut.addr.next = (addr as LiteralType).into();
                uut.acc.next = acc;
                uut.sum.next = (sum as LiteralType).into();
                uut.raddr.next = (next as LiteralType).into();
                assert!(simulate(&mut uut, 10_000));
                uut.clock.next = true.into();
                assert!(simulate(&mut uut, 10_000));
                if valid {
                    let old = mem[addr as usize];
                    let new = if acc { $add(old, sum) } else { sum };
                    mem[addr as usize] = new;
                    let got: LiteralType = uut.out.val().into();
                    assert_eq!(got as u32, new, "row {i}: addr {addr} acc {acc}");
                    checked += 1;
                }
                uut.clock.next = false.into();
                assert!(simulate(&mut uut, 10_000));
            }
            checked
        }};
    }

    /// Rows to 4 addresses (back-to-back hits), 1 in 8 idle; the first row's read address is 0.
    fn rows(seed: u64, n: usize, sum: impl Fn(&mut Rng) -> u32) -> Vec<(bool, u16, bool, u32)> {
        let mut rng = Rng::new(seed);
        let mut v = vec![(false, 0, false, 0)];
        for _ in 0..n {
            let valid = !rng.pct(12);
            v.push((valid, rng.range(0, 4) as u16, rng.pct(70), sum(&mut rng)));
        }
        v
    }

    #[test]
    fn acc_i8_read_modify_write_with_forwarding() {
        let r = rows(1, 3000, |rng| rng.next_u64() as u32);
        let n = run!(AccI8::<4>::new(), r, |a: u32, b: u32| a.wrapping_add(b));
        assert!(n > 2000, "{n} rows checked");
    }

    #[test]
    fn acc_bf16_read_modify_write_with_forwarding() {
        // Sums as the array makes them: bf16 products (exact in f32) and their sums.
        let r = rows(2, 3000, |rng| {
            let a = crate::ops::random_elem(rng, crate::Mode::Bf16);
            let w = crate::ops::random_elem(rng, crate::Mode::Bf16);
            crate::arith_tests::ref_mul(a, w)
        });
        let n = run!(AccBf16::<4>::new(), r, ref_add);
        assert!(n > 2000, "{n} rows checked");
    }
}
