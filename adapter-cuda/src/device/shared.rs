//! The state each CUDA device shares among its contexts: the primary
//! context, an internal stream, the timing base, pools of streams, events
//! and host-mapped status words, the status collector and the memory
//! kernels, and the work held back on the host.

use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::ptr;
use std::sync::{Arc, Weak};

use cmdbuf_core::clock::bracket_narrowest;
use cmdbuf_core::{DeviceInfo, Result, Timestamps};
use cudarc::driver::sys;
use parking_lot::Mutex;

use super::info::{self, Limits};
use super::memory_kernels::MemoryKernels;
use crate::driver::{Ctx, CuEvent, EventPool, Stream, cu};
use crate::launcher::Launcher;

/// The host clock ([`cmdbuf_core::host_clock_ns`]): the timeline of every
/// profiling timestamp of this adapter, device times included (they are
/// mapped onto it through the device's base event).
pub(crate) fn now_ns() -> u64 {
    cmdbuf_core::host_clock_ns()
}

/// A resource whose release may wait for the device (which only ever waits
/// for work already issued, see `hold`).
pub(crate) enum Release {
    DeviceMemory(sys::CUdeviceptr),
    HostMemory(*mut c_void),
    /// Lent host memory registered with `cuMemHostRegister`.
    HostRegistration(*mut c_void),
    Module(sys::CUmodule),
    Graph(sys::CUgraph),
    GraphExec(sys::CUgraphExec),
}

// SAFETY: the handles are plain driver handles, usable from any thread.
unsafe impl Send for Release {}

/// The kernel that ends every command buffer with kernels: it moves the
/// buffer's status word into the submission's slot of the buffer's status
/// ring (`ring[1 + ring[0] % slots]`, then counts the submission in
/// `ring[0]`) and clears the word for the next submission. A kernel rather
/// than a host node: a host node makes the graph's completion wait for the
/// driver's callback thread, which cost tens of microseconds per replay; and
/// a ring rather than a word per submission, so that its parameters never
/// change and an enqueue sets none.
const STATUS_COLLECTOR_PTX: &str = r#"
.version 6.0
.target sm_70
.address_size 64

.visible .entry ur_collect_status(.param .u64 word, .param .u64 ring, .param .u32 mask)
{
    .reg .b64 %rd<6>;
    .reg .b32 %r<5>;
    ld.param.u64 %rd1, [word];
    ld.param.u64 %rd2, [ring];
    ld.param.u32 %r3, [mask];
    ld.volatile.global.u32 %r1, [%rd1];
    ld.volatile.global.u32 %r2, [%rd2];
    and.b32 %r4, %r2, %r3;
    mul.wide.u32 %rd3, %r4, 4;
    add.u64 %rd4, %rd2, 4;
    add.u64 %rd5, %rd4, %rd3;
    st.volatile.global.u32 [%rd5], %r1;
    add.u32 %r2, %r2, 1;
    st.volatile.global.u32 [%rd2], %r2;
    st.volatile.global.u32 [%rd1], 0;
    ret;
}
"#;

/// The loaded status collector (see `STATUS_COLLECTOR_PTX`).
pub(crate) struct StatusCollector {
    module: sys::CUmodule,
    pub(crate) func: sys::CUfunction,
}

impl StatusCollector {
    /// Loads it into the bound context.
    fn load() -> Result<StatusCollector> {
        let ptx = std::ffi::CString::new(STATUS_COLLECTOR_PTX).expect("no NUL in the PTX");
        let mut module: sys::CUmodule = ptr::null_mut();
        // SAFETY: NUL-terminated PTX; the caller bound the context.
        unsafe { cu!(cuModuleLoadDataEx(&mut module, ptx.as_ptr().cast(), 0, ptr::null_mut(), ptr::null_mut()))? };
        let mut func: sys::CUfunction = ptr::null_mut();
        // SAFETY: the module was just loaded and declares this entry.
        let found = unsafe { cu!(cuModuleGetFunction(&mut func, module, c"ur_collect_status".as_ptr())) };
        if let Err(e) = found {
            // SAFETY: loaded above, used by nothing.
            let _ = unsafe { sys::cuModuleUnload(module) };
            return Err(e);
        }
        Ok(StatusCollector { module, func })
    }
}

