/* Kernel submission through Intel's UR loader, for `ur-abi-compare stack`:
 * the C program's view of an adapter library, beside the Rust API's
 * (`cmdbuf-bench --only submission`) and libsycl's (graph_submit.cpp).
 *
 *   kernel_submit devices             # prints `devices K`, over all platforms
 *   kernel_submit run N[,N...] [SAMPLES]
 *
 * `run` takes the loader's first device (UR_DEVICE_SELECTOR picks it), an
 * in-order queue and the axpb kernel in the backend's own form
 * (urt_axpb_program: C table on cpu, SPIR-V on OpenCL and Vulkan, PTX on
 * CUDA) over 256 work-items, and for each N times three variants, sampled
 * in turn so that the machine's drift falls on all three alike:
 *   eager:  N urEnqueueKernelLaunchWithArgsExp, no event asked for;
 *   event:  the same, each asking for its event and releasing it at once
 *           (what the Rust API's eager launch does: it always returns one);
 *   replay: one urEnqueueCommandBufferExp of an in-order command buffer
 *           into which the same N launches were recorded once.
 * Host time is the submit calls alone, wall time includes urQueueFinish.
 * Prints `device <backend> <name>`, then one line per N:
 * `row N <eager host> <eager wall> <event host> <event wall> <replay host>
 * <replay wall>`, medians over the samples in ns per kernel, and `ok
 * kernel_submit` once every launch was checked to have run (each adds 1 to
 * every element). Exit 77 with `skip: why` where the device takes no kernel.
 * It runs without the validation layer: it times, the ABI tests check. */
#define _POSIX_C_SOURCE 199309L
#include <time.h>

#include "../c/urt.h"

enum { ITEMS = 256, VARIANTS = 3, MAX_SAMPLES = 200 };

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *values, int count) {
  qsort(values, (size_t)count, sizeof *values, by_value);
  return count % 2 ? values[count / 2] : (values[count / 2 - 1] + values[count / 2]) / 2;
}

typedef struct {
  urt_env *env;
  ur_kernel_handle_t kernel;
  ur_exp_kernel_arg_properties_t args[3];
  uint32_t a, b;
  uint64_t launches; /* every launch made, for the final check */
} bench;

static void launch(bench *k, bool with_event) {
  size_t global = ITEMS;
  ur_event_handle_t event = NULL;
  URT_REQUIRE(urEnqueueKernelLaunchWithArgsExp(k->env->queue, k->kernel, 1, NULL, &global, NULL, 3, k->args, NULL, 0,
                                               NULL, with_event ? &event : NULL));
  if (event) URT_OK(urEventRelease(event));
  k->launches++;
}

/* One sample of `variant`: its host and wall time in ns for n kernels. */
static void sample(bench *k, int variant, int n, ur_exp_command_buffer_handle_t cb, double *host, double *wall) {
  double t0 = now_ns();
  if (variant == 2) {
    URT_REQUIRE(urEnqueueCommandBufferExp(k->env->queue, cb, 0, NULL, NULL));
    k->launches += (uint64_t)n;
  } else {
    for (int i = 0; i < n; i++) launch(k, variant == 1);
  }
  *host = now_ns() - t0;
  URT_REQUIRE(urQueueFinish(k->env->queue));
  *wall = now_ns() - t0;
}

static void measure(bench *k, int n, int samples) {
  size_t global = ITEMS;
  ur_exp_command_buffer_handle_t cb = urt_command_buffer(k->env, false, true);
  for (int i = 0; i < n; i++)
    URT_REQUIRE(urCommandBufferAppendKernelLaunchWithArgsExp(cb, k->kernel, 1, NULL, &global, NULL, 3, k->args, 0,
                                                             NULL, 0, NULL, 0, NULL, NULL, NULL, NULL));
  URT_REQUIRE(urCommandBufferFinalizeExp(cb));
  static double host[VARIANTS][MAX_SAMPLES], wall[VARIANTS][MAX_SAMPLES];
  double h, w;
  for (int v = 0; v < VARIANTS; v++) sample(k, v, n, cb, &h, &w); /* warm-up */
  for (int s = 0; s < samples; s++)
    for (int i = 0; i < VARIANTS; i++) {
      int v = (s + i) % VARIANTS; /* rotated order */
      sample(k, v, n, cb, &host[v][s], &wall[v][s]);
    }
  printf("row %d", n);
  for (int v = 0; v < VARIANTS; v++)
    printf(" %.1f %.1f", median(host[v], samples) / n, median(wall[v], samples) / n);
  printf("\n");
  fflush(stdout);
  URT_OK(urCommandBufferReleaseExp(cb));
}

