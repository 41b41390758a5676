// The OpenCL C built-ins that PoCL 3.1's CPU devices lack and DPC++'s device
// code calls, linked into SPIR-V modules translated for such a device
// (../spir.rs): sub-groups of one work-item, work-group collectives, and
// atomics on generic pointers and on floating-point values. A module that
// names a function the driver's library lacks does not build, even when
// nothing calls it, so these definitions call only what PoCL 3.1 has.
//
// Compiled with clang's default OpenCL header, so each definition must match
// the header's declaration of the built-in it defines, where there is one.
//
// Sub-groups. With one work-item per sub-group every collective is the work-item's own
// value: a broadcast, shuffle or reduction returns it, an inclusive scan too,
// an exclusive scan the operation's identity, a barrier has nothing to wait
// for. Intel's two-value shuffles take `cur` at distance 0 and the other
// value at distance 1 (the only in-range distances). The sub-group id is the
// work-item's linear id in its work-group, and a work-group has as many
// sub-groups as work-items.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define OV __attribute__((overloadable, always_inline))

uint OV get_sub_group_size(void) { return 1; }
uint OV get_max_sub_group_size(void) { return 1; }
uint OV get_sub_group_local_id(void) { return 0; }
uint OV get_sub_group_id(void) { return (uint)get_local_linear_id(); }
uint OV get_num_sub_groups(void) { return (uint)(get_local_size(0) * get_local_size(1) * get_local_size(2)); }
uint OV get_enqueued_num_sub_groups(void) { return (uint)(get_enqueued_local_size(0) * get_enqueued_local_size(1) * get_enqueued_local_size(2)); }
void OV sub_group_barrier(cl_mem_fence_flags flags) { }
void OV sub_group_barrier(cl_mem_fence_flags flags, memory_scope scope) { }
int OV sub_group_all(int p) { return p != 0; }
int OV sub_group_any(int p) { return p != 0; }
int OV sub_group_elect(void) { return 1; }
int OV sub_group_non_uniform_all(int p) { return p != 0; }
int OV sub_group_non_uniform_any(int p) { return p != 0; }

#define SAME1(T) \
  T OV sub_group_broadcast(T x, uint id) { return x; } \
  T OV sub_group_non_uniform_broadcast(T x, uint id) { return x; } \
  T OV sub_group_broadcast_first(T x) { return x; } \
  T OV sub_group_shuffle(T x, uint id) { return x; } \
  T OV sub_group_shuffle_xor(T x, uint m) { return x; } \
  T OV sub_group_shuffle_up(T x, uint d) { return x; } \
  T OV sub_group_shuffle_down(T x, uint d) { return x; } \
  T OV intel_sub_group_shuffle(T x, uint id) { return x; } \
  T OV intel_sub_group_shuffle_xor(T x, uint m) { return x; } \
  T OV intel_sub_group_shuffle_down(T cur, T next, uint d) { return d == 0 ? cur : next; } \
  T OV intel_sub_group_shuffle_up(T prev, T cur, uint d) { return d == 0 ? cur : prev; }

