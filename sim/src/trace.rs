//! Trace events: one span per operation a unit performs, handed to a [`TraceSink`].
//!
//! Every event carries the HLO symbol of its instruction (from the `Program`'s symbol table) when
//! the program has one, so a timeline can be read in terms of the HLO the user wrote.
//! Invariant: events reach the sink in simulation order (non-decreasing `start` per unit is not
//! guaranteed across units; the sink must not assume a global order).

use std::io::{self, Write};

/// One span of activity of one unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEvent<'a> {
    /// Chip index in the system.
    pub chip: u32,
    /// Unit path within the chip, e.g. `core0.mxu1`.
    pub unit: &'a str,
    /// What the unit did (instruction mnemonic or activity).
    pub name: &'a str,
    /// The HLO instruction this came from, if the program's symbol table names one.
    pub symbol: Option<&'a str>,
    /// Program counter of the instruction, if any.
    pub pc: Option<u32>,
    /// First cycle.
    pub start: u64,
    /// Cycle after the last (exclusive end).
    pub end: u64,
}

/// Receives trace events.
pub trait TraceSink {
    /// Called once per event.
    fn event(&mut self, ev: &TraceEvent<'_>);
}

/// An owned copy of a [`TraceEvent`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedTraceEvent {
    /// See [`TraceEvent::chip`].
    pub chip: u32,
    /// See [`TraceEvent::unit`].
    pub unit: String,
    /// See [`TraceEvent::name`].
    pub name: String,
    /// See [`TraceEvent::symbol`].
    pub symbol: Option<String>,
    /// See [`TraceEvent::pc`].
    pub pc: Option<u32>,
    /// See [`TraceEvent::start`].
    pub start: u64,
    /// See [`TraceEvent::end`].
    pub end: u64,
}

/// A sink collecting events in memory.
#[derive(Clone, Debug, Default)]
pub struct VecSink {
    /// The events received, in order.
    pub events: Vec<OwnedTraceEvent>,
}

impl TraceSink for VecSink {
    fn event(&mut self, ev: &TraceEvent<'_>) {
        self.events.push(OwnedTraceEvent {
            chip: ev.chip,
            unit: ev.unit.to_string(),
            name: ev.name.to_string(),
            symbol: ev.symbol.map(str::to_string),
            pc: ev.pc,
            start: ev.start,
            end: ev.end,
        });
    }
}

impl VecSink {
    /// Writes the events as Chrome/Perfetto trace JSON (`ph: "X"` complete events; one process
    /// per chip, one thread per unit; timestamps in cycles shown as microseconds).
    pub fn write_chrome_json<W: Write>(&self, mut w: W) -> io::Result<()> {
        // Slices of one unit may overlap (pipelined MXU work, several DMA copies at once): each
        // unit's slices are laid on lanes (`core0.dma`, `core0.dma #1`, ...) so that slices on
        // one track never overlap — first lane free at the slice's start, in start order.
        let mut order: Vec<usize> = (0..self.events.len()).collect();
        order.sort_by(|&a, &b| {
            let (x, y) = (&self.events[a], &self.events[b]);
            (x.chip, &x.unit, x.start, x.end, a).cmp(&(y.chip, &y.unit, y.start, y.end, b))
        });
        let mut lanes: std::collections::BTreeMap<(u32, &str), Vec<u64>> = Default::default();
        let mut tids: std::collections::BTreeMap<(u32, &str, usize), usize> = Default::default();
        let mut chips: std::collections::BTreeSet<u32> = Default::default();
        let mut list = Vec::with_capacity(self.events.len() + 8);
        for &k in &order {
            let e = &self.events[k];
            if chips.insert(e.chip) {
                list.push(serde_json::json!({
                    "ph": "M", "name": "process_name", "pid": e.chip,
                    "args": {"name": format!("chip{}", e.chip)},
                }));
            }
            let ends = lanes.entry((e.chip, e.unit.as_str())).or_default();
            let lane = match ends.iter().position(|&end| end <= e.start) {
                Some(l) => l,
                None => {
                    ends.push(0);
                    ends.len() - 1
                }
            };
            ends[lane] = e.end;
            let next = tids.len();
            let tid = *tids
                .entry((e.chip, e.unit.as_str(), lane))
                .or_insert_with(|| {
                    let name = if lane == 0 {
                        e.unit.clone()
                    } else {
                        format!("{} #{lane}", e.unit)
                    };
                    list.push(serde_json::json!({
                        "ph": "M", "name": "thread_name", "pid": e.chip, "tid": next,
                        "args": {"name": name},
                    }));
                    next
                });
            let mut args = serde_json::Map::new();
            if let Some(s) = &e.symbol {
                args.insert("hlo".into(), s.clone().into());
            }
            if let Some(pc) = e.pc {
                args.insert("pc".into(), pc.into());
            }
            list.push(serde_json::json!({
                "ph": "X", "name": e.name, "cat": e.unit, "pid": e.chip, "tid": tid,
                "ts": e.start, "dur": e.end.saturating_sub(e.start), "args": args,
            }));
        }
        let doc = serde_json::json!({"traceEvents": list, "displayTimeUnit": "ns",
            "otherData": {"time_unit": "cycles"}});
        serde_json::to_writer(&mut w, &doc)?;
        w.flush()
    }
}
