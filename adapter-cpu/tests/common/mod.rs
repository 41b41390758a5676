//! Kernels and helpers shared by the CPU adapter's tests.

#![allow(dead_code)]

use cmdbuf_core::{
    ArgKind, Context, Kernel, KernelSignature, NativeKernel, Program, ProgramBundle, ProgramSource, Queue,
    QueueProperties, UsmPtr, WorkGroup,
};

pub fn boom(g: &WorkGroup<'_>) {
    if g.group_id(0) == g.num_groups(0) - 1 {
        panic!("boom in group {}", g.group_id(0));
    }
}

pub fn increment(g: &WorkGroup<'_>) {
    let p = g.ptr::<u32>(0);
    for item in g.items() {
        // SAFETY: the tests launch over allocations with one u32 per work-item.
        unsafe { *p.add(item.global_id(0)) += 1 };
    }
}

pub fn program(context: &Context) -> Program {
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new("boom", []))
        .kernel(KernelSignature::new("increment", [ArgKind::Global]))
        .source(ProgramSource::Native(vec![
            NativeKernel::new("boom", boom),
            NativeKernel::new("increment", increment),
        ]));
    Program::new(context, &bundle).unwrap()
}

pub fn setup(device: &cmdbuf_core::Device) -> (Context, Queue, Kernel, Kernel) {
    let context = Context::new(device).unwrap();
    let queue = Queue::new(&context, QueueProperties::default()).unwrap();
    let program = program(&context);
    (context, queue, Kernel::new(&program, "boom").unwrap(), Kernel::new(&program, "increment").unwrap())
}

pub fn read_u32(queue: &Queue, ptr: UsmPtr, n: usize) -> Vec<u32> {
    let mut out = vec![0u32; n];
    queue.read_usm(ptr, bytemuck_cast(&mut out), &[]).unwrap();
    out
}

fn bytemuck_cast(v: &mut [u32]) -> &mut [u8] {
    // SAFETY: u32 has no padding and any byte pattern is a valid u32.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), v.len() * 4) }
}
