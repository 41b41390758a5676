//! UR's graph capture (`urQueueBeginGraphCaptureExp` and its family): what a
//! capturing queue records (USM, buffer and kernel commands, barriers and
//! event waits) with its in-order, out-of-order and event dependencies,
//! forks onto other queues and their joins, capture into an existing graph,
//! executable graphs enqueued many times, and the errors of misuse. UR's
//! `test/conformance/exp_graph` is the model.

use cmdbuf::{CapturedGraph, Context, Event, KernelArg, KernelLaunch, Queue, QueueProperties};

use super::graph_common::{Diamond, MINUS_ONE, ONE};
use super::native_command::{WORDS, native_fill, words};
use crate::harness::{CaseResult, Env, read, read_buffer, write};
use crate::{Requires, cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["capture";
        usm_commands_replay,
        in_order_diamond,
        out_of_order_diamond_with_events => Requires::OUT_OF_ORDER,
        fork_and_join,
        buffer_commands_and_barrier => Requires::OUT_OF_ORDER,
        capture_into_existing_graph,
        instantiate_once_enqueue_many,
        empty_capture,
        dump_contents,
        state_errors,
        capture_invalidated,
        unjoined_fork,
        merge_attempt,
        captured_events_stay_in_their_capture,
        executable_graph_inside_a_capture,
        dropping_the_capturing_queue,
        native_command_captured,
        native_command_in_a_fork => Requires::OUT_OF_ORDER,
        native_command_now_invalidates,
    ]
}

const N: usize = 128;

/// Enqueues the diamond: the top on `top_q`, the left branch after it on
/// `top_q`, the right branch on `right_q` after the top's event, the bottom
/// on `top_q` after both branches. Returns the four events.
fn enqueue_diamond(d: &Diamond, top_q: &Queue, right_q: &Queue) -> cmdbuf::Result<[Event; 4]> {
    let n = d.n;
    let a = [KernelArg::Pointer(d.a.ptr())];
    let left_args =
        [KernelArg::Pointer(d.b()), KernelArg::value(&ONE), KernelArg::Pointer(d.a.ptr()), KernelArg::Pointer(d.b())];
    let right_args = [
        KernelArg::Pointer(d.c()),
        KernelArg::value(&MINUS_ONE),
        KernelArg::Pointer(d.a.ptr()),
        KernelArg::Pointer(d.c()),
    ];
    let bottom_args = [KernelArg::Pointer(d.bc.ptr()), KernelArg::value(&ONE), KernelArg::value(&MINUS_ONE)];
    // SAFETY: n items over the diamond's n-element A, B and C (2n for the bottom over B and C).
    unsafe {
        let top = top_q.launch_kernel(&KernelLaunch::new(&d.increment, &[n], &a), &[])?;
        let left = top_q.launch_kernel(&KernelLaunch::new(&d.saxpy, &[n], &left_args), &[&top])?;
        let right = right_q.launch_kernel(&KernelLaunch::new(&d.saxpy, &[n], &right_args), &[&top])?;
        let bottom = top_q.launch_kernel(&KernelLaunch::new(&d.axpb, &[2 * n], &bottom_args), &[&left, &right])?;
        Ok([top, left, right, bottom])
    }
}

/// USM fills, a copy and a kernel captured on an in-order queue, replayed
/// three times with the inputs changed between runs.
fn usm_commands_replay(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let (src, dst) = (env.usm_u32(N)?, env.usm_u32(N)?);
    let increment = env.kernel("increment")?;
    write(&queue, dst.ptr(), &vec![0u32; N])?;
    queue.begin_capture()?;
    check!(queue.is_capturing());
    queue.usm_fill(dst.ptr(), &9u32.to_le_bytes(), N * 2, &[])?;
    queue.usm_memcpy(dst.ptr().byte_add(N * 2), src.ptr(), N * 2, &[])?;
    // SAFETY: N items over the N elements of `dst`.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&increment, &[N], &[KernelArg::Pointer(dst.ptr())]), &[])? };
    let graph = queue.end_capture()?;
    check!(!queue.is_capturing());
    check_eq!(graph.node_count(), 3);
    check_eq!(read::<u32>(&queue, dst.ptr(), N)?, vec![0u32; N], "captured commands must not have run");
    let exec = graph.instantiate()?;
    for run in 0..3u32 {
        let input: Vec<u32> = (0..N as u32).map(|i| i * 3 + run).collect();
        write(&queue, src.ptr(), &input)?;
        queue.enqueue_graph(&exec, &[])?.wait()?;
        let got = read::<u32>(&queue, dst.ptr(), N)?;
        check_eq!(got[..N / 2], vec![10u32; N / 2][..], "run {run}: the fill then the increment");
        let want: Vec<u32> = input[..N / 2].iter().map(|x| x + 1).collect();
        check_eq!(got[N / 2..], want[..], "run {run}: the copy then the increment");
    }
    Ok(())
}

