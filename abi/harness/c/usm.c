/* USM: allocations of every kind the device offers, alignments, allocation
 * info, fills with patterns of 1 to 256 bytes, copies between device, USM
 * and plain host memory (and between two plain host pointers: a host copy
 * in queue order), prefetch and advise. */
#include "urt.h"

static void alloc_kinds(urt_env *env) {
  const size_t size = 4096;
  struct {
    ur_device_info_t query;
    ur_usm_type_t type;
  } kinds[] = {{UR_DEVICE_INFO_USM_HOST_SUPPORT, UR_USM_TYPE_HOST},
               {UR_DEVICE_INFO_USM_DEVICE_SUPPORT, UR_USM_TYPE_DEVICE},
               {UR_DEVICE_INFO_USM_SINGLE_SHARED_SUPPORT, UR_USM_TYPE_SHARED}};
  for (int k = 0; k < 3; k++) {
    bool supported = urt_usm_supported(env, kinds[k].query);
    for (uint32_t align = 0; align <= 256; align = align ? align * 4 : 1) {
      ur_usm_desc_t desc = {UR_STRUCTURE_TYPE_USM_DESC, NULL, 0, align};
      void *p = NULL;
      ur_result_t r;
      if (kinds[k].type == UR_USM_TYPE_HOST)
        r = urUSMHostAlloc(env->context, &desc, NULL, size, &p);
      else if (kinds[k].type == UR_USM_TYPE_DEVICE)
        r = urUSMDeviceAlloc(env->context, env->device, &desc, NULL, size, &p);
      else
        r = urUSMSharedAlloc(env->context, env->device, &desc, NULL, size, &p);
      if (!supported) {
        URT_CHECK(r == UR_RESULT_ERROR_INVALID_OPERATION, "unsupported kind %d gave %d", kinds[k].type, r);
        continue;
      }
      URT_CHECK(r == UR_RESULT_SUCCESS && p != NULL, "kind %d align %u gave %d", kinds[k].type, align, r);
      if (r != UR_RESULT_SUCCESS) continue;
      if (align) URT_CHECK((uintptr_t)p % align == 0, "%p is not aligned to %u", p, align);
      ur_usm_type_t type = UR_USM_TYPE_UNKNOWN;
      URT_OK(urUSMGetMemAllocInfo(env->context, (char *)p + 100, UR_USM_ALLOC_INFO_TYPE, sizeof type, &type, NULL));
      URT_CHECK(type == kinds[k].type, "type %d, expected %d", type, kinds[k].type);
      void *base = NULL;
      URT_OK(urUSMGetMemAllocInfo(env->context, (char *)p + 100, UR_USM_ALLOC_INFO_BASE_PTR, sizeof base, &base, NULL));
      URT_CHECK(base == p, "base %p, expected %p", base, p);
      size_t got = 0;
      URT_OK(urUSMGetMemAllocInfo(env->context, p, UR_USM_ALLOC_INFO_SIZE, sizeof got, &got, NULL));
      URT_CHECK(got == size, "size %zu", got);
      ur_device_handle_t dev = NULL;
      URT_OK(urUSMGetMemAllocInfo(env->context, p, UR_USM_ALLOC_INFO_DEVICE, sizeof dev, &dev, NULL));
      URT_CHECK(dev == env->device, "device");
      URT_OK(urUSMFree(env->context, p));
    }
  }
  int on_stack = 0;
  ur_usm_type_t type = UR_USM_TYPE_DEVICE;
  URT_OK(urUSMGetMemAllocInfo(env->context, &on_stack, UR_USM_ALLOC_INFO_TYPE, sizeof type, &type, NULL));
  URT_CHECK(type == UR_USM_TYPE_UNKNOWN, "host stack memory is of unknown type, got %d", type);
  void *p = NULL;
  URT_RESULT(UR_RESULT_ERROR_INVALID_USM_SIZE, urUSMDeviceAlloc(env->context, env->device, NULL, NULL, 0, &p));
  ur_usm_desc_t odd = {UR_STRUCTURE_TYPE_USM_DESC, NULL, 0, 3};
  URT_RESULT(UR_RESULT_ERROR_INVALID_VALUE, urUSMDeviceAlloc(env->context, env->device, &odd, NULL, 64, &p));
}

