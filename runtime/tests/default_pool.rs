//! The default memory pools of eager `async_malloc` do not keep their
//! contexts alive: once only default pools hold a context, the next
//! default-pool lookup releases them, with their memory. A test binary of
//! its own: it counts live objects of the whole process.

use cmdbuf_core::{Context, QueueProperties, UsmKind, live_objects};
use cmdbuf_runtime::{MemoryPool, Queue};

#[test]
fn a_default_pool_goes_with_its_context() {
    let device = cmdbuf_cpu::default_device();
    let before = live_objects();
    {
        let context = Context::new(&device).unwrap();
        let queue = Queue::from_core(cmdbuf_core::Queue::new(&context, QueueProperties::default()).unwrap());
        let (p, ready) = queue.async_malloc(UsmKind::Device, 256, &[]).unwrap();
        ready.wait().unwrap();
        queue.async_free(p, &[]).unwrap().wait().unwrap();
        let pool = MemoryPool::default_pool(&context, &device, UsmKind::Device).unwrap();
        assert_eq!(pool.reserved_size_current(), 256, "the freed block stays in the default pool");
        assert_eq!(live_objects().usm_allocations, before.usm_allocations + 1);
    }
    // Only the default pool holds that context now: a lookup for another
    // context releases it.
    let other = Context::new(&device).unwrap();
    MemoryPool::default_pool(&other, &device, UsmKind::Device).unwrap();
    let after = live_objects();
    assert_eq!(after.usm_allocations, before.usm_allocations, "the pool's block was released");
    assert_eq!(after.contexts, before.contexts + 1, "only `other` is left");
}
