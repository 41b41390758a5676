//! Unified shared memory (USM) allocations and memory buffers.
//!
//! Every USM allocation is registered with its context, so that every memory
//! command is checked against the allocation it touches: a range that leaves
//! its allocation is `InvalidSize`, a pointer inside no allocation of the
//! context is `InvalidValue`. Commands hold their allocations alive, so memory
//! is never freed under a command buffer or a command in flight.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use crate::adapter::{BufferImpl, UsmImpl};
use crate::context::Context;
use crate::error::{Result, UrError};
pub(crate) use crate::objects::AllocationTracker;
use crate::objects::{BufferInner, Storage};
pub use crate::objects::{MemBuffer, MemLoc, UsmInner, UsmRef};
pub use crate::types::memory::*;
use crate::{ensure, err};

/// A USM allocation, freed when dropped and no command uses it any more.
///
/// ```
/// use cmdbuf::{Context, UsmAllocation, UsmKind};
/// # let ctx = Context::new(&cmdbuf_cpu::default_device()).unwrap();
/// let buf = UsmAllocation::new(&ctx, UsmKind::Device, 1024).unwrap();
/// assert_eq!(buf.size(), 1024);
/// assert!(UsmAllocation::new(&ctx, UsmKind::Device, 0).is_err());
/// ```
pub struct UsmAllocation {
    inner: Arc<UsmInner>,
}

impl UsmAllocation {
    /// Allocates `size` bytes of `kind` memory with the adapter's default alignment.
    pub fn new(context: &Context, kind: UsmKind, size: usize) -> Result<UsmAllocation> {
        Self::with_alignment(context, kind, size, 0)
    }

    /// Allocates with an explicit alignment (a power of two; 0 means the
    /// adapter's default).
    #[tracing::instrument(level = "debug", skip(context), fields(device = %context.device()))]
    pub fn with_alignment(context: &Context, kind: UsmKind, size: usize, align: usize) -> Result<UsmAllocation> {
        let info = context.device().info();
        ensure!(
            info.usm.contains(kind.flag()),
            UnsupportedFeature,
            "device {} cannot allocate {kind:?} USM",
            context.device()
        );
        ensure!(size != 0, InvalidUsmSize, "USM allocation of 0 bytes");
        ensure!(
            size as u64 <= info.max_mem_alloc_size,
            InvalidUsmSize,
            "USM allocation of {size} bytes exceeds the device limit of {} bytes",
            info.max_mem_alloc_size
        );
        ensure!(align == 0 || align.is_power_of_two(), InvalidValue, "alignment {align} is not a power of two");
        // UR's code for an alignment the device does not support is
        // `INVALID_VALUE` (urUSM*Alloc list no other): one beyond the largest
        // allocation the device makes, or one the adapter cannot give.
        ensure!(
            align as u64 <= info.max_mem_alloc_size,
            InvalidValue,
            "alignment {align} exceeds the device's largest allocation of {} bytes",
            info.max_mem_alloc_size
        );
        // SAFETY: size is non-zero and within the device limit, align is 0 or a power of two.
        let imp = unsafe { context.imp().usm_alloc(kind, size, align) }.map_err(|e| match e {
            UrError::UnsupportedAlignment(detail) => UrError::InvalidValue(detail),
            other => other,
        })?;
        let address = imp.address();
        let tracker = context.tracker();
        let inner = Arc::new(UsmInner {
            imp,
            address,
            size,
            kind,
            tracker: Arc::downgrade(tracker),
            _live: crate::live::Live::new(),
        });
        tracker.insert(&inner);
        tracing::trace!(context = ?context.id(), address = format_args!("{address:#x}"), size, ?kind, "USM allocation tracked");
        Ok(UsmAllocation { inner })
    }

    /// The allocation's first address.
    pub fn ptr(&self) -> UsmPtr {
        UsmPtr(self.inner.address)
    }

    /// Its size in bytes.
    pub fn size(&self) -> usize {
        self.inner.size
    }

