// The C kernel test's kernel in OpenCL C, compiled to the SPIR-V the OpenCL
// adapter takes as IL (regenerate.sh): p[i] = p[i] * a + b.
kernel void axpb(global uint *p, uint a, uint b) {
    size_t i = get_global_id(0);
    p[i] = p[i] * a + b;
}
