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
use super::backend::Compute;
use super::bert::{self, Bert};
use super::caduceus::{self, Caduceus};
use super::hyena::{self, Hyena};
use super::layers::MAX_BUFFER_FLOATS;
use super::nt::{self, NucleotideTransformer};
use crate::hf::{Checkpoint, ModelFiles, pytorch, safetensors};
use crate::tokenize::Tokenizer;
use crate::{Error, Result};
use burn::tensor::{DType, FloatDType, Int, Tensor, TensorData};
use ndarray::Array2;

/// Token positions per forward pass (batch × padded length). A GPU wants many at once; the CPU
/// backend is faster with activations that stay in cache (HyenaDNA-tiny at 200 nt: 12 % faster
/// at 2,048 than at 8,192, the transformers no slower).
fn batch_tokens(kind: BackendKind) -> usize {
    match kind {
        BackendKind::Cpu => 2048,
        BackendKind::Wgpu => 8192,
    }
}

/// The architectures geneb runs, as `geneb models` and errors name them.
pub const SUPPORTED: &str = "HyenaDNA, Caduceus (PH, PS), BERT (DNABERT, GROVER, SpliceBERT), \
                             DNABERT-2, Nucleotide Transformer v2";

pub enum Architecture {
    Hyena(Hyena),
    Caduceus(Caduceus),
    Bert(Bert),
    NucleotideTransformer(NucleotideTransformer),
}

/// Calls the same method on whichever architecture this is.
macro_rules! each {
    ($self:expr, $m:ident => $call:expr) => {
        match $self {
            Architecture::Hyena($m) => $call,
            Architecture::Caduceus($m) => $call,
            Architecture::Bert($m) => $call,
            Architecture::NucleotideTransformer($m) => $call,
        }
    };
}

impl Architecture {
    /// Detects the architecture from config.json (and, within the BERT family, from the
    /// checkpoint's tensors) and builds it tensor by tensor.
    pub fn load(
        config: &serde_json::Value,
        ckpt: &mut Checkpoint,
        compute: &Compute,
    ) -> Result<Architecture> {
        let device = &compute.device;
        if hyena::matches(config) {
            let long_conv = hyena::LongConv::for_backend(compute.kind);
            return Ok(Architecture::Hyena(Hyena::load(
                config, ckpt, device, long_conv,
            )?));
        }
        if caduceus::matches(config) {
            return Ok(Architecture::Caduceus(Caduceus::load(
                config, ckpt, device,
            )?));
        }
        if nt::matches(config) {
            return Ok(Architecture::NucleotideTransformer(
                NucleotideTransformer::load(config, ckpt, device)?,
            ));
        }
        if bert::matches(config) {
            return Ok(Architecture::Bert(Bert::load(config, ckpt, device)?));
        }
        let declared = config
            .get("model_type")
            .and_then(|v| v.as_str())
            .or_else(|| {
                config
                    .get("architectures")
                    .and_then(|a| a.get(0))
                    .and_then(|v| v.as_str())
            })
            .unwrap_or("none declared");
        Err(Error::in_file(
            "config.json",
            format!("model type '{declared}' is not supported; geneb runs {SUPPORTED}"),
        ))
    }

    pub fn family(&self) -> &'static str {
        match self {
            Architecture::Hyena(_) => "HyenaDNA",
            Architecture::Caduceus(_) => "Caduceus (bidirectional Mamba, RC-equivariant)",
            Architecture::Bert(b) if b.uses_alibi() => "DNABERT-2 (BERT with ALiBi and GLU)",
            Architecture::Bert(_) => "BERT",
            Architecture::NucleotideTransformer(_) => "Nucleotide Transformer v2 (ESM)",
        }
    }

    pub fn hidden_size(&self) -> usize {
        each!(self, m => m.hidden_size())
    }

    pub fn max_tokens(&self) -> usize {
        each!(self, m => m.max_tokens())
    }

    /// Floats per token of the widest intermediate tensor, for sizing batches.
    pub fn widest_activation(&self) -> usize {
        each!(self, m => m.widest_activation())
    }

    pub fn forward(&self, input_ids: Tensor<2, Int>, attention_mask: Tensor<2>) -> Tensor<3> {
        each!(self, m => m.forward(input_ids, attention_mask))
    }
}

/// The weights of a model folder: safetensors preferred, as transformers prefers them.
pub fn read_weights(files: &mut ModelFiles) -> Result<Checkpoint> {
    let name = files.name.clone();
    let source = |f: &str| format!("{name}/{f}");
    if let Some(bytes) = files.take("model.safetensors") {
        return safetensors::read(&source("model.safetensors"), bytes);
    }
    if let Some(bytes) = files.take("pytorch_model.bin") {
        return pytorch::read(&source("pytorch_model.bin"), bytes);
    }
    Err(Error::in_file(
        &files.name,
        "no weights: expected model.safetensors or pytorch_model.bin (sharded checkpoints are not \
         supported yet)",
    ))
}