    /// Its kind.
    pub fn kind(&self) -> UsmKind {
        self.inner.kind
    }

    /// The host address of host and shared allocations (and of device
    /// allocations on adapters whose device memory is host memory).
    ///
    /// Reading or writing through it while device commands touch the same
    /// bytes is a data race: synchronise with events or queue finish first.
    pub fn host_ptr(&self) -> Option<*mut u8> {
        self.inner.imp.host_ptr()
    }

    /// A reference to the whole allocation, as commands hold it.
    pub fn usm_ref(&self) -> UsmRef {
        UsmRef { alloc: self.inner.clone(), offset: 0 }
    }
}

impl Drop for UsmAllocation {
    /// Frees the allocation once nothing uses it: commands that name it
    /// through a checked reference hold it, and kernels, which reach memory
    /// by address, are waited for: every queue that may run them (the
    /// context's, and those of contexts joined with it) keeps the
    /// allocation until what it was given so far has completed (UR:
    /// `urUSMFree` waits for previously enqueued commands that may access
    /// the memory). Without work in flight it is freed here.
    fn drop(&mut self) {
        let Some(tracker) = self.inner.tracker.upgrade() else { return };
        tracker.hold_until_done(&self.inner);
        for joined in tracker.joined() {
            joined.hold_until_done(&self.inner);
        }
    }
}

impl fmt::Debug for UsmAllocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UsmAllocation")
            .field("ptr", &self.ptr())
            .field("size", &self.inner.size)
            .field("kind", &self.inner.kind)
            .finish()
    }
}

impl UsmInner {
    /// The adapter's allocation.
    pub fn imp(&self) -> &dyn UsmImpl {
        &*self.imp
    }

    /// First address.
    pub fn address(&self) -> u64 {
        self.address
    }

    /// Size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Kind.
    pub fn kind(&self) -> UsmKind {
        self.kind
    }
}

impl Drop for UsmInner {
    fn drop(&mut self) {
        if let Some(tracker) = self.tracker.upgrade() {
            tracker.remove(self.address);
        }
        // `imp` drops after this, freeing the memory once the address is no
        // longer findable.
    }
}

impl UsmRef {
    /// The allocation.
    pub(crate) fn alloc(&self) -> &UsmInner {
        &self.alloc
    }

    /// The allocation's kind.
    pub fn kind(&self) -> UsmKind {
        self.alloc.kind
    }

    /// The byte offset into the allocation.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The device address of this position.
    pub fn address(&self) -> u64 {
        self.alloc.address + self.offset as u64
    }

    /// The host address of this position, where the allocation has one.
    pub fn host_ptr(&self) -> Option<*mut u8> {
        // SAFETY: `offset` lies inside the allocation, checked when the reference was made.
        self.alloc.imp.host_ptr().map(|p| unsafe { p.add(self.offset) })
    }

    /// Bytes from this position to the allocation's end.
    pub fn remaining(&self) -> usize {
        self.alloc.size - self.offset
    }

    pub(crate) fn same_allocation(&self, other: &UsmRef) -> bool {
        Arc::ptr_eq(&self.alloc, &other.alloc)
    }

    /// Whether `context` accepts the allocation: one of its own, or of a
    /// context joined with it ([`Context::share_usm_with`]).
    pub(crate) fn belongs_to(&self, context: &Context) -> bool {
        let tracker = context.tracker();
        let of = |t: &AllocationTracker| std::ptr::eq(self.alloc.tracker.as_ptr(), t);
        of(tracker) || tracker.joined().iter().any(|t| of(t))
    }
}

impl fmt::Debug for UsmRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UsmRef({:#x}+{})", self.alloc.address, self.offset)
    }
}

impl AllocationTracker {
    fn insert(&self, alloc: &Arc<UsmInner>) {
        self.by_address.write().insert(alloc.address, Arc::downgrade(alloc));
    }

    fn remove(&self, address: u64) {
        self.by_address.write().remove(&address);
    }

