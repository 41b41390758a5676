//! The library in native Rust form (the CPU adapter). Each function runs one
//! work-group and loops over its items; see the module above for semantics.
//!
//! Pointer arguments are dereferenced without checks: the suite launches each
//! kernel over allocations of the sizes its table entry implies.

use cmdbuf::{NativeKernel, WorkGroup, WorkItem};

pub(super) fn kernels() -> Vec<NativeKernel> {
    vec![
        NativeKernel::new("saxpy", saxpy),
        NativeKernel::new("fill", fill),
        NativeKernel::new("fill_2d", fill_2d),
        NativeKernel::new("increment", increment),
        NativeKernel::new("cpy_and_mult", cpy_and_mult),
        NativeKernel::new("indexers", indexers),
        NativeKernel::new("saxpy_local", saxpy_local),
        NativeKernel::new("axpb", axpb),
        NativeKernel::new("copy_add", copy_add),
        NativeKernel::new("empty", empty),
    ]
}

fn linear(item: &WorkItem<'_>) -> usize {
    item.global_linear_id()
}

fn saxpy(g: &WorkGroup<'_>) {
    let (z, a, x, y) = (g.ptr::<u32>(0), g.value::<u32>(1), g.ptr::<u32>(2), g.ptr::<u32>(3));
    for item in g.items() {
        let i = item.global_id(0);
        // SAFETY: the launch passes X, Y and Z of at least gid0 + 1 elements.
        unsafe { *z.add(i) = a.wrapping_mul(*x.add(i)).wrapping_add(*y.add(i)) };
    }
}

fn fill(g: &WorkGroup<'_>) {
    let (p, v) = (g.ptr::<u32>(0), g.value::<u32>(1));
    for item in g.items() {
        // SAFETY: P has at least gid0 + 1 elements.
        unsafe { *p.add(item.global_id(0)) = v };
    }
}

fn fill_2d(g: &WorkGroup<'_>) {
    let (p, v) = (g.ptr::<u32>(0), g.value::<u32>(1));
    for item in g.items() {
        // SAFETY: P has one element per work-item.
        unsafe { *p.add(linear(&item)) = v };
    }
}

fn increment(g: &WorkGroup<'_>) {
    let p = g.ptr::<u32>(0);
    for item in g.items() {
        // SAFETY: P has at least gid0 + 1 elements.
        unsafe {
            let e = p.add(item.global_id(0));
            *e = (*e).wrapping_add(1);
        }
    }
}

fn cpy_and_mult(g: &WorkGroup<'_>) {
    let (dst, src) = (g.ptr::<u32>(0), g.ptr::<u32>(1));
    for item in g.items() {
        let i = item.global_id(0);
        // SAFETY: DST and SRC have at least gid0 + 1 elements.
        unsafe { *dst.add(i) = (*src.add(i)).wrapping_mul(2) };
    }
}

fn indexers(g: &WorkGroup<'_>) {
    let p = g.ptr::<u32>(0);
    for item in g.items() {
        let values = [
            item.global_id(0),
            item.global_id(1),
            item.global_id(2),
            item.local_id(0),
            item.local_id(1),
            item.local_id(2),
        ];
        for (k, v) in values.iter().enumerate() {
            // SAFETY: P has six elements per work-item.
            unsafe { *p.add(linear(&item) * 6 + k) = *v as u32 };
        }
    }
}

fn saxpy_local(g: &WorkGroup<'_>) {
    let ((la, la_len), (lb, lb_len)) = (g.local::<u32>(0), g.local::<u32>(1));
    let (z, a, x, y) = (g.ptr::<u32>(2), g.value::<u32>(3), g.ptr::<u32>(4), g.ptr::<u32>(5));
    let range = g.local_range(0) as u32;
    for item in g.items() {
        let (i, l) = (item.global_id(0), item.local_id(0));
        assert!(l < la_len && 2 * l + 1 < lb_len, "local memory too small for the work-group");
        // SAFETY: bounds checked just above; local memory is this group's own.
        unsafe {
            *la.add(l) = i as u32;
            *lb.add(2 * l) = (i as u32).wrapping_neg();
            *lb.add(2 * l + 1) = range;
        }
    }
    // Work-group barrier: every item's local writes happen before any read.
    for item in g.items() {
        let (i, l) = (item.global_id(0), item.local_id(0));
        // SAFETY: as above, plus X, Y, Z have at least gid0 + 1 elements.
        unsafe {
            let local = (*la.add(l)).wrapping_add(*lb.add(2 * l)).wrapping_add(*lb.add(2 * l + 1));
            *z.add(i) = a.wrapping_mul(*x.add(i)).wrapping_add(*y.add(i)).wrapping_add(local);
        }
    }
}

fn axpb(g: &WorkGroup<'_>) {
    let (p, a, b) = (g.ptr::<u32>(0), g.value::<u32>(1), g.value::<u32>(2));
    for item in g.items() {
        // SAFETY: P has at least gid0 + 1 elements.
        unsafe {
            let e = p.add(item.global_id(0));
            *e = (*e).wrapping_mul(a).wrapping_add(b);
        }
    }
}

fn copy_add(g: &WorkGroup<'_>) {
    let (dst, src, k) = (g.ptr::<u32>(0), g.ptr::<u32>(1), g.value::<u32>(2));
    for item in g.items() {
        let i = item.global_id(0);
        // SAFETY: DST and SRC have at least gid0 + 1 elements.
        unsafe { *dst.add(i) = (*src.add(i)).wrapping_add(k) };
    }
}

fn empty(_: &WorkGroup<'_>) {}
