/* Prints how many devices the forced adapter library offers (0 when its
 * driver is absent), so that the harness can skip a library with none, then
 * "spirv 1" when the first device lists an IL version (as urt.h's
 * urt_builds_spirv asks), so that it can list the programs that need SPIR-V
 * as ignored up front (`urt: needs` lines). */
#include <stdbool.h>
#include <stdio.h>
#include <unified-runtime/ur_api.h>

int main(void) {
  if (urLoaderInit(0, NULL) != UR_RESULT_SUCCESS) return 1;
  uint32_t devices = 0, adapters = 0;
  bool spirv = false;
  ur_adapter_handle_t adapter = NULL;
  if (urAdapterGet(1, &adapter, &adapters) == UR_RESULT_SUCCESS && adapters > 0) {
    uint32_t n = 0;
    ur_platform_handle_t platforms[16];
    urPlatformGet(adapter, 16, platforms, &n);
    for (uint32_t i = 0; i < n && i < 16; i++) {
      uint32_t d = 0;
      if (urDeviceGet(platforms[i], UR_DEVICE_TYPE_ALL, 0, NULL, &d) != UR_RESULT_SUCCESS || d == 0) continue;
      if (devices == 0) {
        ur_device_handle_t first = NULL;
        size_t size = 0;
        if (urDeviceGet(platforms[i], UR_DEVICE_TYPE_ALL, 1, &first, NULL) == UR_RESULT_SUCCESS)
          spirv = urDeviceGetInfo(first, UR_DEVICE_INFO_IL_VERSION, 0, NULL, &size) == UR_RESULT_SUCCESS && size > 1;
      }
      devices += d;
    }
    urAdapterRelease(adapter);
  }
  printf("%u\nspirv %d\n", devices, spirv ? 1 : 0);
  urLoaderTearDown();
  return 0;
}
