//! What a device reports about itself (`urDeviceGetInfo`), checked against
//! what the device does: allocations honour the base alignment it states,
//! its timestamp pair lies on the clock of its profiling timestamps
//! (`urDeviceGetGlobalTimestamps`), and binaries are selected by the
//! formats it runs (`urDeviceSelectBinary`).

use cmdbuf::{
    BinaryTarget, MemoryOrders, QueueProperties, SourceForm, UsmAllocation, UsmKind, UsmKinds, host_clock_ns,
};

use crate::harness::{CaseResult, Env, Requires};
use crate::{cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["device";
        info_is_coherent,
        allocations_honour_the_base_alignment,
        global_timestamps_bracket_profiled_commands => Requires::PROFILING,
        binaries_are_selected_by_what_the_device_runs,
    ]
}

/// Values that depend on each other agree: vector widths and sub-groups
/// with the precisions and work-group limits, atomics with their orders,
/// free memory with total memory.
fn info_is_coherent(env: &Env) -> CaseResult {
    let info = env.device().info();
    check!(!info.fp.single.is_empty(), "no single-precision capabilities");
    for widths in [&info.preferred_vector_widths, &info.native_vector_widths] {
        check_eq!(widths.double == 0, info.fp.double.is_empty(), "double vector width {widths:?}");
        check_eq!(widths.half == 0, info.fp.half.is_empty(), "half vector width {widths:?}");
        check!(widths.char >= 1 && widths.int >= 1 && widths.float >= 1, "vector widths {widths:?}");
    }
    // Every device runs sub-groups, of one work-item where it has none of
    // its own: never an empty list or a zero count.
    let sg = &info.sub_groups;
    check!(!sg.sizes.is_empty(), "no sub-group sizes");
    for size in &sg.sizes {
        check!(*size >= 1 && *size as usize <= info.max_work_group_size, "sub-group size {size}");
    }
    let smallest = sg.sizes.iter().copied().min().unwrap_or(1).max(1) as usize;
    check!(sg.max_per_work_group >= 1, "no sub-groups per work-group");
    check!(
        sg.max_per_work_group as usize <= info.max_work_group_size.div_ceil(smallest),
        "{} sub-groups of {smallest} in a work-group of at most {}",
        sg.max_per_work_group,
        info.max_work_group_size
    );
    for orders in [info.atomics.memory_orders, info.atomics.fence_orders] {
        check!(orders.contains(MemoryOrders::RELAXED), "atomic orders {orders:?} without relaxed");
    }
    check!(info.mem_base_addr_align_bits >= 8 && info.mem_base_addr_align_bits.is_power_of_two());
    check!(info.max_work_groups.iter().all(|n| *n >= 1), "work-group counts {:?}", info.max_work_groups);
    check!(info.profiling_timer_resolution_ns >= 1);
    check!(info.max_parameter_size >= 256, "parameters of {} bytes at most", info.max_parameter_size);
    if let Some(line) = info.global_mem_cache.line_size {
        check!(line.is_power_of_two(), "cache line of {line} bytes");
    }
    if let Some(free) = env.device().free_memory()? {
        check!(free <= info.global_mem_size, "{free} bytes free of {}", info.global_mem_size);
    }
    check!(!info.version.is_empty());
    if info.integrated_gpu {
        check!(info.host_unified_memory, "an integrated GPU without unified memory");
    }
    Ok(())
}

