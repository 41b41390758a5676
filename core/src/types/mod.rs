//! The bottom layer of cmdbuf-core: plain descriptor and info types, errors, and
//! readers of kernel code, which the adapter interface and the front end
//! both use. Nothing here holds an adapter object or imports a module above
//! it (see `tests/layers.rs`); every item is re-exported at the crate root
//! and from the front-end module it belongs to.

pub mod backend;
pub mod clock;
pub mod collective;
pub mod cpu_table;
pub mod desc;
pub mod device;
pub mod error;
pub mod event;
pub mod interop;
pub mod live;
pub mod memory;
pub mod native;
pub mod program;
pub mod ptx;
pub mod rect;
pub mod spirv;
