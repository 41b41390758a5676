//! Memory: USM allocations and memory buffers as `VkBuffer`s with their own
//! memory and a buffer device address, and the staging arena.
//!
//! USM kinds map onto memory types:
//! - device: `DEVICE_LOCAL`, preferably not host-visible;
//! - host: `HOST_VISIBLE | HOST_COHERENT`, preferably `HOST_CACHED` and not
//!   device-local (system memory the device reaches over the bus), mapped;
//! - shared: `HOST_VISIBLE | HOST_COHERENT`, preferably `DEVICE_LOCAL` (the
//!   device-local, host-visible memory of resizable-BAR GPUs), else as host;
//!   mapped. Vulkan has no migrating memory, so shared memory stays where it
//!   was allocated and prefetches are ordered no-ops.
//!
//! A USM pointer is the buffer device address of its allocation's buffer, so
//! shaders dereference it directly; commands resolve it to the `(VkBuffer,
//! offset)` through cmdbuf-core's allocation tracker (the `UsmRef` they hold).
//! Memory is zeroed at allocation (`init.rs`, which runs the device work).

use std::any::Any;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ash::vk;
use cmdbuf_core::adapter::prelude::*;
use parking_lot::Mutex;

use crate::conv::VkResultExt;
use crate::gpu::Gpu;

/// Where an allocation lives.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum MemKind {
    Device,
    Host,
    Shared,
}

/// Every buffer can be copied, filled, read by shaders through its address,
/// and hold indirect-dispatch records.
const USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::TRANSFER_SRC.as_raw()
        | vk::BufferUsageFlags::TRANSFER_DST.as_raw()
        | vk::BufferUsageFlags::STORAGE_BUFFER.as_raw()
        | vk::BufferUsageFlags::INDIRECT_BUFFER.as_raw()
        | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS.as_raw(),
);

/// The memory type for `kind` among `type_bits`: the required properties,
/// then the most preferred ones.
pub(crate) fn choose_type(memory: &vk::PhysicalDeviceMemoryProperties, type_bits: u32, kind: MemKind) -> Option<u32> {
    use vk::MemoryPropertyFlags as F;
    let (required, wanted, unwanted) = match kind {
        MemKind::Device => (F::DEVICE_LOCAL, F::empty(), F::HOST_VISIBLE),
        MemKind::Host => (F::HOST_VISIBLE | F::HOST_COHERENT, F::HOST_CACHED, F::DEVICE_LOCAL),
        MemKind::Shared => (F::HOST_VISIBLE | F::HOST_COHERENT, F::DEVICE_LOCAL, F::empty()),
    };
    let candidates = (0..memory.memory_type_count).filter(|i| type_bits & (1 << i) != 0);
    let score = |i: &u32| {
        let flags = memory.memory_types[*i as usize].property_flags;
        2 * i32::from(flags.contains(wanted) && !wanted.is_empty()) + i32::from(!flags.intersects(unwanted))
    };
    let best = candidates
        .clone()
        .filter(|i| memory.memory_types[*i as usize].property_flags.contains(required))
        .max_by_key(|i| (score(i), std::cmp::Reverse(*i)));
    // Device memory falls back to any type (some drivers have no device-local
    // type usable for a buffer); host-visible memory does not.
    best.or_else(|| if kind == MemKind::Device { candidates.min() } else { None })
}

/// A `VkBuffer` bound to memory of its own, with its device address and,
/// for host-visible memory, a persistent mapping.
pub(crate) struct Allocation {
    gpu: Arc<Gpu>,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    address: u64,
    mapped: Option<NonNull<u8>>,
}

// SAFETY: the handles are plain identifiers; the mapping is only an address,
// whose accesses the API's ordering rules govern.
unsafe impl Send for Allocation {}
// SAFETY: as for Send; the allocation has no interior state.
unsafe impl Sync for Allocation {}

