//! Memory pools of `sycl_ext_oneapi_async_memory_alloc` (`memory_pool`):
//! what `async_malloc_from_pool` allocates from, eagerly on a queue, and
//! what a graph's allocation node takes its kind and `zero_init` from.
//!
//! Eagerly ([`Queue::async_malloc_from_pool`](crate::Queue::async_malloc_from_pool),
//! [`Queue::async_free`](crate::Queue::async_free)), a pool keeps USM
//! allocations of its kind (*blocks*). An allocation takes the smallest free
//! block that fits, after the free that released it, or a new block; the
//! returned event completes when the memory is usable (zeroed first when the
//! pool has `zero_init`). `async_free` returns the block to the pool after
//! its wait list. The pool's blocks are released when it is dropped (after
//! the commands that freed blocks have completed): the application keeps the
//! pool alive while allocations from it are in use; an allocation still
//! handed out then is released with the pool.
//!
//! In a graph (recording, or [`Handler::async_malloc_from_pool`](crate::graph::Handler::async_malloc_from_pool))
//! the allocation comes from the graph's own pool; only the pool's kind and
//! `zero_init` matter there (8.4.3 of the graph specification).
//!
//! ```
//! use ur_core::*;
//! use ur_runtime::{MemoryPool, MemoryPoolProperties, Queue};
//! # let device = ur_adapter_cpu::default_device();
//! let ctx = Context::new(&device)?;
//! let queue = Queue::new(&ctx, QueueProperties::default())?;
//! let props = MemoryPoolProperties { zero_init: true, ..Default::default() };
//! let pool = MemoryPool::new(&ctx, &device, UsmKind::Device, props)?;
//! let (ptr, ready) = queue.async_malloc_from_pool(64, &pool, &[])?;
//! let mut out = [1u8; 64];
//! queue.read_usm(ptr, &mut out, &[&ready])?;
//! assert_eq!(out, [0; 64]);
//! queue.async_free(ptr, &[])?.wait()?;
//! assert_eq!(pool.used_size_current(), 0);
//! assert_eq!(pool.reserved_size_current(), 64);
//! # Ok::<(), UrError>(())
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, LazyLock, Weak};

use parking_lot::Mutex;
use ur_core::context::{Context, ContextId};
use ur_core::device::Device;
use ur_core::error::Result;
use ur_core::event::Event;
use ur_core::memory::{UsmAllocation, UsmKind, UsmPtr};
use ur_core::{ensure, err};

/// Properties of a memory pool (`property::memory_pool::*`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MemoryPoolProperties {
    /// Memory handed out reads as zero (`zero_init`): eagerly at each
    /// allocation; in a graph, at each finalize.
    pub zero_init: bool,
    /// The most bytes the pool may hold at once (`maximum_size`); `None`:
    /// no limit. An allocation beyond it is `OutOfResources`. Ignored in graphs.
    pub maximum_size: Option<usize>,
}

/// A memory pool. Clones share the pool.
#[derive(Clone)]
pub struct MemoryPool {
    inner: Arc<PoolInner>,
}

struct PoolInner {
    context: Context,
    kind: UsmKind,
    props: MemoryPoolProperties,
    state: Mutex<PoolState>,
}

#[derive(Default)]
struct PoolState {
    /// Blocks handed out, by address.
    live: HashMap<u64, Arc<UsmAllocation>>,
    /// Blocks returned, with the event after which they may be reused.
    free: Vec<(Arc<UsmAllocation>, Event)>,
    reserved: usize,
}

/// The pool of each eager allocation, by context and address
/// (`async_free` gets only the pointer).
type Registry = HashMap<(ContextId, u64), Weak<PoolInner>>;

static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(Mutex::default);

impl MemoryPool {
    /// A pool of `kind` memory for `device` in `context`
    /// (`memory_pool(context, device, kind, properties)`). `InvalidDevice`
    /// when `device` is not the context's device, `UnsupportedFeature` when
    /// it cannot allocate `kind`, `InvalidValue` for a `maximum_size` of 0.
    pub fn new(context: &Context, device: &Device, kind: UsmKind, props: MemoryPoolProperties) -> Result<MemoryPool> {
        ensure!(context.device() == device, InvalidDevice, "{device} is not the device of the context");
        ensure!(
            device.info().usm.contains(crate::graph::usm_flag(kind)),
            UnsupportedFeature,
            "{device} cannot allocate {kind:?} USM: no memory pool of that kind"
        );
        ensure!(props.maximum_size != Some(0), InvalidValue, "a memory pool with a maximum size of 0 bytes");
        Ok(MemoryPool { inner: Arc::new(PoolInner { context: context.clone(), kind, props, state: Mutex::default() }) })
    }

    /// The context.
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    /// The device.
    pub fn device(&self) -> &Device {
        self.inner.context.device()
    }

