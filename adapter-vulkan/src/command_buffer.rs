//! Native command buffers: secondary command buffers recorded at finalize,
//! executed by a small primary command buffer at each enqueue.
//!
//! **Finalize** turns the recording ([`VkCommandBuffer`], which only collects
//! the commands) into the executable buffer ([`VkExecutable`]) by planning
//! the recorded DAG, one named step of [`Commands::build`] per item below:
//! - *dependencies*: the sync points of each command, plus its wait events
//!   that are signal events of earlier commands of the same buffer (those
//!   order commands of one execution, like sync points);
//! - *stages*: commands that copy into raw host memory (`*_host` reads)
//!   finish with a host-side copy, and commands that copy from it (`*_host`
//!   writes) start with one; a command after such a read, or such a write
//!   after anything, goes to a later stage. Stages run as separate device
//!   submissions with the host copies between them. A buffer without raw
//!   host memory (the common case) is one stage: one submission;
//! - *levels*: within a stage, a command's level is one more than its
//!   deepest dependency's. Commands are recorded level by level, with one
//!   pipeline barrier between levels, so independent commands run between
//!   barriers instead of behind one barrier each;
//! - *argument blocks*: every kernel (and every fill that needs the fill
//!   shader) gets a block in one device-local parameter buffer; kernels push
//!   its address and dispatch indirectly from its header. Every kernel also
//!   gets a status word (see the kernel ABI), contiguous per stage.
//!
//! The recorded sequence of a stage is split into secondary command buffers
//! of at most [`CHUNK`] commands, recorded with `SIMULTANEOUS_USE`, so that
//! a submission may be pending while the next one is recorded and submitted.
//!
//! **Enqueue** submits, per stage, a primary command buffer that executes
//! the stage's secondaries, then copies the stage's status words out for
//! the completion check and clears them for the next submission. The
//! primary is recorded once and resubmitted while nothing changes, as an
//! application resubmits a pre-recorded command buffer: each stage keeps a
//! few ([`REUSABLE`]), each with its own status-word copy, and a submission
//! holds the one it uses until it completes. A submission that finds them
//! all in use (the host runs ahead of the device) submits the stage's one
//! primary recorded for simultaneous use, followed by a small command buffer
//! of its own that copies the status words out. Changed argument blocks are
//! copied from a host-visible snapshot into the parameter buffer by a small
//! command buffer submitted before the primary (first stage only). The
//! host does nothing per command at an enqueue. The
//! first stage waits for the enqueue's wait list, the queue's order, the
//! previous submission of this buffer (so submissions stay in order, across
//! queues too) and the wait events of its commands, resolved now; each later
//! stage waits for the stage before. Signal events of a stage's commands are
//! pointed at that stage's completion.
//!
//! **Updates** of arguments, global size and offset rewrite the command's
//! argument block in a host-side shadow: the next enqueue copies the changed
//! blocks, and nothing is re-recorded. A new local size, new local-memory
//! sizes or another kernel need another pipeline: only the secondary holding
//! the command is recorded again (into a new command buffer: submissions in
//! flight keep the old one). An update costs what it changes: it touches
//! the updated commands' blocks and records, nothing per command of the
//! buffer. The commands it replaces are kept until the buffer's submissions
//! in flight have completed, so memory an update stops referring to outlives
//! them (the front end keeps the buffer itself alive until then).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use ash::vk;
use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::adapter::toolbox::Recording;
use smallvec::SmallVec;

use crate::cmd::{
    GpuOp, Groups, Pool, host_and_transfer_barrier, host_barrier, level_barrier, params_barrier, record_ops,
    results_barrier,
};
use crate::event::{RunEvent, SignalEvent, VkEvent, core_of};
use crate::gpu::Gpu;
use crate::lower::{Block, Lowered, Sink, Staging, block_bytes, host_sides, lower};
use crate::memory::{Allocation, MemKind, Slice};
use crate::profiling::QuerySpan;
use crate::program::{ArgBlock, Pipeline, VkKernel};
use crate::queue::VkQueue;
use crate::shared::DeviceShared;
use crate::shared::host_work::{HostCopy, Kept, KernelNames, Launches, StagingPtr, StatusCheck};
use crate::shared::state::EventCore;
use crate::shared::submit::{Submission, schedule};

/// Commands per secondary command buffer: what an update that needs
/// re-recording records again.
pub(crate) const CHUNK: usize = 256;
/// Alignment of argument blocks in the parameter buffer.
const BLOCK_ALIGN: usize = 16;

/// A recorded secondary command buffer and the pipelines it uses.
struct Secondary {
    cmd: crate::cmd::PooledCmd,
    _pipelines: Vec<Arc<Pipeline>>,
}

struct Chunk {
    /// Positions in the stage's recording order.
    range: Range<usize>,
    secondary: Arc<Secondary>,
    dirty: bool,
}

#[derive(Default)]
struct Stage {
    /// Commands in recording order (level, then append order).
    order: Vec<u32>,
    /// Whether a barrier precedes each position (a new level starts there).
    barrier_before: Vec<bool>,
    chunks: Vec<Chunk>,
    /// Commands with wait events from outside the buffer.
    waiting: Vec<u32>,
    /// Host copies before and after the stage's device work.
    pre: Vec<HostCopy>,
    post: Vec<HostCopy>,
    /// The stage's kernel commands, whose status words are the slots from
    /// `first_slot` on, in this order.
    kernels: Arc<[u32]>,
    first_slot: u32,
    /// Primaries recorded for this stage's submissions, reused by the next
    /// submission once the one using them has completed.
    primaries: Vec<Arc<Primary>>,
    /// A primary recorded for simultaneous use, without the status words'
    /// copy: submitted while every one of `primaries` is in use, by any
    /// number of submissions at once, each copying the words out with a
    /// small command buffer of its own.
    shared: Option<Arc<Primary>>,
}

