//! Scenario (d): a `cmdbuf_runtime` buffer moving between two devices, each in
//! a context of its own: written by a kernel on the first, read and written
//! by a kernel on the second (the pages go through the buffer's host
//! allocation), read on the host, written on the host, read again on the
//! first device and on the host. Its own file, so that the buffer layer's
//! imports can move with it.

use cmdbuf::{Kernel, KernelArg, KernelLaunch};
use cmdbuf_runtime::{AccessMode, AccessRange, Buffer, CommandGroup};

use crate::support::{Failure, Fixture};

/// Elements of the buffer: two pages of the default page grid or more, so
/// that transfers are not one page.
const N: usize = 4096;

/// `increment` over the buffer on `fx`'s queue, in a command group.
fn increment(fx: &Fixture, buffer: &Buffer) -> Result<(), Failure> {
    let kernel = Kernel::new(&fx.program, "increment")?;
    let mut cg = CommandGroup::new(&fx.queue);
    let acc = cg.access(buffer, AccessMode::ReadWrite, AccessRange::all())?;
    let args = [KernelArg::Pointer(acc.ptr())];
    // SAFETY: increment over N items of the buffer's N u32s on this device.
    let event = cg.submit(|q, wait| unsafe { q.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), wait) })?;
    event.wait()?;
    Ok(())
}

/// Fails naming the first wrong element (the buffer is too long to print).
fn expect_same(got: &[u32], want: &[u32], what: impl FnOnce() -> String) -> Result<(), Failure> {
    match got.iter().zip(want).position(|(g, w)| g != w) {
        Some(i) => Err(Failure::Wrong(format!("{}: element {i} is {}, want {}", what(), got[i], want[i]))),
        None if got.len() != want.len() => Err(Failure::Wrong(format!("{}: {} elements", what(), got.len()))),
        None => Ok(()),
    }
}

/// The host's view of the whole buffer.
fn on_host(buffer: &Buffer) -> Result<Vec<u32>, Failure> {
    Ok(buffer.host_access(AccessMode::Read, AccessRange::all())?.to_vec::<u32>()?)
}

/// The buffer from the host, incremented on `first`, then on `second`,
/// read on the host, doubled there, incremented on `first`, read again.
/// When a step fails, the buffer must still be usable (the failed call was
/// one transient failure): what the host reads of it then, incremented on
/// `second`, is what the host reads next; otherwise the run fails with
/// both errors.
pub fn scenario(first: &Fixture, second: &Fixture) -> Result<(), Failure> {
    let data: Vec<u32> = (0..N as u32).collect();
    let buffer = Buffer::from_host(&data, &[N])?;
    match steps(first, second, &buffer, &data) {
        Err(Failure::Ur(e)) => match usable(second, &buffer) {
            Ok(()) => Err(Failure::Ur(e)),
            Err(after) => Err(Failure::Wrong(format!("{e}; afterwards the buffer is not usable: {after}"))),
        },
        other => other,
    }
}

/// Whether `buffer` still works after a failed step: read on the host,
/// incremented on `fx`, read again.
fn usable(fx: &Fixture, buffer: &Buffer) -> Result<(), Failure> {
    let before = on_host(buffer)?;
    increment(fx, buffer)?;
    let want: Vec<u32> = before.iter().map(|v| v + 1).collect();
    expect_same(&on_host(buffer)?, &want, || format!("an increment on {} after the failure", fx.device))?;
    Ok(())
}

fn steps(first: &Fixture, second: &Fixture, buffer: &Buffer, data: &[u32]) -> Result<(), Failure> {
    let buffer = buffer.clone();
    increment(first, &buffer)?;
    increment(second, &buffer)?;
    let want: Vec<u32> = data.iter().map(|v| v + 2).collect();
    expect_same(&on_host(&buffer)?, &want, || format!("after {} then {}", first.device, second.device))?;
    {
        let mut host = buffer.host_access(AccessMode::ReadWrite, AccessRange::all())?;
        host.as_mut_slice::<u32>()?.iter_mut().for_each(|v| *v *= 2);
    }
    increment(first, &buffer)?;
    let want: Vec<u32> = data.iter().map(|v| (v + 2) * 2 + 1).collect();
    expect_same(&on_host(&buffer)?, &want, || format!("after the host's write and {} again", first.device))?;
    Ok(())
}
