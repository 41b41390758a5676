//! Contexts of one device joined into one USM address space
//! (`Context::share_usm_with`, beyond UR): where the device's adapter makes
//! its memory one address space (CPU, CUDA, Vulkan), joined contexts accept
//! each other's USM pointers in eager commands, command buffers and kernels,
//! still checked against the allocation that holds them; a context not
//! joined still refuses them. Where the adapter cannot (OpenCL), joining is
//! `UnsupportedFeature` and nothing changes. Contexts of different devices
//! are `InvalidDevice` (the `multi_device` section).

use cmdbuf::{
    CommandBufferDesc, Context, KernelArg, KernelLaunch, Queue, QueueProperties, UrError, UsmAllocation, UsmKind,
};

use crate::harness::{CaseError, CaseResult, Env, read, write};
use crate::{cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["shared_usm";
        joined_contexts_use_each_others_pointers,
        joining_is_transitive_and_per_device,
    ]
}

const N: usize = 64;

/// A second context of the case's device and whether it can join the
/// suite's: `None` after checking the refusal where it cannot.
fn joinable(env: &Env) -> Result<Option<Context>, CaseError> {
    let other = Context::new(env.device())?;
    match env.context().check_can_share_usm_with(&other) {
        Ok(()) => {
            check!(env.device().peer_access(env.device())?.supported, "joinable, but the device is not its own peer");
            Ok(Some(other))
        }
        Err(UrError::UnsupportedFeature(_)) => {
            check!(!env.device().peer_access(env.device())?.supported, "refused, but the device is its own peer");
            check_err!(env.context().share_usm_with(&other), UnsupportedFeature);
            check!(!env.context().shares_usm_with(&other), "a refused join joined");
            // Refused: the other context's pointers stay foreign.
            let foreign = UsmAllocation::new(&other, UsmKind::Device, N)?;
            check_err!(env.queue()?.usm_fill(foreign.ptr(), &[1], N, &[]), InvalidValue);
            Ok(None)
        }
        Err(e) => Err(CaseError::Fail(format!("check_can_share_usm_with gave {e:?}"))),
    }
}

/// Joined contexts compute on each other's memory: eager fills and copies,
/// a kernel and a command buffer of one context on the other's allocation,
/// both directions, with bounds still checked.
fn joined_contexts_use_each_others_pointers(env: &Env) -> CaseResult {
    let Some(other) = joinable(env)? else { return Ok(()) };
    let theirs = UsmAllocation::new(&other, UsmKind::Device, N * 4)?;
    let mine = env.usm_u32(N)?;
    let (q, q_other) = (env.queue()?, Queue::new(&other, QueueProperties::default())?);
    // Not joined yet: refused, as UR does.
    check_err!(q.usm_fill(theirs.ptr(), &[1], 4, &[]), InvalidValue);
    env.context().share_usm_with(&other)?;
    check!(env.context().shares_usm_with(&other) && other.shares_usm_with(env.context()), "joined both ways");
    env.context().share_usm_with(&other)?;

    // A kernel of this context writes the other's allocation.
    let kernel = env.kernel("fill")?;
    let value = 7u32;
    let args = [KernelArg::Pointer(theirs.ptr()), KernelArg::value(&value)];
    // SAFETY: N work-items write the N u32 of `theirs`.
    unsafe { q.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), &[])? }.wait()?;
    check_eq!(read::<u32>(&q_other, theirs.ptr(), N)?, vec![7; N], "the kernel's writes, read in the owner");
    // Eager commands both ways.
    q.usm_fill(theirs.ptr().byte_add(N * 2), &[9, 0, 0, 0], N * 2, &[])?.wait()?;
    q.usm_memcpy(mine.ptr(), theirs.ptr(), N * 4, &[])?.wait()?;
    let expected = [vec![7u32; N / 2], vec![9; N / 2]].concat();
    check_eq!(read::<u32>(&q, mine.ptr(), N)?, expected, "fill and copy of this context on the other's memory");
    write(&q_other, mine.ptr(), &[3u32; N])?;
    check_eq!(read::<u32>(&q, mine.ptr(), N)?, vec![3; N], "the other context writes this one's memory");
    // A command buffer of this context over the other's memory.
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    cb.append_usm_memcpy(theirs.ptr(), mine.ptr(), N * 4, cmdbuf::AppendOptions::new())?;
    cb.finalize()?;
    q.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read::<u32>(&q_other, theirs.ptr(), N)?, vec![3; N], "the command buffer's copy");
    // A peer copy between joined contexts: the other context is the peer.
    write(&q, mine.ptr(), &[4u32; N])?;
    q.usm_copy_peer(theirs.ptr(), mine.ptr(), N * 4, &[])?.wait()?;
    check_eq!(read::<u32>(&q_other, theirs.ptr(), N)?, vec![4; N], "the peer copy");
    // Bounds are those of the allocation that holds the pointer.
    check_err!(q.usm_fill(theirs.ptr().byte_add(N * 2), &[1], N * 4, &[]), InvalidSize);
    check_err!(cb.append_usm_fill(theirs.ptr(), &[1], N * 4 + 1, cmdbuf::AppendOptions::new()), InvalidSize);
    Ok(())
}

/// Joining is transitive, a context not joined still refuses the pointers,
/// and a device's emulated view is the same device.
fn joining_is_transitive_and_per_device(env: &Env) -> CaseResult {
    let Some(b) = joinable(env)? else { return Ok(()) };
    let c = Context::new(env.device())?;
    let in_b = UsmAllocation::new(&b, UsmKind::Device, N)?;
    let q_c = Queue::new(&c, QueueProperties::default())?;
    env.context().share_usm_with(&b)?;
    check!(!c.shares_usm_with(&b), "a third context joined without a join");
    check_err!(q_c.usm_fill(in_b.ptr(), &[1], N, &[]), InvalidValue);
    c.share_usm_with(env.context())?;
    check!(c.shares_usm_with(&b) && b.shares_usm_with(&c), "joined through the suite's context");
    q_c.usm_fill(in_b.ptr(), &[5], N, &[])?.wait()?;
    check_eq!(read::<u8>(&Queue::new(&b, QueueProperties::default())?, in_b.ptr(), N)?, vec![5; N]);
    // The emulated view holds the same device.
    let view = Context::new(&env.device().emulated())?;
    view.share_usm_with(&b)?;
    check!(view.shares_usm_with(env.context()), "the view joined the group");
    Ok(())
}
