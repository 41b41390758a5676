//! Graph-owned memory: the pool that `async_malloc` nodes draw from.
//!
//! Each modifiable graph with allocation nodes owns a pool of USM device
//! allocations (*chunks*). An allocation gets its address when its node is
//! added, so the pointer is a real USM pointer of the context: every later
//! node can use it exactly like any other allocation, and memory commands are
//! validated against it the usual way.
//!
//! Memory is reused by liveness. When an `async_free` node releases an
//! allocation, its range becomes available to any later allocation whose
//! node is ordered after that free node (the free is one of its ancestors).
//! Edges are only ever added, so such an order cannot be undone: the two
//! allocations can never be live at once, in any execution, and share the
//! same bytes. An allocation with no such free before it gets a new chunk.
//! The pool's size is what [`get_required_mem_size`](crate::graph::Graph::required_mem_size)
//! reports; the sum of the requested sizes, minus it, is the saving.

use std::sync::Arc;

use cmdbuf_core::context::Context;
use cmdbuf_core::error::Result;
use cmdbuf_core::memory::{UsmAllocation, UsmKind, UsmPtr};
use cmdbuf_core::{ensure, err};

/// Allocation sizes are rounded up to this, which keeps every pointer the
/// pool hands out aligned for any element type.
pub(crate) const POOL_ALIGN: usize = 256;

/// A range of a chunk that an `async_free` node released.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Released {
    chunk: u32,
    offset: usize,
    size: usize,
    /// The free node after which the range may be reused; `None` for a range
    /// no node ever used (an allocation whose node was never added).
    freed_by: Option<u32>,
}

/// Where an allocation lives.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    /// Allocation number.
    pub(crate) alloc: u32,
    /// Chunk number.
    pub(crate) chunk: u32,
    /// Byte offset into the chunk.
    pub(crate) offset: usize,
    /// Whether the chunk is new (the caller allocates it).
    pub(crate) new_chunk: bool,
}

#[derive(Clone, Debug)]
struct AllocRecord {
    chunk: u32,
    offset: usize,
    size: usize,
    requested: usize,
    freed: bool,
}

/// The pool's bookkeeping, independent of real memory (unit-tested alone).
#[derive(Default, Debug)]
pub(crate) struct PoolPlan {
    chunks: Vec<usize>,
    released: Vec<Released>,
    allocs: Vec<AllocRecord>,
}

impl PoolPlan {
    /// Places an allocation of `requested` bytes. `reusable(free_node)` says
    /// whether the new allocation's node is ordered after `free_node`.
    pub(crate) fn allocate(&mut self, requested: usize, reusable: impl FnMut(u32) -> bool) -> Placement {
        self.allocate_where(requested, reusable, true)
    }

    fn allocate_where(
        &mut self,
        requested: usize,
        mut reusable: impl FnMut(u32) -> bool,
        reuse_unused: bool,
    ) -> Placement {
        let size = requested.div_ceil(POOL_ALIGN).max(1) * POOL_ALIGN;
        let best = self
            .released
            .iter()
            .enumerate()
            .filter(|(_, r)| r.size >= size && r.freed_by.map_or(reuse_unused, &mut reusable))
            .min_by_key(|(_, r)| r.size)
            .map(|(i, _)| i);
        let alloc = self.allocs.len() as u32;
        let (chunk, offset, new_chunk) = match best {
            Some(i) => {
                let r = &mut self.released[i];
                let placed = (r.chunk, r.offset);
                r.offset += size;
                r.size -= size;
                if r.size == 0 {
                    self.released.swap_remove(i);
                }
                (placed.0, placed.1, false)
            }
            None => {
                self.chunks.push(size);
                (self.chunks.len() as u32 - 1, 0, true)
            }
        };
        self.allocs.push(AllocRecord { chunk, offset, size, requested, freed: false });
        Placement { alloc, chunk, offset, new_chunk }
    }

    /// Places an allocation of `requested` bytes in a chunk of its own, which
    /// no earlier allocation used (a `zero_init` allocation: the zeros
    /// written at finalize must be what it reads first).
    pub(crate) fn allocate_fresh(&mut self, requested: usize) -> Placement {
        self.allocate_where(requested, |_| false, false)
    }

