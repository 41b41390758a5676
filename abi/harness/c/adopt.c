/* Objects adopted from native handles (ur*CreateWithNativeHandle): each
 * object's native handle is adopted and the adopted object used (enqueue on
 * an adopted queue, read an adopted buffer, wait on and for an adopted
 * event, allocate and run in an adopted context), platforms and devices are
 * found again, and what a backend does not adopt is UNSUPPORTED_FEATURE:
 * - OpenCL adopts contexts, queues, buffers and events (checked against the
 *   context's cl_context, which every context made on one device shares, and
 *   the device: another cl_context's are INVALID_*), and takes over a
 *   reference when isNativeHandleOwned (clRetainCommandQueue / reference
 *   count through libOpenCL);
 * - the CPU adopts its buffers by host address (an address of no live
 *   buffer is INVALID_MEM_OBJECT);
 * - Vulkan and CUDA adopt their queues (VkQueue, CUstream: in order, without
 *   profiling) and the device's one context (VkDevice, primary CUcontext).
 * - OpenCL adopts built cl_programs and their cl_kernels (made with the
 *   OpenCL API on the context's native context, then launched through UR),
 *   CUDA loaded CUmodules and their CUfunctions; the CPU and Vulkan adopt
 *   no programs.
 * urt: also without layers */
#include <dlfcn.h>

#include "urt.h"

#define WORDS 64
/* A value no adapter of these backends takes for one of its objects; given
 * only where the backend adopts nothing of the kind or only compares. */
#define STAND_IN ((ur_native_handle_t)0x1000)

