//! Random memory commands, valid and invalid, against an independent model of
//! the validation rules and of the data they produce: bad input gives exactly
//! the modelled error variant (never a panic), good input exactly the
//! modelled bytes, both eagerly and through a command buffer.

use cmdbuf_core::{
    AppendOptions, CommandBuffer, CommandBufferDesc, Context, MemBuffer, MemFlags, Queue, QueueProperties, RectLayout,
    RectOffset, RectRegion, UrError, UsmAllocation, UsmKind,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

const A_LEN: usize = 200;
const B_LEN: usize = 96;

/// The error the front end must report, by variant name, or none.
type Expected = Option<&'static str>;

fn variant(result: &Result<impl Sized, UrError>) -> Option<&'static str> {
    result.as_ref().err().map(|e| match e {
        UrError::InvalidSize(_) => "InvalidSize",
        UrError::InvalidValue(_) => "InvalidValue",
        UrError::OverlappingRegions(_) => "OverlappingRegions",
        other => other.ur_name(),
    })
}

struct Fixture {
    context: Context,
    queue: Queue,
    a: UsmAllocation,
    b: UsmAllocation,
}

impl Fixture {
    fn new() -> Fixture {
        let context = Context::new(&cmdbuf_cpu::default_device()).unwrap();
        let queue = Queue::new(&context, QueueProperties::default()).unwrap();
        let a = UsmAllocation::new(&context, UsmKind::Device, A_LEN).unwrap();
        let b = UsmAllocation::new(&context, UsmKind::Device, B_LEN).unwrap();
        Fixture { context, queue, a, b }
    }

    /// Which allocation (0 = A, 1 = B) holds `addr`, and at which offset.
    fn locate(&self, addr: u64) -> Option<(usize, usize)> {
        [(&self.a, A_LEN), (&self.b, B_LEN)].iter().enumerate().find_map(|(i, (alloc, len))| {
            let base = alloc.ptr().addr();
            (addr >= base && addr < base + *len as u64).then(|| (i, (addr - base) as usize))
        })
    }

    fn reset(&self, model: &mut [Vec<u8>; 2]) {
        model[0] = (0..A_LEN).map(|i| i as u8).collect();
        model[1] = (0..B_LEN).map(|i| (i as u8).wrapping_mul(3).wrapping_add(7)).collect();
        self.queue.write_usm(self.a.ptr(), &model[0], &[]).unwrap();
        self.queue.write_usm(self.b.ptr(), &model[1], &[]).unwrap();
    }

    fn check_memory(&self, model: &[Vec<u8>; 2]) -> Result<(), TestCaseError> {
        let mut a = vec![0u8; A_LEN];
        let mut b = vec![0u8; B_LEN];
        self.queue.read_usm(self.a.ptr(), &mut a, &[]).unwrap();
        self.queue.read_usm(self.b.ptr(), &mut b, &[]).unwrap();
        prop_assert_eq!(&a, &model[0]);
        prop_assert_eq!(&b, &model[1]);
        Ok(())
    }
}

/// An address near one of the allocations: inside, at, or just past its end.
fn address(f: &Fixture, which: usize, offset: usize) -> cmdbuf_core::UsmPtr {
    let base = if which == 0 { f.a.ptr() } else { f.b.ptr() };
    base.byte_add(offset)
}

#[derive(Clone, Debug)]
enum Op {
    Memcpy { dst: (usize, usize), src: (usize, usize), size: usize },
    Fill { dst: (usize, usize), pattern: usize, size: usize },
}

fn op() -> impl Strategy<Value = Op> {
    let place = (0..2usize, 0..=A_LEN + 8);
    prop_oneof![
        (place.clone(), place.clone(), 0..=A_LEN + 8).prop_map(|(dst, src, size)| Op::Memcpy { dst, src, size }),
        (place, prop_oneof![0..=8usize, 250..=260usize], 0..=A_LEN + 8).prop_map(|(dst, pattern, size)| Op::Fill {
            dst,
            pattern,
            size
        }),
    ]
}

