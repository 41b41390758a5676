//! Conversions between CUDA and cmdbuf-core: driver result codes to the
//! closest [`UrError`] variants (`driver.rs` names the code and the call in
//! the error's detail).

use cmdbuf_core::Detail;
use cmdbuf_core::adapter::prelude::*;

/// The `UrError` variant closest to a `CUresult` code.
pub(crate) fn variant_for(code: u32) -> fn(Detail) -> UrError {
    match code {
        // CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_HANDLE
        1 | 400 => UrError::InvalidValue,
        // CUDA_ERROR_OUT_OF_MEMORY
        2 => UrError::OutOfDeviceMemory,
        // CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_DEINITIALIZED, CUDA_ERROR_STUB_LIBRARY
        3 | 4 | 34 => UrError::Uninitialized,
        // CUDA_ERROR_NO_DEVICE, CUDA_ERROR_INVALID_DEVICE
        100 | 101 => UrError::InvalidDevice,
        // CUDA_ERROR_INVALID_IMAGE, CUDA_ERROR_NO_BINARY_FOR_GPU, CUDA_ERROR_INVALID_PTX,
        // CUDA_ERROR_UNSUPPORTED_PTX_VERSION, CUDA_ERROR_JIT_COMPILER_NOT_FOUND
        200 | 209 | 218 | 222 | 221 => UrError::InvalidBinary,
        // CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_CONTEXT_IS_DESTROYED
        201 | 709 => UrError::InvalidContext,
        // CUDA_ERROR_NOT_FOUND
        500 => UrError::InvalidKernelName,
        // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, CUDA_ERROR_TOO_MANY_PEERS
        701 | 711 => UrError::OutOfResources,
        // CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED / NOT_REGISTERED
        712 | 713 => UrError::InvalidValue,
        // CUDA_ERROR_NOT_PERMITTED, CUDA_ERROR_ILLEGAL_STATE
        800 | 401 => UrError::InvalidOperation,
        // CUDA_ERROR_NOT_SUPPORTED
        801 => UrError::UnsupportedFeature,
        // CUDA_ERROR_ECC_UNCORRECTABLE, CUDA_ERROR_DEVICE_UNAVAILABLE, CUDA_ERROR_DEVICE_NOT_LICENSED
        214 | 46 | 102 => UrError::DeviceLost,
        // Everything else, kernel faults included (CUDA_ERROR_ILLEGAL_ADDRESS,
        // CUDA_ERROR_LAUNCH_FAILED, ...): the detail names the code.
        _ => UrError::AdapterSpecific,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_the_closest_variant() {
        type IsExpected = fn(&UrError) -> bool;
        let cases: [(u32, IsExpected); 8] = [
            (1, |e| matches!(e, UrError::InvalidValue(_))),
            (2, |e| matches!(e, UrError::OutOfDeviceMemory(_))),
            (3, |e| matches!(e, UrError::Uninitialized(_))),
            (218, |e| matches!(e, UrError::InvalidBinary(_))),
            (500, |e| matches!(e, UrError::InvalidKernelName(_))),
            (701, |e| matches!(e, UrError::OutOfResources(_))),
            (801, |e| matches!(e, UrError::UnsupportedFeature(_))),
            (700, |e| matches!(e, UrError::AdapterSpecific(_))),
        ];
        for (code, is_expected) in cases {
            let e = variant_for(code)(Detail::native(Backend::Cuda, i64::from(code), "x"));
            assert!(is_expected(&e), "code {code} gave {e:?}");
            assert_eq!(e.detail().native_code, Some(i64::from(code)));
            assert_eq!(e.detail().backend, Some(Backend::Cuda));
        }
    }
}