static const char *backend_name(ur_backend_t backend) {
  switch (backend) {
    case UR_BACKEND_NATIVE_CPU: return "cpu";
    case UR_BACKEND_OPENCL: return "opencl";
    case UR_BACKEND_OFFLOAD: return "vulkan";
    case UR_BACKEND_CUDA: return "cuda";
    default: return "other";
  }
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "devices") == 0) {
    /* Over every platform, as UR_DEVICE_SELECTOR's indices count. */
    ur_adapter_handle_t adapter = NULL;
    ur_platform_handle_t platforms[16];
    uint32_t platform_count = 0, count = 0;
    URT_REQUIRE(urLoaderInit(0, NULL));
    URT_REQUIRE(urAdapterGet(1, &adapter, NULL));
    URT_REQUIRE(urPlatformGet(adapter, 16, platforms, &platform_count));
    for (uint32_t i = 0; i < platform_count && i < 16; i++) {
      uint32_t d = 0;
      if (urDeviceGet(platforms[i], UR_DEVICE_TYPE_ALL, 0, NULL, &d) == UR_RESULT_SUCCESS) count += d;
    }
    printf("devices %u\n", count);
    URT_OK(urAdapterRelease(adapter));
    URT_OK(urLoaderTearDown());
    return urt_done("kernel_submit");
  }
  if (argc < 3 || strcmp(argv[1], "run") != 0) {
    printf("usage: kernel_submit devices | kernel_submit run N[,N...] [SAMPLES]\n");
    return 2;
  }
  int max_samples = argc > 3 ? atoi(argv[3]) : MAX_SAMPLES;
  if (max_samples < 1 || max_samples > MAX_SAMPLES) max_samples = MAX_SAMPLES;
  urt_env env;
  urt_init(&env);
  char name[256] = {0};
  URT_OK(urDeviceGetInfo(env.device, UR_DEVICE_INFO_NAME, sizeof name - 1, name, NULL));
  printf("device %s %s\n", backend_name(env.backend), name);
  ur_program_handle_t program = urt_axpb_program(&env);
  if (!program) urt_skip(&env, "the device takes no kernel form of axpb");
  URT_REQUIRE(urProgramBuild(env.context, program, NULL));
  bench k = {&env, NULL, {{0}}, 1, 1, 0};
  URT_REQUIRE(urKernelCreate(program, "axpb", &k.kernel));
  uint32_t *p = urt_device_alloc(&env, ITEMS * sizeof(uint32_t));
  uint32_t zero = 0;
  URT_REQUIRE(urEnqueueUSMFill(env.queue, p, sizeof zero, &zero, ITEMS * sizeof zero, 0, NULL, NULL));
  k.args[0] = urt_pointer_arg(0, p);
  k.args[1] = urt_value_arg(1, &k.a);
  k.args[2] = urt_value_arg(2, &k.b);
  for (char *n = argv[2]; *n;) {
    int nodes = (int)strtol(n, &n, 10);
    if (*n == ',') n++;
    if (nodes < 1) continue;
    /* Fewer samples of long chains: about 2000 kernels a variant. */
    int samples = 2000 / nodes;
    samples = samples < 7 ? 7 : samples > max_samples ? max_samples : samples;
    measure(&k, nodes, samples);
  }
  uint32_t *host = (uint32_t *)urt_read(&env, p, ITEMS * sizeof(uint32_t));
  bool all = true;
  for (int i = 0; i < ITEMS; i++) all &= host[i] == (uint32_t)k.launches;
  URT_CHECK(all, "every element counts the %llu launches (first: %u)", (unsigned long long)k.launches, host[0]);
  free(host);
  URT_OK(urUSMFree(env.context, p));
  URT_OK(urKernelRelease(k.kernel));
  URT_OK(urProgramRelease(program));
  urt_fini(&env);
  return urt_done("kernel_submit");
}
