/* Memory objects and timestamps: sub-buffers (urMemBufferPartition) used by
 * every buffer command — read, write, copy, fill, rect, map, command-buffer
 * appends — and their info; misuse codes of the partition; USE_HOST_POINTER
 * buffers using the host memory in place; copies across two contexts of
 * the device; timestamp
 * recordings (urEnqueueTimestampRecordingExp) on a queue without profiling,
 * between two device timestamp pairs, and their misuse; pitched USM copies
 * and fills (urEnqueueUSMMemcpy2D, urEnqueueUSMFill2D).
 *
 * urt: also without layers
 * (The harness runs this program twice: under the validation layer, which
 * answers some misuse itself, and without it, so that it reaches the
 * adapter.) */
#include "urt.h"

/* The device's base address alignment in bytes. */
static size_t base_align(urt_env *env) {
  uint32_t bits = 0;
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, NULL));
  return bits >= 8 ? bits / 8 : 1;
}

/* UR 0.12's leak checker registers only handles of parameters marked
 * [alloc], and urMemBufferPartition's phMem is not: every use and release of
 * a sub-buffer is reported as that of a nonexistent handle. The harness
 * forgives exactly the reports about handles declared so (urt.h). */
static void untracked_mem(ur_mem_handle_t mem) {
  if (mem) printf("urt-untracked %p\n", (void *)mem);
}

static ur_mem_handle_t partition(ur_mem_handle_t parent, ur_mem_flags_t flags, size_t origin, size_t size) {
  ur_buffer_region_t region = {UR_STRUCTURE_TYPE_BUFFER_REGION, NULL, origin, size};
  ur_mem_handle_t sub = NULL;
  URT_OK(urMemBufferPartition(parent, flags, UR_BUFFER_CREATE_TYPE_REGION, &region, &sub));
  untracked_mem(sub);
  return sub;
}

static ur_result_t try_partition(ur_mem_handle_t parent, ur_mem_flags_t flags, size_t origin, size_t size) {
  ur_buffer_region_t region = {UR_STRUCTURE_TYPE_BUFFER_REGION, NULL, origin, size};
  ur_mem_handle_t sub = NULL;
  ur_result_t r = urMemBufferPartition(parent, flags, UR_BUFFER_CREATE_TYPE_REGION, &region, &sub);
  if (r == UR_RESULT_SUCCESS) {
    untracked_mem(sub);
    URT_OK(urMemRelease(sub));
  }
  return r;
}

