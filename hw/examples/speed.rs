//! Development helper for `docs/rtl.md`'s speed table: `speed R C A int8|bf16 OPS SEED OUTDIR`.
//! Builds (or reuses) the Verilator model, writes one random sequence of OPS operations as a
//! stimulus file into OUTDIR, times the simulator's MXU model on it (best of 5, in-process), and
//! prints the model binary, so the RTL can be timed on the same stimulus with `/usr/bin/time`.
use hw::cosim::{self, SimReference};
use hw::ops::{self, Rng};
use std::time::Instant;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let p = hw::MxuParams {
        rows: a[1].parse().unwrap(),
        cols: a[2].parse().unwrap(),
        acc_rows: a[3].parse().unwrap(),
        mode: if a[4] == "bf16" {
            hw::Mode::Bf16
        } else {
            hw::Mode::Int8
        },
    };
    let seq = ops::random_sequence(
        &p,
        &mut Rng::new(a[6].parse().unwrap()),
        a[5].parse().unwrap(),
    );
    let mut best = f64::MAX;
    let mut e = None;
    for _ in 0..5 {
        let mut r = SimReference::new(&p);
        let t = Instant::now();
        e = Some(cosim::expect(&p, &seq, &mut r).unwrap());
        best = best.min(t.elapsed().as_secs_f64());
    }
    let e = e.unwrap();
    let stim = std::path::Path::new(&a[7]).join(format!("{}.stim", p.tag()));
    std::fs::write(&stim, cosim::stimulus(&seq, &e)).unwrap();
    let m = hw::flow::VerilatorModel::build(&p).unwrap();
    println!(
        "{} cycles {} reference_s {:.6} bin {} stim {}",
        p.tag(),
        e.cycles,
        best,
        m.bin.display(),
        stim.display()
    );
}