/// The diamond captured on one in-order queue.
fn in_order_diamond(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let d = Diamond::new(env, N)?;
    d.init(&queue)?;
    queue.begin_capture()?;
    enqueue_diamond(&d, &queue, &queue)?;
    let exec = queue.end_capture()?.instantiate()?;
    d.check(&queue, 0)?;
    for run in 1..=3 {
        queue.enqueue_graph(&exec, &[])?.wait()?;
        d.check(&queue, run)?;
    }
    Ok(())
}

/// The diamond captured on an out-of-order queue: only the captured events
/// order it.
fn out_of_order_diamond_with_events(env: &Env) -> CaseResult {
    let queue = env.ooo_queue()?;
    let d = Diamond::new(env, N)?;
    d.init(&queue)?;
    queue.begin_capture()?;
    let [top, ..] = enqueue_diamond(&d, &queue, &queue)?;
    check_eq!(top.status(), cmdbuf::EventStatus::Queued, "a captured event stands for a command that has not run");
    let graph = queue.end_capture()?;
    check_eq!(graph.node_count(), 4);
    let exec = graph.instantiate()?;
    for run in 1..=3 {
        queue.enqueue_graph(&exec, &[])?.wait()?;
        d.check(&queue, run)?;
    }
    Ok(())
}

/// A second queue joins the capture by waiting on a captured event (the
/// right branch) and is joined back by the bottom's wait.
fn fork_and_join(env: &Env) -> CaseResult {
    let (q1, q2) = (env.queue()?, env.queue()?);
    let d = Diamond::new(env, N)?;
    d.init(&q1)?;
    q1.begin_capture()?;
    check!(!q2.is_capturing());
    let [_, _, right, _] = enqueue_diamond(&d, &q1, &q2)?;
    check!(q2.is_capturing(), "a queue waiting on a captured event joins the capture");
    check_eq!(right.status(), cmdbuf::EventStatus::Queued);
    check_err!(q2.end_capture(), InvalidOperation);
    let graph = q1.end_capture()?;
    check!(!q2.is_capturing(), "ending the capture ends it on the queues that joined");
    check_eq!(graph.node_count(), 4);
    let exec = graph.instantiate()?;
    for run in 1..=2 {
        q2.enqueue_graph(&exec, &[])?.wait()?;
        d.check(&q1, run)?;
    }
    Ok(())
}

/// Buffer fills and copies, a USM-to-buffer write and a barrier captured on
/// an out-of-order queue: the barrier orders what came before it.
fn buffer_commands_and_barrier(env: &Env) -> CaseResult {
    let queue = env.ooo_queue()?;
    let (a, b) = (env.buffer(N * 4)?, env.buffer(N * 4)?);
    let staging = env.usm_u32(N / 2)?;
    queue.begin_capture()?;
    let fa = queue.fill_buffer(&a, &5u32.to_le_bytes(), 0, N * 4, &[])?;
    queue.fill_buffer(&b, &[0], 0, N * 4, &[])?;
    queue.barrier(&[])?;
    queue.copy_buffer(&a, &b, 0, 0, N * 2, &[])?;
    queue.write_buffer_from_usm(&b, N * 2, N * 2, staging.ptr(), &[&fa])?;
    let exec = queue.end_capture()?.instantiate()?;
    for run in 0..2u32 {
        let input: Vec<u32> = (0..N as u32 / 2).map(|i| i + 1000 * run).collect();
        write(&queue, staging.ptr(), &input)?;
        queue.enqueue_graph(&exec, &[])?.wait()?;
        let got = read_buffer::<u32>(&queue, &b, 0, N)?;
        check_eq!(got[..N / 2], vec![5u32; N / 2][..], "run {run}: the copy after the barrier");
        check_eq!(got[N / 2..], input[..], "run {run}: the write after the barrier");
    }
    Ok(())
}

