//! Buffer reads and writes in command buffers (UR's `read.cpp` and
//! `write.cpp`): UR's offset/size sweep, into and out of host, device and
//! shared USM and raw host memory, each buffer replayed with new data to show
//! that executions move the data of their own time, not of recording time.

use cmdbuf::{AppendOptions, CommandBufferDesc, UsmKind};

use crate::harness::{Case, CaseResult, Env, read, read_buffer, write};
use crate::{Requires, cases, check, check_eq};

pub(in crate::cases) fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    for (size, offset, len) in SETS {
        all.push(
            Case::new(format!("read::size_{size}_offset_{offset}_len_{len}"), move |env| {
                read_set(env, size, offset, len)
            })
            .requires(Requires::HOST_USM),
        );
    }
    all.extend(cases!["read";
        into_shared_usm => Requires::SHARED_USM,
        into_host_memory_signal_event => Requires::EVENTS,
    ]);
    for (size, offset, len) in SETS {
        all.push(
            Case::new(format!("write::size_{size}_offset_{offset}_len_{len}"), move |env| {
                write_set(env, size, offset, len)
            })
            .requires(Requires::HOST_USM),
        );
    }
    all.extend(cases!["write";
        from_shared_usm => Requires::SHARED_USM,
        from_host_memory_signal_event => Requires::EVENTS,
    ]);
    all
}

/// UR's `{size, offset, read_size}` / `{size, offset, write_size}` sets
/// (identical in both files).
const SETS: [(usize, usize, usize); 5] = [(1, 0, 1), (256, 0, 256), (1024, 0, 1024), (256, 127, 128), (1024, 256, 256)];

/// What memory outside the accessed range holds before the command runs.
const BASE: u8 = 1;

/// `n` pseudo-random bytes (xorshift), distinct per `seed`. Unlike an iota,
/// it does not repeat every 256 bytes, so an ignored offset of 256 shows.
pub(in crate::cases) fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Host memory outside any USM allocation, for the raw-pointer appends.
///
/// It is only ever touched through its raw pointer, so that the writes an
/// adapter makes through that pointer never alias a live Rust reference.
/// Declare it before the queue that runs commands on it: the queue drops
/// first and finishes its work, so the memory outlives every execution even
/// when a case returns early.
pub(in crate::cases) struct HostBytes {
    ptr: *mut u8,
    len: usize,
}

impl HostBytes {
    /// A copy of `data`.
    pub(in crate::cases) fn new(data: &[u8]) -> HostBytes {
        let boxed: Box<[u8]> = Box::from(data);
        let len = boxed.len();
        HostBytes { ptr: Box::into_raw(boxed).cast::<u8>(), len }
    }

    /// `len` copies of `byte`.
    pub(in crate::cases) fn filled(len: usize, byte: u8) -> HostBytes {
        HostBytes::new(&vec![byte; len])
    }

    /// The address to hand to `append_buffer_*_host`; valid for `len` bytes
    /// until this value drops.
    pub(in crate::cases) fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// A copy of the current contents.
    ///
    /// # Safety
    /// No command that writes this memory may be running.
    pub(in crate::cases) unsafe fn to_vec(&self) -> Vec<u8> {
        // SAFETY: `ptr` owns `len` initialised bytes; the caller guarantees
        // that no device write races with this read.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len).to_vec() }
    }

    /// Overwrites the contents with `data` (of the same length).
    ///
    /// # Safety
    /// No command that reads or writes this memory may be running.
    pub(in crate::cases) unsafe fn set(&self, data: &[u8]) {
        assert_eq!(data.len(), self.len, "HostBytes::set with another length");
        // SAFETY: `ptr` owns `len` bytes, `data` is a distinct allocation of
        // the same length, and the caller guarantees no command races with it.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr, self.len) };
    }
}

