//! JanusDNA (Duan et al. 2025; `Qihao-Duan/JanusDNA`, `model_type` "JanusDNA"; GENEB's
//! `JanusDNA_72_w` and `_wo`) as its published `JanusDNAModel` computes it with the settings of
//! its pretraining scripts (`layer_fusion` false, `final_attention` with the "pool" fusion).
//!
//! The embedded sequence and its reversal run as two separate streams through every layer, each
//! causal in its own direction: a Mamba layer (`BiJanusDNAMambaSeperateWrapper`) gives each
//! stream its own RMSNorm → Jamba-style Mamba mixer (Δ, B, C RMS-normalised; the reverse mixer
//! shares the forward one's in/out projections) → residual → RMSNorm → feed-forward (a gated
//! SiLU MLP, or on every `expert_layer_period`-th layer a top-k mixture of such experts with
//! unrenormalised softmax weights) → residual. The attention layer that `attn_layer_period` /
//! `attn_layer_offset` place (the `_w` model's layer 4) is the same with causal softmax
//! attention instead of the mixer (no positions: Jamba has none). Then the final "Janus"
//! attention runs over both streams at once, the reverse one flipped back: position p of the
//! forward stream sees forward positions ≤ p and reverse positions ≥ p + 2, position p of the
//! reverse stream reverse positions ≥ p and forward ones ≤ p − 2, so that fusing forward p − 1
//! with reverse p + 1 gives a state for token p that never saw it. Its heads are zero-padded
//! from hidden/heads to `flex_attn_n_embd`/heads channels, which leaves the products alone but
//! sets flex_attention's default scale to 1/√(flex_attn_n_embd/heads). Then that fusion and the
//! final RMSNorm; checkpoints made after 2025-08-01 add `final_mlp` with a residual.
//!
//! As GENEB's extractor runs it (`embedding_pipeline/extractors/janusdna.py`): CaduceusTokenizer
//! without special tokens, padded on the right with [PAD] to 1,024 tokens (the published
//! checkpoints' training length), the attention mask passed, so that the published
//! flash-attention path zeroes the mid attention's output on the masked positions of each
//! stream (the same mask for the reverse stream, not flipped); `final_mlp` replaced by
//! `nn.Identity()`, so the output is the final norm's plus itself; the masked mean over the
//! attention mask. Every position therefore costs the same whatever the sequence's length.
//! The folder is read as the extractor reads it: the `{"config": …}` that JanusDNA's training
//! writes (`published_config`) and the Lightning checkpoint's `state_dict`, prefixes stripped.
//!
//! The mixture of experts runs as the reference runs it on the CPU (each expert on the tokens
//! routed to it). On a GPU it is computed densely instead: every expert on every token, the
//! unselected ones weighted by zero — (experts / k)× the arithmetic, but two matrix products per
//! layer with nothing read back mid-pass.

use super::{
    Arch, ArchSpec, Kept, Pooling, check_layers, epsilon, padded_vocab, parse_config, size,
};
use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::encoder::layers::mamba::{Mamba, MambaShape};
use crate::encoder::layers::{
    Linear, RmsNorm, attention, causal_bias, config_error, head_dim, host_values, param, silu,
    split_heads, upload,
};
use crate::tokenize::TokenizerChoice;
use burn::tensor::module::embedding;
use burn::tensor::{Device, IndexingUpdateOp, Int, Tensor, TensorData};
use serde::Deserialize;
use serde_json::Value;

/// The length GENEB's extractor pads every JanusDNA input to.
const PADDED_LENGTH: usize = 1024;
/// CaduceusTokenizer's [PAD].
const PAD_ID: i64 = 4;

pub const SPEC: ArchSpec = ArchSpec {
    name: family::JANUSDNA.architecture,
    family: family::JANUSDNA.name,
    serves: "JanusDNA_72 with and without mid-attention (Qihao-Duan/JanusDNA)",
    matches,
    tokenizer: TokenizerChoice::Characters { upper_case: true },
    poolings: &[Pooling::MaskedMean],
    load: |config, ckpt, compute| Ok(Box::new(Janus::load(config, ckpt, &compute.device)?)),
    recipe: &crate::encoder::recipe::JANUSDNA,
    published_config: None,
};

