//! A first command buffer: two fills recorded once, the second after the
//! first, replayed three times on the first selected device, then read back.
//! `UR_DEVICE_SELECTOR` picks the device (`cpu:0`, `opencl:*`, `vulkan:0`);
//! when it selects none, the error says why each adapter is absent.
//!
//! ```sh
//! cargo run -p cmdbuf --example first_command_buffer
//! UR_DEVICE_SELECTOR='vulkan:0' cargo run -p cmdbuf --example first_command_buffer
//! ```

use cmdbuf::prelude::*;

fn main() -> Result<()> {
    cmdbuf::init_logging()?;
    let loader = cmdbuf::load()?;
    let device = loader.first_device()?;
    println!("device {device}: {}", device.info().name);
    let context = Context::new(&device)?;
    let queue = Queue::new(&context, QueueProperties::default())?;
    let data = queue.clone_htod(&[0u32; 256])?;

    let cb = CommandBuffer::new(&context, &device, CommandBufferDesc::default().with_label("fills"))?;
    let fill = cb.append_usm_fill(data.ptr(), &[0xAB], 1024, AppendOptions::new())?;
    // Sync points order commands inside the buffer: this fill runs after the first.
    cb.append_usm_fill(data.ptr(), &[1, 2, 3, 4], 256, AppendOptions::new().after(&[fill.sync_point]))?;
    cb.finalize()?;
    for _ in 0..3 {
        queue.enqueue_command_buffer(&cb, &[])?;
    }
    queue.finish()?;

    let out: Vec<u32> = queue.clone_dtoh(&data, &[])?;
    assert_eq!(out[..64], [u32::from_ne_bytes([1, 2, 3, 4]); 64]);
    assert_eq!(out[64..], [0xABAB_ABABu32; 192]);
    println!(
        "ok: {} native command buffer, 3 replays checked",
        if cb.support() == cmdbuf::CommandBufferSupport::Native { "a" } else { "a software" }
    );
    Ok(())
}
