//! What the `graph_*` groups share: the diamond of the Codeplay proposal
//! with its host model, and helpers for kernel nodes and host memory.

use std::time::{Duration, Instant};

use cmdbuf::{Kernel, KernelArg, KernelLaunch, QueueProperties, UsmAllocation, UsmKind};
use cmdbuf_runtime::Queue;
use cmdbuf_runtime::graph::{Graph, GraphProperties, Node, NodeProperties};

use crate::harness::{CaseError, Env, HostIo, read, write};

/// A new in-order SYCL queue (which can record) on the case's device.
pub(in crate::cases) fn sycl_queue(env: &Env) -> Result<Queue, CaseError> {
    Ok(Queue::from_core(env.queue()?))
}

/// A new SYCL queue with these properties.
pub(in crate::cases) fn sycl_queue_with(env: &Env, properties: QueueProperties) -> Result<Queue, CaseError> {
    Ok(Queue::from_core(env.queue_with(properties)?))
}

/// A new out-of-order SYCL queue.
pub(in crate::cases) fn sycl_ooo_queue(env: &Env) -> Result<Queue, CaseError> {
    Ok(Queue::from_core(env.ooo_queue()?))
}

/// Long enough for work that ignored a dependency to have run.
pub(in crate::cases) const SETTLE: Duration = Duration::from_millis(30);

/// A new graph on the case's device.
pub(in crate::cases) fn new_graph(env: &Env) -> Result<Graph, CaseError> {
    Ok(Graph::new(env.context(), env.device(), GraphProperties::default())?)
}