/// The `config.json` keys `JanusDNAModel` reads for the layout geneb runs.
#[derive(Deserialize)]
struct Config {
    #[serde(deserialize_with = "size")]
    vocab_size: usize,
    #[serde(default = "eight", deserialize_with = "size")]
    pad_vocab_size_multiple: usize,
    #[serde(deserialize_with = "size")]
    hidden_size: usize,
    #[serde(deserialize_with = "size")]
    intermediate_size: usize,
    #[serde(deserialize_with = "size")]
    num_hidden_layers: usize,
    #[serde(deserialize_with = "size")]
    num_attention_heads: usize,
    num_key_value_heads: Option<usize>,
    #[serde(deserialize_with = "size")]
    flex_attn_n_embd: usize,
    #[serde(deserialize_with = "size")]
    num_experts: usize,
    #[serde(deserialize_with = "size")]
    num_experts_per_tok: usize,
    #[serde(deserialize_with = "size")]
    expert_layer_period: usize,
    #[serde(deserialize_with = "size")]
    expert_layer_offset: usize,
    #[serde(deserialize_with = "size")]
    attn_layer_period: usize,
    #[serde(deserialize_with = "size")]
    attn_layer_offset: usize,
    #[serde(deserialize_with = "size")]
    mamba_d_state: usize,
    #[serde(deserialize_with = "size")]
    mamba_d_conv: usize,
    #[serde(deserialize_with = "size")]
    mamba_expand: usize,
    #[serde(deserialize_with = "size")]
    mamba_dt_rank: usize,
    mamba_conv_bias: bool,
    mamba_proj_bias: bool,
    #[serde(deserialize_with = "epsilon")]
    rms_norm_eps: f64,
    hidden_act: String,
    bidirectional: bool,
    bidirectional_weight_tie: bool,
    layer_fusion: bool,
    final_attention: bool,
    layer_fusion_strategy: Option<String>,
    mid_single_direction_attention: bool,
    final_attention_class: String,
    #[serde(default)]
    flexattn_fullattn: bool,
    #[serde(default)]
    attention_mask: bool,
    #[serde(default = "yes")]
    is_causal: bool,
}

fn eight() -> usize {
    8
}

fn yes() -> bool {
    true
}

impl Config {
    /// Refuses what the published checkpoints do not use, naming the key.
    fn check(&self) -> Result<()> {
        let widths = [
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_attention_heads", self.num_attention_heads),
            ("num_experts", self.num_experts),
            ("mamba_d_state", self.mamba_d_state),
            ("mamba_d_conv", self.mamba_d_conv),
            ("mamba_expand", self.mamba_expand),
            ("mamba_dt_rank", self.mamba_dt_rank),
        ];
        if let Some((key, _)) = widths.iter().find(|(_, width)| *width == 0) {
            return Err(config_error(&format!(
                "'{key}' is 0: no JanusDNA layer is that narrow"
            )));
        }
        let required = [
            ("bidirectional", self.bidirectional, true),
            (
                "bidirectional_weight_tie",
                self.bidirectional_weight_tie,
                true,
            ),
            ("layer_fusion", self.layer_fusion, false),
            ("final_attention", self.final_attention, true),
            (
                "mid_single_direction_attention",
                self.mid_single_direction_attention,
                true,
            ),
            ("flexattn_fullattn", self.flexattn_fullattn, false),
            ("attention_mask", self.attention_mask, false),
            ("is_causal", self.is_causal, true),
        ];
        for (key, value, published) in required {
            if value != published {
                return Err(config_error(&format!(
                    "'{key}' must be {published}, as in the published JanusDNA checkpoints"
                )));
            }
        }
        if self.layer_fusion_strategy.as_deref() != Some("pool") {
            return Err(config_error(
                "'layer_fusion_strategy' must be \"pool\", as in the published JanusDNA checkpoints",
            ));
        }
        if self.final_attention_class != "flex_attention" {
            return Err(config_error(
                "'final_attention_class' must be \"flex_attention\", as in the published \
                 JanusDNA checkpoints",
            ));
        }
        if self.hidden_act != "silu" {
            return Err(config_error(&format!(
                "hidden_act '{}': JanusDNA's checkpoints use silu",
                self.hidden_act
            )));
        }
        if self
            .num_key_value_heads
            .is_some_and(|kv| kv != self.num_attention_heads)
        {
            return Err(config_error(
                "'num_key_value_heads' must equal num_attention_heads (grouped-query attention is \
                 not supported)",
            ));
        }
        let experts = self.num_experts;
        if self.num_experts_per_tok == 0 || self.num_experts_per_tok > experts {
            return Err(config_error(&format!(
                "'num_experts_per_tok' {} is not between 1 and num_experts {experts}",
                self.num_experts_per_tok
            )));
        }
        let heads = self.num_attention_heads;
        if self.flex_attn_n_embd < self.hidden_size
            || head_dim(self.flex_attn_n_embd, heads).is_err()
        {
            return Err(config_error(&format!(
                "'flex_attn_n_embd' {} must be at least hidden_size and divisible by \
                 num_attention_heads {heads}",
                self.flex_attn_n_embd
            )));
        }
        Ok(())
    }

    /// `layers_num_experts`: experts on this layer (1 = a plain MLP).
    fn is_expert_layer(&self, i: usize) -> bool {
        self.expert_layer_period != 0
            && self.num_experts > 1
            && i % self.expert_layer_period == self.expert_layer_offset
    }

