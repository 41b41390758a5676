//! Graphviz DOT output (`print_graph`).
//!
//! Modifiable graphs show their nodes (number, type, kernel name) and edges;
//! executable graphs show the commands finalize built, one cluster per
//! partition. Verbose output adds kernel ranges and arguments (with the
//! dynamic parameters registered with them) and the addresses and sizes of
//! memory commands. Render with `dot -Tsvg graph.dot -o graph.svg`.

use std::fmt::Write as _;
use std::path::Path;

use super::state::{ExecState, FlatOp, GraphShared, GraphState, GroupOp, KernelSpec, NodeKind, NodeType, Target};
use cmdbuf_core::command::Command;
use cmdbuf_core::error::Result;
use cmdbuf_core::launch::ArgValue;
use cmdbuf_core::memory::MemLoc;
use cmdbuf_core::{ensure, err};

/// Quotes a string for a DOT label.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '{' | '}' | '<' | '>' | '|' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Shape and colour by node type.
fn style(ty: NodeType) -> &'static str {
    match ty {
        NodeType::Kernel => "shape=box, style=\"rounded,filled\", fillcolor=\"#cfe2f3\"",
        NodeType::Memcpy | NodeType::Memset | NodeType::Memfill | NodeType::Prefetch | NodeType::MemAdvise => {
            "shape=box, style=filled, fillcolor=\"#d9ead3\""
        }
        NodeType::HostTask => "shape=hexagon, style=filled, fillcolor=\"#fce5cd\"",
        NodeType::NativeCommand => "shape=octagon, style=filled, fillcolor=\"#d0e0e3\"",
        NodeType::Collective => "shape=doubleoctagon, style=filled, fillcolor=\"#f4cccc\"",
        NodeType::Subgraph => "shape=box3d, style=filled, fillcolor=\"#ead1dc\"",
        NodeType::AsyncMalloc | NodeType::AsyncFree => "shape=cylinder, style=filled, fillcolor=\"#fff2cc\"",
        NodeType::Empty | NodeType::Barrier => "shape=ellipse, style=dashed",
    }
}

fn arg_text(value: &ArgValue) -> String {
    match value {
        ArgValue::Value(bytes) => {
            let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
            format!("value {}", hex.join(" "))
        }
        ArgValue::Pointer(p) => format!("pointer {:#x}", p.addr()),
        ArgValue::MemObj(b) => format!("buffer {b:?}"),
        ArgValue::Local(n) => format!("local {n} bytes"),
    }
}

fn loc(l: &MemLoc) -> String {
    match l {
        MemLoc::Usm(r) => format!("{:#x}", r.address()),
        MemLoc::Host(h) => format!("host {:p}", h.as_ptr()),
    }
}

/// Detail lines of a kernel launch; `dynamic` names the dynamic parameter of
/// each argument, when one is registered.
fn kernel_details(spec: &KernelSpec, dynamic: &[(usize, u32)]) -> Vec<String> {
    let dim = spec.work_dim as usize;
    let mut lines = vec![format!(
        "global {:?} offset {:?} local {}",
        &spec.global[..dim],
        &spec.offset[..dim],
        spec.local.map_or_else(|| "chosen".to_string(), |l| format!("{:?}", &l[..dim]))
    )];
    for (i, a) in spec.args.iter().enumerate() {
        let param = dynamic.iter().find(|(arg, _)| *arg == i).map_or(String::new(), |(_, p)| format!(" (dyn {p})"));
        lines.push(format!("arg {i}: {}{param}", arg_text(a)));
    }
    lines
}

