//! The multi-replica runner: N replicas of one module, each on its own thread with its own
//! interpreter and a [`ReplicaRuntime`] connected to the others through one [`hub::Hub`].
//!
//! Semantics (see the files for details):
//! - collectives match by (kind, `channel_id` or else the instruction, replica group, occurrence
//!   number on each replica), so collectives in loops pair up iteration by iteration and
//!   collectives with different channel ids never match; reductions fold in group order, so
//!   results are bit-identical on every member and in every run;
//! - a module runs on `replica_count × num_partitions` devices (device `r · P + p`, one thread
//!   each); `replica_groups` and permute pairs are read in XLA's four group modes
//!   ([`groups`]); absent or `{}` = all ids; list and iota forms via
//!   [`hlo::attrs::ReplicaGroups::expand`];
//! - infeed/outfeed and host send/recv use each replica's [`HostIo`] queues; device-to-device
//!   send/recv find their peer in `_xla_send_recv_source_target_pairs` (see [`rt`]);
//! - **deadlock**: when every replica is finished or waiting and no wait can be satisfied, the
//!   run ends at once with [`EvalError::Deadlock`], whose message names for every replica the
//!   instruction it waits at (or "finished"). Detection is exact (it inspects the wait
//!   conditions under the hub's lock), never a timeout.
//!
//! Errors: if a replica fails on its own, the run returns the error of the lowest-numbered
//! replica that failed on its own (replicas stopped because of it are not reported).

pub mod collectives;
pub mod data;
pub use hlo::groups;
pub mod hub;
pub mod rt;

pub use rt::ReplicaRuntime;

use crate::error::{EResult, EvalError};
use crate::runtime::{HostIo, ReplicaInput, ReplicaOutput};
use crate::{EvalOptions, Evaluator};
use hub::Hub;

/// Stack of each replica thread: nested calls and loops recurse in the interpreter.
const REPLICA_STACK_BYTES: usize = 64 << 20;

/// Most replicas one run starts (one OS thread each).
pub const MAX_REPLICAS: usize = 4096;

/// Runs `module` on `replicas.len()` devices (replicas × partitions) concurrently; one input
/// and one output per device, in device order (`replica · num_partitions + partition`). Works for one replica too (then it differs from
/// [`crate::evaluate`] only in reporting waits as deadlocks with the per-replica report).
pub fn run_replicas(
    module: &hlo::VerifiedModule,
    replicas: Vec<ReplicaInput>,
    opts: &EvalOptions,
) -> EResult<Vec<ReplicaOutput>> {
    let n = replicas.len();
    if n == 0 {
        return Err(EvalError::bad_input(
            "run_replicas needs at least one replica",
        ));
    }
    if n > MAX_REPLICAS {
        return Err(EvalError::limit(format!(
            "{n} replicas requested; the evaluator runs at most {MAX_REPLICAS} (one thread each)"
        )));
    }
    let devs = groups::Devices::of(module, n)?;
    let hub = Hub::new(n);
    let pairs = rt::channel_pairs(module, devs);
    // Replicas run at once: each gets an equal share of the memory and work budget.
    let mut opts = opts.clone();
    opts.budget = opts.budget.share(n as u64);
    let evaluator = Evaluator::new(module).with_options(opts);
    type Joined = std::thread::Result<(EResult<hlo::literal::Literal>, HostIo)>;
    let results: Vec<Joined> = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n);
        let mut spawn_error = None;
        for (me, input) in replicas.into_iter().enumerate() {
            if spawn_error.is_some() {
                // Never started: make everyone waiting for it stop instead of hanging.
                hub.fail(me);
                continue;
            }
            let (hub, pairs, evaluator) = (&hub, &pairs, &evaluator);
            let spawned = std::thread::Builder::new()
                .name(format!("replica-{me}"))
                .stack_size(REPLICA_STACK_BYTES)
                .spawn_scoped(scope, move || {
                    // Marks the replica failed if the interpreter panics (a bug), so the others
                    // do not wait for it forever.
                    let mut guard = FailOnUnwind {
                        hub,
                        me,
                        armed: true,
                    };
                    let mut rt = ReplicaRuntime::new(me, devs, hub, pairs, input.io);
                    let res = evaluator.run(&input.args, &mut rt);
                    guard.armed = false;
                    match &res {
                        Ok(_) => hub.finish(me),
                        Err(_) => hub.fail(me),
                    }
                    (res, rt.io)
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    hub.fail(me);
                    spawn_error = Some(e);
                }
            }
        }
        let joined: Vec<Joined> = handles.into_iter().map(|h| h.join()).collect();
        match spawn_error {
            Some(e) => Err(EvalError::limit(format!(
                "cannot start replica thread {}: {e}",
                joined.len()
            ))),
            None => Ok(joined),
        }
    })?;
    if let Some(report) = hub.deadlock_report() {
        return Err(EvalError::Deadlock(report));
    }
    let mut outs = Vec::with_capacity(n);
    let mut first_err = None;
    for (me, r) in results.into_iter().enumerate() {
        match r {
            Ok((Ok(result), io)) => outs.push(ReplicaOutput { result, io }),
            Ok((Err(e), _)) => {
                if first_err.is_none() && !hub.stopped_by_other(me) {
                    first_err = Some(e);
                }
            }
            Err(_) => {
                if first_err.is_none() {
                    first_err = Some(EvalError::invalid(format!(
                        "replica {me}: the evaluator panicked (a bug)"
                    )));
                }
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None if outs.len() == n => Ok(outs),
        None => Err(EvalError::invalid(
            "a replica stopped without a result or an error",
        )),
    }
}

struct FailOnUnwind<'h> {
    hub: &'h Hub,
    me: usize,
    armed: bool,
}

impl Drop for FailOnUnwind<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.hub.fail(self.me);
        }
    }
}