    /// `layers_block_type`.
    fn is_attention_layer(&self, i: usize) -> bool {
        self.attn_layer_period != 0 && i % self.attn_layer_period == self.attn_layer_offset
    }
}

/// `JanusDNAConfig`'s defaults (`janusdna/configuration_janusdna.py`) for the keys geneb reads:
/// the `{"config": …}` JanusDNA's training writes holds only what its Hydra config sets, and
/// the extractor builds `JanusDNAConfig(**cfg)` from it.
fn config_defaults() -> Value {
    serde_json::json!({
        "vocab_size": 6, "pad_vocab_size_multiple": 8, "hidden_size": 1024,
        "intermediate_size": 1024, "num_hidden_layers": 32, "num_attention_heads": 32,
        "flex_attn_n_embd": 0, "num_experts": 16, "num_experts_per_tok": 2,
        "expert_layer_period": 2, "expert_layer_offset": 1, "attn_layer_period": 8,
        "attn_layer_offset": 4, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2,
        "mamba_dt_rank": "auto", "mamba_conv_bias": true, "mamba_proj_bias": false,
        "rms_norm_eps": 1e-6, "hidden_act": "silu", "bidirectional": true,
        "bidirectional_weight_tie": true, "layer_fusion": false, "final_attention": false,
        "layer_fusion_strategy": "pool", "mid_single_direction_attention": false,
        "final_attention_class": "flex_attention", "flexattn_fullattn": false,
        "attention_mask": false, "is_causal": true,
    })
}

/// The config as `JanusDNAConfig` holds it: its defaults under the file's keys, `mamba_dt_rank`
/// "auto" as ⌈hidden_size / 16⌉, and `bidirectional` read as the extractor reads it (the
/// published Hydra file says `bidirectional: true,`, which YAML reads as the string "true,").
fn as_janus_config(config: &Value) -> Value {
    let mut out = config_defaults();
    if let (Some(out), Some(given)) = (out.as_object_mut(), config.as_object()) {
        out.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    if out["mamba_dt_rank"] == "auto"
        && let Some(hidden) = out["hidden_size"].as_u64()
    {
        out["mamba_dt_rank"] = hidden.div_ceil(16).into();
    }
    if let Some(text) = out["bidirectional"].as_str() {
        // `str(cfg["bidirectional"]).strip().lower().strip(",") == "true"`
        out["bidirectional"] = (text.trim().to_lowercase().trim_matches(',') == "true").into();
    }
    out
}

/// The `{"config": {…}}` JanusDNA's `train.py` saves beside its checkpoint (what GENEB's
/// extractor reads, `raw["config"]`) as a flat config.json declaring the model type, as
/// `JanusDNAConfig` declares it; None for any other JSON.
pub fn unwrap_published_config(file: &Value) -> Option<Value> {
    let inner = file.get("config")?.as_object()?;
    let mut config = Value::Object(inner.clone());
    config["model_type"] = "JanusDNA".into();
    Some(config)
}

/// Whether `config.json` describes a JanusDNA checkpoint.
pub fn matches(config: &Value) -> bool {
    config["model_type"] == "JanusDNA"
        || config["architectures"].as_array().is_some_and(|a| {
            a.iter()
                .any(|n| n.as_str().is_some_and(|n| n.starts_with("JanusDNA")))
        })
}

pub struct Janus {
    embeddings: Tensor<2>,
    layers: Vec<Layer>,
    final_attention: Block,
    final_norm: RmsNorm,
    hidden: usize,
    /// What the load noted (`Arch::notes`).
    notes: Vec<String>,
    widest: usize,
}

/// One layer: the forward and the reverse stream's own block.
struct Layer {
    forward: Block,
    reverse: Block,
}

/// RMSNorm → mixer → residual → RMSNorm → feed-forward → residual.
struct Block {
    input_norm: RmsNorm,
    mixer: Mixer,
    feed_forward_norm: RmsNorm,
    feed_forward: FeedForward,
}

#[allow(
    clippy::large_enum_variant,
    reason = "one value per layer, built once: its size costs nothing"
)]
enum Mixer {
    Mamba(Mamba),
    Attention(Attention),
}

/// How an attention layer weighs: its heads, scale and additive mask [1, 1, n, n] (a tensor
/// handle, shared by the layers that use the same mask).
#[derive(Clone)]
struct Masking {
    heads: usize,
    scale: f64,
    bias: Tensor<4>,
}

/// Bias-free q/k/v/o attention.
struct Attention {
    q: Linear,
    k: Linear,
    v: Linear,
    o: Linear,
    masking: Masking,
}