/// A one-line summary and detail lines of a memory command.
fn command_text(c: &Command) -> (String, Vec<String>) {
    match c {
        Command::UsmMemcpy { dst, src, size, .. } => {
            (format!("{size} bytes"), vec![format!("dst {}", loc(dst)), format!("src {}", loc(src))])
        }
        Command::UsmFill { dst, pattern, size, .. } => (
            format!("{size} bytes"),
            vec![format!("dst {:#x}", dst.address()), format!("pattern {:02x?}", &pattern[..])],
        ),
        Command::UsmPrefetch { mem, size, flags, .. } => {
            (format!("{size} bytes"), vec![format!("ptr {:#x}", mem.address()), format!("{flags:?}")])
        }
        Command::UsmAdvise { mem, size, advice, .. } => {
            (format!("{size} bytes"), vec![format!("ptr {:#x}", mem.address()), format!("{advice:?}")])
        }
        Command::BufferCopy { src, dst, src_offset, dst_offset, size, .. } => (
            format!("buffer copy, {size} bytes"),
            vec![format!("dst {dst:?} + {dst_offset}"), format!("src {src:?} + {src_offset}")],
        ),
        Command::BufferCopyRect { src, dst, region, .. } => {
            ("buffer rect copy".into(), vec![format!("dst {dst:?}"), format!("src {src:?}"), format!("{region:?}")])
        }
        Command::BufferRead { buffer, offset, size, dst, .. } => (
            format!("buffer read, {size} bytes"),
            vec![format!("src {buffer:?} + {offset}"), format!("dst {}", loc(dst))],
        ),
        Command::BufferWrite { buffer, offset, size, src, .. } => (
            format!("buffer write, {size} bytes"),
            vec![format!("dst {buffer:?} + {offset}"), format!("src {}", loc(src))],
        ),
        Command::BufferReadRect { buffer, dst, region, .. } => (
            "buffer rect read".into(),
            vec![format!("src {buffer:?}"), format!("dst {}", loc(dst)), format!("{region:?}")],
        ),
        Command::BufferWriteRect { buffer, src, region, .. } => (
            "buffer rect write".into(),
            vec![format!("dst {buffer:?}"), format!("src {}", loc(src)), format!("{region:?}")],
        ),
        Command::BufferFill { buffer, pattern, offset, size, .. } => (
            format!("buffer fill, {size} bytes"),
            vec![format!("dst {buffer:?} + {offset}"), format!("pattern {:02x?}", &pattern[..])],
        ),
        Command::KernelLaunch(k) => (format!("`{}`", k.kernel.name()), Vec::new()),
        Command::Native(n) => ("native command".into(), vec![format!("{} buffers", n.mems().len())]),
    }
}

/// A node statement: `title` and `summary` centred, details left-aligned.
fn node_line(out: &mut String, id: &str, title: &str, summary: &str, details: &[String], ty: NodeType, indent: &str) {
    let mut label = escape(title);
    if !summary.is_empty() {
        label.push_str("\\n");
        label.push_str(&escape(summary));
    }
    if !details.is_empty() {
        label.push_str("\\n");
        for d in details {
            label.push_str(&escape(d));
            label.push_str("\\l");
        }
    }
    let _ = writeln!(out, "{indent}{id} [label=\"{label}\", {}];", style(ty));
}

const HEADER: &str = "  node [fontname=\"Helvetica\", fontsize=10];\n  edge [color=\"#555555\"];\n";