/// The validation rules, in the order the front end applies them, plus the
/// effect on the model memory.
fn model(f: &Fixture, op: &Op, memory: &mut [Vec<u8>; 2]) -> Expected {
    match *op {
        Op::Memcpy { dst, src, size } => {
            if size == 0 {
                return Some("InvalidSize");
            }
            let resolve = |(w, o): (usize, usize)| -> Result<(usize, usize), &'static str> {
                let Some((i, off)) = f.locate(address(f, w, o).addr()) else { return Err("InvalidValue") };
                let len = if i == 0 { A_LEN } else { B_LEN };
                if off + size > len { Err("InvalidSize") } else { Ok((i, off)) }
            };
            let (di, doff) = match resolve(dst) {
                Ok(x) => x,
                Err(e) => return Some(e),
            };
            let (si, soff) = match resolve(src) {
                Ok(x) => x,
                Err(e) => return Some(e),
            };
            if di == si && doff < soff + size && soff < doff + size {
                return Some("OverlappingRegions");
            }
            let bytes = memory[si][soff..soff + size].to_vec();
            memory[di][doff..doff + size].copy_from_slice(&bytes);
            None
        }
        Op::Fill { dst, pattern, size } => {
            // Patterns have any length: one byte or more, dividing the size.
            if pattern == 0 || size == 0 || size % pattern != 0 {
                return Some("InvalidSize");
            }
            let Some((i, off)) = f.locate(address(f, dst.0, dst.1).addr()) else { return Some("InvalidValue") };
            let len = if i == 0 { A_LEN } else { B_LEN };
            if off + size > len {
                return Some("InvalidSize");
            }
            let pat: Vec<u8> = (0..pattern).map(|k| (k as u8).wrapping_mul(37).wrapping_add(5)).collect();
            for k in 0..size {
                memory[i][off + k] = pat[k % pattern];
            }
            None
        }
    }
}

fn pattern_bytes(n: usize) -> Vec<u8> {
    (0..n).map(|k| (k as u8).wrapping_mul(37).wrapping_add(5)).collect()
}

