/* Programs compiled apart and linked (urProgramCompileExp, urProgramLinkExp),
 * as libsycl adds its device libraries to a program (dpnp's modf of half
 * floats on Intel's OpenCL runtime): a SPIR-V kernel calling a function that
 * only a SPIR-V library of no kernel defines
 * (conformance/src/kernels/programs/link_*.cl). Where the device reports a
 * linker (UR_DEVICE_INFO_LINKER_AVAILABLE: OpenCL devices that take SPIR-V
 * themselves) the linked kernel runs and has the kernel module's kernels;
 * elsewhere the link answers UNSUPPORTED_FEATURE (a backend that builds
 * whole programs) or INVALID_BINARY (a device that builds no SPIR-V of
 * OpenCL kernels) and gives no program. Either way a linked program cannot
 * be compiled or linked again (it has no code of its own). */
#include "urt.h"

static ur_program_handle_t module_of(urt_env *env, const char *path) {
  size_t size = 0;
  uint8_t *il = urt_read_file(path, &size);
  URT_CHECK(il != NULL, "%s is readable", path);
  if (!il) return NULL;
  ur_program_handle_t program = NULL;
  URT_REQUIRE(urProgramCreateWithIL(env->context, il, size, NULL, &program));
  free(il);
  URT_OK(urProgramCompileExp(program, 1, &env->device, 0, ""));
  return program;
}

static void run_linked(urt_env *env, ur_program_handle_t linked) {
  size_t kernels = 0;
  URT_OK(urProgramGetInfo(linked, UR_PROGRAM_INFO_NUM_KERNELS, sizeof kernels, &kernels, NULL));
  URT_CHECK(kernels == 1, "the linked program has %zu kernels, not 1", kernels);
  ur_kernel_handle_t kernel = NULL;
  URT_REQUIRE(urKernelCreate(linked, "link_scale", &kernel));
  enum { N = 64 };
  int32_t host[N];
  for (int i = 0; i < N; i++) host[i] = i;
  int32_t *data = urt_device_alloc(env, sizeof host);
  URT_OK(urEnqueueUSMMemcpy(env->queue, true, data, host, sizeof host, 0, NULL, NULL));
  uint32_t scale = 3;
  ur_exp_kernel_arg_properties_t args[] = {urt_pointer_arg(0, data), urt_value_arg(1, &scale)};
  size_t global = N;
  URT_OK(urEnqueueKernelLaunchWithArgsExp(env->queue, kernel, 1, NULL, &global, NULL, 2, args, NULL, 0, NULL, NULL));
  URT_OK(urEnqueueUSMMemcpy(env->queue, true, host, data, sizeof host, 0, NULL, NULL));
  int wrong = 0;
  for (int i = 0; i < N; i++) wrong += host[i] != i * 3 + 1;
  URT_CHECK(wrong == 0, "%d of %d words are not x * 3 + 1", wrong, N);
  URT_OK(urUSMFree(env->context, data));
  URT_OK(urKernelRelease(kernel));
}

int main(void) {
  urt_env env;
  urt_init(&env);
  ur_program_handle_t modules[2] = {
      module_of(&env, "conformance/src/kernels/programs/link_kernel.spv"),
      module_of(&env, "conformance/src/kernels/programs/link_library.spv"),
  };
  ur_bool_t linker = 0;
  URT_OK(urDeviceGetInfo(env.device, UR_DEVICE_INFO_LINKER_AVAILABLE, sizeof linker, &linker, NULL));
  printf("# linker available: %d\n", linker);
  if (modules[0] && modules[1]) {
    ur_program_handle_t linked = NULL;
    ur_result_t result = urProgramLinkExp(env.context, 1, &env.device, 0, 2, modules, "", &linked);
    urt_untracked(linked);
    if (linker) {
      URT_CHECK(result == UR_RESULT_SUCCESS && linked != NULL, "urProgramLinkExp returned %d", result);
      if (linked) {
        run_linked(&env, linked);
        URT_RESULT(UR_RESULT_ERROR_INVALID_OPERATION, urProgramCompileExp(linked, 1, &env.device, 0, ""));
        ur_program_handle_t again = NULL;
        URT_RESULT(UR_RESULT_ERROR_INVALID_OPERATION, urProgramLinkExp(env.context, 1, &env.device, 0, 1, &linked, "", &again));
        URT_CHECK(again == NULL, "a refused link gives no program");
      }
    } else {
      URT_CHECK(result == UR_RESULT_ERROR_UNSUPPORTED_FEATURE || result == UR_RESULT_ERROR_INVALID_BINARY,
                "urProgramLinkExp without a linker returned %d", result);
      URT_CHECK(linked == NULL, "a refused link gives no program");
    }
    if (linked) URT_OK(urProgramRelease(linked));
  }
  for (int i = 0; i < 2; i++)
    if (modules[i]) URT_OK(urProgramRelease(modules[i]));
  urt_fini(&env);
  return urt_done("link");
}
