//! numpy's legacy `RandomState`, bit for bit: the few-shot samples, the splits geneb makes and
//! the profile's bootstrap draw what the GENEB reference scripts and scikit-learn draw.
//!
//! `RandomState(int)` seeds MT19937 with `init_genrand`, which is what `rand_mt::Mt::new` does.
//! The legacy `permutation` shuffles `arange(n)` with Fisher–Yates from the last element down,
//! drawing each swap index with `random_interval`
//! (`numpy/random/src/distributions/distributions.c`): mask rejection on raw 32-bit outputs
//! (ranges of 2^32 or more switch to 64-bit draws).

pub use rand_mt::Mt as RandomState;

/// numpy legacy `RandomState.permutation(n)`.
pub fn permutation(rng: &mut RandomState, n: usize) -> Vec<usize> {
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
pub fn random_interval(rng: &mut RandomState, max: u64) -> u64 {
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
        assert_eq!(permutation(&mut RandomState::new(13), 20), expected);
    }

    #[test]
    fn empty_and_single_pools_draw_nothing() {
        let mut rng = RandomState::new(42);
        assert!(permutation(&mut rng, 0).is_empty());
        assert_eq!(permutation(&mut rng, 1), [0]);
        // numpy.random.RandomState(42).randint(0, 2**31) == 1608637542 (one masked 32-bit
        // draw): the stream is untouched.
        assert_eq!(rng.next_u32() & 0x7fff_ffff, 1608637542);
    }
}