#[allow(
    clippy::large_enum_variant,
    reason = "one value per layer, built once: its size costs nothing"
)]
enum FeedForward {
    /// `JanusDNAMLP`: down(SiLU(gate x) · up x), gate and up as one product.
    Gated { gate_up: Linear, down: Linear },
    /// `JanusDNASparseMoeBlock` on a GPU, densely: every expert's gate and up in one product,
    /// their downs stacked into one ([experts·intermediate] → hidden).
    DenseExperts {
        router: Linear,
        gate_up: Linear,
        down: Linear,
        experts: usize,
        top_k: usize,
    },
    /// `JanusDNASparseMoeBlock` on the CPU, as the reference runs it: each expert on the tokens
    /// routed to it, added in expert order.
    RoutedExperts {
        router: Linear,
        /// Each expert's (gate and up, down).
        experts: Vec<(Linear, Linear)>,
        top_k: usize,
    },
}

impl Janus {
    /// Builds from config.json and the checkpoint on `device`, taking every tensor it uses.
    pub fn load(config: &Value, ckpt: &mut Checkpoint, device: &Device) -> Result<Self> {
        let c: Config = parse_config(&as_janus_config(config))?;
        c.check()?;
        let (hidden, eps, heads) = (c.hidden_size, c.rms_norm_eps, c.num_attention_heads);
        // The mid attention layers: causal within one stream, 1/√head_dim.
        let causal = Masking {
            heads,
            scale: 1.0 / (head_dim(hidden, heads)? as f64).sqrt(),
            bias: causal_bias(PADDED_LENGTH, device),
        };
        // The names as GENEB's extractor cleans them: `model.model.` or `model.` stripped (the
        // Lightning module, `JanusDNAForCausalLM`), then `module.` (a DDP wrapper); the LM head
        // and the Lightning metrics' state are not part of the embedding.
        let prefix = ckpt
            .find_prefix(
                &[
                    "model.model.",
                    "model.model.module.",
                    "model.",
                    "model.module.",
                    "module.",
                    "",
                ],
                "final_layernorm.weight",
            )
            .unwrap_or("model.");
        for head in ["lm_head.", "model.lm_head.", "model.module.lm_head."] {
            ckpt.skip_prefix(head);
        }
        let metrics: Vec<String> = ckpt
            .names()
            .filter(|n| {
                ["train_", "val_", "test_"]
                    .iter()
                    .any(|split| n.starts_with(&format!("{split}torchmetrics.")))
            })
            .map(String::from)
            .collect();
        for name in metrics {
            ckpt.skip(&name);
        }
        // The extractor loads with `strict=False`: a tensor the checkpoint lacks would run at
        // its random initialisation. geneb names them all and refuses the model.
        ckpt.collect_missing();
        let vocab = padded_vocab(c.vocab_size, c.pad_vocab_size_multiple);
        let embeddings = param(
            ckpt,
            &format!("{prefix}embed_tokens.weight"),
            [vocab, hidden],
            device,
        )?;
        let mamba = MambaShape {
            d_model: hidden,
            d_inner: c.mamba_expand * hidden,
            d_state: c.mamba_d_state,
            d_conv: c.mamba_d_conv,
            dt_rank: c.mamba_dt_rank,
            bias: c.mamba_proj_bias,
            conv_bias: c.mamba_conv_bias,
            inner_norm_eps: Some(eps),
        };
        let layer_name = |i: usize| {
            if c.is_attention_layer(i) {
                format!("{prefix}layers.{i}.attn.")
            } else {
                format!("{prefix}layers.{i}.mamba_module.")
            }
        };
        let n_layer = check_layers("num_hidden_layers", c.num_hidden_layers, ckpt, |i| {
            format!("{}input_layernorm_fwd.weight", layer_name(i))
        })?;
        let mut layers = Vec::with_capacity(n_layer);
        for i in 0..n_layer {
            let p = layer_name(i);
            let feed_forward = |ckpt: &mut Checkpoint, stream: &str| {
                let name = format!("{p}feed_forward_{stream}");
                if c.is_expert_layer(i) {
                    FeedForward::load_experts(ckpt, &name, &c, device)
                } else {
                    FeedForward::load_gated(ckpt, &name, hidden, c.intermediate_size, device)
                }
            };
            let norm = |ckpt: &mut Checkpoint, name: String| {
                RmsNorm::load(ckpt, &name, hidden, eps, device)
            };
            let (forward_mixer, reverse_mixer) = if c.is_attention_layer(i) {
                let mut stream = |name: &str| -> Result<Mixer> {
                    let p = format!("{p}{name}.");
                    let attention = Attention::load(ckpt, &p, "o_proj", hidden, &causal, device)?;
                    Ok(Mixer::Attention(attention))
                };
                (stream("self_attn_fwd")?, stream("self_attn_bwd")?)
            } else {
                let forward = Mamba::load(ckpt, &format!("{p}mamba_fwd."), &mamba, None, device)?;
                let reverse = Mamba::load(
                    ckpt,
                    &format!("{p}mamba_rev."),
                    &mamba,
                    Some(&forward),
                    device,
                )?;
                (Mixer::Mamba(forward), Mixer::Mamba(reverse))
            };
            let block = |ckpt: &mut Checkpoint, stream: &str, mixer| -> Result<Block> {
                Ok(Block {
                    input_norm: norm(ckpt, format!("{p}input_layernorm_{stream}"))?,
                    mixer,
                    feed_forward_norm: norm(ckpt, format!("{p}pre_ff_layernorm_{stream}"))?,
                    feed_forward: feed_forward(ckpt, stream)?,
                })
            };
            layers.push(Layer {
                forward: block(ckpt, "fwd", forward_mixer)?,
                reverse: block(ckpt, "bwd", reverse_mixer)?,
            });
        }
        let f = format!("{prefix}final_attention.");
        let final_attention = Block {
            input_norm: RmsNorm::load(ckpt, &format!("{f}input_layernorm"), hidden, eps, device)?,
            // Over both streams with the Janus mask, at flex_attention's default scale for
            // heads zero-padded to flex_attn_n_embd / heads channels.
            mixer: Mixer::Attention(Attention::load(
                ckpt,
                &format!("{f}self_attn."),
                "o_projs.0",
                hidden,
                &Masking {
                    heads,
                    scale: 1.0 / ((c.flex_attn_n_embd / heads) as f64).sqrt(),
                    bias: janus_bias(PADDED_LENGTH, device),
                },
                device,
            )?),
            feed_forward_norm: RmsNorm::load(
                ckpt,
                &format!("{f}pre_ff_layernorm"),
                hidden,
                eps,
                device,
            )?,
            feed_forward: FeedForward::load_gated(
                ckpt,
                &format!("{f}feed_forward"),
                hidden,
                c.intermediate_size,
                device,
            )?,
        };
        // GENEB's extractor loads `final_mlp` (where the checkpoint has it) and then replaces it
        // with `nn.Identity()`: its weights never reach the embedding.
        let final_mlp = format!("{prefix}final_mlp.");
        let mut notes = Vec::new();
        if !ckpt.names().any(|name| name.starts_with(&final_mlp)) {
            notes.push(format!(
                "the checkpoint has no {final_mlp}* tensors (it predates final_mlp, added to \
                 JanusDNA's code on 2025-08-01): GENEB's extractor loads with strict=False, \
                 which tolerates that, and replaces final_mlp with Identity, so nothing is lost"
            ));
        }
        ckpt.skip_prefix(&final_mlp);
        let final_norm = RmsNorm::load(
            ckpt,
            &format!("{prefix}final_layernorm"),
            hidden,
            eps,
            device,
        )?;
        ckpt.refuse_missing(
            "GENEB's extractor loads with strict=False and would run them at their random \
             initialisation, which geneb cannot reproduce",
        )?;
        let dense_experts = (0..n_layer).any(|i| c.is_expert_layer(i)) && !routes_on_host(device);
        let widest_feed_forward = if dense_experts {
            2 * c.num_experts * c.intermediate_size
        } else {
            2 * c.intermediate_size
        };
        Ok(Janus {
            embeddings,
            layers,
            final_attention,
            final_norm,
            hidden,
            notes,
            widest: widest_feed_forward.max(2 * mamba.d_inner),
        })
    }
}

