//! eccDNAMamba (`eccdnamamba_weights` on GENEB's leaderboard): the `BiMambaForMaskedLM` of
//! zzq1zh/GenAI-Lab's `BiMambaForMaskedLM.py` (the file GENEB's extractor imports from its
//! `utility_modules/GenAI_Lab_project`; its versions since 5643d80 compute the same, 37c717b the
//! latest) over mamba_ssm 2.2.4's `MambaLMHeadModel` with Mamba-2 layers (the config is
//! `state-spaces/mamba2-130m`'s, read through transformers' `Mamba2Config`).
//!
//! `token_embedding(ids)` goes through two Mamba-2 backbones: one over the batch as it is, one
//! over the batch flipped along the positions (`torch.flip(…, dims=[1])`: the whole padded row,
//! so right padding comes first), flipped back. Each backbone is mamba_ssm's `MixerModel` whose
//! forward GenAI-Lab replaces: per block, residual add → RMSNorm → Mamba2 → residual add →
//! RMSNorm → gated MLP (fc1's first half times SiLU of its second, fc2), then both the block's
//! output and the residual multiplied by the (flipped) attention mask; finally the residual add
//! and `norm_f`. The two outputs are concatenated and projected by `lm_head_proj` [2·d → d]: that
//! projection is the `hidden_states` the extractor pools. Every RMSNorm has mamba_ssm's ε 1e-5.
//!
//! Padding reaches the states: the flipped stream scans the padding before the sequence, and a
//! padded position's conv bias feeds the state. So, as GENEB ran it (`--batch_size 4`), a
//! sequence's embedding depends on its batch-mates (the recipe's file-order batches).
//!
//! Layer K (`hidden_states`) follows the backbones' blocks (the reference keeps no per-layer
//! states): for K < L, the two streams' residual sums entering block K+1 (the sum mamba_ssm's
//! next block normalises; K = 0 the embeddings), the backward one flipped back, concatenated
//! [batch, tokens, 2·d]; K = L the projection the extractor pools (today's states).

use super::{Arch, ArchSpec, Kept, Pooling, check_layers, parse_config, size};
use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::encoder::layers::mamba::{Mamba2, Mamba2Config};
use crate::encoder::layers::{
    EmbeddingTable, Linear, RmsNorm, checkpoint_prefix, config_error, silu,
};
use crate::tokenize::TokenizerChoice;
use burn::tensor::{Device, Int, Tensor};
use serde::Deserialize;

/// mamba_ssm's `norm_epsilon` (MixerModel's default: `convert_hf_config_to_mamba` passes none).
const NORM_EPS: f64 = 1e-5;
/// The model has no length limit and the extractor cuts only at the tokenizer's
/// `model_max_length` (none in the published tokenizer); this only bounds one pass's memory.
const MAX_TOKENS: usize = 1 << 20;
/// `BiMambaForMaskedLM` saved whole, or inside a wrapper under `bimamba.` (`base_model_prefix`).
const PREFIXES: [&str; 2] = ["", "bimamba."];

pub const SPEC: ArchSpec = ArchSpec {
    name: family::ECCDNAMAMBA.architecture,
    family: family::ECCDNAMAMBA.name,
    serves: "eccDNAMamba (zzq1zh/eccDNAMamba's published weights)",
    matches,
    tokenizer: TokenizerChoice::Files,
    poolings: &[Pooling::MaskedMean],
    load: |config, ckpt, compute| Ok(Box::new(EccDnaMamba::load(config, ckpt, &compute.device)?)),
    recipe: &crate::encoder::recipe::ECCDNAMAMBA,
    published_config: None,
};

/// The `config.json` keys `convert_hf_config_to_mamba` reads, with its fallbacks.
#[derive(Deserialize)]
struct Config {
    #[serde(deserialize_with = "size")]
    d_model: usize,
    #[serde(default, deserialize_with = "super::optional_size")]
    n_layer: Option<usize>,
    #[serde(default, deserialize_with = "super::optional_size")]
    num_hidden_layers: Option<usize>,
    #[serde(deserialize_with = "size")]
    vocab_size: usize,
    /// `getattr(hf_config, "intermediate_size", 4 * d_model)`: transformers' `Mamba2Config`
    /// has none, so the gated MLP is 4 × d_model wide.
    #[serde(default, deserialize_with = "super::optional_size")]
    intermediate_size: Option<usize>,
    #[serde(default)]
    ssm_cfg: Mamba2Config,
    #[serde(default)]
    attn_layer_idx: Vec<serde_json::Value>,
    rms_norm: Option<bool>,
}