/// Streams kept for reuse, at most this many.
const POOLED_STREAMS: usize = 64;
/// Streams made when the device opens: enough for eight out-of-order queues.
const PREWARMED_STREAMS: usize = 32;

/// A 32-bit word of host memory mapped for the device.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Word {
    slot: u32,
    host: *mut u32,
    /// The device address of the word.
    pub(crate) addr: u64,
}

// SAFETY: the word is host memory owned by the device's pool; access is
// volatile and ordered by the protocols of its users.
unsafe impl Send for Word {}
// SAFETY: as for Send.
unsafe impl Sync for Word {}

impl Word {
    pub(crate) fn read(&self) -> u32 {
        // SAFETY: the word lies in a live page of the pool; the device writes it
        // concurrently, hence the volatile access.
        unsafe { ptr::read_volatile(self.host) }
    }

    pub(crate) fn write(&self, value: u32) {
        // SAFETY: as for `read`.
        unsafe { ptr::write_volatile(self.host, value) };
        // Make the write visible to the device before anything the caller does next.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}

/// Pages of host-mapped words, never freed before the device.
#[derive(Default)]
struct WordPool {
    pages: Vec<(*mut u32, u64)>,
    free: Vec<u32>,
}

const WORDS_PER_PAGE: u32 = 1024;

/// PTX by CUDA C source and compute capability.
pub(crate) type PtxCache = HashMap<(String, (i32, i32)), Arc<CString>>;

/// How long a measured offset between the host clock and the device's
/// timing base is used: drift of a few parts per million makes at most a few
/// microseconds in that time.
const CALIBRATION_AGE_NS: u64 = 1_000_000_000;

/// What every context of a device shares.
pub(crate) struct DeviceShared {
    pub(crate) device: sys::CUdevice,
    pub(crate) ctx: Ctx,
    pub(crate) info: DeviceInfo,
    pub(crate) limits: Limits,
    /// For allocation-time zeroing and initial copies; it never waits on anything.
    internal: Stream,
    /// The origin of device timestamps, recorded at `base_ns` on the host clock.
    base: CuEvent,
    base_ns: u64,
    /// The device timing base's offset from the host clock (device minus
    /// host, ns) and the host time it was measured at: the GPU's timer and
    /// the host clock drift apart by a few parts per million (277 µs two
    /// minutes after the base on an H200), so host times put on the device's
    /// timeline use an offset at most [`CALIBRATION_AGE_NS`] old.
    calibration: Mutex<Option<(u64, i64)>>,
    /// Never recorded, so always complete: stands for "nothing to wait for"
    /// where a graph node needs an event.
    pub(crate) complete: CuEvent,
    /// Idle streams for reuse, each with an event recorded when it was
    /// returned: it is idle once that event has completed.
    stream_pool: Mutex<Vec<(Stream, CuEvent)>>,
    status_words: Mutex<WordPool>,
    /// Status words whose kernel may still run (see [`Retiring`]).
    retiring: Mutex<Vec<Retiring>>,
    /// Events without timing for reuse: every submission records one, and
    /// creating and destroying one costs more than recording it again.
    event_pool: Arc<EventPool>,
    /// PTX compiled from CUDA C, by source and architecture.
    pub(crate) ptx_cache: Mutex<PtxCache>,
    /// Makes the driver calls of eager kernel launches handed to it (see
    /// `launcher`).
    pub(crate) launcher: Launcher,
    /// Ends command buffers with kernels.
    pub(crate) collector: StatusCollector,
    /// Copies and fills of the device's own memory in command buffers.
    pub(crate) memory_kernels: MemoryKernels,
    /// Declared last: released after every other field is gone.
    _primary: PrimaryContext,
}

// SAFETY: the raw pointers inside (word pages) are host memory owned by the
// device and accessed under its mutexes or volatilely; driver handles may be
// used from any thread.
unsafe impl Send for DeviceShared {}
// SAFETY: as for Send.
unsafe impl Sync for DeviceShared {}

struct PrimaryContext(sys::CUdevice);

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        // SAFETY: the primary context was retained once in `DeviceShared::open`.
        let _ = unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.0) };
    }
}

