//! Frozen encoders: sequences in, one pooled embedding per sequence out. Every encoder, the
//! baselines now and the foundation models later, sits behind `Encoder`, made from a spec
//! string by `Encoder::from_spec` (the registry).

#[cfg(feature = "burn")]
pub mod arch;
#[cfg(feature = "burn")]
pub mod backend;
pub mod card;
pub mod family;
pub mod kmer;
pub mod known;
#[cfg(feature = "burn")]
pub mod layers;
#[cfg(feature = "burn")]
pub mod pretrained;
#[cfg(feature = "burn")]
pub mod random_cnn;
pub mod recipe;
pub mod spec;

use crate::{Error, Result};
use ndarray::Array2;
use serde::{Deserialize, Serialize};
#[cfg(feature = "burn")]
use spec::HfSpec;
use spec::{ModelKind, ModelSpec};

/// The backend kinds a user can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Cpu,
    /// wgpu natively (Vulkan, Metal, DX12) or WebGPU in a browser.
    Wgpu,
}

impl BackendKind {
    pub fn parse(s: &str) -> Result<BackendKind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cpu" => Ok(BackendKind::Cpu),
            "wgpu" | "gpu" | "webgpu" | "vulkan" => Ok(BackendKind::Wgpu),
            other => Err(Error::new(format!(
                "unknown backend '{other}': use cpu or wgpu"
            ))),
        }
    }
}

/// The floating-point type the Burn encoders compute in. f32 is the default everywhere; f16
/// is an opt-in for the native wgpu backend on an adapter with `shader-f16`, until a real GPU
/// shows it is faster (bench/README.md has its measured error against f32).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    #[default]
    F32,
    F16,
}

impl Precision {
    pub fn parse(s: &str) -> Result<Precision> {
        match s.trim().to_ascii_lowercase().as_str() {
            "f32" | "fp32" | "float32" => Ok(Precision::F32),
            "f16" | "fp16" | "float16" | "half" => Ok(Precision::F16),
            other => Err(Error::new(format!(
                "unknown precision '{other}': use f32 or f16"
            ))),
        }
    }

    fn is_f32(&self) -> bool {
        *self == Precision::F32
    }
}

/// A built-in encoder as the page and `geneb models` list it.
#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    pub spec: &'static str,
    pub name: &'static str,
    pub description: &'static str,
    /// Whether it runs on a Burn backend (so the CPU/GPU choice matters).
    #[serde(rename = "needsBackend")]
    pub needs_backend: bool,
}

pub fn builtin_models() -> Vec<ModelInfo> {
    let mut models = vec![ModelInfo {
        spec: "kmer:4",
        name: "k-mer spectrum (kmer:K, K = 1…6)",
        description: "Frequencies of the 4^K k-mers in each sequence; kmer:K:canonical merges \
                      reverse complements. The composition baseline.",
        needs_backend: false,
    }];
    if cfg!(feature = "burn") {
        models.push(ModelInfo {
            spec: "random-cnn",
            name: "random CNN (random-cnn[:SEED])",
            description: "One-hot DNA through three dilated convolutions with seeded random, \
                          untrained weights, mean-pooled to 128 dimensions. The untrained-network \
                          control.",
            needs_backend: true,
        });
    }
    models
}

/// What `geneb models` and the page's `models()` list: the built-in encoders, the
/// architectures a model folder may have, and the foundation models known by hub id, each with
/// its published GENEB profile where it has one. (The official tasks are `task::catalogue`.)
#[derive(Debug, Clone, Serialize)]
pub struct ModelList {
    pub builtin: Vec<ModelInfo>,
    #[cfg(feature = "burn")]
    pub architectures: Vec<arch::ArchInfo>,
    pub known: Vec<known::KnownWithProfile>,
    /// `known::TAB_WEIGHTS_LIMIT`, in bytes, for the page's checks.
    #[serde(rename = "tabWeightsLimit")]
    pub tab_weights_limit: u64,
    /// The files of a model folder geneb reads, for the page's picks and downloads.
    #[serde(rename = "modelFiles")]
    pub model_files: crate::checkpoint::ModelFileNames,
    /// Every model of the published leaderboard, whether geneb runs it, and why not.
    pub leaderboard: Vec<known::LeaderboardModel>,
}