impl Attention {
    /// The q/k/v projections and `{p}{output}`, all bias-free, hidden × hidden.
    fn load(
        ckpt: &mut Checkpoint,
        p: &str,
        output: &str,
        hidden: usize,
        masking: &Masking,
        device: &Device,
    ) -> Result<Attention> {
        let mut proj =
            |name: &str| Linear::load(ckpt, &format!("{p}{name}"), hidden, hidden, false, device);
        Ok(Attention {
            q: proj("q_proj")?,
            k: proj("k_proj")?,
            v: proj("v_proj")?,
            o: proj(output)?,
            masking: masking.clone(),
        })
    }

    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let Masking { heads, scale, bias } = &self.masking;
        let context = attention(
            split_heads(self.q.forward(x.clone()), *heads),
            split_heads(self.k.forward(x.clone()), *heads),
            split_heads(self.v.forward(x), *heads),
            *scale,
            bias.clone(),
        );
        self.o.forward(context)
    }
}

impl FeedForward {
    /// `{name}.gate_proj`, `.up_proj`, `.down_proj`, all bias-free.
    fn load_gated(
        ckpt: &mut Checkpoint,
        name: &str,
        hidden: usize,
        intermediate: usize,
        device: &Device,
    ) -> Result<FeedForward> {
        let (gate_up, down) = gated_weights(ckpt, name, hidden, intermediate)?;
        Ok(FeedForward::Gated {
            gate_up: Linear::new(gate_up, None, hidden, 2 * intermediate, device),
            down: Linear::new(down, None, intermediate, hidden, device),
        })
    }

