//! The two-stage pipeline of issue 17 as one graph: a buffer of `u32`s split
//! in halves, half `d` on side `d`. Stage 1 on each half (`copy_add` from the
//! input plus `d + 1`, then `repeats` increments), the halves exchanged
//! between the sides (cross-device copy nodes when the sides are two
//! devices), stage 2 on each half (`saxpy`: 3 × own + the other's, then
//! `repeats` increments). With both sides on one device it is the same work
//! as a single-device graph, the baseline of the `multi_device` bench group.
//!
//! Shared by the bench group and `examples/pipeline.rs` (included by path).

use cmdbuf::{Context, Device, Kernel, KernelArg, KernelLaunch, Program, QueueProperties, Result};
use cmdbuf::{UsmAllocation, err};
use cmdbuf_runtime::Queue;
use cmdbuf_runtime::graph::{ExecutableGraph, FinalizeProperties, Graph, GraphProperties, Node, NodeProperties};

/// One device of the pipeline: a context, a queue, the kernels.
pub struct Side {
    pub context: Context,
    pub queue: Queue,
    copy_add: Kernel,
    saxpy: Kernel,
    increment: Kernel,
}

impl Side {
    /// The side of `device`, with the conformance kernel library built for it.
    pub fn new(device: &Device) -> Result<Side> {
        let context = Context::new(device)?;
        let queue = Queue::new(&context, QueueProperties::default())?;
        let program = Program::new(&context, &cmdbuf_conformance::kernels::bundle())?;
        Ok(Side {
            queue,
            copy_add: Kernel::new(&program, "copy_add")?,
            saxpy: Kernel::new(&program, "saxpy")?,
            increment: Kernel::new(&program, "increment")?,
            context,
        })
    }

    fn device(&self) -> &Device {
        self.context.device()
    }

    /// `count` `u32`s of the first USM kind the device has (device, shared, host).
    fn alloc(&self, count: usize) -> Result<UsmAllocation> {
        let kind = cmdbuf_conformance::cases::graph_multi_device::first_usm_kind(self.device())
            .ok_or_else(|| err!(UnsupportedFeature, "{} has no USM", self.device()))?;
        UsmAllocation::new(&self.context, kind, count * 4)
    }
}

/// The memory of one half.
struct Half {
    input: UsmAllocation,
    mid: UsmAllocation,
    recv: UsmAllocation,
    out: UsmAllocation,
}

/// A finalized pipeline over `2 × half` elements.
pub struct Pipeline<'a> {
    sides: [&'a Side; 2],
    halves: [Half; 2],
    half: usize,
    repeats: u32,
    /// The executable graph; submitted on `sides[0].queue`.
    pub exec: ExecutableGraph,
    /// Bytes the exchange moves between two devices per execution (0 on one device).
    pub cross_bytes: usize,
    /// Of those, bytes moved peer to peer (the rest goes through host staging).
    pub peer_bytes: usize,
}

