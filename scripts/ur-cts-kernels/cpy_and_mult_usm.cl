// device_code/cpy_and_mult_usm.cpp: parallel_for<class cpy_and_mult_usm>
// over range<1>, captures [src, dst].
kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E16cpy_and_mult_usm(global uint *src, global uint *dst) {
    size_t id = get_global_id(0);
    dst[id] = src[id] * 2;
}