/// `urQueueBeginCaptureIntoGraphExp`: the end returns the same graph; the
/// graph must be empty and captured by no other queue.
fn capture_into_existing_graph(env: &Env) -> CaseResult {
    let (queue, other) = (env.queue()?, env.queue()?);
    let mem = env.usm_u32(N)?;
    let graph = CapturedGraph::new(env.context())?;
    check!(graph.is_empty());
    queue.begin_capture_into(&graph)?;
    check!(graph.is_capturing());
    check!(queue.capture_graph()?.same_graph(&graph));
    check_err!(other.begin_capture_into(&graph), InvalidOperation);
    queue.usm_fill(mem.ptr(), &[3], N * 4, &[])?;
    check!(!graph.is_empty());
    let ended = queue.end_capture()?;
    check!(ended.same_graph(&graph), "the end returns the graph captured into");
    check!(!graph.is_capturing());
    check_err!(queue.begin_capture_into(&graph), InvalidArgument);
    check!(!queue.is_capturing(), "a refused begin leaves the queue executing");
    check_err!(other.capture_graph(), InvalidOperation);
    let foreign = Queue::new(&Context::new(env.device())?, QueueProperties::default())?;
    check_err!(foreign.begin_capture_into(&CapturedGraph::new(env.context())?), InvalidQueue);
    queue.enqueue_graph(&graph.instantiate()?, &[])?.wait()?;
    check_eq!(read::<u8>(&queue, mem.ptr(), N * 4)?, vec![3u8; N * 4]);
    Ok(())
}

/// One executable graph enqueued many times, after eager work and before
/// it (UR's `SuccessEventDependant` and `SuccessEventOrdering`); a graph
/// instantiated twice gives two independent executable graphs.
fn instantiate_once_enqueue_many(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let (acc, one) = (env.usm_u32(N)?, env.usm_u32(N)?);
    let increment = env.kernel("increment")?;
    write(&queue, one.ptr(), &vec![0u32; N])?;
    queue.begin_capture()?;
    // SAFETY: N items over N elements.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&increment, &[N], &[KernelArg::Pointer(acc.ptr())]), &[])? };
    let graph = queue.end_capture()?;
    let (exec, exec2) = (graph.instantiate()?, graph.instantiate()?);
    let clear = queue.usm_fill(acc.ptr(), &[0], N * 4, &[])?;
    let mut last = queue.enqueue_graph(&exec, &[&clear])?;
    for _ in 1..10 {
        last = queue.enqueue_graph(&exec, &[&last])?;
    }
    let mid = queue.enqueue_graph(&exec2, &[&last])?;
    mid.wait()?;
    check_eq!(read::<u32>(&queue, acc.ptr(), N)?, vec![11u32; N], "eleven executions after the clear");
    let after = queue.usm_fill(acc.ptr(), &[0], N * 4, &[&queue.enqueue_graph(&exec, &[])?])?;
    after.wait()?;
    check_eq!(read::<u32>(&queue, acc.ptr(), N)?, vec![0u32; N], "the fill waited for the graph");
    Ok(())
}

/// A capture of nothing: an empty graph, which does not instantiate
/// (`InvalidArgument`, as UR's conformance suite asks); the queue goes on.
fn empty_capture(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    queue.begin_capture()?;
    let graph = queue.end_capture()?;
    check!(graph.is_empty());
    check_err!(graph.instantiate(), InvalidArgument);
    queue.events_wait(&[])?.wait()?;
    queue.finish()?;
    Ok(())
}

/// `urGraphDumpContentsExp`: the captured commands, as DOT.
fn dump_contents(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm_u32(N)?;
    queue.begin_capture()?;
    let fill = queue.usm_fill(mem.ptr(), &[1], N * 4, &[])?;
    queue.events_wait(&[&fill])?;
    let graph = queue.end_capture()?;
    let path = std::env::temp_dir().join(format!("ur-capture-{}-{}.dot", std::process::id(), graph.id()));
    graph.dump(&path)?;
    let text = std::fs::read_to_string(&path).map_err(|e| crate::harness::CaseError::Fail(e.to_string()))?;
    let _ = std::fs::remove_file(&path);
    check!(text.starts_with("digraph"), "a DOT graph: {text}");
    check!(text.contains("->"), "the edge from the fill to the wait: {text}");
    check_err!(graph.dump(std::env::temp_dir().join("no-such-dir-ur-capture/graph.dot")), Unknown);
    Ok(())
}

