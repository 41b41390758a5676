/* Calls from a destructor at process exit, after the main thread's
 * thread-local storage is gone: libsycl releases its queues from C++ static
 * destructors, and dpnp's test_random.py aborted there on Intel's runtime
 * ("cannot access a Thread Local Storage value during or after
 * destruction", then a panic the entry point could not return). Main uses
 * the queue and fails a call, so that the library's thread-locals exist and
 * are destroyed before the destructor runs; the destructor finishes the
 * queue, fails a call again and releases everything. Any crash there exits
 * the process non-zero after main's "ok".
 *
 * urt: also without layers */
#include <unistd.h>
#include "urt.h"

static urt_env env;

static void release_at_exit(void) __attribute__((destructor));

static void release_at_exit(void) {
  if (!env.queue) return;
  ur_result_t finished = urQueueFinish(env.queue);
  ur_result_t refused = urQueueFinish(NULL);
  ur_result_t released = urQueueRelease(env.queue);
  env.queue = NULL;
  if (finished != UR_RESULT_SUCCESS || refused != UR_RESULT_ERROR_INVALID_NULL_HANDLE ||
      released != UR_RESULT_SUCCESS) {
    printf("not ok exit_release: at exit finish %d, finish(NULL) %d, release %d\n", finished, refused, released);
    fflush(stdout);
    _exit(3);
  }
  urt_fini(&env);
}

int main(void) {
#ifdef EXIT_RELEASE_LOG
  setenv("UR_LOG", EXIT_RELEASE_LOG, 1);
#endif
  urt_init(&env);
  ur_event_handle_t marker = NULL;
  URT_OK(urEnqueueEventsWait(env.queue, 0, NULL, &marker));
  if (marker) URT_OK(urEventRelease(marker));
  URT_OK(urQueueFinish(env.queue));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urQueueFinish(NULL));
  return urt_done("exit_release");
}
