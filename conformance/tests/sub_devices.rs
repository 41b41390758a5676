//! The multi-device graph cases over two sub-devices of the CPU device:
//! two devices of one adapter with native command buffers, whose contexts
//! wait for each other's events and compose into one submission
//! (`graph_multi_device::one_submission`), so the composed path runs on a
//! machine without GPUs. Sub-devices of one core each; a device that cannot
//! be partitioned so fails here rather than skipping (every CPU has a core
//! per sub-device to give, and CI machines have two at least).

use cmdbuf::{Backend, CommandBufferSupport, Context, Partition};
use cmdbuf_conformance::cases;
use cmdbuf_conformance::harness::CaseError;

#[test]
fn graph_multi_device_over_two_cpu_sub_devices() {
    let loader = cmdbuf::load().expect("adapters load");
    let cpu = loader.devices().into_iter().find(|d| d.backend() == Backend::Cpu).expect("the CPU adapter's device");
    let subs = cpu.partition(&Partition::ByCounts(vec![1, 1])).expect("two sub-devices of one core each");
    assert_eq!(subs.len(), 2);
    // What makes `one_submission` expect one submission here (else it
    // would check the partition-by-partition path).
    let (c0, c1) = (Context::new(&subs[0]).unwrap(), Context::new(&subs[1]).unwrap());
    assert!(c0.composes_with(&c1) && c1.composes_with(&c0));
    assert!(subs.iter().all(|d| d.info().command_buffer.support == CommandBufferSupport::Native));
    assert!(subs[0].peer_access(&subs[1]).unwrap().supported);
    let mut failures = Vec::new();
    for case in cases::graph_multi_device::cases() {
        match (case.body)(&subs) {
            Ok(()) => {}
            Err(CaseError::Skip(why)) => failures.push(format!("{}: skipped: {why}", case.name)),
            Err(e) => failures.push(format!("{}: {e:?}", case.name)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
