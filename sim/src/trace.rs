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
        let mut tids: Vec<(u32, &str)> = Vec::new();
        let mut list = Vec::with_capacity(self.events.len() + 8);
        for e in &self.events {
            let key = (e.chip, e.unit.as_str());
            let tid = match tids.iter().position(|k| *k == key) {
                Some(i) => i,
                None => {
                    tids.push(key);
                    list.push(serde_json::json!({
                        "ph": "M", "name": "thread_name", "pid": e.chip, "tid": tids.len() - 1,
                        "args": {"name": e.unit},
                    }));
                    tids.len() - 1
                }
            };
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
