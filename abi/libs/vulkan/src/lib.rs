//! `libur_adapter_rs_vulkan.so`: the Vulkan adapter (secondary command buffers) as a Unified Runtime 0.12 adapter,
//! for Intel's UR loader and DPC++'s SYCL runtime
//! (`UR_ADAPTERS_FORCE_LOAD=/path/to/libur_adapter_rs_vulkan.so`).
//!
//! It exports exactly the 26 `urGet*ProcAddrTable` getters; everything else
//! is in `cmdbuf-abi`.
#![deny(unsafe_op_in_unsafe_fn)]

static FACTORY: cmdbuf_vulkan::VulkanAdapterFactory = cmdbuf_vulkan::VulkanAdapterFactory;

cmdbuf_abi::export_adapter!(&FACTORY);
