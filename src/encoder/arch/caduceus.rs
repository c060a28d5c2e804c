//! Caduceus (Schiff et al. 2024; `kuleshov-group/caduceus-ph_*` and `caduceus-ps_*`,
//! `model_type` "caduceus") as the published HF code computes it with the settings those
//! checkpoints use (`fused_add_norm`, `rms_norm`): token embeddings → `n_layer` blocks of fused
//! residual-add + RMSNorm → bidirectional Mamba → final add + RMSNorm (no LM head).
//!
//! Bidirectional Mamba (`BiMambaWrapper`): one Mamba over the sequence, a second over the
//! reversed sequence, reversed back and added (or multiplied, `bidirectional_strategy`); with
//! `bidirectional_weight_tie` the second shares the first's in/out projections. The Mamba layer
//! itself is the shared block in `encoder::layers::mamba`.
//!
//! PS (`rcps`, reverse-complement parameter sharing): the embedding emits `[E(x), RC(E(rc(x)))]`
//! (rc = complement the ids through `complement_map`, reverse; RC of states = reverse positions
//! and channels), so the hidden state has 2·d_model channels; each block runs the same norm and
//! BiMamba on one half and on the RC of the other and concatenates. This follows the published
//! `RCPSMambaBlock` fused path literally, including that it normalises the *second* half as the
//! forward stream and the RC of the *first* half as the reverse-complement stream.
//!
//! The selective scan (`encoder::layers::mamba`) runs over host values on the CPU and by
//! doubling over chunks of positions on a GPU; PS runs its two streams as one stacked batch.
//!
//! Padding: the model is bidirectional, so padding must not enter the reverse direction. Every
//! reversal here (the reverse Mamba, the RC stream, the RC of the ids) reverses each sequence
//! within its own length, read from the attention mask (padding on the right); then real tokens
//! see exactly what they see when the sequence is run alone, as the reference runs it.
//!
//! Pooling in the GENEB reference (`embedding_pipeline/extractors/caduceus.py`):
//! `AutoModelForMaskedLM` with `output_hidden_states=True`; the embedding is
//! `hidden_states[-1]` (with `fused_add_norm` that is the final-norm output, the full 2·d_model
//! channels for PS — no RC averaging or conjoining) averaged over the tokenizer's attention mask
//! (bases plus the appended `[SEP]`), at batch size 1; only `input_ids` go to the model.

use super::{
    Arch, ArchSpec, Kept, Pooling, check_layers, epsilon, optional_size, padded_vocab,
    parse_config, size,
};
use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::encoder::layers::mamba::{Mamba, MambaShape, SsmConfig};
use crate::encoder::layers::{RmsNorm, config_error, param};
use crate::tokenize::TokenizerChoice;
use burn::tensor::module::embedding;
use burn::tensor::{Device, Int, Tensor, TensorData};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The context the published `*_seqlen-131k_*` checkpoints were trained at (2^17). The
/// architecture itself has no limit; a tokenizer's own `model_max_length` should take precedence.
const MAX_TOKENS: usize = 131_072;
pub const SPEC: ArchSpec = ArchSpec {
    name: family::CADUCEUS.architecture,
    family: family::CADUCEUS.name,
    serves: "kuleshov-group/caduceus-ph_*, caduceus-ps_*, PlantCaduceus_*",
    matches,
    tokenizer: TokenizerChoice::CaduceusOrFiles,
    poolings: &[Pooling::MaskedMean],
    load: |config, ckpt, compute| Ok(Box::new(Caduceus::load(config, ckpt, &compute.device)?)),
    recipe: &crate::encoder::recipe::CADUCEUS,
    published_config: None,
};

/// The `config.json` keys Caduceus's modeling code reads. Flags are optional booleans: the
/// published configs write some as null.
#[derive(Deserialize)]
struct Config {
    #[serde(deserialize_with = "size")]
    d_model: usize,
    #[serde(deserialize_with = "size")]
    n_layer: usize,
    #[serde(deserialize_with = "epsilon")]
    norm_epsilon: f64,
    #[serde(deserialize_with = "size")]
    vocab_size: usize,
    #[serde(default, deserialize_with = "optional_size")]
    pad_vocab_size_multiple: Option<usize>,
    rms_norm: Option<bool>,
    fused_add_norm: Option<bool>,
    rcps: Option<bool>,
    bidirectional: Option<bool>,
    bidirectional_strategy: Option<String>,
    bidirectional_weight_tie: Option<bool>,
    ssm_cfg: Option<SsmConfig>,
    complement_map: Option<BTreeMap<String, u64>>,
}

