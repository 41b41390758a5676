/* Objects adopted from native handles (ur*CreateWithNativeHandle): each
 * object's native handle is adopted and the adopted object used (enqueue on
 * an adopted queue, read an adopted buffer, wait on and for an adopted
 * event, allocate and run in an adopted context), platforms and devices are
 * found again, and what a backend does not adopt is UNSUPPORTED_FEATURE:
 * - OpenCL adopts contexts, queues, buffers and events (checked against the
 *   context and device: another context's are INVALID_*), and takes over a
 *   reference when isNativeHandleOwned (clRetainCommandQueue / reference
 *   count through libOpenCL);
 * - the CPU adopts its buffers by host address (an address of no live
 *   buffer is INVALID_MEM_OBJECT);
 * - Vulkan and CUDA adopt their queues (VkQueue, CUstream: in order, without
 *   profiling) and the device's one context (VkDevice, primary CUcontext).
 * Programs and kernels are adopted nowhere.
 * urt: also without layers */
#include <dlfcn.h>

#include "urt.h"

#define WORDS 64
/* A value no adapter of these backends takes for one of its objects; given
 * only where the backend adopts nothing of the kind or only compares. */
#define STAND_IN ((ur_native_handle_t)0x1000)

typedef int32_t (*cl_retain_fn)(void *);
typedef int32_t (*cl_queue_info_fn)(void *, uint32_t, size_t, void *, size_t *);

static void *opencl(const char *name) {
  static void *lib = NULL;
  if (!lib) lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
  return lib ? dlsym(lib, name) : NULL;
}

static bool is_opencl(urt_env *env) { return env->backend == UR_BACKEND_OPENCL; }

static void fill_read(urt_env *env, ur_queue_handle_t queue, ur_mem_handle_t mem, uint32_t value) {
  uint32_t words[WORDS];
  URT_OK(urEnqueueMemBufferFill(queue, mem, &value, sizeof value, 0, sizeof words, 0, NULL, NULL));
  URT_OK(urEnqueueMemBufferRead(queue, mem, true, 0, sizeof words, words, 0, NULL, NULL));
  bool same = true;
  for (int i = 0; i < WORDS; i++) same = same && words[i] == value;
  URT_CHECK(same, "the buffer holds %u", value);
}

static void platform_and_device(urt_env *env) {
  ur_native_handle_t native = 0;
  ur_platform_handle_t platform = NULL;
  if (urPlatformGetNativeHandle(env->platform, &native) == UR_RESULT_SUCCESS) {
    URT_OK(urPlatformCreateWithNativeHandle(native, env->adapter, NULL, &platform));
    URT_CHECK(platform == env->platform, "the platform found again is the platform");
    URT_RESULT(UR_RESULT_ERROR_INVALID_PLATFORM, urPlatformCreateWithNativeHandle(STAND_IN, env->adapter, NULL, &platform));
  } else {
    URT_RESULT(UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
               urPlatformCreateWithNativeHandle(STAND_IN, env->adapter, NULL, &platform));
  }
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urPlatformCreateWithNativeHandle(native, env->adapter, NULL, NULL));

  ur_device_handle_t device = NULL;
  ur_device_native_properties_t props = {UR_STRUCTURE_TYPE_DEVICE_NATIVE_PROPERTIES, NULL, false};
  /* UR's leak checker registers the handle urDeviceCreateWithNativeHandle
   * returns as a new one, though UR requires it to be the device's own
   * handle (which it already tracks): that round trip runs without layers. */
  const char *layers = getenv("UR_ENABLE_LAYERS");
  bool leak_checker = layers && strstr(layers, "VALIDATION");
  if (urDeviceGetNativeHandle(env->device, &native) == UR_RESULT_SUCCESS) {
    if (!leak_checker) {
      URT_OK(urDeviceCreateWithNativeHandle(native, env->adapter, &props, &device));
      URT_CHECK(device == env->device, "the device found again is the device");
      if (device) URT_OK(urDeviceRelease(device));
    }
    URT_RESULT(UR_RESULT_ERROR_INVALID_DEVICE, urDeviceCreateWithNativeHandle(STAND_IN, env->adapter, NULL, &device));
  } else {
    URT_RESULT(UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
               urDeviceCreateWithNativeHandle(STAND_IN, env->adapter, NULL, &device));
  }
}