/// A stage's primary command buffer, recorded once and submitted again and
/// again while nothing changes, as an application pre-records one.
struct Primary {
    cmd: crate::cmd::PooledCmd,
    /// Where the submission copies the stage's status words out to (its
    /// own, since the words are checked after the next may have started).
    status_out: Option<(Allocation, StagingPtr)>,
    _secondaries: Vec<Arc<Secondary>>,
}

/// Reusable primaries kept per stage: submissions beyond this many in flight
/// at once submit the stage's shared primary. Submitting one primary in
/// several submissions at once needs it recorded for simultaneous use; the
/// reusable ones are not, so that the common case submits what an
/// application's plain pre-recorded buffer is.
const REUSABLE: usize = 4;

/// A command's lowered form and place.
struct Placed {
    stage: u32,
    chunk: u32,
    /// Offset of its argument block in the parameter buffer.
    block: Option<usize>,
    /// Address of its status word (kernels).
    status: Option<u64>,
    /// Dependencies: sync points plus waits on earlier commands' signal events.
    deps: SmallVec<[u32; 4]>,
    /// Wait events from outside the buffer.
    external: Vec<Event>,
    ops: SmallVec<[GpuOp; 1]>,
    pipelines: SmallVec<[Arc<Pipeline>; 1]>,
}

/// Argument blocks: the device-local buffer the commands read, and the
/// host-side shadow updates write.
struct Params {
    live: Option<Arc<Allocation>>,
    shadow: Vec<u8>,
    /// Blocks changed since the last enqueue: `(offset, len)`.
    dirty: Vec<(usize, usize)>,
}

/// What finalize builds.
struct Built {
    stages: Vec<Stage>,
    placed: Vec<Placed>,
    params: Params,
    /// One status word per kernel command, device-local, zero between submissions.
    status: Option<Arc<Allocation>>,
    /// Staging memory of commands with raw host memory.
    staging: Vec<Arc<Allocation>>,
}

/// What was appended, in both phases: the commands, and what finds and
/// names them.
struct Commands {
    rt: Arc<DeviceShared>,
    desc: CommandBufferDesc,
    pool: Arc<Pool>,
    /// The commands; each one's payload is the bytes reserved for its
    /// argument block (the largest of its kernel and the alternatives an
    /// update may switch to).
    recording: Recording<SignalEvent, usize>,
    /// Signal events of this buffer by address, with their command.
    signals: HashMap<usize, u32>,
    /// The commands with a signal event.
    signalling: Vec<u32>,
    /// Each command's kernel name, for the messages of failed kernels.
    names: Arc<KernelNames>,
}

/// A command buffer being recorded: appends only collect the commands;
/// finalize plans and records them ([`Commands::build`]).
pub(crate) struct VkCommandBuffer {
    commands: Commands,
}

/// A finalized command buffer: the commands and what finalize built from them.
struct VkExecutable {
    commands: Commands,
    built: Built,
    /// Commands replaced by updates while a submission may still use them;
    /// dropped once the latest submission has completed.
    retired: Vec<Command>,
    /// Plan and record everything again at the next enqueue.
    replan: bool,
    previous: Option<Arc<EventCore>>,
}

/// Where planning puts each command: its stage and level, and its
/// dependencies (sync points plus waits on earlier signal events) and
/// other wait events.
struct Layout {
    stage_of: Vec<u32>,
    level: Vec<u32>,
    deps: Vec<(SmallVec<[u32; 4]>, Vec<Event>)>,
    stage_count: usize,
}

/// Each kernel command's status word.
struct Slots {
    /// Its number in the status memory, by command.
    slot_of: Vec<Option<u32>>,
    /// The status memory; `None` without kernels.
    status: Option<Arc<Allocation>>,
}

/// Where each command's argument block lies in the parameter buffer.
struct Blocks {
    offsets: Vec<Option<usize>>,
    total: usize,
    params: Params,
}

fn event_key(e: &Arc<dyn EventImpl>) -> usize {
    Arc::as_ptr(e).cast::<()>() as usize
}

/// Argument blocks and staging of a command-buffer command.
struct CbSink<'a> {
    gpu: &'a Arc<Gpu>,
    live: Option<&'a Arc<Allocation>>,
    shadow: &'a mut [u8],
    block: Option<usize>,
    status: Option<u64>,
    staging: &'a mut Vec<Arc<Allocation>>,
    /// Updatable buffers dispatch indirectly, so that new sizes need no
    /// re-recording; others dispatch directly, which costs less per kernel.
    indirect: bool,
}

impl Sink for CbSink<'_> {
    fn block(&mut self, bytes: &[u8]) -> Result<Block> {
        let (Some(offset), Some(live)) = (self.block, self.live) else {
            return Err(err!(Unknown, "a command needs an argument block none was reserved for"));
        };
        self.shadow[offset..offset + bytes.len()].copy_from_slice(bytes);
        Ok(Block { buffer: live.buffer(), offset: offset as u64, address: live.address() + offset as u64 })
    }

    fn staging(&mut self, len: usize) -> Result<Staging> {
        let alloc = Arc::new(Allocation::new(self.gpu, len as u64, MemKind::Host)?);
        let ptr = alloc.mapped().ok_or_else(|| err!(Unknown, "staging memory is not mapped"))?;
        let staging = Staging { buffer: alloc.buffer(), offset: 0, ptr: StagingPtr(ptr) };
        self.staging.push(alloc);
        Ok(staging)
    }

    fn indirect(&self) -> bool {
        self.indirect
    }

    fn kernel_block(
        &mut self,
        _kernel: &cmdbuf_core::Kernel,
        _len: usize,
        contents: &mut dyn FnMut(u64) -> Result<ArgBlock>,
    ) -> Result<Block> {
        let status = self.status.ok_or_else(|| err!(Unknown, "a kernel command without a status word"))?;
        self.block(&contents(status)?)
    }
}