pub fn model_list() -> Result<ModelList> {
    Ok(ModelList {
        builtin: builtin_models(),
        tab_weights_limit: known::TAB_WEIGHTS_LIMIT,
        model_files: crate::checkpoint::MODEL_FILE_NAMES,
        #[cfg(feature = "burn")]
        architectures: arch::list(),
        known: known::with_published_profiles()?,
        leaderboard: known::leaderboard_models()?,
    })
}

/// Where an encoder ran, for the result's `protocol.backend`.
#[derive(Debug, Clone, Serialize)]
pub struct BackendInfo {
    /// `cpu`, or `wgpu` (a native GPU API or WebGPU in a browser).
    pub kind: String,
    pub adapter: String,
    /// Only written when it is not the default f32, so f32 results read as before.
    #[serde(skip_serializing_if = "Precision::is_f32")]
    pub precision: Precision,
}

impl BackendInfo {
    /// What runs without an encoder (the probe on embeddings the user brought): the CPU.
    pub fn cpu() -> BackendInfo {
        BackendInfo {
            kind: "cpu".into(),
            adapter: String::new(),
            precision: Precision::F32,
        }
    }
}

pub enum Encoder {
    Kmer(kmer::KmerSpectrum),
    #[cfg(feature = "burn")]
    RandomCnn(random_cnn::RandomCnn),
    /// A pretrained Hugging Face model (boxed: it is large and built once per run).
    #[cfg(feature = "burn")]
    Hf(Box<pretrained::HfModel>),
}

/// How an encoder turns token states into one vector, recorded in the result's protocol block.
#[derive(Debug, Clone, Serialize)]
pub struct EncoderDescription {
    pub spec: String,
    pub dim: usize,
    pub layer: String,
    pub pooling: &'static str,
    pub truncation: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// Encoder parameters loaded from the checkpoint (heads excluded; `meta.params` counts
    /// the whole checkpoint, as GENEB does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<u64>,
    /// The model's declared maximum input, and where that came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// GENEB's extractor recipe the embeddings follow, fact by fact (`recipe.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipe: Option<&'static recipe::Recipe>,
    /// How the recipe was chosen: named by `?recipe=`, the known model's, or what the model's
    /// files tell, with how to pick another where they cannot tell.
    #[serde(rename = "recipeSource", skip_serializing_if = "Option::is_none")]
    pub recipe_source: Option<String>,
    /// What loading the model noted (a tensor the reference tolerates missing, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What the weights are held in, where it is not f32 (`pretrained::HeldWeights`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weights: Option<String>,
    /// The hidden state pooled and the last one's index (states 0..=last_layer), for `hf:`
    /// models: what the profile places a layer's result by, without reading `layer`'s words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer_index: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_layer: Option<usize>,
}

impl Encoder {
    /// The encoder a spec names. `backend` applies to the encoders that run on Burn.
    pub async fn from_spec(spec: &ModelSpec, backend: BackendKind) -> Result<Encoder> {
        match &spec.kind {
            &ModelKind::Kmer { k, canonical } => {
                Ok(Encoder::Kmer(kmer::KmerSpectrum::new(k, canonical)?))
            }
            #[cfg(feature = "burn")]
            &ModelKind::RandomCnn { seed } => Ok(Encoder::RandomCnn(random_cnn::RandomCnn::new(
                seed,
                compute(backend).await?,
            ))),
            #[cfg(feature = "burn")]
            ModelKind::Hf(hf) => Encoder::from_model_files(hf, hf_files(hf)?, backend).await,
            #[cfg(not(feature = "burn"))]
            ModelKind::RandomCnn { .. } | ModelKind::Hf(_) => {
                let _ = backend;
                Err(Error::new(format!(
                    "model '{spec}' needs the Burn encoders, which this build leaves out"
                )))
            }
        }
    }

    /// A Hugging Face model from its files (a folder read natively, or files dropped on the
    /// page), on the requested backend.
    #[cfg(feature = "burn")]
    pub async fn from_model_files(
        spec: &HfSpec,
        files: crate::checkpoint::ModelFiles,
        backend: BackendKind,
    ) -> Result<Encoder> {
        let model = pretrained::HfModel::from_files(spec, files, compute(backend).await?)?;
        Ok(Encoder::Hf(Box::new(model)))
    }