    /// `{name}.router` and `{name}.experts.{e}.…`: the gates and ups of all experts side by side
    /// (each expert's gate then its up), their downs one after another along the input.
    fn load_experts(
        ckpt: &mut Checkpoint,
        name: &str,
        c: &Config,
        device: &Device,
    ) -> Result<FeedForward> {
        let (hidden, intermediate, experts) = (c.hidden_size, c.intermediate_size, c.num_experts);
        let router = Linear::load(
            ckpt,
            &format!("{name}.router"),
            hidden,
            experts,
            false,
            device,
        )?;
        // Grown as the experts are read: their count is only config.json's claim until then.
        let (mut gate_up, mut downs) = (Vec::new(), Vec::new());
        for e in 0..experts {
            let (expert_gate_up, down) =
                gated_weights(ckpt, &format!("{name}.experts.{e}"), hidden, intermediate)?;
            gate_up.push(expert_gate_up);
            downs.push(down);
        }
        let top_k = c.num_experts_per_tok;
        if routes_on_host(device) {
            let experts = gate_up
                .into_iter()
                .zip(downs)
                .map(|(gate_up, down)| {
                    (
                        Linear::new(gate_up, None, hidden, 2 * intermediate, device),
                        Linear::new(down, None, intermediate, hidden, device),
                    )
                })
                .collect();
            return Ok(FeedForward::RoutedExperts {
                router,
                experts,
                top_k,
            });
        }
        let gate_up = gate_up.concat();
        // down_e is [hidden, intermediate]; stacked along its input: [hidden, experts·intermediate].
        let wide = experts * intermediate;
        let mut down = vec![0f32; hidden * wide];
        for (e, expert_down) in downs.iter().enumerate() {
            for (row, values) in expert_down.chunks_exact(intermediate).enumerate() {
                down[row * wide + e * intermediate..][..intermediate].copy_from_slice(values);
            }
        }
        Ok(FeedForward::DenseExperts {
            router,
            gate_up: Linear::new(gate_up, None, hidden, 2 * wide, device),
            down: Linear::new(down, None, wide, hidden, device),
            experts,
            top_k,
        })
    }

    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        match self {
            FeedForward::Gated { gate_up, down } => down.forward(gated(gate_up.forward(x), 1)),
            FeedForward::RoutedExperts {
                router,
                experts,
                top_k,
            } => routed(x, router, experts, *top_k),
            FeedForward::DenseExperts {
                router,
                gate_up,
                down,
                experts,
                top_k,
            } => {
                let [batch, tokens, _] = x.dims();
                let probabilities = burn::tensor::activation::softmax(router.forward(x.clone()), 2);
                // The top-k experts keep their softmax weight (Jamba does not renormalise it),
                // the rest weigh zero.
                let kth = probabilities
                    .clone()
                    .topk(*top_k, 2)
                    .narrow(2, top_k - 1, 1);
                let chosen = probabilities
                    .clone()
                    .greater_equal(kth.expand([batch, tokens, *experts]));
                let weights = probabilities * chosen.float();
                let activations = gated(gate_up.forward(x), *experts);
                let intermediate = activations.dims()[2] / experts;
                let weighted = activations.reshape([batch, tokens, *experts, intermediate])
                    * weights.unsqueeze_dim::<4>(3);
                down.forward(weighted.reshape([batch, tokens, experts * intermediate]))
            }
        }
    }
}

/// Whether the mixture of experts reads its routing back and runs each expert on its own tokens:
/// on the CPU, where the read costs nothing and the dense form's (experts / k)× arithmetic
/// would dominate the pass; a GPU would stall on the read mid-pass.
fn routes_on_host(device: &Device) -> bool {
    *device == Device::flex()
}

