typedef struct { float scale; int bias; } params_t;

kernel void scale_add(global float *out, global const float *in, float a, params_t p, ulong n) {
    size_t i = get_global_id(0);
    if (i < n) out[i] = in[i] * a * p.scale + (float)p.bias;
}

kernel void group_sum(global uint *out, global const uint *in, local uint *scratch) {
    size_t l = get_local_id(0), n = get_local_size(0);
    scratch[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0) {
        uint s = 0;
        for (size_t k = 0; k < n; k++) s += scratch[k];
        out[get_group_id(0)] = s;
    }
}

kernel __attribute__((reqd_work_group_size(4, 1, 1))) void fixed_size(global uint *out) {
    out[get_global_id(0)] = (uint)get_local_size(0) * 1000u + (uint)get_local_id(0);
}
