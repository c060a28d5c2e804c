//! `hf:` models: a Hugging Face model (config.json, weights, tokenizer files) → tokenizer +
//! architecture → one pooled embedding per sequence, as GENEB's reference extractor for the
//! model computes it (`encoder::recipe`): its input normalisation, special tokens, padding,
//! mask, pooling, truncation or windows, and batching.
//!
//! Most extractors pass the attention mask and pool over it, so no result depends on its
//! batch-mates and geneb batches by length. HyenaDNA's and Caduceus's do not pass it: their
//! padding enters the states (and for HyenaDNA the mean), so those run in the reference's
//! batches of four in the task file's order, padded on the reference tokenizer's side.

use super::BackendKind;
use super::arch::{self, Arch, Pooling};
use super::backend::Compute;
use super::card::ModelCard;
use super::recipe::{self, Input, Padding, Recipe, SpecialTokens};
use super::spec::{self, HfSpec, Weights, Window};
use crate::checkpoint::{self, Checkpoint, Held, ModelFiles, pytorch, safetensors};
use crate::tokenize::Tokenizer;
use crate::{Error, Result};
use burn::tensor::{DType, FloatDType, Int, Tensor, TensorData};
use ndarray::Array2;
use std::sync::Arc;

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
    let [safetensors_file, pytorch_file] = crate::checkpoint::MODEL_FILE_NAMES.weights;
    if let Some(bytes) = files.take(safetensors_file) {
        return safetensors::read(&source(safetensors_file), bytes);
    }
    if let Some(bytes) = files.take(pytorch_file) {
        return pytorch::read(&source(pytorch_file), bytes);
    }
    if let Some(index) = files.get(safetensors::INDEX).map(<[u8]>::to_vec) {
        let index_source = source(safetensors::INDEX);
        let mut shards = Vec::new();
        for name in safetensors::shard_names(&index_source, &index)? {
            let file = files.take(&name).ok_or_else(|| {
                Error::in_file(
                    &index_source,
                    format!("names the shard {name}, which the model folder lacks"),
                )
            })?;
            shards.push((name, file));
        }
        return safetensors::read_sharded(&index_source, &index, shards);
    }
    // Weights published under a name of their own (DNAGPT's `dna_gpt0.1b_h.pth`, JanusDNA's
    // Lightning `last.ckpt`).
    let pth = files
        .file_names()
        .find(|f| crate::checkpoint::MODEL_FILE_NAMES.is_published_weights(f))
        .map(String::from);
    if let Some((name, bytes)) = pth.and_then(|name| files.take(&name).map(|bytes| (name, bytes))) {
        return pytorch::read(&source(&name), bytes);
    }
    Err(Error::in_file(
        &files.name,
        "no weights: expected model.safetensors, pytorch_model.bin, a sharded checkpoint's \
         model.safetensors.index.json, or a .pth or .ckpt file",
    ))
}

/// Sets what a model's large matrices (linear layers, embedding tables) are held in: what the
/// spec's `?weights=` asks for, else f32 where every float tensor of the checkpoint fits the
/// memory budget at f32 (no widening per product), else half precision, the checkpoint's own
/// bf16 or f16 (exact: the numbers are the f32 path's; f32 tensors beside them stay f32) or
/// bf16 narrowed from a wider file.
/// Compute is f32 either way, on the CPU and on a GPU alike (there the 16-bit values stay on
/// the device and are widened by `layers::HalfMatrix`). Natively the weights are charged to the
/// budget as they are taken, at what they hold. A wgpu device computing in f16
/// (`--precision f16`) holds every weight in f16 already.
fn hold_weights(
    weights: Option<Weights>,
    ckpt: &mut Checkpoint,
    compute: &Compute,
) -> Result<Held> {
    let (f32_bytes, half) = ckpt.float_bytes();
    if compute.precision == super::Precision::F16 {
        if weights == Some(Weights::Half) {
            return Err(Error::new(
                "?weights=half and --precision f16 do not combine: the device computes in f16 and \
                 holds every weight so already; drop one of them",
            ));
        }
        return Ok(Held::F32);
    }
    let held = match weights {
        Some(Weights::F32) => Held::F32,
        Some(Weights::Half) => Held::half_of(half),
        None if f32_bytes <= crate::budget::limit() => Held::F32,
        None => Held::half_of(half),
    };
    ckpt.hold_matrices_in(held);
    // In the page, the tab's own limit stands in: the budget shrinks as the module's memory
    // grows with the very weights being charged.
    #[cfg(not(target_arch = "wasm32"))]
    ckpt.charge_to_budget();
    #[cfg(target_arch = "wasm32")]
    fits_tab(ckpt, held)?;
    Ok(held)
}

/// A tab holds at most `known::TAB_WEIGHTS_LIMIT` of weights. The page lets weights files of up
/// to twice that through (an f32 file a tab holds in half precision); this refuses, from the
/// header alone and before any tensor is read, a model whose weights would still be over it.
#[cfg(any(target_arch = "wasm32", test))]
fn fits_tab(ckpt: &Checkpoint, held_in: Held) -> Result<()> {
    let held = ckpt.held_bytes();
    let limit = super::known::TAB_WEIGHTS_LIMIT;
    if held <= limit {
        return Ok(());
    }
    let human = crate::budget::human;
    Err(Error::in_file(
        ckpt.source(),
        format!(
            "its weights would take {} ({held} bytes) held in {}, over the {} ({limit} bytes) a \
             browser tab holds: nothing was read; run it with the command line (geneb eval), \
             which has the whole machine's memory",
            human(held),
            held_in.name(),
            human(limit),
        ),
    ))
}

/// What a model's matrices are held in, beside what its file stores them in.
#[derive(Debug, Clone, Copy)]
pub struct HeldWeights {
    pub held: Held,
    /// The stored type of a matrix converted to `held` as it was taken, where one was
    /// (`Checkpoint::narrowed_from`).
    pub narrowed_from: Option<checkpoint::DType>,
}

impl HeldWeights {
    /// Whether weights were narrowed from what the file stores: other numbers than the f32
    /// path's, a deviation.
    pub fn narrowed(&self) -> bool {
        self.narrowed_from.is_some()
    }

    /// For the result: None where they are held in f32.
    pub fn describe(&self) -> Option<String> {
        let held = self.held.name();
        match (self.held, self.narrowed_from) {
            (Held::F32, _) => None,
            (_, None) => Some(format!(
                "{held} as the checkpoint stores them (the f32 path's numbers), widened to f32 \
                 one layer at a time for its products: the f32 weights are over the memory \
                 budget, or ?weights=half asked for it"
            )),
            (_, Some(stored)) => Some(format!(
                "NARROWED to {held} from the checkpoint's {stored:?}, to fit the memory budget or \
                 as ?weights=half asked; computed in f32 (?weights=f32 and a larger --max-memory \
                 keep f32)"
            )),
        }
    }
}

