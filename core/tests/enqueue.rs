//! `Queue::enqueue`, the one eager path of memory commands: commands from
//! the validating builders run, commands of another context are refused,
//! and commands over raw host memory come from the `unsafe` builders.

use cmdbuf_core::{Command, Context, MemBuffer, MemFlags, Queue, QueueProperties, UrError, UsmAllocation, UsmKind};

fn setup() -> (Context, Queue) {
    let device = cmdbuf_cpu::default_device();
    let ctx = Context::new(&device).unwrap();
    let queue = Queue::new(&ctx, QueueProperties::default()).unwrap();
    (ctx, queue)
}

#[test]
fn runs_builder_commands_in_wait_order() {
    let (ctx, queue) = setup();
    let usm = UsmAllocation::new(&ctx, UsmKind::Shared, 64).unwrap();
    let buffer = MemBuffer::new(&ctx, MemFlags::READ_WRITE, 64).unwrap();
    let fill = queue.enqueue(Command::buffer_fill(&ctx, &buffer, &[1, 2], 0, 64).unwrap(), &[]).unwrap();
    let read = Command::buffer_read_to_usm(&ctx, &buffer, 8, 32, usm.ptr()).unwrap();
    queue.enqueue(read, &[&fill]).unwrap().wait().unwrap();
    let mut out = [0u8; 32];
    queue.read_usm(usm.ptr(), &mut out, &[]).unwrap();
    assert_eq!(out, [[1u8, 2]; 16].concat()[..]);
}

#[test]
fn raw_host_memory_through_the_unsafe_builders() {
    let (ctx, queue) = setup();
    let buffer = MemBuffer::new(&ctx, MemFlags::READ_WRITE, 16).unwrap();
    let src: Vec<u8> = (0..16).collect();
    let mut dst = [0u8; 8];
    // SAFETY: `src` and `dst` outlive the commands, which are waited for
    // before either is touched again.
    unsafe {
        let write = queue.enqueue(Command::buffer_write_host(&ctx, &buffer, 0, 16, src.as_ptr()).unwrap(), &[]);
        let read = Command::buffer_read_host(&ctx, &buffer, 4, 8, dst.as_mut_ptr()).unwrap();
        queue.enqueue(read, &[&write.unwrap()]).unwrap().wait().unwrap();
    }
    assert_eq!(dst, [4, 5, 6, 7, 8, 9, 10, 11]);
    // SAFETY: refused before anything is enqueued.
    let null = unsafe { Command::buffer_read_host(&ctx, &buffer, 0, 4, std::ptr::null_mut()) };
    assert!(matches!(null, Err(UrError::InvalidNullPointer(_))));
}

#[test]
fn refuses_commands_of_another_context() {
    let (ctx, _) = setup();
    let (other, foreign) = setup();
    let usm = UsmAllocation::new(&ctx, UsmKind::Device, 64).unwrap();
    let there = UsmAllocation::new(&other, UsmKind::Device, 64).unwrap();
    let fill = Command::usm_fill(&ctx, usm.ptr(), &[7], 64).unwrap();
    assert!(matches!(foreign.enqueue(fill, &[]), Err(UrError::InvalidContext(_))));
    // A copy between contexts is a peer copy (`usm_copy_peer`), not a command of either.
    let between = Command::usm_copy_between(&usm.usm_ref(), &there.usm_ref(), 64).unwrap();
    assert!(matches!(foreign.enqueue(between, &[]), Err(UrError::InvalidContext(_))));
}
