//! PE-level tests in rust-hdl's own simulator (the clocked cell with its registers): double-buffered
//! weights, the row match and the arithmetic of both modes, checked step by step against the
//! independent reference of `arith_tests` (Rust's f32 and `half::bf16`, not `sim::numerics`).

use crate::arith_tests::{ref_add, ref_mul};
use crate::params::Mode;
use crate::pe::{PeBf16, PeI8};
use rust_hdl::prelude::*;
use std::sync::{Arc, Mutex};

/// One clock cycle of PE inputs.
#[derive(Clone, Copy)]
struct Step {
    w_valid: bool,
    w_row: u16,
    w_in: u16,
    sw: bool,
    a: u16,
    p: u32,
}

/// Runs `steps` through a PE of row `ROW` and returns `psum_out` after each clock edge.
fn run_pe(mode: Mode, steps: Vec<Step>) -> Vec<u32> {
    match mode {
        Mode::Int8 => run_pe_as::<PeI8>(PeI8::new(ROW as usize), steps),
        Mode::Bf16 => run_pe_as::<PeBf16>(PeBf16::new(ROW as usize), steps),
    }
}

/// The ports both PE kinds share (rust-hdl blocks are structs, so this is a macro-free adapter).
trait PePorts: Block {
    fn ports(&mut self) -> PeRefs<'_>;
    fn clock_high(&self) -> bool;
}

struct PeRefs<'a> {
    clock: &'a mut Signal<In, Clock>,
    a_in: &'a mut Signal<In, Bits<16>>,
    sw_in: &'a mut Signal<In, Bit>,
    psum_in: &'a mut Signal<In, Bits<32>>,
    w_in: &'a mut Signal<In, Bits<16>>,
    w_valid: &'a mut Signal<In, Bit>,
    w_row: &'a mut Signal<In, Bits<16>>,
    psum_out: &'a mut Signal<Out, Bits<32>>,
}

macro_rules! pe_ports {
    ($t:ty) => {
        impl PePorts for $t {
            fn ports(&mut self) -> PeRefs<'_> {
                PeRefs {
                    clock: &mut self.clock,
                    a_in: &mut self.a_in,
                    sw_in: &mut self.sw_in,
                    psum_in: &mut self.psum_in,
                    w_in: &mut self.w_in,
                    w_valid: &mut self.w_valid,
                    w_row: &mut self.w_row,
                    psum_out: &mut self.psum_out,
                }
            }
            fn clock_high(&self) -> bool {
                self.clock.val().clk
            }
        }
    };
}
pe_ports!(PeI8);
pe_ports!(PeBf16);

fn run_pe_as<P: PePorts + Send + 'static>(mut uut: P, steps: Vec<Step>) -> Vec<u32> {
    let out = Arc::new(Mutex::new(Vec::new()));
    let out2 = out.clone();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<P>| {
        let c = x.ports().clock;
        c.next = !c.val()
    });
    sim.add_testbench(move |mut sim: Sim<P>| {
        let mut x = sim.init()?;
        for s in &steps {
            x = sim.watch(|x| !x.clock_high(), x)?;
            {
                let p = x.ports();
                p.w_valid.next = s.w_valid;
                p.w_row.next = (s.w_row as LiteralType).into();
                p.w_in.next = (s.w_in as LiteralType).into();
                p.sw_in.next = s.sw;
                p.a_in.next = (s.a as LiteralType).into();
                p.psum_in.next = (s.p as LiteralType).into();
            }
            x = sim.watch(|x| x.clock_high(), x)?;
            x = sim.wait(1, x)?;
            let v: LiteralType = x.ports().psum_out.val().into();
            out2.lock().unwrap().push(v as u32);
        }
        sim.done(x)
    });
    {
        let p = uut.ports();
        p.clock.connect();
        p.a_in.connect();
        p.sw_in.connect();
        p.psum_in.connect();
        p.w_in.connect();
        p.w_valid.connect();
        p.w_row.connect();
    }
    uut.connect_all();
    sim.run(Box::new(uut), 1_000_000)
        .expect("rust-hdl simulation");
    let v = out.lock().unwrap().clone();
    v
}

const ROW: u16 = 3;

/// `(w1, w2, [(a, psum); 3])`: the two weight tiles and three operand pairs of one check.
type Case = (u16, u16, [(u16, u32); 3]);

fn load(w: u16) -> Step {
    Step {
        w_valid: true,
        w_row: ROW,
        w_in: w,
        sw: false,
        a: 0,
        p: 0,
    }
}

/// Checks double buffering for weights `w1`, `w2` and operands, against `mac`.
fn check(mode: Mode, w1: u16, w2: u16, ops: [(u16, u32); 3], mac: impl Fn(u32, u16, u16) -> u32) {
    let [(a1, p1), (a2, p2), (a3, p3)] = ops;
    let steps = vec![
        load(w1),
        // Swap w1 in and compute with it.
        Step {
            w_valid: false,
            w_row: 0,
            w_in: 0,
            sw: true,
            a: a1,
            p: p1,
        },
        // The next tile loads while the current one computes: the shadow changes, not the weight.
        Step {
            w_valid: true,
            w_row: ROW,
            w_in: w2,
            sw: false,
            a: a2,
            p: p2,
        },
        // A write for another row is ignored; the swap brings in w2.
        Step {
            w_valid: true,
            w_row: ROW + 1,
            w_in: 0x1234,
            sw: true,
            a: a3,
            p: p3,
        },
    ];
    let got = run_pe(mode, steps);
    let want = [mac(p1, a1, w1), mac(p2, a2, w1), mac(p3, a3, w2)];
    assert_eq!(
        &got[1..],
        &want,
        "mode {mode:?} w1={w1:#x} w2={w2:#x} ops={ops:?}"
    );
}

#[test]
fn pe_int8_double_buffer_and_mac() {
    let mac = |p: u32, a: u16, w: u16| {
        (p as i32).wrapping_add(a as u8 as i8 as i32 * w as u8 as i8 as i32) as u32
    };
    let cases: [Case; 3] = [
        (
            0x80,
            0x7f,
            [(0x80, 0), (0x7f, 0x7fff_ffff), (0x80, 0x8000_0000)],
        ),
        (0xff, 0x02, [(0x01, 5), (0xfe, 0xffff_fff0), (0x33, 1)]),
        (0x00, 0x80, [(0x80, 7), (0x80, 7), (0x80, 7)]),
    ];
    for (w1, w2, ops) in cases {
        check(Mode::Int8, w1, w2, ops, mac);
    }
}

#[test]
fn pe_bf16_double_buffer_and_mac() {
    let mac = |p: u32, a: u16, w: u16| ref_add(p, ref_mul(a, w));
    // 1.5, -2, +inf, NaN, -0, a subnormal (DAZ), the largest and a tiny normal bf16.
    let cases: [Case; 4] = [
        (
            0x3fc0,
            0xc000,
            [(0x3fc0, 0), (0x4000, 0x3f80_0000), (0x0001, 0x8000_0000)],
        ),
        (
            0x7f80,
            0x0000,
            [(0x3f80, 0), (0x0000, 0), (0x3f80, 0x7f80_0000)],
        ),
        (
            0x7f7f,
            0x0080,
            [(0x7f7f, 0), (0x0080, 0), (0x8000, 0x8000_0000)],
        ),
        (
            0x7fc1,
            0x3f80,
            [(0x3f80, 0), (0x3f80, 0xff80_0000), (0xbf80, 0x3f80_0000)],
        ),
    ];
    for (w1, w2, ops) in cases {
        check(Mode::Bf16, w1, w2, ops, mac);
    }
}
