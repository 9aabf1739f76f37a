//! The numeric primitives of the MXU contract (`docs/mxu-contract.md`) as combinational rust-hdl
//! blocks (`#[hdl_gen]`): the Verilog is generated from the same `update` that rust-hdl simulates,
//! so a test of these blocks in rust-hdl's simulator tests the hardware's logic itself.
//!
//! * [`MacI8`]: `p + a·w`, i8 × i8 → i32 (sign-extended exact product, wrapping i32 sum), on one
//!   16 × 16 multiplier (rust-hdl's only one), so a Xilinx PE maps onto one DSP48.
//! * [`MulBf16`]: bf16 × bf16 → f32, exact; DAZ inputs; tiny products flush to ±0 (sign
//!   `sa ^ sw`), huge ones become ±inf, `inf·0` and NaN inputs give `0x7FC00000`.
//! * [`AddF32`]: f32 + f32 rounded to nearest even; inputs with a zero exponent are read as zero;
//!   a result below the smallest normal is flushed to zero keeping its sign; exact cancellation
//!   gives +0; any NaN result is `0x7FC00000`. Normalization is a six-stage priority encoder
//!   (leading-zero count by halves: 32, 16, 8, 4, 2, 1) written out in the HDL.
//! * [`MacBf16`]: `AddF32(p, MulBf16(a, w))`, the bf16 PE's arithmetic.
//! * [`AddI32`]: the int8 accumulator's wrapping i32 add.
//!
//! rust-hdl 0.46 rules these blocks follow (each is a real hazard of its Verilog writer):
//! * every constant is a sized [`Constant`] (an integer literal becomes an unsized Verilog
//!   literal: Verilator `WIDTH` warnings);
//! * every width change goes through a local signal or `bit_cast` into a signal of the target
//!   width, and both operands of an operator have the same width (Verilog sizes an expression by
//!   its context, Rust by its operands: `a + b` of two 8-bit values is 9 bits wide in a 9-bit
//!   assignment in Verilog but wraps at 8 bits in Rust);
//! * comparisons mixed with bit operators are parenthesized (rust-hdl prints the parentheses of
//!   the source only, and `==` binds tighter than `&` in Verilog but looser in Rust);
//! * no `let`: intermediates are `Signal<Local, _>` fields, assigned on every path (no latches).

use rust_hdl::prelude::*;

/// Expands to nothing in Rust; `#[hdl_gen]` writes its argument as a Verilog `//` comment. Used
/// for the scoped `verilator lint_off WIDTH` / `lint_on WIDTH` pairs around the zero-extensions
/// (`bit_cast` to a wider type, which rust-hdl 0.46 writes as `(x & <wide mask>)`: correct, but
/// an AND of two widths to Verilator). Each use is listed in docs/rtl.md.
macro_rules! comment {
    ($($t:tt)*) => {};
}
pub(crate) use comment;

/// A sized constant of `N` bits.
pub(crate) fn k<const N: usize>(v: u64) -> Constant<Bits<N>> {
    Constant::new((v as LiteralType).into())
}

/// The canonical quiet NaN every NaN result is replaced by.
pub const CANONICAL_NAN: u64 = 0x7FC0_0000;

/// rust-hdl's `signed_bit_cast` (sign extension `Signed<N>` → `Signed<M>`, `M ≥ N`), with its
/// Rust side fixed: rust-hdl 0.46 computes `-signed_bit_cast(-x)` for a negative `x`, which
/// recurses without end on the most negative value (`-(-128)` is `-128` in 8 bits; the
/// exhaustive int8 test found it as a stack overflow). This one copies the sign bit. It shadows
/// the prelude's within this module, and `#[hdl_gen]` translates it exactly like rust-hdl's (the
/// macro maps every `signed_bit_cast…` call to Verilog `$signed(x)`, whose assignment to a wider
/// signed signal is the sign extension).
pub fn signed_bit_cast<const M: usize, const N: usize>(x: Signed<N>) -> Signed<M> {
    assert!(M >= N, "signed_bit_cast widens");
    let mut wide: Bits<M> = bit_cast::<M, N>(x.inner());
    if x.sign_bit() {
        for i in N..M {
            wide = wide.replace_bit(i, true);
        }
    }
    signed_cast(wide)
}