/// Sliding windows, the non-standard alternative to truncation (`hf:MODEL?window=1024,512`):
/// windows of `size` nucleotides every `stride`, each embedded as a sequence of its own, and
/// the sequence's embedding is the mean of its windows'. GENEB's official baselines truncate;
/// the result's protocol block says which was used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub size: usize,
    pub stride: usize,
}

impl Window {
    /// The `?window=SIZE,STRIDE` suffix of an `hf:` spec, and the spec without it.
    pub fn split_spec(spec: &str) -> Result<(&str, Option<Window>)> {
        let Some((base, options)) = spec.split_once('?') else {
            return Ok((spec, None));
        };
        let bad = || {
            Error::new(format!(
                "model '{spec}': expected ?window=SIZE,STRIDE (nucleotides, 0 < STRIDE <= SIZE)"
            ))
        };
        let numbers = options.strip_prefix("window=").ok_or_else(bad)?;
        let (size, stride) = numbers.split_once(',').ok_or_else(bad)?;
        let size: usize = size.trim().parse().map_err(|_| bad())?;
        let stride: usize = stride.trim().parse().map_err(|_| bad())?;
        if size == 0 || stride == 0 || stride > size {
            return Err(bad());
        }
        Ok((base, Some(Window { size, stride })))
    }

    /// Byte ranges of the windows of a sequence of `len` nucleotides: every `stride` from 0,
    /// until one reaches the end (a sequence no longer than `size` is one window).
    pub fn ranges(self, len: usize) -> Vec<std::ops::Range<usize>> {
        let mut ranges = Vec::new();
        let mut start = 0;
        loop {
            let end = (start + self.size).min(len);
            ranges.push(start..end);
            if end == len {
                return ranges;
            }
            start += self.stride;
        }
    }
}

pub struct HfModel {
    spec: String,
    /// SHA-256 of the model's files (config, tokenizer, weights): its identity for caches.
    fingerprint: String,
    window: Option<Window>,
    architecture: Architecture,
    tokenizer: Tokenizer,
    compute: Compute,
    /// Tokens per sequence after truncation (special tokens included).
    max_length: usize,
    parameters: u64,
}

impl HfModel {
    /// Builds a model from its files; the weights are moved out of `files`, converted and
    /// uploaded one tensor at a time.
    pub fn from_files(spec: String, mut files: ModelFiles, compute: Compute) -> Result<HfModel> {
        let window = Window::split_spec(&spec)?.1;
        let fingerprint = files.fingerprint();
        let config = files.config()?;
        let tokenizer = Tokenizer::from_files(&files, &config)?;
        let mut ckpt = read_weights(&mut files)?;
        let architecture = Architecture::load(&config, &mut ckpt, &compute)?;
        let parameters = ckpt.taken_elements();
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
        Ok(HfModel {
            spec,
            fingerprint,
            window,
            architecture,
            tokenizer,
            compute,
            max_length,
            parameters,
        })
    }

    pub fn spec(&self) -> &str {
        &self.spec
    }

    pub fn dim(&self) -> usize {
        self.architecture.hidden_size()
    }

    pub fn compute(&self) -> &Compute {
        &self.compute
    }