    /// Releases allocation `alloc` after node `free_node` (`None`: the
    /// allocation was never used, its range is free for anyone).
    pub(crate) fn free(&mut self, alloc: u32, free_node: Option<u32>) -> std::result::Result<(), &'static str> {
        let record = self.allocs.get_mut(alloc as usize).ok_or("no such allocation")?;
        if std::mem::replace(&mut record.freed, true) {
            return Err("the allocation was already freed");
        }
        self.released.push(Released {
            chunk: record.chunk,
            offset: record.offset,
            size: record.size,
            freed_by: free_node,
        });
        Ok(())
    }

    /// Bytes of all chunks: the memory the graph needs.
    pub(crate) fn required(&self) -> usize {
        self.chunks.iter().sum()
    }

    /// Bytes requested by all allocations.
    pub(crate) fn requested(&self) -> usize {
        self.allocs.iter().map(|a| a.requested).sum()
    }

    /// Number of allocations placed.
    pub(crate) fn allocations(&self) -> usize {
        self.allocs.len()
    }

    /// Whether allocation `alloc` was freed.
    pub(crate) fn is_freed(&self, alloc: u32) -> bool {
        self.allocs[alloc as usize].freed
    }
}

/// Memory figures of a graph's pool.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MemoryStats {
    /// Allocation nodes.
    pub allocations: usize,
    /// The sum of their requested sizes, in bytes.
    pub requested_bytes: usize,
    /// The pool's size: what the graph needs, after reuse and rounding.
    pub required_bytes: usize,
}

impl MemoryStats {
    /// Bytes saved by liveness-based reuse (zero when rounding costs more).
    pub fn saved_bytes(&self) -> usize {
        self.requested_bytes.saturating_sub(self.required_bytes)
    }
}

/// The pool of one modifiable graph: the plan and the chunks behind it.
#[derive(Default)]
pub(crate) struct GraphPool {
    plan: PoolPlan,
    chunks: Vec<Arc<UsmAllocation>>,
    /// The pointer of each allocation, by allocation number.
    pointers: Vec<UsmPtr>,
    /// The `zero_init` allocations (number, pointer, size): zeroed at each
    /// finalize.
    zero_init: Vec<(u32, UsmPtr, usize)>,
    /// The last execution of an executable graph made from this one.
    runs: RunSlot,
}

/// Where executable graphs leave their last execution's event.
pub(crate) type RunSlot = Arc<parking_lot::Mutex<Option<cmdbuf_core::event::Event>>>;

impl GraphPool {
    /// Allocates `size` bytes of device memory for a node ordered after the
    /// free nodes for which `reusable` holds; a `zero_init` allocation gets
    /// memory no other allocation used before it, zeroed at each finalize.
    pub(crate) fn allocate(
        &mut self,
        context: &Context,
        kind: UsmKind,
        size: usize,
        zero_init: bool,
        reusable: impl FnMut(u32) -> bool,
    ) -> Result<(u32, UsmPtr)> {
        ensure!(
            kind == UsmKind::Device,
            InvalidValue,
            "graph-owned allocations are device allocations only, {kind:?} was asked for"
        );
        ensure!(size != 0, InvalidUsmSize, "graph-owned allocation of 0 bytes");
        let placement = if zero_init { self.plan.allocate_fresh(size) } else { self.plan.allocate(size, reusable) };
        if placement.new_chunk {
            let bytes = self.plan.chunks[placement.chunk as usize];
            match UsmAllocation::new(context, UsmKind::Device, bytes) {
                Ok(chunk) => self.chunks.push(Arc::new(chunk)),
                Err(e) => {
                    // Keep the plan consistent with the chunks that exist.
                    self.plan.chunks.pop();
                    self.plan.allocs.pop();
                    return Err(e);
                }
            }
        }
        let ptr = self.chunks[placement.chunk as usize].ptr().byte_add(placement.offset);
        self.pointers.push(ptr);
        if zero_init {
            self.zero_init.push((placement.alloc, ptr, size));
        }
        Ok((placement.alloc, ptr))
    }

    /// Forgets an allocation whose node was never added (`free` with no node
    /// follows).
    pub(crate) fn abandon(&mut self, alloc: u32) {
        self.zero_init.retain(|(a, _, _)| *a != alloc);
        let _ = self.free(alloc, None);
    }

    /// Writes zeros to every `zero_init` allocation (each finalize, 8.4.3:
    /// "the allocated memory is zero-initialized" then, and not again
    /// before or during executions). Blocks until the zeros are written.
    /// The zeros are written after `after` (the previous executable graph's
    /// last execution, which used the same memory).
    pub(crate) fn zero_initialize(&self, context: &Context, after: Option<&cmdbuf_core::event::Event>) -> Result<()> {
        if self.zero_init.is_empty() {
            return Ok(());
        }
        let queue = cmdbuf_core::queue::Queue::new(context, cmdbuf_core::queue::QueueProperties::default())?;
        let wait: Vec<&cmdbuf_core::event::Event> = after.into_iter().collect();
        for (_, ptr, size) in &self.zero_init {
            queue.usm_fill(*ptr, &[0], *size, &wait)?;
        }
        queue.finish()
    }

    /// The slot executable graphs of this pool's memory leave their last
    /// execution in.
    pub(crate) fn run_slot(&self) -> RunSlot {
        self.runs.clone()
    }

