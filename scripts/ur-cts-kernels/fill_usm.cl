// device_code/fill_usm.cpp: parallel_for<class fill_usm> over range<1>,
// captures [data, val].
kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E8fill_usm(global uint *data, uint val) {
    data[get_global_id(0)] = val;
}
