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
//! Freed blocks are kept for reuse up to the pool's *threshold*
//! (`initial_threshold`, `set_new_threshold`; without one, all of them):
//! at each allocation and free, blocks whose free has completed are
//! released, largest first, while the pool holds more than the threshold.
//! [`MemoryPool::trim_to`] releases them down to a size at once. A block
//! whose free is still pending is never released early.
//!
//! Eager [`Queue::async_malloc`](crate::Queue::async_malloc) allocates from
//! the *default pool* of the queue's context and kind
//! ([`MemoryPool::default_pool`]): one per context and kind, made at first
//! use, without properties, kept while the context is used elsewhere (it is
//! released at a later default-pool lookup once only default pools hold the
//! context).
//!
//! In a graph (recording, or [`Handler::async_malloc_from_pool`](crate::graph::Handler::async_malloc_from_pool))
//! the allocation comes from the graph's own pool; only the pool's kind and
//! `zero_init` matter there (8.4.3 of the graph specification).
//!
//! ```
//! use cmdbuf_core::*;
//! use cmdbuf_runtime::{MemoryPool, MemoryPoolProperties, Queue};
//! # let device = cmdbuf_cpu::default_device();
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

use cmdbuf_core::context::{Context, ContextId};
use cmdbuf_core::device::Device;
use cmdbuf_core::error::Result;
use cmdbuf_core::event::Event;
use cmdbuf_core::memory::{UsmAllocation, UsmKind, UsmPtr};
use cmdbuf_core::{ensure, err};
use parking_lot::Mutex;

/// Properties of a memory pool (`property::memory_pool::*`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MemoryPoolProperties {
    /// Memory handed out reads as zero (`zero_init`): eagerly at each
    /// allocation; in a graph, at each finalize.
    pub zero_init: bool,
    /// The most bytes the pool may hold at once (`maximum_size`); `None`:
    /// no limit. An allocation beyond it is `OutOfResources`. Ignored in graphs.
    pub maximum_size: Option<usize>,
    /// The bytes of freed blocks the pool keeps for reuse
    /// (`initial_threshold`, the pool's first [`threshold`](MemoryPool::threshold));
    /// `None`: every freed block is kept. Ignored in graphs.
    pub initial_threshold: Option<usize>,
    /// A hint that kernels only read allocations of the pool (`read_only`).
    /// Kept and reported; none of the adapters has memory of its own for
    /// read-only data, so it places nothing differently (logged at debug
    /// level when a pool is made with it). Ignored in graphs.
    pub read_only: bool,
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

struct PoolState {
    /// Blocks handed out, by address.
    live: HashMap<u64, Arc<UsmAllocation>>,
    /// Blocks returned, with the event after which they may be reused.
    free: Vec<(Arc<UsmAllocation>, Event)>,
    reserved: usize,
    reserved_high: usize,
    used: usize,
    used_high: usize,
    threshold: usize,
}

impl PoolState {
    fn new(threshold: usize) -> PoolState {
        PoolState {
            live: HashMap::new(),
            free: Vec::new(),
            reserved: 0,
            reserved_high: 0,
            used: 0,
            used_high: 0,
            threshold,
        }
    }

    /// Releases free blocks whose free has completed, largest first, while
    /// the pool holds more than `keep` bytes.
    fn release_down_to(&mut self, keep: usize) {
        self.free.sort_by_key(|(b, _)| std::cmp::Reverse(b.size()));
        let mut i = 0;
        while self.reserved > keep && i < self.free.len() {
            if self.free[i].1.status().is_terminal() {
                let (block, _) = self.free.remove(i);
                self.reserved -= block.size();
                tracing::debug!(bytes = block.size(), reserved = self.reserved, "memory pool releases a block");
            } else {
                i += 1;
            }
        }
    }
}

/// The pool of each eager allocation, by context and address
/// (`async_free` gets only the pointer).
type Registry = HashMap<(ContextId, u64), Weak<PoolInner>>;

static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(Mutex::default);

/// The default pools ([`MemoryPool::default_pool`]).
static DEFAULTS: Mutex<Vec<MemoryPool>> = Mutex::new(Vec::new());

impl MemoryPool {
    /// A pool of `kind` memory for `device` in `context`
    /// (`memory_pool(context, device, kind, properties)`). `InvalidDevice`
    /// when `device` is not the context's device, `UnsupportedFeature` when
    /// it cannot allocate `kind`, `InvalidValue` for a `maximum_size` of 0.
    pub fn new(context: &Context, device: &Device, kind: UsmKind, props: MemoryPoolProperties) -> Result<MemoryPool> {
        ensure!(context.device() == device, InvalidDevice, "{device} is not the device of the context");
        ensure!(
            device.info().usm.contains(crate::aspect::usm_flag(kind)),
            UnsupportedFeature,
            "{device} cannot allocate {kind:?} USM: no memory pool of that kind"
        );
        ensure!(props.maximum_size != Some(0), InvalidValue, "a memory pool with a maximum size of 0 bytes");
        if props.read_only {
            tracing::debug!(%device, "read_only memory pool: a hint none of the adapters acts on");
        }
        let state = Mutex::new(PoolState::new(props.initial_threshold.unwrap_or(usize::MAX)));
        Ok(MemoryPool { inner: Arc::new(PoolInner { context: context.clone(), kind, props, state }) })
    }

