//! A kernel launch's parameters as `cuLaunchKernel` and kernel graph nodes
//! take them: the function, the geometry and the parameter values. Below
//! the objects (programs fill them in, `program.rs`), so that the device's
//! launcher (`launcher.rs`) can make launches without naming a program.

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use cmdbuf_core::Result;
use cudarc::driver::sys;
use smallvec::SmallVec;

use crate::driver::cu;

/// A function handle.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Func(pub(crate) sys::CUfunction);

// SAFETY: function handles may be used from any thread.
unsafe impl Send for Func {}
// SAFETY: as for Send.
unsafe impl Sync for Func {}

/// A launch's kernel, geometry and parameter values, in the form
/// `cuLaunchKernel` and kernel graph nodes take. `W` holds the values:
/// inline up to 256 bytes for an eager launch ([`LaunchParams`], which then
/// allocates nothing), sized to fit on the heap where a command buffer keeps
/// one per kernel node ([`StoredLaunchParams`]: the inline form would cost
/// every node 256 bytes whatever its arguments).
pub(crate) struct LaunchParams<W = ParamWords> {
    pub(crate) func: Func,
    /// The kernel's name where the kernel may store a status (see
    /// `program::may_report`), for its status check; `None` for the others,
    /// whose eager launches then clone nothing shared.
    pub(crate) name: Option<Arc<str>>,
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) shared: u32,
    /// A zero global size: nothing runs (a graph keeps the node, disabled).
    pub(crate) empty: bool,
    /// Parameter values, each at an 8-byte aligned offset.
    pub(crate) storage: W,
    /// Byte offset of each parameter inside `storage` (CUDA's parameters
    /// take at most 32 KiB).
    pub(crate) offsets: ParamOffsets,
    /// Byte offset of the status pointer inside `storage`; `None` for plain kernels.
    pub(crate) status_at: Option<usize>,
}

/// A command buffer's kernel node parameters: the values on the heap.
pub(crate) type StoredLaunchParams = LaunchParams<Box<[u64]>>;

/// A launch's parameter values, inline up to 256 bytes.
pub(crate) type ParamWords = SmallVec<[u64; 32]>;

/// The parameters' byte offsets inside their values.
pub(crate) type ParamOffsets = SmallVec<[u16; 12]>;

/// The `kernelParams` array of a launch: one pointer per parameter.
type ParamPointers = SmallVec<[*mut c_void; 16]>;

impl LaunchParams {
    /// Launches on `stream`; the caller bound the context.
    ///
    /// # Safety
    /// The launch was validated by the front end, and the memory its
    /// arguments reach is valid for the kernel (the caller's `unsafe` contract).
    pub(crate) unsafe fn launch(&mut self, stream: sys::CUstream) -> Result<()> {
        if self.empty {
            return Ok(());
        }
        let (g, b, shared, func) = (self.grid, self.block, self.shared, self.func.0);
        let mut pointers = self.pointers();
        // SAFETY: `pointers` holds one pointer per kernel parameter (checked
        // against the ABI at kernel creation where the driver allows), into
        // `storage`, which outlives the call.
        unsafe {
            cu!(cuLaunchKernel(
                func,
                g[0],
                g[1],
                g[2],
                b[0],
                b[1],
                b[2],
                shared,
                stream,
                pointers.as_mut_ptr(),
                ptr::null_mut()
            ))
        }
    }
}

impl<W: AsRef<[u64]> + AsMut<[u64]>> LaunchParams<W> {
    /// Points the launch's status at another word.
    pub(crate) fn set_status(&mut self, status: u64) {
        if let Some(at) = self.status_at {
            self.storage.as_mut()[at / 8] = status;
        }
    }

    /// The `kernelParams` array: one pointer per parameter, into the values.
    fn pointers(&mut self) -> ParamPointers {
        let base = self.storage.as_mut().as_mut_ptr().cast::<u8>();
        // SAFETY: every offset lies inside `storage` (recorded while filling it).
        self.offsets.iter().map(|o| unsafe { base.add(usize::from(*o)) }.cast::<c_void>()).collect()
    }

    /// Calls `f` with the kernel node parameters, valid during the call;
    /// the driver copies the values when given them.
    pub(crate) fn with_node_params<T>(
        &mut self,
        ctx: sys::CUcontext,
        f: impl FnOnce(&sys::CUDA_KERNEL_NODE_PARAMS) -> T,
    ) -> T {
        let mut pointers = self.pointers();
        f(&sys::CUDA_KERNEL_NODE_PARAMS {
            func: self.func.0,
            gridDimX: self.grid[0],
            gridDimY: self.grid[1],
            gridDimZ: self.grid[2],
            blockDimX: self.block[0],
            blockDimY: self.block[1],
            blockDimZ: self.block[2],
            sharedMemBytes: self.shared,
            kernelParams: pointers.as_mut_ptr(),
            extra: ptr::null_mut(),
            kern: ptr::null_mut(),
            ctx,
        })
    }
}
