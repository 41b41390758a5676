//! Extension versions and the `cl_khr_command_buffer` ABI they imply.
//!
//! The command-buffer extension is provisional and its entry points changed
//! shape between patch versions, so the adapter reads the version a device
//! reports in `CL_DEVICE_EXTENSIONS_WITH_VERSION` and picks the behaviour from
//! [`ABI_TABLE`]: one row per version that changed something the adapter
//! depends on. Everything here is pure data and parsing, unit-tested with
//! constructed inputs; `ffi` resolves the entry points for the chosen shape.

use std::fmt;

/// A version as OpenCL encodes it in a `cl_version`: 10 bits major, 10 bits
/// minor, 12 bits patch.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExtVersion {
    /// Major version.
    pub major: u16,
    /// Minor version.
    pub minor: u16,
    /// Patch version.
    pub patch: u16,
}

impl ExtVersion {
    /// A version from its parts.
    pub const fn new(major: u16, minor: u16, patch: u16) -> ExtVersion {
        ExtVersion { major, minor, patch }
    }

    /// Decodes a `cl_version`.
    pub const fn from_cl(v: u32) -> ExtVersion {
        ExtVersion { major: (v >> 22) as u16, minor: ((v >> 12) & 0x3ff) as u16, patch: (v & 0xfff) as u16 }
    }

    /// Encodes as a `cl_version`.
    pub const fn to_cl(self) -> u32 {
        ((self.major as u32 & 0x3ff) << 22) | ((self.minor as u32 & 0x3ff) << 12) | (self.patch as u32 & 0xfff)
    }
}

impl fmt::Display for ExtVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// Size of one `cl_name_version` entry: a `cl_version` and a 64-byte name.
const NAME_VERSION_SIZE: usize = 4 + 64;

/// Parses the value of `CL_DEVICE_EXTENSIONS_WITH_VERSION` (an array of
/// `cl_name_version`) into names and versions. A trailing partial entry is
/// ignored; names end at their first NUL.
pub fn parse_extensions_with_version(bytes: &[u8]) -> Vec<(String, ExtVersion)> {
    bytes
        .chunks_exact(NAME_VERSION_SIZE)
        .map(|entry| {
            let version = u32::from_ne_bytes([entry[0], entry[1], entry[2], entry[3]]);
            let name = &entry[4..];
            let end = name.iter().position(|b| *b == 0).unwrap_or(name.len());
            (String::from_utf8_lossy(&name[..end]).into_owned(), ExtVersion::from_cl(version))
        })
        .collect()
}

/// The version of extension `name` in a parsed list.
pub fn extension_version(extensions: &[(String, ExtVersion)], name: &str) -> Option<ExtVersion> {
    extensions.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
}

/// The shape of the recording entry points (`clCommand*KHR`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RecordShape {
    /// 0.9.0 to 0.9.4: only `clCommandNDRangeKernelKHR` takes a properties
    /// list; the other commands take the command-buffer, the queue and then
    /// their own arguments.
    Legacy,
    /// 0.9.5 and later: every recording entry point takes a
    /// `const cl_command_properties_khr*` right after the queue.
    Properties,
}

/// What one range of `cl_khr_command_buffer` versions offers and requires.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct CommandBufferAbi {
    /// The version the row starts at.
    pub since: ExtVersion,
    /// Shape of the recording entry points.
    pub shape: RecordShape,
    /// `clCommandSVMMemcpyKHR` and `clCommandSVMMemFillKHR` exist (0.9.4).
    pub svm_commands: bool,
    /// A submitted command-buffer stays *pending* until it completes, and
    /// enqueueing it again while pending needs `CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR`
    /// (up to 0.9.7; 0.9.8 removed the pending state: a submission that waits
    /// for the previous ones is always valid).
    pub pending_state: bool,
    /// `CL_COMMAND_BUFFER_CAPABILITY_OUT_OF_ORDER_KHR` says whether recording
    /// on out-of-order queues works (up to 0.9.5; 0.9.6 replaced it by
    /// `CL_DEVICE_COMMAND_BUFFER_SUPPORTED_QUEUE_PROPERTIES_KHR`).
    pub out_of_order_capability_bit: bool,
}

