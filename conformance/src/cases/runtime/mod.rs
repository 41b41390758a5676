//! The cases that go through cmdbuf-runtime, the SYCL-level layer: buffers and
//! accessors, graphs (building, recording, host tasks, sub-graphs, updates,
//! graph-owned memory), asynchronous allocation, several devices, and UR
//! capture, whose cases replay the graph cases' diamond.

// Helpers of UR-level cases that graph cases reuse.
use super::ur::{native_command, prop_runner};

pub(super) mod async_alloc;
pub mod buffers;
pub(super) mod capture;
pub mod collectives;
pub(super) mod cross;
pub(super) mod graph_buffers;
pub(super) mod graph_build;
pub(super) mod graph_common;
pub(super) mod graph_host_task;
pub(super) mod graph_memory;
pub mod graph_multi_device;
pub(super) mod graph_property;
pub(super) mod graph_record;
pub(super) mod graph_spec;
pub(super) mod graph_subgraph;
pub(super) mod graph_update;
pub mod multi_device;
