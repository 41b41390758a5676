// device_code/linker_error.cpp: parallel_for<class Foo> calling a
// SYCL_EXTERNAL function that no module defines, so that compiling succeeds
// and linking fails.
void __attribute__((overloadable)) this_function_does_not_exist(void);

kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E3Foo(void) {
    this_function_does_not_exist();
}