    /// The default pool of `kind` for `device` in `context`
    /// (`context::ext_oneapi_get_default_memory_pool`), which eager
    /// [`Queue::async_malloc`](crate::Queue::async_malloc) allocates from:
    /// the same pool for every call with the same context and kind, made at
    /// the first, without properties. Errors as [`new`](Self::new).
    pub fn default_pool(context: &Context, device: &Device, kind: UsmKind) -> Result<MemoryPool> {
        let mut defaults = DEFAULTS.lock();
        // Pools whose context only default pools still hold (one handle
        // each): nobody can ask for them again. Dropped after the lock (a
        // pool's drop waits for its frees).
        let all = std::mem::take(&mut *defaults);
        let only_pools = |c: &Context| c.reference_count() <= all.iter().filter(|p| p.context() == c).count();
        let (gone, kept): (Vec<MemoryPool>, Vec<MemoryPool>) =
            all.iter().cloned().partition(|p| only_pools(p.context()));
        drop(all);
        *defaults = kept;
        let found = defaults.iter().find(|p| p.context() == context && p.alloc_kind() == kind).cloned();
        let pool = match found {
            Some(pool) => {
                ensure!(context.device() == device, InvalidDevice, "{device} is not the device of the context");
                pool
            }
            None => {
                let pool = MemoryPool::new(context, device, kind, MemoryPoolProperties::default())?;
                defaults.push(pool.clone());
                pool
            }
        };
        drop(defaults);
        drop(gone);
        Ok(pool)
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
        self.inner.state.lock().used
    }

    /// The most bytes the pool held at once since it was made or this was
    /// reset (`reserved_size_high`).
    pub fn reserved_size_high(&self) -> usize {
        self.inner.state.lock().reserved_high
    }

    /// The most bytes handed out at once since the pool was made or this was
    /// reset (`used_size_high`).
    pub fn used_size_high(&self) -> usize {
        self.inner.state.lock().used_high
    }

    /// Sets [`reserved_size_high`](Self::reserved_size_high) to the current
    /// reservation (`reset_reserved_size_high`).
    pub fn reset_reserved_size_high(&self) {
        let mut state = self.inner.state.lock();
        state.reserved_high = state.reserved;
    }

    /// Sets [`used_size_high`](Self::used_size_high) to the bytes handed out
    /// now (`reset_used_size_high`).
    pub fn reset_used_size_high(&self) {
        let mut state = self.inner.state.lock();
        state.used_high = state.used;
    }

    /// The bytes of freed blocks the pool keeps for reuse (`get_threshold`;
    /// `usize::MAX` for a pool made without `initial_threshold`).
    pub fn threshold(&self) -> usize {
        self.inner.state.lock().threshold
    }

    /// Sets the [`threshold`](Self::threshold) (`set_new_threshold`) and
    /// releases what it no longer keeps.
    pub fn set_new_threshold(&self, threshold: usize) {
        let mut state = self.inner.state.lock();
        state.threshold = threshold;
        state.release_down_to(threshold);
    }

    /// Releases free blocks, largest first, until the pool holds at most
    /// `min_bytes_to_keep` bytes or no free block whose free has completed
    /// is left (`trim_to`). Blocks handed out, and blocks whose free is
    /// still pending, stay.
    pub fn trim_to(&self, min_bytes_to_keep: usize) {
        self.inner.state.lock().release_down_to(min_bytes_to_keep);
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
        queue: &cmdbuf_core::Queue,
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
        let threshold = state.threshold;
        state.release_down_to(threshold);
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
                state.reserved_high = state.reserved_high.max(state.reserved);
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
        state.used += block.size();
        state.used_high = state.used_high.max(state.used);
        state.live.insert(ptr.addr(), block);
        REGISTRY.lock().insert((inner.context.id(), ptr.addr()), Arc::downgrade(inner));
        Ok((ptr, ready))
    }

    /// The eager `async_free` of `ptr`, if a pool handed it out: `None`
    /// when none did.
    pub(crate) fn free_eager(queue: &cmdbuf_core::Queue, ptr: UsmPtr, wait: &[&Event]) -> Option<Result<Event>> {
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
            state.used -= block.size();
            state.free.push((block, freed.clone()));
            let threshold = state.threshold;
            state.release_down_to(threshold);
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
