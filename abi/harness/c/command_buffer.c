/* Command buffers without kernels: every memory append kind (USM fill,
 * memcpy, prefetch, advise; buffer fill, copy, read, write and the rect
 * forms), sync points, in-order buffers, many submissions in order, signal
 * and wait events and their updates, info and refusals. Kernel appends
 * are in kernels.c. */
#include "urt.h"

enum { N = 4096 };

/* Every append kind in one out-of-order buffer, data checked after two runs. */
static void every_append_kind(urt_env *env) {
  ur_exp_command_buffer_handle_t cb = urt_command_buffer(env, false, false);
  uint8_t *a = urt_device_alloc(env, N), *b = urt_device_alloc(env, N);
  ur_mem_handle_t buf = NULL, buf2 = NULL;
  URT_REQUIRE(urMemBufferCreate(env->context, UR_MEM_FLAG_READ_WRITE, N, NULL, &buf));
  URT_REQUIRE(urMemBufferCreate(env->context, UR_MEM_FLAG_READ_WRITE, N, NULL, &buf2));
  uint8_t *host_in = malloc(N), *host_out = calloc(1, N), *rect_out = calloc(1, N);
  for (int i = 0; i < N; i++) host_in[i] = (uint8_t)(i * 13);
  uint32_t pattern4 = 0xA1B2C3D4;
  uint8_t pattern3[3] = {1, 2, 3};
  ur_exp_command_buffer_sync_point_t s[12];
  URT_OK(urCommandBufferAppendUSMFillExp(cb, a, &pattern4, 4, N, 0, NULL, 0, NULL, &s[0], NULL, NULL));
  URT_OK(urCommandBufferAppendUSMPrefetchExp(cb, a, N, UR_USM_MIGRATION_FLAG_HOST_TO_DEVICE, 1, &s[0], 0, NULL, &s[1], NULL, NULL));
  URT_OK(urCommandBufferAppendUSMAdviseExp(cb, a, N, UR_USM_ADVICE_FLAG_SET_READ_MOSTLY, 1, &s[1], 0, NULL, &s[2], NULL, NULL));
  URT_OK(urCommandBufferAppendUSMMemcpyExp(cb, b, a, N, 1, &s[2], 0, NULL, &s[3], NULL, NULL));
  /* buf <- host_in; buf2 <- buf; buf2[0..3*K] filled with the 3-byte pattern */
  URT_OK(urCommandBufferAppendMemBufferWriteExp(cb, buf, 0, N, host_in, 0, NULL, 0, NULL, &s[4], NULL, NULL));
  URT_OK(urCommandBufferAppendMemBufferCopyExp(cb, buf, buf2, 0, 0, N, 1, &s[4], 0, NULL, &s[5], NULL, NULL));
  URT_OK(urCommandBufferAppendMemBufferFillExp(cb, buf2, pattern3, 3, 0, 3 * 100, 1, &s[5], 0, NULL, &s[6], NULL, NULL));
  URT_OK(urCommandBufferAppendMemBufferReadExp(cb, buf2, 0, N, host_out, 1, &s[6], 0, NULL, &s[7], NULL, NULL));
  /* A 16x16 rect from (16, 2) of a 64-byte-pitch view of buf to a packed host area. */
  ur_rect_offset_t origin = {16, 2, 0}, zero = {0, 0, 0};
  ur_rect_region_t region = {16, 16, 1};
  URT_OK(urCommandBufferAppendMemBufferReadRectExp(cb, buf, origin, zero, region, 64, 0, 16, 0, rect_out, 1, &s[4], 0,
                                                   NULL, &s[8], NULL, NULL));
  /* And a rect copy and rect write into buf2's second half after the read. */
  ur_rect_offset_t half = {0, 32, 0};
  URT_OK(urCommandBufferAppendMemBufferCopyRectExp(cb, buf, buf2, origin, half, region, 64, 0, 64, 0, 1, &s[7], 0, NULL,
                                                   &s[9], NULL, NULL));
  URT_OK(urCommandBufferAppendMemBufferWriteRectExp(cb, buf2, (ur_rect_offset_t){0, 60, 0}, zero, (ur_rect_region_t){64, 2, 1},
                                                    64, 0, 64, 0, host_in, 1, &s[9], 0, NULL, &s[10], NULL, NULL));
  URT_OK(urCommandBufferFinalizeExp(cb));
  for (int run = 0; run < 2; run++) {
    memset(host_out, 0, N);
    memset(rect_out, 0, N);
    URT_OK(urEnqueueCommandBufferExp(env->queue, cb, 0, NULL, NULL));
    URT_OK(urQueueFinish(env->queue));
    uint8_t *bb = urt_read(env, b, N);
    URT_CHECK(urt_repeats(bb, N, &pattern4, 4), "run %d: USM fill then copy", run);
    free(bb);
    URT_CHECK(urt_repeats(host_out, 300, pattern3, 3), "run %d: 3-byte buffer fill", run);
    URT_CHECK(memcmp(host_out + 300, host_in + 300, N - 300) == 0, "run %d: buffer write, copy, read", run);
    int rect_ok = 1;
    for (int y = 0; y < 16; y++)
      for (int x = 0; x < 16; x++) rect_ok &= rect_out[y * 16 + x] == host_in[(2 + y) * 64 + 16 + x];
    URT_CHECK(rect_ok, "run %d: rect read", run);
    uint8_t check[N];
    URT_OK(urEnqueueMemBufferRead(env->queue, buf2, true, 0, N, check, 0, NULL, NULL));
    int copy_ok = 1;
    for (int y = 0; y < 16; y++)
      for (int x = 0; x < 16; x++) copy_ok &= check[(32 + y) * 64 + x] == host_in[(2 + y) * 64 + 16 + x];
    URT_CHECK(copy_ok, "run %d: rect copy", run);
    URT_CHECK(memcmp(check + 60 * 64, host_in, 128) == 0, "run %d: rect write", run);
  }
  URT_OK(urCommandBufferReleaseExp(cb));
  URT_OK(urMemRelease(buf));
  URT_OK(urMemRelease(buf2));
  URT_OK(urUSMFree(env->context, a));
  URT_OK(urUSMFree(env->context, b));
  free(host_in);
  free(host_out);
  free(rect_out);
}

