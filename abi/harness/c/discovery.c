/* Discovery: adapter, platform, device, context and queue objects, their
 * info queries (UR's size protocol included), reference counts, the last
 * error and the logger callback. */
#include "urt.h"

static int logged = 0;
static void on_log(ur_logger_level_t level, const char *msg, void *data) {
  (void)level;
  (void)msg;
  *(int *)data += 1;
}

static void adapter_checks(urt_env *env) {
  uint32_t count = 0;
  URT_OK(urAdapterGet(0, NULL, &count));
  URT_CHECK(count == 1, "one adapter per library, got %u", count);
  ur_backend_t backend = UR_BACKEND_UNKNOWN;
  URT_OK(urAdapterGetInfo(env->adapter, UR_ADAPTER_INFO_BACKEND, sizeof backend, &backend, NULL));
  URT_CHECK(backend == env->backend, "adapter and platform report backend %d and %d", backend, env->backend);
  URT_CHECK(backend == UR_BACKEND_OPENCL || backend == UR_BACKEND_CUDA || backend == UR_BACKEND_NATIVE_CPU ||
                backend == UR_BACKEND_OFFLOAD,
            "backend %d is one libsycl accepts", backend);

  uint32_t before = 0, after = 0;
  URT_OK(urAdapterGetInfo(env->adapter, UR_ADAPTER_INFO_REFERENCE_COUNT, sizeof before, &before, NULL));
  URT_OK(urAdapterRetain(env->adapter));
  URT_OK(urAdapterGetInfo(env->adapter, UR_ADAPTER_INFO_REFERENCE_COUNT, sizeof after, &after, NULL));
  URT_CHECK(after == before + 1, "retain counts: %u -> %u", before, after);
  URT_OK(urAdapterRelease(env->adapter));

  /* The last error is the message of this thread's last failure. */
  char tiny[1];
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE,
             urPlatformGetInfo(env->platform, UR_PLATFORM_INFO_NAME, sizeof tiny, tiny, NULL));
  const char *message = NULL;
  int32_t code = 0;
  URT_OK(urAdapterGetLastError(env->adapter, &message, &code));
  URT_CHECK(message != NULL && strstr(message, "invalid size") != NULL, "last error: %s", message ? message : "(null)");

  /* The logger callback receives the adapter's warnings and errors. */
  URT_OK(urAdapterSetLoggerCallback(env->adapter, on_log, &logged, UR_LOGGER_LEVEL_DEBUG));
  URT_OK(urAdapterSetLoggerCallbackLevel(env->adapter, UR_LOGGER_LEVEL_ERROR));
  URT_RESULT(UR_RESULT_ERROR_INVALID_ENUMERATION, urAdapterSetLoggerCallbackLevel(env->adapter, (ur_logger_level_t)99));
}

static void platform_checks(urt_env *env) {
  const ur_platform_info_t strings[] = {UR_PLATFORM_INFO_NAME, UR_PLATFORM_INFO_VENDOR_NAME, UR_PLATFORM_INFO_VERSION,
                                        UR_PLATFORM_INFO_EXTENSIONS, UR_PLATFORM_INFO_PROFILE};
  for (size_t i = 0; i < sizeof strings / sizeof *strings; i++) {
    size_t size = 0;
    URT_OK(urPlatformGetInfo(env->platform, strings[i], 0, NULL, &size));
    URT_CHECK(size >= 1, "platform string %d has %zu bytes", strings[i], size);
    char *value = malloc(size);
    URT_OK(urPlatformGetInfo(env->platform, strings[i], size, value, NULL));
    URT_CHECK(value[size - 1] == 0 && strlen(value) == size - 1, "platform string %d is NUL-terminated", strings[i]);
    free(value);
  }
  ur_adapter_handle_t adapter = NULL;
  URT_OK(urPlatformGetInfo(env->platform, UR_PLATFORM_INFO_ADAPTER, sizeof adapter, &adapter, NULL));
  URT_CHECK(adapter == env->adapter, "the platform's adapter");
  ur_api_version_t version = 0;
  URT_OK(urPlatformGetApiVersion(env->platform, &version));
  URT_CHECK(version == UR_API_VERSION_CURRENT, "API version %x", version);
  const char *option = NULL;
  URT_OK(urPlatformGetBackendOption(env->platform, "-O0", &option));
  URT_CHECK(option != NULL, "a backend option for -O0");
  URT_RESULT(UR_RESULT_ERROR_INVALID_VALUE, urPlatformGetBackendOption(env->platform, "-no-such-option", &option));
}