impl Drop for HostBytes {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` come from `Box::into_raw` of a `Box<[u8]>`
        // in `new`, and the box is rebuilt only here, once.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.len)) });
    }
}

/// `base` with `len` bytes of `src` from `src_offset` placed at `dst_offset`.
pub(in crate::cases) fn placed(base: &[u8], dst_offset: usize, src: &[u8], src_offset: usize, len: usize) -> Vec<u8> {
    let mut out = base.to_vec();
    out[dst_offset..dst_offset + len].copy_from_slice(&src[src_offset..src_offset + len]);
    out
}

/// UR's `urCommandBufferReadCommandsTest.Buffer` for one set, into host USM,
/// device USM and raw host memory, executed twice with new buffer contents.
fn read_set(env: &Env, size: usize, offset: usize, len: usize) -> CaseResult {
    let raw = HostBytes::filled(size, BASE);
    let queue = env.queue()?;
    let buffer = env.buffer(size)?;
    let host = env.usm(UsmKind::Host, size)?;
    let device = env.usm(UsmKind::Device, size)?;
    let base = vec![BASE; size];
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    cb.append_buffer_read(&buffer, offset, len, host.ptr(), AppendOptions::new())?;
    cb.append_buffer_read(&buffer, offset, len, device.ptr(), AppendOptions::new())?;
    // SAFETY: `raw` holds `size` >= `len` bytes and outlives every execution
    // (declared before the queue); the host reads it only after waiting.
    unsafe { cb.append_buffer_read_host(&buffer, offset, len, raw.ptr(), AppendOptions::new())? };
    cb.finalize()?;
    for (run, seed) in [(1, 21), (2, 22)] {
        let input = noise(size, seed);
        queue.write_buffer(&buffer, 0, &input, &[])?;
        write(&queue, host.ptr(), &base)?;
        write(&queue, device.ptr(), &base)?;
        // SAFETY: nothing runs on the queue (every earlier execution was waited for).
        unsafe { raw.set(&base) };
        queue.enqueue_command_buffer(&cb, &[])?.wait()?;
        let expected = placed(&base, 0, &input, offset, len);
        check_eq!(read::<u8>(&queue, host.ptr(), size)?, expected, "host USM, execution {run}");
        check_eq!(read::<u8>(&queue, device.ptr(), size)?, expected, "device USM, execution {run}");
        // SAFETY: the execution was waited for.
        let seen = unsafe { raw.to_vec() };
        check_eq!(seen, expected, "raw host memory, execution {run}");
    }
    Ok(())
}

/// UR's `urCommandBufferWriteCommandsTest.Buffer` for one set, from host USM,
/// device USM and raw host memory (one buffer each), executed twice with new
/// source contents.
fn write_set(env: &Env, size: usize, offset: usize, len: usize) -> CaseResult {
    let raw = HostBytes::filled(size, 0);
    let queue = env.queue()?;
    let host = env.usm(UsmKind::Host, size)?;
    let device = env.usm(UsmKind::Device, size)?;
    let buffers = [env.buffer(size)?, env.buffer(size)?, env.buffer(size)?];
    let base = vec![BASE; size];
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    cb.append_buffer_write(&buffers[0], offset, len, host.ptr(), AppendOptions::new())?;
    cb.append_buffer_write(&buffers[1], offset, len, device.ptr(), AppendOptions::new())?;
    // SAFETY: `raw` holds `size` >= `len` bytes and outlives every execution
    // (declared before the queue); the host writes it only between executions.
    unsafe { cb.append_buffer_write_host(&buffers[2], offset, len, raw.ptr(), AppendOptions::new())? };
    cb.finalize()?;
    for (run, seed) in [(1, 31), (2, 32)] {
        let input = noise(size, seed);
        write(&queue, host.ptr(), &input)?;
        write(&queue, device.ptr(), &input)?;
        // SAFETY: nothing runs on the queue (every earlier execution was waited for).
        unsafe { raw.set(&input) };
        for b in &buffers {
            queue.write_buffer(b, 0, &base, &[])?;
        }
        queue.enqueue_command_buffer(&cb, &[])?.wait()?;
        let expected = placed(&base, offset, &input, 0, len);
        for (b, source) in buffers.iter().zip(["host USM", "device USM", "raw host memory"]) {
            check_eq!(read_buffer::<u8>(&queue, b, 0, size)?, expected, "write from {source}, execution {run}");
        }
    }
    Ok(())
}

/// Every set, read into shared USM, checked through its host mapping (shared
/// memory is host-accessible once the execution completed) and through a queue.
fn into_shared_usm(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    for (i, (size, offset, len)) in SETS.into_iter().enumerate() {
        let input = noise(size, 40 + i as u64);
        let buffer = env.buffer_with(&input)?;
        let shared = env.usm(UsmKind::Shared, size)?;
        let base = vec![BASE; size];
        write(&queue, shared.ptr(), &base)?;
        let cb = env.command_buffer(CommandBufferDesc::default())?;
        cb.append_buffer_read(&buffer, offset, len, shared.ptr(), AppendOptions::new())?;
        cb.finalize()?;
        queue.enqueue_command_buffer(&cb, &[])?.wait()?;
        let expected = placed(&base, 0, &input, offset, len);
        let host = shared.host_ptr();
        check!(host.is_some(), "shared USM without a host address");
        if let Some(p) = host {
            // SAFETY: `p` maps the `size`-byte allocation; the execution was waited for.
            let seen = unsafe { std::slice::from_raw_parts(p, size).to_vec() };
            check_eq!(seen, expected, "set {i} through the host mapping");
        }
        check_eq!(read::<u8>(&queue, shared.ptr(), size)?, expected, "set {i} read back");
    }
    Ok(())
}

/// Every set, written from shared USM that the host filled through its mapping.
fn from_shared_usm(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    for (i, (size, offset, len)) in SETS.into_iter().enumerate() {
        let input = noise(size, 50 + i as u64);
        let shared = env.usm(UsmKind::Shared, size)?;
        let host = shared.host_ptr();
        check!(host.is_some(), "shared USM without a host address");
        if let Some(p) = host {
            // SAFETY: `p` maps the `size`-byte allocation and no command uses it yet.
            unsafe { std::ptr::copy_nonoverlapping(input.as_ptr(), p, size) };
        }
        let base = vec![BASE; size];
        let buffer = env.buffer_with(&base)?;
        let cb = env.command_buffer(CommandBufferDesc::default())?;
        cb.append_buffer_write(&buffer, offset, len, shared.ptr(), AppendOptions::new())?;
        cb.finalize()?;
        queue.enqueue_command_buffer(&cb, &[])?.wait()?;
        check_eq!(read_buffer::<u8>(&queue, &buffer, 0, size)?, placed(&base, offset, &input, 0, len), "set {i}");
    }
    Ok(())
}

/// A raw-pointer read's own signal event says when the host memory holds the
/// data, while a later command of the same buffer may still be running.
fn into_host_memory_signal_event(env: &Env) -> CaseResult {
    const SIZE: usize = 512;
    let raw = HostBytes::filled(SIZE, BASE);
    let queue = env.queue()?;
    let input = noise(SIZE, 61);
    let buffer = env.buffer_with(&input)?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    // SAFETY: `raw` holds SIZE bytes and outlives every execution (declared
    // before the queue); the host reads it only after the read's event.
    let read_cmd =
        unsafe { cb.append_buffer_read_host(&buffer, 64, 256, raw.ptr(), AppendOptions::new().signal_event())? };
    let after = [read_cmd.sync_point];
    cb.append_buffer_fill(&buffer, &[0xEE], 0, SIZE, AppendOptions::new().after(&after))?;
    cb.finalize()?;
    let Some(read_event) = read_cmd.event else {
        return Err(crate::CaseError::Fail("signal event asked for, none returned".into()));
    };
    let execution = queue.enqueue_command_buffer(&cb, &[])?;
    read_event.wait()?;
    // SAFETY: the only command writing `raw` has completed (its event was
    // waited for); the fill after it touches only the buffer.
    let seen = unsafe { raw.to_vec() };
    check_eq!(seen, placed(&vec![BASE; SIZE], 0, &input, 64, 256));
    execution.wait()?;
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, SIZE)?, vec![0xEEu8; SIZE], "the fill after the read");
    Ok(())
}

/// A raw-pointer write's signal event orders an eager read on another queue.
fn from_host_memory_signal_event(env: &Env) -> CaseResult {
    const SIZE: usize = 512;
    let input = noise(SIZE, 71);
    let raw = HostBytes::new(&input);
    let queue = env.queue()?;
    let other = env.queue()?;
    let buffer = env.buffer(SIZE)?;
    let copy = env.usm(UsmKind::Device, SIZE)?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    // SAFETY: `raw` holds SIZE bytes, outlives every execution (declared
    // before both queues) and is not written while the buffer runs.
    let write_cmd =
        unsafe { cb.append_buffer_write_host(&buffer, 128, 300, raw.ptr(), AppendOptions::new().signal_event())? };
    let after = [write_cmd.sync_point];
    cb.append_buffer_read(&buffer, 0, SIZE, copy.ptr(), AppendOptions::new().after(&after))?;
    cb.finalize()?;
    let Some(write_event) = write_cmd.event else {
        return Err(crate::CaseError::Fail("signal event asked for, none returned".into()));
    };
    let execution = queue.enqueue_command_buffer(&cb, &[])?;
    let mut seen = vec![0u8; SIZE];
    other.read_buffer(&buffer, 0, &mut seen, &[&write_event])?;
    let expected = placed(&vec![0u8; SIZE], 128, &input, 0, 300);
    check_eq!(seen, expected, "eager read ordered by the write's event");
    execution.wait()?;
    check_eq!(read::<u8>(&queue, copy.ptr(), SIZE)?, expected, "the read after the write");
    Ok(())
}
