//! The GENEB protocol for one encoder over a set of tasks: embed each task once (train and
//! test together), then fit the probe for every regime on those same embeddings
//! ([`evaluate`]); or the same fits on embeddings the user brought ([`probe_embeddings`]).

use crate::encoder::Encoder;
use crate::input::audit::TaskAudit;
use crate::input::embeddings::EmbeddingsTask;
use crate::metrics::{self, Scores};
use crate::probe::LogisticRegression;
use crate::progress::Meter;
use crate::protocol::{self, Regime};
use crate::submission::{
    ClassIndices, LeakFree, Meta, SeedScores, Submission, TaskInfo, TaskPredictions,
};
use crate::task::{MadeSplit, Task, TaskData, fewshot};
use crate::{Result, probe};
use ndarray::{Array2, Axis};
use rayon::prelude::*;
use serde_json::json;
use std::collections::BTreeMap;
use web_time::Instant;

/// Sequences per embedding call: progress granularity, not a batching decision (encoders batch
/// on their own terms).
const EMBED_CHUNK: usize = 128;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    Embed,
    Probe,
}

/// A progress report: `done` of `total` units of `stage` for one task (sequences to embed,
/// probe fits), and the stage's pace over the whole call.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Progress<'a> {
    pub stage: Stage,
    pub model: &'a str,
    pub task: &'a str,
    pub done: usize,
    pub total: usize,
    /// The embeddings came from an earlier run's cache rather than from the encoder.
    #[serde(rename = "fromCache")]
    pub from_cache: bool,
    /// The stage over every task of the call: done, total, rate, elapsed, time left.
    pub run: crate::progress::Rate,
    /// `run` in words, as the CLI and the page show it: `61.2 seq/s · 32 s elapsed · about
    /// 29 s left` (probing: no rate; its time left is weighted by each fit's training rows).
    pub pace: String,
}

/// Embeddings kept between runs, keyed by the encoder's identity (spec + a hash of its files)
/// and the hash of the sequences, so a rerun, another regime or another probe setting never
/// pays for a second embedding pass. A miss or an unreadable entry just means "embed again".
/// The methods return futures because the page's store is IndexedDB, which only answers
/// asynchronously; the native folder store is ready at once.
pub trait EmbeddingStore {
    fn get<'a>(
        &'a self,
        key: &'a str,
        rows: usize,
        dim: usize,
    ) -> StoreFuture<'a, Option<Array2<f32>>>;
    fn put<'a>(&'a self, key: &'a str, embeddings: &'a Array2<f32>) -> StoreFuture<'a, Result<()>>;
}

pub type StoreFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + 'a>>;

/// The hex SHA-256 of a list of sequences (each length-prefixed, so boundaries count).
pub fn sequences_hash(sequences: &[String]) -> String {
    crate::digest::sha256_of_parts(sequences.iter().map(|s| s.as_bytes()))
}

/// What [`evaluate`] made: the submission, and the full-data probe of each task when asked for
/// (the fit scored in the result, which `crate::predict` saves).
pub struct Evaluated {
    pub submission: Submission,
    /// Task id → its full-data probe; empty unless `keep_full_probes`.
    pub full_probes: BTreeMap<String, LogisticRegression>,
}

/// Embeds the tasks one by one, holding their embeddings until `PROBE_BATCH_BYTES`, then
/// runs the probe fits of those tasks in parallel (see `probe_batch`). Results are assembled
/// in task, regime and seed order, so the `Submission` does not depend on the thread count.
/// `keep_full_probes` keeps the full regime's fits (a few weights each) beside the scores.
/// `audits` are the tasks' leak audits, in task order (`crate::input::audit::audit_tasks`):
/// taken once by the caller, whatever the number of models it evaluates on the same tasks.
pub async fn evaluate(
    encoder: &Encoder,
    tasks: &[TaskData],
    audits: &[TaskAudit],
    regimes: &[Regime],
    store: Option<&dyn EmbeddingStore>,
    keep_full_probes: bool,
    progress: &mut dyn FnMut(Progress),
) -> Result<Evaluated> {
    let mut evaluated = evaluate_views(
        &[encoder],
        tasks,
        audits,
        regimes,
        store,
        keep_full_probes,
        progress,
    )
    .await?;
    evaluated
        .pop()
        .ok_or_else(|| crate::Error::new("internal error: no evaluation"))
}

