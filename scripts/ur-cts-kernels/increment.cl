// device_code/increment.cpp: parallel_for<class IncrementBy1> over range<1>,
// captures inputArray.
kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E12IncrementBy1(global uint *input) {
    input[get_global_id(0)] += 1;
}