    /// The allocation holding `[ptr, ptr + size)`.
    pub(crate) fn find(&self, ptr: UsmPtr, size: usize) -> Result<UsmRef> {
        let map = self.by_address.read();
        let found = map.range(..=ptr.0).next_back().and_then(|(_, weak)| weak.upgrade());
        // The lock goes before anything here can drop `found`: while its
        // owner drops it on another thread, the reference upgraded above may
        // be the last, and dropping the last runs `UsmInner::drop`, which
        // takes this lock to write; under the read lock that thread would
        // wait for itself, and every other lookup behind it (issue 26: the
        // nearest allocation below a host pointer, rejected below, is often
        // another thread's).
        drop(map);
        let Some(alloc) = found.filter(|a| ptr.0 < a.address + a.size as u64) else {
            return Err(err!(InvalidValue, "pointer {ptr:?} is not inside a USM allocation of this context"));
        };
        let offset = (ptr.0 - alloc.address) as usize;
        ensure!(
            size <= alloc.size - offset,
            InvalidSize,
            "{size} bytes at {ptr:?} overrun the {}-byte allocation at {:#x} by {} bytes",
            alloc.size,
            alloc.address,
            size - (alloc.size - offset)
        );
        Ok(UsmRef { alloc, offset })
    }

    /// Registers a queue of the context.
    pub(crate) fn add_queue(&self, queue: Weak<dyn crate::objects::HoldsFreedMemory>) {
        let mut queues = self.queues.lock();
        queues.retain(|q| q.strong_count() > 0);
        queues.push(queue);
    }

    /// Has every live queue of the context keep `alloc` until its work so
    /// far has completed.
    fn hold_until_done(&self, alloc: &Arc<UsmInner>) {
        // The list is copied: a queue's work may free memory, and reach here.
        let queues: Vec<_> = self.queues.lock().iter().filter_map(Weak::upgrade).collect();
        for queue in queues {
            queue.hold_until_done(alloc);
        }
    }

    pub(crate) fn live_allocations(&self) -> usize {
        self.by_address.read().len()
    }

    /// The live trackers joined with this one.
    pub(crate) fn joined(&self) -> Vec<Arc<AllocationTracker>> {
        self.joined.read().iter().filter_map(Weak::upgrade).collect()
    }

    pub(crate) fn set_joined(&self, others: Vec<Weak<AllocationTracker>>) {
        *self.joined.write() = others;
    }

    /// [`find`](Self::find) here, then in the joined trackers: the one
    /// allocation that holds `ptr` (the joined contexts share one address
    /// space, so at most one does). A range leaving the allocation that
    /// holds its start stays `InvalidSize`.
    pub(crate) fn find_joined(&self, ptr: UsmPtr, size: usize) -> Result<UsmRef> {
        let own = self.find(ptr, size);
        if !matches!(own, Err(crate::UrError::InvalidValue(_))) {
            return own;
        }
        // Read in place: a joined context's pointer is looked up at every
        // command that names it, so no list is collected per lookup.
        for other in self.joined.read().iter().filter_map(Weak::upgrade) {
            match other.find(ptr, size) {
                Err(crate::UrError::InvalidValue(_)) => {}
                found => return found,
            }
        }
        own
    }
}

static NEXT_BUFFER_ID: AtomicU64 = AtomicU64::new(1);

/// What a new buffer's bytes start as.
enum Init<'a> {
    Zero,
    Copy(&'a [u8]),
    /// The caller's host memory, used in place where the device can.
    Lend(std::ptr::NonNull<u8>),
}

const ACCESS: MemFlags = MemFlags::READ_WRITE.union(MemFlags::READ_ONLY).union(MemFlags::WRITE_ONLY);

impl MemBuffer {
    /// Creates a buffer of `size` bytes (zero-initialised on every adapter).
    pub fn new(context: &Context, flags: MemFlags, size: usize) -> Result<MemBuffer> {
        Self::create(context, flags, size, Init::Zero)
    }

    /// Creates a buffer holding a copy of `data`.
    pub fn with_data(context: &Context, flags: MemFlags, data: &[u8]) -> Result<MemBuffer> {
        Self::create(context, flags, data.len(), Init::Copy(data))
    }