/// Whether `config.json` describes a Caduceus checkpoint.
pub fn matches(config: &Value) -> bool {
    config["model_type"] == "caduceus"
        || config["architectures"].as_array().is_some_and(|a| {
            a.iter()
                .any(|n| n.as_str().is_some_and(|n| n.starts_with("Caduceus")))
        })
}

pub struct Caduceus {
    /// Floats per token of the widest activation (in_proj's output, both RC streams).
    widest: usize,
    embeddings: Tensor<2>,
    /// RC-equivariant (PS): the complement of every token id, for the embedding's RC stream.
    complement: Option<Tensor<1, Int>>,
    layers: Vec<Layer>,
    norm_f: RmsNorm,
    d_model: usize,
}

struct Layer {
    norm: RmsNorm,
    mixer: BiMamba,
}

struct BiMamba {
    forward: Mamba,
    reverse: Option<Mamba>,
    multiply: bool,
}

impl Caduceus {
    /// Builds from config.json and the checkpoint on `device`, taking every tensor it uses;
    /// errors name a missing/mis-shaped tensor. (The caller calls `ckpt.finish()` afterwards.)
    pub fn load(config: &Value, ckpt: &mut Checkpoint, device: &Device) -> Result<Self> {
        let c: Config = parse_config(config)?;
        let (d_model, n_layer, eps) = (c.d_model, c.n_layer, c.norm_epsilon);
        let vocab = padded_vocab(c.vocab_size, c.pad_vocab_size_multiple.unwrap_or(1));
        for (key, value, why) in [
            (
                "rms_norm",
                c.rms_norm,
                "LayerNorm variants are not supported",
            ),
            (
                "fused_add_norm",
                c.fused_add_norm,
                "its hidden_states[-1] would not be the final output",
            ),
        ] {
            if value != Some(true) {
                return Err(config_error(&format!(
                    "'{key}' must be true, as in the published Caduceus checkpoints ({why})"
                )));
            }
        }
        let rcps = c.rcps == Some(true);
        let bidirectional = c.bidirectional != Some(false);
        let multiply = match c.bidirectional_strategy.as_deref() {
            None | Some("add") => false,
            Some("ew_multiply") => true,
            Some(other) => {
                return Err(config_error(&format!(
                    "bidirectional_strategy '{other}' is not one of add, ew_multiply"
                )));
            }
        };
        let tie = c.bidirectional_weight_tie != Some(false);
        let shape = MambaShape::from_config(&c.ssm_cfg.unwrap_or_default(), d_model)?;

        // A masked-LM checkpoint (`caduceus.backbone.…`) or a bare backbone (`backbone.…`).
        let prefix = ckpt
            .find_prefix(&["caduceus.", ""], "backbone.norm_f.weight")
            .unwrap_or("caduceus.");
        let p = format!("{prefix}backbone.");
        // The LM head (tied to the embedding, with its own copy of the complement map) is not
        // part of the embedding; the embedding's complement map is read from config.json.
        ckpt.skip_prefix("lm_head.");
        ckpt.skip(&format!("{p}embeddings.word_embeddings.complement_map"));
        let embedding_name = if rcps {
            format!("{p}embeddings.word_embeddings.embedding.weight")
        } else {
            format!("{p}embeddings.word_embeddings.weight")
        };
        let embeddings = param(ckpt, &embedding_name, [vocab, d_model], device)?;
        let complement = if rcps {
            let map = complement_map(c.complement_map.as_ref(), vocab)?;
            Some(Tensor::from_data(TensorData::new(map, [vocab]), device))
        } else {
            None
        };
        let n_layer = check_layers("n_layer", n_layer, ckpt, |i| {
            format!("{p}layers.{i}.norm.weight")
        })?;
        let mut layers = Vec::with_capacity(n_layer);
        for i in 0..n_layer {
            let layer = format!("{p}layers.{i}.");
            let mixer = if rcps {
                format!("{layer}mixer.submodule.")
            } else {
                format!("{layer}mixer.")
            };
            let forward = Mamba::load(ckpt, &format!("{mixer}mamba_fwd."), &shape, None, device)?;
            let reverse = if bidirectional {
                let shared = tie.then_some(&forward);
                Some(Mamba::load(
                    ckpt,
                    &format!("{mixer}mamba_rev."),
                    &shape,
                    shared,
                    device,
                )?)
            } else {
                None
            };
            layers.push(Layer {
                norm: RmsNorm::load(ckpt, &format!("{layer}norm"), d_model, eps, device)?,
                mixer: BiMamba {
                    forward,
                    reverse,
                    multiply,
                },
            });
        }
        Ok(Caduceus {
            widest: 2 * shape.d_inner * if rcps { 2 } else { 1 },
            embeddings,
            complement,
            layers,
            norm_f: RmsNorm::load(ckpt, &format!("{p}norm_f"), d_model, eps, device)?,
            d_model,
        })
    }
}

