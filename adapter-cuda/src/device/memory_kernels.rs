//! The device's copy and fill kernels for command buffers
//! (`kernels/memory.cl`, committed as PTX).
//!
//! A CUDA graph's launch costs the host about 0.8 µs more for each memset or
//! memcpy node (the driver's own `cuGraphLaunch`, `cmdbuf-bench --only
//! cuda_build` on an H200: 1.2 µs for one memory node, 80 µs for 100, against
//! 1.2 and 2.3 µs for kernel nodes), so a replay of a SYCL graph of USM
//! copies and fills grew with its node count. Copies and fills between
//! allocations of the device's own memory become kernel nodes of these
//! kernels instead; host, managed and other devices' memory keeps the
//! driver's nodes, which move it however the driver must.

use std::ffi::c_void;
use std::ptr;

use cmdbuf_core::Result;
use cudarc::driver::sys;

use crate::driver::cu;

/// The kernels' PTX, made by `kernels/regenerate.sh`.
const MEMORY_PTX: &str = include_str!("../../kernels/memory.ptx");

/// The longest pattern the fill kernel takes (`PATTERN_MAX` in memory.cl).
pub(crate) const FILL_PATTERN_MAX: usize = 256;

/// The largest fill the fill kernel takes byte by byte (a pattern that
/// does not repeat within a 32-bit word, or an unaligned range): beyond it
/// the driver's memsets, which write such patterns as strided elements at
/// close to the memory's bandwidth, are faster on the device than a
/// division per byte, and their launch cost is small beside the fill.
const BYTE_FILL_MAX: usize = 64 * 1024;

/// Threads per block of both kernels.
const BLOCK: u32 = 256;
/// The most blocks a launch is given: each thread strides over the rest.
const MAX_BLOCKS: u64 = 1 << 16;

/// The loaded module and its two kernels.
pub(crate) struct MemoryKernels {
    pub(super) module: sys::CUmodule,
    copy: sys::CUfunction,
    fill: sys::CUfunction,
}

impl MemoryKernels {
    /// Loads them into the bound context.
    pub(super) fn load() -> Result<MemoryKernels> {
        let ptx = std::ffi::CString::new(MEMORY_PTX).expect("no NUL in the PTX");
        let mut module: sys::CUmodule = ptr::null_mut();
        // SAFETY: NUL-terminated PTX; the caller bound the context.
        unsafe { cu!(cuModuleLoadDataEx(&mut module, ptx.as_ptr().cast(), 0, ptr::null_mut(), ptr::null_mut()))? };
        let lookup = |name: &std::ffi::CStr| {
            let mut func: sys::CUfunction = ptr::null_mut();
            // SAFETY: the module was just loaded; a name it lacks is an error, not undefined.
            unsafe { cu!(cuModuleGetFunction(&mut func, module, name.as_ptr())) }.map(|()| func)
        };
        match (lookup(c"ur_rs_copy"), lookup(c"ur_rs_fill")) {
            (Ok(copy), Ok(fill)) => Ok(MemoryKernels { module, copy, fill }),
            (Err(e), _) | (_, Err(e)) => {
                // SAFETY: loaded above, used by nothing.
                let _ = unsafe { sys::cuModuleUnload(module) };
                Err(e)
            }
        }
    }

    /// A launch copying `size` bytes from device address `src` to `dst`
    /// (not overlapping, as the front end checked).
    pub(crate) fn copy(&self, dst: u64, src: u64, size: usize) -> MemoryLaunch {
        let wide = (dst | src | size as u64).is_multiple_of(16);
        let units = if wide { size as u64 / 16 } else { size as u64 };
        MemoryLaunch { func: self.copy, blocks: blocks(units), args: Args::Copy { dst, src, size: size as u64 } }
    }

    /// A launch filling `size` bytes at device address `dst` with `pattern`
    /// (`size` a multiple of its length); `None` for a pattern longer than
    /// [`FILL_PATTERN_MAX`], and for a fill over [`BYTE_FILL_MAX`] that the
    /// kernel would write byte by byte.
    pub(crate) fn fill(&self, dst: u64, pattern: &[u8], size: usize) -> Option<MemoryLaunch> {
        if pattern.is_empty() || pattern.len() > FILL_PATTERN_MAX {
            return None;
        }
        let words = 4 % pattern.len() == 0 && (dst | size as u64).is_multiple_of(4);
        if !words && size > BYTE_FILL_MAX {
            return None;
        }
        let mut bytes = [0u8; FILL_PATTERN_MAX];
        bytes[..pattern.len()].copy_from_slice(pattern);
        let units = if words { size as u64 / 4 } else { size as u64 };
        let args = Args::Fill { dst, size: size as u64, length: pattern.len() as u32, pattern: Box::new(bytes) };
        Some(MemoryLaunch { func: self.fill, blocks: blocks(units), args })
    }
}

