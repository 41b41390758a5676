/* Graph capture: urQueueBeginGraphCaptureExp and its family. Commands
 * enqueued on a capturing queue are recorded, not run; the recorded graph is
 * instantiated once and enqueued many times with results checked; capture
 * into an existing graph, a fork onto a second queue joined back, and the
 * result codes of misuse (end without begin, begin twice, a host wait or a
 * blocking copy during capture and the invalidated capture after it,
 * unjoined forks, merging two captures, null handles and pointers), and
 * kernel launches captured and replayed.
 * urt: also without layers (the adapter answers every misuse itself) */
#define _POSIX_C_SOURCE 200809L /* getpid */
#include "urt.h"

#include <unistd.h>

static void count_destruction(void *data) { __atomic_add_fetch((int *)data, 1, __ATOMIC_SEQ_CST); }

static bool capturing(ur_queue_handle_t q) {
  bool on = true;
  URT_OK(urQueueIsGraphCaptureEnabledExp(q, &on));
  return on;
}

/* Whether `size` bytes of device memory at `p` all hold `byte`. */
static bool holds(urt_env *env, const void *p, size_t size, uint8_t byte) {
  uint8_t *host = urt_read(env, p, size);
  bool same = urt_repeats(host, size, &byte, 1);
  free(host);
  return same;
}

static void zero(urt_env *env, void *p, size_t size) {
  uint8_t z = 0;
  URT_OK(urEnqueueUSMFill(env->queue, p, 1, &z, size, 0, NULL, NULL));
  URT_OK(urQueueFinish(env->queue));
}

/* Kernel launches captured on an in-order queue and replayed:
 * p -> (2p + 1) * 3 per run. */
static void captured_kernels(urt_env *env) {
  ur_program_handle_t program = urt_axpb_program(env);
  if (!program) return;
  URT_REQUIRE(urProgramBuild(env->context, program, NULL));
  ur_kernel_handle_t kernel = NULL;
  URT_REQUIRE(urKernelCreate(program, "axpb", &kernel));
  ur_queue_handle_t q = NULL;
  URT_REQUIRE(urQueueCreate(env->context, env->device, NULL, &q));
  enum { N = 1024 };
  uint32_t *p = urt_device_alloc(env, N * sizeof(uint32_t));
  uint32_t one = 1, two = 2, three = 3, zero_value = 0;
  URT_OK(urEnqueueUSMFill(q, p, sizeof one, &one, N * sizeof one, 0, NULL, NULL));
  URT_OK(urQueueFinish(q));
  ur_exp_kernel_arg_properties_t first[3] = {urt_pointer_arg(0, p), urt_value_arg(1, &two), urt_value_arg(2, &one)};
  ur_exp_kernel_arg_properties_t second[3] = {urt_pointer_arg(0, p), urt_value_arg(1, &three),
                                              urt_value_arg(2, &zero_value)};
  size_t global = N;
  URT_OK(urQueueBeginGraphCaptureExp(q));
  URT_OK(urEnqueueKernelLaunchWithArgsExp(q, kernel, 1, NULL, &global, NULL, 3, first, NULL, 0, NULL, NULL));
  URT_OK(urEnqueueKernelLaunchWithArgsExp(q, kernel, 1, NULL, &global, NULL, 3, second, NULL, 0, NULL, NULL));
  ur_exp_graph_handle_t graph = NULL;
  URT_OK(urQueueEndGraphCaptureExp(q, &graph));
  uint32_t *host = (uint32_t *)urt_read(env, p, sizeof(uint32_t));
  URT_CHECK(host[0] == 1, "captured kernels did not run at capture (%u)", host[0]);
  free(host);
  ur_exp_executable_graph_handle_t exec = NULL;
  URT_OK(urGraphInstantiateGraphExp(graph, &exec));
  for (int run = 0; run < 2; run++) URT_OK(urEnqueueGraphExp(q, exec, 0, NULL, NULL));
  URT_OK(urQueueFinish(q));
  host = (uint32_t *)urt_read(env, p, N * sizeof(uint32_t));
  bool ok = true;
  for (int i = 0; i < N; i++) ok &= host[i] == 57;
  URT_CHECK(ok, "two replays: 1 -> 9 -> 57 (got %u)", host[0]);
  free(host);
  URT_OK(urGraphExecutableGraphDestroyExp(exec));
  URT_OK(urGraphDestroyExp(graph));
  URT_OK(urUSMFree(env->context, p));
  URT_OK(urQueueRelease(q));
  URT_OK(urKernelRelease(kernel));
  URT_OK(urProgramRelease(program));
}

