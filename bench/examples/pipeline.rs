//! The two-stage pipeline of issue 17 over the first two devices that
//! `UR_DEVICE_SELECTOR` selects, as one multi-device graph: stage 1 on each
//! half, the halves exchanged, stage 2 on each half; the result checked
//! exactly against the host.
//!
//! ```text
//! UR_DEVICE_SELECTOR='cpu:0;opencl:0' cargo run --release -p cmdbuf-bench --example pipeline -- [elements]
//! ```

#[allow(dead_code)]
#[path = "../src/pipeline.rs"]
mod pipeline;

use std::time::Instant;

use pipeline::{Pipeline, Side};

fn main() -> Result<(), cmdbuf::UrError> {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1 << 20);
    let loader = cmdbuf::load()?;
    let devices = loader.devices();
    let [a, b, ..] = &devices[..] else {
        return Err(cmdbuf::err!(
            DeviceNotFound,
            "the pipeline needs two devices; UR_DEVICE_SELECTOR selects {}",
            devices.len()
        ));
    };
    let (sa, sb) = (Side::new(a)?, Side::new(b)?);
    let pipeline = Pipeline::new([&sa, &sb], n / 2, 4)?;
    for (i, p) in pipeline.exec.partitions().iter().enumerate() {
        let what = if p.host_task { "host task" } else { "command buffer" };
        println!("partition {i}: {what} on device {} ({} nodes), after {:?}", p.device, p.nodes, p.depends_on);
    }
    pipeline.load()?;
    let start = Instant::now();
    pipeline.run()?;
    let first = start.elapsed();
    pipeline.check()?;
    let start = Instant::now();
    for _ in 0..10 {
        pipeline.run()?;
    }
    let replay = start.elapsed() / 10;
    pipeline.check()?;
    println!(
        "{n} elements on {a} + {b}: exact; first execution {first:?}, replay {replay:?}; {} bytes exchanged per \
         execution ({} peer to peer); {} host bridges and {} submissions per execution",
        pipeline.cross_bytes,
        pipeline.peer_bytes,
        pipeline.exec.host_bridges(),
        pipeline.exec.submissions_per_execution()
    );
    Ok(())
}
