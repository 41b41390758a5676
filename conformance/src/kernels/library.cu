/* The conformance kernel library in CUDA C. Semantics: kernels/mod.rs;
   kernel ABI: docs/cuda.md. After editing, regenerate library.ptx with
   gen-ptx.sh. */
struct ur_launch {
    unsigned long long offset[3];
    unsigned int *status;
};

extern __shared__ __align__(16) unsigned char ur_local_memory[];

__device__ __forceinline__ void *ur_local(unsigned long long arg) {
    return ur_local_memory + (unsigned)(arg & 0xffffffffull);
}

__device__ __forceinline__ unsigned long long ur_local_size(unsigned long long arg) {
    return arg >> 32;
}

__device__ __forceinline__ unsigned long long ur_item(unsigned block, unsigned size, unsigned thread) {
    return (unsigned long long)block * size + thread;
}

/* Global id in dimension d, offset included. */
__device__ __forceinline__ unsigned long long ur_gid(const ur_launch &l, int d) {
    if (d == 0) return ur_item(blockIdx.x, blockDim.x, threadIdx.x) + l.offset[0];
    if (d == 1) return ur_item(blockIdx.y, blockDim.y, threadIdx.y) + l.offset[1];
    return ur_item(blockIdx.z, blockDim.z, threadIdx.z) + l.offset[2];
}

/* Linear global id without offset, dimension 0 fastest. */
__device__ __forceinline__ unsigned long long ur_linear() {
    unsigned long long x = ur_item(blockIdx.x, blockDim.x, threadIdx.x);
    unsigned long long y = ur_item(blockIdx.y, blockDim.y, threadIdx.y);
    unsigned long long z = ur_item(blockIdx.z, blockDim.z, threadIdx.z);
    unsigned long long gx = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long gy = (unsigned long long)gridDim.y * blockDim.y;
    return x + gx * (y + gy * z);
}

/* Reports that the launch cannot run correctly. */
__device__ void ur_fail(const ur_launch &l, unsigned code) {
    if (l.status) {
        *l.status = code;
        __threadfence_system();
    }
}

extern "C" __global__ void saxpy(unsigned *z, unsigned a, const unsigned *x, const unsigned *y, ur_launch l) {
    unsigned long long i = ur_gid(l, 0);
    z[i] = a * x[i] + y[i];
}

extern "C" __global__ void fill(unsigned *p, unsigned v, ur_launch l) {
    p[ur_gid(l, 0)] = v;
}

extern "C" __global__ void fill_2d(unsigned *p, unsigned v, ur_launch l) {
    p[ur_linear()] = v;
}

extern "C" __global__ void increment(unsigned *p, ur_launch l) {
    p[ur_gid(l, 0)] += 1u;
}

extern "C" __global__ void cpy_and_mult(unsigned *dst, const unsigned *src, ur_launch l) {
    unsigned long long i = ur_gid(l, 0);
    dst[i] = src[i] * 2u;
}

extern "C" __global__ void indexers(unsigned *p, ur_launch l) {
    unsigned *out = p + ur_linear() * 6;
    out[0] = (unsigned)ur_gid(l, 0);
    out[1] = (unsigned)ur_gid(l, 1);
    out[2] = (unsigned)ur_gid(l, 2);
    out[3] = threadIdx.x;
    out[4] = threadIdx.y;
    out[5] = threadIdx.z;
}

extern "C" __global__ void saxpy_local(unsigned long long la_arg, unsigned long long lb_arg, unsigned *z, unsigned a,
                                       const unsigned *x, const unsigned *y, ur_launch l) {
    unsigned *la = (unsigned *)ur_local(la_arg);
    unsigned *lb = (unsigned *)ur_local(lb_arg);
    unsigned range = blockDim.x;
    /* The largest local id decides, so the whole group runs or none of it does
       (no item may skip the barrier below). */
    if ((unsigned long long)range * 4 > ur_local_size(la_arg) ||
        (unsigned long long)range * 8 > ur_local_size(lb_arg)) {
        if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) ur_fail(l, 1);
        return;
    }
    unsigned long long i = ur_gid(l, 0);
    unsigned lid = threadIdx.x;
    la[lid] = (unsigned)i;
    lb[2 * lid] = 0u - (unsigned)i;
    lb[2 * lid + 1] = range;
    __syncthreads();
    z[i] = a * x[i] + y[i] + la[lid] + lb[2 * lid] + lb[2 * lid + 1];
}

extern "C" __global__ void axpb(unsigned *p, unsigned a, unsigned b, ur_launch l) {
    unsigned long long i = ur_gid(l, 0);
    p[i] = p[i] * a + b;
}

extern "C" __global__ void copy_add(unsigned *dst, const unsigned *src, unsigned k, ur_launch l) {
    unsigned long long i = ur_gid(l, 0);
    dst[i] = src[i] + k;
}

extern "C" __global__ void empty(ur_launch l) {
    (void)l;
}
