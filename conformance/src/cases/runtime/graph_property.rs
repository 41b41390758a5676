//! A property test of the graph layer with no SYCL counterpart: random
//! graphs built with the explicit API (kernel, memory, host-task and empty
//! nodes, `depends_on` edges, then random `make_edge` calls, some closing
//! cycles), compared with a host model: the edges and cycle verdicts, the
//! node queries, and the values every node computes from its predecessors'
//! outputs after two executions. Proptest generates the graphs from a fixed
//! seed and shrinks a failing one; the message names the seed.
//!
//! Each node writes only its own cell and reads only its direct
//! predecessors' cells, so any execution that respects the edges computes
//! the model's values, whatever order the implementation picks.

use cmdbuf::{KernelArg, KernelLaunch, UrError, UsmKind, UsmKinds, UsmPtr};
use cmdbuf_runtime::graph::{ExecutionOrder, FinalizeProperties, Graph, GraphProperties, Node, NodeProperties};
use proptest::prelude::*;

use super::graph_common::{host_addr, host_get, host_set, sycl_queue};
use super::prop_runner;
use crate::harness::{CaseError, CaseResult, Env, read};
use crate::{cases, check};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["graph_property";
        random_graphs,
        wrong_model_is_caught,
    ]
}

/// `u32` elements per node's cell.
const M: usize = 16;
/// Graphs per case; the case stays well under a second per device.
const GRAPHS: u32 = 24;

/// What a node computes, element by element, from its data predecessors
/// `p` (and `q`) and the input cell `IN[e] = 7e + 1`.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Kind {
    /// `fill`: k.
    Fill(u32),
    /// `copy_add` from the input: IN + k.
    AddIn(u32),
    /// `copy_add`: p + k.
    CopyAdd(u32),
    /// `saxpy`: k * p + q.
    Saxpy(u32),
    /// A USM copy: p.
    Memcpy,
    /// A one-byte USM fill.
    Memset(u8),
    /// A host task: 3p + k.
    Host(u32),
    /// No command.
    Empty,
}

/// A generated node: a kind selector, a constant, raw dependency numbers.
type RawNode = (u8, u32, Vec<u16>);

#[derive(Clone, Debug)]
struct Program {
    nodes: Vec<RawNode>,
    /// Raw `make_edge(a, b)` calls after every node is added.
    edges: Vec<(u16, u16)>,
    breadth_first: bool,
    no_cycle_check: bool,
}

/// A node resolved from a raw one.
#[derive(Clone, Debug)]
struct Spec {
    kind: Kind,
    preds: Vec<usize>,
    /// The predecessors whose cells it reads.
    data: Vec<usize>,
}

fn resolve(program: &Program, host_tasks: bool) -> Vec<Spec> {
    let mut specs: Vec<Spec> = Vec::with_capacity(program.nodes.len());
    for (i, (sel, k, raw)) in program.nodes.iter().enumerate() {
        let mut preds: Vec<usize> = Vec::new();
        if i > 0 {
            for r in raw {
                let p = *r as usize % i;
                if !preds.contains(&p) {
                    preds.push(p);
                }
            }
        }
        let data: Vec<usize> = preds.iter().copied().filter(|p| specs[*p].kind != Kind::Empty).collect();
        let k = *k;
        let mut kind = match sel % 8 {
            0 => Kind::Fill(k),
            1 => Kind::AddIn(k),
            2 => Kind::CopyAdd(k),
            3 => Kind::Saxpy(k),
            4 => Kind::Memcpy,
            5 => Kind::Memset(k as u8),
            6 if host_tasks => Kind::Host(k),
            6 => Kind::CopyAdd(k),
            _ => Kind::Empty,
        };
        if data.is_empty() && matches!(kind, Kind::CopyAdd(_) | Kind::Saxpy(_) | Kind::Memcpy | Kind::Host(_)) {
            kind = if sel % 2 == 0 { Kind::Fill(k) } else { Kind::AddIn(k) };
        }
        specs.push(Spec { kind, preds, data });
    }
    specs
}

fn input(e: usize) -> u32 {
    7 * e as u32 + 1
}

/// The model's cells; `mutant` gets `copy_add` wrong.
fn model(specs: &[Spec], mutant: bool) -> Vec<Option<Vec<u32>>> {
    let mut cells: Vec<Option<Vec<u32>>> = Vec::with_capacity(specs.len());
    for s in specs {
        let p = |j: usize| cells[s.data[j.min(s.data.len() - 1)]].as_ref().expect("data nodes have cells");
        let cell: Option<Vec<u32>> = match s.kind {
            Kind::Empty => None,
            Kind::Fill(k) => Some(vec![k; M]),
            Kind::AddIn(k) => Some((0..M).map(|e| input(e).wrapping_add(k)).collect()),
            Kind::CopyAdd(k) => {
                let k = if mutant { k.wrapping_add(1) } else { k };
                Some(p(0).iter().map(|x| x.wrapping_add(k)).collect())
            }
            Kind::Saxpy(k) => Some(p(0).iter().zip(p(1)).map(|(x, y)| k.wrapping_mul(*x).wrapping_add(*y)).collect()),
            Kind::Memcpy => Some(p(0).clone()),
            Kind::Memset(b) => Some(vec![u32::from_le_bytes([b; 4]); M]),
            Kind::Host(k) => Some(p(0).iter().map(|x| x.wrapping_mul(3).wrapping_add(k)).collect()),
        };
        cells.push(cell);
    }
    cells
}

