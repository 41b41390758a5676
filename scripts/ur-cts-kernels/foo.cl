// device_code/foo.cpp: parallel_for<class Foo> over range<1>{1}, empty body.
kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E3Foo(void) {}
