//! The label listings name devices by: views with cmdbuf-core's software
//! command buffer say so.

use cmdbuf_core::CommandBufferSupport;

#[test]
fn software_command_buffer_views_are_labelled_emulated() {
    let device = cmdbuf_cpu::default_device();
    let id = device.id().to_string();
    assert_eq!(device.info().command_buffer.support, CommandBufferSupport::Native);
    assert_eq!(device.to_string(), id);
    let emulated = device.emulated();
    assert_eq!(emulated.to_string(), format!("{id} emulated"));
    assert_eq!(emulated.native().to_string(), id);
}
