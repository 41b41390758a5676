/* Prints how many devices the forced adapter library offers (0 when its
 * driver is absent), so that the harness can skip a library with none. */
#include <stdbool.h>
#include <stdio.h>
#include <unified-runtime/ur_api.h>

int main(void) {
  if (urLoaderInit(0, NULL) != UR_RESULT_SUCCESS) return 1;
  uint32_t devices = 0, adapters = 0;
  ur_adapter_handle_t adapter = NULL;
  if (urAdapterGet(1, &adapter, &adapters) == UR_RESULT_SUCCESS && adapters > 0) {
    uint32_t n = 0;
    ur_platform_handle_t platforms[16];
    urPlatformGet(adapter, 16, platforms, &n);
    for (uint32_t i = 0; i < n && i < 16; i++) {
      uint32_t d = 0;
      if (urDeviceGet(platforms[i], UR_DEVICE_TYPE_ALL, 0, NULL, &d) == UR_RESULT_SUCCESS) devices += d;
    }
    urAdapterRelease(adapter);
  }
  printf("%u\n", devices);
  urLoaderTearDown();
  return 0;
}
