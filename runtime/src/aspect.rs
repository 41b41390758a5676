//! Device aspects of the graph extension: what SYCL's
//! `device::has(aspect::ext_oneapi_graph)` and
//! `device::has(aspect::ext_oneapi_limited_graph)` answer for a device,
//! derived from cmdbuf-core's command-buffer capabilities
//! ([`CommandBufferCaps`]) the way DPC++ derives them from UR's
//! `UR_DEVICE_INFO_COMMAND_BUFFER_*_EXP` queries.
//!
//! | aspect | the device reports it when |
//! |---|---|
//! | `ext_oneapi_limited_graph` | it has command buffers, native or emulated: every API of the extension except executable-graph update runs on them |
//! | `ext_oneapi_graph` | it has `ext_oneapi_limited_graph`, its command buffers are native, and they update in place kernel arguments, local and global sizes and the global offset ([`FULL_GRAPH_UPDATES`]) |
//!
//! Every cmdbuf-core device has command buffers (cmdbuf-core emulates them where
//! the driver has none), so every device reports the limited aspect; an
//! emulated view of a device never reports the full one, since its "update"
//! is a software re-recording. A device reporting `ext_oneapi_graph` also
//! reports `ext_oneapi_limited_graph`, as the specification requires.
//!
//! The graph layer itself ([`crate::graph`]) does not refuse anything on a
//! device with only the limited aspect: an update that the device cannot
//! make in place records the partition's command buffer again. The aspects
//! tell an application what the device does natively.
//!
//! ```
//! use cmdbuf_runtime::aspect::{Aspect, device_has};
//! # let device = cmdbuf_cpu::default_device();
//! assert!(device_has(&device, Aspect::ExtOneapiLimitedGraph));
//! assert!(device_has(&device, Aspect::ExtOneapiGraph)); // the CPU adapter updates in place
//! assert!(!device_has(&device.emulated(), Aspect::ExtOneapiGraph));
//! ```

use cmdbuf_core::device::{CommandBufferCaps, CommandBufferSupport, Device, UpdateCapabilities, UsmKinds};
use cmdbuf_core::memory::UsmKind;

/// The graph extension's device aspects (`sycl::aspect`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Aspect {
    /// `aspect::ext_oneapi_graph`: every API of the extension, update included.
    ExtOneapiGraph,
    /// `aspect::ext_oneapi_limited_graph`: every API but executable-graph update.
    ExtOneapiLimitedGraph,
}

impl Aspect {
    /// The SYCL name, e.g. `ext_oneapi_graph`.
    pub fn name(self) -> &'static str {
        match self {
            Aspect::ExtOneapiGraph => "ext_oneapi_graph",
            Aspect::ExtOneapiLimitedGraph => "ext_oneapi_limited_graph",
        }
    }
}

/// The in-place updates a device's command buffers must make for
/// `ext_oneapi_graph` (those DPC++ requires; switching kernels is not
/// among them).
pub const FULL_GRAPH_UPDATES: UpdateCapabilities = UpdateCapabilities::KERNEL_ARGUMENTS
    .union(UpdateCapabilities::LOCAL_WORK_SIZE)
    .union(UpdateCapabilities::GLOBAL_WORK_SIZE)
    .union(UpdateCapabilities::GLOBAL_WORK_OFFSET);

/// Whether command buffers with capabilities `caps` give `aspect` (the rule
/// of the [module documentation](self)).
pub fn caps_have(caps: &CommandBufferCaps, aspect: Aspect) -> bool {
    match aspect {
        // cmdbuf-core gives every device command buffers.
        Aspect::ExtOneapiLimitedGraph => true,
        Aspect::ExtOneapiGraph => {
            caps.support == CommandBufferSupport::Native && caps.update.contains(FULL_GRAPH_UPDATES)
        }
    }
}

/// `device::has(aspect)` for the graph extension's aspects.
pub fn device_has(device: &Device, aspect: Aspect) -> bool {
    caps_have(&device.info().command_buffer, aspect)
}

/// The bit of a device's USM capabilities that says it can allocate `kind`
/// (the memory pools and the graphs ask it before allocating).
pub(crate) fn usm_flag(kind: UsmKind) -> UsmKinds {
    match kind {
        UsmKind::Host => UsmKinds::HOST,
        UsmKind::Device => UsmKinds::DEVICE,
        UsmKind::Shared => UsmKinds::SHARED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cmdbuf_core::device::ReplayPath;

    fn caps(support: CommandBufferSupport, update: UpdateCapabilities) -> CommandBufferCaps {
        CommandBufferCaps { support, update, events: true, subgraphs: false, replay_path: ReplayPath::Driver }
    }

    #[test]
    fn full_needs_native_buffers_and_the_four_updates() {
        let native = CommandBufferSupport::Native;
        assert!(caps_have(&caps(native, FULL_GRAPH_UPDATES), Aspect::ExtOneapiGraph));
        assert!(caps_have(&caps(native, UpdateCapabilities::all()), Aspect::ExtOneapiGraph));
        let no_offset = FULL_GRAPH_UPDATES - UpdateCapabilities::GLOBAL_WORK_OFFSET;
        assert!(!caps_have(&caps(native, no_offset), Aspect::ExtOneapiGraph));
        assert!(!caps_have(&caps(native, UpdateCapabilities::empty()), Aspect::ExtOneapiGraph));
        assert!(!caps_have(&caps(CommandBufferSupport::Emulated, UpdateCapabilities::all()), Aspect::ExtOneapiGraph));
    }

    #[test]
    fn limited_is_implied_by_full_and_always_present() {
        for support in [CommandBufferSupport::Native, CommandBufferSupport::Emulated] {
            for update in [UpdateCapabilities::empty(), FULL_GRAPH_UPDATES, UpdateCapabilities::all()] {
                let c = caps(support, update);
                assert!(caps_have(&c, Aspect::ExtOneapiLimitedGraph));
                assert!(!caps_have(&c, Aspect::ExtOneapiGraph) || caps_have(&c, Aspect::ExtOneapiLimitedGraph));
            }
        }
    }
}
