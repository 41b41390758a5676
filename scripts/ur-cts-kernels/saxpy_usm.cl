// device_code/saxpy_usm.cpp: parallel_for<class saxpy> over range<1>,
// implicit captures in order of use: Z, A, X, Y.
kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E5saxpy(global uint *z, uint a, global uint *x, global uint *y) {
    size_t i = get_global_id(0);
    z[i] = a * x[i] + y[i];
}
