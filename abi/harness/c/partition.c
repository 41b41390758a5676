/* Sub-devices (urDevicePartition): where the device lists partitions, each
 * kind it lists makes sub-devices with a parent, a partition type and their
 * share of the compute units, counted handles (unlike root devices) that
 * urDeviceGet does not list, on which a context, a queue and USM work, and
 * whose queues run in their parent's context too; where
 * it lists none (Vulkan, CUDA, drivers without partitions), every partition
 * is DEVICE_PARTITION_FAILED. Misuse gets the header's codes everywhere. */
#include "urt.h"

/* UR 0.12's leak checker registers no handle urDevicePartition returns, so
 * retaining and releasing a sub-device, as the spec asks, is reported as
 * the use of a nonexistent handle: declared to the harness here. */
static void untracked_device(ur_device_handle_t device) {
  if (device) printf("urt-untracked %p\n", (void *)device);
}

static uint32_t info_u32(ur_device_handle_t device, ur_device_info_t query) {
  uint32_t value = 0;
  URT_OK(urDeviceGetInfo(device, query, sizeof value, &value, NULL));
  return value;
}

static ur_device_partition_properties_t properties_of(const ur_device_partition_property_t *list, size_t n) {
  ur_device_partition_properties_t p = {UR_STRUCTURE_TYPE_DEVICE_PARTITION_PROPERTIES, NULL, list, n};
  return p;
}

static uint32_t root_devices(urt_env *env) {
  uint32_t count = 0;
  URT_OK(urDeviceGet(env->platform, UR_DEVICE_TYPE_ALL, 0, NULL, &count));
  return count;
}

/* A sub-device runs a fill and a copy in a context and queue of its own. */
static void use_sub_device(urt_env *env, ur_device_handle_t sub) {
  ur_context_handle_t context = NULL;
  ur_queue_handle_t queue = NULL;
  URT_OK(urContextCreate(1, &sub, NULL, &context));
  URT_OK(urQueueCreate(context, sub, NULL, &queue));
  if (!context || !queue) return;
  ur_device_usm_access_capability_flags_t usm = 0;
  URT_OK(urDeviceGetInfo(sub, UR_DEVICE_INFO_USM_DEVICE_SUPPORT, sizeof usm, &usm, NULL));
  if (usm) {
    void *mem = NULL;
    URT_OK(urUSMDeviceAlloc(context, sub, NULL, NULL, 256, &mem));
    uint8_t pattern = 0x5a, host[256] = {0};
    URT_OK(urEnqueueUSMFill(queue, mem, 1, &pattern, 256, 0, NULL, NULL));
    URT_OK(urEnqueueUSMMemcpy(queue, true, host, mem, 256, 0, NULL, NULL));
    for (int i = 0; i < 256; i++) URT_CHECK(host[i] == 0x5a, "byte %d is %#x", i, host[i]);
    URT_OK(urUSMFree(context, mem));
  }
  (void)env;
  URT_OK(urQueueRelease(queue));
  URT_OK(urContextRelease(context));
}

/* A queue on a sub-device in the root device's context (what libsycl makes
 * for sycl::queue{sub}): it answers the sub-device, and a fill and a kernel
 * of the context's program run through it on the context's memory, as does
 * a command buffer made for the sub-device. Drivers
 * that take no such queue (Intel's OpenCL CPU runtime) answer
 * UNSUPPORTED_FEATURE. */
