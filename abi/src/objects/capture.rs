//! The handles of UR's graph capture: a captured graph (one handle per graph,
//! listed by graph identity) and an executable graph.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, LazyLock, Weak};

use cmdbuf_core::{CapturedGraph, InstantiatedGraph};
use parking_lot::Mutex;

use crate::handle::Handle;
use crate::objects::context::ContextRef;
use crate::sys::*;

/// A recorded graph (`ur_exp_graph_handle_t`).
pub struct Graph {
    pub(crate) graph: CapturedGraph,
    /// Keeps the context handle alive while the graph is.
    pub(crate) _context: ContextRef,
    /// `urGraphSetDestructionCallbackExp`'s callbacks and their user data.
    pub(crate) callbacks: Mutex<Vec<(unsafe extern "C" fn(*mut c_void), usize)>>,
}

/// An executable graph (`ur_exp_executable_graph_handle_t`).
pub struct ExecGraph {
    pub(crate) exec: InstantiatedGraph,
    pub(crate) _context: ContextRef,
}

/// The graph handles alive, by graph identity.
pub(crate) static GRAPHS: LazyLock<Mutex<HashMap<u64, Weak<Handle<Graph>>>>> = LazyLock::new(Mutex::default);

impl Drop for Graph {
    fn drop(&mut self) {
        let mut graphs = GRAPHS.lock();
        if graphs.get(&self.graph.id()).is_some_and(|w| w.strong_count() == 0) {
            graphs.remove(&self.graph.id());
        }
        drop(graphs);
        for (callback, data) in self.callbacks.get_mut().drain(..) {
            // SAFETY: the application registered the callback with this user
            // data for this moment; UR forbids it to touch the graph.
            unsafe { callback(data as *mut c_void) };
        }
    }
}

/// The C handle of `graph`: the live handle of that graph, or a new one with
/// one application reference.
pub(crate) fn handle_of(graph: CapturedGraph, context: &ContextRef) -> ur_exp_graph_handle_t {
    let id = graph.id();
    // The lock is released before `live` drops: its drop may take it.
    let live = GRAPHS.lock().get(&id).and_then(Weak::upgrade);
    // A graph the application destroyed while a capture still held it gets
    // a new handle: the old one names nothing for the application any more.
    if let Some(live) = live.filter(|h| h.is_live()) {
        return live.raw();
    }
    let handle = Handle::new_arc(Graph { graph, _context: context.clone(), callbacks: Mutex::default() });
    GRAPHS.lock().insert(id, Arc::downgrade(&handle));
    Handle::into_raw(handle)
}
