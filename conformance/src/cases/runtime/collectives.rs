//! Collectives over all selected devices (`cmdbuf::collective`), in the
//! multi-device section: every operation, reduction and element type with
//! exact results (integers, and floats holding small integers, which every
//! order of reduction gives exactly), in place and out of place, and the
//! typed errors. Over CUDA devices of one host they run NCCL where
//! `libnccl.so.2` loads (set `UR_RS_REQUIRE_NCCL=1` to fail instead of
//! staging through the host without it); elsewhere they are staged through
//! the host.

use cmdbuf::collective::{
    CollectiveOp, Communicator, DataType, Implementation, Rank, ReduceOp, f32_to_bf16, f32_to_f16,
};
use cmdbuf::{Context, Device, Event, Queue, QueueProperties, UsmAllocation, UsmKind, UsmKinds, UsmPtr};
use cmdbuf_runtime::graph::{FinalizeProperties, Graph, GraphProperties, NodeProperties, NodeType};

use super::cross::{CrossCase, first_usm_kind};
use crate::harness::{CaseError, CaseResult};
use crate::{check, check_eq, check_err};

/// Fail instead of staging through the host where CUDA devices have no NCCL.
pub const REQUIRE_NCCL_ENV: &str = "UR_RS_REQUIRE_NCCL";

/// The cases.
pub fn cases() -> Vec<CrossCase> {
    vec![
        CrossCase { name: "multi_device::collective_all_reduce", body: all_reduce },
        CrossCase { name: "multi_device::collective_all_gather", body: all_gather },
        CrossCase { name: "multi_device::collective_reduce_scatter", body: reduce_scatter },
        CrossCase { name: "multi_device::collective_broadcast", body: broadcast },
        CrossCase { name: "multi_device::collective_errors", body: errors },
        CrossCase { name: "multi_device::collective_graph", body: in_a_graph },
    ]
}

/// Elements per rank of the cases' calls.
const PER_RANK: usize = 96;

/// One rank: its context, a queue and the allocation kind it uses.
pub(crate) struct Member {
    pub(crate) context: Context,
    pub(crate) queue: Queue,
    kind: UsmKind,
}

impl Member {
    /// `bytes` bytes of the member's USM.
    pub(crate) fn alloc(&self, bytes: usize) -> Result<UsmAllocation, CaseError> {
        Ok(UsmAllocation::new(&self.context, self.kind, bytes)?)
    }

    /// Writes `data` at `alloc`'s start.
    pub(crate) fn put(&self, alloc: &UsmAllocation, data: &[u8]) -> CaseResult {
        Ok(self.queue.write_usm(alloc.ptr(), data, &[])?)
    }

    /// Reads `len` bytes at `alloc`'s start.
    pub(crate) fn get(&self, alloc: &UsmAllocation, len: usize) -> Result<Vec<u8>, CaseError> {
        let mut out = vec![0; len];
        self.queue.read_usm(alloc.ptr(), &mut out, &[])?;
        Ok(out)
    }
}

/// A member per device and their communicator: NCCL (or the adapter's
/// native collectives) where it has them, required over CUDA devices when
/// `UR_RS_REQUIRE_NCCL` is set.
pub(crate) fn group(devices: &[Device]) -> Result<(Vec<Member>, Communicator), CaseError> {
    let mut members = Vec::new();
    for device in devices {
        let kind =
            first_usm_kind(device).ok_or_else(|| CaseError::Skip(format!("{device} has no USM for collectives")))?;
        let context = Context::new(device)?;
        let queue = Queue::new(&context, QueueProperties::default())?;
        members.push(Member { context, queue, kind });
    }
    let contexts: Vec<&Context> = members.iter().map(|m| &m.context).collect();
    let all_cuda = devices.iter().all(|d| d.backend() == cmdbuf::Backend::Cuda);
    let required = all_cuda && std::env::var_os(REQUIRE_NCCL_ENV).is_some_and(|v| v != "0");
    let implementation = if required { Implementation::Native } else { Implementation::Auto };
    let comm = Communicator::with_implementation(&contexts, implementation)?;
    if comm.native_name().is_none()
        && let Some(d) = devices.iter().find(|d| !d.info().usm.intersects(UsmKinds::HOST | UsmKinds::SHARED))
    {
        return Err(CaseError::Skip(format!("{d} has neither host nor shared USM to stage collectives through")));
    }
    Ok((members, comm))
}

