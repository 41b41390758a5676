/* Device information: every ur_device_info_t of ur_api.h, asked of the
 * device. Each query is answered with the size of its C type (exact for
 * scalars and fixed arrays, a multiple of the element for arrays, a
 * NUL-terminated string) and refuses a buffer one byte short, or it is one
 * the header marks [optional-query] and answers
 * UR_RESULT_ERROR_UNSUPPORTED_ENUMERATION. Values between the enumerators
 * are UR_RESULT_ERROR_INVALID_ENUMERATION. Then urDeviceGetGlobalTimestamps
 * and urDeviceSelectBinary.
 *
 * The table below is checked against the header by cmdbuf-abi's unit test
 * `device_info::tests::the_c_table_is_the_header_enumeration`: a query added
 * to ur_api.h must be added here. */
#define _POSIX_C_SOURCE 199309L /* nanosleep */
#include "urt.h"
#include <time.h>

typedef enum { SHAPE_EXACT, SHAPE_ARRAY, SHAPE_STRING } urt_shape;

typedef struct {
  ur_device_info_t name;
  const char *text;
  size_t elem;  /* bytes of one element */
  size_t count; /* elements of an exact answer */
  urt_shape shape;
  bool optional;
  const char *type; /* the C type's name */
} urt_query;

#define Q(n, t, k, s, o) {n, #n, sizeof(t), k, s, o, #t}
#define SCALAR(n, t) Q(n, t, 1, SHAPE_EXACT, false)
#define OPTIONAL_SCALAR(n, t) Q(n, t, 1, SHAPE_EXACT, true)
#define FIXED(n, t, k) Q(n, t, k, SHAPE_EXACT, false)
#define ARRAY(n, t) Q(n, t, 0, SHAPE_ARRAY, false)
#define OPTIONAL_ARRAY(n, t) Q(n, t, 0, SHAPE_ARRAY, true)
#define STRING(n) Q(n, char, 0, SHAPE_STRING, false)
#define OPTIONAL_STRING(n) Q(n, char, 0, SHAPE_STRING, true)

