/* Events: dependencies on out-of-order queues, barriers, events-waits,
 * event info and reference counts, profiling timestamps, completion
 * callbacks, host tasks (urEnqueueHostTaskExp). */
#define _POSIX_C_SOURCE 199309L
#include "urt.h"

#include <time.h>

/* Counts completions in the low byte and marks the other statuses above it. */
static void count_callback(ur_event_handle_t event, ur_execution_info_t status, void *data) {
  (void)event;
  int add = status == UR_EXECUTION_INFO_COMPLETE ? 1 : status == UR_EXECUTION_INFO_RUNNING ? 0x100 : 0x10000;
  __atomic_add_fetch((int *)data, add, __ATOMIC_SEQ_CST);
}

static void host_task(void *data) {
  /* Runs after the fill it waits for: doubles what it finds. */
  int *value = data;
  *value *= 2;
}

int main(void) {
  urt_env env;
  urt_init(&env);
  ur_queue_flags_t supported = 0;
  URT_OK(urDeviceGetInfo(env.device, UR_DEVICE_INFO_QUEUE_PROPERTIES, sizeof supported, &supported, NULL));
  ur_queue_flags_t ooo_flag = supported & UR_QUEUE_FLAG_OUT_OF_ORDER_EXEC_MODE_ENABLE;
  ur_queue_properties_t props = {UR_STRUCTURE_TYPE_QUEUE_PROPERTIES, NULL, ooo_flag | (supported & UR_QUEUE_FLAG_PROFILING_ENABLE)};
  ur_queue_handle_t q = NULL;
  URT_REQUIRE(urQueueCreate(env.context, env.device, &props, &q));
  const size_t n = 1 << 20;
  uint8_t *a = urt_device_alloc(&env, n), *b = urt_device_alloc(&env, n);

  /* fill a; copy a -> b after it; a barrier; fill a again after the barrier. */
  uint8_t five = 5, six = 6;
  ur_event_handle_t fill = NULL, copy = NULL, barrier = NULL, refill = NULL, waited = NULL;
  URT_OK(urEnqueueUSMFill(q, a, 1, &five, n, 0, NULL, &fill));
  URT_OK(urEnqueueUSMMemcpy(q, false, b, a, n, 1, &fill, &copy));
  URT_OK(urEnqueueEventsWaitWithBarrier(q, 0, NULL, &barrier));
  URT_OK(urEnqueueUSMFill(q, a, 1, &six, n, 0, NULL, &refill));
  URT_OK(urEnqueueEventsWait(q, 1, &refill, &waited));
  URT_OK(urEventWait(1, &waited));
  uint8_t *hb = urt_read(&env, b, n), *ha = urt_read(&env, a, n);
  URT_CHECK(urt_repeats(hb, n, &five, 1), "the copy ran after the first fill");
  URT_CHECK(urt_repeats(ha, n, &six, 1), "the second fill ran after the barrier");
  free(ha);
  free(hb);

  /* Event info. */
  ur_event_status_t status = UR_EVENT_STATUS_QUEUED;
  URT_OK(urEventGetInfo(copy, UR_EVENT_INFO_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
  URT_CHECK(status == UR_EVENT_STATUS_COMPLETE, "status %d", status);
  ur_command_t type = UR_COMMAND_FORCE_UINT32;
  URT_OK(urEventGetInfo(copy, UR_EVENT_INFO_COMMAND_TYPE, sizeof type, &type, NULL));
  URT_CHECK(type == UR_COMMAND_USM_MEMCPY, "command type %d", type);
  ur_queue_handle_t eq = NULL;
  URT_OK(urEventGetInfo(copy, UR_EVENT_INFO_COMMAND_QUEUE, sizeof eq, &eq, NULL));
  URT_CHECK(eq == q, "the event's queue");
  ur_context_handle_t ec = NULL;
  URT_OK(urEventGetInfo(copy, UR_EVENT_INFO_CONTEXT, sizeof ec, &ec, NULL));
  URT_CHECK(ec == env.context, "the event's context");
  uint32_t refs = 0;
  URT_OK(urEventRetain(copy));
  URT_OK(urEventGetInfo(copy, UR_EVENT_INFO_REFERENCE_COUNT, sizeof refs, &refs, NULL));
  URT_CHECK(refs == 2, "reference count %u", refs);
  URT_OK(urEventRelease(copy));

  /* Profiling timestamps, where the queue records them. */
  uint64_t start = 0, end = 0;
  if (supported & UR_QUEUE_FLAG_PROFILING_ENABLE) {
    URT_OK(urEventGetProfilingInfo(copy, UR_PROFILING_INFO_COMMAND_START, sizeof start, &start, NULL));
    URT_OK(urEventGetProfilingInfo(copy, UR_PROFILING_INFO_COMMAND_END, sizeof end, &end, NULL));
    URT_CHECK(end >= start && start > 0, "profiling %llu..%llu", (unsigned long long)start, (unsigned long long)end);
  }
  /* A queue without profiling has no timestamps to give. */
  ur_event_handle_t plain = NULL;
  URT_OK(urEnqueueEventsWait(env.queue, 0, NULL, &plain));
  URT_OK(urEventWait(1, &plain));
  URT_RESULT(UR_RESULT_ERROR_PROFILING_INFO_NOT_AVAILABLE,
             urEventGetProfilingInfo(plain, UR_PROFILING_INFO_COMMAND_START, sizeof start, &start, NULL));
  /* Also with both outputs null (UR's CTS, ReleaseEventWhileTimestampWritePending). */
  URT_RESULT(UR_RESULT_ERROR_PROFILING_INFO_NOT_AVAILABLE,
             urEventGetProfilingInfo(plain, UR_PROFILING_INFO_COMMAND_QUEUED, sizeof start, NULL, NULL));
  URT_OK(urEventRelease(plain));

  /* A completion callback, and a host task between device commands. */
  int called = 0;
  URT_OK(urEventSetCallback(copy, UR_EXECUTION_INFO_COMPLETE, count_callback, &called));
  /* Statuses the command is past by now are reported too (UR's CTS, urEventSetCallbackTest.AllStates). */
  URT_OK(urEventSetCallback(copy, UR_EXECUTION_INFO_RUNNING, count_callback, &called));
  URT_OK(urEventSetCallback(copy, UR_EXECUTION_INFO_SUBMITTED, count_callback, &called));
  URT_RESULT(UR_RESULT_ERROR_UNSUPPORTED_ENUMERATION, urEventSetCallback(copy, UR_EXECUTION_INFO_QUEUED, count_callback, &called));
  int *value = NULL;
  if (urt_usm_supported(&env, UR_DEVICE_INFO_USM_HOST_SUPPORT)) {
    URT_OK(urUSMHostAlloc(env.context, NULL, NULL, sizeof(int), (void **)&value));
    int three = 3;
    ur_event_handle_t set = NULL, task = NULL;
    URT_OK(urEnqueueUSMFill(env.queue, value, sizeof three, &three, sizeof three, 0, NULL, &set));
    URT_OK(urEnqueueHostTaskExp(env.queue, host_task, value, NULL, 1, &set, &task));
    URT_OK(urEventWait(1, &task));
    URT_CHECK(*value == 6, "the host task doubled the filled value: %d", *value);
    ur_command_t task_type = UR_COMMAND_FORCE_UINT32;
    URT_OK(urEventGetInfo(task, UR_EVENT_INFO_COMMAND_TYPE, sizeof task_type, &task_type, NULL));
    URT_CHECK(task_type == UR_COMMAND_HOST_TASK_EXP, "host task command type %d", task_type);
    URT_OK(urEventRelease(set));
    URT_OK(urEventRelease(task));
    URT_OK(urUSMFree(env.context, value));
  }
  for (int i = 0; i < 200 && __atomic_load_n(&called, __ATOMIC_SEQ_CST) != 0x10101; i++) {
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  URT_CHECK(__atomic_load_n(&called, __ATOMIC_SEQ_CST) == 0x10101, "callbacks (submitted, running, complete): %x", called);

  /* Releasing a queue's last reference waits for its commands, though its
   * events still name it (UR's CTS, ReleaseEventAfterQueueRelease). */
  ur_queue_handle_t brief = NULL;
  URT_OK(urQueueCreate(env.context, env.device, NULL, &brief));
  ur_event_handle_t last = NULL;
  URT_OK(urEnqueueUSMFill(brief, a, 1, &five, n, 0, NULL, &last));
  URT_OK(urQueueRelease(brief));
  ur_event_status_t last_status = UR_EVENT_STATUS_QUEUED;
  URT_OK(urEventGetInfo(last, UR_EVENT_INFO_COMMAND_EXECUTION_STATUS, sizeof last_status, &last_status, NULL));
  URT_CHECK(last_status == UR_EVENT_STATUS_COMPLETE, "after the queue's release the fill is %d", last_status);
  URT_OK(urEventRelease(last));

  /* Events of two contexts waited for together (UR's CTS,
   * urEventWaitTest.WaitWithMultipleContexts): each is waited for. */
  {
    ur_context_handle_t other = NULL;
    URT_OK(urContextCreate(1, &env.device, NULL, &other));
    ur_queue_handle_t oq = NULL;
    URT_OK(urQueueCreate(other, env.device, NULL, &oq));
    ur_event_handle_t mine = NULL, theirs = NULL;
    URT_OK(urEnqueueEventsWait(q, 0, NULL, &mine));
    URT_OK(urEnqueueEventsWait(oq, 0, NULL, &theirs));
    ur_event_handle_t both[] = {mine, theirs};
    URT_OK(urEventWait(2, both));
    URT_OK(urEventRelease(mine));
    URT_OK(urEventRelease(theirs));
    URT_OK(urQueueRelease(oq));
    URT_OK(urContextRelease(other));
  }

  /* Waiting for nothing, and for a list that does not match its count. */
  URT_RESULT(UR_RESULT_ERROR_INVALID_VALUE, urEventWait(0, &fill));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urEventWait(1, NULL));

  ur_event_handle_t all[] = {fill, copy, barrier, refill, waited};
  for (int i = 0; i < 5; i++) URT_OK(urEventRelease(all[i]));
  URT_OK(urQueueFinish(q));
  URT_OK(urQueueRelease(q));
  URT_OK(urUSMFree(env.context, a));
  URT_OK(urUSMFree(env.context, b));
  urt_fini(&env);
  return urt_done("events");
}
