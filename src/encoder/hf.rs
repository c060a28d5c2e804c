//! `hf:` models: a Hugging Face model (config.json, weights, tokenizer files) → tokenizer +
//! architecture → one pooled embedding per sequence, as GENEB's reference extractors compute
//! it: the final hidden layer, a mean over the attention mask (special tokens included), inputs
//! truncated to the model's maximum length.
//!
//! HyenaDNA's extractor takes a plain mean over a left-padded batch, which mixes padding into
//! every sequence shorter than its batch-mates; geneb computes what that extractor gives at batch
//! size 1 (the mean over the sequence's own tokens), which no batch composition changes, and
//! records it in the protocol block.

use super::BackendKind;
use super::arch::{self, Arch, Pooling};
use super::backend::Compute;
use super::card::ModelCard;
use super::spec::{ModelSpec, Window};
use crate::hf::{Checkpoint, ModelFiles, pytorch, safetensors};
use crate::tokenize::Tokenizer;
use crate::{Error, Result};
use burn::tensor::{DType, FloatDType, Int, Tensor, TensorData};
use ndarray::Array2;

/// Token positions per forward pass (batch × padded length). The CPU backend is faster with
/// activations that stay in cache (HyenaDNA-tiny at 200 nt: 12 % faster at 2,048 than at 8,192,
/// the transformers no slower). A GPU wants many at once, each pass paying its kernel launches
/// once: as many as one buffer of the widest activation holds, from 8,192 (what WebGPU's default
/// binding limit allows the transformers) up to 32,768 (a few GiB of activations in all, which a
/// laptop GPU still has).
fn batch_tokens(kind: BackendKind, max_buffer_floats: usize, widest: usize) -> usize {
    match kind {
        BackendKind::Cpu => 2048,
        BackendKind::Wgpu => (max_buffer_floats / widest.max(1)).clamp(8192, 32768),
    }
}

/// What the CPU batches in flight at once may hold in activations: a tab has 4 GiB in all.
#[cfg(target_arch = "wasm32")]
const CONCURRENT_BATCHES_BYTES: usize = 512 << 20;
#[cfg(not(target_arch = "wasm32"))]
const CONCURRENT_BATCHES_BYTES: usize = 4 << 30;
/// Widest activations alive at once in one forward pass (an upper bound: input, output and the
/// gated halves of a feed-forward block).
const LIVE_ACTIVATIONS: usize = 4;

/// The weights of a model folder: safetensors preferred, as transformers prefers them.
pub fn read_weights(files: &mut ModelFiles) -> Result<Checkpoint> {
    let name = files.name.clone();
    let source = |f: &str| format!("{name}/{f}");
    let [safetensors_file, pytorch_file] = crate::hf::MODEL_FILE_NAMES.weights;
    if let Some(bytes) = files.take(safetensors_file) {
        return safetensors::read(&source(safetensors_file), bytes);
    }
    if let Some(bytes) = files.take(pytorch_file) {
        return pytorch::read(&source(pytorch_file), bytes);
    }
    // Weights published under a name of their own (DNAGPT's `dna_gpt0.1b_h.pth`, JanusDNA's
    // Lightning `last.ckpt`).
    let pth = files
        .file_names()
        .find(|f| crate::hf::MODEL_FILE_NAMES.is_published_weights(f))
        .map(String::from);
    if let Some((name, bytes)) = pth.and_then(|name| files.take(&name).map(|bytes| (name, bytes))) {
        return pytorch::read(&source(&name), bytes);
    }
    Err(Error::in_file(
        &files.name,
        "no weights: expected model.safetensors, pytorch_model.bin, or a .pth or .ckpt file \
         (sharded checkpoints are not supported yet)",
    ))
}

pub struct HfModel {
    spec: String,
    /// SHA-256 of the model's files (config, tokenizer, weights): its identity for caches.
    fingerprint: String,
    window: Option<Window>,
    architecture: Box<dyn Arch>,
    tokenizer: Tokenizer,
    compute: Compute,
    /// Tokens per sequence after truncation (special tokens included).
    max_length: usize,
    /// Parameters of the encoder geneb runs (heads excluded).
    parameters: u64,
    /// Parameters of the whole checkpoint, heads included, as GENEB counts them (`meta`).
    model_parameters: u64,
    card: ModelCard,
}

