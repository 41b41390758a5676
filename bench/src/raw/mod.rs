//! Baselines of issue item 2: the benchmark graphs built and replayed with
//! each backend's own API, in the same process, with no cmdbuf layer between.
//!
//! | backend | baseline |
//! |---|---|
//! | CUDA | a CUDA graph of kernel nodes (`cuGraphAddKernelNode`, `cuGraphInstantiateWithFlags`, `cuGraphLaunch`), the adapter's kernel parameter block, completion by `cuEventRecord` and `cuEventSynchronize` as a replay's event |
//! | OpenCL with `cl_khr_command_buffer` | a command buffer of `clCommandNDRangeKernelKHR` with sync points, `clEnqueueCommandBufferKHR` |
//! | OpenCL without it | `clEnqueueNDRangeKernel` per node on an in-order queue (the best the device offers) |
//! | Vulkan | one pre-recorded primary command buffer: dispatches with a pipeline barrier between dependency levels, `vkQueueSubmit` with a fence |
//!
//! Eager baselines (the rows' `raw eager` columns) submit the same nodes one
//! by one, in topological order on one in-order stream or queue, as the
//! backend's API does without a graph:
//!
//! | backend | eager baseline |
//! |---|---|
//! | CUDA | `cuLaunchKernel` on a stream, and `cuEventRecord` of an event of its own after each launch (the cmdbuf eager call returns an event) |
//! | OpenCL | `clEnqueueNDRangeKernel` per node on an in-order queue, returning an event |
//! | Vulkan, one dispatch per submit | per node: a primary command buffer recorded (barrier, bind, dispatch) and `vkQueueSubmit`ted |
//! | Vulkan, many dispatches per submit | every node recorded into one primary command buffer (barrier, dispatch), one `vkQueueSubmit` |
//!
//! The CPU adapter has no native API below ours; its per-node cost is the
//! `cpu_per_node` group instead. Every baseline runs a kernel that does
//! nothing, as the cmdbuf side does, on one work-item.
//!
//! The device is found by name among the backend's devices (the first one of
//! that name: machines with several identical GPUs measure the first).

#[cfg(feature = "cuda")]
mod cuda;
#[cfg(feature = "cuda")]
pub use cuda::{BuildCost, CudaGraph, Deps, launch_foreign};
#[cfg(feature = "cuda")]
mod nccl;
#[cfg(feature = "cuda")]
pub use nccl::RawNccl;
#[cfg(feature = "opencl")]
mod opencl;
#[cfg(feature = "vulkan")]
mod vulkan;

use cmdbuf::{Backend, Device};

/// Work-items of each raw `axpb` launch: the bench's own (`main.rs` checks
/// that they are the same; this module is also built alone by a test).
pub const AXPB_ITEMS: usize = 256;

/// A backend's own API holding one graph at a time.
pub trait RawGraph {
    /// What the baseline uses, for the tables.
    fn mechanism(&self) -> String;
    /// Builds (and finalizes, instantiates or records) the graph whose node
    /// `i` runs after the nodes `preds[i]`, replacing the previous one.
    fn build(&mut self, preds: &[Vec<usize>]) -> Result<(), String>;
    /// Submits the graph; returns when the submitting call has. The previous
    /// submission has been waited for (baselines without simultaneous use,
    /// such as a command buffer on PoCL, refuse a pending one).
    fn launch(&mut self) -> Result<(), String>;
    /// Waits until the last submission has completed.
    fn wait(&mut self) -> Result<(), String>;
    /// The eager baselines: `(variant, what it does)`; the variant names
    /// the records (`raw_eager`, and `raw_eager_batched` where a backend
    /// can put many commands in one submission).
    fn eager_variants(&self) -> Vec<(&'static str, &'static str)>;
    /// Submits `nodes` trivial kernels one by one with eager baseline
    /// `variant` (an index into [`eager_variants`](Self::eager_variants)),
    /// in order; returns when the submitting calls have. The previous
    /// submission has been waited for.
    fn eager(&mut self, variant: usize, nodes: usize) -> Result<(), String>;
}

/// Opens the raw baseline of `device`'s backend; `Err` says why there is none.
pub fn open(device: &Device) -> Result<Box<dyn RawGraph>, String> {
    #[cfg_attr(not(any(feature = "cuda", feature = "opencl", feature = "vulkan")), allow(unused_variables))]
    let name = device.info().name.as_str();
    match device.backend() {
        #[cfg(feature = "cuda")]
        Backend::Cuda => cuda::CudaGraph::open(name).map(|g| Box::new(g) as Box<dyn RawGraph>),
        #[cfg(feature = "opencl")]
        Backend::OpenCl => opencl::ClGraph::open(name).map(|g| Box::new(g) as Box<dyn RawGraph>),
        #[cfg(feature = "vulkan")]
        Backend::Vulkan => vulkan::VkGraph::open(name).map(|g| Box::new(g) as Box<dyn RawGraph>),
        Backend::Cpu => Err("the CPU adapter has no native API below cmdbuf (see cpu_per_node)".into()),
        #[allow(unreachable_patterns)]
        other => Err(format!("cmdbuf-bench was built without the `{}` feature", other.name())),
    }
}

/// The dependency levels of a DAG given by predecessor lists in topological
/// order: a node's level is one more than its deepest predecessor's.
#[cfg_attr(not(feature = "vulkan"), allow(dead_code))]
pub fn levels(preds: &[Vec<usize>]) -> Vec<usize> {
    let mut level = vec![0usize; preds.len()];
    for (i, p) in preds.iter().enumerate() {
        level[i] = p.iter().map(|&d| level[d] + 1).max().unwrap_or(0);
    }
    level
}

#[cfg(test)]
mod tests {
    #[test]
    fn levels_of_a_fork_join() {
        let preds = vec![vec![], vec![0], vec![0], vec![1, 2]];
        assert_eq!(super::levels(&preds), vec![0, 1, 1, 2]);
        assert_eq!(super::levels(&[vec![], vec![0], vec![1]]), vec![0, 1, 2]);
    }
}