/// The bytes of `value` as a `dtype` element (small integers, exact in every type).
pub(crate) fn element(dtype: DataType, value: i64) -> Vec<u8> {
    match dtype {
        DataType::I8 => (value as i8).to_ne_bytes().to_vec(),
        DataType::U8 => (value as u8).to_ne_bytes().to_vec(),
        DataType::I32 => (value as i32).to_ne_bytes().to_vec(),
        DataType::U32 => (value as u32).to_ne_bytes().to_vec(),
        DataType::I64 => value.to_ne_bytes().to_vec(),
        DataType::U64 => (value as u64).to_ne_bytes().to_vec(),
        DataType::F16 => f32_to_f16(value as f32).to_ne_bytes().to_vec(),
        DataType::F32 => (value as f32).to_ne_bytes().to_vec(),
        DataType::F64 => (value as f64).to_ne_bytes().to_vec(),
        DataType::BF16 => f32_to_bf16(value as f32).to_ne_bytes().to_vec(),
    }
}

/// `values` as `dtype` elements.
pub(crate) fn elements(dtype: DataType, values: &[i64]) -> Vec<u8> {
    values.iter().flat_map(|v| element(dtype, *v)).collect()
}

/// Rank `rank`'s value at element `e`: 1, 2 or 3, varying by rank, so that
/// sums, products, minima and maxima of up to four ranks stay exact in i8
/// and bf16 and differ between elements. Signed types get a negative value
/// at every fifth element.
pub(crate) fn value(dtype: DataType, rank: usize, e: usize) -> i64 {
    let v = 1 + ((e + 2 * rank) % 3) as i64;
    let signed = matches!(
        dtype,
        DataType::I8 | DataType::I32 | DataType::I64 | DataType::F16 | DataType::F32 | DataType::F64 | DataType::BF16
    );
    if signed && e.is_multiple_of(5) { -v } else { v }
}

/// The expected reduction of every rank's element `e`, in the reduction's
/// order (rank 0 first), wrapped as the type wraps.
pub(crate) fn reduced(dtype: DataType, op: ReduceOp, ranks: usize, e: usize) -> i64 {
    let values = (0..ranks).map(|r| value(dtype, r, e));
    match op {
        ReduceOp::Sum => values.sum(),
        ReduceOp::Prod => values.product(),
        ReduceOp::Min => values.min().expect("a rank"),
        ReduceOp::Max => values.max().expect("a rank"),
    }
}

/// Waits for every rank's event.
fn wait_all(events: &[Event]) -> CaseResult {
    for e in events {
        e.wait()?;
    }
    Ok(())
}

/// Every element type and reduction, out of place then in place.
fn all_reduce(devices: &[Device]) -> CaseResult {
    let (members, comm) = group(devices)?;
    let n = members.len();
    let count = PER_RANK;
    for dtype in DataType::ALL {
        let bytes = count * dtype.size();
        let sends: Vec<UsmAllocation> = members.iter().map(|m| m.alloc(bytes)).collect::<Result<_, _>>()?;
        let recvs: Vec<UsmAllocation> = members.iter().map(|m| m.alloc(bytes)).collect::<Result<_, _>>()?;
        for op in ReduceOp::ALL {
            let expected = elements(dtype, &(0..count).map(|e| reduced(dtype, op, n, e)).collect::<Vec<_>>());
            for in_place in [false, true] {
                for (r, m) in members.iter().enumerate() {
                    let data = elements(dtype, &(0..count).map(|e| value(dtype, r, e)).collect::<Vec<_>>());
                    m.put(&sends[r], &data)?;
                }
                let ranks: Vec<Rank<'_>> = members
                    .iter()
                    .enumerate()
                    .map(|(r, m)| {
                        let recv = if in_place { &sends[r] } else { &recvs[r] };
                        Rank::new(&m.queue, sends[r].ptr(), recv.ptr())
                    })
                    .collect();
                wait_all(&comm.all_reduce(&ranks, count, dtype, op)?)?;
                for (r, m) in members.iter().enumerate() {
                    let recv = if in_place { &sends[r] } else { &recvs[r] };
                    check_eq!(m.get(recv, bytes)?, expected, "{dtype} {op} rank {r} in place {in_place}");
                }
            }
        }
    }
    Ok(())
}