/// `evaluate` for views of one model at several layers (`Encoder::at_layers`, `geneb eval
/// --layers`): each task is embedded once for all of them (one forward pass per batch, each
/// layer cached under its own identity), then every layer is probed as a model of its own.
/// One `Evaluated` per view, in order; the embedding pass's seconds are each one's.
pub async fn evaluate_views(
    views: &[&Encoder],
    tasks: &[TaskData],
    audits: &[TaskAudit],
    regimes: &[Regime],
    store: Option<&dyn EmbeddingStore>,
    keep_full_probes: bool,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<Evaluated>> {
    let Some(first) = views.first() else {
        return Ok(Vec::new());
    };
    let specs: Vec<String> = views.iter().map(|view| view.spec()).collect();
    let identities: Vec<Option<String>> = views.iter().map(|view| view.cache_identity()).collect();
    let mut outs: Vec<Collected> = views
        .iter()
        .map(|_| Collected {
            keep_full_probes,
            ..Collected::default()
        })
        .collect();
    // The leak audit is the input's (`crate::input::audit`); the evaluation records it and
    // scores the rows that did not leak beside all of them.
    if audits.len() != tasks.len() || audits.iter().zip(tasks).any(|(a, t)| a.task != t.task.id) {
        return Err(crate::Error::new(
            "internal error: the leak audits given are not those of the tasks evaluated",
        ));
    }
    let leaked: Vec<&[usize]> = audits
        .iter()
        .map(|a| a.leaked_test_rows.as_slice())
        .collect();
    for out in &mut outs {
        out.audit = audits.iter().map(|a| (a.task.clone(), a.clone())).collect();
    }
    // Per view: task id → the splits whose embeddings an earlier run had stored.
    let mut from_cache: Vec<BTreeMap<String, Vec<&str>>> = vec![BTreeMap::new(); views.len()];
    // Task id → how many of its sequences lost tokens to the encoder's maximum length.
    let mut truncated: BTreeMap<&str, usize> = BTreeMap::new();
    let mut embed_seconds = 0.0;
    let mut probe_seconds = vec![0.0; views.len()];
    // What the encoder itself embedded (cache hits cost nothing), for the cost block.
    let mut embedded = Embedding::default();
    let mut batches: Vec<Vec<Embedded>> = views.iter().map(|_| Vec::new()).collect();
    let mut held = 0;
    let mut meters = Meters {
        embed: Meter::new(
            tasks
                .iter()
                .map(|t| (t.data.train.len() + t.data.test.len()) as u64)
                .sum(),
        ),
        probe: Meter::new(
            tasks
                .iter()
                .map(|t| probe_rows(&Labelled::of(t, None), regimes))
                .sum::<u64>()
                * views.len() as u64,
        ),
    };
    let dims: usize = views.iter().map(|view| view.dim()).sum();

    for (i, task) in tasks.iter().enumerate() {
        let id = task.task.id.as_str();
        let data = &task.data;
        check_memory(id, data.train.len() + data.test.len(), dims)?;
        let cut = first.truncated(&data.train.sequences) + first.truncated(&data.test.sequences);
        if cut > 0 {
            truncated.insert(id, cut);
        }
        let started = Instant::now();
        let total = data.train.len() + data.test.len();
        let place = Place {
            spec: &specs[0],
            task: id,
            offset: 0,
            total,
        };
        let cache = Cache {
            store,
            identities: &identities,
        };
        meters.embed.resume();
        let train = embed_all(
            views,
            &data.train.sequences,
            cache,
            place,
            &mut meters.embed,
            progress,
        )
        .await?;
        let place = Place {
            offset: data.train.len(),
            ..place
        };
        let test = embed_all(
            views,
            &data.test.sequences,
            cache,
            place,
            &mut meters.embed,
            progress,
        )
        .await?;
        meters.embed.pause();
        let seconds = started.elapsed().as_secs_f64();
        embed_seconds += seconds;
        for (split, computed) in [
            (
                &data.train.sequences,
                train.iter().any(|(_, cached)| !cached),
            ),
            (&data.test.sequences, test.iter().any(|(_, cached)| !cached)),
        ] {
            if computed {
                embedded.sequences += split.len();
                embedded.nucleotides += split.iter().map(String::len).sum::<usize>();
            }
        }
        if train.iter().chain(&test).any(|(_, cached)| !cached) {
            embedded.seconds += seconds;
        }
        // Burn keeps a pass's buffers pooled until memory runs short, so what the GPU holds
        // after each task's pass is close to what that pass needed at most.
        embedded.gpu_bytes = embedded.gpu_bytes.max(first.gpu_memory_bytes());
        for (v, ((x_train, train_cached), (x_test, test_cached))) in
            train.into_iter().zip(test).enumerate()
        {
            let cached_splits: Vec<&str> = [("train", train_cached), ("test", test_cached)]
                .into_iter()
                .filter_map(|(split, cached)| cached.then_some(split))
                .collect();
            if !cached_splits.is_empty() {
                from_cache[v].insert(id.to_string(), cached_splits);
            }
            held += (x_train.len() + x_test.len()) * size_of::<f32>();
            batches[v].push(Embedded {
                task: Labelled::of(task, Some(leaked[i])),
                x_train,
                x_test,
            });
        }
        if held >= PROBE_BATCH_BYTES || i + 1 == tasks.len() {
            for (v, batch) in batches.iter_mut().enumerate() {
                let started = Instant::now();
                meters.probe.resume();
                probe_batch(
                    &specs[v],
                    batch,
                    regimes,
                    &mut meters.probe,
                    progress,
                    &mut outs[v],
                )?;
                meters.probe.pause();
                probe_seconds[v] += started.elapsed().as_secs_f64();
                batch.clear();
            }
            held = 0;
        }
    }
    let splits = crate::input::split::splits_of(tasks);
    let task_hashes: BTreeMap<&str, String> = tasks
        .iter()
        .map(|t| (t.task.id.as_str(), t.data.content_hash()))
        .collect();
    let mut evaluated = Vec::with_capacity(views.len());
    for (v, (view, mut out)) in views.iter().zip(outs).enumerate() {
        let deviations = own_tasks(&splits)
            .into_iter()
            .chain(crate::input::split::deviations(&splits))
            .chain(view.deviations())
            .collect();
        // What depends on where the embeddings came from; `merge` reads the cache hits and
        // hashes.
        let encoder_block = json!({
            "encoder": view.describe(),
            "backend": view.backend_info(),
            "embeddings_from_cache": from_cache[v],
            "task_data_sha256": task_hashes,
            "truncated_sequences": truncated,
            "cost": embedded.cost(&view.backend_info()),
        });
        let timings = [embed_seconds, probe_seconds[v]];
        let full_probes = std::mem::take(&mut out.full_probes);
        let mut submission = assemble(
            &specs[v],
            view.meta(),
            out,
            encoder_block,
            regimes,
            deviations,
            timings,
        );
        crate::submission::folds::merge(&mut submission, &splits)?;
        evaluated.push(Evaluated {
            submission,
            full_probes,
        });
    }
    Ok(evaluated)
}

/// The GENEB protocol on the user's embeddings: every regime's fits, as [`evaluate`] runs them
/// on an encoder's, under `model_id`.
pub fn probe_embeddings(
    model_id: &str,
    tasks: Vec<EmbeddingsTask>,
    regimes: &[Regime],
    progress: &mut dyn FnMut(Progress),
) -> Result<Submission> {
    let started = Instant::now();
    // The embeddings move into the probe stage; the rest of each task stays here.
    type Pair = (Array2<f32>, Array2<f32>);
    let (tasks, embeddings): (Vec<EmbeddingsTask>, Vec<Pair>) = tasks
        .into_iter()
        .map(|mut t| {
            let x = (
                std::mem::take(&mut t.x_train),
                std::mem::take(&mut t.x_test),
            );
            (t, x)
        })
        .unzip();
    let dims: Vec<usize> = embeddings.iter().map(|(x, _)| x.ncols()).collect();
    let batch: Vec<Embedded> = tasks
        .iter()
        .zip(embeddings)
        .map(|(t, (x_train, x_test))| Embedded {
            task: Labelled {
                task: &t.task,
                labels: t.labels.len(),
                y_train: &t.y_train,
                y_test: &t.y_test,
                made_split: t.made_split.as_ref(),
                leaked: None,
            },
            x_train,
            x_test,
        })
        .collect();
    let out = probe_all(model_id, &batch, regimes, progress)?;
    let meta = Meta {
        display: model_id.to_string(),
        params: 0,
        url: String::new(),
        zero_shot: false,
        training_data: "unknown (embeddings made outside geneb)".to_string(),
        provenance: "self-reported".to_string(),
        submitted_by: String::new(),
    };
    let splits: Vec<crate::input::split::SplitOf> = tasks
        .iter()
        .map(|t| (t.task.id.as_str(), t.made_split.as_ref()))
        .collect();
    let sources: BTreeMap<&str, (&str, &str, usize)> = tasks
        .iter()
        .zip(dims)
        .map(|(t, dim)| {
            let id = crate::input::split::reported_id((&t.task.id, t.made_split.as_ref()));
            (id, (t.source.as_str(), t.stored_as, dim))
        })
        .collect();
    let encoder = json!({
        "encoder": {
            "source": "embeddings given by the user (geneb embedded nothing: the layer, pooling \
                       and truncation are the embedder's)",
            "files": sources.iter().map(|(id, (file, stored, dim))| {
                json!({"task": id, "file": file, "stored_as": stored, "dim": dim, "probed_as": "float32"})
            }).collect::<Vec<_>>(),
        },
        "backend": null,
    });
    let deviations = own_tasks(&splits)
        .into_iter()
        .chain(crate::input::split::deviations(&splits))
        .chain(std::iter::once(
            "the embeddings were made outside geneb (its encoders, pooling and truncation \
             were not used): the probe and regimes are GENEB's, the representation is the \
             user's"
                .to_string(),
        ))
        .collect();
    let seconds = started.elapsed().as_secs_f64();
    let mut submission = assemble(
        model_id,
        meta,
        out,
        encoder,
        regimes,
        deviations,
        [0.0, seconds],
    );
    crate::submission::folds::merge(&mut submission, &splits)?;
    Ok(submission)
}

/// One line per task whose sequences the encoder cut at its maximum length, for the CLI
/// (`protocol.truncated_sequences`; the page reads the same entry).
pub fn truncation_notes(submission: &Submission) -> Vec<String> {
    let counts = submission
        .protocol
        .as_ref()
        .and_then(|p| p["truncated_sequences"].as_object());
    counts
        .into_iter()
        .flatten()
        .map(|(task, n)| {
            format!(
                "{}: {n} sequence(s) of {task} cut at the model's maximum length",
                submission.model_id
            )
        })
        .collect()
}

/// The submission of one encoder's probed tasks. `encoder` holds the protocol block's
/// `encoder` and `backend` entries; `timings` the embedding and probing seconds.
fn assemble(
    model_id: &str,
    meta: Meta,
    out: Collected,
    encoder: serde_json::Value,
    regimes: &[Regime],
    deviations: Vec<String>,
    timings: [f64; 2],
) -> Submission {
    let Collected {
        results,
        fewshot,
        tasks,
        predictions,
        not_converged,
        audit,
        leak_free,
        ..
    } = out;
    Submission {
        schema_version: protocol::SCHEMA_VERSION.to_string(),
        model_id: model_id.to_string(),
        harness_version: format!("geneb {}", crate::VERSION),
        meta,
        results,
        tasks,
        fewshot,
        predictions,
        folds: BTreeMap::new(),
        audit,
        leak_free,
        protocol: Some(protocol_block(
            encoder,
            regimes,
            deviations,
            not_converged,
            timings,
        )),
    }
}

/// Every fit of tasks whose embeddings are all in memory already (the user's own), in waves as
/// `evaluate` runs them.
fn probe_all(
    spec: &str,
    batch: &[Embedded],
    regimes: &[Regime],
    progress: &mut dyn FnMut(Progress),
) -> Result<Collected> {
    let mut meter = Meter::new(batch.iter().map(|e| probe_rows(&e.task, regimes)).sum());
    let mut out = Collected::default();
    meter.resume();
    probe_batch(spec, batch, regimes, &mut meter, progress, &mut out)?;
    Ok(out)
}

/// Embedded tasks held before their probe fits run together: more tasks give the pool more
/// independent fits; the page's whole memory is 4 GiB.
#[cfg(not(target_arch = "wasm32"))]
const PROBE_BATCH_BYTES: usize = 2 << 30;
#[cfg(target_arch = "wasm32")]
const PROBE_BATCH_BYTES: usize = 256 << 20;

/// Fits per pool thread between two progress reports: the callback runs on the calling
/// thread only (in the page it is JavaScript), so it is called between waves of fits.
const FITS_PER_THREAD: usize = 2;

/// Each stage's clock over the whole call (`Progress::run`).
struct Meters {
    /// Sequences.
    embed: Meter,
    /// Training rows of the fits: a fit's cost grows with its rows, so time left weighted by
    /// rows holds across full-data fits (thousands of rows) and few-shot ones (a few dozen).
    probe: Meter,
}

/// The training rows of every probe fit of `task` under `regimes`.
fn probe_rows(task: &Labelled, regimes: &[Regime]) -> u64 {
    regimes
        .iter()
        .map(|r| {
            let fits = if r.shots().is_some() {
                protocol::FEWSHOT_SEEDS.len() as u64
            } else {
                1
            };
            fit_rows(task, r.shots()) * fits
        })
        .sum()
}

/// Training rows of one fit: the whole training split, or one few-shot sample of `k` per
/// class (`min(k, n)` per class, as `fewshot::sample` takes them).
fn fit_rows(task: &Labelled, shots: Option<usize>) -> u64 {
    let rows = match shots {
        None => task.y_train.len(),
        Some(k) => (0..task.labels)
            .map(|c| task.y_train.iter().filter(|&&v| v == c).count().min(k))
            .sum(),
    };
    rows as u64
}

/// What the probe stage needs of a task besides its embeddings: a task of sequences embedded
/// here, or one whose embeddings the user brought (`crate::input::embeddings`).
struct Labelled<'t> {
    pub task: &'t Task,
    /// Classes (label names are not needed to probe).
    pub labels: usize,
    pub y_train: &'t [usize],
    pub y_test: &'t [usize],
    pub made_split: Option<&'t MadeSplit>,
    /// The test rows the audit found leaked (`None`: not audited, the user's embeddings).
    pub leaked: Option<&'t [usize]>,
}