/// The recipe a model folder's own files determine where its architecture's structure alone
/// does not (`structural`, `Arch::recipe` or the architecture's), and why. A BERT over single
/// nucleotides (a vocab.txt of [PAD] [UNK] [CLS] [SEP] [MASK] and the letters A C G T N) with
/// learned positions for 1,024 nt and its [CLS] and [SEP] is SpliceBERT-1024nt, the only such
/// model GENEB evaluated: windowed as its extractor windows, not cut at 1,024 nt.
fn recipe_from_files(
    config: &serde_json::Value,
    files: &ModelFiles,
    structural: &'static Recipe,
) -> (&'static Recipe, String) {
    let single_nucleotides = || {
        let Some(vocab) = files.get("vocab.txt") else {
            return false;
        };
        let mut tokens: Vec<&str> = std::str::from_utf8(vocab)
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            // Special tokens are bracketed ([PAD], [CLS], …).
            .filter(|t| !t.is_empty() && (!t.starts_with('[') || !t.ends_with(']')))
            .collect();
        tokens.sort_unstable();
        tokens == ["A", "C", "G", "N", "T"]
    };
    let splicebert_shape = config["model_type"].as_str() == Some("bert")
        && config["max_position_embeddings"].as_u64() == Some(1026);
    if splicebert_shape && structural.name == recipe::GENERIC.name && single_nucleotides() {
        let why = "recipe 'splicebert' from the files: a BERT over single nucleotides with \
                   1,026 positions is SpliceBERT-1024nt";
        return (&recipe::SPLICEBERT, why.to_string());
    }
    // GENERator's tokenizer class is its own: no other model GENEB evaluated uses it.
    let generator_tokenizer = files
        .get("tokenizer_config.json")
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(bytes).ok())
        .is_some_and(|settings| settings["tokenizer_class"] == "DNAKmerTokenizer");
    if generator_tokenizer && structural.name == recipe::GENERIC.name {
        let why = "recipe 'generator' from the files: a decoder over GENERator's \
                   DNAKmerTokenizer is GENERator";
        return (&recipe::GENERATOR, why.to_string());
    }
    (
        structural,
        format!("recipe '{}', its architecture's", structural.name),
    )
}

/// Cloned only as another layer's view (`at_layer`): the weights and tokenizer are shared.
#[derive(Clone)]
pub struct HfModel {
    spec: String,
    /// SHA-256 of the model's files (config, tokenizer, weights): its identity for caches.
    fingerprint: String,
    window: Option<Window>,
    architecture: Arc<dyn Arch>,
    tokenizer: Arc<Tokenizer>,
    compute: Compute,
    /// Tokens per sequence after truncation (special tokens included).
    max_length: usize,
    /// Parameters of the encoder geneb runs (heads excluded).
    parameters: u64,
    /// Parameters of the whole checkpoint, heads included, as GENEB counts them (`meta`).
    model_parameters: u64,
    card: ModelCard,
    /// How GENEB's extractor embeds this model.
    recipe: &'static Recipe,
    /// The hidden state `embed` pools (`?layer=K` resolved, 0..=`last_layer`).
    layer: usize,
    /// How `recipe` was chosen: given, named, the known model's, or what the files tell.
    recipe_source: String,
    weights: HeldWeights,
}

impl HfModel {
    /// Builds a model from its files; the weights are moved out of `files`, converted and
    /// uploaded one tensor at a time.
    pub fn from_files(spec: &HfSpec, files: ModelFiles, compute: Compute) -> Result<HfModel> {
        Self::build(spec, files, compute, None)
    }

    /// `from_files` with `recipe` in place of the one the spec, the known model or the
    /// architecture names (the tests' flipped recipes).
    fn build(
        spec: &HfSpec,
        mut files: ModelFiles,
        compute: Compute,
        recipe: Option<&'static Recipe>,
    ) -> Result<HfModel> {
        let window = spec.window;
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
        let source = spec.source.clone();
        let hub_id = spec.hub_repo().map(|(repo, _)| repo);
        let mut tokenizer = Tokenizer::from_files(&files, arch_spec.tokenizer)?;
        let mut ckpt = read_weights(&mut files)?;
        let held = hold_weights(spec.weights, &mut ckpt, &compute)?;
        let architecture = (arch_spec.load)(&config, &mut ckpt, &compute)?;
        let weights = HeldWeights {
            held,
            narrowed_from: ckpt.narrowed_from(),
        };
        // The user's choice, else the known model's extractor, else what the files tell, else
        // its architecture's.
        let known = super::card::resolve_hub_id(&source, hub_id, &config)
            .as_deref()
            .and_then(super::known::find);
        let (recipe, recipe_source) = match (spec.recipe.as_deref(), known) {
            _ if recipe.is_some() => (recipe.unwrap_or(arch_spec.recipe), "given".to_string()),
            (Some(name), _) => (recipe::by_name(name)?, "named by ?recipe=".to_string()),
            (None, Some(known)) => (known.recipe, format!("{}'s", known.display)),
            (None, None) => {
                let structural = architecture.recipe().unwrap_or(arch_spec.recipe);
                let (recipe, why) = recipe_from_files(&config, &files, structural);
                let chosen = format!(
                    "{why}: the files name no model geneb knows; if this is another, pick its \
                     recipe with hf:{source}?recipe=NAME (geneb models lists them)"
                );
                (recipe, chosen)
            }
        };
        if recipe.special_tokens == SpecialTokens::None {
            tokenizer = tokenizer.without_special_tokens();
        }
        let parameters = ckpt.encoder_parameters()?;
        let model_parameters = ckpt.model_parameters()?;
        ckpt.finish()?;
        // An extractor's own max_length overrides the tokenizer's model_max_length.
        let max_length = match recipe.truncation {
            recipe::Truncation::Tokens { length } => length,
            _ => tokenizer.model_max_length().unwrap_or(usize::MAX),
        }
        .min(architecture.max_tokens());
        if max_length == usize::MAX {
            return Err(Error::in_file(
                &files.name,
                "no maximum input length: set model_max_length in tokenizer_config.json",
            ));
        }
        let card = ModelCard::read(&source, hub_id, &config, files.readme(), max_length);
        let layer = resolve_layers(&spec.text, architecture.as_ref(), &compute, &[spec.layer])?[0];
        Ok(HfModel {
            layer,
            spec: spec.text.clone(),
            fingerprint,
            window,
            architecture: Arc::from(architecture),
            tokenizer: Arc::new(tokenizer),
            compute,
            max_length,
            parameters,
            model_parameters,
            card,
            recipe,
            recipe_source,
            weights,
        })
    }