typedef int32_t (*cl_retain_fn)(void *);
typedef int32_t (*cl_queue_info_fn)(void *, uint32_t, size_t, void *, size_t *);
typedef void *(*cl_create_context_fn)(const intptr_t *, uint32_t, void *const *, void *, void *, int32_t *);
typedef void *(*cl_create_queue_fn)(void *, void *, const uint64_t *, int32_t *);

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
  /* Buffers of the two contexts mix: every library uses another context's
   * buffers of the device as its own where both are one native context (an
   * adopted context is the one it was adopted from; on OpenCL every context
   * made on one device shares its cl_context). */
  uint32_t zero = 0;
  if (queue && mem) {
    ur_mem_handle_t other = NULL;
    URT_OK(urMemBufferCreate(env->context, UR_MEM_FLAG_READ_WRITE, 16, NULL, &other));
    ur_result_t filled = urEnqueueMemBufferFill(queue, other, &zero, sizeof zero, 0, 16, 0, NULL, NULL);
    URT_CHECK(filled == UR_RESULT_SUCCESS, "a buffer of another context of the device: %d", filled);
    URT_OK(urQueueFinish(queue));
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

  /* A queue of another context of the device: its cl_context is this
   * context's (contexts made on one device share one), so it is adopted. */
  ur_context_handle_t other = NULL;
  ur_queue_handle_t other_queue = NULL;
  URT_OK(urContextCreate(1, &env->device, NULL, &other));
  if (other) URT_OK(urQueueCreate(other, env->device, NULL, &other_queue));
  ur_native_handle_t foreign = 0;
  if (other_queue && urQueueGetNativeHandle(other_queue, NULL, &foreign) == UR_RESULT_SUCCESS) {
    URT_RESULT(UR_RESULT_SUCCESS, urQueueCreateWithNativeHandle(foreign, env->context, NULL, NULL, &adopted));
    if (adopted) URT_OK(urQueueRelease(adopted));
  }
  if (other_queue) URT_OK(urQueueRelease(other_queue));
  if (other) URT_OK(urContextRelease(other));

  /* A queue of a cl_context of its own is refused. */
  cl_create_context_fn create_context = (cl_create_context_fn)opencl("clCreateContext");
  cl_create_queue_fn create_queue = (cl_create_queue_fn)opencl("clCreateCommandQueueWithProperties");
  cl_retain_fn release_queue = (cl_retain_fn)opencl("clReleaseCommandQueue");
  cl_retain_fn release_context = (cl_retain_fn)opencl("clReleaseContext");
  ur_native_handle_t device = 0;
  URT_OK(urDeviceGetNativeHandle(env->device, &device));
  int32_t code = 0;
  void *own_context = create_context ? create_context(NULL, 1, (void *const *)&device, NULL, NULL, &code) : NULL;
  URT_CHECK(own_context && code == 0, "clCreateContext: %d", code);
  void *own_queue = own_context && create_queue ? create_queue(own_context, (void *)device, NULL, &code) : NULL;
  URT_CHECK(own_queue && code == 0, "clCreateCommandQueueWithProperties: %d", code);
  if (own_queue) {
    URT_RESULT(UR_RESULT_ERROR_INVALID_QUEUE,
               urQueueCreateWithNativeHandle((ur_native_handle_t)own_queue, env->context, NULL, NULL, &adopted));
    release_queue(own_queue);
  }
  if (own_context) release_context(own_context);
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

  /* A buffer of another context: refused on the CPU, whose buffers are
   * adopted by address among the context's own; adopted on OpenCL, whose
   * contexts made on one device share one cl_context. On the CPU also an
   * address of no buffer. */
  ur_context_handle_t other = NULL;
  ur_mem_handle_t foreign = NULL;
  URT_OK(urContextCreate(1, &env->device, NULL, &other));
  if (other) URT_OK(urMemBufferCreate(other, UR_MEM_FLAG_READ_WRITE, 64, NULL, &foreign));
  if (foreign && urMemGetNativeHandle(foreign, NULL, &native) == UR_RESULT_SUCCESS) {
    adopted = NULL;
    r = urMemBufferCreateWithNativeHandle(native, env->context, NULL, &adopted);
    URT_RESULT(is_opencl(env) ? UR_RESULT_SUCCESS : UR_RESULT_ERROR_INVALID_MEM_OBJECT, r);
    if (adopted) URT_OK(urMemRelease(adopted));
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

/* ---- programs and kernels ------------------------------------------------ */

typedef void *(*cl_create_program_fn)(void *, uint32_t, const char **, const size_t *, int32_t *);
typedef int32_t (*cl_build_program_fn)(void *, uint32_t, void *const *, const char *, void *, void *);
typedef void *(*cl_create_kernel_fn)(void *, const char *, int32_t *);
typedef int32_t (*cl_release_fn)(void *);
typedef int32_t (*cl_get_info_fn)(void *, uint32_t, size_t, void *, size_t *);

#define N_ITEMS 256
#define CL_PROGRAM_REFERENCE_COUNT 0x1160
#define CL_KERNEL_REFERENCE_COUNT 0x1192

/* Two kernels, as dpctl builds them: axpb (a global pointer and two values)
 * and reverse (a local-memory argument). */
static const char *cl_source =
    "kernel void axpb(global uint *p, uint a, uint b) {\n"
    "  size_t i = get_global_id(0);\n"
    "  p[i] = p[i] * a + b;\n"
    "}\n"
    "kernel void reverse(global uint *out, local uint *scratch) {\n"
    "  size_t l = get_local_id(0), n = get_local_size(0);\n"
    "  scratch[l] = (uint)get_global_id(0);\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  out[get_global_id(0)] = scratch[n - 1 - l];\n"
    "}\n";

static uint32_t cl_refs(void *object, const char *query_fn, uint32_t query) {
  cl_get_info_fn info = (cl_get_info_fn)opencl(query_fn);
  uint32_t refs = 0;
  if (info) info(object, query, sizeof refs, &refs, NULL);
  return refs;
}

/* A cl_program of the native context with the two kernels; built unless
 * `build` is false. */
static void *cl_program(urt_env *env, bool build, const char *options) {
  ur_native_handle_t context = 0, device = 0;
  URT_OK(urContextGetNativeHandle(env->context, &context));
  URT_OK(urDeviceGetNativeHandle(env->device, &device));
  cl_create_program_fn create = (cl_create_program_fn)opencl("clCreateProgramWithSource");
  cl_build_program_fn build_fn = (cl_build_program_fn)opencl("clBuildProgram");
  URT_CHECK(create && build_fn, "libOpenCL has clCreateProgramWithSource and clBuildProgram");
  if (!create || !build_fn) return NULL;
  int32_t error = 0;
  void *program = create((void *)context, 1, &cl_source, NULL, &error);
  URT_CHECK(program && error == 0, "clCreateProgramWithSource: %d", error);
  if (build && program) {
    void *dev = (void *)device;
    error = build_fn(program, 1, &dev, options, NULL, NULL);
    URT_CHECK(error == 0, "clBuildProgram: %d", error);
  }
  return program;
}

static bool all_u32(urt_env *env, const void *p, size_t n, uint32_t (*expected)(size_t)) {
  uint32_t *host = (uint32_t *)urt_read(env, p, n * sizeof(uint32_t));
  bool same = true;
  for (size_t i = 0; i < n; i++) same = same && host[i] == expected(i);
  free(host);
  return same;
}

static uint32_t axpb_of_i(size_t i) { return (uint32_t)i * 3 + 4; }
static uint32_t reversed_in_64(size_t i) { return (uint32_t)((i / 64) * 64 + 63 - i % 64); }

/* Runs axpb(p, 3, 4) over p[i] = i on `kernel` and checks the result. */
static void run_axpb(urt_env *env, ur_kernel_handle_t kernel, const char *what) {
  uint32_t *p = urt_device_alloc(env, N_ITEMS * sizeof(uint32_t));
  uint32_t init[N_ITEMS];
  for (int i = 0; i < N_ITEMS; i++) init[i] = (uint32_t)i;
  URT_OK(urEnqueueUSMMemcpy(env->queue, true, p, init, sizeof init, 0, NULL, NULL));
  uint32_t a = 3, b = 4;
  ur_exp_kernel_arg_properties_t args[3] = {urt_pointer_arg(0, p), urt_value_arg(1, &a), urt_value_arg(2, &b)};
  size_t global = N_ITEMS, local = 64;
  URT_OK(urEnqueueKernelLaunchWithArgsExp(env->queue, kernel, 1, NULL, &global, &local, 3, args, NULL, 0, NULL, NULL));
  URT_CHECK(all_u32(env, p, N_ITEMS, axpb_of_i), "%s: axpb(i, 3, 4) = 3i + 4", what);
  /* The checks the front end still makes: the argument count. */
  URT_RESULT(UR_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX,
             urEnqueueKernelLaunchWithArgsExp(env->queue, kernel, 1, NULL, &global, &local, 2, args, NULL, 0, NULL, NULL));
  ur_exp_kernel_arg_properties_t beyond[4] = {args[0], args[1], args[2], urt_value_arg(3, &a)};
  URT_RESULT(UR_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX,
             urEnqueueKernelLaunchWithArgsExp(env->queue, kernel, 1, NULL, &global, &local, 4, beyond, NULL, 0, NULL, NULL));
  /* A value of the wrong size: the front end or the driver refuses it. */
  uint64_t wide = 3;
  ur_exp_kernel_arg_properties_t wrong[3] = {args[0], urt_value_arg(1, &a), args[2]};
  wrong[1].size = sizeof wide;
  wrong[1].value.value = &wide;
  URT_CHECK(urEnqueueKernelLaunchWithArgsExp(env->queue, kernel, 1, NULL, &global, &local, 3, wrong, NULL, 0, NULL,
                                             NULL) != UR_RESULT_SUCCESS,
            "%s: an 8-byte value for a uint is refused", what);
  URT_OK(urQueueFinish(env->queue));
  URT_OK(urUSMFree(env->context, p));
}

/* reverse(out, local[64]) reverses each work-group's ids. */
static void run_reverse(urt_env *env, ur_kernel_handle_t kernel) {
  uint32_t *out = urt_device_alloc(env, N_ITEMS * sizeof(uint32_t));
  ur_exp_kernel_arg_properties_t args[2] = {urt_pointer_arg(0, out), urt_value_arg(1, NULL)};
  args[1].type = UR_EXP_KERNEL_ARG_TYPE_LOCAL;
  args[1].size = 64 * sizeof(uint32_t);
  args[1].value.value = NULL;
  size_t global = N_ITEMS, local = 64;
  URT_OK(urEnqueueKernelLaunchWithArgsExp(env->queue, kernel, 1, NULL, &global, &local, 2, args, NULL, 0, NULL, NULL));
  URT_CHECK(all_u32(env, out, N_ITEMS, reversed_in_64), "reverse with a local-memory argument");
  URT_OK(urUSMFree(env->context, out));
}

/* OpenCL adopts a cl_program built with the OpenCL API on the context's
 * native context (as dpctl's make_kernel_bundle<opencl> does), and
 * cl_kernels made from it (make_kernel<opencl>): launches take the
 * arguments' kinds from the launch, the count from CL_KERNEL_NUM_ARGS. */
static void opencl_program_and_kernel(urt_env *env, const char *options) {
  printf("# cl_program built with \"%s\"\n", options);
  void *native = cl_program(env, true, options);
  if (!native) return;
  uint32_t refs = cl_refs(native, "clGetProgramInfo", CL_PROGRAM_REFERENCE_COUNT);
  ur_program_native_properties_t shared = {UR_STRUCTURE_TYPE_PROGRAM_NATIVE_PROPERTIES, NULL, false};
  ur_program_handle_t program = NULL;
  URT_OK(urProgramCreateWithNativeHandle((ur_native_handle_t)native, env->context, &shared, &program));
  if (!program) return;
  URT_CHECK(cl_refs(native, "clGetProgramInfo", CL_PROGRAM_REFERENCE_COUNT) == refs + 1,
            "a shared cl_program is retained");
  ur_native_handle_t back = 0;
  URT_OK(urProgramGetNativeHandle(program, &back));
  URT_CHECK(back == (ur_native_handle_t)native, "the program's native handle is the adopted cl_program");
  size_t kernels = 0;
  URT_OK(urProgramGetInfo(program, UR_PROGRAM_INFO_NUM_KERNELS, sizeof kernels, &kernels, NULL));
  URT_CHECK(kernels == 2, "two kernels, %zu reported", kernels);
  char names[64] = {0};
  URT_OK(urProgramGetInfo(program, UR_PROGRAM_INFO_KERNEL_NAMES, sizeof names, names, NULL));
  URT_CHECK(strstr(names, "axpb") && strstr(names, "reverse"), "kernel names \"%s\"", names);
  ur_program_binary_type_t type = UR_PROGRAM_BINARY_TYPE_NONE;
  URT_OK(urProgramGetBuildInfo(program, env->device, UR_PROGRAM_BUILD_INFO_BINARY_TYPE, sizeof type, &type, NULL));
  URT_CHECK(type == UR_PROGRAM_BINARY_TYPE_EXECUTABLE, "an adopted program is executable");
  URT_RESULT(UR_RESULT_ERROR_INVALID_OPERATION, urProgramBuild(env->context, program, NULL));

  /* urKernelCreate on the adopted program. */
  ur_kernel_handle_t axpb = NULL, reverse = NULL;
  URT_OK(urKernelCreate(program, "axpb", &axpb));
  URT_OK(urKernelCreate(program, "reverse", &reverse));
  URT_RESULT(UR_RESULT_ERROR_INVALID_KERNEL_NAME, urKernelCreate(program, "nothing", &axpb));
  uint32_t num_args = 0;
  URT_OK(urKernelGetInfo(axpb, UR_KERNEL_INFO_NUM_ARGS, sizeof num_args, &num_args, NULL));
  URT_CHECK(num_args == 3, "axpb takes 3 arguments, %u reported", num_args);
  run_axpb(env, axpb, "urKernelCreate");
  run_reverse(env, reverse);

  /* A cl_kernel adopted with its program handle, and one without (its
   * cl_program is then adopted too, as make_kernel<opencl> needs). */
  cl_create_kernel_fn create_kernel = (cl_create_kernel_fn)opencl("clCreateKernel");
  cl_release_fn release_kernel = (cl_release_fn)opencl("clReleaseKernel");
  int32_t error = 0;
  void *k1 = create_kernel(native, "axpb", &error);
  void *k2 = create_kernel(native, "axpb", &error);
  URT_CHECK(k1 && k2 && error == 0, "clCreateKernel: %d", error);
  ur_kernel_native_properties_t owned = {UR_STRUCTURE_TYPE_KERNEL_NATIVE_PROPERTIES, NULL, true};
  ur_kernel_handle_t with_program = NULL, alone = NULL;
  URT_OK(urKernelCreateWithNativeHandle((ur_native_handle_t)k1, env->context, program, &owned, &with_program));
  URT_OK(urKernelCreateWithNativeHandle((ur_native_handle_t)k2, env->context, NULL, &owned, &alone));
  if (with_program && alone) {
    run_axpb(env, with_program, "a cl_kernel adopted with its program");
    run_axpb(env, alone, "a cl_kernel adopted alone");
    ur_native_handle_t k = 0;
    URT_OK(urKernelGetNativeHandle(alone, &k));
    URT_CHECK(k == (ur_native_handle_t)k2, "the kernel's native handle is the adopted cl_kernel");
    ur_context_handle_t ctx = NULL;
    URT_OK(urKernelGetInfo(alone, UR_KERNEL_INFO_CONTEXT, sizeof ctx, &ctx, NULL));
    URT_CHECK(ctx == env->context, "the adopted kernel's context is the one given");
    ur_program_handle_t its = NULL;
    URT_OK(urKernelGetInfo(alone, UR_KERNEL_INFO_PROGRAM, sizeof its, &its, NULL));
    ur_native_handle_t its_native = 0;
    URT_OK(urProgramGetNativeHandle(its, &its_native));
    URT_CHECK(its_native == (ur_native_handle_t)native, "the kernel's program is its cl_program");
    URT_OK(urKernelRelease(with_program));
    URT_OK(urKernelRelease(alone));
  }
  /* A cl_kernel of another cl_program than the one given. */
  void *other = cl_program(env, true, "");
  if (other) {
    void *k3 = create_kernel(other, "axpb", &error);
    ur_kernel_handle_t mismatched = NULL;
    URT_RESULT(UR_RESULT_ERROR_INVALID_PROGRAM,
               urKernelCreateWithNativeHandle((ur_native_handle_t)k3, env->context, program, NULL, &mismatched));
    if (k3) release_kernel(k3);
    ((cl_release_fn)opencl("clReleaseProgram"))(other);
  }
  URT_OK(urKernelRelease(axpb));
  URT_OK(urKernelRelease(reverse));
  URT_OK(urProgramRelease(program));
  URT_CHECK(cl_refs(native, "clGetProgramInfo", CL_PROGRAM_REFERENCE_COUNT) == refs,
            "releasing the adopted program releases its reference only");
  ((cl_release_fn)opencl("clReleaseProgram"))(native);

  /* A program not built for the device is not adopted. */
  void *unbuilt = cl_program(env, false, "");
  if (unbuilt) {
    URT_RESULT(UR_RESULT_ERROR_INVALID_PROGRAM_EXECUTABLE,
               urProgramCreateWithNativeHandle((ur_native_handle_t)unbuilt, env->context, NULL, &program));
    ((cl_release_fn)opencl("clReleaseProgram"))(unbuilt);
  }
}

/* CUDA adopts a CUmodule loaded in the primary context (the context's
 * native handle) and its CUfunctions: axpb.ptx, a plain kernel. Needs a
 * CUDA 12.4 driver (cuModuleEnumerateFunctions), else UNSUPPORTED_FEATURE. */
typedef int (*cu_ctx_set_fn)(void *);
typedef int (*cu_load_fn)(void **, const void *);
typedef int (*cu_get_function_fn)(void **, void *, const char *);
static void cuda_program_and_kernel(urt_env *env) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  URT_CHECK(lib != NULL, "libcuda.so.1 loads");
  if (!lib) return;
  cu_ctx_set_fn set_current = (cu_ctx_set_fn)dlsym(lib, "cuCtxSetCurrent");
  cu_load_fn load = (cu_load_fn)dlsym(lib, "cuModuleLoadData");
  cu_get_function_fn get_function = (cu_get_function_fn)dlsym(lib, "cuModuleGetFunction");
  size_t size = 0;
  uint8_t *ptx = urt_read_file("abi/harness/c/kernels/axpb.ptx", &size);
  URT_CHECK(ptx != NULL && set_current && load && get_function, "axpb.ptx and the driver's entry points");
  if (!ptx || !set_current || !load || !get_function) return;
  ur_native_handle_t context = 0;
  URT_OK(urContextGetNativeHandle(env->context, &context));
  void *module = NULL;
  URT_CHECK(set_current((void *)context) == 0 && load(&module, ptx) == 0, "cuModuleLoadData");
  free(ptx);
  ur_program_native_properties_t owned = {UR_STRUCTURE_TYPE_PROGRAM_NATIVE_PROPERTIES, NULL, true};
  ur_program_handle_t program = NULL;
  ur_result_t adopted = urProgramCreateWithNativeHandle((ur_native_handle_t)module, env->context, &owned, &program);
  if (adopted == UR_RESULT_ERROR_UNSUPPORTED_FEATURE) {
    printf("# the CUDA driver cannot list a module's functions (before 12.4): not adopted\n");
    ((int (*)(void *))dlsym(lib, "cuModuleUnload"))(module);
    return;
  }
  URT_OK(adopted);
  if (!program) return;
  ur_kernel_handle_t axpb = NULL;
  URT_OK(urKernelCreate(program, "axpb", &axpb));
  if (axpb) {
    run_axpb(env, axpb, "a CUmodule's kernel");
    URT_OK(urKernelRelease(axpb));
  }
  void *function = NULL;
  URT_CHECK(get_function(&function, module, "axpb") == 0, "cuModuleGetFunction");
  ur_kernel_handle_t alone = NULL;
  URT_OK(urKernelCreateWithNativeHandle((ur_native_handle_t)function, env->context, program, NULL, &alone));
  if (alone) {
    run_axpb(env, alone, "an adopted CUfunction");
    URT_OK(urKernelRelease(alone));
  }
  URT_OK(urProgramRelease(program));
}

/* Programs and kernels: OpenCL and CUDA adopt theirs; the CPU and Vulkan
 * hand out no native program (C tables, per-kernel pipelines). */
static void program_and_kernel(urt_env *env) {
  if (is_opencl(env)) {
    opencl_program_and_kernel(env, "");
    opencl_program_and_kernel(env, "-cl-kernel-arg-info");
  } else if (env->backend == UR_BACKEND_CUDA) {
    cuda_program_and_kernel(env);
  } else {
    ur_program_handle_t program = NULL;
    ur_kernel_handle_t kernel = NULL;
    URT_RESULT(UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
               urProgramCreateWithNativeHandle(STAND_IN, env->context, NULL, &program));
    URT_RESULT(UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
               urKernelCreateWithNativeHandle(STAND_IN, env->context, NULL, NULL, &kernel));
  }
  ur_program_handle_t none = NULL;
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urProgramCreateWithNativeHandle(0, env->context, NULL, &none));
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