/// Every element type, out of place and in place (each rank's send is its
/// own slot of the result).
fn all_gather(devices: &[Device]) -> CaseResult {
    let (members, comm) = group(devices)?;
    let n = members.len();
    let count = PER_RANK * n;
    for dtype in DataType::ALL {
        let esz = dtype.size();
        let expected = elements(dtype, &(0..count).map(|e| value(dtype, e / PER_RANK, e)).collect::<Vec<_>>());
        let part = |r: usize| {
            elements(dtype, &(r * PER_RANK..(r + 1) * PER_RANK).map(|e| value(dtype, r, e)).collect::<Vec<_>>())
        };
        for in_place in [false, true] {
            let recvs: Vec<UsmAllocation> = members.iter().map(|m| m.alloc(count * esz)).collect::<Result<_, _>>()?;
            let sends: Vec<UsmAllocation> =
                members.iter().map(|m| m.alloc(PER_RANK * esz)).collect::<Result<_, _>>()?;
            let mut ranks = Vec::new();
            for (r, m) in members.iter().enumerate() {
                if in_place {
                    let slot = recvs[r].ptr().byte_add(r * PER_RANK * esz);
                    m.queue.write_usm(slot, &part(r), &[])?;
                    ranks.push(Rank::new(&m.queue, slot, recvs[r].ptr()));
                } else {
                    m.put(&sends[r], &part(r))?;
                    ranks.push(Rank::new(&m.queue, sends[r].ptr(), recvs[r].ptr()));
                }
            }
            wait_all(&comm.all_gather(&ranks, count, dtype)?)?;
            for (r, m) in members.iter().enumerate() {
                check_eq!(m.get(&recvs[r], count * esz)?, expected, "{dtype} rank {r} in place {in_place}");
            }
        }
    }
    Ok(())
}

/// Every element type with every reduction, out of place and in place
/// (each rank's result lands in its own part of its send range).
fn reduce_scatter(devices: &[Device]) -> CaseResult {
    let (members, comm) = group(devices)?;
    let n = members.len();
    let count = PER_RANK * n;
    for dtype in DataType::ALL {
        let esz = dtype.size();
        for op in ReduceOp::ALL {
            for in_place in [false, true] {
                let sends: Vec<UsmAllocation> =
                    members.iter().map(|m| m.alloc(count * esz)).collect::<Result<_, _>>()?;
                let recvs: Vec<UsmAllocation> =
                    members.iter().map(|m| m.alloc(PER_RANK * esz)).collect::<Result<_, _>>()?;
                let mut ranks = Vec::new();
                for (r, m) in members.iter().enumerate() {
                    m.put(&sends[r], &elements(dtype, &(0..count).map(|e| value(dtype, r, e)).collect::<Vec<_>>()))?;
                    let recv = if in_place { sends[r].ptr().byte_add(r * PER_RANK * esz) } else { recvs[r].ptr() };
                    ranks.push(Rank::new(&m.queue, sends[r].ptr(), recv));
                }
                wait_all(&comm.reduce_scatter(&ranks, count, dtype, op)?)?;
                for (r, m) in members.iter().enumerate() {
                    let want = (r * PER_RANK..(r + 1) * PER_RANK).map(|e| reduced(dtype, op, n, e)).collect::<Vec<_>>();
                    let mut got = vec![0; PER_RANK * esz];
                    m.queue.read_usm(ranks[r].recv, &mut got, &[])?;
                    check_eq!(got, elements(dtype, &want), "{dtype} {op} rank {r} in place {in_place}");
                }
            }
        }
    }
    Ok(())
}

/// From every root, out of place and in place, with a wait list: each
/// rank's part waits for a marker of its queue after its data was written.
fn broadcast(devices: &[Device]) -> CaseResult {
    let (members, comm) = group(devices)?;
    let n = members.len();
    let dtype = DataType::U32;
    let count = PER_RANK;
    let bytes = count * 4;
    for root in 0..n {
        for in_place in [false, true] {
            let sends: Vec<UsmAllocation> = members.iter().map(|m| m.alloc(bytes)).collect::<Result<_, _>>()?;
            let recvs: Vec<UsmAllocation> = members.iter().map(|m| m.alloc(bytes)).collect::<Result<_, _>>()?;
            let data = |r: usize| elements(dtype, &(0..count).map(|e| (e * 7 + r * 1000) as i64).collect::<Vec<_>>());
            let mut markers = Vec::new();
            for (r, m) in members.iter().enumerate() {
                m.put(&sends[r], &data(r))?;
                m.put(&recvs[r], &data(r + 50))?;
                markers.push(m.queue.events_wait(&[])?);
            }
            let waits: Vec<[&Event; 1]> = markers.iter().map(|e| [e]).collect();
            let ranks: Vec<Rank<'_>> = members
                .iter()
                .enumerate()
                .map(|(r, m)| {
                    let recv = if in_place { &sends[r] } else { &recvs[r] };
                    Rank::new(&m.queue, sends[r].ptr(), recv.ptr()).after(&waits[r])
                })
                .collect();
            wait_all(&comm.broadcast(&ranks, count, dtype, root)?)?;
            for (r, m) in members.iter().enumerate() {
                let recv = if in_place { &sends[r] } else { &recvs[r] };
                check_eq!(m.get(recv, bytes)?, data(root), "root {root} rank {r} in place {in_place}");
                if !in_place && r != root {
                    check_eq!(m.get(&sends[r], bytes)?, data(r), "root {root}: rank {r}'s send range untouched");
                }
            }
        }
    }
    Ok(())
}