/// Adds a launch of `kernel` over `n` items.
fn launch(graph: &Graph, kernel: &Kernel, n: usize, args: &[KernelArg<'_>], props: NodeProperties<'_>) -> Result<Node> {
    let global = [n];
    let launch = KernelLaunch::new(kernel, &global, args);
    // SAFETY: every allocation the pipeline passes holds `n` u32s, and each
    // kernel touches element i of its pointers for item i < n.
    graph.add(|h| unsafe { h.launch(&launch) }, props)
}

impl<'a> Pipeline<'a> {
    /// Builds and finalizes the pipeline with half `d` on `sides[d]` (the
    /// same side twice: a single-device graph).
    pub fn new(sides: [&'a Side; 2], half: usize, repeats: u32) -> Result<Pipeline<'a>> {
        let two = !std::ptr::eq(sides[0], sides[1]);
        let graph = if two {
            Graph::new_multi_device(&[&sides[0].context, &sides[1].context], GraphProperties::default())?
        } else {
            Graph::new(&sides[0].context, sides[0].device(), GraphProperties::default())?
        };
        let mk = |s: &Side| -> Result<Half> {
            Ok(Half { input: s.alloc(half)?, mid: s.alloc(half)?, recv: s.alloc(half)?, out: s.alloc(half)? })
        };
        let halves = [mk(sides[0])?, mk(sides[1])?];
        let mut stage1: Vec<Node> = Vec::new();
        for (d, (s, h)) in sides.iter().zip(&halves).enumerate() {
            let on = NodeProperties::new().on_device(s.device());
            let k = d as u32 + 1;
            let args = [KernelArg::Pointer(h.mid.ptr()), KernelArg::Pointer(h.input.ptr()), KernelArg::value(&k)];
            let mut last = launch(&graph, &s.copy_add, half, &args, on)?;
            for _ in 0..repeats {
                let deps = [&last];
                last = launch(&graph, &s.increment, half, &[KernelArg::Pointer(h.mid.ptr())], on.depends_on(&deps))?;
            }
            stage1.push(last);
        }
        let mut exchanged: Vec<Node> = Vec::new();
        for d in 0..2 {
            let (from, to) = (&halves[d], &halves[1 - d]);
            let deps = [&stage1[d]];
            let copy = graph.add(
                |h| h.memcpy_across(sides[1 - d].device(), to.recv.ptr(), sides[d].device(), from.mid.ptr(), half * 4),
                NodeProperties::new().on_device(sides[1 - d].device()).depends_on(&deps),
            )?;
            exchanged.push(copy);
        }
        for (d, (s, h)) in sides.iter().zip(&halves).enumerate() {
            let on = NodeProperties::new().on_device(s.device());
            let deps = [&stage1[d], &exchanged[1 - d]];
            let args = [
                KernelArg::Pointer(h.out.ptr()),
                KernelArg::value(&3u32),
                KernelArg::Pointer(h.mid.ptr()),
                KernelArg::Pointer(h.recv.ptr()),
            ];
            let mut last = launch(&graph, &s.saxpy, half, &args, on.depends_on(&deps))?;
            for _ in 0..repeats {
                let deps = [&last];
                last = launch(&graph, &s.increment, half, &[KernelArg::Pointer(h.out.ptr())], on.depends_on(&deps))?;
            }
        }
        let exec = graph.finalize(FinalizeProperties::default())?;
        let traffic = exec.cross_device_traffic();
        let cross_bytes = (traffic.peer_bytes + traffic.staged_bytes) as usize;
        Ok(Pipeline { sides, halves, half, repeats, exec, cross_bytes, peer_bytes: traffic.peer_bytes as usize })
    }

    /// The input of half `d`.
    fn input(&self, d: usize) -> Vec<u32> {
        (0..self.half as u32).map(|i| i.wrapping_mul(2654435761).wrapping_add(d as u32 * 7) % 1000).collect()
    }

    /// Writes the inputs.
    pub fn load(&self) -> Result<()> {
        for d in 0..2 {
            self.sides[d].queue.write_usm(self.halves[d].input.ptr(), bytes_of(&self.input(d)), &[])?;
        }
        Ok(())
    }

    /// One execution, waited for.
    pub fn run(&self) -> Result<()> {
        self.sides[0].queue.enqueue_graph(&self.exec, &[])?.wait()
    }

    /// Compares both output halves with the host's result: `InvalidValue`
    /// naming the first difference.
    pub fn check(&self) -> Result<()> {
        let r = self.repeats;
        let mid: Vec<Vec<u32>> = (0..2).map(|d| self.input(d).iter().map(|x| x + d as u32 + 1 + r).collect()).collect();
        for d in 0..2 {
            let mut out = vec![0u32; self.half];
            self.sides[d].queue.read_usm(self.halves[d].out.ptr(), bytes_of_mut(&mut out), &[])?;
            for (i, got) in out.iter().enumerate() {
                let want = 3 * mid[d][i] + mid[1 - d][i] + r;
                if *got != want {
                    return Err(err!(InvalidValue, "pipeline half {d}, element {i}: {got}, expected {want}"));
                }
            }
        }
        Ok(())
    }
}

fn bytes_of(v: &[u32]) -> &[u8] {
    // SAFETY: u32 has no padding; the slice covers exactly the vector's bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

fn bytes_of_mut(v: &mut [u32]) -> &mut [u8] {
    // SAFETY: as above; every byte pattern is a valid u32.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), std::mem::size_of_val(v)) }
}