    /// Creates a buffer over `size` bytes of host memory the caller lends it
    /// for the buffer's life (UR's `USE_HOST_POINTER`, OpenCL's
    /// `CL_MEM_USE_HOST_PTR`). Where the device reaches host memory, those
    /// bytes are the buffer's storage and [`host_memory`](Self::host_memory)
    /// answers them: the CPU adapter, OpenCL where the driver uses the
    /// pointer (CPU devices), Vulkan with `VK_EXT_external_memory_host`, and
    /// CUDA (the pages are registered with the driver). Elsewhere the buffer
    /// starts with a copy of the bytes and keeps its own storage, as OpenCL
    /// allows; maps of it then land on the lent memory through the ABI.
    ///
    /// ```
    /// use cmdbuf::{Context, MemBuffer, MemFlags, Queue, QueueProperties};
    /// # let device = cmdbuf_cpu::default_device();
    /// let ctx = Context::new(&device).unwrap();
    /// let queue = Queue::new(&ctx, QueueProperties::default()).unwrap();
    /// let mut host = vec![1u8; 64];
    /// // SAFETY: `host` outlives the buffer and every command using it
    /// // (the queue is finished before it is dropped).
    /// let buffer = unsafe { MemBuffer::over_host_memory(&ctx, MemFlags::READ_WRITE, host.as_mut_ptr(), 64) }.unwrap();
    /// assert_eq!(buffer.host_memory(), Some(host.as_mut_ptr())); // the CPU adapter uses it in place
    /// queue.fill_buffer(&buffer, &[7], 0, 64, &[]).unwrap().wait().unwrap();
    /// queue.finish().unwrap();
    /// drop(buffer);
    /// assert!(host.iter().all(|&b| b == 7));
    /// ```
    ///
    /// # Safety
    /// `host` is valid for reads and writes of `size` bytes until the buffer
    /// (and every sub-buffer of it) is dropped and no command that uses it
    /// can still run; while a command that uses it may run, the host does
    /// not touch those bytes (a map synchronises).
    pub unsafe fn over_host_memory(
        context: &Context,
        flags: MemFlags,
        host: *mut u8,
        size: usize,
    ) -> Result<MemBuffer> {
        let host = std::ptr::NonNull::new(host).ok_or_else(|| err!(InvalidHostPtr, "the lent host memory is null"))?;
        Self::create(context, flags, size, Init::Lend(host))
    }

    #[tracing::instrument(level = "debug", skip(context, init), fields(device = %context.device()))]
    fn create(context: &Context, flags: MemFlags, size: usize, init: Init<'_>) -> Result<MemBuffer> {
        let flags = if flags.intersects(ACCESS) { flags } else { flags | MemFlags::READ_WRITE };
        let access = (flags & ACCESS).bits();
        ensure!(access.count_ones() == 1, InvalidValue, "buffer flags {flags:?} combine several access modes");
        ensure!(size != 0, InvalidBufferSize, "memory buffer of 0 bytes");
        let limit = context.device().info().max_mem_alloc_size;
        ensure!(
            size as u64 <= limit,
            InvalidBufferSize,
            "buffer of {size} bytes exceeds the device limit of {limit} bytes"
        );
        let imp = match init {
            // SAFETY: size is non-zero and within the device limit.
            Init::Zero => unsafe { context.imp().buffer_create(flags, size, None)? },
            // SAFETY: as above; `data` is exactly `size` bytes.
            Init::Copy(data) => unsafe { context.imp().buffer_create(flags, size, Some(data))? },
            // SAFETY: as above; the memory stays valid as long as the buffer
            // and its commands (`over_host_memory`'s contract).
            Init::Lend(host) => unsafe { context.imp().buffer_over_host(flags, host, size)? },
        };
        Ok(MemBuffer::from_root(context, flags, size, imp))
    }

