//! One submission for a multi-device graph: where every partition is a
//! command buffer, a peer copy or a captured collective
//! ([`RecordedCollective::is_captured`](cmdbuf_core::collective::RecordedCollective::is_captured):
//! CUDA with NCCL), on devices of one adapter that composes
//! them ([`Context::composes_with`](cmdbuf_core::context::Context::composes_with):
//! CUDA, where the composition is one CUDA graph and one `cuGraphLaunch`;
//! the CPU adapter, one DAG), finalize composes the partitions into one
//! [`ComposedCommandBuffer`] of the graph's own context, their dependencies
//! its edges. Elsewhere (host tasks, copies staged through the host, devices
//! joined by bridges, other backends, adapters or partitions that cannot be
//! composed, collectives staged through the host or issued at each
//! execution) the partitions are submitted one by one as before; the reason
//! is logged (`tracing` debug).
//!
//! A collective's recording is shared by the composition and the
//! partition's own launch path, which runs only once the composition is
//! given up (after an update it could not take), after the composition's
//! last submission; cmdbuf-core orders the two ways of launching one
//! capture in any case.

use crate::graph::state::{ExecState, FlatOp, GraphShared};
use cmdbuf_core::command_buffer::{ComposedCommandBuffer, ComposedPart};
use cmdbuf_core::error::{Result, UrError};
use cmdbuf_core::event::Event;

/// The composition of `st`'s partitions, or `None` (logged) where they
/// cannot be composed.
pub(super) fn compose(shared: &GraphShared, st: &ExecState) -> Option<ComposedCommandBuffer> {
    if !shared.devices.is_multi() || st.is_single() {
        return None;
    }
    match try_compose(shared, st) {
        Ok(composed) => {
            tracing::debug!(graph = shared.id, partitions = st.parts.len(), "partitions composed: one submission");
            Some(composed)
        }
        Err(e) => {
            log_fallback(shared.id, &e);
            None
        }
    }
}

fn try_compose(shared: &GraphShared, st: &ExecState) -> Result<ComposedCommandBuffer> {
    let own = shared.devices.context(0);
    let after: Vec<Vec<usize>> = st.parts.iter().map(|p| p.preds.iter().map(|q| *q as usize).collect()).collect();
    let mut parts = Vec::with_capacity(st.parts.len());
    for (index, part) in st.parts.iter().enumerate() {
        let context = shared.devices.context(part.device);
        parts.push(match (&part.cb, &st.nodes[part.members[0] as usize].op) {
            (Some(buffer), _) => ComposedPart::CommandBuffer { buffer, after: &after[index] },
            (None, FlatOp::PeerCopy { dst, src, size }) => {
                ComposedPart::PeerCopy { context, dst: *dst, src: *src, size: *size, after: &after[index] }
            }
            (None, FlatOp::Collective(run)) => {
                ComposedPart::Collective { recorded: &run.recorded, after: &after[index] }
            }
            (None, _) => {
                return Err(cmdbuf_core::err!(
                    UnsupportedFeature,
                    "partition {index} is neither a command buffer, a peer copy nor a collective (a host task)"
                ));
            }
        });
    }
    ComposedCommandBuffer::new(own, &parts)
}

fn log_fallback(graph: u64, e: &UrError) {
    if matches!(e, UrError::UnsupportedFeature(_)) {
        tracing::debug!(graph, reason = %e, "partitions not composed: submitted one by one");
    } else {
        tracing::warn!(graph, error = %e, "composing the partitions failed: they are submitted one by one");
    }
}

/// After an update: brings the composition up to date with the partitions'
/// command buffers (`rebuilt` lists partitions whose command buffer was
/// made anew) and collectives (`recorded` lists collective partitions
/// recorded again), or gives it up (logged) where that fails (say, a
/// collective recorded again but not captured), the next execution then
/// submitting the partitions one by one after the composition's last. The
/// composition never runs an old recording.
pub(super) fn refresh(graph: u64, st: &mut ExecState, rebuilt: &[u32], recorded: &[u32]) {
    let Some(composed) = st.composed.as_ref() else { return };
    let result = rebuilt
        .iter()
        .try_for_each(|p| {
            let buffer = st.parts[*p as usize].cb.as_ref().expect("rebuilt partitions have a command buffer");
            composed.replace_part(*p as usize, buffer)
        })
        .and_then(|()| {
            recorded.iter().try_for_each(|p| {
                let FlatOp::Collective(run) = &st.nodes[st.parts[*p as usize].members[0] as usize].op else {
                    return Err(cmdbuf_core::err!(Unknown, "partition {p} recorded again is not a collective"));
                };
                composed.replace_collective(*p as usize, &run.recorded)
            })
        })
        .and_then(|()| composed.refresh().map(|_| ()));
    if let Err(e) = result {
        log_fallback(graph, &e);
        let last: Option<Event> = composed.last_submission();
        st.last = last;
        st.composed = None;
    }
}
