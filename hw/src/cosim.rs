//! Co-simulation: one op sequence through a reference (the contract's model: `sim::mxu::MxuModel`
//! behind the [`Reference`] trait) and through an RTL run, then a comparison of every op's start
//! cycle and every result row (visible cycle, accumulator row, all `C` values).
//!
//! In-order issue (the sequencer's rule, and the RTL's requirement): op `i` is offered at
//! `max(issue_i, start_{i-1} + 1)`. The reference's starts define the offers written into the
//! stimulus; the RTL harness applies the same rule to the RTL's own accept cycles, so any timing
//! divergence shows up as a start or result-cycle mismatch.

use crate::ops::{Issued, Op};
use crate::params::{Mode, MxuParams};
use sim::mxu::{MxuGeometry, MxuMode, MxuModel, Operand};
use sim::Cycle;
use std::fmt::Write as _;

/// One result row as a result port reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowOut {
    pub visible: u64,
    pub addr: usize,
    pub values: Vec<u32>,
}

/// What a reference model answers for an op sequence (issue cycles already in-order).
pub trait Reference {
    /// `LoadWeights`: its start cycle.
    fn load(&mut self, issue: u64, k: usize, n: usize, w: &[u16]) -> Result<u64, String>;
    /// `Matmul`: its start cycle and its result rows.
    #[allow(clippy::too_many_arguments)]
    fn matmul(
        &mut self,
        issue: u64,
        m: usize,
        k: usize,
        addr: usize,
        acc: bool,
        x: &[u16],
    ) -> Result<(u64, Vec<RowOut>), String>;
}

/// `sim`'s MXU model as the reference.
pub struct SimReference {
    model: MxuModel,
    mode: Mode,
}

impl SimReference {
    pub fn new(p: &MxuParams) -> Self {
        let geom = MxuGeometry {
            rows: p.rows,
            cols: p.cols,
            acc_rows: p.acc_rows,
            mode: match p.mode {
                Mode::Int8 => MxuMode::Int8,
                Mode::Bf16 => MxuMode::Bf16,
            },
        };
        SimReference {
            model: MxuModel::new(geom, true),
            mode: p.mode,
        }
    }
}

fn with_operand<T>(mode: Mode, data: &[u16], f: impl FnOnce(Operand<'_>) -> T) -> T {
    match mode {
        Mode::Bf16 => f(Operand::Bf16(data)),
        Mode::Int8 => {
            let v: Vec<i8> = data.iter().map(|&e| e as u8 as i8).collect();
            f(Operand::Int8(&v))
        }
    }
}

impl Reference for SimReference {
    fn load(&mut self, issue: u64, k: usize, n: usize, w: &[u16]) -> Result<u64, String> {
        let model = &mut self.model;
        with_operand(self.mode, w, |d| {
            model.load_weights(Cycle(issue), k, n, Some(d))
        })
        .map(|t| t.start.get())
        .map_err(|e| e.to_string())
    }

    fn matmul(
        &mut self,
        issue: u64,
        m: usize,
        k: usize,
        addr: usize,
        acc: bool,
        x: &[u16],
    ) -> Result<(u64, Vec<RowOut>), String> {
        let model = &mut self.model;
        let (t, rows) = with_operand(self.mode, x, |d| {
            model.matmul_rows(Cycle(issue), m, k, addr, acc, d)
        })
        .map_err(|e| e.to_string())?;
        let rows = rows
            .into_iter()
            .map(|r| RowOut {
                visible: r.visible.get(),
                addr: r.acc_row,
                values: r.values,
            })
            .collect();
        Ok((t.start.get(), rows))
    }
}

/// The reference's answer for a sequence: in-order offer cycles, starts, result rows.
#[derive(Clone, Debug, Default)]
pub struct Expected {
    pub offers: Vec<u64>,
    pub starts: Vec<u64>,
    /// `(op index, row m, row)` in result-port order.
    pub rows: Vec<(usize, usize, RowOut)>,
    /// The cycle after the last result row is visible.
    pub cycles: u64,
}

fn unpad(data: &[u16], width: usize, rows: usize, cols: usize) -> Vec<u16> {
    (0..rows)
        .flat_map(|i| data[i * width..i * width + cols].iter().copied())
        .collect()
}

/// Runs `ops` through `reference` with the in-order issue rule.
pub fn expect(
    p: &MxuParams,
    ops: &[Issued],
    reference: &mut dyn Reference,
) -> Result<Expected, String> {
    let mut e = Expected::default();
    for (i, is) in ops.iter().enumerate() {
        let offer = match e.starts.last() {
            Some(&s) => is.issue.max(s + 1),
            None => is.issue,
        };
        e.offers.push(offer);
        let start = match &is.op {
            Op::Load { k, n, w } => reference
                .load(offer, *k, *n, &unpad(w, p.cols, *k, *n))
                .map_err(|m| format!("op {i} (LoadWeights): {m}"))?,
            Op::Matmul { m, k, addr, acc, x } => {
                let (t, rows) = reference
                    .matmul(offer, *m, *k, *addr, *acc, &unpad(x, p.rows, *m, *k))
                    .map_err(|msg| format!("op {i} (Matmul): {msg}"))?;
                for (j, r) in rows.into_iter().enumerate() {
                    e.cycles = e.cycles.max(r.visible + 1);
                    e.rows.push((i, j, r));
                }
                t
            }
        };
        e.starts.push(start);
    }
    Ok(e)
}

/// The stimulus file the RTL harnesses read (whitespace-separated; data in hex).
pub fn stimulus(ops: &[Issued], e: &Expected) -> String {
    let mut s = format!("{}\n", ops.len());
    for (is, &offer) in ops.iter().zip(&e.offers) {
        match &is.op {
            Op::Load { w, .. } => {
                let _ = writeln!(s, "L {offer}");
                push_hex(&mut s, w);
            }
            Op::Matmul {
                m, addr, acc, x, ..
            } => {
                let _ = writeln!(s, "M {offer} {m} {addr} {}", *acc as u8);
                push_hex(&mut s, x);
            }
        }
    }
    s
}

fn push_hex(s: &mut String, data: &[u16]) {
    for chunk in data.chunks(16) {
        let line: Vec<String> = chunk.iter().map(|v| format!("{v:04x}")).collect();
        s.push_str(&line.join(" "));
        s.push('\n');
    }
}

/// What an RTL run reported.
#[derive(Clone, Debug, Default)]
pub struct Actual {
    /// Accept cycle of each op's first beat (`None` if never accepted).
    pub starts: Vec<Option<u64>>,
    pub rows: Vec<RowOut>,
    pub cycles: u64,
}

/// Parses a harness transcript (`A op cycle`, `R cycle addr v…`, `D cycles`).
pub fn parse_transcript(text: &str, nops: usize, cols: usize) -> Result<Actual, String> {
    let mut a = Actual {
        starts: vec![None; nops],
        ..Default::default()
    };
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| -> Result<u64, String> {
            f.get(i)
                .and_then(|t| t.parse().ok())
                .ok_or_else(|| format!("bad harness line: {line}"))
        };
        match f.first() {
            Some(&"A") => {
                let op = num(1)? as usize;
                if op < nops {
                    a.starts[op] = Some(num(2)?);
                }
            }
            Some(&"R") => {
                if f.len() != 3 + cols {
                    return Err(format!("bad harness line: {line}"));
                }
                let values = f[3..]
                    .iter()
                    .map(|t| u32::from_str_radix(t, 16))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| format!("bad harness line: {line}"))?;
                a.rows.push(RowOut {
                    visible: num(1)?,
                    addr: num(2)? as usize,
                    values,
                });
            }
            Some(&"D") => a.cycles = num(1)?,
            _ => {}
        }
    }
    Ok(a)
}

