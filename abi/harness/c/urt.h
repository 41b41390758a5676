/* urt.h: what the C test programs share.
 *
 * Each program tests one area of the UR API through Intel's loader, on the
 * adapter library the harness forces (UR_ADAPTERS_FORCE_LOAD). It prints
 * one line per failed check ("not ok file:line: ...") and, at the end,
 * "ok <program>" or "not ok <program>: N checks failed", and exits with 0
 * only when every check held. A program that needs a capability the device
 * lacks releases what it holds and exits with 77 after "skip: <reason>".
 *
 * Every handle a program obtains is released before urLoaderTearDown, so
 * that the validation layer's leak checker reports nothing.
 */
#ifndef URT_H
#define URT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unified-runtime/ur_api.h>
#include <ur_rs_cpu.h>

static int urt_failures = 0;

static inline void urt_fail(const char *file, int line, const char *what, ur_result_t got, ur_result_t expected) {
  urt_failures++;
  printf("not ok %s:%d: %s returned %d, expected %d\n", file, line, what, (int)got, (int)expected);
  fflush(stdout);
}

/* A call that must succeed; the program goes on if it does not. */
#define URT_OK(call)                                                                  \
  do {                                                                                \
    ur_result_t urt_r_ = (call);                                                      \
    if (urt_r_ != UR_RESULT_SUCCESS) urt_fail(__FILE__, __LINE__, #call, urt_r_, 0); \
  } while (0)

/* A call that must return exactly `expected`. */
#define URT_RESULT(expected, call)                                                               \
  do {                                                                                           \
    ur_result_t urt_r_ = (call);                                                                 \
    if (urt_r_ != (expected)) urt_fail(__FILE__, __LINE__, #call, urt_r_, (ur_result_t)(expected)); \
  } while (0)

/* A call without which the program cannot go on. */
#define URT_REQUIRE(call)                                                             \
  do {                                                                                \
    ur_result_t urt_r_ = (call);                                                      \
    if (urt_r_ != UR_RESULT_SUCCESS) {                                                \
      urt_fail(__FILE__, __LINE__, #call, urt_r_, 0);                                 \
      printf("not ok %s: cannot go on\n", __FILE__);                                  \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

/* A condition that must hold. */
#define URT_CHECK(cond, ...)                                 \
  do {                                                       \
    if (!(cond)) {                                           \
      urt_failures++;                                        \
      printf("not ok %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      printf(__VA_ARGS__);                                   \
      printf("\n");                                          \
      fflush(stdout);                                        \
    }                                                        \
  } while (0)

/* The objects most programs start from: the forced adapter's first device,
 * a context on it and an in-order queue. */
typedef struct {
  ur_adapter_handle_t adapter;
  ur_platform_handle_t platform;
  ur_device_handle_t device;
  ur_context_handle_t context;
  ur_queue_handle_t queue;
  ur_backend_t backend;
  ur_device_type_t type;
} urt_env;

static inline void urt_init(urt_env *env) {
  memset(env, 0, sizeof *env);
  URT_REQUIRE(urLoaderInit(0, NULL));
  URT_REQUIRE(urAdapterGet(1, &env->adapter, NULL));
  /* URT_PLATFORM picks a platform by index (default the first): a library
   * listing each OpenCL platform apart, as UR's own OpenCL adapter does, is
   * not narrowed by UR_DEVICE_SELECTOR here. */
  const char *wanted = getenv("URT_PLATFORM");
  uint32_t index = wanted ? (uint32_t)strtoul(wanted, NULL, 10) : 0, count = 0;
  ur_platform_handle_t platforms[16];
  URT_REQUIRE(urPlatformGet(env->adapter, 16, platforms, &count));
  if (index >= count || index >= 16) {
    printf("not ok URT_PLATFORM=%u: %u platforms\n", index, count);
    exit(1);
  }
  env->platform = platforms[index];
  URT_REQUIRE(urDeviceGet(env->platform, UR_DEVICE_TYPE_ALL, 1, &env->device, NULL));
  URT_REQUIRE(urPlatformGetInfo(env->platform, UR_PLATFORM_INFO_BACKEND, sizeof env->backend, &env->backend, NULL));
  URT_REQUIRE(urDeviceGetInfo(env->device, UR_DEVICE_INFO_TYPE, sizeof env->type, &env->type, NULL));
  URT_REQUIRE(urContextCreate(1, &env->device, NULL, &env->context));
  URT_REQUIRE(urQueueCreate(env->context, env->device, NULL, &env->queue));
}

static inline void urt_fini(urt_env *env) {
  if (env->queue) URT_OK(urQueueRelease(env->queue));
  if (env->context) URT_OK(urContextRelease(env->context));
  if (env->device) URT_OK(urDeviceRelease(env->device));
  if (env->adapter) URT_OK(urAdapterRelease(env->adapter));
  URT_OK(urLoaderTearDown());
}

/* Declares a handle the validation layer cannot track: UR 0.12's leak
 * checker registers no event that a command-buffer append or
 * urCommandBufferUpdateSignalEventExp returns, and no program that
 * urProgramLinkExp returns, so releasing one, as the spec asks, is reported
 * as the release of a nonexistent handle. The harness forgives exactly
 * those reports for exactly the handles declared here. */
static inline void urt_untracked(const void *handle) {
  if (handle) printf("urt-untracked %p\n", handle);
}

/* Ends the program: the summary line and the exit code. */
static inline int urt_done(const char *program) {
  if (urt_failures == 0) {
    printf("ok %s\n", program);
    return 0;
  }
  printf("not ok %s: %d checks failed\n", program, urt_failures);
  return 1;
}

/* Skips the program after releasing the environment. */
static inline void urt_skip(urt_env *env, const char *reason) {
  urt_fini(env);
  printf("skip: %s\n", reason);
  exit(urt_failures == 0 ? 77 : 1);
}

static inline bool urt_device_bool(urt_env *env, ur_device_info_t query) {
  ur_bool_t value = 0;
  URT_OK(urDeviceGetInfo(env->device, query, sizeof value, &value, NULL));
  return value != 0;
}

static inline bool urt_usm_supported(urt_env *env, ur_device_info_t query) {
  ur_device_usm_access_capability_flags_t flags = 0;
  URT_OK(urDeviceGetInfo(env->device, query, sizeof flags, &flags, NULL));
  return flags != 0;
}

/* A command buffer of the environment's context and device. */
static inline ur_exp_command_buffer_handle_t urt_command_buffer(urt_env *env, bool updatable, bool in_order) {
  ur_exp_command_buffer_desc_t desc = {UR_STRUCTURE_TYPE_EXP_COMMAND_BUFFER_DESC, NULL, updatable, in_order, false};
  ur_exp_command_buffer_handle_t cb = NULL;
  URT_REQUIRE(urCommandBufferCreateExp(env->context, env->device, &desc, &cb));
  return cb;
}

/* Device memory filled with `byte`, through the environment's queue. */
static inline void *urt_device_alloc(urt_env *env, size_t size) {
  void *p = NULL;
  URT_REQUIRE(urUSMDeviceAlloc(env->context, env->device, NULL, NULL, size, &p));
  return p;
}

/* Copies device memory to a fresh host array (freed by the caller). */
static inline uint8_t *urt_read(urt_env *env, const void *device_ptr, size_t size) {
  uint8_t *host = malloc(size);
  URT_REQUIRE(urEnqueueUSMMemcpy(env->queue, true, host, device_ptr, size, 0, NULL, NULL));
  return host;
}

/* Whether `size` bytes of `data` repeat `pattern` of `pattern_size` bytes. */
static inline bool urt_repeats(const uint8_t *data, size_t size, const void *pattern, size_t pattern_size) {
  for (size_t i = 0; i < size; i++)
    if (data[i] != ((const uint8_t *)pattern)[i % pattern_size]) return false;
  return true;
}

/* Launch arguments: a u32 value, a USM pointer, a memory buffer. */
static inline ur_exp_kernel_arg_properties_t urt_value_arg(uint32_t index, const uint32_t *value) {
  ur_exp_kernel_arg_properties_t p = {UR_STRUCTURE_TYPE_EXP_KERNEL_ARG_PROPERTIES, NULL, UR_EXP_KERNEL_ARG_TYPE_VALUE,
                                      index, sizeof *value, {0}};
  p.value.value = value;
  return p;
}

static inline ur_exp_kernel_arg_properties_t urt_pointer_arg(uint32_t index, const void *ptr) {
  ur_exp_kernel_arg_properties_t p = {UR_STRUCTURE_TYPE_EXP_KERNEL_ARG_PROPERTIES, NULL,
                                      UR_EXP_KERNEL_ARG_TYPE_POINTER, index, sizeof ptr, {0}};
  p.value.pointer = ptr;
  return p;
}

static inline ur_exp_kernel_arg_properties_t urt_mem_arg(uint32_t index, ur_mem_handle_t mem) {
  ur_exp_kernel_arg_properties_t p = {UR_STRUCTURE_TYPE_EXP_KERNEL_ARG_PROPERTIES, NULL,
                                      UR_EXP_KERNEL_ARG_TYPE_MEM_OBJ, index, sizeof mem, {0}};
  p.value.memObjTuple.hMem = mem;
  p.value.memObjTuple.flags = UR_MEM_FLAG_READ_WRITE;
  return p;
}

/* ---- axpb(p, a, b): p[i] = p[i] * a + b, in each backend's form ----------
 * CPU: a table of C entry points (ur_rs_cpu.h); OpenCL: SPIR-V; Vulkan:
 * SPIR-V with cmdbuf's kernel ABI; CUDA: PTX. Files are read from the
 * repository (URT_REPO, else the working directory). */
static inline int32_t urt_axpb_cpu(const ur_rs_cpu_group_t *group, void *const *args) {
  uint32_t *p = *(uint32_t *const *)args[0];
  uint32_t a, b;
  memcpy(&a, args[1], sizeof a);
  memcpy(&b, args[2], sizeof b);
  for (size_t l = 0; l < group->local_size[0]; l++) {
    size_t i = group->global_offset[0] + group->group_id[0] * group->local_size[0] + l;
    p[i] = p[i] * a + b;
  }
  return 0;
}

static const ur_rs_cpu_arg_t urt_axpb_cpu_args[] = {
    {UR_RS_CPU_ARG_GLOBAL, 0}, {UR_RS_CPU_ARG_VALUE, 4}, {UR_RS_CPU_ARG_VALUE, 4}};
static const ur_rs_cpu_kernel_t urt_axpb_cpu_kernels[] = {{"axpb", urt_axpb_cpu, 3, 0, urt_axpb_cpu_args, {0, 0, 0}}};
static const ur_rs_cpu_table_t urt_axpb_cpu_table = {UR_RS_CPU_MAGIC, UR_RS_CPU_VERSION, 1, 0, urt_axpb_cpu_kernels};

static inline uint8_t *urt_read_file(const char *relative, size_t *size) {
  const char *repo = getenv("URT_REPO");
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", repo ? repo : ".", relative);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *data = malloc((size_t)n + 1);
  *size = fread(data, 1, (size_t)n, f);
  data[*size] = 0;
  fclose(f);
  return data;
}

/* Whether the device lists an IL version: drivers without SPIR-V (NVIDIA's
 * OpenCL) report none. */
static inline bool urt_builds_spirv(urt_env *env) {
  size_t size = 0;
  return urDeviceGetInfo(env->device, UR_DEVICE_INFO_IL_VERSION, 0, NULL, &size) == UR_RESULT_SUCCESS && size > 1;
}

/* Creates (not builds) the axpb program in the environment's backend's form
 * in `context`, whose binary forms are for `device` (one of its devices);
 * NULL, said on stdout, on OpenCL devices without SPIR-V. */
static inline ur_program_handle_t urt_axpb_program_in(urt_env *env, ur_context_handle_t context,
                                                      ur_device_handle_t device) {
  ur_program_handle_t program = NULL;
  size_t size = 0;
  uint8_t *data = NULL;
  switch (env->backend) {
    case UR_BACKEND_NATIVE_CPU: {
      const uint8_t *bin = (const uint8_t *)&urt_axpb_cpu_table;
      size = sizeof urt_axpb_cpu_table;
      URT_REQUIRE(urProgramCreateWithBinary(context, 1, &device, &size, &bin, NULL, &program));
      return program;
    }
    case UR_BACKEND_OPENCL:
      if (!urt_builds_spirv(env)) {
        printf("# the OpenCL device builds no SPIR-V (no IL version): no kernel\n");
        return NULL;
      }
      data = urt_read_file("abi/harness/c/kernels/axpb.spv", &size);
      URT_CHECK(data != NULL, "abi/harness/c/kernels/axpb.spv is readable");
      if (!data) return NULL;
      URT_REQUIRE(urProgramCreateWithIL(context, data, size, NULL, &program));
      break;
    case UR_BACKEND_OFFLOAD: /* Vulkan */
      data = urt_read_file("abi/harness/c/kernels/axpb.vk.spv", &size);
      URT_CHECK(data != NULL, "abi/harness/c/kernels/axpb.vk.spv is readable");
      if (!data) return NULL;
      URT_REQUIRE(urProgramCreateWithIL(context, data, size, NULL, &program));
      break;
    case UR_BACKEND_CUDA: {
      data = urt_read_file("abi/harness/c/kernels/axpb.ptx", &size);
      URT_CHECK(data != NULL, "abi/harness/c/kernels/axpb.ptx is readable");
      if (!data) return NULL;
      const uint8_t *bin = data;
      URT_REQUIRE(urProgramCreateWithBinary(context, 1, &device, &size, &bin, NULL, &program));
      break;
    }
    default:
      URT_CHECK(false, "backend %d has a kernel form", env->backend);
  }
  free(data);
  return program;
}

/* The axpb program in the environment's context and device. */
static inline ur_program_handle_t urt_axpb_program(urt_env *env) {
  return urt_axpb_program_in(env, env->context, env->device);
}

#endif
