//! Every enumerator of `ur_device_info_t` in the wheel's `ur_api.h`, asked
//! of the CPU device through the dispatch table's entry points: answered
//! with the size of its C type, or refused where the header marks it
//! optional; and the C program `harness/c/device_info.c` asks exactly those.
//! Without the wheel's header (`scripts/oneapi-venv.sh`) the two checks that
//! read it are listed ignored with the reason, and fail when run anyway
//! (`--include-ignored`) or when `UR_RS_REQUIRE_ONEAPI=1` (set by CI).

use std::ffi::c_void;
use std::path::{Path, PathBuf};

use cmdbuf_abi::sys::*;
use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    let args = Arguments::from_args();
    let required = std::env::var_os("UR_RS_REQUIRE_ONEAPI").is_some_and(|v| v == "1");
    let header = oneapi_header();
    let with_header = |name: &'static str, test: fn(&str)| match &header {
        Ok(text) => {
            let text = text.clone();
            Trial::test(name, move || {
                test(&text);
                Ok(())
            })
        }
        Err(why) => {
            println!("ignored {name}: {why}");
            let prefix = if required { "UR_RS_REQUIRE_ONEAPI=1 but " } else { "cannot run here: " };
            let why = format!("{prefix}{why}");
            Trial::test(name, move || Err(Failed::from(why))).with_ignored_flag(!required)
        }
    };
    let trials = vec![
        Trial::test("the_header_parses", || {
            the_header_parses();
            Ok(())
        }),
        with_header("the_c_table_is_the_header_enumeration", the_c_table_is_the_header_enumeration),
        with_header(
            "every_query_of_the_header_is_answered_or_optional",
            every_query_of_the_header_is_answered_or_optional,
        ),
    ];
    libtest_mimic::run(&args, trials).exit();
}

/// The wheel's `ur_api.h`, or why it cannot be read.
fn oneapi_header() -> Result<String, String> {
    let prefix = match std::env::var_os("UR_RS_ONEAPI") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../.oneapi"),
    };
    let path = prefix.join("include/unified-runtime/ur_api.h");
    std::fs::read_to_string(&path)
        .map_err(|e| format!("{} cannot be read ({e}); run scripts/oneapi-venv.sh", path.display()))
}

/// The CPU adapter's device, through the dispatch table.
fn cpu_device() -> ur_device_handle_t {
    cmdbuf_abi::register_factory(&cmdbuf_cpu::CpuAdapterFactory);
    let table = cmdbuf_abi::tables::dispatch_table();
    let mut adapter: ur_adapter_handle_t = std::ptr::null_mut();
    let mut platform: ur_platform_handle_t = std::ptr::null_mut();
    let mut device: ur_device_handle_t = std::ptr::null_mut();
    let (adapter_get, platform_get, device_get) = (
        table.Adapter.pfnGet.expect("urAdapterGet"),
        table.Platform.pfnGet.expect("urPlatformGet"),
        table.Device.pfnGet.expect("urDeviceGet"),
    );
    // SAFETY: each out-parameter is one writable handle.
    unsafe {
        assert_eq!(adapter_get(1, &mut adapter, std::ptr::null_mut()), ur_result_t::UR_RESULT_SUCCESS);
        assert_eq!(platform_get(adapter, 1, &mut platform, std::ptr::null_mut()), ur_result_t::UR_RESULT_SUCCESS);
        assert_eq!(
            device_get(platform, ur_device_type_t::UR_DEVICE_TYPE_ALL, 1, &mut device, std::ptr::null_mut()),
            ur_result_t::UR_RESULT_SUCCESS
        );
    }
    device
}

/// `urDeviceGetInfo` through the dispatch table: its result and the size it reports.
fn get_info(device: ur_device_handle_t, name: u32, buffer: Option<&mut [u8]>) -> (ur_result_t, usize) {
    let get = cmdbuf_abi::tables::dispatch_table().Device.pfnGetInfo.expect("urDeviceGetInfo");
    let mut size = usize::MAX;
    let (len, ptr) = match buffer {
        Some(b) => (b.len(), b.as_mut_ptr().cast::<c_void>()),
        None => (0, std::ptr::null_mut()),
    };
    // SAFETY: `ptr` is null (only the size is written) or holds `len` writable bytes.
    let result = unsafe { get(device, ur_device_info_t(name), len, ptr, &mut size) };
    (result, size)
}

/// One `ur_device_info_t` enumerator of the header.
#[derive(Clone, Debug, PartialEq, Eq)]
struct HeaderQuery {
    name: String,
    value: u32,
    /// The C type in the comment's first brackets: `uint32_t`,
    /// `::ur_bool_t`, `size_t[]`, `size_t[3]`, `char[]`.
    c_type: String,
    optional: bool,
}

