/* Misuse: null handles and pointers, handles of the wrong kind, values
 * outside enumerations, arrays that disagree with their counts, info
 * buffers that are too small. Each call must return the code ur_api.h
 * lists for it, and never crash.
 *
 * urt: also without layers
 * (The harness runs this program twice: under the validation layer, which
 * answers many of these calls itself, and without it, so that every call
 * reaches the adapter.) */
#include "urt.h"

int main(void) {
  urt_env env;
  urt_init(&env);
  char name[256];
  size_t size = 0;
  uint8_t *mem = urt_device_alloc(&env, 256);
  uint8_t byte = 1;
  ur_event_handle_t event = NULL;

  /* Null handles. */
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urPlatformGetInfo(NULL, UR_PLATFORM_INFO_NAME, sizeof name, name, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urDeviceGetInfo(NULL, UR_DEVICE_INFO_NAME, sizeof name, name, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urContextRetain(NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urQueueFinish(NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urEventRelease(NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urMemRelease(NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urCommandBufferFinalizeExp(NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE,
             urEnqueueUSMFill(NULL, mem, 1, &byte, 256, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urUSMDeviceAlloc(env.context, NULL, NULL, NULL, 64, (void **)&mem));
  uint64_t device_time = 0, host_time = 0;
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urDeviceGetGlobalTimestamps(NULL, &device_time, &host_time));

  /* Null pointers. */
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urContextCreate(1, &env.device, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urQueueCreate(env.context, env.device, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urUSMDeviceAlloc(env.context, env.device, NULL, NULL, 64, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urEnqueueUSMFill(env.queue, NULL, 1, &byte, 256, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urEnqueueUSMFill(env.queue, mem, 1, NULL, 256, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urEnqueueUSMMemcpy(env.queue, true, NULL, mem, 16, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urUSMFree(env.context, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urDeviceGetInfo(env.device, UR_DEVICE_INFO_NAME, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urDeviceGetInfo(env.device, UR_DEVICE_INFO_NAME, 8, NULL, &size));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urAdapterGet(0, NULL, NULL));

  /* Sizes of info queries. */
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE, urDeviceGetInfo(env.device, UR_DEVICE_INFO_NAME, 0, name, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE, urDeviceGetInfo(env.device, UR_DEVICE_INFO_NAME, 1, name, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE, urDeviceGetInfo(env.device, UR_DEVICE_INFO_MAX_COMPUTE_UNITS, 2, name, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE, urAdapterGet(0, &env.adapter, NULL));

  /* Values outside enumerations. */
  URT_RESULT(UR_RESULT_ERROR_INVALID_ENUMERATION,
             urPlatformGetInfo(env.platform, (ur_platform_info_t)0x7ffffff0, sizeof name, name, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_ENUMERATION,
             urContextGetInfo(env.context, (ur_context_info_t)0x7ffffff0, sizeof name, name, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_ENUMERATION,
             urQueueGetInfo(env.queue, (ur_queue_info_t)0x7ffffff0, sizeof name, name, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_ENUMERATION,
             urDeviceGetInfo(env.device, (ur_device_info_t)0x7ffffff0, sizeof name, name, NULL));
  /* Between two enumerators: the validation layer only checks the upper bound. */
  URT_RESULT(UR_RESULT_ERROR_INVALID_ENUMERATION,
             urDeviceGetInfo(env.device, (ur_device_info_t)0x200D, sizeof name, name, NULL));
  uint32_t count = 0;
  URT_RESULT(UR_RESULT_ERROR_INVALID_ENUMERATION, urDeviceGet(env.platform, (ur_device_type_t)99, 0, NULL, &count));
  ur_queue_properties_t bad_flags = {UR_STRUCTURE_TYPE_QUEUE_PROPERTIES, NULL, 0x80000000u};
  ur_queue_handle_t q = NULL;
  URT_RESULT(UR_RESULT_ERROR_INVALID_ENUMERATION, urQueueCreate(env.context, env.device, &bad_flags, &q));
  URT_RESULT(UR_RESULT_ERROR_INVALID_ENUMERATION,
             urEnqueueUSMPrefetch(env.queue, mem, 256, 0x80000000u, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_ENUMERATION, urEnqueueUSMAdvise(env.queue, mem, 256, 0x80000000u, NULL));

  /* Handles of the wrong kind. */
  URT_RESULT(UR_RESULT_ERROR_INVALID_CONTEXT,
             urContextGetInfo((ur_context_handle_t)env.queue, UR_CONTEXT_INFO_NUM_DEVICES, sizeof size, &size, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_QUEUE, urQueueFinish((ur_queue_handle_t)env.context));
  URT_RESULT(UR_RESULT_ERROR_INVALID_DEVICE,
             urDeviceGetInfo((ur_device_handle_t)env.platform, UR_DEVICE_INFO_NAME, sizeof name, name, NULL));

  /* Arrays that disagree with their counts. */
  URT_RESULT(UR_RESULT_ERROR_INVALID_EVENT_WAIT_LIST, urEnqueueUSMFill(env.queue, mem, 1, &byte, 256, 1, NULL, NULL));
  URT_OK(urEnqueueUSMFill(env.queue, mem, 1, &byte, 256, 0, NULL, &event));
  URT_RESULT(UR_RESULT_ERROR_INVALID_EVENT_WAIT_LIST, urEnqueueUSMFill(env.queue, mem, 1, &byte, 256, 0, &event, NULL));
  ur_exp_command_buffer_handle_t cb = urt_command_buffer(&env, false, false);
  URT_RESULT(UR_RESULT_ERROR_INVALID_COMMAND_BUFFER_SYNC_POINT_WAIT_LIST_EXP,
             urCommandBufferAppendUSMFillExp(cb, mem, &byte, 1, 256, 2, NULL, 0, NULL, NULL, NULL, NULL));

  /* Memory commands outside their allocations, and USM of no allocation. */
  uint8_t host[512];
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE, urEnqueueUSMMemcpy(env.queue, true, host, mem, 512, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_VALUE, urEnqueueUSMFill(env.queue, host, 1, &byte, 16, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE, urEnqueueUSMFill(env.queue, mem, 0, &byte, 16, 0, NULL, NULL));

  URT_OK(urCommandBufferReleaseExp(cb));
  URT_OK(urEventRelease(event));
  URT_OK(urQueueFinish(env.queue));
  URT_OK(urUSMFree(env.context, mem));
  urt_fini(&env);
  return urt_done("misuse");
}
