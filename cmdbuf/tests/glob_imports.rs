//! `use cmdbuf::*` and `use cmdbuf_runtime::graph::*` together: UR's instantiated
//! capture (`InstantiatedGraph`) and the SYCL-level executable graph
//! (`ExecutableGraph`, `Graph<Executable>`) have different names, so a
//! program that glob-imports both names each without qualifying it.

use cmdbuf::*;
use cmdbuf_runtime::graph::*;

/// The SYCL-level executable graph, by the name it has in `cmdbuf_runtime::graph`.
fn sycl_level(graph: Option<ExecutableGraph>) -> bool {
    graph.is_none()
}

#[test]
fn both_graph_kinds_are_named_without_qualification() -> Result<()> {
    let loader = load_all();
    let device = loader.devices().into_iter().find(|d| d.backend() == Backend::Cpu).expect("the CPU adapter");
    let context = Context::new(&device)?;
    let queue = Queue::new(&context, QueueProperties::default())?;
    let data = queue.clone_htod(&[0u8; 16])?;
    queue.begin_capture()?;
    queue.usm_fill(data.ptr(), &[7], 16, &[])?;
    let captured: InstantiatedGraph = queue.end_capture()?.instantiate()?;
    queue.enqueue_graph(&captured, &[])?.wait()?;
    assert_eq!(queue.clone_dtoh::<u8>(&data, &[])?, [7; 16]);
    assert!(sycl_level(None::<Graph<Executable>>));
    Ok(())
}
