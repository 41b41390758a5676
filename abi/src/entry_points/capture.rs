//! UR's graph capture: `urQueue{Begin,End}GraphCaptureExp`,
//! `urQueueBeginCaptureIntoGraphExp`, `urQueueIsGraphCaptureEnabledExp`,
//! `urQueueGetGraphExp`, `urGraph*Exp` and `urEnqueueGraphExp`, one to one
//! over cmdbuf-core's `CapturedGraph` and `InstantiatedGraph`.
//!
//! UR returns *the same* graph handle from every call that names one graph
//! (the graph given to `urQueueBeginCaptureIntoGraphExp`, then
//! `urQueueGetGraphExp` and `urQueueEndGraphCaptureExp`), and graphs have no
//! retain or release, only `urGraphDestroyExp`. So the graph handles alive
//! are listed by graph identity: a call naming a graph that has a handle
//! returns it, without a new reference; otherwise it makes the handle.

#![allow(non_snake_case)]

use std::ffi::{CStr, c_char, c_void};
use std::os::unix::ffi::OsStrExt;

use cmdbuf_core::CapturedGraph;

use crate::entry::guard;
use crate::handle::Handle;
use crate::info::write_out;
use crate::objects::capture::{ExecGraph, Graph, handle_of};
use crate::objects::context::Context;
use crate::objects::event::EagerCall;
use crate::objects::queue::Queue;
use crate::sys::*;