/// The text inside the first balanced `[...]` of `line`.
fn first_brackets(line: &str) -> Option<&str> {
    let start = line.find('[')?;
    let mut depth = 0;
    for (i, c) in line[start..].char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&line[start + 1..start + i]);
                }
            }
            _ => {}
        }
    }
    None
}

fn parse_value(text: &str) -> Option<u32> {
    match text.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// The enumerators of `typedef enum ur_device_info_t` with the type and
/// optionality their comments give.
fn header_queries(header: &str) -> Vec<HeaderQuery> {
    let body = header
        .split_once("typedef enum ur_device_info_t {")
        .and_then(|(_, rest)| rest.split_once("} ur_device_info_t;"))
        .map(|(body, _)| body)
        .expect("ur_api.h defines ur_device_info_t");
    let mut out = Vec::new();
    let mut comment = String::new();
    for line in body.lines().map(str::trim) {
        if let Some(text) = line.strip_prefix("///") {
            comment.push_str(text);
            comment.push(' ');
            continue;
        }
        if let Some((lhs, rhs)) = line.split_once('=') {
            let name = lhs.split_whitespace().next().unwrap_or_default().to_string();
            let value = rhs.trim().trim_end_matches(',').trim();
            if name.starts_with("UR_DEVICE_INFO_") && name != "UR_DEVICE_INFO_FORCE_UINT32" {
                let c_type = first_brackets(&comment).unwrap_or_else(|| panic!("{name} has no type")).to_string();
                out.push(HeaderQuery {
                    value: parse_value(value).unwrap_or_else(|| panic!("{name} = {value}")),
                    optional: comment.contains("[optional-query]"),
                    name,
                    c_type,
                });
            }
        }
        comment.clear();
    }
    out
}

/// What an answer of a C type must look like.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Shape {
    /// Exactly this many bytes.
    Exact(usize),
    /// A multiple of this element size (possibly none).
    Array(usize),
    /// A NUL-terminated string.
    String,
}

fn c_size(name: &str) -> Option<usize> {
    let name = name.trim_start_matches("::");
    Some(match name {
        "uint8_t" => 1,
        "int32_t" | "uint32_t" => 4,
        "uint64_t" => 8,
        "size_t" => size_of::<usize>(),
        "ur_bool_t" => size_of::<ur_bool_t>(),
        "ur_device_partition_property_t" => size_of::<ur_device_partition_property_t>(),
        n if n.ends_with("_handle_t") => size_of::<*mut c_void>(),
        // Flags are `uint32_t`; enumerations are C enums of `int` size.
        n if n.ends_with("_flags_t") || n.ends_with("_flag_t") => 4,
        "ur_device_type_t" | "ur_device_mem_cache_type_t" | "ur_device_local_mem_type_t" | "ur_device_partition_t" => {
            size_of::<ur_device_type_t>()
        }
        _ => return None,
    })
}

fn shape(c_type: &str) -> Shape {
    if c_type == "char[]" {
        return Shape::String;
    }
    if let Some(elem) = c_type.strip_suffix("[]") {
        return Shape::Array(c_size(elem).unwrap_or_else(|| panic!("unknown C type {elem}")));
    }
    if let Some((elem, count)) = c_type.strip_suffix(']').and_then(|t| t.split_once('[')) {
        let count: usize = count.parse().expect("an array length");
        return Shape::Exact(c_size(elem).unwrap_or_else(|| panic!("unknown C type {elem}")) * count);
    }
    Shape::Exact(c_size(c_type).unwrap_or_else(|| panic!("unknown C type {c_type}")))
}

fn the_header_parses() {
    let header = "typedef enum ur_device_info_t {\n  /// [::ur_device_type_t] type\n  UR_DEVICE_INFO_TYPE = 0,\n  \
                  /// [size_t[3]] three\n  /// more text\n  UR_DEVICE_INFO_X = 0x2000,\n  \
                  /// [::ur_bool_t][deprecated-value] old\n  UR_DEVICE_INFO_OLD [[deprecated]] = 104,\n  \
                  /// [char[]][optional-query] text\n  UR_DEVICE_INFO_S = 65,\n  UR_DEVICE_INFO_FORCE_UINT32 = 0x7fffffff\n} ur_device_info_t;";
    let q = header_queries(header);
    let names: Vec<_> = q.iter().map(|q| (q.name.as_str(), q.value, q.c_type.as_str(), q.optional)).collect();
    assert_eq!(
        names,
        [
            ("UR_DEVICE_INFO_TYPE", 0, "::ur_device_type_t", false),
            ("UR_DEVICE_INFO_X", 0x2000, "size_t[3]", false),
            ("UR_DEVICE_INFO_OLD", 104, "::ur_bool_t", false),
            ("UR_DEVICE_INFO_S", 65, "char[]", true),
        ]
    );
    assert_eq!(shape("size_t[3]"), Shape::Exact(3 * size_of::<usize>()));
    assert_eq!(shape("::ur_device_handle_t[]"), Shape::Array(size_of::<usize>()));
    assert_eq!(shape("char[]"), Shape::String);
    assert_eq!(shape("::ur_queue_flags_t"), Shape::Exact(4));
}

