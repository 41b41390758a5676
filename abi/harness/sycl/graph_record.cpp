// sycl_ext_oneapi_graph, record & replay: two queues recording into one
// graph, a sub-graph, host tasks inside the graph, an in-order queue.
#include "st.hpp"
#include <atomic>
#include <vector>

namespace exp = sycl::ext::oneapi::experimental;

int main() {
  return st::run("sycl graph_record", [] {
    sycl::queue q1;
    sycl::queue q2{q1.get_context(), q1.get_device()};
    constexpr size_t n = 2048;
    int *a = sycl::malloc_device<int>(n, q1), *b = sycl::malloc_device<int>(n, q1);
    std::vector<int> h(n);

    // A sub-graph: b <- a.
    exp::command_graph sub{q1.get_context(), q1.get_device()};
    sub.begin_recording(q1);
    q1.memcpy(b, a, n * sizeof(int));
    sub.end_recording(q1);
    auto sub_exec = sub.finalize();

    std::atomic<int> host_runs{0};
    exp::command_graph g{q1.get_context(), q1.get_device()};
    g.begin_recording({q1, q2});
    auto e1 = q1.fill(a, 5, n);
    auto e2 = q2.submit([&](sycl::handler &h) {
      h.depends_on(e1);
      h.host_task([&] { host_runs++; });
    });
    auto e3 = q1.submit([&](sycl::handler &h) {
      h.depends_on(e2);
      h.ext_oneapi_graph(sub_exec);
    });
    q2.submit([&](sycl::handler &h) {
      h.depends_on(e3);
      h.fill(a + n / 2, 6, n / 2);
    });
    g.end_recording();
    auto exec = g.finalize();
    for (int i = 0; i < 10; i++) q1.ext_oneapi_graph(exec);
    q1.wait();
    q2.wait();
    ST_CHECK(host_runs == 10, "the host task ran %d times", host_runs.load());
    q1.memcpy(h.data(), b, n * sizeof(int)).wait();
    ST_CHECK(h[0] == 5 && h[n - 1] == 5, "the sub-graph copied before the second fill");
    q1.memcpy(h.data(), a, n * sizeof(int)).wait();
    ST_CHECK(h[0] == 5 && h[n - 1] == 6, "the fill after the sub-graph");

    // An in-order queue recorded: a chain without explicit dependencies.
    sycl::queue io{q1.get_context(), q1.get_device(), sycl::property::queue::in_order{}};
    exp::command_graph g2{io.get_context(), io.get_device()};
    g2.begin_recording(io);
    io.memset(a, 0, n * sizeof(int));
    io.fill(a, 8, 16);
    io.submit([&](sycl::handler &h) { h.host_task([&] { host_runs++; }); });
    io.memcpy(b, a, n * sizeof(int));
    g2.end_recording(io);
    auto exec2 = g2.finalize();
    io.ext_oneapi_graph(exec2).wait();
    io.memcpy(h.data(), b, n * sizeof(int)).wait();
    ST_CHECK(h[0] == 8 && h[15] == 8 && h[16] == 0, "the in-order recording");
    sycl::free(a, q1);
    sycl::free(b, q1);
  });
}
