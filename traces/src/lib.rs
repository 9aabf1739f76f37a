//! Chrome/Perfetto trace JSON from the simulator's trace events ([`sim::trace`]).
//!
//! The simulator produces [`OwnedTraceEvent`]s (one span per operation of a unit, with the bytes
//! it moved); this crate owns the file format:
//!
//! * **Unit tracks**: one process per chip (`chip0`, ...), one thread per unit (`core0.mxu0`,
//!   `core0.dma`, `ici.x+`, ...). A unit whose operations overlap in time (pipelined MXU work,
//!   several DMA copies in flight) gets lanes (`core0.dma #1`, ...) so that slices on one track
//!   never overlap: each slice goes to the first lane free at its start, in start order.
//!   Slices (`ph: "X"`) are named by instruction, with `args.hlo` the HLO op, `args.pc`, and the
//!   exact `args.cycle` / `args.cycles` behind the rounded microseconds.
//! * **Counter tracks** (`ph: "C"`), per chip, sampled every [`ChromeOptions::counter_interval`]
//!   cycles: `HBM bandwidth` and `VMEM bandwidth` (GB/s: the bytes of the operations active in
//!   the interval, each operation's bytes spread evenly over its span) and `MXU utilization`
//!   (percent: cycles the chip's MXUs have an operation in flight, over interval × MXUs). A
//!   sample is written only when its value differs from the previous one (a counter holds its
//!   value until the next sample), and a last sample of 0 closes each counter at the end.
//!   When the program carries its memory plan ([`ChromeOptions::vmem_live`], from the regions'
//!   `live` ranges) each core also gets `coreN VMEM occupancy` (MiB): the bytes the plan holds
//!   allocated at the instruction the core's units (not its sequencer) last started, the largest
//!   such value in each interval (an interval in which no unit starts holds the previous value).
//! * **Time**: `ts` and `dur` are simulated microseconds at the preset's clock
//!   ([`ChromeOptions::clock_mhz`]), rounded to the picosecond; a slice's `dur` is the difference
//!   of its rounded end and start, so adjacent slices stay adjacent.
//! * **Aggregation** ([`ChromeOptions::granularity`] `G` cycles, 0 = off): on each track, slices
//!   of `G` cycles or more are written as they are; consecutive shorter slices whose starts fall
//!   in the same window `[kG, (k+1)G)` (with no long slice between them) are merged into one
//!   slice from the first start to the last end, named `N × mnemonic` (or `N ops` when the
//!   mnemonics differ), with `args.count`, `args.busy_cycles` (the sum of the merged slices'
//!   cycles), `args.ops` and `args.hlo` (counts per mnemonic and per HLO op). A window holding a
//!   single short slice keeps it as it is. A track of a run of `T` cycles thus has at most about
//!   `3·T/G` slices whatever the number of operations. [`auto_granularity`] picks the smallest
//!   power of two that keeps a trace under a slice budget.
//!
//! Output is deterministic: the same events and options give the same bytes.

use sim::trace::OwnedTraceEvent;
use std::collections::BTreeMap;
use std::io::{self, Write};

/// How to write a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct ChromeOptions {
    /// Core clock (MHz) that converts cycles to microseconds.
    pub clock_mhz: f64,
    /// Slices shorter than this many cycles are merged per track and window (0: never).
    pub granularity: u64,
    /// Cycles per counter sample (0: `max(granularity, ⌈end / 1000⌉)`, at least 1).
    pub counter_interval: u64,
    /// MXUs per chip (the utilization's denominator); 0: the MXU tracks of each chip that
    /// appear in the trace.
    pub mxus_per_chip: u32,
    /// VMEM bytes the program's plan holds allocated at each instruction
    /// (`isa::Program::live_bytes_by_pc`); empty: no occupancy counters.
    pub vmem_live: Vec<u64>,
}

impl Default for ChromeOptions {
    fn default() -> Self {
        ChromeOptions {
            clock_mhz: 1000.0,
            granularity: 0,
            counter_interval: 0,
            mxus_per_chip: 0,
            vmem_live: Vec::new(),
        }
    }
}

