//! Peer copies against copies through the host, between the first two
//! devices `UR_DEVICE_SELECTOR` selects (`cuda:*` on a 2-GPU host):
//!
//! - raw USM: `Queue::usm_copy_peer` of N bytes from device 1 to device 0,
//!   against the same bytes read to host memory on device 1's queue and
//!   written from it on device 0's;
//! - a buffer: pages written on device 1, then read on device 0; the buffer
//!   chooses the path (`TransferStats::peer` or `via_host`).
//!
//! Each figure is the best of 5 runs. `cargo run --release -p cmdbuf-conformance
//! --example peer_bandwidth [MiB]`.

use std::time::Instant;

use cmdbuf::{Context, Queue, QueueProperties, UsmAllocation, UsmKind};
use cmdbuf_runtime::{AccessMode, AccessRange, Buffer, BufferProperties, CommandGroup};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mib: usize = std::env::args().nth(1).map_or(Ok(256), |a| a.parse())?;
    let bytes = mib << 20;
    let loader = cmdbuf::load()?;
    let devices = loader.devices();
    if devices.len() < 2 {
        return Err(format!("two devices needed; the selector `{}` gives {}", loader.selector(), devices.len()).into());
    }
    let (d0, d1) = (&devices[0], &devices[1]);
    let access = d0.peer_access(d1)?;
    println!("{d0} ({}) <- {d1} ({}): {bytes} bytes; peer access {access:?}", d0.info().name, d1.info().name);
    let (c0, c1) = (Context::new(d0)?, Context::new(d1)?);
    let (q0, q1) = (Queue::new(&c0, QueueProperties::default())?, Queue::new(&c1, QueueProperties::default())?);
    let (m0, m1) = (UsmAllocation::new(&c0, UsmKind::Device, bytes)?, UsmAllocation::new(&c1, UsmKind::Device, bytes)?);
    q1.usm_fill(m1.ptr(), &[7], bytes, &[])?.wait()?;
    let gbs = |seconds: f64| bytes as f64 / seconds / 1e9;
    let best =
        |f: &mut dyn FnMut() -> Result<(), Box<dyn std::error::Error>>| -> Result<f64, Box<dyn std::error::Error>> {
            let mut best = f64::MAX;
            for _ in 0..5 {
                let start = Instant::now();
                f()?;
                best = best.min(start.elapsed().as_secs_f64());
            }
            Ok(best)
        };
    if access.supported {
        d0.enable_peer_access(d1)?;
        let t = best(&mut || Ok(q0.usm_copy_peer(m0.ptr(), m1.ptr(), bytes, &[])?.wait()?))?;
        println!("usm_copy_peer:      {:8.3} ms  {:6.1} GB/s", t * 1e3, gbs(t));
    } else {
        println!("usm_copy_peer:      not supported for this pair");
    }
    let mut host = vec![0u8; bytes];
    let t = best(&mut || {
        q1.read_usm(m1.ptr(), &mut host, &[])?;
        q0.write_usm(m0.ptr(), &host, &[])?;
        Ok(())
    })?;
    println!("through the host:   {:8.3} ms  {:6.1} GB/s", t * 1e3, gbs(t));
    let mut check = vec![0u8; 4096];
    q0.read_usm(m0.ptr(), &mut check, &[])?;
    if check.iter().any(|&b| b != 7) {
        return Err("the copied bytes are wrong".into());
    }

    let words = bytes / 4;
    let props = BufferProperties::default();
    let mut times = Vec::new();
    let mut last = None;
    for round in 0..5u32 {
        let buffer = Buffer::new(4, &[words], &props)?;
        let mut cg = CommandGroup::new(&q1);
        let acc = cg.access(&buffer, AccessMode::WriteNoInit, AccessRange::all())?;
        cg.submit(|q, wait| q.usm_fill(acc.ptr(), &(round + 1).to_le_bytes(), bytes, wait))?.wait()?;
        let start = Instant::now();
        let mut cg = CommandGroup::new(&q0);
        cg.access(&buffer, AccessMode::Read, AccessRange::all())?;
        cg.submit(|q, wait| q.events_wait(wait))?.wait()?;
        times.push(start.elapsed().as_secs_f64());
        last = Some(buffer.stats());
    }
    let t = times.iter().copied().fold(f64::MAX, f64::min);
    let s = last.expect("five rounds");
    println!(
        "buffer transfer:    {:8.3} ms  {:6.1} GB/s  (copies {}, peer {}, via host {}, commands {}, bytes {})",
        t * 1e3,
        gbs(t),
        s.copies,
        s.peer,
        s.via_host,
        s.commands,
        s.bytes
    );
    Ok(())
}