/// Adds a node launching `kernel` over `global` after `deps`.
///
/// # Safety
/// The kernel's accesses through `args` over `global` stay inside live
/// allocations at every execution of the graphs made from `graph`.
pub(in crate::cases) unsafe fn kernel_node(
    graph: &Graph,
    kernel: &Kernel,
    global: &[usize],
    args: &[KernelArg<'_>],
    deps: &[&Node],
) -> Result<Node, CaseError> {
    let launch = KernelLaunch::new(kernel, global, args);
    // SAFETY: the kernel's accesses through `args` over `global` stay inside live allocations at every
    // execution (this function's `# Safety`), what `launch` requires of a recorded launch.
    Ok(graph.add(|h| unsafe { h.launch(&launch) }, NodeProperties::new().depends_on(deps))?)
}

/// The host address of a host (or host-visible) allocation, as a number a
/// `Send` closure can hold.
pub(in crate::cases) fn host_addr(alloc: &UsmAllocation) -> Result<usize, CaseError> {
    alloc.host_ptr().map(|p| p as usize).ok_or_else(|| CaseError::Fail("host USM has no host address".into()))
}

/// Reads element `i` of the `u32`s at host address `addr`.
///
/// # Safety
/// `addr` holds at least `i + 1` `u32`s and no device command writes them now.
pub(in crate::cases) unsafe fn host_get(addr: usize, i: usize) -> u32 {
    // SAFETY: `addr` holds at least `i + 1` `u32`s that no device command writes now (this function's
    // `# Safety`).
    unsafe { (addr as *const u32).add(i).read_volatile() }
}

/// Writes element `i` of the `u32`s at host address `addr`.
///
/// # Safety
/// As for [`host_get`], and no device command reads them now.
pub(in crate::cases) unsafe fn host_set(addr: usize, i: usize, value: u32) {
    // SAFETY: `addr` holds at least `i + 1` `u32`s that no device command reads or writes now (this
    // function's `# Safety`).
    unsafe { (addr as *mut u32).add(i).write_volatile(value) }
}

/// Waits until `done()` holds, for at most ten seconds.
pub(in crate::cases) fn eventually(done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// The diamond of `sycl_ext_codeplay_graphs_proposal.md`:
///
/// ```text
///        increment(A)
///        /          \
///  B += A            C -= A
///        \          /
///      B -= 1, C -= 1
/// ```
///
/// with the kernel library: `increment`, `saxpy` (B = 1*A + B, C = -1*A + C)
/// and one `axpb` (x*1 - 1) over B and C, which lie side by side in one
/// allocation.
pub(in crate::cases) struct Diamond {
    pub(in crate::cases) n: usize,
    pub(in crate::cases) a: UsmAllocation,
    /// B then C, `n` elements each.
    pub(in crate::cases) bc: UsmAllocation,
    pub(in crate::cases) increment: Kernel,
    pub(in crate::cases) saxpy: Kernel,
    pub(in crate::cases) axpb: Kernel,
}

/// The nodes of a diamond, top to bottom.
pub(in crate::cases) struct DiamondNodes {
    pub(in crate::cases) top: Node,
    pub(in crate::cases) left: Node,
    pub(in crate::cases) right: Node,
    pub(in crate::cases) bottom: Node,
}

pub(in crate::cases) const ONE: u32 = 1;
pub(in crate::cases) const MINUS_ONE: u32 = u32::MAX;

impl Diamond {
    pub(in crate::cases) fn new(env: &Env, n: usize) -> Result<Diamond, CaseError> {
        Diamond::new_in(env, n, UsmKind::Device)
    }

    /// A diamond whose allocations are of `kind` (host, for host tasks).
    pub(in crate::cases) fn new_in(env: &Env, n: usize, kind: UsmKind) -> Result<Diamond, CaseError> {
        Ok(Diamond {
            n,
            a: env.usm(kind, n * 4)?,
            bc: env.usm(kind, 2 * n * 4)?,
            increment: env.kernel("increment")?,
            saxpy: env.kernel("saxpy")?,
            axpb: env.kernel("axpb")?,
        })
    }

    pub(in crate::cases) fn b(&self) -> cmdbuf::UsmPtr {
        self.bc.ptr()
    }

    pub(in crate::cases) fn c(&self) -> cmdbuf::UsmPtr {
        self.bc.ptr().byte_add(self.n * 4)
    }

    /// The initial contents: A[i] = i, B[i] = 10 i, C[i] = 100 i.
    pub(in crate::cases) fn init(&self, queue: &impl HostIo) -> Result<(), CaseError> {
        let a: Vec<u32> = (0..self.n as u32).collect();
        let bc: Vec<u32> = (0..self.n as u32).map(|i| 10 * i).chain((0..self.n as u32).map(|i| 100 * i)).collect();
        write(queue, self.a.ptr(), &a)?;
        write(queue, self.bc.ptr(), &bc)
    }

    /// The host model after `runs` executions from the initial contents.
    pub(in crate::cases) fn model(&self, runs: usize) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
        let mut a: Vec<u32> = (0..self.n as u32).collect();
        let mut b: Vec<u32> = a.iter().map(|i| 10 * i).collect();
        let mut c: Vec<u32> = a.iter().map(|i| 100 * i).collect();
        for _ in 0..runs {
            for i in 0..self.n {
                a[i] = a[i].wrapping_add(1);
                b[i] = b[i].wrapping_add(a[i]).wrapping_sub(1);
                c[i] = c[i].wrapping_sub(a[i]).wrapping_sub(1);
            }
        }
        (a, b, c)
    }

    /// Compares the device's A, B and C with the model after `runs` executions.
    pub(in crate::cases) fn check(&self, queue: &impl HostIo, runs: usize) -> Result<(), CaseError> {
        let (a, b, c) = self.model(runs);
        let got_a = read::<u32>(queue, self.a.ptr(), self.n)?;
        let got_bc = read::<u32>(queue, self.bc.ptr(), 2 * self.n)?;
        if got_a != a || got_bc[..self.n] != b[..] || got_bc[self.n..] != c[..] {
            return Err(CaseError::Fail(format!(
                "after {runs} execution(s) the diamond differs from the model: A[..4] {:?} (model {:?}), B[..4] {:?} \
                 (model {:?}), C[..4] {:?} (model {:?})",
                &got_a[..4],
                &a[..4],
                &got_bc[..4],
                &b[..4],
                &got_bc[self.n..self.n + 4],
                &c[..4]
            )));
        }
        Ok(())
    }

    /// Adds the four nodes to `graph` with `depends_on` edges.
    pub(in crate::cases) fn add_to(&self, graph: &Graph) -> Result<DiamondNodes, CaseError> {
        let n = self.n;
        // SAFETY: n items increment the n elements of A.
        let top = unsafe { kernel_node(graph, &self.increment, &[n], &[KernelArg::Pointer(self.a.ptr())], &[])? };
        // SAFETY: B holds n elements.
        let left = unsafe { self.saxpy_node(graph, self.b(), ONE, &top)? };
        // SAFETY: C holds n elements.
        let right = unsafe { self.saxpy_node(graph, self.c(), MINUS_ONE, &top)? };
        // SAFETY: the diamond's own allocations.
        let bottom = unsafe { self.bottom_node(graph, &[&left, &right])? };
        Ok(DiamondNodes { top, left, right, bottom })
    }

    /// `dst = factor * A + dst` after `dep`.
    ///
    /// # Safety
    /// `dst` holds `n` elements.
    pub(in crate::cases) unsafe fn saxpy_node(
        &self,
        graph: &Graph,
        dst: cmdbuf::UsmPtr,
        factor: u32,
        dep: &Node,
    ) -> Result<Node, CaseError> {
        let args = [
            KernelArg::Pointer(dst),
            KernelArg::value(&factor),
            KernelArg::Pointer(self.a.ptr()),
            KernelArg::Pointer(dst),
        ];
        // SAFETY: n elements of A and of `dst` (the caller's contract).
        unsafe { kernel_node(graph, &self.saxpy, &[self.n], &args, &[dep]) }
    }

    /// B and C minus one, after `deps`.
    ///
    /// # Safety
    /// None beyond the diamond's own allocations.
    pub(in crate::cases) unsafe fn bottom_node(&self, graph: &Graph, deps: &[&Node]) -> Result<Node, CaseError> {
        let args = [KernelArg::Pointer(self.bc.ptr()), KernelArg::value(&ONE), KernelArg::value(&MINUS_ONE)];
        // SAFETY: 2n elements of the 2n-element allocation.
        unsafe { kernel_node(graph, &self.axpb, &[2 * self.n], &args, deps) }
    }
}

/// A host USM allocation of `count` `u32`s, zeroed, with its host address.
pub(in crate::cases) fn host_u32(
    env: &Env,
    queue: &impl HostIo,
    count: usize,
) -> Result<(UsmAllocation, usize), CaseError> {
    let alloc = env.usm(UsmKind::Host, count * 4)?;
    write(queue, alloc.ptr(), &vec![0u32; count])?;
    let addr = host_addr(&alloc)?;
    Ok((alloc, addr))
}
