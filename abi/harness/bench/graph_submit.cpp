// Host time per command-graph submission through libsycl, for comparing
// adapters on one device: a chain of `nodes` commands (USM fills and copies,
// buffer fills and copies through accessors, or launches of one small
// kernel) finalized once and submitted `submissions` times, and the same
// chain submitted eagerly as plain queue commands.
//
//   graph_submit usm|buffer|kernel NODES SUBMISSIONS
//
// Prints `device <platform> / <device>`, then one line: `ok <shape> <nodes> <submissions> <graph host us/submit>
// <graph total us/submit> <eager host us/chain> <eager total us/chain>`, or
// `error <what>` when the adapter cannot run it (`skip <why>` where the
// device cannot build the kernel). Host time is the submit calls alone;
// total includes the final wait. The kernel is axpb (x = x * a + b over 256
// work-items) from SPIR-V through sycl_ext_oneapi_kernel_compiler
// (abi/harness/c/kernels/axpb.spv, found through URT_REPO), so the kernel
// shape runs where the device builds SPIR-V: our OpenCL library, and UR's.
#include <sycl/sycl.hpp>
#include <sycl/ext/oneapi/experimental/graph.hpp>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace exp = sycl::ext::oneapi::experimental;
using clock_type = std::chrono::steady_clock;

static double us_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - t).count();
}

static bool read_spirv(std::vector<std::byte> &bytes) {
  const char *repo = std::getenv("URT_REPO");
  std::ifstream in(std::string(repo ? repo : ".") + "/abi/harness/c/kernels/axpb.spv", std::ios::binary);
  if (!in) return false;
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char c : chars) bytes.push_back(std::byte(c));
  return true;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    std::printf("error usage: graph_submit usm|buffer|kernel NODES SUBMISSIONS\n");
    return 2;
  }
  std::string shape = argv[1];
  int nodes = std::atoi(argv[2]), submissions = std::atoi(argv[3]);
  constexpr size_t n = 256;
  try {
    sycl::queue q{sycl::property::queue::in_order{}};
    // Which device the selector picked, for the reader to check: UR's
    // adapter and ours need not number OpenCL devices alike.
    std::printf("device %s / %s\n", q.get_device().get_platform().get_info<sycl::info::platform::name>().c_str(),
                q.get_device().get_info<sycl::info::device::name>().c_str());
    auto chain = [&](auto &&fill, auto &&copy) {
      for (int i = 0; i < nodes; i++) (i % 2 == 0) ? fill(i) : copy();
    };
    double host = 0, total = 0, eager_host = 0, eager = 0;
    // Times `submissions` graph submissions, then as many eager chains.
    auto time_both = [&](exp::command_graph<exp::graph_state::executable> &exec, auto &&eager_chain) {
      q.ext_oneapi_graph(exec).wait(); // warm-up
      auto t0 = clock_type::now();
      for (int s = 0; s < submissions; s++) q.ext_oneapi_graph(exec);
      host = us_since(t0);
      q.wait();
      total = us_since(t0);
      eager_chain();
      q.wait(); // warm-up
      auto t1 = clock_type::now();
      for (int s = 0; s < submissions; s++) eager_chain();
      eager_host = us_since(t1);
      q.wait();
      eager = us_since(t1);
    };
    if (shape == "kernel") {
      sycl::device dev = q.get_device();
      std::vector<std::byte> spirv;
      if (!dev.ext_oneapi_can_build(exp::source_language::spirv) || !dev.has_extension("cl_khr_il_program") ||
          !read_spirv(spirv)) {
        std::printf("skip the device builds no SPIR-V, or axpb.spv is not found\n");
        return 0;
      }
      auto source = exp::create_kernel_bundle_from_source(q.get_context(), exp::source_language::spirv, spirv);
      auto bundle = exp::build(source);
      sycl::kernel axpb = bundle.ext_oneapi_get_kernel("axpb");
      unsigned *x = sycl::malloc_device<unsigned>(n, q);
      q.fill(x, 0u, n).wait();
      auto launch = [&] {
        q.submit([&](sycl::handler &h) {
          h.set_args(x, 1u, 1u);
          h.parallel_for(sycl::range<1>{n}, axpb);
        });
      };
      auto kernels = [&] {
        for (int i = 0; i < nodes; i++) launch();
      };
      exp::command_graph g{q.get_context(), dev};
      g.begin_recording(q);
      kernels();
      g.end_recording(q);
      auto exec = g.finalize();
      time_both(exec, kernels);
      // Every launch added one: warm-ups, graph replays and eager chains.
      unsigned expected = unsigned(nodes) * unsigned(2 * submissions + 2), got = 0;
      q.copy(x, &got, 1).wait();
      sycl::free(x, q);
      if (got != expected) {
        std::printf("error x[0] is %u after the runs, expected %u\n", got, expected);
        return 1;
      }
    } else if (shape == "usm") {
      int *a = sycl::malloc_device<int>(n, q), *b = sycl::malloc_device<int>(n, q);
      auto fill = [&](int i) { q.fill(a, i, n); };
      auto copy = [&] { q.memcpy(b, a, n * sizeof(int)); };
      exp::command_graph g{q.get_context(), q.get_device()};
      g.begin_recording(q);
      chain(fill, copy);
      g.end_recording(q);
      auto exec = g.finalize();
      time_both(exec, [&] { chain(fill, copy); });
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
        time_both(exec, [&] { chain(fill, copy); });
      }
    } else {
      std::printf("error unknown shape %s\n", shape.c_str());
      return 2;
    }
    std::printf("ok %s %d %d %.2f %.2f %.2f %.2f\n", shape.c_str(), nodes, submissions, host / submissions,
                total / submissions, eager_host / submissions, eager / submissions);
    return 0;
  } catch (const sycl::exception &e) {
    std::string what = e.what();
    for (auto &c : what)
      if (c == '\n') c = ' ';
    std::printf("error %s\n", what.c_str());
    return 1;
  }
}
