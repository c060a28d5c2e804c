//! Few-shot subsets, bit-identical to the GENEB reference sampler:
//!
//! ```python
//! rng = numpy.random.RandomState(seed)
//! for c in classes:  # label order
//!     pool = numpy.where(y == c)[0]
//!     picked += list(rng.choice(pool, size=min(k, len(pool)), replace=False))
//! ```
//!
//! numpy's legacy `RandomState(int)` seeds MT19937 with `init_genrand`, which is what
//! `rand_mt::Mt::new` does. Legacy `choice(pool, size, replace=False)` is
//! `pool[permutation(len(pool))[:size]]`, and the legacy `permutation` shuffles `arange(n)` with
//! Fisher–Yates from the last element down, drawing each swap index with `random_interval`
//! (`numpy/random/src/distributions/distributions.c`): mask rejection on raw 32-bit outputs
//! (pools of 2^32 or more would switch to 64-bit draws; train splits never get there).
//! An empty pool is `permutation(0)`, which draws nothing.

use rand_mt::Mt;

/// Indices into the train split: up to `k` per class, class by class in label order
/// (`0..n_classes`), each class's picks in the order numpy returns them.
pub fn sample(y: &[usize], n_classes: usize, k: usize, seed: u32) -> Vec<usize> {
    let mut rng = Mt::new(seed);
    let mut picked = Vec::new();
    for class in 0..n_classes {
        let pool: Vec<usize> = (0..y.len()).filter(|&i| y[i] == class).collect();
        let order = legacy_permutation(&mut rng, pool.len());
        picked.extend(order.iter().take(k.min(pool.len())).map(|&i| pool[i]));
    }
    picked
}

/// numpy legacy `RandomState.permutation(n)`.
pub(crate) fn legacy_permutation(rng: &mut Mt, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = random_interval(rng, i as u64) as usize;
        order.swap(i, j);
    }
    order
}

/// numpy `random_interval(max)`: a uniform integer in `0..=max` by rejection on the smallest
/// all-ones bit mask covering `max` — also what legacy `randint` draws per element, so the
/// profile's bootstrap reuses it.
pub(crate) fn random_interval(rng: &mut Mt, max: u64) -> u64 {
    if max == 0 {
        return 0;
    }
    let mask = u64::MAX >> max.leading_zeros();
    if max <= u64::from(u32::MAX) {
        loop {
            let value = u64::from(rng.next_u32()) & mask;
            if value <= max {
                return value;
            }
        }
    }
    loop {
        // numpy's legacy 64-bit draw is two 32-bit outputs, high word first, as `next_u64` does.
        let value = rng.next_u64() & mask;
        if value <= max {
            return value;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_of_20_matches_numpy_seed_13() {
        // numpy.random.RandomState(13).permutation(20)
        let expected = [
            11, 12, 0, 1, 8, 5, 7, 15, 14, 13, 3, 17, 9, 4, 2, 6, 19, 10, 16, 18,
        ];
        assert_eq!(legacy_permutation(&mut Mt::new(13), 20), expected);
    }

    #[test]
    fn empty_and_single_pools_draw_nothing() {
        let mut rng = Mt::new(42);
        assert!(legacy_permutation(&mut rng, 0).is_empty());
        assert_eq!(legacy_permutation(&mut rng, 1), [0]);
        // numpy.random.RandomState(42).randint(0, 2**31) == 1608637542 (one masked 32-bit
        // draw): the stream is untouched.
        assert_eq!(rng.next_u32() & 0x7fff_ffff, 1608637542);
    }
}