/// `y = p + sext(a[7:0]) · sext(w[7:0])` (i32, wrapping). `a`, `w` carry an int8 in their low
/// byte; the high byte is ignored. The operands are sign-extended to 16 bits ([`signed_bit_cast`],
/// in Verilog a signed 8-bit value assigned to a signed 16-bit one) for rust-hdl's signed 16 × 16
/// multiplier (its only size); synthesis sees the copied sign bits and strips them (Yosys
/// `wreduce`), so this is an 8 × 8 signed multiplier whose product and sum map onto one DSP48 on
/// Xilinx, as the hand-written Verilog did.
#[derive(LogicBlock, Default)]
pub struct MacI8 {
    pub a: Signal<In, Bits<16>>,
    pub w: Signal<In, Bits<16>>,
    pub p: Signal<In, Bits<32>>,
    pub y: Signal<Out, Bits<32>>,
    sa: Signal<Local, Signed<16>>,
    sw: Signal<Local, Signed<16>>,
    prod: Signal<Local, Signed<32>>,
}

impl Logic for MacI8 {
    #[hdl_gen]
    fn update(&mut self) {
        // Sign-extend both int8 operands to 16 bits.
        comment!("verilator lint_off WIDTH");
        self.sa.next = signed_bit_cast::<16, 8>(signed_cast(self.a.val().get_bits::<8>(0)));
        self.sw.next = signed_bit_cast::<16, 8>(signed_cast(self.w.val().get_bits::<8>(0)));
        comment!("verilator lint_on WIDTH");
        // The exact signed product, 32 bits, added with wrap-around.
        self.prod.next = self.sa.val() * self.sw.val();
        self.y.next = self.p.val() + unsigned_cast(self.prod.val());
    }
}

/// `y = a + b` (i32 bits, wrapping): the int8 accumulator's combine.
#[derive(LogicBlock, Default)]
pub struct AddI32 {
    pub a: Signal<In, Bits<32>>,
    pub b: Signal<In, Bits<32>>,
    pub y: Signal<Out, Bits<32>>,
}

impl Logic for AddI32 {
    #[hdl_gen]
    fn update(&mut self) {
        self.y.next = self.a.val() + self.b.val();
    }
}

/// `y = a · w`, bf16 × bf16 → f32 bits, exact (see the module docs for the special cases).
/// Exponent arithmetic is done in 16 bits (the operands' width), the significand product on the
/// 16 × 16 multiplier, so the only width change is the exponent's zero-extension into the result.
#[derive(LogicBlock)]
pub struct MulBf16 {
    pub a: Signal<In, Bits<16>>,
    pub w: Signal<In, Bits<16>>,
    pub y: Signal<Out, Bits<32>>,
    ff16: Constant<Bits<16>>,
    z16: Constant<Bits<16>>,
    m7: Constant<Bits<16>>,
    h8: Constant<Bits<16>>,
    one16: Constant<Bits<16>>,
    e127: Constant<Bits<16>>,
    e382: Constant<Bits<16>>,
    sh7: Constant<Bits<8>>,
    sh8: Constant<Bits<8>>,
    sh9: Constant<Bits<8>>,
    sh23: Constant<Bits<8>>,
    frac_mask: Constant<Bits<32>>,
    sign32: Constant<Bits<32>>,
    inf32: Constant<Bits<32>>,
    nan32: Constant<Bits<32>>,
    z32: Constant<Bits<32>>,
    ea: Signal<Local, Bits<16>>,
    ew: Signal<Local, Bits<16>>,
    a_nan: Signal<Local, Bit>,
    w_nan: Signal<Local, Bit>,
    a_inf: Signal<Local, Bit>,
    w_inf: Signal<Local, Bit>,
    a_zero: Signal<Local, Bit>,
    w_zero: Signal<Local, Bit>,
    siga: Signal<Local, Bits<16>>,
    sigw: Signal<Local, Bits<16>>,
    sig: Signal<Local, Bits<32>>,
    esum: Signal<Local, Bits<16>>,
    frac: Signal<Local, Bits<32>>,
    sgn: Signal<Local, Bits<32>>,
    eres: Signal<Local, Bits<16>>,
    efield: Signal<Local, Bits<32>>,
}

