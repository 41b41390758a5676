//! Extension entry points, resolved per platform.
//!
//! ICD loaders export only core OpenCL and a few sharing extensions: the
//! command-buffer and Intel USM entry points have to be looked up with
//! `clGetExtensionFunctionAddressForPlatform` for each platform. The
//! command-buffer recording functions changed shape in 0.9.5 (a `properties`
//! argument after the queue), so they are kept as one of two typed tables
//! and called through uniform methods; [`crate::version`] says which table a
//! device's version needs. Both tables, their types and calls are generated
//! from one list of the entry points (`recording_entry_points!`).
//!
//! Also the core constants and the one raw handle ([`RawEvent`]) that the
//! device, PoCL's one-launch chain and every object share.

#![allow(non_camel_case_types)]

use std::ffi::{CStr, c_void};
use std::ptr;

use cl3::types::{
    cl_bitfield, cl_command_queue, cl_context, cl_device_id, cl_event, cl_int, cl_kernel, cl_mem, cl_platform_id,
    cl_properties, cl_uint,
};
use cmdbuf_core::adapter::prelude::ProfilingInfo;

use crate::version::{CommandBufferAbi, RecordShape};

/// `CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE` and `CL_QUEUE_PROFILING_ENABLE`:
/// queue properties.
pub(crate) const CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE: cl_bitfield = 1 << 0;
pub(crate) const CL_QUEUE_PROFILING_ENABLE: cl_bitfield = 1 << 1;

/// `CL_COMPLETE`: an event's execution status once its command has run.
pub(crate) const CL_COMPLETE: cl_int = 0;
const CL_EVENT_COMMAND_EXECUTION_STATUS: u32 = 0x11D3;

/// `CL_EVENT_COMMAND_EXECUTION_STATUS` of a valid event: 0 complete, 1
/// running, 2 submitted, 3 queued, negative an error (a failed query too).
pub(crate) fn execution_status(event: cl_event) -> cl_int {
    match cl3::event::get_event_info(event, CL_EVENT_COMMAND_EXECUTION_STATUS) {
        Ok(cl3::info_type::InfoType::Int(status)) => status,
        Ok(_) => -1,
        Err(code) => code.min(-1),
    }
}

/// One reference to a `cl_event`, released on drop.
pub(crate) struct RawEvent(cl_event);

// SAFETY: OpenCL event handles may be used and released from any thread.
unsafe impl Send for RawEvent {}
// SAFETY: as for Send; every use goes through thread-safe OpenCL calls.
unsafe impl Sync for RawEvent {}

impl RawEvent {
    /// Takes ownership of the reference a successful enqueue returned.
    ///
    /// # Safety
    /// `event` is a valid event whose reference the caller gives up.
    pub(crate) unsafe fn from_raw(event: cl_event) -> RawEvent {
        RawEvent(event)
    }

    /// The handle, valid while `self` lives.
    pub(crate) fn get(&self) -> cl_event {
        self.0
    }

    /// Another reference to the same event.
    pub(crate) fn retain(&self) -> RawEvent {
        // SAFETY: the handle is valid while self lives; retaining it gives the
        // new value its own reference.
        if let Err(code) = unsafe { cl3::event::retain_event(self.0) } {
            tracing::error!(code, "clRetainEvent failed");
        }
        RawEvent(self.0)
    }

    /// `CL_EVENT_COMMAND_EXECUTION_STATUS`: 0 complete, 1 running, 2
    /// submitted, 3 queued, negative an error.
    pub(crate) fn execution_status(&self) -> cl_int {
        execution_status(self.0)
    }

    /// Blocks until the event completes.
    pub(crate) fn wait(&self) -> std::result::Result<(), cl_int> {
        cl3::event::wait_for_events(&[self.0])
    }

    /// Whether it has completed (successfully or not).
    pub(crate) fn is_done(&self) -> bool {
        self.execution_status() <= CL_COMPLETE
    }

    /// The four timestamps, when the queue recorded them.
    pub(crate) fn timestamps(&self) -> Option<ProfilingInfo> {
        let get = |name| match cl3::event::get_event_profiling_info(self.0, name) {
            Ok(cl3::info_type::InfoType::Ulong(v)) => Some(v),
            _ => None,
        };
        Some(ProfilingInfo {
            queued: get(cl3::event::CL_PROFILING_COMMAND_QUEUED)?,
            submit: get(cl3::event::CL_PROFILING_COMMAND_SUBMIT)?,
            start: get(cl3::event::CL_PROFILING_COMMAND_START)?,
            end: get(cl3::event::CL_PROFILING_COMMAND_END)?,
        })
    }
}

impl Drop for RawEvent {
    fn drop(&mut self) {
        // SAFETY: this value owns one reference to a valid event.
        if let Err(code) = unsafe { cl3::event::release_event(self.0) } {
            tracing::error!(code, "clReleaseEvent failed");
        }
    }
}

/// `cl_command_buffer_khr`.
pub(crate) type cl_command_buffer_khr = *mut c_void;
/// `cl_sync_point_khr`.
pub(crate) type cl_sync_point_khr = cl_uint;
/// `cl_mutable_command_khr`.
pub(crate) type cl_mutable_command_khr = *mut c_void;

pub(crate) const CL_DEVICE_EXTENSIONS_WITH_VERSION: cl_uint = 0x1060;
pub(crate) const CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR: cl_uint = 0x12A9;
pub(crate) const CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR: cl_uint = 0x12AA;
pub(crate) const CL_DEVICE_COMMAND_BUFFER_SUPPORTED_QUEUE_PROPERTIES_KHR: cl_uint = 0x129A;
pub(crate) const CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR: cl_bitfield = 1 << 2;
pub(crate) const CL_COMMAND_BUFFER_CAPABILITY_OUT_OF_ORDER_KHR: cl_bitfield = 1 << 3;
pub(crate) const CL_COMMAND_BUFFER_FLAGS_KHR: cl_properties = 0x1293;
pub(crate) const CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR: cl_bitfield = 1 << 0;

// cl_khr_command_buffer_mutable_dispatch (0.9.2 and later; 1.0).
pub(crate) const CL_COMMAND_BUFFER_MUTABLE_KHR: cl_bitfield = 1 << 1;
pub(crate) const CL_DEVICE_MUTABLE_DISPATCH_CAPABILITIES_KHR: cl_uint = 0x12B0;
const CL_MUTABLE_DISPATCH_UPDATABLE_FIELDS_KHR: cl_properties = 0x12B1;
pub(crate) const CL_MUTABLE_DISPATCH_GLOBAL_OFFSET_KHR: cl_bitfield = 1 << 0;
pub(crate) const CL_MUTABLE_DISPATCH_GLOBAL_SIZE_KHR: cl_bitfield = 1 << 1;
pub(crate) const CL_MUTABLE_DISPATCH_LOCAL_SIZE_KHR: cl_bitfield = 1 << 2;
pub(crate) const CL_MUTABLE_DISPATCH_ARGUMENTS_KHR: cl_bitfield = 1 << 3;
const CL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG_KHR: cl_uint = 0;

pub(crate) const CL_DEVICE_HOST_MEM_CAPABILITIES_INTEL: cl_uint = 0x4190;
pub(crate) const CL_DEVICE_DEVICE_MEM_CAPABILITIES_INTEL: cl_uint = 0x4191;
pub(crate) const CL_DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL: cl_uint = 0x4192;
pub(crate) const CL_UNIFIED_SHARED_MEMORY_ACCESS_INTEL: cl_bitfield = 1 << 0;

