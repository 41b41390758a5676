/* Native commands and native handles: urEnqueueNativeCommandExp and
 * urCommandBufferAppendNativeCommandExp whose callbacks do the backend's own
 * work on the target the adapter gives them, checked by reading back:
 * - CPU: host stores through the buffer's native handle (its host address);
 * - OpenCL: clEnqueueFillBuffer (libOpenCL, opened with dlopen) on the
 *   cl_command_queue urQueueGetNativeHandle answers inside the callback, and
 *   clCommandFillBufferKHR into the cl_command_buffer_khr
 *   urCommandBufferGetNativeHandleExp answers (the queue, with
 *   clEnqueueFillBuffer, where command buffers are pre-planned eager
 *   submissions), on the buffer's cl_mem;
 * - Vulkan: vkCmdFillBuffer (libvulkan) into the VkCommandBuffer they answer,
 *   on the buffer's VkBuffer;
 * - CUDA: cuMemsetD32Async (libcuda) on the CUstream, on the CUdeviceptr.
 * Also the native handles of every object, the device queries, and misuse.
 * urt: also without layers */
#include <dlfcn.h>

#include "urt.h"

#define WORDS 256

typedef int32_t (*cl_fill_fn)(void *, void *, const void *, size_t, size_t, size_t, uint32_t, const void *, void **);
typedef int32_t (*cl_release_fn)(void *);
typedef int32_t (*cl_queue_info_fn)(void *, uint32_t, size_t, void *, size_t *);
typedef int32_t (*cl_device_info_fn)(void *, uint32_t, size_t, void *, size_t *);
typedef void *(*cl_extension_fn)(void *, const char *);
typedef int32_t (*cl_record_fill_legacy_fn)(void *, void *, void *, const void *, size_t, size_t, size_t, uint32_t,
                                            const uint32_t *, uint32_t *, void *);
typedef int32_t (*cl_record_fill_fn)(void *, void *, const uint64_t *, void *, const void *, size_t, size_t, size_t,
                                     uint32_t, const uint32_t *, uint32_t *, void *);
typedef void (*vk_fill_fn)(void *, uint64_t, uint64_t, uint64_t, uint32_t);
typedef int32_t (*cu_memset_fn)(uint64_t, uint32_t, size_t, void *);

static void *open_lib(const char *name, const char *fallback) {
  void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  return lib ? lib : dlopen(fallback, RTLD_NOW | RTLD_LOCAL);
}

static void *entry(urt_env *env, const char *name) {
  static void *lib = NULL;
  if (!lib) {
    switch (env->backend) {
    case UR_BACKEND_OPENCL: lib = open_lib("libOpenCL.so.1", "libOpenCL.so"); break;
    case UR_BACKEND_OFFLOAD: lib = open_lib("libvulkan.so.1", "libvulkan.so"); break;
    case UR_BACKEND_CUDA: lib = open_lib("libcuda.so.1", "libcuda.so"); break;
    default: return NULL;
    }
  }
  return lib ? dlsym(lib, name) : NULL;
}

/* What a callback does: fill `words` words of `mem` from word `first` with
 * `value`; what it saw is kept for the checks. */
typedef struct {
  urt_env *env;
  ur_mem_handle_t mem;
  ur_exp_command_buffer_handle_t cb;
  size_t first, words;
  uint32_t value;
  bool record; /* the target is a command buffer being recorded */
  int calls;
  int failures;
} fill_job;

static void job_fail(fill_job *job, const char *what, int code) {
  job->failures++;
  printf("not ok native.c: inside the callback: %s gave %d\n", what, code);
}

/* clCommandFillBufferKHR into a recording cl_command_buffer_khr, in the
 * shape of the device's cl_khr_command_buffer version (a properties
 * argument from 0.9.5). */