    /// How the recipe was chosen (`EncoderDescription::recipe_source`).
    pub fn recipe_source(&self) -> &str {
        &self.recipe_source
    }

    pub fn recipe(&self) -> &'static Recipe {
        self.recipe
    }

    /// The hidden state `embed` pools, 0..=`last_layer()`.
    pub fn layer(&self) -> usize {
        self.layer
    }

    /// The last hidden state's index: the model's layers L, as `output_hidden_states` counts
    /// them (`Arch::layers`).
    pub fn last_layer(&self) -> usize {
        self.architecture.layers()
    }

    /// The same loaded model at `?layer=K` (`geneb eval --layers`): its spec names the layer,
    /// the weights are shared.
    pub fn at_layer(&self, k: i64) -> Result<HfModel> {
        let layer = self.resolve_layers(&[Some(k)])?[0];
        Ok(HfModel {
            spec: HfSpec::parse(&self.spec)?.at_layer(k).text,
            layer,
            ..self.clone()
        })
    }

    /// `?layer=K` values resolved against this model (`resolve_layers`).
    pub fn resolve_layers(&self, ks: &[Option<i64>]) -> Result<Vec<usize>> {
        resolve_layers(&self.spec, self.architecture.as_ref(), &self.compute, ks)
    }

    /// The width of the pooled embedding of hidden state `layer`: after `Arch::after_pooling`
    /// for the last, the state's own width for the others.
    pub fn dim_at(&self, layer: usize) -> usize {
        if layer == self.last_layer() {
            self.architecture.embedding_size()
        } else {
            self.architecture.hidden_size_at(layer)
        }
    }

    /// What the large matrices are held in.
    pub fn weights(&self) -> HeldWeights {
        self.weights
    }

    /// What loading noted (`Arch::notes`).
    pub fn notes(&self) -> &[String] {
        self.architecture.notes()
    }

    pub fn spec(&self) -> &str {
        &self.spec
    }

    pub fn dim(&self) -> usize {
        self.dim_at(self.layer)
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
        self.recipe.pooling
    }

    pub fn describe_architecture(&self) -> String {
        format!(
            "{}; tokenizer {}",
            self.architecture.family(),
            self.tokenizer.describe()
        )
    }

    /// Pooled embeddings in input order (the mean over windows where the user or the recipe
    /// asks for windows). Sequences are tokenized and batched as the recipe says: by length
    /// with right padding where the mask keeps every result to itself, else in the
    /// reference's batches in input order (the caller gives a task's train or test sequences
    /// in the task file's order).
    pub async fn embed(&self, sequences: &[String]) -> Result<Array2<f32>> {
        let mut embedded = self.embed_layers(sequences, &[self.layer]).await?;
        embedded
            .pop()
            .ok_or_else(|| Error::new("internal error: no embedding for the model's layer"))
    }

    /// `embed` for each of `layers` (hidden states 0..=`last_layer()`, as `resolve_layers`
    /// gives them) from one forward pass per batch, in the order asked.
    pub async fn embed_layers(
        &self,
        sequences: &[String],
        layers: &[usize],
    ) -> Result<Vec<Array2<f32>>> {
        let normalized;
        let sequences = match self.recipe.input {
            Input::AsGiven => sequences,
            Input::IupacToN => {
                normalized = sequences
                    .iter()
                    .map(|s| iupac_to_n(s))
                    .collect::<Result<Vec<String>>>()?;
                &normalized
            }
            // Each piece the model sees is centred or trimmed (`embed_truncated`), windows
            // included.
            Input::Centred { .. } | Input::TrimmedAfterText { .. } => sequences,
        };
        if self.window.is_none() && self.recipe.windows().is_none() {
            return self.embed_truncated(sequences, layers).await;
        }
        let mut pieces = Vec::new();
        let mut owner = Vec::new();
        for (i, sequence) in sequences.iter().enumerate() {
            for range in self.window_ranges(sequence.len()).unwrap_or_default() {
                pieces.push(sequence[range].to_string());
                owner.push(i);
            }
        }
        let mut counts = vec![0f32; sequences.len()];
        for &i in &owner {
            counts[i] += 1.0;
        }
        let per_layer = self.embed_truncated(&pieces, layers).await?;
        let mut averaged = Vec::with_capacity(layers.len());
        for per_window in per_layer {
            let mut out = Array2::<f32>::zeros((sequences.len(), per_window.ncols()));
            for (row, &i) in per_window.rows().into_iter().zip(&owner) {
                let mut target = out.row_mut(i);
                target += &row;
            }
            for (mut row, count) in out.rows_mut().into_iter().zip(&counts) {
                row /= *count;
            }
            averaged.push(out);
        }
        Ok(averaged)
    }

    /// The windows a sequence of `len` nucleotides is embedded in: the user's (`?window=`),
    /// else the recipe's (with its end-anchored last window); None where it is embedded whole.
    fn window_ranges(&self, len: usize) -> Option<Vec<std::ops::Range<usize>>> {
        match (self.window, self.recipe.windows()) {
            (Some(window), _) => Some(window.ranges(len)),
            (None, Some((size, stride))) => Some(end_anchored_windows(len, size, stride)),
            (None, None) => None,
        }
    }

    /// How many of `sequences` lose tokens to the model's maximum length (with windows: in any
    /// of their windows). Counted from the tokens, so cached embeddings count too.
    pub fn truncated(&self, sequences: &[String]) -> usize {
        let cut = |piece: &str| match self.recipe.input {
            // A piece longer than the centring's length loses nucleotides to the crop itself.
            Input::Centred { .. } => self.tokenizer.truncates(piece, self.max_length),
            _ => self
                .tokenizer
                .truncates(&self.tokenizer_text(piece), self.max_length),
        };
        sequences
            .iter()
            .filter(|sequence| match self.window_ranges(sequence.len()) {
                Some(ranges) => ranges.into_iter().any(|range| cut(&sequence[range])),
                None => cut(sequence),
            })
            .count()
    }

    /// The text the tokenizer reads for one piece of a sequence, as the recipe's input step
    /// writes it.
    fn tokenizer_text<'a>(&self, piece: &'a str) -> std::borrow::Cow<'a, str> {
        match self.recipe.input {
            Input::Centred { length } => centred(piece, length).into(),
            Input::TrimmedAfterText { multiple, prefix } => {
                trimmed_after_text(piece, multiple, prefix).into()
            }
            Input::AsGiven | Input::IupacToN => piece.into(),
        }
    }

    async fn embed_truncated(
        &self,
        sequences: &[String],
        layers: &[usize],
    ) -> Result<Vec<Array2<f32>>> {
        let tokens: Vec<Vec<u32>> = sequences
            .iter()
            .map(|s| {
                self.tokenizer
                    .encode(&self.tokenizer_text(s), Some(self.max_length))
            })
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
        if let Some(size) = self.recipe.file_order_batch() {
            return self.embed_in_file_order(&tokens, size, layers).await;
        }
        let mut order: Vec<usize> = (0..tokens.len()).collect();
        order.sort_by_key(|&i| (tokens[i].len(), i));
        let mut out = self.empty_embeddings(sequences.len(), layers);
        let widest = self.architecture.widest_activation();
        let max_floats = super::backend::max_buffer_floats(&self.compute.device);
        let batch_tokens = batch_tokens(self.compute.kind, max_floats, widest);
        let mut batches = Vec::new();
        let mut start = 0;
        while start < order.len() {
            let mut end = start + 1;
            while end < order.len() {
                let (rows, width) = self.run_shape(
                    end + 1 - start,
                    self.architecture.positions(tokens[order[end]].len()),
                );
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
            let pooled: Vec<Vec<Tensor<2>>> = if group.len() == 1 {
                vec![self.forward_pooled(&batch_of(&group[0]), layers)?]
            } else {
                use rayon::prelude::*;
                group
                    .par_iter()
                    .map(|range| self.forward_pooled(&batch_of(range), layers))
                    .collect::<Result<_>>()?
            };
            for (range, pooled) in group.iter().zip(pooled) {
                for (pooled, out) in pooled.into_iter().zip(&mut out) {
                    let pooled = self.compute.read(pooled).await?;
                    for (row, values) in pooled.chunks_exact(out.ncols()).enumerate() {
                        self.check_finite(values, order[range.start + row])?;
                        out.row_mut(order[range.start + row])
                            .assign(&ndarray::ArrayView1::from(values));
                    }
                }
            }
        }
        Ok(out)
    }

    /// Zeros for `rows` sequences' embeddings at each of `layers`.
    fn empty_embeddings(&self, rows: usize, layers: &[usize]) -> Vec<Array2<f32>> {
        layers
            .iter()
            .map(|&layer| Array2::<f32>::zeros((rows, self.dim_at(layer))))
            .collect()
    }

    /// The reference's own batches: `size` sequences at a time in input order, padded on the
    /// recipe's side to the batch's longest, the model given the mask only where the
    /// extractor passes it, pooled over the mask or (HyenaDNA) over every position.
    async fn embed_in_file_order(
        &self,
        tokens: &[Vec<u32>],
        size: usize,
        layers: &[usize],
    ) -> Result<Vec<Array2<f32>>> {
        let mut out = self.empty_embeddings(tokens.len(), layers);
        for (b, batch) in tokens.chunks(size).enumerate() {
            let batch: Vec<&[u32]> = batch.iter().map(Vec::as_slice).collect();
            for (pooled, out) in self
                .forward_padded(&batch, layers)?
                .into_iter()
                .zip(&mut out)
            {
                let pooled = self.compute.read(pooled).await?;
                for (row, values) in pooled.chunks_exact(out.ncols()).enumerate() {
                    let sequence = b * size + row;
                    self.check_finite(values, sequence)?;
                    out.row_mut(sequence)
                        .assign(&ndarray::ArrayView1::from(values));
                }
            }
        }
        Ok(out)
    }

    /// An overflowing model's embedding (an f16 run, a model trained past its range) would
    /// only show up as a meaningless profile, so the run stops, naming the sequence.
    fn check_finite(&self, values: &[f32], sequence: usize) -> Result<()> {
        match values.iter().find(|v| !v.is_finite()) {
            None => Ok(()),
            Some(value) => Err(Error::in_file(
                &self.spec,
                format!(
                    "the model's embedding of sequence {} is {value}: its outputs overflow, so \
                     no probe can use them",
                    sequence + 1
                ),
            )),
        }
    }

    /// One forward pass of a batch padded as the recipe pads it ([rows, dim] per layer, not
    /// read back).
    fn forward_padded(&self, batch: &[&[u32]], layers: &[usize]) -> Result<Vec<Tensor<2>>> {
        let rows = batch.len();
        let width = batch.iter().map(|t| t.len()).max().unwrap_or(0).max(1);
        let pad = self.tokenizer.pad_id() as i64;
        let left = match self.recipe.padding {
            Padding::Left => true,
            Padding::TokenizerSide => self.tokenizer.pads_left(),
            Padding::Right | Padding::RightTo { .. } => false,
        };
        let mut ids = vec![pad; rows * width];
        let mut mask = vec![0f32; rows * width];
        for (r, tokens) in batch.iter().enumerate() {
            let offset = if left { width - tokens.len() } else { 0 };
            for (t, &id) in tokens.iter().enumerate() {
                ids[r * width + offset + t] = id as i64;
                mask[r * width + offset + t] = 1.0;
            }
        }
        let device = &self.compute.device;
        let ids = Tensor::<2, Int>::from_data(TensorData::new(ids, [rows, width]), device);
        let mask = Tensor::<2>::from_data(TensorData::new(mask, [rows, width]), device);
        // Not passed, the model runs over the padding as over tokens: a mask of ones.
        let model_mask = if self.recipe.mask_to_model {
            mask.clone()
        } else {
            Tensor::<2>::ones([rows, width], device)
        };
        let hidden = self.hidden_states(ids, model_mask, layers)?;
        Ok(self.pool_layers(hidden, mask, batch, layers))
    }

    /// The hidden states at `layers` from one pass: `Arch::forward` itself where only the last
    /// is asked for (so `?layer=-1` is today's computation, bit for bit).
    fn hidden_states(
        &self,
        ids: Tensor<2, Int>,
        mask: Tensor<2>,
        layers: &[usize],
    ) -> Result<Vec<Tensor<3>>> {
        let last = self.last_layer();
        if layers.iter().all(|&layer| layer == last) {
            let hidden = self.architecture.forward(ids, mask);
            return Ok(vec![hidden; layers.len()]);
        }
        self.architecture.hidden_states(ids, mask, layers)
    }

    /// `pool` of each layer's states.
    fn pool_layers(
        &self,
        hidden: Vec<Tensor<3>>,
        mask: Tensor<2>,
        batch: &[&[u32]],
        layers: &[usize],
    ) -> Vec<Tensor<2>> {
        hidden
            .into_iter()
            .zip(layers)
            .map(|(hidden, &layer)| self.pool(hidden, mask.clone(), batch, layer))
            .collect()
    }

    /// The pooling of `hidden` [rows, width, hidden] (hidden state `layer`) over `mask`
    /// [rows, width], in f32.
    fn pool(
        &self,
        hidden: Tensor<3>,
        mask: Tensor<2>,
        batch: &[&[u32]],
        layer: usize,
    ) -> Tensor<2> {
        let rows = batch.len();
        let device = &self.compute.device;
        // Pooled in f32 whatever the model ran in: an f16 sum over a thousand tokens loses
        // digits and can overflow. (A no-op on an f32 device.)
        let hidden = hidden.cast(FloatDType::F32);
        let last = layer == self.last_layer();
        let width = if last {
            self.architecture.hidden_size()
        } else {
            self.architecture.hidden_size_at(layer)
        };
        let pooled = match self.pooling() {
            Pooling::ClsToken => hidden.narrow(1, 0, 1).reshape([rows, width]),
            Pooling::UnmaskedMean | Pooling::BinMean | Pooling::TrunkBinMean => {
                let positions = hidden.dims()[1];
                if positions <= POOLED_BLOCK {
                    hidden.mean_dim(1).reshape([rows, width])
                } else {
                    sum_positions(hidden).reshape([rows, width]) / positions as f32
                }
            }
            Pooling::NonPadCountLessTwo => {
                let [_, columns, _] = hidden.dims();
                // Python's index: below 0 counts from the row's end.
                let picked = batch
                    .iter()
                    .enumerate()
                    .map(|(row, tokens)| {
                        let column = (tokens.len() as i64 - 2).rem_euclid(columns.max(1) as i64);
                        (row * columns) as i64 + column
                    })
                    .collect();
                let picked = Tensor::<1, Int>::from_data(TensorData::new(picked, [rows]), device);
                hidden.reshape([rows * columns, width]).select(0, picked)
            }
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
                sum_positions(hidden * mask.unsqueeze_dim::<3>(2)).reshape([rows, width])
                    * inverse_count
            }
        };
        if last {
            self.architecture.after_pooling(pooled)
        } else {
            pooled
        }
    }

    /// The shape a batch of `rows` sequences, the longest `width` tokens, runs at. On a GPU,
    /// from a small set: each new shape can compile pipelines and allocate buffers mid-run
    /// (milliseconds to tens of milliseconds each in a browser), and BPE tokenizers make nearly
    /// every sequence a new length. Widths are 16 or 24 times a power of two (at most a third
    /// wasted), capped at the model's maximum, rows a power of two; the extra columns are
    /// masked padding and the extra rows repeat the first sequence, so no real token sees a
    /// difference. Only for recipes whose mask keeps padding out (`Batching::Independent`,
    /// padded on the right to the batch's longest): the others run at the reference's shapes.
    fn run_shape(&self, rows: usize, width: usize) -> (usize, usize) {
        let width = width.max(1);
        if !self.repeats_shapes() {
            return (rows, width);
        }
        let cap = self.architecture.max_tokens().max(width);
        (rows.next_power_of_two(), repeating_width(width).min(cap))
    }

    /// Whether batches run at `run_shape`'s repeating shapes: on a GPU, where the recipe's mask
    /// keeps padding out of what the real tokens see.
    fn repeats_shapes(&self) -> bool {
        self.compute.kind == BackendKind::Wgpu
            && self.recipe.file_order_batch().is_none()
            && !matches!(self.recipe.padding, Padding::RightTo { .. })
            && self.pooling() != Pooling::UnmaskedMean
    }

    /// Runs one single-sequence pass at every width `run_shape` gives up to `WARM_TOKENS`, so
    /// that the pipelines CubeCL compiles for them are compiled at load, not mid-run at the
    /// first sequence of a new length: CubeCL shrinks a kernel's workgroup while its work is
    /// under 8 subgroups and picks a matmul's tiling by its size, so one-row batches compile
    /// kernels of their own. Every small shape (all row counts) cost minutes at load on
    /// lavapipe; what this costs: bench/README.md ("Shapes that repeat").
    pub async fn warm_up(&self) -> Result<()> {
        if !self.repeats_shapes() {
            return Ok(());
        }
        let cap = self.architecture.max_tokens();
        let mut widths: Vec<usize> = (1..=cap.min(WARM_TOKENS))
            .map(|w| repeating_width(w).min(cap))
            .collect();
        widths.dedup();
        let pad = self.tokenizer.pad_id();
        for width in widths {
            let tokens = vec![pad; width];
            for pooled in self.forward_pooled(&[tokens.as_slice()], &[self.layer])? {
                self.compute.read(pooled).await?;
            }
        }
        Ok(())
    }

    /// One forward pass, pooled as the reference extractor pools: [rows, dim] per layer, not
    /// yet read back. Run at `run_shape`'s shape, the extra rows dropped before they are read.
    fn forward_pooled(&self, batch: &[&[u32]], layers: &[usize]) -> Result<Vec<Tensor<2>>> {
        let longest = batch.iter().map(|t| t.len()).max().unwrap_or(0);
        let (rows, width) = self.run_shape(batch.len(), longest);
        let padded: Vec<&[u32]> = batch
            .iter()
            .chain(std::iter::repeat_n(&batch[0], rows - batch.len()))
            .copied()
            .collect();
        let pad = self.tokenizer.pad_id() as i64;
        let mut ids = vec![pad; rows * width];
        let mut mask = vec![0f32; rows * width];
        for (r, tokens) in padded.iter().enumerate() {
            for (t, &id) in tokens.iter().enumerate() {
                ids[r * width + t] = id as i64;
                mask[r * width + t] = 1.0;
            }
        }
        let device = &self.compute.device;
        let ids = Tensor::<2, Int>::from_data(TensorData::new(ids, [rows, width]), device);
        let mask = Tensor::<2>::from_data(TensorData::new(mask, [rows, width]), device);
        let hidden = self.hidden_states(ids, mask.clone(), layers)?;
        let pooled = self.pool_layers(hidden, mask, &padded, layers);
        Ok(pooled
            .into_iter()
            .map(|pooled| {
                if rows == batch.len() {
                    pooled
                } else {
                    pooled.narrow(0, 0, batch.len())
                }
            })
            .collect())
    }
}

