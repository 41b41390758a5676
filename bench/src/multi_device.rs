//! The `multi_device` group (issue 17): the two-stage [`pipeline`](crate::pipeline)
//! as one multi-device graph over the first two selected devices, against
//! the same work as a single-device graph on the first; replay of the
//! finalized graphs, each execution waited for, and the host time of the
//! submission call alone, with the host bridges the two-device graph uses.
//! Exact results are checked before timing. Figures are only meaningful on two GPUs: on the CPU
//! machine the "devices" share the host's cores and memory.

use std::fmt::Write as _;
use std::time::Instant;

use cmdbuf::Device;

use crate::pipeline::{Pipeline, Side};
use crate::stats::{Repeats, Summary, measure};
use crate::suites::Record;

fn record(devices: &str, names: &str, variant: &str, metric: &str, n: usize, summary: Summary) -> Record {
    Record {
        device: devices.into(),
        backend: "multi".into(),
        device_name: names.into(),
        benchmark: "multi_device".into(),
        shape: "pipeline".into(),
        variant: variant.into(),
        metric: metric.into(),
        n,
        summary,
    }
}

fn ms(ns: f64) -> String {
    format!("{:.3}", ns / 1e6)
}

/// Runs the group over the first two of `devices`; the table, or why nothing ran.
pub fn run(devices: &[Device], repeats: Repeats, quick: bool, out: &mut Vec<Record>) -> String {
    let mut text = String::from("### `multi_device` (two-stage pipeline as one graph)\n\n");
    let [a, b, ..] = devices else {
        text += "not measured: needs two selected devices (UR_DEVICE_SELECTOR)\n\n";
        return text;
    };
    match measure_all(a, b, repeats, quick, out) {
        Ok(table) => text += &table,
        Err(e) => {
            let _ = writeln!(text, "not measured: {e}\n");
        }
    }
    text
}

/// The host time of a plain `cuGraphLaunch` of `two`'s composition on the
/// stream of `side`'s queue, where the graph is composed on CUDA (else
/// `None`). Waits for the graph's executions first.
#[cfg(feature = "cuda")]
fn raw_launch(side: &Side, two: &Pipeline<'_>, repeats: Repeats) -> Result<Option<Summary>, String> {
    if side.context.device().backend() != cmdbuf::Backend::Cuda {
        return Ok(None);
    }
    let Ok(exec) = two.exec.composed_native_handle() else { return Ok(None) };
    let text = |e: cmdbuf::UrError| e.to_string();
    side.queue.finish().map_err(text)?;
    let stream = side.queue.core().native_handle().map_err(text)?;
    let context = side.context.native_handle().map_err(text)?;
    let [summary] = measure(repeats, || {
        // SAFETY: the handles are owned by `side` and `two`, alive for the
        // call; the queue is idle (finished) and nothing else submits
        // meanwhile; the graph's memory is held by `two`, which is not run
        // after these launches.
        unsafe { crate::raw::launch_foreign(context.0, exec.0, stream.0) }.map(|took| [took])
    })?;
    Ok(Some(summary))
}

/// Without the CUDA baselines: nothing to launch.
#[cfg(not(feature = "cuda"))]
fn raw_launch(_: &Side, _: &Pipeline<'_>, _: Repeats) -> Result<Option<Summary>, String> {
    Ok(None)
}