static void fills_and_copies(urt_env *env) {
  const size_t size = 3 * 256 * 4; /* a multiple of every pattern size below */
  uint8_t *dev = urt_device_alloc(env, size);
  uint8_t pattern[256];
  for (int i = 0; i < 256; i++) pattern[i] = (uint8_t)(i * 7 + 3);
  const size_t sizes[] = {1, 2, 3, 4, 8, 12, 16, 32, 64, 128, 256};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    size_t fill = size - size % sizes[s];
    URT_OK(urEnqueueUSMFill(env->queue, dev, sizes[s], pattern, fill, 0, NULL, NULL));
    uint8_t *host = urt_read(env, dev, fill);
    URT_CHECK(urt_repeats(host, fill, pattern, sizes[s]), "fill with a %zu-byte pattern", sizes[s]);
    free(host);
  }
  /* Host -> device -> device -> host, with events between. */
  uint8_t *src = malloc(size), *dst = calloc(1, size);
  for (size_t i = 0; i < size; i++) src[i] = (uint8_t)(i ^ 0x5a);
  uint8_t *dev2 = urt_device_alloc(env, size);
  ur_event_handle_t up = NULL, across = NULL;
  URT_OK(urEnqueueUSMMemcpy(env->queue, false, dev, src, size, 0, NULL, &up));
  URT_OK(urEnqueueUSMMemcpy(env->queue, false, dev2, dev, size, 1, &up, &across));
  URT_OK(urEnqueueUSMMemcpy(env->queue, true, dst, dev2, size, 1, &across, NULL));
  URT_CHECK(memcmp(src, dst, size) == 0, "round trip through device memory");
  URT_OK(urEventRelease(up));
  URT_OK(urEventRelease(across));
  /* Out of bounds and overlapping copies are refused. */
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE, urEnqueueUSMMemcpy(env->queue, true, dst, dev, size + 1, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_OVERLAPPING_REGIONS, urEnqueueUSMMemcpy(env->queue, true, dev + 1, dev, 64, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE, urEnqueueUSMFill(env->queue, dev, 3, pattern, 64, 0, NULL, NULL));
  /* Prefetch and advise on device memory. */
  ur_event_handle_t pf = NULL, adv = NULL;
  URT_OK(urEnqueueUSMPrefetch(env->queue, dev, size, UR_USM_MIGRATION_FLAG_HOST_TO_DEVICE, 0, NULL, &pf));
  URT_OK(urEnqueueUSMAdvise(env->queue, dev, size, UR_USM_ADVICE_FLAG_SET_READ_MOSTLY, &adv));
  URT_OK(urEventWait(1, &pf));
  URT_OK(urEventWait(1, &adv));
  URT_OK(urEventRelease(pf));
  URT_OK(urEventRelease(adv));
  URT_OK(urQueueFinish(env->queue));
  URT_OK(urUSMFree(env->context, dev));
  URT_OK(urUSMFree(env->context, dev2));
  free(src);
  free(dst);
}

/* urEnqueueUSMMemcpy between two plain host pointers, as libsycl's and
 * dpctl's queue.memcpy of host memory issue it: a host copy ordered like any
 * command on the in-order queue (after the copy that fills its source,
 * before the copy that reads its destination), with an event of its own;
 * refused in a command buffer. */