/// Begin twice, end without begin, instantiate while capturing, host waits
/// on the capturing queue refused.
fn state_errors(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm_u32(N)?;
    check_err!(queue.end_capture(), CommandListNotCapturing);
    check!(!queue.is_capturing());
    queue.begin_capture()?;
    check_err!(queue.begin_capture(), InvalidOperation);
    let graph = queue.capture_graph()?;
    check_err!(graph.instantiate(), InvalidOperation);
    queue.usm_fill(mem.ptr(), &[1], 16, &[])?;
    let graph = queue.end_capture()?;
    check_err!(queue.end_capture(), CommandListNotCapturing);
    check_eq!(graph.node_count(), 1);
    // The queue executes again.
    queue.usm_fill(mem.ptr(), &[2], 16, &[])?.wait()?;
    check_eq!(read::<u8>(&queue, mem.ptr(), 16)?, vec![2u8; 16]);
    Ok(())
}

/// An operation a capture cannot record fails with `GraphCaptureUnsupported`
/// and invalidates the capture: later enqueues and the end fail with
/// `GraphCaptureInvalidated`; then the queue executes again. Each way of
/// invalidating is tried.
fn capture_invalidated(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm_u32(N)?;
    let mut host = vec![0u8; 16];
    type Invalidator<'a> = Box<dyn Fn(&Queue, &Event) -> cmdbuf::Result<()> + 'a>;
    let ways: Vec<(&str, Invalidator)> = vec![
        ("host wait on a captured event", Box::new(|_, e| e.wait())),
        ("finish", Box::new(|q, _| q.finish())),
        ("blocking read", Box::new(|q, _| q.read_usm(mem.ptr(), &mut [0u8; 16], &[]))),
        ("host task", Box::new(|q, _| q.enqueue_host_task(&[], || {}).map(drop))),
    ];
    for (what, invalidate) in &ways {
        queue.begin_capture()?;
        let fill = queue.usm_fill(mem.ptr(), &[1], 16, &[])?;
        match invalidate(&queue, &fill) {
            Err(cmdbuf::UrError::GraphCaptureUnsupported(_)) => {}
            other => {
                return Err(crate::harness::CaseError::Fail(format!(
                    "{what}: {other:?}, expected GraphCaptureUnsupported"
                )));
            }
        }
        check!(queue.is_capturing(), "{what}: the capture goes on, invalidated");
        check_err!(queue.usm_fill(mem.ptr(), &[2], 16, &[]), GraphCaptureInvalidated);
        check_err!(queue.finish(), GraphCaptureInvalidated);
        check_err!(queue.end_capture(), GraphCaptureInvalidated);
        check!(!queue.is_capturing(), "{what}: the end ends an invalidated capture");
    }
    queue.write_usm(mem.ptr(), &[7u8; 16], &[])?;
    queue.read_usm(mem.ptr(), &mut host, &[])?;
    check_eq!(host, vec![7u8; 16], "the queue executes after the capture");
    Ok(())
}