impl<'t> Labelled<'t> {
    fn of(t: &'t TaskData, leaked: Option<&'t [usize]>) -> Self {
        Labelled {
            task: &t.task,
            labels: t.data.labels.len(),
            y_train: &t.data.train.y,
            y_test: &t.data.test.y,
            made_split: t.data.made_split.as_ref(),
            leaked,
        }
    }
}

/// A task whose embeddings wait for the probe.
struct Embedded<'t> {
    pub task: Labelled<'t>,
    pub x_train: Array2<f32>,
    pub x_test: Array2<f32>,
}

/// The submission's per-task parts, filled task by task in the caller's order.
#[derive(Default)]
struct Collected {
    results: BTreeMap<String, BTreeMap<String, Scores>>,
    fewshot: BTreeMap<String, BTreeMap<String, Vec<SeedScores>>>,
    tasks: BTreeMap<String, TaskInfo>,
    predictions: BTreeMap<String, TaskPredictions>,
    not_converged: Vec<String>,
    audit: BTreeMap<String, TaskAudit>,
    leak_free: BTreeMap<String, BTreeMap<String, LeakFree>>,
    /// Whether to keep the full regime's fits in `full_probes`.
    keep_full_probes: bool,
    full_probes: BTreeMap<String, LogisticRegression>,
}

