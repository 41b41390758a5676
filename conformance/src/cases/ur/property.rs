//! A property test with no UR counterpart: random command-buffer DAGs of USM
//! fills, USM copies and kernel launches over sub-ranges of a few
//! allocations, whose dependencies make them race-free, run twice on the
//! device and compared with a host model that runs the commands in program
//! order. Proptest generates the programs from a fixed seed and shrinks a
//! failing one; the failure message names the seed and the minimal program.
//!
//! The dependency tracker ([`Hazards`]) and the program runner
//! ([`check_program`]) are shared with the `large` group.

use std::fmt;
use std::ops::Range;

use cmdbuf::{AppendOptions, CommandBufferDesc, KernelArg, KernelLaunch, SyncPoint, UsmAllocation};
use proptest::prelude::*;

use super::prop_runner;
use crate::harness::{CaseError, CaseResult, Env, fill_reference, read, write};
use crate::{cases, check};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["property";
        random_dags,
        random_dags_in_order,
        wrong_model_is_caught,
    ]
}

/// Allocations of a generated program.
const ALLOCS: usize = 6;
/// `u32` elements per allocation.
const ELEMS: usize = 64;
/// Programs per case: each runs its buffer twice on the device, and the
/// three cases together stay within a few seconds on two cores per device.
const PROGRAMS: u32 = 24;

/// Element ranges of allocations: (allocation, elements).
type Ranges = Vec<(usize, Range<usize>)>;

/// One command of a program; ranges are in `u32` elements.
#[derive(Clone, Debug)]
pub(in crate::cases) enum Op {
    /// `append_usm_fill` of `dst[start..start + len]` with a byte pattern.
    Fill { dst: usize, start: usize, len: usize, pattern: Vec<u8> },
    /// `append_usm_memcpy` between two different allocations.
    Memcpy { dst: usize, dst_start: usize, src: usize, src_start: usize, len: usize },
    /// `axpb` in place over `buf[start..start + len]`, launched with global
    /// offset `offset` and the pointer moved back by as much.
    Axpb { buf: usize, start: usize, len: usize, a: u32, b: u32, offset: usize },
    /// `copy_add` from one allocation to another, with global offset
    /// `offset` and both pointers moved back by as much.
    CopyAdd { dst: usize, dst_start: usize, src: usize, src_start: usize, len: usize, k: u32, offset: usize },
}

/// A command and an optional extra dependency, `1 + back % index` commands back.
#[derive(Clone, Debug)]
pub(in crate::cases) struct Step {
    pub(in crate::cases) op: Op,
    pub(in crate::cases) extra_dep: Option<usize>,
}

/// A generated program.
#[derive(Clone, Debug)]
pub(in crate::cases) struct Program {
    pub(in crate::cases) in_order: bool,
    pub(in crate::cases) init_seed: u32,
    pub(in crate::cases) steps: Vec<Step>,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.op {
            Op::Fill { dst, start, len, pattern } => write!(f, "fill a{dst}[{start}..+{len}] with {pattern:02x?}")?,
            Op::Memcpy { dst, dst_start, src, src_start, len } => {
                write!(f, "memcpy a{dst}[{dst_start}..+{len}] <- a{src}[{src_start}..]")?
            }
            Op::Axpb { buf, start, len, a, b, offset } => {
                write!(f, "axpb a{buf}[{start}..+{len}] a={a} b={b} (offset {offset})")?
            }
            Op::CopyAdd { dst, dst_start, src, src_start, len, k, offset } => {
                write!(f, "copy_add a{dst}[{dst_start}..+{len}] <- a{src}[{src_start}..] + {k} (offset {offset})")?
            }
        }
        if let Some(back) = self.extra_dep {
            write!(f, " [extra dep, back {back}]")?;
        }
        Ok(())
    }
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} commands, in_order: {}, init_seed: {:#x}", self.steps.len(), self.in_order, self.init_seed)?;
        for (i, step) in self.steps.iter().enumerate() {
            writeln!(f, "  {i}: {step}")?;
        }
        Ok(())
    }
}

