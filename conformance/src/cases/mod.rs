//! The cases, by scenario group.

use crate::harness::Case;

mod async_alloc;
pub mod buffers;
mod capture;
mod commands;
mod copy_fill;
mod device;
mod eager;
mod enqueue;
mod event_sync;
mod graph_buffers;
mod graph_build;
mod graph_common;
mod graph_host_task;
mod graph_memory;
pub mod graph_multi_device;
mod graph_property;
mod graph_record;
mod graph_spec;
mod graph_subgraph;
mod graph_update;
mod in_flight;
mod in_order;
mod kernel_event_sync;
mod large;
mod lifecycle;
mod memory_errors;
pub mod multi_device;
mod native_adopt;
mod native_command;
mod objects;
mod partition;
mod programs;
mod prop_runner;
mod property;
mod read_write;
mod rect;
mod regression;
mod shared_usm;
mod stress;
mod sub_buffer;
mod timestamp;
mod update_args;
mod update_events;
mod update_invalid;
mod update_kernel_handle;
mod update_ndrange;
mod update_scale;
mod user_events;
mod usm_2d;

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
