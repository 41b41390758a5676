/* Released handles: every kind of handle, released and then used,
 * retained or released again, must answer UR_RESULT_ERROR_INVALID_NULL_HANDLE
 * without the library reading freed memory (scripts/memcheck.sh runs this
 * program under valgrind on cpu and PoCL). Root devices, platforms and the
 * adapter stay valid however often they are released.
 *
 * Under the validation layer only the valid half runs: the layer's leak
 * checker reports the release of a released handle itself, which is the
 * misuse this program commits on purpose.
 *
 * urt: also without layers */
#include "urt.h"

#define STALE(call) URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, call)

int main(void) {
  urt_env env;
  urt_init(&env);
  const char *layers = getenv("UR_ENABLE_LAYERS");
  bool misuse = !(layers && *layers);
  char name[256];
  uint32_t count = 0;
  uint8_t byte = 7;
  uint8_t *mem = urt_device_alloc(&env, 256);

  /* Context. */
  ur_context_handle_t context = NULL;
  URT_REQUIRE(urContextCreate(1, &env.device, NULL, &context));
  URT_OK(urContextRelease(context));
  if (misuse) {
    STALE(urContextRelease(context));
    STALE(urContextRetain(context));
    STALE(urContextGetInfo(context, UR_CONTEXT_INFO_REFERENCE_COUNT, sizeof count, &count, NULL));
    /* A released handle in another kind's place is released, not the other kind. */
    STALE(urQueueFinish((ur_queue_handle_t)context));
  }

  /* Queue, released while one of its events keeps it alive inside the library. */
  ur_queue_handle_t queue = NULL;
  ur_event_handle_t event = NULL;
  URT_REQUIRE(urQueueCreate(env.context, env.device, NULL, &queue));
  URT_OK(urEnqueueUSMFill(queue, mem, 1, &byte, 256, 0, NULL, &event));
  URT_OK(urQueueRelease(queue));
  if (misuse) {
    STALE(urQueueFinish(queue));
    STALE(urQueueRelease(queue));
    STALE(urQueueRetain(queue));
    STALE(urEnqueueUSMFill(queue, mem, 1, &byte, 256, 0, NULL, NULL));
  }
  /* The event still names its queue (UR_EVENT_INFO_COMMAND_QUEUE) and waits. */
  URT_OK(urEventWait(1, &event));
  URT_OK(urEventRelease(event));
  if (misuse) {
    STALE(urEventRelease(event));
    STALE(urEventRetain(event));
    STALE(urEventWait(1, &event));
    STALE(urEventGetInfo(event, UR_EVENT_INFO_REFERENCE_COUNT, sizeof count, &count, NULL));
    STALE(urEnqueueUSMFill(env.queue, mem, 1, &byte, 256, 1, &event, NULL));
  }

  /* Memory object, and a sub-buffer that keeps its released parent. */
  ur_mem_handle_t buffer = NULL, sub = NULL;
  URT_REQUIRE(urMemBufferCreate(env.context, UR_MEM_FLAG_READ_WRITE, 256, NULL, &buffer));
  ur_buffer_region_t region = {UR_STRUCTURE_TYPE_BUFFER_REGION, NULL, 0, 64};
  URT_OK(urMemBufferPartition(buffer, UR_MEM_FLAG_READ_WRITE, UR_BUFFER_CREATE_TYPE_REGION, &region, &sub));
  /* Declared as memory.c does: the leak checker does not register sub-buffers. */
  if (sub) printf("urt-untracked %p\n", (void *)sub);
  URT_OK(urMemRelease(buffer));
  if (misuse) {
    STALE(urMemRelease(buffer));
    STALE(urMemRetain(buffer));
    STALE(urMemGetInfo(buffer, UR_MEM_INFO_SIZE, sizeof count, &count, NULL));
    STALE(urEnqueueMemBufferFill(env.queue, buffer, &byte, 1, 0, 16, 0, NULL, NULL));
  }
  URT_OK(urEnqueueMemBufferFill(env.queue, sub, &byte, 1, 0, 64, 0, NULL, NULL));
  URT_OK(urQueueFinish(env.queue));
  URT_OK(urMemRelease(sub));
  if (misuse) STALE(urMemRelease(sub));

  /* Command buffer, and a command handle that dies with it. */
  ur_exp_command_buffer_handle_t cb = urt_command_buffer(&env, true, true);
  ur_exp_command_buffer_command_handle_t command = NULL;
  URT_OK(urCommandBufferAppendUSMFillExp(cb, mem, &byte, 1, 256, 0, NULL, 0, NULL, NULL, NULL, &command));
  URT_OK(urCommandBufferFinalizeExp(cb));
  URT_OK(urCommandBufferReleaseExp(cb));
  if (misuse) {
    STALE(urCommandBufferReleaseExp(cb));
    STALE(urCommandBufferRetainExp(cb));
    STALE(urCommandBufferFinalizeExp(cb));
    STALE(urEnqueueCommandBufferExp(env.queue, cb, 0, NULL, NULL));
    if (command) {
      STALE(urCommandBufferUpdateWaitEventsExp(command, 0, NULL));
    }
  }

  /* Program and kernel, where the device builds one. */
  ur_program_handle_t program = urt_axpb_program(&env);
  if (program) {
    URT_REQUIRE(urProgramBuild(env.context, program, NULL));
    ur_kernel_handle_t kernel = NULL;
    URT_REQUIRE(urKernelCreate(program, "axpb", &kernel));
    URT_OK(urProgramRelease(program));
    if (misuse) {
      STALE(urProgramRelease(program));
      STALE(urProgramGetInfo(program, UR_PROGRAM_INFO_NUM_KERNELS, sizeof count, &count, NULL));
      STALE(urKernelCreate(program, "axpb", &kernel));
    }
    /* The kernel keeps its program: its info still answers. */
    ur_program_handle_t of_kernel = NULL;
    URT_OK(urKernelGetInfo(kernel, UR_KERNEL_INFO_PROGRAM, sizeof of_kernel, &of_kernel, NULL));
    URT_OK(urKernelRelease(kernel));
    if (misuse) {
      STALE(urKernelRelease(kernel));
      STALE(urKernelRetain(kernel));
      STALE(urKernelGetInfo(kernel, UR_KERNEL_INFO_FUNCTION_NAME, sizeof name, name, NULL));
    }
  }

  /* Graph and executable graph. */
  URT_OK(urQueueBeginGraphCaptureExp(env.queue));
  URT_OK(urEnqueueUSMFill(env.queue, mem, 1, &byte, 256, 0, NULL, NULL));
  ur_exp_graph_handle_t graph = NULL;
  URT_OK(urQueueEndGraphCaptureExp(env.queue, &graph));
  ur_exp_executable_graph_handle_t exec = NULL;
  URT_OK(urGraphInstantiateGraphExp(graph, &exec));
  URT_OK(urGraphDestroyExp(graph));
  URT_OK(urGraphExecutableGraphDestroyExp(exec));
  if (misuse) {
    STALE(urGraphDestroyExp(graph));
    STALE(urGraphExecutableGraphDestroyExp(exec));
    STALE(urEnqueueGraphExp(env.queue, exec, 0, NULL, NULL));
  }

  /* Many handles made after a release: the released one stays refused. */
  ur_context_handle_t old = NULL;
  URT_REQUIRE(urContextCreate(1, &env.device, NULL, &old));
  URT_OK(urContextRelease(old));
  enum { MANY = 40 };
  ur_context_handle_t fresh[MANY];
  for (int i = 0; i < MANY; i++) {
    URT_REQUIRE(urContextCreate(1, &env.device, NULL, &fresh[i]));
    URT_CHECK(fresh[i] != old, "context %d has the released handle's value", i);
  }
  if (misuse) STALE(urContextRetain(old));
  for (int i = 0; i < MANY; i++) URT_OK(urContextRelease(fresh[i]));

  /* Roots outlive any number of releases (the layer counts them). */
  for (int i = 0; misuse && i < 3; i++) {
    URT_OK(urDeviceRelease(env.device));
    URT_OK(urPlatformGetInfo(env.platform, UR_PLATFORM_INFO_NAME, sizeof name, name, NULL));
  }
  URT_OK(urDeviceGetInfo(env.device, UR_DEVICE_INFO_NAME, sizeof name, name, NULL));

  URT_OK(urQueueFinish(env.queue));
  URT_OK(urUSMFree(env.context, mem));
  urt_fini(&env);
  return urt_done("stale");
}