impl Op {
    /// What the command reads and writes, as (allocation, element range);
    /// an in-place update counts as a write only.
    fn accesses(&self) -> (Ranges, Ranges) {
        match *self {
            Op::Fill { dst, start, len, .. } => (vec![], vec![(dst, start..start + len)]),
            Op::Axpb { buf, start, len, .. } => (vec![], vec![(buf, start..start + len)]),
            Op::Memcpy { dst, dst_start, src, src_start, len }
            | Op::CopyAdd { dst, dst_start, src, src_start, len, .. } => {
                (vec![(src, src_start..src_start + len)], vec![(dst, dst_start..dst_start + len)])
            }
        }
    }

    /// Runs the command on the host model; `mutant` perturbs `axpb` so that
    /// a case can check the comparison notices.
    fn apply(&self, model: &mut [Vec<u32>], mutant: bool) {
        match self {
            Op::Fill { dst, start, len, pattern } => {
                let bytes = fill_reference(pattern, len * 4);
                for (i, word) in bytes.chunks_exact(4).enumerate() {
                    model[*dst][start + i] = u32::from_le_bytes(word.try_into().unwrap());
                }
            }
            Op::Memcpy { dst, dst_start, src, src_start, len } => {
                for i in 0..*len {
                    model[*dst][dst_start + i] = model[*src][src_start + i];
                }
            }
            Op::Axpb { buf, start, len, a, b, .. } => {
                let b = if mutant { b.wrapping_add(1) } else { *b };
                for v in &mut model[*buf][*start..start + len] {
                    *v = v.wrapping_mul(*a).wrapping_add(b);
                }
            }
            Op::CopyAdd { dst, dst_start, src, src_start, len, k, .. } => {
                for i in 0..*len {
                    model[*dst][dst_start + i] = model[*src][src_start + i].wrapping_add(*k);
                }
            }
        }
    }
}

/// Race-free dependencies derived from program order, element by element:
/// a command depends on the last writer of everything it touches, and a
/// writer also on every reader since that write.
pub(in crate::cases) struct Hazards {
    elems: usize,
    last_writer: Vec<Option<u32>>,
    readers: Vec<Vec<u32>>,
}

impl Hazards {
    /// A tracker for `allocs` allocations of `elems` elements each.
    pub(in crate::cases) fn new(allocs: usize, elems: usize) -> Hazards {
        Hazards { elems, last_writer: vec![None; allocs * elems], readers: vec![Vec::new(); allocs * elems] }
    }

    /// Records command `index` and returns the earlier commands it must
    /// follow, sorted and without duplicates. Ranges are (allocation,
    /// elements); a range both read and written is passed as written.
    pub(in crate::cases) fn record(
        &mut self,
        index: u32,
        reads: &[(usize, Range<usize>)],
        writes: &[(usize, Range<usize>)],
    ) -> Vec<u32> {
        let mut deps = Vec::new();
        for (a, range) in reads {
            for e in range.clone() {
                deps.extend(self.last_writer[a * self.elems + e]);
            }
        }
        for (a, range) in writes {
            for e in range.clone() {
                let k = a * self.elems + e;
                deps.extend(self.last_writer[k]);
                deps.append(&mut self.readers[k]);
                self.last_writer[k] = Some(index);
            }
        }
        for (a, range) in reads {
            for e in range.clone() {
                self.readers[a * self.elems + e].push(index);
            }
        }
        deps.sort_unstable();
        deps.dedup();
        deps
    }
}

/// The initial contents of allocation `a`, element `e`.
fn initial(seed: u32, a: usize, e: usize) -> u32 {
    (seed ^ ((a as u32) << 16) ^ (e as u32)).wrapping_mul(0x9E37_79B1).rotate_left(7)
}

