//! The error model: one enum whose variants mirror Unified Runtime's
//! `ur_result_t` codes, each carrying a [`Detail`] with the message and, when
//! the error came from a driver, the backend and its native code.
//!
//! Tests and users match on the variant (`matches!(e, UrError::InvalidSize(_))`);
//! [`UrError::ur_code`] gives the numeric UR value for bridging to C.

use std::borrow::Cow;
use std::fmt;

use crate::types::backend::Backend;

/// Result type of every fallible API call.
pub type Result<T, E = UrError> = std::result::Result<T, E>;

/// What went wrong, beyond the result code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detail {
    /// Human-readable explanation naming the offending value.
    pub message: Cow<'static, str>,
    /// The backend whose driver produced the error, when one did.
    pub backend: Option<Backend>,
    /// The driver's own error code (`CUresult`, `cl_int`, `VkResult`), when one exists.
    pub native_code: Option<i64>,
}

impl Detail {
    /// A detail with only a message: the usual form for front-end validation errors.
    pub fn msg(message: impl Into<Cow<'static, str>>) -> Self {
        Detail { message: message.into(), backend: None, native_code: None }
    }

    /// A detail produced by a driver call of `backend`.
    pub fn native(backend: Backend, native_code: i64, message: impl Into<Cow<'static, str>>) -> Self {
        Detail { message: message.into(), backend: Some(backend), native_code: Some(native_code) }
    }

