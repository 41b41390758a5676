//! Conversions between OpenCL and cmdbuf-core: error codes to [`UrError`]
//! variants, ND-ranges to OpenCL's size arrays.

use cl3::error_codes::{ClError, error_text};
use cl3::types::cl_int;
use cmdbuf_core::{Backend, Detail, UrError};

/// `CL_INVALID_COMMAND_BUFFER_KHR`.
pub(crate) const CL_INVALID_COMMAND_BUFFER_KHR: cl_int = -1138;
/// `CL_INVALID_SYNC_POINT_WAIT_LIST_KHR`.
pub(crate) const CL_INVALID_SYNC_POINT_WAIT_LIST_KHR: cl_int = -1139;
/// `CL_INCOMPATIBLE_COMMAND_QUEUE_KHR`.
pub(crate) const CL_INCOMPATIBLE_COMMAND_QUEUE_KHR: cl_int = -1140;

/// The `UrError` closest to an OpenCL error code, naming the call that failed.
pub fn cl_error(code: cl_int, what: &str) -> UrError {
    let name = match code {
        CL_INVALID_COMMAND_BUFFER_KHR => "CL_INVALID_COMMAND_BUFFER_KHR",
        CL_INVALID_SYNC_POINT_WAIT_LIST_KHR => "CL_INVALID_SYNC_POINT_WAIT_LIST_KHR",
        CL_INCOMPATIBLE_COMMAND_QUEUE_KHR => "CL_INCOMPATIBLE_COMMAND_QUEUE_KHR",
        _ => error_text(code),
    };
    let detail = Detail::native(Backend::OpenCl, i64::from(code), format!("{what}: {name}"));
    match code {
        -1 | -2 => UrError::InvalidDevice(detail),
        -4 => UrError::OutOfDeviceMemory(detail),
        -5 => UrError::OutOfResources(detail),
        -6 => UrError::OutOfHostMemory(detail),
        -7 => UrError::ProfilingInfoNotAvailable(detail),
        -18 => UrError::DevicePartitionFailed(detail),
        -19 => UrError::InvalidDevicePartitionCount(detail),
        -3 | -11 | -15 | -17 | -43 | -47 => UrError::ProgramBuildFailure(detail),
        -30 | -50 | -63 | -64 => UrError::InvalidValue(detail),
        -33 => UrError::InvalidDevice(detail),
        -34 => UrError::InvalidContext(detail),
        -35 => UrError::InvalidQueueProperties(detail),
        -36 | CL_INCOMPATIBLE_COMMAND_QUEUE_KHR => UrError::InvalidQueue(detail),
        -38 => UrError::InvalidMemObject(detail),
        -42 | -44 | -45 => UrError::InvalidBinary(detail),
        -46 => UrError::InvalidKernelName(detail),
        -48 => UrError::InvalidKernel(detail),
        -49 | -52 => UrError::InvalidKernelArgumentIndex(detail),
        -51 => UrError::InvalidKernelArgumentSize(detail),
        -53 => UrError::InvalidWorkDimension(detail),
        -54 | -55 => UrError::InvalidWorkGroupSize(detail),
        -57 => UrError::InvalidEventWaitList(detail),
        -58 => UrError::InvalidEvent(detail),
        -59 => UrError::InvalidOperation(detail),
        -61 => UrError::InvalidBufferSize(detail),
        CL_INVALID_COMMAND_BUFFER_KHR => UrError::InvalidCommandBuffer(detail),
        CL_INVALID_SYNC_POINT_WAIT_LIST_KHR => UrError::InvalidSyncPointWaitList(detail),
        // The library or one of its functions could not be loaded (cl3's codes).
        -2000 | -2001 => UrError::Uninitialized(detail),
        _ => UrError::AdapterSpecific(detail),
    }
}

/// Attaches what failed to an OpenCL error code.
pub(crate) trait ClResultExt<T> {
    /// Maps the error with [`cl_error`].
    fn cl(self, what: &str) -> cmdbuf_core::Result<T>;
}

impl<T> ClResultExt<T> for Result<T, cl_int> {
    fn cl(self, what: &str) -> cmdbuf_core::Result<T> {
        self.map_err(|code| cl_error(code, what))
    }
}

impl<T> ClResultExt<T> for Result<T, ClError> {
    fn cl(self, what: &str) -> cmdbuf_core::Result<T> {
        self.map_err(|e| cl_error(e.0, what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_the_closest_variant() {
        assert!(matches!(cl_error(-4, "clCreateBuffer"), UrError::OutOfDeviceMemory(_)));
        assert!(matches!(cl_error(-46, "clCreateKernel"), UrError::InvalidKernelName(_)));
        assert!(matches!(cl_error(-11, "clBuildProgram"), UrError::ProgramBuildFailure(_)));
        assert!(matches!(cl_error(-54, "clEnqueueNDRangeKernel"), UrError::InvalidWorkGroupSize(_)));
        assert!(matches!(cl_error(-1139, "clCommandCopyBufferKHR"), UrError::InvalidSyncPointWaitList(_)));
        assert!(matches!(cl_error(-1138, "clEnqueueCommandBufferKHR"), UrError::InvalidCommandBuffer(_)));
        assert!(matches!(cl_error(-2000, "clGetPlatformIDs"), UrError::Uninitialized(_)));
        assert!(matches!(cl_error(-9999, "clFoo"), UrError::AdapterSpecific(_)));
    }

    #[test]
    fn detail_names_backend_code_and_call() {
        let e = cl_error(-5, "clEnqueueNDRangeKernel");
        let d = e.detail();
        assert_eq!(d.backend, Some(Backend::OpenCl));
        assert_eq!(d.native_code, Some(-5));
        assert_eq!(
            e.to_string(),
            "out of resources: [opencl: native code -5] clEnqueueNDRangeKernel: CL_OUT_OF_RESOURCES"
        );
        let r: Result<(), cl_int> = Err(-1140);
        assert!(matches!(r.cl("clEnqueueCommandBufferKHR"), Err(UrError::InvalidQueue(_))));
    }
}