impl HfModel {
    /// Builds a model from its files; the weights are moved out of `files`, converted and
    /// uploaded one tensor at a time.
    pub fn from_files(spec: String, mut files: ModelFiles, compute: Compute) -> Result<HfModel> {
        let hf_spec = match ModelSpec::parse(&spec)? {
            ModelSpec::Hf(hf) => Some(hf),
            _ => None,
        };
        let window = hf_spec.as_ref().and_then(|hf| hf.window);
        arch::complete_published_layout(&mut files);
        let fingerprint = files.fingerprint()?;
        let config = files.config()?;
        // A model of no positions takes no token: refused before its weights are read.
        if config["max_position_embeddings"].as_u64() == Some(0) {
            return Err(Error::in_file(
                format!("{}/config.json", files.name),
                "max_position_embeddings is 0: the model would take no token",
            ));
        }
        let arch_spec = arch::detect(&config)?;
        let tokenizer = Tokenizer::from_files(&files, arch_spec.tokenizer)?;
        let mut ckpt = read_weights(&mut files)?;
        let architecture = (arch_spec.load)(&config, &mut ckpt, &compute)?;
        let parameters = ckpt.encoder_parameters()?;
        let model_parameters = ckpt.model_parameters()?;
        ckpt.finish()?;
        let max_length = tokenizer
            .model_max_length()
            .unwrap_or(usize::MAX)
            .min(architecture.max_tokens());
        if max_length == usize::MAX {
            return Err(Error::in_file(
                &files.name,
                "no maximum input length: set model_max_length in tokenizer_config.json",
            ));
        }
        let card = ModelCard::read(
            hf_spec.as_ref().map_or(&files.name, |hf| &hf.source),
            hf_spec
                .as_ref()
                .and_then(|hf| hf.hub_repo())
                .map(|(repo, _)| repo),
            &config,
            files.readme(),
            max_length,
        );
        Ok(HfModel {
            spec,
            fingerprint,
            window,
            architecture,
            tokenizer,
            compute,
            max_length,
            parameters,
            model_parameters,
            card,
        })
    }

    pub fn spec(&self) -> &str {
        &self.spec
    }

    pub fn dim(&self) -> usize {
        self.architecture.embedding_size()
    }

    pub fn compute(&self) -> &Compute {
        &self.compute
    }

    pub fn parameters(&self) -> u64 {
        self.parameters
    }

    /// Every parameter of the checkpoint, heads included (see `Checkpoint::skip_prefix`).
    pub fn model_parameters(&self) -> u64 {
        self.model_parameters
    }

    pub fn card(&self) -> &ModelCard {
        &self.card
    }

    pub fn max_length(&self) -> usize {
        self.max_length
    }

    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    pub fn window(&self) -> Option<Window> {
        self.window
    }

    pub fn pooling(&self) -> arch::Pooling {
        self.architecture.pooling()
    }

    pub fn describe_architecture(&self) -> String {
        format!(
            "{}; tokenizer {}",
            self.architecture.family(),
            self.tokenizer.describe()
        )
    }

    /// Pooled embeddings in input order (the mean over windows when windows were asked for).
    /// Sequences are tokenized, ordered by length so batches
    /// carry little padding, and padded on the right; the attention mask keeps padding out of
    /// every real token and out of the mean, so no result depends on its batch-mates.
    pub async fn embed(&self, sequences: &[String]) -> Result<Array2<f32>> {
        let Some(window) = self.window else {
            return self.embed_truncated(sequences).await;
        };
        let mut pieces = Vec::new();
        let mut owner = Vec::new();
        for (i, sequence) in sequences.iter().enumerate() {
            for range in window.ranges(sequence.len()) {
                pieces.push(sequence[range].to_string());
                owner.push(i);
            }
        }
        let per_window = self.embed_truncated(&pieces).await?;
        let mut out = Array2::<f32>::zeros((sequences.len(), self.dim()));
        let mut counts = vec![0f32; sequences.len()];
        for (row, &i) in per_window.rows().into_iter().zip(&owner) {
            let mut target = out.row_mut(i);
            target += &row;
            counts[i] += 1.0;
        }
        for (mut row, count) in out.rows_mut().into_iter().zip(counts) {
            row /= count;
        }
        Ok(out)
    }

