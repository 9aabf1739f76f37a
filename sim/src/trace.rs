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
