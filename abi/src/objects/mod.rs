//! The handle objects, above the boundary: one struct per UR handle kind
//! (what a handle owns beside its cmdbuf-core object), with what several entry
//! points share about them, as UR's adapters keep `context.hpp` beside
//! `context.cpp`. Nothing here names an entry point or the tables.

pub(crate) mod adapter;
pub(crate) mod capture;
pub(crate) mod command_buffer;
pub(crate) mod context;
pub(crate) mod device;
pub(crate) mod event;
pub(crate) mod kernel;
pub(crate) mod logging;
pub(crate) mod mem;
pub(crate) mod open;
pub(crate) mod platform;
pub(crate) mod program;
pub(crate) mod queue;
pub(crate) mod topology;

// The handle kinds: object type, C handle type, tag, name and the error
// for a handle of the wrong kind.
crate::boundary::handle::handle_kinds! {
    adapter::Adapter => ur_adapter_handle_t, 0x5552_0001, "adapter", InvalidArgument;
    platform::Platform => ur_platform_handle_t, 0x5552_0002, "platform", InvalidPlatform;
    device::Device => ur_device_handle_t, 0x5552_0003, "device", InvalidDevice;
    context::Context => ur_context_handle_t, 0x5552_0004, "context", InvalidContext;
    queue::Queue => ur_queue_handle_t, 0x5552_0005, "queue", InvalidQueue;
    event::Event => ur_event_handle_t, 0x5552_0006, "event", InvalidEvent;
    mem::Mem => ur_mem_handle_t, 0x5552_0007, "memory object", InvalidMemObject;
    command_buffer::CommandBuffer => ur_exp_command_buffer_handle_t, 0x5552_000a, "command buffer", InvalidCommandBuffer;
    command_buffer::Command => ur_exp_command_buffer_command_handle_t, 0x5552_000b, "command handle", InvalidCommandHandle;
    program::Program => ur_program_handle_t, 0x5552_0008, "program", InvalidProgram;
    kernel::Kernel => ur_kernel_handle_t, 0x5552_0009, "kernel", InvalidKernel;
    capture::Graph => ur_exp_graph_handle_t, 0x5552_0010, "graph", InvalidGraph;
    capture::ExecGraph => ur_exp_executable_graph_handle_t, 0x5552_0011, "executable graph", InvalidGraph;
}
