//! The dispatch table: every one of UR 0.12's 241 entry points, each slot
//! the generated check of its `ur_api.h` conditions (`checks.rs`) in front
//! of this crate's implementation or [`unsupported`], which returns
//! `UR_RESULT_ERROR_UNSUPPORTED_FEATURE` (every slot is listed in
//! `docs/abi-entry-points.md`, which a test generates from this file). The
//! struct literals name every field, so a header that adds an entry point
//! fails to compile here until it is placed.

use std::sync::OnceLock;

use crate::handle::DISPATCH_TABLE;
use crate::sys::*;
use crate::{
    adapter, adopt, command_buffer, context, device, device_info, enqueue, event, kernel, mem, native, platform,
    program, queue, timestamp, usm, usm_2d, usm_p2p,
};

/// The complete dispatch table every handle points to: each slot the
/// generated checking wrapper of its entry point (`checks.rs`), which tests
/// the header's mechanical `@returns` conditions and then calls the slot of
/// [`implementations`].
pub fn dispatch_table() -> &'static ur_dditable_t {
    DISPATCH_TABLE.get_or_fill(crate::checks::table)
}

/// The entry points behind the checks: this crate's implementation or
/// [`unsupported`] in every slot.
pub(crate) fn implementations() -> &'static ur_dditable_t {
    static TABLE: OnceLock<ur_dditable_t> = OnceLock::new();
    TABLE.get_or_init(build)
}

/// Copies one table of [`dispatch_table`] for a `urGet*ProcAddrTable` getter.
///
/// # Safety
/// `out` is null or points to a writable table of type `T`.
pub unsafe fn copy_table<T>(
    version: ur_api_version_t,
    out: *mut T,
    pick: impl FnOnce(&ur_dditable_t) -> T,
) -> ur_result_t {
    // The table layouts are those of UR 0.12 exactly: an older or newer
    // loader would read them wrongly.
    if version != ur_api_version_t::UR_API_VERSION_CURRENT {
        return ur_result_t::UR_RESULT_ERROR_UNSUPPORTED_VERSION;
    }
    if out.is_null() {
        return ur_result_t::UR_RESULT_ERROR_INVALID_NULL_POINTER;
    }
    // SAFETY: non-null and writable per the contract.
    unsafe { out.write(pick(dispatch_table())) };
    ur_result_t::UR_RESULT_SUCCESS
}

/// An entry point of any signature that answers `UR_RESULT_ERROR_UNSUPPORTED_FEATURE`.
pub trait Unsupported: Sized {
    /// The stub.
    const STUB: Self;
}

macro_rules! unsupported_stubs {
    ($($arg:ident)*) => {
        impl<$($arg),*> Unsupported for unsafe extern "C" fn($($arg),*) -> ur_result_t {
            const STUB: Self = {
                #[allow(non_snake_case)]
                unsafe extern "C" fn stub<$($arg),*>($(_: $arg),*) -> ur_result_t {
                    crate::entry::unsupported()
                }
                stub::<$($arg),*>
            };
        }
    };
}

unsupported_stubs!(A);
unsupported_stubs!(A B);
unsupported_stubs!(A B C);
unsupported_stubs!(A B C D);
unsupported_stubs!(A B C D E);
unsupported_stubs!(A B C D E F);
unsupported_stubs!(A B C D E F G);
unsupported_stubs!(A B C D E F G H);
unsupported_stubs!(A B C D E F G H I);
unsupported_stubs!(A B C D E F G H I J);
unsupported_stubs!(A B C D E F G H I J K);
unsupported_stubs!(A B C D E F G H I J K L);
unsupported_stubs!(A B C D E F G H I J K L M);
unsupported_stubs!(A B C D E F G H I J K L M N);
unsupported_stubs!(A B C D E F G H I J K L M N O);
unsupported_stubs!(A B C D E F G H I J K L M N O P);
unsupported_stubs!(A B C D E F G H I J K L M N O P Q);
unsupported_stubs!(A B C D E F G H I J K L M N O P Q R);