/// Whether `to` is reachable from `from` along model edges.
fn reaches(preds: &[Vec<usize>], from: usize, to: usize) -> bool {
    // Walk predecessors backwards from `to`.
    let mut seen = vec![false; preds.len()];
    let mut stack = vec![to];
    while let Some(x) = stack.pop() {
        if x == from {
            return true;
        }
        if !std::mem::replace(&mut seen[x], true) {
            stack.extend_from_slice(&preds[x]);
        }
    }
    false
}

fn fail(message: String) -> CaseError {
    CaseError::Fail(message)
}

/// Builds, checks and runs one program.
fn check_program(env: &Env, program: &Program, mutant: bool) -> CaseResult {
    let host_tasks = env.device().info().usm.contains(UsmKinds::HOST);
    let specs = resolve(program, host_tasks);
    let n = specs.len();
    let queue = sycl_queue(env)?;
    let mem = env.usm(if host_tasks { UsmKind::Host } else { UsmKind::Device }, (n + 1) * M * 4)?;
    let cell = |i: usize| -> UsmPtr { mem.ptr().byte_add(i * M * 4) };
    let input_cell = cell(n);
    crate::harness::write(&queue, input_cell, &(0..M).map(input).collect::<Vec<_>>())?;
    let addr = if host_tasks { host_addr(&mem)? } else { 0 };
    let (fill, copy_add, saxpy) = (env.kernel("fill")?, env.kernel("copy_add")?, env.kernel("saxpy")?);

    let graph = Graph::new(
        env.context(),
        env.device(),
        GraphProperties { no_cycle_check: program.no_cycle_check, ..Default::default() },
    )?;
    let mut nodes: Vec<Node> = Vec::with_capacity(n);
    for (i, s) in specs.iter().enumerate() {
        let deps: Vec<&Node> = s.preds.iter().map(|p| &nodes[*p]).collect();
        let props = NodeProperties::new().depends_on(&deps);
        let p = |j: usize| cell(s.data[j.min(s.data.len().saturating_sub(1))]);
        let launch = |kernel: &cmdbuf::Kernel, args: &[KernelArg<'_>]| {
            let launch = KernelLaunch::new(kernel, &[M], args);
            // SAFETY: M items over cells of M elements each.
            graph.add(|h| unsafe { h.launch(&launch) }, props)
        };
        let node = match s.kind {
            Kind::Empty => graph.add_empty(props)?,
            Kind::Fill(k) => launch(&fill, &[KernelArg::Pointer(cell(i)), KernelArg::value(&k)])?,
            Kind::AddIn(k) => {
                launch(&copy_add, &[KernelArg::Pointer(cell(i)), KernelArg::Pointer(input_cell), KernelArg::value(&k)])?
            }
            Kind::CopyAdd(k) => {
                launch(&copy_add, &[KernelArg::Pointer(cell(i)), KernelArg::Pointer(p(0)), KernelArg::value(&k)])?
            }
            Kind::Saxpy(k) => launch(
                &saxpy,
                &[
                    KernelArg::Pointer(cell(i)),
                    KernelArg::value(&k),
                    KernelArg::Pointer(p(0)),
                    KernelArg::Pointer(p(1)),
                ],
            )?,
            Kind::Memcpy => graph.add(|h| h.memcpy(cell(i), p(0), M * 4), props)?,
            Kind::Memset(b) => graph.add(|h| h.memset(cell(i), b, M * 4), props)?,
            Kind::Host(k) => {
                let src = s.data[0];
                graph.add(
                    move |h| {
                        h.host_task(move || {
                            for e in 0..M {
                                // SAFETY: cells `src` and `i` of the host
                                // allocation hold M elements; `src`'s writer
                                // finished, nobody else touches cell `i` now.
                                unsafe {
                                    host_set(
                                        addr,
                                        i * M + e,
                                        host_get(addr, src * M + e).wrapping_mul(3).wrapping_add(k),
                                    )
                                };
                            }
                        })
                    },
                    props,
                )?
            }
        };
        nodes.push(node);
    }

    // The model's edges, in the order they were made.
    let mut preds: Vec<Vec<usize>> = specs.iter().map(|s| s.preds.clone()).collect();
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, s) in specs.iter().enumerate() {
        for p in &s.preds {
            succs[*p].push(i);
        }
    }
    let mut cyclic = false;
    for (x, y) in &program.edges {
        let (a, b) = (*x as usize % n, *y as usize % n);
        let closes_cycle = a == b || reaches(&preds, b, a);
        let result = graph.make_edge(&nodes[a], &nodes[b]);
        let refused = a == b || (closes_cycle && !program.no_cycle_check);
        match (&result, refused) {
            (Err(UrError::InvalidGraph(_)), true) => continue,
            (Ok(()), false) => {}
            _ => return Err(fail(format!("make_edge({a}, {b}) gave {result:?}; the model expects refused={refused}"))),
        }
        cyclic |= closes_cycle;
        if !preds[b].contains(&a) {
            preds[b].push(a);
            succs[a].push(b);
        }
    }

    let index = |v: Vec<Node>| -> Vec<usize> { v.iter().map(Node::index).collect() };
    check!(graph.node_count() == n, "{} nodes, the model {n}", graph.node_count());
    let edges: usize = preds.iter().map(Vec::len).sum();
    check!(graph.edge_count() == edges, "{} edges, the model {edges}", graph.edge_count());
    for (i, node) in nodes.iter().enumerate() {
        let (p, s) = (index(node.predecessors()), index(node.successors()));
        check!(
            p == preds[i] && s == succs[i],
            "node {i}: predecessors {p:?} successors {s:?}, the model {:?} {:?}",
            preds[i],
            succs[i]
        );
    }
    let roots: Vec<usize> = (0..n).filter(|i| preds[*i].is_empty()).collect();
    let leaves: Vec<usize> = (0..n).filter(|i| succs[*i].is_empty()).collect();
    check!(index(graph.root_nodes()) == roots, "roots {:?}, the model {roots:?}", index(graph.root_nodes()));
    check!(index(graph.leaf_nodes()) == leaves, "leaves {:?}, the model {leaves:?}", index(graph.leaf_nodes()));

    let order = if program.breadth_first { ExecutionOrder::BreadthFirst } else { ExecutionOrder::DepthFirst };
    let finalized = graph.finalize(FinalizeProperties { order, ..Default::default() });
    let exec = match (finalized, cyclic) {
        (Err(UrError::InvalidGraph(_)), true) => return Ok(()),
        (Ok(exec), false) => exec,
        (other, _) => return Err(fail(format!("finalize gave {other:?}; the model's graph is cyclic: {cyclic}"))),
    };
    let expected = model(&specs, mutant);
    for run in 1..=2 {
        queue.usm_fill(mem.ptr(), &[0xA5], n * M * 4, &[])?.wait()?;
        queue.enqueue_graph(&exec, &[])?.wait()?;
        let got = read::<u32>(&queue, mem.ptr(), n * M)?;
        for (i, want) in expected.iter().enumerate() {
            if let Some(want) = want
                && got[i * M..(i + 1) * M] != want[..]
            {
                return Err(fail(format!(
                    "run {run}: node {i} ({:?} of {:?}) computed {:?}, differing from the host model {:?}",
                    specs[i].kind,
                    specs[i].data,
                    &got[i * M..(i + 1) * M],
                    want
                )));
            }
        }
    }
    Ok(())
}

