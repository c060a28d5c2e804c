//! Frozen encoders: sequences in, one pooled embedding per sequence out. Every encoder, the
//! baselines now and the foundation models later, sits behind `Encoder`, made from a spec
//! string by `Encoder::from_spec` (the registry).

#[cfg(feature = "burn")]
pub mod backend;
#[cfg(feature = "burn")]
pub mod caduceus;
#[cfg(feature = "burn")]
pub mod hyena;
pub mod kmer;
#[cfg(feature = "burn")]
pub mod random_cnn;

use crate::{Error, Result};
use ndarray::Array2;
use serde::{Deserialize, Serialize};

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

/// Where an encoder ran, for the result's `protocol.backend`.
#[derive(Debug, Clone, Serialize)]
pub struct BackendInfo {
    /// `cpu`, or `wgpu` (a native GPU API or WebGPU in a browser).
    pub kind: String,
    pub adapter: String,
}

pub enum Encoder {
    Kmer(kmer::KmerSpectrum),
    #[cfg(feature = "burn")]
    RandomCnn(random_cnn::RandomCnn),
}

/// How an encoder turns token states into one vector, recorded in the result's protocol block.
#[derive(Debug, Clone, Serialize)]
pub struct EncoderDescription {
    pub spec: String,
    pub dim: usize,
    pub layer: &'static str,
    pub pooling: &'static str,
    pub truncation: String,
}

impl Encoder {
    /// The registry: `kmer:K[:canonical]`, `random-cnn[:SEED]`. `backend` applies to the
    /// encoders that run on Burn.
    #[cfg(feature = "burn")]
    pub async fn from_spec(spec: &str, backend: BackendKind) -> Result<Encoder> {
        let (name, args) = split_spec(spec);
        match name {
            "kmer" => Ok(Encoder::Kmer(parse_kmer(spec, args)?)),
            "random-cnn" => {
                let seed = match args.as_slice() {
                    [] => random_cnn::DEFAULT_SEED,
                    [seed] => seed
                        .parse()
                        .map_err(|_| bad_spec(spec, "the seed must be a non-negative integer"))?,
                    _ => return Err(bad_spec(spec, "expected random-cnn or random-cnn:SEED")),
                };
                let compute = match backend {
                    BackendKind::Cpu => backend::cpu(),
                    BackendKind::Wgpu => backend::wgpu().await?,
                };
                Ok(Encoder::RandomCnn(random_cnn::RandomCnn::new(
                    seed, compute,
                )))
            }
            _ => Err(unknown_model(spec)),
        }
    }

    #[cfg(not(feature = "burn"))]
    pub async fn from_spec(spec: &str, _backend: BackendKind) -> Result<Encoder> {
        let (name, args) = split_spec(spec);
        match name {
            "kmer" => Ok(Encoder::Kmer(parse_kmer(spec, args)?)),
            _ => Err(unknown_model(spec)),
        }
    }

    pub fn spec(&self) -> String {
        match self {
            Encoder::Kmer(e) => e.spec(),
            #[cfg(feature = "burn")]
            Encoder::RandomCnn(e) => e.spec(),
        }
    }

    pub fn dim(&self) -> usize {
        match self {
            Encoder::Kmer(e) => e.dim(),
            #[cfg(feature = "burn")]
            Encoder::RandomCnn(e) => e.dim(),
        }
    }

    pub fn backend_info(&self) -> BackendInfo {
        match self {
            Encoder::Kmer(_) => BackendInfo {
                kind: "cpu".into(),
                adapter: "plain Rust (no tensor backend)".into(),
            },
            #[cfg(feature = "burn")]
            Encoder::RandomCnn(e) => {
                let compute = e.compute();
                let kind = match compute.kind {
                    BackendKind::Cpu => "cpu",
                    BackendKind::Wgpu => "wgpu",
                };
                BackendInfo {
                    kind: kind.into(),
                    adapter: compute.adapter.clone(),
                }
            }
        }
    }

    pub fn describe(&self) -> EncoderDescription {
        let (layer, pooling, truncation) = match self {
            Encoder::Kmer(_) => (
                "none (composition features)",
                "k-mer frequencies over N-free windows",
                "none (whole sequence)".to_string(),
            ),
            #[cfg(feature = "burn")]
            Encoder::RandomCnn(_) => (
                "final convolution (ReLU)",
                "masked mean over sequence positions",
                format!("first {} nt", random_cnn::MAX_LENGTH),
            ),
        };
        EncoderDescription {
            spec: self.spec(),
            dim: self.dim(),
            layer,
            pooling,
            truncation,
        }
    }

    pub async fn embed(&self, sequences: &[String]) -> Result<Array2<f32>> {
        match self {
            Encoder::Kmer(e) => Ok(e.embed(sequences)),
            #[cfg(feature = "burn")]
            Encoder::RandomCnn(e) => e.embed(sequences).await,
        }
    }
}

fn split_spec(spec: &str) -> (&str, Vec<&str>) {
    let mut parts = spec.trim().split(':');
    let name = parts.next().unwrap_or_default();
    (name, parts.collect())
}

fn parse_kmer(spec: &str, args: Vec<&str>) -> Result<kmer::KmerSpectrum> {
    let (k, canonical) = match args.as_slice() {
        [k] => (k, false),
        [k, "canonical"] => (k, true),
        _ => {
            return Err(bad_spec(
                spec,
                "expected kmer:K or kmer:K:canonical, K from 1 to 6",
            ));
        }
    };
    let k = k
        .parse()
        .map_err(|_| bad_spec(spec, "K must be a whole number from 1 to 6"))?;
    kmer::KmerSpectrum::new(k, canonical).map_err(|e| bad_spec(spec, &e.message))
}

fn bad_spec(spec: &str, why: &str) -> Error {
    Error::new(format!("model '{spec}': {why}"))
}

fn unknown_model(spec: &str) -> Error {
    let known: Vec<&str> = builtin_models().iter().map(|m| m.spec).collect();
    Error::new(format!(
        "unknown model '{spec}'; built-in models: {}",
        known.join(", ")
    ))
}
