//! The command buffers of the `replay_flat` group ([`crate::replay_flat`]),
//! apart so that `examples/replay_nodes.rs` (one shape replayed under a
//! profiler) builds the very same ones.

use cmdbuf::{
    AppendOptions, CommandBuffer, CommandBufferDesc, Context, Device, Kernel, KernelArg, KernelLaunch, UrError,
    UsmAllocation, UsmKind,
};

/// Work-items of each `axpb` launch, as `abi/harness/bench/kernel_submit.c` launches it.
pub const AXPB_ITEMS: usize = 256;

/// Bytes each memory command moves.
pub const MEMORY_BYTES: usize = 256;

/// The kernels and memory the shapes use.
pub struct Operands<'a> {
    empty: &'a Kernel,
    axpb: &'a Kernel,
    /// `AXPB_ITEMS` u32 values: axpb's pointer, the copies' source, the fills' destination.
    data: UsmAllocation,
    /// The copies' destination.
    copy: UsmAllocation,
}

impl<'a> Operands<'a> {
    /// `empty` and `axpb` are the conformance library's kernels of those names.
    pub fn new(context: &Context, empty: &'a Kernel, axpb: &'a Kernel) -> Result<Operands<'a>, UrError> {
        Ok(Operands {
            empty,
            axpb,
            data: UsmAllocation::new(context, UsmKind::Device, AXPB_ITEMS * 4)?,
            copy: UsmAllocation::new(context, UsmKind::Device, MEMORY_BYTES)?,
        })
    }

    /// One in-order command buffer (as `urt_command_buffer` and libsycl's
    /// in-order graphs make them) of `n` commands of `shape`: `empty`
    /// (the empty kernel on one work-item), `axpb` (over `AXPB_ITEMS`
    /// work-items, a USM pointer and two values), or `memory` (copies and
    /// fills of `MEMORY_BYTES` in turn); `InvalidValue` for another name.
    pub fn build(&self, context: &Context, device: &Device, shape: &str, n: usize) -> Result<CommandBuffer, UrError> {
        if !matches!(shape, "empty" | "axpb" | "memory") {
            return Err(cmdbuf::err!(InvalidValue, "no shape `{shape}`: empty, axpb or memory"));
        }
        let cb = CommandBuffer::new(context, device, CommandBufferDesc { in_order: true, ..Default::default() })?;
        let (a, b) = (3u32, 1u32);
        let args = [KernelArg::Pointer(self.data.ptr()), KernelArg::value(&a), KernelArg::value(&b)];
        let axpb = KernelLaunch::new(self.axpb, &[AXPB_ITEMS], &args);
        let empty = KernelLaunch::new(self.empty, &[1], &[]);
        for i in 0..n {
            let options = AppendOptions::new();
            match shape {
                // SAFETY: `empty` touches no memory.
                "empty" => unsafe { cb.append_kernel_launch(&empty, &[], options) }?,
                // SAFETY: one work-item per u32 of the AXPB_ITEMS-element allocation.
                "axpb" => unsafe { cb.append_kernel_launch(&axpb, &[], options) }?,
                _ if i % 2 == 0 => cb.append_usm_memcpy(self.copy.ptr(), self.data.ptr(), MEMORY_BYTES, options)?,
                _ => cb.append_usm_fill(self.data.ptr(), &[i as u8], MEMORY_BYTES, options)?,
            };
        }
        cb.finalize()?;
        Ok(cb)
    }
}