/// The mixture of experts with the routing read back: every token's top-k experts by softmax
/// weight (not renormalised, as Jamba), each expert run on its tokens alone, weighted and added
/// into the output in expert order (the reference's `index_add_` order).
fn routed(x: Tensor<3>, router: &Linear, experts: &[(Linear, Linear)], top_k: usize) -> Tensor<3> {
    let [batch, tokens, hidden] = x.dims();
    let n = batch * tokens;
    let device = x.device();
    let flat = x.reshape([n, hidden]);
    let probabilities = burn::tensor::activation::softmax(router.forward(flat.clone()), 1);
    let probabilities = host_values(probabilities);
    let mut routed: Vec<(Vec<i64>, Vec<f32>)> = vec![(Vec::new(), Vec::new()); experts.len()];
    let mut order: Vec<usize> = (0..experts.len()).collect();
    for (token, row) in probabilities.chunks_exact(experts.len()).enumerate() {
        // Highest weight first; equal weights by expert index, so the choice is reproducible.
        order.sort_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
        for &e in &order[..top_k] {
            routed[e].0.push(token as i64);
            routed[e].1.push(row[e]);
        }
    }
    let mut out = Tensor::<2>::zeros([n, hidden], &device);
    for ((gate_up, down), (tokens_in, weights)) in experts.iter().zip(routed) {
        if tokens_in.is_empty() {
            continue;
        }
        let count = tokens_in.len();
        let index = Tensor::<1, Int>::from_data(TensorData::new(tokens_in, [count]), &device);
        let rows = flat
            .clone()
            .select(0, index.clone())
            .reshape([1, count, hidden]);
        let expert = down
            .forward(gated(gate_up.forward(rows), 1))
            .reshape([count, hidden]);
        let weights = upload(weights, [count, 1], &device);
        out = out.select_assign(0, index, expert * weights, IndexingUpdateOp::Add);
    }
    out.reshape([batch, tokens, hidden])
}

/// A gated MLP's weights: its gate and up matrices one after the other ([2·intermediate,
/// hidden]) and its down matrix ([hidden, intermediate]).
fn gated_weights(
    ckpt: &mut Checkpoint,
    name: &str,
    hidden: usize,
    intermediate: usize,
) -> Result<(Vec<f32>, Vec<f32>)> {
    let mut gate_up = ckpt.take(&format!("{name}.gate_proj.weight"), &[intermediate, hidden])?;
    gate_up.extend(ckpt.take(&format!("{name}.up_proj.weight"), &[intermediate, hidden])?);
    let down = ckpt.take(&format!("{name}.down_proj.weight"), &[hidden, intermediate])?;
    Ok((gate_up, down))
}

/// SiLU(gate) · up for `groups` side-by-side (gate, up) pairs: [.., groups·2·n] → [.., groups·n].
fn gated(gate_up: Tensor<3>, groups: usize) -> Tensor<3> {
    let [batch, tokens, width] = gate_up.dims();
    let n = width / (2 * groups);
    let pairs = gate_up.reshape([batch, tokens, groups, 2 * n]);
    let gate = pairs.clone().narrow(3, 0, n);
    let up = pairs.narrow(3, n, n);
    (silu(gate) * up).reshape([batch, tokens, groups * n])
}

impl Block {
    /// `rows` [batch, L, 1], where the block takes the mask: 1 where the extractor's attention
    /// mask is 1. An attention mixer's
    /// output is zero on the other rows: the published flash-attention path runs varlen
    /// attention over the masked-in positions only and pads the rest with zeros (bias-free
    /// `o_proj` keeps them zero). Both streams get the same, unflipped mask, as the published
    /// `BiJanusDNAAttentionWrapper` passes it; the Mamba mixers take no mask.
    fn forward(&self, x: Tensor<3>, rows: Option<&Tensor<3>>) -> Tensor<3> {
        let normed = self.input_norm.forward(x.clone());
        let mixed = match (&self.mixer, rows) {
            (Mixer::Mamba(mamba), _) => mamba.forward(normed),
            (Mixer::Attention(attention), Some(rows)) => attention.forward(normed) * rows.clone(),
            (Mixer::Attention(attention), None) => attention.forward(normed),
        };
        let x = x + mixed;
        x.clone() + self.feed_forward.forward(self.feed_forward_norm.forward(x))
    }
}

/// `final_fusion_repos_formasked` of the two streams [batch, length, hidden] each, the reverse
/// one flipped back: token p from forward p − 1 and reverse p + 1; the first token from reverse
/// 1 alone, the last from forward L − 2 alone.
fn fuse(forward: Tensor<3>, reverse: Tensor<3>) -> Tensor<3> {
    let length = forward.dims()[1];
    Tensor::cat(
        vec![
            reverse.clone().narrow(1, 1, 1),
            forward.clone().narrow(1, 0, length - 2) + reverse.narrow(1, 2, length - 2),
            forward.narrow(1, length - 2, 1),
        ],
        1,
    )
}

