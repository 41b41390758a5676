//! `sycl_ext_oneapi_async_memory_alloc` eagerly (cmdbuf-runtime): `async_malloc`
//! from the default pool of the queue's context and kind, and the pool
//! properties and queries beyond `zero_init` / `maximum_size` (those are in
//! `graph_spec`): `initial_threshold`, `set_new_threshold`, `trim_to`, the
//! high-water marks, and `read_only` (a hint, kept and reported).

use cmdbuf::{Context, QueueProperties, UsmKind};
use cmdbuf_runtime::{MemoryPool, MemoryPoolProperties, Queue};

use crate::harness::{CaseError, CaseResult, Env, read, write};
use crate::{cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["async_alloc";
        default_pool_eager,
        threshold_releases_freed_blocks,
        trim_to_and_high_marks,
        read_only_pool,
    ]
}

const N: usize = 64;

/// A SYCL queue on a context of its own, so that the case's default pools
/// start empty.
fn fresh_queue(env: &Env) -> Result<Queue, CaseError> {
    let context = Context::new(env.device())?;
    Ok(Queue::from_core(cmdbuf::Queue::new(&context, QueueProperties::default())?))
}

/// Eager `async_malloc` takes memory from the default pool of the queue's
/// context and kind (the same pool every time), and `async_free` gives it
/// back there for reuse.
fn default_pool_eager(env: &Env) -> CaseResult {
    let queue = fresh_queue(env)?;
    let (context, device) = (queue.context().clone(), env.device().clone());
    let pool = MemoryPool::default_pool(&context, &device, UsmKind::Device)?;
    check_eq!(pool.used_size_current(), 0);
    let (p, ready) = queue.async_malloc(UsmKind::Device, N * 4, &[])?;
    ready.wait()?;
    write(queue.core(), p, &[5u32; N])?;
    check_eq!(read::<u32>(queue.core(), p, N)?, vec![5; N]);
    check_eq!((pool.used_size_current(), pool.reserved_size_current()), (N * 4, N * 4), "from the default pool");
    let again = MemoryPool::default_pool(&context, &device, UsmKind::Device)?;
    check_eq!(again.used_size_current(), N * 4, "one default pool per context and kind");
    let freed = queue.async_free(p, &[])?;
    check_eq!(pool.used_size_current(), 0);
    let (q, ready) = queue.async_malloc(UsmKind::Device, N * 2, &[&freed])?;
    ready.wait()?;
    check_eq!(q, p, "the freed block is reused");
    queue.async_free(q, &[])?.wait()?;
    check_err!(queue.async_free(q, &[]), InvalidOperation);
    check_err!(queue.async_malloc(UsmKind::Device, 0, &[]), InvalidUsmSize);
    // Another kind is another pool; a kind the device lacks is refused.
    for kind in [UsmKind::Host, UsmKind::Shared] {
        match MemoryPool::default_pool(&context, &device, kind) {
            Ok(other) => {
                let (r, ready) = queue.async_malloc(kind, 16, &[])?;
                ready.wait()?;
                check_eq!((other.used_size_current(), pool.used_size_current()), (16, 0), "{kind:?}");
                queue.async_free(r, &[])?.wait()?;
            }
            Err(cmdbuf::UrError::UnsupportedFeature(_)) => {
                check_err!(queue.async_malloc(kind, 16, &[]), UnsupportedFeature);
            }
            Err(e) => return Err(CaseError::Fail(format!("{kind:?}: {e:?}"))),
        }
    }
    // Another context has its own default pool.
    let elsewhere = fresh_queue(env)?;
    let (s, ready) = elsewhere.async_malloc(UsmKind::Device, 8, &[])?;
    ready.wait()?;
    check_eq!(pool.used_size_current(), 0, "the other context's pool served it");
    elsewhere.async_free(s, &[])?.wait()?;
    Ok(())
}