/// The table entry `abi/harness/c/device_info.c` has for a query.
fn c_table_entry(q: &HeaderQuery) -> String {
    let optional = if q.optional { "OPTIONAL_" } else { "" };
    let c_type = q.c_type.trim_start_matches("::");
    let name = &q.name;
    if c_type == "char[]" {
        format!("{optional}STRING({name})")
    } else if let Some(elem) = c_type.strip_suffix("[]") {
        format!("{optional}ARRAY({name}, {elem})")
    } else if let Some((elem, count)) = c_type.strip_suffix(']').and_then(|t| t.split_once('[')) {
        format!("{optional}FIXED({name}, {elem}, {count})")
    } else {
        format!("{optional}SCALAR({name}, {c_type})")
    }
}

/// The C program that asks every query of every device through the
/// loader lists exactly the header's queries, with their types.
fn the_c_table_is_the_header_enumeration(header: &str) {
    let expected: Vec<String> = header_queries(header).iter().map(c_table_entry).collect();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/c/device_info.c");
    let source = std::fs::read_to_string(&path).expect("device_info.c");
    let table = source
        .split_once("static const urt_query queries[] = {")
        .and_then(|(_, rest)| rest.split_once("};"))
        .map(|(table, _)| table)
        .expect("the table of device_info.c");
    let listed: Vec<String> =
        table.lines().map(|l| l.trim().trim_end_matches(',').to_string()).filter(|l| !l.is_empty()).collect();
    assert_eq!(listed, expected, "regenerate the table of {} from ur_api.h", path.display());
}

fn every_query_of_the_header_is_answered_or_optional(header: &str) {
    let queries = header_queries(header);
    assert!(queries.len() > 180, "{} queries parsed", queries.len());
    let device = cpu_device();
    let mut refused = Vec::new();
    for q in &queries {
        let (result, size) = get_info(device, q.value, None);
        if result == ur_result_t::UR_RESULT_ERROR_UNSUPPORTED_ENUMERATION {
            assert!(q.optional, "{} is required but refused", q.name);
            refused.push(q.name.as_str());
            continue;
        }
        assert_eq!(result, ur_result_t::UR_RESULT_SUCCESS, "{}", q.name);
        match shape(&q.c_type) {
            Shape::Exact(bytes) => assert_eq!(size, bytes, "{} ({})", q.name, q.c_type),
            Shape::Array(elem) => assert_eq!(size % elem, 0, "{} ({}): {size} bytes", q.name, q.c_type),
            Shape::String => assert!(size >= 1, "{}: a string of {size} bytes", q.name),
        }
        if size == 0 {
            continue;
        }
        let mut value = vec![0xA5u8; size];
        let (result, _) = get_info(device, q.value, Some(&mut value));
        assert_eq!(result, ur_result_t::UR_RESULT_SUCCESS, "{}", q.name);
        if shape(&q.c_type) == Shape::String {
            assert_eq!(value.iter().position(|b| *b == 0), Some(size - 1), "{} is one NUL-terminated string", q.name);
        }
        if q.c_type == "::ur_bool_t" {
            assert!(value[0] <= 1, "{} = {}", q.name, value[0]);
        }
        let (result, _) = get_info(device, q.value, Some(&mut value[..size - 1]));
        assert_eq!(result, ur_result_t::UR_RESULT_ERROR_INVALID_SIZE, "{} with a short buffer", q.name);
    }
    // The CPU device knows no PCI address or UUID; nothing else it is
    // asked about is unknown to it except what is not CPU hardware.
    assert!(refused.contains(&"UR_DEVICE_INFO_PCI_ADDRESS") && refused.contains(&"UR_DEVICE_INFO_UUID"), "{refused:?}");
    assert!(!refused.contains(&"UR_DEVICE_INFO_GLOBAL_MEM_FREE"), "{refused:?}");

    // Every other value is outside the enumeration.
    let known: std::collections::HashSet<u32> = queries.iter().map(|q| q.value).collect();
    for value in (0..0xA000).chain([0x7fff_fff0, u32::MAX]).filter(|v| !known.contains(v)) {
        let (result, _) = get_info(device, value, None);
        assert_eq!(result, ur_result_t::UR_RESULT_ERROR_INVALID_ENUMERATION, "{value:#x}");
    }
}
