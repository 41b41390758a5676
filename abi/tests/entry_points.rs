//! `docs/abi-entry-points.md` lists every slot of the dispatch table
//! (`src/tables.rs`) as implemented or `UNSUPPORTED_FEATURE`, with what each
//! backend does where it differs: regenerated here from the table's source
//! and compared, so that the document cannot drift from the code.
//!
//! `UR_RS_BLESS=1 cargo test -p cmdbuf-abi --test entry_points` rewrites it.

use std::fmt::Write;
use std::path::Path;

/// One slot of the dispatch table.
struct Slot {
    table: String,
    entry_point: String,
    implemented: bool,
}

/// Reads the slots from the struct literals of `tables.rs`: in `build`, a
/// line `Name: name_slots(),` says which function fills table `Name`; that
/// function's line `fn name_slots() -> ur_..._dditable_t {` opens the table,
/// and `pfnX: Some(..)` or `pfnX: unsupported()` fills a slot (on the lines
/// that follow or, for one-slot tables, after `ur_..._dditable_t {`).
fn slots(source: &str) -> Vec<Slot> {
    let mut fills = std::collections::HashMap::<&str, &str>::new();
    let mut table = None::<String>;
    let mut out = Vec::new();
    for line in source.lines().map(str::trim) {
        if let Some((name, call)) = line.split_once(": ")
            && !name.starts_with("pfn")
            && let Some(function) = call.strip_suffix("(),")
        {
            fills.insert(function, name);
            continue;
        }
        if let Some(rest) = line.strip_prefix("fn ")
            && let Some((function, _)) = rest.split_once("() -> ur_")
        {
            table = fills.get(function).map(|name| name.to_string());
            continue;
        }
        let line = line.split_once("_dditable_t {").map_or(line, |(_, slots)| slots.trim());
        let (Some(table), Some(rest)) = (&table, line.strip_prefix("pfn")) else { continue };
        let Some((field, value)) = rest.split_once(": ") else { continue };
        let value = value.trim_end_matches(['}', ' ', ',']);
        let stem = table.strip_suffix("Exp").unwrap_or(table);
        out.push(Slot {
            table: table.clone(),
            entry_point: format!("ur{stem}{field}"),
            implemented: value.starts_with("Some("),
        });
    }
    out
}

