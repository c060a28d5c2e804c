//! Few-shot subsets, bit-identical to the GENEB reference sampler:
//!
//! ```python
//! rng = numpy.random.RandomState(seed)
//! for c in classes:  # label order
//!     pool = numpy.where(y == c)[0]
//!     picked += list(rng.choice(pool, size=min(k, len(pool)), replace=False))
//! ```
//!
//! Legacy `choice(pool, size, replace=False)` is `pool[permutation(len(pool))[:size]]`
//! ([`crate::rng::permutation`]); an empty pool is `permutation(0)`, which draws nothing.

use crate::rng::{RandomState, permutation};

/// Indices into the train split: up to `k` per class, class by class in label order
/// (`0..n_classes`), each class's picks in the order numpy returns them.
pub fn sample(y: &[usize], n_classes: usize, k: usize, seed: u32) -> Vec<usize> {
    let mut rng = RandomState::new(seed);
    let mut picked = Vec::new();
    for class in 0..n_classes {
        let pool: Vec<usize> = (0..y.len()).filter(|&i| y[i] == class).collect();
        let order = permutation(&mut rng, pool.len());
        picked.extend(order.iter().take(k.min(pool.len())).map(|&i| pool[i]));
    }
    picked
}