impl Arch for Janus {
    fn pass(
        &self,
        input_ids: Tensor<2, Int>,
        attention_mask: Tensor<2>,
        kept: &mut Kept,
    ) -> Tensor<3> {
        let [batch, tokens] = input_ids.dims();
        let length = PADDED_LENGTH;
        let device = input_ids.device();
        // `padding="max_length"` on the right (`padding_side="right"`): the caller's
        // right-padded batch, widened to 1,024 with [PAD] and a mask of zeros.
        let (ids, mask) = if tokens < length {
            let extra = length - tokens;
            (
                Tensor::cat(
                    vec![
                        input_ids,
                        Tensor::<2, Int>::full([batch, extra], PAD_ID, &device),
                    ],
                    1,
                ),
                Tensor::cat(
                    vec![attention_mask, Tensor::<2>::zeros([batch, extra], &device)],
                    1,
                ),
            )
        } else {
            (input_ids, attention_mask)
        };
        // The mid attention is masked only where the mask has a zero (`_update_causal_mask`
        // hands it on then); a row of ones masks nothing, so multiplying by it is the same.
        let rows = mask.unsqueeze_dim::<3>(2);
        let embedded = embedding(self.embeddings.clone(), ids);
        let mut forward = embedded.clone();
        let mut reverse = embedded.flip([1]);
        let (deepest, blocks) = (kept.deepest(), self.layers.len());
        for (i, layer) in self.layers.iter().enumerate().take(deepest) {
            if kept.wants(i) {
                let fused = fuse(forward.clone(), reverse.clone().flip([1]));
                kept.offer(i, &fused.narrow(1, 0, tokens));
            }
            forward = layer.forward.forward(forward, Some(&rows));
            reverse = layer.reverse.forward(reverse, Some(&rows));
        }
        // After `deepest` blocks, or after all of them where the final attention follows.
        let stopped = deepest.min(blocks);
        if kept.wants(stopped) {
            let fused = fuse(forward.clone(), reverse.clone().flip([1])).narrow(1, 0, tokens);
            kept.offer(stopped, &fused);
            if deepest == stopped {
                return fused;
            }
        }
        let both = Tensor::cat(vec![forward, reverse.flip([1])], 1);
        // The final Janus attention (flex_attention with its block mask) takes no padding mask.
        let both = self.final_attention.forward(both, None);
        let fused = fuse(
            both.clone().narrow(1, 0, length),
            both.narrow(1, length, length),
        );
        // `residual + final_mlp(h)` with `final_mlp = nn.Identity()` (GENEB's extractor): twice
        // the final norm's output.
        let out = self.final_norm.forward(fused) * 2.0;
        // The padding beyond the caller's width is outside every mask: the mean never reads it.
        let out = out.narrow(1, 0, tokens);
        kept.offer(deepest, &out);
        out
    }

    /// JanusDNA's code keeps no hidden states, so its blocks: after each of `layers` (0 = the
    /// embeddings) the two streams fused as its final fusion fuses them (token p from forward
    /// p − 1 and reverse p + 1, so no state has seen its token), then one layer more, today's
    /// output (the final Janus attention, fusion and norm).
    fn layers(&self) -> usize {
        self.layers.len() + 1
    }

    fn hidden_size(&self) -> usize {
        self.hidden
    }

    fn token_rows(&self) -> usize {
        self.embeddings.dims()[0]
    }

    fn max_tokens(&self) -> usize {
        PADDED_LENGTH
    }

    fn positions(&self, _tokens: usize) -> usize {
        2 * PADDED_LENGTH
    }

    fn widest_activation(&self) -> usize {
        self.widest
    }

    fn family(&self) -> &'static str {
        SPEC.family
    }

    fn notes(&self) -> &[String] {
        &self.notes
    }
}

/// `create_janus_mask` as an additive bias over the two streams of `length` positions each.
fn janus_bias(length: usize, device: &Device) -> Tensor<4> {
    let n = 2 * length;
    let allowed = |q: usize, kv: usize| {
        let (q_forward, kv_forward) = (q < length, kv < length);
        match (q_forward, kv_forward) {
            (true, true) => kv <= q,
            (true, false) => kv >= length + q + 2,
            (false, true) => q >= kv + length + 2,
            (false, false) => q <= kv,
        }
    };
    let bias = (0..n)
        .flat_map(|q| (0..n).map(move |kv| if allowed(q, kv) { 0.0 } else { -3.0e4 }))
        .collect();
    upload(bias, [1, 1, n, n], device)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_janus_query_sees_itself_and_never_the_token_it_stands_for() {
        let length = 6;
        let bias: Vec<f32> = janus_bias(length, &crate::encoder::backend::cpu().device)
            .into_data()
            .try_to_vec()
            .unwrap();
        let sees = |q: usize, kv: usize| bias[q * 2 * length + kv] == 0.0;
        for p in 0..length {
            assert!(sees(p, p) && sees(length + p, length + p));
            // Forward p stands for token p + 1: no state that has read it (forward ≥ p + 1,
            // reverse ≤ p + 1); reverse p for token p − 1 likewise.
            assert!((p + 1..length).all(|kv| !sees(p, kv)));
            assert!((0..=(p + 1).min(length - 1)).all(|kv| !sees(p, length + kv)));
            assert!((0..p).all(|kv| !sees(length + p, length + kv)));
            assert!((p.saturating_sub(1)..length).all(|kv| !sees(length + p, kv)));
        }
    }
}
