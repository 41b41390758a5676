// sycl_ext_oneapi_graph, explicit API: a diamond of fills and copies,
// finalized once and submitted 1000 times, data checked; print_graph.
#include "st.hpp"
#include <fstream>
#include <unistd.h>
#include <vector>

namespace exp = sycl::ext::oneapi::experimental;

int main() {
  return st::run("sycl graph_explicit", [] {
    sycl::queue q;
    constexpr size_t n = 4096;
    int *a = sycl::malloc_device<int>(n, q), *b = sycl::malloc_device<int>(n, q), *c = sycl::malloc_device<int>(n, q);
    int *count = sycl::malloc_device<int>(1, q);
    q.fill(count, 0, 1).wait();

    exp::command_graph g{q.get_context(), q.get_device()};
    // a <- 1 ; b <- 2 (half) after a ; c <- a ; c[0..n/2] <- b : a diamond.
    auto top = g.add([&](sycl::handler &h) { h.fill(a, 1, n); });
    auto left = g.add([&](sycl::handler &h) { h.fill(b, 2, n / 2); }, {exp::property::node::depends_on(top)});
    auto right = g.add([&](sycl::handler &h) { h.memcpy(c, a, n * sizeof(int)); }, {exp::property::node::depends_on(top)});
    g.add([&](sycl::handler &h) { h.memcpy(c, b, n / 2 * sizeof(int)); }, {exp::property::node::depends_on(left, right)});
    const char *tmp = std::getenv("TMPDIR");
    std::string path = std::string(tmp ? tmp : "/tmp") + "/ur-rs-graph_explicit-" + std::to_string(getpid()) + ".dot";
    g.print_graph(path);
    std::ifstream dot(path);
    std::string first;
    std::getline(dot, first);
    ST_CHECK(first.find("digraph") != std::string::npos, "print_graph wrote a DOT file: %s", first.c_str());
    std::remove(path.c_str());

    auto exec = g.finalize();
    for (int i = 0; i < 1000; i++) q.ext_oneapi_graph(exec);
    q.wait();
    std::vector<int> h(n);
    q.memcpy(h.data(), c, n * sizeof(int)).wait();
    bool ok = true;
    for (size_t i = 0; i < n; i++) ok &= h[i] == (i < n / 2 ? 2 : 1);
    ST_CHECK(ok, "the diamond's result after 1000 submissions");

    // An empty node and a barrier-like join.
    exp::command_graph g2{q.get_context(), q.get_device()};
    auto e = g2.add();
    g2.add([&](sycl::handler &h) { h.fill(a, 9, n); }, {exp::property::node::depends_on(e)});
    auto exec2 = g2.finalize();
    q.ext_oneapi_graph(exec2).wait();
    q.memcpy(h.data(), a, sizeof(int)).wait();
    ST_CHECK(h[0] == 9, "a graph with an empty node");

    sycl::free(a, q);
    sycl::free(b, q);
    sycl::free(c, q);
    sycl::free(count, q);
  });
}