type CreateCommandBuffer = unsafe extern "system" fn(
    num_queues: cl_uint,
    queues: *const cl_command_queue,
    properties: *const cl_properties,
    errcode_ret: *mut cl_int,
) -> cl_command_buffer_khr;
type CommandBufferOp = unsafe extern "system" fn(command_buffer: cl_command_buffer_khr) -> cl_int;
type EnqueueCommandBuffer = unsafe extern "system" fn(
    num_queues: cl_uint,
    queues: *mut cl_command_queue,
    command_buffer: cl_command_buffer_khr,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int;
/// The same in both shapes: its properties argument existed from 0.9.0.
type CommandNdRange = unsafe extern "system" fn(
    command_buffer: cl_command_buffer_khr,
    command_queue: cl_command_queue,
    properties: *const cl_properties,
    kernel: cl_kernel,
    work_dim: cl_uint,
    global_work_offset: *const usize,
    global_work_size: *const usize,
    local_work_size: *const usize,
    num_sync_points_in_wait_list: cl_uint,
    sync_point_wait_list: *const cl_sync_point_khr,
    sync_point: *mut cl_sync_point_khr,
    mutable_handle: *mut cl_mutable_command_khr,
) -> cl_int;

/// The function-pointer type of a recording entry point in one
/// [`RecordShape`]: the command-buffer and the queue, then the shape's own
/// parameters (`properties` from 0.9.5), the command's parameters, and last
/// the sync-point wait list, the new sync point and the mutable handle.
macro_rules! record_fn {
    ([$($shape_params:tt)*]; $($arg:ident: $ty:ty),*) => {
        unsafe extern "system" fn(
            command_buffer: cl_command_buffer_khr,
            command_queue: cl_command_queue,
            $($shape_params)*
            $($arg: $ty,)*
            num_sync_points_in_wait_list: cl_uint,
            sync_point_wait_list: *const cl_sync_point_khr,
            sync_point: *mut cl_sync_point_khr,
            mutable_handle: *mut cl_mutable_command_khr,
        ) -> cl_int
    };
}

/// Calls a recording entry point of one shape. The queue is NULL (the base
/// extension records to the command-buffer's own queue and requires NULL),
/// and so are the properties and the mutable handle.
macro_rules! record_call {
    ([$($shape_values:tt)*]; $f:expr, $buffer:expr, ($($arg:expr),*), $n:expr, $list:expr, $point:expr) => {
        $f($buffer, ptr::null_mut(), $($shape_values)* $($arg,)* $n, $list, $point, ptr::null_mut())
    };
}

/// Records a command through `call`, which gets the wait list's length and
/// pointer and the new sync point's location.
fn record_with(
    deps: &[cl_sync_point_khr],
    call: impl FnOnce(cl_uint, *const cl_sync_point_khr, *mut cl_sync_point_khr) -> cl_int,
) -> Result<cl_sync_point_khr, cl_int> {
    let (n, list) = sync_list(deps);
    let mut point = 0;
    let status = call(n, list, &mut point);
    sync_point(status, point)
}

/// One shape's module of the recording entry points: their types, a table
/// of them, its lookup, and a call per entry point that takes the
/// command's own arguments and a sync-point wait list and returns the new
/// sync point.
macro_rules! shape_table {
    (
        $shape:ident, $doc:literal, $params:tt, $values:tt;
        required { $($req:ident: $req_ty:ident = $req_name:literal ($($ra:ident: $rt:ty),* $(,)?);)* }
        optional { $($opt:ident: $opt_ty:ident = $opt_name:literal ($($oa:ident: $ot:ty),* $(,)?);)* }
    ) => {
        #[doc = $doc]
        mod $shape {
            use super::*;

            $(pub(super) type $req_ty = record_fn!($params; $($ra: $rt),*);)*
            $(pub(super) type $opt_ty = record_fn!($params; $($oa: $ot),*);)*

            /// The entry points of a platform; an optional one is `None`
            /// before the version that added it or where the platform lacks it.
            pub(super) struct Table {
                $(pub(super) $req: $req_ty,)*
                $(pub(super) $opt: Option<$opt_ty>,)*
            }

            impl Table {
                /// Looks the entry points up, the optional ones only when `optional`.
                ///
                /// # Safety
                /// `lookup` returns entry points declared as in this shape.
                pub(super) unsafe fn resolve(lookup: Lookup<'_>, optional: bool) -> Result<Table, String> {
                    // SAFETY: each type is the entry point's declaration in
                    // this shape (contract).
                    unsafe {
                        Ok(Table {
                            $($req: resolve(lookup, $req_name)?,)*
                            $($opt: if optional { resolve(lookup, $opt_name).ok() } else { None },)*
                        })
                    }
                }

                $(
                    /// Records the command.
                    ///
                    /// # Safety
                    /// As for the `CommandBufferApi` method that calls it.
                    #[allow(clippy::too_many_arguments)]
                    pub(super) unsafe fn $req(
                        &self,
                        buffer: cl_command_buffer_khr,
                        $($ra: $rt,)*
                        deps: &[cl_sync_point_khr],
                    ) -> Result<cl_sync_point_khr, cl_int> {
                        // SAFETY: `lookup` gave entry points of this shape (`resolve`'s `# Safety`),
                        // so the required entry point is called with the arguments its declaration
                        // takes.
                        record_with(deps, |n, list, point| unsafe {
                            record_call!($values; (self.$req), buffer, ($($ra),*), n, list, point)
                        })
                    }
                )*

                $(
                    /// Records the command; `CL_INVALID_OPERATION` where the
                    /// entry point is absent.
                    ///
                    /// # Safety
                    /// As for the `CommandBufferApi` method that calls it.
                    #[allow(clippy::too_many_arguments)]
                    pub(super) unsafe fn $opt(
                        &self,
                        buffer: cl_command_buffer_khr,
                        $($oa: $ot,)*
                        deps: &[cl_sync_point_khr],
                    ) -> Result<cl_sync_point_khr, cl_int> {
                        const INVALID_OPERATION: cl_int = -59;
                        let Some(f) = self.$opt else { return Err(INVALID_OPERATION) };
                        // SAFETY: `lookup` gave entry points of this shape (`resolve`'s `# Safety`),
                        // so the optional entry point, present here, is called with the arguments its
                        // declaration takes.
                        record_with(deps, |n, list, point| unsafe {
                            record_call!($values; f, buffer, ($($oa),*), n, list, point)
                        })
                    }
                )*
            }
        }
    };
}

/// The recording entry points, listed once for both shapes: field, type,
/// C name and the command's own parameters.
macro_rules! recording_entry_points {
    ($($list:tt)*) => {
        shape_table!(legacy, "Recording entry points of 0.9.0 to 0.9.4.", [], []; $($list)*);
        shape_table!(
            props,
            "Recording entry points of 0.9.5 and later: `properties` after the queue.",
            [properties: *const cl_properties,],
            [ptr::null(),];
            $($list)*
        );
    };
}

recording_entry_points! {
    required {
        copy: CopyBuffer = c"clCommandCopyBufferKHR" (
            src_buffer: cl_mem,
            dst_buffer: cl_mem,
            src_offset: usize,
            dst_offset: usize,
            size: usize,
        );
        copy_rect: CopyBufferRect = c"clCommandCopyBufferRectKHR" (
            src_buffer: cl_mem,
            dst_buffer: cl_mem,
            src_origin: *const usize,
            dst_origin: *const usize,
            region: *const usize,
            src_row_pitch: usize,
            src_slice_pitch: usize,
            dst_row_pitch: usize,
            dst_slice_pitch: usize,
        );
        fill: FillBuffer = c"clCommandFillBufferKHR" (
            buffer: cl_mem,
            pattern: *const c_void,
            pattern_size: usize,
            offset: usize,
            size: usize,
        );
    }
    optional {
        svm_memcpy: SvmMemcpy = c"clCommandSVMMemcpyKHR" (
            dst_ptr: *mut c_void,
            src_ptr: *const c_void,
            size: usize,
        );
        svm_fill: SvmMemFill = c"clCommandSVMMemFillKHR" (
            svm_ptr: *mut c_void,
            pattern: *const c_void,
            pattern_size: usize,
            size: usize,
        );
    }
}

/// The recording entry points in the shape of the device's version.
enum Recording {
    Legacy(legacy::Table),
    Properties(props::Table),
}

/// Evaluates `$body` with `$t` bound to the table of whichever shape
/// `$recording` has (both shapes have the same fields and calls).
macro_rules! with_table {
    ($recording:expr, |$t:ident| $body:expr) => {
        match $recording {
            Recording::Legacy($t) => $body,
            Recording::Properties($t) => $body,
        }
    };
}

/// Looks up an extension entry point of `platform`.
///
/// # Safety
/// `platform` is a valid platform of the loaded OpenCL library.
unsafe fn lookup(platform: cl_platform_id, name: &CStr) -> Option<*mut c_void> {
    let library = cl3::load_library().as_ref().ok()?;
    let address = library.clGetExtensionFunctionAddressForPlatform(platform, name.as_ptr())?;
    (!address.is_null()).then_some(address)
}

/// Finds an entry point by name: the platform's
/// `clGetExtensionFunctionAddressForPlatform`, or a table in tests.
type Lookup<'a> = &'a dyn Fn(&CStr) -> Option<*mut c_void>;

/// Looks up `name` and gives it the function-pointer type `F`.
///
/// # Safety
/// `lookup` returns addresses of functions with the C declarations of the
/// names asked for; `F` is an `extern "system" fn` type matching the
/// declaration of `name` in the extension version the caller selected.
unsafe fn resolve<F: Copy>(lookup: Lookup<'_>, name: &CStr) -> Result<F, String> {
    const { assert!(size_of::<F>() == size_of::<*mut c_void>()) };
    let address = lookup(name).ok_or_else(|| format!("the platform does not provide {}", name.to_string_lossy()))?;
    // SAFETY: `F` is a function-pointer type of the same size as the address
    // (asserted above) whose signature the caller vouches for.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) })
}

/// The pointer and length of a sync-point wait list, NULL when empty.
fn sync_list(deps: &[cl_sync_point_khr]) -> (cl_uint, *const cl_sync_point_khr) {
    if deps.is_empty() { (0, ptr::null()) } else { (deps.len() as cl_uint, deps.as_ptr()) }
}

/// A successful call's sync point, or the error code.
fn sync_point(status: cl_int, point: cl_sync_point_khr) -> Result<cl_sync_point_khr, cl_int> {
    if status == 0 { Ok(point) } else { Err(status) }
}

/// `cl_mutable_dispatch_arg_khr`: one argument as `clSetKernelArg` (or,
/// in the SVM list, `clSetKernelArgSVMPointer`) would take it.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub(crate) struct MutableArg {
    pub(crate) arg_index: cl_uint,
    pub(crate) arg_size: usize,
    pub(crate) arg_value: *const c_void,
}

