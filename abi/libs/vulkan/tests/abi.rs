//! The C and SYCL test programs of `cmdbuf-abi-harness`, run through Intel's UR
//! loader and libsycl on `libur_adapter_rs_vulkan.so` (see that crate's docs).

fn main() {
    cmdbuf_abi_harness::main("vulkan", "libur_adapter_rs_vulkan.so");
}
