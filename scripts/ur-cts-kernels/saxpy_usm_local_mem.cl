// device_code/saxpy_usm_local_mem.cpp: parallel_for<class saxpy_usm_local_mem>
// over nd_range<1>, implicit captures in order of use: local_mem_A,
// local_mem_B (local accessors: their local pointers), Z, A, X, Y.
kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E19saxpy_usm_local_mem(local uint *local_a, local uint *local_b,
                                     global uint *z, uint a, global uint *x,
                                     global uint *y) {
    size_t i = get_global_id(0) - get_global_offset(0);
    size_t l = get_local_id(0);
    local_a[l] = i;
    local_b[l * 2] = -i;
    local_b[l * 2 + 1] = get_local_size(0);
    z[i] = a * x[i] + y[i] + local_a[l] + local_b[l * 2] + local_b[l * 2 + 1];
}