/// # Safety
/// UR's contract for `urGraphCreateExp`.
pub(crate) unsafe extern "C" fn urGraphCreateExp(
    context: ur_context_handle_t,
    graph: *mut ur_exp_graph_handle_t,
) -> ur_result_t {
    guard("urGraphCreateExp", || {
        // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"), all `arc` needs.
        let context = unsafe { Handle::<Context>::arc(context)? };
        let created = CapturedGraph::new(context.value.core())?;
        // SAFETY: non-null because checks.rs rejected `NULL == phGraph`; writable per the contract ("Out-pointers").
        unsafe { write_out(graph, handle_of(created, &context)) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urQueueBeginGraphCaptureExp`.
pub(crate) unsafe extern "C" fn urQueueBeginGraphCaptureExp(queue: ur_queue_handle_t) -> ur_result_t {
    guard("urQueueBeginGraphCaptureExp", || {
        // SAFETY: `queue` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let queue = unsafe { Handle::<Queue>::get(queue)? };
        queue.value.core().begin_capture()
    })
}

/// # Safety
/// UR's contract for `urQueueBeginCaptureIntoGraphExp`.
pub(crate) unsafe extern "C" fn urQueueBeginCaptureIntoGraphExp(
    queue: ur_queue_handle_t,
    graph: ur_exp_graph_handle_t,
) -> ur_result_t {
    guard("urQueueBeginCaptureIntoGraphExp", || {
        // SAFETY: `queue` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let queue = unsafe { Handle::<Queue>::get(queue)? };
        // SAFETY: `graph` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let graph = unsafe { Handle::<Graph>::get(graph)? };
        queue.value.core().begin_capture_into(&graph.value.graph)
    })
}

/// # Safety
/// UR's contract for `urQueueEndGraphCaptureExp`.
pub(crate) unsafe extern "C" fn urQueueEndGraphCaptureExp(
    queue: ur_queue_handle_t,
    graph: *mut ur_exp_graph_handle_t,
) -> ur_result_t {
    guard("urQueueEndGraphCaptureExp", || {
        // SAFETY: `queue` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let queue = unsafe { Handle::<Queue>::get(queue)? };
        let captured = queue.value.core().end_capture()?;
        let handle = handle_of(captured, queue.value.context());
        // SAFETY: non-null because checks.rs rejected `NULL == phGraph`; writable per the contract ("Out-pointers").
        unsafe { write_out(graph, handle) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urQueueIsGraphCaptureEnabledExp`.
pub(crate) unsafe extern "C" fn urQueueIsGraphCaptureEnabledExp(
    queue: ur_queue_handle_t,
    result: *mut bool,
) -> ur_result_t {
    guard("urQueueIsGraphCaptureEnabledExp", || {
        // SAFETY: `queue` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let queue = unsafe { Handle::<Queue>::get(queue)? };
        // SAFETY: non-null because checks.rs rejected `NULL == pResult`; writable per the contract ("Out-pointers").
        unsafe { write_out(result, queue.value.core().is_capturing()) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urQueueGetGraphExp`.
pub(crate) unsafe extern "C" fn urQueueGetGraphExp(
    queue: ur_queue_handle_t,
    graph: *mut ur_exp_graph_handle_t,
) -> ur_result_t {
    guard("urQueueGetGraphExp", || {
        // SAFETY: `queue` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let queue = unsafe { Handle::<Queue>::get(queue)? };
        let captured = queue.value.core().capture_graph()?;
        let handle = handle_of(captured, queue.value.context());
        // SAFETY: non-null because checks.rs rejected `NULL == phGraph`; writable per the contract ("Out-pointers").
        unsafe { write_out(graph, handle) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urGraphInstantiateGraphExp`.
pub(crate) unsafe extern "C" fn urGraphInstantiateGraphExp(
    graph: ur_exp_graph_handle_t,
    exec: *mut ur_exp_executable_graph_handle_t,
) -> ur_result_t {
    guard("urGraphInstantiateGraphExp", || {
        // SAFETY: `graph` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let graph = unsafe { Handle::<Graph>::get(graph)? };
        let made = ExecGraph { exec: graph.value.graph.instantiate()?, _context: graph.value._context.clone() };
        // SAFETY: non-null because checks.rs rejected `NULL == phExecGraph`; writable per the contract
        // ("Out-pointers").
        unsafe { write_out(exec, Handle::create(made)) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urEnqueueGraphExp`.
pub(crate) unsafe extern "C" fn urEnqueueGraphExp(
    queue: ur_queue_handle_t,
    exec: ur_exp_executable_graph_handle_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueGraphExp", || {
        // The wait list is checked before the graph, as UR's conformance
        // test expects of a malformed list given with a null graph.
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        // SAFETY: `exec` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let exec = unsafe { Handle::<ExecGraph>::get(exec)? };
        let done = call.core().enqueue_graph(&exec.value.exec, &call.wait)?;
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, false, event, ur_command_t::UR_COMMAND_ENQUEUE_GRAPH_EXP) }
    })
}

/// # Safety
/// UR's contract for `urGraphDestroyExp`.
pub(crate) unsafe extern "C" fn urGraphDestroyExp(graph: ur_exp_graph_handle_t) -> ur_result_t {
    // A capture in progress keeps the graph itself until it ends; executable
    // graphs made from it do not need it.
    // SAFETY: `graph` is null or one of this adapter's handles (entry_points doc, "Handles"), all `release` needs.
    guard("urGraphDestroyExp", || unsafe { Handle::<Graph>::release(graph) })
}

/// # Safety
/// UR's contract for `urGraphExecutableGraphDestroyExp`.
pub(crate) unsafe extern "C" fn urGraphExecutableGraphDestroyExp(
    exec: ur_exp_executable_graph_handle_t,
) -> ur_result_t {
    // Submissions in flight keep what they run.
    // SAFETY: `exec` is null or one of this adapter's handles (entry_points doc, "Handles"), all `release` needs.
    guard("urGraphExecutableGraphDestroyExp", || unsafe { Handle::<ExecGraph>::release(exec) })
}

/// # Safety
/// UR's contract for `urGraphIsEmptyExp`.
pub(crate) unsafe extern "C" fn urGraphIsEmptyExp(graph: ur_exp_graph_handle_t, result: *mut bool) -> ur_result_t {
    guard("urGraphIsEmptyExp", || {
        // SAFETY: `graph` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let graph = unsafe { Handle::<Graph>::get(graph)? };
        // SAFETY: non-null because checks.rs rejected `NULL == pResult`; writable per the contract ("Out-pointers").
        unsafe { write_out(result, graph.value.graph.is_empty()) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urGraphGetIdExp`.
pub(crate) unsafe extern "C" fn urGraphGetIdExp(graph: ur_exp_graph_handle_t, id: *mut u64) -> ur_result_t {
    guard("urGraphGetIdExp", || {
        // SAFETY: `graph` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let graph = unsafe { Handle::<Graph>::get(graph)? };
        // SAFETY: non-null because checks.rs rejected `NULL == pGraphId`; writable per the contract ("Out-pointers").
        unsafe { write_out(id, graph.value.graph.id()) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urGraphSetDestructionCallbackExp`.
pub(crate) unsafe extern "C" fn urGraphSetDestructionCallbackExp(
    graph: ur_exp_graph_handle_t,
    callback: ur_exp_graph_destruction_callback_t,
    user_data: *mut c_void,
) -> ur_result_t {
    guard("urGraphSetDestructionCallbackExp", || {
        // SAFETY: `graph` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let graph = unsafe { Handle::<Graph>::get(graph)? };
        let Some(callback) = callback else {
            return Err(cmdbuf_core::err!(InvalidNullPointer, "pfnCallback is null"));
        };
        graph.value.callbacks.lock().push((callback, user_data as usize));
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urGraphDumpContentsExp`.
pub(crate) unsafe extern "C" fn urGraphDumpContentsExp(
    graph: ur_exp_graph_handle_t,
    path: *const c_char,
) -> ur_result_t {
    guard("urGraphDumpContentsExp", || {
        // SAFETY: `graph` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let graph = unsafe { Handle::<Graph>::get(graph)? };
        // SAFETY: non-null because checks.rs rejected `NULL == filePath`; NUL-terminated per the contract ("Arrays and
        // strings").
        let path = unsafe { CStr::from_ptr(path) };
        graph.value.graph.dump(std::ffi::OsStr::from_bytes(path.to_bytes()))
    })
}