static void record_fill(fill_job *job, void *cb, void *mem, size_t offset, size_t size) {
  urt_env *env = job->env;
  ur_native_handle_t device = 0;
  ur_result_t r = urDeviceGetNativeHandle(env->device, &device);
  cl_device_info_fn info = (cl_device_info_fn)entry(env, "clGetDeviceInfo");
  cl_extension_fn lookup = (cl_extension_fn)entry(env, "clGetExtensionFunctionAddressForPlatform");
  if (r != UR_RESULT_SUCCESS || !info || !lookup) {
    job_fail(job, "the OpenCL device", r);
    return;
  }
  void *platform = NULL;
  info((void *)device, 0x1031 /* CL_DEVICE_PLATFORM */, sizeof platform, &platform, NULL);
  size_t len = 0;
  info((void *)device, 0x1060 /* CL_DEVICE_EXTENSIONS_WITH_VERSION */, 0, NULL, &len);
  uint8_t *entries = malloc(len ? len : 1);
  uint32_t version = 0;
  if (info((void *)device, 0x1060, len, entries, NULL) == 0) {
    for (size_t at = 0; at + 68 <= len; at += 68) /* cl_name_version: 4 + 64 bytes */
      if (strcmp((const char *)entries + at + 4, "cl_khr_command_buffer") == 0) memcpy(&version, entries + at, 4);
  }
  free(entries);
  uint32_t minor = (version >> 12) & 0x3ff, patch = version & 0xfff;
  bool properties = (version >> 22) > 0 || minor > 9 || (minor == 9 && patch >= 5);
  void *address = lookup(platform, "clCommandFillBufferKHR");
  if (!version || !address) {
    job_fail(job, "clCommandFillBufferKHR", (int)version);
    return;
  }
  int32_t code;
  if (properties)
    code = ((cl_record_fill_fn)address)(cb, NULL, NULL, mem, &job->value, 4, offset, size, 0, NULL, NULL, NULL);
  else
    code = ((cl_record_fill_legacy_fn)address)(cb, NULL, mem, &job->value, 4, offset, size, 0, NULL, NULL, NULL);
  if (code != 0) job_fail(job, "clCommandFillBufferKHR", code);
}

/* The backend's native work on `target`, the handle asked inside the
 * callback (`asked` its result: the CPU has no native queue). */
static void native_fill(fill_job *job, ur_result_t asked, ur_native_handle_t target) {
  urt_env *env = job->env;
  job->calls++;
  if (env->backend == UR_BACKEND_NATIVE_CPU) {
    if (asked != UR_RESULT_ERROR_UNSUPPORTED_FEATURE) job_fail(job, "the CPU's native target", asked);
  } else if (asked != UR_RESULT_SUCCESS || target == 0) {
    job_fail(job, "the native target", asked);
    return;
  }
  ur_native_handle_t mem = 0;
  ur_result_t r = urMemGetNativeHandle(job->mem, env->device, &mem);
  if (r != UR_RESULT_SUCCESS || mem == 0) {
    job_fail(job, "urMemGetNativeHandle", r);
    return;
  }
  size_t offset = job->first * 4, size = job->words * 4;
  switch (env->backend) {
  case UR_BACKEND_NATIVE_CPU:
    for (size_t i = job->first; i < job->first + job->words; i++) ((uint32_t *)mem)[i] = job->value;
    break;
  case UR_BACKEND_OPENCL: {
    if (job->record) {
      record_fill(job, (void *)target, (void *)mem, offset, size);
      break;
    }
    cl_fill_fn fill = (cl_fill_fn)entry(env, "clEnqueueFillBuffer");
    cl_release_fn release = (cl_release_fn)entry(env, "clReleaseEvent");
    void *event = NULL;
    int32_t code = fill ? fill((void *)target, (void *)mem, &job->value, 4, offset, size, 0, NULL, &event) : -1;
    if (code != 0) job_fail(job, "clEnqueueFillBuffer", code);
    if (event && release) release(event);
    break;
  }
  case UR_BACKEND_OFFLOAD: {
    vk_fill_fn fill = (vk_fill_fn)entry(env, "vkCmdFillBuffer");
    if (!fill) job_fail(job, "vkCmdFillBuffer missing", 0);
    else fill((void *)target, (uint64_t)mem, offset, size, job->value);
    break;
  }
  case UR_BACKEND_CUDA: {
    cu_memset_fn memset32 = (cu_memset_fn)entry(env, "cuMemsetD32Async");
    int32_t code = memset32 ? memset32((uint64_t)mem + offset, job->value, job->words, (void *)target) : -1;
    if (code != 0) job_fail(job, "cuMemsetD32Async", code);
    break;
  }
  default: job_fail(job, "an unexpected backend", env->backend);
  }
}