impl Arch for Caduceus {
    /// last_hidden_state [batch, tokens, hidden] for token ids [batch, tokens] and the
    /// attention mask [batch, tokens] (1 for real tokens, then 0 for right padding).
    fn pass(
        &self,
        input_ids: Tensor<2, Int>,
        attention_mask: Tensor<2>,
        kept: &mut Kept,
    ) -> Tensor<3> {
        let rev = Reverser::new(attention_mask);
        let d = self.d_model;
        let deepest = kept.deepest();
        let Some(complement) = &self.complement else {
            let mut h = embedding(self.embeddings.clone(), input_ids);
            let mut residual: Option<Tensor<3>> = None;
            for (i, layer) in self.layers.iter().enumerate().take(deepest) {
                kept.offer(i, &h);
                let sum = add(h, residual);
                h = layer.mixer.forward(layer.norm.forward(sum.clone()), &rev);
                residual = Some(sum);
            }
            if deepest == self.layers.len() {
                h = self.norm_f.forward(add(h, residual));
            }
            kept.offer(deepest, &h);
            return h;
        };

        let [batch, tokens] = input_ids.dims();
        let both_rev = rev.twice();
        let rc_ids = complement
            .clone()
            .select(0, rev.ids(input_ids.clone()).reshape([batch * tokens]))
            .reshape([batch, tokens]);
        let mut h = Tensor::cat(
            vec![
                embedding(self.embeddings.clone(), input_ids),
                rev.rc(embedding(self.embeddings.clone(), rc_ids)),
            ],
            2,
        );
        let mut residual: Option<Tensor<3>> = None;
        for (i, layer) in self.layers.iter().enumerate().take(deepest) {
            kept.offer(i, &h);
            let half = |x: &Tensor<3>, start| x.clone().narrow(2, start, d);
            // RCPSMambaBlock (fused): forward stream from the second half, RC from the first.
            let forward_sum = add(half(&h, d), residual.as_ref().map(|r| half(r, d)));
            let rc_sum = add(
                rev.rc(half(&h, 0)),
                residual.as_ref().map(|r| rev.rc(half(r, 0))),
            );
            let forward_in = layer.norm.forward(forward_sum.clone());
            let rc_in = layer.norm.forward(rc_sum.clone());
            // RCPSWrapper around the mixer: the RC stream is mixed in RC orientation. Both
            // streams share the mixer, so they go through it as one batch (half the scan steps).
            let both = layer
                .mixer
                .forward(Tensor::cat(vec![forward_in, rc_in], 0), &both_rev);
            let forward_out = both.clone().narrow(0, 0, batch);
            let rc_out = both.narrow(0, batch, batch);
            h = Tensor::cat(vec![forward_out, rev.rc(rc_out)], 2);
            residual = Some(Tensor::cat(vec![forward_sum, rev.rc(rc_sum)], 2));
        }
        if deepest < self.layers.len() {
            kept.offer(deepest, &h);
            return h;
        }
        // Final fused add + norm: first half forward, second half in RC orientation.
        let forward_sum = add(
            h.clone().narrow(2, 0, d),
            residual.as_ref().map(|r| r.clone().narrow(2, 0, d)),
        );
        let rc_sum = add(
            rev.rc(h.narrow(2, d, d)),
            residual.map(|r| rev.rc(r.narrow(2, d, d))),
        );
        let out = Tensor::cat(
            vec![
                self.norm_f.forward(forward_sum),
                rev.rc(self.norm_f.forward(rc_sum)),
            ],
            2,
        );
        kept.offer(deepest, &out);
        out
    }