/// USM of every kind, allocated with the default alignment, starts at a
/// multiple of `mem_base_addr_align_bits`.
fn allocations_honour_the_base_alignment(env: &Env) -> CaseResult {
    let info = env.device().info();
    let align = u64::from(info.mem_base_addr_align_bits / 8);
    for (kind, present) in [
        (UsmKind::Device, info.usm.contains(UsmKinds::DEVICE)),
        (UsmKind::Host, info.usm.contains(UsmKinds::HOST)),
        (UsmKind::Shared, info.usm.contains(UsmKinds::SHARED)),
    ] {
        if !present {
            continue;
        }
        // Odd sizes, so that an allocator packing small blocks would show.
        let allocations = [1, 3, 4097]
            .iter()
            .map(|size| UsmAllocation::new(env.context(), kind, *size))
            .collect::<Result<Vec<_>, _>>()?;
        for a in &allocations {
            check_eq!(a.ptr().addr() % align, 0, "{kind:?} USM at {:#x}, base alignment {align}", a.ptr().addr());
        }
    }
    Ok(())
}

/// A command profiled between two readings of the device's timestamp pair
/// starts and ends between their device times; host times advance with
/// them, and the host clock alone reads no earlier than the pair.
///
/// The slack allows for the CUDA adapter's `f32` event times; clocks of
/// another origin or unit would be off by far more.
fn global_timestamps_bracket_profiled_commands(env: &Env) -> CaseResult {
    const SLACK_NS: u64 = 100_000;
    let device = env.device();
    let queue = env.queue_with(QueueProperties { out_of_order: false, profiling: true })?;
    let mem = env.usm(UsmKind::Device, 1 << 20)?;
    // Started once, so that the device is awake and the adapter's clock set up.
    queue.usm_fill(mem.ptr(), &[1], 1 << 20, &[])?.wait()?;

    let before = device.global_timestamps()?;
    let fill = queue.usm_fill(mem.ptr(), &[7], 1 << 20, &[])?;
    fill.wait()?;
    let after = device.global_timestamps()?;
    let host_only = host_clock_ns();
    let p = fill.profiling_info()?;
    check!(
        before.device <= p.start + SLACK_NS && p.end <= after.device + SLACK_NS,
        "device clock {} .. {}, the fill ran {} .. {}",
        before.device,
        after.device,
        p.start,
        p.end
    );
    check!(after.device > before.device, "the device clock stood still: {before:?} {after:?}");
    check!(after.host > before.host, "the host clock stood still: {before:?} {after:?}");
    check!(host_only >= after.host, "host clock {host_only} before the pair's {}", after.host);
    Ok(())
}

/// Among binaries for every UR target, the device takes the first of its
/// preferred formats; with none of its formats, `InvalidBinary`; with no
/// binaries, `InvalidSize`. What it selects is what it builds: a device
/// runs `spir`/`spir64` binaries exactly when it builds OpenCL-flavour
/// SPIR-V, and then reports an IL version naming SPIR-V.
fn binaries_are_selected_by_what_the_device_runs(env: &Env) -> CaseResult {
    let device = env.device();
    let info = device.info();
    let preferred = &info.binary_targets;
    let builds_spirv = info.source_forms.contains(&SourceForm::SpirvKernel);
    let runs_spir = preferred.iter().any(|t| matches!(t, BinaryTarget::Spirv32 | BinaryTarget::Spirv64));
    check_eq!(runs_spir, builds_spirv, "spir targets {preferred:?} for source forms {:?}", info.source_forms);
    if builds_spirv {
        let il = info.il_version.as_deref().unwrap_or("");
        check!(il.contains("SPIR-V"), "builds SPIR-V with IL version {il:?}");
    }
    let mut all: Vec<&str> = BinaryTarget::ALL.iter().map(|t| t.name()).collect();
    all.insert(0, "<unknown>");
    match preferred.first() {
        Some(first) => {
            let index = device.select_binary(&all)?;
            check_eq!(all[index], first.name());
        }
        None => check_err!(device.select_binary(&all), InvalidBinary),
    }
    let others: Vec<&str> = all.iter().copied().filter(|t| !preferred.iter().any(|p| p.name() == *t)).collect();
    check_err!(device.select_binary(&others), InvalidBinary);
    check_err!(device.select_binary::<&str>(&[]), InvalidSize);
    Ok(())
}
