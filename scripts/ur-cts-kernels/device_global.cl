// device_code/device_global.cpp: a device_global<int> with device_image_scope
// (a plain program-scope int, named _Z7dev_var as DPC++ mangles it) and
// parallel_for<class device_global> over range<1>{1} incrementing it.
global int dev_var __asm__("_Z7dev_var") = 0;

kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E13device_global(void) {
    dev_var = dev_var + 1;
}