impl Default for MulBf16 {
    fn default() -> Self {
        Self {
            a: Default::default(),
            w: Default::default(),
            y: Default::default(),
            ff16: k(0xFF),
            z16: k(0),
            m7: k(0x7F),
            h8: k(0x80),
            one16: k(1),
            e127: k(127),
            e382: k(382),
            sh7: k(7),
            sh8: k(8),
            sh9: k(9),
            sh23: k(23),
            frac_mask: k(0x007F_FFFF),
            sign32: k(0x8000_0000),
            inf32: k(0x7F80_0000),
            nan32: k(CANONICAL_NAN),
            z32: k(0),
            ea: Default::default(),
            ew: Default::default(),
            a_nan: Default::default(),
            w_nan: Default::default(),
            a_inf: Default::default(),
            w_inf: Default::default(),
            a_zero: Default::default(),
            w_zero: Default::default(),
            siga: Default::default(),
            sigw: Default::default(),
            sig: Default::default(),
            esum: Default::default(),
            frac: Default::default(),
            sgn: Default::default(),
            eres: Default::default(),
            efield: Default::default(),
        }
    }
}

impl Logic for MulBf16 {
    #[hdl_gen]
    fn update(&mut self) {
        // Fields and classes (a zero exponent is a zero: DAZ).
        self.ea.next = (self.a.val() >> self.sh7.val()) & self.ff16.val();
        self.ew.next = (self.w.val() >> self.sh7.val()) & self.ff16.val();
        self.a_nan.next =
            (self.ea.val() == self.ff16.val()) & ((self.a.val() & self.m7.val()) != self.z16.val());
        self.w_nan.next =
            (self.ew.val() == self.ff16.val()) & ((self.w.val() & self.m7.val()) != self.z16.val());
        self.a_inf.next =
            (self.ea.val() == self.ff16.val()) & ((self.a.val() & self.m7.val()) == self.z16.val());
        self.w_inf.next =
            (self.ew.val() == self.ff16.val()) & ((self.w.val() & self.m7.val()) == self.z16.val());
        self.a_zero.next = self.ea.val() == self.z16.val();
        self.w_zero.next = self.ew.val() == self.z16.val();
        // The exact product of the 8-bit significands (1.f × 1.f in [1, 4)).
        self.siga.next = (self.a.val() & self.m7.val()) | self.h8.val();
        self.sigw.next = (self.w.val() & self.m7.val()) | self.h8.val();
        self.sig.next = self.siga.val() * self.sigw.val();
        // Biased exponent sum (+1 when the product is in [2, 4)) and the 23-bit fraction.
        if self.sig.val().get_bit(15) {
            self.esum.next = self.ea.val() + self.ew.val() + self.one16.val();
            self.frac.next = (self.sig.val() << self.sh8.val()) & self.frac_mask.val();
        } else {
            self.esum.next = self.ea.val() + self.ew.val();
            self.frac.next = (self.sig.val() << self.sh9.val()) & self.frac_mask.val();
        }
        if self.a.val().get_bit(15) ^ self.w.val().get_bit(15) {
            self.sgn.next = self.sign32.val();
        } else {
            self.sgn.next = self.z32.val();
        }
        self.eres.next = (self.esum.val() - self.e127.val()) & self.ff16.val();
        comment!("verilator lint_off WIDTH");
        self.efield.next = bit_cast::<32, 16>(self.eres.val());
        comment!("verilator lint_on WIDTH");
        // Result: NaN, ±inf, ±0 (a zero input, or a product below the smallest normal), normal.
        if self.a_nan.val()
            | self.w_nan.val()
            | (self.a_inf.val() & self.w_zero.val())
            | (self.a_zero.val() & self.w_inf.val())
        {
            self.y.next = self.nan32.val();
        } else if self.a_inf.val() | self.w_inf.val() {
            self.y.next = self.sgn.val() | self.inf32.val();
        } else if self.a_zero.val() | self.w_zero.val() {
            self.y.next = self.sgn.val();
        } else if self.esum.val() >= self.e382.val() {
            self.y.next = self.sgn.val() | self.inf32.val();
        } else if self.esum.val() <= self.e127.val() {
            self.y.next = self.sgn.val();
        } else {
            self.y.next = self.sgn.val() | (self.efield.val() << self.sh23.val()) | self.frac.val();
        }
    }
}

