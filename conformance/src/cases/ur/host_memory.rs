//! Buffers over host memory the application lends them (UR's
//! `USE_HOST_POINTER`, OpenCL's `CL_MEM_USE_HOST_PTR`,
//! `MemBuffer::over_host_memory`): the buffer starts with the lent bytes;
//! where the device uses them in place (the CPU adapter, Vulkan importing
//! host memory, CUDA registering it) host writes reach commands submitted
//! after them, completed commands' writes are on the host, and maps are the
//! memory itself, as UR's `urMemBufferCreateTest.UseHostPointer` expects.
//! Where the driver may keep a copy (OpenCL), only what OpenCL promises is
//! checked: the initial bytes, reads, writes and maps through the API.

use cmdbuf::{Backend, KernelArg, KernelLaunch, MapFlags, MemBuffer, MemFlags};

use crate::harness::{CaseError, CaseResult, Env, pattern, read_buffer};
use crate::kernels::saxpy_reference;
use crate::{cases, check, check_eq};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["host_memory";
        used_in_place_where_the_device_reaches_it,
        unaligned_memory_and_sub_buffers,
        maps_and_unmaps,
    ]
}

/// Host memory aligned to 8 bytes, handed out as bytes.
struct Lent(Vec<u64>);

impl Lent {
    fn new(bytes: usize, seed: u8) -> Lent {
        let mut words = vec![0u64; bytes.div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes].copy_from_slice(&pattern(bytes, seed));
        Lent(words)
    }

    fn bytes(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.0)
    }
}

/// A buffer over `len` bytes of `memory` from `at`.
fn over(env: &Env, memory: &mut Lent, at: usize, len: usize) -> Result<MemBuffer, CaseError> {
    let host = memory.bytes()[at..at + len].as_mut_ptr();
    // SAFETY: every case keeps `memory` alive, and leaves it alone while
    // commands run, until the buffer is dropped after a finish.
    Ok(unsafe { MemBuffer::over_host_memory(env.context(), MemFlags::READ_WRITE, host, len)? })
}

/// Whether the backend must use lent memory in place: the CPU adapter and
/// CUDA always do; Vulkan where the device imports host memory
/// (`VK_EXT_external_memory_host`: lavapipe and NVIDIA's driver, every
/// Vulkan device the suite runs on); OpenCL where its driver chooses to,
/// which OpenCL does not report.
fn in_place_required(env: &Env) -> bool {
    matches!(env.device().backend(), Backend::Cpu | Backend::Cuda | Backend::Vulkan)
}

/// UR's `UseHostPointer` and more: host writes after creation reach a read,
/// a kernel's and a fill's results are in the host memory once they
/// complete, and dropping the buffer leaves the memory to the application.
fn used_in_place_where_the_device_reaches_it(env: &Env) -> CaseResult {
    const N: usize = 256;
    let mut memory = Lent::new(N * 4, 3);
    let initial = memory.bytes().to_vec();
    let buffer = over(env, &mut memory, 0, N * 4)?;
    let queue = env.queue()?;
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, N * 4)?, initial, "the lent bytes at creation");
    let host = memory.bytes().as_mut_ptr();
    let Some(in_place) = buffer.host_memory() else {
        check!(!in_place_required(env), "{:?} must use lent memory in place", env.device().backend());
        return Ok(());
    };
    check_eq!(in_place, host, "the buffer's storage is the lent memory");
    // Written by the host after creation, read by the device without a map.
    let xs: Vec<u32> = (0..N as u32).map(|i| i * 3 + 1).collect();
    memory.bytes().copy_from_slice(bytemuck::cast_slice(&xs));
    check_eq!(read_buffer::<u32>(&queue, &buffer, 0, N)?, xs, "host writes after creation");
    // Written by a kernel, seen by the host once it completed.
    let ys: Vec<u32> = (0..N as u32).map(|i| i ^ 0x55).collect();
    let (x, y) = (env.buffer_with(&xs)?, env.buffer_with(&ys)?);
    let a = 7u32;
    let args = [KernelArg::MemObj(&buffer), KernelArg::value(&a), KernelArg::MemObj(&x), KernelArg::MemObj(&y)];
    let kernel = env.kernel("saxpy")?;
    // SAFETY: N work-items over N-element buffers.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), &[])?.wait()? };
    let host_words: Vec<u32> = bytemuck::cast_slice(memory.bytes()).to_vec();
    check_eq!(host_words, saxpy_reference(a, &xs, &ys), "a kernel's writes in the host memory");
    queue.fill_buffer(&buffer, &[0xC3], 64, 128, &[])?.wait()?;
    check!(memory.bytes()[64..192].iter().all(|&b| b == 0xC3), "a fill's bytes in the host memory");
    queue.finish()?;
    drop(buffer);
    // The memory is still the application's: writable, with the last bytes.
    memory.bytes()[0] = 0x11;
    check_eq!(memory.bytes()[64], 0xC3);
    Ok(())
}

