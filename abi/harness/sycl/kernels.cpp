// Kernels without the DPC++ compiler: sycl_ext_oneapi_kernel_compiler turns
// SPIR-V bytes (abi/harness/c/kernels/axpb.spv, compiled from OpenCL C)
// into a kernel bundle on our adapter, whose kernel is launched eagerly and
// as a node of a sycl_ext_oneapi_graph graph, its argument a
// dynamic_parameter updated in the executable graph, then the whole graph
// updated from another; every result is checked. It needs a device that
// builds SPIR-V (our OpenCL adapter on a driver that takes IL, or through
// llvm-spirv on one that does not); elsewhere it skips.
// urt: needs opencl spirv
#include "st.hpp"
#include <cstddef>
#include <fstream>
#include <iterator>
#include <vector>

namespace exp = sycl::ext::oneapi::experimental;

static std::vector<std::byte> read_spirv() {
  const char *repo = std::getenv("URT_REPO");
  std::string path = std::string(repo ? repo : ".") + "/abi/harness/c/kernels/axpb.spv";
  std::ifstream in(path, std::ios::binary);
  if (!in) st::skip("cannot read " + path);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  for (size_t i = 0; i < chars.size(); i++) bytes[i] = std::byte(chars[i]);
  return bytes;
}

static bool all(sycl::queue &q, const unsigned *p, size_t n, unsigned expected) {
  std::vector<unsigned> host(n);
  q.copy(p, host.data(), n).wait();
  for (unsigned v : host)
    if (v != expected) return false;
  return true;
}

int main() {
  return st::run("sycl kernels", [] {
    {
      // Asked before any queue exists: skipping exits, and a live queue
      // would be reported as a leaked context.
      // libsycl answers can_build(spirv) by backend alone (true on CUDA
      // too); whether this device takes IL is in its extension list.
      sycl::device dev{sycl::default_selector_v};
      std::string name = dev.get_info<sycl::info::device::name>();
      if (!dev.ext_oneapi_can_build(exp::source_language::spirv) || dev.get_backend() != sycl::backend::opencl)
        st::skip(name + ": kernels from SPIR-V run on the OpenCL library only");
      if (!dev.has_extension("cl_khr_il_program")) st::skip(name + " builds no SPIR-V (no cl_khr_il_program)");
    }
    sycl::queue q{sycl::property::queue::in_order{}};
    sycl::device dev = q.get_device();
    auto source = exp::create_kernel_bundle_from_source(q.get_context(), exp::source_language::spirv, read_spirv());
    auto bundle = exp::build(source);
    ST_CHECK(bundle.ext_oneapi_has_kernel("axpb"), "the bundle has axpb");
    sycl::kernel axpb = bundle.ext_oneapi_get_kernel("axpb");
    constexpr size_t n = 4096;
    unsigned *p = sycl::malloc_device<unsigned>(n, q);

    // Eager: p = 1 * 3 + 4.
    q.fill(p, 1u, n);
    q.submit([&](sycl::handler &h) {
      h.set_args(p, 3u, 4u);
      h.parallel_for(sycl::range<1>{n}, axpb);
    });
    ST_CHECK(all(q, p, n, 7), "eager axpb(1, 3, 4) = 7");

    // A graph of one kernel node whose a is a dynamic parameter (libsycl
    // updates graphs of kernel, host-task, barrier and empty nodes only, so
    // the fill stays outside).
    auto refill = [&] { q.fill(p, 1u, n).wait(); };
    exp::command_graph g{q.get_context(), dev};
    exp::dynamic_parameter a(2u);
    auto node = g.add([&](sycl::handler &h) {
      h.set_arg(0, p);
      h.set_arg(1, a);
      h.set_arg(2, 5u);
      h.parallel_for(sycl::range<1>{n}, axpb);
    });
    auto exec = g.finalize(exp::property::graph::updatable{});
    refill();
    for (int i = 0; i < 3; i++) q.ext_oneapi_graph(exec);
    q.wait();
    ST_CHECK(all(q, p, n, ((1 * 2 + 5) * 2 + 5) * 2 + 5), "graph replayed 3 times: x * 2 + 5");
    a.update(10u);
    exec.update(node);
    refill();
    q.ext_oneapi_graph(exec).wait();
    ST_CHECK(all(q, p, n, 15), "after the dynamic_parameter update: 1 * 10 + 5");

    // Whole-graph update from a graph of the same shape with other values.
    exp::command_graph g2{q.get_context(), dev};
    exp::dynamic_parameter a2(100u);
    g2.add([&](sycl::handler &h) {
      h.set_arg(0, p);
      h.set_arg(1, a2);
      h.set_arg(2, 7u);
      h.parallel_for(sycl::range<1>{n}, axpb);
    });
    exec.update(g2);
    refill();
    q.ext_oneapi_graph(exec).wait();
    ST_CHECK(all(q, p, n, 107), "after the whole-graph update: 1 * 100 + 7");

    // Replayed many times in order, the data checked (u32 arithmetic wraps).
    refill();
    unsigned expected = 1;
    for (int i = 0; i < 1000; i++) {
      q.ext_oneapi_graph(exec);
      expected = expected * 100u + 7u;
    }
    q.wait();
    ST_CHECK(all(q, p, n, expected), "1000 replays of x * 100 + 7");
    sycl::free(p, q);
  });
}