impl Allocation {
    /// A buffer of `size` bytes of `kind` memory (not initialised).
    pub(crate) fn new(gpu: &Arc<Gpu>, size: u64, kind: MemKind) -> Result<Allocation> {
        crate::exit::check()?;
        let d = &gpu.device;
        // Whole words, so that vkCmdFillBuffer can reach every byte.
        let size = size.next_multiple_of(4);
        let info = vk::BufferCreateInfo::default().size(size).usage(USAGE).sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: a valid device and create info; the size is non-zero.
        let buffer = unsafe { d.create_buffer(&info, None) }.vk("vkCreateBuffer")?;
        let mut alloc =
            Allocation { gpu: gpu.clone(), buffer, memory: vk::DeviceMemory::null(), address: 0, mapped: None };
        // SAFETY: `buffer` was just created.
        let req = unsafe { d.get_buffer_memory_requirements(buffer) };
        let type_index = choose_type(&gpu.memory, req.memory_type_bits, kind)
            .ok_or_else(|| err!(UnsupportedFeature, "no memory type for {kind:?} memory"))?;
        let mut flags = vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
        let allocate = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(type_index)
            .push_next(&mut flags);
        // SAFETY: a valid allocate info; buffer device addresses are enabled.
        alloc.memory = unsafe { d.allocate_memory(&allocate, None) }.vk("vkAllocateMemory")?;
        // SAFETY: fresh memory of a type the buffer accepts, at offset 0.
        unsafe { d.bind_buffer_memory(buffer, alloc.memory, 0) }.vk("vkBindBufferMemory")?;
        let host_visible =
            gpu.memory.memory_types[type_index as usize].property_flags.contains(vk::MemoryPropertyFlags::HOST_VISIBLE);
        if host_visible {
            // SAFETY: host-visible memory, mapped once for its whole life.
            let p = unsafe { d.map_memory(alloc.memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) }
                .vk("vkMapMemory")?;
            alloc.mapped = NonNull::new(p.cast());
        }
        // SAFETY: the buffer was made with SHADER_DEVICE_ADDRESS usage and bound.
        alloc.address = unsafe { d.get_buffer_device_address(&vk::BufferDeviceAddressInfo::default().buffer(buffer)) };
        Ok(alloc)
    }

    /// A buffer over the host pages holding `[host, host + size)`, imported
    /// with `VK_EXT_external_memory_host` (whose pointers and sizes are
    /// multiples of `minImportedHostPointerAlignment`, so the pages around
    /// the range come with it: they are mapped as long as the range is), and
    /// the offset of `host` in it. `None` where the device imports no host
    /// memory or refuses this memory; the caller then keeps a copy.
    ///
    /// # Safety
    /// `[host, host + size)` stays valid until the allocation is dropped.
    pub(crate) unsafe fn import_host(
        gpu: &Arc<Gpu>,
        host: NonNull<u8>,
        size: u64,
    ) -> Result<Option<(Allocation, u64)>> {
        crate::exit::check()?;
        let Some((ext, align)) = &gpu.host_import else { return Ok(None) };
        let start = host.as_ptr() as u64;
        let base = start - start % align;
        let len = (start + size).next_multiple_of(*align) - base;
        let handle_type = vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT;
        let mut props = vk::MemoryHostPointerPropertiesEXT::default();
        // SAFETY: a valid device with the extension enabled; `base` is
        // aligned as the extension requires.
        let found = unsafe {
            (ext.fp().get_memory_host_pointer_properties_ext)(ext.device(), handle_type, base as *const _, &mut props)
        };
        if found != vk::Result::SUCCESS {
            tracing::debug!(?found, "host memory not importable: the buffer keeps a copy");
            return Ok(None);
        }
        let d = &gpu.device;
        let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(handle_type);
        let info = vk::BufferCreateInfo::default()
            .size(len)
            .usage(USAGE)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .push_next(&mut external);
        // SAFETY: a valid device and create info; the size is non-zero.
        let buffer = unsafe { d.create_buffer(&info, None) }.vk("vkCreateBuffer (imported host memory)")?;
        let mut alloc =
            Allocation { gpu: gpu.clone(), buffer, memory: vk::DeviceMemory::null(), address: 0, mapped: None };
        // SAFETY: `buffer` was just created.
        let req = unsafe { d.get_buffer_memory_requirements(buffer) };
        let Some(type_index) = choose_type(&gpu.memory, req.memory_type_bits & props.memory_type_bits, MemKind::Host)
        else {
            tracing::debug!("no host-coherent memory type imports this memory: the buffer keeps a copy");
            return Ok(None);
        };
        if req.size > len {
            return Ok(None);
        }
        let mut import =
            vk::ImportMemoryHostPointerInfoEXT::default().handle_type(handle_type).host_pointer(base as *mut _);
        let mut flags = vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
        let allocate = vk::MemoryAllocateInfo::default()
            .allocation_size(len)
            .memory_type_index(type_index)
            .push_next(&mut import)
            .push_next(&mut flags);
        // SAFETY: a valid allocate info importing `len` aligned bytes that stay
        // valid for the allocation's life (the caller's contract).
        alloc.memory = match unsafe { d.allocate_memory(&allocate, None) } {
            Ok(memory) => memory,
            Err(e) => {
                tracing::debug!(error = ?e, "host memory import refused: the buffer keeps a copy");
                return Ok(None);
            }
        };
        // SAFETY: imported memory of a type the buffer accepts, at offset 0.
        unsafe { d.bind_buffer_memory(buffer, alloc.memory, 0) }.vk("vkBindBufferMemory")?;
        // The host already addresses the memory; it is not mapped again.
        alloc.mapped = NonNull::new(base as *mut u8);
        // SAFETY: the buffer was made with SHADER_DEVICE_ADDRESS usage and bound.
        alloc.address = unsafe { d.get_buffer_device_address(&vk::BufferDeviceAddressInfo::default().buffer(buffer)) };
        Ok(Some((alloc, start - base)))
    }

