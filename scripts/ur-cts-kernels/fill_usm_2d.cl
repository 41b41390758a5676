// device_code/fill_usm_2d.cpp: parallel_for<class fill_2d> over nd_range<2>,
// captures [data, val]; writes at get_global_linear_id().
kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E7fill_2d(global uint *data, uint val) {
    size_t id = (get_global_id(1) - get_global_offset(1)) * get_global_size(0) +
                (get_global_id(0) - get_global_offset(0));
    data[id] = val;
}