/* UR_DEVICE_INFO_BFLOAT16 is deprecated but still in the enumeration. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static const urt_query queries[] = {
    SCALAR(UR_DEVICE_INFO_TYPE, ur_device_type_t),
    SCALAR(UR_DEVICE_INFO_VENDOR_ID, uint32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_DEVICE_ID, uint32_t),
    SCALAR(UR_DEVICE_INFO_MAX_COMPUTE_UNITS, uint32_t),
    SCALAR(UR_DEVICE_INFO_MAX_WORK_ITEM_DIMENSIONS, uint32_t),
    ARRAY(UR_DEVICE_INFO_MAX_WORK_ITEM_SIZES, size_t),
    SCALAR(UR_DEVICE_INFO_MAX_WORK_GROUP_SIZE, size_t),
    SCALAR(UR_DEVICE_INFO_SINGLE_FP_CONFIG, ur_device_fp_capability_flags_t),
    SCALAR(UR_DEVICE_INFO_HALF_FP_CONFIG, ur_device_fp_capability_flags_t),
    SCALAR(UR_DEVICE_INFO_DOUBLE_FP_CONFIG, ur_device_fp_capability_flags_t),
    SCALAR(UR_DEVICE_INFO_QUEUE_PROPERTIES, ur_queue_flags_t),
    SCALAR(UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_CHAR, uint32_t),
    SCALAR(UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_SHORT, uint32_t),
    SCALAR(UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_INT, uint32_t),
    SCALAR(UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_LONG, uint32_t),
    SCALAR(UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_FLOAT, uint32_t),
    SCALAR(UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_DOUBLE, uint32_t),
    SCALAR(UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_HALF, uint32_t),
    SCALAR(UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_CHAR, uint32_t),
    SCALAR(UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_SHORT, uint32_t),
    SCALAR(UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_INT, uint32_t),
    SCALAR(UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_LONG, uint32_t),
    SCALAR(UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_FLOAT, uint32_t),
    SCALAR(UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_DOUBLE, uint32_t),
    SCALAR(UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_HALF, uint32_t),
    SCALAR(UR_DEVICE_INFO_MAX_CLOCK_FREQUENCY, uint32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_MEMORY_CLOCK_RATE, uint32_t),
    SCALAR(UR_DEVICE_INFO_ADDRESS_BITS, uint32_t),
    SCALAR(UR_DEVICE_INFO_MAX_MEM_ALLOC_SIZE, uint64_t),
    SCALAR(UR_DEVICE_INFO_IMAGE_SUPPORT, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_MAX_READ_IMAGE_ARGS, uint32_t),
    SCALAR(UR_DEVICE_INFO_MAX_WRITE_IMAGE_ARGS, uint32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_MAX_READ_WRITE_IMAGE_ARGS, uint32_t),
    SCALAR(UR_DEVICE_INFO_IMAGE2D_MAX_WIDTH, size_t),
    SCALAR(UR_DEVICE_INFO_IMAGE2D_MAX_HEIGHT, size_t),
    SCALAR(UR_DEVICE_INFO_IMAGE3D_MAX_WIDTH, size_t),
    SCALAR(UR_DEVICE_INFO_IMAGE3D_MAX_HEIGHT, size_t),
    SCALAR(UR_DEVICE_INFO_IMAGE3D_MAX_DEPTH, size_t),
    SCALAR(UR_DEVICE_INFO_IMAGE_MAX_BUFFER_SIZE, size_t),
    SCALAR(UR_DEVICE_INFO_IMAGE_MAX_ARRAY_SIZE, size_t),
    SCALAR(UR_DEVICE_INFO_MAX_SAMPLERS, uint32_t),
    SCALAR(UR_DEVICE_INFO_MAX_PARAMETER_SIZE, size_t),
    SCALAR(UR_DEVICE_INFO_MEM_BASE_ADDR_ALIGN, uint32_t),
    SCALAR(UR_DEVICE_INFO_GLOBAL_MEM_CACHE_TYPE, ur_device_mem_cache_type_t),
    SCALAR(UR_DEVICE_INFO_GLOBAL_MEM_CACHELINE_SIZE, uint32_t),
    SCALAR(UR_DEVICE_INFO_GLOBAL_MEM_CACHE_SIZE, uint64_t),
    SCALAR(UR_DEVICE_INFO_GLOBAL_MEM_SIZE, uint64_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_GLOBAL_MEM_FREE, uint64_t),
    SCALAR(UR_DEVICE_INFO_MAX_CONSTANT_BUFFER_SIZE, uint64_t),
    SCALAR(UR_DEVICE_INFO_MAX_CONSTANT_ARGS, uint32_t),
    SCALAR(UR_DEVICE_INFO_LOCAL_MEM_TYPE, ur_device_local_mem_type_t),
    SCALAR(UR_DEVICE_INFO_LOCAL_MEM_SIZE, uint64_t),
    SCALAR(UR_DEVICE_INFO_ERROR_CORRECTION_SUPPORT, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_HOST_UNIFIED_MEMORY, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_PROFILING_TIMER_RESOLUTION, size_t),
    SCALAR(UR_DEVICE_INFO_ENDIAN_LITTLE, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_AVAILABLE, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_COMPILER_AVAILABLE, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_LINKER_AVAILABLE, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_EXECUTION_CAPABILITIES, ur_device_exec_capability_flags_t),
    SCALAR(UR_DEVICE_INFO_QUEUE_ON_DEVICE_PROPERTIES, ur_queue_flags_t),
    SCALAR(UR_DEVICE_INFO_QUEUE_ON_HOST_PROPERTIES, ur_queue_flags_t),
    STRING(UR_DEVICE_INFO_BUILT_IN_KERNELS),
    SCALAR(UR_DEVICE_INFO_PLATFORM, ur_platform_handle_t),
    SCALAR(UR_DEVICE_INFO_REFERENCE_COUNT, uint32_t),
    OPTIONAL_STRING(UR_DEVICE_INFO_IL_VERSION),
    STRING(UR_DEVICE_INFO_NAME),
    STRING(UR_DEVICE_INFO_VENDOR),
    STRING(UR_DEVICE_INFO_DRIVER_VERSION),
    STRING(UR_DEVICE_INFO_PROFILE),
    STRING(UR_DEVICE_INFO_VERSION),
    STRING(UR_DEVICE_INFO_BACKEND_RUNTIME_VERSION),
    STRING(UR_DEVICE_INFO_EXTENSIONS),
    SCALAR(UR_DEVICE_INFO_PRINTF_BUFFER_SIZE, size_t),
    SCALAR(UR_DEVICE_INFO_PREFERRED_INTEROP_USER_SYNC, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_PARENT_DEVICE, ur_device_handle_t),
    ARRAY(UR_DEVICE_INFO_SUPPORTED_PARTITIONS, ur_device_partition_t),
    SCALAR(UR_DEVICE_INFO_PARTITION_MAX_SUB_DEVICES, uint32_t),
    SCALAR(UR_DEVICE_INFO_PARTITION_AFFINITY_DOMAIN, ur_device_affinity_domain_flags_t),
    ARRAY(UR_DEVICE_INFO_PARTITION_TYPE, ur_device_partition_property_t),
    SCALAR(UR_DEVICE_INFO_MAX_NUM_SUB_GROUPS, uint32_t),
    SCALAR(UR_DEVICE_INFO_SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS, ur_bool_t),
    ARRAY(UR_DEVICE_INFO_SUB_GROUP_SIZES_INTEL, uint32_t),
    SCALAR(UR_DEVICE_INFO_USM_HOST_SUPPORT, ur_device_usm_access_capability_flags_t),
    SCALAR(UR_DEVICE_INFO_USM_DEVICE_SUPPORT, ur_device_usm_access_capability_flags_t),
    SCALAR(UR_DEVICE_INFO_USM_SINGLE_SHARED_SUPPORT, ur_device_usm_access_capability_flags_t),
    SCALAR(UR_DEVICE_INFO_USM_CROSS_SHARED_SUPPORT, ur_device_usm_access_capability_flags_t),
    SCALAR(UR_DEVICE_INFO_USM_SYSTEM_SHARED_SUPPORT, ur_device_usm_access_capability_flags_t),
    OPTIONAL_ARRAY(UR_DEVICE_INFO_UUID, uint8_t),
    OPTIONAL_STRING(UR_DEVICE_INFO_PCI_ADDRESS),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_GPU_EU_COUNT, uint32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_GPU_EU_SIMD_WIDTH, uint32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_GPU_EU_SLICES, uint32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_GPU_EU_COUNT_PER_SUBSLICE, uint32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_GPU_SUBSLICES_PER_SLICE, uint32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_GPU_HW_THREADS_PER_EU, uint32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_MAX_MEMORY_BANDWIDTH, uint64_t),
    SCALAR(UR_DEVICE_INFO_IMAGE_SRGB, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_BUILD_ON_SUBDEVICE, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_ATOMIC_64, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_ATOMIC_MEMORY_ORDER_CAPABILITIES, ur_memory_order_capability_flags_t),
    SCALAR(UR_DEVICE_INFO_ATOMIC_MEMORY_SCOPE_CAPABILITIES, ur_memory_scope_capability_flags_t),
    SCALAR(UR_DEVICE_INFO_ATOMIC_FENCE_ORDER_CAPABILITIES, ur_memory_order_capability_flags_t),
    SCALAR(UR_DEVICE_INFO_ATOMIC_FENCE_SCOPE_CAPABILITIES, ur_memory_scope_capability_flags_t),
    SCALAR(UR_DEVICE_INFO_BFLOAT16, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_MAX_COMPUTE_QUEUE_INDICES, uint32_t),
    SCALAR(UR_DEVICE_INFO_KERNEL_SET_SPECIALIZATION_CONSTANTS, ur_bool_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_MEMORY_BUS_WIDTH, uint32_t),
    FIXED(UR_DEVICE_INFO_MAX_WORK_GROUPS_3D, size_t, 3),
    SCALAR(UR_DEVICE_INFO_ASYNC_BARRIER, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_MEM_CHANNEL_SUPPORT, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_HOST_PIPE_READ_WRITE_SUPPORT, ur_bool_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_MAX_REGISTERS_PER_WORK_GROUP, uint32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_IP_VERSION, uint32_t),
    SCALAR(UR_DEVICE_INFO_VIRTUAL_MEMORY_SUPPORT, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_ESIMD_SUPPORT, ur_bool_t),
    OPTIONAL_ARRAY(UR_DEVICE_INFO_COMPONENT_DEVICES, ur_device_handle_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_COMPOSITE_DEVICE, ur_device_handle_t),
    SCALAR(UR_DEVICE_INFO_GLOBAL_VARIABLE_SUPPORT, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_USM_POOL_SUPPORT, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_NUM_COMPUTE_UNITS, uint32_t),
    SCALAR(UR_DEVICE_INFO_PROGRAM_SET_SPECIALIZATION_CONSTANTS, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_USE_NATIVE_ASSERT, ur_bool_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_CURRENT_CLOCK_THROTTLE_REASONS, ur_device_throttle_reasons_flags_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_FAN_SPEED, int32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_MIN_POWER_LIMIT, int32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_MAX_POWER_LIMIT, int32_t),
    SCALAR(UR_DEVICE_INFO_BFLOAT16_CONVERSIONS_NATIVE, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_KERNEL_LAUNCH_CAPABILITIES, ur_kernel_launch_properties_flags_t),
    OPTIONAL_ARRAY(UR_DEVICE_INFO_LUID, uint8_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_NODE_MASK, uint32_t),
    SCALAR(UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_LONG_LONG, uint32_t),
    SCALAR(UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_LONG_LONG, uint32_t),
    SCALAR(UR_DEVICE_INFO_MAX_WORK_GROUPS, size_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_XE_STACK_COUNT, uint32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_XE_REGIONS_PER_STACK, uint32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_XE_CLUSTERS_PER_REGION, uint32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_XE_CORES_PER_CLUSTER, uint32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_EUS_PER_XE_CORE, uint32_t),
    OPTIONAL_SCALAR(UR_DEVICE_INFO_MAX_LANES_PER_HW_THREAD, uint32_t),
    SCALAR(UR_DEVICE_INFO_COMMAND_BUFFER_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_COMMAND_BUFFER_UPDATE_CAPABILITIES_EXP, ur_device_command_buffer_update_capability_flags_t),
    SCALAR(UR_DEVICE_INFO_COMMAND_BUFFER_EVENT_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_COMMAND_BUFFER_SUBGRAPH_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_BINDLESS_IMAGES_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_BINDLESS_IMAGES_SHARED_USM_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_BINDLESS_IMAGES_1D_USM_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_BINDLESS_IMAGES_2D_USM_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_IMAGE_PITCH_ALIGN_EXP, uint32_t),
    SCALAR(UR_DEVICE_INFO_MAX_IMAGE_LINEAR_WIDTH_EXP, size_t),
    SCALAR(UR_DEVICE_INFO_MAX_IMAGE_LINEAR_HEIGHT_EXP, size_t),
    SCALAR(UR_DEVICE_INFO_MAX_IMAGE_LINEAR_PITCH_EXP, size_t),
    SCALAR(UR_DEVICE_INFO_MIPMAP_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_MIPMAP_ANISOTROPY_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_MIPMAP_MAX_ANISOTROPY_EXP, uint32_t),
    SCALAR(UR_DEVICE_INFO_MIPMAP_LEVEL_REFERENCE_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_EXTERNAL_MEMORY_IMPORT_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_EXTERNAL_SEMAPHORE_IMPORT_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_CUBEMAP_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_CUBEMAP_SEAMLESS_FILTERING_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_BINDLESS_SAMPLED_IMAGE_FETCH_1D_USM_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_BINDLESS_SAMPLED_IMAGE_FETCH_1D_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_BINDLESS_SAMPLED_IMAGE_FETCH_2D_USM_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_BINDLESS_SAMPLED_IMAGE_FETCH_2D_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_BINDLESS_SAMPLED_IMAGE_FETCH_3D_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_TIMESTAMP_RECORDING_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_IMAGE_ARRAY_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_BINDLESS_UNIQUE_ADDRESSING_PER_DIM_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_BINDLESS_SAMPLE_1D_USM_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_BINDLESS_SAMPLE_2D_USM_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_BINDLESS_IMAGES_GATHER_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_ENQUEUE_NATIVE_COMMAND_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_LOW_POWER_EVENTS_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_2D_BLOCK_ARRAY_CAPABILITIES_EXP, ur_exp_device_2d_block_array_capability_flags_t),
    SCALAR(UR_DEVICE_INFO_IPC_MEMORY_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_IPC_PHYSICAL_MEMORY_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_REUSABLE_EVENTS_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_IPC_EVENT_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_ASYNC_USM_ALLOCATIONS_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_CLOCK_SUB_GROUP_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_CLOCK_WORK_GROUP_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_CLOCK_DEVICE_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_IS_INTEGRATED_GPU, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_GRAPH_RECORD_AND_REPLAY_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_USM_HOST_ALLOC_REGISTER_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_PER_EVENT_PROFILING_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_USM_P2P_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_MULTI_DEVICE_COMPILE_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_DEVICE_WAIT_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_DYNAMIC_LINK_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_USM_CONTEXT_MEMCPY_SUPPORT_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_MEMORY_EXPORT_EXPORTABLE_DEVICE_MEM_EXP, ur_bool_t),
    SCALAR(UR_DEVICE_INFO_ENQUEUE_HOST_TASK_SUPPORT_EXP, ur_bool_t),
};
#pragma GCC diagnostic pop

static const size_t num_queries = sizeof queries / sizeof *queries;

static bool known(uint32_t value) {
  for (size_t i = 0; i < num_queries; i++)
    if ((uint32_t)queries[i].name == value) return true;
  return false;
}

static void every_query(urt_env *env) {
  char refused[4096] = "";
  for (size_t i = 0; i < num_queries; i++) {
    const urt_query *q = &queries[i];
    size_t size = 0;
    ur_result_t r = urDeviceGetInfo(env->device, q->name, 0, NULL, &size);
    if (r == UR_RESULT_ERROR_UNSUPPORTED_ENUMERATION) {
      URT_CHECK(q->optional, "%s is required but refused", q->text);
      strncat(refused, " ", sizeof refused - strlen(refused) - 1);
      strncat(refused, q->text + strlen("UR_DEVICE_INFO_"), sizeof refused - strlen(refused) - 1);
      continue;
    }
    if (r != UR_RESULT_SUCCESS) {
      urt_fail(__FILE__, __LINE__, q->text, r, UR_RESULT_SUCCESS);
      continue;
    }
    switch (q->shape) {
    case SHAPE_EXACT:
      URT_CHECK(size == q->elem * q->count, "%s: %zu bytes, its type has %zu", q->text, size, q->elem * q->count);
      break;
    case SHAPE_ARRAY:
      URT_CHECK(size % q->elem == 0, "%s: %zu bytes of %zu-byte elements", q->text, size, q->elem);
      break;
    case SHAPE_STRING:
      URT_CHECK(size >= 1, "%s: a string of %zu bytes", q->text, size);
      break;
    }
    if (size == 0) continue;
    uint8_t *value = malloc(size);
    memset(value, 0xA5, size);
    URT_OK(urDeviceGetInfo(env->device, q->name, size, value, NULL));
    if (q->shape == SHAPE_STRING)
      URT_CHECK(memchr(value, 0, size) == value + size - 1, "%s is one NUL-terminated string", q->text);
    if (strcmp(q->type, "ur_bool_t") == 0) URT_CHECK(value[0] <= 1, "%s = %u", q->text, value[0]);
    URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE, urDeviceGetInfo(env->device, q->name, size - 1, value, NULL));
    free(value);
  }
  printf("# refused:%s\n", refused);

  /* Between the enumerators, and beyond them. */
  for (uint32_t v = 0; v < 0xA000; v++) {
    if (known(v)) continue;
    size_t size = 0;
    ur_result_t r = urDeviceGetInfo(env->device, (ur_device_info_t)v, 0, NULL, &size);
    if (r != UR_RESULT_ERROR_INVALID_ENUMERATION) {
      urt_fail(__FILE__, __LINE__, "urDeviceGetInfo of a value outside the enumeration", r,
               UR_RESULT_ERROR_INVALID_ENUMERATION);
      printf("# the value was %#x\n", v);
      break;
    }
  }
}

