//! Loading the adapters from several threads at once: drivers' first opening
//! is not always thread-safe (PoCL 3.1 crashed in `clGetDeviceInfo` when two
//! threads opened it together), so the loader opens them one at a time.
//! A crash here is the process dying, which fails the test binary.

#[test]
fn threads_loading_at_once_each_get_every_device() {
    let threads: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(|| {
                let loader = cmdbuf::load().expect("the adapters load");
                let devices = loader.devices();
                // The info every device answers, read while other threads load.
                devices.iter().map(|d| format!("{} {}", d, d.info().name)).collect::<Vec<_>>()
            })
        })
        .collect();
    let listed: Vec<Vec<String>> = threads.into_iter().map(|t| t.join().expect("no thread panicked")).collect();
    assert!(!listed[0].is_empty(), "the CPU device is always present");
    assert!(listed.iter().all(|l| *l == listed[0]), "every thread saw the same devices: {listed:?}");
}