impl VkCommandBuffer {
    pub(crate) fn new(rt: Arc<DeviceShared>, desc: CommandBufferDesc) -> Result<VkCommandBuffer> {
        let pool = Pool::new(rt.gpu.clone())?;
        Ok(VkCommandBuffer {
            commands: Commands {
                rt,
                desc,
                pool,
                recording: Recording::new(),
                signals: HashMap::new(),
                signalling: Vec::new(),
                names: Arc::default(),
            },
        })
    }
}

impl Commands {
    /// Dependencies of command `i`: its sync points plus waits on signal
    /// events of earlier commands; and its other wait events.
    fn dependencies(&self, i: usize) -> (SmallVec<[u32; 4]>, Vec<Event>) {
        let rec = &self.recording[i as u32];
        let mut deps: SmallVec<[u32; 4]> = SmallVec::from_slice(rec.deps());
        let mut external = Vec::new();
        for e in rec.wait_events() {
            match self.signals.get(&event_key(e.imp())) {
                Some(&k) if (k as usize) < i => deps.push(k),
                // A wait on its own or a later command's signal event means
                // that command's previous execution, which this submission's
                // order already covers.
                Some(_) => {}
                None => external.push(e.clone()),
            }
        }
        deps.sort_unstable();
        deps.dedup();
        (deps, external)
    }

    /// Plans and records everything, in four steps: stages and levels,
    /// argument blocks, status words, then lowering and recording.
    fn build(&self) -> Result<Built> {
        let mut layout = self.layout();
        let mut blocks = self.argument_blocks()?;
        let mut stages: Vec<Stage> = (0..layout.stage_count).map(|_| Stage::default()).collect();
        let words = self.status_words(&layout, &mut stages)?;
        let deps = std::mem::take(&mut layout.deps);
        let (mut placed, staging) = self.lower_all(deps, &layout, &mut blocks, &words, &mut stages)?;
        self.record_stages(&layout, &mut stages, &mut placed)?;
        tracing::debug!(
            commands = self.recording.len(),
            stages = layout.stage_count,
            levels = layout.level.iter().max().map_or(0, |l| l + 1),
            param_bytes = blocks.total,
            "Vulkan command buffer planned"
        );
        Ok(Built { stages, placed, params: blocks.params, status: words.status, staging })
    }

    /// Each command's dependencies, stage and level (see the module
    /// documentation).
    fn layout(&self) -> Layout {
        let n = self.recording.len();
        let mut stage_of = vec![0u32; n];
        let mut level = vec![0u32; n];
        let mut sides = Vec::with_capacity(n);
        let mut placed_deps = Vec::with_capacity(n);
        for i in 0..n {
            let (deps, external) = self.dependencies(i);
            let (pre, post) = host_sides(self.recording[i as u32].command());
            sides.push((pre, post));
            let mut stage = 0;
            for &d in &deps {
                let d = d as usize;
                let after = u32::from(sides[d].1 || pre);
                stage = stage.max(stage_of[d] + after);
            }
            stage_of[i] = stage;
            level[i] = deps
                .iter()
                .filter(|d| stage_of[**d as usize] == stage)
                .map(|d| level[*d as usize] + 1)
                .max()
                .unwrap_or(0);
            placed_deps.push((deps, external));
        }
        let stage_count = stage_of.iter().max().map_or(1, |s| s + 1) as usize;
        Layout { stage_of, level, deps: placed_deps, stage_count }
    }

    /// Reserves each command's argument block in one parameter buffer.
    fn argument_blocks(&self) -> Result<Blocks> {
        let mut offsets = vec![None; self.recording.len()];
        let mut total = 0usize;
        for (i, rec) in self.recording.iter().enumerate() {
            if rec.extra > 0 {
                offsets[i] = Some(total);
                total += rec.extra.next_multiple_of(BLOCK_ALIGN);
            }
        }
        let live = if total > 0 {
            Some(Arc::new(Allocation::new(&self.rt.gpu, total as u64, MemKind::Device)?))
        } else {
            None
        };
        let mut params = Params { live, shadow: vec![0u8; total], dirty: Vec::new() };
        if total > 0 {
            params.dirty.push((0, total));
        }
        Ok(Blocks { offsets, total, params })
    }

    /// Gives every kernel command a status word, contiguous per stage:
    /// each command's slot, and the zeroed words.
    fn status_words(&self, layout: &Layout, stages: &mut [Stage]) -> Result<Slots> {
        let mut slots = 0u32;
        let mut slot_of = vec![None; self.recording.len()];
        for (s, stage) in stages.iter_mut().enumerate() {
            stage.first_slot = slots;
            let mut kernels = Vec::new();
            for (i, slot) in slot_of.iter_mut().enumerate() {
                if layout.stage_of[i] as usize == s && self.recording[i as u32].command().as_kernel().is_some() {
                    kernels.push(i as u32);
                    *slot = Some(slots);
                    slots += 1;
                }
            }
            stage.kernels = kernels.into();
        }
        let status = if slots > 0 {
            let alloc = Allocation::new(&self.rt.gpu, u64::from(slots) * 4, MemKind::Device)?;
            alloc.zero(&self.rt, 0, u64::from(slots) * 4)?;
            Some(Arc::new(alloc))
        } else {
            None
        };
        Ok(Slots { slot_of, status })
    }