static void sub_device_in_parent_context(urt_env *env, ur_device_handle_t sub) {
  ur_queue_handle_t queue = NULL;
  ur_result_t made = urQueueCreate(env->context, sub, NULL, &queue);
  if (made == UR_RESULT_ERROR_UNSUPPORTED_FEATURE && env->backend == UR_BACKEND_OPENCL) {
    printf("# the OpenCL driver takes no queue on a sub-device in its parent's context\n");
    return;
  }
  URT_CHECK(made == UR_RESULT_SUCCESS, "a queue on a sub-device in its parent's context: result %d", made);
  if (!queue) return;
  ur_device_handle_t device = NULL;
  URT_OK(urQueueGetInfo(queue, UR_QUEUE_INFO_DEVICE, sizeof device, &device, NULL));
  URT_CHECK(device == sub, "the queue's device %p, not the sub-device %p", (void *)device, (void *)sub);
  if (urt_usm_supported(env, UR_DEVICE_INFO_USM_DEVICE_SUPPORT)) {
    enum { N = 256 };
    uint32_t *p = urt_device_alloc(env, N * sizeof(uint32_t));
    uint32_t one = 1, expected = 1;
    URT_OK(urEnqueueUSMFill(queue, p, sizeof one, &one, N * sizeof(uint32_t), 0, NULL, NULL));
    ur_program_handle_t program = urt_axpb_program(env);
    ur_kernel_handle_t kernel = NULL;
    if (program) URT_OK(urProgramBuild(env->context, program, NULL));
    if (program) URT_OK(urKernelCreate(program, "axpb", &kernel));
    if (kernel) {
      uint32_t a = 3, b = 4;
      ur_exp_kernel_arg_properties_t args[3] = {urt_pointer_arg(0, p), urt_value_arg(1, &a), urt_value_arg(2, &b)};
      size_t global = N;
      URT_OK(urEnqueueKernelLaunchWithArgsExp(queue, kernel, 1, NULL, &global, NULL, 3, args, NULL, 0, NULL, NULL));
      expected = 7;
      URT_OK(urKernelRelease(kernel));
    }
    if (program) URT_OK(urProgramRelease(program));
    uint32_t host[N] = {0};
    URT_OK(urEnqueueUSMMemcpy(queue, true, host, p, sizeof host, 0, NULL, NULL));
    for (int i = 0; i < N; i++) URT_CHECK(host[i] == expected, "element %d is %u, not %u", i, host[i], expected);
    /* A command buffer for the sub-device in the same context, where the
     * backend records one (OpenCL's native command buffers do not). */
    ur_exp_command_buffer_desc_t desc = {UR_STRUCTURE_TYPE_EXP_COMMAND_BUFFER_DESC, NULL, false, true, false};
    ur_exp_command_buffer_handle_t cb = NULL;
    ur_result_t cb_made = urCommandBufferCreateExp(env->context, sub, &desc, &cb);
    URT_CHECK(cb_made == UR_RESULT_SUCCESS || (cb_made == UR_RESULT_ERROR_UNSUPPORTED_FEATURE && env->backend == UR_BACKEND_OPENCL),
              "a command buffer for a sub-device in its parent's context: result %d", cb_made);
    if (cb) {
      uint32_t five = 5;
      URT_OK(urCommandBufferAppendUSMFillExp(cb, p, &five, sizeof five, sizeof host, 0, NULL, 0, NULL, NULL, NULL, NULL));
      URT_OK(urCommandBufferFinalizeExp(cb));
      URT_OK(urEnqueueCommandBufferExp(queue, cb, 0, NULL, NULL));
      URT_OK(urEnqueueUSMMemcpy(queue, true, host, p, sizeof host, 0, NULL, NULL));
      for (int i = 0; i < N; i++) URT_CHECK(host[i] == five, "recorded fill: element %d is %u", i, host[i]);
      URT_OK(urCommandBufferReleaseExp(cb));
    }
    URT_OK(urUSMFree(env->context, p));
  }
  URT_OK(urQueueRelease(queue));
}

/* The axpb kernel of `context`'s program on `queue` over N words of `p`,
 * each 1 before: 3 * 1 + 4 after. */
static void axpb_on(urt_env *env, ur_context_handle_t context, ur_device_handle_t device, ur_queue_handle_t queue,
                    uint32_t *p, size_t n) {
  ur_program_handle_t program = urt_axpb_program_in(env, context, device);
  if (!program) return;
  ur_kernel_handle_t kernel = NULL;
  URT_OK(urProgramBuild(context, program, NULL));
  uint32_t devices = 0;
  URT_OK(urProgramGetInfo(program, UR_PROGRAM_INFO_NUM_DEVICES, sizeof devices, &devices, NULL));
  URT_CHECK(devices == 2, "a program of a context of two devices is for %u", devices);
  URT_OK(urKernelCreate(program, "axpb", &kernel));
  uint32_t one = 1, a = 3, b = 4;
  URT_OK(urEnqueueUSMFill(queue, p, sizeof one, &one, n * sizeof(uint32_t), 0, NULL, NULL));
  if (kernel) {
    ur_exp_kernel_arg_properties_t args[3] = {urt_pointer_arg(0, p), urt_value_arg(1, &a), urt_value_arg(2, &b)};
    URT_OK(urEnqueueKernelLaunchWithArgsExp(queue, kernel, 1, NULL, &n, NULL, 3, args, NULL, 0, NULL, NULL));
    uint32_t host[256] = {0};
    URT_OK(urEnqueueUSMMemcpy(queue, true, host, p, n * sizeof(uint32_t), 0, NULL, NULL));
    for (size_t i = 0; i < n; i++) URT_CHECK(host[i] == 7, "element %zu is %u, not 7", i, host[i]);
    URT_OK(urKernelRelease(kernel));
  }
  URT_OK(urProgramRelease(program));
}