    /// Wraps an adapter buffer of `context` as a root buffer.
    pub(crate) fn from_root(context: &Context, flags: MemFlags, size: usize, imp: Box<dyn BufferImpl>) -> MemBuffer {
        let id = NEXT_BUFFER_ID.fetch_add(1, Ordering::Relaxed);
        let align = (context.device().info().mem_base_addr_align_bits / 8).max(1) as usize;
        let storage = Storage::Root(imp);
        MemBuffer { inner: Arc::new(BufferInner { id, storage, size, flags, context: context.id(), align }) }
    }

    /// Creates a sub-buffer over `[origin, origin + size)` of this buffer
    /// (`urMemBufferPartition` with `UR_BUFFER_CREATE_TYPE_REGION`), as
    /// OpenCL's `clCreateSubBuffer` does:
    ///
    /// - `flags` without an access mode inherit the parent's; an access mode
    ///   the parent's excludes (read-write of a read-only buffer, writing to a
    ///   read-only one, reading a write-only one) is `InvalidValue`, as are
    ///   several modes; `ALLOC_HOST_POINTER` is inherited and may not be
    ///   given (`InvalidValue`);
    /// - a sub-buffer of a sub-buffer is `InvalidMemObject`;
    /// - a size of 0, or a region leaving the parent, is `InvalidBufferSize`;
    /// - an origin that is not a multiple of the device's base address
    ///   alignment (`DeviceInfo::mem_base_addr_align_bits`, in bits) is
    ///   `MisalignedSubBufferOffset`.
    ///
    /// ```
    /// use cmdbuf::{Context, MemBuffer, MemFlags, UrError};
    /// # let ctx = Context::new(&cmdbuf_cpu::default_device()).unwrap();
    /// let buf = MemBuffer::new(&ctx, MemFlags::READ_ONLY, 4096).unwrap();
    /// let sub = buf.partition(MemFlags::empty(), 1024, 512).unwrap();
    /// assert_eq!((sub.size(), sub.offset(), sub.flags()), (512, 1024, MemFlags::READ_ONLY));
    /// assert!(matches!(buf.partition(MemFlags::READ_WRITE, 0, 512), Err(UrError::InvalidValue(_))));
    /// assert!(matches!(buf.partition(MemFlags::empty(), 1, 512), Err(UrError::MisalignedSubBufferOffset(_))));
    /// ```
    #[tracing::instrument(level = "debug")]
    pub fn partition(&self, flags: MemFlags, origin: usize, size: usize) -> Result<MemBuffer> {
        let Storage::Root(imp) = &self.inner.storage else {
            return Err(err!(InvalidMemObject, "{self:?} is a sub-buffer: sub-buffers are made of root buffers only"));
        };
        ensure!(
            !flags.contains(MemFlags::ALLOC_HOST_POINTER),
            InvalidValue,
            "ALLOC_HOST_POINTER is inherited from the parent buffer, not given to a sub-buffer"
        );
        let parent_access = self.inner.flags & ACCESS;
        let access = if flags.intersects(ACCESS) { flags & ACCESS } else { parent_access };
        ensure!(
            access.bits().count_ones() == 1,
            InvalidValue,
            "sub-buffer flags {flags:?} combine several access modes"
        );
        let allowed = match access {
            MemFlags::READ_WRITE => parent_access == MemFlags::READ_WRITE,
            MemFlags::READ_ONLY => parent_access != MemFlags::WRITE_ONLY,
            _ => parent_access != MemFlags::READ_ONLY,
        };
        ensure!(allowed, InvalidValue, "a {access:?} sub-buffer of a {parent_access:?} buffer");
        ensure!(size != 0, InvalidBufferSize, "sub-buffer of 0 bytes");
        ensure!(
            origin.checked_add(size).is_some_and(|end| end <= self.inner.size),
            InvalidBufferSize,
            "sub-buffer of {size} bytes at {origin} leaves the {}-byte buffer",
            self.inner.size
        );
        let align = self.inner.align;
        ensure!(
            origin.is_multiple_of(align),
            MisalignedSubBufferOffset,
            "sub-buffer origin {origin} is not a multiple of the device's base address alignment ({align} bytes)"
        );
        let flags = access | (self.inner.flags & MemFlags::ALLOC_HOST_POINTER);
        // SAFETY: `imp` is a root buffer; the range is non-empty, inside it
        // and aligned; the access mode is single and allowed by the parent's.
        let native = unsafe { imp.sub_buffer(origin, size, access)? };
        let id = NEXT_BUFFER_ID.fetch_add(1, Ordering::Relaxed);
        let storage = Storage::View { parent: self.clone(), offset: origin, native };
        let (context, align) = (self.inner.context, self.inner.align);
        Ok(MemBuffer { inner: Arc::new(BufferInner { id, storage, size, flags, context, align }) })
    }

