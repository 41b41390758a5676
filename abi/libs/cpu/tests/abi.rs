//! The C and SYCL test programs of `cmdbuf-abi-harness`, run through Intel's UR
//! loader and libsycl on `libur_adapter_rs_cpu.so` (see that crate's docs).

fn main() {
    cmdbuf_abi_harness::main("cpu", "libur_adapter_rs_cpu.so");
}
