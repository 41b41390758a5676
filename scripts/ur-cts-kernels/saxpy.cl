// device_code/saxpy.cpp: parallel_for<class saxpy> over range<1>, implicit
// captures in order of use: z_acc, A, x_acc, y_acc.
kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E5saxpy(global uint *z, ulong z_offset, uint a, global uint *x,
                       ulong x_offset, global uint *y, ulong y_offset) {
    z += z_offset;
    x += x_offset;
    y += y_offset;
    size_t i = get_global_id(0);
    z[i] = a * x[i] + y[i];
}