    /// As Caduceus's code gives them (`output_hidden_states`): the embeddings, then what each
    /// layer passes on to the next (its mixer's output: Mamba blocks carry the residual apart),
    /// the last the final norm's output.
    fn layers(&self) -> usize {
        self.layers.len()
    }

    /// d_model, doubled for the RC-equivariant (PS) variant.
    fn widest_activation(&self) -> usize {
        self.widest
    }

    fn hidden_size(&self) -> usize {
        if self.complement.is_some() {
            2 * self.d_model
        } else {
            self.d_model
        }
    }

    fn token_rows(&self) -> usize {
        self.embeddings.dims()[0]
    }

    fn max_tokens(&self) -> usize {
        MAX_TOKENS
    }

    fn family(&self) -> &'static str {
        SPEC.family
    }
}

/// The fused residual add: `x + residual`, or `x` for the first block.
fn add(x: Tensor<3>, residual: Option<Tensor<3>>) -> Tensor<3> {
    match residual {
        Some(r) => x + r,
        None => x,
    }
}

/// `complement_map` from config.json as a table over the padded vocabulary (ids beyond the map
/// are their own complement, as `Caduceus.__init__` pads it).
fn complement_map(map: Option<&BTreeMap<String, u64>>, vocab: usize) -> Result<Vec<i64>> {
    let map =
        map.ok_or_else(|| config_error("rcps is true but there is no 'complement_map' object"))?;
    let mut table: Vec<i64> = (0..vocab as i64).collect();
    for (id, complement) in map {
        let id: usize = id
            .parse()
            .map_err(|_| config_error(&format!("complement_map key '{id}' is not a token id")))?;
        let complement = Some(*complement).filter(|&c| (c as usize) < vocab && id < vocab);
        let Some(complement) = complement else {
            return Err(config_error(&format!(
                "complement_map entry {id} is not a token id below the vocabulary size {vocab}"
            )));
        };
        table[id] = complement as i64;
    }
    Ok(table)
}

/// Reverses each sequence within its own length (right padding stays in place).
struct Reverser {
    /// For every position, the position it takes its value from, [batch, tokens].
    index: Tensor<2, Int>,
}

impl Reverser {
    fn new(mask: Tensor<2>) -> Reverser {
        let [_, tokens] = mask.dims();
        let device = mask.device();
        let position = Tensor::<1, Int>::arange(0..tokens as i64, &device).reshape([1, tokens]);
        // In integers, on the device: nothing is read back, and positions stay exact where
        // floats would not (f16 counts exactly only to 2,048).
        let mask = mask.int();
        let length = mask.clone().sum_dim(1);
        let mirrored = length - position.clone() - 1;
        // Real tokens take the mirrored position, padding its own.
        let index = mirrored * mask.clone() + position * (mask.neg() + 1);
        Reverser { index }
    }

    /// The same reversals for the batch stacked on itself.
    fn twice(&self) -> Reverser {
        Reverser {
            index: Tensor::cat(vec![self.index.clone(), self.index.clone()], 0),
        }
    }

    fn apply(&self, x: Tensor<3>) -> Tensor<3> {
        let [batch, tokens, channels] = x.dims();
        let index = self
            .index
            .clone()
            .unsqueeze_dim::<3>(2)
            .expand([batch, tokens, channels]);
        x.gather(1, index)
    }

    fn ids(&self, ids: Tensor<2, Int>) -> Tensor<2, Int> {
        ids.gather(1, self.index.clone())
    }

    /// Reverse complement of states: positions reversed, channels reversed.
    fn rc(&self, x: Tensor<3>) -> Tensor<3> {
        self.apply(x).flip([2])
    }
}

impl BiMamba {
    fn forward(&self, x: Tensor<3>, rev: &Reverser) -> Tensor<3> {
        let Some(reverse) = &self.reverse else {
            return self.forward.forward(x);
        };
        let backward = rev.apply(reverse.forward(rev.apply(x.clone())));
        let forward = self.forward.forward(x);
        if self.multiply {
            forward * backward
        } else {
            forward + backward
        }
    }
}
