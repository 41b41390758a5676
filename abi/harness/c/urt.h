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
  URT_REQUIRE(urPlatformGet(env->adapter, 1, &env->platform, NULL));
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

/* Declares an event the validation layer cannot track: UR 0.12's leak
 * checker registers no handle that a command-buffer append or
 * urCommandBufferUpdateSignalEventExp returns, so releasing one, as the spec
 * asks, is reported as the release of a nonexistent handle. The harness
 * forgives exactly those reports for exactly the handles declared here. */
static inline void urt_untracked(ur_event_handle_t event) {
  if (event) printf("urt-untracked %p\n", (void *)event);
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

#endif
