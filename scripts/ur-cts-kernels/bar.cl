// device_code/bar.cpp: parallel_for<class Bar> over range<1>{1}, empty body.
kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E3Bar(void) {}
