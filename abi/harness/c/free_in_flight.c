/* Memory freed or released while enqueued work may still use it
 * (UR's urUSMFreeDuringExecutionTest): urUSMFree "waits for previously
 * enqueued commands that may be accessing pMem". A host task holds the queue
 * back, so the kernel (and the copy) that use the memory are still to run
 * when the application frees it; scripts/memcheck.sh runs this program
 * under valgrind on cpu and PoCL, where a kernel writing a freed block is an
 * invalid write. In order and out of order; USM of each kind the device
 * offers, and a memory object released under a kernel.
 *
 * urt: needs kernels */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <time.h>

#include "urt.h"

enum { N = 4096 };

static void hold_back(void *data) {
  (void)data;
  struct timespec t = {0, 100 * 1000 * 1000};
  nanosleep(&t, NULL);
}

/* Enqueues the kernel on `p` after a slow host task, frees `p` at once. */
static void free_under_kernel(urt_env *env, ur_queue_handle_t q, ur_kernel_handle_t kernel, void *p, bool ooo) {
  uint32_t zero = 0, a = 3, b = 1;
  ur_event_handle_t held = NULL;
  URT_OK(urEnqueueUSMFill(q, p, sizeof zero, &zero, N * sizeof zero, 0, NULL, NULL));
  URT_OK(urQueueFinish(q));
  URT_OK(urEnqueueHostTaskExp(q, hold_back, NULL, NULL, 0, NULL, ooo ? &held : NULL));
  ur_exp_kernel_arg_properties_t args[3] = {urt_pointer_arg(0, p), urt_value_arg(1, &a), urt_value_arg(2, &b)};
  size_t global = N;
  URT_OK(urEnqueueKernelLaunchWithArgsExp(q, kernel, 1, NULL, &global, NULL, 3, args, NULL, held ? 1 : 0,
                                          held ? &held : NULL, NULL));
  if (held) URT_OK(urEventRelease(held));
  URT_OK(urUSMFree(env->context, p));
  URT_OK(urQueueFinish(q));
}

static void usm(urt_env *env, ur_kernel_handle_t kernel, bool ooo) {
  ur_queue_handle_t q = NULL;
  ur_queue_properties_t props = {UR_STRUCTURE_TYPE_QUEUE_PROPERTIES, NULL,
                                 ooo ? UR_QUEUE_FLAG_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0};
  URT_REQUIRE(urQueueCreate(env->context, env->device, &props, &q));
  size_t size = N * sizeof(uint32_t);
  void *p = NULL;
  URT_OK(urUSMDeviceAlloc(env->context, env->device, NULL, NULL, size, &p));
  if (p) free_under_kernel(env, q, kernel, p, ooo);
  if (urt_usm_supported(env, UR_DEVICE_INFO_USM_HOST_SUPPORT)) {
    p = NULL;
    URT_OK(urUSMHostAlloc(env->context, NULL, NULL, size, &p));
    if (p) free_under_kernel(env, q, kernel, p, ooo);
  }
  if (urt_usm_supported(env, UR_DEVICE_INFO_USM_SINGLE_SHARED_SUPPORT)) {
    p = NULL;
    URT_OK(urUSMSharedAlloc(env->context, env->device, NULL, NULL, size, &p));
    if (p) free_under_kernel(env, q, kernel, p, ooo);
  }
  /* A copy from freed memory (copies hold what they touch). */
  void *src = urt_device_alloc(env, size);
  uint32_t *host = malloc(size);
  URT_OK(urEnqueueHostTaskExp(q, hold_back, NULL, NULL, 0, NULL, NULL));
  URT_OK(urEnqueueUSMMemcpy(q, false, host, src, size, 0, NULL, NULL));
  URT_OK(urUSMFree(env->context, src));
  URT_OK(urQueueFinish(q));
  free(host);
  URT_OK(urQueueRelease(q));
}

static void buffer(urt_env *env, ur_kernel_handle_t kernel) {
  ur_mem_handle_t buf = NULL;
  URT_REQUIRE(urMemBufferCreate(env->context, UR_MEM_FLAG_READ_WRITE, N * sizeof(uint32_t), NULL, &buf));
  uint32_t a = 3, b = 1;
  URT_OK(urEnqueueHostTaskExp(env->queue, hold_back, NULL, NULL, 0, NULL, NULL));
  ur_exp_kernel_arg_properties_t args[3] = {urt_mem_arg(0, buf), urt_value_arg(1, &a), urt_value_arg(2, &b)};
  size_t global = N;
  URT_OK(urEnqueueKernelLaunchWithArgsExp(env->queue, kernel, 1, NULL, &global, NULL, 3, args, NULL, 0, NULL, NULL));
  URT_OK(urMemRelease(buf));
  URT_OK(urQueueFinish(env->queue));
}

int main(void) {
  urt_env env;
  urt_init(&env);
  ur_program_handle_t program = urt_axpb_program(&env);
  if (!program) urt_skip(&env, "no kernel form for this device");
  URT_REQUIRE(urProgramBuild(env.context, program, NULL));
  ur_kernel_handle_t kernel = NULL;
  URT_REQUIRE(urKernelCreate(program, "axpb", &kernel));
  usm(&env, kernel, false);
  ur_queue_flags_t flags = 0;
  URT_OK(urDeviceGetInfo(env.device, UR_DEVICE_INFO_QUEUE_ON_HOST_PROPERTIES, sizeof flags, &flags, NULL));
  if (flags & UR_QUEUE_FLAG_OUT_OF_ORDER_EXEC_MODE_ENABLE) usm(&env, kernel, true);
  buffer(&env, kernel);
  URT_OK(urKernelRelease(kernel));
  URT_OK(urProgramRelease(program));
  urt_fini(&env);
  return urt_done("free_in_flight");
}