fn runner() -> TestRunner {
    let config = Config { cases: 64, failure_persistence: None, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

#[test]
fn eager_memory_commands_match_the_model() {
    let f = Fixture::new();
    runner()
        .run(&proptest::collection::vec(op(), 1..24), |ops| {
            let mut memory = [Vec::new(), Vec::new()];
            f.reset(&mut memory);
            for op in &ops {
                let expected = model(&f, op, &mut memory);
                let got = match *op {
                    Op::Memcpy { dst, src, size } => {
                        variant(&f.queue.usm_memcpy(address(&f, dst.0, dst.1), address(&f, src.0, src.1), size, &[]))
                    }
                    Op::Fill { dst, pattern, size } => {
                        variant(&f.queue.usm_fill(address(&f, dst.0, dst.1), &pattern_bytes(pattern), size, &[]))
                    }
                };
                prop_assert_eq!(got, expected, "{:?}", op);
            }
            f.queue.finish().unwrap();
            f.check_memory(&memory)
        })
        .unwrap();
}

#[test]
fn recorded_memory_commands_match_the_model() {
    let f = Fixture::new();
    runner()
        .run(&proptest::collection::vec(op(), 1..24), |ops| {
            let cb = CommandBuffer::new(
                &f.context,
                f.context.device(),
                CommandBufferDesc { in_order: true, ..Default::default() },
            )
            .unwrap();
            let mut memory = [Vec::new(), Vec::new()];
            f.reset(&mut memory);
            for op in &ops {
                let expected = model(&f, op, &mut memory);
                let got = match *op {
                    Op::Memcpy { dst, src, size } => variant(&cb.append_usm_memcpy(
                        address(&f, dst.0, dst.1),
                        address(&f, src.0, src.1),
                        size,
                        AppendOptions::new(),
                    )),
                    Op::Fill { dst, pattern, size } => variant(&cb.append_usm_fill(
                        address(&f, dst.0, dst.1),
                        &pattern_bytes(pattern),
                        size,
                        AppendOptions::new(),
                    )),
                };
                prop_assert_eq!(got, expected, "{:?}", op);
            }
            cb.finalize().unwrap();
            f.queue.enqueue_command_buffer(&cb, &[]).unwrap().wait().unwrap();
            f.check_memory(&memory)
        })
        .unwrap();
}

/// Random rect copies between two buffers: the pitch and bounds rules, and
/// the bytes, against a reference written from the definition.
#[test]
fn rect_copies_match_the_model() {
    const SRC: usize = 512;
    const DST: usize = 384;
    let f = Fixture::new();
    let src_data: Vec<u8> = (0..SRC).map(|i| (i * 7 + 3) as u8).collect();
    let src = MemBuffer::with_data(&f.context, MemFlags::READ_WRITE, &src_data).unwrap();
    let dst = MemBuffer::new(&f.context, MemFlags::READ_WRITE, DST).unwrap();
    let side = (
        0..6usize,
        0..6usize,
        0..3usize,
        prop_oneof![Just(0usize), 1..40usize],
        prop_oneof![Just(0usize), 1..200usize],
    );
    let strategy = (side.clone(), side, (0..12usize, 0..6usize, 0..4usize));
    runner()
        .run(&strategy, |((so, sr, ss, srp, ssp), (do_, dr, ds, drp, dsp), (w, h, d))| {
            let region = RectRegion::new(w, h, d);
            let src_layout = RectLayout::new(RectOffset::new(so, sr, ss), srp, ssp);
            let dst_layout = RectLayout::new(RectOffset::new(do_, dr, ds), drp, dsp);
            // The rules, from the definition.
            let resolve = |o: RectOffset, rp: usize, sp: usize, size: usize| -> Result<(usize, usize), &'static str> {
                if w == 0 || h == 0 || d == 0 {
                    return Err("InvalidSize");
                }
                let rp = if rp == 0 { w } else { rp };
                if rp < w {
                    return Err("InvalidSize");
                }
                let sp = if sp == 0 { rp * h } else { sp };
                if sp < rp * h || sp % rp != 0 {
                    return Err("InvalidSize");
                }
                let last = (o.z + d - 1) * sp + (o.y + h - 1) * rp + o.x + w;
                if last > size { Err("InvalidSize") } else { Ok((rp, sp)) }
            };
            let expected = match (
                resolve(src_layout.origin, srp, ssp, usize::MAX),
                resolve(dst_layout.origin, drp, dsp, usize::MAX),
            ) {
                (Err(e), _) | (_, Err(e)) => Err(e),
                (Ok(s), Ok(t)) => {
                    match (resolve(src_layout.origin, srp, ssp, SRC), resolve(dst_layout.origin, drp, dsp, DST)) {
                        (Err(e), _) | (_, Err(e)) => Err(e),
                        _ => Ok((s, t)),
                    }
                }
            };
            let zero = vec![0u8; DST];
            f.queue.write_buffer(&dst, 0, &zero, &[]).unwrap();
            let got = f.queue.copy_buffer_rect(&src, &dst, src_layout, dst_layout, region, &[]);
            prop_assert_eq!(variant(&got), expected.err());
            if let (Ok(event), Ok(((srp, ssp), (drp, dsp)))) = (got, expected) {
                event.wait().unwrap();
                let mut want = zero.clone();
                for z in 0..d {
                    for y in 0..h {
                        for x in 0..w {
                            let s = (ss + z) * ssp + (sr + y) * srp + so + x;
                            let t = (ds + z) * dsp + (dr + y) * drp + do_ + x;
                            want[t] = src_data[s];
                        }
                    }
                }
                let mut out = vec![0u8; DST];
                f.queue.read_buffer(&dst, 0, &mut out, &[]).unwrap();
                prop_assert_eq!(out, want);
            }
            Ok(())
        })
        .unwrap();
}
