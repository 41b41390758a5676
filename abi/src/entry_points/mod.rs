//! The `extern "C"` entry points, one module per UR table (or per group of
//! one table's entry points: `device_info`, `usm_2d`, ...), above the
//! boundary and the handle objects; only the dispatch tables name them.

pub(crate) mod adapter;
pub(crate) mod adopt;
pub(crate) mod capture;
pub(crate) mod command_buffer;
pub(crate) mod context;
pub(crate) mod device;
pub(crate) mod device_info;
pub(crate) mod enqueue;
pub(crate) mod event;
pub(crate) mod kernel;
pub(crate) mod mem;
pub(crate) mod native;
pub(crate) mod platform;
pub(crate) mod program;
pub(crate) mod queue;
pub(crate) mod timestamp;
pub(crate) mod usm;
pub(crate) mod usm_2d;
pub(crate) mod usm_p2p;
