//! The checks of adding an executable graph as a sub-graph node, which a
//! command group ([`Handler::subgraph`](super::Handler::subgraph)) and a
//! recording queue make, and the buffer property they share with the
//! accessors (`buffers.rs`): below both, so that neither names the other
//! or the executable graph's modules.

use cmdbuf_core::{Result, ensure};

use super::state::GraphShared;
use super::{Executable, Graph};

/// The checks of adding `sub` as a sub-graph of `parent`; gives the device
/// of `parent` it runs on.
pub(crate) fn check_subgraph(parent: &GraphShared, sub: &Graph<Executable>) -> Result<u16> {
    let inner = &sub.0.inner;
    ensure!(
        !inner.source.devices.is_multi(),
        UnsupportedFeature,
        "executable graph #{} is a multi-device graph and cannot be a sub-graph of graph #{}",
        inner.id,
        parent.id
    );
    let device = parent.devices.index_of_context(&inner.source.context);
    ensure!(
        device.is_some(),
        InvalidContext,
        "executable graph #{} belongs to another context than graph #{}",
        inner.id,
        parent.id
    );
    ensure!(
        !inner.has_allocations,
        InvalidOperation,
        "executable graph #{} holds graph-owned allocations and cannot be a sub-graph of graph #{}",
        inner.id,
        parent.id
    );
    check_buffers(parent, sub)?;
    Ok(device.unwrap_or(0))
}

/// An executable graph with accessors as a sub-graph: the parent uses
/// buffers too, so it needs the property.
fn check_buffers(parent: &GraphShared, sub: &Graph<Executable>) -> Result<()> {
    if sub.0.inner.buffers.lock().is_empty() {
        return Ok(());
    }
    check_property(parent).map_err(|e| e.in_context(&format!("executable graph #{} uses buffers", sub.id())))
}

/// `InvalidOperation` unless `graph` may use buffers.
pub(crate) fn check_property(graph: &GraphShared) -> Result<()> {
    ensure!(
        graph.props.assume_buffer_outlives_graph,
        InvalidOperation,
        "graph #{} uses a buffer but was not created with the assume_buffer_outlives_graph property",
        graph.id
    );
    Ok(())
}