static void context(urt_env *env) {
  ur_native_handle_t native = STAND_IN;
  ur_context_handle_t adopted = NULL;
  bool adopts = env->backend != UR_BACKEND_NATIVE_CPU;
  urContextGetNativeHandle(env->context, &native);
  ur_context_native_properties_t props = {UR_STRUCTURE_TYPE_CONTEXT_NATIVE_PROPERTIES, NULL, false};
  ur_result_t r = urContextCreateWithNativeHandle(native, env->adapter, 1, &env->device, &props, &adopted);
  if (!adopts) {
    URT_RESULT(UR_RESULT_ERROR_UNSUPPORTED_FEATURE, r);
    return;
  }
  URT_RESULT(UR_RESULT_SUCCESS, r);
  if (!adopted) return;
  URT_CHECK(adopted != env->context, "an adopted context is a new handle");
  ur_native_handle_t again = 0;
  URT_OK(urContextGetNativeHandle(adopted, &again));
  URT_CHECK(again == native, "the adopted context's native handle is the one adopted");
  /* Memory, a queue and commands in the adopted context. */
  ur_queue_handle_t queue = NULL;
  ur_mem_handle_t mem = NULL;
  URT_OK(urQueueCreate(adopted, env->device, NULL, &queue));
  URT_OK(urMemBufferCreate(adopted, UR_MEM_FLAG_READ_WRITE, WORDS * 4, NULL, &mem));
  if (queue && mem) fill_read(env, queue, mem, 21);
  /* Objects of the two contexts do not mix. */
  uint32_t zero = 0;
  if (queue && mem) {
    ur_mem_handle_t other = NULL;
    URT_OK(urMemBufferCreate(env->context, UR_MEM_FLAG_READ_WRITE, 16, NULL, &other));
    URT_RESULT(UR_RESULT_ERROR_INVALID_MEM_OBJECT,
               urEnqueueMemBufferFill(queue, other, &zero, sizeof zero, 0, 16, 0, NULL, NULL));
    if (other) URT_OK(urMemRelease(other));
  }
  if (mem) URT_OK(urMemRelease(mem));
  if (queue) URT_OK(urQueueRelease(queue));
  URT_OK(urContextRelease(adopted));

  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER,
             urContextCreateWithNativeHandle(native, env->adapter, 1, &env->device, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
             urContextCreateWithNativeHandle(native, env->adapter, 0, NULL, NULL, &adopted));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE,
             urContextCreateWithNativeHandle(0, env->adapter, 1, &env->device, NULL, &adopted));
}

