/* Host tasks (urEnqueueHostTaskExp) and what waits for them: urQueueFinish
 * on an out-of-order queue returns only once every host task it was given
 * has run; host tasks of one queue never run at the same time (UR's
 * multithreaded conformance case counts with a plain int from them); event
 * waits, urQueueFlush and urQueueRelease with host tasks pending; a host
 * task releasing its own queue's last reference; an event callback
 * releasing its own event's last reference; many threads enqueueing host
 * tasks on one queue. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "urt.h"

static void nap(long microseconds) {
  struct timespec t = {0, microseconds * 1000};
  nanosleep(&t, NULL);
}

/* A slow increment of a plain int: two tasks of one queue at the same time
 * would lose counts. */
static void slow_increment(void *data) {
  int *counter = data;
  int seen = *counter;
  nap(200);
  *counter = seen + 1;
}

static ur_queue_handle_t out_of_order(urt_env *env) {
  ur_queue_properties_t props = {UR_STRUCTURE_TYPE_QUEUE_PROPERTIES, NULL, UR_QUEUE_FLAG_OUT_OF_ORDER_EXEC_MODE_ENABLE};
  ur_queue_handle_t q = NULL;
  URT_REQUIRE(urQueueCreate(env->context, env->device, &props, &q));
  return q;
}

static void finish_waits(urt_env *env, bool ooo) {
  ur_queue_handle_t q = NULL;
  if (ooo) {
    q = out_of_order(env);
  } else {
    URT_REQUIRE(urQueueCreate(env->context, env->device, NULL, &q));
  }
  enum { TASKS = 20 };
  int counter = 0;
  for (int i = 0; i < TASKS; i++) URT_OK(urEnqueueHostTaskExp(q, slow_increment, &counter, NULL, 0, NULL, NULL));
  URT_OK(urQueueFinish(q));
  URT_CHECK(counter == TASKS, "%s queue: %d of %d host tasks done at urQueueFinish", ooo ? "out-of-order" : "in-order",
            counter, TASKS);
  URT_OK(urQueueRelease(q));
}