    /// The kind of memory it hands out (`get_alloc_kind`).
    pub fn alloc_kind(&self) -> UsmKind {
        self.inner.kind
    }

    /// Its properties.
    pub fn properties(&self) -> MemoryPoolProperties {
        self.inner.props
    }

    /// Bytes the pool holds, handed out or not (`reserved_size_current`).
    pub fn reserved_size_current(&self) -> usize {
        self.inner.state.lock().reserved
    }

    /// Bytes handed out and not yet freed (`used_size_current`).
    pub fn used_size_current(&self) -> usize {
        self.inner.state.lock().live.values().map(|b| b.size()).sum()
    }

    /// `InvalidContext` unless the pool may serve a graph of `context`.
    pub(crate) fn check_for_graph(&self, context: &Context) -> Result<()> {
        ensure!(
            &self.inner.context == context,
            InvalidContext,
            "a memory pool of another context or device than the graph's"
        );
        Ok(())
    }

    /// The eager `async_malloc_from_pool` on `queue` after `wait`.
    pub(crate) fn allocate_eager(
        &self,
        queue: &ur_core::Queue,
        size: usize,
        wait: &[&Event],
    ) -> Result<(UsmPtr, Event)> {
        let inner = &self.inner;
        ensure!(
            queue.context() == &inner.context,
            InvalidQueue,
            "a queue of another context or device than the memory pool's"
        );
        ensure!(size != 0, InvalidUsmSize, "async_malloc_from_pool of 0 bytes");
        queue.refuse_capture("an allocation from a memory pool")?;
        let mut state = inner.state.lock();
        let reuse = state
            .free
            .iter()
            .enumerate()
            .filter(|(_, (b, _))| b.size() >= size)
            .min_by_key(|(_, (b, _))| b.size())
            .map(|(i, _)| i);
        let (block, after) = match reuse {
            Some(i) => {
                let (block, freed) = state.free.swap_remove(i);
                (block, Some(freed))
            }
            None => {
                if let Some(max) = inner.props.maximum_size {
                    ensure!(
                        state.reserved + size <= max,
                        OutOfResources,
                        "the memory pool holds {} bytes; {size} more exceed its maximum size of {max}",
                        state.reserved
                    );
                }
                let block = Arc::new(UsmAllocation::new(&inner.context, inner.kind, size)?);
                state.reserved += size;
                (block, None)
            }
        };
        let mut waits: Vec<&Event> = wait.to_vec();
        waits.extend(after.as_ref());
        let ready = if inner.props.zero_init {
            queue.usm_fill(block.ptr(), &[0], block.size(), &waits)
        } else {
            queue.events_wait(&waits)
        };
        let ready = match ready {
            Ok(e) => e,
            Err(e) => {
                // The block stays in the pool, usable after what it waited for.
                if let Some(freed) = after {
                    state.free.push((block, freed));
                } else {
                    state.free.push((block, queue.events_wait(&[])?));
                }
                return Err(e);
            }
        };
        let ptr = block.ptr();
        state.live.insert(ptr.addr(), block);
        REGISTRY.lock().insert((inner.context.id(), ptr.addr()), Arc::downgrade(inner));
        Ok((ptr, ready))
    }

    /// The eager `async_free` of `ptr`, if a pool handed it out: `None`
    /// when none did.
    pub(crate) fn free_eager(queue: &ur_core::Queue, ptr: UsmPtr, wait: &[&Event]) -> Option<Result<Event>> {
        let key = (queue.context().id(), ptr.addr());
        let pool = REGISTRY.lock().get(&key)?.upgrade()?;
        Some((|| {
            queue.refuse_capture("an async_free to a memory pool")?;
            let mut state = pool.state.lock();
            let block = state.live.get(&ptr.addr()).cloned().ok_or_else(|| {
                err!(InvalidValue, "{ptr:?} is not an allocation of the memory pool (freed already?)")
            })?;
            let freed = queue.events_wait(wait)?;
            state.live.remove(&ptr.addr());
            REGISTRY.lock().remove(&key);
            state.free.push((block, freed.clone()));
            Ok(freed)
        })())
    }
}

impl Drop for PoolInner {
    fn drop(&mut self) {
        let state = self.state.get_mut();
        let mut registry = REGISTRY.lock();
        for addr in state.live.keys() {
            registry.remove(&(self.context.id(), *addr));
        }
        // Blocks freed by commands still pending are released once those ran.
        for (_, freed) in &state.free {
            let _ = freed.wait();
        }
    }
}

impl fmt::Debug for MemoryPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryPool")
            .field("kind", &self.inner.kind)
            .field("props", &self.inner.props)
            .field("reserved", &self.reserved_size_current())
            .finish()
    }
}