static void queue(urt_env *env) {
  ur_native_handle_t native = STAND_IN;
  ur_queue_handle_t adopted = NULL;
  urQueueGetNativeHandle(env->queue, NULL, &native);
  ur_queue_native_properties_t props = {UR_STRUCTURE_TYPE_QUEUE_NATIVE_PROPERTIES, NULL, false};
  ur_result_t r = urQueueCreateWithNativeHandle(native, env->context, env->device, &props, &adopted);
  if (env->backend == UR_BACKEND_NATIVE_CPU) {
    URT_RESULT(UR_RESULT_ERROR_UNSUPPORTED_FEATURE, r);
    return;
  }
  URT_RESULT(UR_RESULT_SUCCESS, r);
  if (!adopted) return;
  ur_mem_handle_t mem = NULL;
  URT_OK(urMemBufferCreate(env->context, UR_MEM_FLAG_READ_WRITE, WORDS * 4, NULL, &mem));
  if (mem) fill_read(env, adopted, mem, 5);
  ur_context_handle_t ctx = NULL;
  URT_OK(urQueueGetInfo(adopted, UR_QUEUE_INFO_CONTEXT, sizeof ctx, &ctx, NULL));
  URT_CHECK(ctx == env->context, "the adopted queue's context");
  URT_OK(urQueueFinish(adopted));
  URT_OK(urQueueRelease(adopted));
  /* The queue it shares its native queue with still works. */
  if (mem) fill_read(env, env->queue, mem, 6);
  if (mem) URT_OK(urMemRelease(mem));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER,
             urQueueCreateWithNativeHandle(native, env->context, NULL, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urQueueCreateWithNativeHandle(0, env->context, NULL, NULL, &adopted));
  if (!is_opencl(env)) return;

  /* Ownership handed over: the adopted queue releases the reference the
   * application took for it. */
  cl_retain_fn retain = (cl_retain_fn)opencl("clRetainCommandQueue");
  cl_queue_info_fn info = (cl_queue_info_fn)opencl("clGetCommandQueueInfo");
  URT_CHECK(retain && info, "libOpenCL's entry points");
  if (retain && info) {
    uint32_t before = 0, during = 0, after = 0;
    const uint32_t CL_QUEUE_REFERENCE_COUNT = 0x1092;
    info((void *)native, CL_QUEUE_REFERENCE_COUNT, sizeof before, &before, NULL);
    URT_CHECK(retain((void *)native) == 0, "clRetainCommandQueue");
    props.isNativeHandleOwned = true;
    URT_OK(urQueueCreateWithNativeHandle(native, env->context, NULL, &props, &adopted));
    info((void *)native, CL_QUEUE_REFERENCE_COUNT, sizeof during, &during, NULL);
    URT_CHECK(during == before + 1, "an owned adoption takes no reference of its own: %u then %u", before, during);
    if (adopted) URT_OK(urQueueRelease(adopted));
    info((void *)native, CL_QUEUE_REFERENCE_COUNT, sizeof after, &after, NULL);
    URT_CHECK(after == before, "releasing the adopted queue released the handed-over reference: %u then %u", before,
              after);
  }

  /* A queue of another context. */
  ur_context_handle_t other = NULL;
  ur_queue_handle_t other_queue = NULL;
  URT_OK(urContextCreate(1, &env->device, NULL, &other));
  if (other) URT_OK(urQueueCreate(other, env->device, NULL, &other_queue));
  ur_native_handle_t foreign = 0;
  if (other_queue && urQueueGetNativeHandle(other_queue, NULL, &foreign) == UR_RESULT_SUCCESS) {
    URT_RESULT(UR_RESULT_ERROR_INVALID_QUEUE, urQueueCreateWithNativeHandle(foreign, env->context, NULL, NULL, &adopted));
  }
  if (other_queue) URT_OK(urQueueRelease(other_queue));
  if (other) URT_OK(urContextRelease(other));
}