    /// Lowers every command into its stage, writing argument blocks into the
    /// shadow and staging raw host memory.
    fn lower_all(
        &self,
        deps: Vec<(SmallVec<[u32; 4]>, Vec<Event>)>,
        layout: &Layout,
        blocks: &mut Blocks,
        words: &Slots,
        stages: &mut [Stage],
    ) -> Result<(Vec<Placed>, Vec<Arc<Allocation>>)> {
        let (stage_of, offsets, params) = (&layout.stage_of, &blocks.offsets, &mut blocks.params);
        let (slot_of, status) = (&words.slot_of, &words.status);
        let mut staging = Vec::new();
        let mut placed = Vec::with_capacity(deps.len());
        for (i, (deps, external)) in deps.into_iter().enumerate() {
            let status_word = slot_of[i].zip(status.as_ref()).map(|(slot, st)| st.address() + u64::from(slot) * 4);
            let mut sink = CbSink {
                gpu: &self.rt.gpu,
                live: params.live.as_ref(),
                shadow: &mut params.shadow,
                block: offsets[i],
                status: status_word,
                staging: &mut staging,
                indirect: self.desc.updatable,
            };
            let Lowered { ops, pre, post, pipelines } = lower(&self.rt, self.recording[i as u32].command(), &mut sink)?;
            let stage = &mut stages[stage_of[i] as usize];
            stage.pre.extend(pre);
            stage.post.extend(post);
            if !external.is_empty() {
                stage.waiting.push(i as u32);
            }
            placed.push(Placed {
                stage: stage_of[i],
                chunk: 0,
                block: offsets[i],
                status: status_word,
                deps,
                external,
                ops,
                pipelines,
            });
        }
        Ok((placed, staging))
    }

    /// Orders each stage's commands by level and records them into
    /// secondaries of at most [`CHUNK`] commands.
    fn record_stages(&self, layout: &Layout, stages: &mut [Stage], placed: &mut [Placed]) -> Result<()> {
        let n = self.recording.len() as u32;
        let level = &layout.level;
        for (s, stage) in stages.iter_mut().enumerate() {
            let mut order: Vec<u32> = (0..n).filter(|i| layout.stage_of[*i as usize] as usize == s).collect();
            order.sort_by_key(|i| (level[*i as usize], *i));
            stage.barrier_before =
                (0..order.len()).map(|p| p > 0 && level[order[p] as usize] != level[order[p - 1] as usize]).collect();
            stage.order = order;
            let positions = stage.order.len();
            let mut start = 0;
            loop {
                let end = (start + CHUNK).min(positions);
                let chunk = stage.chunks.len() as u32;
                for p in start..end {
                    placed[stage.order[p] as usize].chunk = chunk;
                }
                let secondary = self.record_chunk(stage, placed, start..end)?;
                stage.chunks.push(Chunk { range: start..end, secondary, dirty: false });
                start = end;
                if start >= positions {
                    break;
                }
            }
        }
        Ok(())
    }

    fn record_chunk(&self, stage: &Stage, placed: &[Placed], range: Range<usize>) -> Result<Arc<Secondary>> {
        let gpu = &self.rt.gpu;
        let mut pipelines = Vec::new();
        let cmd = self.pool.record_secondary(|cb| {
            let mut bound = vk::Pipeline::null();
            for p in range.clone() {
                if stage.barrier_before[p] {
                    level_barrier(gpu, cb, self.desc.updatable);
                }
                let node = &placed[stage.order[p] as usize];
                record_ops(gpu, cb, &node.ops, &mut bound)?;
                pipelines.extend(node.pipelines.iter().cloned());
            }
            Ok(())
        })?;
        pipelines.sort_by_key(|p| p.raw());
        pipelines.dedup_by_key(|p| p.raw());
        Ok(Arc::new(Secondary { cmd, _pipelines: pipelines }))
    }
}

impl VkExecutable {
    /// Brings the recording up to date with updates.
    fn refresh(&mut self) -> Result<()> {
        if self.replan {
            self.built = self.commands.build()?;
            self.replan = false;
            return Ok(());
        }
        let built = &mut self.built;
        let mut jobs = Vec::new();
        for (s, stage) in built.stages.iter().enumerate() {
            for (c, chunk) in stage.chunks.iter().enumerate() {
                if chunk.dirty {
                    jobs.push((s, c));
                }
            }
        }
        for (s, c) in jobs {
            let range = built.stages[s].chunks[c].range.clone();
            let secondary = self.commands.record_chunk(&built.stages[s], &built.placed, range)?;
            let stage = &mut built.stages[s];
            stage.chunks[c].secondary = secondary;
            stage.chunks[c].dirty = false;
            // Primaries that execute the old secondary are recorded again
            // (submissions in flight keep theirs until they complete).
            stage.primaries.clear();
            stage.shared = None;
            tracing::debug!(stage = s, chunk = c, "secondary command buffer recorded again");
        }
        Ok(())
    }