#define SCALAR(T, ZERO, ONE, MIN_ID, MAX_ID) \
  SAME1(T) SAME1(T##2) SAME1(T##3) SAME1(T##4) SAME1(T##8) SAME1(T##16) \
  int OV sub_group_non_uniform_all_equal(T x) { return 1; } \
  ARITH(T, add, ZERO) ARITH(T, mul, ONE) ARITH(T, min, MIN_ID) ARITH(T, max, MAX_ID)

#define ARITH(T, OP, ID) \
  T OV sub_group_reduce_##OP(T x) { return x; } \
  T OV sub_group_scan_inclusive_##OP(T x) { return x; } \
  T OV sub_group_scan_exclusive_##OP(T x) { return ID; } \
  T OV sub_group_non_uniform_reduce_##OP(T x) { return x; } \
  T OV sub_group_non_uniform_scan_inclusive_##OP(T x) { return x; } \
  T OV sub_group_non_uniform_scan_exclusive_##OP(T x) { return ID; } \
  T OV sub_group_clustered_reduce_##OP(T x, uint c) { return x; }

#define BITS(T) \
  ARITH(T, and, (T)~(T)0) ARITH(T, or, (T)0) ARITH(T, xor, (T)0)

SCALAR(char, 0, 1, CHAR_MAX, CHAR_MIN) BITS(char)
SCALAR(uchar, 0, 1, UCHAR_MAX, 0) BITS(uchar)
SCALAR(short, 0, 1, SHRT_MAX, SHRT_MIN) BITS(short)
SCALAR(ushort, 0, 1, USHRT_MAX, 0) BITS(ushort)
SCALAR(int, 0, 1, INT_MAX, INT_MIN) BITS(int)
SCALAR(uint, 0, 1, UINT_MAX, 0) BITS(uint)
SCALAR(long, 0, 1, LONG_MAX, LONG_MIN) BITS(long)
SCALAR(ulong, 0, 1, ULONG_MAX, 0) BITS(ulong)
SCALAR(half, 0, 1, (half)INFINITY, (half)-INFINITY)
SCALAR(float, 0, 1, INFINITY, -INFINITY)
SCALAR(double, 0, 1, INFINITY, -INFINITY)

ARITH(int, logical_and, 1) ARITH(int, logical_or, 0) ARITH(int, logical_xor, 0)

uint4 OV sub_group_ballot(int p) { return (uint4)(p != 0, 0, 0, 0); }
int OV sub_group_inverse_ballot(uint4 v) { return v.x & 1; }
int OV sub_group_ballot_bit_extract(uint4 v, uint i) { return i == 0 ? (v.x & 1) : 0; }
uint OV sub_group_ballot_bit_count(uint4 v) { return v.x & 1; }
uint OV sub_group_ballot_inclusive_scan(uint4 v) { return v.x & 1; }
uint OV sub_group_ballot_exclusive_scan(uint4 v) { return 0; }
uint OV sub_group_ballot_find_lsb(uint4 v) { return 0; }
uint OV sub_group_ballot_find_msb(uint4 v) { return 0; }
uint4 OV get_sub_group_eq_mask(void) { return (uint4)(1, 0, 0, 0); }
uint4 OV get_sub_group_ge_mask(void) { return (uint4)(1, 0, 0, 0); }
uint4 OV get_sub_group_le_mask(void) { return (uint4)(1, 0, 0, 0); }
uint4 OV get_sub_group_gt_mask(void) { return (uint4)(0, 0, 0, 0); }
uint4 OV get_sub_group_lt_mask(void) { return (uint4)(0, 0, 0, 0); }

// Work-group collectives (OpenCL C 2.0, and the extended types and operations
// of cl_khr_work_group_uniform_arithmetic). Each work-item stores its value in
// a scratch array of local memory with a slot per work-item
// (work_group_scratch.ll, sized for the device's largest work-group), the
// first work-item combines them in order, and all read the result. The
// barrier on entry keeps the previous collective's reads before this one's
// writes. PoCL gives each work-group its own copy of a kernel's local
// variables where the kernel's body names them, so these functions (and the
// array's accessor) are inlined into their callers.
__local ulong *cmdbuf_work_group_scratch(void);

#define SCRATCH(T) ((__local T *)cmdbuf_work_group_scratch())
#define ITEMS() (get_local_size(0) * get_local_size(1) * get_local_size(2))
#define SYNC() work_group_barrier(CLK_LOCAL_MEM_FENCE)

int OV work_group_all(int p) {
    __local int *s = SCRATCH(int);
    SYNC();
    if (get_local_linear_id() == 0) s[0] = 1;
    SYNC();
    if (!p) s[0] = 0;
    SYNC();
    return s[0];
}

int OV work_group_any(int p) {
    __local int *s = SCRATCH(int);
    SYNC();
    if (get_local_linear_id() == 0) s[0] = 0;
    SYNC();
    if (p) s[0] = 1;
    SYNC();
    return s[0];
}

#define WG_BROADCAST(T) \
    T OV cmdbuf_work_group_broadcast_at(T x, size_t at) { \
        __local T *s = SCRATCH(T); \
        SYNC(); \
        if (get_local_linear_id() == at) s[0] = x; \
        SYNC(); \
        return s[0]; \
    } \
    T OV work_group_broadcast(T x, size_t i) { return cmdbuf_work_group_broadcast_at(x, i); } \
    T OV work_group_broadcast(T x, size_t i, size_t j) { \
        return cmdbuf_work_group_broadcast_at(x, i + j * get_local_size(0)); \
    } \
    T OV work_group_broadcast(T x, size_t i, size_t j, size_t k) { \
        return cmdbuf_work_group_broadcast_at(x, i + get_local_size(0) * (j + k * get_local_size(1))); \
    }

// The inclusive scan in place, by the first work-item; what each function
// returns is read from it.
#define WG_COLLECTIVE(T, OP, ID, COMBINE) \
    __local T *OV cmdbuf_work_group_scan_##OP(T x) { \
        __local T *s = SCRATCH(T); \
        size_t n = ITEMS(), lid = get_local_linear_id(); \
        SYNC(); \
        s[lid] = x; \
        SYNC(); \
        if (lid == 0) \
            for (size_t i = 1; i < n; i++) s[i] = COMBINE(s[i - 1], s[i]); \
        SYNC(); \
        return s; \
    } \
    T OV work_group_reduce_##OP(T x) { return cmdbuf_work_group_scan_##OP(x)[ITEMS() - 1]; } \
    T OV work_group_scan_inclusive_##OP(T x) { return cmdbuf_work_group_scan_##OP(x)[get_local_linear_id()]; } \
    T OV work_group_scan_exclusive_##OP(T x) { \
        __local T *s = cmdbuf_work_group_scan_##OP(x); \
        size_t lid = get_local_linear_id(); \
        return lid == 0 ? (T)(ID) : s[lid - 1]; \
    }

