// device_code/standard_types.cpp: parallel_for<class Foo> over range<1>{1},
// implicit captures in order of use: acc, test_bool (one byte), test_u8,
// test_u32, test_u64, test_struct (by value), test_float.
struct Struct {
    uint a;
    uint b;
};

kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E3Foo(global uint *acc, ulong acc_offset, uchar test_bool, uchar test_u8,
                     uint test_u32, ulong test_u64, struct Struct test_struct,
                     float test_float) {
    acc += acc_offset;
    acc[get_global_id(0)] = 100 + (test_bool ? 1 : 0) * test_u8 * test_u32 * test_u64 *
                                      test_struct.a * (uint)test_float;
}
