// device_code/spec_constant_multiple.cpp: parallel_for<class SpecConstant>
// over range<1>{1}, captures a write accessor of uint64_t and reads three
// specialization constants: a (id 0, uint32_t), b (id 1, uint64_t), c (id 2,
// bool), all defaulting to zero (see spec_constant.cl for the builtin).
uint __attribute__((overloadable)) __spirv_SpecConstant(int id, uint default_value);
ulong __attribute__((overloadable)) __spirv_SpecConstant(int id, ulong default_value);
bool __attribute__((overloadable)) __spirv_SpecConstant(int id, bool default_value);

kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E12SpecConstant(global ulong *out, ulong out_offset) {
    out += out_offset;
    uint a = __spirv_SpecConstant(0, 0u);
    ulong b = __spirv_SpecConstant(1, 0ul);
    bool c = __spirv_SpecConstant(2, false);
    out[0] = c ? b - a : b + a;
}