/// Records `program` over `allocs` allocations of `elems` `u32`s, runs it
/// twice (resetting the allocations in between) and compares every
/// allocation with the host model. `Err` describes the first difference.
pub(in crate::cases) fn check_program(
    env: &Env,
    program: &Program,
    allocs: usize,
    elems: usize,
    mutant: bool,
) -> Result<(), CaseError> {
    let mem: Vec<UsmAllocation> = (0..allocs).map(|_| env.usm_u32(elems)).collect::<Result<_, _>>()?;
    let ptr = |a: usize, e: usize| mem[a].ptr().byte_add(e * 4);
    let (axpb, copy_add) = (env.kernel("axpb")?, env.kernel("copy_add")?);
    let cb = env.command_buffer(CommandBufferDesc { in_order: program.in_order, ..Default::default() })?;
    let mut hazards = Hazards::new(allocs, elems);
    let mut points: Vec<SyncPoint> = Vec::with_capacity(program.steps.len());
    for (i, step) in program.steps.iter().enumerate() {
        let (reads, writes) = step.op.accesses();
        let mut deps = hazards.record(i as u32, &reads, &writes);
        if let (Some(back), true) = (step.extra_dep, i > 0) {
            deps.push((i - 1 - back % i) as u32);
        }
        let after: Vec<SyncPoint> = deps.iter().map(|d| points[*d as usize]).collect();
        let opts = AppendOptions::new().after(&after);
        let appended = match &step.op {
            Op::Fill { dst, start, len, pattern } => cb.append_usm_fill(ptr(*dst, *start), pattern, len * 4, opts)?,
            Op::Memcpy { dst, dst_start, src, src_start, len } => {
                cb.append_usm_memcpy(ptr(*dst, *dst_start), ptr(*src, *src_start), len * 4, opts)?
            }
            Op::Axpb { buf, start, len, a, b, offset } => {
                let args = [KernelArg::Pointer(ptr(*buf, start - offset)), KernelArg::value(a), KernelArg::value(b)];
                let global_offset = [*offset];
                // SAFETY: items `offset..offset + len` touch elements
                // `start..start + len` of `buf` from a pointer `offset`
                // elements before `start`, all inside the allocation.
                unsafe {
                    cb.append_kernel_launch(
                        &KernelLaunch::new(&axpb, &[*len], &args).global_offset(&global_offset),
                        &[],
                        opts,
                    )?
                }
            }
            Op::CopyAdd { dst, dst_start, src, src_start, len, k, offset } => {
                let args = [
                    KernelArg::Pointer(ptr(*dst, dst_start - offset)),
                    KernelArg::Pointer(ptr(*src, src_start - offset)),
                    KernelArg::value(k),
                ];
                let global_offset = [*offset];
                // SAFETY: as for axpb, on both sides: the offset is at most
                // either start and both ranges end inside their allocations.
                unsafe {
                    cb.append_kernel_launch(
                        &KernelLaunch::new(&copy_add, &[*len], &args).global_offset(&global_offset),
                        &[],
                        opts,
                    )?
                }
            }
        };
        points.push(appended.sync_point);
    }
    cb.finalize()?;

    let start: Vec<Vec<u32>> =
        (0..allocs).map(|a| (0..elems).map(|e| initial(program.init_seed, a, e)).collect()).collect();
    let mut expected = start.clone();
    for step in &program.steps {
        step.op.apply(&mut expected, mutant);
    }
    let queue = env.queue()?;
    for round in 1..=2 {
        for (m, data) in mem.iter().zip(&start) {
            write(&queue, m.ptr(), data)?;
        }
        queue.enqueue_command_buffer(&cb, &[])?.wait()?;
        for (a, m) in mem.iter().enumerate() {
            let got = read::<u32>(&queue, m.ptr(), elems)?;
            let wrong: Vec<usize> = (0..elems).filter(|e| got[*e] != expected[a][*e]).collect();
            if let Some(&e) = wrong.first() {
                return Err(CaseError::Fail(format!(
                    "enqueue {round}: allocation a{a} differs from the host model at {} \
                     element(s), first a{a}[{e}]: device {:#x}, model {:#x}",
                    wrong.len(),
                    got[e],
                    expected[a][e]
                )));
            }
        }
    }
    Ok(())
}

/// An element range `start..start + len` inside an allocation.
fn range() -> impl Strategy<Value = (usize, usize)> {
    (0..ELEMS, 0..ELEMS).prop_map(|(a, b)| (a.min(b), a.abs_diff(b) + 1))
}

