// device_code/multiply.cpp: parallel_for<class MultiplyBy2> over range<1>,
// captures inputArray.
kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E11MultiplyBy2(global uint *input) {
    input[get_global_id(0)] *= 2;
}