#define ADD(a, b) ((a) + (b))
#define MUL(a, b) ((a) * (b))
#define AND(a, b) ((a) & (b))
#define OR(a, b) ((a) | (b))
#define XOR(a, b) ((a) ^ (b))
// Not min and max: PoCL 3.1's library has no half versions.
#define MIN(a, b) ((b) < (a) ? (b) : (a))
#define MAX(a, b) ((a) < (b) ? (b) : (a))
#define LOGICAL_AND(a, b) ((a) && (b))
#define LOGICAL_OR(a, b) ((a) || (b))
#define LOGICAL_XOR(a, b) (!(a) != !(b))

#define WG_NUMBER(T, MIN_ID, MAX_ID) \
    WG_BROADCAST(T) \
    WG_COLLECTIVE(T, add, 0, ADD) \
    WG_COLLECTIVE(T, mul, 1, MUL) \
    WG_COLLECTIVE(T, min, MIN_ID, MIN) \
    WG_COLLECTIVE(T, max, MAX_ID, MAX)
#define WG_INTEGER(T, MIN_ID, MAX_ID) \
    WG_NUMBER(T, MIN_ID, MAX_ID) \
    WG_COLLECTIVE(T, and, ~(T)0, AND) \
    WG_COLLECTIVE(T, or, 0, OR) \
    WG_COLLECTIVE(T, xor, 0, XOR)

WG_INTEGER(char, CHAR_MAX, CHAR_MIN)
WG_INTEGER(uchar, UCHAR_MAX, 0)
WG_INTEGER(short, SHRT_MAX, SHRT_MIN)
WG_INTEGER(ushort, USHRT_MAX, 0)
WG_INTEGER(int, INT_MAX, INT_MIN)
WG_INTEGER(uint, UINT_MAX, 0)
WG_INTEGER(long, LONG_MAX, LONG_MIN)
WG_INTEGER(ulong, ULONG_MAX, 0)
WG_NUMBER(half, (half)INFINITY, (half)-INFINITY)
WG_NUMBER(float, INFINITY, -INFINITY)
WG_NUMBER(double, INFINITY, -INFINITY)
WG_COLLECTIVE(int, logical_and, 1, LOGICAL_AND)
WG_COLLECTIVE(int, logical_or, 0, LOGICAL_OR)
WG_COLLECTIVE(int, logical_xor, 0, LOGICAL_XOR)

// Atomics on generic pointers (OpenCL C 2.0; PoCL 3.1's library has only the
// global and local ones) and floating-point fetch-and-modify
// (cl_ext_float_atomics) in every address space, as DPC++'s atomic_ref reaches
// OpenCL. Each calls the library's global version: on a CPU device the address
// spaces are one memory, so a generic or local pointer is a global one (the
// adapter links these built-ins only for CPU devices). Clang's own atomic
// built-ins are no way out: for SPIR they become calls to a runtime library
// PoCL does not have. Floating-point read-modify-writes loop on a
// compare-exchange, which compares bits.
#define GLOBAL(A, p) ((volatile __global A *)(volatile __generic A *)(p))

