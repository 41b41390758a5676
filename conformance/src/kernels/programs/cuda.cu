// The kernels of opencl.cl as plain CUDA kernels: no hidden launch parameter,
// their signatures read from the PTX (ProgramBundle::from_binary). CUDA has no
// local-memory kernel arguments, so group_sum has no CUDA form.
struct params_t { float scale; int bias; };

extern "C" __global__ void scale_add(float *dst, const float *src, float a, params_t p, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i] * a * p.scale + (float)p.bias;
}

extern "C" __global__ void __launch_bounds__(4) fixed_size(unsigned *dst) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    dst[i] = blockDim.x * 1000u + threadIdx.x;
}