    pub fn spec(&self) -> String {
        match self {
            Encoder::Kmer(e) => e.spec(),
            #[cfg(feature = "burn")]
            Encoder::RandomCnn(e) => e.spec(),
            #[cfg(feature = "burn")]
            Encoder::Hf(e) => e.spec().to_string(),
        }
    }

    pub fn dim(&self) -> usize {
        match self {
            Encoder::Kmer(e) => e.dim(),
            #[cfg(feature = "burn")]
            Encoder::RandomCnn(e) => e.dim(),
            #[cfg(feature = "burn")]
            Encoder::Hf(e) => e.dim(),
        }
    }

    /// The Burn device an encoder runs on; None for the plain-Rust baselines.
    #[cfg(feature = "burn")]
    fn compute(&self) -> Option<&backend::Compute> {
        match self {
            Encoder::Kmer(_) => None,
            Encoder::RandomCnn(e) => Some(e.compute()),
            Encoder::Hf(e) => Some(e.compute()),
        }
    }

    #[cfg(not(feature = "burn"))]
    fn compute(&self) -> Option<&std::convert::Infallible> {
        None
    }

    pub fn backend_info(&self) -> BackendInfo {
        match self.compute() {
            None => BackendInfo {
                kind: "cpu".into(),
                adapter: "plain Rust (no tensor backend)".into(),
                precision: Precision::F32,
            },
            #[cfg(feature = "burn")]
            Some(compute) => BackendInfo {
                kind: match compute.kind {
                    BackendKind::Cpu => "cpu",
                    BackendKind::Wgpu => "wgpu",
                }
                .into(),
                adapter: compute.adapter.clone(),
                precision: compute.precision,
            },
            #[cfg(not(feature = "burn"))]
            Some(never) => match *never {},
        }
    }

    /// The bytes the encoder's GPU device holds now (the result's `peak_gpu_memory_bytes`);
    /// None on the CPU.
    pub fn gpu_memory_bytes(&self) -> Option<u64> {
        #[cfg(feature = "burn")]
        return self.compute().and_then(backend::Compute::gpu_memory_bytes);
        #[cfg(not(feature = "burn"))]
        None
    }

    /// What identifies this encoder's embeddings for the cache: the model files' hash, the
    /// windows, the backend and geneb's version (a fixed encoder gives other numbers). None for
    /// the baselines, which are cheaper to recompute than to store.
    pub fn cache_identity(&self) -> Option<String> {
        #[cfg(feature = "burn")]
        if let Encoder::Hf(e) = self {
            let window = e
                .window()
                .map_or(String::new(), |w| format!("-w{}-{}", w.size, w.stride));
            let info = self.backend_info();
            // f16 embeddings differ from f32 ones: they must never be served for each other.
            let backend = match info.precision {
                Precision::F32 => info.kind,
                Precision::F16 => format!("{}-f16", info.kind),
            };
            // Another recipe or layer gives other numbers from the same files (the last layer
            // keeps the identity it had before layers could be chosen).
            let layer = if e.layer() == e.last_layer() {
                String::new()
            } else {
                format!("-layer{}", e.layer())
            };
            // Weights narrowed from the file give other numbers too; held as stored, the same.
            let weights = match e.weights() {
                w if w.narrowed() => format!("-{}", w.held.name()),
                _ => String::new(),
            };
            return Some(format!(
                "{}{window}{layer}-{}-{backend}{weights}-geneb{}",
                e.fingerprint(),
                e.recipe().name,
                crate::VERSION
            ));
        }
        None
    }

    /// What fixes this encoder's embeddings on any backend: the model files' SHA-256 and the
    /// windows for `hf:` models, the spec for the built-in encoders (their spec fixes their
    /// weights). A saved probe (`crate::predict`) applies only to the same identity.
    pub fn weights_identity(&self) -> String {
        #[cfg(feature = "burn")]
        if let Encoder::Hf(e) = self {
            let window = e.window().map_or(String::new(), |w| {
                format!("?window={},{}", w.size, w.stride)
            });
            let layer = if e.layer() == e.last_layer() {
                String::new()
            } else {
                format!(" layer {}", e.layer())
            };
            return format!("model files {}{window}{layer}", e.fingerprint());
        }
        self.spec()
    }