// The library's global versions, which clang's header does not declare:
// without these, a call with a global pointer would choose the generic
// definition below and call itself.
#define GLOBAL_ACCESS(A, T) \
    T OV atomic_load_explicit(volatile __global A *p, memory_order o, memory_scope s); \
    T OV atomic_load_explicit(volatile __global A *p, memory_order o); \
    void OV atomic_store_explicit(volatile __global A *p, T v, memory_order o, memory_scope s); \
    void OV atomic_store_explicit(volatile __global A *p, T v, memory_order o); \
    T OV atomic_exchange_explicit(volatile __global A *p, T v, memory_order o, memory_scope s); \
    T OV atomic_exchange_explicit(volatile __global A *p, T v, memory_order o); \
    bool OV atomic_compare_exchange_strong_explicit(volatile __global A *p, __private T *e, T d, memory_order so, \
                                                    memory_order fo, memory_scope s); \
    bool OV atomic_compare_exchange_weak_explicit(volatile __global A *p, __private T *e, T d, memory_order so, \
                                                  memory_order fo, memory_scope s);
#define GLOBAL_RMW(A, T, OP) \
    T OV atomic_fetch_##OP##_explicit(volatile __global A *p, T v, memory_order o, memory_scope s); \
    T OV atomic_fetch_##OP##_explicit(volatile __global A *p, T v, memory_order o);
#define GLOBAL_INTEGER(A, T) \
    GLOBAL_ACCESS(A, T) \
    GLOBAL_RMW(A, T, add) GLOBAL_RMW(A, T, sub) GLOBAL_RMW(A, T, and) GLOBAL_RMW(A, T, or) \
    GLOBAL_RMW(A, T, xor) GLOBAL_RMW(A, T, min) GLOBAL_RMW(A, T, max)

GLOBAL_INTEGER(atomic_int, int)
GLOBAL_INTEGER(atomic_uint, uint)
GLOBAL_INTEGER(atomic_long, long)
GLOBAL_INTEGER(atomic_ulong, ulong)
GLOBAL_ACCESS(atomic_float, float)
GLOBAL_ACCESS(atomic_double, double)

// The expected value goes through a private copy: the library's versions
// take a private pointer.
#define ATOMIC_COMPARE_EXCHANGE(AS, A, T, KIND) \
    bool OV atomic_compare_exchange_##KIND##_explicit(volatile AS A *p, T *e, T d, memory_order so, memory_order fo, \
                                                      memory_scope s) { \
        __private T expected = *e; \
        bool done = atomic_compare_exchange_##KIND##_explicit(GLOBAL(A, p), &expected, d, so, fo, s); \
        *e = expected; \
        return done; \
    } \
    bool OV atomic_compare_exchange_##KIND##_explicit(volatile AS A *p, T *e, T d, memory_order so, memory_order fo) { \
        return atomic_compare_exchange_##KIND##_explicit(p, e, d, so, fo, memory_scope_device); \
    }

#define ATOMIC_ACCESS(AS, A, T) \
    T OV atomic_load_explicit(volatile AS A *p, memory_order o, memory_scope s) { \
        return atomic_load_explicit(GLOBAL(A, p), o, s); \
    } \
    T OV atomic_load_explicit(volatile AS A *p, memory_order o) { return atomic_load_explicit(GLOBAL(A, p), o); } \
    void OV atomic_store_explicit(volatile AS A *p, T v, memory_order o, memory_scope s) { \
        atomic_store_explicit(GLOBAL(A, p), v, o, s); \
    } \
    void OV atomic_store_explicit(volatile AS A *p, T v, memory_order o) { \
        atomic_store_explicit(GLOBAL(A, p), v, o); \
    } \
    T OV atomic_exchange_explicit(volatile AS A *p, T v, memory_order o, memory_scope s) { \
        return atomic_exchange_explicit(GLOBAL(A, p), v, o, s); \
    } \
    T OV atomic_exchange_explicit(volatile AS A *p, T v, memory_order o) { \
        return atomic_exchange_explicit(GLOBAL(A, p), v, o); \
    } \
    ATOMIC_COMPARE_EXCHANGE(AS, A, T, strong) \
    ATOMIC_COMPARE_EXCHANGE(AS, A, T, weak)

