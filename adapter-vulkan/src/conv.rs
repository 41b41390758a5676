//! Conversions between Vulkan and cmdbuf-core: result codes, device types.

use ash::vk;
use cmdbuf_core::{Backend, Detail, DeviceType, UrError};

/// The closest `UrError` for a failed Vulkan call; the detail keeps the
/// `VkResult` and names the call.
pub(crate) fn vk_error(result: vk::Result, what: &str) -> UrError {
    let detail = Detail::native(Backend::Vulkan, i64::from(result.as_raw()), format!("{what}: {result:?}"));
    match result {
        vk::Result::ERROR_OUT_OF_HOST_MEMORY => UrError::OutOfHostMemory(detail),
        vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_POOL_MEMORY => {
            UrError::OutOfDeviceMemory(detail)
        }
        vk::Result::ERROR_DEVICE_LOST => UrError::DeviceLost(detail),
        vk::Result::ERROR_INITIALIZATION_FAILED | vk::Result::ERROR_INCOMPATIBLE_DRIVER => {
            UrError::Uninitialized(detail)
        }
        vk::Result::ERROR_FEATURE_NOT_PRESENT
        | vk::Result::ERROR_EXTENSION_NOT_PRESENT
        | vk::Result::ERROR_LAYER_NOT_PRESENT
        | vk::Result::ERROR_FORMAT_NOT_SUPPORTED => UrError::UnsupportedFeature(detail),
        vk::Result::ERROR_TOO_MANY_OBJECTS | vk::Result::ERROR_FRAGMENTATION => UrError::OutOfResources(detail),
        vk::Result::ERROR_INVALID_SHADER_NV => UrError::ProgramBuildFailure(detail),
        vk::Result::ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS => UrError::InvalidValue(detail),
        _ => UrError::AdapterSpecific(detail),
    }
}

/// Adds the name of the call to a Vulkan result.
pub(crate) trait VkResultExt<T> {
    /// Maps an error with [`vk_error`].
    fn vk(self, what: &str) -> Result<T, UrError>;
}

impl<T> VkResultExt<T> for Result<T, vk::Result> {
    fn vk(self, what: &str) -> Result<T, UrError> {
        self.map_err(|e| vk_error(e, what))
    }
}

/// The selector class of a physical device.
pub(crate) fn device_type(ty: vk::PhysicalDeviceType) -> DeviceType {
    match ty {
        vk::PhysicalDeviceType::CPU => DeviceType::Cpu,
        vk::PhysicalDeviceType::DISCRETE_GPU
        | vk::PhysicalDeviceType::INTEGRATED_GPU
        | vk::PhysicalDeviceType::VIRTUAL_GPU => DeviceType::Gpu,
        _ => DeviceType::Accelerator,
    }
}

/// A vendor name for a PCI vendor id (or a Khronos vendor id).
pub(crate) fn vendor_name(id: u32) -> String {
    match id {
        0x10DE => "NVIDIA".into(),
        0x1002 | 0x1022 => "AMD".into(),
        0x8086 => "Intel".into(),
        0x13B5 => "ARM".into(),
        0x5143 => "Qualcomm".into(),
        0x1010 => "Imagination".into(),
        0x106B => "Apple".into(),
        0x10005 => "Mesa".into(),
        other => format!("vendor {other:#x}"),
    }
}

/// `major.minor.patch` of a Vulkan version number.
pub(crate) fn version_string(v: u32) -> String {
    format!("{}.{}.{}", vk::api_version_major(v), vk::api_version_minor(v), vk::api_version_patch(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_map_to_the_closest_code() {
        let e = vk_error(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY, "vkAllocateMemory");
        assert!(matches!(e, UrError::OutOfDeviceMemory(_)));
        assert_eq!(e.detail().backend, Some(Backend::Vulkan));
        assert_eq!(e.detail().native_code, Some(-2));
        assert!(e.to_string().contains("vkAllocateMemory"), "{e}");
        assert!(matches!(vk_error(vk::Result::ERROR_DEVICE_LOST, "x"), UrError::DeviceLost(_)));
        assert!(matches!(vk_error(vk::Result::ERROR_OUT_OF_HOST_MEMORY, "x"), UrError::OutOfHostMemory(_)));
        assert!(matches!(vk_error(vk::Result::ERROR_FEATURE_NOT_PRESENT, "x"), UrError::UnsupportedFeature(_)));
        assert!(matches!(vk_error(vk::Result::ERROR_UNKNOWN, "x"), UrError::AdapterSpecific(_)));
        let r: Result<(), vk::Result> = Err(vk::Result::ERROR_TOO_MANY_OBJECTS);
        assert!(matches!(r.vk("vkCreateBuffer"), Err(UrError::OutOfResources(_))));
    }

    #[test]
    fn device_types_and_versions() {
        assert_eq!(device_type(vk::PhysicalDeviceType::CPU), DeviceType::Cpu);
        assert_eq!(device_type(vk::PhysicalDeviceType::DISCRETE_GPU), DeviceType::Gpu);
        assert_eq!(device_type(vk::PhysicalDeviceType::OTHER), DeviceType::Accelerator);
        assert_eq!(version_string(vk::make_api_version(0, 1, 3, 230)), "1.3.230");
        assert_eq!(vendor_name(0x10DE), "NVIDIA");
    }
}