/// `cl_mutable_dispatch_config_khr` of 0.9.2 and later (no `type` and
/// `next` members: those went with the linked-list form).
#[repr(C)]
struct MutableDispatchConfig {
    command: cl_mutable_command_khr,
    num_args: cl_uint,
    num_svm_args: cl_uint,
    num_exec_infos: cl_uint,
    work_dim: cl_uint,
    arg_list: *const MutableArg,
    arg_svm_list: *const MutableArg,
    exec_info_list: *const c_void,
    global_work_offset: *const usize,
    global_work_size: *const usize,
    local_work_size: *const usize,
}

/// `clUpdateMutableCommandsKHR` of 0.9.2 and later.
type UpdateMutableCommands = unsafe extern "system" fn(
    command_buffer: cl_command_buffer_khr,
    num_configs: cl_uint,
    config_types: *const cl_uint,
    configs: *const *const c_void,
) -> cl_int;

/// The new configuration of one mutable kernel command; what is `None` or
/// empty stays as recorded.
#[derive(Default, Debug)]
pub(crate) struct DispatchUpdate {
    /// The handle its recording returned.
    pub(crate) command: cl_mutable_command_khr,
    /// Arguments set as `clSetKernelArg` would.
    pub(crate) args: Vec<MutableArg>,
    /// Pointer arguments set as `clSetKernelArgSVMPointer` would.
    pub(crate) svm_args: Vec<MutableArg>,
    /// The work dimension the sizes below have (the recorded one).
    pub(crate) work_dim: u32,
    pub(crate) global_offset: Option<[usize; 3]>,
    pub(crate) global_size: Option<[usize; 3]>,
    pub(crate) local_size: Option<[usize; 3]>,
}

/// The `cl_khr_command_buffer` entry points of one platform, typed for the
/// version its device reports, with `clUpdateMutableCommandsKHR` where the
/// device's mutable dispatch is used.
pub(crate) struct CommandBufferApi {
    create: CreateCommandBuffer,
    finalize: CommandBufferOp,
    release: CommandBufferOp,
    enqueue: EnqueueCommandBuffer,
    nd_range: CommandNdRange,
    recording: Recording,
    update_mutable: Option<UpdateMutableCommands>,
}

// Recording calls pass NULL for the queue (the base extension records to the
// command-buffer's own queue and requires NULL), NULL properties, and NULL
// for the mutable handle.
impl CommandBufferApi {
    /// Resolves the entry points for `abi` on `platform`.
    ///
    /// # Safety
    /// `platform` is a valid platform whose devices report a
    /// `cl_khr_command_buffer` version that `abi` was selected for.
    pub(crate) unsafe fn resolve(
        platform: cl_platform_id,
        abi: CommandBufferAbi,
        mutable: bool,
    ) -> Result<CommandBufferApi, String> {
        // SAFETY: the platform is valid (contract); its lookup returns the
        // entry points of the version `abi` was selected for.
        unsafe { CommandBufferApi::resolve_with(&|name| lookup(platform, name), abi, mutable) }
    }

    /// [`resolve`](Self::resolve) with any lookup; `mutable`: also
    /// `clUpdateMutableCommandsKHR` (an error where it is missing).
    ///
    /// # Safety
    /// `lookup` returns entry points declared as in the version `abi` was
    /// selected for, and, with `mutable`, `clUpdateMutableCommandsKHR` as
    /// declared from mutable dispatch 0.9.2 on.
    unsafe fn resolve_with(
        lookup: Lookup<'_>,
        abi: CommandBufferAbi,
        mutable: bool,
    ) -> Result<CommandBufferApi, String> {
        // SAFETY: for all `resolve` calls below, each type is the declaration of
        // that entry point in the selected version (contract).
        unsafe {
            let recording = match abi.shape {
                RecordShape::Legacy => Recording::Legacy(legacy::Table::resolve(lookup, abi.svm_commands)?),
                RecordShape::Properties => Recording::Properties(props::Table::resolve(lookup, abi.svm_commands)?),
            };
            Ok(CommandBufferApi {
                create: resolve(lookup, c"clCreateCommandBufferKHR")?,
                finalize: resolve(lookup, c"clFinalizeCommandBufferKHR")?,
                release: resolve(lookup, c"clReleaseCommandBufferKHR")?,
                enqueue: resolve(lookup, c"clEnqueueCommandBufferKHR")?,
                nd_range: resolve(lookup, c"clCommandNDRangeKernelKHR")?,
                recording,
                update_mutable: if mutable { Some(resolve(lookup, c"clUpdateMutableCommandsKHR")?) } else { None },
            })
        }
    }

    /// Whether kernel commands can be recorded mutable and updated in place.
    #[cfg(test)]
    fn has_mutable_dispatch(&self) -> bool {
        self.update_mutable.is_some()
    }