    /// Size in bytes.
    pub fn size(&self) -> usize {
        self.inner.size
    }

    /// The flags it was created with (an access mode always present; a
    /// sub-buffer's include what it inherited).
    pub fn flags(&self) -> MemFlags {
        self.inner.flags
    }

    /// The adapter's buffer holding the bytes: a sub-buffer's is its root
    /// buffer's, which it starts [`offset`](Self::offset) bytes into.
    pub(crate) fn imp(&self) -> &dyn BufferImpl {
        match &self.inner.storage {
            Storage::Root(imp) => &**imp,
            Storage::View { parent, .. } => parent.imp(),
        }
    }

    /// The host address of this buffer's first byte where its storage is
    /// host memory the device uses in place (a buffer made by
    /// [`over_host_memory`](Self::over_host_memory) on a device that
    /// reaches it, and its sub-buffers); `None` for buffers with storage of
    /// their own. Maps of such a buffer are that memory, without copies.
    pub fn host_memory(&self) -> Option<*mut u8> {
        // SAFETY: the offset lies inside the root buffer (checked when the
        // sub-buffer was made), whose host memory covers all of it.
        self.imp().host_memory().map(|p| unsafe { p.as_ptr().add(self.offset()) })
    }

    /// Where this buffer starts in its root buffer: 0 for a root buffer.
    pub fn offset(&self) -> usize {
        match &self.inner.storage {
            Storage::Root(_) => 0,
            Storage::View { offset, .. } => *offset,
        }
    }

    /// The buffer a sub-buffer was made of; `None` for a root buffer.
    pub fn parent(&self) -> Option<&MemBuffer> {
        match &self.inner.storage {
            Storage::Root(_) => None,
            Storage::View { parent, .. } => Some(parent),
        }
    }

    /// The adapter's own object for a sub-buffer, where it made one
    /// ([`BufferImpl::sub_buffer`]).
    pub(crate) fn sub_buffer_imp(&self) -> Option<&dyn BufferImpl> {
        match &self.inner.storage {
            Storage::View { native: Some(native), .. } => Some(&**native),
            _ => None,
        }
    }

    /// The root buffer and the offset of `offset` in it, as commands name them.
    pub(crate) fn resolve(&self, offset: usize) -> (MemBuffer, usize) {
        match &self.inner.storage {
            Storage::Root(_) => (self.clone(), offset),
            Storage::View { parent, offset: base, .. } => (parent.clone(), base + offset),
        }
    }

    /// The native object behind the buffer (see [`crate::interop`] for each
    /// backend's); `UnsupportedFeature` where the backend has none. A
    /// sub-buffer's is the adapter's own object for it where there is one
    /// (OpenCL: its `clCreateSubBuffer` object); elsewhere a sub-buffer has
    /// no native object of its own (`UnsupportedFeature`).
    pub fn native_handle(&self) -> Result<crate::NativeHandle> {
        match &self.inner.storage {
            Storage::Root(imp) => imp.native_handle(),
            Storage::View { native: Some(native), .. } => native.native_handle(),
            Storage::View { .. } => {
                Err(err!(UnsupportedFeature, "{self:?} is a sub-buffer, which has no native object on this backend"))
            }
        }
    }

    /// Number of handles to this buffer (commands that use it, and its
    /// sub-buffers, included).
    pub fn reference_count(&self) -> usize {
        Arc::strong_count(&self.inner)
    }