/// Positions the pooling sums in one go. The CPU backend sums one position after another in
/// f32, so over Enformer's 98,304 stem bins the mean drifts 1.6e-3 from the reference's: longer
/// inputs are summed in blocks (`SUMMED_BLOCK`), then their sums, which keeps every sum short.
/// Inputs no longer than this are summed as before, bit for bit.
const POOLED_BLOCK: usize = 1024;

/// The block of a long input's sums. Blocks of 1,024 still drift 1.9e-4 over SPACE's 4,096
/// near-equal bins of tower layer 4 (a blocked in-order f32 sum in NumPy gives the same); blocks
/// of 32, summed again in blocks of 32 until one is left, keep every layer within 1e-5.
const SUMMED_BLOCK: usize = 32;

/// `x.sum_dim(1)` for x [rows, positions, width]: in one go up to `POOLED_BLOCK` positions,
/// else in blocks of `SUMMED_BLOCK`.
fn sum_positions(x: Tensor<3>) -> Tensor<3> {
    if x.dims()[1] <= POOLED_BLOCK {
        return x.sum_dim(1);
    }
    sum_in_blocks(x)
}

/// The sum of every `SUMMED_BLOCK` positions, then of those sums, until one is left.
fn sum_in_blocks(x: Tensor<3>) -> Tensor<3> {
    let [rows, positions, width] = x.dims();
    if positions <= SUMMED_BLOCK {
        return x.sum_dim(1);
    }
    let blocks = positions.div_ceil(SUMMED_BLOCK);
    // Zeros up to a whole number of blocks: they add nothing.
    let missing = blocks * SUMMED_BLOCK - positions;
    let whole = if missing > 0 {
        let zeros = Tensor::<3>::zeros([rows, missing, width], (&x.device(), x.dtype()));
        Tensor::cat(vec![x, zeros], 1)
    } else {
        x
    };
    sum_in_blocks(
        whole
            .reshape([rows, blocks, SUMMED_BLOCK, width])
            .sum_dim(2)
            .reshape([rows, blocks, width]),
    )
}

