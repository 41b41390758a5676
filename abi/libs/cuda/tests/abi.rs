//! The C and SYCL test programs of `cmdbuf-abi-harness`, run through Intel's UR
//! loader and libsycl on `libur_adapter_rs_cuda.so` (see that crate's docs).

fn main() {
    cmdbuf_abi_harness::main("cuda", "libur_adapter_rs_cuda.so");
}
