/* Host time of calls that are mostly handle resolution, for comparing two
 * builds of a library (docs/abi.md, "Released handles"):
 *
 *   cc -O2 -I.oneapi/include abi/harness/bench/resolve.c -o /tmp/resolve \
 *      -L.oneapi/lib -lur_loader -lpthread -Wl,-rpath,$PWD/.oneapi/lib
 *   UR_ADAPTERS_FORCE_LOAD=$PWD/target/release/libur_adapter_rs_cpu.so /tmp/resolve
 *
 * Prints, three times: urEventGetInfo on one thread and on two threads at
 * once on the same event (the calls only read the handle's slot), and
 * urEnqueueEventsWait with 8 events, whose returned event is made and
 * released each time (a slot taken and given back). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unified-runtime/ur_api.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static ur_event_handle_t ev[8];
static ur_queue_handle_t queue;
enum { CALLS = 2000000 };

static void *info_loop(void *arg) {
  (void)arg;
  uint32_t count = 0;
  for (int i = 0; i < CALLS; i++) urEventGetInfo(ev[0], UR_EVENT_INFO_REFERENCE_COUNT, sizeof count, &count, NULL);
  return NULL;
}

int main(void) {
  ur_adapter_handle_t adapter; ur_platform_handle_t platform; ur_device_handle_t device; ur_context_handle_t ctx;
  urLoaderInit(0, NULL);
  urAdapterGet(1, &adapter, NULL);
  urPlatformGet(adapter, 1, &platform, NULL);
  urDeviceGet(platform, UR_DEVICE_TYPE_ALL, 1, &device, NULL);
  urContextCreate(1, &device, NULL, &ctx);
  urQueueCreate(ctx, device, NULL, &queue);
  for (int i = 0; i < 8; i++) urEnqueueEventsWait(queue, 0, NULL, &ev[i]);
  urQueueFinish(queue);
  for (int rep = 0; rep < 3; rep++) {
    double t = now();
    info_loop(NULL);
    double one = (now() - t) / CALLS * 1e9;
    t = now();
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, info_loop, NULL);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    double two = (now() - t) / CALLS * 1e9;
    t = now();
    enum { WAITS = 50000 };
    for (int i = 0; i < WAITS; i++) {
      ur_event_handle_t e;
      urEnqueueEventsWait(queue, 8, ev, &e);
      urEventRelease(e);
    }
    urQueueFinish(queue);
    double wait = (now() - t) / WAITS * 1e9;
    printf("urEventGetInfo %.1f ns/call (1 thread), %.1f ns/call-pair (2 threads on one event); urEnqueueEventsWait(8 events)+release %.0f ns\n", one, two, wait);
  }
  return 0;
}