static void enqueue_callback(ur_queue_handle_t queue, void *data) {
  fill_job *job = data;
  ur_native_handle_t target = 0;
  ur_result_t asked = urQueueGetNativeHandle(queue, NULL, &target);
  native_fill(job, asked, target);
}

static void append_callback(void *data) {
  fill_job *job = data;
  ur_native_handle_t target = 0;
  ur_result_t asked = urCommandBufferGetNativeHandleExp(job->cb, &target);
  native_fill(job, asked, target);
}

static void noop_callback(void *data) { (void)data; }
static void noop_enqueue(ur_queue_handle_t queue, void *data) {
  (void)queue;
  (void)data;
}

static ur_mem_handle_t words_buffer(urt_env *env, uint32_t value) {
  ur_mem_handle_t mem = NULL;
  URT_REQUIRE(urMemBufferCreate(env->context, UR_MEM_FLAG_READ_WRITE, WORDS * 4, NULL, &mem));
  URT_OK(urEnqueueMemBufferFill(env->queue, mem, &value, 4, 0, WORDS * 4, 0, NULL, NULL));
  return mem;
}

/* Whether `mem` holds `a` in words [0, split) and `b` after. */
static bool holds(urt_env *env, ur_mem_handle_t mem, size_t split, uint32_t a, uint32_t b) {
  uint32_t out[WORDS];
  URT_OK(urEnqueueMemBufferRead(env->queue, mem, true, 0, sizeof out, out, 0, NULL, NULL));
  for (size_t i = 0; i < WORDS; i++) {
    uint32_t want = i < split ? a : b;
    if (out[i] != want) {
      printf("# word %zu is %#x, expected %#x\n", i, out[i], want);
      return false;
    }
  }
  return true;
}

static void device_queries(urt_env *env) {
  URT_CHECK(urt_device_bool(env, UR_DEVICE_INFO_ENQUEUE_NATIVE_COMMAND_SUPPORT_EXP), "native enqueue is offered");
  bool nests = urt_device_bool(env, UR_DEVICE_INFO_COMMAND_BUFFER_SUBGRAPH_SUPPORT_EXP);
  URT_CHECK(nests == (env->backend == UR_BACKEND_CUDA), "only CUDA nests command buffers (child graphs)");
}

static void handles(urt_env *env) {
  ur_mem_handle_t mem = words_buffer(env, 7);
  ur_event_handle_t event = NULL;
  uint32_t eight = 8;
  URT_OK(urEnqueueMemBufferFill(env->queue, mem, &eight, 4, 0, 16, 0, NULL, &event));
  URT_OK(urEventWait(1, &event));
  bool cpu = env->backend == UR_BACKEND_NATIVE_CPU, vulkan = env->backend == UR_BACKEND_OFFLOAD,
       cuda = env->backend == UR_BACKEND_CUDA;
  ur_native_handle_t h[6] = {0};
  ur_result_t r[6] = {
      urPlatformGetNativeHandle(env->platform, &h[0]), urDeviceGetNativeHandle(env->device, &h[1]),
      urContextGetNativeHandle(env->context, &h[2]),   urQueueGetNativeHandle(env->queue, NULL, &h[3]),
      urMemGetNativeHandle(mem, env->device, &h[4]),   urEventGetNativeHandle(event, &h[5]),
  };
  const char *names[6] = {"platform", "device", "context", "queue", "mem", "event"};
  for (int i = 0; i < 6; i++) {
    /* CUDA has no platform object; Vulkan events are not native objects. */
    bool offered = cpu ? i == 4 : !(vulkan && i == 5) && !(cuda && i == 0);
    if (offered) {
      URT_CHECK(r[i] == UR_RESULT_SUCCESS, "%s: %d", names[i], r[i]);
      /* The CUDA device is an ordinal: 0 for the first. */
      URT_CHECK(h[i] != 0 || (env->backend == UR_BACKEND_CUDA && i == 1), "%s: a null handle", names[i]);
    } else {
      URT_CHECK(r[i] == UR_RESULT_ERROR_UNSUPPORTED_FEATURE, "%s: %d where none is documented", names[i], r[i]);
    }
  }
  if (cpu && r[4] == UR_RESULT_SUCCESS) {
    const uint32_t *words = (const uint32_t *)h[4];
    URT_CHECK(words[0] == 8 && words[5] == 7, "the CPU buffer's handle is its memory: %u %u", words[0], words[5]);
  }
  if (env->backend == UR_BACKEND_OPENCL && r[2] == UR_RESULT_SUCCESS && r[3] == UR_RESULT_SUCCESS) {
    /* The driver agrees: the queue belongs to the context. */
    cl_queue_info_fn info = (cl_queue_info_fn)entry(env, "clGetCommandQueueInfo");
    void *context = NULL;
    const uint32_t CL_QUEUE_CONTEXT = 0x1090;
    URT_CHECK(info && info((void *)h[3], CL_QUEUE_CONTEXT, sizeof context, &context, NULL) == 0, "clGetCommandQueueInfo");
    URT_CHECK(context == (void *)h[2], "the cl_command_queue's context is the cl_context");
  }
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urQueueGetNativeHandle(env->queue, NULL, NULL));
  URT_OK(urEventRelease(event));
  URT_OK(urMemRelease(mem));
}