impl DeviceShared {
    pub(crate) fn open(ordinal: i32, driver_version: &str) -> Result<Arc<DeviceShared>> {
        let mut device: sys::CUdevice = 0;
        // SAFETY: `ordinal` is below the device count.
        unsafe { cu!(cuDeviceGet(&mut device, ordinal))? };
        let mut raw_ctx: sys::CUcontext = ptr::null_mut();
        // SAFETY: retains the device's primary context, released by `PrimaryContext`.
        unsafe { cu!(cuDevicePrimaryCtxRetain(&mut raw_ctx, device))? };
        let primary = PrimaryContext(device);
        let ctx = Ctx(raw_ctx);
        ctx.bind()?;

        let (info, limits) = info::query(device, driver_version)?;

        let internal = Stream::new()?;
        let base = CuEvent::new(true)?;
        base.record(internal.raw())?;
        internal.synchronize()?;
        let base_ns = now_ns();
        let complete = CuEvent::new(false)?;
        // Streams made now: creating one may wait for the device.
        let mut stream_pool = Vec::with_capacity(PREWARMED_STREAMS);
        for _ in 0..PREWARMED_STREAMS {
            stream_pool.push((Stream::new()?, CuEvent::new(false)?));
        }
        let collector = StatusCollector::load()?;
        let memory_kernels = match MemoryKernels::load() {
            Ok(kernels) => kernels,
            Err(e) => {
                // SAFETY: loaded just above, used by nothing yet.
                let _ = unsafe { sys::cuModuleUnload(collector.module) };
                return Err(e);
            }
        };
        tracing::debug!(ordinal, name = %info.name, ?limits, "CUDA device opened");
        let event_pool = Arc::new(EventPool::default());
        Ok(Arc::new(DeviceShared {
            device,
            ctx,
            info,
            limits,
            internal,
            base,
            base_ns,
            calibration: Mutex::new(None),
            complete,
            stream_pool: Mutex::new(stream_pool),
            status_words: Mutex::default(),
            retiring: Mutex::default(),
            event_pool: event_pool.clone(),
            ptx_cache: Mutex::default(),
            launcher: Launcher::new(ctx, event_pool),
            collector,
            memory_kernels,
            _primary: primary,
        }))
    }

    /// Binds the device's context to the calling thread.
    pub(crate) fn bind(&self) -> Result<()> {
        self.ctx.bind()
    }

    /// The internal stream, for work that must be complete before a call returns.
    pub(crate) fn internal(&self) -> &Stream {
        &self.internal
    }

    /// The host-clock time of a complete timing event.
    pub(crate) fn timestamp_ns(&self, event: &CuEvent) -> Result<u64> {
        let ms = self.base.elapsed_ms(event)?;
        Ok(self.base_ns + (f64::from(ms.max(0.0)) * 1e6) as u64)
    }

    /// A device timestamp on the profiling timeline: the time of an event
    /// recorded on the internal stream, paired with the midpoint of the host
    /// clock around its record and synchronisation (the narrowest of three).
    pub(crate) fn timestamps(&self) -> Result<Timestamps> {
        self.bind()?;
        let event = CuEvent::new(true)?;
        let (device, host) = bracket_narrowest(3, || {
            event.record(self.internal.raw())?;
            event.synchronize()?;
            self.timestamp_ns(&event)
        })?;
        *self.calibration.lock() = Some((host, device as i64 - host as i64));
        Ok(Timestamps { device, host })
    }

    /// A time of the host clock (`now_ns`) on the device's timing base, with
    /// an offset measured within the last [`CALIBRATION_AGE_NS`] (measuring
    /// again waits for an event on the internal stream, at most once in that
    /// time).
    pub(crate) fn host_to_device_ns(&self, host_ns: u64) -> Result<u64> {
        let fresh = *self.calibration.lock();
        let offset = match fresh {
            Some((at, offset)) if now_ns().saturating_sub(at) < CALIBRATION_AGE_NS => offset,
            _ => {
                let pair = self.timestamps()?;
                pair.device as i64 - pair.host as i64
            }
        };
        Ok(host_ns.saturating_add_signed(offset))
    }

