// device_code/spec_constant.cpp: parallel_for<class SpecConstant> over
// range<1>{1}, captures a write accessor and reads the specialization
// constant spec_const (id 0, uint32_t, default 1000). DPC++ reads it through
// __spirv_SpecConstant, which llvm-spirv turns into OpSpecConstant with that
// SpecId; the same call is made here.
uint __attribute__((overloadable)) __spirv_SpecConstant(int id, uint default_value);

kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E12SpecConstant(global uint *out, ulong out_offset) {
    out += out_offset;
    out[0] = __spirv_SpecConstant(0, 1000u);
}