/// The rows, oldest first; a version uses the last row it is not older than.
pub const ABI_TABLE: &[CommandBufferAbi] = &[
    CommandBufferAbi {
        since: ExtVersion::new(0, 9, 0),
        shape: RecordShape::Legacy,
        svm_commands: false,
        pending_state: true,
        out_of_order_capability_bit: true,
    },
    CommandBufferAbi {
        since: ExtVersion::new(0, 9, 4),
        shape: RecordShape::Legacy,
        svm_commands: true,
        pending_state: true,
        out_of_order_capability_bit: true,
    },
    CommandBufferAbi {
        since: ExtVersion::new(0, 9, 5),
        shape: RecordShape::Properties,
        svm_commands: true,
        pending_state: true,
        out_of_order_capability_bit: true,
    },
    CommandBufferAbi {
        since: ExtVersion::new(0, 9, 6),
        shape: RecordShape::Properties,
        svm_commands: true,
        pending_state: true,
        out_of_order_capability_bit: false,
    },
    CommandBufferAbi {
        since: ExtVersion::new(0, 9, 8),
        shape: RecordShape::Properties,
        svm_commands: true,
        pending_state: false,
        out_of_order_capability_bit: false,
    },
    // The ratified extension: 1.0.0 is 0.9.8 with the experimental status
    // dropped (OpenCL-Docs, September 2026), entry points and enums unchanged.
    CommandBufferAbi {
        since: ExtVersion::new(1, 0, 0),
        shape: RecordShape::Properties,
        svm_commands: true,
        pending_state: false,
        out_of_order_capability_bit: false,
    },
];

/// The ABI row for a device's `cl_khr_command_buffer` version, or `None` for
/// versions the adapter does not know: before 0.9.0, another experimental
/// minor version, or a major version after 1 (whose entry points may change
/// again). Such devices get the software command buffer. Within the ratified
/// major version 1, later minor versions only add (Khronos's versioning of
/// final extensions), so they use the 1.0 row.
pub fn select_abi(version: ExtVersion) -> Option<CommandBufferAbi> {
    let known = matches!((version.major, version.minor), (0, 9) | (1, _));
    if !known {
        return None;
    }
    ABI_TABLE.iter().rev().find(|row| row.since <= version).copied()
}

/// The oldest `cl_khr_command_buffer_mutable_dispatch` whose
/// `clUpdateMutableCommandsKHR` takes an array of configurations (0.9.2);
/// before it the configurations were a linked list of other structures.
pub const MUTABLE_DISPATCH_ARRAY_SINCE: ExtVersion = ExtVersion::new(0, 9, 2);

/// Whether the adapter can call a device's `clUpdateMutableCommandsKHR`:
/// the array shape of 0.9.2 to 0.9.x, or the ratified major version 1.
pub fn mutable_dispatch_known(version: ExtVersion) -> bool {
    match (version.major, version.minor) {
        (0, 9) => version >= MUTABLE_DISPATCH_ARRAY_SINCE,
        (1, _) => true,
        _ => false,
    }
}

