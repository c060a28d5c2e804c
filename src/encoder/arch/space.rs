//! SPACE (Yang et al. 2025, "Your genomic profile predictor is a powerful DNA foundation
//! model") as its `model/modeling_space.py` and `model/modules.py` compute it, the copy GENEB
//! vendors under `embedding_pipeline/utility_modules/SPACE` (config.json's `model_type` is
//! "enformer"; its `architectures` name `TrainingSpace` and it has the mixture-of-experts keys).
//!
//! The trunk is Enformer's (`layers::enformer_trunk`), with two changes: the transformer appends
//! a learned species token (`species_embedding['human']`) after the bins and drops it after the
//! last layer, and where config.json's `moe` names "species" each layer's feed-forward block is
//! a mixture of experts: a gate per species (linear, LeakyReLU 0.01) scores the experts from the
//! un-normalised input, the top `topk` are kept and softmaxed, and the LayerNorm'd input goes
//! through each kept expert (linear to 2·dim, ReLU, linear to dim), weighted by its gate, added
//! to the input. geneb runs every expert on every position and weights the ones not kept by 0,
//! which is the same sum. The track experts (`moe` naming "tracks") only change the heads'
//! output, which the extractor does not read: their tensors are skipped.
//!
//! GENEB's extractor (`embedding_pipeline/extractors/space.py`) centre-crops or N-pads each
//! sequence to 131,072 bp, one-hot encodes it and calls `model(x, return_embeddings=True)`,
//! whose forward crops the 1,024 bins to its default `target_length=896` (whatever config.json
//! says) and returns `final_pointwise`'s output, 2·dim wide; the embedding is its mean over the
//! bins. `forward` returns that output per bin.
//!
//! Layer K (`hidden_states`) follows enformer.rs's blocks (the reference keeps no per-layer
//! states): 0 the stem's output, then each conv tower block's, each transformer layer's (over
//! the bins, the species token left out), and last `final_pointwise`'s on the cropped bins
//! (today's embedding: SPACE has no head after it). Each is pooled by the recipe's mean over
//! its bins.

use super::{Arch, ArchSpec, Kept, Pooling, parse_config, size};
use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::encoder::layers::enformer_trunk::{
    AttentionShape, ConvTower, FeedForward, FinalPointwise, LAYER_NORM_EPS, RelativeAttention,
    centre_crop, centre_ids, largest_unsplit_floats, refuse_unbindable, skip_batch_norm_counters,
    tower_widths,
};
use crate::encoder::layers::{LayerNorm, Linear, Weight3, config_error, param};
use crate::tokenize::TokenizerChoice;
use burn::tensor::activation::{leaky_relu, relu, softmax};
use burn::tensor::{Device, Int, Tensor};
use serde::Deserialize;
use serde_json::Value;

/// The extractor's input length (`self.seq_length = 131_072`).
pub const SEQUENCE_LENGTH: usize = crate::encoder::recipe::SPACE_SEQUENCE_LENGTH;
/// `Space.forward`'s default `target_length`, which the extractor does not change.
const TARGET_LENGTH: i64 = 896;
/// The species the extractor embeds as (`Space.forward`'s default `species="human"`).
const SPECIES: &str = "human";
/// `nn.LeakyReLU()`'s default slope, after each species gate.
const GATE_SLOPE: f64 = 0.01;
/// Added to the logits of experts not kept: their softmax weight is 0.
const DROPPED_EXPERT: f32 = -1e30;

pub const SPEC: ArchSpec = ArchSpec {
    name: family::SPACE.architecture,
    family: family::SPACE.name,
    serves: "SPACE (TrainingSpace checkpoints)",
    matches,
    tokenizer: TokenizerChoice::Characters { upper_case: true },
    poolings: &[Pooling::TrunkBinMean],
    load: |config, ckpt, compute| {
        let model = Space::load(config, ckpt, &compute.device)?;
        refuse_unbindable(compute, "SPACE", model.largest_tensor)?;
        Ok(Box::new(model))
    },
    recipe: &crate::encoder::recipe::SPACE,
    published_config: None,
};

/// `SpaceConfig`'s keys, with its defaults (its `__init__` sets `moe`, `topk` and
/// `species_num_experts` before config.json's keys override them).
#[derive(Deserialize)]
struct Config {
    #[serde(default = "default_dim", deserialize_with = "size")]
    dim: usize,
    #[serde(default = "default_depth", deserialize_with = "size")]
    depth: usize,
    #[serde(default = "default_heads", deserialize_with = "size")]
    heads: usize,
    #[serde(default = "default_attn_dim_key", deserialize_with = "size")]
    attn_dim_key: usize,
    #[serde(default = "default_num_downsamples", deserialize_with = "size")]
    num_downsamples: usize,
    #[serde(default = "default_dim_divisible_by", deserialize_with = "size")]
    dim_divisible_by: usize,
    #[serde(default)]
    use_tf_gamma: bool,
    /// A string ("species_tracks") or a list (["species", "tracks"]): Python's `in` either way.
    #[serde(default = "default_moe")]
    moe: Value,
    #[serde(default = "default_experts", deserialize_with = "size")]
    species_num_experts: usize,
    #[serde(default = "default_topk", deserialize_with = "size")]
    topk: usize,
}

