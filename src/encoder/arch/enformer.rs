//! Enformer (Avsec et al. 2021) as PyPI `enformer-pytorch`'s `modeling_enformer.py` computes it
//! (the `EleutherAI/enformer-*` checkpoints, `model_type` "enformer"), loaded as GENEB's
//! extractor loads it: `from_pretrained(name, use_tf_gamma=False)`.
//!
//! The input is one-hot DNA [batch, 196,608, 4] (N and every other character a row of zeros),
//! through the trunk `layers::enformer_trunk` describes (stem, conv tower, `depth` transformer
//! layers with relative positions, the centre crop to `target_length` bins, the final pointwise
//! ConvBlock and GELU), then the `human` head: a linear layer and softplus. 196,608 = 3·2¹⁶
//! halves evenly at every pooling, so the pooling's padding branch never runs.
//!
//! GENEB's extractor (`embedding_pipeline/extractors/enformer.py`) centre-crops or N-pads each
//! sequence to 196,608 bp, one-hot encodes it, and averages the `human` head's output
//! [batch, 896, 5313] over the bins: the embedding is 5,313 values. `forward` returns that
//! head's output per bin; the recipe's pooling is its plain mean.

use super::{Arch, ArchSpec, Kept, Pooling, parse_config, size};
use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::encoder::layers::enformer_trunk::{
    AttentionShape, ConvTower, FeedForward, FinalPointwise, RelativeAttention, centre_crop,
    centre_ids, largest_unsplit_floats, refuse_unbindable, skip_batch_norm_counters, tower_widths,
};
use crate::encoder::layers::{Linear, config_error};
use crate::tokenize::TokenizerChoice;
use burn::tensor::activation::softplus;
use burn::tensor::{Device, Int, Tensor};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The extractor's input length, enformer-pytorch's `SEQUENCE_LENGTH`.
pub const SEQUENCE_LENGTH: usize = crate::encoder::recipe::ENFORMER_SEQUENCE_LENGTH;
/// The output head the extractor pools (`self.model(tensor)['human']`).
const HEAD: &str = "human";

pub const SPEC: ArchSpec = ArchSpec {
    name: family::ENFORMER.architecture,
    family: family::ENFORMER.name,
    serves: "EleutherAI/enformer-official-rough, EleutherAI/enformer-*",
    matches,
    tokenizer: TokenizerChoice::Characters { upper_case: true },
    poolings: &[Pooling::BinMean],
    load: |config, ckpt, compute| {
        let model = Enformer::load(config, ckpt, &compute.device)?;
        refuse_unbindable(compute, "Enformer", model.largest_tensor)?;
        Ok(Box::new(model))
    },
    recipe: &crate::encoder::recipe::ENFORMER,
    published_config: None,
};

/// `EnformerConfig`'s keys, with its defaults where config.json leaves one out (as
/// `PretrainedConfig` fills them).
#[derive(Deserialize)]
struct Config {
    #[serde(default = "default_dim", deserialize_with = "size")]
    dim: usize,
    #[serde(default = "default_depth", deserialize_with = "size")]
    depth: usize,
    #[serde(default = "default_heads", deserialize_with = "size")]
    heads: usize,
    #[serde(default = "default_output_heads")]
    output_heads: BTreeMap<String, u64>,
    #[serde(default = "default_target_length")]
    target_length: i64,
    #[serde(default = "default_attn_dim_key", deserialize_with = "size")]
    attn_dim_key: usize,
    #[serde(default = "default_num_downsamples", deserialize_with = "size")]
    num_downsamples: usize,
    #[serde(default = "default_dim_divisible_by", deserialize_with = "size")]
    dim_divisible_by: usize,
}