    /// `clUpdateMutableCommandsKHR` with one configuration per update, in
    /// one call: all of them take effect, or none.
    ///
    /// # Safety
    /// `buffer` is a finalized command-buffer created with
    /// `CL_COMMAND_BUFFER_MUTABLE_KHR`, not in use by any submission; each
    /// update's handle was returned by recording into it with the fields it
    /// changes made updatable; every argument is valid for its kernel.
    pub(crate) unsafe fn update_mutable(
        &self,
        buffer: cl_command_buffer_khr,
        updates: &[&DispatchUpdate],
    ) -> Result<(), cl_int> {
        const INVALID_OPERATION: cl_int = -59;
        let Some(update) = self.update_mutable else { return Err(INVALID_OPERATION) };
        if updates.is_empty() {
            return Ok(());
        }
        let list = |v: &[MutableArg]| if v.is_empty() { ptr::null() } else { v.as_ptr() };
        let sizes = |v: &Option<[usize; 3]>| v.as_ref().map_or(ptr::null(), |a| a.as_ptr());
        let configs: Vec<MutableDispatchConfig> = updates
            .iter()
            .map(|u| MutableDispatchConfig {
                command: u.command,
                num_args: u.args.len() as cl_uint,
                num_svm_args: u.svm_args.len() as cl_uint,
                num_exec_infos: 0,
                // 0 keeps the recorded dimension; sizes are given in it.
                work_dim: if u.global_offset.is_some() || u.global_size.is_some() || u.local_size.is_some() {
                    u.work_dim
                } else {
                    0
                },
                arg_list: list(&u.args),
                arg_svm_list: list(&u.svm_args),
                exec_info_list: ptr::null(),
                global_work_offset: sizes(&u.global_offset),
                global_work_size: sizes(&u.global_size),
                local_work_size: sizes(&u.local_size),
            })
            .collect();
        let types = vec![CL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG_KHR; configs.len()];
        let pointers: Vec<*const c_void> = configs.iter().map(|c| (c as *const MutableDispatchConfig).cast()).collect();
        // SAFETY: per the contract; the configurations, their lists and the
        // arrays they point into outlive the call.
        let status = unsafe { update(buffer, configs.len() as cl_uint, types.as_ptr(), pointers.as_ptr()) };
        if status == 0 { Ok(()) } else { Err(status) }
    }

    /// Whether the SVM copy command can be recorded.
    pub(crate) fn has_svm_memcpy(&self) -> bool {
        with_table!(&self.recording, |t| t.svm_memcpy.is_some())
    }

    /// Whether the SVM fill command can be recorded.
    pub(crate) fn has_svm_fill(&self) -> bool {
        with_table!(&self.recording, |t| t.svm_fill.is_some())
    }

    /// `clCreateCommandBufferKHR` on one queue.
    ///
    /// # Safety
    /// `queue` is a valid queue of the device this table was resolved for.
    pub(crate) unsafe fn create(
        &self,
        queue: cl_command_queue,
        flags: cl_bitfield,
    ) -> Result<cl_command_buffer_khr, cl_int> {
        let properties: [cl_properties; 3] = [CL_COMMAND_BUFFER_FLAGS_KHR, flags, 0];
        let properties = if flags == 0 { ptr::null() } else { properties.as_ptr() };
        let mut status = 0;
        // SAFETY: one valid queue, a zero-terminated property list (or NULL)
        // that outlives the call, and a valid status location.
        let buffer = unsafe { (self.create)(1, &queue, properties, &mut status) };
        if status == 0 && !buffer.is_null() { Ok(buffer) } else { Err(if status == 0 { -1138 } else { status }) }
    }

    /// `clFinalizeCommandBufferKHR`.
    ///
    /// # Safety
    /// `buffer` is a valid command-buffer in the recording state.
    pub(crate) unsafe fn finalize(&self, buffer: cl_command_buffer_khr) -> Result<(), cl_int> {
        // SAFETY: `buffer` is a valid command-buffer in the recording state (this function's
        // `# Safety`), what `clFinalizeCommandBufferKHR` requires.
        let status = unsafe { (self.finalize)(buffer) };
        if status == 0 { Ok(()) } else { Err(status) }
    }

    /// `clReleaseCommandBufferKHR`.
    ///
    /// # Safety
    /// `buffer` is a valid command-buffer whose reference the caller owns.
    pub(crate) unsafe fn release(&self, buffer: cl_command_buffer_khr) -> Result<(), cl_int> {
        // SAFETY: `buffer` is a valid command-buffer whose reference the caller owns and gives up here
        // (this function's `# Safety`), what `clReleaseCommandBufferKHR` requires.
        let status = unsafe { (self.release)(buffer) };
        if status == 0 { Ok(()) } else { Err(status) }
    }

    /// `clEnqueueCommandBufferKHR` on the queue it was recorded for.
    ///
    /// # Safety
    /// `buffer` is finalized; `wait` holds valid events of its context.
    pub(crate) unsafe fn enqueue(&self, buffer: cl_command_buffer_khr, wait: &[cl_event]) -> Result<cl_event, cl_int> {
        let mut event = ptr::null_mut();
        let list = if wait.is_empty() { ptr::null() } else { wait.as_ptr() };
        // SAFETY: no queue list (the recording queue is used), a valid wait
        // list of the given length and a valid event location.
        let status = unsafe { (self.enqueue)(0, ptr::null_mut(), buffer, wait.len() as cl_uint, list, &mut event) };
        if status == 0 { Ok(event) } else { Err(status) }
    }

    /// `clEnqueueCommandBufferKHR` on `queue` in place of the queue it was
    /// recorded for (0.9.8 and later: any queue of its device and context
    /// whose properties the device's command-buffer queue-property queries
    /// allow).
    ///
    /// # Safety
    /// `buffer` is finalized; `queue` is such a queue; `wait` holds valid
    /// events of its context.
    pub(crate) unsafe fn enqueue_on(
        &self,
        buffer: cl_command_buffer_khr,
        queue: cl_command_queue,
        wait: &[cl_event],
    ) -> Result<cl_event, cl_int> {
        let mut event = ptr::null_mut();
        let mut queue = queue;
        let list = if wait.is_empty() { ptr::null() } else { wait.as_ptr() };
        // SAFETY: one queue (contract), a valid wait list of the given length
        // and a valid event location.
        let status = unsafe { (self.enqueue)(1, &mut queue, buffer, wait.len() as cl_uint, list, &mut event) };
        if status == 0 { Ok(event) } else { Err(status) }
    }