fn default_dim() -> usize {
    768
}
fn default_depth() -> usize {
    11
}
fn default_heads() -> usize {
    8
}
fn default_attn_dim_key() -> usize {
    64
}
fn default_num_downsamples() -> usize {
    7
}
fn default_dim_divisible_by() -> usize {
    128
}
fn default_moe() -> Value {
    Value::from("ffn")
}
fn default_experts() -> usize {
    4
}
fn default_topk() -> usize {
    3
}

/// Whether `config.json` describes a SPACE checkpoint: `model_type` "enformer" (SpaceConfig's)
/// with SPACE's class named or its mixture-of-experts keys present. Listed before Enformer.
pub fn matches(config: &Value) -> bool {
    let named = config["architectures"]
        .as_array()
        .is_some_and(|a| a.iter().any(|n| n == "TrainingSpace" || n == "Space"));
    config["model_type"] == "enformer" && (named || config.get("species_num_experts").is_some())
}

/// `"species" in config.moe`.
fn species_experts(moe: &Value) -> bool {
    match moe {
        Value::String(s) => s.contains("species"),
        Value::Array(items) => items.iter().any(|item| item == "species"),
        _ => false,
    }
}

/// `SpeciesMoE` as the human species runs it, with its residual.
struct SpeciesExperts {
    gate: Linear,
    norm: LayerNorm,
    /// `Experts` weights [experts, in, out] and biases [experts, 1, out].
    input_weight: Weight3,
    input_bias: Tensor<3>,
    output_weight: Weight3,
    output_bias: Tensor<3>,
    keep: usize,
}

#[allow(clippy::large_enum_variant, reason = "one per layer, built once")]
enum FeedForwardKind {
    Dense(FeedForward),
    Experts(SpeciesExperts),
}

struct Layer {
    attention: RelativeAttention,
    feed_forward: FeedForwardKind,
}

pub struct Space {
    tower: ConvTower,
    /// `species_embedding['human']` [1, 1, dim].
    species_token: Tensor<3>,
    layers: Vec<Layer>,
    /// The crop of the tower's bins to 896 (start, length).
    crop: (usize, usize),
    final_pointwise: FinalPointwise,
    /// The width of each layer's states, 0..=L: the stem's and the tower blocks', the
    /// transformer layers', `final_pointwise`'s.
    layer_widths: Vec<usize>,
    /// Floats of the pass's largest tensor that chunking cannot split (the experts' hidden
    /// states [experts, n, 2·dim] or `largest_unsplit_floats`).
    largest_tensor: usize,
    notes: Vec<String>,
}

