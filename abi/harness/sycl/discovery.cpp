// What libsycl lists (with UR_ADAPTERS_FORCE_LOAD, one adapter's platform),
// what its device reports, and the aspects USM and the graph extension
// depend on.
#include "st.hpp"

int main() {
  return st::run("sycl discovery", [] {
    auto platforms = sycl::platform::get_platforms();
    ST_CHECK(platforms.size() == 1, "libsycl lists %zu platforms", platforms.size());
    auto p = platforms.at(0);
    auto name = p.get_info<sycl::info::platform::name>();
    auto devices = p.get_devices();
    ST_CHECK(!devices.empty(), "the platform has devices");
    sycl::device d = devices.at(0);
    std::printf("# %s / %s, backend %d\n", name.c_str(), d.get_info<sycl::info::device::name>().c_str(),
                (int)d.get_backend());
    ST_CHECK(d.get_info<sycl::info::device::max_work_group_size>() >= 1, "max work-group size");
    ST_CHECK(d.get_info<sycl::info::device::global_mem_size>() > 0, "global memory");
    ST_CHECK(d.has(sycl::aspect::usm_device_allocations), "USM device allocations");
    ST_CHECK(d.has(sycl::aspect::ext_oneapi_graph), "the graph aspect");
    ST_CHECK(d.has(sycl::aspect::ext_oneapi_limited_graph), "the limited-graph aspect");
    sycl::queue q{d};
    ST_CHECK(q.get_device() == d, "a queue on the device");
  });
}