static void event_wait_and_flush(urt_env *env) {
  ur_queue_handle_t q = out_of_order(env);
  int counter = 0;
  ur_event_handle_t last = NULL;
  for (int i = 0; i < 5; i++) {
    ur_event_handle_t event = NULL;
    URT_OK(urEnqueueHostTaskExp(q, slow_increment, &counter, NULL, last ? 1 : 0, last ? &last : NULL, &event));
    if (last) URT_OK(urEventRelease(last));
    last = event;
  }
  URT_OK(urQueueFlush(q));
  URT_OK(urEventWait(1, &last));
  URT_CHECK(counter == 5, "a chain of 5 host tasks: %d done when the last one's event completed", counter);
  ur_event_status_t status = UR_EVENT_STATUS_QUEUED;
  URT_OK(urEventGetInfo(last, UR_EVENT_INFO_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
  URT_CHECK(status == UR_EVENT_STATUS_COMPLETE, "the waited host task's status is %d", status);
  URT_OK(urEventRelease(last));
  URT_OK(urQueueRelease(q));
}

static void release_pending(urt_env *env) {
  ur_queue_handle_t q = out_of_order(env);
  int counter = 0;
  ur_event_handle_t event = NULL;
  for (int i = 0; i < 10; i++) URT_OK(urEnqueueHostTaskExp(q, slow_increment, &counter, NULL, 0, NULL, NULL));
  URT_OK(urEnqueueHostTaskExp(q, slow_increment, &counter, NULL, 0, NULL, &event));
  /* The tasks run however the application lets go of the queue. */
  URT_OK(urQueueRelease(q));
  URT_OK(urEventWait(1, &event));
  URT_OK(urEventRelease(event));
  URT_CHECK(counter == 11, "%d of 11 host tasks ran after the queue's release", counter);
}

/* A host task whose function releases its queue's last reference. */
typedef struct {
  ur_queue_handle_t queue;
  ur_result_t released;
  volatile int done;
} releasing_t;

static void release_own_queue(void *data) {
  releasing_t *r = data;
  r->released = urQueueRelease(r->queue);
  __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

/* The release inside the task cannot wait for the task (nor, in order, for
 * the marker after it): it returns, and the queue ends once the task has. */
static void released_by_its_task(urt_env *env, bool ooo) {
  releasing_t r = {NULL, UR_RESULT_ERROR_UNKNOWN, 0};
  if (ooo) {
    r.queue = out_of_order(env);
  } else {
    URT_REQUIRE(urQueueCreate(env->context, env->device, NULL, &r.queue));
  }
  /* No event asked for: the task's reference is the queue's last one. */
  URT_OK(urEnqueueHostTaskExp(r.queue, release_own_queue, &r, NULL, 0, NULL, NULL));
  for (int waited = 0; waited < 20000 && !__atomic_load_n(&r.done, __ATOMIC_ACQUIRE); waited++) nap(1000);
  URT_CHECK(__atomic_load_n(&r.done, __ATOMIC_ACQUIRE),
            "%s queue: urQueueRelease inside its own host task did not return in 20 s", ooo ? "out-of-order" : "in-order");
  URT_CHECK(r.released == UR_RESULT_SUCCESS, "urQueueRelease inside the queue's host task: %d", r.released);
}

/* A callback whose function releases its event's last reference. */
typedef struct {
  ur_event_handle_t event;
  ur_result_t released;
  volatile int done;
} releasing_event_t;

static void release_own_event(ur_event_handle_t event, ur_execution_info_t status, void *data) {
  (void)status;
  releasing_event_t *r = data;
  r->released = event == r->event ? urEventRelease(event) : UR_RESULT_ERROR_INVALID_EVENT;
  __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

static void nap_task(void *data) { nap((long)(intptr_t)data); }

/* The callback may run while urEventSetCallback is still on the stack: at
 * once on the calling thread when the event is complete, or on the thread
 * completing it, at about the time it is registered. */
static void event_released_by_its_callback(urt_env *env, long task_microseconds) {
  ur_queue_handle_t q = out_of_order(env);
  releasing_event_t r = {NULL, UR_RESULT_ERROR_UNKNOWN, 0};
  URT_OK(urEnqueueHostTaskExp(q, nap_task, (void *)(intptr_t)task_microseconds, NULL, 0, NULL, &r.event));
  if (task_microseconds == 0) URT_OK(urEventWait(1, &r.event));
  URT_OK(urEventSetCallback(r.event, UR_EXECUTION_INFO_COMPLETE, release_own_event, &r));
  for (int waited = 0; waited < 20000 && !__atomic_load_n(&r.done, __ATOMIC_ACQUIRE); waited++) nap(1000);
  URT_CHECK(__atomic_load_n(&r.done, __ATOMIC_ACQUIRE), "the callback of a host task of %ld µs did not run in 20 s",
            task_microseconds);
  URT_CHECK(r.released == UR_RESULT_SUCCESS, "urEventRelease inside the event's callback: %d", r.released);
  URT_OK(urQueueRelease(q));
}

/* UR's urEnqueueHostTaskTest.Multithreaded, and the same on one shared queue. */
typedef struct {
  urt_env *env;
  ur_queue_handle_t shared;
  int *shared_counter;
  int own_counter;
} worker_t;

static void *worker(void *arg) {
  worker_t *w = arg;
  ur_queue_handle_t own = out_of_order(w->env);
  for (int outer = 0; outer < 10; outer++) {
    for (int inner = 0; inner < 10; inner++) {
      ur_event_handle_t event = NULL;
      URT_OK(urEnqueueHostTaskExp(own, slow_increment, &w->own_counter, NULL, 0, NULL, &event));
      URT_OK(urEventRelease(event));
      URT_OK(urEnqueueHostTaskExp(w->shared, slow_increment, w->shared_counter, NULL, 0, NULL, NULL));
    }
    URT_OK(urQueueFinish(own));
  }
  URT_OK(urQueueRelease(own));
  return NULL;
}

static void many_threads(urt_env *env) {
  enum { THREADS = 8 };
  ur_queue_handle_t shared = out_of_order(env);
  int shared_counter = 0;
  worker_t workers[THREADS];
  pthread_t threads[THREADS];
  for (int i = 0; i < THREADS; i++) {
    workers[i] = (worker_t){env, shared, &shared_counter, 0};
    URT_CHECK(pthread_create(&threads[i], NULL, worker, &workers[i]) == 0, "thread %d starts", i);
  }
  int total = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(threads[i], NULL);
    total += workers[i].own_counter;
  }
  URT_CHECK(total == THREADS * 100, "%d of %d host tasks counted on the threads' own queues", total, THREADS * 100);
  URT_OK(urQueueFinish(shared));
  URT_CHECK(shared_counter == THREADS * 100, "%d of %d host tasks counted on the shared queue", shared_counter,
            THREADS * 100);
  URT_OK(urQueueRelease(shared));
}

int main(void) {
  urt_env env;
  urt_init(&env);
  URT_CHECK(urt_device_bool(&env, UR_DEVICE_INFO_ENQUEUE_HOST_TASK_SUPPORT_EXP), "host tasks are offered");
  finish_waits(&env, true);
  finish_waits(&env, false);
  event_wait_and_flush(&env);
  release_pending(&env);
  released_by_its_task(&env, false);
  released_by_its_task(&env, true);
  event_released_by_its_callback(&env, 0);
  for (long microseconds = 1; microseconds <= 1000; microseconds *= 10) event_released_by_its_callback(&env, microseconds);
  many_threads(&env);
  urt_fini(&env);
  return urt_done("host_tasks");
}