/* Answers that must agree with each other. */
static void coherent_answers(urt_env *env) {
  uint32_t dims = 0;
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_MAX_WORK_ITEM_DIMENSIONS, sizeof dims, &dims, NULL));
  size_t size = 0;
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_MAX_WORK_ITEM_SIZES, 0, NULL, &size));
  URT_CHECK(size == dims * sizeof(size_t), "%u dimensions, %zu bytes of work-item sizes", dims, size);

  ur_device_fp_capability_flags_t dbl = 0, half = 0;
  uint32_t dbl_width = 0, half_width = 0;
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_DOUBLE_FP_CONFIG, sizeof dbl, &dbl, NULL));
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_HALF_FP_CONFIG, sizeof half, &half, NULL));
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_DOUBLE, sizeof dbl_width, &dbl_width, NULL));
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_HALF, sizeof half_width, &half_width, NULL));
  URT_CHECK((dbl == 0) == (dbl_width == 0), "double config %#x, vector width %u", dbl, dbl_width);
  URT_CHECK((half == 0) == (half_width == 0), "half config %#x, vector width %u", half, half_width);

  /* libsycl reads fp16 and fp64 from the extension string. */
  char extensions[8192] = "";
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_EXTENSIONS, sizeof extensions, extensions, NULL));
  URT_CHECK((strstr(extensions, "cl_khr_fp64") != NULL) == (dbl != 0), "fp64 %#x, extensions \"%s\"", dbl, extensions);

  /* No images; partitions with a sub-device limit where any are listed
   * (partition.c makes them). */
  URT_CHECK(!urt_device_bool(env, UR_DEVICE_INFO_IMAGE_SUPPORT), "image support");
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_SUPPORTED_PARTITIONS, 0, NULL, &size));
  URT_CHECK(size % sizeof(ur_device_partition_t) == 0, "%zu bytes of partition types", size);
  uint32_t max_subs = 0;
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_PARTITION_MAX_SUB_DEVICES, sizeof max_subs, &max_subs, NULL));
  URT_CHECK((size == 0) == (max_subs == 0), "%zu bytes of partition types, at most %u sub-devices", size, max_subs);

  /* A cache reported has lines; a CPU device's memory is cached by the
   * host's caches, whose sizes it knows (dpctl asserts both positive). */
  ur_device_mem_cache_type_t cache = UR_DEVICE_MEM_CACHE_TYPE_NONE;
  uint32_t line = 0;
  uint64_t cache_size = 0;
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_GLOBAL_MEM_CACHE_TYPE, sizeof cache, &cache, NULL));
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_GLOBAL_MEM_CACHELINE_SIZE, sizeof line, &line, NULL));
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_GLOBAL_MEM_CACHE_SIZE, sizeof cache_size, &cache_size, NULL));
  if (cache != UR_DEVICE_MEM_CACHE_TYPE_NONE) URT_CHECK(line > 0, "a cache of type %d without lines", (int)cache);
  if (env->type == UR_DEVICE_TYPE_CPU)
    URT_CHECK(line > 0 && cache_size > 0, "a CPU device's cache: %llu bytes in %u-byte lines",
              (unsigned long long)cache_size, line);

  uint64_t total = 0, free_mem = 0;
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_GLOBAL_MEM_SIZE, sizeof total, &total, NULL));
  if (urDeviceGetInfo(env->device, UR_DEVICE_INFO_GLOBAL_MEM_FREE, sizeof free_mem, &free_mem, NULL) == UR_RESULT_SUCCESS)
    URT_CHECK(free_mem <= total, "%llu bytes free of %llu", (unsigned long long)free_mem, (unsigned long long)total);

  uint32_t sub_groups = 0;
  size_t wg = 0;
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL));
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_SUB_GROUP_SIZES_INTEL, 0, NULL, &size));
  uint32_t *sizes = calloc(1, size + sizeof(uint32_t));
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_SUB_GROUP_SIZES_INTEL, size + sizeof(uint32_t), sizes, NULL));
  URT_OK(urDeviceGetInfo(env->device, UR_DEVICE_INFO_MAX_NUM_SUB_GROUPS, sizeof sub_groups, &sub_groups, NULL));
  for (size_t i = 0; i < size / sizeof(uint32_t); i++)
    URT_CHECK(sizes[i] >= 1 && sizes[i] <= wg, "sub-group size %u, work-groups up to %zu", sizes[i], wg);
  /* Every device runs sub-groups (of one work-item where it has none of its
   * own): libsycl and dpctl take an empty list or a zero count as broken. */
  URT_CHECK(size >= sizeof(uint32_t), "no sub-group sizes");
  URT_CHECK(sub_groups >= 1, "no sub-groups per work-group");
  free(sizes);
}