/// The slot of an entry point cmdbuf does not implement.
fn unsupported<F: Unsupported>() -> Option<F> {
    Some(F::STUB)
}

/// The table of implementations, one UR table (one `urGet*ProcAddrTable`)
/// per function below, in the order of `ur_dditable_t`.
fn build() -> ur_dditable_t {
    ur_dditable_t {
        Adapter: adapter_slots(),
        Platform: platform_slots(),
        Context: context_slots(),
        Event: event_slots(),
        EventExp: event_exp_slots(),
        Program: program_slots(),
        ProgramExp: program_exp_slots(),
        Kernel: kernel_slots(),
        Queue: queue_slots(),
        QueueExp: queue_exp_slots(),
        Sampler: sampler_slots(),
        Mem: mem_slots(),
        PhysicalMem: physical_mem_slots(),
        Enqueue: enqueue_slots(),
        EnqueueExp: enqueue_exp_slots(),
        USM: usm_slots(),
        USMExp: usm_exp_slots(),
        BindlessImagesExp: bindless_images_exp_slots(),
        CommandBufferExp: command_buffer_exp_slots(),
        GraphExp: graph_exp_slots(),
        IPCExp: ipc_exp_slots(),
        MemoryExportExp: memory_export_exp_slots(),
        UsmP2PExp: usm_p2p_exp_slots(),
        VirtualMem: virtual_mem_slots(),
        Device: device_slots(),
        DeviceExp: device_exp_slots(),
    }
}

/// The `Adapter` table.
fn adapter_slots() -> ur_adapter_dditable_t {
    ur_adapter_dditable_t {
        pfnGet: Some(adapter::urAdapterGet),
        pfnRelease: Some(adapter::urAdapterRelease),
        pfnRetain: Some(adapter::urAdapterRetain),
        pfnGetLastError: Some(adapter::urAdapterGetLastError),
        pfnGetInfo: Some(adapter::urAdapterGetInfo),
        pfnSetLoggerCallback: Some(adapter::urAdapterSetLoggerCallback),
        pfnSetLoggerCallbackLevel: Some(adapter::urAdapterSetLoggerCallbackLevel),
    }
}

/// The `Platform` table.
fn platform_slots() -> ur_platform_dditable_t {
    ur_platform_dditable_t {
        pfnGet: Some(platform::urPlatformGet),
        pfnGetInfo: Some(platform::urPlatformGetInfo),
        pfnGetNativeHandle: Some(native::urPlatformGetNativeHandle),
        pfnCreateWithNativeHandle: Some(adopt::urPlatformCreateWithNativeHandle),
        pfnGetApiVersion: Some(platform::urPlatformGetApiVersion),
        pfnGetBackendOption: Some(platform::urPlatformGetBackendOption),
    }
}

/// The `Context` table.
fn context_slots() -> ur_context_dditable_t {
    ur_context_dditable_t {
        pfnCreate: Some(context::urContextCreate),
        pfnRetain: Some(context::urContextRetain),
        pfnRelease: Some(context::urContextRelease),
        pfnGetInfo: Some(context::urContextGetInfo),
        pfnGetNativeHandle: Some(native::urContextGetNativeHandle),
        pfnCreateWithNativeHandle: Some(adopt::urContextCreateWithNativeHandle),
        pfnSetExtendedDeleter: Some(context::urContextSetExtendedDeleter),
    }
}

/// The `Event` table.
fn event_slots() -> ur_event_dditable_t {
    ur_event_dditable_t {
        pfnGetInfo: Some(event::urEventGetInfo),
        pfnGetProfilingInfo: Some(event::urEventGetProfilingInfo),
        pfnWait: Some(event::urEventWait),
        pfnRetain: Some(event::urEventRetain),
        pfnRelease: Some(event::urEventRelease),
        pfnGetNativeHandle: Some(native::urEventGetNativeHandle),
        pfnCreateWithNativeHandle: Some(adopt::urEventCreateWithNativeHandle),
        pfnSetCallback: Some(event::urEventSetCallback),
    }
}

