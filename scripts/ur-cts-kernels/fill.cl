// device_code/fill.cpp: parallel_for<class fill> over range<1>, captures
// [A_acc, val]: the accessor's pointer and offset, then the value.
kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E4fill(global uint *a, ulong a_offset, uint val) {
    a += a_offset;
    a[get_global_id(0)] = val;
}
