/* Prints how many devices the forced adapter library offers (0 when its
 * driver is absent), so that the harness can skip a library with none, then
 * "spirv 1" when the first device lists an IL version (as urt.h's
 * urt_builds_spirv asks), so that it can list the programs that need SPIR-V
 * as ignored up front (`urt: needs` lines), then one line per device,
 * "device <index> spirv <0|1> <platform name>", in the order the library's
 * UR_DEVICE_SELECTOR indices count them, so that the harness can run the
 * programs on each (UR_DEVICE_SELECTOR=<backend>:<index> makes that device
 * the first). */
#include <stdbool.h>
#include <stdio.h>
#include <unified-runtime/ur_api.h>

int main(void) {
  if (urLoaderInit(0, NULL) != UR_RESULT_SUCCESS) return 1;
  uint32_t devices = 0, adapters = 0;
  bool spirv = false;
  char lines[16][320];
  uint32_t listed = 0;
  ur_adapter_handle_t adapter = NULL;
  if (urAdapterGet(1, &adapter, &adapters) == UR_RESULT_SUCCESS && adapters > 0) {
    uint32_t n = 0;
    ur_platform_handle_t platforms[16];
    urPlatformGet(adapter, 16, platforms, &n);
    for (uint32_t i = 0; i < n && i < 16; i++) {
      uint32_t d = 0;
      if (urDeviceGet(platforms[i], UR_DEVICE_TYPE_ALL, 0, NULL, &d) != UR_RESULT_SUCCESS || d == 0) continue;
      char name[256] = "";
      urPlatformGetInfo(platforms[i], UR_PLATFORM_INFO_NAME, sizeof name, name, NULL);
      ur_device_handle_t handles[16];
      uint32_t got = d < 16 ? d : 16;
      if (urDeviceGet(platforms[i], UR_DEVICE_TYPE_ALL, got, handles, NULL) != UR_RESULT_SUCCESS) got = 0;
      for (uint32_t j = 0; j < got; j++) {
        size_t size = 0;
        bool il = urDeviceGetInfo(handles[j], UR_DEVICE_INFO_IL_VERSION, 0, NULL, &size) == UR_RESULT_SUCCESS && size > 1;
        if (devices + j == 0) spirv = il;
        if (listed < 16) snprintf(lines[listed++], sizeof lines[0], "device %u spirv %d %s", devices + j, il ? 1 : 0, name);
      }
      devices += d;
    }
    urAdapterRelease(adapter);
  }
  printf("%u\nspirv %d\n", devices, spirv ? 1 : 0);
  for (uint32_t i = 0; i < listed; i++) printf("%s\n", lines[i]);
  urLoaderTearDown();
  return 0;
}
