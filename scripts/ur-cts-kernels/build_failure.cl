// device_code/build_failure.cpp: single_task<class Foo> whose body is the
// inline assembly "undefined", which no device accepts (carried in SPIR-V by
// SPV_INTEL_inline_assembly, as DPC++ does).
kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E3Foo(void) {
    __asm__ volatile("undefined\n");
}