fn measure_all(
    a: &Device,
    b: &Device,
    repeats: Repeats,
    quick: bool,
    out: &mut Vec<Record>,
) -> Result<String, cmdbuf::UrError> {
    let (sa, sb) = (Side::new(a)?, Side::new(b)?);
    let devices = format!("{a} + {b}");
    let names = format!("{} + {}", a.info().name, b.info().name);
    let sizes: &[usize] = if quick { &[1 << 16, 1 << 20] } else { &[1 << 16, 1 << 20, 1 << 24] };
    let stage_repeats = 4;
    let mut text = format!(
        "Devices: {devices} ({names}); each stage a kernel and {stage_repeats} increments per half; ms per execution, \
         median (p10-p90)\n\n| elements | one device ({a}) | two devices | speed-up | bytes peer-to-peer | bytes through the \
         host |\n|---:|---:|---:|---:|---:|---:|\n"
    );
    let mut submission = String::from(
        "Host submission: µs from the call to its return (`enqueue_graph` of the finalized graph; the execution is \
         waited for outside the timing), median (p10-p90), the one-device graph having the same nodes; host bridges: \
         waits between the devices' partitions relayed by a host thread at each execution of the two-device graph; \
         submissions: adapter submissions per execution of the two-device graph (1 where its partitions are \
         composed into one executable: one CUDA graph launch on CUDA); raw launch: on CUDA, where the two-device \
         graph is composed, the host time of a plain `cuGraphLaunch` of the composition's own `CUgraphExec` on the \
         submitting queue's stream (each launch synchronized outside the timing), what the driver alone takes to \
         launch the two-GPU graph\n\n\
         | elements | one device | two devices | ratio | raw launch | host bridges | submissions |\n\
         |---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for &n in sizes {
        let half = n / 2;
        let one = Pipeline::new([&sa, &sa], half, stage_repeats)?;
        let two = Pipeline::new([&sa, &sb], half, stage_repeats)?;
        for p in [&one, &two] {
            p.load()?;
            p.run()?;
            p.check()?;
        }
        let r = repeats.scaled(n / 4096);
        let time = |p: &Pipeline<'_>| {
            measure(r, || {
                let start = Instant::now();
                p.run()?;
                Ok::<_, cmdbuf::UrError>([start.elapsed()])
            })
        };
        let [t1] = time(&one)?;
        let [t2] = time(&two)?;
        let submit = |p: &Pipeline<'_>| {
            measure(r, || {
                let start = Instant::now();
                let event = p.submit()?;
                let took = start.elapsed();
                event.wait()?;
                Ok::<_, cmdbuf::UrError>([took])
            })
        };
        let [s1] = submit(&one)?;
        let [s2] = submit(&two)?;
        let bridges = two.exec.host_bridges();
        let submissions = two.exec.submissions_per_execution();
        let us = |ns: f64| format!("{:.1}", ns / 1e3);
        // Results after the timed replays too.
        two.check()?;
        // Last: launches outside the graph leave its status bookkeeping
        // behind, so the graph runs no more after them.
        let raw = raw_launch(&sa, &two, r);
        let raw_text = match &raw {
            Ok(Some(t)) => format!("{} ({}-{})", us(t.median), us(t.p10), us(t.p90)),
            Ok(None) => "-".to_string(),
            Err(e) => format!("failed: {e}"),
        };
        let _ = writeln!(
            submission,
            "| {n} | {} ({}-{}) | {} ({}-{}) | {:.2}x | {raw_text} | {bridges} | {submissions} |",
            us(s1.median),
            us(s1.p10),
            us(s1.p90),
            us(s2.median),
            us(s2.p10),
            us(s2.p90),
            s2.median / s1.median
        );
        if let Ok(Some(t)) = raw {
            out.push(record(&devices, &names, "raw launch two devices", "ns", n, t));
        }
        let staged = two.cross_bytes - two.peer_bytes;
        let _ = writeln!(
            text,
            "| {n} | {} ({}-{}) | {} ({}-{}) | {:.2}x | {} | {} |",
            ms(t1.median),
            ms(t1.p10),
            ms(t1.p90),
            ms(t2.median),
            ms(t2.p10),
            ms(t2.p90),
            t1.median / t2.median,
            two.peer_bytes,
            staged
        );
        out.push(record(&devices, &names, "one device", "ns", n, t1));
        out.push(record(&devices, &names, "two devices", "ns", n, t2));
        let one_figure = |v: usize| Summary { median: v as f64, p10: v as f64, p90: v as f64, samples: 1 };
        out.push(record(&devices, &names, "peer", "bytes_per_execution", n, one_figure(two.peer_bytes)));
        out.push(record(&devices, &names, "host staged", "bytes_per_execution", n, one_figure(staged)));
        out.push(record(&devices, &names, "submit one device", "ns", n, s1));
        out.push(record(&devices, &names, "submit two devices", "ns", n, s2));
        out.push(record(&devices, &names, "host bridges", "per_execution", n, one_figure(bridges)));
        out.push(record(&devices, &names, "submissions", "per_execution", n, one_figure(submissions)));
    }
    text += "\nBytes through the host cross it twice (device to host staging, host staging to device). Results are \
             checked exactly against the host before and after timing.\n\n";
    text += &submission;
    text += "\n";
    Ok(text)
}