/// The `EventExp` table.
fn event_exp_slots() -> ur_event_exp_dditable_t {
    ur_event_exp_dditable_t { pfnCreateExp: unsupported() }
}

/// The `Program` table.
fn program_slots() -> ur_program_dditable_t {
    ur_program_dditable_t {
        pfnCreateWithIL: Some(program::urProgramCreateWithIL),
        pfnCreateWithBinary: Some(program::urProgramCreateWithBinary),
        pfnBuild: Some(program::urProgramBuild),
        pfnCompile: Some(program::urProgramCompile),
        pfnLink: Some(program::urProgramLink),
        pfnRetain: Some(program::urProgramRetain),
        pfnRelease: Some(program::urProgramRelease),
        pfnGetFunctionPointer: unsupported(),
        pfnGetGlobalVariablePointer: unsupported(),
        pfnGetInfo: Some(program::urProgramGetInfo),
        pfnGetBuildInfo: Some(program::urProgramGetBuildInfo),
        pfnSetSpecializationConstants: unsupported(),
        pfnGetNativeHandle: Some(native::urProgramGetNativeHandle),
        pfnCreateWithNativeHandle: Some(adopt::urProgramCreateWithNativeHandle),
    }
}

/// The `ProgramExp` table.
fn program_exp_slots() -> ur_program_exp_dditable_t {
    ur_program_exp_dditable_t {
        pfnDynamicLinkExp: unsupported(),
        pfnBuildExp: Some(program::urProgramBuildExp),
        pfnCompileExp: Some(program::urProgramCompileExp),
        pfnLinkExp: Some(program::urProgramLinkExp),
    }
}

/// The `Kernel` table.
fn kernel_slots() -> ur_kernel_dditable_t {
    ur_kernel_dditable_t {
        pfnCreate: Some(kernel::urKernelCreate),
        pfnGetInfo: Some(kernel::urKernelGetInfo),
        pfnGetGroupInfo: Some(kernel::urKernelGetGroupInfo),
        pfnGetSubGroupInfo: Some(kernel::urKernelGetSubGroupInfo),
        pfnRetain: Some(kernel::urKernelRetain),
        pfnRelease: Some(kernel::urKernelRelease),
        pfnGetNativeHandle: Some(native::urKernelGetNativeHandle),
        pfnCreateWithNativeHandle: Some(adopt::urKernelCreateWithNativeHandle),
        pfnGetSuggestedLocalWorkSize: Some(kernel::urKernelGetSuggestedLocalWorkSize),
        pfnGetSuggestedLocalWorkSizeWithArgs: Some(kernel::urKernelGetSuggestedLocalWorkSizeWithArgs),
        pfnSetExecInfo: Some(kernel::urKernelSetExecInfo),
        pfnSetSpecializationConstants: unsupported(),
        pfnSuggestMaxCooperativeGroupCount: unsupported(),
    }
}

/// The `Queue` table.
fn queue_slots() -> ur_queue_dditable_t {
    ur_queue_dditable_t {
        pfnGetInfo: Some(queue::urQueueGetInfo),
        pfnCreate: Some(queue::urQueueCreate),
        pfnRetain: Some(queue::urQueueRetain),
        pfnRelease: Some(queue::urQueueRelease),
        pfnGetNativeHandle: Some(native::urQueueGetNativeHandle),
        pfnCreateWithNativeHandle: Some(adopt::urQueueCreateWithNativeHandle),
        pfnFinish: Some(queue::urQueueFinish),
        pfnFlush: Some(queue::urQueueFlush),
    }
}