    /// `clCommandCopyBufferKHR`.
    ///
    /// # Safety
    /// `buffer` is recording; the memory objects are valid and the ranges in
    /// bounds; `deps` are sync points it returned.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn copy_buffer(
        &self,
        buffer: cl_command_buffer_khr,
        src: cl_mem,
        dst: cl_mem,
        src_offset: usize,
        dst_offset: usize,
        size: usize,
        deps: &[cl_sync_point_khr],
    ) -> Result<cl_sync_point_khr, cl_int> {
        // SAFETY: `buffer` is recording, the memory objects valid and the ranges in bounds, `deps` its
        // own sync points (this function's `# Safety`): what `clCommandCopyBufferKHR` (`copy`)
        // requires.
        unsafe { with_table!(&self.recording, |t| t.copy(buffer, src, dst, src_offset, dst_offset, size, deps)) }
    }

    /// `clCommandCopyBufferRectKHR`; origins and region in bytes, rows, slices;
    /// pitches as `[row, slice]`.
    ///
    /// # Safety
    /// As for [`copy_buffer`](Self::copy_buffer).
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn copy_buffer_rect(
        &self,
        buffer: cl_command_buffer_khr,
        src: cl_mem,
        dst: cl_mem,
        src_origin: [usize; 3],
        dst_origin: [usize; 3],
        region: [usize; 3],
        src_pitches: [usize; 2],
        dst_pitches: [usize; 2],
        deps: &[cl_sync_point_khr],
    ) -> Result<cl_sync_point_khr, cl_int> {
        let (so, dof, r) = (src_origin.as_ptr(), dst_origin.as_ptr(), region.as_ptr());
        let ([srp, ssp], [drp, dsp]) = (src_pitches, dst_pitches);
        // SAFETY: per the contract; the three arrays outlive the call.
        unsafe { with_table!(&self.recording, |t| t.copy_rect(buffer, src, dst, so, dof, r, srp, ssp, drp, dsp, deps)) }
    }

    /// `clCommandFillBufferKHR`; the pattern is 1 to 128 bytes, a power of two.
    ///
    /// # Safety
    /// As for [`copy_buffer`](Self::copy_buffer).
    pub(crate) unsafe fn fill_buffer(
        &self,
        buffer: cl_command_buffer_khr,
        mem: cl_mem,
        pattern: &[u8],
        offset: usize,
        size: usize,
        deps: &[cl_sync_point_khr],
    ) -> Result<cl_sync_point_khr, cl_int> {
        let (p, len) = (pattern.as_ptr().cast::<c_void>(), pattern.len());
        // SAFETY: per the contract; the pattern is copied by the call.
        unsafe { with_table!(&self.recording, |t| t.fill(buffer, mem, p, len, offset, size, deps)) }
    }

    /// `clCommandSVMMemcpyKHR`, when the version has it (see [`has_svm_memcpy`](Self::has_svm_memcpy)).
    ///
    /// # Safety
    /// As for [`copy_buffer`](Self::copy_buffer); both ranges are SVM of the
    /// buffer's context.
    pub(crate) unsafe fn svm_memcpy(
        &self,
        buffer: cl_command_buffer_khr,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        deps: &[cl_sync_point_khr],
    ) -> Result<cl_sync_point_khr, cl_int> {
        // SAFETY: `buffer` is recording, both ranges SVM of its context and `deps` its own sync points
        // (this function's `# Safety`): what `clCommandSVMMemcpyKHR` (`svm_memcpy`) requires.
        unsafe { with_table!(&self.recording, |t| t.svm_memcpy(buffer, dst, src, size, deps)) }
    }

    /// `clCommandSVMMemFillKHR`, when the version has it (see [`has_svm_fill`](Self::has_svm_fill)).
    ///
    /// # Safety
    /// As for [`svm_memcpy`](Self::svm_memcpy); the pattern is a power of two
    /// up to 128 bytes and `dst` is aligned to it.
    pub(crate) unsafe fn svm_fill(
        &self,
        buffer: cl_command_buffer_khr,
        dst: *mut c_void,
        pattern: &[u8],
        size: usize,
        deps: &[cl_sync_point_khr],
    ) -> Result<cl_sync_point_khr, cl_int> {
        let (p, len) = (pattern.as_ptr().cast::<c_void>(), pattern.len());
        // SAFETY: `buffer` is recording, `dst` SVM of its context aligned to its power-of-two pattern
        // of at most 128 bytes, `deps` its own sync points (this function's `# Safety`): what
        // `clCommandSVMMemFillKHR` (`svm_fill`) requires.
        unsafe { with_table!(&self.recording, |t| t.svm_fill(buffer, dst, p, len, size, deps)) }
    }

    /// `clCommandNDRangeKernelKHR`, with the kernel's arguments as currently
    /// set (the command captures them); with `updatable` fields
    /// (`CL_MUTABLE_DISPATCH_*_KHR` bits, non-zero only in a command-buffer
    /// created mutable) as a mutable dispatch, whose handle is returned
    /// (else NULL).
    ///
    /// # Safety
    /// `buffer` is recording; the kernel's arguments are all set; the sizes
    /// are valid for it; `deps` are sync points the buffer returned;
    /// `updatable` bits are ones the device's
    /// `CL_DEVICE_MUTABLE_DISPATCH_CAPABILITIES_KHR` lists.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn nd_range(
        &self,
        buffer: cl_command_buffer_khr,
        kernel: cl_kernel,
        work_dim: u32,
        offset: &[usize; 3],
        global: &[usize; 3],
        local: &[usize; 3],
        deps: &[cl_sync_point_khr],
        updatable: cl_bitfield,
    ) -> Result<(cl_sync_point_khr, cl_mutable_command_khr), cl_int> {
        let (n, list) = sync_list(deps);
        let mut point = 0;
        let mut handle: cl_mutable_command_khr = ptr::null_mut();
        let properties: [cl_properties; 3] = [CL_MUTABLE_DISPATCH_UPDATABLE_FIELDS_KHR, updatable, 0];
        let (properties, handle_out) =
            if updatable == 0 { (ptr::null(), ptr::null_mut()) } else { (properties.as_ptr(), &raw mut handle) };
        let null: cl_command_queue = ptr::null_mut();
        // SAFETY: per the contract; the size arrays and the property list
        // outlive the call.
        let status = unsafe {
            (self.nd_range)(
                buffer,
                null,
                properties,
                kernel,
                work_dim,
                offset.as_ptr(),
                global.as_ptr(),
                local.as_ptr(),
                n,
                list,
                &mut point,
                handle_out,
            )
        };
        sync_point(status, point).map(|p| (p, handle))
    }
}

type UsmHostAlloc = unsafe extern "system" fn(
    context: cl_context,
    properties: *const cl_properties,
    size: usize,
    alignment: cl_uint,
    errcode_ret: *mut cl_int,
) -> *mut c_void;
type UsmDeviceAlloc = unsafe extern "system" fn(
    context: cl_context,
    device: cl_device_id,
    properties: *const cl_properties,
    size: usize,
    alignment: cl_uint,
    errcode_ret: *mut cl_int,
) -> *mut c_void;
type UsmFree = unsafe extern "system" fn(context: cl_context, ptr: *mut c_void) -> cl_int;
type SetKernelArgMemPointer =
    unsafe extern "system" fn(kernel: cl_kernel, arg_index: cl_uint, arg_value: *const c_void) -> cl_int;
type EnqueueMemcpy = unsafe extern "system" fn(
    queue: cl_command_queue,
    blocking: cl_uint,
    dst_ptr: *mut c_void,
    src_ptr: *const c_void,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int;

/// The `cl_intel_unified_shared_memory` entry points the adapter uses.
pub(crate) struct IntelUsmApi {
    host_alloc: UsmHostAlloc,
    device_alloc: UsmDeviceAlloc,
    shared_alloc: UsmDeviceAlloc,
    free: UsmFree,
    set_arg: SetKernelArgMemPointer,
    memcpy: EnqueueMemcpy,
}

/// The kind of an Intel USM allocation.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum IntelKind {
    Host,
    Device,
    Shared,
}

impl IntelUsmApi {
    /// Resolves the entry points on `platform`.
    ///
    /// # Safety
    /// `platform` is valid and one of its devices reports the extension.
    pub(crate) unsafe fn resolve(platform: cl_platform_id) -> Result<IntelUsmApi, String> {
        let lookup: Lookup<'_> = &|name| {
            // SAFETY: the platform is valid (contract).
            unsafe { lookup(platform, name) }
        };
        // SAFETY: the platform's entry points, each type the extension's declaration.
        unsafe {
            Ok(IntelUsmApi {
                host_alloc: resolve(lookup, c"clHostMemAllocINTEL")?,
                device_alloc: resolve(lookup, c"clDeviceMemAllocINTEL")?,
                shared_alloc: resolve(lookup, c"clSharedMemAllocINTEL")?,
                free: resolve(lookup, c"clMemFreeINTEL")?,
                set_arg: resolve(lookup, c"clSetKernelArgMemPointerINTEL")?,
                memcpy: resolve(lookup, c"clEnqueueMemcpyINTEL")?,
            })
        }
    }

    /// Allocates `size` bytes of `kind` memory.
    ///
    /// # Safety
    /// `context` and `device` are valid and belong together.
    pub(crate) unsafe fn alloc(
        &self,
        context: cl_context,
        device: cl_device_id,
        kind: IntelKind,
        size: usize,
        align: u32,
    ) -> Result<*mut c_void, cl_int> {
        let mut status = 0;
        // SAFETY: valid handles, NULL properties, a valid status location.
        let ptr = unsafe {
            match kind {
                IntelKind::Host => (self.host_alloc)(context, ptr::null(), size, align, &mut status),
                IntelKind::Device => (self.device_alloc)(context, device, ptr::null(), size, align, &mut status),
                IntelKind::Shared => (self.shared_alloc)(context, device, ptr::null(), size, align, &mut status),
            }
        };
        if status == 0 && !ptr.is_null() { Ok(ptr) } else { Err(if status == 0 { -6 } else { status }) }
    }

    /// Frees an allocation at once (`clMemFreeINTEL`). The front end frees
    /// only what no pending command uses, so the blocking form, which waits
    /// for every queue of the context, is not needed; PoCL 5.0's also reads
    /// the context's queue list while another thread may be releasing a
    /// queue, and aborts.
    ///
    /// # Safety
    /// `ptr` was returned by [`alloc`](Self::alloc) on `context`, is freed
    /// once, and no pending command uses it.
    pub(crate) unsafe fn free(&self, context: cl_context, ptr: *mut c_void) -> Result<(), cl_int> {
        // SAFETY: `ptr` came from `alloc` on `context`, is freed once and no pending command uses it
        // (this function's `# Safety`), what `clMemFreeINTEL` requires.
        let status = unsafe { (self.free)(context, ptr) };
        if status == 0 { Ok(()) } else { Err(status) }
    }

    /// Sets a pointer argument.
    ///
    /// # Safety
    /// `kernel` is valid and `index` is a global-pointer argument of it.
    pub(crate) unsafe fn set_arg(&self, kernel: cl_kernel, index: u32, ptr: *const c_void) -> Result<(), cl_int> {
        // SAFETY: `kernel` is valid and `index` a global-pointer argument of it (this function's
        // `# Safety`), what `clSetKernelArgMemPointerINTEL` requires.
        let status = unsafe { (self.set_arg)(kernel, index, ptr) };
        if status == 0 { Ok(()) } else { Err(status) }
    }

    /// A non-blocking copy between any two of USM and host memory.
    ///
    /// # Safety
    /// Both ranges are valid for `size` bytes until the event completes;
    /// `wait` holds valid events.
    pub(crate) unsafe fn memcpy(
        &self,
        queue: cl_command_queue,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        wait: &[cl_event],
    ) -> Result<cl_event, cl_int> {
        let mut event = ptr::null_mut();
        let list = if wait.is_empty() { ptr::null() } else { wait.as_ptr() };
        // SAFETY: both ranges are valid for `size` bytes until the event completes and `wait` holds
        // valid events (this function's `# Safety`), what `clEnqueueMemcpyINTEL` requires.
        let status = unsafe { (self.memcpy)(queue, 0, dst, src, size, wait.len() as cl_uint, list, &mut event) };
        if status == 0 { Ok(event) } else { Err(status) }
    }
}

