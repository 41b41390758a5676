//! The case runner: cases, their declared requirements, the per-device
//! fixture, the checks cases are written with, and the panic hook that keeps
//! the panics cases provoke off stderr.

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock};

use bytemuck::{AnyBitPattern, NoUninit};
use cmdbuf::{
    CommandBuffer, CommandBufferDesc, Context, Device, Kernel, MemBuffer, MemFlags, Partition, PartitionKind, Program,
    Queue, QueueProperties, UpdateCapabilities, UrError, UsmAllocation, UsmKind, UsmKinds, UsmPtr,
};
use parking_lot::Mutex;

use crate::kernels;

/// Keeps panics of CPU-adapter workers and host tasks off stderr: they are
/// caught and reported through the failing command's event, which is what
/// the cases that provoke them check. So are panics inside
/// [`expecting_panics`]. Other panics print as usual.
pub fn quiet_adapter_worker_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let on_worker = std::thread::current().name().is_some_and(|n| n.starts_with("ur-cpu-") || n == "ur-host-task");
        if !on_worker && !PANICS_EXPECTED.with(Cell::get) {
            default(info);
        }
    }));
}

thread_local! {
    static PANICS_EXPECTED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`, which provokes a panic on this thread that cmdbuf-core catches and
/// reports as an error (a panicking native-command callback run at its
/// enqueue), with the panic kept off stderr: the case checks the error.
pub fn expecting_panics<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            PANICS_EXPECTED.with(|e| e.set(self.0));
        }
    }
    let _reset = Reset(PANICS_EXPECTED.with(|e| e.replace(true)));
    f()
}

/// Why a case did not pass.
#[derive(Debug)]
pub enum CaseError {
    /// The device lacks something the case needs; the text names it.
    Skip(String),
    /// The case found a wrong result or an unexpected error.
    Fail(String),
}

impl From<UrError> for CaseError {
    fn from(e: UrError) -> Self {
        CaseError::Fail(format!("unexpected error {}: {e}", e.ur_name()))
    }
}

/// What a case body returns.
pub type CaseResult = Result<(), CaseError>;

/// What a device must offer for a case to run; a case whose requirements
/// are not met is skipped with the missing capability named.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Requires {
    /// Command-buffer update capabilities.
    pub update: UpdateCapabilities,
    /// Command-buffer wait and signal events.
    pub events: bool,
    /// USM kinds.
    pub usm: UsmKinds,
    /// Out-of-order queues.
    pub out_of_order: bool,
    /// Profiling queues.
    pub profiling: bool,
    /// A partition into two sub-devices of one compute unit each (by counts)
    /// or of half the device each (equally).
    pub two_sub_devices: bool,
}

impl Requires {
    /// Nothing.
    pub const NONE: Requires = Requires {
        update: UpdateCapabilities::empty(),
        events: false,
        usm: UsmKinds::empty(),
        out_of_order: false,
        profiling: false,
        two_sub_devices: false,
    };

    /// These update capabilities (an updatable buffer at least).
    pub const fn update(caps: UpdateCapabilities) -> Requires {
        Requires { update: caps, ..Requires::NONE }
    }

    /// The capabilities UR's updatable fixtures ask for: arguments, local and
    /// global size, and global offset.
    pub const UPDATABLE: Requires = Requires::update(
        UpdateCapabilities::KERNEL_ARGUMENTS
            .union(UpdateCapabilities::LOCAL_WORK_SIZE)
            .union(UpdateCapabilities::GLOBAL_WORK_SIZE)
            .union(UpdateCapabilities::GLOBAL_WORK_OFFSET),
    );

    /// Command-buffer events.
    pub const EVENTS: Requires = Requires { events: true, ..Requires::NONE };

    /// Adds these requirements.
    pub const fn and(self, other: Requires) -> Requires {
        Requires {
            update: self.update.union(other.update),
            events: self.events || other.events,
            usm: self.usm.union(other.usm),
            out_of_order: self.out_of_order || other.out_of_order,
            profiling: self.profiling || other.profiling,
            two_sub_devices: self.two_sub_devices || other.two_sub_devices,
        }
    }

    /// Shared USM.
    pub const SHARED_USM: Requires = Requires { usm: UsmKinds::SHARED, ..Requires::NONE };
    /// Host USM.
    pub const HOST_USM: Requires = Requires { usm: UsmKinds::HOST, ..Requires::NONE };
    /// Out-of-order queues.
    pub const OUT_OF_ORDER: Requires = Requires { out_of_order: true, ..Requires::NONE };
    /// Profiling queues.
    pub const PROFILING: Requires = Requires { profiling: true, ..Requires::NONE };
    /// Two sub-devices of one partition ([`two_sub_device_partition`]).
    pub const TWO_SUB_DEVICES: Requires = Requires { two_sub_devices: true, ..Requires::NONE };

    /// The first missing requirement, named, or `None` when all are met.
    pub fn missing(&self, device: &Device) -> Option<String> {
        let info = device.info();
        let cb = info.command_buffer;
        let missing_update = self.update - cb.update;
        if !missing_update.is_empty() {
            let what = flag_words(missing_update.iter_names());
            return Some(format!("device lacks command-buffer update of {what}"));
        }
        if self.events && !cb.events {
            return Some("device lacks command-buffer event support".into());
        }
        let missing_usm = self.usm - info.usm;
        if !missing_usm.is_empty() {
            return Some(format!("device lacks {} USM", flag_words(missing_usm.iter_names())));
        }
        if self.out_of_order && !info.out_of_order_queues {
            return Some("device lacks out-of-order queues".into());
        }
        if self.profiling && !info.queue_profiling {
            return Some("device lacks queue profiling".into());
        }
        if self.two_sub_devices && two_sub_device_partition(device).is_none() {
            let support = device.partition_support();
            let units = info.max_compute_units;
            return Some(format!(
                "device makes no two sub-devices ({units} compute units, partitions {:?}, at most {})",
                support.kinds, support.max_sub_devices
            ));
        }
        None
    }
}

/// The partition that gives `device` two sub-devices (one compute unit each
/// by counts, else half the device each), if it offers one.
pub fn two_sub_device_partition(device: &Device) -> Option<Partition> {
    let support = device.partition_support();
    let units = device.info().max_compute_units;
    if units < 2 || support.max_sub_devices < 2 {
        None
    } else if support.offers(PartitionKind::ByCounts) {
        Some(Partition::ByCounts(vec![1, 1]))
    } else if support.offers(PartitionKind::Equally) {
        Some(Partition::Equally(units / 2))
    } else {
        None
    }
}

/// Flag names as words for people: `LOCAL_WORK_SIZE` and `EVENTS` give
/// "local work size and events".
pub fn flag_words<'a, F>(names: impl Iterator<Item = (&'a str, F)>) -> String {
    let words: Vec<String> = names.map(|(name, _)| name.to_lowercase().replace('_', " ")).collect();
    match words.split_last() {
        None => "nothing".into(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

type Body = dyn Fn(&Env) -> CaseResult + Send + Sync;

/// One conformance case.
#[derive(Clone)]
pub struct Case {
    /// `group::name`.
    pub name: String,
    /// What the device must offer.
    pub requires: Requires,
    body: Arc<Body>,
}

impl Case {
    /// A case with no requirements.
    pub fn new(name: impl Into<String>, body: impl Fn(&Env) -> CaseResult + Send + Sync + 'static) -> Case {
        Case { name: name.into(), requires: Requires::NONE, body: Arc::new(body) }
    }

    /// Declares what the device must offer.
    pub fn requires(mut self, requires: Requires) -> Case {
        self.requires = self.requires.and(requires);
        self
    }
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case").field("name", &self.name).field("requires", &self.requires).finish()
    }
}

/// How a case ended on a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Passed.
    Pass,
    /// Not run or stopped early, with the missing capability.
    Skip(String),
    /// Failed, with what went wrong.
    Fail(String),
}

/// Runs `case` on `device`, catching panics (a panic is a failure). A case
/// past the time limit ends the process ([`crate::watchdog`]).
pub fn run_case(case: &Case, device: &Device) -> Outcome {
    if let Some(reason) = case.requires.missing(device) {
        return Outcome::Skip(reason);
    }
    let _watch = match crate::watchdog::watch_case(format!("{} on {device}", case.name)) {
        Ok(watch) => watch,
        Err(message) => return Outcome::Fail(message),
    };
    let result = catch_unwind(AssertUnwindSafe(|| {
        let env = Env::new(device)?;
        (case.body)(&env)
    }));
    match result {
        Ok(Ok(())) => Outcome::Pass,
        Ok(Err(CaseError::Skip(reason))) => Outcome::Skip(reason),
        Ok(Err(CaseError::Fail(message))) => Outcome::Fail(message),
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into());
            Outcome::Fail(format!("panicked: {message}"))
        }
    }
}

/// What every case on one device shares: a context and the kernel library
/// built for it (building programs once per device keeps the suite fast on
/// adapters that compile at run time).
struct Fixture {
    context: Context,
    program: Result<Program, UrError>,
}

fn fixture(device: &Device) -> Result<Arc<Fixture>, CaseError> {
    static FIXTURES: OnceLock<Mutex<HashMap<String, Arc<Fixture>>>> = OnceLock::new();
    let key = device.to_string();
    let mut map = FIXTURES.get_or_init(Mutex::default).lock();
    if let Some(f) = map.get(&key) {
        return Ok(f.clone());
    }
    let context = Context::new(device)?;
    let program = Program::new(&context, &kernels::bundle());
    let fixture = Arc::new(Fixture { context, program });
    map.insert(key, fixture.clone());
    Ok(fixture)
}

/// What a case works with: the device, its shared context and kernels, and
/// helpers that make new objects.
pub struct Env {
    device: Device,
    fixture: Arc<Fixture>,
}

impl Env {
    fn new(device: &Device) -> Result<Env, CaseError> {
        Ok(Env { device: device.clone(), fixture: fixture(device)? })
    }

    /// The device under test (possibly an emulated view).
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The shared context of this device.
    pub fn context(&self) -> &Context {
        &self.fixture.context
    }

    /// A new in-order queue.
    pub fn queue(&self) -> Result<Queue, CaseError> {
        Ok(Queue::new(self.context(), QueueProperties::default())?)
    }

    /// A new queue with these properties.
    pub fn queue_with(&self, properties: QueueProperties) -> Result<Queue, CaseError> {
        Ok(Queue::new(self.context(), properties)?)
    }

    /// A new out-of-order queue.
    pub fn ooo_queue(&self) -> Result<Queue, CaseError> {
        self.queue_with(QueueProperties { out_of_order: true, profiling: false })
    }

    /// The kernel library's program for this device.
    pub fn program(&self) -> Result<&Program, CaseError> {
        self.fixture.program.as_ref().map_err(|e| CaseError::Fail(format!("kernel library did not build: {e}")))
    }

    /// A kernel of the library.
    pub fn kernel(&self, name: &str) -> Result<Kernel, CaseError> {
        Ok(Kernel::new(self.program()?, name)?)
    }

    /// A command buffer on this device.
    pub fn command_buffer(&self, desc: CommandBufferDesc) -> Result<CommandBuffer, CaseError> {
        Ok(CommandBuffer::new(self.context(), &self.device, desc)?)
    }

    /// An updatable command buffer.
    pub fn updatable_command_buffer(&self) -> Result<CommandBuffer, CaseError> {
        self.command_buffer(CommandBufferDesc { updatable: true, ..Default::default() })
    }

    /// A USM allocation of `bytes` bytes.
    pub fn usm(&self, kind: UsmKind, bytes: usize) -> Result<UsmAllocation, CaseError> {
        Ok(UsmAllocation::new(self.context(), kind, bytes)?)
    }

    /// A device USM allocation of `count` `u32`s.
    pub fn usm_u32(&self, count: usize) -> Result<UsmAllocation, CaseError> {
        self.usm(UsmKind::Device, count * 4)
    }

    /// A read-write buffer of `bytes` bytes.
    pub fn buffer(&self, bytes: usize) -> Result<MemBuffer, CaseError> {
        Ok(MemBuffer::new(self.context(), MemFlags::READ_WRITE, bytes)?)
    }

    /// A buffer holding `data`.
    pub fn buffer_with<T: NoUninit>(&self, data: &[T]) -> Result<MemBuffer, CaseError> {
        Ok(MemBuffer::with_data(self.context(), MemFlags::READ_WRITE, bytemuck::cast_slice(data))?)
    }
}

/// The blocking transfers the helpers below make, on a UR queue or a SYCL
/// queue of `cmdbuf_runtime` (which refuses them while it records).
pub trait HostIo {
    /// `write_usm` without a wait list.
    fn host_write(&self, dst: UsmPtr, data: &[u8]) -> cmdbuf::Result<()>;
    /// `read_usm` without a wait list.
    fn host_read(&self, src: UsmPtr, out: &mut [u8]) -> cmdbuf::Result<()>;
    /// `read_buffer` without a wait list.
    fn host_read_buffer(&self, buffer: &MemBuffer, offset: usize, out: &mut [u8]) -> cmdbuf::Result<()>;
}

/// The same methods on both queues: they differ only in whether they record.
macro_rules! host_io {
    ($($queue:ty),*) => {$(
        impl HostIo for $queue {
            fn host_write(&self, dst: UsmPtr, data: &[u8]) -> cmdbuf::Result<()> {
                self.write_usm(dst, data, &[])
            }
            fn host_read(&self, src: UsmPtr, out: &mut [u8]) -> cmdbuf::Result<()> {
                self.read_usm(src, out, &[])
            }
            fn host_read_buffer(&self, buffer: &MemBuffer, offset: usize, out: &mut [u8]) -> cmdbuf::Result<()> {
                self.read_buffer(buffer, offset, out, &[])
            }
        }
    )*};
}

host_io!(Queue, cmdbuf_runtime::Queue);

/// Writes `data` to USM and waits.
pub fn write<T: NoUninit>(queue: &impl HostIo, dst: UsmPtr, data: &[T]) -> CaseResult {
    Ok(queue.host_write(dst, bytemuck::cast_slice(data))?)
}

/// Reads `count` values from USM.
pub fn read<T: AnyBitPattern + NoUninit + Default + Clone>(
    queue: &impl HostIo,
    src: UsmPtr,
    count: usize,
) -> Result<Vec<T>, CaseError> {
    let mut out = vec![T::default(); count];
    queue.host_read(src, bytemuck::cast_slice_mut(&mut out))?;
    Ok(out)
}

/// Reads `count` values from a buffer.
pub fn read_buffer<T: AnyBitPattern + NoUninit + Default + Clone>(
    queue: &impl HostIo,
    buffer: &MemBuffer,
    offset: usize,
    count: usize,
) -> Result<Vec<T>, CaseError> {
    let mut out = vec![T::default(); count];
    queue.host_read_buffer(buffer, offset, bytemuck::cast_slice_mut(&mut out))?;
    Ok(out)
}

/// The bytes a fill of `size` bytes with `pattern` leaves.
pub fn fill_reference(pattern: &[u8], size: usize) -> Vec<u8> {
    pattern.iter().copied().cycle().take(size).collect()
}

/// A deterministic pattern of `n` bytes, distinct per `seed`.
pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed).wrapping_add(1)).collect()
}

/// Host reference of a rect copy: copies `region` (width in bytes, height,
/// depth) from `src` laid out with `src_origin`/pitches to `dst`. Written
/// independently of cmdbuf-core's rect helpers so it can check them.
#[allow(clippy::too_many_arguments)]
pub fn copy_rect_reference(
    src: &[u8],
    src_origin: [usize; 3],
    src_pitches: (usize, usize),
    dst: &mut [u8],
    dst_origin: [usize; 3],
    dst_pitches: (usize, usize),
    region: [usize; 3],
) {
    for z in 0..region[2] {
        for y in 0..region[1] {
            for x in 0..region[0] {
                let s = (src_origin[2] + z) * src_pitches.1 + (src_origin[1] + y) * src_pitches.0 + src_origin[0] + x;
                let d = (dst_origin[2] + z) * dst_pitches.1 + (dst_origin[1] + y) * dst_pitches.0 + dst_origin[0] + x;
                dst[d] = src[s];
            }
        }
    }
}

/// Fails the case unless the condition holds.
#[macro_export]
macro_rules! check {
    ($cond:expr) => {
        if !$cond {
            return Err($crate::harness::CaseError::Fail(format!("{}:{}: check failed: {}", file!(), line!(), stringify!($cond))));
        }
    };
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err($crate::harness::CaseError::Fail(format!("{}:{}: {}", file!(), line!(), format!($($fmt)+))));
        }
    };
}

/// Fails the case unless both sides are equal.
#[macro_export]
macro_rules! check_eq {
    ($left:expr, $right:expr $(,)?) => {{
        let (l, r) = (&$left, &$right);
        if l != r {
            return Err($crate::harness::CaseError::Fail(format!(
                "{}:{}: {} != {}\n  left: {:?}\n right: {:?}",
                file!(), line!(), stringify!($left), stringify!($right), l, r
            )));
        }
    }};
    ($left:expr, $right:expr, $($fmt:tt)+) => {{
        let (l, r) = (&$left, &$right);
        if l != r {
            return Err($crate::harness::CaseError::Fail(format!(
                "{}:{}: {}\n  left: {:?}\n right: {:?}", file!(), line!(), format!($($fmt)+), l, r
            )));
        }
    }};
}

/// Fails the case unless the expression is an error of the given variant:
/// `check_err!(cb.finalize(), InvalidOperation)`.
#[macro_export]
macro_rules! check_err {
    ($expr:expr, $variant:ident) => {
        match $expr {
            Err(cmdbuf::UrError::$variant(_)) => {}
            Err(other) => {
                return Err($crate::harness::CaseError::Fail(format!(
                    "{}:{}: {} returned {} ({other}), expected {}",
                    file!(),
                    line!(),
                    stringify!($expr),
                    other.ur_name(),
                    stringify!($variant)
                )))
            }
            Ok(_) => {
                return Err($crate::harness::CaseError::Fail(format!(
                    "{}:{}: {} succeeded, expected {}",
                    file!(),
                    line!(),
                    stringify!($expr),
                    stringify!($variant)
                )))
            }
        }
    };
}

/// Builds a list of cases: `cases!("group"; fn_a, fn_b => Requires::EVENTS)`.
#[macro_export]
macro_rules! cases {
    ($group:literal; $($body:ident $(=> $req:expr)?),* $(,)?) => {
        vec![$(
            $crate::harness::Case::new(concat!($group, "::", stringify!($body)), $body)
                $(.requires($req))?
        ),*]
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_read_as_words() {
        assert_eq!(flag_words(UsmKinds::HOST.iter_names()), "host");
        assert_eq!(flag_words((UsmKinds::HOST | UsmKinds::SHARED).iter_names()), "host and shared");
        let update = UpdateCapabilities::KERNEL_ARGUMENTS
            | UpdateCapabilities::LOCAL_WORK_SIZE
            | UpdateCapabilities::GLOBAL_WORK_OFFSET;
        assert_eq!(flag_words(update.iter_names()), "kernel arguments, local work size and global work offset");
        assert_eq!(flag_words(UsmKinds::empty().iter_names()), "nothing");
    }
}