/// The `QueueExp` table.
fn queue_exp_slots() -> ur_queue_exp_dditable_t {
    ur_queue_exp_dditable_t {
        pfnBeginGraphCaptureExp: Some(crate::capture::urQueueBeginGraphCaptureExp),
        pfnBeginCaptureIntoGraphExp: Some(crate::capture::urQueueBeginCaptureIntoGraphExp),
        pfnEndGraphCaptureExp: Some(crate::capture::urQueueEndGraphCaptureExp),
        pfnIsGraphCaptureEnabledExp: Some(crate::capture::urQueueIsGraphCaptureEnabledExp),
        pfnGetGraphExp: Some(crate::capture::urQueueGetGraphExp),
    }
}

/// The `Sampler` table.
fn sampler_slots() -> ur_sampler_dditable_t {
    ur_sampler_dditable_t {
        pfnCreate: unsupported(),
        pfnRetain: unsupported(),
        pfnRelease: unsupported(),
        pfnGetInfo: unsupported(),
        pfnGetNativeHandle: unsupported(),
        pfnCreateWithNativeHandle: unsupported(),
    }
}

/// The `Mem` table.
fn mem_slots() -> ur_mem_dditable_t {
    ur_mem_dditable_t {
        pfnImageCreate: unsupported(),
        pfnBufferCreate: Some(mem::urMemBufferCreate),
        pfnRetain: Some(mem::urMemRetain),
        pfnRelease: Some(mem::urMemRelease),
        pfnBufferPartition: Some(mem::urMemBufferPartition),
        pfnGetNativeHandle: Some(native::urMemGetNativeHandle),
        pfnBufferCreateWithNativeHandle: Some(adopt::urMemBufferCreateWithNativeHandle),
        pfnImageCreateWithNativeHandle: unsupported(),
        pfnGetInfo: Some(mem::urMemGetInfo),
        pfnImageGetInfo: unsupported(),
    }
}

/// The `PhysicalMem` table.
fn physical_mem_slots() -> ur_physical_mem_dditable_t {
    ur_physical_mem_dditable_t {
        pfnCreate: unsupported(),
        pfnRetain: unsupported(),
        pfnRelease: unsupported(),
        pfnGetInfo: unsupported(),
    }
}

/// The `Enqueue` table.
fn enqueue_slots() -> ur_enqueue_dditable_t {
    ur_enqueue_dditable_t {
        pfnEventsWait: Some(enqueue::urEnqueueEventsWait),
        pfnEventsWaitWithBarrier: Some(enqueue::urEnqueueEventsWaitWithBarrier),
        pfnMemBufferRead: Some(mem::urEnqueueMemBufferRead),
        pfnMemBufferWrite: Some(mem::urEnqueueMemBufferWrite),
        pfnMemBufferReadRect: Some(mem::urEnqueueMemBufferReadRect),
        pfnMemBufferWriteRect: Some(mem::urEnqueueMemBufferWriteRect),
        pfnMemBufferCopy: Some(mem::urEnqueueMemBufferCopy),
        pfnMemBufferCopyRect: Some(mem::urEnqueueMemBufferCopyRect),
        pfnMemBufferFill: Some(mem::urEnqueueMemBufferFill),
        pfnMemImageRead: unsupported(),
        pfnMemImageWrite: unsupported(),
        pfnMemImageCopy: unsupported(),
        pfnMemBufferMap: Some(mem::urEnqueueMemBufferMap),
        pfnMemUnmap: Some(mem::urEnqueueMemUnmap),
        pfnUSMFill: Some(enqueue::urEnqueueUSMFill),
        pfnUSMMemcpy: Some(enqueue::urEnqueueUSMMemcpy),
        pfnUSMPrefetch: Some(enqueue::urEnqueueUSMPrefetch),
        pfnUSMAdvise: Some(enqueue::urEnqueueUSMAdvise),
        pfnUSMFill2D: Some(usm_2d::urEnqueueUSMFill2D),
        pfnUSMMemcpy2D: Some(usm_2d::urEnqueueUSMMemcpy2D),
        pfnDeviceGlobalVariableWrite: unsupported(),
        pfnDeviceGlobalVariableRead: unsupported(),
        pfnReadHostPipe: unsupported(),
        pfnWriteHostPipe: unsupported(),
        pfnEventsWaitWithBarrierExt: Some(enqueue::urEnqueueEventsWaitWithBarrierExt),
    }
}