/// Most samples per counter track (each is a number per interval held in memory).
pub const MAX_COUNTER_SAMPLES: u64 = 10_000_000;

/// What [`write_chrome_json`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// Slices received.
    pub slices_in: usize,
    /// Slices written (after aggregation).
    pub slices_out: usize,
    /// Of those, aggregate slices.
    pub aggregates: usize,
    /// Counter samples written.
    pub counter_samples: usize,
    /// Tracks (threads) written.
    pub tracks: usize,
    /// Counter interval used, in cycles.
    pub counter_interval: u64,
}

/// One track: a lane of one unit of one chip, its slices (event indices) in start order.
struct Track<'e> {
    chip: u32,
    unit: &'e str,
    lane: usize,
    slices: Vec<usize>,
}

/// Lays every unit's events on lanes so that slices on one lane never overlap; tracks are
/// ordered by chip, unit, lane.
fn tracks(events: &[OwnedTraceEvent]) -> Vec<Track<'_>> {
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&events[a], &events[b]);
        (x.chip, &x.unit, x.start, x.end, a).cmp(&(y.chip, &y.unit, y.start, y.end, b))
    });
    let mut out: Vec<Track<'_>> = Vec::new();
    // Lanes of the current unit: (track index, end of its last slice).
    let mut lanes: Vec<(usize, u64)> = Vec::new();
    let mut cur: Option<(u32, &str)> = None;
    for k in order {
        let e = &events[k];
        if cur != Some((e.chip, e.unit.as_str())) {
            cur = Some((e.chip, e.unit.as_str()));
            lanes.clear();
        }
        let t = match lanes.iter_mut().find(|(_, end)| *end <= e.start) {
            Some(l) => {
                l.1 = e.end;
                l.0
            }
            None => {
                out.push(Track {
                    chip: e.chip,
                    unit: &e.unit,
                    lane: lanes.len(),
                    slices: Vec::new(),
                });
                lanes.push((out.len() - 1, e.end));
                out.len() - 1
            }
        };
        out[t].slices.push(k);
    }
    out
}

/// A slice to write: one event, or an aggregate of several.
enum Out {
    One(usize),
    Many(Vec<usize>),
}

/// The slices of one track after aggregation at granularity `g`.
fn aggregate(events: &[OwnedTraceEvent], slices: &[usize], g: u64) -> Vec<Out> {
    if g == 0 {
        return slices.iter().map(|&k| Out::One(k)).collect();
    }
    let mut out = Vec::new();
    let mut group: Vec<usize> = Vec::new();
    let flush = |group: &mut Vec<usize>, out: &mut Vec<Out>| match group.len() {
        0 => {}
        1 => out.push(Out::One(group[0])),
        _ => out.push(Out::Many(std::mem::take(group))),
    };
    for &k in slices {
        let e = &events[k];
        if e.end - e.start >= g {
            flush(&mut group, &mut out);
            group.clear();
            out.push(Out::One(k));
            continue;
        }
        if let Some(&first) = group.first() {
            if events[first].start / g != e.start / g {
                flush(&mut group, &mut out);
                group.clear();
            }
        }
        group.push(k);
    }
    flush(&mut group, &mut out);
    out
}

/// Slices a trace of `events` has at granularity `g` (without writing it).
pub fn slices_at(events: &[OwnedTraceEvent], g: u64) -> usize {
    tracks(events)
        .iter()
        .map(|t| aggregate(events, &t.slices, g).len())
        .sum()
}

/// The granularity for at most `max_slices` slices: 0 if the events fit as they are, else the
/// smallest power of two of cycles whose aggregation fits (or the run's length if none does).
pub fn auto_granularity(events: &[OwnedTraceEvent], max_slices: usize) -> u64 {
    if events.len() <= max_slices {
        return 0;
    }
    let ts = tracks(events);
    let end = events.iter().map(|e| e.end).max().unwrap_or(0).max(1);
    let mut g = 1u64;
    while g < end {
        let n: usize = ts
            .iter()
            .map(|t| aggregate(events, &t.slices, g).len())
            .sum();
        if n <= max_slices {
            return g;
        }
        g *= 2;
    }
    g
}

