// device_code/cpy_and_mult.cpp: parallel_for<class cpy_and_mult> over
// range<1>, captures [src_acc, dst_acc].
kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E12cpy_and_mult(global uint *src, ulong src_offset, global uint *dst,
                               ulong dst_offset) {
    src += src_offset;
    dst += dst_offset;
    size_t id = get_global_id(0);
    dst[id] = src[id] * 2;
}
