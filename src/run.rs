//! One run of the protocol, whoever asks for it. `geneb eval` (whole, or as one shard of many)
//! and the page's Run button describe what the user wants as a [`Run`], call [`Run::execute`]
//! (or [`Run::execute_shard`]) and only convert: arguments or dropped files into the `Run`, its
//! [`Outcome`] into files or views.

use crate::encoder::card::MetaOverrides;
use crate::encoder::spec::{LayerSweep, ModelSpec};
use crate::encoder::{BackendInfo, Encoder};
use crate::eval::{self, EmbeddingStore, Progress};
use crate::input::audit;
use crate::input::embeddings::EmbeddingsTask;
use crate::predict::SavedProbe;
use crate::protocol::Regime;
use crate::submission::Submission;
use crate::task::TaskData;
use crate::{Error, Result};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

/// What the user asked for.
pub struct Run {
    /// The encoders, parsed where the user named them. They run on `tasks`; a run without
    /// tasks probes only `own`.
    pub models: Vec<ModelSpec>,
    pub tasks: Vec<TaskData>,
    /// Embeddings the user brought, probed as they are.
    pub own: Option<OwnEmbeddings>,
    pub regimes: Vec<Regime>,
    /// The user's corrections to each submission's `meta`.
    pub meta: MetaOverrides,
    /// Keep the full-data probe of the one model on the one task (`crate::predict`).
    pub save_probe: bool,
    /// `--layers`: each `hf:` model's layers, each its own submission from one pass (None:
    /// the model's spec alone, its `?layer=` or the last).
    pub layers: Option<LayerSweep>,
    /// A sweep of its own for some models (the page's choice per model), by spec as written;
    /// it takes the place of `layers` for that model.
    pub model_layers: std::collections::BTreeMap<String, LayerSweep>,
}

/// Embeddings the user brought, and the model id their submission goes under
/// (`embeddings:NAME`).
pub struct OwnEmbeddings {
    pub id: String,
    pub tasks: Vec<EmbeddingsTask>,
}

/// What a run made.
pub struct Outcome {
    /// One per model, in the order asked, then the own embeddings' one.
    pub submissions: Vec<Submission>,
    /// The saved probe, when the run asked for it: the full-data fit scored in the submission.
    pub probe: Option<SavedProbe>,
    /// The backend each submission's encoder ran on, in the same order (own embeddings: CPU).
    pub backends: Vec<BackendInfo>,
}

/// A built encoder, or the future of one (building reads the weights: the page's are Blobs).
pub type EncoderFuture<'a> = Pin<Box<dyn Future<Output = Result<Rc<Encoder>>> + 'a>>;

/// Where a run's encoders come from: the CLI reads folders and fetches from the hub, the page
/// builds them from the files it sent and keeps the last one built.
pub trait Encoders {
    /// Whether the encoder of `model` is built already. Those run first: building another
    /// may drop it (the page holds one model at a time).
    fn holds(&self, _model: &ModelSpec) -> bool {
        false
    }
    fn load<'a>(&'a mut self, model: &'a ModelSpec) -> EncoderFuture<'a>;
}

impl Run {
    /// The models that run: none when there are no tasks to run them on.
    fn running_models(&self) -> &[ModelSpec] {
        if self.tasks.is_empty() {
            &[]
        } else {
            &self.models
        }
    }

    /// What a run must satisfy before anything is embedded, so a mistake costs no time.
    pub fn check(&self) -> Result<()> {
        if self.models.is_empty() && self.own.is_none() {
            return Err(Error::new("choose at least one model"));
        }
        if self.tasks.is_empty() && self.own.is_none() {
            return Err(Error::new("add at least one task"));
        }
        let models = self.running_models().len();
        self.meta
            .check_models(models + usize::from(self.own.is_some()))?;
        if self.save_probe && (self.layers.is_some() || !self.model_layers.is_empty()) {
            return Err(Error::new(
                "saving the probe takes one model at one layer: leave out --layers",
            ));
        }
        if self.save_probe {
            if models != 1 || self.tasks.len() != 1 || self.own.is_some() {
                return Err(Error::new(format!(
                    "saving the probe takes one model and one task; this run has {models} \
                     model(s) and {} task(s){} (k-fold makes one task per fold)",
                    self.tasks.len(),
                    if self.own.is_some() {
                        " and embeddings of your own"
                    } else {
                        ""
                    }
                )));
            }
            if !self.regimes.contains(&Regime::Full) {
                return Err(Error::new(
                    "the saved probe is the full-data one: add the full regime to the run",
                ));
            }
        }
        Ok(())
    }