/// One probe fit: a task of the batch, on its full training split or on one seed's few-shot
/// sample.
struct Job {
    task: usize,
    shots: Option<(usize, u32)>,
    /// Its training rows: what the probe's progress meter counts.
    rows: u64,
}

struct Fitted {
    predicted: Vec<usize>,
    converged: bool,
    /// The fit itself, kept for a full-data fit when the caller asked for it.
    kept: Option<LogisticRegression>,
}

/// Every fit of the batch, in waves of `FITS_PER_THREAD` per pool thread (each fit also
/// shards its own objective on the pool), then the results in task, regime, seed order.
fn probe_batch(
    spec: &str,
    batch: &[Embedded],
    regimes: &[Regime],
    meter: &mut Meter,
    progress: &mut dyn FnMut(Progress),
    out: &mut Collected,
) -> Result<()> {
    let jobs: Vec<Job> = (0..batch.len())
        .flat_map(|task| {
            regimes.iter().flat_map(move |r| {
                let rows = fit_rows(&batch[task].task, r.shots());
                match r.shots() {
                    None => vec![Job {
                        task,
                        shots: None,
                        rows,
                    }],
                    Some(k) => protocol::FEWSHOT_SEEDS
                        .iter()
                        .map(|&seed| Job {
                            task,
                            shots: Some((k, seed)),
                            rows,
                        })
                        .collect(),
                }
            })
        })
        .collect();
    let per_task = jobs.len() / batch.len().max(1);
    let wave = rayon::current_num_threads() * FITS_PER_THREAD;
    let mut fitted = Vec::with_capacity(jobs.len());
    for jobs in jobs.chunks(wave) {
        let done: Vec<Result<Fitted>> = jobs
            .par_iter()
            .map(|job| fit_one(&batch[job.task], job.shots, out.keep_full_probes))
            .collect();
        for f in done {
            fitted.push(f?);
        }
        meter.advance(jobs.iter().map(|job| job.rows).sum(), false);
        let run = meter.rate();
        let (lo, hi) = (fitted.len() - jobs.len(), fitted.len());
        let reported = batch.iter().enumerate().take(hi.div_ceil(per_task));
        for (t, e) in reported.skip(lo / per_task) {
            progress(Progress {
                stage: Stage::Probe,
                model: spec,
                task: &e.task.task.id,
                done: hi.min((t + 1) * per_task) - t * per_task,
                total: per_task,
                from_cache: false,
                run,
                pace: run.pace(None),
            });
        }
    }

    let mut fitted = fitted.into_iter();
    let mut next = || {
        fitted
            .next()
            .ok_or_else(|| crate::Error::new("internal error: a probe fit is missing"))
    };
    for e in batch {
        let (task, data) = (e.task.task, &e.task);
        let id = task.id.as_str();
        let mut evidence = TaskPredictions {
            y_true: ClassIndices::encode(data.y_test)?,
            regimes: BTreeMap::new(),
        };
        for &regime in regimes {
            // Every fit's test predictions, kept for bootstrap intervals over test examples.
            let regime_predictions = evidence
                .regimes
                .entry(regime.key().to_string())
                .or_default();
            // This regime's fits' predictions, for the leak-free score.
            let mut fit_predictions: Vec<Vec<usize>> = Vec::new();
            let scores = match regime.shots() {
                None => {
                    let mut fit = next()?;
                    if !fit.converged {
                        out.not_converged.push(format!("{}/{id}", regime.key()));
                    }
                    if let Some(kept) = fit.kept.take() {
                        out.full_probes.insert(id.to_string(), kept);
                    }
                    regime_predictions.push(ClassIndices::encode(&fit.predicted)?);
                    let scores = metrics::score(data.y_test, &fit.predicted);
                    fit_predictions.push(fit.predicted);
                    scores
                }
                Some(_) => {
                    let mut per_seed = Vec::with_capacity(protocol::FEWSHOT_SEEDS.len());
                    for seed in protocol::FEWSHOT_SEEDS {
                        let fit = next()?;
                        if !fit.converged {
                            out.not_converged
                                .push(format!("{}/{id}/seed{seed}", regime.key()));
                        }
                        regime_predictions.push(ClassIndices::encode(&fit.predicted)?);
                        per_seed.push(SeedScores {
                            seed,
                            scores: metrics::score(data.y_test, &fit.predicted),
                            converged: fit.converged,
                        });
                        fit_predictions.push(fit.predicted);
                    }
                    let mean = mean_scores(per_seed.iter().map(|s| s.scores));
                    out.fewshot
                        .entry(regime.key().to_string())
                        .or_default()
                        .insert(id.to_string(), per_seed);
                    mean
                }
            };
            out.results
                .entry(regime.key().to_string())
                .or_default()
                .insert(id.to_string(), scores);
            if let Some(leaked) = data.leaked {
                let fits: Vec<&[usize]> = fit_predictions.iter().map(Vec::as_slice).collect();
                out.leak_free
                    .entry(regime.key().to_string())
                    .or_default()
                    .insert(id.to_string(), LeakFree::of(data.y_test, &fits, leaked));
            }
        }
        out.predictions.insert(id.to_string(), evidence);
        out.tasks.insert(
            id.to_string(),
            TaskInfo {
                category: task.category.clone(),
                n_train: data.y_train.len(),
                n_test: data.y_test.len(),
                n_classes: data.labels,
                split: data.made_split.cloned(),
            },
        );
    }
    Ok(())
}