/* A context over two sub-devices (urContextCreate with a list, as
 * sycl::context{d1, d2} makes): it answers both, takes a queue on each and
 * none on their parent, which it does not list, shares its memory between
 * them and runs its program's kernel on each (OpenCL: a cl_context of the
 * two sub-devices, which Intel's CPU runtime needs). A context of the root
 * device and a sub-device listed twice counts the duplicate once; two
 * root devices of the platform make one context on OpenCL and are
 * UNSUPPORTED_FEATURE elsewhere. */
static void family_context(urt_env *env, ur_device_handle_t d1, ur_device_handle_t d2, uint32_t roots) {
  ur_device_handle_t pair[2] = {d1, d2}, listed[4] = {NULL};
  ur_context_handle_t context = NULL;
  URT_OK(urContextCreate(2, pair, NULL, &context));
  if (!context) return;
  uint32_t n = 0;
  URT_OK(urContextGetInfo(context, UR_CONTEXT_INFO_NUM_DEVICES, sizeof n, &n, NULL));
  URT_CHECK(n == 2, "a context of two sub-devices answers %u devices", n);
  size_t size = 0;
  URT_OK(urContextGetInfo(context, UR_CONTEXT_INFO_DEVICES, 0, NULL, &size));
  URT_CHECK(size == 2 * sizeof(ur_device_handle_t), "UR_CONTEXT_INFO_DEVICES of %zu bytes", size);
  URT_OK(urContextGetInfo(context, UR_CONTEXT_INFO_DEVICES, sizeof listed, listed, NULL));
  URT_CHECK(listed[0] == d1 && listed[1] == d2, "the context lists %p %p", (void *)listed[0], (void *)listed[1]);
  ur_queue_handle_t q1 = NULL, q2 = NULL, q_root = NULL;
  URT_RESULT(UR_RESULT_ERROR_INVALID_DEVICE, urQueueCreate(context, env->device, NULL, &q_root));
  URT_OK(urQueueCreate(context, d1, NULL, &q1));
  URT_OK(urQueueCreate(context, d2, NULL, &q2));
  if (q1 && q2 && urt_usm_supported(env, UR_DEVICE_INFO_USM_DEVICE_SUPPORT)) {
    enum { N = 256 };
    uint8_t *a = NULL, *b = NULL, pattern = 0x3c, host[N] = {0};
    URT_OK(urUSMDeviceAlloc(context, d1, NULL, NULL, N, (void **)&a));
    URT_OK(urUSMDeviceAlloc(context, d2, NULL, NULL, N, (void **)&b));
    void *refused = NULL;
    URT_RESULT(UR_RESULT_ERROR_INVALID_CONTEXT, urUSMDeviceAlloc(context, env->device, NULL, NULL, N, &refused));
    if (a && b) {
      ur_device_handle_t owner = NULL;
      URT_OK(urUSMGetMemAllocInfo(context, b, UR_USM_ALLOC_INFO_DEVICE, sizeof owner, &owner, NULL));
      URT_CHECK(owner == d2, "the allocation made for the second sub-device answers %p", (void *)owner);
      URT_OK(urEnqueueUSMFill(q1, a, 1, &pattern, N, 0, NULL, NULL));
      URT_OK(urQueueFinish(q1));
      URT_OK(urEnqueueUSMMemcpy(q2, true, b, a, N, 0, NULL, NULL));
      URT_OK(urEnqueueUSMMemcpy(q2, true, host, b, N, 0, NULL, NULL));
      for (int i = 0; i < N; i++) URT_CHECK(host[i] == 0x3c, "byte %d is %#x", i, host[i]);
      /* A kernel of the context's program on each sub-device. */
      axpb_on(env, context, d1, q1, (uint32_t *)a, N / sizeof(uint32_t));
      axpb_on(env, context, d2, q2, (uint32_t *)b, N / sizeof(uint32_t));
    }
    if (a) URT_OK(urUSMFree(context, a));
    if (b) URT_OK(urUSMFree(context, b));
  }
  /* A buffer's native object serves every device of the context: the
   * listed ones and the root it was made on answer alike. */
  ur_mem_handle_t buffer = NULL;
  URT_OK(urMemBufferCreate(context, UR_MEM_FLAG_READ_WRITE, 64, NULL, &buffer));
  if (buffer) {
    ur_native_handle_t native = 0;
    ur_result_t own = urMemGetNativeHandle(buffer, NULL, &native);
    URT_CHECK(own == UR_RESULT_SUCCESS || own == UR_RESULT_ERROR_UNSUPPORTED_FEATURE, "native buffer: result %d", own);
    URT_RESULT(own, urMemGetNativeHandle(buffer, d2, &native));
    URT_RESULT(own, urMemGetNativeHandle(buffer, env->device, &native));
    URT_OK(urMemRelease(buffer));
  }
  if (q1) URT_OK(urQueueRelease(q1));
  if (q2) URT_OK(urQueueRelease(q2));
  URT_OK(urContextRelease(context));

  ur_device_handle_t with_root[3] = {env->device, d1, d1};
  context = NULL;
  URT_OK(urContextCreate(3, with_root, NULL, &context));
  if (context) {
    URT_OK(urContextGetInfo(context, UR_CONTEXT_INFO_NUM_DEVICES, sizeof n, &n, NULL));
    URT_CHECK(n == 2, "the root and a sub-device listed twice: %u devices", n);
    URT_OK(urQueueCreate(context, env->device, NULL, &q_root));
    if (q_root) URT_OK(urQueueRelease(q_root));
    URT_OK(urContextRelease(context));
  }
  if (roots >= 2) {
    /* Two root devices of the platform: one cl_context on OpenCL (a queue
     * on each), UNSUPPORTED_FEATURE where the library has no context
     * spanning unrelated devices. */
    ur_device_handle_t two[2] = {NULL, NULL};
    URT_OK(urDeviceGet(env->platform, UR_DEVICE_TYPE_ALL, 2, two, NULL));
    context = NULL;
    if (env->backend == UR_BACKEND_OPENCL) {
      printf("# a context over two root devices of the platform\n");
      URT_OK(urContextCreate(2, two, NULL, &context));
      for (int i = 0; i < 2 && context; i++) {
        ur_queue_handle_t queue = NULL;
        URT_OK(urQueueCreate(context, two[i], NULL, &queue));
        if (queue) URT_OK(urQueueFinish(queue));
        if (queue) URT_OK(urQueueRelease(queue));
      }
      if (context) URT_OK(urContextRelease(context));
    } else {
      URT_RESULT(UR_RESULT_ERROR_UNSUPPORTED_FEATURE, urContextCreate(2, two, NULL, &context));
    }
  }
}