#[cfg(test)]
mod tests {
    //! The recording entry points are called through fakes declared with each
    //! version's C signature, which log what they received: an argument in
    //! the wrong position shows as a wrong value, not a crash on a driver.

    use std::cell::RefCell;

    use super::*;
    use crate::version::{ExtVersion, select_abi};

    thread_local! {
        static CALLS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    }

    fn log(call: String) -> cl_int {
        CALLS.with(|c| c.borrow_mut().push(call));
        0
    }

    fn take() -> Vec<String> {
        CALLS.with(|c| std::mem::take(&mut *c.borrow_mut()))
    }

    fn set_point(point: *mut cl_sync_point_khr, n: cl_uint) {
        // SAFETY: the wrappers pass a valid location.
        unsafe { *point = 100 + n };
    }

    unsafe extern "system" fn create(
        _: cl_uint,
        _: *const cl_command_queue,
        _: *const cl_properties,
        _: *mut cl_int,
    ) -> cl_command_buffer_khr {
        ptr::null_mut()
    }
    unsafe extern "system" fn op(_: cl_command_buffer_khr) -> cl_int {
        0
    }
    unsafe extern "system" fn enqueue(
        _: cl_uint,
        _: *mut cl_command_queue,
        _: cl_command_buffer_khr,
        _: cl_uint,
        _: *const cl_event,
        _: *mut cl_event,
    ) -> cl_int {
        0
    }
    #[allow(clippy::too_many_arguments)]
    unsafe extern "system" fn nd_range(
        _: cl_command_buffer_khr,
        q: cl_command_queue,
        props: *const cl_properties,
        _: cl_kernel,
        dim: cl_uint,
        _: *const usize,
        global: *const usize,
        _: *const usize,
        n: cl_uint,
        _: *const cl_sync_point_khr,
        point: *mut cl_sync_point_khr,
        _: *mut cl_mutable_command_khr,
    ) -> cl_int {
        set_point(point, n);
        // SAFETY: the wrapper passes three sizes.
        let g = unsafe { *global };
        log(format!("ndrange q={} props={} dim={dim} global0={g} deps={n}", q.is_null(), props.is_null()))
    }
    #[allow(clippy::too_many_arguments)]
    unsafe extern "system" fn legacy_copy(
        _: cl_command_buffer_khr,
        q: cl_command_queue,
        src: cl_mem,
        dst: cl_mem,
        so: usize,
        dof: usize,
        size: usize,
        n: cl_uint,
        _: *const cl_sync_point_khr,
        point: *mut cl_sync_point_khr,
        _: *mut cl_mutable_command_khr,
    ) -> cl_int {
        set_point(point, n);
        log(format!("copy q={} src={} dst={} {so} {dof} {size} deps={n}", q.is_null(), src as usize, dst as usize))
    }
    #[allow(clippy::too_many_arguments)]
    unsafe extern "system" fn props_copy(
        _: cl_command_buffer_khr,
        q: cl_command_queue,
        props: *const cl_properties,
        src: cl_mem,
        dst: cl_mem,
        so: usize,
        dof: usize,
        size: usize,
        n: cl_uint,
        _: *const cl_sync_point_khr,
        point: *mut cl_sync_point_khr,
        _: *mut cl_mutable_command_khr,
    ) -> cl_int {
        set_point(point, n);
        let (q, p) = (q.is_null(), props.is_null());
        log(format!("copy q={q} props={p} src={} dst={} {so} {dof} {size} deps={n}", src as usize, dst as usize))
    }
    #[allow(clippy::too_many_arguments)]
    unsafe extern "system" fn legacy_copy_rect(
        _: cl_command_buffer_khr,
        _: cl_command_queue,
        _: cl_mem,
        _: cl_mem,
        _: *const usize,
        _: *const usize,
        region: *const usize,
        srp: usize,
        ssp: usize,
        drp: usize,
        dsp: usize,
        n: cl_uint,
        _: *const cl_sync_point_khr,
        point: *mut cl_sync_point_khr,
        _: *mut cl_mutable_command_khr,
    ) -> cl_int {
        set_point(point, n);
        // SAFETY: the wrapper passes three extents.
        let w = unsafe { *region };
        log(format!("rect w={w} pitches={srp},{ssp},{drp},{dsp} deps={n}"))
    }
    #[allow(clippy::too_many_arguments)]
    unsafe extern "system" fn props_copy_rect(
        _: cl_command_buffer_khr,
        _: cl_command_queue,
        props: *const cl_properties,
        _: cl_mem,
        _: cl_mem,
        _: *const usize,
        _: *const usize,
        region: *const usize,
        srp: usize,
        ssp: usize,
        drp: usize,
        dsp: usize,
        n: cl_uint,
        _: *const cl_sync_point_khr,
        point: *mut cl_sync_point_khr,
        _: *mut cl_mutable_command_khr,
    ) -> cl_int {
        set_point(point, n);
        // SAFETY: the wrapper passes three extents.
        let w = unsafe { *region };
        log(format!("rect props={} w={w} pitches={srp},{ssp},{drp},{dsp} deps={n}", props.is_null()))
    }
    #[allow(clippy::too_many_arguments)]
    unsafe extern "system" fn legacy_fill(
        _: cl_command_buffer_khr,
        _: cl_command_queue,
        mem: cl_mem,
        _: *const c_void,
        len: usize,
        off: usize,
        size: usize,
        n: cl_uint,
        _: *const cl_sync_point_khr,
        point: *mut cl_sync_point_khr,
        _: *mut cl_mutable_command_khr,
    ) -> cl_int {
        set_point(point, n);
        log(format!("fill mem={} len={len} off={off} size={size} deps={n}", mem as usize))
    }
    #[allow(clippy::too_many_arguments)]
    unsafe extern "system" fn props_fill(
        _: cl_command_buffer_khr,
        _: cl_command_queue,
        props: *const cl_properties,
        mem: cl_mem,
        _: *const c_void,
        len: usize,
        off: usize,
        size: usize,
        n: cl_uint,
        _: *const cl_sync_point_khr,
        point: *mut cl_sync_point_khr,
        _: *mut cl_mutable_command_khr,
    ) -> cl_int {
        set_point(point, n);
        log(format!("fill props={} mem={} len={len} off={off} size={size} deps={n}", props.is_null(), mem as usize))
    }
    #[allow(clippy::too_many_arguments)]
    unsafe extern "system" fn legacy_svm_memcpy(
        _: cl_command_buffer_khr,
        _: cl_command_queue,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        n: cl_uint,
        _: *const cl_sync_point_khr,
        point: *mut cl_sync_point_khr,
        _: *mut cl_mutable_command_khr,
    ) -> cl_int {
        set_point(point, n);
        log(format!("svm_memcpy dst={} src={} size={size} deps={n}", dst as usize, src as usize))
    }
    #[allow(clippy::too_many_arguments)]
    unsafe extern "system" fn props_svm_memcpy(
        _: cl_command_buffer_khr,
        _: cl_command_queue,
        props: *const cl_properties,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        n: cl_uint,
        _: *const cl_sync_point_khr,
        point: *mut cl_sync_point_khr,
        _: *mut cl_mutable_command_khr,
    ) -> cl_int {
        set_point(point, n);
        log(format!(
            "svm_memcpy props={} dst={} src={} size={size} deps={n}",
            props.is_null(),
            dst as usize,
            src as usize
        ))
    }
    #[allow(clippy::too_many_arguments)]
    unsafe extern "system" fn legacy_svm_fill(
        _: cl_command_buffer_khr,
        _: cl_command_queue,
        dst: *mut c_void,
        _: *const c_void,
        len: usize,
        size: usize,
        n: cl_uint,
        _: *const cl_sync_point_khr,
        point: *mut cl_sync_point_khr,
        _: *mut cl_mutable_command_khr,
    ) -> cl_int {
        set_point(point, n);
        log(format!("svm_fill dst={} len={len} size={size} deps={n}", dst as usize))
    }
    #[allow(clippy::too_many_arguments)]
    unsafe extern "system" fn props_svm_fill(
        _: cl_command_buffer_khr,
        _: cl_command_queue,
        props: *const cl_properties,
        dst: *mut c_void,
        _: *const c_void,
        len: usize,
        size: usize,
        n: cl_uint,
        _: *const cl_sync_point_khr,
        point: *mut cl_sync_point_khr,
        _: *mut cl_mutable_command_khr,
    ) -> cl_int {
        set_point(point, n);
        log(format!("svm_fill props={} dst={} len={len} size={size} deps={n}", props.is_null(), dst as usize))
    }

