// device_code/no_args.cpp: parallel_for<class no_args> over range<3>, no
// captures.
kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E7no_args(void) {}