    /// The changed argument blocks, staged for the next submission to copy.
    fn take_dirty_params(&mut self) -> Result<Option<(Slice, Vec<vk::BufferCopy>)>> {
        let params = &mut self.built.params;
        if params.dirty.is_empty() {
            return Ok(None);
        }
        params.dirty.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::new();
        for &(o, l) in &params.dirty {
            match merged.last_mut() {
                Some(last) if last.0 + last.1 >= o => last.1 = last.1.max(o + l - last.0),
                _ => merged.push((o, l)),
            }
        }
        params.dirty.clear();
        let bytes: usize = merged.iter().map(|m| m.1).sum();
        let slice = self.commands.rt.arena.alloc(bytes as u64)?;
        let mut regions = Vec::with_capacity(merged.len());
        let mut at = 0;
        for (o, l) in merged {
            // SAFETY: the slice holds `bytes` bytes; `at + l <= bytes`.
            unsafe { std::ptr::copy_nonoverlapping(params.shadow[o..].as_ptr(), slice.ptr().add(at), l) };
            regions.push(vk::BufferCopy {
                src_offset: slice.offset() + at as u64,
                dst_offset: o as u64,
                size: l as u64,
            });
            at += l;
        }
        Ok(Some((slice, regions)))
    }
}

impl VkExecutable {
    /// Records one submission per stage (`events[s]` signals stage `s`),
    /// each later stage inheriting the one before; nothing is scheduled yet.
    fn record_submissions(
        &mut self,
        queue: &VkQueue,
        params: Option<&(Slice, Vec<vk::BufferCopy>)>,
        stage_deps: Vec<SmallVec<[Arc<EventCore>; 4]>>,
        events: &[Arc<EventCore>],
    ) -> Result<Vec<Submission>> {
        let Built { stages, params: built_params, status, staging, .. } = &mut self.built;
        let context = EnqueueContext {
            queue,
            commands: &self.commands,
            status: status.as_ref(),
            live: built_params.live.as_ref(),
            staging,
            params,
        };
        let mut subs = Vec::with_capacity(stages.len());
        for ((s, stage), deps) in stages.iter_mut().enumerate().zip(stage_deps) {
            let mut sub = context.submission(s, stage, events[s].clone(), deps)?;
            if s > 0 {
                sub.inherit = Some(events[s - 1].clone());
            }
            subs.push(sub);
        }
        Ok(subs)
    }

    /// Orders the first submission after the enqueue's wait list, the
    /// previous submission of this buffer and the queue, each later one
    /// after the stage before; points the signal events at their stage's
    /// completion and schedules every submission.
    fn schedule_in_order(
        &self,
        queue: &VkQueue,
        mut subs: Vec<Submission>,
        events: &[Arc<EventCore>],
        first_deps: SmallVec<[Arc<EventCore>; 4]>,
    ) {
        let last = events.last().expect("at least one stage");
        let first = &mut subs[0];
        first.deps.extend(first_deps);
        first.deps.extend(self.previous.clone());
        first.deps.extend(queue.order(last, false));
        for s in 1..subs.len() {
            let before = events[s - 1].clone();
            subs[s].deps.push(before);
        }
        for &i in &self.commands.signalling {
            if let Some(signal) = self.commands.recording[i].signal() {
                signal.set(events[self.built.placed[i as usize].stage as usize].clone());
            }
        }
        for sub in subs {
            schedule(sub);
        }
    }
}

impl Built {
    /// Each stage's wait events from outside the buffer, resolved to the
    /// events they stand for now.
    fn external_waits(&self) -> Result<Vec<SmallVec<[Arc<EventCore>; 4]>>> {
        let mut stage_deps = Vec::with_capacity(self.stages.len());
        for stage in &self.stages {
            let mut deps = SmallVec::new();
            for &i in &stage.waiting {
                for e in &self.placed[i as usize].external {
                    if let Some(imp) = e.resolve() {
                        deps.extend(core_of(&*imp)?);
                    }
                }
            }
            stage_deps.push(deps);
        }
        Ok(stage_deps)
    }
}

/// What the submissions of one enqueue share.
struct EnqueueContext<'a> {
    queue: &'a VkQueue,
    commands: &'a Commands,
    /// The buffer's status words, one per kernel command.
    status: Option<&'a Arc<Allocation>>,
    /// The parameter buffer.
    live: Option<&'a Arc<Allocation>>,
    staging: &'a [Arc<Allocation>],
    /// The changed argument blocks' snapshot and regions, copied before the
    /// first stage.
    params: Option<&'a (Slice, Vec<vk::BufferCopy>)>,
}

/// The changed argument blocks' snapshot, their regions and the parameter
/// buffer they go to.
type ParamsCopy<'a> = (&'a (Slice, Vec<vk::BufferCopy>), vk::Buffer);