/// Why a family of entry points is unsupported, by name prefix (first match).
const UNSUPPORTED_WHY: &[(&str, &str)] = &[
    ("urBindlessImages", "no images (`IMAGE_SUPPORT` and `BINDLESS_IMAGES_SUPPORT_EXP` false)"),
    ("urMemImage", "no images (`IMAGE_SUPPORT` false)"),
    ("urEnqueueMemImage", "no images (`IMAGE_SUPPORT` false)"),
    ("urSampler", "no images, so no samplers"),
    ("urEnqueueMipmap", "no images"),
    ("urEnqueueGetImageSampledHandleSupport", "no images"),
    ("urEnqueueImportExternal", "no external memory interop (`EXTERNAL_*_IMPORT_SUPPORT_EXP` false)"),
    ("urEnqueueMapExternal", "no external memory interop"),
    ("urEnqueueReleaseExternal", "no external memory interop"),
    ("urEnqueueFreeMappedLinearMemory", "no external memory interop"),
    ("urEnqueueSupportsImportingHandleType", "no external memory interop"),
    ("urEnqueueImportExternalSemaphore", "no external semaphores"),
    ("urEnqueueWaitExternalSemaphore", "no external semaphores"),
    ("urEnqueueSignalExternalSemaphore", "no external semaphores"),
    ("urEnqueueReleaseExternalSemaphore", "no external semaphores"),
    ("urPhysicalMem", "no virtual memory (`VIRTUAL_MEMORY_SUPPORT` false)"),
    ("urVirtualMem", "no virtual memory (`VIRTUAL_MEMORY_SUPPORT` false)"),
    ("urEnqueueDeviceGlobalVariable", "no device globals: programs come from IL or binaries without them"),
    ("urEnqueueReadHostPipe", "no host pipes"),
    ("urEnqueueWriteHostPipe", "no host pipes"),
    ("urEnqueueCooperative", "no cooperative launches"),
    ("urKernelSuggestMaxCooperativeGroupCount", "no cooperative launches"),
    ("urProgramGetFunctionPointer", "no device function pointers"),
    ("urProgramGetGlobalVariablePointer", "no device globals"),
    ("urProgramDynamicLink", "no dynamic linking of device functions across programs"),
    (
        "urProgramSetSpecializationConstants",
        "no specialization constants (`PROGRAM_SET_SPECIALIZATION_CONSTANTS` false)",
    ),
    ("urKernelSetSpecializationConstants", "no specialization constants (`KERNEL_SET_SPECIALIZATION_CONSTANTS` false)"),
    ("urTensorMap", "no tensor maps"),
    ("urEnqueueUSMDeviceAlloc", "no asynchronous USM allocation (`ASYNC_USM_ALLOCATIONS_SUPPORT_EXP` false)"),
    ("urEnqueueUSMSharedAlloc", "no asynchronous USM allocation"),
    ("urEnqueueUSMHostAlloc", "no asynchronous USM allocation"),
    ("urEnqueueUSMFree", "no asynchronous USM allocation"),
    ("urUSMPool", "USM pools beyond the default one are not offered"),
    ("urUSMImport", "no host-memory import"),
    ("urUSMRelease", "no host-memory import"),
    ("urUSMContextMemcpy", "copies go through queues"),
    ("urEnqueueUSMFill2D", "2D USM operations are not offered (`USM_*_2D_*` false)"),
    ("urEnqueueUSMMemcpy2D", "2D USM operations are not offered"),
    ("urMemImageCreateWithNativeHandle", "no images (`IMAGE_SUPPORT` false)"),
    ("CreateWithNativeHandle", "no samplers or images (`IMAGE_SUPPORT` false)"),
    ("GetNativeHandle", "no native handle is handed out for this object"),
    ("urEnqueueTimestampRecording", "timestamp recording is not offered yet"),
    ("urMemBufferPartition", "sub-buffers are not offered yet"),
    ("urEventCreateExp", "no events made apart from a command"),
    ("urUSMPitchedAlloc", "no pitched allocations (they serve images)"),
    ("urUSMHostAllocRegister", "no registration of host memory"),
    ("urUSMHostAllocUnregister", "no registration of host memory"),
    ("urDeviceWait", "no device-wide wait: queues and events are waited on"),
    ("urIPC", "no inter-process memory handles"),
    ("urMemoryExport", "no memory export"),
];