/// The front end's typed errors, the same on every implementation.
fn errors(devices: &[Device]) -> CaseResult {
    let (members, comm) = group(devices)?;
    let n = members.len();
    let count = 4 * n;
    let sends: Vec<UsmAllocation> = members.iter().map(|m| m.alloc(count * 4)).collect::<Result<_, _>>()?;
    let recvs: Vec<UsmAllocation> = members.iter().map(|m| m.alloc(count * 4)).collect::<Result<_, _>>()?;
    let ranks: Vec<Rank<'_>> =
        members.iter().enumerate().map(|(r, m)| Rank::new(&m.queue, sends[r].ptr(), recvs[r].ptr())).collect();
    let (u32_, sum) = (DataType::U32, ReduceOp::Sum);
    // The call is right as it stands.
    wait_all(&comm.all_reduce(&ranks, count, u32_, sum)?)?;
    check_err!(comm.all_reduce(&ranks[..n - 1], count, u32_, sum), InvalidValue);
    check_err!(comm.all_reduce(&ranks, 0, u32_, sum), InvalidSize);
    check_err!(comm.all_reduce(&ranks, count + 1, u32_, sum), InvalidSize);
    check_err!(comm.all_gather(&ranks, count + 1, u32_), InvalidSize);
    check_err!(comm.reduce_scatter(&ranks, count - 1, u32_, sum), InvalidSize);
    check_err!(comm.broadcast(&ranks, count, u32_, n), InvalidValue);
    // Rank 1's queue given as rank 0's.
    let mut swapped = ranks.clone();
    swapped[0].queue = &members[1].queue;
    check_err!(comm.all_reduce(&swapped, count, u32_, sum), InvalidQueue);
    // Rank 1's memory as rank 0's.
    let mut foreign = ranks.clone();
    foreign[0].send = sends[1].ptr();
    let foreign_result = comm.all_reduce(&foreign, count, u32_, sum);
    // Device addresses of two devices of one backend may coincide (Vulkan):
    // then the address is in rank 0's allocation and the call is valid.
    if foreign_result.is_ok() {
        check!(devices[0].backend() == devices[1].backend(), "another context's pointer was accepted");
        wait_all(&foreign_result?)?;
    } else {
        check_err!(foreign_result, InvalidValue);
    }
    // Overlaps other than in place.
    let mut shifted = ranks.clone();
    shifted[0].recv = sends[0].ptr().byte_add(4);
    check_err!(comm.all_reduce(&shifted, count - 1, u32_, sum), OverlappingRegions);
    let mut gather = ranks.clone();
    gather[1].send = recvs[1].ptr();
    check_err!(comm.all_gather(&gather, count, u32_), OverlappingRegions);
    // A wait list event of another rank's context: taken where rank 0's
    // context waits for that context's events device-side (CPU, CUDA),
    // as every queue command's wait list is, else refused.
    let other = members[1].queue.events_wait(&[])?;
    let wait = [&other];
    let mut waiting = ranks.clone();
    waiting[0].wait = &wait;
    if members[0].context.waits_on_events_of(&members[1].context) {
        wait_all(&comm.all_reduce(&waiting, count, u32_, sum)?)?;
    } else {
        check_err!(comm.all_reduce(&waiting, count, u32_, sum), InvalidEventWaitList);
    }
    // Communicators: none, one device twice.
    check_err!(Communicator::new(&[]), InvalidValue);
    let again = Context::new(&devices[0])?;
    check_err!(Communicator::new(&[&members[0].context, &again]), InvalidDevice);
    check_err!(Communicator::new(&[&members[0].context, &Context::new(&devices[0].emulated())?]), InvalidDevice);
    // No native collectives between backends.
    if devices.iter().any(|d| d.backend() != devices[0].backend()) {
        let contexts: Vec<&Context> = members.iter().map(|m| &m.context).collect();
        check_err!(Communicator::with_implementation(&contexts, Implementation::Native), UnsupportedFeature);
    }
    // Host staging over the same devices gives the same result as the communicator's own.
    let contexts: Vec<&Context> = members.iter().map(|m| &m.context).collect();
    let staged = Communicator::with_implementation(&contexts, Implementation::HostStaged)?;
    check!(staged.native_name().is_none(), "a host-staged communicator names a native implementation");
    for (r, m) in members.iter().enumerate() {
        m.put(&sends[r], &elements(u32_, &vec![r as i64 + 1; count]))?;
    }
    wait_all(&staged.all_reduce(&ranks, count, u32_, ReduceOp::Max)?)?;
    for (r, m) in members.iter().enumerate() {
        check_eq!(m.get(&recvs[r], count * 4)?, elements(u32_, &vec![n as i64; count]), "staged max, rank {r}");
    }
    // A recorded collective (captured where the communicator can), launched
    // twice with new inputs, and its errors.
    let buffers: Vec<(UsmPtr, UsmPtr)> = sends.iter().zip(&recvs).map(|(s, r)| (s.ptr(), r.ptr())).collect();
    let recorded = comm.record(CollectiveOp::AllReduce { count, op: ReduceOp::Sum }, u32_, &buffers)?;
    let parts: Vec<(&Queue, &[&Event])> = members.iter().map(|m| (&m.queue, &[][..])).collect();
    for round in 1..=2i64 {
        for (r, m) in members.iter().enumerate() {
            m.put(&sends[r], &elements(u32_, &vec![round * (r as i64 + 1); count]))?;
        }
        wait_all(&recorded.enqueue(&parts)?)?;
        let want = elements(u32_, &vec![round * (n * (n + 1) / 2) as i64; count]);
        for (r, m) in members.iter().enumerate() {
            check_eq!(m.get(&recvs[r], count * 4)?, want, "recorded all-reduce, launch {round}, rank {r}");
        }
    }
    check_err!(recorded.enqueue(&parts[1..]), InvalidValue);
    let mut swapped_parts = parts.clone();
    swapped_parts.swap(0, 1);
    check_err!(recorded.enqueue(&swapped_parts), InvalidQueue);
    check_err!(comm.record(CollectiveOp::AllGather { count: count + 1 }, u32_, &buffers), InvalidSize);
    Ok(())
}