    /// `InvalidMemObject` for a buffer of another context than `context`,
    /// unless the adapter uses that context's buffers as `context`'s own
    /// (the CPU adapter's contexts, Vulkan's and CUDA's of one device:
    /// [`ContextImpl::uses_buffers_of`](crate::adapter::ContextImpl::uses_buffers_of)).
    pub fn check_context(&self, context: &Context) -> Result<()> {
        // The id comparison is all a buffer of the command's own context costs.
        ensure!(
            context.uses_buffers_of_id(self.inner.context),
            InvalidMemObject,
            "memory buffer of another context, whose buffers this context's commands cannot use"
        );
        Ok(())
    }

    /// Checks `[offset, offset + size)` lies inside the buffer.
    pub(crate) fn check_range(&self, offset: usize, size: usize) -> Result<()> {
        ensure!(size != 0, InvalidSize, "size is 0");
        ensure!(
            offset.checked_add(size).is_some_and(|end| end <= self.inner.size),
            InvalidSize,
            "{size} bytes at offset {offset} overrun the {}-byte buffer",
            self.inner.size
        );
        Ok(())
    }

    /// Whether both handles are the same buffer.
    pub fn same_buffer(&self, other: &MemBuffer) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl fmt::Debug for MemBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner.storage {
            Storage::Root(_) => write!(f, "MemBuffer(#{}, {} bytes)", self.inner.id, self.inner.size),
            Storage::View { parent, offset, .. } => write!(
                f,
                "MemBuffer(#{}, {} bytes at {offset} of #{})",
                self.inner.id, self.inner.size, parent.inner.id
            ),
        }
    }
}

impl MemLoc {
    /// A host address for this location, where one exists (raw host memory,
    /// and USM with a host mapping).
    pub fn host_ptr(&self) -> Option<*mut u8> {
        match self {
            MemLoc::Usm(r) => r.host_ptr(),
            MemLoc::Host(h) => Some(h.0),
        }
    }
}

/// A block of mapped host memory, aligned for any scalar or vector type.
#[derive(Copy, Clone)]
#[repr(C, align(128))]
pub(crate) struct MapBlock([u8; 128]);

/// Where a mapping's bytes live on the host.
pub(crate) enum MappedMemory {
    /// Host memory the queue allocated for the mapping.
    Staging(Box<[MapBlock]>),
    /// Host memory the caller gave (a buffer made over host memory).
    Caller(HostPtr),
    /// The buffer's own storage, host memory the device uses in place
    /// ([`MemBuffer::host_memory`]): nothing is copied in or out.
    InPlace(HostPtr),
}

impl MappedMemory {
    pub(crate) fn staging(size: usize) -> MappedMemory {
        let blocks = size.div_ceil(size_of::<MapBlock>()).max(1);
        MappedMemory::Staging(vec![MapBlock([0; 128]); blocks].into_boxed_slice())
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        match self {
            MappedMemory::Staging(blocks) => blocks.as_ptr().cast::<u8>().cast_mut(),
            MappedMemory::Caller(p) | MappedMemory::InPlace(p) => p.0,
        }
    }
}

/// A region of a buffer mapped into host memory by
/// [`Queue::map_buffer`](crate::Queue::map_buffer), until
/// [`Queue::unmap_buffer`](crate::Queue::unmap_buffer).
pub struct BufferMapping {
    pub(crate) buffer: MemBuffer,
    pub(crate) offset: usize,
    pub(crate) size: usize,
    pub(crate) flags: MapFlags,
    /// Taken by the unmap, which keeps it until its write-back is done.
    pub(crate) memory: Option<MappedMemory>,
    /// Completes when the mapped bytes are the buffer's.
    pub(crate) ready: crate::Event,
}

impl Drop for BufferMapping {
    fn drop(&mut self) {
        // Dropped without an unmap: the map's read may still be writing into
        // the memory about to be freed.
        if self.memory.is_some() {
            let _ = self.ready.wait_ended();
        }
    }
}