/// The DOT text of a modifiable graph.
pub(crate) fn modifiable(shared: &GraphShared, state: &GraphState, verbose: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"graph_{}\" {{", shared.id);
    let _ = writeln!(
        out,
        "  label=\"graph #{} (modifiable): {} nodes, {} edges\";\n  labelloc=t;",
        shared.id,
        state.nodes.len(),
        state.edges
    );
    out.push_str(HEADER);
    // Dynamic parameters by (target, argument).
    let mut dynamic: Vec<(Target, usize, u32)> = Vec::new();
    if verbose {
        for (p, param) in state.params.iter().enumerate() {
            dynamic.extend(param.regs.iter().map(|(t, a)| (*t, *a, p as u32)));
        }
    }
    let params_of = |target: Target| -> Vec<(usize, u32)> {
        dynamic.iter().filter(|(t, ..)| *t == target).map(|(_, a, p)| (*a, *p)).collect()
    };
    for (i, node) in state.nodes.iter().enumerate() {
        let i = i as u32;
        let ty = state.node_type(i);
        let title = format!("{i}: {ty}");
        let (summary, details) = match &node.kind {
            NodeKind::Kernel(spec) => (
                format!("`{}` {:?}", spec.kernel.name(), spec.global_size()),
                if verbose { kernel_details(spec, &params_of(Target::Node(i))) } else { Vec::new() },
            ),
            NodeKind::Memory(c) => {
                let (summary, details) = command_text(c);
                (summary, if verbose { details } else { Vec::new() })
            }
            NodeKind::HostTask(_) | NodeKind::Native(_) => (String::new(), Vec::new()),
            NodeKind::Collective(c) => (format!("{} of {}", c.op.name(), c.dtype), Vec::new()),
            NodeKind::Subgraph(g) => (format!("executable graph #{} ({} nodes)", g.id(), g.node_count()), Vec::new()),
            NodeKind::Dynamic(g) => {
                let group = &state.groups[*g as usize];
                let head = format!("dynamic group {g}: {} of {}", group.active, group.cgs.len());
                match group.active_op() {
                    GroupOp::Kernel(spec) => {
                        let target = Target::Group { group: *g, cg: group.active as u32 };
                        (
                            format!("`{}` {:?} ({head})", spec.kernel.name(), spec.global_size()),
                            if verbose { kernel_details(spec, &params_of(target)) } else { Vec::new() },
                        )
                    }
                    GroupOp::Host(_) => (head, Vec::new()),
                }
            }
            NodeKind::AsyncMalloc { ptr, size, .. } => {
                (format!("{size} bytes"), if verbose { vec![format!("ptr {:#x}", ptr.addr())] } else { Vec::new() })
            }
            NodeKind::AsyncFree { ptr, .. } => (format!("{:#x}", ptr.addr()), Vec::new()),
            NodeKind::Empty | NodeKind::Barrier => (String::new(), Vec::new()),
        };
        let mut details = details;
        if verbose && let Some(q) = node.queue {
            details.push(format!("recorded from queue {q:#x}"));
        }
        node_line(&mut out, &format!("n{i}"), &title, &summary, &details, ty, "  ");
    }
    for (i, node) in state.nodes.iter().enumerate() {
        for p in &node.preds {
            let _ = writeln!(out, "  n{p} -> n{i};");
        }
    }
    out.push_str("}\n");
    out
}