fn default_dim() -> usize {
    1536
}
fn default_depth() -> usize {
    11
}
fn default_heads() -> usize {
    8
}
fn default_output_heads() -> BTreeMap<String, u64> {
    BTreeMap::from([("human".to_string(), 5313), ("mouse".to_string(), 1643)])
}
fn default_target_length() -> i64 {
    896
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

/// Whether `config.json` describes an Enformer checkpoint.
pub fn matches(config: &Value) -> bool {
    config["model_type"] == "enformer"
        || config["architectures"]
            .as_array()
            .is_some_and(|a| a.iter().any(|n| n == "Enformer"))
}

/// One transformer layer: attention, then the feed-forward block, each with its residual.
struct Layer {
    attention: RelativeAttention,
    feed_forward: FeedForward,
}

pub struct Enformer {
    tower: ConvTower,
    layers: Vec<Layer>,
    /// The crop of the tower's bins to `target_length` (start, length).
    crop: (usize, usize),
    final_pointwise: FinalPointwise,
    head: Linear,
    head_features: usize,
    /// The width of each layer's states (`Arch::hidden_size_at`): the stem's, each tower
    /// block's, each transformer layer's, the trunk's (final pointwise) and the head's.
    layer_widths: Vec<usize>,
    /// Floats of the pass's largest tensor that chunking cannot split (the human head's
    /// output or `largest_unsplit_floats`).
    largest_tensor: usize,
    notes: Vec<String>,
}

impl Enformer {
    pub fn load(config: &Value, ckpt: &mut Checkpoint, device: &Device) -> Result<Self> {
        let c: Config = parse_config(config)?;
        let dim = c.dim;
        let widths = tower_widths(dim, c.num_downsamples, c.dim_divisible_by, SEQUENCE_LENGTH)?;
        let bins = SEQUENCE_LENGTH >> c.num_downsamples;
        let shape = AttentionShape {
            dim,
            heads: c.heads,
            key_width: c.attn_dim_key,
            positions: bins,
        };
        shape.position_features()?;
        let crop = centre_crop(bins, c.target_length).ok_or_else(|| {
            config_error(&format!(
                "target_length {} is longer than the {bins} bins a 196,608 bp input leaves",
                c.target_length
            ))
        })?;
        let head_features = match c.output_heads.get(HEAD) {
            Some(&n) if n > 0 && n <= super::MAX_CONFIG_SIZE => n as usize,
            _ => {
                return Err(config_error(
                    "output_heads has no 'human' head, the output GENEB's extractor pools",
                ));
            }
        };

        // A `.bin` saved from the model stores each trunk tensor twice, under the module's
        // name and under `_trunk.<index>` (one storage): read the first, skip the other.
        let module = |name: &str, index: usize, probe: &str| -> String {
            if ckpt.contains(&format!("{name}.{probe}")) {
                format!("{name}.")
            } else {
                format!("_trunk.{index}.")
            }
        };
        let stem = module("stem", 1, "0.weight");
        let tower_prefix = module("conv_tower", 2, "0.0.0.weight");
        let transformer = module("transformer", 4, "0.0.fn.0.weight");
        let pointwise = module("final_pointwise", 6, "1.0.weight");

        let tower = ConvTower::load(ckpt, &stem, &tower_prefix, &widths, device)?;
        let depth = super::check_layers("depth", c.depth, ckpt, |l| {
            format!("{transformer}{l}.0.fn.0.weight")
        })?;
        let features = shape.features(device)?;
        let mut layers = Vec::with_capacity(depth);
        for l in 0..depth {
            let a = format!("{transformer}{l}.0.fn.");
            let f = format!("{transformer}{l}.1.fn.");
            layers.push(Layer {
                attention: RelativeAttention::load(
                    ckpt,
                    &format!("{a}0"),
                    &format!("{a}1."),
                    shape,
                    &features,
                    device,
                )?,
                feed_forward: FeedForward::load(
                    ckpt,
                    &format!("{f}0"),
                    &format!("{f}1"),
                    &format!("{f}4"),
                    dim,
                    device,
                )?,
            });
        }
        let final_pointwise = FinalPointwise::load(ckpt, &pointwise, dim, device)?;
        let head = Linear::load(
            ckpt,
            &format!("_heads.{HEAD}.0"),
            2 * dim,
            head_features,
            true,
            device,
        )?;
        // The duplicate names, the other species' heads (computed by the reference, unused by
        // its pooling) and BatchNorm's step counters.
        ckpt.skip_prefix("_trunk.");
        ckpt.skip_prefix("_heads.");
        skip_batch_norm_counters(ckpt);
        let notes = vec![format!(
            "every sequence is centre-cropped or N-padded to {SEQUENCE_LENGTH} bp, as GENEB's \
             extractor does; the embedding is the mean over {} bins of the human head's {} \
             tracks (truncated_sequences counts the sequences cropped)",
            crop.1, head_features
        )];
        let layer_widths = widths
            .iter()
            .copied()
            .chain(std::iter::repeat_n(dim, layers.len()))
            .chain([2 * dim, head_features])
            .collect();
        Ok(Enformer {
            layer_widths,
            largest_tensor: largest_unsplit_floats(&tower, shape).max(crop.1 * head_features),
            tower,
            layers,
            crop,
            final_pointwise,
            head,
            head_features,
            notes,
        })
    }

    /// The trunk and the human head: [batch, bins after the crop, head features], or the
    /// states after `kept`'s deepest layer, keeping those asked for.
    fn run(&self, input_ids: Tensor<2, Int>, kept: &mut Kept) -> Tensor<3> {
        let deepest = kept.deepest();
        let mut x = self.tower.forward(input_ids, kept);
        let mut layer = self.tower.blocks();
        if deepest < layer {
            return x;
        }
        for transformer_layer in &self.layers {
            kept.offer(layer, &x);
            if layer == deepest {
                return x;
            }
            x = transformer_layer
                .feed_forward
                .forward(transformer_layer.attention.forward(x));
            layer += 1;
        }
        kept.offer(layer, &x);
        if layer == deepest {
            return x;
        }
        let (start, length) = self.crop;
        let x = self.final_pointwise.forward(x.narrow(1, start, length));
        kept.offer(layer + 1, &x);
        if layer + 1 == deepest {
            return x;
        }
        let x = softplus(self.head.forward(x), 1.0);
        kept.offer(layer + 2, &x);
        x
    }
}

impl Arch for Enformer {
    /// The human head's output per bin. The recipe centres every sequence's text to 196,608
    /// positions; ids of another length (another recipe asked for by name) are centred here the
    /// same way, with N. The mask is not read: the extractor passes none.
    fn pass(
        &self,
        input_ids: Tensor<2, Int>,
        _attention_mask: Tensor<2>,
        kept: &mut Kept,
    ) -> Tensor<3> {
        self.run(centre_ids(input_ids, SEQUENCE_LENGTH), kept)
    }

    /// enformer-pytorch's blocks (it has no `output_hidden_states`): 0 the stem's output, then
    /// each conv tower block's, each transformer layer's, the trunk's (`return_only_embeddings`:
    /// cropped, final pointwise), and last the human head's (today's embedding). Each is
    /// pooled by the recipe's mean over its bins, as many as that layer has.
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
            .unwrap_or(self.head_features)
    }

    fn hidden_size(&self) -> usize {
        self.head_features
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
