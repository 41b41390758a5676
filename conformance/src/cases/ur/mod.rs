//! The cases that use cmdbuf-core's API only (through the `cmdbuf` crate): UR's
//! `exp_command_buffer` scenarios, what UR leaves out, eager queues, native
//! commands and adoption, random DAGs against a host model, stress.

pub(super) mod commands;
pub(super) mod copy_fill;
pub(super) mod device;
pub(super) mod eager;
pub(super) mod enqueue;
pub(super) mod event_sync;
pub(super) mod host_memory;
pub(super) mod in_flight;
pub(super) mod in_order;
pub(super) mod kernel_event_sync;
pub(super) mod large;
pub(super) mod lifecycle;
pub(super) mod memory_errors;
pub(super) mod native_adopt;
pub(super) mod native_command;
pub(super) mod objects;
pub(super) mod partition;
pub(super) mod programs;
pub(super) mod prop_runner;
pub(super) mod property;
pub(super) mod read_write;
pub(super) mod rect;
pub(super) mod regression;
pub(super) mod shared_usm;
pub(super) mod stress;
pub(super) mod sub_buffer;
pub(super) mod timestamp;
pub(super) mod update_args;
pub(super) mod update_events;
pub(super) mod update_invalid;
pub(super) mod update_kernel_handle;
pub(super) mod update_ndrange;
pub(super) mod update_scale;
pub(super) mod user_events;
pub(super) mod usm_2d;
