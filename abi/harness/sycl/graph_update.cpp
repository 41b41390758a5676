// sycl_ext_oneapi_graph updates: a graph finalized `updatable` is updated
// in whole from a topologically identical graph (libsycl allows kernel,
// host-task, barrier and empty nodes there), and submitted again.
#include "st.hpp"
#include <atomic>

namespace exp = sycl::ext::oneapi::experimental;

int main() {
  return st::run("sycl graph_update", [] {
    sycl::queue q;
    std::atomic<int> first{0}, second{0};
    auto build = [&](std::atomic<int> &counter) {
      exp::command_graph g{q.get_context(), q.get_device()};
      auto e = g.add();
      g.add([&](sycl::handler &h) { h.host_task([&counter] { counter++; }); }, {exp::property::node::depends_on(e)});
      return g;
    };
    auto g1 = build(first);
    auto g2 = build(second);
    auto exec = g1.finalize(exp::property::graph::updatable{});
    q.ext_oneapi_graph(exec).wait();
    ST_CHECK(first == 1 && second == 0, "before the update: %d %d", first.load(), second.load());
    exec.update(g2);
    q.ext_oneapi_graph(exec).wait();
    ST_CHECK(first == 1 && second == 1, "after the update: %d %d", first.load(), second.load());
  });
}