static void device_checks(urt_env *env) {
  uint32_t all = 0, cpus = 0, gpus = 0;
  URT_OK(urDeviceGet(env->platform, UR_DEVICE_TYPE_ALL, 0, NULL, &all));
  URT_OK(urDeviceGet(env->platform, UR_DEVICE_TYPE_CPU, 0, NULL, &cpus));
  URT_OK(urDeviceGet(env->platform, UR_DEVICE_TYPE_GPU, 0, NULL, &gpus));
  URT_CHECK(all >= 1 && cpus + gpus <= all, "devices: all %u, cpu %u, gpu %u", all, cpus, gpus);
  /* CUSTOM is the last valid type (UR's CTS asks every one); none of ours is custom. */
  uint32_t custom = 99;
  URT_OK(urDeviceGet(env->platform, UR_DEVICE_TYPE_CUSTOM, 0, NULL, &custom));
  URT_CHECK(custom == 0, "custom devices: %u", custom);

  /* Root devices: retain and release leave the count as it is. */
  uint32_t refs = 0, refs_after = 0;
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_REFERENCE_COUNT, sizeof refs, &refs, NULL));
  URT_OK(urDeviceRetain(env->device));
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_REFERENCE_COUNT, sizeof refs_after, &refs_after, NULL));
  URT_CHECK(refs == refs_after, "root device count changed %u -> %u", refs, refs_after);
  URT_OK(urDeviceRelease(env->device));

  ur_platform_handle_t platform = NULL;
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_PLATFORM, sizeof platform, &platform, NULL));
  URT_CHECK(platform == env->platform, "the device's platform");
  ur_device_handle_t parent = (ur_device_handle_t)1;
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_PARENT_DEVICE, sizeof parent, &parent, NULL));
  URT_CHECK(parent == NULL, "a root device has no parent");

  /* What libsycl asks of every device, and the command-buffer capabilities. */
  const ur_device_info_t required[] = {
      UR_DEVICE_INFO_TYPE, UR_DEVICE_INFO_NAME, UR_DEVICE_INFO_VENDOR, UR_DEVICE_INFO_DRIVER_VERSION,
      UR_DEVICE_INFO_EXTENSIONS, UR_DEVICE_INFO_USE_NATIVE_ASSERT, UR_DEVICE_INFO_MAX_COMPUTE_UNITS,
      UR_DEVICE_INFO_MAX_WORK_GROUP_SIZE, UR_DEVICE_INFO_MAX_WORK_ITEM_SIZES, UR_DEVICE_INFO_GLOBAL_MEM_SIZE,
      UR_DEVICE_INFO_LOCAL_MEM_SIZE, UR_DEVICE_INFO_MAX_MEM_ALLOC_SIZE, UR_DEVICE_INFO_USM_HOST_SUPPORT,
      UR_DEVICE_INFO_USM_DEVICE_SUPPORT, UR_DEVICE_INFO_USM_SINGLE_SHARED_SUPPORT,
      UR_DEVICE_INFO_COMMAND_BUFFER_SUPPORT_EXP, UR_DEVICE_INFO_COMMAND_BUFFER_UPDATE_CAPABILITIES_EXP,
      UR_DEVICE_INFO_COMMAND_BUFFER_EVENT_SUPPORT_EXP, UR_DEVICE_INFO_COMMAND_BUFFER_SUBGRAPH_SUPPORT_EXP,
      UR_DEVICE_INFO_QUEUE_PROPERTIES, UR_DEVICE_INFO_AVAILABLE, UR_DEVICE_INFO_COMPILER_AVAILABLE,
  };
  for (size_t i = 0; i < sizeof required / sizeof *required; i++) {
    size_t size = 0;
    URT_OK(urDeviceGetInfo(env->device, required[i], 0, NULL, &size));
    URT_CHECK(size > 0, "device info %d has %zu bytes", required[i], size);
    uint8_t *value = calloc(1, size);
    URT_OK(urDeviceGetInfo(env->device, required[i], size, value, NULL));
    if (size > 1) URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE, urDeviceGetInfo(env->device, required[i], size - 1, value, NULL));
    free(value);
  }
  URT_CHECK(urt_device_bool(env, UR_DEVICE_INFO_COMMAND_BUFFER_SUPPORT_EXP), "command buffers are supported");

  /* Queries outside the enumeration. */
  size_t size = 0;
  URT_RESULT(UR_RESULT_ERROR_INVALID_ENUMERATION, urDeviceGetInfo(env->device, (ur_device_info_t)0x7ffffff0, 0, NULL, &size));
}

