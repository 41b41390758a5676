//! Every selected device at once: one command buffer per device, each
//! filling its own allocation with the device's number, submitted on all
//! devices before any is waited for, then checked. With the CPU only, it
//! runs on one device; `UR_DEVICE_SELECTOR='opencl:*;cpu:*;vulkan:*'`
//! spreads it over more.
//!
//! ```sh
//! cargo run -p cmdbuf --example multi_device
//! ```

use cmdbuf::prelude::*;

const N: usize = 4096;

fn main() -> Result<()> {
    cmdbuf::init_logging()?;
    let loader = cmdbuf::load()?;
    loader.first_device()?; // none selected: the error says why
    let mut runs = Vec::new();
    for (i, device) in loader.devices().into_iter().enumerate() {
        let context = Context::new(&device)?;
        let queue = Queue::new(&context, QueueProperties::default())?;
        let data = UsmAllocation::new(&context, UsmKind::Device, N * 4)?;
        let cb = CommandBuffer::new(&context, &device, CommandBufferDesc::default())?;
        cb.append_usm_fill(data.ptr(), &(i as u32 + 1).to_ne_bytes(), N * 4, AppendOptions::new())?;
        cb.finalize()?;
        let done = queue.enqueue_command_buffer(&cb, &[])?; // not waited for yet
        runs.push((device, queue, data, cb, done));
    }
    for (i, (device, queue, data, _cb, done)) in runs.iter().enumerate() {
        done.wait()?;
        let got: Vec<u32> = queue.clone_dtoh_range(data.ptr(), N, &[])?;
        assert!(got.iter().all(|v| *v == i as u32 + 1), "{device}");
        println!("{device} ({}): {N} values checked", device.info().name);
    }
    println!("ok: {} device(s) ran at once", runs.len());
    Ok(())
}