/// The `EnqueueExp` table.
fn enqueue_exp_slots() -> ur_enqueue_exp_dditable_t {
    ur_enqueue_exp_dditable_t {
        pfnKernelLaunchWithArgsExp: Some(enqueue::urEnqueueKernelLaunchWithArgsExp),
        pfnUSMDeviceAllocExp: unsupported(),
        pfnUSMSharedAllocExp: unsupported(),
        pfnUSMHostAllocExp: unsupported(),
        pfnUSMFreeExp: unsupported(),
        pfnTimestampRecordingExp: Some(timestamp::urEnqueueTimestampRecordingExp),
        pfnCommandBufferExp: Some(command_buffer::urEnqueueCommandBufferExp),
        pfnHostTaskExp: Some(enqueue::urEnqueueHostTaskExp),
        pfnNativeCommandExp: Some(native::urEnqueueNativeCommandExp),
        pfnGraphExp: Some(crate::capture::urEnqueueGraphExp),
    }
}

/// The `USM` table.
fn usm_slots() -> ur_usm_dditable_t {
    ur_usm_dditable_t {
        pfnHostAlloc: Some(usm::urUSMHostAlloc),
        pfnDeviceAlloc: Some(usm::urUSMDeviceAlloc),
        pfnSharedAlloc: Some(usm::urUSMSharedAlloc),
        pfnFree: Some(usm::urUSMFree),
        pfnGetMemAllocInfo: Some(usm::urUSMGetMemAllocInfo),
        pfnPoolCreate: unsupported(),
        pfnPoolRetain: unsupported(),
        pfnPoolRelease: unsupported(),
        pfnPoolGetInfo: unsupported(),
    }
}

/// The `USMExp` table.
fn usm_exp_slots() -> ur_usm_exp_dditable_t {
    ur_usm_exp_dditable_t {
        pfnPoolCreateExp: unsupported(),
        pfnPoolDestroyExp: unsupported(),
        pfnPoolGetDefaultDevicePoolExp: unsupported(),
        pfnPoolGetInfoExp: unsupported(),
        pfnPoolSetInfoExp: unsupported(),
        pfnPoolSetDevicePoolExp: unsupported(),
        pfnPoolGetDevicePoolExp: unsupported(),
        pfnPoolTrimToExp: unsupported(),
        pfnPitchedAllocExp: unsupported(),
        pfnContextMemcpyExp: unsupported(),
        pfnHostAllocUnregisterExp: unsupported(),
        pfnHostAllocRegisterExp: unsupported(),
        pfnImportExp: unsupported(),
        pfnReleaseExp: unsupported(),
    }
}

/// The `BindlessImagesExp` table.
fn bindless_images_exp_slots() -> ur_bindless_images_exp_dditable_t {
    ur_bindless_images_exp_dditable_t {
        pfnUnsampledImageHandleDestroyExp: unsupported(),
        pfnSampledImageHandleDestroyExp: unsupported(),
        pfnImageAllocateExp: unsupported(),
        pfnImageFreeExp: unsupported(),
        pfnUnsampledImageCreateExp: unsupported(),
        pfnSampledImageCreateExp: unsupported(),
        pfnImageCopyExp: unsupported(),
        pfnImageGetInfoExp: unsupported(),
        pfnGetImageMemoryHandleTypeSupportExp: unsupported(),
        pfnGetImageUnsampledHandleSupportExp: unsupported(),
        pfnGetImageSampledHandleSupportExp: unsupported(),
        pfnMipmapGetLevelExp: unsupported(),
        pfnMipmapFreeExp: unsupported(),
        pfnImportExternalMemoryExp: unsupported(),
        pfnMapExternalArrayExp: unsupported(),
        pfnMapExternalLinearMemoryExp: unsupported(),
        pfnReleaseExternalMemoryExp: unsupported(),
        pfnFreeMappedLinearMemoryExp: unsupported(),
        pfnSupportsImportingHandleTypeExp: unsupported(),
        pfnImportExternalSemaphoreExp: unsupported(),
        pfnReleaseExternalSemaphoreExp: unsupported(),
        pfnWaitExternalSemaphoreExp: unsupported(),
        pfnSignalExternalSemaphoreExp: unsupported(),
    }
}