/// One fit and its test predictions (and the fit, for a full-data one when `keep_full`).
fn fit_one(e: &Embedded, shots: Option<(usize, u32)>, keep_full: bool) -> Result<Fitted> {
    let data = &e.task;
    let fit = match shots {
        None => probe::fit(e.x_train.view(), data.y_train)?,
        Some((k, seed)) => {
            let rows = fewshot::sample(data.y_train, data.labels, k, seed);
            let x = e.x_train.select(Axis(0), &rows);
            let y: Vec<usize> = rows.iter().map(|&r| data.y_train[r]).collect();
            probe::fit(x.view(), &y)?
        }
    };
    Ok(Fitted {
        predicted: fit.predict(e.x_test.view()),
        converged: fit.converged,
        kept: (keep_full && shots.is_none()).then_some(fit),
    })
}

/// Embeddings are held in f32 for the probe; past this many bytes a task is refused with advice
/// instead of aborting the process (or trapping the tab, whose memory is 4 GiB in all).
#[cfg(not(target_arch = "wasm32"))]
pub const EMBEDDING_BUDGET: usize = 16 << 30;
#[cfg(target_arch = "wasm32")]
pub const EMBEDDING_BUDGET: usize = 1 << 30;

fn check_memory(task: &str, rows: usize, dim: usize) -> Result<()> {
    let bytes = rows.saturating_mul(dim).saturating_mul(size_of::<f32>());
    if bytes > EMBEDDING_BUDGET {
        return Err(crate::Error::new(format!(
            "task {task}: {rows} sequences × {dim} dimensions need {:.1} GB of embeddings, more \
             than the {} GB geneb allows here; use a smaller encoder (e.g. kmer:4) or fewer rows",
            bytes as f64 / 1e9,
            EMBEDDING_BUDGET >> 30
        )));
    }
    Ok(())
}

