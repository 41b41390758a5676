// device_code/indexers_usm.cpp: parallel_for<class indexers> over
// nd_range<3>{8x8x8, 2x2x2, offset 4,4,4}, captures [ptr]; each item writes
// its SYCL global and local ids (SYCL dimension d is OpenCL's 2 - d) at its
// global linear id (without the offset) times 6.
kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E8indexers(global int *ptr) {
    size_t linear = ((get_global_id(2) - get_global_offset(2)) * get_global_size(1) +
                     (get_global_id(1) - get_global_offset(1))) * get_global_size(0) +
                    (get_global_id(0) - get_global_offset(0));
    global int *wi = ptr + linear * 6;
    wi[0] = get_global_id(2);
    wi[1] = get_global_id(1);
    wi[2] = get_global_id(0);
    wi[3] = get_local_id(2);
    wi[4] = get_local_id(1);
    wi[5] = get_local_id(0);
}