/* Partitions with one property list, checks every sub-device, releases them. */
static void partition_with(urt_env *env, const ur_device_partition_property_t *list, size_t n, uint32_t units,
                           uint32_t roots) {
  ur_device_partition_properties_t props = properties_of(list, n);
  uint32_t count = 0;
  URT_OK(urDevicePartition(env->device, &props, 0, NULL, &count));
  URT_CHECK(count > 0, "partition type %#x made no sub-device", list[0].type);
  if (count == 0) return;
  ur_device_handle_t *subs = calloc(count, sizeof *subs);
  URT_OK(urDevicePartition(env->device, &props, count, subs, NULL));
  uint32_t total = 0;
  for (uint32_t i = 0; i < count; i++) {
    ur_device_handle_t sub = subs[i], parent = NULL;
    URT_CHECK(sub != NULL, "sub-device %u", i);
    if (!sub) continue;
    untracked_device(sub);
    URT_OK(urDeviceGetInfo(sub, UR_DEVICE_INFO_PARENT_DEVICE, sizeof parent, &parent, NULL));
    URT_CHECK(parent == env->device, "sub-device %u's parent", i);
    uint32_t sub_units = info_u32(sub, UR_DEVICE_INFO_MAX_COMPUTE_UNITS);
    URT_CHECK(sub_units >= 1 && sub_units <= units, "sub-device %u has %u of %u units", i, sub_units, units);
    total += sub_units;
    if (list[0].type == UR_DEVICE_PARTITION_BY_COUNTS)
      URT_CHECK(sub_units == list[i].value.count, "sub-device %u: %u units for a count of %u", i, sub_units,
                list[i].value.count);
    if (list[0].type == UR_DEVICE_PARTITION_EQUALLY)
      URT_CHECK(sub_units == list[0].value.equally, "sub-device %u: %u units", i, sub_units);
    size_t size = 0;
    URT_OK(urDeviceGetInfo(sub, UR_DEVICE_INFO_PARTITION_TYPE, 0, NULL, &size));
    size_t expected = (list[0].type == UR_DEVICE_PARTITION_BY_COUNTS ? n : 1) * sizeof(ur_device_partition_property_t);
    URT_CHECK(size == expected, "partition type of %zu bytes, expected %zu", size, expected);
    ur_device_partition_property_t made[8];
    if (size == expected && size <= sizeof made) {
      URT_OK(urDeviceGetInfo(sub, UR_DEVICE_INFO_PARTITION_TYPE, size, made, NULL));
      URT_CHECK(made[0].type == list[0].type, "partition type %#x of %#x", made[0].type, list[0].type);
      if (list[0].type == UR_DEVICE_PARTITION_BY_AFFINITY_DOMAIN) {
        ur_device_affinity_domain_flags_t d = made[0].value.affinity_domain;
        URT_CHECK(d != 0 && (d & (d - 1)) == 0, "affinity domain %#x is one domain", d);
      }
    }
    /* Sub-devices are counted: retain and release change the count. */
    URT_CHECK(info_u32(sub, UR_DEVICE_INFO_REFERENCE_COUNT) == 1, "a new sub-device's count");
    URT_OK(urDeviceRetain(sub));
    URT_CHECK(info_u32(sub, UR_DEVICE_INFO_REFERENCE_COUNT) == 2, "a retained sub-device's count");
    URT_OK(urDeviceRelease(sub));
    if (i == 0) use_sub_device(env, sub);
    if (i == 0) sub_device_in_parent_context(env, sub);
    /* Its native handle (where the backend has one) adopts as itself. */
    ur_native_handle_t native = 0;
    if (urDeviceGetNativeHandle(sub, &native) == UR_RESULT_SUCCESS) {
      ur_device_handle_t adopted = NULL;
      URT_OK(urDeviceCreateWithNativeHandle(native, env->adapter, NULL, &adopted));
      URT_CHECK(adopted == sub, "sub-device %u adopted as %p", i, (void *)adopted);
      if (adopted) URT_OK(urDeviceRelease(adopted));
    }
  }
  URT_CHECK(total <= units, "%u units handed out of %u", total, units);
  URT_CHECK(root_devices(env) >= 1, "root devices listed");
  if (count >= 2 && subs[0] && subs[1]) family_context(env, subs[0], subs[1], roots);
  for (uint32_t i = 0; i < count; i++)
    if (subs[i]) URT_OK(urDeviceRelease(subs[i]));
  /* Fewer handles than sub-devices: only those are written. */
  ur_device_handle_t first[2] = {NULL, NULL};
  URT_OK(urDevicePartition(env->device, &props, 1, first, NULL));
  URT_CHECK(first[0] != NULL && first[1] == NULL, "one handle asked, one written");
  untracked_device(first[0]);
  if (first[0]) URT_OK(urDeviceRelease(first[0]));
  free(subs);
}