    /// Releases `resource`. Freeing memory or unloading a module may wait
    /// for the device, which never waits for the host (see `hold`).
    pub(crate) fn release(&self, resource: Release) {
        if let Err(e) = self.bind() {
            tracing::warn!(error = %e, "cannot bind the CUDA context to release a resource");
            return;
        }
        // SAFETY: each resource was created by this device's context, is no
        // longer used by any command (the front end holds objects until their
        // commands complete) and is released exactly once.
        let result = unsafe {
            match resource {
                Release::DeviceMemory(p) => cu!(cuMemFree_v2(p)),
                Release::HostMemory(p) => cu!(cuMemFreeHost(p)),
                Release::HostRegistration(p) => cu!(cuMemHostUnregister(p)),
                Release::Module(m) => cu!(cuModuleUnload(m)),
                Release::Graph(g) => cu!(cuGraphDestroy(g)),
                Release::GraphExec(g) => cu!(cuGraphExecDestroy(g)),
            }
        };
        if let Err(e) = result {
            tracing::warn!(error = %e, "CUDA release failed");
        }
    }

    /// A stream of this device: an idle one from the pool, or a new one.
    /// Creating streams may also wait for the device, so streams are reused.
    pub(crate) fn take_stream(&self) -> Result<Stream> {
        if let Some(stream) = self.take_pooled_stream() {
            return Ok(stream);
        }
        self.bind()?;
        Stream::new()
    }

    /// An idle stream from the pool, if there is one: never creates one, so
    /// never waits for the device.
    pub(crate) fn take_pooled_stream(&self) -> Option<Stream> {
        let mut pool = self.stream_pool.lock();
        let i = pool.iter().position(|(_, idle)| matches!(idle.query(), Ok(crate::driver::Query::Ready)))?;
        Some(pool.swap_remove(i).0)
    }

    /// Gives a stream back for reuse once the work submitted to it so far is done.
    pub(crate) fn return_stream(&self, stream: Stream) {
        let idle = match self.bind().and_then(|()| CuEvent::new(false)) {
            Ok(idle) => idle,
            Err(_) => return,
        };
        if idle.record(stream.raw()).is_err() {
            return;
        }
        let mut pool = self.stream_pool.lock();
        if pool.len() < POOLED_STREAMS {
            pool.push((stream, idle));
        }
    }

    /// `words` zeroed 32-bit words of pinned, device-mapped host memory: the
    /// host address and the device address. Freed with `cuMemFreeHost`
    /// ([`Release::HostMemory`]).
    pub(crate) fn pinned_mapped(&self, words: usize) -> Result<(*mut u32, u64)> {
        self.bind()?;
        let bytes = words * 4;
        let mut host: *mut c_void = ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
        // SAFETY: allocates `bytes` of pinned, device-mapped host memory into `host`.
        unsafe { cu!(cuMemHostAlloc(&mut host, bytes, flags))? };
        // SAFETY: `host` holds `bytes` bytes just allocated.
        unsafe { ptr::write_bytes(host.cast::<u8>(), 0, bytes) };
        let mut dev: sys::CUdeviceptr = 0;
        // SAFETY: `host` was allocated with DEVICEMAP; writes its device address.
        if let Err(e) = unsafe { cu!(cuMemHostGetDevicePointer_v2(&mut dev, host, 0)) } {
            self.release(Release::HostMemory(host));
            return Err(e);
        }
        Ok((host.cast(), dev))
    }

    /// A kernel status word, zeroed. Words whose kernels have completed
    /// come back from the retiring ones only when the pool is out of words:
    /// a sweep at every launch asked the driver about each word still
    /// retiring, 1.1 to 3 µs per eager launch of a reporting kernel on an
    /// H200 (docs/cuda.md).
    pub(crate) fn status_word(&self) -> Result<Word> {
        let mut pool = self.status_words.lock();
        if pool.free.is_empty() {
            drop(pool);
            self.sweep_retiring();
            pool = self.status_words.lock();
        }
        if pool.free.is_empty() {
            let (host, dev) = self.pinned_mapped(WORDS_PER_PAGE as usize)?;
            let page = pool.pages.len() as u32;
            pool.pages.push((host, dev));
            pool.free.extend((0..WORDS_PER_PAGE).rev().map(|i| page * WORDS_PER_PAGE + i));
        }
        let slot = pool.free.pop().expect("a page was just added");
        let (page, index) = (slot / WORDS_PER_PAGE, slot % WORDS_PER_PAGE);
        let (host, dev) = pool.pages[page as usize];
        // SAFETY: `index` is within the page's WORDS_PER_PAGE words.
        let word = Word { slot, host: unsafe { host.add(index as usize) }, addr: dev + u64::from(index) * 4 };
        word.write(0);
        Ok(word)
    }