/// `?layer=K` values (None: GENEB's last layer) as hidden-state indices of `architecture`; an
/// error naming the model for a K outside its layers, or, on a GPU, for a layer whose
/// whole-sequence states no batch split shrinks and no buffer holds (Enformer's early tower
/// layers: the chunked tower never holds them whole), refused here rather than failed in the pass.
fn resolve_layers(
    model: &str,
    architecture: &dyn Arch,
    compute: &Compute,
    ks: &[Option<i64>],
) -> Result<Vec<usize>> {
    let layers = architecture.layers();
    let buffer_floats = match compute.kind {
        BackendKind::Wgpu => super::backend::max_buffer_floats(&compute.device),
        BackendKind::Cpu => usize::MAX,
    };
    ks.iter()
        .map(|&k| {
            let k = k.unwrap_or(spec::LAST_LAYER);
            let layer = spec::resolve_layer(k, layers).ok_or_else(|| {
                Error::in_file(
                    model,
                    format!(
                        "no layer {k}: {} has hidden states 0 (the embeddings' output) to \
                         {layers} (the last layer's): K must be from {} to {layers}",
                        architecture.family(),
                        -(layers as i64) - 1
                    ),
                )
            })?;
            let floats = architecture.unsplit_state_floats(layer);
            if floats > buffer_floats {
                return Err(Error::in_file(
                    model,
                    format!(
                        "layer {k}'s states hold {} MiB per sequence, more than this GPU binds \
                         in one buffer ({} MiB): probe that layer with --backend cpu",
                        (floats * 4) >> 20,
                        (buffer_floats * 4) >> 20
                    ),
                ));
            }
            Ok(layer)
        })
        .collect()
}