    /// How this encoder departs from GENEB's protocol, for the result's deviations.
    pub fn deviations(&self) -> Vec<String> {
        let mut deviations = Vec::new();
        #[cfg(feature = "burn")]
        if let Encoder::Hf(e) = self {
            if let Some(w) = e.window() {
                deviations.push(format!(
                    "sequences are embedded in sliding windows ({} nt, stride {}) and averaged, \
                     where GENEB's baselines truncate to the model's maximum length",
                    w.size, w.stride
                ));
            }
            if e.layer() != e.last_layer() {
                deviations.push(format!(
                    "hidden state {} of {} is pooled (?layer=), where GENEB probes the last layer",
                    e.layer(),
                    e.last_layer()
                ));
            }
            if e.weights().narrowed() {
                deviations.extend(e.weights().describe().map(|held| format!("weights {held}")));
            }
        }
        deviations
    }

    pub fn describe(&self) -> EncoderDescription {
        let (layer, pooling, truncation) = match self {
            Encoder::Kmer(_) => (
                "none (composition features)".to_string(),
                "k-mer frequencies over N-free windows",
                "none (whole sequence)".to_string(),
            ),
            #[cfg(feature = "burn")]
            Encoder::RandomCnn(_) => (
                "final convolution (ReLU)".to_string(),
                "masked mean over sequence positions",
                format!("first {} nt", random_cnn::MAX_LENGTH),
            ),
            #[cfg(feature = "burn")]
            Encoder::Hf(e) => (
                if e.layer() == e.last_layer() {
                    "final hidden layer (last_hidden_state)".to_string()
                } else {
                    format!(
                        "hidden state {} of 0…{} (hidden_states[{}], 0 the embeddings' output)",
                        e.layer(),
                        e.last_layer(),
                        e.layer()
                    )
                },
                e.pooling().describe(),
                match (e.window(), e.recipe().windows()) {
                    (None, Some((size, stride))) => format!(
                        "windows of {size} nt every {stride} plus one ending at the sequence's \
                         end (each at most {} tokens), mean of the windows' embeddings, as \
                         GENEB's extractor",
                        e.max_length()
                    ),
                    (None, None) => {
                        format!("first {} tokens, special tokens included", e.max_length())
                    }
                    (Some(w), _) => format!(
                        "NON-STANDARD: windows of {} nt every {} nt (each truncated to {} tokens), \
                         mean of the windows' embeddings; GENEB's baselines truncate",
                        w.size,
                        w.stride,
                        e.max_length()
                    ),
                },
            ),
        };
        #[cfg(feature = "burn")]
        let (architecture, parameters, context, recipe, notes, weights, recipe_source) = match self
        {
            Encoder::Hf(e) => (
                Some(e.describe_architecture()),
                Some(e.parameters()),
                Some(e.card().context.clone()),
                Some(e.recipe()),
                e.notes().to_vec(),
                e.weights().describe(),
                Some(e.recipe_source().to_string()),
            ),
            _ => (None, None, None, None, Vec::new(), None, None),
        };
        #[cfg(not(feature = "burn"))]
        let (architecture, parameters, context, recipe, notes, weights, recipe_source) =
            (None, None, None, None, Vec::new(), None, None);
        EncoderDescription {
            spec: self.spec(),
            dim: self.dim(),
            layer,
            pooling,
            truncation,
            architecture,
            parameters,
            context,
            recipe,
            recipe_source,
            notes,
            weights,
            layer_index: self.layer().map(|(index, _)| index),
            last_layer: self.layer().map(|(_, last)| last),
        }
    }

    /// The hidden state this encoder pools and the last one's index (states 0..=last), for the
    /// encoders with layers (`hf:`); None for the baselines.
    pub fn layer(&self) -> Option<(usize, usize)> {
        match self {
            #[cfg(feature = "burn")]
            Encoder::Hf(e) => Some((e.layer(), e.last_layer())),
            _ => None,
        }
    }