/// Lent memory at an address that is no multiple of a page or of the
/// device's base alignment, and sub-buffers of such a buffer: every access
/// reaches exactly the lent range.
fn unaligned_memory_and_sub_buffers(env: &Env) -> CaseResult {
    const LEN: usize = 1000;
    const AT: usize = 24;
    let mut memory = Lent::new(AT + LEN + 40, 9);
    let outside = memory.bytes().to_vec();
    let buffer = over(env, &mut memory, AT, LEN)?;
    let queue = env.queue()?;
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, LEN)?, outside[AT..AT + LEN].to_vec());
    queue.fill_buffer(&buffer, &[1, 2, 3, 4], 0, LEN, &[])?.wait()?;
    let align = (env.device().info().mem_base_addr_align_bits as usize / 8).max(1);
    let sub = (align + 16 <= LEN).then(|| buffer.partition(MemFlags::empty(), align, 16)).transpose()?;
    if let Some(sub) = &sub {
        queue.fill_buffer(sub, &[0xEE], 0, 16, &[])?.wait()?;
        check_eq!(read_buffer::<u8>(&queue, sub, 0, 16)?, vec![0xEE; 16], "through the sub-buffer");
        if let Some(p) = buffer.host_memory() {
            // SAFETY: `align` lies inside the buffer (the partition succeeded).
            check_eq!(sub.host_memory(), Some(unsafe { p.add(align) }), "a sub-buffer's host memory");
        }
    }
    let mut expected: Vec<u8> = (0..LEN).map(|i| (i % 4 + 1) as u8).collect();
    if sub.is_some() {
        expected[align..align + 16].fill(0xEE);
    }
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, LEN)?, expected, "the buffer after its fills");
    queue.finish()?;
    drop(sub);
    drop(buffer);
    let now = memory.bytes().to_vec();
    check_eq!(now[..AT].to_vec(), outside[..AT].to_vec(), "bytes before the lent range");
    check_eq!(now[AT + LEN..].to_vec(), outside[AT + LEN..].to_vec(), "bytes after the lent range");
    if in_place_required(env) {
        check_eq!(now[AT..AT + LEN].to_vec(), expected, "the lent range holds the buffer's bytes");
    }
    Ok(())
}

/// A map of a buffer used in place is its memory (no copy); on any device a
/// map for writing reaches the buffer at the unmap, and a map for reading
/// shows what commands wrote.
fn maps_and_unmaps(env: &Env) -> CaseResult {
    const LEN: usize = 512;
    let mut memory = Lent::new(LEN, 5);
    let buffer = over(env, &mut memory, 0, LEN)?;
    let queue = env.queue()?;
    queue.fill_buffer(&buffer, &[0x42], 0, LEN, &[])?;
    let (mapped, mapping) = queue.map_buffer(&buffer, 128, 64, MapFlags::READ | MapFlags::WRITE, &[])?;
    mapped.wait()?;
    if let Some(p) = buffer.host_memory() {
        // SAFETY: 128 lies inside the buffer.
        check_eq!(mapping.ptr(), unsafe { p.add(128) }, "the map of a buffer used in place");
    }
    // SAFETY: the map completed; the mapping holds 64 bytes until unmapped.
    let view = unsafe { std::slice::from_raw_parts_mut(mapping.ptr(), mapping.len()) };
    check_eq!(view.to_vec(), vec![0x42; 64], "the mapped bytes");
    view.fill(0x17);
    queue.unmap_buffer(mapping, &[])?.wait()?;
    let mut expected = vec![0x42; LEN];
    expected[128..192].fill(0x17);
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, LEN)?, expected, "after the unmap");
    queue.finish()?;
    Ok(())
}
