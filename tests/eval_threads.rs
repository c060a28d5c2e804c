//! The protocol's result does not depend on how many threads ran its probe fits, and progress
//! is only ever reported on the calling thread (in the page it calls JavaScript).

use geneb::encoder::{BackendKind, Encoder};
use geneb::eval::{self, Progress, Stage};
use geneb::input::tasks_from_path;
use geneb::protocol::Regime;
use std::path::Path;

/// The smoke suite's submission as JSON without its timings, run on a pool of `threads`,
/// and how many probe progress reports it made.
fn smoke_submission(threads: usize) -> (serde_json::Value, usize) {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("tasks/smoke");
    let tasks = tasks_from_path(&suite, None).unwrap();
    let encoder = pollster::block_on(Encoder::from_spec(
        &"kmer:3".parse().unwrap(),
        BackendKind::Cpu,
    ))
    .unwrap();
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
            &geneb::input::audit::audit_tasks(&tasks).unwrap(),
            &Regime::ALL,
            None,
            false,
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
        .submission
    });
    let mut json = serde_json::to_value(&sub).unwrap();
    // Seconds and memory are measured, not computed: they differ between any two runs.
    json["protocol"]["timings_s"] = serde_json::Value::Null;
    json["protocol"]["cost"] = serde_json::Value::Null;
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

/// A model's embeddings of enough sequences for several CPU batches (the tiny NT-v2 on the
/// 738 lambda sequences: about 30,000 tokens, 2,048 per batch), on a pool of `threads`.
fn nt_v2_embeddings(threads: usize) -> ndarray::Array2<f32> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec = format!("hf:{}", root.join("tests/fixtures/models/nt_v2").display());
    let task = root.join("tasks/smoke/smoke_lambda_phage_vs_ecoli.csv");
    let sequences = tasks_from_path(&task, None).unwrap()[0]
        .data
        .train
        .sequences
        .clone();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let encoder =
            pollster::block_on(Encoder::from_spec(&spec.parse().unwrap(), BackendKind::Cpu))
                .unwrap();
        pollster::block_on(encoder.embed(&sequences)).unwrap()
    })
}

/// The CPU backend runs one batch per pool thread: the embeddings are the same bits whatever
/// the thread count, and in input order.
#[test]
fn embeddings_are_the_same_bits_on_1_2_and_4_threads() {
    let one = nt_v2_embeddings(1);
    assert!(one.nrows() > 500);
    for threads in [2, 4] {
        let many = nt_v2_embeddings(threads);
        let same = one
            .iter()
            .zip(many.iter())
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "the embeddings changed on {threads} threads");
    }
}