/// The widest single sequence `HfModel::warm_up` runs at load: CubeCL's workgroups stop
/// shrinking at 8 subgroups, 512 units where a GPU's subgroups are 64 wide.
const WARM_TOKENS: usize = 512;

/// The smallest width of the form 16 · 2^k or 24 · 2^k that holds `width` tokens: two shapes
/// per doubling, at most a third of a batch padding.
fn repeating_width(width: usize) -> usize {
    [16, 24]
        .into_iter()
        .map(|base| base * width.div_ceil(base).next_power_of_two())
        .min()
        .unwrap_or(width)
}

/// Enformer's extractor's `one_hot_seq` text: upper-cased, U → T, the middle `length`
/// characters of a longer sequence (`start = (L − length) // 2`), else the sequence between
/// `pad // 2` N on the left and the rest on the right.
pub fn centred(sequence: &str, length: usize) -> String {
    let upper = sequence.to_ascii_uppercase().replace('U', "T");
    let len = upper.len();
    if len >= length {
        let start = (len - length) / 2;
        return upper[start..start + length].to_string();
    }
    let left = (length - len) / 2;
    format!(
        "{}{upper}{}",
        "N".repeat(left),
        "N".repeat(length - len - left)
    )
}

/// `prefix` then `sequence` cut at the end to a multiple of `multiple` characters (Python's
/// `len` counts characters), GENERator's extractor's input.
pub fn trimmed_after_text(sequence: &str, multiple: usize, prefix: &str) -> String {
    let kept = sequence.chars().count() / multiple.max(1) * multiple.max(1);
    let mut out = String::with_capacity(prefix.len() + kept);
    out.push_str(prefix);
    out.extend(sequence.chars().take(kept));
    out
}

/// The windows of GENEB's SpliceBERT extractor (`_window_starts`): every `stride` from 0 while a
/// whole window fits, then one ending at the sequence's end unless the last already does; a
/// sequence of at most `size` is one window.
pub fn end_anchored_windows(len: usize, size: usize, stride: usize) -> Vec<std::ops::Range<usize>> {
    if len <= size {
        return std::iter::once(0..len).collect();
    }
    let mut starts: Vec<usize> = (0..=len - size).step_by(stride.max(1)).collect();
    if starts.last() != Some(&(len - size)) {
        starts.push(len - size);
    }
    starts
        .into_iter()
        .map(|start| start..start + size)
        .collect()
}

/// SpliceBERT's `_normalize_sequence`: upper case, U → T, the IUPAC ambiguity codes → N; any
/// other character is an error naming the sequence (the reference raises).
pub fn iupac_to_n(sequence: &str) -> Result<String> {
    let mut out = String::with_capacity(sequence.len());
    for c in sequence.chars() {
        let base = c.to_ascii_uppercase();
        out.push(match base {
            'A' | 'C' | 'G' | 'T' | 'N' => base,
            'U' => 'T',
            'R' | 'Y' | 'S' | 'W' | 'K' | 'M' | 'B' | 'D' | 'H' | 'V' => 'N',
            _ => {
                let shown: String = sequence.chars().take(24).collect();
                let more = if sequence.chars().count() > 24 {
                    "…"
                } else {
                    ""
                };
                return Err(Error::new(format!(
                    "sequence '{shown}{more}' ({} nt) has {c:?}, which is no IUPAC nucleotide \
                     code: SpliceBERT's extractor refuses it",
                    sequence.len()
                )));
            }
        });
    }
    Ok(out)
}