/// The `CommandBufferExp` table.
fn command_buffer_exp_slots() -> ur_command_buffer_exp_dditable_t {
    ur_command_buffer_exp_dditable_t {
        pfnCreateExp: Some(command_buffer::urCommandBufferCreateExp),
        pfnRetainExp: Some(command_buffer::urCommandBufferRetainExp),
        pfnReleaseExp: Some(command_buffer::urCommandBufferReleaseExp),
        pfnFinalizeExp: Some(command_buffer::urCommandBufferFinalizeExp),
        pfnAppendKernelLaunchExp: Some(command_buffer::urCommandBufferAppendKernelLaunchExp),
        pfnAppendKernelLaunchWithArgsExp: Some(command_buffer::urCommandBufferAppendKernelLaunchWithArgsExp),
        pfnAppendUSMMemcpyExp: Some(command_buffer::urCommandBufferAppendUSMMemcpyExp),
        pfnAppendUSMFillExp: Some(command_buffer::urCommandBufferAppendUSMFillExp),
        pfnAppendMemBufferCopyExp: Some(command_buffer::urCommandBufferAppendMemBufferCopyExp),
        pfnAppendMemBufferWriteExp: Some(command_buffer::urCommandBufferAppendMemBufferWriteExp),
        pfnAppendMemBufferReadExp: Some(command_buffer::urCommandBufferAppendMemBufferReadExp),
        pfnAppendMemBufferCopyRectExp: Some(command_buffer::urCommandBufferAppendMemBufferCopyRectExp),
        pfnAppendMemBufferWriteRectExp: Some(command_buffer::urCommandBufferAppendMemBufferWriteRectExp),
        pfnAppendMemBufferReadRectExp: Some(command_buffer::urCommandBufferAppendMemBufferReadRectExp),
        pfnAppendMemBufferFillExp: Some(command_buffer::urCommandBufferAppendMemBufferFillExp),
        pfnAppendUSMPrefetchExp: Some(command_buffer::urCommandBufferAppendUSMPrefetchExp),
        pfnAppendUSMAdviseExp: Some(command_buffer::urCommandBufferAppendUSMAdviseExp),
        pfnAppendNativeCommandExp: Some(native::urCommandBufferAppendNativeCommandExp),
        pfnUpdateKernelLaunchExp: Some(command_buffer::urCommandBufferUpdateKernelLaunchExp),
        pfnUpdateSignalEventExp: Some(command_buffer::urCommandBufferUpdateSignalEventExp),
        pfnUpdateWaitEventsExp: Some(command_buffer::urCommandBufferUpdateWaitEventsExp),
        pfnGetInfoExp: Some(command_buffer::urCommandBufferGetInfoExp),
        pfnGetNativeHandleExp: Some(command_buffer::urCommandBufferGetNativeHandleExp),
    }
}

/// The `GraphExp` table.
fn graph_exp_slots() -> ur_graph_exp_dditable_t {
    ur_graph_exp_dditable_t {
        pfnCreateExp: Some(crate::capture::urGraphCreateExp),
        pfnInstantiateGraphExp: Some(crate::capture::urGraphInstantiateGraphExp),
        pfnDestroyExp: Some(crate::capture::urGraphDestroyExp),
        pfnExecutableGraphDestroyExp: Some(crate::capture::urGraphExecutableGraphDestroyExp),
        pfnIsEmptyExp: Some(crate::capture::urGraphIsEmptyExp),
        pfnGetIdExp: Some(crate::capture::urGraphGetIdExp),
        pfnSetDestructionCallbackExp: Some(crate::capture::urGraphSetDestructionCallbackExp),
        pfnDumpContentsExp: Some(crate::capture::urGraphDumpContentsExp),
        pfnGetNativeHandleExp: unsupported(),
        pfnExecutableGraphGetNativeHandleExp: unsupported(),
    }
}