impl EnqueueContext<'_> {
    /// Stage `s`'s submission, signalling `event` and waiting for `deps`:
    /// a reused primary where one is free (and the queue takes no
    /// timestamps), else one recorded for this submission; with what it
    /// keeps alive and the check of its status words.
    fn submission(
        &self,
        s: usize,
        stage: &mut Stage,
        event: Arc<EventCore>,
        deps: SmallVec<[Arc<EventCore>; 4]>,
    ) -> Result<Submission> {
        let commands = self.commands;
        let span = self.queue.span()?;
        let copy = if s == 0 { self.params.zip(self.live.map(|l| l.buffer())) } else { None };
        // The stage's status words, copied out for the completion thread.
        let words = stage.kernels.len() as u64 * 4;
        let status = self.status.filter(|_| words > 0).map(|st| StatusWords {
            buffer: st.buffer(),
            first: u64::from(stage.first_slot) * 4,
            bytes: words,
        });
        let mut sub = Submission::new(self.queue.lane.clone(), event);
        // Timestamps differ per submission: a profiling queue records
        // the primary each time. Otherwise nothing is recorded per
        // submission but the copies of changed arguments and, while the host
        // runs more than `REUSABLE` submissions ahead of the device, of the
        // status words: recording the stage's primary for each such
        // submission made a replay's host time grow with its node count
        // (docs/performance.md).
        let words_out = if span.is_some() {
            self.record_once(&mut sub, stage, span, status, copy)?
        } else if let Some(primary) = reusable_primary(&commands.rt.gpu, &commands.pool, stage, status)? {
            self.reuse(&mut sub, primary, copy)?
        } else {
            let primary = shared_primary(&commands.rt.gpu, &commands.pool, stage)?;
            self.reuse(&mut sub, primary, copy)?;
            status.map(|words| self.copy_status_out(&mut sub, words)).transpose()?
        };
        sub.keep.extend(self.live.map(|l| Kept::Other(Box::new(l.clone()))));
        sub.keep.extend(self.staging.iter().map(|a| Kept::Other(Box::new(a.clone()))));
        sub.pre = stage.pre.clone();
        sub.post = stage.post.clone();
        sub.deps = deps;
        if let Some(words) = words_out {
            sub.checks.push(StatusCheck {
                words,
                count: stage.kernels.len(),
                what: Launches::Commands { commands: stage.kernels.clone(), names: commands.names.clone() },
            });
        }
        Ok(sub)
    }

    /// Submits a reused primary, after the copy of the changed argument
    /// blocks (in the same submission) where there is one; returns where
    /// its status words arrive.
    fn reuse(
        &self,
        sub: &mut Submission,
        primary: Arc<Primary>,
        copy: Option<ParamsCopy<'_>>,
    ) -> Result<Option<StagingPtr>> {
        let gpu = &self.commands.rt.gpu;
        if let Some(((slice, regions), live)) = copy {
            // Before the reused primary, in the same submission.
            sub.cmd = Some(self.commands.pool.record(|cb| {
                copy_params(gpu, cb, slice, live, regions);
                Ok(())
            })?);
        }
        sub.reused.push(primary.cmd.raw());
        let out = primary.status_out.as_ref().map(|(_, ptr)| *ptr);
        sub.keep.push(Kept::Other(Box::new(primary)));
        Ok(out)
    }

    /// Records, after the shared primary in `sub`, the copy of the stage's
    /// status words to fresh staging memory and their clearing; returns
    /// where they arrive.
    fn copy_status_out(&self, sub: &mut Submission, words: StatusWords) -> Result<StagingPtr> {
        let gpu = &self.commands.rt.gpu;
        let out = self.commands.rt.arena.alloc(words.bytes)?;
        let cmd = self.commands.pool.record(|cb| {
            results_barrier(gpu, cb);
            record_status_copy(gpu, cb, words, (out.buffer(), out.offset()));
            Ok(())
        })?;
        sub.reused.push(cmd.raw());
        sub.keep.push(Kept::Other(Box::new(cmd)));
        let ptr = StagingPtr(out.ptr());
        sub.keep.push(Kept::Other(Box::new(out)));
        Ok(ptr)
    }

    /// Records a primary for this submission alone (in the queue's query
    /// span, if it takes timestamps): the argument copy, the stage's
    /// secondaries and the status-word copy to fresh staging memory, whose
    /// address it returns.
    fn record_once(
        &self,
        sub: &mut Submission,
        stage: &Stage,
        span: Option<QuerySpan>,
        status: Option<StatusWords>,
        copy: Option<ParamsCopy<'_>>,
    ) -> Result<Option<StagingPtr>> {
        let gpu = &self.commands.rt.gpu;
        let out = status.map(|st| self.commands.rt.arena.alloc(st.bytes)).transpose()?;
        let secondaries: SmallVec<[vk::CommandBuffer; 8]> =
            stage.chunks.iter().map(|c| c.secondary.cmd.raw()).collect();
        let target = out.as_ref().map(|o| (o.buffer(), o.offset()));
        sub.cmd = Some(self.queue.record(span.as_ref(), |cb| {
            if let Some(((slice, regions), live)) = copy {
                copy_params(gpu, cb, slice, live, regions);
            }
            record_stage(gpu, cb, &secondaries, status.zip(target));
            Ok(())
        })?);
        sub.queries = span;
        sub.keep.extend(stage.chunks.iter().map(|c| Kept::Other(Box::new(c.secondary.clone()))));
        Ok(out.map(|o| {
            let ptr = StagingPtr(o.ptr());
            sub.keep.push(Kept::Other(Box::new(o)));
            ptr
        }))
    }
}

impl RecordingCommandBufferImpl for VkCommandBuffer {
    unsafe fn append(
        &mut self,
        command: &Command,
        alternatives: &[Kernel],
        deps: &[u32],
        wait_events: &[Event],
        signal: bool,
    ) -> Result<Option<Arc<dyn EventImpl>>> {
        let this = &mut self.commands;
        let mut bytes = block_bytes(command)?;
        for alt in alternatives {
            let kernel = downcast::<VkKernel>(alt.imp() as &dyn std::any::Any, "a kernel")?;
            bytes = bytes.max(kernel.layout.size() as usize);
        }
        let signal = signal.then(|| Arc::new(SignalEvent::default()));
        let index = this.recording.push(command, deps, wait_events, signal.clone(), bytes)?;
        if let Some(s) = &signal {
            this.signals.insert(Arc::as_ptr(s).cast::<()>() as usize, index);
            this.signalling.push(index);
        }
        this.names.lock().push(command.as_kernel().map_or_else(|| Arc::from(""), |k| Arc::from(k.kernel.name())));
        Ok(signal.map(|s| s as Arc<dyn EventImpl>))
    }

    fn finalize(self: Box<Self>) -> std::result::Result<Box<dyn ExecutableCommandBufferImpl>, FinalizeFailed> {
        let built = match self.commands.build() {
            Ok(built) => built,
            Err(error) => return Err(FinalizeFailed::new(error, self)),
        };
        Ok(Box::new(VkExecutable {
            commands: self.commands,
            built,
            retired: Vec::new(),
            replan: false,
            previous: None,
        }))
    }
}