fn program() -> impl Strategy<Value = Program> {
    let node = (0u8..8, 0u32..1000, prop::collection::vec(any::<u16>(), 0..4));
    (
        prop::collection::vec(node, 1..24),
        prop::collection::vec((any::<u16>(), any::<u16>()), 0..10),
        any::<bool>(),
        0u8..4,
    )
        .prop_map(|(nodes, edges, breadth_first, c)| Program {
            nodes,
            edges,
            breadth_first,
            no_cycle_check: c == 0,
        })
}

/// Runs `graphs` generated programs from `seed`; a failure names the seed
/// and the shrunk program.
fn run_property(env: &Env, seed: u64, graphs: u32, mutant: bool) -> Result<(), String> {
    let max_shrink = if mutant { 40 } else { 1000 };
    let result = prop_runner::run(seed, graphs, max_shrink, &program(), |p| {
        check_program(env, &p, mutant).map_err(|e| match e {
            CaseError::Fail(m) | CaseError::Skip(m) => m,
        })
    });
    match result {
        Ok(()) => Ok(()),
        Err(Ok(failure)) => Err(format!(
            "random-graph property failed (ChaCha seed {seed:#x}, {} programs run{}; rerun the case to reproduce): \
             {}\nminimal program: {:?}",
            failure.runs,
            failure.shrink_note(),
            failure.reason,
            failure.minimal
        )),
        Err(Err(reason)) => Err(format!("random-graph property aborted (ChaCha seed {seed:#x}): {reason}")),
    }
}

fn random_graphs(env: &Env) -> CaseResult {
    run_property(env, 0x6EA9_0001, GRAPHS, false).map_err(CaseError::Fail)
}

/// The comparison has teeth: a model that gets `copy_add` wrong is caught.
fn wrong_model_is_caught(env: &Env) -> CaseResult {
    let Err(message) = run_property(env, 0x6EA9_0002, 16, true) else {
        return Err(fail("a host model with a wrong copy_add matched the device on 16 graphs".into()));
    };
    check!(message.contains("differing from the host model"), "not a model mismatch: {message}");
    check!(message.contains("CopyAdd"), "the minimal program lost its copy_add: {message}");
    Ok(())
}