/// Reads a local model folder: config.json, the tokenizer files and the weights (nothing else,
/// so a folder that also holds TensorFlow or Flax weights is not read twice over). Without
/// `model.safetensors` or `pytorch_model.bin`, the first `.pth` or `.ckpt` file is the weights
/// (DNAGPT's and JanusDNA's published files).
#[cfg(not(target_arch = "wasm32"))]
pub fn read_folder(folder: &std::path::Path) -> Result<ModelFiles> {
    let names = crate::checkpoint::MODEL_FILE_NAMES;
    let name = folder.display().to_string();
    if !folder.is_dir() {
        return Err(Error::in_file(
            &name,
            "not a folder (give the model folder that holds config.json)",
        ));
    }
    let mut files = ModelFiles::new(&name);
    let [safetensors, pytorch] = names.weights;
    let wanted = [
        names.config,
        names.published_config,
        crate::checkpoint::MODEL_CARD,
    ]
    .into_iter()
    .chain(names.tokenizer)
    .chain(names.weights)
    .chain([safetensors::INDEX]);
    for file in wanted {
        let path = folder.join(file);
        if file == pytorch && files.contains(safetensors) {
            continue;
        }
        match crate::checkpoint::source::LocalFile::open(&path) {
            Ok(local) => files.insert_source(file, Box::new(local))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(cannot_read(&path, e)),
        }
    }
    let unsharded = names.weights.iter().any(|weights| files.contains(weights));
    if let Some(index) = files.get(safetensors::INDEX).filter(|_| !unsharded) {
        // Names checked to be .safetensors files of this folder before any is opened.
        let shards = safetensors::shard_names(&format!("{name}/{}", safetensors::INDEX), index)?;
        for shard in shards {
            let path = folder.join(&shard);
            let local = crate::checkpoint::source::LocalFile::open(&path)
                .map_err(|e| cannot_read(&path, e))?;
            files.insert_source(&shard, Box::new(local))?;
        }
    } else if !unsharded {
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
            let local = crate::checkpoint::source::LocalFile::open(path)
                .map_err(|e| cannot_read(path, e))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `_window_starts` of GENEB's SpliceBERT extractor, at 1,024 every 512.
    #[test]
    fn gpu_widths_come_from_two_shapes_per_doubling() {
        let widths: std::collections::BTreeSet<usize> = (1..=4096).map(repeating_width).collect();
        assert_eq!(
            widths.into_iter().collect::<Vec<_>>(),
            [
                16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096
            ]
        );
        for width in 1..=4096 {
            let padded = repeating_width(width);
            assert!(
                padded >= width && (width < 16 || 2 * padded <= 3 * width),
                "{width}"
            );
        }
    }

    #[test]
    fn windows_end_at_the_sequence_end_as_the_splicebert_extractor_places_them() {
        let starts = |len| -> Vec<usize> {
            end_anchored_windows(len, 1024, 512)
                .into_iter()
                .map(|r| r.start)
                .collect()
        };
        assert_eq!(end_anchored_windows(300, 1024, 512), vec![0..300]);
        assert_eq!(starts(1024), vec![0]);
        assert_eq!(starts(1025), vec![0, 1]);
        assert_eq!(starts(1500), vec![0, 476]);
        assert_eq!(starts(2048), vec![0, 512, 1024]);
        assert_eq!(starts(2600), vec![0, 512, 1024, 1536, 1576]);
        assert!(
            end_anchored_windows(2600, 1024, 512)
                .iter()
                .all(|r| r.len() == 1024)
        );
    }

    #[test]
    fn splicebert_input_is_upper_case_dna_with_ambiguity_codes_as_n() {
        assert_eq!(iupac_to_n("acguRYSWKMBDHVn").unwrap(), "ACGTNNNNNNNNNNN");
        let err = iupac_to_n("ACGT-A").unwrap_err().to_string();
        assert!(err.contains("'ACGT-A'") && err.contains("'-'"), "{err}");
    }

    /// The mutation check of the recipes, kept as a test: each fact flipped alone, the
    /// fixture's reference embeddings (the published code run with the extractor's recipe) are
    /// missed by far more than the 1e-4 they are met by.
    #[test]
    fn flipping_any_recipe_fact_misses_the_reference() {
        use crate::encoder::recipe::{Batching, Padding, Pooling, Truncation};
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models");
        // `raw`: the sequences as the fixture gives them, not through geneb's sequence readers.
        let worst = |name: &str, query: &str, raw: bool, flip: &dyn Fn(&mut Recipe)| -> f32 {
            let dir = fixtures.join(name);
            let spec = HfSpec::parse(&format!("hf:{}{query}", dir.display())).unwrap();
            let own = HfModel::from_files(
                &spec,
                read_folder(&dir).unwrap(),
                super::super::backend::cpu(),
            )
            .unwrap()
            .recipe;
            let mut flipped = *own;
            flip(&mut flipped);
            let model = HfModel::build(
                &spec,
                read_folder(&dir).unwrap(),
                super::super::backend::cpu(),
                Some(Box::leak(Box::new(flipped))),
            )
            .unwrap();
            let expected: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.join("pipeline.json")).unwrap()).unwrap();
            let sequences: Vec<String> = expected["sequences"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .map(|s| {
                    if raw {
                        s
                    } else {
                        crate::input::normalize_sequence(&s).unwrap()
                    }
                })
                .collect();
            let got = pollster::block_on(model.embed(&sequences)).unwrap();
            let want = expected["pooled"].as_array().unwrap();
            got.rows()
                .into_iter()
                .zip(want)
                .flat_map(|(row, want)| {
                    let want: Vec<f32> = want
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_f64().unwrap() as f32)
                        .collect();
                    row.iter()
                        .zip(want)
                        .map(|(a, b)| (a - b).abs())
                        .collect::<Vec<_>>()
                })
                .fold(0f32, f32::max)
        };
        let keep = |_: &mut Recipe| {};
        // (fixture, spec options, the flip in words, the flip)
        type Flip = (
            &'static str,
            &'static str,
            &'static str,
            Box<dyn Fn(&mut Recipe)>,
        );
        let flips: Vec<Flip> = vec![
            (
                "janus/w",
                "",
                "special tokens: the tokenizer's",
                Box::new(|r: &mut Recipe| r.special_tokens = SpecialTokens::Tokenizer),
            ),
            (
                "splicebert",
                "",
                "input as given",
                Box::new(|r: &mut Recipe| r.input = Input::AsGiven),
            ),
            // biofm.py: the column (non-pad count − 2) of left-padded rows run without the mask.
            (
                "biofm",
                "",
                "masked mean",
                Box::new(|r: &mut Recipe| r.pooling = Pooling::MaskedMean),
            ),
            (
                "biofm",
                "",
                "mask to the model",
                Box::new(|r: &mut Recipe| r.mask_to_model = true),
            ),
            (
                "biofm",
                "",
                "right padding",
                Box::new(|r: &mut Recipe| r.padding = Padding::Right),
            ),
            // generator.py: whole 6-mers after the `<s>` text.
            (
                "generator",
                "",
                "input as given",
                Box::new(|r: &mut Recipe| r.input = Input::AsGiven),
            ),
            (
                "splicebert",
                "",
                "no windows",
                Box::new(|r: &mut Recipe| r.truncation = Truncation::ModelMaximum),
            ),
            (
                "splicebert",
                "?window=1024,512",
                "no end-anchored window",
                Box::new(keep),
            ),
            (
                "hyena/tiny",
                "",
                "batches independent",
                Box::new(|r: &mut Recipe| r.batching = Batching::Independent),
            ),
            (
                "hyena/tiny",
                "",
                "masked mean",
                Box::new(|r: &mut Recipe| r.pooling = Pooling::MaskedMean),
            ),
            (
                "hyena/tiny",
                "",
                "right padding",
                Box::new(|r: &mut Recipe| r.padding = Padding::Right),
            ),
            (
                "caduceus/ph",
                "",
                "mask to the model",
                Box::new(|r: &mut Recipe| r.mask_to_model = true),
            ),
            (
                "caduceus/ps",
                "",
                "batches independent",
                Box::new(|r: &mut Recipe| r.batching = Batching::Independent),
            ),
            (
                "caduceus/ph",
                "",
                "right padding",
                Box::new(|r: &mut Recipe| r.padding = Padding::Right),
            ),
            (
                "plantcaduceus",
                "",
                "left padding",
                Box::new(|r: &mut Recipe| r.padding = Padding::Left),
            ),
            (
                "dnabert2",
                "",
                "[CLS] pooling",
                Box::new(|r: &mut Recipe| r.pooling = Pooling::ClsToken),
            ),
            (
                "genomics_fm",
                "",
                "masked mean",
                Box::new(|r: &mut Recipe| r.pooling = Pooling::MaskedMean),
            ),
            (
                "metagene",
                "",
                "masked mean",
                Box::new(|r: &mut Recipe| r.pooling = Pooling::MaskedMean),
            ),
            (
                "metagene",
                "",
                "batches independent",
                Box::new(|r: &mut Recipe| r.batching = Batching::Independent),
            ),
            // dnagpt.py's newest version: `<R>` before the sequence, the mean over its ids.
            (
                "dnagpt_hidden",
                "",
                "no special tokens",
                Box::new(|r: &mut Recipe| r.special_tokens = SpecialTokens::None),
            ),
            (
                "dnagpt_hidden",
                "",
                "unmasked mean",
                Box::new(|r: &mut Recipe| r.pooling = Pooling::UnmaskedMean),
            ),
        ];
        for (name, query, what, flip) in &flips {
            let raw = *what == "input as given";
            // A flip the architecture cannot run (Caduceus given a left-padded mask) panics:
            // that fails the comparison too.
            let off = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                worst(name, query, raw, flip.as_ref())
            }))
            .unwrap_or(f32::INFINITY);
            eprintln!("{name}{query}, {what}: max |Δ| = {off:.2e}");
            assert!(
                off > 1e-3,
                "{name}{query}: flipping to {what} still meets the reference ({off})"
            );
        }
    }

    /// A safetensors file of `matrices` f32 matrices of 1 GiB each and one small f32 vector,
    /// sparse on disk: only its header is ever read.
    fn sparse_checkpoint(name: &str, matrices: usize) -> Checkpoint {
        let side = 16_384usize;
        let each = (side * side * 4) as u64;
        let mut header = serde_json::Map::new();
        for i in 0..matrices {
            let start = i as u64 * each;
            header.insert(
                format!("layer.{i}.weight"),
                serde_json::json!({"dtype": "F32", "shape": [side, side], "data_offsets": [start, start + each]}),
            );
        }
        let end = matrices as u64 * each;
        header.insert(
            "norm.weight".into(),
            serde_json::json!({"dtype": "F32", "shape": [side], "data_offsets": [end, end + side as u64 * 4]}),
        );
        let header = serde_json::to_vec(&header).unwrap();
        let path =
            std::env::temp_dir().join(format!("geneb-{name}-{}.safetensors", std::process::id()));
        let mut file = std::fs::File::create(&path).unwrap();
        std::io::Write::write_all(&mut file, &(header.len() as u64).to_le_bytes()).unwrap();
        std::io::Write::write_all(&mut file, &header).unwrap();
        file.set_len(8 + header.len() as u64 + end + side as u64 * 4)
            .unwrap();
        let source = crate::checkpoint::source::LocalFile::open(&path).unwrap();
        let ckpt = safetensors::read(name, Box::new(source)).unwrap();
        std::fs::remove_file(&path).ok();
        ckpt
    }

    /// The page lets through f32 files of up to twice a tab's limit; the core holds their
    /// matrices in bf16 and refuses, from the header, those still over it.
    #[test]
    fn a_tab_takes_f32_weights_that_fit_once_held_in_half_and_refuses_the_rest_unread() {
        let vector = 16_384 * 4;
        let mut three = sparse_checkpoint("three-gib.safetensors", 3);
        three.hold_matrices_in(Held::F32);
        assert_eq!(three.held_bytes(), (3u64 << 30) + vector);
        let refused = fits_tab(&three, Held::F32).unwrap_err().to_string();
        assert!(
            refused.starts_with("three-gib.safetensors: its weights would take 3.0 GiB")
                && refused.contains("held in f32, over the 2.0 GiB")
                && refused.contains("nothing was read"),
            "{refused}"
        );
        three.hold_matrices_in(Held::Bf16);
        assert_eq!(three.held_bytes(), (3u64 << 29) + vector);
        fits_tab(&three, Held::Bf16).unwrap();

        let mut five = sparse_checkpoint("five-gib.safetensors", 5);
        five.hold_matrices_in(Held::Bf16);
        assert_eq!(five.held_bytes(), (5u64 << 29) + vector);
        let refused = fits_tab(&five, Held::Bf16).unwrap_err().to_string();
        assert!(
            refused.contains("2.5 GiB") && refused.contains("held in bf16"),
            "{refused}"
        );
    }
}
