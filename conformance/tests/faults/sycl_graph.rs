//! Scenario (b): a SYCL graph built with the explicit API (nodes and
//! edges), with host tasks and a sub-graph, finalized and submitted twice.
//! Its own file, so that the graph layer's imports can move with it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use cmdbuf::{Kernel, KernelArg, KernelLaunch};
use cmdbuf_runtime::graph::{FinalizeProperties, Graph, GraphProperties, NodeProperties};

use crate::expect_eq;
use crate::support::{Failure, Fixture, read_u32, usm_with};

const N: usize = 64;

/// fill A with 1 -> sub-graph (A += 1) -> host task -> copy A into B, with a
/// second host task beside the sub-graph; submitted twice.
pub fn scenario(fx: &Fixture) -> Result<(), Failure> {
    let (a, b) = (usm_with(fx, &[0; N])?, usm_with(fx, &[0; N])?);
    let increment = Kernel::new(&fx.program, "increment")?;
    let sub = Graph::new(&fx.context, &fx.device, GraphProperties::default())?;
    let arg = [KernelArg::Pointer(a.ptr())];
    // SAFETY: increment over N items of the N-u32 allocation A.
    sub.add(|h| unsafe { h.launch(&KernelLaunch::new(&increment, &[N], &arg)) }, NodeProperties::new())?;
    let sub_exec = sub.finalize(FinalizeProperties::default())?;

    let runs = Arc::new(AtomicU32::new(0));
    let beside = Arc::new(AtomicU32::new(0));
    let graph = Graph::new(&fx.context, &fx.device, GraphProperties::default())?;
    let fill = graph.add(|h| h.fill(a.ptr(), &1u32.to_le_bytes(), N * 4), NodeProperties::new())?;
    let inc = graph.add(|h| h.subgraph(&sub_exec), NodeProperties::new().depends_on(&[&fill]))?;
    let seen = runs.clone();
    let host = graph.add(
        move |h| {
            h.host_task(move || {
                seen.fetch_add(1, Ordering::SeqCst);
            })
        },
        NodeProperties::new().depends_on(&[&inc]),
    )?;
    let other = beside.clone();
    graph.add(
        move |h| {
            h.host_task(move || {
                other.fetch_add(1, Ordering::SeqCst);
            })
        },
        NodeProperties::new().depends_on(&[&fill]),
    )?;
    graph.add(|h| h.memcpy(b.ptr(), a.ptr(), N * 4), NodeProperties::new().depends_on(&[&host]))?;
    let exec = graph.finalize(FinalizeProperties::default())?;
    for run in 1..=2u32 {
        exec.enqueue_on(&fx.queue, &[])?.wait()?;
        expect_eq!(read_u32(&fx.queue, b.ptr(), N)?, vec![2u32; N], "submission {run}");
        expect_eq!(runs.load(Ordering::SeqCst), run, "host task runs after submission {run}");
    }
    fx.queue.finish()?;
    expect_eq!(beside.load(Ordering::SeqCst), 2, "runs of the host task beside the sub-graph");
    Ok(())
}
