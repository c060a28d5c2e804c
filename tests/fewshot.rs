//! `task::fewshot::sample` against numpy's own output (tests/oracle/make_fewshot_fixtures.py).

use geneb::task::fewshot::sample;
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    counts: Vec<usize>,
    step: usize,
    expected: Vec<Expected>,
}

#[derive(Deserialize)]
struct Expected {
    k: usize,
    seed: u32,
    indices: Vec<usize>,
}

/// The oracle's recipe: classes laid out in blocks, row i moved to (i * step) % n.
fn labels(counts: &[usize], step: usize) -> Vec<usize> {
    let n: usize = counts.iter().sum();
    let mut y = vec![0; n];
    let blocks = counts
        .iter()
        .enumerate()
        .flat_map(|(class, &count)| std::iter::repeat_n(class, count));
    for (i, class) in blocks.enumerate() {
        y[(i * step) % n] = class;
    }
    y
}

#[test]
fn subsets_are_bit_identical_to_numpy() {
    let text = include_str!("fixtures/fewshot/expected.json");
    let fixture: Fixture = serde_json::from_str(text).expect("fixture parses");
    let mut checked = 0;
    for case in &fixture.cases {
        let y = labels(&case.counts, case.step);
        for expected in &case.expected {
            let got = sample(&y, case.counts.len(), expected.k, expected.seed);
            assert_eq!(
                got, expected.indices,
                "case {} k={} seed={}",
                case.name, expected.k, expected.seed
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 9 * 5 * 8);
}

#[test]
fn each_class_gets_min_k_and_pool_size() {
    let y = labels(&[3, 0, 40], 7);
    let picked = sample(&y, 3, 10, 42);
    assert_eq!(picked.len(), 13);
    assert!(picked[..3].iter().all(|&i| y[i] == 0));
    assert!(picked[3..].iter().all(|&i| y[i] == 2));
}