/// A queue that joined the capture and was never joined back: the end
/// fails with `GraphUnjoinedForks` and the capture is over.
fn unjoined_fork(env: &Env) -> CaseResult {
    let (q1, q2) = (env.queue()?, env.queue()?);
    let mem = env.usm_u32(N)?;
    q1.begin_capture()?;
    let fork = q1.barrier(&[])?;
    q2.events_wait(&[&fork])?;
    check!(q2.is_capturing());
    check_err!(q1.end_capture(), GraphUnjoinedForks);
    check!(!q1.is_capturing() && !q2.is_capturing(), "the failed end ends the capture everywhere");
    // Joined back: the same capture ends well.
    q1.begin_capture()?;
    let fork = q1.barrier(&[])?;
    let branch = q2.usm_fill(mem.ptr(), &[4], N * 4, &[&fork])?;
    let more = q2.usm_fill(mem.ptr(), &[5], N * 2, &[])?;
    check_err!(q1.end_capture(), GraphUnjoinedForks);
    q1.begin_capture()?;
    let fork = q1.barrier(&[])?;
    let branch2 = q2.usm_fill(mem.ptr(), &[4], N * 4, &[&fork])?;
    q2.usm_fill(mem.ptr(), &[5], N * 2, &[])?;
    let tail = q2.events_wait(&[])?;
    q1.events_wait(&[&tail])?;
    let graph = q1.end_capture()?;
    check_eq!(graph.node_count(), 5);
    q1.enqueue_graph(&graph.instantiate()?, &[])?.wait()?;
    let got = read::<u8>(&q1, mem.ptr(), N * 4)?;
    check_eq!(got[..N * 2], vec![5u8; N * 2][..]);
    check_eq!(got[N * 2..], vec![4u8; N * 2][..]);
    drop((branch, more, branch2));
    Ok(())
}

/// Waiting, inside one capture, on an event of another capture in progress.
fn merge_attempt(env: &Env) -> CaseResult {
    let (q1, q2) = (env.queue()?, env.queue()?);
    q1.begin_capture()?;
    q2.begin_capture()?;
    let e2 = q2.barrier(&[])?;
    check_err!(q1.events_wait(&[&e2]), GraphCaptureMergeAttempt);
    q1.end_capture()?;
    q2.end_capture()?;
    Ok(())
}

/// Captured events are usable in the capture's wait lists only: not by an
/// executing queue once the capture ended; eager events are not usable in
/// a capture.
fn captured_events_stay_in_their_capture(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm_u32(N)?;
    let eager = queue.usm_fill(mem.ptr(), &[1], 16, &[])?;
    eager.wait()?;
    queue.begin_capture()?;
    check_err!(queue.usm_fill(mem.ptr(), &[2], 16, &[&eager]), InvalidEventWaitList);
    let captured = queue.usm_fill(mem.ptr(), &[3], 16, &[])?;
    queue.end_capture()?;
    check_err!(queue.usm_fill(mem.ptr(), &[4], 16, &[&captured]), InvalidEventWaitList);
    check_err!(captured.wait(), InvalidOperation);
    check_eq!(read::<u8>(&queue, mem.ptr(), 16)?, vec![1u8; 16], "nothing captured ran");
    Ok(())
}

/// An executable graph enqueued while capturing is captured as one command
/// of the new graph, ordered like any other.
fn executable_graph_inside_a_capture(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let (a, b) = (env.usm_u32(N)?, env.usm_u32(N)?);
    let increment = env.kernel("increment")?;
    queue.begin_capture()?;
    // SAFETY: N items over the N elements of `a`.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&increment, &[N], &[KernelArg::Pointer(a.ptr())]), &[])? };
    let inner = queue.end_capture()?.instantiate()?;
    queue.begin_capture()?;
    queue.usm_fill(a.ptr(), &[0], N * 4, &[])?;
    queue.enqueue_graph(&inner, &[])?;
    queue.enqueue_graph(&inner, &[])?;
    queue.usm_memcpy(b.ptr(), a.ptr(), N * 4, &[])?;
    let outer = queue.end_capture()?;
    check_eq!(outer.node_count(), 4);
    let exec = outer.instantiate()?;
    for run in 0..2 {
        write(&queue, b.ptr(), &vec![9u32; N])?;
        queue.enqueue_graph(&exec, &[])?.wait()?;
        check_eq!(read::<u32>(&queue, b.ptr(), N)?, vec![2u32; N], "run {run}: zero, two increments, the copy");
    }
    Ok(())
}

/// Dropping the queue that captures abandons the capture: the graph keeps
/// what was captured and can be instantiated.
fn dropping_the_capturing_queue(env: &Env) -> CaseResult {
    let mem = env.usm_u32(N)?;
    let graph = CapturedGraph::new(env.context())?;
    {
        let queue = env.queue()?;
        queue.begin_capture_into(&graph)?;
        queue.usm_fill(mem.ptr(), &[6], N * 4, &[])?;
        check!(graph.is_capturing());
    }
    check!(!graph.is_capturing(), "the capture ended with its queue");
    let queue = env.queue()?;
    queue.enqueue_graph(&graph.instantiate()?, &[])?.wait()?;
    check_eq!(read::<u8>(&queue, mem.ptr(), N * 4)?, vec![6u8; N * 4]);
    Ok(())
}