    pub fn parameters(&self) -> u64 {
        self.parameters
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

    async fn embed_truncated(&self, sequences: &[String]) -> Result<Array2<f32>> {
        let tokens: Vec<Vec<u32>> = sequences
            .iter()
            .map(|s| self.tokenizer.encode(s, Some(self.max_length)))
            .collect();
        let mut order: Vec<usize> = (0..tokens.len()).collect();
        order.sort_by_key(|&i| (tokens[i].len(), i));
        let mut out = Array2::<f32>::zeros((sequences.len(), self.dim()));
        let batch_tokens = batch_tokens(self.compute.kind);
        let mut start = 0;
        while start < order.len() {
            let mut end = start + 1;
            let widest = self.architecture.widest_activation();
            while end < order.len() {
                let width = tokens[order[end]].len().max(1);
                let rows = end + 1 - start;
                // Every tensor of the pass must fit one GPU buffer: the widest activation, and
                // one head's attention scores (attention() splits the heads).
                if rows * width > batch_tokens
                    || rows * width * widest > MAX_BUFFER_FLOATS
                    || rows * width * width > MAX_BUFFER_FLOATS
                {
                    break;
                }
                end += 1;
            }
            let batch: Vec<&[u32]> = order[start..end]
                .iter()
                .map(|&i| tokens[i].as_slice())
                .collect();
            let pooled = self.embed_batch(&batch).await?;
            // Finite weights can still overflow (an f16 run, a model trained past its range);
            // a NaN embedding would only show up as a meaningless profile, so the run stops.
            if let Some(at) = pooled.iter().position(|v| !v.is_finite()) {
                let sequence = order[start + at / self.dim()];
                return Err(Error::in_file(
                    &self.spec,
                    format!(
                        "the model's embedding of sequence {} is {}: its outputs overflow, so \
                         no probe can use them",
                        sequence + 1,
                        pooled[at]
                    ),
                ));
            }
            for (row, values) in pooled.chunks_exact(self.dim()).enumerate() {
                out.row_mut(order[start + row])
                    .assign(&ndarray::ArrayView1::from(values));
            }
            start = end;
        }
        Ok(out)
    }

    async fn embed_batch(&self, batch: &[&[u32]]) -> Result<Vec<f32>> {
        let rows = batch.len();
        let width = batch.iter().map(|t| t.len()).max().unwrap_or(0).max(1);
        let pad = self.tokenizer.pad_id() as i64;
        let mut ids = vec![pad; rows * width];
        let mut mask = vec![0f32; rows * width];
        let mut inverse_count = vec![0f32; rows];
        for (r, tokens) in batch.iter().enumerate() {
            for (t, &id) in tokens.iter().enumerate() {
                ids[r * width + t] = id as i64;
                mask[r * width + t] = 1.0;
            }
            inverse_count[r] = 1.0 / tokens.len().max(1) as f32;
        }
        let device = &self.compute.device;
        let ids = Tensor::<2, Int>::from_data(TensorData::new(ids, [rows, width]), device);
        let mask = Tensor::<2>::from_data(TensorData::new(mask, [rows, width]), device);
        let hidden = self.architecture.forward(ids, mask.clone());
        // The mean is taken in f32 whatever the model ran in: an f16 sum over a thousand
        // tokens loses digits and can overflow. (A no-op on an f32 device.)
        let hidden = hidden.cast(FloatDType::F32);
        let mask = mask.cast(FloatDType::F32);
        let inverse_count = Tensor::<2>::from_data(
            TensorData::new(inverse_count, [rows, 1]),
            (device, DType::F32),
        );
        let pooled = (hidden * mask.unsqueeze_dim::<3>(2))
            .sum_dim(1)
            .reshape([rows, self.dim()])
            * inverse_count;
        self.compute.read(pooled).await
    }
}

/// Reads a local model folder: config.json, the tokenizer files and the weights (nothing else,
/// so a folder that also holds TensorFlow or Flax weights is not read twice over).
#[cfg(not(target_arch = "wasm32"))]
pub fn read_folder(folder: &std::path::Path) -> Result<ModelFiles> {
    const WANTED: [&str; 7] = [
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "vocab.txt",
        "model.safetensors",
        "pytorch_model.bin",
    ];
    let name = folder.display().to_string();
    if !folder.is_dir() {
        return Err(Error::in_file(
            &name,
            "not a folder (give the model folder that holds config.json)",
        ));
    }
    let mut files = ModelFiles::new(&name);
    for file in WANTED {
        let path = folder.join(file);
        if file == "pytorch_model.bin" && files.contains("model.safetensors") {
            continue;
        }
        match std::fs::read(&path) {
            Ok(bytes) => files.insert(file, bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(Error::in_file(
                    path.display().to_string(),
                    format!("cannot read: {e}"),
                ));
            }
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::Window;

    #[test]
    fn windows_cover_the_sequence_and_parse_strictly() {
        let w = Window { size: 4, stride: 2 };
        assert_eq!(w.ranges(3), vec![0..3]);
        assert_eq!(w.ranges(4), vec![0..4]);
        assert_eq!(w.ranges(9), vec![0..4, 2..6, 4..8, 6..9]);
        assert_eq!(Window::split_spec("hf:m").unwrap(), ("hf:m", None));
        assert_eq!(
            Window::split_spec("hf:m?window=1024,512").unwrap(),
            (
                "hf:m",
                Some(Window {
                    size: 1024,
                    stride: 512
                })
            )
        );
        for bad in [
            "hf:m?window=5",
            "hf:m?window=4,8",
            "hf:m?window=0,0",
            "hf:m?win=4,2",
        ] {
            assert!(Window::split_spec(bad).is_err(), "{bad}");
        }
    }
}
