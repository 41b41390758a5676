// device_code/fixed_sg_size.cpp: parallel_for<class FixedSgSize> of a functor
// with the property sub_group_size<8>.
kernel __attribute__((intel_reqd_sub_group_size(8))) void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E11FixedSgSize(void) {}