/// The rounding of [`AddF32`]. The contract is [`Rounding::NearestEven`]; the others exist so a
/// test can show that a wrong rounding mode is caught (a mutation check).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// Round to nearest, ties to even (the contract).
    NearestEven,
    /// Round to nearest, ties away from zero.
    NearestAway,
    /// Truncate.
    TowardZero,
}

/// `y = a + b`, f32 bits (see the module docs). Datapath: order the operands by magnitude, align
/// the smaller one in a 64-bit frame (`[63]` carry, `[62]` hidden bit, `[61:39]` fraction, 39
/// guard bits, a sticky bit OR-ed into `[0]`), add or subtract, normalize with a priority encoder
/// (the leading one moved to bit 63 in six halving stages, counting the shift), round to 24 bits
/// (`[63:40]`, guard `[39]`, the rest `[38:0]`), and select the special cases. Exponents are
/// 32-bit values (the operands' width); the only width changes are the two significands'
/// zero-extensions into the frame.
#[derive(LogicBlock)]
pub struct AddF32 {
    pub a: Signal<In, Bits<32>>,
    pub b: Signal<In, Bits<32>>,
    pub y: Signal<Out, Bits<32>>,
    // Rounding-mode knobs (constants: NearestEven has both set).
    round_en: Constant<Bit>,
    ties_even: Constant<Bit>,
    // Constants.
    sh1: Constant<Bits<8>>,
    sh2: Constant<Bits<8>>,
    sh4: Constant<Bits<8>>,
    sh8: Constant<Bits<8>>,
    sh16: Constant<Bits<8>>,
    sh23: Constant<Bits<8>>,
    sh32: Constant<Bits<8>>,
    sh39: Constant<Bits<8>>,
    ff32: Constant<Bits<32>>,
    d62: Constant<Bits<32>>,
    mag31: Constant<Bits<32>>,
    frac_mask: Constant<Bits<32>>,
    sign32: Constant<Bits<32>>,
    inf32: Constant<Bits<32>>,
    nan32: Constant<Bits<32>>,
    z32: Constant<Bits<32>>,
    one32: Constant<Bits<32>>,
    two32: Constant<Bits<32>>,
    e255: Constant<Bits<32>>,
    lz1: Constant<Bits<32>>,
    lz2: Constant<Bits<32>>,
    lz4: Constant<Bits<32>>,
    lz8: Constant<Bits<32>>,
    lz16: Constant<Bits<32>>,
    lz32: Constant<Bits<32>>,
    hidden64: Constant<Bits<64>>,
    ones64: Constant<Bits<64>>,
    z64: Constant<Bits<64>>,
    one64: Constant<Bits<64>>,
    z1: Constant<Bits<1>>,
    z2: Constant<Bits<2>>,
    z4: Constant<Bits<4>>,
    z8: Constant<Bits<8>>,
    z16: Constant<Bits<16>>,
    z39: Constant<Bits<39>>,
    // Classes of the inputs.
    ea: Signal<Local, Bits<32>>,
    eb: Signal<Local, Bits<32>>,
    a_nan: Signal<Local, Bit>,
    b_nan: Signal<Local, Bit>,
    a_inf: Signal<Local, Bit>,
    b_inf: Signal<Local, Bit>,
    a_zero: Signal<Local, Bit>,
    b_zero: Signal<Local, Bit>,
    // Alignment.
    big: Signal<Local, Bits<32>>,
    little: Signal<Local, Bits<32>>,
    ebig: Signal<Local, Bits<32>>,
    dexp: Signal<Local, Bits<32>>,
    mbig: Signal<Local, Bits<64>>,
    msmall: Signal<Local, Bits<64>>,
    mshift: Signal<Local, Bits<64>>,
    sticky: Signal<Local, Bit>,
    malign: Signal<Local, Bits<64>>,
    mag: Signal<Local, Bits<64>>,
    // Normalization: n1..n6 after each stage of the priority encoder, l1..l6 the shift so far.
    n1: Signal<Local, Bits<64>>,
    n2: Signal<Local, Bits<64>>,
    n3: Signal<Local, Bits<64>>,
    n4: Signal<Local, Bits<64>>,
    n5: Signal<Local, Bits<64>>,
    n6: Signal<Local, Bits<64>>,
    l1: Signal<Local, Bits<32>>,
    l2: Signal<Local, Bits<32>>,
    l3: Signal<Local, Bits<32>>,
    l4: Signal<Local, Bits<32>>,
    l5: Signal<Local, Bits<32>>,
    l6: Signal<Local, Bits<32>>,
    // Rounding.
    mant: Signal<Local, Bits<32>>,
    guard: Signal<Local, Bit>,
    rest: Signal<Local, Bit>,
    up: Signal<Local, Bit>,
    mround: Signal<Local, Bits<32>>,
    carry: Signal<Local, Bit>,
    mfinal: Signal<Local, Bits<32>>,
    // Exponent: eup = ebig + 1 + carry; the result's is eup - lz (flush if ≤ 0, inf if ≥ 255).
    eup: Signal<Local, Bits<32>>,
    elim: Signal<Local, Bits<32>>,
    efield: Signal<Local, Bits<32>>,
    sgn: Signal<Local, Bits<32>>,
}