static void host_to_host(urt_env *env) {
  const size_t size = 1 << 20;
  uint8_t *a = malloc(size), *b = calloc(1, size), *c = calloc(1, size), *d = calloc(1, size);
  for (size_t i = 0; i < size; i++) a[i] = (uint8_t)(i * 13 + 1);
  uint8_t *dev = urt_device_alloc(env, size), *dev2 = urt_device_alloc(env, size);
  URT_OK(urEnqueueUSMMemcpy(env->queue, true, dev, a, size, 0, NULL, NULL));
  ur_event_handle_t host = NULL, last = NULL;
  URT_OK(urEnqueueUSMMemcpy(env->queue, false, b, dev, size, 0, NULL, NULL));
  URT_OK(urEnqueueUSMMemcpy(env->queue, false, c, b, size, 0, NULL, &host));
  URT_OK(urEnqueueUSMMemcpy(env->queue, false, dev2, c, size, 0, NULL, NULL));
  URT_OK(urEnqueueUSMMemcpy(env->queue, false, d, dev2, size, 0, NULL, &last));
  URT_OK(urEventWait(1, &last));
  URT_CHECK(memcmp(a, d, size) == 0, "device, host, host, device, host in queue order");
  ur_command_t type = UR_COMMAND_FORCE_UINT32;
  URT_OK(urEventGetInfo(host, UR_EVENT_INFO_COMMAND_TYPE, sizeof type, &type, NULL));
  URT_CHECK(type == UR_COMMAND_USM_MEMCPY, "the host copy's event is a USM memcpy's");
  ur_event_status_t status = UR_EVENT_STATUS_QUEUED;
  URT_OK(urEventGetInfo(host, UR_EVENT_INFO_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
  URT_CHECK(status == UR_EVENT_STATUS_COMPLETE, "the host copy completed before what followed it");
  URT_OK(urEnqueueUSMMemcpy(env->queue, true, d, a + 1, size - 1, 0, NULL, NULL));
  URT_CHECK(memcmp(a + 1, d, size - 1) == 0, "a blocking host copy");
  URT_RESULT(UR_RESULT_ERROR_OVERLAPPING_REGIONS, urEnqueueUSMMemcpy(env->queue, true, d, d + 8, 64, 0, NULL, NULL));
  ur_exp_command_buffer_handle_t cb = urt_command_buffer(env, false, true);
  URT_RESULT(UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
             urCommandBufferAppendUSMMemcpyExp(cb, b, a, size, 0, NULL, 0, NULL, NULL, NULL, NULL));
  URT_OK(urCommandBufferReleaseExp(cb));
  URT_OK(urEventRelease(host));
  URT_OK(urEventRelease(last));
  URT_OK(urUSMFree(env->context, dev));
  URT_OK(urUSMFree(env->context, dev2));
  free(a);
  free(b);
  free(c);
  free(d);
}

/* Patterns above 256 bytes, as the header allows them: urEnqueueUSMFill and
 * the command-buffer fills take any length dividing the size,
 * urEnqueueUSMFill2D a power of two dividing width * height (running on from
 * one row into the next), the buffer fills powers of two. */
static void long_patterns(urt_env *env) {
  enum { SIZE = 6144, PITCH = 320, WIDTH = 256, HEIGHT = 8 };
  uint8_t pattern[SIZE];
  for (int i = 0; i < SIZE; i++) pattern[i] = (uint8_t)(i * 13 + i / 256 + 1);
  uint8_t *dev = urt_device_alloc(env, SIZE);
  const size_t sizes[] = {384, 1024, 2048, 6144};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    URT_OK(urEnqueueUSMFill(env->queue, dev, sizes[s], pattern, SIZE, 0, NULL, NULL));
    uint8_t *host = urt_read(env, dev, SIZE);
    URT_CHECK(urt_repeats(host, SIZE, pattern, sizes[s]), "USM fill with a %zu-byte pattern", sizes[s]);
    free(host);
  }
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE, urEnqueueUSMFill(env->queue, dev, 4096, pattern, SIZE, 0, NULL, NULL));

  /* 2D: a 1024-byte pattern over rows of 256 bytes, 320 apart. */
  uint8_t zeros[PITCH * HEIGHT] = {0};
  URT_OK(urEnqueueUSMMemcpy(env->queue, true, dev, zeros, sizeof zeros, 0, NULL, NULL));
  URT_OK(urEnqueueUSMFill2D(env->queue, dev, PITCH, 1024, pattern, WIDTH, HEIGHT, 0, NULL, NULL));
  uint8_t *host = urt_read(env, dev, PITCH * HEIGHT);
  bool rows = true;
  for (size_t r = 0; r < HEIGHT; r++) {
    rows &= memcmp(host + r * PITCH, pattern + (r * WIDTH) % 1024, WIDTH) == 0;
    for (size_t x = WIDTH; x < PITCH && r + 1 < HEIGHT; x++) rows &= host[r * PITCH + x] == 0;
  }
  URT_CHECK(rows, "2D fill with a 1024-byte pattern running on across rows");
  free(host);

  /* A buffer fill and command-buffer fills. */
  ur_mem_handle_t buf = NULL;
  URT_REQUIRE(urMemBufferCreate(env->context, UR_MEM_FLAG_READ_WRITE, SIZE, NULL, &buf));
  URT_OK(urEnqueueMemBufferFill(env->queue, buf, pattern, 512, 0, SIZE, 0, NULL, NULL));
  uint8_t out[SIZE];
  URT_OK(urEnqueueMemBufferRead(env->queue, buf, true, 0, SIZE, out, 0, NULL, NULL));
  URT_CHECK(urt_repeats(out, SIZE, pattern, 512), "buffer fill with a 512-byte pattern");
  ur_exp_command_buffer_handle_t cb = urt_command_buffer(env, false, true);
  URT_OK(urCommandBufferAppendUSMFillExp(cb, dev, pattern, 768, SIZE, 0, NULL, 0, NULL, NULL, NULL, NULL));
  URT_OK(urCommandBufferAppendMemBufferFillExp(cb, buf, pattern, 1024, 1024, 4096, 0, NULL, 0, NULL, NULL, NULL,
                                               NULL));
  URT_OK(urCommandBufferFinalizeExp(cb));
  for (int run = 0; run < 2; run++) {
    URT_OK(urEnqueueUSMFill(env->queue, dev, 1, zeros, SIZE, 0, NULL, NULL));
    URT_OK(urEnqueueCommandBufferExp(env->queue, cb, 0, NULL, NULL));
    URT_OK(urQueueFinish(env->queue));
    host = urt_read(env, dev, SIZE);
    URT_CHECK(urt_repeats(host, SIZE, pattern, 768), "recorded USM fill with a 768-byte pattern, run %d", run);
    free(host);
  }
  URT_OK(urEnqueueMemBufferRead(env->queue, buf, true, 0, SIZE, out, 0, NULL, NULL));
  URT_CHECK(urt_repeats(out + 1024, 4096, pattern, 1024) && urt_repeats(out, 1024, pattern, 512) &&
                urt_repeats(out + 5120, 1024, pattern, 512),
            "recorded buffer fill with a 1024-byte pattern");
  URT_OK(urCommandBufferReleaseExp(cb));
  URT_OK(urMemRelease(buf));
  URT_OK(urUSMFree(env->context, dev));
}

static void shared_and_host_memory(urt_env *env) {
  if (!urt_usm_supported(env, UR_DEVICE_INFO_USM_SINGLE_SHARED_SUPPORT)) return;
  int *shared = NULL;
  URT_OK(urUSMSharedAlloc(env->context, env->device, NULL, NULL, 1024 * sizeof(int), (void **)&shared));
  int seven = 7;
  URT_OK(urEnqueueUSMFill(env->queue, shared, sizeof seven, &seven, 1024 * sizeof(int), 0, NULL, NULL));
  URT_OK(urQueueFinish(env->queue));
  URT_CHECK(shared[0] == 7 && shared[1023] == 7, "shared memory seen by the host: %d %d", shared[0], shared[1023]);
  URT_OK(urUSMFree(env->context, shared));
}

int main(void) {
  urt_env env;
  urt_init(&env);
  alloc_kinds(&env);
  fills_and_copies(&env);
  host_to_host(&env);
  long_patterns(&env);
  shared_and_host_memory(&env);
  urt_fini(&env);
  return urt_done("usm");
}
