// SYCL buffers and accessors without kernels: fills and copies through
// accessors, host accessors (buffer maps), write-back at destruction, and
// a graph whose edges come from accessors.
#include "st.hpp"
#include <numeric>
#include <vector>

namespace exp = sycl::ext::oneapi::experimental;

int main() {
  return st::run("sycl buffers", [] {
    sycl::queue q;
    constexpr size_t n = 1024;
    std::vector<int> init(n), out(n, -1);
    std::iota(init.begin(), init.end(), 0);
    {
      sycl::buffer<int> a{init.data(), sycl::range<1>{n}};
      a.set_write_back(false); // graphs refuse buffers that write back
      sycl::buffer<int> b{sycl::range<1>{n}};
      sycl::buffer<int> c{out.data(), sycl::range<1>{n}};
      q.submit([&](sycl::handler &h) {
        sycl::accessor src{a, h, sycl::read_only};
        sycl::accessor dst{b, h, sycl::write_only};
        h.copy(src, dst);
      });
      q.submit([&](sycl::handler &h) {
        sycl::accessor dst{b, h, sycl::write_only};
        h.fill(dst, 7);
      });
      {
        sycl::host_accessor hb{b, sycl::read_only};
        ST_CHECK(hb[0] == 7 && hb[n - 1] == 7, "fill after copy, seen through a host accessor: %d", hb[0]);
      }
      {
        sycl::host_accessor ha{a, sycl::read_write};
        ST_CHECK(ha[5] == 5, "buffer made from host data: %d", ha[5]);
        ha[5] = 500;
      }
      // c, made over host memory, writes back at destruction.
      q.submit([&](sycl::handler &h) {
        sycl::accessor src{a, h, sycl::read_only};
        sycl::accessor dst{c, h, sycl::write_only};
        h.copy(src, dst);
      });
      // A graph recorded from accessor commands: d <- a, then b <- d (libsycl
      // refuses buffers that write back, such as c, in graphs).
      sycl::buffer<int> d{sycl::range<1>{n}};
      {
      exp::command_graph g{q.get_context(), q.get_device(),
                           {exp::property::graph::assume_buffer_outlives_graph{}}};
      g.begin_recording(q);
      q.submit([&](sycl::handler &h) {
        sycl::accessor src{a, h, sycl::read_only};
        sycl::accessor dst{d, h, sycl::write_only};
        h.copy(src, dst);
      });
      q.submit([&](sycl::handler &h) {
        sycl::accessor src{d, h, sycl::read_only};
        sycl::accessor dst{b, h, sycl::write_only};
        h.copy(src, dst);
      });
      g.end_recording(q);
      auto exec = g.finalize();
      q.ext_oneapi_graph(exec).wait();
      }
      // Host accessors are allowed again once the graph is gone.
      sycl::host_accessor hb{b, sycl::read_only};
      ST_CHECK(hb[5] == 500 && hb[6] == 6, "the recorded accessor graph: %d %d", hb[5], hb[6]);
    }
    ST_CHECK(out[5] == 500 && out[n - 1] == (int)n - 1, "c written back to the host at destruction: %d", out[5]);
  });
}
