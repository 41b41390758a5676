//! Recording: every `urCommandBufferAppend*Exp` of [`CommandBuffer`], each
//! a validating builder of `command_build` followed by the one shared
//! [`append`](CommandBuffer::append) tail (sync points, events, command
//! handles).

use std::sync::Arc;

use smallvec::SmallVec;

use crate::api::command_build::HostSide;
use crate::command::Command;
use crate::device::UpdateCapabilities;
use crate::error::Result;
use crate::event::{Event, check_events};
use crate::interop::{NativeCommand, NativeHandle, NativeScope, NestedCommandBuffer, Owner};
use crate::launch::{KernelCommand, KernelLaunch, LocalSizeOrigin};
use crate::memory::{MemBuffer, MigrationFlags, UsmAdvice, UsmPtr};
use crate::program::Kernel;
use crate::rect::{RectLayout, RectRegion};
use crate::{ensure, err};

use super::{AppendOptions, Appended, CommandBuffer, CommandHandle, KernelRecord, Record, SyncPoint};

impl CommandBuffer {
    /// Appends a native command (`urCommandBufferAppendNativeCommandExp`):
    /// `callback` does backend-native work where its [`NativeScope`] says,
    /// at the times [`crate::interop`] lists per backend (it may run more
    /// than once), after the commands of `sync_points`.
    ///
    /// `child` is UR's child command buffer: on devices that nest command
    /// buffers (`CommandBufferCaps::subgraphs`: CUDA's native command
    /// buffers), the callback's target is the child's native object (its
    /// `CUgraph`), and the child, with the work, becomes a child node of this
    /// buffer. Elsewhere a valid child is `UnsupportedFeature`, rather than
    /// ignored as UR allows. A child of another context is
    /// `InvalidCommandBuffer`, the buffer itself `InvalidValue`, a finalized
    /// child `InvalidOperation`.
    ///
    /// # Safety
    /// The native work is unchecked: everything it touches must stay valid
    /// for as long as the buffer may be enqueued, and it must leave the native
    /// objects as it found them.
    #[tracing::instrument(level = "debug", skip_all, fields(label = self.label()))]
    pub unsafe fn append_native_command(
        &self,
        child: Option<&CommandBuffer>,
        sync_points: &[SyncPoint],
        callback: impl Fn(&NativeScope<'_>) + Send + Sync + 'static,
    ) -> Result<SyncPoint> {
        if let Some(child) = child {
            ensure!(
                child.context() == &self.inner.context,
                InvalidCommandBuffer,
                "the child command buffer belongs to another context"
            );
            ensure!(!Arc::ptr_eq(&child.inner, &self.inner), InvalidValue, "a command buffer cannot be its own child");
            ensure!(!child.is_finalized(), InvalidOperation, "the child command buffer is finalized");
            ensure!(
                self.device().info().command_buffer.subgraphs,
                UnsupportedFeature,
                "{} cannot nest command buffers: no child command buffer for native commands",
                self.device()
            );
        }
        let native = NativeCommand::new(
            Arc::new(callback),
            Vec::new(),
            Owner::CommandBuffer(self.inner.id),
            child.map(|c| Arc::new(c.clone()) as Arc<dyn NestedCommandBuffer>),
        );
        Ok(self.append(Command::Native(native), None, &AppendOptions::new().after(sync_points))?.sync_point)
    }

    fn append(&self, command: Command, kernel: Option<KernelRecord>, opts: &AppendOptions<'_>) -> Result<Appended> {
        let _span = tracing::debug_span!("append", kind = %command.kind(), label = self.label()).entered();
        let ctx = &self.inner.context;
        let caps = ctx.device().info().command_buffer;
        let mut state = self.inner.state.lock();
        state.recording("append to")?;
        let count = state.records.len() as u32;
        let mut deps: SmallVec<[u32; 4]> = SmallVec::new();
        for sp in opts.sync_points {
            ensure!(
                sp.buffer == self.inner.id,
                InvalidSyncPointWaitList,
                "sync point {} belongs to another command buffer",
                sp.index
            );
            ensure!(
                sp.index < count,
                InvalidSyncPointWaitList,
                "sync point {} names a command not yet appended ({count} so far)",
                sp.index
            );
            deps.push(sp.index);
        }
        // The same sync point may be listed twice (UR's DuplicateSyncPoint);
        // adapters get each dependency once.
        deps.sort_unstable();
        deps.dedup();
        if self.inner.desc.in_order {
            deps.clear();
            deps.extend(count.checked_sub(1));
        }
        ensure!(
            caps.events || (opts.wait_events.is_empty() && !opts.signal_event),
            UnsupportedFeature,
            "{} has no command-buffer event support",
            ctx.device()
        );
        let wait_events = check_events(ctx.id(), opts.wait_events, "append wait list")?;
        let alternatives = kernel.as_ref().map_or(&[][..], |k| &k.alternatives[..]);
        // SAFETY: the command was validated for this context, deps name earlier
        // commands (or the previous one for in-order buffers), the events are of
        // this context, and alternatives are only present on updatable
        // buffers (checked by `append_kernel_launch`).
        let signal = unsafe {
            state.recording("append to")?.append(&command, alternatives, &deps, &wait_events, opts.signal_event)?
        };
        let event = match (opts.signal_event, signal) {
            (true, Some(e)) => Some(Event::from_imp(e, ctx)),
            (true, None) => return Err(err!(Unknown, "the adapter returned no signal event")),
            (false, _) => None,
        };
        state.records.push(Record { command, kernel, signal: opts.signal_event, wait_events: wait_events.len() });
        let handle = self.inner.desc.updatable.then_some(CommandHandle { buffer: self.inner.id, index: count });
        Ok(Appended { sync_point: SyncPoint { buffer: self.inner.id, index: count }, event, command: handle })
    }

    /// Appends a kernel launch (`urCommandBufferAppendKernelLaunchWithArgsExp`).
    /// `alternatives` are kernels an update may switch this command to (updatable
    /// buffers on devices with the KERNEL_HANDLE capability only).
    ///
    /// # Safety
    /// The kernel may read and write any memory its arguments let it reach, at
    /// every execution: pointer arguments must stay valid for as long as the
    /// buffer may be enqueued with them.
    #[tracing::instrument(level = "debug", skip_all, fields(kernel = launch.kernel.name(), label = self.label()))]
    pub unsafe fn append_kernel_launch(
        &self,
        launch: &KernelLaunch<'_>,
        alternatives: &[&Kernel],
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let (command, local_origin) = launch.resolve(&self.inner.context)?;
        // SAFETY: the caller's contract is this function's.
        unsafe { self.append_kernel_command(command, local_origin, alternatives, opts) }
    }

    /// Appends a kernel launch validated by [`KernelLaunch::resolve`] for
    /// this buffer's context (the graph layer keeps launches in that form).
    ///
    /// # Safety
    /// As for [`append_kernel_launch`](Self::append_kernel_launch).
    pub(crate) unsafe fn append_kernel_command(
        &self,
        command: KernelCommand,
        local_origin: LocalSizeOrigin,
        alternatives: &[&Kernel],
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let ctx = &self.inner.context;
        if !alternatives.is_empty() {
            ensure!(
                self.inner.desc.updatable,
                InvalidOperation,
                "kernel alternatives on a buffer that is not updatable"
            );
            ensure!(
                ctx.device().info().command_buffer.update.contains(UpdateCapabilities::KERNEL_HANDLE),
                UnsupportedFeature,
                "{} cannot switch kernels in command buffers",
                ctx.device()
            );
        }
        for alt in alternatives {
            ensure!(
                alt.program().context() == ctx,
                InvalidKernel,
                "alternative `{}` belongs to another context",
                alt.name()
            );
            ensure!(
                !alt.same_kernel(&command.kernel),
                InvalidValue,
                "the launched kernel is listed among its alternatives"
            );
        }
        let record = KernelRecord {
            original: command.kernel.clone(),
            alternatives: alternatives.iter().map(|k| (*k).clone()).collect(),
            local_origin,
        };
        self.append(Command::KernelLaunch(command), Some(record), &opts)
    }

    /// Appends a command built by one of [`Command`]'s public builders
    /// (memory commands kept in validated form); `InvalidContext` for one
    /// of another context, `InvalidValue` for a kernel launch (appended with
    /// [`append_kernel_launch`](Self::append_kernel_launch)).
    ///
    /// ```
    /// use cmdbuf::*;
    /// # let device = cmdbuf_cpu::default_device();
    /// let ctx = Context::new(&device)?;
    /// let buf = UsmAllocation::new(&ctx, UsmKind::Device, 64)?;
    /// let fill = Command::usm_fill(&ctx, buf.ptr(), &[7], 64)?;
    /// let cb = CommandBuffer::new(&ctx, &device, CommandBufferDesc::default())?;
    /// cb.append_command(fill.clone(), AppendOptions::new())?;
    ///
    /// let other = Context::new(&device)?;
    /// let foreign = CommandBuffer::new(&other, &device, CommandBufferDesc::default())?;
    /// assert!(matches!(foreign.append_command(fill, AppendOptions::new()), Err(UrError::InvalidContext(_))));
    /// # Ok::<(), UrError>(())
    /// ```
    pub fn append_command(&self, command: Command, opts: AppendOptions<'_>) -> Result<Appended> {
        command.check_context(&self.inner.context)?;
        self.append(command, None, &opts)
    }

    /// Appends a USM copy (`urCommandBufferAppendUSMMemcpyExp`); both ranges
    /// are checked against their allocations.
    pub fn append_usm_memcpy(
        &self,
        dst: UsmPtr,
        src: UsmPtr,
        size: usize,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let command = Command::usm_memcpy(&self.inner.context, HostSide::Usm(dst), HostSide::Usm(src), size)?;
        self.append(command, None, &opts)
    }

    /// Appends a copy where each side is either a USM pointer of the buffer's
    /// context or, lying in no USM allocation of it, host memory
    /// (`urCommandBufferAppendUSMMemcpyExp`, which accepts both). At least one
    /// side must be USM: a copy between two host memories, which a queue runs
    /// on the host ([`Queue::usm_memcpy_host`](crate::Queue::usm_memcpy_host)),
    /// is `UnsupportedFeature` here, because no backend's native command
    /// buffer holds host work.
    ///
    /// # Safety
    /// A side in no USM allocation must be host memory valid for `size`
    /// bytes (reads of `src`, writes of `dst`) at every execution of the
    /// buffer, and not accessed by the host in conflict while one runs.
    pub unsafe fn append_usm_memcpy_host(
        &self,
        dst: *mut u8,
        src: *const u8,
        size: usize,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let (dst, src) = (HostSide::Raw(dst), HostSide::Raw(src.cast_mut()));
        let command = Command::usm_memcpy(&self.inner.context, dst, src, size)?;
        self.append(command, None, &opts)
    }

    /// Appends a USM fill with a pattern of any length dividing the size (`urCommandBufferAppendUSMFillExp`).
    pub fn append_usm_fill(
        &self,
        dst: UsmPtr,
        pattern: &[u8],
        size: usize,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        self.append(Command::usm_fill(&self.inner.context, dst, pattern, size)?, None, &opts)
    }

    /// Appends a USM prefetch (`urCommandBufferAppendUSMPrefetchExp`).
    pub fn append_usm_prefetch(
        &self,
        ptr: UsmPtr,
        size: usize,
        flags: MigrationFlags,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        self.append(Command::usm_prefetch(&self.inner.context, ptr, size, flags)?, None, &opts)
    }

    /// Appends USM advice (`urCommandBufferAppendUSMAdviseExp`).
    pub fn append_usm_advise(
        &self,
        ptr: UsmPtr,
        size: usize,
        advice: UsmAdvice,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        self.append(Command::usm_advise(&self.inner.context, ptr, size, advice)?, None, &opts)
    }

    /// Appends a buffer copy (`urCommandBufferAppendMemBufferCopyExp`).
    pub fn append_buffer_copy(
        &self,
        src: &MemBuffer,
        dst: &MemBuffer,
        src_offset: usize,
        dst_offset: usize,
        size: usize,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        self.append(Command::buffer_copy(&self.inner.context, src, dst, src_offset, dst_offset, size)?, None, &opts)
    }

    /// Appends a rect copy between buffers (`urCommandBufferAppendMemBufferCopyRectExp`).
    pub fn append_buffer_copy_rect(
        &self,
        src: &MemBuffer,
        dst: &MemBuffer,
        src_layout: RectLayout,
        dst_layout: RectLayout,
        region: RectRegion,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let command = Command::buffer_copy_rect(&self.inner.context, src, dst, src_layout, dst_layout, region)?;
        self.append(command, None, &opts)
    }

    /// Appends a buffer read into USM, host USM included (`urCommandBufferAppendMemBufferReadExp`).
    pub fn append_buffer_read(
        &self,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        dst: UsmPtr,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let command = Command::buffer_read(&self.inner.context, buffer, offset, size, HostSide::Usm(dst))?;
        self.append(command, None, &opts)
    }

    /// Appends a buffer read into memory: a USM pointer of the buffer's
    /// context or raw host memory.
    ///
    /// # Safety
    /// Outside USM, `dst` must be valid for `size` bytes of writes at every execution of the
    /// buffer, and not accessed by the host while one runs.
    pub unsafe fn append_buffer_read_host(
        &self,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        dst: *mut u8,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let command = Command::buffer_read(&self.inner.context, buffer, offset, size, HostSide::Raw(dst))?;
        self.append(command, None, &opts)
    }

    /// Appends a buffer write from USM, host USM included (`urCommandBufferAppendMemBufferWriteExp`).
    pub fn append_buffer_write(
        &self,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        src: UsmPtr,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let command = Command::buffer_write(&self.inner.context, buffer, offset, size, HostSide::Usm(src))?;
        self.append(command, None, &opts)
    }

    /// Appends a buffer write from memory: a USM pointer of the buffer's
    /// context or raw host memory.
    ///
    /// # Safety
    /// Outside USM, `src` must be valid for `size` bytes of reads at every execution of the
    /// buffer, and not written by the host while one runs.
    pub unsafe fn append_buffer_write_host(
        &self,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        src: *const u8,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let command = Command::buffer_write(&self.inner.context, buffer, offset, size, HostSide::Raw(src.cast_mut()))?;
        self.append(command, None, &opts)
    }

    /// Appends a rect read into USM laid out by `host_layout` from `dst`
    /// (`urCommandBufferAppendMemBufferReadRectExp`).
    pub fn append_buffer_read_rect(
        &self,
        buffer: &MemBuffer,
        buffer_layout: RectLayout,
        host_layout: RectLayout,
        region: RectRegion,
        dst: UsmPtr,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let command = Command::buffer_read_rect(
            &self.inner.context,
            buffer,
            buffer_layout,
            host_layout,
            region,
            HostSide::Usm(dst),
        )?;
        self.append(command, None, &opts)
    }

    /// Appends a rect write from USM laid out by `host_layout` from `src`
    /// (`urCommandBufferAppendMemBufferWriteRectExp`).
    pub fn append_buffer_write_rect(
        &self,
        buffer: &MemBuffer,
        buffer_layout: RectLayout,
        host_layout: RectLayout,
        region: RectRegion,
        src: UsmPtr,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let command = Command::buffer_write_rect(
            &self.inner.context,
            buffer,
            buffer_layout,
            host_layout,
            region,
            HostSide::Usm(src),
        )?;
        self.append(command, None, &opts)
    }

    /// Appends a rect read into memory laid out by `host_layout` from `dst`:
    /// a USM pointer of the buffer's context or raw host memory.
    ///
    /// # Safety
    /// Outside USM, `dst` must be valid for writes over the host layout's
    /// extent at every execution of the buffer, and not accessed by the host
    /// while one runs.
    pub unsafe fn append_buffer_read_rect_host(
        &self,
        buffer: &MemBuffer,
        buffer_layout: RectLayout,
        host_layout: RectLayout,
        region: RectRegion,
        dst: *mut u8,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let dst = HostSide::Raw(dst);
        let command = Command::buffer_read_rect(&self.inner.context, buffer, buffer_layout, host_layout, region, dst)?;
        self.append(command, None, &opts)
    }

    /// Appends a rect write from memory laid out by `host_layout` from `src`:
    /// a USM pointer of the buffer's context or raw host memory.
    ///
    /// # Safety
    /// Outside USM, `src` must be valid for reads over the host layout's
    /// extent at every execution of the buffer, and not written by the host
    /// while one runs.
    pub unsafe fn append_buffer_write_rect_host(
        &self,
        buffer: &MemBuffer,
        buffer_layout: RectLayout,
        host_layout: RectLayout,
        region: RectRegion,
        src: *const u8,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let src = HostSide::Raw(src.cast_mut());
        let command = Command::buffer_write_rect(&self.inner.context, buffer, buffer_layout, host_layout, region, src)?;
        self.append(command, None, &opts)
    }

    /// Appends a buffer fill with a pattern of any length dividing the size (`urCommandBufferAppendMemBufferFillExp`).
    pub fn append_buffer_fill(
        &self,
        buffer: &MemBuffer,
        pattern: &[u8],
        offset: usize,
        size: usize,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        self.append(Command::buffer_fill(&self.inner.context, buffer, pattern, offset, size)?, None, &opts)
    }
}

// A command-buffer native command's child is a command buffer, which the
// native command (`interop.rs`, below the command buffers) holds as a
// `NestedCommandBuffer`.
impl NativeCommand {
    /// The child command buffer of a command-buffer native command: given
    /// only on devices that report sub-graph support, not finalized, of the
    /// same context. The adapter records the callback's work into it (its
    /// native object is the target) and adds it to the parent as a child
    /// node; inside the callback its `native_handle()` is the target too.
    pub fn child(&self) -> Option<&CommandBuffer> {
        self.child.as_ref().and_then(|child| child.as_any().downcast_ref())
    }
}

impl NestedCommandBuffer for CommandBuffer {
    fn id(&self) -> u64 {
        CommandBuffer::id(self)
    }

    fn recording_target(&self) -> Result<NativeHandle> {
        CommandBuffer::recording_target(self)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