/// What one backend does differently for an implemented entry point.
const BACKEND_NOTES: &[(&str, &str, &str)] = &[
    (
        "urDevicePartition",
        "cpu",
        "equally, by counts, by the affinity domains `/sys` describes: sub-devices with pinned workers of their own",
    ),
    ("urDevicePartition", "opencl", "`clCreateSubDevices`, the partitions the driver lists"),
    ("urDevicePartition", "vulkan", "`DEVICE_PARTITION_FAILED`: no partitions (`SUPPORTED_PARTITIONS` empty)"),
    ("urDevicePartition", "cuda", "`DEVICE_PARTITION_FAILED`: no partitions (`SUPPORTED_PARTITIONS` empty)"),
    ("urUsmP2PPeerAccessGetInfoExp", "cpu", "its device is its own peer (host memory)"),
    ("urUsmP2PPeerAccessGetInfoExp", "opencl", "no pair is peers (USM belongs to one `cl_context`)"),
    ("urUsmP2PPeerAccessGetInfoExp", "vulkan", "a device is its own peer (one `VkDevice`); two devices are not"),
    ("urUsmP2PPeerAccessGetInfoExp", "cuda", "`cuDeviceCanAccessPeer`, atomics `cuDeviceGetP2PAttribute`"),
    ("urUsmP2PEnablePeerAccessExp", "cuda", "`cuCtxEnablePeerAccess` between primary contexts"),
    ("urUsmP2PDisablePeerAccessExp", "cuda", "`cuCtxDisablePeerAccess`"),
    ("urProgramCreateWithIL", "cpu", "`INVALID_BINARY`: takes a C kernel table through `CreateWithBinary`"),
    ("urProgramCreateWithIL", "opencl", "OpenCL-flavour SPIR-V"),
    ("urProgramCreateWithIL", "vulkan", "GLCompute SPIR-V with cmdbuf's kernel ABI"),
    ("urProgramCreateWithIL", "cuda", "`INVALID_BINARY`: takes PTX through `CreateWithBinary`"),
    ("urProgramCreateWithBinary", "cpu", "a `ur_rs_cpu_table_t` of C entry points (`adapter-cpu/include/ur_rs_cpu.h`)"),
    ("urProgramCreateWithBinary", "opencl", "SPIR-V only"),
    ("urProgramCreateWithBinary", "vulkan", "SPIR-V only"),
    ("urProgramCreateWithBinary", "cuda", "PTX"),
    (
        "urProgramCreateWithNativeHandle",
        "opencl",
        "a built `cl_program` of the context; kernel signatures derived from `CL_KERNEL_NUM_ARGS` and `clGetKernelArgInfo`",
    ),
    ("urProgramCreateWithNativeHandle", "cuda", "a `CUmodule` of the primary context (CUDA 12.4 drivers)"),
    ("urProgramCreateWithNativeHandle", "cpu", "`UNSUPPORTED_FEATURE`: no native programs"),
    ("urProgramCreateWithNativeHandle", "vulkan", "`UNSUPPORTED_FEATURE`: no native programs"),
    (
        "urKernelCreateWithNativeHandle",
        "opencl",
        "a `cl_kernel` of the context; its program adopted too when none is given",
    ),
    ("urKernelCreateWithNativeHandle", "cuda", "a `CUfunction` of a module of the primary context (CUDA 12.4 drivers)"),
    ("urKernelCreateWithNativeHandle", "cpu", "`UNSUPPORTED_FEATURE`: no native kernels"),
    ("urKernelCreateWithNativeHandle", "vulkan", "`UNSUPPORTED_FEATURE`: no native kernels"),
    ("urProgramGetNativeHandle", "opencl", "the `cl_program` (once built)"),
    ("urProgramGetNativeHandle", "cuda", "the `CUmodule` (once built)"),
    ("urProgramGetNativeHandle", "cpu", "`UNSUPPORTED_FEATURE`: no native program"),
    ("urProgramGetNativeHandle", "vulkan", "`UNSUPPORTED_FEATURE`: no native program (a pipeline per kernel)"),
    ("urKernelGetNativeHandle", "opencl", "the `cl_kernel`"),
    ("urKernelGetNativeHandle", "cuda", "the `CUfunction`"),
    ("urKernelGetNativeHandle", "cpu", "`UNSUPPORTED_FEATURE`: no native kernel"),
    ("urKernelGetNativeHandle", "vulkan", "`UNSUPPORTED_FEATURE`: no native kernel"),
    ("urProgramLink", "opencl", "several SPIR-V programs where the device takes SPIR-V (`clLinkProgram`)"),
    ("urProgramLinkExp", "opencl", "several SPIR-V programs where the device takes SPIR-V (`clLinkProgram`)"),
    ("urProgramLink", "cpu", "one program (several: `UNSUPPORTED_FEATURE`)"),
    ("urProgramLinkExp", "cpu", "one program (several: `UNSUPPORTED_FEATURE`)"),
    ("urProgramLink", "vulkan", "one program (several: `UNSUPPORTED_FEATURE`)"),
    ("urProgramLinkExp", "vulkan", "one program (several: `UNSUPPORTED_FEATURE`)"),
    ("urProgramLink", "cuda", "one program (several: `UNSUPPORTED_FEATURE`)"),
    ("urProgramLinkExp", "cuda", "one program (several: `UNSUPPORTED_FEATURE`)"),
    (
        "urKernelSetExecInfo",
        "cuda",
        "USM access hints accepted (always true); cache configurations applied (`cuFuncSetCacheConfig`)",
    ),
    (
        "urKernelSetExecInfo",
        "cpu",
        "USM access hints accepted (always true); cache configurations recorded (no cache split)",
    ),
    (
        "urKernelSetExecInfo",
        "opencl",
        "USM access hints accepted (always true); cache configurations recorded (no cache split)",
    ),
    (
        "urKernelSetExecInfo",
        "vulkan",
        "USM access hints accepted (always true); cache configurations recorded (no cache split)",
    ),
    ("urCommandBufferGetNativeHandleExp", "*", "the executable object, after finalize (before: `INVALID_OPERATION`)"),
    ("urPlatformGetNativeHandle", "cpu", "`UNSUPPORTED_FEATURE`: no native object"),
    ("urPlatformGetNativeHandle", "cuda", "`UNSUPPORTED_FEATURE`: no native object"),
    ("urDeviceGetNativeHandle", "cpu", "`UNSUPPORTED_FEATURE`: no native object"),
    ("urDeviceGetNativeHandle", "cuda", "the `CUdevice` ordinal"),
    ("urContextGetNativeHandle", "cpu", "`UNSUPPORTED_FEATURE`: no native object"),
    ("urQueueGetNativeHandle", "cpu", "`UNSUPPORTED_FEATURE`: no native object"),
    ("urMemGetNativeHandle", "cpu", "the buffer's host address"),
    ("urEventGetNativeHandle", "cpu", "`UNSUPPORTED_FEATURE`: no native object"),
    ("urEventGetNativeHandle", "vulkan", "`UNSUPPORTED_FEATURE`: no native object"),
    ("urMemGetNativeHandle", "opencl", "a sub-buffer's `clCreateSubBuffer` object"),
    ("urMemBufferPartition", "opencl", "a `clCreateSubBuffer` object made for kernel arguments"),
    ("urPlatformCreateWithNativeHandle", "cpu", "`UNSUPPORTED_FEATURE`: no native object"),
    ("urPlatformCreateWithNativeHandle", "cuda", "`UNSUPPORTED_FEATURE`: no native object"),
    ("urDeviceCreateWithNativeHandle", "cpu", "`UNSUPPORTED_FEATURE`: no native object"),
    ("urDeviceCreateWithNativeHandle", "cuda", "the `CUdevice` ordinal"),
    ("urContextCreateWithNativeHandle", "cpu", "`UNSUPPORTED_FEATURE`: no native object"),
    ("urContextCreateWithNativeHandle", "vulkan", "the device's `VkDevice` only, not owned"),
    ("urContextCreateWithNativeHandle", "cuda", "the primary `CUcontext` only, not owned"),
    ("urQueueCreateWithNativeHandle", "cpu", "`UNSUPPORTED_FEATURE`: no native object"),
    ("urQueueCreateWithNativeHandle", "vulkan", "a `VkQueue` of the device: in order, no profiling"),
    ("urQueueCreateWithNativeHandle", "cuda", "a `CUstream` of the primary context: in order, no profiling"),
    ("urMemBufferCreateWithNativeHandle", "cpu", "a live buffer's host address"),
    ("urMemBufferCreateWithNativeHandle", "opencl", "read-write root `cl_mem` only"),
    (
        "urMemBufferCreateWithNativeHandle",
        "vulkan",
        "`UNSUPPORTED_FEATURE`: a `VkBuffer` gives neither memory nor address",
    ),
    ("urMemBufferCreateWithNativeHandle", "cuda", "`UNSUPPORTED_FEATURE`: a `CUdeviceptr` names no size"),
    (
        "urEventCreateWithNativeHandle",
        "cpu",
        "handle 0: an event already complete; others `UNSUPPORTED_FEATURE`: no native object",
    ),
    ("urEventCreateWithNativeHandle", "opencl", "a `cl_event`; handle 0: an event already complete"),
    (
        "urEventCreateWithNativeHandle",
        "vulkan",
        "handle 0: an event already complete; others `UNSUPPORTED_FEATURE`: no native object",
    ),
    (
        "urEventCreateWithNativeHandle",
        "cuda",
        "handle 0: an event already complete; others `UNSUPPORTED_FEATURE`: events carry the adapter's own tracking",
    ),
    ("urEnqueueTimestampRecordingExp", "cpu", "the host clock, read once"),
    ("urEnqueueTimestampRecordingExp", "opencl", "a marker timed on a profiling queue of the context"),
    ("urEnqueueTimestampRecordingExp", "vulkan", "a pair of timestamp queries"),
    ("urEnqueueTimestampRecordingExp", "cuda", "two timing events"),
    ("urEnqueueNativeCommandExp", "cpu", "the call waits for the wait list, then runs the callback"),
    ("urCommandBufferAppendNativeCommandExp", "cpu", "the callback runs at each execution"),
    (
        "urCommandBufferAppendNativeCommandExp",
        "opencl",
        "the callback runs once, into a `cl_command_buffer_khr` of its own",
    ),
    ("urCommandBufferAppendNativeCommandExp", "vulkan", "the callback runs at finalize"),
    ("urCommandBufferAppendNativeCommandExp", "cuda", "stream capture, or the child's `CUgraph`"),
];

