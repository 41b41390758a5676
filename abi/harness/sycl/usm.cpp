// Eager USM work through libsycl: malloc of each kind the device offers,
// memset / fill / memcpy, prefetch and mem_advise, in-order and out-of-order
// queues, events and host tasks.
#include "st.hpp"
#include <atomic>
#include <vector>

int main() {
  return st::run("sycl usm", [] {
    sycl::queue in_order{sycl::property::queue::in_order{}};
    sycl::queue ooo{in_order.get_context(), in_order.get_device()};
    auto d = in_order.get_device();
    constexpr size_t n = 1 << 16;
    int *a = sycl::malloc_device<int>(n, in_order);
    int *b = sycl::malloc_device<int>(n, in_order);
    ST_CHECK(a && b, "device allocations");
    std::vector<int> host(n);

    in_order.memset(a, 0, n * sizeof(int));
    in_order.fill(a, 42, n / 2);
    in_order.memcpy(b, a, n * sizeof(int));
    in_order.memcpy(host.data(), b, n * sizeof(int)).wait();
    ST_CHECK(host[0] == 42 && host[n / 2 - 1] == 42 && host[n / 2] == 0 && host[n - 1] == 0, "in-order chain");

    // Out of order: dependencies only through events.
    auto e1 = ooo.fill(a, 7, n);
    auto e2 = ooo.memcpy(b, a, n * sizeof(int), e1);
    std::atomic<int> ran{0};
    auto e3 = ooo.submit([&](sycl::handler &h) {
      h.depends_on(e2);
      h.host_task([&] { ran = 1; });
    });
    auto e4 = ooo.memcpy(host.data(), b, n * sizeof(int), e3);
    e4.wait();
    ST_CHECK(ran == 1, "the host task ran");
    ST_CHECK(host[0] == 7 && host[n - 1] == 7, "out-of-order chain through events");
    ST_CHECK(e4.get_info<sycl::info::event::command_execution_status>() ==
                 sycl::info::event_command_status::complete,
             "event status");

    ooo.prefetch(a, n * sizeof(int)).wait();
    ooo.mem_advise(a, n * sizeof(int), 0).wait();

    if (d.has(sycl::aspect::usm_shared_allocations)) {
      int *s = sycl::malloc_shared<int>(n, in_order);
      in_order.fill(s, 3, n).wait();
      ST_CHECK(s[0] == 3 && s[n - 1] == 3, "shared memory seen by the host");
      sycl::free(s, in_order);
    }
    if (d.has(sycl::aspect::usm_host_allocations)) {
      int *h = sycl::malloc_host<int>(n, in_order);
      in_order.memcpy(h, a, n * sizeof(int)).wait();
      ST_CHECK(h[0] == 7 && h[n - 1] == 7, "host memory");
      sycl::free(h, in_order);
    }
    // Many small commands, then one wait.
    for (int i = 0; i < 1000; i++) in_order.fill(a + (i % n), i, 1);
    in_order.wait();
    sycl::free(a, in_order);
    sycl::free(b, in_order);
  });
}