impl Default for AddF32 {
    fn default() -> Self {
        Self::new(Rounding::NearestEven)
    }
}

impl AddF32 {
    /// The adder with `rounding` (the MXU uses [`Rounding::NearestEven`]).
    pub fn new(rounding: Rounding) -> Self {
        Self {
            a: Default::default(),
            b: Default::default(),
            y: Default::default(),
            round_en: Constant::new(rounding != Rounding::TowardZero),
            ties_even: Constant::new(rounding == Rounding::NearestEven),
            sh1: k(1),
            sh2: k(2),
            sh4: k(4),
            sh8: k(8),
            sh16: k(16),
            sh23: k(23),
            sh32: k(32),
            sh39: k(39),
            ff32: k(0xFF),
            d62: k(62),
            mag31: k(0x7FFF_FFFF),
            frac_mask: k(0x007F_FFFF),
            sign32: k(0x8000_0000),
            inf32: k(0x7F80_0000),
            nan32: k(CANONICAL_NAN),
            z32: k(0),
            one32: k(1),
            two32: k(2),
            e255: k(255),
            lz1: k(1),
            lz2: k(2),
            lz4: k(4),
            lz8: k(8),
            lz16: k(16),
            lz32: k(32),
            hidden64: k(1 << 62),
            ones64: k(u64::MAX),
            z64: k(0),
            one64: k(1),
            z1: k(0),
            z2: k(0),
            z4: k(0),
            z8: k(0),
            z16: k(0),
            z39: k(0),
            ea: Default::default(),
            eb: Default::default(),
            a_nan: Default::default(),
            b_nan: Default::default(),
            a_inf: Default::default(),
            b_inf: Default::default(),
            a_zero: Default::default(),
            b_zero: Default::default(),
            big: Default::default(),
            little: Default::default(),
            ebig: Default::default(),
            dexp: Default::default(),
            mbig: Default::default(),
            msmall: Default::default(),
            mshift: Default::default(),
            sticky: Default::default(),
            malign: Default::default(),
            mag: Default::default(),
            n1: Default::default(),
            n2: Default::default(),
            n3: Default::default(),
            n4: Default::default(),
            n5: Default::default(),
            n6: Default::default(),
            l1: Default::default(),
            l2: Default::default(),
            l3: Default::default(),
            l4: Default::default(),
            l5: Default::default(),
            l6: Default::default(),
            mant: Default::default(),
            guard: Default::default(),
            rest: Default::default(),
            up: Default::default(),
            mround: Default::default(),
            carry: Default::default(),
            mfinal: Default::default(),
            eup: Default::default(),
            elim: Default::default(),
            efield: Default::default(),
            sgn: Default::default(),
        }
    }
}