/// Source and destination allocations (different) and ranges of one length.
fn two_ranges() -> impl Strategy<Value = (usize, usize, usize, usize, usize)> {
    (0..ALLOCS, 1..ALLOCS, 0..ELEMS, 0..ELEMS, 1..=ELEMS).prop_map(|(src, delta, src_start, dst_start, len)| {
        let len = len.min(ELEMS - src_start.max(dst_start));
        ((src + delta) % ALLOCS, dst_start, src, src_start, len)
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..ALLOCS, range(), prop_oneof![Just(1usize), Just(2), Just(4), Just(8), Just(16)], any::<[u8; 16]>())
            .prop_map(|(dst, (start, len), plen, bytes)| {
                // The fill size must be a multiple of the pattern.
                let mut plen = plen;
                while !(len * 4).is_multiple_of(plen) {
                    plen /= 2;
                }
                Op::Fill { dst, start, len, pattern: bytes[..plen].to_vec() }
            }),
        two_ranges().prop_map(|(dst, dst_start, src, src_start, len)| Op::Memcpy {
            dst,
            dst_start,
            src,
            src_start,
            len,
        }),
        (0..ALLOCS, range(), any::<u32>(), any::<u32>(), 0..ELEMS).prop_map(|(buf, (start, len), a, b, offset)| {
            Op::Axpb { buf, start, len, a, b, offset: offset % (start + 1) }
        }),
        (two_ranges(), any::<u32>(), 0..ELEMS).prop_map(|((dst, dst_start, src, src_start, len), k, offset)| {
            Op::CopyAdd { dst, dst_start, src, src_start, len, k, offset: offset % (dst_start.min(src_start) + 1) }
        }),
    ]
}

fn program(in_order: bool) -> impl Strategy<Value = Program> {
    let step =
        (op(), proptest::option::weighted(0.25, 0..1000usize)).prop_map(|(op, extra_dep)| Step { op, extra_dep });
    (any::<u32>(), proptest::collection::vec(step, 50..=500)).prop_map(move |(init_seed, steps)| Program {
        in_order,
        init_seed,
        steps,
    })
}

/// Runs `programs` generated programs from `seed`; on failure the message
/// names the seed, the first failing program's number and the shrunk program.
fn run_property(env: &Env, seed: u64, in_order: bool, programs: u32, mutant: bool) -> Result<(), String> {
    // Each shrink step runs a program; a mutant only needs to be caught.
    let max_shrink = if mutant { 40 } else { 2000 };
    let result = prop_runner::run(seed, programs, max_shrink, &program(in_order), |p| {
        check_program(env, &p, ALLOCS, ELEMS, mutant).map_err(|e| match e {
            CaseError::Fail(m) | CaseError::Skip(m) => m,
        })
    });
    match result {
        Ok(()) => Ok(()),
        Err(Ok(failure)) => Err(format!(
            "random-DAG property failed (ChaCha seed {seed:#x}, in_order {in_order}; \
             first failure at generated program {} of {programs}; rerun the case to \
             reproduce){}: {}\nminimal program: {}",
            failure.first_failure,
            failure.shrink_note(),
            failure.reason,
            failure.minimal
        )),
        Err(Err(reason)) => Err(format!("random-DAG property aborted (ChaCha seed {seed:#x}): {reason}")),
    }
}

fn random_dags(env: &Env) -> CaseResult {
    run_property(env, 0x5EED_0001, false, PROGRAMS, false).map_err(CaseError::Fail)
}

/// The same programs' shape on in-order buffers, where sync points are
/// validated but add nothing to the order.
fn random_dags_in_order(env: &Env) -> CaseResult {
    run_property(env, 0x5EED_0002, true, PROGRAMS, false).map_err(CaseError::Fail)
}

/// The comparison has teeth: a host model that gets `axpb` wrong is caught,
/// and the report names the seed and a shrunk program.
fn wrong_model_is_caught(env: &Env) -> CaseResult {
    let Err(message) = run_property(env, 0x5EED_0003, false, 8, true) else {
        return Err(CaseError::Fail("a host model with a wrong axpb matched the device on 8 programs".into()));
    };
    check!(message.contains("from the host model"), "not a model mismatch: {message}");
    check!(message.contains("ChaCha seed 0x5eed0003"), "{message}");
    let commands: usize = message
        .split("minimal program: ")
        .nth(1)
        .and_then(|m| m.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX);
    check!(commands <= 500, "{message}");
    check!(message.contains("axpb"), "the minimal program lost its axpb: {message}");
    Ok(())
}