/// Where a list of sequences sits in its task's progress.
#[derive(Clone, Copy)]
struct Place<'a> {
    spec: &'a str,
    task: &'a str,
    offset: usize,
    total: usize,
}

/// Pooled embeddings of `sequences` in the chunks `evaluate` embeds them in, so a probe fitted
/// or applied on them (`crate::predict`) sees the very numbers the evaluation saw.
pub async fn embed_sequences(encoder: &Encoder, sequences: &[String]) -> Result<Array2<f32>> {
    let spec = encoder.spec();
    let place = Place {
        spec: &spec,
        task: "",
        offset: 0,
        total: sequences.len(),
    };
    let mut meter = Meter::new(sequences.len() as u64);
    let cache = Cache {
        store: None,
        identities: &[],
    };
    let mut embedded =
        embed_all(&[encoder], sequences, cache, place, &mut meter, &mut |_| {}).await?;
    let (embeddings, _) = embedded
        .pop()
        .ok_or_else(|| crate::Error::new("internal error: no embeddings"))?;
    Ok(embeddings)
}

/// What the encoder embedded itself in one evaluation: the cost block's rates.
#[derive(Default)]
struct Embedding {
    sequences: usize,
    nucleotides: usize,
    /// Seconds of the tasks whose embeddings were computed, not read from the cache.
    seconds: f64,
    /// The most GPU memory seen after a task's pass (None off the GPU).
    gpu_bytes: Option<u64>,
}