/* The rules of the partition, and the sub-buffer's info. */
static void partition_rules(urt_env *env) {
  size_t align = base_align(env);
  size_t size = 4 * (align > 256 ? align : 256);
  ur_mem_handle_t buffer = NULL, ro = NULL;
  URT_REQUIRE(urMemBufferCreate(env->context, UR_MEM_FLAG_READ_WRITE, size, NULL, &buffer));
  URT_REQUIRE(urMemBufferCreate(env->context, UR_MEM_FLAG_READ_ONLY, size, NULL, &ro));
  ur_mem_handle_t sub = partition(buffer, UR_MEM_FLAG_READ_WRITE, align, 2 * align);
  size_t got = 0;
  URT_OK(urMemGetInfo(sub, UR_MEM_INFO_SIZE, sizeof got, &got, NULL));
  URT_CHECK(got == 2 * align, "sub-buffer size %zu, expected %zu", got, 2 * align);
  ur_context_handle_t ctx = NULL;
  URT_OK(urMemGetInfo(sub, UR_MEM_INFO_CONTEXT, sizeof ctx, &ctx, NULL));
  URT_CHECK(ctx == env->context, "sub-buffer context");
  uint32_t refs = 0;
  URT_OK(urMemGetInfo(sub, UR_MEM_INFO_REFERENCE_COUNT, sizeof refs, &refs, NULL));
  URT_CHECK(refs == 1, "sub-buffer reference count %u", refs);

  ur_buffer_region_t region = {UR_STRUCTURE_TYPE_BUFFER_REGION, NULL, 0, 64};
  ur_mem_handle_t out = NULL;
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE,
             urMemBufferPartition(NULL, UR_MEM_FLAG_READ_WRITE, UR_BUFFER_CREATE_TYPE_REGION, &region, &out));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER,
             urMemBufferPartition(buffer, UR_MEM_FLAG_READ_WRITE, UR_BUFFER_CREATE_TYPE_REGION, NULL, &out));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER,
             urMemBufferPartition(buffer, UR_MEM_FLAG_READ_WRITE, UR_BUFFER_CREATE_TYPE_REGION, &region, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_ENUMERATION,
             urMemBufferPartition(buffer, UR_MEM_FLAG_FORCE_UINT32, UR_BUFFER_CREATE_TYPE_REGION, &region, &out));
  URT_RESULT(UR_RESULT_ERROR_INVALID_ENUMERATION,
             urMemBufferPartition(buffer, UR_MEM_FLAG_READ_WRITE, UR_BUFFER_CREATE_TYPE_FORCE_UINT32, &region, &out));
  URT_RESULT(UR_RESULT_ERROR_INVALID_BUFFER_SIZE, try_partition(buffer, UR_MEM_FLAG_READ_WRITE, 0, 0));
  URT_RESULT(UR_RESULT_ERROR_INVALID_BUFFER_SIZE, try_partition(buffer, UR_MEM_FLAG_READ_WRITE, 0, size + 1));
  URT_RESULT(UR_RESULT_ERROR_INVALID_BUFFER_SIZE, try_partition(buffer, UR_MEM_FLAG_READ_WRITE, align, size));
  if (align > 1)
    URT_RESULT(UR_RESULT_ERROR_MISALIGNED_SUB_BUFFER_OFFSET,
               try_partition(buffer, UR_MEM_FLAG_READ_WRITE, align / 2, 16));
  URT_RESULT(UR_RESULT_ERROR_INVALID_MEM_OBJECT, try_partition(sub, UR_MEM_FLAG_READ_WRITE, 0, 16));
  URT_RESULT(UR_RESULT_ERROR_INVALID_VALUE, try_partition(ro, UR_MEM_FLAG_READ_WRITE, 0, 16));
  URT_RESULT(UR_RESULT_ERROR_INVALID_VALUE, try_partition(ro, UR_MEM_FLAG_WRITE_ONLY, 0, 16));
  URT_RESULT(UR_RESULT_SUCCESS, try_partition(ro, UR_MEM_FLAG_READ_ONLY, 0, 16));
  URT_RESULT(UR_RESULT_SUCCESS, try_partition(ro, 0, 0, 16));
  URT_RESULT(UR_RESULT_ERROR_INVALID_VALUE,
             try_partition(buffer, UR_MEM_FLAG_READ_WRITE | UR_MEM_FLAG_ALLOC_HOST_POINTER, 0, 16));
  URT_RESULT(UR_RESULT_ERROR_INVALID_VALUE,
             try_partition(buffer, UR_MEM_FLAG_READ_WRITE | UR_MEM_FLAG_USE_HOST_POINTER, 0, 16));
  /* A sub-buffer outlives its parent's handle. */
  URT_OK(urMemRelease(buffer));
  uint8_t byte = 0x42, back = 0;
  URT_OK(urEnqueueMemBufferWrite(env->queue, sub, true, 7, 1, &byte, 0, NULL, NULL));
  URT_OK(urEnqueueMemBufferRead(env->queue, sub, true, 7, 1, &back, 0, NULL, NULL));
  URT_CHECK(back == 0x42, "a sub-buffer after its parent's release read %u", back);
  URT_OK(urMemRelease(sub));
  URT_OK(urMemRelease(ro));
}

