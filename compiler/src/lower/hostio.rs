//! The host link: `infeed`, `outfeed` and host `send`/`recv` (`is_host_transfer=true`).
//!
//! Each core has one infeed stream (host → chip) and one outfeed stream (chip → host), each in
//! program order. An `infeed` of an array or a (nested) tuple of arrays takes one `infeed`
//! instruction per leaf, each the leaf's row-major little-endian bytes into a new VMEM buffer;
//! a host `recv` does the same into its data buffer (at `recv`; `recv-done` aliases it). An
//! `outfeed` puts each leaf of its operand on the outfeed stream with one `outfeed`
//! instruction; a host `send` puts its operand there (at `send`; `send-done` is a token).
//! Both streams are the host's to interpret: the compiler records, in program order, what each
//! transfer is ([`HostXfer`] in [`crate::LowerStats`]), so a runner can lay out the infeed
//! stream from a case's infeed and host-recv queues and split the outfeed stream into outfeed
//! values and host sends.
//!
//! Cost: per leaf, `host.latency_ns` plus its bytes at `host.gbps` on the infeed or outfeed
//! queue; the queues run beside the other units (ordered by the emitter's semaphores against
//! the VMEM they touch).

use super::emit::{Access, Queue};
use super::{Buf, Lowerer, Val};
use crate::error::CResult;
use hlo::{InstId, Opcode, Shape};
use isa::{Inst, Space};

/// What one host transfer carries (in program order, per stream).
#[derive(Clone, Debug, PartialEq)]
pub enum HostKind {
    /// An `infeed` value (from the infeed queue).
    Infeed,
    /// An `outfeed` value.
    Outfeed,
    /// A host `recv` on this channel (from the host's queue of that channel).
    Recv(i64),
    /// A host `send` on this channel.
    Send(i64),
}

/// One host transfer the program makes.
#[derive(Clone, Debug, PartialEq)]
pub struct HostXfer {
    pub kind: HostKind,
    /// The value's shape (its leaves are on the stream one after the other).
    pub shape: Shape,
    /// Inside a while or conditional body: it may run any number of times.
    pub repeated: bool,
}

/// Lowers `infeed`, `outfeed` and host `send`/`send-done`/`recv`/`recv-done`; `None` for other
/// ops (and device-to-device send/recv).
pub fn lower(l: &mut Lowerer<'_>, h: InstId) -> CResult<Option<Val>> {
    let inst = &l.comp().insts[h];
    let host = inst.attrs.is_host_transfer == Some(true);
    let repeated = l.depth() > 0;
    let ch = inst.attrs.channel_id.unwrap_or(0);
    Ok(Some(match inst.opcode {
        Opcode::Infeed => {
            let Some(data) = inst.shape.as_tuple().and_then(|t| t.first()).cloned() else {
                return Err(l.unsupported("infeed without a (data, token) result"));
            };
            let v = receive(l, h, &data)?;
            l.stats.host_in.push(HostXfer {
                kind: HostKind::Infeed,
                shape: data,
                repeated,
            });
            Val::Tuple(vec![v, Val::Token])
        }
        Opcode::Outfeed => {
            let v = l.val(inst.operands[0])?;
            let shape = l.comp().insts[inst.operands[0]].shape.clone();
            send(l, &v)?;
            l.stats.host_out.push(HostXfer {
                kind: HostKind::Outfeed,
                shape,
                repeated,
            });
            Val::Token
        }
        Opcode::Recv if host => {
            let Some(data) = inst.shape.as_tuple().and_then(|t| t.first()).cloned() else {
                return Err(l.unsupported("recv without a (data, context, token) result"));
            };
            let v = receive(l, h, &data)?;
            l.stats.host_in.push(HostXfer {
                kind: HostKind::Recv(ch),
                shape: data,
                repeated,
            });
            let ctx = l.new_buf(h, hlo::ElementType::U32, vec![])?;
            Val::Tuple(vec![v, Val::Array(ctx), Val::Token])
        }
        Opcode::RecvDone if host => match l.val(inst.operands[0])? {
            Val::Tuple(vs) if !vs.is_empty() => {
                let v = vs[0].clone();
                l.extend_life(&v, h);
                Val::Tuple(vec![v, Val::Token])
            }
            _ => return Err(l.unsupported("recv-done of something other than a recv")),
        },
        Opcode::Send if host => {
            let v = l.val(inst.operands[0])?;
            l.extend_life(&v, h);
            let shape = l.comp().insts[inst.operands[0]].shape.clone();
            send(l, &v)?;
            l.stats.host_out.push(HostXfer {
                kind: HostKind::Send(ch),
                shape,
                repeated,
            });
            let ctx = l.new_buf(h, hlo::ElementType::U32, vec![])?;
            Val::Tuple(vec![v, Val::Array(ctx), Val::Token])
        }
        Opcode::SendDone if host => Val::Token,
        _ => return Ok(None),
    }))
}

/// New buffers for the leaves of `shape`, each filled by one `infeed` instruction.
fn receive(l: &mut Lowerer<'_>, h: InstId, shape: &Shape) -> CResult<Val> {
    Ok(match shape {
        Shape::Array(a) => {
            if a.is_dynamic() {
                return Err(l.unsupported("dynamic dimensions"));
            }
            super::dtype(a.ty).ok_or_else(|| l.unsupported(format!("element type {}", a.ty)))?;
            let out = l.new_buf(h, a.ty, a.udims())?;
            let len = out.bytes();
            let n = u32::try_from(len)
                .map_err(|_| l.unsupported("a host transfer of 4 GiB or more"))?;
            if n > 0 {
                let dst = l.e.memref(Space::Vmem, out.addr);
                l.e.unit(
                    Inst::Infeed {
                        dst,
                        len: n,
                        wait: None,
                        signal: None,
                    },
                    Queue::Infeed,
                    &[],
                    &[Access::vmem(out.addr, len)],
                );
            }
            Val::Array(out)
        }
        Shape::Tuple(ts) => Val::Tuple(
            ts.iter()
                .map(|t| receive(l, h, t))
                .collect::<CResult<_>>()?,
        ),
        Shape::Token => Val::Token,
    })
}

/// Every array leaf of `v` onto the outfeed stream, in order.
fn send(l: &mut Lowerer<'_>, v: &Val) -> CResult<()> {
    match v {
        Val::Array(b) => out_one(l, b),
        Val::Tuple(vs) => vs.iter().try_for_each(|v| send(l, v)),
        Val::Token => Ok(()),
        Val::Hbm(_) => Err(l.unsupported("an outfeed of an HBM-resident value")),
    }
}

fn out_one(l: &mut Lowerer<'_>, b: &Buf) -> CResult<()> {
    let len = b.bytes();
    let n = u32::try_from(len).map_err(|_| l.unsupported("a host transfer of 4 GiB or more"))?;
    if n > 0 {
        let src = l.e.memref(Space::Vmem, b.addr);
        l.e.unit(
            Inst::Outfeed {
                src,
                len: n,
                wait: None,
                signal: None,
            },
            Queue::Outfeed,
            &[Access::vmem(b.addr, len)],
            &[],
        );
    }
    Ok(())
}