impl Embedding {
    /// The result's `protocol.cost`: where it ran, the embedding pass's rates (null when every
    /// embedding came from the cache) and the peak memory so far, the host's and the GPU's.
    /// `Run` adds the model's load time. `merge` sums `embedding_s` and the counts across
    /// shards and recomputes the rates with `cost_rates`.
    fn cost(&self, backend: &crate::encoder::BackendInfo) -> serde_json::Value {
        let mut cost = json!({
            "device": backend.kind,
            "adapter": backend.adapter,
            "embedded_sequences": self.sequences,
            "embedded_nucleotides": self.nucleotides,
            "embedding_s": self.seconds,
            "peak_memory_bytes": peak_memory_bytes(),
            "peak_gpu_memory_bytes": self.gpu_bytes,
        });
        cost_rates(&mut cost);
        cost
    }
}

/// A cost block's `sequences_per_s` and `nucleotides_per_s` from its counts and
/// `embedding_s` (null where nothing was embedded, every embedding read from the cache).
pub fn cost_rates(cost: &mut serde_json::Value) {
    let seconds = cost["embedding_s"].as_f64().unwrap_or(0.0);
    let sequences = cost["embedded_sequences"].as_f64().unwrap_or(0.0);
    for (count, rate) in [
        ("embedded_sequences", "sequences_per_s"),
        ("embedded_nucleotides", "nucleotides_per_s"),
    ] {
        let count = cost[count].as_f64().unwrap_or(0.0);
        cost[rate] = json!((sequences > 0.0 && seconds > 0.0).then(|| count / seconds));
    }
}

/// The process's peak resident memory (Linux's VmHWM), or in the page the WebAssembly heap's
/// size, which only grows; None where neither can be read.
pub fn peak_memory_bytes() -> Option<u64> {
    #[cfg(target_arch = "wasm32")]
    {
        Some(core::arch::wasm32::memory_size(0) as u64 * 65536)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    }
}

/// The embedding store and each view's identity in it (None: not cached).
#[derive(Clone, Copy)]
struct Cache<'a> {
    store: Option<&'a dyn EmbeddingStore>,
    identities: &'a [Option<String>],
}