/// The first divergence between reference and RTL, described for a user.
pub fn first_mismatch(ops: &[Issued], e: &Expected, a: &Actual) -> Option<String> {
    let name = |i: usize| match &ops[i].op {
        Op::Load { .. } => format!("op {i} (LoadWeights)"),
        Op::Matmul { m, addr, acc, .. } => {
            format!("op {i} (Matmul M={m} acc_addr={addr} accumulate={acc})")
        }
    };
    // Results and starts interleave in time; report whichever diverges first.
    let mut first: Option<(u64, String)> = None;
    let mut note = |cycle: u64, msg: String| {
        if first.as_ref().is_none_or(|(c, _)| cycle < *c) {
            first = Some((cycle, msg));
        }
    };
    for (i, &s) in e.starts.iter().enumerate() {
        match a.starts.get(i).copied().flatten() {
            Some(rs) if rs == s => {}
            Some(rs) => note(
                s.min(rs),
                format!("{}: starts at cycle {rs} in RTL, {s} in sim", name(i)),
            ),
            None => note(
                s,
                format!("{}: never accepted by the RTL (sim: cycle {s})", name(i)),
            ),
        }
    }
    for (idx, (i, m, er)) in e.rows.iter().enumerate() {
        let Some(ar) = a.rows.get(idx) else {
            note(
                er.visible,
                format!(
                    "{} row {m}: no result from the RTL (sim: cycle {})",
                    name(*i),
                    er.visible
                ),
            );
            break;
        };
        if ar.visible != er.visible || ar.addr != er.addr {
            note(
                er.visible.min(ar.visible),
                format!(
                    "{} row {m}: RTL reports acc row {} at cycle {}, sim acc row {} at cycle {}",
                    name(*i),
                    ar.addr,
                    ar.visible,
                    er.addr,
                    er.visible
                ),
            );
            break;
        }
        if let Some(n) = (0..er.values.len()).find(|&n| er.values[n] != ar.values[n]) {
            note(
                er.visible,
                format!(
                    "{} row {m}, cycle {}, element {n}: RTL 0x{:08x}, sim 0x{:08x}",
                    name(*i),
                    er.visible,
                    ar.values[n],
                    er.values[n]
                ),
            );
            break;
        }
    }
    if a.rows.len() > e.rows.len() {
        let extra = &a.rows[e.rows.len()];
        note(
            extra.visible,
            format!(
                "RTL reports an extra result row (acc row {}) at cycle {}",
                extra.addr, extra.visible
            ),
        );
    }
    first.map(|(_, m)| m)
}

/// Counts mismatching values and cycles (for the summary line).
pub fn count_mismatches(e: &Expected, a: &Actual) -> usize {
    let mut n = 0;
    for (i, &s) in e.starts.iter().enumerate() {
        if a.starts.get(i).copied().flatten() != Some(s) {
            n += 1;
        }
    }
    for (idx, (_, _, er)) in e.rows.iter().enumerate() {
        match a.rows.get(idx) {
            None => n += 1 + er.values.len(),
            Some(ar) => {
                n += (ar.visible != er.visible || ar.addr != er.addr) as usize;
                n += er
                    .values
                    .iter()
                    .zip(&ar.values)
                    .filter(|(x, y)| x != y)
                    .count();
            }
        }
    }
    n + a.rows.len().saturating_sub(e.rows.len())
}
