//! The C boundary, the ABI crate's bottom layer above the generated `sys`:
//! the panic and error guard every entry point runs under ([`entry`]), the
//! tagged handles ([`handle`]) and the info-query protocol ([`info`]).
//! Nothing here names a handle object, an entry point or the tables.

pub mod entry;
pub mod handle;
pub mod info;

pub(crate) mod conv;