/// Whether `config.json` describes GenAI-Lab's BiMamba: transformers' `mamba2` config saved by
/// `BiMambaForMaskedLM`, with mamba_ssm's own keys (`d_model`, `ssm_cfg`).
pub fn matches(config: &serde_json::Value) -> bool {
    let names_it = config["architectures"]
        .as_array()
        .is_some_and(|a| a.iter().any(|n| n.as_str() == Some("BiMambaForMaskedLM")));
    names_it && config.get("d_model").is_some() && config.get("ssm_cfg").is_some()
}

struct Block {
    norm: RmsNorm,
    mixer: Mamba2,
    norm2: RmsNorm,
    /// `GatedMLP.fc1`'s two halves: the value, then the gate.
    value: Linear,
    gate: Linear,
    fc2: Linear,
}

/// One direction: `MixerModel` with GenAI-Lab's masked forward.
struct Backbone {
    blocks: Vec<Block>,
    norm_f: RmsNorm,
}

pub struct EccDnaMamba {
    token_embedding: EmbeddingTable,
    forward_stream: Backbone,
    backward_stream: Backbone,
    lm_head_proj: Linear,
    d_model: usize,
    intermediate: usize,
}

impl EccDnaMamba {
    /// Builds from config.json and the checkpoint on `device`, taking every tensor it uses;
    /// errors name a missing or mis-shaped tensor. (The caller calls `ckpt.finish()` afterwards.)
    pub fn load(
        config: &serde_json::Value,
        ckpt: &mut Checkpoint,
        device: &Device,
    ) -> Result<Self> {
        let c: Config = parse_config(config)?;
        if !c.attn_layer_idx.is_empty() {
            return Err(config_error(
                "attn_layer_idx: attention layers are not supported (eccDNAMamba has none)",
            ));
        }
        if c.rms_norm == Some(false) {
            return Err(config_error(
                "rms_norm false (LayerNorm blocks) is not supported (eccDNAMamba's are RMSNorm)",
            ));
        }
        let d = c.d_model;
        let intermediate = c.intermediate_size.unwrap_or(4 * d);
        // GatedMLP rounds its width up to a multiple of 128.
        let intermediate = intermediate.div_ceil(128) * 128;
        let layers = c.n_layer.or(c.num_hidden_layers).unwrap_or(12);
        let probe = "token_embedding.weight";
        let prefix = checkpoint_prefix(ckpt, &PREFIXES, probe, "BiMamba")?;
        let token_embedding =
            EmbeddingTable::load(ckpt, &format!("{prefix}{probe}"), [c.vocab_size, d], device)?;
        let mut backbone = |stream: &str| -> Result<Backbone> {
            let p = format!("{prefix}{stream}.");
            // The backbone's own embedding and LM head are not used: BiMamba passes its
            // token_embedding in and projects the two streams itself.
            ckpt.skip(&format!("{p}backbone.embedding.weight"));
            ckpt.skip(&format!("{p}lm_head.weight"));
            let layers = check_layers("n_layer", layers, ckpt, |i| {
                format!("{p}backbone.layers.{i}.mlp.fc2.weight")
            })?;
            let mut blocks = Vec::with_capacity(layers);
            for i in 0..layers {
                let l = format!("{p}backbone.layers.{i}.");
                let [value, gate] = Linear::load_parts(
                    ckpt,
                    &format!("{l}mlp.fc1"),
                    d,
                    intermediate,
                    false,
                    device,
                )?;
                blocks.push(Block {
                    norm: RmsNorm::load(ckpt, &format!("{l}norm"), d, NORM_EPS, device)?,
                    mixer: Mamba2::load(ckpt, &format!("{l}mixer."), &c.ssm_cfg, d, device)?,
                    norm2: RmsNorm::load(ckpt, &format!("{l}norm2"), d, NORM_EPS, device)?,
                    value,
                    gate,
                    fc2: Linear::load(
                        ckpt,
                        &format!("{l}mlp.fc2"),
                        intermediate,
                        d,
                        false,
                        device,
                    )?,
                });
            }
            Ok(Backbone {
                blocks,
                norm_f: RmsNorm::load(ckpt, &format!("{p}backbone.norm_f"), d, NORM_EPS, device)?,
            })
        };
        let forward_stream = backbone("mamba_forward")?;
        let backward_stream = backbone("mamba_backward")?;
        Ok(EccDnaMamba {
            token_embedding,
            forward_stream,
            backward_stream,
            lm_head_proj: Linear::load(
                ckpt,
                &format!("{prefix}lm_head_proj"),
                2 * d,
                d,
                false,
                device,
            )?,
            d_model: d,
            intermediate,
        })
    }
}