#define ATOMIC_RMW(AS, A, T, OP) \
    T OV atomic_fetch_##OP##_explicit(volatile AS A *p, T v, memory_order o, memory_scope s) { \
        return atomic_fetch_##OP##_explicit(GLOBAL(A, p), v, o, s); \
    } \
    T OV atomic_fetch_##OP##_explicit(volatile AS A *p, T v, memory_order o) { \
        return atomic_fetch_##OP##_explicit(GLOBAL(A, p), v, o); \
    }

#define ATOMIC_INTEGER(A, T) \
    ATOMIC_ACCESS(, A, T) \
    ATOMIC_RMW(, A, T, add) ATOMIC_RMW(, A, T, sub) ATOMIC_RMW(, A, T, and) ATOMIC_RMW(, A, T, or) \
    ATOMIC_RMW(, A, T, xor) ATOMIC_RMW(, A, T, min) ATOMIC_RMW(, A, T, max)

ATOMIC_INTEGER(atomic_int, int)
ATOMIC_INTEGER(atomic_uint, uint)
ATOMIC_INTEGER(atomic_long, long)
ATOMIC_INTEGER(atomic_ulong, ulong)
ATOMIC_ACCESS(, atomic_float, float)
ATOMIC_ACCESS(, atomic_double, double)

#define ATOMIC_FLOAT_RMW(AS, A, T, OP, COMBINE) \
    T OV atomic_fetch_##OP##_explicit(volatile AS A *p, T v, memory_order o, memory_scope s) { \
        __private T old = atomic_load_explicit(GLOBAL(A, p), memory_order_relaxed, s); \
        while (!atomic_compare_exchange_weak_explicit(GLOBAL(A, p), &old, COMBINE(old, v), o, memory_order_relaxed, s)) { \
        } \
        return old; \
    } \
    T OV atomic_fetch_##OP##_explicit(volatile AS A *p, T v, memory_order o) { \
        return atomic_fetch_##OP##_explicit(p, v, o, memory_scope_device); \
    }
#define SUB(a, b) ((a) - (b))
#define ATOMIC_FLOAT(AS, A, T) \
    ATOMIC_FLOAT_RMW(AS, A, T, add, ADD) ATOMIC_FLOAT_RMW(AS, A, T, sub, SUB) \
    ATOMIC_FLOAT_RMW(AS, A, T, min, MIN) ATOMIC_FLOAT_RMW(AS, A, T, max, MAX)

ATOMIC_FLOAT(, atomic_float, float)
ATOMIC_FLOAT(__global, atomic_float, float)
ATOMIC_FLOAT(__local, atomic_float, float)
ATOMIC_FLOAT(, atomic_double, double)
ATOMIC_FLOAT(__global, atomic_double, double)
ATOMIC_FLOAT(__local, atomic_double, double)

// Math built-ins with an output pointer, on generic pointers (OpenCL C 2.0;
// the library has the private, global and local ones): the private one into
// a temporary, stored through the generic pointer.
#define OUT_MATH(T) \
    T OV frexp(T x, __private int *e); \
    T OV frexp(T x, int *e) { __private int v; T r = frexp(x, &v); *e = v; return r; } \
    T OV lgamma_r(T x, __private int *s); \
    T OV lgamma_r(T x, int *s) { __private int v; T r = lgamma_r(x, &v); *s = v; return r; } \
    T OV remquo(T x, T y, __private int *q); \
    T OV remquo(T x, T y, int *q) { __private int v; T r = remquo(x, y, &v); *q = v; return r; } \
    T OV modf(T x, __private T *i); \
    T OV modf(T x, T *i) { __private T v; T r = modf(x, &v); *i = v; return r; } \
    T OV fract(T x, __private T *i); \
    T OV fract(T x, T *i) { __private T v; T r = fract(x, &v); *i = v; return r; } \
    T OV sincos(T x, __private T *c); \
    T OV sincos(T x, T *c) { __private T v; T r = sincos(x, &v); *c = v; return r; }

OUT_MATH(float)
OUT_MATH(double)
