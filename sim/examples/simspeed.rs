//! Measures simulator speed on an assembly program without building the CLI:
//! `cargo run --release -p sim --example simspeed -- PROG.s ARCH [--timing-only] [--races off]`.
//! Prints simulated cycles, events, host CPU time and simulated cycles per host second.

use sim::{RaceCheck, SimOptions, System};
use std::io::Write;

fn cpu_seconds() -> f64 {
    // utime + stime of this process, from /proc (Linux); wall clock elsewhere.
    if let Ok(s) = std::fs::read_to_string("/proc/self/stat") {
        let f: Vec<&str> = s
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        if f.len() > 13 {
            let ticks: f64 =
                f[11].parse::<f64>().unwrap_or(0.0) + f[12].parse::<f64>().unwrap_or(0.0);
            return ticks / 100.0;
        }
    }
    0.0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: simspeed PROG.s ARCH [--timing-only] [--races error|warn|off]");
        std::process::exit(2);
    }
    let text = std::fs::read_to_string(&args[1]).expect("read program");
    let prog = isa::asm::assemble(&text).unwrap_or_else(|e| panic!("{}", e.render(&args[1])));
    let arch = arch::ArchConfig::preset(&args[2]).expect("arch preset");
    let functional = !args.iter().any(|a| a == "--timing-only");
    let races = match args
        .iter()
        .position(|a| a == "--races")
        .map(|i| args.get(i + 1).map(String::as_str))
    {
        None | Some(Some("error")) => RaceCheck::Error,
        Some(Some("warn")) => RaceCheck::Warn,
        Some(Some("off")) => RaceCheck::Off,
        Some(x) => {
            eprintln!("--races takes error, warn or off (got {x:?})");
            std::process::exit(2);
        }
    };
    let mut sys = System::new(
        &arch,
        prog,
        1,
        SimOptions {
            functional,
            races,
            ..Default::default()
        },
    )
    .expect("system");
    let (c0, w0) = (cpu_seconds(), std::time::Instant::now());
    let r = sys.run().expect("run");
    let (cpu, wall) = (cpu_seconds() - c0, w0.elapsed().as_secs_f64());
    let mut out = std::io::stdout().lock();
    // Ignore write errors (e.g. a closed pipe).
    let _ = writeln!(
        out,
        "cycles {} events {} cpu {:.3}s wall {:.3}s -> {:.3e} cycles/cpu-s ({:.3e} cycles/wall-s)",
        r.cycles,
        r.events,
        cpu,
        wall,
        r.cycles as f64 / cpu.max(0.01),
        r.cycles as f64 / wall
    );
    for e in sys
        .stats()
        .iter()
        .filter(|e| e.decl.name.contains(".sim.events."))
    {
        let _ = writeln!(out, "  {} {}", e.decl.name, e.value);
    }
}