impl Logic for AddF32 {
    #[hdl_gen]
    fn update(&mut self) {
        // Classes (a zero exponent is a zero: DAZ).
        self.ea.next = (self.a.val() >> self.sh23.val()) & self.ff32.val();
        self.eb.next = (self.b.val() >> self.sh23.val()) & self.ff32.val();
        self.a_nan.next = (self.ea.val() == self.ff32.val())
            & ((self.a.val() & self.frac_mask.val()) != self.z32.val());
        self.b_nan.next = (self.eb.val() == self.ff32.val())
            & ((self.b.val() & self.frac_mask.val()) != self.z32.val());
        self.a_inf.next = (self.ea.val() == self.ff32.val())
            & ((self.a.val() & self.frac_mask.val()) == self.z32.val());
        self.b_inf.next = (self.eb.val() == self.ff32.val())
            & ((self.b.val() & self.frac_mask.val()) == self.z32.val());
        self.a_zero.next = self.ea.val() == self.z32.val();
        self.b_zero.next = self.eb.val() == self.z32.val();

        // Order by magnitude and align the smaller operand; `sticky` keeps the bits shifted out.
        if (self.b.val() & self.mag31.val()) > (self.a.val() & self.mag31.val()) {
            self.big.next = self.b.val();
            self.little.next = self.a.val();
        } else {
            self.big.next = self.a.val();
            self.little.next = self.b.val();
        }
        self.ebig.next = (self.big.val() >> self.sh23.val()) & self.ff32.val();
        self.dexp.next =
            self.ebig.val() - ((self.little.val() >> self.sh23.val()) & self.ff32.val());
        comment!("verilator lint_off WIDTH");
        self.mbig.next = (bit_cast::<64, 32>(self.big.val() & self.frac_mask.val())
            << self.sh39.val())
            | self.hidden64.val();
        self.msmall.next = (bit_cast::<64, 32>(self.little.val() & self.frac_mask.val())
            << self.sh39.val())
            | self.hidden64.val();
        comment!("verilator lint_on WIDTH");
        if self.dexp.val() > self.d62.val() {
            self.mshift.next = self.z64.val();
            self.sticky.next = true;
        } else {
            self.mshift.next = self.msmall.val() >> self.dexp.val();
            // The bits shifted out, under a mask of the low `dexp` bits (a thermometer code).
            self.sticky.next =
                (self.msmall.val() & !(self.ones64.val() << self.dexp.val())) != self.z64.val();
        }
        if self.sticky.val() {
            self.malign.next = self.mshift.val() | self.one64.val();
        } else {
            self.malign.next = self.mshift.val();
        }
        if self.big.val().get_bit(31) == self.little.val().get_bit(31) {
            self.mag.next = self.mbig.val() + self.malign.val();
        } else {
            self.mag.next = self.mbig.val() - self.malign.val();
        }

        // Normalize: a priority encoder by halves (the leading one ends at bit 63).
        if self.mag.val().get_bits::<32>(32) == self.z32.val() {
            self.n1.next = self.mag.val() << self.sh32.val();
            self.l1.next = self.lz32.val();
        } else {
            self.n1.next = self.mag.val();
            self.l1.next = self.z32.val();
        }
        if self.n1.val().get_bits::<16>(48) == self.z16.val() {
            self.n2.next = self.n1.val() << self.sh16.val();
            self.l2.next = self.l1.val() + self.lz16.val();
        } else {
            self.n2.next = self.n1.val();
            self.l2.next = self.l1.val();
        }
        if self.n2.val().get_bits::<8>(56) == self.z8.val() {
            self.n3.next = self.n2.val() << self.sh8.val();
            self.l3.next = self.l2.val() + self.lz8.val();
        } else {
            self.n3.next = self.n2.val();
            self.l3.next = self.l2.val();
        }
        if self.n3.val().get_bits::<4>(60) == self.z4.val() {
            self.n4.next = self.n3.val() << self.sh4.val();
            self.l4.next = self.l3.val() + self.lz4.val();
        } else {
            self.n4.next = self.n3.val();
            self.l4.next = self.l3.val();
        }
        if self.n4.val().get_bits::<2>(62) == self.z2.val() {
            self.n5.next = self.n4.val() << self.sh2.val();
            self.l5.next = self.l4.val() + self.lz2.val();
        } else {
            self.n5.next = self.n4.val();
            self.l5.next = self.l4.val();
        }
        if self.n5.val().get_bits::<1>(63) == self.z1.val() {
            self.n6.next = self.n5.val() << self.sh1.val();
            self.l6.next = self.l5.val() + self.lz1.val();
        } else {
            self.n6.next = self.n5.val();
            self.l6.next = self.l5.val();
        }

        // Round: 24-bit significand `n6[63:40]`, guard bit `n6[39]`, the rest `n6[38:0]`.
        self.mant.next = self.n6.val().get_bits::<32>(32) >> self.sh8.val();
        self.guard.next = self.n6.val().get_bit(39);
        self.rest.next = self.n6.val().get_bits::<39>(0) != self.z39.val();
        self.up.next = self.round_en.val()
            & self.guard.val()
            & (self.rest.val() | self.mant.val().get_bit(0) | !self.ties_even.val());
        if self.up.val() {
            self.mround.next = self.mant.val() + self.one32.val();
        } else {
            self.mround.next = self.mant.val();
        }
        self.carry.next = self.mround.val().get_bit(24);
        if self.carry.val() {
            self.mfinal.next = self.mround.val() >> self.sh1.val();
        } else {
            self.mfinal.next = self.mround.val();
        }

        // Exponent: ebig + 1 - lz (+1 on a rounding carry), compared without going negative.
        if self.carry.val() {
            self.eup.next = self.ebig.val() + self.two32.val();
        } else {
            self.eup.next = self.ebig.val() + self.one32.val();
        }
        self.elim.next = self.l6.val() + self.e255.val();
        self.efield.next = (self.eup.val() - self.l6.val()) & self.ff32.val();
        self.sgn.next = self.big.val() & self.sign32.val();

        // Result.
        if self.a_nan.val()
            | self.b_nan.val()
            | (self.a_inf.val()
                & self.b_inf.val()
                & (self.a.val().get_bit(31) != self.b.val().get_bit(31)))
        {
            self.y.next = self.nan32.val();
        } else if self.a_inf.val() {
            self.y.next = self.a.val();
        } else if self.b_inf.val() {
            self.y.next = self.b.val();
        } else if self.a_zero.val() & self.b_zero.val() {
            self.y.next = self.a.val() & self.b.val() & self.sign32.val();
        } else if self.a_zero.val() {
            self.y.next = self.b.val();
        } else if self.b_zero.val() {
            self.y.next = self.a.val();
        } else if self.mag.val() == self.z64.val() {
            self.y.next = self.z32.val();
        } else if self.eup.val() >= self.elim.val() {
            self.y.next = self.sgn.val() | self.inf32.val();
        } else if self.eup.val() <= self.l6.val() {
            self.y.next = self.sgn.val();
        } else {
            self.y.next = self.sgn.val()
                | (self.efield.val() << self.sh23.val())
                | (self.mfinal.val() & self.frac_mask.val());
        }
    }
}

/// `y = AddF32(p, MulBf16(a, w))`: the bf16 PE's arithmetic.
#[derive(LogicBlock, Default)]
pub struct MacBf16 {
    pub a: Signal<In, Bits<16>>,
    pub w: Signal<In, Bits<16>>,
    pub p: Signal<In, Bits<32>>,
    pub y: Signal<Out, Bits<32>>,
    pub mul: MulBf16,
    pub add: AddF32,
}

impl Logic for MacBf16 {
    #[hdl_gen]
    fn update(&mut self) {
        self.mul.a.next = self.a.val();
        self.mul.w.next = self.w.val();
        self.add.a.next = self.p.val();
        self.add.b.next = self.mul.y.val();
        self.y.next = self.add.y.val();
    }
}
