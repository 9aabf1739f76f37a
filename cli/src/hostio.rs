//! A case's host queues on the chip's host link: the infeed stream laid out from the case's
//! `infeed` and `host_recv` queues in the order the program reads them, and the outfeed stream
//! split into `outfeed` values and host sends in the order the program writes them (the order
//! the compiler records in `LowerStats::host_in` / `host_out`).

use compiler::lower::hostio::{HostKind, HostXfer};
use compiler::Compiled;
use eval::case::{check_value, Case};
use hlo::Literal;

/// Per device, the values of the infeed stream in order (tuples whole; the runner puts their
/// leaves one after the other).
pub fn infeed_streams(c: &Compiled, case: &Case) -> Result<Vec<Vec<Literal>>, String> {
    let xs = &c.stats.host_in;
    let has_recv = xs.iter().any(|x| matches!(x.kind, HostKind::Recv(_)));
    let devices = case.devices();
    let mut out = Vec::new();
    for d in 0..devices {
        let mut infeed: std::collections::VecDeque<Literal> =
            case.infeed.get(d).cloned().unwrap_or_default().into();
        if !has_recv {
            // Infeeds only (perhaps in a loop): the queue in order.
            out.push(infeed.into_iter().collect());
            continue;
        }
        if xs.iter().any(|x| x.repeated) {
            return Err(
                "not supported on chip yet: host recv with infeeds or recvs inside a loop \
                 (the stream's order is not static)"
                    .into(),
            );
        }
        let mut recv = case.host_recv.get(d).cloned().unwrap_or_default();
        let mut v = Vec::new();
        for x in xs {
            let lit = match x.kind {
                HostKind::Recv(ch) => {
                    let k = recv.iter().position(|(c, _)| *c == ch).ok_or_else(|| {
                        format!("the case's host_recv has no value for channel {ch}")
                    })?;
                    recv.remove(k).1
                }
                _ => infeed
                    .pop_front()
                    .ok_or("the case's infeed queue runs out")?,
            };
            v.push(lit);
        }
        out.push(v);
    }
    Ok(out)
}

/// Reads one value of `shape` from the front of `bytes`.
fn take(shape: &hlo::Shape, bytes: &mut &[u8]) -> Result<Literal, String> {
    Ok(match shape {
        hlo::Shape::Array(a) => {
            let n = a.byte_size().ok_or("an outfeed value of unknown size")? as usize;
            if bytes.len() < n {
                return Err("the outfeed stream is shorter than the program's outfeeds".into());
            }
            let (head, rest) = bytes.split_at(n);
            *bytes = rest;
            Literal::Array(
                compiler::io::from_bytes(a.ty, &a.udims(), head).map_err(|e| e.to_string())?,
            )
        }
        hlo::Shape::Tuple(ts) => Literal::Tuple(
            ts.iter()
                .map(|t| take(t, bytes))
                .collect::<Result<_, _>>()?,
        ),
        hlo::Shape::Token => Literal::Token,
    })
}

/// The outfeed stream of device `d` split into (outfeed values, host sends).
#[allow(clippy::type_complexity)]
fn split_out(
    xs: &[HostXfer],
    mut bytes: &[u8],
) -> Result<(Vec<Literal>, Vec<(i64, Literal)>), String> {
    let (mut outs, mut sends) = (Vec::new(), Vec::new());
    for x in xs {
        let v = take(&x.shape, &mut bytes)?;
        match x.kind {
            HostKind::Send(ch) => sends.push((ch, v)),
            _ => outs.push(v),
        }
    }
    if !bytes.is_empty() {
        return Err(format!(
            "{} bytes on the outfeed stream after the program's outfeeds",
            bytes.len()
        ));
    }
    Ok((outs, sends))
}

/// Checks every device's outfeed values and host sends against the case's.
pub fn check_host_out(
    c: &Compiled,
    case: &Case,
    sys: &sim::System,
) -> Result<(), (&'static str, String)> {
    let xs = &c.stats.host_out;
    let expects =
        case.outfeed.iter().any(|q| !q.is_empty()) || case.host_send.iter().any(|q| !q.is_empty());
    if xs.is_empty() && !expects {
        return Ok(());
    }
    if xs.iter().any(|x| x.repeated) {
        return Err((
            "unsupported",
            "not supported on chip yet: checking outfeeds or host sends inside a loop".into(),
        ));
    }
    for d in 0..c.chips {
        let bytes = sys.outfeed(d, 0).unwrap_or(&[]);
        let (outs, sends) = split_out(xs, bytes).map_err(|m| ("error", m))?;
        let want_out = case.outfeed.get(d).cloned().unwrap_or_default();
        let want_send = case.host_send.get(d).cloned().unwrap_or_default();
        if outs.len() != want_out.len() || sends.len() != want_send.len() {
            return Err((
                "mismatch",
                format!(
                    "device {d}: {} outfeed values and {} host sends, the case expects {} and {}",
                    outs.len(),
                    sends.len(),
                    want_out.len(),
                    want_send.len()
                ),
            ));
        }
        for (k, (w, h)) in want_out.iter().zip(&outs).enumerate() {
            check_value(case.check, case.tolerance, case.stats.as_ref(), w, h)
                .map_err(|m| ("mismatch", format!("device {d} outfeed {k}: {m}")))?;
        }
        for (k, ((wc, w), (hc, h))) in want_send.iter().zip(&sends).enumerate() {
            if wc != hc {
                return Err((
                    "mismatch",
                    format!("device {d} host send {k}: channel {hc}, expected {wc}"),
                ));
            }
            check_value(case.check, case.tolerance, case.stats.as_ref(), w, h)
                .map_err(|m| ("mismatch", format!("device {d} host send {k}: {m}")))?;
        }
    }
    Ok(())
}