int main(void) {
  urt_env env;
  urt_init(&env);
  URT_CHECK(urt_device_bool(&env, UR_DEVICE_INFO_GRAPH_RECORD_AND_REPLAY_SUPPORT_EXP), "capture is offered");
  const size_t n = 4096;
  uint8_t *a = urt_device_alloc(&env, n), *b = urt_device_alloc(&env, n);
  zero(&env, a, n);
  zero(&env, b, n);
  uint8_t five = 5, seven = 7;
  ur_queue_handle_t q = env.queue;

  /* Nothing captures yet. */
  ur_exp_graph_handle_t none = NULL;
  URT_CHECK(!capturing(q), "a new queue does not capture");
  URT_RESULT(UR_RESULT_ERROR_COMMAND_LIST_NOT_CAPTURING, urQueueEndGraphCaptureExp(q, &none));
  URT_RESULT(UR_RESULT_ERROR_INVALID_OPERATION, urQueueGetGraphExp(q, &none));
  URT_CHECK(none == NULL, "no graph handed out");

  /* A capture begun by the queue: a fill, then a copy waiting on its event. */
  URT_OK(urQueueBeginGraphCaptureExp(q));
  URT_CHECK(capturing(q), "the queue captures");
  URT_RESULT(UR_RESULT_ERROR_INVALID_OPERATION, urQueueBeginGraphCaptureExp(q));
  ur_event_handle_t fill = NULL, copy = NULL;
  URT_OK(urEnqueueUSMFill(q, a, 1, &five, n, 0, NULL, &fill));
  URT_OK(urEnqueueUSMMemcpy(q, false, b, a, n, 1, &fill, &copy));
  ur_event_status_t status = UR_EVENT_STATUS_COMPLETE;
  URT_OK(urEventGetInfo(copy, UR_EVENT_INFO_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
  URT_CHECK(status == UR_EVENT_STATUS_QUEUED, "a captured command stays queued: status %d", status);
  ur_exp_graph_handle_t got1 = NULL, got2 = NULL, graph = NULL;
  URT_OK(urQueueGetGraphExp(q, &got1));
  URT_OK(urQueueGetGraphExp(q, &got2));
  URT_OK(urQueueEndGraphCaptureExp(q, &graph));
  URT_CHECK(graph != NULL && graph == got1 && graph == got2, "one handle for the captured graph");
  URT_CHECK(!capturing(q), "the capture ended");
  URT_OK(urEventRelease(fill));
  URT_OK(urEventRelease(copy));
  bool empty = true;
  URT_OK(urGraphIsEmptyExp(graph, &empty));
  URT_CHECK(!empty, "two commands were captured");
  URT_CHECK(holds(&env, b, n, 0), "captured commands did not run");

  /* Instantiated once, enqueued three times, each time after a reset. */
  ur_exp_executable_graph_handle_t exec = NULL;
  URT_REQUIRE(urGraphInstantiateGraphExp(graph, &exec));
  for (int run = 0; run < 3; run++) {
    zero(&env, a, n);
    zero(&env, b, n);
    ur_event_handle_t done = NULL;
    URT_OK(urEnqueueGraphExp(q, exec, 0, NULL, &done));
    URT_OK(urEventWait(1, &done));
    ur_command_t type = UR_COMMAND_FORCE_UINT32;
    URT_OK(urEventGetInfo(done, UR_EVENT_INFO_COMMAND_TYPE, sizeof type, &type, NULL));
    URT_CHECK(type == UR_COMMAND_ENQUEUE_GRAPH_EXP, "command type %d", type);
    URT_OK(urEventRelease(done));
    URT_CHECK(holds(&env, b, n, 5), "run %d: the copy after the fill", run);
  }
  /* After eager work and before it (UR's SuccessEventOrdering). */
  ur_event_handle_t clear = NULL, ran = NULL, after = NULL;
  URT_OK(urEnqueueUSMFill(q, b, 1, &seven, n, 0, NULL, &clear));
  URT_OK(urEnqueueGraphExp(q, exec, 1, &clear, &ran));
  URT_OK(urEnqueueUSMFill(q, a, 1, &seven, n, 1, &ran, &after));
  URT_OK(urEventWait(1, &after));
  URT_CHECK(holds(&env, b, n, 5) && holds(&env, a, n, 7), "the graph between the two fills");
  URT_OK(urEventRelease(clear));
  URT_OK(urEventRelease(ran));
  URT_OK(urEventRelease(after));
  URT_RESULT(UR_RESULT_ERROR_INVALID_EVENT_WAIT_LIST, urEnqueueGraphExp(q, exec, 1, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urEnqueueGraphExp(q, NULL, 0, NULL, NULL));

  /* Capture into a graph made first; the same handle comes back; a graph
   * that holds commands cannot be captured into. */
  ur_exp_graph_handle_t made = NULL, ended = NULL;
  URT_REQUIRE(urGraphCreateExp(env.context, &made));
  uint64_t id1 = 0, id2 = 0;
  URT_OK(urGraphGetIdExp(graph, &id1));
  URT_OK(urGraphGetIdExp(made, &id2));
  URT_CHECK(id2 > id1, "graph ids increase: %llu then %llu", (unsigned long long)id1, (unsigned long long)id2);
  URT_OK(urGraphIsEmptyExp(made, &empty));
  URT_CHECK(empty, "a new graph is empty");
  /* Nothing to instantiate (UR's CTS, urGraphInstantiateGraphExpTest.InvalidEmptyGraph). */
  URT_RESULT(UR_RESULT_ERROR_INVALID_ARGUMENT, urGraphInstantiateGraphExp(made, &exec));
  int destroyed = 0;
  URT_OK(urGraphSetDestructionCallbackExp(made, count_destruction, &destroyed));
  URT_OK(urQueueBeginCaptureIntoGraphExp(q, made));
  URT_OK(urEnqueueUSMFill(q, a, 1, &seven, n / 2, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_OPERATION, urGraphInstantiateGraphExp(made, &exec));
  URT_OK(urQueueEndGraphCaptureExp(q, &ended));
  URT_CHECK(ended == made, "the end returns the graph captured into");
  URT_RESULT(UR_RESULT_ERROR_INVALID_ARGUMENT, urQueueBeginCaptureIntoGraphExp(q, made));
  URT_CHECK(!capturing(q), "a refused begin leaves the queue executing");

  /* Dumped as DOT; an unwritable path is UR_RESULT_ERROR_UNKNOWN. */
  /* The process id keeps concurrent runs (with and without layers) apart. */
  char path[96];
  snprintf(path, sizeof path, "/tmp/urt-capture-%ld-%d.dot", (long)getpid(), (int)id2);
  URT_OK(urGraphDumpContentsExp(made, path));
  FILE *f = fopen(path, "r");
  char head[16] = {0};
  URT_CHECK(f != NULL && fread(head, 1, 7, f) == 7 && strcmp(head, "digraph") == 0, "a DOT file: %s", head);
  if (f) fclose(f);
  remove(path);
  URT_RESULT(UR_RESULT_ERROR_UNKNOWN, urGraphDumpContentsExp(made, "/no/such/dir/graph.dot"));
  URT_OK(urGraphDestroyExp(made));
  URT_CHECK(__atomic_load_n(&destroyed, __ATOMIC_SEQ_CST) == 1, "the destruction callback ran %d times", destroyed);

  /* A fork onto a second queue, joined back. */
  ur_queue_handle_t q2 = NULL;
  URT_REQUIRE(urQueueCreate(env.context, env.device, NULL, &q2));
  zero(&env, a, n);
  zero(&env, b, n);
  ur_exp_graph_handle_t forked = NULL, seen = NULL;
  ur_event_handle_t fork = NULL, branch = NULL;
  URT_OK(urQueueBeginGraphCaptureExp(q));
  URT_OK(urEnqueueUSMFill(q, a, 1, &five, n, 0, NULL, NULL));
  URT_OK(urEnqueueEventsWaitWithBarrier(q, 0, NULL, &fork));
  URT_OK(urEnqueueUSMMemcpy(q2, false, b, a, n, 1, &fork, &branch));
  URT_CHECK(capturing(q2), "waiting on a captured event joins the capture");
  URT_OK(urQueueGetGraphExp(q2, &seen));
  URT_RESULT(UR_RESULT_ERROR_INVALID_OPERATION, urQueueEndGraphCaptureExp(q2, &forked));
  URT_OK(urEnqueueUSMFill(q, a, 1, &seven, n, 1, &branch, NULL));
  URT_OK(urQueueEndGraphCaptureExp(q, &forked));
  URT_CHECK(forked == seen, "the joined queue named the same graph");
  URT_CHECK(!capturing(q2), "the end ends the capture on the joined queue");
  URT_OK(urEventRelease(fork));
  URT_OK(urEventRelease(branch));
  ur_exp_executable_graph_handle_t fork_exec = NULL;
  URT_REQUIRE(urGraphInstantiateGraphExp(forked, &fork_exec));
  URT_OK(urEnqueueGraphExp(q2, fork_exec, 0, NULL, NULL));
  URT_OK(urQueueFinish(q2));
  URT_CHECK(holds(&env, b, n, 5) && holds(&env, a, n, 7), "the copy between the two fills");

  /* An out-of-order queue: the captured events and a barrier order it. */
  ur_queue_flags_t supported = 0;
  URT_OK(urDeviceGetInfo(env.device, UR_DEVICE_INFO_QUEUE_PROPERTIES, sizeof supported, &supported, NULL));
  if (supported & UR_QUEUE_FLAG_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
    ur_queue_properties_t props = {UR_STRUCTURE_TYPE_QUEUE_PROPERTIES, NULL,
                                   UR_QUEUE_FLAG_OUT_OF_ORDER_EXEC_MODE_ENABLE};
    ur_queue_handle_t ooo = NULL;
    URT_REQUIRE(urQueueCreate(env.context, env.device, &props, &ooo));
    ur_event_handle_t first = NULL, moved = NULL;
    ur_exp_graph_handle_t ooo_graph = NULL;
    ur_exp_executable_graph_handle_t ooo_exec = NULL;
    URT_OK(urQueueBeginGraphCaptureExp(ooo));
    URT_OK(urEnqueueUSMFill(ooo, a, 1, &five, n, 0, NULL, &first));
    URT_OK(urEnqueueUSMMemcpy(ooo, false, b, a, n, 1, &first, &moved));
    URT_OK(urEnqueueEventsWaitWithBarrier(ooo, 0, NULL, NULL));
    URT_OK(urEnqueueUSMFill(ooo, a, 1, &seven, n, 0, NULL, NULL));
    URT_OK(urQueueEndGraphCaptureExp(ooo, &ooo_graph));
    URT_REQUIRE(urGraphInstantiateGraphExp(ooo_graph, &ooo_exec));
    for (int run = 0; run < 2; run++) {
      zero(&env, a, n);
      zero(&env, b, n);
      URT_OK(urEnqueueGraphExp(ooo, ooo_exec, 0, NULL, NULL));
      URT_OK(urQueueFinish(ooo));
      URT_CHECK(holds(&env, b, n, 5) && holds(&env, a, n, 7), "out of order, run %d: fill, copy, barrier, fill", run);
    }
    URT_OK(urEventRelease(first));
    URT_OK(urEventRelease(moved));
    URT_OK(urGraphExecutableGraphDestroyExp(ooo_exec));
    URT_OK(urGraphDestroyExp(ooo_graph));
    URT_OK(urQueueRelease(ooo));
  }

  /* A fork never joined back. */
  ur_exp_graph_handle_t unjoined = NULL;
  URT_OK(urQueueBeginGraphCaptureExp(q));
  URT_OK(urEnqueueEventsWaitWithBarrier(q, 0, NULL, &fork));
  URT_OK(urEnqueueEventsWait(q2, 1, &fork, NULL));
  URT_RESULT(UR_RESULT_ERROR_GRAPH_UNJOINED_FORKS, urQueueEndGraphCaptureExp(q, &unjoined));
  URT_CHECK(unjoined == NULL && !capturing(q) && !capturing(q2), "the capture ended without a graph");
  URT_OK(urEventRelease(fork));

  /* Two captures cannot merge. */
  ur_exp_graph_handle_t g1 = NULL, g2 = NULL;
  ur_event_handle_t other = NULL;
  URT_OK(urQueueBeginGraphCaptureExp(q));
  URT_OK(urQueueBeginGraphCaptureExp(q2));
  URT_OK(urEnqueueEventsWaitWithBarrier(q2, 0, NULL, &other));
  URT_RESULT(UR_RESULT_ERROR_GRAPH_CAPTURE_MERGE_ATTEMPT, urEnqueueEventsWait(q, 1, &other, NULL));
  URT_OK(urQueueEndGraphCaptureExp(q, &g1));
  URT_OK(urQueueEndGraphCaptureExp(q2, &g2));
  URT_OK(urEventRelease(other));
  URT_OK(urGraphDestroyExp(g1));
  URT_OK(urGraphDestroyExp(g2));

  /* A host wait invalidates the capture: later calls and the end fail. */
  ur_exp_graph_handle_t invalid = NULL;
  ur_event_handle_t captured = NULL;
  URT_OK(urQueueBeginGraphCaptureExp(q));
  URT_OK(urEnqueueUSMFill(q, a, 1, &five, n, 0, NULL, &captured));
  URT_RESULT(UR_RESULT_ERROR_GRAPH_CAPTURE_UNSUPPORTED, urEventWait(1, &captured));
  URT_RESULT(UR_RESULT_ERROR_GRAPH_CAPTURE_INVALIDATED, urEnqueueUSMFill(q, a, 1, &five, n, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_GRAPH_CAPTURE_INVALIDATED, urQueueFinish(q));
  URT_RESULT(UR_RESULT_ERROR_GRAPH_CAPTURE_INVALIDATED, urQueueEndGraphCaptureExp(q, &invalid));
  URT_CHECK(invalid == NULL && !capturing(q), "an invalidated capture ends without a graph");
  URT_OK(urEventRelease(captured));
  /* So does a blocking copy, and urQueueFinish. */
  uint8_t host[16];
  URT_OK(urQueueBeginGraphCaptureExp(q));
  URT_RESULT(UR_RESULT_ERROR_GRAPH_CAPTURE_UNSUPPORTED, urEnqueueUSMMemcpy(q, true, host, a, sizeof host, 0, NULL, NULL));
  URT_RESULT(UR_RESULT_ERROR_GRAPH_CAPTURE_INVALIDATED, urQueueEndGraphCaptureExp(q, &invalid));
  URT_OK(urQueueBeginGraphCaptureExp(q));
  URT_RESULT(UR_RESULT_ERROR_GRAPH_CAPTURE_UNSUPPORTED, urQueueFinish(q));
  URT_RESULT(UR_RESULT_ERROR_GRAPH_CAPTURE_INVALIDATED, urQueueEndGraphCaptureExp(q, &invalid));
  URT_CHECK(holds(&env, a, n, 7), "nothing captured ran");

  /* Null handles and pointers. */
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urQueueBeginGraphCaptureExp(NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_HANDLE, urQueueBeginCaptureIntoGraphExp(q, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urQueueEndGraphCaptureExp(q, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urQueueIsGraphCaptureEnabledExp(q, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urGraphIsEmptyExp(graph, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urGraphDumpContentsExp(graph, NULL));
  URT_RESULT(UR_RESULT_ERROR_INVALID_NULL_POINTER, urGraphInstantiateGraphExp(graph, NULL));

  URT_OK(urGraphExecutableGraphDestroyExp(fork_exec));
  URT_OK(urGraphDestroyExp(forked));
  URT_OK(urGraphExecutableGraphDestroyExp(exec));
  URT_OK(urGraphDestroyExp(graph));
  URT_OK(urQueueFinish(q2));
  URT_OK(urQueueRelease(q2));
  URT_OK(urUSMFree(env.context, a));
  URT_OK(urUSMFree(env.context, b));
  captured_kernels(&env);
  urt_fini(&env);
  return urt_done("capture");
}
