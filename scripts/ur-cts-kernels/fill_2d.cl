// device_code/fill_2d.cpp: parallel_for<class fill_2d> over nd_range<2>,
// captures [A_acc (1-D buffer), val]; writes at get_global_linear_id().
kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E7fill_2d(global uint *a, ulong a_offset, uint val) {
    a += a_offset;
    size_t id = (get_global_id(1) - get_global_offset(1)) * get_global_size(0) +
                (get_global_id(0) - get_global_offset(0));
    a[id] = val;
}
