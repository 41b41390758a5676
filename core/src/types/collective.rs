//! The plain types of collectives over a group of devices (the front end's
//! `collective` module): element types, reduction operators, the operation
//! of one call, and the host reduction the host-staged implementation uses.

use std::fmt;

/// An element type of a collective: the types NCCL reduces (`ncclDataType_t`
/// without the 8-bit floats, which only some NCCL versions have).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    /// `i8`.
    I8,
    /// `u8`.
    U8,
    /// `i32`.
    I32,
    /// `u32`.
    U32,
    /// `i64`.
    I64,
    /// `u64`.
    U64,
    /// IEEE 754 binary16, as its bits in a `u16`.
    F16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// bfloat16, as its bits in a `u16`.
    BF16,
}

impl DataType {
    /// Every element type.
    pub const ALL: [DataType; 10] = [
        DataType::I8,
        DataType::U8,
        DataType::I32,
        DataType::U32,
        DataType::I64,
        DataType::U64,
        DataType::F16,
        DataType::F32,
        DataType::F64,
        DataType::BF16,
    ];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DataType::I8 | DataType::U8 => 1,
            DataType::F16 | DataType::BF16 => 2,
            DataType::I32 | DataType::U32 | DataType::F32 => 4,
            DataType::I64 | DataType::U64 | DataType::F64 => 8,
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            DataType::I8 => "i8",
            DataType::U8 => "u8",
            DataType::I32 => "i32",
            DataType::U32 => "u32",
            DataType::I64 => "i64",
            DataType::U64 => "u64",
            DataType::F16 => "f16",
            DataType::F32 => "f32",
            DataType::F64 => "f64",
            DataType::BF16 => "bf16",
        };
        f.write_str(name)
    }
}

/// A reduction operator. Integers wrap on overflow (sum, product), as
/// NCCL's do; floats follow IEEE 754 (min and max of a NaN are unspecified,
/// as in NCCL).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum.
    Sum,
    /// Product.
    Prod,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
}

impl ReduceOp {
    /// Every operator.
    pub const ALL: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max];
}

impl fmt::Display for ReduceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
        })
    }
}

/// One collective operation over the `n` ranks of a communicator, with its
/// element counts. Counts are of elements of the call's [`DataType`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CollectiveOp {
    /// Every rank receives the element-wise reduction of every rank's
    /// `count` elements.
    AllReduce {
        /// Elements each rank sends and receives.
        count: usize,
        /// The reduction.
        op: ReduceOp,
    },
    /// Every rank receives the `count` elements that are the `n` ranks'
    /// `count / n` elements each, in rank order.
    AllGather {
        /// Elements each rank receives; a multiple of `n`.
        count: usize,
    },
    /// Rank `r` receives elements `[r * count / n, (r + 1) * count / n)` of
    /// the element-wise reduction of every rank's `count` elements.
    ReduceScatter {
        /// Elements each rank sends; a multiple of `n`.
        count: usize,
        /// The reduction.
        op: ReduceOp,
    },
    /// Every rank receives the `count` elements rank `root` sends; the
    /// other ranks' send pointers are not used.
    Broadcast {
        /// Elements sent and received.
        count: usize,
        /// The sending rank.
        root: usize,
    },
}

impl CollectiveOp {
    /// Elements rank `rank` of `ranks` sends and receives: `(send, recv)`
    /// (a broadcast's non-root ranks send nothing). Counts are checked
    /// beforehand (multiples of `ranks` where they must be).
    pub fn counts(&self, ranks: usize, rank: usize) -> (usize, usize) {
        match *self {
            CollectiveOp::AllReduce { count, .. } => (count, count),
            CollectiveOp::AllGather { count } => (count / ranks, count),
            CollectiveOp::ReduceScatter { count, .. } => (count, count / ranks),
            CollectiveOp::Broadcast { count, root } => (if rank == root { count } else { 0 }, count),
        }
    }

    /// The name of the operation (`all_reduce`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            CollectiveOp::AllReduce { .. } => "all_reduce",
            CollectiveOp::AllGather { .. } => "all_gather",
            CollectiveOp::ReduceScatter { .. } => "reduce_scatter",
            CollectiveOp::Broadcast { .. } => "broadcast",
        }
    }
}

/// Folds `src` into `acc` element-wise with `op`, both `dtype` elements in
/// native byte order (equal lengths, whole elements). Half-precision values
/// are widened to `f32`, combined and rounded back to nearest-even at each
/// step, as a reduction carried out in the type itself rounds.
pub fn reduce_into(acc: &mut [u8], src: &[u8], dtype: DataType, op: ReduceOp) {
    debug_assert_eq!(acc.len(), src.len());
    macro_rules! ints {
        ($t:ty) => {{
            fold::<$t, { std::mem::size_of::<$t>() }>(acc, src, |a, b| match op {
                ReduceOp::Sum => a.wrapping_add(b),
                ReduceOp::Prod => a.wrapping_mul(b),
                ReduceOp::Min => a.min(b),
                ReduceOp::Max => a.max(b),
            })
        }};
    }
    macro_rules! floats {
        ($t:ty) => {{ fold::<$t, { std::mem::size_of::<$t>() }>(acc, src, |a, b| float_op(op, a, b)) }};
    }
    match dtype {
        DataType::I8 => ints!(i8),
        DataType::U8 => ints!(u8),
        DataType::I32 => ints!(i32),
        DataType::U32 => ints!(u32),
        DataType::I64 => ints!(i64),
        DataType::U64 => ints!(u64),
        DataType::F32 => floats!(f32),
        DataType::F64 => floats!(f64),
        DataType::F16 => fold::<u16, 2>(acc, src, |a, b| f32_to_f16(float_op(op, f16_to_f32(a), f16_to_f32(b)))),
        DataType::BF16 => fold::<u16, 2>(acc, src, |a, b| f32_to_bf16(float_op(op, bf16_to_f32(a), bf16_to_f32(b)))),
    }
}