/// Blocks for `units` threads' worth of work, at least one.
fn blocks(units: u64) -> u32 {
    units.div_ceil(u64::from(BLOCK)).clamp(1, MAX_BLOCKS) as u32
}

/// The kernels' parameters, in their order in memory.cl.
enum Args {
    Copy { dst: u64, src: u64, size: u64 },
    Fill { dst: u64, size: u64, length: u32, pattern: Box<[u8; FILL_PATTERN_MAX]> },
}

/// One launch of a copy or fill kernel.
pub(crate) struct MemoryLaunch {
    func: sys::CUfunction,
    blocks: u32,
    args: Args,
}

impl MemoryLaunch {
    /// Adds the launch to `graph` as a kernel node after `deps`, in context `ctx`.
    ///
    /// # Safety
    /// `graph` is a live graph, `deps` are nodes of it, `ctx` is the context
    /// the kernels were loaded into, and the launch's range lies in device
    /// memory that stays allocated while the graph's executions may run.
    pub(crate) unsafe fn add_node(
        &mut self,
        graph: sys::CUgraph,
        deps: &[sys::CUgraphNode],
        ctx: sys::CUcontext,
    ) -> Result<sys::CUgraphNode> {
        // One pointer per kernel parameter, to its value; the driver copies
        // the values when the node is added.
        let mut values: [*mut c_void; 4] = [ptr::null_mut(); 4];
        match &mut self.args {
            Args::Copy { dst, src, size } => {
                values[0] = ptr::from_mut(dst).cast();
                values[1] = ptr::from_mut(src).cast();
                values[2] = ptr::from_mut(size).cast();
            }
            Args::Fill { dst, size, length, pattern } => {
                values[0] = ptr::from_mut(dst).cast();
                values[1] = ptr::from_mut(size).cast();
                values[2] = ptr::from_mut(length).cast();
                values[3] = pattern.as_mut_ptr().cast();
            }
        }
        let params = sys::CUDA_KERNEL_NODE_PARAMS {
            func: self.func,
            gridDimX: self.blocks,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: BLOCK,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: 0,
            kernelParams: values.as_mut_ptr(),
            extra: ptr::null_mut(),
            kern: ptr::null_mut(),
            ctx,
        };
        let mut node: sys::CUgraphNode = ptr::null_mut();
        // SAFETY: the graph and `deps` are live (this function's `# Safety`); `values` holds one
        // pointer per parameter of the kernel, each to a value of the parameter's size, read by
        // the driver before this call returns.
        unsafe { cu!(cuGraphAddKernelNode_v2(&mut node, graph, deps.as_ptr(), deps.len(), &params))? };
        Ok(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ptx_declares_both_kernels_with_the_parameters_add_node_passes() {
        assert!(MEMORY_PTX.contains(".visible .entry ur_rs_copy(\n\t.param .u64 ur_rs_copy_param_0,\n\t.param .u64 ur_rs_copy_param_1,\n\t.param .u64 ur_rs_copy_param_2\n)"));
        assert!(MEMORY_PTX.contains(&format!(
            ".visible .entry ur_rs_fill(\n\t.param .u64 ur_rs_fill_param_0,\n\t.param .u64 ur_rs_fill_param_1,\n\t.param .u32 ur_rs_fill_param_2,\n\t.param .align 1 .b8 ur_rs_fill_param_3[{FILL_PATTERN_MAX}]\n)"
        )));
    }

    #[test]
    fn grids_cover_the_range_within_the_block_limit() {
        assert_eq!(blocks(0), 1);
        assert_eq!(blocks(1), 1);
        assert_eq!(blocks(256), 1);
        assert_eq!(blocks(257), 2);
        assert_eq!(blocks(u64::MAX / 2), MAX_BLOCKS as u32);
    }
}
