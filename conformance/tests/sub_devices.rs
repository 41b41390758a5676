//! The multi-device graph and collective cases over two sub-devices of the
//! CPU device: two devices of one adapter with native command buffers, whose contexts
//! wait for each other's events and compose into one submission
//! (`graph_multi_device::one_submission`), so the composed path runs on a
//! machine without GPUs. Sub-devices of one core each; a device that cannot
//! be partitioned so fails here rather than skipping (every CPU has a core
//! per sub-device to give, and CI machines have two at least).

use cmdbuf::{Backend, CommandBufferSupport, Context, Partition};
use cmdbuf_conformance::cases;
use cmdbuf_conformance::harness::CaseError;

/// Two sub-devices of one core each of the CPU adapter's device.
fn two_cpu_sub_devices() -> Vec<cmdbuf::Device> {
    let loader = cmdbuf::load().expect("adapters load");
    let cpu = loader.devices().into_iter().find(|d| d.backend() == Backend::Cpu).expect("the CPU adapter's device");
    let subs = cpu.partition(&Partition::ByCounts(vec![1, 1])).expect("two sub-devices of one core each");
    assert_eq!(subs.len(), 2);
    subs
}

/// Runs `cases` over `devices`, failing with every case that did not pass.
fn run_all(cases: Vec<cmdbuf_conformance::cases::buffers::CrossCase>, devices: &[cmdbuf::Device]) {
    let mut failures = Vec::new();
    for case in cases {
        match (case.body)(devices) {
            Ok(()) => {}
            Err(CaseError::Skip(why)) => failures.push(format!("{}: skipped: {why}", case.name)),
            Err(e) => failures.push(format!("{}: {e:?}", case.name)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn graph_multi_device_over_two_cpu_sub_devices() {
    let subs = two_cpu_sub_devices();
    // What makes `one_submission` expect one submission here (else it
    // would check the partition-by-partition path).
    let (c0, c1) = (Context::new(&subs[0]).unwrap(), Context::new(&subs[1]).unwrap());
    assert!(c0.composes_with(&c1) && c1.composes_with(&c0));
    assert!(subs.iter().all(|d| d.info().command_buffer.support == CommandBufferSupport::Native));
    assert!(subs[0].peer_access(&subs[1]).unwrap().supported);
    run_all(cases::graph_multi_device::cases(), &subs);
}

/// The collective cases over two devices whose contexts wait for each
/// other's events (staged through the host on the CPU adapter): their
/// wait-list check then takes the branch that accepts an event of the other
/// rank's context, as over two CUDA GPUs; between backends it refuses.
#[test]
fn collectives_over_two_cpu_sub_devices() {
    let subs = two_cpu_sub_devices();
    let (c0, c1) = (Context::new(&subs[0]).unwrap(), Context::new(&subs[1]).unwrap());
    assert!(c0.waits_on_events_of(&c1) && c1.waits_on_events_of(&c0));
    run_all(cases::collectives::cases(), &subs);
}