/// Cycles → picoseconds at `mhz` (rounded).
fn ps(cycles: u64, mhz: f64) -> u64 {
    (cycles as f64 * 1e6 / mhz).round() as u64
}

/// Picoseconds as microseconds, exactly (a JSON number).
fn us(ps: u64) -> String {
    format!("{}.{:06}", ps / 1_000_000, ps % 1_000_000)
}

/// A JSON string literal.
fn jstr(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// Writes `events` as Chrome trace-event JSON (see the crate docs).
pub fn write_chrome_json<W: Write>(
    events: &[OwnedTraceEvent],
    opts: &ChromeOptions,
    w: W,
) -> io::Result<Written> {
    if !(opts.clock_mhz.is_finite() && opts.clock_mhz > 0.0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("clock must be positive, got {} MHz", opts.clock_mhz),
        ));
    }
    let mut w = io::BufWriter::new(w);
    let mhz = opts.clock_mhz;
    let end = events.iter().map(|e| e.end).max().unwrap_or(0);
    let interval = if opts.counter_interval > 0 {
        opts.counter_interval
    } else {
        opts.granularity.max(end.div_ceil(1000)).max(1)
    };
    if end.div_ceil(interval) > MAX_COUNTER_SAMPLES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a counter interval of {interval} cycles gives {} samples per counter over the \
                 run's {end} cycles, more than {MAX_COUNTER_SAMPLES}: choose a longer interval",
                end.div_ceil(interval)
            ),
        ));
    }
    let mut written = Written {
        slices_in: events.len(),
        counter_interval: interval,
        ..Written::default()
    };
    let ts = tracks(events);
    written.tracks = ts.len();
    w.write_all(b"{\"traceEvents\":[")?;
    let mut first = true;
    let mut sep = |w: &mut io::BufWriter<W>| -> io::Result<()> {
        if !first {
            w.write_all(b",\n")?;
        }
        first = false;
        Ok(())
    };
    let chips: std::collections::BTreeSet<u32> = events.iter().map(|e| e.chip).collect();
    for &c in &chips {
        sep(&mut w)?;
        write!(
            w,
            "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{c},\"args\":{{\"name\":\"chip{c}\"}}}}"
        )?;
    }
    for (tid, t) in ts.iter().enumerate() {
        let name = if t.lane == 0 {
            t.unit.to_string()
        } else {
            format!("{} #{}", t.unit, t.lane)
        };
        sep(&mut w)?;
        write!(
            w,
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
            t.chip,
            jstr(&name)
        )?;
    }
    for (tid, t) in ts.iter().enumerate() {
        let cat = jstr(t.unit);
        for o in aggregate(events, &t.slices, opts.granularity) {
            let (s, e, name, args) = match o {
                Out::One(k) => {
                    let e = &events[k];
                    let mut a = serde_json::Map::new();
                    if let Some(s) = &e.symbol {
                        a.insert("hlo".into(), s.as_str().into());
                    }
                    if let Some(pc) = e.pc {
                        a.insert("pc".into(), pc.into());
                    }
                    a.insert("cycle".into(), e.start.into());
                    a.insert("cycles".into(), (e.end - e.start).into());
                    if e.hbm_bytes > 0 {
                        a.insert("hbm_bytes".into(), e.hbm_bytes.into());
                    }
                    if e.vmem_bytes > 0 {
                        a.insert("vmem_bytes".into(), e.vmem_bytes.into());
                    }
                    (e.start, e.end, e.name.clone(), a)
                }
                Out::Many(ks) => {
                    written.aggregates += 1;
                    let mut ops: BTreeMap<&str, u64> = BTreeMap::new();
                    let mut hlo: BTreeMap<&str, u64> = BTreeMap::new();
                    let (mut busy, mut hbm, mut vmem) = (0u64, 0u64, 0u64);
                    let s = events[ks[0]].start;
                    let mut e_max = s;
                    for &k in &ks {
                        let e = &events[k];
                        *ops.entry(&e.name).or_default() += 1;
                        if let Some(h) = &e.symbol {
                            *hlo.entry(h).or_default() += 1;
                        }
                        busy += e.end - e.start;
                        hbm += e.hbm_bytes;
                        vmem += e.vmem_bytes;
                        e_max = e_max.max(e.end);
                    }
                    let name = if ops.len() == 1 {
                        format!("{} × {}", ks.len(), events[ks[0]].name)
                    } else {
                        format!("{} ops", ks.len())
                    };
                    let mut a = serde_json::Map::new();
                    a.insert("count".into(), ks.len().into());
                    a.insert("busy_cycles".into(), busy.into());
                    a.insert("cycle".into(), s.into());
                    a.insert("cycles".into(), (e_max - s).into());
                    a.insert(
                        "ops".into(),
                        ops.iter()
                            .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
                            .collect::<serde_json::Map<_, _>>()
                            .into(),
                    );
                    if !hlo.is_empty() {
                        a.insert(
                            "hlo".into(),
                            hlo.iter()
                                .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
                                .collect::<serde_json::Map<_, _>>()
                                .into(),
                        );
                    }
                    if hbm > 0 {
                        a.insert("hbm_bytes".into(), hbm.into());
                    }
                    if vmem > 0 {
                        a.insert("vmem_bytes".into(), vmem.into());
                    }
                    (s, e_max, name, a)
                }
            };
            written.slices_out += 1;
            let (p0, p1) = (ps(s, mhz), ps(e, mhz));
            sep(&mut w)?;
            write!(
                w,
                "{{\"ph\":\"X\",\"name\":{},\"cat\":{cat},\"pid\":{},\"tid\":{tid},\"ts\":{},\"dur\":{},\"args\":{}}}",
                jstr(&name),
                t.chip,
                us(p0),
                us(p1 - p0),
                serde_json::Value::Object(args)
            )?;
        }
    }
    for &c in &chips {
        for (name, key, values) in counters(events, &ts, c, end, interval, opts, mhz) {
            let mut last: Option<String> = None;
            let mut emit = |w: &mut io::BufWriter<W>,
                            cycle: u64,
                            v: String,
                            written: &mut Written|
             -> io::Result<()> {
                if last.as_deref() == Some(v.as_str()) {
                    return Ok(());
                }
                sep(w)?;
                write!(
                    w,
                    "{{\"ph\":\"C\",\"name\":{},\"pid\":{c},\"ts\":{},\"args\":{{{}:{v}}}}}",
                    jstr(&name),
                    us(ps(cycle, mhz)),
                    jstr(key)
                )?;
                written.counter_samples += 1;
                last = Some(v);
                Ok(())
            };
            for (b, v) in values.iter().enumerate() {
                emit(&mut w, b as u64 * interval, format!("{v:.3}"), &mut written)?;
            }
            emit(&mut w, end, format!("{:.3}", 0.0), &mut written)?;
        }
    }
    write!(
        w,
        "],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"time_unit\":\"us\",\"clock_mhz\":{},\
         \"granularity_cycles\":{},\"counter_interval_cycles\":{interval},\"slices\":{},\
         \"slices_written\":{},\"end_cycle\":{end}}}}}",
        serde_json::Value::from(mhz),
        opts.granularity,
        written.slices_in,
        written.slices_out
    )?;
    w.flush()?;
    Ok(written)
}

