//! Repeated measurements and their summary: median with the 10th and 90th
//! percentiles as the spread.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The p90 / p10 ratio above which a figure is flagged in the tables.
pub const NOISY_SPREAD: f64 = 2.0;

/// How many times to run a measurement.
#[derive(Copy, Clone, Debug)]
pub struct Repeats {
    /// Runs thrown away first.
    pub warmup: usize,
    /// Runs kept.
    pub samples: usize,
}

impl Repeats {
    /// Fewer samples for long measurements, so every figure costs about the same.
    pub fn scaled(self, work: usize) -> Repeats {
        let samples = (self.samples * 100 / work.max(100)).max(5).min(self.samples);
        Repeats { warmup: self.warmup.min(samples), samples }
    }

    /// As [`scaled`](Self::scaled), and also more samples and warm-up
    /// rounds below 100 units of work (100x at 1): every figure then takes
    /// about the same number of nodes. The smallest measurements are the
    /// cheapest and the noisiest (a few µs against the machine's jitter),
    /// and their medians need the samples; the first figure of a process
    /// also needs the warm-up (pools and the driver's state still growing).
    pub fn per_work(self, work: usize) -> Repeats {
        let scale = |k: usize| (k * 100 / work.max(1)).max(1);
        let samples = scale(self.samples).max(5);
        Repeats { warmup: scale(self.warmup).max(self.warmup).min(samples), samples }
    }
}

/// The summary of one figure's samples, in nanoseconds.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Median.
    pub median: f64,
    /// 10th percentile.
    pub p10: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Number of samples.
    pub samples: usize,
}

impl Summary {
    /// Summarises samples (nanoseconds); `None` when there are none.
    pub fn of(mut samples: Vec<f64>) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_by(f64::total_cmp);
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Some(Summary { median: at(0.5), p10: at(0.1), p90: at(0.9), samples: samples.len() })
    }

    /// Whether the spread is too wide for the median to be trusted alone:
    /// the 90th percentile exceeds [`NOISY_SPREAD`] times the 10th.
    pub fn is_noisy(&self) -> bool {
        self.p90 > self.p10 * NOISY_SPREAD
    }

    /// The summary divided by `n` (per node, per command).
    pub fn per(self, n: usize) -> Summary {
        let n = n.max(1) as f64;
        Summary { median: self.median / n, p10: self.p10 / n, p90: self.p90 / n, ..self }
    }
}

/// Runs `body` `warmup + samples` times; `body` returns the durations it
/// measured (several figures per run are allowed, e.g. host time and wall time).
pub fn measure<const K: usize, E>(
    repeats: Repeats,
    mut body: impl FnMut() -> Result<[Duration; K], E>,
) -> Result<[Summary; K], E> {
    for _ in 0..repeats.warmup {
        body()?;
    }
    let mut samples: [Vec<f64>; K] = std::array::from_fn(|_| Vec::with_capacity(repeats.samples));
    for _ in 0..repeats.samples {
        let durations = body()?;
        for (k, d) in durations.iter().enumerate() {
            samples[k].push(d.as_nanos() as f64);
        }
    }
    Ok(samples.map(|s| Summary::of(s).expect("at least one sample")))
}

/// Samples of one body taken back to back in a round of
/// [`measure_interleaved`].
pub const BLOCK: usize = 10;

/// Runs of a body thrown away at the start of each of its blocks: the first
/// runs after another body pay for the switch (on NVIDIA a raw baseline with a
/// context of its own makes the GPU switch contexts, which cost the next
/// sample of either side 100-150 µs in the H100 runs).
pub const SETTLE: usize = 2;

