// Native commands through libsycl (sycl_ext_codeplay_enqueue_native_command):
// the host function does the backend's own work with what the
// interop_handle gives it, ordered between SYCL commands, checked by reading
// back. OpenCL: clEnqueueSVMMemFill (libOpenCL, opened with dlopen) on the
// cl_command_queue of get_native_queue, into USM (SVM on the devices seen);
// CPU: host stores into the device's memory, which is host memory. Other
// backends skip (libsycl has no native queue type for them).
// urt: needs opencl|cpu
#include "st.hpp"
#include <dlfcn.h>
#include <vector>

using cl_fill_fn = int32_t (*)(void *, void *, const void *, size_t, size_t, uint32_t, const void *, void **);

int main() {
  return st::run("sycl native_command", [] {
    sycl::backend backend;
    {
      // Asked before any queue exists: skipping exits, and a live queue
      // would be reported as a leaked context.
      sycl::device dev{sycl::default_selector_v};
      backend = dev.get_backend();
      if (backend != sycl::backend::opencl && backend != sycl::backend::ext_oneapi_native_cpu)
        st::skip("libsycl offers no native queue for this backend");
    }
    sycl::queue q{sycl::property::queue::in_order{}};
    constexpr size_t n = 4096;
    int *a = sycl::malloc_device<int>(n, q);
    ST_CHECK(a != nullptr, "device allocation");
    std::vector<int> host(n);
    cl_fill_fn fill = nullptr;
    if (backend == sycl::backend::opencl) {
      void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
      fill = lib ? reinterpret_cast<cl_fill_fn>(dlsym(lib, "clEnqueueSVMMemFill")) : nullptr;
      ST_CHECK(fill != nullptr, "clEnqueueSVMMemFill from libOpenCL");
    }

    for (int round = 0; round < 3; round++) {
      q.fill(a, 1, n);
      int calls = 0;
      q.submit([&](sycl::handler &h) {
        h.ext_codeplay_enqueue_native_command([&, round](sycl::interop_handle ih) {
          calls++;
          int value = 100 + round;
          if (ih.get_backend() == sycl::backend::opencl) {
            auto queue = ih.get_native_queue<sycl::backend::opencl>();
            int code = fill ? fill(queue, a, &value, sizeof value, n / 2 * sizeof(int), 0, nullptr, nullptr) : -1;
            ST_CHECK(code == 0, "clEnqueueSVMMemFill gave %d", code);
          } else {
            for (size_t i = 0; i < n / 2; i++) a[i] = value;
          }
        });
      });
      q.memcpy(host.data(), a, n * sizeof(int)).wait();
      ST_CHECK(calls == 1, "the native command ran %d times", calls);
      ST_CHECK(host[0] == 100 + round && host[n / 2 - 1] == 100 + round, "round %d: the native fill", round);
      ST_CHECK(host[n / 2] == 1 && host[n - 1] == 1, "round %d: after the SYCL fill, before the copy", round);
    }
    sycl::free(a, q);
  });
}