    /// A driver of one shape: its entry points by name.
    fn driver(properties_shape: bool, with_svm: bool) -> impl Fn(&CStr) -> Option<*mut c_void> {
        move |name: &CStr| {
            let f: *mut c_void = match (name.to_str().ok()?, properties_shape) {
                ("clCreateCommandBufferKHR", _) => create as *mut c_void,
                ("clFinalizeCommandBufferKHR" | "clReleaseCommandBufferKHR", _) => op as *mut c_void,
                ("clEnqueueCommandBufferKHR", _) => enqueue as *mut c_void,
                ("clCommandNDRangeKernelKHR", _) => nd_range as *mut c_void,
                ("clCommandCopyBufferKHR", false) => legacy_copy as *mut c_void,
                ("clCommandCopyBufferKHR", true) => props_copy as *mut c_void,
                ("clCommandCopyBufferRectKHR", false) => legacy_copy_rect as *mut c_void,
                ("clCommandCopyBufferRectKHR", true) => props_copy_rect as *mut c_void,
                ("clCommandFillBufferKHR", false) => legacy_fill as *mut c_void,
                ("clCommandFillBufferKHR", true) => props_fill as *mut c_void,
                ("clCommandSVMMemcpyKHR", false) if with_svm => legacy_svm_memcpy as *mut c_void,
                ("clCommandSVMMemcpyKHR", true) if with_svm => props_svm_memcpy as *mut c_void,
                ("clCommandSVMMemFillKHR", false) if with_svm => legacy_svm_fill as *mut c_void,
                ("clCommandSVMMemFillKHR", true) if with_svm => props_svm_fill as *mut c_void,
                _ => return None,
            };
            Some(f)
        }
    }

    fn api(version: ExtVersion, properties_shape: bool, with_svm: bool) -> CommandBufferApi {
        let abi = select_abi(version).expect("a known version");
        let lookup = driver(properties_shape, with_svm);
        // SAFETY: the fakes are declared as the version's entry points.
        unsafe { CommandBufferApi::resolve_with(&lookup, abi, false) }.expect("every entry point resolves")
    }

    /// Records one of each command through `api` and returns what the fakes saw.
    fn record_all(api: &CommandBufferApi) -> Vec<String> {
        let (cb, a, b) = (0x10 as cl_command_buffer_khr, 0x20 as cl_mem, 0x30 as cl_mem);
        let deps = [101, 102];
        // SAFETY: the fakes only read the arguments described in their logs.
        unsafe {
            assert_eq!(api.copy_buffer(cb, a, b, 1, 2, 3, &deps), Ok(102));
            assert_eq!(api.copy_buffer_rect(cb, a, b, [0; 3], [0; 3], [7, 1, 1], [8, 64], [16, 128], &[]), Ok(100));
            assert_eq!(api.fill_buffer(cb, a, &[1, 2, 3, 4], 4, 64, &deps[..1]), Ok(101));
            let (point, handle) =
                api.nd_range(cb, ptr::null_mut(), 1, &[0; 3], &[32, 1, 1], &[8, 1, 1], &deps, 0).unwrap();
            assert_eq!(point, 102);
            assert!(handle.is_null(), "no mutable handle unless asked for");
            if api.has_svm_memcpy() {
                assert_eq!(api.svm_memcpy(cb, 0x40 as *mut c_void, 0x50 as *const c_void, 12, &[]), Ok(100));
            }
            if api.has_svm_fill() {
                assert_eq!(api.svm_fill(cb, 0x40 as *mut c_void, &[9; 8], 64, &deps), Ok(102));
            }
        }
        take()
    }

    /// PoCL 3.1: 0.9.0, no properties on copies and fills, no SVM commands
    /// even where the driver would resolve them.
    #[test]
    fn abi_0_9_0() {
        let api = api(ExtVersion::new(0, 9, 0), false, true);
        assert!(!api.has_svm_memcpy() && !api.has_svm_fill());
        assert_eq!(
            record_all(&api),
            [
                "copy q=true src=32 dst=48 1 2 3 deps=2",
                "rect w=7 pitches=8,64,16,128 deps=0",
                "fill mem=32 len=4 off=4 size=64 deps=1",
                "ndrange q=true props=true dim=1 global0=32 deps=2",
            ]
        );
    }

    /// PoCL 5.0: 0.9.4, the old shape plus the SVM commands.
    #[test]
    fn abi_0_9_4() {
        let api = api(ExtVersion::new(0, 9, 4), false, true);
        assert!(api.has_svm_memcpy() && api.has_svm_fill());
        assert_eq!(
            record_all(&api),
            [
                "copy q=true src=32 dst=48 1 2 3 deps=2",
                "rect w=7 pitches=8,64,16,128 deps=0",
                "fill mem=32 len=4 off=4 size=64 deps=1",
                "ndrange q=true props=true dim=1 global0=32 deps=2",
                "svm_memcpy dst=64 src=80 size=12 deps=0",
                "svm_fill dst=64 len=8 size=64 deps=2",
            ]
        );
        // A 0.9.4 driver without the SVM entry points still records the rest.
        let api = self::api(ExtVersion::new(0, 9, 4), false, false);
        assert!(!api.has_svm_memcpy() && !api.has_svm_fill());
    }