impl Space {
    pub fn load(config: &Value, ckpt: &mut Checkpoint, device: &Device) -> Result<Self> {
        let c: Config = parse_config(config)?;
        if c.use_tf_gamma {
            return Err(config_error(
                "use_tf_gamma is true: SPACE's TensorFlow gamma table only fits 1,536 positions \
                 (its reference asserts so), and the extractor's input gives 1,025",
            ));
        }
        let dim = c.dim;
        let widths = tower_widths(dim, c.num_downsamples, c.dim_divisible_by, SEQUENCE_LENGTH)?;
        let bins = SEQUENCE_LENGTH >> c.num_downsamples;
        // The bins and the species token.
        let shape = AttentionShape {
            dim,
            heads: c.heads,
            key_width: c.attn_dim_key,
            positions: bins + 1,
        };
        shape.position_features()?;
        let crop = centre_crop(bins, TARGET_LENGTH).ok_or_else(|| {
            config_error(&format!(
                "num_downsamples {} leaves {bins} bins of a {SEQUENCE_LENGTH} bp input, fewer \
                 than the {TARGET_LENGTH} the forward crops to",
                c.num_downsamples
            ))
        })?;
        let experts = species_experts(&c.moe);
        if experts && (c.topk == 0 || c.topk > c.species_num_experts) {
            return Err(config_error(&format!(
                "topk {} must be between 1 and species_num_experts {}",
                c.topk, c.species_num_experts
            )));
        }

        // `TrainingSpace` nests the model under `model.`; a `Space` saved alone does not.
        let prefix = if ckpt.contains("model.stem.0.weight") {
            "model."
        } else {
            ""
        };
        let tower = ConvTower::load(
            ckpt,
            &format!("{prefix}stem."),
            &format!("{prefix}conv_tower."),
            &widths,
            device,
        )?;
        let transformer = format!("{prefix}transformer.");
        let species_token = param(
            ckpt,
            &format!("{transformer}species_embedding.{SPECIES}"),
            [1, 1, dim],
            device,
        )?;
        let depth = super::check_layers("depth", c.depth, ckpt, |l| {
            format!("{transformer}transformer.{l}.attention.fn.0.weight")
        })?;
        let features = shape.features(device)?;
        let mut layers = Vec::with_capacity(depth);
        for l in 0..depth {
            let block = format!("{transformer}transformer.{l}.");
            let a = format!("{block}attention.fn.");
            let f = format!("{block}feed_forward.");
            let feed_forward = if experts {
                FeedForwardKind::Experts(SpeciesExperts::load(
                    ckpt,
                    &f,
                    dim,
                    c.species_num_experts,
                    c.topk,
                    device,
                )?)
            } else {
                FeedForwardKind::Dense(FeedForward::load(
                    ckpt,
                    &format!("{f}layer_norm"),
                    &format!("{f}input"),
                    &format!("{f}output"),
                    dim,
                    device,
                )?)
            };
            layers.push(Layer {
                attention: RelativeAttention::load(
                    ckpt,
                    &format!("{a}0"),
                    &format!("{a}1."),
                    shape,
                    &features,
                    device,
                )?,
                feed_forward,
            });
        }
        let final_pointwise =
            FinalPointwise::load(ckpt, &format!("{prefix}final_pointwise."), dim, device)?;
        // What the extractor's output does not depend on: the other species' token and gates,
        // the heads and the track experts (they make `out`; the embedding is `x`).
        for l in 0..depth {
            ckpt.skip_prefix(&format!("{transformer}transformer.{l}.feed_forward.gates."));
        }
        ckpt.skip_prefix(&format!("{transformer}species_embedding."));
        ckpt.skip_prefix(&format!("{prefix}heads."));
        ckpt.skip_prefix(&format!("{prefix}tracks."));
        skip_batch_norm_counters(ckpt);
        let notes = vec![format!(
            "every sequence is centre-cropped or N-padded to {SEQUENCE_LENGTH} bp, as GENEB's \
             extractor does; the embedding is the mean over {} bins of the final pointwise \
             layer's {} features, before the heads (truncated_sequences counts the sequences \
             cropped)",
            crop.1,
            2 * dim
        )];
        Ok(Space {
            largest_tensor: largest_unsplit_floats(&tower, shape)
                .max(c.species_num_experts * (bins + 1) * 2 * dim),
            tower,
            species_token,
            layers,
            crop,
            final_pointwise,
            layer_widths: widths
                .iter()
                .copied()
                .chain(std::iter::repeat_n(dim, depth))
                .chain([2 * dim])
                .collect(),
            notes,
        })
    }

    /// The trunk: [batch, 896, 2·dim], or the states after `kept`'s deepest layer, keeping
    /// those asked for.
    fn run(&self, input_ids: Tensor<2, Int>, kept: &mut Kept) -> Tensor<3> {
        let deepest = kept.deepest();
        let x = self.tower.forward(input_ids, kept);
        let mut layer = self.tower.blocks();
        if deepest < layer {
            return x;
        }
        let [batch, bins, dim] = x.dims();
        kept.offer(layer, &x);
        if layer == deepest {
            return x;
        }
        let token = self.species_token.clone().expand([batch, 1, dim]);
        let mut x = Tensor::cat(vec![x, token], 1);
        for transformer_layer in &self.layers {
            x = transformer_layer.attention.forward(x);
            x = match &transformer_layer.feed_forward {
                FeedForwardKind::Dense(block) => block.forward(x),
                FeedForwardKind::Experts(block) => block.forward(x),
            };
            layer += 1;
            if kept.wants(layer) || layer == deepest {
                let over_bins = x.clone().narrow(1, 0, bins);
                kept.offer(layer, &over_bins);
                if layer == deepest {
                    return over_bins;
                }
            }
        }
        let (start, length) = self.crop;
        let x = self
            .final_pointwise
            .forward(x.narrow(1, 0, bins).narrow(1, start, length));
        kept.offer(layer + 1, &x);
        x
    }
}