impl BufferMapping {
    /// The host address of the mapped bytes; read or write them once the
    /// map's event has completed, and until the mapping is unmapped.
    pub fn ptr(&self) -> *mut u8 {
        self.memory.as_ref().map_or(std::ptr::null_mut(), MappedMemory::ptr)
    }

    /// The mapped size in bytes.
    pub fn len(&self) -> usize {
        self.size
    }

    /// Whether no byte is mapped (never: maps have a size).
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// The buffer offset the mapping starts at.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The buffer.
    pub fn buffer(&self) -> &MemBuffer {
        &self.buffer
    }

    /// What it was mapped for.
    pub fn flags(&self) -> MapFlags {
        self.flags
    }
}

impl fmt::Debug for BufferMapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferMapping")
            .field("buffer", &self.buffer)
            .field("offset", &self.offset)
            .field("size", &self.size)
            .field("flags", &self.flags)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    /// Memory of no adapter: the tracker reads nothing but the address.
    struct Unbacked(u64);

    impl UsmImpl for Unbacked {
        fn address(&self) -> u64 {
            self.0
        }

        fn host_ptr(&self) -> Option<*mut u8> {
            None
        }
    }

    /// A tracked allocation of `size` bytes at `address`, as
    /// `UsmAllocation::with_alignment` registers one.
    fn tracked(tracker: &Arc<AllocationTracker>, address: u64, size: usize) -> Arc<UsmInner> {
        let inner = Arc::new(UsmInner {
            imp: Box::new(Unbacked(address)),
            address,
            size,
            kind: UsmKind::Device,
            tracker: Arc::downgrade(tracker),
            _live: crate::live::Live::new(),
        });
        tracker.insert(&inner);
        inner
    }

    /// Issue 26: a lookup that upgrades an allocation its owner is dropping
    /// on another thread may hold the last reference, whose drop removes the
    /// allocation from the tracker under its write lock. One thread looks
    /// up addresses the allocation does not hold (a pointer past its end,
    /// `InvalidValue`, and a range overrunning it, `InvalidSize`), both of
    /// which upgrade it and let it go, while another makes and drops it
    /// over and over. When the lookup let it go under the read lock, the
    /// two deadlocked in 5 runs of 5 on a 2-core machine; a deadlock fails
    /// the test at the limit rather than hanging it.
    #[test]
    fn an_allocation_dropped_during_a_lookup_beside_it_is_freed_outside_the_lock() {
        const BASE: u64 = 0x10_0000;
        const ROUNDS: usize = 300_000;
        let tracker = Arc::new(AllocationTracker::default());
        let stop = Arc::new(AtomicBool::new(false));
        let looker = {
            let (tracker, stop) = (tracker.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let past = tracker.find(UsmPtr(BASE + 64), 1);
                    assert!(matches!(past, Err(UrError::InvalidValue(_))), "{past:?}");
                    let overrun = tracker.find(UsmPtr(BASE + 8), 64);
                    assert!(matches!(overrun, Err(UrError::InvalidSize(_)) | Err(UrError::InvalidValue(_))));
                }
            })
        };
        let (done, finished) = mpsc::channel();
        let churn = {
            let tracker = tracker.clone();
            std::thread::spawn(move || {
                for round in 0..ROUNDS {
                    let alloc = tracked(&tracker, BASE, 16);
                    // Dropped after a varying number of the other thread's
                    // lookups, so that the drop lands anywhere in one.
                    for _ in 0..round % 64 {
                        std::hint::spin_loop();
                    }
                    drop(alloc);
                }
                let _ = done.send(());
            })
        };
        let result = finished.recv_timeout(Duration::from_secs(120));
        stop.store(true, Ordering::Relaxed);
        assert!(
            result.is_ok(),
            "deadlock: a lookup dropped the last reference to an allocation under the tracker's lock"
        );
        churn.join().expect("the allocating thread");
        looker.join().expect("the looking-up thread");
        assert_eq!(tracker.live_allocations(), 0);
    }
}