int main(void) {
  urt_env env;
  urt_init(&env);
  uint32_t units = info_u32(env.device, UR_DEVICE_INFO_MAX_COMPUTE_UNITS);
  uint32_t max_subs = info_u32(env.device, UR_DEVICE_INFO_PARTITION_MAX_SUB_DEVICES);
  ur_device_affinity_domain_flags_t domains = info_u32(env.device, UR_DEVICE_INFO_PARTITION_AFFINITY_DOMAIN);
  ur_device_handle_t parent = (ur_device_handle_t)&env;
  URT_OK(urDeviceGetInfo(env.device, UR_DEVICE_INFO_PARENT_DEVICE, sizeof parent, &parent, NULL));
  URT_CHECK(parent == NULL, "a root device has no parent");
  size_t size = 1;
  URT_OK(urDeviceGetInfo(env.device, UR_DEVICE_INFO_PARTITION_TYPE, 0, NULL, &size));
  URT_CHECK(size == 0, "a root device's partition type has %zu bytes", size);
  URT_OK(urDeviceGetInfo(env.device, UR_DEVICE_INFO_SUPPORTED_PARTITIONS, 0, NULL, &size));
  size_t kinds = size / sizeof(ur_device_partition_t);
  ur_device_partition_t supported[8] = {0};
  if (kinds > 0 && kinds <= 8) URT_OK(urDeviceGetInfo(env.device, UR_DEVICE_INFO_SUPPORTED_PARTITIONS, size, supported, NULL));
  bool equally = false, counts = false, affinity = false;
  for (size_t i = 0; i < kinds; i++) {
    equally |= supported[i] == UR_DEVICE_PARTITION_EQUALLY;
    counts |= supported[i] == UR_DEVICE_PARTITION_BY_COUNTS;
    affinity |= supported[i] == UR_DEVICE_PARTITION_BY_AFFINITY_DOMAIN;
  }
  char name[256] = "";
  URT_OK(urDeviceGetInfo(env.device, UR_DEVICE_INFO_NAME, sizeof name, name, NULL));
  printf("# %s: %zu partition kinds, %u units, at most %u sub-devices, affinity domains %#x\n", name, kinds, units,
         max_subs, domains);
  uint32_t roots = root_devices(&env);

  ur_device_partition_property_t one = {UR_DEVICE_PARTITION_EQUALLY, {.equally = 1}};
  ur_device_partition_properties_t props = properties_of(&one, 1);
  ur_device_handle_t sub = NULL;
  uint32_t count = 0;
  /* The header's null checks, on every device. */
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urDevicePartition(NULL, &props, 1, &sub, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urDevicePartition(env.device, NULL, 1, &sub, NULL));
  ur_device_partition_properties_t no_list = properties_of(NULL, 0);
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urDevicePartition(env.device, &no_list, 1, &sub, NULL));

  if (kinds == 0) {
    URT_CHECK(max_subs == 0 && domains == 0, "no partitions, yet %u sub-devices and domains %#x", max_subs, domains);
    URT_RESULT(UR_RESULT_ERROR_DEVICE_PARTITION_FAILED, urDevicePartition(env.device, &props, 0, NULL, &count));
    ur_device_partition_property_t next = {UR_DEVICE_PARTITION_BY_AFFINITY_DOMAIN,
                                           {.affinity_domain = UR_DEVICE_AFFINITY_DOMAIN_FLAG_NEXT_PARTITIONABLE}};
    ur_device_partition_properties_t next_props = properties_of(&next, 1);
    URT_RESULT(UR_RESULT_ERROR_DEVICE_PARTITION_FAILED, urDevicePartition(env.device, &next_props, 0, NULL, &count));
    urt_fini(&env);
    return urt_done("partition");
  }
  URT_CHECK(max_subs >= 1, "partitions with at most %u sub-devices", max_subs);
  if (equally) {
    one.value.equally = units > 1 ? units / 2 : 1;
    partition_with(&env, &one, 1, units, roots);
    ur_device_partition_property_t zero = {UR_DEVICE_PARTITION_EQUALLY, {.equally = 0}};
    ur_device_partition_properties_t zero_props = properties_of(&zero, 1);
    URT_RESULT(UR_RESULT_ERROR_INVALID_VALUE, urDevicePartition(env.device, &zero_props, 0, NULL, &count));
  }
  if (counts) {
    ur_device_partition_property_t list[2] = {{UR_DEVICE_PARTITION_BY_COUNTS, {.count = 1}},
                                              {UR_DEVICE_PARTITION_BY_COUNTS, {.count = units - 1}}};
    partition_with(&env, list, units >= 2 && max_subs >= 2 ? 2 : 1, units, roots);
    list[1].value.count = units; /* one unit more than the device has */
    ur_device_partition_properties_t too_many = properties_of(list, 2);
    URT_RESULT(UR_RESULT_ERROR_INVALID_DEVICE_PARTITION_COUNT, urDevicePartition(env.device, &too_many, 0, NULL, &count));
    list[1].value.count = 0;
    URT_RESULT(UR_RESULT_ERROR_INVALID_DEVICE_PARTITION_COUNT, urDevicePartition(env.device, &too_many, 0, NULL, &count));
  }
  if (affinity) {
    for (ur_device_affinity_domain_flags_t d = 1; d <= UR_DEVICE_AFFINITY_DOMAIN_FLAG_NEXT_PARTITIONABLE; d <<= 1) {
      ur_device_partition_property_t by = {UR_DEVICE_PARTITION_BY_AFFINITY_DOMAIN, {.affinity_domain = d}};
      if (domains & d) {
        partition_with(&env, &by, 1, units, roots);
      } else {
        ur_device_partition_properties_t p = properties_of(&by, 1);
        URT_RESULT(UR_RESULT_ERROR_DEVICE_PARTITION_FAILED, urDevicePartition(env.device, &p, 0, NULL, &count));
      }
    }
  }
  URT_CHECK(root_devices(&env) == roots, "urDeviceGet lists %u devices after partitioning, %u before",
            root_devices(&env), roots);
  urt_fini(&env);
  return urt_done("partition");
}