/* Every buffer command through sub-buffers reaches exactly their regions. */
static void commands(urt_env *env) {
  size_t align = base_align(env);
  const size_t region = 256;
  size_t stride = (region + align - 1) / align * align;
  size_t size = 3 * stride;
  uint8_t *data = malloc(size), *expected = malloc(size), *seen = malloc(size);
  for (size_t i = 0; i < size; i++) data[i] = (uint8_t)(i * 13 + 5);
  memcpy(expected, data, size);
  ur_buffer_properties_t props = {UR_STRUCTURE_TYPE_BUFFER_PROPERTIES, NULL, data};
  ur_mem_handle_t buffer = NULL;
  URT_REQUIRE(urMemBufferCreate(env->context, UR_MEM_FLAG_READ_WRITE | UR_MEM_FLAG_ALLOC_COPY_HOST_POINTER, size,
                                &props, &buffer));
  ur_mem_handle_t a = partition(buffer, 0, 0, region), b = partition(buffer, 0, stride, region),
                  c = partition(buffer, 0, 2 * stride, region);

  /* Read and write at offsets of the sub-buffer. */
  uint8_t chunk[64];
  URT_OK(urEnqueueMemBufferRead(env->queue, b, true, 16, sizeof chunk, chunk, 0, NULL, NULL));
  URT_CHECK(memcmp(chunk, data + stride + 16, sizeof chunk) == 0, "read through a sub-buffer");
  memset(chunk, 0xAB, sizeof chunk);
  URT_OK(urEnqueueMemBufferWrite(env->queue, b, true, region - sizeof chunk, sizeof chunk, chunk, 0, NULL, NULL));
  memset(expected + stride + region - sizeof chunk, 0xAB, sizeof chunk);
  /* Copy between sub-buffers, fill one. */
  URT_OK(urEnqueueMemBufferCopy(env->queue, a, c, 0, 32, 64, 0, NULL, NULL));
  memcpy(expected + 2 * stride + 32, expected, 64);
  uint32_t pattern = 0xC0FFEE11;
  URT_OK(urEnqueueMemBufferFill(env->queue, a, &pattern, sizeof pattern, 128, 64, 0, NULL, NULL));
  for (size_t i = 0; i < 64; i += 4) memcpy(expected + 128 + i, &pattern, 4);
  /* A rect write: 4 rows of 8 bytes at (4, 2) in rows of 16. */
  uint8_t rect[32];
  for (int i = 0; i < 32; i++) rect[i] = (uint8_t)(200 + i);
  ur_rect_offset_t origin = {4, 2, 0}, zero = {0, 0, 0};
  ur_rect_region_t rr = {8, 4, 1};
  URT_OK(urEnqueueMemBufferWriteRect(env->queue, c, true, origin, zero, rr, 16, 0, 0, 0, rect, 0, NULL, NULL));
  for (int row = 0; row < 4; row++) memcpy(expected + 2 * stride + (2 + row) * 16 + 4, rect + row * 8, 8);
  URT_OK(urEnqueueMemBufferRead(env->queue, buffer, true, 0, size, seen, 0, NULL, NULL));
  URT_CHECK(memcmp(seen, expected, size) == 0, "the parent after reads, writes, copies, fills and a rect write");

  /* A map of a sub-buffer maps its region; the unmap writes it back there. */
  uint8_t *mapped = NULL;
  URT_OK(urEnqueueMemBufferMap(env->queue, b, true, UR_MAP_FLAG_READ | UR_MAP_FLAG_WRITE, 8, 32, 0, NULL, NULL,
                               (void **)&mapped));
  if (mapped) {
    URT_CHECK(memcmp(mapped, expected + stride + 8, 32) == 0, "mapped bytes");
    memset(mapped, 0x11, 32);
    URT_OK(urEnqueueMemUnmap(env->queue, b, mapped, 0, NULL, NULL));
    memset(expected + stride + 8, 0x11, 32);
  }

  /* Command-buffer appends on sub-buffers, replayed. */
  ur_exp_command_buffer_handle_t cb = urt_command_buffer(env, false, true);
  URT_OK(urCommandBufferAppendMemBufferCopyExp(cb, b, a, 0, 0, region, 0, NULL, 0, NULL, NULL, NULL, NULL));
  uint8_t one = 0x99;
  URT_OK(urCommandBufferAppendMemBufferFillExp(cb, c, &one, 1, 0, 16, 0, NULL, 0, NULL, NULL, NULL, NULL));
  URT_OK(urCommandBufferFinalizeExp(cb));
  for (int run = 0; run < 2; run++) {
    URT_OK(urEnqueueCommandBufferExp(env->queue, cb, 0, NULL, NULL));
    URT_OK(urQueueFinish(env->queue));
  }
  memcpy(expected, expected + stride, region);
  memset(expected + 2 * stride, 0x99, 16);
  URT_OK(urEnqueueMemBufferRead(env->queue, buffer, true, 0, size, seen, 0, NULL, NULL));
  URT_CHECK(memcmp(seen, expected, size) == 0, "the parent after the command buffer");
  URT_OK(urCommandBufferReleaseExp(cb));

  /* Bounds are the sub-buffer's, overlap is judged in the parent. */
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE,
             urEnqueueMemBufferRead(env->queue, b, true, region - 8, 16, chunk, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE,
             urEnqueueMemBufferFill(env->queue, a, &pattern, sizeof pattern, region, 4, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_OVERLAPPING_REGIONS,
             urEnqueueMemBufferCopy(env->queue, buffer, b, stride + 4, 0, 16, 0, NULL, NULL));

  URT_OK(urMemRelease(a));
  URT_OK(urMemRelease(b));
  URT_OK(urMemRelease(c));
  URT_OK(urMemRelease(buffer));
  free(data);
  free(expected);
  free(seen);
}

/* A sub-buffer of a USE_HOST_POINTER buffer maps onto the host memory at
 * its origin, as OpenCL's do. */
static void host_pointer_sub_buffer(urt_env *env) {
  size_t align = base_align(env);
  size_t size = 2 * (align > 128 ? align : 128);
  uint8_t *host = calloc(1, size);
  ur_buffer_properties_t props = {UR_STRUCTURE_TYPE_BUFFER_PROPERTIES, NULL, host};
  ur_mem_handle_t buffer = NULL;
  URT_REQUIRE(urMemBufferCreate(env->context, UR_MEM_FLAG_READ_WRITE | UR_MEM_FLAG_USE_HOST_POINTER, size, &props,
                                &buffer));
  ur_mem_handle_t sub = partition(buffer, 0, size / 2, size / 2);
  uint8_t *mapped = NULL;
  URT_OK(urEnqueueMemBufferMap(env->queue, sub, true, UR_MAP_FLAG_WRITE, 4, 8, 0, NULL, NULL, (void **)&mapped));
  URT_CHECK(mapped == host + size / 2 + 4, "map at %p, expected the host memory at %p", (void *)mapped,
            (void *)(host + size / 2 + 4));
  if (mapped) {
    memset(mapped, 0x3C, 8);
    URT_OK(urEnqueueMemUnmap(env->queue, sub, mapped, 0, NULL, NULL));
  }
  uint8_t back[8] = {0};
  URT_OK(urEnqueueMemBufferRead(env->queue, buffer, true, size / 2 + 4, 8, back, 0, NULL, NULL));
  URT_CHECK(back[0] == 0x3C && back[7] == 0x3C, "the unmap wrote back %u %u", back[0], back[7]);
  URT_OK(urMemRelease(sub));
  URT_OK(urMemRelease(buffer));
  free(host);
}

/* USE_HOST_POINTER makes the host memory the buffer's storage (UR's
 * urMemBufferCreateTest.UseHostPointer): host writes after creation reach a
 * read without a map, and a fill's bytes are in the host memory once it
 * completed. Required wherever the library uses the memory in place: every
 * device but OpenCL GPUs, whose drivers may keep a copy, as OpenCL allows. */
static void use_host_pointer(urt_env *env) {
  enum { SIZE = 4096 };
  uint8_t *host = malloc(SIZE);
  for (size_t i = 0; i < SIZE; i++) host[i] = (uint8_t)(i & 0xff);
  ur_buffer_properties_t props = {UR_STRUCTURE_TYPE_BUFFER_PROPERTIES, NULL, host};
  ur_mem_handle_t buffer = NULL;
  URT_REQUIRE(urMemBufferCreate(env->context, UR_MEM_FLAG_USE_HOST_POINTER, SIZE, &props, &buffer));
  for (size_t i = 0; i < SIZE; i++) host[i] = (uint8_t)(i & 0x0f);
  uint8_t *back = malloc(SIZE);
  URT_OK(urEnqueueMemBufferRead(env->queue, buffer, true, 0, SIZE, back, 0, NULL, NULL));
  bool in_place = true;
  for (size_t i = 0; i < SIZE; i++) in_place &= back[i] == (uint8_t)(i & 0x0f);
  uint8_t pattern = 0x5D;
  URT_OK(urEnqueueMemBufferFill(env->queue, buffer, &pattern, 1, 64, 64, 0, NULL, NULL));
  URT_OK(urQueueFinish(env->queue));
  in_place &= host[64] == 0x5D && host[127] == 0x5D && host[128] == (uint8_t)(128 & 0x0f);
  if (env->backend == UR_BACKEND_OPENCL && env->type != UR_DEVICE_TYPE_CPU) {
    printf("# USE_HOST_POINTER on an OpenCL GPU: %s\n", in_place ? "used in place" : "the driver keeps a copy");
  } else {
    URT_CHECK(in_place, "a USE_HOST_POINTER buffer does not use the host memory in place");
  }
  URT_OK(urMemRelease(buffer));
  free(back);
  free(host);
}

/* Copies between buffers of two contexts of the device, each after the
 * other context's event, and one urEventWait over both contexts' events (UR's
 * urEventWaitTest.WithCrossContextDependencies), on every library (OpenCL's
 * contexts made on one device share one cl_context; on a GPU the other
 * context's event is refused in a wait list and waited for on the host). */
static void cross_context_copies(urt_env *env) {
  enum { SIZE = 256 };
  uint8_t data[SIZE], back[SIZE] = {0};
  for (size_t i = 0; i < SIZE; i++) data[i] = (uint8_t)(i * 7 + 3);
  ur_context_handle_t other = NULL;
  URT_REQUIRE(urContextCreate(1, &env->device, NULL, &other));
  ur_queue_handle_t other_queue = NULL;
  URT_REQUIRE(urQueueCreate(other, env->device, NULL, &other_queue));
  ur_buffer_properties_t props = {UR_STRUCTURE_TYPE_BUFFER_PROPERTIES, NULL, data};
  ur_mem_handle_t mine = NULL, foreign = NULL, last = NULL;
  URT_REQUIRE(urMemBufferCreate(env->context, UR_MEM_FLAG_ALLOC_COPY_HOST_POINTER, SIZE, &props, &mine));
  URT_REQUIRE(urMemBufferCreate(other, UR_MEM_FLAG_READ_WRITE, SIZE, NULL, &foreign));
  URT_REQUIRE(urMemBufferCreate(other, UR_MEM_FLAG_READ_WRITE, SIZE, NULL, &last));
  ur_event_handle_t first = NULL, second = NULL;
  ur_result_t copied = urEnqueueMemBufferCopy(env->queue, mine, foreign, 0, 0, SIZE, 0, NULL, &first);
  URT_CHECK(copied == UR_RESULT_SUCCESS, "a copy into a buffer of another context: %d", copied);
  if (copied == UR_RESULT_SUCCESS) {
    URT_OK(urEnqueueMemBufferCopy(other_queue, foreign, last, 0, 0, SIZE, 1, &first, &second));
    ur_event_handle_t both[] = {first, second};
    URT_OK(urEventWait(2, both));
    URT_OK(urEnqueueMemBufferRead(other_queue, last, true, 0, SIZE, back, 0, NULL, NULL));
    URT_CHECK(memcmp(back, data, SIZE) == 0, "the bytes after two copies across contexts");
  }
  if (first) URT_OK(urEventRelease(first));
  if (second) URT_OK(urEventRelease(second));
  URT_OK(urMemRelease(last));
  URT_OK(urMemRelease(foreign));
  URT_OK(urMemRelease(mine));
  URT_OK(urQueueRelease(other_queue));
  URT_OK(urContextRelease(other));
}

/* A timestamp recording is timed on a queue that does not profile: its
 * start and end lie between two readings of the device's clock, and its
 * queued and submit times come no later. */
static void timestamp_recording(urt_env *env) {
  URT_CHECK(urt_device_bool(env, UR_DEVICE_INFO_TIMESTAMP_RECORDING_SUPPORT_EXP), "timestamp recording support");
  ur_event_handle_t first = NULL, stamp = NULL;
  URT_OK(urEnqueueTimestampRecordingExp(env->queue, true, 0, NULL, &first));
  uint64_t before = 0, after = 0;
  URT_OK(urDeviceGetGlobalTimestamps(env->device, &before, NULL));
  URT_OK(urEnqueueTimestampRecordingExp(env->queue, false, 1, &first, &stamp));
  URT_OK(urEventWait(1, &stamp));
  URT_OK(urDeviceGetGlobalTimestamps(env->device, &after, NULL));
  uint64_t t[4] = {0};
  ur_profiling_info_t names[4] = {UR_PROFILING_INFO_COMMAND_QUEUED, UR_PROFILING_INFO_COMMAND_SUBMIT,
                                  UR_PROFILING_INFO_COMMAND_START, UR_PROFILING_INFO_COMMAND_END};
  for (int i = 0; i < 4; i++) URT_OK(urEventGetProfilingInfo(stamp, names[i], sizeof t[i], &t[i], NULL));
  const uint64_t slack = 100000; /* CUDA's f32 event times, as in the conformance suite */
  URT_CHECK(before <= t[2] + slack && t[3] <= after + slack, "device clock %llu .. %llu, recorded %llu .. %llu",
            (unsigned long long)before, (unsigned long long)after, (unsigned long long)t[2],
            (unsigned long long)t[3]);
  URT_CHECK(t[0] <= t[2] && t[1] <= t[2] && t[2] <= t[3], "queued %llu submit %llu start %llu end %llu",
            (unsigned long long)t[0], (unsigned long long)t[1], (unsigned long long)t[2], (unsigned long long)t[3]);
  ur_command_t command = 0;
  URT_OK(urEventGetInfo(stamp, UR_EVENT_INFO_COMMAND_TYPE, sizeof command, &command, NULL));
  URT_CHECK(command == UR_COMMAND_TIMESTAMP_RECORDING_EXP, "command type %d", command);
  /* Another command of the same queue has no times. */
  ur_event_handle_t marker = NULL;
  URT_OK(urEnqueueEventsWait(env->queue, 0, NULL, &marker));
  URT_OK(urEventWait(1, &marker));
  URT_RESULT(UR_RESULT_ERROR_PROFILING_INFO_NOT_AVAILABLE,
             urEventGetProfilingInfo(marker, UR_PROFILING_INFO_COMMAND_START, sizeof t[0], &t[0], NULL));
  /* Misuse. */
  ur_event_handle_t none = NULL;
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urEnqueueTimestampRecordingExp(NULL, true, 0, NULL, &none));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urEnqueueTimestampRecordingExp(env->queue, true, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_EVENT_WAIT_LIST,
             urEnqueueTimestampRecordingExp(env->queue, true, 1, NULL, &none));
  URT_RESULT(UR_RESULT_ERROR_INVALID_EVENT_WAIT_LIST,
             urEnqueueTimestampRecordingExp(env->queue, true, 0, &first, &none));
  URT_OK(urEventRelease(marker));
  URT_OK(urEventRelease(first));
  URT_OK(urEventRelease(stamp));
}