/// Runs several measurements in one loop, in rounds: each round runs every
/// body for a block of [`BLOCK`] samples after [`SETTLE`] unrecorded runs,
/// the order rotated each round (round `i` starts with body `i mod m`), so
/// that a machine's drift (clocks, other load) falls on every body alike
/// and their ratios compare like with like. Returns one summary set per
/// body, in order.
pub fn measure_interleaved<const K: usize, E>(
    repeats: Repeats,
    bodies: &mut [&mut dyn FnMut() -> Result<[Duration; K], E>],
) -> Result<Vec<[Summary; K]>, E> {
    let m = bodies.len();
    for _ in 0..repeats.warmup {
        for body in bodies.iter_mut() {
            body()?;
        }
    }
    let mut samples: Vec<[Vec<f64>; K]> =
        (0..m).map(|_| std::array::from_fn(|_| Vec::with_capacity(repeats.samples))).collect();
    let mut round = 0;
    while samples[0][0].len() < repeats.samples {
        let block = BLOCK.min(repeats.samples - samples[0][0].len());
        for k in 0..m {
            let which = (round + k) % m;
            for _ in 0..SETTLE {
                bodies[which]()?;
            }
            for _ in 0..block {
                let durations = bodies[which]()?;
                for (figure, d) in durations.iter().enumerate() {
                    samples[which][figure].push(d.as_nanos() as f64);
                }
            }
        }
        round += 1;
    }
    Ok(samples.into_iter().map(|s| s.map(|v| Summary::of(v).expect("at least one sample"))).collect())
}

/// Times `f`.
pub fn time<T, E>(f: impl FnOnce() -> Result<T, E>) -> Result<(T, Duration), E> {
    let start = Instant::now();
    let value = f()?;
    Ok((value, start.elapsed()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_set() {
        let s = Summary::of((1..=11).map(f64::from).collect()).unwrap();
        assert_eq!((s.p10, s.median, s.p90, s.samples), (2.0, 6.0, 10.0, 11));
        assert_eq!(s.per(2).median, 3.0);
        assert!(Summary::of(Vec::new()).is_none());
        assert!(s.is_noisy(), "p90 = 10 is 5x p10 = 2");
        let tight = Summary::of((10..=20).map(f64::from).collect()).unwrap();
        assert!(!tight.is_noisy(), "p90 = 19 is under 2x p10 = 11");
    }

    #[test]
    fn interleaved_rounds_rotate_blocks() {
        let order = std::cell::RefCell::new(String::new());
        let (mut a, mut b) = (
            || {
                order.borrow_mut().push('a');
                Ok::<_, ()>([Duration::from_nanos(1)])
            },
            || {
                order.borrow_mut().push('b');
                Ok::<_, ()>([Duration::from_nanos(3)])
            },
        );
        let samples = BLOCK + 1;
        let out = measure_interleaved(Repeats { warmup: 1, samples }, &mut [&mut a, &mut b]).unwrap();
        let block = |c: char, n: usize| c.to_string().repeat(SETTLE + n);
        let expected = ["ab".to_string(), block('a', BLOCK), block('b', BLOCK), block('b', 1), block('a', 1)].concat();
        assert_eq!(order.into_inner(), expected);
        assert_eq!(
            (out[0][0].median, out[0][0].samples, out[1][0].median, out[1][0].samples),
            (1.0, samples, 3.0, samples)
        );
    }

    #[test]
    fn repeats_per_work_grow_below_100() {
        let r = Repeats { warmup: 5, samples: 50 };
        assert_eq!((r.per_work(1).samples, r.per_work(1).warmup), (5000, 500));
        assert_eq!(r.per_work(1000).warmup, 5);
        assert_eq!(r.per_work(10).samples, 500);
        assert_eq!(r.per_work(100).samples, 50);
        assert_eq!(r.per_work(1000).samples, 5);
        assert_eq!(r.per_work(100_000).samples, 5);
    }

    #[test]
    fn scaled_repeats_keep_a_floor() {
        let r = Repeats { warmup: 5, samples: 50 };
        assert_eq!(r.scaled(10).samples, 50);
        assert_eq!(r.scaled(1000).samples, 5);
        assert_eq!(r.scaled(100_000).samples, 5);
    }
}