impl Backbone {
    /// x [batch, tokens, d] and the mask [batch, tokens, 1] through the first `blocks` blocks:
    /// the final norm's output after the last block, else the residual sum the next block
    /// reads. `keep` sees the sum entering each block run.
    fn run(
        &self,
        mut hidden: Tensor<3>,
        mask: &Tensor<3>,
        blocks: usize,
        mut keep: impl FnMut(usize, &Tensor<3>),
    ) -> Tensor<3> {
        let mut residual: Option<Tensor<3>> = None;
        for (i, block) in self.blocks.iter().enumerate().take(blocks) {
            let sum = match residual {
                Some(r) => hidden + r,
                None => hidden,
            };
            keep(i, &sum);
            let mixed = block.mixer.forward(block.norm.forward(sum.clone()));
            let sum = mixed + sum;
            let normed = block.norm2.forward(sum.clone());
            let gated = block.value.forward(normed.clone()) * silu(block.gate.forward(normed));
            hidden = block.fc2.forward(gated) * mask.clone();
            residual = Some(sum * mask.clone());
        }
        let sum = match residual {
            Some(r) => hidden + r,
            None => hidden,
        };
        if blocks < self.blocks.len() {
            sum
        } else {
            self.norm_f.forward(sum)
        }
    }
}

impl Arch for EccDnaMamba {
    /// `lm_head_proj(cat(forward, flip(backward(flip(x)))))` [batch, tokens, d_model].
    fn pass(
        &self,
        input_ids: Tensor<2, Int>,
        attention_mask: Tensor<2>,
        kept: &mut Kept,
    ) -> Tensor<3> {
        let [batch, tokens] = input_ids.dims();
        let x = self.token_embedding.forward(input_ids);
        let mask = attention_mask.reshape([batch, tokens, 1]);
        let layers = self.forward_stream.blocks.len();
        let blocks = kept.deepest().min(layers);
        let (mut forward_states, mut backward_states) = (Vec::new(), Vec::new());
        let forward = self.forward_stream.run(x.clone(), &mask, blocks, |i, sum| {
            if kept.wants(i) {
                forward_states.push((i, sum.clone()));
            }
        });
        let backward = self
            .backward_stream
            .run(x.flip([1]), &mask.flip([1]), blocks, |i, sum| {
                if kept.wants(i) {
                    backward_states.push(sum.clone());
                }
            });
        let both = |forward, backward: Tensor<3>| Tensor::cat(vec![forward, backward.flip([1])], 2);
        for ((i, forward), backward) in forward_states.into_iter().zip(backward_states) {
            kept.offer(i, &both(forward, backward));
        }
        let deepest = match blocks == layers {
            true => self.lm_head_proj.forward(both(forward, backward)),
            false => both(forward, backward),
        };
        kept.offer(blocks, &deepest);
        deepest
    }

    /// BiMambaForMaskedLM's `hidden_states` is its last state only, so its blocks: after each
    /// of the L blocks of both streams, each stream's residual sum (what the next block reads,
    /// the embeddings at 0), the forward one and the backward one flipped back side by side;
    /// the last, `lm_head_proj` of the two final norms' outputs (today's embedding).
    fn layers(&self) -> usize {
        self.forward_stream.blocks.len()
    }

    /// The two streams side by side below the last layer, the projection at it.
    fn hidden_size_at(&self, layer: usize) -> usize {
        match layer < self.forward_stream.blocks.len() {
            true => 2 * self.d_model,
            false => self.d_model,
        }
    }

    fn hidden_size(&self) -> usize {
        self.d_model
    }

    fn token_rows(&self) -> usize {
        self.token_embedding.rows()
    }

    fn max_tokens(&self) -> usize {
        MAX_TOKENS
    }

    /// Floats per token of the widest activation: the gated MLP's two halves.
    fn widest_activation(&self) -> usize {
        2 * self.intermediate
    }

    fn family(&self) -> &'static str {
        SPEC.family
    }
}