static void mem(urt_env *env) {
  uint32_t data[WORDS], back[WORDS];
  for (int i = 0; i < WORDS; i++) data[i] = (uint32_t)i * 3u;
  ur_mem_handle_t mem = NULL, adopted = NULL;
  URT_REQUIRE(urMemBufferCreate(env->context, UR_MEM_FLAG_READ_WRITE, sizeof data, NULL, &mem));
  URT_OK(urEnqueueMemBufferWrite(env->queue, mem, true, 0, sizeof data, data, 0, NULL, NULL));
  ur_native_handle_t native = STAND_IN;
  urMemGetNativeHandle(mem, NULL, &native);
  ur_mem_native_properties_t props = {UR_STRUCTURE_TYPE_MEM_NATIVE_PROPERTIES, NULL, false};
  ur_result_t r = urMemBufferCreateWithNativeHandle(native, env->context, &props, &adopted);
  bool adopts = is_opencl(env) || env->backend == UR_BACKEND_NATIVE_CPU;
  if (!adopts) {
    URT_RESULT(UR_RESULT_ERROR_UNSUPPORTED_FEATURE, r);
    URT_OK(urMemRelease(mem));
    return;
  }
  URT_RESULT(UR_RESULT_SUCCESS, r);
  if (adopted) {
    size_t size = 0;
    URT_OK(urMemGetInfo(adopted, UR_MEM_INFO_SIZE, sizeof size, &size, NULL));
    URT_CHECK(size == sizeof data, "the adopted buffer's size is %zu", size);
    URT_OK(urEnqueueMemBufferRead(env->queue, adopted, true, 0, sizeof back, back, 0, NULL, NULL));
    URT_CHECK(memcmp(back, data, sizeof data) == 0, "the adopted buffer holds the buffer's bytes");
    /* Either handle may go first. */
    URT_OK(urMemRelease(mem));
    mem = NULL;
    fill_read(env, env->queue, adopted, 8);
    URT_OK(urMemRelease(adopted));
  }
  if (mem) URT_OK(urMemRelease(mem));

  /* A buffer of another context; on the CPU also an address of no buffer. */
  ur_context_handle_t other = NULL;
  ur_mem_handle_t foreign = NULL;
  URT_OK(urContextCreate(1, &env->device, NULL, &other));
  if (other) URT_OK(urMemBufferCreate(other, UR_MEM_FLAG_READ_WRITE, 64, NULL, &foreign));
  if (foreign && urMemGetNativeHandle(foreign, NULL, &native) == UR_RESULT_SUCCESS) {
    URT_RESULT(UR_RESULT_ERROR_INVALID_MEM_OBJECT,
               urMemBufferCreateWithNativeHandle(native, env->context, NULL, &adopted));
  }
  if (foreign) URT_OK(urMemRelease(foreign));
  if (other) URT_OK(urContextRelease(other));
  if (env->backend == UR_BACKEND_NATIVE_CPU) {
    URT_RESULT(UR_RESULT_ERROR_INVALID_MEM_OBJECT,
               urMemBufferCreateWithNativeHandle(STAND_IN, env->context, NULL, &adopted));
  }
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urMemBufferCreateWithNativeHandle(native, env->context, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urMemBufferCreateWithNativeHandle(0, env->context, NULL, &adopted));
}