/// Each view's embeddings of `sequences` and whether they came from the cache: the views the
/// cache lacks computed together, one forward pass per batch, and stored.
async fn embed_all(
    views: &[&Encoder],
    sequences: &[String],
    cache: Cache<'_>,
    place: Place<'_>,
    meter: &mut Meter,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<(Array2<f32>, bool)>> {
    let report = |done: usize, from_cache: bool, meter: &Meter| {
        let run = meter.rate();
        Progress {
            stage: Stage::Embed,
            model: place.spec,
            task: place.task,
            done: place.offset + done,
            total: place.total,
            from_cache,
            run,
            pace: run.pace(Some("seq")),
        }
    };
    let hash = sequences_hash(sequences);
    let keys: Vec<Option<String>> = (0..views.len())
        .map(|v| {
            let identity = cache.identities.get(v).cloned().flatten();
            cache.store.and(identity).map(|id| format!("{id}/{hash}"))
        })
        .collect();
    let mut found: Vec<Option<Array2<f32>>> = Vec::with_capacity(views.len());
    for (view, key) in views.iter().zip(&keys) {
        found.push(match (cache.store, key) {
            (Some(store), Some(key)) => store.get(key, sequences.len(), view.dim()).await,
            _ => None,
        });
    }
    let missing: Vec<usize> = (0..views.len()).filter(|&v| found[v].is_none()).collect();
    let Some(&computing) = missing.first() else {
        meter.advance(sequences.len() as u64, true);
        progress(report(sequences.len(), true, meter));
        return Ok(found.into_iter().flatten().map(|x| (x, true)).collect());
    };
    let missing_views: Vec<&Encoder> = missing.iter().map(|&v| views[v]).collect();
    let mut computed: Vec<Array2<f32>> = missing_views
        .iter()
        .map(|view| Array2::<f32>::zeros((sequences.len(), view.dim())))
        .collect();
    for (i, chunk) in sequences.chunks(EMBED_CHUNK).enumerate() {
        let start = i * EMBED_CHUNK;
        let embedded = views[computing].embed_views(chunk, &missing_views).await?;
        for (out, embedded) in computed.iter_mut().zip(embedded) {
            out.slice_mut(ndarray::s![start..start + chunk.len(), ..])
                .assign(&embedded);
        }
        meter.advance(chunk.len() as u64, false);
        progress(report(start + chunk.len(), false, meter));
    }
    for (&v, embeddings) in missing.iter().zip(&computed) {
        if let (Some(store), Some(key)) = (cache.store, &keys[v]) {
            store.put(key, embeddings).await?;
        }
    }
    let mut computed = computed.into_iter();
    Ok(found
        .into_iter()
        .map(|hit| match hit {
            Some(x) => (x, true),
            None => (computed.next().unwrap_or_default(), false),
        })
        .collect())
}

fn mean_scores(scores: impl Iterator<Item = Scores>) -> Scores {
    let all: Vec<Scores> = scores.collect();
    let n = all.len().max(1) as f64;
    Scores {
        mcc: all.iter().map(|s| s.mcc).sum::<f64>() / n,
        acc: all.iter().map(|s| s.acc).sum::<f64>() / n,
        f1: all.iter().map(|s| s.f1).sum::<f64>() / n,
    }
}

/// Where a run over these tasks (in run order) differs from a GENEB leaderboard run, stated
/// in the result itself; `merge` recomputes it for the merged task list.
pub fn task_deviations(ids: &[&str]) -> Vec<String> {
    let n_tasks = ids.len();
    let own: Vec<&str> = ids
        .iter()
        .copied()
        .filter(|id| crate::task::catalogue::category_of(id).is_none())
        .collect();
    if own.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "{} of {} tasks are not GENEB tasks ({}): the protocol is GENEB's, but their scores \
         have no published counterpart",
        own.len(),
        n_tasks,
        own.join(", ")
    )]
}

/// `task_deviations` of the tasks as the result reports them (a k-fold task's folds are one).
fn own_tasks(tasks: &[crate::input::split::SplitOf]) -> Vec<String> {
    let mut ids: Vec<&str> = tasks
        .iter()
        .map(|&t| crate::input::split::reported_id(t))
        .collect();
    ids.dedup();
    task_deviations(&ids)
}

/// The keys of the protocol block that describe how this run went rather than what it
/// computed: timings and cost differ between any two runs, cache hits between a first run and
/// a rerun.
pub const RUN_CIRCUMSTANCES: [&str; 3] = ["timings_s", "embeddings_from_cache", "cost"];

fn protocol_block(
    encoder: serde_json::Value,
    regimes: &[Regime],
    deviations: Vec<String>,
    not_converged: Vec<String>,
    [embed_seconds, probe_seconds]: [f64; 2],
) -> serde_json::Value {
    let mut block = json!({
        "probe": {
            "model": "LogisticRegression (multinomial; binary: one weight vector)",
            "penalty": "l2", "C": protocol::PROBE_C, "fit_intercept": true,
            "solver": "lbfgs", "tol": protocol::PROBE_TOL, "max_iter": protocol::PROBE_MAX_ITER,
            "feature_scaling": false, "class_weight": null, "precision": "f64",
            "not_converged": not_converged,
        },
        "regimes": regimes.iter().map(|r| r.key()).collect::<Vec<_>>(),
        "fewshot": {
            "seeds": protocol::FEWSHOT_SEEDS,
            "sampler": "numpy.random.RandomState(seed).choice(class pool, min(k, n), replace=False), classes in sorted label order",
            "scored_on": "full test split",
            "aggregate": "mean over seeds; std is the population std (ddof=0)",
        },
        "aggregation": "category = mean of its tasks; macro = mean of categories; micro = mean of tasks",
        "versions": { "geneb": crate::VERSION, "burn": if cfg!(feature = "burn") { "0.22.1" } else { "not built in" } },
        "timings_s": { "embed": embed_seconds, "probe": probe_seconds },
        "deviations": deviations,
    });
    if let (Some(block), serde_json::Value::Object(encoder)) = (block.as_object_mut(), encoder) {
        block.extend(encoder);
    }
    block
}