impl SpeciesExperts {
    /// `SpeciesMoE` at `prefix`: the human gate, the LayerNorm and the two `Experts`.
    fn load(
        ckpt: &mut Checkpoint,
        prefix: &str,
        dim: usize,
        experts: usize,
        keep: usize,
        device: &Device,
    ) -> Result<Self> {
        let weights = |ckpt: &mut Checkpoint, name: &str, width_in: usize, width_out: usize| {
            Ok::<_, crate::Error>((
                Weight3::load(
                    ckpt,
                    &format!("{prefix}{name}.weight"),
                    [experts, width_in, width_out],
                    device,
                )?,
                param(
                    ckpt,
                    &format!("{prefix}{name}.bias"),
                    [experts, width_out],
                    device,
                )?
                .reshape([experts, 1, width_out]),
            ))
        };
        let (input_weight, input_bias) = weights(ckpt, "input", dim, 2 * dim)?;
        let (output_weight, output_bias) = weights(ckpt, "output", 2 * dim, dim)?;
        Ok(SpeciesExperts {
            gate: Linear::load(
                ckpt,
                &format!("{prefix}gates.{SPECIES}.0"),
                dim,
                experts,
                true,
                device,
            )?,
            norm: LayerNorm::load(
                ckpt,
                &format!("{prefix}layer_norm"),
                dim,
                LAYER_NORM_EPS,
                device,
            )?,
            input_weight,
            input_bias,
            output_weight,
            output_bias,
            keep,
        })
    }

    /// x + Σ over the kept experts of gate · expert(LayerNorm(x)), x [batch, n, dim].
    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let [batch, n, dim] = x.dims();
        let experts = self.input_weight.dims()[0];
        let logits = leaky_relu(self.gate.forward(x.clone()), GATE_SLOPE);
        // An expert is kept where fewer than `keep` experts score above it (`torch.topk`;
        // exact ties, which random weights never give, could keep one more).
        let square = [batch, n, experts, experts];
        let others = logits.clone().unsqueeze_dim::<4>(2).expand(square);
        let own = logits.clone().unsqueeze_dim::<4>(3).expand(square);
        let above = others
            .greater(own)
            .float()
            .sum_dim(3)
            .reshape([batch, n, experts]);
        let dropped = above.greater_equal_elem(self.keep as f32);
        let gates = softmax(logits.mask_fill(dropped, DROPPED_EXPERT), 2);
        let rows = batch * n;
        let h = self
            .norm
            .forward(x.clone())
            .reshape([1, rows, dim])
            .expand([experts, rows, dim]);
        let h = relu(h.matmul(self.input_weight.widened()) + self.input_bias.clone());
        let out = h.matmul(self.output_weight.widened()) + self.output_bias.clone();
        // [experts, rows, dim] weighted by [experts, rows, 1], summed over the experts.
        let gates = gates.reshape([rows, experts]).transpose().unsqueeze_dim(2);
        (out * gates).sum_dim(0).reshape([batch, n, dim]) + x
    }
}

impl Arch for Space {
    /// `final_pointwise`'s output per bin. The recipe centres every sequence's text to
    /// 131,072 positions; ids of another length are centred here the same way, with N. The
    /// mask is not read: the extractor passes none.
    fn pass(
        &self,
        input_ids: Tensor<2, Int>,
        _attention_mask: Tensor<2>,
        kept: &mut Kept,
    ) -> Tensor<3> {
        self.run(centre_ids(input_ids, SEQUENCE_LENGTH), kept)
    }

    fn layers(&self) -> usize {
        self.layer_widths.len() - 1
    }

    fn unsplit_state_floats(&self, layer: usize) -> usize {
        self.hidden_size_at(layer) * self.tower.positions_at(SEQUENCE_LENGTH, layer)
    }

    fn hidden_size_at(&self, layer: usize) -> usize {
        self.layer_widths
            .get(layer)
            .copied()
            .unwrap_or_else(|| self.hidden_size())
    }

    /// `final_pointwise`'s width, 2·dim.
    fn hidden_size(&self) -> usize {
        self.layer_widths.last().copied().unwrap_or_default()
    }

    fn token_rows(&self) -> usize {
        self.tower.token_rows()
    }

    fn max_tokens(&self) -> usize {
        SEQUENCE_LENGTH
    }

    /// The stem's dim/2 channels at every input position.
    fn widest_activation(&self) -> usize {
        self.tower.half_dim()
    }

    fn family(&self) -> &'static str {
        SPEC.family
    }

    fn notes(&self) -> &[String] {
        &self.notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_species_experts_are_on_as_pythons_in_reads_moe() {
        assert!(species_experts(&serde_json::json!(["species", "tracks"])));
        assert!(species_experts(&serde_json::json!("species_tracks")));
        assert!(!species_experts(&serde_json::json!("ffn")));
        assert!(!species_experts(&serde_json::json!(["tracks"])));
    }

    #[test]
    fn space_is_told_from_enformer() {
        let space =
            serde_json::json!({"model_type": "enformer", "architectures": ["TrainingSpace"]});
        let enformer = serde_json::json!({"model_type": "enformer", "architectures": ["Enformer"]});
        assert!(matches(&space) && !matches(&enformer));
        assert!(
            super::super::enformer::matches(&space),
            "hence SPACE is listed first"
        );
    }
}
