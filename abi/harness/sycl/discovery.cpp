// What libsycl lists (with UR_ADAPTERS_FORCE_LOAD, one adapter's platform),
// what its device reports, the aspects USM, the graph extension and the
// floating-point types depend on, and profiling times on the device clock.
#include "st.hpp"

#include <algorithm>

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

    // Device information libsycl reads (and derives aspects from).
    namespace info = sycl::info::device;
    std::printf("# vendor id %#x, version %s, driver %s\n", d.get_info<info::vendor_id>(),
                d.get_info<info::version>().c_str(), d.get_info<info::driver_version>().c_str());
    ST_CHECK(d.get_info<info::max_compute_units>() >= 1, "compute units");
    auto items = d.get_info<info::max_work_item_sizes<3>>();
    for (int i = 0; i < 3; i++) ST_CHECK(items[i] >= 1, "work-item size %zu in dimension %d", items[i], i);
    ST_CHECK(d.get_info<info::mem_base_addr_align>() >= 8, "base address alignment");
    ST_CHECK(d.get_info<info::profiling_timer_resolution>() >= 1, "timer resolution");
    ST_CHECK(!d.get_info<info::version>().empty(), "a device version");
    auto line = d.get_info<info::global_mem_cache_line_size>();
    ST_CHECK((line & (line - 1)) == 0, "cache line of %u bytes", line);
    for (auto size : d.get_info<info::sub_group_sizes>()) ST_CHECK(size >= 1, "sub-group size %zu", size);
    // Partitions with a sub-device limit where any are listed. Making
    // sub-devices through libsycl is left to the C program partition.c: UR
    // 0.12's validation layer registers no handle urDevicePartition returns,
    // so libsycl's retains and releases of sub-devices read as errors there.
    auto partitions = d.get_info<info::partition_properties>();
    ST_CHECK(partitions.empty() == (d.get_info<info::partition_max_sub_devices>() == 0), "sub-device limit");
    ST_CHECK(!d.has(sycl::aspect::image), "the image aspect");
    bool doubles = !d.get_info<info::double_fp_config>().empty();
    ST_CHECK(d.has(sycl::aspect::fp64) == doubles, "fp64 aspect %d, double config %d", d.has(sycl::aspect::fp64),
             doubles);
    bool halves = !d.get_info<info::half_fp_config>().empty();
    ST_CHECK(d.has(sycl::aspect::fp16) == halves, "fp16 aspect %d, half config %d", d.has(sycl::aspect::fp16), halves);
    auto orders = d.get_info<info::atomic_memory_order_capabilities>();
    ST_CHECK(std::find(orders.begin(), orders.end(), sycl::memory_order::relaxed) != orders.end(), "relaxed atomics");
    std::printf("# fp64 %d, fp16 %d, atomic64 %d\n", doubles, halves, d.has(sycl::aspect::atomic64));

    sycl::queue q{d};
    ST_CHECK(q.get_device() == d, "a queue on the device");

    // Submission times come from urDeviceGetGlobalTimestamps, start and end
    // from the event: one device clock, so the submission precedes the end
    // by less than the program has run.
    sycl::queue profiled{d, sycl::property::queue::enable_profiling()};
    constexpr size_t bytes = 16 << 20;
    void *mem = sycl::malloc_device(bytes, profiled);
    auto e = profiled.memset(mem, 0, bytes);
    e.wait();
    auto submit = e.get_profiling_info<sycl::info::event_profiling::command_submit>();
    auto start = e.get_profiling_info<sycl::info::event_profiling::command_start>();
    auto end = e.get_profiling_info<sycl::info::event_profiling::command_end>();
    ST_CHECK(start <= end, "start %llu, end %llu", (unsigned long long)start, (unsigned long long)end);
    ST_CHECK(submit <= end && end - submit < 10'000'000'000ull, "submitted at %llu, ended at %llu",
             (unsigned long long)submit, (unsigned long long)end);
    sycl::free(mem, profiled);
  });
}