impl ExecutableCommandBufferImpl for VkExecutable {
    /// Three steps (module doc, "Enqueue"): resolve the stages' wait events,
    /// record every stage's submission, then order and schedule them.
    unsafe fn enqueue(&mut self, queue: &dyn QueueImpl, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        let queue = downcast::<VkQueue>(queue as &dyn std::any::Any, "the queue")?;
        let mut first_deps: SmallVec<[Arc<EventCore>; 4]> = SmallVec::new();
        for e in wait {
            first_deps.extend(core_of(*e)?);
        }
        if self.previous.as_ref().is_none_or(|p| p.is_done()) {
            // Submissions of a buffer run in order: none is left that could use them.
            self.retired.clear();
        }
        self.refresh()?;
        let params = self.take_dirty_params()?;
        // Wait events resolve now, before this submission moves any signal event on.
        let stage_deps = self.built.external_waits()?;
        let events: Vec<Arc<EventCore>> = self.built.stages.iter().map(|_| EventCore::new()).collect();
        let last = events.last().expect("at least one stage").clone();
        // Record every primary before ordering the queue: a failure must not
        // leave the queue waiting for a submission that never happens.
        let mut subs = self.record_submissions(queue, params.as_ref(), stage_deps, &events)?;
        if let (Some((slice, _)), Some(first)) = (params, subs.first_mut()) {
            first.keep.push(Kept::Slice(slice));
        }
        self.schedule_in_order(queue, subs, &events, first_deps);
        self.previous = Some(last.clone());
        Ok(if events.len() == 1 {
            Arc::new(VkEvent(last))
        } else {
            Arc::new(RunEvent { first: events[0].clone(), last })
        })
    }