/// The `IPCExp` table.
fn ipc_exp_slots() -> ur_ipc_exp_dditable_t {
    ur_ipc_exp_dditable_t {
        pfnGetMemHandleExp: unsupported(),
        pfnPutMemHandleExp: unsupported(),
        pfnOpenMemHandleExp: unsupported(),
        pfnCloseMemHandleExp: unsupported(),
        pfnGetPhysMemHandleExp: unsupported(),
        pfnPutPhysMemHandleExp: unsupported(),
        pfnOpenPhysMemHandleExp: unsupported(),
        pfnClosePhysMemHandleExp: unsupported(),
        pfnGetEventHandleExp: unsupported(),
        pfnPutEventHandleExp: unsupported(),
        pfnOpenEventHandleExp: unsupported(),
    }
}

/// The `MemoryExportExp` table.
fn memory_export_exp_slots() -> ur_memory_export_exp_dditable_t {
    ur_memory_export_exp_dditable_t {
        pfnAllocExportableMemoryExp: unsupported(),
        pfnFreeExportableMemoryExp: unsupported(),
        pfnExportMemoryHandleExp: unsupported(),
    }
}

/// The `UsmP2PExp` table.
fn usm_p2p_exp_slots() -> ur_usm_p2p_exp_dditable_t {
    ur_usm_p2p_exp_dditable_t {
        pfnEnablePeerAccessExp: Some(usm_p2p::urUsmP2PEnablePeerAccessExp),
        pfnDisablePeerAccessExp: Some(usm_p2p::urUsmP2PDisablePeerAccessExp),
        pfnPeerAccessGetInfoExp: Some(usm_p2p::urUsmP2PPeerAccessGetInfoExp),
    }
}

/// The `VirtualMem` table.
fn virtual_mem_slots() -> ur_virtual_mem_dditable_t {
    ur_virtual_mem_dditable_t {
        pfnGranularityGetInfo: unsupported(),
        pfnReserve: unsupported(),
        pfnFree: unsupported(),
        pfnMap: unsupported(),
        pfnUnmap: unsupported(),
        pfnSetAccess: unsupported(),
        pfnGetInfo: unsupported(),
    }
}

/// The `Device` table.
fn device_slots() -> ur_device_dditable_t {
    ur_device_dditable_t {
        pfnGet: Some(device::urDeviceGet),
        pfnGetInfo: Some(device_info::urDeviceGetInfo),
        pfnRetain: Some(device::urDeviceRetain),
        pfnRelease: Some(device::urDeviceRelease),
        pfnPartition: Some(device::urDevicePartition),
        pfnSelectBinary: Some(device::urDeviceSelectBinary),
        pfnGetNativeHandle: Some(native::urDeviceGetNativeHandle),
        pfnCreateWithNativeHandle: Some(adopt::urDeviceCreateWithNativeHandle),
        pfnGetGlobalTimestamps: Some(device::urDeviceGetGlobalTimestamps),
    }
}

/// The `DeviceExp` table.
fn device_exp_slots() -> ur_device_exp_dditable_t {
    ur_device_exp_dditable_t { pfnWaitExp: unsupported() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_is_filled() {
        let table = dispatch_table();
        assert_eq!(size_of::<ur_dditable_t>(), 241 * size_of::<usize>());
        // SAFETY: the table is 241 function pointers (checked above), each an
        // `Option<fn>` whose `None` is the null word.
        let words = unsafe { std::slice::from_raw_parts((table as *const ur_dditable_t).cast::<usize>(), 241) };
        assert!(words.iter().all(|w| *w != 0));
    }
}