    /// Every model on every task, then the user's own embeddings; `store` keeps embeddings
    /// between runs.
    pub async fn execute(
        self,
        encoders: &mut dyn Encoders,
        store: Option<&dyn EmbeddingStore>,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Outcome> {
        self.check()?;
        let models = self.running_models();
        let mut order: Vec<usize> = (0..models.len()).collect();
        order.sort_by_key(|&i| !encoders.holds(&models[i]));
        let mut done: Vec<Vec<(Submission, BackendInfo)>> = vec![Vec::new(); models.len()];
        let mut probe = None;
        // One audit per task, however many models run on it.
        let audits = match models.is_empty() {
            true => Vec::new(),
            false => audit::audit_tasks(&self.tasks)?,
        };
        for i in order {
            let started = web_time::Instant::now();
            let encoder = encoders.load(&models[i]).await?;
            let load_seconds = started.elapsed().as_secs_f64();
            let sweep = self
                .model_layers
                .get(&models[i].to_string())
                .or(self.layers.as_ref())
                .and_then(|l| encoder.at_layers(l.ks()));
            let views = sweep.transpose()?;
            let views: Vec<&Encoder> = match &views {
                Some(views) => views.iter().collect(),
                None => vec![&*encoder],
            };
            let evaluated = eval::evaluate_views(
                &views,
                &self.tasks,
                &audits,
                &self.regimes,
                store,
                self.save_probe,
                progress,
            )
            .await?;
            for (view, mut evaluated) in views.iter().zip(evaluated) {
                if self.save_probe {
                    probe = Some(self.saved_probe(view, &mut evaluated)?);
                }
                let mut submission = evaluated.submission;
                record_load(&mut submission, load_seconds);
                done[i].push((submission, view.backend_info()));
            }
        }
        let (mut submissions, mut backends): (Vec<_>, Vec<_>) = done.into_iter().flatten().unzip();
        if let Some(own) = self.own {
            submissions.push(eval::probe_embeddings(
                &own.id,
                own.tasks,
                &self.regimes,
                progress,
            )?);
            backends.push(BackendInfo::cpu());
        }
        self.meta.apply_all(&mut submissions)?;
        Ok(Outcome {
            submissions,
            probe,
            backends,
        })
    }

    /// The one task's full-data fit that `evaluate` scored, with the encoder's identity.
    fn saved_probe(
        &self,
        encoder: &Encoder,
        evaluated: &mut eval::Evaluated,
    ) -> Result<SavedProbe> {
        let task = &self.tasks[0];
        let fit = evaluated
            .full_probes
            .remove(&task.task.id)
            .ok_or_else(|| Error::new("internal error: the full-data probe was not kept"))?;
        Ok(SavedProbe::new(
            &task.task.id,
            encoder,
            &task.data.labels,
            &fit,
            task.data.train.len(),
        ))
    }
}

/// The model's load time in the result's `protocol.cost` (0 where the page held it already).
fn record_load(submission: &mut Submission, seconds: f64) {
    if let Some(cost) = submission
        .protocol
        .as_mut()
        .and_then(|p| p.get_mut("cost"))
        .and_then(|c| c.as_object_mut())
    {
        cost.insert("load_s".into(), serde_json::json!(seconds));
    }
}

/// What one shard of a run did.
#[cfg(feature = "cli")]
pub struct ShardDone {
    /// (model, task) results this call wrote.
    pub written: usize,
    /// This shard's results an earlier call had written already.
    pub kept: usize,
    /// What the written results say of sequences cut at a model's maximum length.
    pub notes: Vec<String>,
}

#[cfg(feature = "cli")]
impl Run {
    /// Shard `shard` of the run into `dir`: the run's (model, task) pairs are dealt over the
    /// shards (`crate::shard::Plan`, recorded in `dir` so every shard agrees on it), and each
    /// of this shard's pairs is evaluated alone and written as soon as it is done, so a
    /// stopped shard loses at most one pair and a rerun skips what is written.
    pub async fn execute_shard(
        &self,
        dir: &std::path::Path,
        shard: crate::shard::Shard,
        encoders: &mut dyn Encoders,
        store: Option<&dyn EmbeddingStore>,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<ShardDone> {
        use crate::shard::Plan;
        self.check()?;
        if self.own.is_some() || self.save_probe {
            return Err(Error::new(
                "a sharded run evaluates encoders on tasks; embeddings of your own and the \
                 saved probe take one run",
            ));
        }
        let names: Vec<String> = self.models.iter().map(ToString::to_string).collect();
        let plan = Plan::new(&names, &self.tasks, &self.regimes, shard.count);
        plan.record(dir)?;
        let pending = plan.pending(dir, shard, &self.tasks);
        let written: usize = pending.iter().map(|(_, tasks)| tasks.len()).sum();
        // One audit per pending task, however many of this shard's models run on it.
        let mut audits = std::collections::BTreeMap::new();
        for task in pending.iter().flat_map(|(_, tasks)| tasks) {
            if !audits.contains_key(task.task.id.as_str()) {
                audits.insert(task.task.id.as_str(), audit::audit_task(task)?);
            }
        }
        let mut notes = Vec::new();
        for (name, tasks) in pending.iter().filter(|(_, tasks)| !tasks.is_empty()) {
            let model = self
                .models
                .iter()
                .find(|m| m.to_string() == *name)
                .ok_or_else(|| Error::new(format!("internal error: {name} is not in the run")))?;
            let started = web_time::Instant::now();
            let encoder = encoders.load(model).await?;
            let load_seconds = started.elapsed().as_secs_f64();
            for task in tasks {
                let audit = audits.get(task.task.id.as_str()).ok_or_else(|| {
                    Error::new(format!("internal error: {} was not audited", task.task.id))
                })?;
                let evaluated = eval::evaluate(
                    &encoder,
                    std::slice::from_ref(*task),
                    std::slice::from_ref(audit),
                    &self.regimes,
                    store,
                    false,
                    progress,
                )
                .await?;
                let mut result = evaluated.submission;
                // Each of the model's pairs in this shard says what loading it took once;
                // `geneb merge` keeps the longest.
                record_load(&mut result, load_seconds);
                self.meta.apply(&mut result.meta);
                Plan::write_pair(dir, name, &task.task.id, &result)?;
                notes.extend(eval::truncation_notes(&result));
            }
        }
        Ok(ShardDone {
            written,
            kept: plan.pairs_in(shard.index) - written,
            notes,
        })
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::encoder::BackendKind;

    /// Built-in encoders, recording the order they were built in; `held` is reported as built.
    struct Recorded {
        held: Option<ModelSpec>,
        built: Vec<String>,
    }

    impl Encoders for Recorded {
        fn holds(&self, model: &ModelSpec) -> bool {
            self.held.as_ref() == Some(model)
        }
        fn load<'a>(&'a mut self, model: &'a ModelSpec) -> EncoderFuture<'a> {
            self.built.push(model.to_string());
            Box::pin(async move { Ok(Rc::new(Encoder::from_spec(model, BackendKind::Cpu).await?)) })
        }
    }

    fn recorded(held: Option<&str>) -> Recorded {
        Recorded {
            held: held.map(|m| m.parse().unwrap()),
            built: Vec::new(),
        }
    }

    fn smoke_run(models: &[&str]) -> Run {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tasks/smoke/smoke_lambda_phage_vs_ecoli.csv");
        Run {
            models: models.iter().map(|m| m.parse().unwrap()).collect(),
            tasks: crate::input::tasks_from_path(&path, None).unwrap(),
            own: None,
            regimes: vec![Regime::Full],
            meta: MetaOverrides::default(),
            save_probe: false,
            layers: None,
            model_layers: Default::default(),
        }
    }

    fn execute(run: Run, encoders: &mut Recorded) -> Result<Outcome> {
        pollster::block_on(run.execute(encoders, None, &mut |_| {}))
    }

    #[test]
    fn a_held_model_runs_first_and_results_keep_the_order_asked() {
        let mut encoders = recorded(Some("kmer:3"));
        let outcome = execute(smoke_run(&["kmer:2", "kmer:3"]), &mut encoders).unwrap();
        assert_eq!(encoders.built, ["kmer:3", "kmer:2"]);
        let ids: Vec<&str> = outcome
            .submissions
            .iter()
            .map(|s| s.model_id.as_str())
            .collect();
        assert_eq!(ids, ["kmer:2", "kmer:3"]);
        assert_eq!(outcome.backends.len(), 2);
        assert!(outcome.probe.is_none());
    }

    #[test]
    fn the_saved_probe_is_the_fit_the_submission_scored() {
        let mut run = smoke_run(&["kmer:3"]);
        run.save_probe = true;
        let test = run.tasks[0].data.test.sequences.clone();
        let mut encoders = recorded(None);
        let outcome = execute(run, &mut encoders).unwrap();
        assert_eq!(encoders.built, ["kmer:3"], "one encoder, built once");
        let probe = outcome.probe.unwrap();
        let kmer3 = "kmer:3".parse().unwrap();
        let encoder = pollster::block_on(Encoder::from_spec(&kmer3, BackendKind::Cpu)).unwrap();
        let x = pollster::block_on(eval::embed_sequences(&encoder, &test)).unwrap();
        let (predicted, _) = probe.predict(x.view()).unwrap();
        let scored = outcome.submissions[0].predictions[&probe.task].regimes["full"][0]
            .decode("full")
            .unwrap();
        assert_eq!(predicted, scored);
    }

    #[test]
    fn a_run_that_cannot_do_what_it_asks_is_refused_before_it_embeds() {
        type Change = fn(&mut Run);
        let cases: [(Change, &str); 5] = [
            (|r| r.models.clear(), "choose at least one model"),
            (|r| r.tasks.clear(), "add at least one task"),
            (
                |r| r.save_probe = true,
                "saving the probe takes one model and one task; this run has 2 model(s)",
            ),
            (
                |r| {
                    r.models.truncate(1);
                    r.save_probe = true;
                    r.regimes = vec![Regime::TenShot];
                },
                "the saved probe is the full-data one",
            ),
            (
                |r| r.meta.display = Some("Mine".into()),
                "describe one model, and this run has 2",
            ),
        ];
        for (change, expected) in cases {
            let mut run = smoke_run(&["kmer:2", "kmer:3"]);
            change(&mut run);
            let mut encoders = recorded(None);
            let err = execute(run, &mut encoders).err().unwrap().to_string();
            assert!(err.contains(expected), "{expected:?} in {err}");
            assert!(encoders.built.is_empty(), "{expected}: nothing built");
        }
    }
}