static void sleep_ms(long ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, NULL);
}

static void global_timestamps(urt_env *env) {
  uint64_t dev0 = 0, host0 = 0, dev1 = 0, host1 = 0, host_only = 0;
  URT_OK(urDeviceGetGlobalTimestamps(env->device, &dev0, &host0));
  URT_OK(urDeviceGetGlobalTimestamps(env->device, NULL, &host_only));
  URT_OK(urDeviceGetGlobalTimestamps(env->device, NULL, NULL));
  URT_CHECK(dev0 != 0 && host0 != 0 && host_only >= host0, "device %llu, host %llu, host alone %llu",
            (unsigned long long)dev0, (unsigned long long)host0, (unsigned long long)host_only);
  sleep_ms(2);
  URT_OK(urDeviceGetGlobalTimestamps(env->device, &dev1, &host1));
  URT_CHECK(dev1 > dev0 && host1 > host0, "clocks did not advance: device %llu -> %llu, host %llu -> %llu",
            (unsigned long long)dev0, (unsigned long long)dev1, (unsigned long long)host0, (unsigned long long)host1);
}

static void select_binary(urt_env *env) {
  const char *targets[] = {UR_DEVICE_BINARY_TARGET_UNKNOWN, UR_DEVICE_BINARY_TARGET_SPIRV32,
                           UR_DEVICE_BINARY_TARGET_SPIRV64, UR_DEVICE_BINARY_TARGET_SPIRV64_X86_64,
                           UR_DEVICE_BINARY_TARGET_SPIRV64_GEN, UR_DEVICE_BINARY_TARGET_SPIRV64_FPGA,
                           UR_DEVICE_BINARY_TARGET_NVPTX64, UR_DEVICE_BINARY_TARGET_AMDGCN,
                           UR_DEVICE_BINARY_TARGET_NATIVE_CPU};
  enum { N = sizeof targets / sizeof *targets };
  ur_device_binary_t binaries[N];
  for (int i = 0; i < N; i++) binaries[i] = (ur_device_binary_t){UR_STRUCTURE_TYPE_DEVICE_BINARY, NULL, targets[i]};
  uint32_t selected = N;
  ur_result_t r = urDeviceSelectBinary(env->device, binaries, N, &selected);
  if (r == UR_RESULT_SUCCESS) {
    URT_CHECK(selected < N, "selected %u of %d", selected, N);
    printf("# selects %s\n", targets[selected]);
  } else {
    URT_CHECK(r == UR_RESULT_ERROR_INVALID_BINARY, "urDeviceSelectBinary returned %d", r);
    printf("# runs none of UR's binary formats\n");
  }
  /* The unknown target alone never suits. */
  URT_RESULT(UR_RESULT_ERROR_INVALID_BINARY, urDeviceSelectBinary(env->device, binaries, 1, &selected));
  URT_RESULT(UR_RESULT_ERROR_INVALID_SIZE, urDeviceSelectBinary(env->device, binaries, 0, &selected));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urDeviceSelectBinary(env->device, NULL, N, &selected));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urDeviceSelectBinary(env->device, binaries, N, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urDeviceSelectBinary(NULL, binaries, N, &selected));
}

int main(void) {
  urt_env env;
  urt_init(&env);
  every_query(&env);
  coherent_answers(&env);
  global_timestamps(&env);
  select_binary(&env);
  urt_fini(&env);
  return urt_done("device_info");
}