    unsafe fn update_kernel_launches(&mut self, updates: &[KernelUpdate<'_>]) -> Result<()> {
        let (commands, built) = (&mut self.commands, &mut self.built);
        for u in updates {
            let i = u.command as usize;
            let old = commands.recording.update_launch(u)?;
            if self.previous.as_ref().is_some_and(|p| !p.is_done()) {
                self.retired.push(old);
            }
            let placed = &mut built.placed[i];
            let mut staging = Vec::new();
            let mut sink = CbSink {
                gpu: &commands.rt.gpu,
                live: built.params.live.as_ref(),
                shadow: &mut built.params.shadow,
                block: placed.block,
                status: placed.status,
                staging: &mut staging,
                indirect: commands.desc.updatable,
            };
            let lowered = crate::lower::lower_kernel(&commands.rt.gpu, u.launch, &mut sink)?;
            let name = u.launch.kernel.name();
            let mut names = commands.names.lock();
            if &*names[i] != name {
                names[i] = Arc::from(name);
            }
            drop(names);
            if let Some(offset) = placed.block {
                built.params.dirty.push((offset, commands.recording[u.command].extra));
            }
            if !same_recording(&placed.ops, &lowered.ops) {
                built.stages[placed.stage as usize].chunks[placed.chunk as usize].dirty = true;
            }
            placed.ops = lowered.ops;
            placed.pipelines = lowered.pipelines;
        }
        Ok(())
    }

    unsafe fn update_signal_event(&mut self, command: u32) -> Result<Arc<dyn EventImpl>> {
        let signal = Arc::new(SignalEvent::default());
        let commands = &mut self.commands;
        let old = commands.recording.replace_signal(command, signal.clone())?;
        commands.signals.remove(&(Arc::as_ptr(&old).cast::<()>() as usize));
        commands.signals.insert(Arc::as_ptr(&signal).cast::<()>() as usize, command);
        Ok(signal)
    }

    unsafe fn update_wait_events(&mut self, command: u32, events: &[Event]) -> Result<()> {
        let i = command as usize;
        self.commands.recording.set_wait_events(command, events)?;
        let (deps, external) = self.commands.dependencies(i);
        let built = &mut self.built;
        let placed = &mut built.placed[i];
        if placed.deps != deps {
            // The command now waits on another command of this buffer (or no
            // longer does): the plan changes.
            self.replan = true;
            return Ok(());
        }
        let stage = &mut built.stages[placed.stage as usize];
        let had = !placed.external.is_empty();
        placed.external = external;
        match (had, placed.external.is_empty()) {
            (false, false) => stage.waiting.push(command),
            (true, true) => stage.waiting.retain(|c| *c != command),
            _ => {}
        }
        Ok(())
    }

    fn native_handle(&self) -> Result<NativeHandle> {
        // Every stage has at least one secondary.
        Ok(NativeHandle(ash::vk::Handle::as_raw(self.built.stages[0].chunks[0].secondary.cmd.raw())))
    }
}

/// A stage's status words in the buffer's status memory.
#[derive(Copy, Clone)]
struct StatusWords {
    buffer: vk::Buffer,
    /// Offset of the stage's first word.
    first: u64,
    bytes: u64,
}

/// Copies the changed argument blocks from their snapshot into the
/// parameter buffer and makes them visible to what follows.
fn copy_params(gpu: &Gpu, cb: vk::CommandBuffer, slice: &Slice, live: vk::Buffer, regions: &[vk::BufferCopy]) {
    // SAFETY: recording; the regions lie in the snapshot and in the parameter
    // buffer, which no earlier submission of this buffer still reads (this
    // one waits for the previous).
    unsafe { gpu.device.cmd_copy_buffer(cb, slice.buffer(), live, regions) };
    params_barrier(gpu, cb);
}

/// Records a stage's work into a primary: its secondaries, then the copy of
/// its status words to `(buffer, offset)` and their clearing for the next
/// submission; every write before the clearing is visible to the host once
/// the submission has completed. Two barriers after the kernels where the
/// stage has status words, one where it has none.
fn record_stage(
    gpu: &Gpu,
    cb: vk::CommandBuffer,
    secondaries: &[vk::CommandBuffer],
    status: Option<(StatusWords, (vk::Buffer, u64))>,
) {
    // SAFETY: recording a primary; the secondaries are executable and were
    // recorded for simultaneous use.
    unsafe { gpu.device.cmd_execute_commands(cb, secondaries) };
    let Some((words, (out, offset))) = status else {
        host_barrier(gpu, cb);
        return;
    };
    results_barrier(gpu, cb);
    record_status_copy(gpu, cb, words, (out, offset));
}

/// Records the copy of a stage's status words to `(buffer, offset)` and
/// their clearing, after a barrier that made the kernels' writes visible to
/// transfers.
fn record_status_copy(gpu: &Gpu, cb: vk::CommandBuffer, words: StatusWords, (out, offset): (vk::Buffer, u64)) {
    let region = [vk::BufferCopy { src_offset: words.first, dst_offset: offset, size: words.bytes }];
    // SAFETY: recording; the ranges lie in their buffers; the barriers order
    // the copy after the kernels and the clear after the copy (and the
    // clear writes nothing the host reads).
    unsafe {
        gpu.device.cmd_copy_buffer(cb, words.buffer, out, &region);
        host_and_transfer_barrier(gpu, cb);
        gpu.device.cmd_fill_buffer(cb, words.buffer, words.first, words.bytes, 0);
    }
}

/// The primary of `stage` recorded for simultaneous use (its secondaries,
/// without the status words' copy), recorded at its first use.
fn shared_primary(gpu: &Arc<Gpu>, pool: &Arc<Pool>, stage: &mut Stage) -> Result<Arc<Primary>> {
    if let Some(p) = &stage.shared {
        return Ok(p.clone());
    }
    let primary = Arc::new(Primary::record(gpu, pool, stage, vk::CommandBufferUsageFlags::SIMULTANEOUS_USE, None)?);
    stage.shared = Some(primary.clone());
    tracing::debug!("primary command buffer recorded for simultaneous use");
    Ok(primary)
}

/// A primary of `stage` that no submission uses now, recorded if none is
/// and fewer than [`REUSABLE`] exist; `None` when all are in use.
fn reusable_primary(
    gpu: &Arc<Gpu>,
    pool: &Arc<Pool>,
    stage: &mut Stage,
    status: Option<StatusWords>,
) -> Result<Option<Arc<Primary>>> {
    // A submission holds its primary until it has completed.
    if let Some(p) = stage.primaries.iter().find(|p| Arc::strong_count(p) == 1) {
        // Pairs with the release of the completed submission's drop.
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        return Ok(Some(p.clone()));
    }
    if stage.primaries.len() >= REUSABLE {
        return Ok(None);
    }
    let primary = Arc::new(Primary::record(gpu, pool, stage, vk::CommandBufferUsageFlags::empty(), status)?);
    stage.primaries.push(primary.clone());
    tracing::debug!(primaries = stage.primaries.len(), "primary command buffer recorded for reuse");
    Ok(Some(primary))
}

impl Primary {
    /// Records a primary executing `stage`'s secondaries with usage `flags`,
    /// copying the stage's `status` words, where given, to host memory of
    /// its own.
    fn record(
        gpu: &Arc<Gpu>,
        pool: &Arc<Pool>,
        stage: &Stage,
        flags: vk::CommandBufferUsageFlags,
        status: Option<StatusWords>,
    ) -> Result<Primary> {
        let status_out = match status {
            Some(words) => {
                let alloc = Allocation::new(gpu, words.bytes, MemKind::Host)?;
                let ptr = alloc.mapped().ok_or_else(|| err!(Unknown, "status memory is not mapped"))?;
                Some((alloc, StagingPtr(ptr)))
            }
            None => None,
        };
        let secondaries: Vec<Arc<Secondary>> = stage.chunks.iter().map(|c| c.secondary.clone()).collect();
        let raw: SmallVec<[vk::CommandBuffer; 8]> = secondaries.iter().map(|s| s.cmd.raw()).collect();
        let target = status_out.as_ref().map(|(a, _)| (a.buffer(), 0));
        let cmd = pool.record_reusable(flags, |cb| {
            record_stage(gpu, cb, &raw, status.zip(target));
            Ok(())
        })?;
        Ok(Primary { cmd, status_out, _secondaries: secondaries })
    }
}

/// Whether two lowerings of a kernel command record the same commands (only
/// their argument blocks' contents differ).
fn same_recording(a: &[GpuOp], b: &[GpuOp]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (
                GpuOp::Dispatch { pipeline: p1, params: a1, groups: g1 },
                GpuOp::Dispatch { pipeline: p2, params: a2, groups: g2 },
            ) => {
                p1 == p2
                    && a1 == a2
                    && match (g1, g2) {
                        (Groups::Indirect(b1, o1), Groups::Indirect(b2, o2)) => b1 == b2 && o1 == o2,
                        (Groups::Direct(c1), Groups::Direct(c2)) => c1 == c2,
                        _ => false,
                    }
            }
            _ => false,
        })
}

impl std::fmt::Debug for VkCommandBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let commands = &self.commands;
        f.debug_struct("VkCommandBuffer")
            .field("commands", &commands.recording.len())
            .field("desc", &commands.desc)
            .finish()
    }
}