    /// The last execution of an executable graph of this pool's memory, if
    /// it may not have completed.
    pub(crate) fn last_run(&self) -> Option<cmdbuf_core::event::Event> {
        self.runs.lock().clone().filter(|e| !e.status().is_terminal())
    }

    /// The allocation whose first byte is `ptr`.
    pub(crate) fn find(&self, ptr: UsmPtr) -> Result<u32> {
        self.pointers
            .iter()
            .rposition(|p| *p == ptr)
            .map(|a| a as u32)
            .ok_or_else(|| err!(InvalidValue, "{ptr:?} was not returned by an async_malloc node of this graph"))
    }

    /// Releases an allocation after `free_node` (or unconditionally).
    pub(crate) fn free(&mut self, alloc: u32, free_node: Option<u32>) -> Result<()> {
        self.plan.free(alloc, free_node).map_err(|e| err!(InvalidValue, "async_free of allocation {alloc}: {e}"))
    }

    /// Whether `alloc` was freed.
    pub(crate) fn is_freed(&self, alloc: u32) -> bool {
        self.plan.is_freed(alloc)
    }

    /// The chunks, to keep them alive with an executable graph.
    pub(crate) fn chunks(&self) -> &[Arc<UsmAllocation>] {
        &self.chunks
    }

    /// The pool's figures.
    pub(crate) fn stats(&self) -> MemoryStats {
        MemoryStats {
            allocations: self.plan.allocations(),
            requested_bytes: self.plan.requested(),
            required_bytes: self.plan.required(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_to_the_alignment() {
        let mut plan = PoolPlan::default();
        let a = plan.allocate(1, |_| true);
        let b = plan.allocate(300, |_| true);
        assert!(a.new_chunk && b.new_chunk);
        assert_eq!(plan.required(), POOL_ALIGN + 2 * POOL_ALIGN);
        assert_eq!(plan.requested(), 301);
    }

    #[test]
    fn sequential_lifetimes_share_memory() {
        // malloc A (node 0), free A (node 2), malloc B after the free (node 3).
        let mut plan = PoolPlan::default();
        let a = plan.allocate(1024, |_| true);
        plan.free(a.alloc, Some(2)).unwrap();
        let b = plan.allocate(1024, |free| free == 2);
        assert!(!b.new_chunk);
        assert_eq!((b.chunk, b.offset), (a.chunk, a.offset));
        assert_eq!(plan.required(), 1024);
        assert_eq!(plan.requested(), 2048);
    }

    #[test]
    fn overlapping_lifetimes_do_not() {
        // B's node is not ordered after A's free: it could run first.
        let mut plan = PoolPlan::default();
        let a = plan.allocate(1024, |_| true);
        plan.free(a.alloc, Some(2)).unwrap();
        let b = plan.allocate(1024, |_| false);
        assert!(b.new_chunk);
        assert_eq!(plan.required(), 2048);
    }

    #[test]
    fn released_ranges_split_and_pick_the_best_fit() {
        let mut plan = PoolPlan::default();
        let big = plan.allocate(4096, |_| true);
        let small = plan.allocate(512, |_| true);
        plan.free(big.alloc, Some(10)).unwrap();
        plan.free(small.alloc, Some(11)).unwrap();
        // 512 fits both; the smaller range is taken.
        let c = plan.allocate(512, |_| true);
        assert_eq!(c.chunk, small.chunk);
        // Two quarters of the big range.
        let d = plan.allocate(1024, |f| f == 10);
        let e = plan.allocate(1024, |f| f == 10);
        assert_eq!((d.chunk, d.offset, e.chunk, e.offset), (big.chunk, 0, big.chunk, 1024));
        assert_eq!(plan.required(), 4096 + 512);
    }

    #[test]
    fn fresh_allocations_never_reuse() {
        let mut plan = PoolPlan::default();
        let a = plan.allocate(1024, |_| true);
        plan.free(a.alloc, None).unwrap();
        let b = plan.allocate_fresh(1024);
        assert!(b.new_chunk);
        assert_ne!(a.chunk, b.chunk);
        // The unused range is still there for others.
        let c = plan.allocate(1024, |_| false);
        assert_eq!(c.chunk, a.chunk);
    }

    #[test]
    fn double_free_is_refused() {
        let mut plan = PoolPlan::default();
        let a = plan.allocate(8, |_| true);
        plan.free(a.alloc, Some(1)).unwrap();
        assert!(plan.free(a.alloc, Some(2)).is_err());
        assert!(plan.free(7, Some(2)).is_err());
    }

    #[test]
    fn stats_report_the_saving() {
        let stats = MemoryStats { allocations: 2, requested_bytes: 2048, required_bytes: 1024 };
        assert_eq!(stats.saved_bytes(), 1024);
    }
}