fn float_op<T: PartialOrd + std::ops::Add<Output = T> + std::ops::Mul<Output = T>>(op: ReduceOp, a: T, b: T) -> T {
    match op {
        ReduceOp::Sum => a + b,
        ReduceOp::Prod => a * b,
        ReduceOp::Min => {
            if b < a {
                b
            } else {
                a
            }
        }
        ReduceOp::Max => {
            if b > a {
                b
            } else {
                a
            }
        }
    }
}

/// A plain element type read and written from native-order bytes.
trait Element: Copy {
    fn read(bytes: &[u8]) -> Self;
    fn write(self, bytes: &mut [u8]);
}

macro_rules! element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            fn read(bytes: &[u8]) -> Self {
                <$t>::from_ne_bytes(bytes.try_into().expect("whole elements"))
            }
            fn write(self, bytes: &mut [u8]) {
                bytes.copy_from_slice(&self.to_ne_bytes());
            }
        }
    )*};
}
element!(i8, u8, u16, i32, u32, i64, u64, f32, f64);

fn fold<T: Element, const N: usize>(acc: &mut [u8], src: &[u8], f: impl Fn(T, T) -> T) {
    for (a, s) in acc.chunks_exact_mut(N).zip(src.chunks_exact(N)) {
        f(T::read(a), T::read(s)).write(a);
    }
}

/// The `f32` value of IEEE binary16 bits (exact).
pub fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exp = u32::from((bits >> 10) & 0x1f);
    let man = u32::from(bits & 0x3ff);
    let out = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: m * 2^-24, exact in f32.
            let v = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, m) => sign | 0x7fc0_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(out)
}

/// IEEE binary16 bits of `value`, rounded to nearest-even.
pub fn f32_to_f16(value: f32) -> u16 {
    let x = value.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xff) as i32;
    let man = x & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        // Subnormal: shift the full mantissa (with its hidden bit) right.
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1 << shift) - 1);
        let mut h = m >> shift;
        if rest > half || (rest == half && h & 1 == 1) {
            h += 1;
        }
        return sign | h as u16;
    }
    let mut h = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        // May carry into the exponent, up to infinity: still correct.
        h += 1;
    }
    sign | h as u16
}

/// The `f32` value of bfloat16 bits (exact).
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// bfloat16 bits of `value`, rounded to nearest-even.
pub fn f32_to_bf16(value: f32) -> u16 {
    let x = value.to_bits();
    if value.is_nan() {
        return ((x >> 16) | 0x40) as u16;
    }
    let rest = x & 0xffff;
    let mut h = x >> 16;
    if rest > 0x8000 || (rest == 0x8000 && h & 1 == 1) {
        h += 1;
    }
    h as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_conversions_round_trip_and_round_to_nearest_even() {
        for bits in 0..=u16::MAX {
            let v = f16_to_f32(bits);
            if v.is_nan() {
                assert!(f16_to_f32(f32_to_f16(v)).is_nan());
            } else {
                assert_eq!(f32_to_f16(v), bits, "{bits:#x}");
            }
            let b = bf16_to_f32(bits);
            if !b.is_nan() {
                assert_eq!(f32_to_bf16(b), bits);
            }
        }
        // 2049 lies half-way between 2048 and 2050 in binary16: ties to even.
        assert_eq!(f16_to_f32(f32_to_f16(2049.0)), 2048.0);
        assert_eq!(f16_to_f32(f32_to_f16(2051.0)), 2052.0);
        assert_eq!(f32_to_f16(1e6), 0x7c00);
        assert_eq!(bf16_to_f32(f32_to_bf16(257.0)), 256.0);
    }

    #[test]
    fn reductions_per_type() {
        let mut acc = [250u8, 3];
        reduce_into(&mut acc, &[10, 7], DataType::U8, ReduceOp::Sum);
        assert_eq!(acc, [4, 10]);
        let mut acc: Vec<u8> = [-3i32, 8].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let src: Vec<u8> = [5i32, -9].iter().flat_map(|v| v.to_ne_bytes()).collect();
        reduce_into(&mut acc, &src, DataType::I32, ReduceOp::Min);
        assert_eq!(acc, [-3i32, -9].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>());
        let mut acc = f32_to_f16(1.5).to_ne_bytes();
        reduce_into(&mut acc, &f32_to_f16(2.0).to_ne_bytes(), DataType::F16, ReduceOp::Prod);
        assert_eq!(f16_to_f32(u16::from_ne_bytes(acc)), 3.0);
        let mut acc = 2.5f64.to_ne_bytes();
        reduce_into(&mut acc, &(-1.0f64).to_ne_bytes(), DataType::F64, ReduceOp::Max);
        assert_eq!(f64::from_ne_bytes(acc), 2.5);
    }

    #[test]
    fn counts_per_rank() {
        let gather = CollectiveOp::AllGather { count: 12 };
        assert_eq!(gather.counts(3, 1), (4, 12));
        let scatter = CollectiveOp::ReduceScatter { count: 12, op: ReduceOp::Sum };
        assert_eq!(scatter.counts(3, 2), (12, 4));
        let bcast = CollectiveOp::Broadcast { count: 5, root: 1 };
        assert_eq!((bcast.counts(2, 0), bcast.counts(2, 1)), ((0, 5), (5, 5)));
    }
}