/* An in-order buffer: a chain of fills and copies without sync points,
 * submitted many times; each submission adds one to every byte. */
static void in_order_many_submissions(urt_env *env) {
  ur_exp_command_buffer_handle_t cb = urt_command_buffer(env, false, true);
  uint8_t *counter = urt_device_alloc(env, 64), *scratch = urt_device_alloc(env, 64);
  uint8_t zero = 0;
  URT_OK(urEnqueueUSMFill(env->queue, counter, 1, &zero, 64, 0, NULL, NULL));
  /* scratch <- counter; counter <- scratch is a round trip: the data must stay. */
  URT_OK(urCommandBufferAppendUSMMemcpyExp(cb, scratch, counter, 64, 0, NULL, 0, NULL, NULL, NULL, NULL));
  URT_OK(urCommandBufferAppendUSMMemcpyExp(cb, counter, scratch, 64, 0, NULL, 0, NULL, NULL, NULL, NULL));
  URT_OK(urCommandBufferFinalizeExp(cb));
  uint8_t value = 9;
  URT_OK(urEnqueueUSMFill(env->queue, counter, 1, &value, 64, 0, NULL, NULL));
  for (int i = 0; i < 1000; i++) URT_OK(urEnqueueCommandBufferExp(env->queue, cb, 0, NULL, NULL));
  URT_OK(urQueueFinish(env->queue));
  uint8_t *host = urt_read(env, counter, 64);
  URT_CHECK(urt_repeats(host, 64, &value, 1), "after 1000 submissions");
  free(host);
  ur_exp_command_buffer_desc_t desc = {0};
  URT_OK(urCommandBufferGetInfoExp(cb, UR_EXP_COMMAND_BUFFER_INFO_DESCRIPTOR, sizeof desc, &desc, NULL));
  URT_CHECK(desc.isInOrder && !desc.isUpdatable, "descriptor in-order %d updatable %d", desc.isInOrder, desc.isUpdatable);
  uint32_t refs = 0;
  URT_OK(urCommandBufferRetainExp(cb));
  URT_OK(urCommandBufferGetInfoExp(cb, UR_EXP_COMMAND_BUFFER_INFO_REFERENCE_COUNT, sizeof refs, &refs, NULL));
  URT_CHECK(refs == 2, "reference count %u", refs);
  URT_OK(urCommandBufferReleaseExp(cb));
  URT_OK(urCommandBufferReleaseExp(cb));
  URT_OK(urUSMFree(env->context, counter));
  URT_OK(urUSMFree(env->context, scratch));
}

