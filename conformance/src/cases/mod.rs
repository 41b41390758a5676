//! The cases, by scenario group.

use crate::harness::Case;

// One folder per crate the cases go through; every case module keeps its
// name here.
mod runtime;
mod ur;

use runtime::{
    async_alloc, capture, graph_buffers, graph_build, graph_host_task, graph_memory, graph_property, graph_record,
    graph_spec, graph_subgraph, graph_update,
};
pub use runtime::{buffers, collectives, graph_multi_device, multi_device};
use ur::{
    commands, copy_fill, device, eager, enqueue, event_sync, host_memory, in_flight, in_order, kernel_event_sync,
    large, lifecycle, memory_errors, native_adopt, native_command, objects, partition, programs, property, read_write,
    rect, regression, shared_usm, stress, sub_buffer, timestamp, update_args, update_events, update_invalid,
    update_kernel_handle, update_ndrange, update_scale, user_events, usm_2d,
};

/// Every case of the suite, in a stable order.
pub fn all() -> Vec<Case> {
    let groups: &[fn() -> Vec<Case>] = &[
        lifecycle::cases,
        commands::cases,
        objects::cases,
        programs::cases,
        device::cases,
        partition::cases,
        timestamp::cases,
        copy_fill::cases,
        read_write::cases,
        rect::cases,
        memory_errors::cases,
        shared_usm::cases,
        sub_buffer::cases,
        host_memory::cases,
        usm_2d::cases,
        enqueue::cases,
        in_order::cases,
        event_sync::cases,
        kernel_event_sync::cases,
        regression::cases,
        update_args::cases,
        update_ndrange::cases,
        update_kernel_handle::cases,
        update_invalid::cases,
        update_events::cases,
        update_scale::cases,
        eager::cases,
        user_events::cases,
        in_flight::cases,
        native_command::cases,
        native_adopt::cases,
        property::cases,
        stress::cases,
        large::cases,
        graph_build::cases,
        graph_record::cases,
        graph_host_task::cases,
        graph_subgraph::cases,
        graph_update::cases,
        graph_memory::cases,
        graph_property::cases,
        graph_spec::cases,
        async_alloc::cases,
        capture::cases,
        buffers::cases,
        graph_buffers::cases,
    ];
    groups.iter().flat_map(|g| g()).collect()
}
