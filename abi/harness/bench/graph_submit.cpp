// Host time per command-graph submission through libsycl, for comparing
// adapters on one device: a chain of `nodes` memory commands (USM fills and
// copies, or buffer fills and copies through accessors) finalized once and
// submitted `submissions` times.
//
//   graph_submit usm|buffer NODES SUBMISSIONS
//
// Prints one line: `ok <shape> <nodes> <submissions> <host us/submit>
// <total us/submit> <eager us/chain>`, or `error <what>` when the adapter
// cannot run it. Host time is the submit calls alone; total includes the
// final wait; eager is the same chain submitted as plain queue commands.
#include <sycl/sycl.hpp>
#include <sycl/ext/oneapi/experimental/graph.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace exp = sycl::ext::oneapi::experimental;
using clock_type = std::chrono::steady_clock;

static double us_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - t).count();
}

int main(int argc, char **argv) {
  if (argc != 4) {
    std::printf("error usage: graph_submit usm|buffer NODES SUBMISSIONS\n");
    return 2;
  }
  std::string shape = argv[1];
  int nodes = std::atoi(argv[2]), submissions = std::atoi(argv[3]);
  constexpr size_t n = 256;
  try {
    sycl::queue q{sycl::property::queue::in_order{}};
    auto chain = [&](auto &&fill, auto &&copy) {
      for (int i = 0; i < nodes; i++) (i % 2 == 0) ? fill(i) : copy();
    };
    double host = 0, total = 0, eager = 0;
    if (shape == "usm") {
      int *a = sycl::malloc_device<int>(n, q), *b = sycl::malloc_device<int>(n, q);
      auto fill = [&](int i) { q.fill(a, i, n); };
      auto copy = [&] { q.memcpy(b, a, n * sizeof(int)); };
      exp::command_graph g{q.get_context(), q.get_device()};
      g.begin_recording(q);
      chain(fill, copy);
      g.end_recording(q);
      auto exec = g.finalize();
      q.ext_oneapi_graph(exec).wait(); // warm-up
      auto t0 = clock_type::now();
      for (int s = 0; s < submissions; s++) q.ext_oneapi_graph(exec);
      host = us_since(t0);
      q.wait();
      total = us_since(t0);
      auto t1 = clock_type::now();
      for (int s = 0; s < submissions; s++) chain(fill, copy);
      q.wait();
      eager = us_since(t1);
      sycl::free(a, q);
      sycl::free(b, q);
    } else if (shape == "buffer") {
      sycl::buffer<int> a{sycl::range<1>{n}}, b{sycl::range<1>{n}};
      auto fill = [&](int i) {
        q.submit([&](sycl::handler &h) {
          sycl::accessor acc{a, h, sycl::write_only};
          h.fill(acc, i);
        });
      };
      auto copy = [&] {
        q.submit([&](sycl::handler &h) {
          sycl::accessor src{a, h, sycl::read_only};
          sycl::accessor dst{b, h, sycl::write_only};
          h.copy(src, dst);
        });
      };
      {
        exp::command_graph g{q.get_context(), q.get_device(), {exp::property::graph::assume_buffer_outlives_graph{}}};
        g.begin_recording(q);
        chain(fill, copy);
        g.end_recording(q);
        auto exec = g.finalize();
        q.ext_oneapi_graph(exec).wait();
        auto t0 = clock_type::now();
        for (int s = 0; s < submissions; s++) q.ext_oneapi_graph(exec);
        host = us_since(t0);
        q.wait();
        total = us_since(t0);
      }
      auto t1 = clock_type::now();
      for (int s = 0; s < submissions; s++) chain(fill, copy);
      q.wait();
      eager = us_since(t1);
    } else {
      std::printf("error unknown shape %s\n", shape.c_str());
      return 2;
    }
    std::printf("ok %s %d %d %.2f %.2f %.2f\n", shape.c_str(), nodes, submissions, host / submissions,
                total / submissions, eager / submissions);
    return 0;
  } catch (const sycl::exception &e) {
    std::string what = e.what();
    for (auto &c : what)
      if (c == '\n') c = ' ';
    std::printf("error %s\n", what.c_str());
    return 1;
  }
}