    /// The submission's `meta` before the user's overrides: for a Hugging Face model its
    /// card (`card.rs`) and the checkpoint's parameter count; the baselines train nothing.
    pub fn meta(&self) -> crate::submission::Meta {
        let baseline = crate::submission::Meta {
            display: self.spec(),
            params: 0,
            url: String::new(),
            zero_shot: false,
            training_data: "none (baseline encoder)".to_string(),
            provenance: "self-reported".to_string(),
            submitted_by: String::new(),
        };
        match self {
            #[cfg(feature = "burn")]
            Encoder::Hf(e) => crate::submission::Meta {
                // A windowed run or another layer than the last is another encoder (a
                // deviation): its name says so, so a profile of both is not two rows of one name.
                display: {
                    let mut display = match e.window() {
                        Some(w) => format!(
                            "{} (windows of {} nt every {})",
                            e.card().display,
                            w.size,
                            w.stride
                        ),
                        None => e.card().display.clone(),
                    };
                    if e.layer() != e.last_layer() {
                        display.push_str(&format!(" (layer {})", e.layer()));
                    }
                    display
                },
                params: e.model_parameters(),
                url: e.card().url.clone(),
                training_data: e.card().training_data.clone(),
                ..baseline
            },
            _ => baseline,
        }
    }

    /// How many of `sequences` the encoder cuts at its maximum length (k-mer counts read all).
    pub fn truncated(&self, sequences: &[String]) -> usize {
        #[cfg(not(feature = "burn"))]
        let _ = sequences;
        match self {
            Encoder::Kmer(_) => 0,
            #[cfg(feature = "burn")]
            Encoder::RandomCnn(e) => e.truncated(sequences),
            #[cfg(feature = "burn")]
            Encoder::Hf(e) => e.truncated(sequences),
        }
    }

    /// This encoder at each `?layer=K` of `ks` (None: every layer, 0 to the last), sharing
    /// its weights (`geneb eval --layers`): each view names its layer in its spec and is
    /// evaluated as a model of its own. None for the encoders without layers (the baselines),
    /// which run as they are.
    pub fn at_layers(&self, ks: Option<&[i64]>) -> Option<Result<Vec<Encoder>>> {
        #[cfg(feature = "burn")]
        if let Encoder::Hf(e) = self {
            let every: Vec<i64> = (0..=e.last_layer() as i64).collect();
            let views = ks
                .unwrap_or(&every)
                .iter()
                .map(|&k| Ok(Encoder::Hf(Box::new(e.at_layer(k)?))))
                .collect();
            return Some(views);
        }
        let _ = ks;
        None
    }

    /// The embeddings of each of `views` (this encoder's `at_layers`) from one forward pass
    /// per batch, in order; an encoder without layers gives its one embedding to each.
    pub async fn embed_views(
        &self,
        sequences: &[String],
        views: &[&Encoder],
    ) -> Result<Vec<Array2<f32>>> {
        #[cfg(feature = "burn")]
        if let Encoder::Hf(e) = self {
            let layers = views
                .iter()
                .map(|view| match view {
                    Encoder::Hf(view) => Ok(view.layer()),
                    _ => Err(Error::new("internal error: a view of another encoder")),
                })
                .collect::<Result<Vec<usize>>>()?;
            return e.embed_layers(sequences, &layers).await;
        }
        let embedded = self.embed(sequences).await?;
        Ok(vec![embedded; views.len()])
    }

    pub async fn embed(&self, sequences: &[String]) -> Result<Array2<f32>> {
        match self {
            Encoder::Kmer(e) => Ok(e.embed(sequences)),
            #[cfg(feature = "burn")]
            Encoder::RandomCnn(e) => e.embed(sequences).await,
            #[cfg(feature = "burn")]
            Encoder::Hf(e) => e.embed(sequences).await,
        }
    }
}

#[cfg(feature = "burn")]
async fn compute(backend: BackendKind) -> Result<backend::Compute> {
    match backend {
        BackendKind::Cpu => Ok(backend::cpu()),
        BackendKind::Wgpu => backend::wgpu().await,
    }
}

/// `hf:FOLDER`: the files of a local model folder. (In the page, files arrive by drag and drop.)
#[cfg(all(feature = "burn", not(target_arch = "wasm32")))]
fn hf_files(hf: &HfSpec) -> Result<crate::checkpoint::ModelFiles> {
    pretrained::read_folder(std::path::Path::new(&hf.source))
}

#[cfg(all(feature = "burn", target_arch = "wasm32"))]
fn hf_files(hf: &HfSpec) -> Result<crate::checkpoint::ModelFiles> {
    Err(Error::new(format!(
        "model 'hf:{}': in the page, give the model's files (drop the folder) instead",
        hf.source
    )))
}