/// A native command enqueued while capturing is captured between the
/// commands around it: its work is done at every execution of the graph
/// (twice instantiated: each executable graph does it), never during the capture.
fn native_command_captured(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let (buf, out) = (words(env, 0)?, words(env, 0)?);
    queue.begin_capture()?;
    queue.fill_buffer(&buf, &0x11u32.to_le_bytes(), 0, WORDS * 4, &[])?;
    let b = buf.clone();
    // SAFETY: the callback fills the buffer, which the closure keeps alive.
    let native =
        unsafe { queue.enqueue_native_command(&[&buf], &[], move |s| native_fill(s, &b, 0, WORDS / 2, 0xA5))? };
    check_eq!(native.status(), cmdbuf::EventStatus::Queued, "a captured native command has not run");
    queue.copy_buffer(&buf, &out, 0, 0, WORDS * 4, &[])?;
    let graph = queue.end_capture()?;
    check_eq!(graph.node_count(), 3);
    check_eq!(read_buffer::<u32>(&queue, &buf, 0, WORDS)?, vec![0u32; WORDS], "nothing ran during the capture");
    let mut expected = vec![0xA5u32; WORDS / 2];
    expected.extend(vec![0x11u32; WORDS / 2]);
    for (i, exec) in [graph.instantiate()?, graph.instantiate()?].iter().enumerate() {
        for run in 0..2 {
            queue.fill_buffer(&out, &0u32.to_le_bytes(), 0, WORDS * 4, &[])?;
            queue.fill_buffer(&buf, &0u32.to_le_bytes(), 0, WORDS * 4, &[])?;
            queue.enqueue_graph(exec, &[])?.wait()?;
            check_eq!(read_buffer::<u32>(&queue, &out, 0, WORDS)?, expected, "executable {i}, run {run}");
        }
    }
    Ok(())
}

/// A native command on a queue that joined a capture, ordered by captured
/// events only (out-of-order queues), joined back by the origin.
fn native_command_in_a_fork(env: &Env) -> CaseResult {
    let (q1, q2) = (env.ooo_queue()?, env.ooo_queue()?);
    let (buf, out) = (words(env, 0)?, words(env, 0)?);
    q1.begin_capture()?;
    let fill = q1.fill_buffer(&buf, &0x22u32.to_le_bytes(), 0, WORDS * 4, &[])?;
    let b = buf.clone();
    // SAFETY: the callback fills the buffer, which the closure keeps alive.
    let native = unsafe {
        q2.enqueue_native_command(&[&buf], &[&fill], move |s| native_fill(s, &b, WORDS / 4, WORDS / 4, 0x5A))?
    };
    check!(q2.is_capturing(), "the queue of the native command joined the capture");
    q1.copy_buffer(&buf, &out, 0, 0, WORDS * 4, &[&native])?;
    let exec = q1.end_capture()?.instantiate()?;
    let mut expected = vec![0x22u32; WORDS];
    expected[WORDS / 4..WORDS / 2].fill(0x5A);
    for run in 0..2 {
        q1.fill_buffer(&out, &0u32.to_le_bytes(), 0, WORDS * 4, &[])?.wait()?;
        q1.enqueue_graph(&exec, &[])?.wait()?;
        check_eq!(read_buffer::<u32>(&q1, &out, 0, WORDS)?, expected, "run {run}");
    }
    Ok(())
}

/// `enqueue_native_command_now`, whose callback must have run when the call
/// returns (UR's `urEnqueueNativeCommandExp` contract), cannot be captured:
/// `GraphCaptureUnsupported`, and the capture is invalidated; nothing ran.
fn native_command_now_invalidates(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let ran = std::sync::atomic::AtomicU32::new(0);
    queue.begin_capture()?;
    // SAFETY: the callback only counts.
    let result = unsafe {
        queue.enqueue_native_command_now(&[], &[], |_| {
            ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        })
    };
    check_err!(result, GraphCaptureUnsupported);
    check_err!(queue.end_capture(), GraphCaptureInvalidated);
    check_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 0);
    Ok(())
}