    /// Returns a status word to its pool; the device no longer touches it.
    pub(crate) fn free_word(&self, word: Word) {
        self.status_words.lock().free.push(word.slot);
    }

    /// Returns a status word once its kernel has completed: `end` is
    /// recorded after the kernel and, where it was issued, `order` is its
    /// stream's progress and its sequence number there. Nothing is asked of
    /// the driver now.
    pub(crate) fn retire_status_word(
        &self,
        word: Word,
        end: Arc<CuEvent>,
        order: Option<(Weak<dyn StreamProgress>, u64)>,
    ) {
        self.retiring.lock().push(Retiring { word, end, order });
    }

    /// An event without timing of the bound context: a pooled one or a new one.
    pub(crate) fn plain_event(&self) -> Result<Arc<CuEvent>> {
        match self.event_pool.take() {
            Some(event) => Ok(event),
            None => Ok(Arc::new(CuEvent::new(false)?)),
        }
    }

    /// Moves up to `count` pooled events without timing into `into` (a
    /// queue's own free list), under one lock; with the pool empty, one new
    /// event of the device's context.
    pub(crate) fn plain_events(&self, count: usize, into: &mut Vec<Arc<CuEvent>>) -> Result<()> {
        self.event_pool.take_many(count, into);
        if into.is_empty() {
            self.bind()?;
            into.push(Arc::new(CuEvent::new(false)?));
        }
        Ok(())
    }

    /// Keeps an event for reuse once nothing will wait on it again (see
    /// [`EventPool::recycle`]).
    pub(crate) fn recycle_event(&self, event: Arc<CuEvent>) {
        self.event_pool.recycle(event);
    }

    fn sweep_retiring(&self) {
        let done: Vec<Retiring> = {
            let mut retiring = self.retiring.lock();
            if retiring.is_empty() {
                return;
            }
            let (done, pending): (Vec<_>, Vec<_>) = retiring.drain(..).partition(Retiring::completed);
            *retiring = pending;
            done
        };
        for Retiring { word, end, .. } in done {
            self.free_word(word);
            self.recycle_event(end);
        }
    }
}

/// What is known of the work completed on one stream, by sequence number
/// (the execution layer's `StreamClock`).
pub(crate) trait StreamProgress: Send + Sync {
    /// Whether the submission numbered `seq` has completed; `false` says
    /// nothing.
    fn has_completed(&self, seq: u64) -> bool;
}

/// A status word whose kernel may still run: the event recorded after the
/// kernel and, where it was issued, its stream's progress (weak: a stream's
/// clock holds its device) and sequence number there.
struct Retiring {
    word: Word,
    end: Arc<CuEvent>,
    order: Option<(Weak<dyn StreamProgress>, u64)>,
}

impl Retiring {
    /// Whether the kernel has completed: known from its stream's clock
    /// (without a driver call, or with one query of the stream's newest
    /// probe for all the words of the stream), else, where the queue is
    /// gone, asked of its event.
    fn completed(&self) -> bool {
        match self.order.as_ref().and_then(|(clock, seq)| clock.upgrade().map(|clock| (clock, *seq))) {
            Some((clock, seq)) => clock.has_completed(seq),
            None => !matches!(self.end.query(), Ok(crate::driver::Query::Pending)),
        }
    }
}

impl Drop for DeviceShared {
    fn drop(&mut self) {
        // Its queues drained their launches when they went; the thread goes
        // before the context and the events it records.
        self.launcher.stop();
        let _ = self.bind();
        // SAFETY: loaded in `open`; no graph that uses it runs any more.
        let _ = unsafe { sys::cuModuleUnload(self.collector.module) };
        // SAFETY: as for the collector's module.
        let _ = unsafe { sys::cuModuleUnload(self.memory_kernels.module) };
        for (host, _) in self.status_words.get_mut().pages.drain(..) {
            // SAFETY: allocated by cuMemHostAlloc in `status_word`, freed once;
            // the device is going away, so no kernel writes these words any more.
            let _ = unsafe { sys::cuMemFreeHost(host.cast()) };
        }
    }
}