const BACKENDS: [&str; 4] = ["cpu", "opencl", "vulkan", "cuda"];

fn render(slots: &[Slot]) -> String {
    let implemented = slots.iter().filter(|s| s.implemented).count();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# UR 0.12 entry points\n\n\
         Every slot of the dispatch table that each `libur_adapter_rs_<backend>.so`\n\
         hands the loader (`abi/src/tables.rs`): {implemented} of {} implemented; the\n\
         others answer `UR_RESULT_ERROR_UNSUPPORTED_FEATURE`, for the reason given,\n\
         once their arguments pass the checks generated from `ur_api.h` (every slot\n\
         has them: [abi.md](abi.md#generated-argument-checks)).\n\
         A backend column is empty where that backend does what the entry point\n\
         says. Generated from the table's source by `abi/tests/entry_points.rs`\n\
         (`UR_RS_BLESS=1 cargo test -p cmdbuf-abi --test entry_points` rewrites it).\n",
        slots.len()
    );
    let mut table = "";
    for slot in slots {
        if slot.table != table {
            table = &slot.table;
            let _ = writeln!(
                out,
                "\n## {table}\n\n| entry point | status | cpu | opencl | vulkan | cuda |\n|---|---|---|---|---|---|"
            );
        }
        let status = if slot.implemented {
            "implemented".to_string()
        } else {
            let why = UNSUPPORTED_WHY
                .iter()
                .find(|(prefix, _)| slot.entry_point.starts_with(prefix) || slot.entry_point.contains(prefix))
                .map(|(_, why)| *why)
                .unwrap_or_else(|| panic!("{} is unsupported: give the reason in UNSUPPORTED_WHY", slot.entry_point));
            format!("`UNSUPPORTED_FEATURE`: {why}")
        };
        let cells: Vec<String> = BACKENDS
            .iter()
            .map(|b| {
                BACKEND_NOTES
                    .iter()
                    .filter(|(e, nb, _)| *e == slot.entry_point && (*nb == *b || *nb == "*"))
                    .map(|(_, _, note)| *note)
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .collect();
        let _ = writeln!(out, "| `{}` | {status} | {} |", slot.entry_point, cells.join(" | "));
    }
    out
}

#[test]
fn the_document_lists_every_slot_as_the_table_fills_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(root.join("src/tables.rs")).expect("tables.rs");
    let slots = slots(&source);
    assert_eq!(slots.len(), 241, "UR 0.12 has 241 entry points in its adapter tables");
    for (entry, _, _) in BACKEND_NOTES {
        assert!(
            slots.iter().any(|s| s.entry_point == *entry && s.implemented),
            "a backend note for {entry}, which is not an implemented entry point"
        );
    }
    let expected = render(&slots);
    let doc = root.join("../docs/abi-entry-points.md");
    if std::env::var_os("UR_RS_BLESS").is_some() {
        std::fs::write(&doc, &expected).expect("write docs/abi-entry-points.md");
        return;
    }
    let actual = std::fs::read_to_string(&doc).unwrap_or_default();
    assert!(
        actual == expected,
        "docs/abi-entry-points.md is out of date: run UR_RS_BLESS=1 cargo test -p cmdbuf-abi --test entry_points"
    );
}