    /// How many of `sequences` lose tokens to the model's maximum length (with windows: in any
    /// of their windows). Counted from the tokens, so cached embeddings count too.
    pub fn truncated(&self, sequences: &[String]) -> usize {
        let cut = |piece: &str| self.tokenizer.truncates(piece, self.max_length);
        sequences
            .iter()
            .filter(|sequence| match self.window {
                None => cut(sequence),
                Some(window) => window
                    .ranges(sequence.len())
                    .into_iter()
                    .any(|range| cut(&sequence[range])),
            })
            .count()
    }

    async fn embed_truncated(&self, sequences: &[String]) -> Result<Array2<f32>> {
        let tokens: Vec<Vec<u32>> = sequences
            .iter()
            .map(|s| self.tokenizer.encode(s, Some(self.max_length)))
            .collect();
        // Tokenizer files from another model (or a damaged one) can give ids past the
        // embedding table, which the forward pass would index out of bounds.
        let rows = self.architecture.token_rows();
        let ids = tokens.iter().flatten().copied();
        if let Some(id) = std::iter::once(self.tokenizer.pad_id())
            .chain(ids)
            .find(|&id| id as usize >= rows)
        {
            return Err(Error::in_file(
                &self.spec,
                format!(
                    "the tokenizer gives token id {id}, but the model's embedding table has \
                     {rows} rows: are the tokenizer files this model's own?"
                ),
            ));
        }
        let mut order: Vec<usize> = (0..tokens.len()).collect();
        order.sort_by_key(|&i| (tokens[i].len(), i));
        let mut out = Array2::<f32>::zeros((sequences.len(), self.dim()));
        let widest = self.architecture.widest_activation();
        let max_floats = super::backend::max_buffer_floats(&self.compute.device);
        let batch_tokens = batch_tokens(self.compute.kind, max_floats, widest);
        let mut batches = Vec::new();
        let mut start = 0;
        while start < order.len() {
            let mut end = start + 1;
            while end < order.len() {
                let width = self.architecture.positions(tokens[order[end]].len()).max(1);
                let rows = end + 1 - start;
                // Every tensor of the pass must fit one GPU buffer: the widest activation, and
                // one head's attention scores (attention() splits the heads).
                if rows * width > batch_tokens
                    || rows * width * widest > max_floats
                    || rows * width * width > max_floats
                {
                    break;
                }
                end += 1;
            }
            batches.push(start..end);
            start = end;
        }
        let batch_of = |range: &std::ops::Range<usize>| -> Vec<&[u32]> {
            order[range.clone()]
                .iter()
                .map(|&i| tokens[i].as_slice())
                .collect()
        };
        // On the CPU, one batch per pool thread at a time: each forward pass keeps its thread
        // busy. One pass split across the threads kernel by kernel ran slower on two threads
        // than on one in the page (bench/README.md). The batches are the same at any thread
        // count, and a batch's numbers do not depend on the thread that computes it.
        let at_once = match self.compute.kind {
            BackendKind::Cpu => {
                let batch_bytes = batch_tokens * widest * LIVE_ACTIVATIONS * size_of::<f32>();
                rayon::current_num_threads()
                    .clamp(1, (CONCURRENT_BATCHES_BYTES / batch_bytes).max(1))
            }
            BackendKind::Wgpu => 1,
        };
        for group in batches.chunks(at_once) {
            let pooled: Vec<Tensor<2>> = if group.len() == 1 {
                vec![self.forward_pooled(&batch_of(&group[0]))]
            } else {
                use rayon::prelude::*;
                group
                    .par_iter()
                    .map(|range| self.forward_pooled(&batch_of(range)))
                    .collect()
            };
            for (range, pooled) in group.iter().zip(pooled) {
                let pooled = self.compute.read(pooled).await?;
                // Finite weights can still overflow (an f16 run, a model trained past its
                // range); a NaN embedding would only show up as a meaningless profile, so the
                // run stops.
                if let Some(at) = pooled.iter().position(|v| !v.is_finite()) {
                    let sequence = order[range.start + at / self.dim()];
                    return Err(Error::in_file(
                        &self.spec,
                        format!(
                            "the model's embedding of sequence {} is {}: its outputs overflow, \
                             so no probe can use them",
                            sequence + 1,
                            pooled[at]
                        ),
                    ));
                }
                for (row, values) in pooled.chunks_exact(self.dim()).enumerate() {
                    out.row_mut(order[range.start + row])
                        .assign(&ndarray::ArrayView1::from(values));
                }
            }
        }
        Ok(out)
    }