static void count_deletion(void *data) { *(int *)data += 1; }

static void context_and_queue_checks(urt_env *env) {
  uint32_t num = 0;
  URT_OK(urContextGetInfo(env->context, UR_CONTEXT_INFO_NUM_DEVICES, sizeof num, &num, NULL));
  URT_CHECK(num == 1, "context devices %u", num);
  ur_device_handle_t dev = NULL;
  URT_OK(urContextGetInfo(env->context, UR_CONTEXT_INFO_DEVICES, sizeof dev, &dev, NULL));
  URT_CHECK(dev == env->device, "context device");
  uint32_t refs = 0, refs2 = 0;
  URT_OK(urContextGetInfo(env->context, UR_CONTEXT_INFO_REFERENCE_COUNT, sizeof refs, &refs, NULL));
  URT_OK(urContextRetain(env->context));
  URT_OK(urContextGetInfo(env->context, UR_CONTEXT_INFO_REFERENCE_COUNT, sizeof refs2, &refs2, NULL));
  URT_CHECK(refs2 == refs + 1, "context retain %u -> %u", refs, refs2);
  URT_OK(urContextRelease(env->context));

  ur_context_handle_t ctx = NULL;
  URT_OK(urQueueGetInfo(env->queue, UR_QUEUE_INFO_CONTEXT, sizeof ctx, &ctx, NULL));
  URT_CHECK(ctx == env->context, "queue context");
  ur_device_handle_t qdev = NULL;
  URT_OK(urQueueGetInfo(env->queue, UR_QUEUE_INFO_DEVICE, sizeof qdev, &qdev, NULL));
  URT_CHECK(qdev == env->device, "queue device");

  ur_queue_flags_t supported = 0;
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_QUEUE_PROPERTIES, sizeof supported, &supported, NULL));
  ur_queue_properties_t props = {UR_STRUCTURE_TYPE_QUEUE_PROPERTIES, NULL, supported};
  ur_queue_handle_t q = NULL;
  URT_OK(urQueueCreate(env->context, env->device, &props, &q));
  ur_queue_flags_t flags = 0;
  URT_OK(urQueueGetInfo(q, UR_QUEUE_INFO_FLAGS, sizeof flags, &flags, NULL));
  URT_CHECK(flags == supported, "queue flags %x, asked %x", flags, supported);
  URT_OK(urQueueFinish(q));
  URT_OK(urQueueFlush(q));
  URT_OK(urQueueRelease(q));

  /* A context with a deleter calls it when it goes. */
  int deleted = 0;
  ur_context_handle_t c2 = NULL;
  URT_OK(urContextCreate(1, &env->device, NULL, &c2));
  URT_OK(urContextSetExtendedDeleter(c2, count_deletion, &deleted));
  URT_OK(urContextRelease(c2));
  URT_CHECK(deleted == 1, "the deleter ran %d times", deleted);
}

int main(void) {
  urt_env env;
  urt_init(&env);
  adapter_checks(&env);
  platform_checks(&env);
  device_checks(&env);
  context_and_queue_checks(&env);
  urt_fini(&env);
  return urt_done("discovery");
}
