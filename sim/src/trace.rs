//! Trace events: one span per operation a unit performs, handed to a [`TraceSink`].
//!
//! The simulator produces these events; the `traces` crate owns the file formats they are
//! written in (Chrome/Perfetto trace JSON with counter tracks and aggregation).
//!
//! Every event carries the HLO symbol of its instruction (from the `Program`'s symbol table) when
//! the program has one, so a timeline can be read in terms of the HLO the user wrote.
//! Invariant: events reach the sink in simulation order (non-decreasing `start` per unit is not
//! guaranteed across units; the sink must not assume a global order).

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
    /// Bytes the operation moved over the chip's HBM link (a DMA touching HBM: whole bursts,
    /// twice for HBM→HBM); 0 for everything else.
    pub hbm_bytes: u64,
    /// Bytes the operation booked on its core's VMEM port (reads and writes of MXU, VPU and DMA
    /// work); 0 for work that does not go through the port (ICI transfers, scalar work).
    pub vmem_bytes: u64,
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
    /// See [`TraceEvent::hbm_bytes`].
    pub hbm_bytes: u64,
    /// See [`TraceEvent::vmem_bytes`].
    pub vmem_bytes: u64,
}

impl From<&TraceEvent<'_>> for OwnedTraceEvent {
    fn from(ev: &TraceEvent<'_>) -> Self {
        OwnedTraceEvent {
            chip: ev.chip,
            unit: ev.unit.to_string(),
            name: ev.name.to_string(),
            symbol: ev.symbol.map(str::to_string),
            pc: ev.pc,
            start: ev.start,
            end: ev.end,
            hbm_bytes: ev.hbm_bytes,
            vmem_bytes: ev.vmem_bytes,
        }
    }
}

/// A sink collecting events in memory.
#[derive(Clone, Debug, Default)]
pub struct VecSink {
    /// The events received, in order.
    pub events: Vec<OwnedTraceEvent>,
}

impl TraceSink for VecSink {
    fn event(&mut self, ev: &TraceEvent<'_>) {
        self.events.push(ev.into());
    }
}

/// A sink keeping events compactly until they are handed on in order ([`EventBuf::drain_into`]):
/// their strings in one buffer, so recording costs no allocation per event. Each chip of a
/// parallel run records into its own (`sim::system`).
#[derive(Clone, Debug, Default)]
pub struct EventBuf {
    text: String,
    events: Vec<BufEvent>,
}

#[derive(Clone, Debug)]
struct BufEvent {
    chip: u32,
    /// Ends of the unit, name and symbol in `text` (each starts where the previous ends).
    ends: [usize; 3],
    has_symbol: bool,
    pc: Option<u32>,
    start: u64,
    end: u64,
    hbm_bytes: u64,
    vmem_bytes: u64,
}

impl TraceSink for EventBuf {
    fn event(&mut self, ev: &TraceEvent<'_>) {
        let mut ends = [0; 3];
        for (i, s) in [ev.unit, ev.name, ev.symbol.unwrap_or("")]
            .iter()
            .enumerate()
        {
            self.text.push_str(s);
            ends[i] = self.text.len();
        }
        self.events.push(BufEvent {
            chip: ev.chip,
            ends,
            has_symbol: ev.symbol.is_some(),
            pc: ev.pc,
            start: ev.start,
            end: ev.end,
            hbm_bytes: ev.hbm_bytes,
            vmem_bytes: ev.vmem_bytes,
        });
    }
}

impl EventBuf {
    /// Hands every event recorded to `sink` in recording order and empties the buffer.
    pub fn drain_into(&mut self, sink: &mut dyn TraceSink) {
        let mut from = 0;
        for e in &self.events {
            let [u, n, y] = e.ends;
            sink.event(&TraceEvent {
                chip: e.chip,
                unit: &self.text[from..u],
                name: &self.text[u..n],
                symbol: e.has_symbol.then(|| &self.text[n..y]),
                pc: e.pc,
                start: e.start,
                end: e.end,
                hbm_bytes: e.hbm_bytes,
                vmem_bytes: e.vmem_bytes,
            });
            from = y;
        }
        self.events.clear();
        self.text.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_buffer_hands_on_what_it_recorded_in_order() {
        let evs = [
            TraceEvent {
                chip: 1,
                unit: "core0.mxu1",
                name: "mxu.matmul",
                symbol: Some("dot.3"),
                pc: Some(7),
                start: 10,
                end: 20,
                hbm_bytes: 0,
                vmem_bytes: 64,
            },
            TraceEvent {
                chip: 2,
                unit: "ici.x+",
                name: "transfer",
                symbol: None,
                pc: None,
                start: 5,
                end: 6,
                hbm_bytes: 3,
                vmem_bytes: 0,
            },
        ];
        let mut buf = EventBuf::default();
        for e in &evs {
            buf.event(e);
        }
        let mut out = VecSink::default();
        buf.drain_into(&mut out);
        let want: Vec<OwnedTraceEvent> = evs.iter().map(Into::into).collect();
        assert_eq!(out.events, want);
        let mut again = VecSink::default();
        buf.drain_into(&mut again);
        assert!(again.events.is_empty());
    }
}