/* Pitched copies host -> device -> host and a pitched fill: rows at their
 * pitch, padding untouched; geometry misuse. */
static void usm_2d(urt_env *env) {
  enum { W = 24, H = 6, HOST_PITCH = 32, DEV_PITCH = 40 };
  ur_bool_t copy_2d = 0, fill_2d = 0;
  URT_OK(urContextGetInfo(env->context, UR_CONTEXT_INFO_USM_MEMCPY2D_SUPPORT, sizeof copy_2d, &copy_2d, NULL));
  URT_OK(urContextGetInfo(env->context, UR_CONTEXT_INFO_USM_FILL2D_SUPPORT, sizeof fill_2d, &fill_2d, NULL));
  URT_CHECK(copy_2d && fill_2d, "the context supports 2D copies (%d) and fills (%d)", copy_2d, fill_2d);
  uint8_t src[HOST_PITCH * H], back[HOST_PITCH * H];
  for (int i = 0; i < HOST_PITCH * H; i++) src[i] = (uint8_t)(i * 3 + 1);
  memset(back, 0xEE, sizeof back);
  uint8_t *dev = urt_device_alloc(env, DEV_PITCH * H);
  uint8_t zero = 0;
  URT_OK(urEnqueueUSMFill(env->queue, dev, 1, &zero, DEV_PITCH * H, 0, NULL, NULL));
  ur_event_handle_t up = NULL;
  URT_OK(urEnqueueUSMMemcpy2D(env->queue, false, dev, DEV_PITCH, src, HOST_PITCH, W, H, 0, NULL, &up));
  URT_OK(urEnqueueUSMMemcpy2D(env->queue, true, back, HOST_PITCH, dev, DEV_PITCH, W, H, 1, &up, NULL));
  bool rows_ok = true;
  for (int r = 0; r < H; r++)
    for (int c = 0; c < HOST_PITCH; c++)
      rows_ok &= back[r * HOST_PITCH + c] == (c < W ? src[r * HOST_PITCH + c] : 0xEE);
  URT_CHECK(rows_ok, "pitched round trip through device memory");
  uint8_t *seen = urt_read(env, dev, DEV_PITCH * H);
  bool padding_ok = true;
  for (int r = 0; r < H; r++)
    for (int c = W; c < DEV_PITCH; c++) padding_ok &= seen[r * DEV_PITCH + c] == 0;
  URT_CHECK(padding_ok, "device padding between rows untouched");
  free(seen);
  uint32_t pattern = 0xA5A55A5A;
  ur_event_handle_t filled = NULL;
  URT_OK(urEnqueueUSMFill2D(env->queue, dev, DEV_PITCH, sizeof pattern, &pattern, 16, H, 0, NULL, &filled));
  URT_OK(urEventWait(1, &filled));
  ur_command_t command = 0;
  URT_OK(urEventGetInfo(filled, UR_EVENT_INFO_COMMAND_TYPE, sizeof command, &command, NULL));
  URT_CHECK(command == UR_COMMAND_USM_FILL_2D, "command type %d", command);
  seen = urt_read(env, dev, DEV_PITCH * H);
  bool fill_ok = true;
  for (int r = 0; r < H; r++) {
    fill_ok &= urt_repeats(seen + r * DEV_PITCH, 16, &pattern, sizeof pattern);
    fill_ok &= seen[r * DEV_PITCH + 16] == src[r * HOST_PITCH + 16];
  }
  URT_CHECK(fill_ok, "pitched fill");
  free(seen);
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE,
             urEnqueueUSMMemcpy2D(env->queue, true, dev, 16, src, HOST_PITCH, W, H, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE,
             urEnqueueUSMMemcpy2D(env->queue, true, dev, DEV_PITCH, src, HOST_PITCH, W, H + 1, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER,
             urEnqueueUSMMemcpy2D(env->queue, true, NULL, DEV_PITCH, src, HOST_PITCH, W, H, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE,
             urEnqueueUSMFill2D(env->queue, dev, 8, sizeof pattern, &pattern, 16, H, 0, NULL, NULL));
  /* 17 x 6 bytes are no multiple of the pattern (the header's condition is
   * on width * height: a pattern may run on from one row into the next). */
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE,
             urEnqueueUSMFill2D(env->queue, dev, DEV_PITCH, sizeof pattern, &pattern, 17, H, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER,
             urEnqueueUSMFill2D(env->queue, dev, DEV_PITCH, sizeof pattern, NULL, 16, H, 0, NULL, NULL));
  /* UR 0.12's leak checker does not register the events of the 2D calls
   * either (releasing them is reported as releasing nonexistent handles). */
  urt_untracked(up);
  urt_untracked(filled);
  URT_OK(urEventRelease(up));
  URT_OK(urEventRelease(filled));
  URT_OK(urUSMFree(env->context, dev));
}

int main(void) {
  urt_env env;
  urt_init(&env);
  partition_rules(&env);
  commands(&env);
  host_pointer_sub_buffer(&env);
  use_host_pointer(&env);
  cross_context_copies(&env);
  timestamp_recording(&env);
  usm_2d(&env);
  urt_fini(&env);
  return urt_done("memory");
}