static void enqueue(urt_env *env) {
  ur_mem_handle_t mem = words_buffer(env, 1);
  fill_job job = {env, mem, NULL, 0, WORDS / 2, 0xA5A5A5A5u, false, 0, 0};
  ur_event_handle_t fill = NULL, done = NULL;
  uint32_t two = 2;
  URT_OK(urEnqueueMemBufferFill(env->queue, mem, &two, 4, 0, WORDS * 4, 0, NULL, &fill));
  URT_OK(urEnqueueNativeCommandExp(env->queue, enqueue_callback, &job, 1, &mem, NULL, 1, &fill, &done));
  URT_OK(urEventWait(1, &done));
  URT_CHECK(job.calls == 1 && job.failures == 0, "%d calls, %d failures", job.calls, job.failures);
  URT_CHECK(holds(env, mem, WORDS / 2, 0xA5A5A5A5u, 2), "the native fill after the API's");
  ur_command_t command = 0;
  URT_OK(urEventGetInfo(done, UR_EVENT_INFO_COMMAND_TYPE, sizeof command, &command, NULL));
  URT_CHECK(command == UR_COMMAND_ENQUEUE_NATIVE_EXP, "command type %d", command);
  /* Properties: the reserved flag has nothing to honour. */
  ur_exp_enqueue_native_command_properties_t props = {UR_STRUCTURE_TYPE_EXP_ENQUEUE_NATIVE_COMMAND_PROPERTIES, NULL, 0};
  URT_OK(urEnqueueNativeCommandExp(env->queue, noop_enqueue, NULL, 0, NULL, &props, 0, NULL, NULL));
  props.flags = UR_EXP_ENQUEUE_NATIVE_COMMAND_FLAG_TBD;
  URT_RESULT(UR_RESULT_ERROR_INVALID_ENUMERATION,
             urEnqueueNativeCommandExp(env->queue, noop_enqueue, NULL, 0, NULL, &props, 0, NULL, NULL));
  props.flags = 0x4;
  URT_RESULT(UR_RESULT_ERROR_INVALID_ENUMERATION,
             urEnqueueNativeCommandExp(env->queue, noop_enqueue, NULL, 0, NULL, &props, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER,
             urEnqueueNativeCommandExp(env->queue, NULL, NULL, 0, NULL, NULL, 0, NULL, NULL));
  URT_OK(urQueueFinish(env->queue));
  URT_OK(urEventRelease(done));
  URT_OK(urEventRelease(fill));
  URT_OK(urMemRelease(mem));
}

/* Whether the device's extension list names `name`. */
static bool has_extension(urt_env *env, const char *name) {
  size_t size = 0;
  if (urDeviceGetInfo(env->device, UR_DEVICE_INFO_EXTENSIONS, 0, NULL, &size) != UR_RESULT_SUCCESS) return false;
  char *list = calloc(1, size + 1);
  bool found = false;
  if (urDeviceGetInfo(env->device, UR_DEVICE_INFO_EXTENSIONS, size, list, NULL) == UR_RESULT_SUCCESS)
    for (char *word = strtok(list, " "); word && !found; word = strtok(NULL, " ")) found = strcmp(word, name) == 0;
  free(list);
  return found;
}

static void command_buffer(urt_env *env, bool in_order) {
  ur_mem_handle_t mem = words_buffer(env, 0), out = words_buffer(env, 0);
  ur_exp_command_buffer_handle_t cb = urt_command_buffer(env, false, in_order);
  /* OpenCL's target is the cl_command_buffer_khr being recorded where the
   * device replays its driver's command buffers, else (pre-planned eager
   * replay: PoCL's CPU devices, NVIDIA) the queue at each submission, and
   * such a buffer has no native handle (Vulkan's the VkCommandBuffer, which
   * vkCmdFillBuffer takes as it is). */
  bool recorded = false;
  if (env->backend == UR_BACKEND_OPENCL && has_extension(env, "cl_khr_command_buffer")) {
    ur_exp_command_buffer_handle_t probe = urt_command_buffer(env, false, false);
    ur_native_handle_t handle = 0;
    URT_OK(urCommandBufferFinalizeExp(probe));
    ur_result_t r = urCommandBufferGetNativeHandleExp(probe, &handle);
    URT_CHECK(r == UR_RESULT_SUCCESS || r == UR_RESULT_ERROR_UNSUPPORTED_FEATURE, "native handle: %d", r);
    recorded = r == UR_RESULT_SUCCESS;
    URT_OK(urCommandBufferReleaseExp(probe));
  }
  fill_job job = {env, mem, cb, 0, WORDS / 2, 0xA5u, recorded, 0, 0};
  uint32_t eleven = 0x11;
  ur_exp_command_buffer_sync_point_t filled = 0, native = 0;
  URT_OK(urCommandBufferAppendMemBufferFillExp(cb, mem, &eleven, 4, 0, WORDS * 4, 0, NULL, 0, NULL, &filled, NULL, NULL));
  URT_OK(urCommandBufferAppendNativeCommandExp(cb, append_callback, &job, NULL, 1, &filled, &native));
  URT_OK(urCommandBufferAppendMemBufferCopyExp(cb, mem, out, 0, 0, WORDS * 4, 1, &native, 0, NULL, NULL, NULL, NULL));
  URT_OK(urCommandBufferFinalizeExp(cb));
  uint32_t zero = 0;
  for (int run = 0; run < 3; run++) {
    URT_OK(urEnqueueMemBufferFill(env->queue, out, &zero, 4, 0, WORDS * 4, 0, NULL, NULL));
    URT_OK(urEnqueueCommandBufferExp(env->queue, cb, 0, NULL, NULL));
    URT_CHECK(holds(env, out, WORDS / 2, 0xA5u, 0x11u), "run %d (in order: %d)", run, in_order);
  }
  URT_CHECK(job.calls >= 1 && job.failures == 0, "%d calls, %d failures", job.calls, job.failures);
  /* Misuse: after finalize; children (refused where the device does not
   * nest command buffers). */
  URT_RESULT(UR_RESULT_ERROR_INVALID_OPERATION,
             urCommandBufferAppendNativeCommandExp(cb, noop_callback, NULL, NULL, 0, NULL, NULL));
  ur_exp_command_buffer_handle_t other = urt_command_buffer(env, false, false);
  URT_RESULT(UR_RESULT_ERROR_INVALID_VALUE,
             urCommandBufferAppendNativeCommandExp(other, noop_callback, NULL, other, 0, NULL, NULL));
  ur_exp_command_buffer_handle_t child = urt_command_buffer(env, false, false);
  bool nests = urt_device_bool(env, UR_DEVICE_INFO_COMMAND_BUFFER_SUBGRAPH_SUPPORT_EXP);
  URT_RESULT(nests ? UR_RESULT_SUCCESS : UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
             urCommandBufferAppendNativeCommandExp(other, noop_callback, NULL, child, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER,
             urCommandBufferAppendNativeCommandExp(other, NULL, NULL, NULL, 0, NULL, NULL));
  URT_OK(urCommandBufferReleaseExp(child));
  URT_OK(urCommandBufferReleaseExp(other));
  URT_OK(urCommandBufferReleaseExp(cb));
  URT_OK(urMemRelease(out));
  URT_OK(urMemRelease(mem));
}

int main(void) {
  urt_env env;
  urt_init(&env);
  device_queries(&env);
  handles(&env);
  enqueue(&env);
  command_buffer(&env, false);
  command_buffer(&env, true);
  urt_fini(&env);
  return urt_done("native");
}