/// The DOT text of an executable graph: its commands by partition.
pub(crate) fn executable(id: u64, source: u64, st: &ExecState, verbose: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"exec_{id}\" {{");
    let _ = writeln!(
        out,
        "  label=\"executable graph #{id} (from graph #{source}): {} commands, {} partitions\";\n  labelloc=t;\n  \
         compound=true;",
        st.nodes.len(),
        st.parts.len()
    );
    out.push_str(HEADER);
    for (p, part) in st.parts.iter().enumerate() {
        let kind = if part.host {
            "host task".to_string()
        } else {
            let support = part.cb.as_ref().map_or("", |cb| match cb.support() {
                cmdbuf_core::CommandBufferSupport::Native => "native",
                cmdbuf_core::CommandBufferSupport::Emulated => "emulated",
            });
            format!("command buffer ({support}{})", if part.in_order { ", in-order" } else { "" })
        };
        let waits = if part.preds.is_empty() {
            String::new()
        } else {
            format!(", after {}", part.preds.iter().map(|q| q.to_string()).collect::<Vec<_>>().join(", "))
        };
        let _ = writeln!(out, "  subgraph cluster_p{p} {{");
        let _ = writeln!(
            out,
            "    label=\"partition {p}: {}{}\";\n    style=rounded;\n    color=\"#999999\";",
            escape(&kind),
            escape(&waits)
        );
        for m in &part.members {
            let node = &st.nodes[*m as usize];
            let origin = node.origin.map_or_else(|| "inlined".to_string(), |o| format!("node {o}"));
            let (ty, summary, details) = match &node.op {
                FlatOp::Kernel { spec, .. } => (
                    NodeType::Kernel,
                    format!("`{}` {:?}", spec.kernel.name(), spec.global_size()),
                    if verbose { kernel_details(spec, &[]) } else { Vec::new() },
                ),
                FlatOp::Command(c) => {
                    let (summary, details) = command_text(c);
                    (super::node::command_type(c), summary, if verbose { details } else { Vec::new() })
                }
                FlatOp::Host(_) => (NodeType::HostTask, String::new(), Vec::new()),
                FlatOp::Native(_) => (NodeType::NativeCommand, String::new(), Vec::new()),
                FlatOp::PeerCopy { size, .. } => (NodeType::Memcpy, format!("peer copy of {size} bytes"), Vec::new()),
                FlatOp::Collective(run) => {
                    let summary = format!("{} of {} ({})", run.node.op.name(), run.node.dtype, run.how());
                    (NodeType::Collective, summary, Vec::new())
                }
                FlatOp::Join | FlatOp::Empty => (NodeType::Empty, "join".to_string(), Vec::new()),
            };
            node_line(&mut out, &format!("c{m}"), &format!("{origin}: {ty}"), &summary, &details, ty, "    ");
        }
        out.push_str("  }\n");
    }
    for (i, node) in st.nodes.iter().enumerate() {
        for p in &node.preds {
            let _ = writeln!(out, "  c{p} -> c{i};");
        }
    }
    out.push_str("}\n");
    out
}

/// Writes DOT text to a `.dot` file (`print_graph`).
pub(crate) fn write(path: &Path, text: &str, graph: u64) -> Result<()> {
    ensure!(
        path.extension().is_some_and(|e| e == "dot"),
        InvalidValue,
        "print_graph of graph #{graph}: {} does not end in .dot, the only format written",
        path.display()
    );
    std::fs::write(path, text)
        .map_err(|e| err!(InvalidValue, "print_graph of graph #{graph}: cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped() {
        assert_eq!(escape("a \"b\" {c}\nd\\"), "a \\\"b\\\" \\{c\\}\\nd\\\\");
    }

    #[test]
    fn node_lines_have_titles_summaries_and_details() {
        let mut out = String::new();
        node_line(&mut out, "n1", "1: kernel", "`saxpy` [64]", &["arg 0: pointer 0x10".into()], NodeType::Kernel, "");
        assert_eq!(
            out,
            "n1 [label=\"1: kernel\\n`saxpy` [64]\\narg 0: pointer 0x10\\l\", shape=box, style=\"rounded,filled\", \
             fillcolor=\"#cfe2f3\"];\n"
        );
    }

    #[test]
    fn values_print_as_bytes() {
        assert_eq!(arg_text(&ArgValue::Value(smallvec::smallvec![1, 0, 0xab])), "value 01 00 ab");
        assert_eq!(arg_text(&ArgValue::Local(64)), "local 64 bytes");
    }

    #[test]
    fn only_dot_files_are_written() {
        let dir = std::env::temp_dir();
        assert!(matches!(write(&dir.join("g.svg"), "", 1), Err(cmdbuf_core::UrError::InvalidValue(_))));
        let missing = dir.join("no-such-directory-for-ur-graphs").join("g.dot");
        assert!(matches!(write(&missing, "", 1), Err(cmdbuf_core::UrError::InvalidValue(_))));
        let path = dir.join(format!("ur-graph-dot-test-{}.dot", std::process::id()));
        write(&path, "digraph {}\n", 1).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "digraph {}\n");
        let _ = std::fs::remove_file(path);
    }
}
