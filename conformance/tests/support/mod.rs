//! What the fault sweep and the concurrency test share: the devices they run
//! on, with the skip-with-reason rule, and the fixture their scenarios use.
// Each test binary uses a part of it.
#![allow(dead_code)]

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use cmdbuf::{Backend, Context, Device, Program, Queue, QueueProperties, UrError};
use libtest_mimic::{Failed, Trial};

pub mod fresh;

/// The backends both tests run on: the CPU adapter, OpenCL (PoCL in CI) and
/// Vulkan (lavapipe in CI).
pub const BACKENDS: [Backend; 3] = [Backend::Cpu, Backend::OpenCl, Backend::Vulkan];

/// Whether `UR_RS_REQUIRE_DEVICES` (`cpu,opencl,vulkan` in CI) names `backend`:
/// its absence then fails the test instead of leaving it ignored.
pub fn required(backend: Backend) -> bool {
    std::env::var("UR_RS_REQUIRE_DEVICES").is_ok_and(|v| v.split(',').any(|d| d.trim() == backend.name()))
}

/// The trial `name` of `backend`, which has no device: listed ignored with
/// the reason (failing if run anyway), or failing when [`required`].
pub fn absent_trial(name: String, backend: Backend, reason: &str) -> Trial {
    if required(backend) {
        let why = format!("UR_RS_REQUIRE_DEVICES names {backend}, but {reason}");
        return Trial::test(name, move || Err(Failed::from(why)));
    }
    eprintln!("{name}: ignored: {reason}");
    let why = format!("ran nothing: {reason}");
    Trial::test(name, move || Err(Failed::from(why))).with_ignored_flag(true)
}

/// Runs `body(t)` for `t` in `0..threads`, all at once, each on a thread of
/// its own; the first failure (a panic is one).
pub fn on_threads(threads: usize, body: impl Fn(usize) -> Result<(), Failure> + Sync) -> Result<(), Failure> {
    let body = &body;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads).map(|t| scope.spawn(move || body(t))).collect();
        let results: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Failure::Wrong("a thread panicked".into()))))
            .collect();
        results.into_iter().collect()
    })
}

/// The first device of each backend, or why there is none.
pub fn devices() -> Vec<(Backend, Result<Device, String>)> {
    let loader = match cmdbuf::load() {
        Ok(loader) => loader,
        Err(e) => return BACKENDS.iter().map(|&b| (b, Err(format!("cannot load adapters: {e}")))).collect(),
    };
    BACKENDS
        .iter()
        .map(|&backend| {
            let device = loader.devices().into_iter().find(|d| d.backend() == backend);
            let why = || {
                loader
                    .absent()
                    .iter()
                    .find(|a| a.backend == backend)
                    .map_or_else(|| format!("no {backend} device is selected"), |a| a.reason.clone())
            };
            (backend, device.ok_or_else(why))
        })
        .collect()
}

/// Why a scenario did not pass.
#[derive(Debug)]
pub enum Failure {
    /// A call failed.
    Ur(UrError),
    /// A result was wrong.
    Wrong(String),
}

impl From<UrError> for Failure {
    fn from(e: UrError) -> Self {
        Failure::Ur(e)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Ur(e) => write!(f, "{}: {e}", e.ur_name()),
            Failure::Wrong(m) => write!(f, "wrong result: {m}"),
        }
    }
}

/// Fails with the message unless `got == want`.
#[macro_export]
macro_rules! expect_eq {
    ($got:expr, $want:expr, $($what:tt)+) => {{
        let (got, want) = (&$got, &$want);
        if got != want {
            return Err($crate::support::Failure::Wrong(format!("{}: got {:?}, want {:?}", format!($($what)+), got, want)));
        }
    }};
}

/// A context, an in-order queue and the kernel library on one device.
pub struct Fixture {
    /// The device.
    pub device: Device,
    /// Its context.
    pub context: Context,
    /// An in-order queue of the context.
    pub queue: Queue,
    /// The conformance kernel library, built for the device.
    pub program: Program,
}

impl Fixture {
    /// Makes the fixture on `device`.
    pub fn new(device: &Device) -> Result<Fixture, UrError> {
        let context = Context::new(device)?;
        let queue = Queue::new(&context, QueueProperties::default())?;
        let program = Program::new(&context, &cmdbuf_conformance::kernels::bundle())?;
        Ok(Fixture { device: device.clone(), context, queue, program })
    }
}

/// The state of type `T` kept for `fx` (one per fixture, so per device and
/// test), made by `make` the first time.
pub fn per_fixture<T: Send + Sync + 'static>(
    fx: &Arc<Fixture>,
    make: impl FnOnce() -> Result<T, Failure>,
) -> Result<Arc<T>, Failure> {
    type States = Mutex<Vec<((usize, TypeId), Arc<dyn Any + Send + Sync>)>>;
    static STATES: OnceLock<States> = OnceLock::new();
    let key = (Arc::as_ptr(fx) as usize, TypeId::of::<T>());
    let mut states = STATES.get_or_init(Mutex::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, state)) = states.iter().find(|(k, _)| *k == key) {
        return Ok(state.clone().downcast::<T>().expect("keyed by type"));
    }
    let state = Arc::new(make()?);
    states.push((key, state.clone()));
    Ok(state)
}

/// Reads `n` u32 from USM.
pub fn read_u32(queue: &Queue, src: cmdbuf::UsmPtr, n: usize) -> Result<Vec<u32>, UrError> {
    let mut out = vec![0u32; n];
    queue.read_usm(src, bytemuck::cast_slice_mut(&mut out), &[])?;
    Ok(out)
}

/// A device allocation of `data.len()` u32 holding `data`.
pub fn usm_with(fx: &Fixture, data: &[u32]) -> Result<cmdbuf::UsmAllocation, UrError> {
    let alloc = cmdbuf::UsmAllocation::new(&fx.context, cmdbuf::UsmKind::Device, data.len() * 4)?;
    fx.queue.write_usm(alloc.ptr(), bytemuck::cast_slice(data), &[])?;
    Ok(alloc)
}