    /// As [`new`](Self::new), falling back from shared to host memory when
    /// device-local host-visible memory runs out (it is small on GPUs without
    /// resizable BAR).
    pub(crate) fn with_fallback(gpu: &Arc<Gpu>, size: u64, kind: MemKind) -> Result<Allocation> {
        match Allocation::new(gpu, size, kind) {
            Err(e) if kind == MemKind::Shared => {
                tracing::debug!(error = %e, "shared USM falls back to host memory");
                Allocation::new(gpu, size, MemKind::Host)
            }
            other => other,
        }
    }

    pub(crate) fn buffer(&self) -> vk::Buffer {
        self.buffer
    }

    pub(crate) fn address(&self) -> u64 {
        self.address
    }

    /// The host address of byte 0, for host-visible memory.
    pub(crate) fn mapped(&self) -> Option<*mut u8> {
        self.mapped.map(NonNull::as_ptr)
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        if crate::exit::driver_gone() {
            return;
        }
        // SAFETY: the allocation is dropped once no command or submission
        // refers to it; freeing the memory unmaps it.
        unsafe {
            self.gpu.device.destroy_buffer(self.buffer, None);
            if self.memory != vk::DeviceMemory::null() {
                self.gpu.device.free_memory(self.memory, None);
            }
        }
    }
}

/// Alignment of USM allocations when none is asked for.
pub(crate) const DEFAULT_USM_ALIGN: u64 = 256;

/// A USM allocation: the part of an allocation that starts at an address
/// with the asked alignment.
pub(crate) struct VkUsm {
    pub(crate) alloc: Allocation,
    /// Offset of the USM's first byte in the buffer.
    pub(crate) offset: u64,
}

impl UsmImpl for VkUsm {
    fn address(&self) -> u64 {
        self.alloc.address() + self.offset
    }

    fn host_ptr(&self) -> Option<*mut u8> {
        // SAFETY: the offset lies inside the mapping.
        self.alloc.mapped().map(|p| unsafe { p.add(self.offset as usize) })
    }
}

/// A memory buffer: its own memory, or imported host memory it starts
/// `start` bytes into.
pub(crate) struct VkMemBuffer {
    pub(crate) alloc: Allocation,
    /// Where the buffer's byte 0 lies in `alloc` (0 but for imported memory,
    /// whose allocation begins at the page before).
    pub(crate) start: u64,
    /// The lent host memory used in place (imported), for `host_memory`.
    pub(crate) lent: Option<NonNull<u8>>,
}

// SAFETY: `lent` is only an address, reported to cmdbuf-core; the
// allocation is Send and Sync.
unsafe impl Send for VkMemBuffer {}
// SAFETY: as for Send.
unsafe impl Sync for VkMemBuffer {}

impl VkMemBuffer {
    /// The `VkBuffer` and the offset of the buffer's byte 0 in it.
    pub(crate) fn at(&self) -> (vk::Buffer, u64) {
        (self.alloc.buffer(), self.start)
    }

    /// The device address of the buffer's byte 0.
    pub(crate) fn address(&self) -> u64 {
        self.alloc.address() + self.start
    }
}

impl BufferImpl for VkMemBuffer {
    /// The `VkBuffer`, of the buffer's own size from offset 0; a buffer over
    /// imported host memory has none of its own (its `VkBuffer` starts at the
    /// page before its first byte).
    fn native_handle(&self) -> Result<cmdbuf_core::NativeHandle> {
        cmdbuf_core::ensure!(
            self.start == 0,
            UnsupportedFeature,
            "a buffer over imported host memory has no VkBuffer starting at its first byte"
        );
        Ok(cmdbuf_core::NativeHandle(vk::Handle::as_raw(self.alloc.buffer())))
    }

    fn host_memory(&self) -> Option<NonNull<u8>> {
        self.lent
    }
}

/// The buffer and offset of a USM position.
pub(crate) fn usm_location(r: &UsmRef) -> Result<(vk::Buffer, u64)> {
    let usm = downcast::<VkUsm>(r.imp() as &dyn Any, "a USM allocation")?;
    Ok((usm.alloc.buffer(), usm.offset + r.offset() as u64))
}

/// The adapter's object of a memory buffer.
pub(crate) fn mem_buffer(b: &MemBuffer) -> Result<&VkMemBuffer> {
    downcast::<VkMemBuffer>(b.imp() as &dyn Any, "a memory buffer")
}

