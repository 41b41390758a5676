//! A SYCL graph with buffers (`cmdbuf-runtime`, the SYCL-level layer): two
//! nodes write halves of a buffer, a third reads all of it into USM; the
//! edges come from the accessors' conflicts (by page: writes to disjoint
//! pages need no edge), as in SYCL's `command_graph`, and each execution
//! moves only the data that is out of date. Runs on the first selected device.
//!
//! ```sh
//! cargo run -p cmdbuf --example sycl_graph
//! ```

use cmdbuf::prelude::*;
use cmdbuf_runtime::graph::{FinalizeProperties, Graph, GraphProperties, NodeProperties};
use cmdbuf_runtime::{AccessMode, AccessRange, Buffer, BufferProperties};

const N: usize = 64;

fn main() -> Result<()> {
    cmdbuf::init_logging()?;
    let device = cmdbuf::load()?.first_device()?;
    println!("device {device}: {}", device.info().name);
    let context = Context::new(&device)?;
    let queue = cmdbuf_runtime::Queue::new(&context, QueueProperties::default())?;
    // Pages of 16 elements: the unit in which accessors conflict and data moves.
    let buffer = Buffer::from_host_with(&[0u32; N], &[N], &BufferProperties { page: Some(vec![16]) })?;
    let out = UsmAllocation::new(&context, UsmKind::Device, N * 4)?;

    // The buffer lives as long as the graph here, which SYCL asks to be said.
    let props = GraphProperties { assume_buffer_outlives_graph: true, ..Default::default() };
    let graph = Graph::new(&context, &device, props)?;
    let half = |first: usize, value: u32| {
        let buffer = &buffer;
        move |h: &mut cmdbuf_runtime::graph::Handler| {
            let acc = h.access(buffer, AccessMode::Write, AccessRange::new(&[first], &[N / 2]))?;
            h.fill(acc.ptr().byte_add(first * 4), &value.to_ne_bytes(), N / 2 * 4)
        }
    };
    let low = graph.add(half(0, 1), NodeProperties::new())?;
    let high = graph.add(half(N / 2, 2), NodeProperties::new())?;
    let read = graph.add(
        |h| {
            let acc = h.access(&buffer, AccessMode::Read, AccessRange::all())?;
            h.memcpy(out.ptr(), acc.ptr(), N * 4)
        },
        NodeProperties::new(),
    )?;
    assert!(low.predecessors().is_empty() && high.predecessors().is_empty(), "disjoint halves: no edge");
    assert_eq!(read.predecessors().len(), 2, "the read waits for both writes");

    let exec = graph.finalize(FinalizeProperties::default())?;
    for _ in 0..3 {
        queue.enqueue_graph(&exec, &[])?.wait()?;
    }
    let got: Vec<u32> = queue.core().clone_dtoh_range(out.ptr(), N, &[])?;
    assert_eq!(got, [[1u32; N / 2], [2u32; N / 2]].concat());
    let host = buffer.host_access(AccessMode::Read, AccessRange::all())?.to_vec::<u32>()?;
    assert_eq!(host, got, "the host sees what the device wrote");
    println!("ok: {} nodes, {} edges, 3 executions checked", graph.node_count(), graph.edge_count());
    Ok(())
}
