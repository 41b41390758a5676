// device_code/subgroup.cpp: parallel_for<class FixedSgSize> over nd_range<1>
// of a functor with the property sub_group_size<8> capturing a size_t
// accessor; item 0 writes its sub-group's size.
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
kernel __attribute__((intel_reqd_sub_group_size(8))) void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E11FixedSgSize(
    global ulong *acc, ulong acc_offset) {
    acc += acc_offset;
    if (get_global_id(0) - get_global_offset(0) == 0) {
        acc[0] = get_sub_group_size();
    }
}