/// Whether a unit path names an MXU (`core0.mxu1`).
fn is_mxu(unit: &str) -> bool {
    let last = unit.rsplit('.').next().unwrap_or(unit);
    last.strip_prefix("mxu")
        .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
}

/// Adds `amount`, spread evenly over cycles `[s, e)`, to the bins of `interval` cycles (all of
/// it to `s`'s bin when the span is empty).
fn spread(bins: &mut [f64], s: u64, e: u64, amount: f64, interval: u64) {
    if bins.is_empty() {
        return;
    }
    let last = bins.len() - 1;
    if e <= s {
        bins[((s / interval) as usize).min(last)] += amount;
        return;
    }
    let per = amount / (e - s) as f64;
    let mut t = s;
    while t < e {
        let b = t / interval;
        let b_end = ((b + 1) * interval).min(e);
        bins[(b as usize).min(last)] += per * (b_end - t) as f64;
        t = b_end;
    }
}

type Counter = (String, &'static str, Vec<f64>);

/// The counter tracks of chip `c`: (name, unit key, value per interval).
fn counters(
    events: &[OwnedTraceEvent],
    ts: &[Track<'_>],
    c: u32,
    end: u64,
    interval: u64,
    opts: &ChromeOptions,
    mhz: f64,
) -> Vec<Counter> {
    let n = end.div_ceil(interval) as usize;
    let (mut hbm, mut vmem, mut mxu) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    for e in events.iter().filter(|e| e.chip == c) {
        spread(&mut hbm, e.start, e.end, e.hbm_bytes as f64, interval);
        spread(&mut vmem, e.start, e.end, e.vmem_bytes as f64, interval);
    }
    // MXU busy: the union of each MXU's operations (its lanes merged), per interval.
    let mut units: BTreeMap<&str, Vec<(u64, u64)>> = BTreeMap::new();
    for t in ts.iter().filter(|t| t.chip == c && is_mxu(t.unit)) {
        let v = units.entry(t.unit).or_default();
        v.extend(t.slices.iter().map(|&k| (events[k].start, events[k].end)));
    }
    for spans in units.values_mut() {
        spans.sort_unstable();
        let mut cur: Option<(u64, u64)> = None;
        for &(s, e) in spans.iter() {
            match &mut cur {
                Some((_, ce)) if s <= *ce => *ce = (*ce).max(e),
                _ => {
                    if let Some((a, b)) = cur {
                        spread(&mut mxu, a, b, (b - a) as f64, interval);
                    }
                    cur = Some((s, e));
                }
            }
        }
        if let Some((a, b)) = cur {
            spread(&mut mxu, a, b, (b - a) as f64, interval);
        }
    }
    let mxus = if opts.mxus_per_chip > 0 {
        opts.mxus_per_chip as f64
    } else {
        units.len().max(1) as f64
    };
    let len = |b: usize| {
        let s = b as u64 * interval;
        ((s + interval).min(end) - s).max(1) as f64
    };
    // Bytes per cycle × MHz = MB/s; / 1000 = GB/s.
    let gbps = |v: Vec<f64>| -> Vec<f64> {
        v.iter()
            .enumerate()
            .map(|(b, x)| x / len(b) * mhz / 1000.0)
            .collect()
    };
    let util: Vec<f64> = mxu
        .iter()
        .enumerate()
        .map(|(b, x)| 100.0 * x / (len(b) * mxus))
        .collect();
    let mut out = vec![
        ("HBM bandwidth".to_string(), "GB/s", gbps(hbm)),
        ("VMEM bandwidth".to_string(), "GB/s", gbps(vmem)),
        ("MXU utilization".to_string(), "busy %", util),
    ];
    if !opts.vmem_live.is_empty() {
        // Per core: the plan's live bytes at each unit operation's start, the largest per
        // interval, held through intervals where nothing starts.
        let mut cores: BTreeMap<u32, Vec<Option<f64>>> = BTreeMap::new();
        for e in events.iter().filter(|e| e.chip == c) {
            // Unit work only: a sequencer that branches away at once (an idle core) runs
            // instructions of another core's plan.
            let (Some(pc), Some(core)) = (e.pc, core_of(&e.unit)) else {
                continue;
            };
            if e.unit.ends_with(".seq") {
                continue;
            }
            let Some(&bytes) = opts.vmem_live.get(pc as usize) else {
                continue;
            };
            let v = cores.entry(core).or_insert_with(|| vec![None; n]);
            let b = ((e.start / interval) as usize).min(n.saturating_sub(1));
            let mib = bytes as f64 / (1024.0 * 1024.0);
            v[b] = Some(v[b].map_or(mib, |x: f64| x.max(mib)));
        }
        for (core, v) in cores {
            let mut held = 0.0;
            let vals = v
                .into_iter()
                .map(|x| {
                    if let Some(x) = x {
                        held = x;
                    }
                    held
                })
                .collect();
            out.push((format!("core{core} VMEM occupancy"), "MiB", vals));
        }
    }
    out
}

/// The core of a unit path `coreN.…`.
fn core_of(unit: &str) -> Option<u32> {
    unit.strip_prefix("core")?.split('.').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(unit: &str, name: &str, start: u64, end: u64) -> OwnedTraceEvent {
        OwnedTraceEvent {
            chip: 0,
            unit: unit.into(),
            name: name.into(),
            symbol: Some("dot.1".into()),
            pc: Some(3),
            start,
            end,
            hbm_bytes: 0,
            vmem_bytes: 0,
        }
    }

    fn write(events: &[OwnedTraceEvent], opts: &ChromeOptions) -> (serde_json::Value, Written) {
        let mut buf = Vec::new();
        let w = write_chrome_json(events, opts, &mut buf).unwrap();
        (serde_json::from_slice(&buf).unwrap(), w)
    }

    #[test]
    fn overlapping_slices_go_to_lanes() {
        let e = vec![
            ev("core0.dma", "dma.copy", 0, 10),
            ev("core0.dma", "dma.copy", 5, 12),
            ev("core0.dma", "dma.copy", 10, 11),
        ];
        let (v, w) = write(&e, &ChromeOptions::default());
        assert_eq!(w.tracks, 2);
        let names: Vec<&str> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["args"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["core0.dma", "core0.dma #1"]);
    }

    #[test]
    fn aggregation_merges_short_slices_per_window_and_keeps_busy_cycles() {
        // 100 slices of 3 cycles every 5 cycles, then one long slice.
        let mut e: Vec<_> = (0..100)
            .map(|i| {
                ev(
                    "core0.vpu",
                    if i % 2 == 0 { "vpu.add" } else { "vpu.mul" },
                    5 * i,
                    5 * i + 3,
                )
            })
            .collect();
        e.push(ev("core0.vpu", "vpu.exp", 500, 700));
        let opts = ChromeOptions {
            granularity: 64,
            ..ChromeOptions::default()
        };
        let (v, w) = write(&e, &opts);
        let xs: Vec<&serde_json::Value> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect();
        // Windows of 64 cycles over [0, 500): 8 aggregates, plus the long slice.
        assert_eq!(xs.len(), 9, "{xs:?}");
        assert_eq!(w.aggregates, 8);
        let busy: u64 = xs
            .iter()
            .map(|x| {
                x["args"]["busy_cycles"]
                    .as_u64()
                    .unwrap_or_else(|| x["args"]["cycles"].as_u64().unwrap())
            })
            .sum();
        assert_eq!(busy, 100 * 3 + 200);
        assert_eq!(xs[0]["args"]["count"], 13);
        assert_eq!(xs[0]["name"], "13 ops");
        assert_eq!(xs[8]["name"], "vpu.exp");
        // No overlap on the track.
        let mut prev = 0.0;
        for x in &xs {
            let ts = x["ts"].as_f64().unwrap();
            assert!(ts >= prev - 1e-9, "{x}");
            prev = ts + x["dur"].as_f64().unwrap();
        }
        assert_eq!(slices_at(&e, 64), 9);
        assert_eq!(auto_granularity(&e, 10), 64);
        assert_eq!(auto_granularity(&e, 1000), 0);
    }

    #[test]
    fn counters_report_bandwidth_and_utilization_in_simulated_time() {
        let mut d = ev("core0.dma", "dma.copy", 0, 100);
        d.hbm_bytes = 1000;
        d.vmem_bytes = 500;
        let e = vec![
            d,
            ev("core0.mxu0", "mxu.matmul", 0, 50),
            ev("core0.mxu0", "mxu.matmul", 25, 75),
        ];
        let opts = ChromeOptions {
            clock_mhz: 500.0,
            counter_interval: 100,
            mxus_per_chip: 2,
            ..ChromeOptions::default()
        };
        let (v, _) = write(&e, &opts);
        let cs: Vec<&serde_json::Value> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "C")
            .collect();
        let get = |name: &str| -> Vec<(f64, f64)> {
            cs.iter()
                .filter(|c| c["name"] == name)
                .map(|c| {
                    let a = c["args"].as_object().unwrap();
                    (
                        c["ts"].as_f64().unwrap(),
                        a.values().next().unwrap().as_f64().unwrap(),
                    )
                })
                .collect()
        };
        // 10 bytes per cycle at 500 MHz = 5 GB/s over 0.2 µs, then 0 at the end.
        assert_eq!(get("HBM bandwidth"), [(0.0, 5.0), (0.2, 0.0)]);
        assert_eq!(get("VMEM bandwidth"), [(0.0, 2.5), (0.2, 0.0)]);
        // One of two MXUs busy 75 of 100 cycles.
        assert_eq!(get("MXU utilization"), [(0.0, 37.5), (0.2, 0.0)]);
    }

    #[test]
    fn vmem_occupancy_follows_the_plan_at_each_started_instruction() {
        let mut e = vec![
            ev("core0.dma", "dma.copy", 0, 40),
            ev("core0.vpu", "vpu.add", 120, 130),
            ev("core0.vpu", "vpu.add", 150, 160),
            ev("core1.seq", "halt", 0, 1),
            ev("core1.mxu0", "mxu.matmul", 210, 300),
        ];
        e[0].pc = Some(0);
        e[1].pc = Some(1);
        e[2].pc = Some(2);
        e[3].pc = Some(2);
        e[4].pc = Some(3);
        let mib = 1024 * 1024;
        let opts = ChromeOptions {
            counter_interval: 100,
            vmem_live: vec![mib, 3 * mib, 2 * mib, mib / 2],
            ..ChromeOptions::default()
        };
        let (v, _) = write(&e, &opts);
        let get = |name: &str| -> Vec<f64> {
            v["traceEvents"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["ph"] == "C" && c["name"] == name)
                .map(|c| c["args"]["MiB"].as_f64().unwrap())
                .collect()
        };
        // Interval 0: pc 0 (1 MiB); interval 1: the larger of pcs 1 and 2; then held; 0 at the end.
        assert_eq!(get("core0 VMEM occupancy"), [1.0, 3.0, 0.0]);
        // core1's sequencer event is not counted; its MXU starts in interval 2.
        assert_eq!(get("core1 VMEM occupancy"), [0.0, 0.5, 0.0]);
        // No plan, no occupancy counters.
        let (v, _) = write(&e, &ChromeOptions::default());
        assert!(!v.to_string().contains("occupancy"));
    }

    #[test]
    fn output_is_deterministic_and_bad_clock_is_an_error() {
        let e = vec![
            ev("core0.vpu", "vpu.add", 0, 3),
            ev("core0.vpu", "vpu.add", 3, 9),
        ];
        let a = write(&e, &ChromeOptions::default());
        let b = write(&e, &ChromeOptions::default());
        assert_eq!(a, b);
        let bad = ChromeOptions {
            clock_mhz: 0.0,
            ..ChromeOptions::default()
        };
        assert!(write_chrome_json(&e, &bad, Vec::new()).is_err());
        // Too many counter samples for the run: an error, not a huge allocation.
        let long = vec![ev("core0.vpu", "vpu.add", 0, 3 * MAX_COUNTER_SAMPLES)];
        let fine = ChromeOptions {
            counter_interval: 1,
            ..ChromeOptions::default()
        };
        let err = write_chrome_json(&long, &fine, Vec::new()).unwrap_err();
        assert!(
            err.to_string().contains("choose a longer interval"),
            "{err}"
        );
    }
}