/// Four collective nodes in a chain over all devices: an in-place
/// all-reduce, a reduce-scatter of its result, an all-gather of the parts
/// and a broadcast of the gathered data from the last rank, replayed twice
/// (the in-place all-reduce makes the second execution's data differ from
/// the first's), exact each time; update of one collective node is
/// refused, whole-graph update from a graph broadcasting elsewhere works.
fn in_a_graph(devices: &[Device]) -> CaseResult {
    let (members, comm) = group(devices)?;
    // Captured collectives compose with the graph's other partitions into
    // one submission (CUDA with NCCL, required, capture not turned off);
    // staged ones keep the partition path.
    let captured = comm.native_name().is_some()
        && std::env::var_os(REQUIRE_NCCL_ENV).is_some_and(|v| v != "0")
        && std::env::var_os("UR_RS_NCCL_CAPTURE").is_none_or(|v| v != "0");
    let staged = comm.native_name().is_none();
    let submissions = |exec: &cmdbuf_runtime::graph::ExecutableGraph, when: &str| -> CaseResult {
        let made = exec.submissions_per_execution();
        if captured {
            check_eq!(made, 1, "{when}: submissions per execution of a graph of captured collectives (composed)");
        } else if staged {
            check!(made > 1, "{when}: a graph of staged collectives is not composed, yet makes {made} submission");
        }
        Ok(())
    };
    let n = members.len();
    let count = PER_RANK * n;
    let dtype = DataType::U32;
    let bytes = count * 4;
    let alloc =
        |bytes: usize| -> Result<Vec<UsmAllocation>, CaseError> { members.iter().map(|m| m.alloc(bytes)).collect() };
    let (bufs, parts, gathered, bcast) = (alloc(bytes)?, alloc(PER_RANK * 4)?, alloc(bytes)?, alloc(bytes)?);
    let contexts: Vec<&Context> = members.iter().map(|m| &m.context).collect();
    let pairs = |send: &[UsmAllocation], recv: &[UsmAllocation]| -> Vec<(UsmPtr, UsmPtr)> {
        send.iter().zip(recv).map(|(s, r)| (s.ptr(), r.ptr())).collect()
    };
    // The chain, broadcasting into `to`; its first node.
    let chain = |to: &[UsmAllocation]| -> Result<(Graph, cmdbuf_runtime::graph::Node), CaseError> {
        let g = Graph::new_multi_device(&contexts, GraphProperties::default())?;
        let reduce =
            g.add(|h| h.all_reduce(&pairs(&bufs, &bufs), count, dtype, ReduceOp::Sum), NodeProperties::new())?;
        let deps = [&reduce];
        let scatter = g.add(
            |h| h.reduce_scatter(&pairs(&bufs, &parts), count, dtype, ReduceOp::Sum),
            NodeProperties::new().depends_on(&deps),
        )?;
        let deps = [&scatter];
        let gather =
            g.add(|h| h.all_gather(&pairs(&parts, &gathered), count, dtype), NodeProperties::new().depends_on(&deps))?;
        let deps = [&gather];
        g.add(|h| h.broadcast(&pairs(&gathered, to), count, dtype, n - 1), NodeProperties::new().depends_on(&deps))?;
        Ok((g, reduce))
    };
    let (g, reduce) = chain(&bcast)?;
    check_eq!(reduce.node_type(), NodeType::Collective);
    // A node's errors are the communicator's.
    check_err!(
        g.add(|h| h.all_reduce(&pairs(&bufs, &bufs)[1..], count, dtype, ReduceOp::Sum), NodeProperties::new()),
        InvalidValue
    );
    check_err!(
        g.add(|h| h.all_gather(&pairs(&parts, &gathered), count + 1, dtype), NodeProperties::new()),
        InvalidSize
    );
    let exec = g.finalize(FinalizeProperties { updatable: true, ..Default::default() })?;
    submissions(&exec, "after finalize")?;
    check_err!(exec.update(&reduce), InvalidCommandHandle);
    for (r, m) in members.iter().enumerate() {
        m.put(&bufs[r], &elements(dtype, &(0..count).map(|e| value(dtype, r, e)).collect::<Vec<_>>()))?;
    }
    let sum: Vec<i64> = (0..count).map(|e| reduced(dtype, ReduceOp::Sum, n, e)).collect();
    for replay in 1..=2u32 {
        exec.enqueue_on(&members[0].queue, &[])?.wait()?;
        // After replay k the in-place all-reduce holds n^(k-1) * sum, and
        // the reduce-scatter of it n^k * sum.
        let scale = |k: u32| (n as i64).pow(k);
        let reduced_all = elements(dtype, &sum.iter().map(|v| v * scale(replay - 1)).collect::<Vec<_>>());
        let scattered = elements(dtype, &sum.iter().map(|v| v * scale(replay)).collect::<Vec<_>>());
        for (r, m) in members.iter().enumerate() {
            check_eq!(m.get(&bufs[r], bytes)?, reduced_all, "replay {replay}: all-reduce on rank {r}");
            let part = &scattered[r * PER_RANK * 4..(r + 1) * PER_RANK * 4];
            check_eq!(m.get(&parts[r], PER_RANK * 4)?, part, "replay {replay}: reduce-scatter on rank {r}");
            check_eq!(m.get(&gathered[r], bytes)?, scattered, "replay {replay}: all-gather on rank {r}");
            check_eq!(m.get(&bcast[r], bytes)?, scattered, "replay {replay}: broadcast on rank {r}");
        }
    }
    // Whole-graph update from a graph of the same shape broadcasting
    // elsewhere: the collective nodes are recorded again (captured again).
    let elsewhere = alloc(bytes)?;
    let (g2, _) = chain(&elsewhere)?;
    exec.update_from(&g2)?;
    submissions(&exec, "after the update")?;
    exec.enqueue_on(&members[0].queue, &[])?.wait()?;
    let n3 = elements(dtype, &sum.iter().map(|v| v * (n as i64).pow(3)).collect::<Vec<_>>());
    let n2 = elements(dtype, &sum.iter().map(|v| v * (n as i64).pow(2)).collect::<Vec<_>>());
    for (r, m) in members.iter().enumerate() {
        check_eq!(m.get(&elsewhere[r], bytes)?, n3, "after the update: broadcast into the new range on rank {r}");
        check_eq!(m.get(&bcast[r], bytes)?, n2, "after the update: the old range untouched on rank {r}");
    }
    Ok(())
}