    /// One forward pass, pooled as the reference extractor pools: [rows, dim], not yet read back.
    fn forward_pooled(&self, batch: &[&[u32]]) -> Tensor<2> {
        let rows = batch.len();
        let width = batch.iter().map(|t| t.len()).max().unwrap_or(0).max(1);
        let pad = self.tokenizer.pad_id() as i64;
        let mut ids = vec![pad; rows * width];
        let mut mask = vec![0f32; rows * width];
        for (r, tokens) in batch.iter().enumerate() {
            for (t, &id) in tokens.iter().enumerate() {
                ids[r * width + t] = id as i64;
                mask[r * width + t] = 1.0;
            }
        }
        let device = &self.compute.device;
        let ids = Tensor::<2, Int>::from_data(TensorData::new(ids, [rows, width]), device);
        let mask = Tensor::<2>::from_data(TensorData::new(mask, [rows, width]), device);
        let hidden = self.architecture.forward(ids, mask.clone());
        // Pooled in f32 whatever the model ran in: an f16 sum over a thousand tokens loses
        // digits and can overflow. (A no-op on an f32 device.)
        let hidden = hidden.cast(FloatDType::F32);
        let width = self.architecture.hidden_size();
        let pooled = match self.architecture.pooling() {
            Pooling::ClsToken => hidden.narrow(1, 0, 1).reshape([rows, width]),
            Pooling::MaskedMean | Pooling::HeadLogitsMean => {
                let mask = mask.cast(FloatDType::F32);
                let inverse_count = batch
                    .iter()
                    .map(|tokens| 1.0 / tokens.len().max(1) as f32)
                    .collect();
                let inverse_count = Tensor::<2>::from_data(
                    TensorData::new(inverse_count, [rows, 1]),
                    (device, DType::F32),
                );
                (hidden * mask.unsqueeze_dim::<3>(2))
                    .sum_dim(1)
                    .reshape([rows, width])
                    * inverse_count
            }
        };
        self.architecture.after_pooling(pooled)
    }
}

/// Reads a local model folder: config.json, the tokenizer files and the weights (nothing else,
/// so a folder that also holds TensorFlow or Flax weights is not read twice over). Without
/// `model.safetensors` or `pytorch_model.bin`, the first `.pth` or `.ckpt` file is the weights
/// (DNAGPT's and JanusDNA's published files).
#[cfg(not(target_arch = "wasm32"))]
pub fn read_folder(folder: &std::path::Path) -> Result<ModelFiles> {
    let names = crate::hf::MODEL_FILE_NAMES;
    let name = folder.display().to_string();
    if !folder.is_dir() {
        return Err(Error::in_file(
            &name,
            "not a folder (give the model folder that holds config.json)",
        ));
    }
    let mut files = ModelFiles::new(&name);
    let [safetensors, pytorch] = names.weights;
    let wanted = [names.config, names.published_config, crate::hf::MODEL_CARD]
        .into_iter()
        .chain(names.tokenizer)
        .chain(names.weights);
    for file in wanted {
        let path = folder.join(file);
        if file == pytorch && files.contains(safetensors) {
            continue;
        }
        match crate::hf::source::LocalFile::open(&path) {
            Ok(local) => files.insert_source(file, Box::new(local))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(cannot_read(&path, e)),
        }
    }
    if !names.weights.iter().any(|weights| files.contains(weights)) {
        let listing = std::fs::read_dir(folder).map_err(|e| cannot_read(folder, e))?;
        let mut pth: Vec<std::path::PathBuf> = listing
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| {
                path.file_name()
                    .is_some_and(|name| names.is_published_weights(&name.to_string_lossy()))
            })
            .collect();
        pth.sort();
        if let Some(path) = pth.first() {
            let local =
                crate::hf::source::LocalFile::open(path).map_err(|e| cannot_read(path, e))?;
            files.insert_source(
                &path.file_name().unwrap_or_default().to_string_lossy(),
                Box::new(local),
            )?;
        }
    }
    Ok(files)
}

#[cfg(not(target_arch = "wasm32"))]
fn cannot_read(path: &std::path::Path, e: std::io::Error) -> Error {
    Error::in_file(path.display().to_string(), format!("cannot read: {e}"))
}