/// Size of an arena chunk; larger requests get memory of their own.
const CHUNK: u64 = 4 << 20;
/// Free chunks kept for reuse.
const KEEP_FREE: usize = 8;

/// Host-visible memory handed out in slices for eager commands (argument
/// blocks, fill patterns, staging of host memory). A slice holds its chunk;
/// a chunk is reused once no slice of it is alive.
pub(crate) struct Arena {
    gpu: Arc<Gpu>,
    state: Mutex<ArenaState>,
}

#[derive(Default)]
struct ArenaState {
    current: Option<Arc<Allocation>>,
    used: u64,
    retired: Vec<Arc<Allocation>>,
}

/// A slice of host-visible memory.
pub(crate) struct Slice {
    alloc: Arc<Allocation>,
    offset: u64,
    len: u64,
}

impl Slice {
    pub(crate) fn buffer(&self) -> vk::Buffer {
        self.alloc.buffer()
    }

    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    pub(crate) fn address(&self) -> u64 {
        self.alloc.address() + self.offset
    }

    /// The mapped address of the slice's first byte.
    pub(crate) fn ptr(&self) -> *mut u8 {
        let base = self.alloc.mapped().expect("arena memory is mapped");
        // SAFETY: the offset lies inside the chunk.
        unsafe { base.add(self.offset as usize) }
    }

    /// Copies `bytes` to the start of the slice.
    pub(crate) fn write(&self, bytes: &[u8]) {
        self.write_at(0, bytes);
    }

    /// Copies `bytes` into the slice from byte `at`.
    pub(crate) fn write_at(&self, at: usize, bytes: &[u8]) {
        assert!((at + bytes.len()) as u64 <= self.len, "a write past an arena slice");
        // SAFETY: the bytes lie inside the slice (checked above), which lies
        // inside its mapped chunk, and the device does not use the slice yet:
        // it is written before the command using it is submitted.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr().add(at), bytes.len()) };
    }
}

/// Alignment of arena slices: enough for any argument block.
const SLICE_ALIGN: u64 = 64;

/// The furthest byte of any arena chunk handed out so far, over every
/// device of the process: memory the driver has had to make resident.
static ARENA_HIGH_WATER: AtomicU64 = AtomicU64::new(0);

/// The furthest byte of any arena chunk handed out so far, in this process:
/// a repeated workload whose slices are released between submissions must
/// leave it where it is (the regression test of issue 16 reads it).
pub fn arena_high_water() -> u64 {
    ARENA_HIGH_WATER.load(Ordering::Relaxed)
}

impl Arena {
    pub(crate) fn new(gpu: Arc<Gpu>) -> Arena {
        Arena { gpu, state: Mutex::default() }
    }

    /// A slice of `len` bytes.
    pub(crate) fn alloc(&self, len: u64) -> Result<Slice> {
        let len = len.max(1);
        if len > CHUNK / 4 {
            let alloc = Allocation::new(&self.gpu, len, MemKind::Host)?;
            return Ok(Slice { alloc: Arc::new(alloc), offset: 0, len });
        }
        let mut s = self.state.lock();
        // Nothing uses the current chunk any more: start it over, so that a
        // steady stream of small slices (a command buffer's status words and
        // argument updates, each submission) stays in the pages it already
        // touched instead of walking through fresh chunks (issue 16: resident
        // memory grew by the chunk size times the chunks kept).
        if s.current.as_ref().is_some_and(|c| Arc::strong_count(c) == 1) {
            s.used = 0;
        }
        let offset = s.used.next_multiple_of(SLICE_ALIGN);
        if let Some(current) = &s.current
            && offset + len <= CHUNK
        {
            let slice = Slice { alloc: current.clone(), offset, len };
            s.used = offset + len;
            ARENA_HIGH_WATER.fetch_max(s.used, Ordering::Relaxed);
            return Ok(slice);
        }
        if let Some(old) = s.current.take() {
            s.retired.push(old);
        }
        let chunk = match s.retired.iter().position(|c| Arc::strong_count(c) == 1) {
            Some(i) => s.retired.swap_remove(i),
            None => Arc::new(Allocation::new(&self.gpu, CHUNK, MemKind::Host)?),
        };
        // Drop chunks nobody uses beyond a few kept for reuse.
        let mut free = 0;
        s.retired.retain(|c| {
            let unused = Arc::strong_count(c) == 1;
            free += usize::from(unused);
            !unused || free <= KEEP_FREE
        });
        s.current = Some(chunk.clone());
        s.used = len;
        ARENA_HIGH_WATER.fetch_max(len, Ordering::Relaxed);
        Ok(Slice { alloc: chunk, offset: 0, len })
    }
}