    /// What `record_all` records through the 0.9.5+ shape (1.0 included).
    const PROPERTIES_SHAPE: [&str; 6] = [
        "copy q=true props=true src=32 dst=48 1 2 3 deps=2",
        "rect props=true w=7 pitches=8,64,16,128 deps=0",
        "fill props=true mem=32 len=4 off=4 size=64 deps=1",
        "ndrange q=true props=true dim=1 global0=32 deps=2",
        "svm_memcpy props=true dst=64 src=80 size=12 deps=0",
        "svm_fill props=true dst=64 len=8 size=64 deps=2",
    ];

    /// 0.9.5 and later: a properties argument after the queue everywhere.
    #[test]
    fn abi_0_9_5_and_later() {
        for patch in [5, 6, 8] {
            let api = api(ExtVersion::new(0, 9, patch), true, true);
            assert_eq!(record_all(&api), PROPERTIES_SHAPE, "0.9.{patch}");
        }
    }

    #[test]
    fn a_missing_entry_point_is_a_reason() {
        let abi = select_abi(ExtVersion::new(0, 9, 0)).expect("known");
        let none = |_: &CStr| None;
        // SAFETY: the lookup finds nothing.
        let err = unsafe { CommandBufferApi::resolve_with(&none, abi, false) }.err().expect("no entry points");
        assert!(err.contains("clCommandCopyBufferKHR"), "{err}");
        // Mutable dispatch asked for but missing is a reason too.
        let lookup = driver(false, false);
        // SAFETY: the fakes are declared as 0.9.0's entry points.
        let err = unsafe { CommandBufferApi::resolve_with(&lookup, abi, true) }.err().expect("no update entry point");
        assert!(err.contains("clUpdateMutableCommandsKHR"), "{err}");
    }

    /// The ratified 1.0.0 (Intel's OpenCL CPU runtime 2026.2): the 0.9.5+
    /// shape, SVM commands included.
    #[test]
    fn abi_1_0() {
        let api = api(ExtVersion::new(1, 0, 0), true, true);
        assert!(api.has_svm_memcpy() && api.has_svm_fill() && !api.has_mutable_dispatch());
        assert_eq!(record_all(&api), PROPERTIES_SHAPE);
    }

    #[allow(clippy::too_many_arguments)]
    unsafe extern "system" fn mutable_nd_range(
        _: cl_command_buffer_khr,
        _: cl_command_queue,
        props: *const cl_properties,
        _: cl_kernel,
        _: cl_uint,
        _: *const usize,
        _: *const usize,
        _: *const usize,
        n: cl_uint,
        _: *const cl_sync_point_khr,
        point: *mut cl_sync_point_khr,
        handle: *mut cl_mutable_command_khr,
    ) -> cl_int {
        set_point(point, n);
        // SAFETY: a zero-terminated property list when not NULL.
        let props = if props.is_null() { Vec::new() } else { unsafe { std::slice::from_raw_parts(props, 3) }.to_vec() };
        if !handle.is_null() {
            // SAFETY: a valid location when not NULL.
            unsafe { *handle = 0x77 as cl_mutable_command_khr };
        }
        log(format!("ndrange props={props:x?} handle={}", !handle.is_null()))
    }

    unsafe extern "system" fn update_mutable(
        cb: cl_command_buffer_khr,
        n: cl_uint,
        types: *const cl_uint,
        configs: *const *const c_void,
    ) -> cl_int {
        // SAFETY: `n` types and configurations, each a 0.9.2+ dispatch config.
        let (types, configs) =
            unsafe { (std::slice::from_raw_parts(types, n as usize), std::slice::from_raw_parts(configs, n as usize)) };
        let mut out = format!("update cb={} n={n} types={types:?}", cb as usize);
        for c in configs {
            // SAFETY: as above.
            let c = unsafe { &*c.cast::<MutableDispatchConfig>() };
            let list = |p: *const MutableArg, n: cl_uint| {
                // SAFETY: NULL or a list of `n` entries.
                if p.is_null() { &[][..] } else { unsafe { std::slice::from_raw_parts(p, n as usize) } }
            };
            let (args, svm) = (list(c.arg_list, c.num_args), list(c.arg_svm_list, c.num_svm_args));
            let arg = |a: &MutableArg| format!("{}:{}:{}", a.arg_index, a.arg_size, a.arg_value as usize);
            let size = |p: *const usize| {
                if p.is_null() {
                    return "-".to_string();
                }
                // SAFETY: not NULL: `work_dim` entries.
                let sizes = unsafe { std::slice::from_raw_parts(p, c.work_dim as usize) };
                format!("{sizes:?}")
            };
            out += &format!(
                " [cmd={} dim={} args={:?} svm={:?} exec={} offset={} global={} local={}]",
                c.command as usize,
                c.work_dim,
                args.iter().map(arg).collect::<Vec<_>>(),
                svm.iter().map(arg).collect::<Vec<_>>(),
                c.num_exec_infos,
                size(c.global_work_offset),
                size(c.global_work_size),
                size(c.local_work_size),
            );
        }
        log(out)
    }

    /// Mutable dispatch of 0.9.2 and later on 1.0: the updatable fields as
    /// the command's properties, the handle returned, and every update in
    /// one `clUpdateMutableCommandsKHR` with array configurations.
    #[test]
    fn mutable_dispatch_calls() {
        let abi = select_abi(ExtVersion::new(1, 0, 0)).expect("known");
        let base = driver(true, true);
        let lookup = move |name: &CStr| match name.to_str().ok()? {
            "clCommandNDRangeKernelKHR" => Some(mutable_nd_range as *mut c_void),
            "clUpdateMutableCommandsKHR" => Some(update_mutable as *mut c_void),
            _ => base(name),
        };
        // SAFETY: the fakes are declared as 1.0's entry points and mutable dispatch 0.9.2's.
        let api = unsafe { CommandBufferApi::resolve_with(&lookup, abi, true) }.expect("resolves");
        assert!(api.has_mutable_dispatch());
        let cb = 0x10 as cl_command_buffer_khr;
        let fields = CL_MUTABLE_DISPATCH_ARGUMENTS_KHR | CL_MUTABLE_DISPATCH_GLOBAL_SIZE_KHR;
        // SAFETY: the fakes read what they log.
        unsafe {
            let (point, handle) =
                api.nd_range(cb, ptr::null_mut(), 1, &[0; 3], &[8, 1, 1], &[1; 3], &[101], fields).unwrap();
            assert_eq!((point, handle as usize), (101, 0x77));
            let (_, none) = api.nd_range(cb, ptr::null_mut(), 1, &[0; 3], &[8, 1, 1], &[1; 3], &[], 0).unwrap();
            assert!(none.is_null());
            let value = 5u32;
            let updates = [
                DispatchUpdate {
                    command: handle,
                    args: vec![MutableArg { arg_index: 1, arg_size: 4, arg_value: (&raw const value).cast() }],
                    svm_args: vec![MutableArg { arg_index: 0, arg_size: 0, arg_value: 0x1000 as *const c_void }],
                    work_dim: 2,
                    global_size: Some([16, 4, 1]),
                    ..DispatchUpdate::default()
                },
                DispatchUpdate { command: 0x78 as cl_mutable_command_khr, work_dim: 1, ..DispatchUpdate::default() },
            ];
            api.update_mutable(cb, &[&updates[0], &updates[1]]).unwrap();
            api.update_mutable(cb, &[]).unwrap();
        }
        let log = take();
        assert_eq!(log[0], format!("ndrange props=[12b1, {fields:x}, 0] handle=true"));
        assert_eq!(log[1], "ndrange props=[] handle=false");
        assert_eq!(log.len(), 3, "an empty update calls nothing: {log:?}");
        assert!(log[2].starts_with("update cb=16 n=2 types=[0, 0] [cmd=119 dim=2 args=[\"1:4:"), "{}", log[2]);
        assert!(log[2].contains("svm=[\"0:0:4096\"] exec=0 offset=- global=[16, 4] local=-]"), "{}", log[2]);
        assert!(log[2].ends_with("[cmd=120 dim=0 args=[] svm=[] exec=0 offset=- global=- local=-]"), "{}", log[2]);
    }
}
