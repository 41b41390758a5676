//! Updates of a few commands in a long updatable buffer (issue 15, goal 1):
//! backends that re-record only the part of the buffer an update touches
//! (OpenCL records an updatable buffer in steps of a few dozen commands and
//! re-records the changed steps) must still run every command, old and new,
//! with the arguments current at each enqueue.

use cmdbuf::{AppendOptions, CommandBuffer, CommandHandle, KernelArg, KernelLaunch, KernelLaunchUpdate, SyncPoint};
use cmdbuf::{Event, Queue, UpdateCapabilities, UsmAllocation, UsmKind};

use super::update_args::handle_of;
use crate::harness::{CaseError, CaseResult, Env, read, write};
use crate::{Requires, cases, check_eq};

const ARGS: Requires = Requires::update(UpdateCapabilities::KERNEL_ARGUMENTS);

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["update_scale";
        one_in_a_long_chain => ARGS,
        several_steps_then_back => ARGS,
        while_a_submission_waits => ARGS,
        many_commands_each_twice_in_one_call => ARGS,
    ]
}

/// Commands in the chain: several of OpenCL's 32-command steps, and a
/// partial last one.
const LEN: usize = 100;
/// The value every command writes at first.
const FIRST: u32 = 7;

/// A chain of `LEN` one-item `fill` launches, command `i` writing `FIRST`
/// into element `i` of `data`.
struct Chain {
    queue: Queue,
    cb: CommandBuffer,
    handles: Vec<CommandHandle>,
    data: UsmAllocation,
    expected: Vec<u32>,
}

impl Chain {
    fn new(env: &Env) -> Result<Chain, CaseError> {
        let queue = env.queue()?;
        let data = env.usm_u32(LEN)?;
        write(&queue, data.ptr(), &[0u32; LEN])?;
        let kernel = env.kernel("fill")?;
        let cb = env.updatable_command_buffer()?;
        let args = [KernelArg::Pointer(data.ptr()), KernelArg::value(&FIRST)];
        let mut handles = Vec::with_capacity(LEN);
        let mut last: Option<SyncPoint> = None;
        for i in 0..LEN {
            let offset = [i];
            let launch = KernelLaunch::new(&kernel, &[1], &args).global_offset(&offset);
            let deps: Vec<SyncPoint> = last.into_iter().collect();
            // SAFETY: one item at offset i < LEN of a LEN-u32 allocation.
            let appended = unsafe { cb.append_kernel_launch(&launch, &[], AppendOptions::new().after(&deps))? };
            last = Some(appended.sync_point);
            handles.push(handle_of(appended)?);
        }
        cb.finalize()?;
        Ok(Chain { queue, cb, handles, data, expected: vec![FIRST; LEN] })
    }

    /// Command `i` writes `value` from the next enqueue on.
    fn set(&mut self, updates: &[(usize, u32)]) -> CaseResult {
        let changes: Vec<KernelLaunchUpdate<'_>> = updates
            .iter()
            .map(|(i, v)| KernelLaunchUpdate::new(&self.handles[*i]).arg(1, KernelArg::value(v)))
            .collect();
        // SAFETY: only value arguments change.
        unsafe { self.cb.update_kernel_launches(&changes)? };
        for (i, v) in updates {
            self.expected[*i] = *v;
        }
        Ok(())
    }

    /// Clears the data, runs the buffer and checks every element.
    fn run_and_check(&self, what: &str) -> CaseResult {
        write(&self.queue, self.data.ptr(), &[0u32; LEN])?;
        self.queue.enqueue_command_buffer(&self.cb, &[])?.wait()?;
        check_eq!(read::<u32>(&self.queue, self.data.ptr(), LEN)?, self.expected, "{what}");
        Ok(())
    }
}

/// One command in the middle of the chain changes, twice: the others keep
/// writing their value.
fn one_in_a_long_chain(env: &Env) -> CaseResult {
    let mut chain = Chain::new(env)?;
    chain.run_and_check("before any update")?;
    chain.set(&[(LEN / 2, 99)])?;
    chain.run_and_check("after the first update")?;
    chain.set(&[(LEN / 2, 11)])?;
    chain.run_and_check("after the second update of the same command")
}

/// Commands of different parts of the chain (first, middle, last) change in
/// one call, then in separate calls between runs, then back.
fn several_steps_then_back(env: &Env) -> CaseResult {
    let mut chain = Chain::new(env)?;
    chain.set(&[(0, 1), (40, 2), (LEN - 1, 3)])?;
    chain.run_and_check("three commands updated in one call")?;
    chain.set(&[(33, 4)])?;
    chain.set(&[(70, 5)])?;
    chain.run_and_check("two more updated in two calls")?;
    chain.set(&[(0, FIRST), (33, FIRST), (40, FIRST), (70, FIRST), (LEN - 1, FIRST)])?;
    chain.run_and_check("every updated command set back")
}

/// Twenty commands, each given twice in one call, the second time with its
/// final value: the last update of a command wins however many commands the
/// call touches (the front end looks commands up differently for a few and
/// for many).
fn many_commands_each_twice_in_one_call(env: &Env) -> CaseResult {
    let mut chain = Chain::new(env)?;
    let touched: Vec<usize> = (0..20).map(|k| k * 5 + 1).collect();
    let mut updates: Vec<(usize, u32)> = touched.iter().map(|&i| (i, 1000 + i as u32)).collect();
    updates.extend(touched.iter().rev().map(|&i| (i, 2000 + i as u32)));
    chain.set(&updates)?;
    chain.run_and_check("each command's second update in the call")
}

/// An update made while a submission waits reaches the next submission only.
fn while_a_submission_waits(env: &Env) -> CaseResult {
    let chain = Chain::new(env)?;
    let other = env.usm_u32(LEN)?;
    write(&chain.queue, other.ptr(), &[0u32; LEN])?;
    let slow_queue = env.queue()?;
    const BYTES: usize = 32 << 20;
    let scratch = env.usm(UsmKind::Device, BYTES)?;
    let slow = slow_queue.usm_fill(scratch.ptr(), &[0x5A; 4], BYTES, &[])?;
    let first = chain.queue.enqueue_command_buffer(&chain.cb, &[&slow])?;
    let value = 21u32;
    // SAFETY: the other allocation has LEN u32s, as the data.
    unsafe {
        chain.cb.update_kernel_launches(&[KernelLaunchUpdate::new(&chain.handles[64])
            .arg(0, KernelArg::Pointer(other.ptr()))
            .arg(1, KernelArg::value(&value))])?
    };
    let second = chain.queue.enqueue_command_buffer(&chain.cb, &[])?;
    Event::wait_all(&[&first, &second])?;
    // The first submission wrote FIRST everywhere; the second wrote FIRST
    // everywhere but 64, which it wrote into the other allocation.
    check_eq!(read::<u32>(&chain.queue, chain.data.ptr(), LEN)?, vec![FIRST; LEN], "the data");
    let mut other_expected = vec![0u32; LEN];
    other_expected[64] = value;
    check_eq!(read::<u32>(&chain.queue, other.ptr(), LEN)?, other_expected, "the other allocation");
    Ok(())
}