/// A pool keeps freed blocks up to its threshold (`initial_threshold`,
/// `set_new_threshold`); beyond it, blocks whose free has completed are
/// released.
fn threshold_releases_freed_blocks(env: &Env) -> CaseResult {
    let queue = fresh_queue(env)?;
    let props = MemoryPoolProperties { initial_threshold: Some(0), ..MemoryPoolProperties::default() };
    let pool = MemoryPool::new(queue.context(), env.device(), UsmKind::Device, props)?;
    check_eq!(pool.threshold(), 0);
    let (p, ready) = queue.async_malloc_from_pool(N, &pool, &[])?;
    ready.wait()?;
    queue.async_free(p, &[])?.wait()?;
    // The next allocation does not fit the freed block, which is released.
    let (q, ready) = queue.async_malloc_from_pool(2 * N, &pool, &[])?;
    ready.wait()?;
    check_eq!(pool.reserved_size_current(), 2 * N, "the freed block beyond the threshold was released");
    queue.async_free(q, &[])?.wait()?;
    pool.set_new_threshold(0);
    check_eq!(pool.reserved_size_current(), 0, "released once its free completed");
    // A threshold that keeps them.
    pool.set_new_threshold(4 * N);
    check_eq!(pool.threshold(), 4 * N);
    let (a, ready_a) = queue.async_malloc_from_pool(N, &pool, &[])?;
    let (b, ready_b) = queue.async_malloc_from_pool(2 * N, &pool, &[])?;
    ready_a.wait()?;
    ready_b.wait()?;
    queue.async_free(a, &[])?.wait()?;
    queue.async_free(b, &[])?.wait()?;
    let (c, ready) = queue.async_malloc_from_pool(N, &pool, &[])?;
    ready.wait()?;
    check_eq!((c, pool.reserved_size_current()), (a, 3 * N), "kept under the threshold and reused");
    queue.async_free(c, &[])?.wait()?;
    // Lowered below what it holds: the largest free block goes first.
    pool.set_new_threshold(2 * N);
    check_eq!(pool.reserved_size_current(), N);
    Ok(())
}

/// `trim_to` releases free blocks, largest first, down to a size; blocks
/// handed out stay. The high-water marks and their resets.
fn trim_to_and_high_marks(env: &Env) -> CaseResult {
    let queue = fresh_queue(env)?;
    let pool = MemoryPool::new(queue.context(), env.device(), UsmKind::Device, MemoryPoolProperties::default())?;
    check_eq!(pool.threshold(), usize::MAX, "without initial_threshold every freed block is kept");
    let (a, ready_a) = queue.async_malloc_from_pool(N, &pool, &[])?;
    let (b, ready_b) = queue.async_malloc_from_pool(2 * N, &pool, &[])?;
    let (c, ready_c) = queue.async_malloc_from_pool(4 * N, &pool, &[])?;
    for ready in [ready_a, ready_b, ready_c] {
        ready.wait()?;
    }
    check_eq!((pool.used_size_high(), pool.reserved_size_high()), (7 * N, 7 * N));
    queue.async_free(a, &[])?.wait()?;
    queue.async_free(b, &[])?.wait()?;
    check_eq!((pool.used_size_current(), pool.reserved_size_current()), (4 * N, 7 * N));
    pool.trim_to(5 * N);
    check_eq!(pool.reserved_size_current(), 5 * N, "the 2N block went: the 4N one is handed out");
    pool.trim_to(0);
    check_eq!(pool.reserved_size_current(), 4 * N, "only the block handed out is left");
    pool.reset_used_size_high();
    pool.reset_reserved_size_high();
    check_eq!((pool.used_size_high(), pool.reserved_size_high()), (4 * N, 4 * N));
    queue.async_free(c, &[])?.wait()?;
    check_eq!(pool.used_size_high(), 4 * N, "a free lowers no high-water mark");
    pool.trim_to(0);
    check_eq!((pool.reserved_size_current(), pool.reserved_size_high()), (0, 4 * N));
    Ok(())
}

/// A `read_only` pool is a pool like any other: the hint is kept and
/// reported, and the memory is written and read as usual.
fn read_only_pool(env: &Env) -> CaseResult {
    let queue = fresh_queue(env)?;
    let props = MemoryPoolProperties { read_only: true, zero_init: true, ..MemoryPoolProperties::default() };
    let pool = MemoryPool::new(queue.context(), env.device(), UsmKind::Device, props)?;
    check!(pool.properties().read_only);
    let (p, ready) = queue.async_malloc_from_pool(N * 4, &pool, &[])?;
    ready.wait()?;
    check_eq!(read::<u32>(queue.core(), p, N)?, vec![0; N]);
    write(queue.core(), p, &[3u32; N])?;
    check_eq!(read::<u32>(queue.core(), p, N)?, vec![3; N]);
    queue.async_free(p, &[])?.wait()?;
    Ok(())
}