    /// A detail produced by an adapter without a native code.
    pub(crate) fn adapter(backend: Backend, message: impl Into<Cow<'static, str>>) -> Self {
        Detail { message: message.into(), backend: Some(backend), native_code: None }
    }
}

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.backend, self.native_code) {
            (Some(b), Some(c)) => write!(f, "[{b}: native code {c}] {}", self.message),
            (Some(b), None) => write!(f, "[{b}] {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

macro_rules! ur_errors {
    ($( $(#[$doc:meta])* $variant:ident = $code:expr, $ur_name:literal, $text:literal; )*) => {
        /// An error of the API, named after the Unified Runtime result code it mirrors.
        #[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
        #[non_exhaustive]
        pub enum UrError {
            $(
                $(#[$doc])*
                #[error("{text}: {0}", text = $text)]
                $variant(Detail),
            )*
        }

        impl UrError {
            /// The numeric `ur_result_t` value of this error.
            pub fn ur_code(&self) -> u32 {
                match self { $(UrError::$variant(_) => $code,)* }
            }

            /// The `ur_result_t` name of this error, such as `UR_RESULT_ERROR_INVALID_SIZE`.
            pub fn ur_name(&self) -> &'static str {
                match self { $(UrError::$variant(_) => $ur_name,)* }
            }

            /// The detail carried by any variant.
            pub fn detail(&self) -> &Detail {
                match self { $(UrError::$variant(d) => d,)* }
            }

            /// The same error with `context` before its message, such as the
            /// graph node a validation failed for.
            pub fn in_context(mut self, context: &str) -> UrError {
                let detail = match &mut self { $(UrError::$variant(d) => d,)* };
                detail.message = format!("{context}: {}", detail.message).into();
                self
            }
        }
    };
}

ur_errors! {
    /// The call is not valid in the object's current state (finalize twice,
    /// append after finalize, update of a buffer that is not updatable, ...).
    InvalidOperation = 1, "UR_RESULT_ERROR_INVALID_OPERATION", "invalid operation";
    /// Queue properties the device cannot honour.
    InvalidQueueProperties = 2, "UR_RESULT_ERROR_INVALID_QUEUE_PROPERTIES", "invalid queue properties";
    /// A queue of another context or device.
    InvalidQueue = 3, "UR_RESULT_ERROR_INVALID_QUEUE", "invalid queue";
    /// A value outside what the call accepts.
    InvalidValue = 4, "UR_RESULT_ERROR_INVALID_VALUE", "invalid value";
    /// Objects of different contexts mixed in one call.
    InvalidContext = 5, "UR_RESULT_ERROR_INVALID_CONTEXT", "invalid context";
    /// A platform handle that is not one, or not of this adapter.
    InvalidPlatform = 6, "UR_RESULT_ERROR_INVALID_PLATFORM", "invalid platform";
    /// A program has no source form the adapter accepts.
    InvalidBinary = 7, "UR_RESULT_ERROR_INVALID_BINARY", "invalid binary";
    /// A program handle that is not one, or a program not usable for the call.
    InvalidProgram = 8, "UR_RESULT_ERROR_INVALID_PROGRAM", "invalid program";
    /// A sampler handle that is not one.
    InvalidSampler = 9, "UR_RESULT_ERROR_INVALID_SAMPLER", "invalid sampler";
    /// A memory buffer of size zero or beyond the device's limit.
    InvalidBufferSize = 10, "UR_RESULT_ERROR_INVALID_BUFFER_SIZE", "invalid buffer size";
    /// A memory buffer of another context.
    InvalidMemObject = 11, "UR_RESULT_ERROR_INVALID_MEM_OBJECT", "invalid memory object";
    /// An event of another context.
    InvalidEvent = 12, "UR_RESULT_ERROR_INVALID_EVENT", "invalid event";
    /// A wait list with an unusable event, or of the wrong length.
    InvalidEventWaitList = 13, "UR_RESULT_ERROR_INVALID_EVENT_WAIT_LIST", "invalid event wait list";
    /// A sub-buffer origin that is not a multiple of the device's base address alignment.
    MisalignedSubBufferOffset = 14, "UR_RESULT_ERROR_MISALIGNED_SUB_BUFFER_OFFSET", "misaligned sub-buffer offset";
    /// A work-group size the device or kernel cannot run.
    InvalidWorkGroupSize = 15, "UR_RESULT_ERROR_INVALID_WORK_GROUP_SIZE", "invalid work-group size";
    /// Profiling timestamps were asked of an event that has none.
    ProfilingInfoNotAvailable = 17, "UR_RESULT_ERROR_PROFILING_INFO_NOT_AVAILABLE", "profiling info not available";
    /// No device of the requested type.
    DeviceNotFound = 18, "UR_RESULT_ERROR_DEVICE_NOT_FOUND", "device not found";
    /// A device of another platform or context.
    InvalidDevice = 19, "UR_RESULT_ERROR_INVALID_DEVICE", "invalid device";
    /// The device stopped working.
    DeviceLost = 20, "UR_RESULT_ERROR_DEVICE_LOST", "device lost";
    /// A partition the device does not offer (a kind or affinity domain it
    /// does not list), or that the driver could not make.
    DevicePartitionFailed = 23, "UR_RESULT_ERROR_DEVICE_PARTITION_FAILED", "device partition failed";
    /// Compute-unit counts of a partition that the device cannot give: a
    /// zero count, more units than it has, more sub-devices than it makes.
    InvalidDevicePartitionCount = 24, "UR_RESULT_ERROR_INVALID_DEVICE_PARTITION_COUNT", "invalid device partition count";
    /// A work-item size beyond what the device allows.
    InvalidWorkItemSize = 25, "UR_RESULT_ERROR_INVALID_WORK_ITEM_SIZE", "invalid work-item size";
    /// A work dimension other than 1, 2 or 3, or sizes of mismatched lengths.
    InvalidWorkDimension = 26, "UR_RESULT_ERROR_INVALID_WORK_DIMENSION", "invalid work dimension";
    /// A kernel of another context, or not usable here.
    InvalidKernel = 28, "UR_RESULT_ERROR_INVALID_KERNEL", "invalid kernel";
    /// No kernel of that name in the program.
    InvalidKernelName = 29, "UR_RESULT_ERROR_INVALID_KERNEL_NAME", "invalid kernel name";
    /// Argument indices that do not cover the kernel's arguments exactly.
    InvalidKernelArgumentIndex = 30, "UR_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX", "invalid kernel argument index";
    /// An argument whose size or kind does not match the kernel's signature.
    InvalidKernelArgumentSize = 31, "UR_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE", "invalid kernel argument size";
    /// A program that was not built, or has no kernel to run.
    InvalidProgramExecutable = 36, "UR_RESULT_ERROR_INVALID_PROGRAM_EXECUTABLE", "invalid program executable";
    /// The adapter is absent or was not initialised.
    Uninitialized = 37, "UR_RESULT_ERROR_UNINITIALIZED", "uninitialized";
    /// Host memory ran out.
    OutOfHostMemory = 38, "UR_RESULT_ERROR_OUT_OF_HOST_MEMORY", "out of host memory";
    /// Device memory ran out.
    OutOfDeviceMemory = 39, "UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", "out of device memory";
    /// Some other device resource ran out.
    OutOfResources = 40, "UR_RESULT_ERROR_OUT_OF_RESOURCES", "out of resources";
    /// The driver failed to build a program.
    ProgramBuildFailure = 41, "UR_RESULT_ERROR_PROGRAM_BUILD_FAILURE", "program build failure";
    /// The program failed to link.
    ProgramLinkFailure = 42, "UR_RESULT_ERROR_PROGRAM_LINK_FAILURE", "program link failure";
    /// An API version the adapter does not implement.
    UnsupportedVersion = 43, "UR_RESULT_ERROR_UNSUPPORTED_VERSION", "unsupported version";
    /// The device or adapter lacks the capability the call needs.
    UnsupportedFeature = 44, "UR_RESULT_ERROR_UNSUPPORTED_FEATURE", "unsupported feature";
    /// An argument the call cannot accept in this combination.
    InvalidArgument = 45, "UR_RESULT_ERROR_INVALID_ARGUMENT", "invalid argument";
    /// A null handle where one is required (C callers).
    InvalidNullHandle = 46, "UR_RESULT_ERROR_INVALID_NULL_HANDLE", "invalid null handle";
    /// A null pointer where one is required (raw-pointer entry points only).
    InvalidNullPointer = 48, "UR_RESULT_ERROR_INVALID_NULL_POINTER", "invalid null pointer";
    /// A size of zero, out of bounds, or not a multiple of what it must be.
    InvalidSize = 49, "UR_RESULT_ERROR_INVALID_SIZE", "invalid size";
    /// An alignment that is not a power of two or that the device cannot give.
    UnsupportedAlignment = 51, "UR_RESULT_ERROR_UNSUPPORTED_ALIGNMENT", "unsupported alignment";
    /// A value outside an enumeration.
    InvalidEnumeration = 53, "UR_RESULT_ERROR_INVALID_ENUMERATION", "invalid enumeration";
    /// A value of an enumeration that this adapter or device does not answer
    /// (an info query with no truthful answer here).
    UnsupportedEnumeration = 54, "UR_RESULT_ERROR_UNSUPPORTED_ENUMERATION", "unsupported enumeration";
    /// A copy whose source and destination overlap.
    OverlappingRegions = 62, "UR_RESULT_ERROR_OVERLAPPING_REGIONS", "overlapping regions";
    /// A host pointer that does not suit the call (a buffer's host memory).
    InvalidHostPtr = 63, "UR_RESULT_ERROR_INVALID_HOST_PTR", "invalid host pointer";
    /// A USM allocation size of zero or beyond the device's limit.
    InvalidUsmSize = 64, "UR_RESULT_ERROR_INVALID_USM_SIZE", "invalid USM size";
    /// A graph whose structure does not allow the call: an edge that would
    /// close a cycle, nodes of another graph, a dynamic command group whose
    /// command groups would change the topology, a whole-graph update from a
    /// graph that is not topologically identical (UR's `urGraph*Exp` code).
    InvalidGraph = 71, "UR_RESULT_ERROR_INVALID_GRAPH", "invalid graph";
    /// An operation a queue capturing into a graph cannot capture (a host
    /// wait, a blocking transfer, `finish`); it invalidates the capture.
    GraphCaptureUnsupported = 72, "UR_RESULT_ERROR_GRAPH_CAPTURE_UNSUPPORTED", "not supported during graph capture";
    /// The capture was invalidated by an earlier failed operation: every
    /// call but its end fails, and the end returns no graph.
    GraphCaptureInvalidated = 73, "UR_RESULT_ERROR_GRAPH_CAPTURE_INVALIDATED", "graph capture invalidated";
    /// A wait on an event captured by another capture that is still active.
    GraphCaptureMergeAttempt = 74, "UR_RESULT_ERROR_GRAPH_CAPTURE_MERGE_ATTEMPT", "graph capture merge attempt";
    /// The end of a capture on a queue that does not capture.
    CommandListNotCapturing = 75, "UR_RESULT_ERROR_COMMAND_LIST_NOT_CAPTURING", "queue not capturing";
    /// The end of a capture whose work forked onto another queue that was
    /// never joined back into the capturing queue.
    GraphUnjoinedForks = 76, "UR_RESULT_ERROR_GRAPH_UNJOINED_FORKS", "graph capture has unjoined forks";
    /// A driver error with no closer code, or a command that failed while
    /// executing (a panicking CPU kernel); the detail names it.
    AdapterSpecific = 66, "UR_RESULT_ERROR_ADAPTER_SPECIFIC", "adapter-specific error";
    /// An event of the wait list failed, so the command cannot run.
    InEventListExecStatus = 68, "UR_RESULT_ERROR_IN_EVENT_LIST_EXEC_STATUS", "failed event in the wait list";
    /// A command buffer of another context or device, or one not usable for the call.
    InvalidCommandBuffer = 0x1000, "UR_RESULT_ERROR_INVALID_COMMAND_BUFFER_EXP", "invalid command buffer";
    /// A sync point that is not usable.
    InvalidSyncPoint = 0x1001, "UR_RESULT_ERROR_INVALID_COMMAND_BUFFER_SYNC_POINT_EXP", "invalid command-buffer sync point";
    /// A sync-point wait list naming a point of another command buffer or one not yet issued.
    InvalidSyncPointWaitList = 0x1002, "UR_RESULT_ERROR_INVALID_COMMAND_BUFFER_SYNC_POINT_WAIT_LIST_EXP", "invalid command-buffer sync-point wait list";
    /// A command handle of another command buffer, or of the wrong command kind.
    InvalidCommandHandle = 0x1003, "UR_RESULT_ERROR_INVALID_COMMAND_BUFFER_COMMAND_HANDLE_EXP", "invalid command-buffer command handle";
    /// Anything else.
    Unknown = 0x7fff_fffe, "UR_RESULT_ERROR_UNKNOWN", "unknown error";
}

/// The message of a caught panic's payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".into()
    }
}

/// Builds an error variant from a format string: `err!(InvalidSize, "size {} is zero", n)`.
#[macro_export]
#[doc(hidden)]
macro_rules! err {
    ($variant:ident, $($fmt:tt)+) => {
        $crate::error::UrError::$variant($crate::error::Detail::msg(format!($($fmt)+)))
    };
}

/// Returns early with an error variant when a condition does not hold.
#[macro_export]
#[doc(hidden)]
macro_rules! ensure {
    ($cond:expr, $variant:ident, $($fmt:tt)+) => {
        if !$cond {
            return Err($crate::err!($variant, $($fmt)+));
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_mirror_ur() {
        let e = err!(InvalidSize, "size {} is zero", 0);
        assert_eq!(e.ur_code(), 49);
        assert_eq!(e.ur_name(), "UR_RESULT_ERROR_INVALID_SIZE");
        assert_eq!(e.to_string(), "invalid size: size 0 is zero");
        let e = UrError::InvalidSyncPointWaitList(Detail::msg("x"));
        assert_eq!(e.ur_code(), 0x1002);
    }

    #[test]
    fn context_keeps_the_variant() {
        let e = err!(InvalidWorkGroupSize, "local size 3").in_context("node 2 of graph #1");
        assert!(matches!(e, UrError::InvalidWorkGroupSize(_)));
        assert_eq!(e.detail().message, "node 2 of graph #1: local size 3");
    }

    #[test]
    fn native_detail_names_the_backend() {
        let e = UrError::OutOfDeviceMemory(Detail::native(Backend::Cuda, 2, "cuMemAlloc"));
        assert_eq!(e.to_string(), "out of device memory: [cuda: native code 2] cuMemAlloc");
    }
}