/// The name of the command-buffer extension.
pub const COMMAND_BUFFER_EXTENSION: &str = "cl_khr_command_buffer";
/// The name of Intel's unified shared memory extension.
pub const USM_EXTENSION: &str = "cl_intel_unified_shared_memory";
/// The name of the mutable-dispatch extension layered on command buffers.
pub const MUTABLE_DISPATCH_EXTENSION: &str = "cl_khr_command_buffer_mutable_dispatch";

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, version: ExtVersion) -> Vec<u8> {
        let mut bytes = version.to_cl().to_ne_bytes().to_vec();
        let mut field = [0u8; 64];
        field[..name.len()].copy_from_slice(name.as_bytes());
        bytes.extend_from_slice(&field);
        bytes
    }

    #[test]
    fn cl_version_round_trips() {
        // PoCL 3.1 reports 0x9000 for 0.9.0, PoCL 5.0 0x9004 for 0.9.4.
        assert_eq!(ExtVersion::from_cl(0x9000), ExtVersion::new(0, 9, 0));
        assert_eq!(ExtVersion::from_cl(0x9004), ExtVersion::new(0, 9, 4));
        assert_eq!(ExtVersion::from_cl(0x400000), ExtVersion::new(1, 0, 0));
        assert_eq!(ExtVersion::from_cl(0x801000), ExtVersion::new(2, 1, 0));
        for v in [ExtVersion::new(0, 9, 8), ExtVersion::new(3, 0, 11), ExtVersion::new(1023, 1023, 4095)] {
            assert_eq!(ExtVersion::from_cl(v.to_cl()), v);
        }
        assert_eq!(ExtVersion::new(0, 9, 5).to_string(), "0.9.5");
    }

    #[test]
    fn parses_name_version_arrays() {
        let mut bytes = entry("cl_khr_fp64", ExtVersion::new(1, 0, 0));
        bytes.extend(entry(COMMAND_BUFFER_EXTENSION, ExtVersion::new(0, 9, 0)));
        bytes.extend(entry("x".repeat(64).as_str(), ExtVersion::new(2, 0, 0)));
        bytes.extend([1, 2, 3]); // a truncated entry is ignored
        let parsed = parse_extensions_with_version(&bytes);
        assert_eq!(parsed.len(), 3);
        assert_eq!(parsed[0], ("cl_khr_fp64".to_string(), ExtVersion::new(1, 0, 0)));
        assert_eq!(extension_version(&parsed, COMMAND_BUFFER_EXTENSION), Some(ExtVersion::new(0, 9, 0)));
        assert_eq!(parsed[2].0.len(), 64, "a name filling the whole field has no NUL");
        assert_eq!(extension_version(&parsed, USM_EXTENSION), None);
        assert!(parse_extensions_with_version(&[]).is_empty());
    }

    #[test]
    fn abi_rows_follow_the_version_history() {
        let v = |p| select_abi(ExtVersion::new(0, 9, p)).expect("known version");
        // PoCL 3.1 (Debian bookworm): the first shape, no SVM commands.
        assert_eq!(v(0).shape, RecordShape::Legacy);
        assert!(!v(0).svm_commands && v(0).pending_state);
        assert_eq!(v(3), v(0));
        // PoCL 5.0: still the old shape, SVM commands added.
        assert_eq!(v(4).shape, RecordShape::Legacy);
        assert!(v(4).svm_commands);
        // Every recording entry point takes properties from 0.9.5.
        for p in 5..=12 {
            assert_eq!(v(p).shape, RecordShape::Properties, "0.9.{p}");
            assert!(v(p).svm_commands);
        }
        assert!(v(5).out_of_order_capability_bit && !v(6).out_of_order_capability_bit);
        assert!(v(7).pending_state && !v(8).pending_state);
        assert_eq!(v(12), v(8), "later patches use the newest row");
    }

    /// Intel's OpenCL CPU runtime 2026.2: the ratified 1.0.0, the 0.9.8 shape.
    #[test]
    fn version_1_is_the_final_shape() {
        let final_row = select_abi(ExtVersion::new(1, 0, 0)).expect("1.0.0 is known");
        let last_experimental = select_abi(ExtVersion::new(0, 9, 8)).expect("0.9.8 is known");
        assert_eq!(final_row.since, ExtVersion::new(1, 0, 0));
        assert_eq!(
            (final_row.shape, final_row.svm_commands, final_row.pending_state, final_row.out_of_order_capability_bit),
            (
                last_experimental.shape,
                last_experimental.svm_commands,
                last_experimental.pending_state,
                last_experimental.out_of_order_capability_bit
            )
        );
        assert_eq!(select_abi(ExtVersion::new(1, 2, 3)), Some(final_row), "minor versions of 1 only add");
    }

    #[test]
    fn unknown_versions_are_rejected() {
        for v in
            [ExtVersion::new(0, 8, 9), ExtVersion::new(0, 10, 0), ExtVersion::new(2, 0, 0), ExtVersion::new(0, 0, 0)]
        {
            assert_eq!(select_abi(v), None, "{v}");
        }
    }

    #[test]
    fn mutable_dispatch_versions() {
        assert!(!mutable_dispatch_known(ExtVersion::new(0, 9, 0)), "linked-list configurations");
        assert!(!mutable_dispatch_known(ExtVersion::new(0, 9, 1)));
        // Intel's OpenCL CPU runtime 2026.2 reports 0.9.3.
        for v in
            [ExtVersion::new(0, 9, 2), ExtVersion::new(0, 9, 3), ExtVersion::new(0, 9, 5), ExtVersion::new(1, 0, 0)]
        {
            assert!(mutable_dispatch_known(v), "{v}");
        }
        assert!(!mutable_dispatch_known(ExtVersion::new(2, 0, 0)));
        assert!(!mutable_dispatch_known(ExtVersion::new(0, 10, 0)));
    }

    #[test]
    fn table_is_sorted() {
        assert!(ABI_TABLE.windows(2).all(|w| w[0].since < w[1].since));
    }
}
