/* USM P2P (urUsmP2P*Exp): the peer answers for every ordered pair of the
 * platform's devices, and enabling and disabling as they allow: a device is
 * its own peer on the CPU, CUDA and Vulkan adapters, OpenCL has no peer path,
 * two Vulkan devices are no peers, and two CUDA devices are where
 * cuDeviceCanAccessPeer says so. */
#include "urt.h"

static int peer_info(ur_device_handle_t a, ur_device_handle_t b, ur_exp_peer_info_t what) {
  int value = -1;
  size_t size = 0;
  URT_OK(urUsmP2PPeerAccessGetInfoExp(a, b, what, 0, NULL, &size));
  URT_CHECK(size == sizeof(int), "peer info %d takes %zu bytes", what, size);
  URT_OK(urUsmP2PPeerAccessGetInfoExp(a, b, what, sizeof value, &value, NULL));
  URT_CHECK(value == 0 || value == 1, "peer info %d is %d", what, value);
  return value;
}

int main(void) {
  urt_env env;
  urt_init(&env);
  ur_bool_t p2p = 0;
  URT_OK(urDeviceGetInfo(env.device, UR_DEVICE_INFO_USM_P2P_SUPPORT_EXP, sizeof p2p, &p2p, NULL));
  URT_CHECK(p2p, "the device reports the USM P2P extension");

  uint32_t count = 0;
  URT_OK(urDeviceGet(env.platform, UR_DEVICE_TYPE_ALL, 0, NULL, &count));
  ur_device_handle_t *devices = calloc(count, sizeof *devices);
  URT_OK(urDeviceGet(env.platform, UR_DEVICE_TYPE_ALL, count, devices, NULL));
  bool self_peer = env.backend != UR_BACKEND_OPENCL;
  for (uint32_t i = 0; i < count; i++) {
    for (uint32_t j = 0; j < count; j++) {
      ur_device_handle_t a = devices[i], b = devices[j];
      int access = peer_info(a, b, UR_EXP_PEER_INFO_UR_PEER_ACCESS_SUPPORT);
      int atomics = peer_info(a, b, UR_EXP_PEER_INFO_UR_PEER_ATOMICS_SUPPORT);
      URT_CHECK(!atomics || access, "atomics without access from %u to %u", i, j);
      if (i == j) URT_CHECK(access == (int)self_peer, "device %u as its own peer: %d", i, access);
      if (env.backend == UR_BACKEND_OPENCL || (env.backend == UR_BACKEND_OFFLOAD && i != j))
        URT_CHECK(access == 0, "peer access from %u to %u on a backend without a peer path", i, j);
      printf("# peer %u -> %u: access %d atomics %d\n", i, j, access, atomics);
      if (!access) {
        URT_RESULT(UR_RESULT_ERROR_UNSUPPORTED_FEATURE, urUsmP2PEnablePeerAccessExp(a, b));
        URT_RESULT(UR_RESULT_ERROR_UNSUPPORTED_FEATURE, urUsmP2PDisablePeerAccessExp(a, b));
        continue;
      }
      /* Enabling twice is fine; disabling what is not enabled is not (the
       * same device is always enabled). */
      URT_OK(urUsmP2PEnablePeerAccessExp(a, b));
      URT_OK(urUsmP2PEnablePeerAccessExp(a, b));
      URT_OK(urUsmP2PDisablePeerAccessExp(a, b));
      if (i != j) URT_RESULT(UR_RESULT_ERROR_INVALID_OPERATION, urUsmP2PDisablePeerAccessExp(a, b));
    }
  }
  int value = 0;
  URT_RESULT(UR_RESULT_ERROR_INVALID_ENUMERATION,
             urUsmP2PPeerAccessGetInfoExp(env.device, env.device, (ur_exp_peer_info_t)7, sizeof value, &value, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urUsmP2PEnablePeerAccessExp(NULL, env.device));
  for (uint32_t i = 0; i < count; i++) URT_OK(urDeviceRelease(devices[i]));
  free(devices);
  urt_fini(&env);
  return urt_done("usm_p2p");
}
