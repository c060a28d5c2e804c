//! The protocol's result does not depend on how many threads ran its probe fits, and progress
//! is only ever reported on the calling thread (in the page it calls JavaScript).

use geneb::encoder::{BackendKind, Encoder};
use geneb::eval::{self, Progress, Stage};
use geneb::protocol::Regime;
use geneb::seq::tasks_from_path;
use std::path::Path;

/// The smoke suite's submission as JSON without its timings, run on a pool of `threads`,
/// and how many probe progress reports it made.
fn smoke_submission(threads: usize) -> (serde_json::Value, usize) {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("tasks/smoke");
    let tasks = tasks_from_path(&suite, None).unwrap();
    let encoder = pollster::block_on(Encoder::from_spec("kmer:3", BackendKind::Cpu)).unwrap();
    let mut probe_reports = 0;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let sub = pool.install(|| {
        // install runs this on a pool thread: that is evaluate's calling thread here.
        let caller = std::thread::current().id();
        pollster::block_on(eval::evaluate(
            &encoder,
            &tasks,
            &Regime::ALL,
            None,
            &mut |p: Progress| {
                assert_eq!(
                    std::thread::current().id(),
                    caller,
                    "progress off the caller"
                );
                probe_reports += usize::from(p.stage == Stage::Probe);
            },
        ))
        .unwrap()
    });
    let mut json = serde_json::to_value(&sub).unwrap();
    json["protocol"]["timings_s"] = serde_json::Value::Null;
    (json, probe_reports)
}

#[test]
fn evaluate_gives_the_same_submission_on_1_and_4_threads() {
    let (one, reports_one) = smoke_submission(1);
    let (four, reports_four) = smoke_submission(4);
    assert_eq!(one["results"]["full"].as_object().unwrap().len(), 5);
    assert!(one == four, "the submission changed with the thread count");
    // Reports come between waves of fits: at least one per task either way.
    assert!(
        reports_one >= 5 && reports_four >= 5,
        "{reports_one} / {reports_four}"
    );
}