/* Signal and wait events between two buffers, and their updates. */
static void events(urt_env *env) {
  if (!urt_device_bool(env, UR_DEVICE_INFO_COMMAND_BUFFER_EVENT_SUPPORT_EXP)) return;
  ur_exp_command_buffer_handle_t producer = urt_command_buffer(env, true, false);
  ur_exp_command_buffer_handle_t consumer = urt_command_buffer(env, true, false);
  uint8_t *x = urt_device_alloc(env, 256), *y = urt_device_alloc(env, 256), *z = urt_device_alloc(env, 256);
  uint8_t one = 1, two = 2;
  ur_event_handle_t filled = NULL;
  ur_exp_command_buffer_command_handle_t fill_cmd = NULL, copy_cmd = NULL;
  URT_OK(urCommandBufferAppendUSMFillExp(producer, x, &one, 1, 256, 0, NULL, 0, NULL, NULL, &filled, &fill_cmd));
  urt_untracked(filled);
  URT_OK(urCommandBufferAppendUSMMemcpyExp(consumer, y, x, 256, 0, NULL, 1, &filled, NULL, NULL, &copy_cmd));
  URT_OK(urCommandBufferFinalizeExp(producer));
  URT_OK(urCommandBufferFinalizeExp(consumer));
  ur_queue_properties_t ooo = {UR_STRUCTURE_TYPE_QUEUE_PROPERTIES, NULL, 0};
  ur_queue_handle_t q2 = NULL;
  URT_OK(urQueueCreate(env->context, env->device, &ooo, &q2));
  URT_OK(urEnqueueCommandBufferExp(env->queue, producer, 0, NULL, NULL));
  URT_OK(urEnqueueCommandBufferExp(q2, consumer, 0, NULL, NULL));
  URT_OK(urQueueFinish(q2));
  URT_OK(urQueueFinish(env->queue));
  uint8_t *host = urt_read(env, y, 256);
  URT_CHECK(urt_repeats(host, 256, &one, 1), "the consumer waited for the producer's fill");
  free(host);
  /* A new signal event for the fill, which the copy now waits for. */
  ur_event_handle_t refilled = NULL;
  URT_OK(urCommandBufferUpdateSignalEventExp(fill_cmd, &refilled));
  urt_untracked(refilled);
  URT_OK(urCommandBufferUpdateWaitEventsExp(copy_cmd, 1, &refilled));
  URT_OK(urEnqueueUSMFill(env->queue, z, 1, &two, 256, 0, NULL, NULL));
  URT_OK(urEnqueueCommandBufferExp(env->queue, producer, 0, NULL, NULL));
  URT_OK(urEnqueueCommandBufferExp(q2, consumer, 0, NULL, NULL));
  URT_OK(urQueueFinish(q2));
  URT_OK(urQueueFinish(env->queue));
  host = urt_read(env, y, 256);
  URT_CHECK(urt_repeats(host, 256, &one, 1), "after the event updates");
  free(host);
  URT_RESULT(UR_RESULT_ERROR_INVALID_EVENT_WAIT_LIST, urCommandBufferUpdateWaitEventsExp(copy_cmd, 0, NULL));
  URT_OK(urEventRelease(filled));
  URT_OK(urEventRelease(refilled));
  URT_OK(urQueueRelease(q2));
  URT_OK(urCommandBufferReleaseExp(producer));
  URT_OK(urCommandBufferReleaseExp(consumer));
  URT_OK(urUSMFree(env->context, x));
  URT_OK(urUSMFree(env->context, y));
  URT_OK(urUSMFree(env->context, z));
}

/* What UR leaves undefined or lists as errors, with the codes cmdbuf returns. */
static void refusals(urt_env *env) {
  ur_exp_command_buffer_handle_t cb = urt_command_buffer(env, false, false);
  uint8_t *a = urt_device_alloc(env, 64);
  uint8_t one = 1;
  ur_exp_command_buffer_sync_point_t future = 5;
  URT_RESULT(UR_RESULT_ERROR_INVALID_COMMAND_BUFFER_SYNC_POINT_WAIT_LIST_EXP,
             urCommandBufferAppendUSMFillExp(cb, a, &one, 1, 64, 1, &future, 0, NULL, NULL, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE,
             urCommandBufferAppendUSMFillExp(cb, a, &one, 1, 65, 0, NULL, 0, NULL, NULL, NULL, NULL));
  ur_exp_command_buffer_command_handle_t command = NULL;
  URT_RESULT(UR_RESULT_ERROR_INVALID_OPERATION,
             urCommandBufferAppendUSMFillExp(cb, a, &one, 1, 64, 0, NULL, 0, NULL, NULL, NULL, &command));
  URT_RESULT(UR_RESULT_ERROR_INVALID_OPERATION, urEnqueueCommandBufferExp(env->queue, cb, 0, NULL, NULL));
  URT_OK(urCommandBufferFinalizeExp(cb));
  URT_RESULT(UR_RESULT_ERROR_INVALID_OPERATION, urCommandBufferFinalizeExp(cb));
  URT_RESULT(UR_RESULT_ERROR_INVALID_OPERATION,
             urCommandBufferAppendUSMFillExp(cb, a, &one, 1, 64, 0, NULL, 0, NULL, NULL, NULL, NULL));
  URT_OK(urCommandBufferReleaseExp(cb));
  URT_OK(urUSMFree(env->context, a));
}

int main(void) {
  urt_env env;
  urt_init(&env);
  every_append_kind(&env);
  in_order_many_submissions(&env);
  events(&env);
  refusals(&env);
  urt_fini(&env);
  return urt_done("command_buffer");
}