static void event(urt_env *env) {
  ur_mem_handle_t mem = NULL;
  URT_REQUIRE(urMemBufferCreate(env->context, UR_MEM_FLAG_READ_WRITE, WORDS * 4, NULL, &mem));
  uint32_t value = 4;
  ur_event_handle_t fill = NULL, adopted = NULL;
  URT_OK(urEnqueueMemBufferFill(env->queue, mem, &value, sizeof value, 0, WORDS * 4, 0, NULL, &fill));
  ur_native_handle_t native = STAND_IN;
  if (fill) urEventGetNativeHandle(fill, &native);
  ur_event_native_properties_t props = {UR_STRUCTURE_TYPE_EVENT_NATIVE_PROPERTIES, NULL, false};
  ur_result_t r = urEventCreateWithNativeHandle(native, env->context, &props, &adopted);
  if (!is_opencl(env)) {
    URT_RESULT(UR_RESULT_ERROR_UNSUPPORTED_FEATURE, r);
  } else {
    URT_RESULT(UR_RESULT_SUCCESS, r);
  }
  if (adopted) {
    /* Waited on, and waited for by a command of another queue. */
    URT_OK(urEventWait(1, &adopted));
    ur_event_status_t status = UR_EVENT_STATUS_QUEUED;
    URT_OK(urEventGetInfo(adopted, UR_EVENT_INFO_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
    URT_CHECK(status == UR_EVENT_STATUS_COMPLETE, "the adopted event's status is %d", status);
    ur_context_handle_t ctx = NULL;
    URT_OK(urEventGetInfo(adopted, UR_EVENT_INFO_CONTEXT, sizeof ctx, &ctx, NULL));
    URT_CHECK(ctx == env->context, "the adopted event's context");
    /* Its queue is the native queue's, adopted too. */
    ur_queue_handle_t its_queue = NULL;
    URT_OK(urEventGetInfo(adopted, UR_EVENT_INFO_COMMAND_QUEUE, sizeof its_queue, &its_queue, NULL));
    ur_native_handle_t queue_native = 0, its_native = 1;
    URT_OK(urQueueGetNativeHandle(env->queue, NULL, &queue_native));
    if (its_queue) URT_OK(urQueueGetNativeHandle(its_queue, NULL, &its_native));
    URT_CHECK(its_native == queue_native, "the adopted event's queue is the command's native queue");
    ur_queue_handle_t second = NULL;
    URT_OK(urQueueCreate(env->context, env->device, NULL, &second));
    uint32_t words[WORDS];
    if (second) {
      URT_OK(urEnqueueMemBufferRead(second, mem, true, 0, sizeof words, words, 1, &adopted, NULL));
      URT_CHECK(words[0] == 4 && words[WORDS - 1] == 4, "read after the adopted event: %u", words[0]);
      URT_OK(urQueueRelease(second));
    }
    URT_OK(urEventRelease(adopted));
  }
  if (fill) URT_OK(urEventRelease(fill));
  URT_OK(urQueueFinish(env->queue));
  URT_OK(urMemRelease(mem));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urEventCreateWithNativeHandle(native, env->context, NULL, NULL));
  /* Native handle 0 names no native event: an event already complete, on
   * every library (UR's conformance suites adopt 0 for their wait-list
   * checks). */
  adopted = NULL;
  URT_OK(urEventCreateWithNativeHandle(0, env->context, NULL, &adopted));
  if (adopted) {
    ur_event_status_t status = UR_EVENT_STATUS_QUEUED;
    URT_OK(urEventGetInfo(adopted, UR_EVENT_INFO_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
    URT_CHECK(status == UR_EVENT_STATUS_COMPLETE, "the event adopted from 0 has status %d", status);
    URT_OK(urEventWait(1, &adopted));
    void *p = urt_device_alloc(env, 64);
    uint8_t byte = 9;
    URT_OK(urEnqueueUSMFill(env->queue, p, 1, &byte, 64, 1, &adopted, NULL));
    URT_RESULT(UR_RESULT_ERROR_INVALID_EVENT_WAIT_LIST, urEnqueueUSMFill(env->queue, p, 1, &byte, 64, 1, NULL, NULL));
    URT_RESULT(UR_RESULT_ERROR_INVALID_EVENT_WAIT_LIST,
               urEnqueueUSMFill(env->queue, p, 1, &byte, 64, 0, &adopted, NULL));
    URT_OK(urQueueFinish(env->queue));
    uint8_t *host = urt_read(env, p, 64);
    URT_CHECK(urt_repeats(host, 64, &byte, 1), "fill after the event adopted from 0");
    free(host);
    URT_OK(urUSMFree(env->context, p));
    URT_OK(urEventRelease(adopted));
  }
}

/* Programs and kernels are adopted nowhere: ur-core reads kernel
 * signatures from the code it is given. */
static void program_and_kernel(urt_env *env) {
  ur_program_handle_t program = NULL;
  ur_kernel_handle_t kernel = NULL;
  URT_RESULT(UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
             urProgramCreateWithNativeHandle(STAND_IN, env->context, NULL, &program));
  URT_RESULT(UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
             urKernelCreateWithNativeHandle(STAND_IN, env->context, NULL, NULL, &kernel));
}

int main(void) {
  urt_env env;
  urt_init(&env);
  platform_and_device(&env);
  context(&env);
  queue(&env);
  mem(&env);
  event(&env);
  program_and_kernel(&env);
  urt_fini(&env);
  return urt_done("adopt");
}
