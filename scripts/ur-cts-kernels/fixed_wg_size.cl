// device_code/fixed_wg_size.cpp: parallel_for<class FixedWgSize> of a functor
// with the property work_group_size<8, 4, 2> (reversed into OpenCL's order).
kernel __attribute__((reqd_work_group_size(2, 4, 8))) void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E11FixedWgSize(void) {}
