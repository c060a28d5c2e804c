//! Caduceus (Schiff et al. 2024; `kuleshov-group/caduceus-ph_*` and `caduceus-ps_*`,
//! `model_type` "caduceus") as the published HF code computes it with the settings those
//! checkpoints use (`fused_add_norm`, `rms_norm`): token embeddings → `n_layer` blocks of fused
//! residual-add + RMSNorm → bidirectional Mamba → final add + RMSNorm (no LM head).
//!
//! Bidirectional Mamba (`BiMambaWrapper`): one Mamba over the sequence, a second over the
//! reversed sequence, reversed back and added (or multiplied, `bidirectional_strategy`); with
//! `bidirectional_weight_tie` the second shares the first's in/out projections. A Mamba layer is
//! in_proj → causal depthwise conv + SiLU → x_proj to (dt, B, C) → dt_proj + softplus → the
//! selective scan `h_t = exp(Δ_t A) h_{t-1} + Δ_t B_t x_t`, `y_t = C_t h_t + D x_t` → gate by
//! SiLU(z) → out_proj, as mamba_ssm's `selective_scan_ref`.
//!
//! PS (`rcps`, reverse-complement parameter sharing): the embedding emits `[E(x), RC(E(rc(x)))]`
//! (rc = complement the ids through `complement_map`, reverse; RC of states = reverse positions
//! and channels), so the hidden state has 2·d_model channels; each block runs the same norm and
//! BiMamba on one half and on the RC of the other and concatenates. This follows the published
//! `RCPSMambaBlock` fused path literally, including that it normalises the *second* half as the
//! forward stream and the RC of the *first* half as the reverse-complement stream.
//!
//! The selective scan is sequential over positions, in Burn tensor ops, so it runs on every
//! backend: per position a handful of element-wise ops on [batch, d_inner, d_state]; the
//! discretised `exp(ΔA)` and `ΔBx` are formed in bulk for chunks of positions. Its cost is
//! dominated by per-op dispatch (O(L) small ops per Mamba, two Mambas per layer; PS runs its
//! two streams as one stacked batch) rather than flops. Measured on the shared 2-core dev
//! machine (debug test build, dependencies at opt-level 2), 1,000 tokens: a PS-shaped random
//! model (d_model 256, 16 layers, 7.7 M parameters) takes 5.7 s at batch 1 and 38 s at batch 8
//! on burn-flex (10.2 s and 55.8 s before the streams were stacked; 72 s at batch 1 on wgpu over
//! lavapipe, unstacked); a PH-shaped one (d_model 118, 4 layers) 0.66 s and 4.7 s. On wgpu
//! each chunk is scanned by doubling instead (`scan_by_doubling`): ⌈log₂ L⌉ steps of
//! whole-chunk ops rather than three launches per position.
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

use super::hyena::padded_vocab;
use super::layers::{
    Linear, config_epsilon, config_error, config_layers, config_usize, param, upload,
};
use crate::Result;
use crate::hf::Checkpoint;
use burn::tensor::activation::{silu, softplus_with_threshold};
use burn::tensor::module::{conv1d, embedding};
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Device, Int, Tensor, TensorData};
use serde_json::Value;

/// PyTorch's `F.softplus` returns its input above this (beta 1).
const SOFTPLUS_THRESHOLD: f64 = 20.0;
/// The context the published `*_seqlen-131k_*` checkpoints were trained at (2^17). The
/// architecture itself has no limit; a tokenizer's own `model_max_length` should take precedence.
const MAX_TOKENS: usize = 131_072;
/// Elements of the bulk-discretised scan inputs per chunk (two such buffers live at once).
const SCAN_CHUNK_ELEMENTS: usize = 1 << 22;

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

struct Mamba {
    in_proj: Linear,
    conv_weight: Tensor<3>,
    conv_bias: Option<Tensor<1>>,
    x_proj: Linear,
    dt_proj: Linear,
    /// `-exp(A_log)` [d_inner, d_state].
    a: Tensor<2>,
    d: Tensor<1>,
    out_proj: Linear,
    d_inner: usize,
    d_state: usize,
    dt_rank: usize,
}

/// The Mamba widths from `ssm_cfg` (mamba_ssm's defaults where absent).
struct MambaShape {
    d_model: usize,
    d_inner: usize,
    d_state: usize,
    d_conv: usize,
    dt_rank: usize,
    bias: bool,
    conv_bias: bool,
}

struct RmsNorm {
    weight: Tensor<1>,
    eps: f64,
}

impl Caduceus {
    /// Builds from config.json and the checkpoint on `device`, taking every tensor it uses;
    /// errors name a missing/mis-shaped tensor. (The caller calls `ckpt.finish()` afterwards.)
    pub fn load(config: &Value, ckpt: &mut Checkpoint, device: &Device) -> Result<Self> {
        let d_model = config_usize(config, "d_model")?;
        let eps = config_epsilon(config, "norm_epsilon", None)?;
        let vocab = padded_vocab(config)?;
        for (key, why) in [
            ("rms_norm", "LayerNorm variants are not supported"),
            (
                "fused_add_norm",
                "its hidden_states[-1] would not be the final output",
            ),
        ] {
            if config[key] != true {
                return Err(config_error(&format!(
                    "'{key}' must be true, as in the published Caduceus checkpoints ({why})"
                )));
            }
        }
        let rcps = config["rcps"] == true;
        let bidirectional = config["bidirectional"] != false;
        let multiply = match config["bidirectional_strategy"].as_str() {
            None | Some("add") => false,
            Some("ew_multiply") => true,
            Some(other) => {
                return Err(config_error(&format!(
                    "bidirectional_strategy '{other}' is not one of add, ew_multiply"
                )));
            }
        };
        let tie = config["bidirectional_weight_tie"] != false;
        let shape = MambaShape::from_config(config, d_model)?;

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
            let map = complement_map(config, vocab)?;
            Some(Tensor::from_data(TensorData::new(map, [vocab]), device))
        } else {
            None
        };
        let n_layer = config_layers(config, "n_layer", ckpt, |i| {
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

    /// last_hidden_state [batch, tokens, hidden] for token ids [batch, tokens] and the
    /// attention mask [batch, tokens] (1 for real tokens, then 0 for right padding).
    pub fn forward(&self, input_ids: Tensor<2, Int>, attention_mask: Tensor<2>) -> Tensor<3> {
        let rev = Reverser::new(attention_mask);
        let d = self.d_model;
        let Some(complement) = &self.complement else {
            let mut h = embedding(self.embeddings.clone(), input_ids);
            let mut residual: Option<Tensor<3>> = None;
            for layer in &self.layers {
                let sum = add(h, residual);
                h = layer.mixer.forward(layer.norm.forward(sum.clone()), &rev);
                residual = Some(sum);
            }
            return self.norm_f.forward(add(h, residual));
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
        for layer in &self.layers {
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
        // Final fused add + norm: first half forward, second half in RC orientation.
        let forward_sum = add(
            h.clone().narrow(2, 0, d),
            residual.as_ref().map(|r| r.clone().narrow(2, 0, d)),
        );
        let rc_sum = add(
            rev.rc(h.narrow(2, d, d)),
            residual.map(|r| rev.rc(r.narrow(2, d, d))),
        );
        Tensor::cat(
            vec![
                self.norm_f.forward(forward_sum),
                rev.rc(self.norm_f.forward(rc_sum)),
            ],
            2,
        )
    }

    /// d_model, doubled for the RC-equivariant (PS) variant.
    pub fn widest_activation(&self) -> usize {
        self.widest
    }

    pub fn hidden_size(&self) -> usize {
        if self.complement.is_some() {
            2 * self.d_model
        } else {
            self.d_model
        }
    }

    pub fn max_tokens(&self) -> usize {
        MAX_TOKENS
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
fn complement_map(config: &Value, vocab: usize) -> Result<Vec<i64>> {
    let map = config["complement_map"]
        .as_object()
        .ok_or_else(|| config_error("rcps is true but there is no 'complement_map' object"))?;
    let mut table: Vec<i64> = (0..vocab as i64).collect();
    for (id, complement) in map {
        let id: usize = id
            .parse()
            .map_err(|_| config_error(&format!("complement_map key '{id}' is not a token id")))?;
        let complement = complement
            .as_u64()
            .filter(|&c| (c as usize) < vocab && id < vocab);
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

impl MambaShape {
    fn from_config(config: &Value, d_model: usize) -> Result<MambaShape> {
        let ssm = &config["ssm_cfg"];
        let number = |key: &str, default: f64| -> Result<f64> {
            match &ssm[key] {
                Value::Null => Ok(default),
                v => v
                    .as_f64()
                    .ok_or_else(|| config_error(&format!("ssm_cfg.{key} must be a number"))),
            }
        };
        let dt_rank = match &ssm["dt_rank"] {
            Value::Null => d_model.div_ceil(16),
            Value::String(s) if s == "auto" => d_model.div_ceil(16),
            v => v
                .as_u64()
                .ok_or_else(|| config_error("ssm_cfg.dt_rank must be \"auto\" or an integer"))?
                as usize,
        };
        Ok(MambaShape {
            d_model,
            d_inner: (number("expand", 2.0)? * d_model as f64) as usize,
            d_state: number("d_state", 16.0)? as usize,
            d_conv: number("d_conv", 4.0)? as usize,
            dt_rank,
            bias: ssm["bias"] == true,
            conv_bias: ssm["conv_bias"] != false,
        })
    }
}

impl Mamba {
    /// Takes `{p}…`; with `shared` (weight-tied reverse direction) the in/out projections are
    /// the forward direction's unless the checkpoint stores its own copies under `{p}`.
    fn load(
        ckpt: &mut Checkpoint,
        p: &str,
        s: &MambaShape,
        shared: Option<&Mamba>,
        device: &Device,
    ) -> Result<Mamba> {
        let mut projection = |name: &str, fan_in, fan_out, tied: Option<&Linear>| match tied {
            Some(linear) if !ckpt.contains(&format!("{p}{name}.weight")) => Ok(linear.clone()),
            _ => Linear::load(ckpt, &format!("{p}{name}"), fan_in, fan_out, s.bias, device),
        };
        let in_proj = projection(
            "in_proj",
            s.d_model,
            2 * s.d_inner,
            shared.map(|m| &m.in_proj),
        )?;
        let out_proj = projection(
            "out_proj",
            s.d_inner,
            s.d_model,
            shared.map(|m| &m.out_proj),
        )?;
        let a_log = ckpt.take(&format!("{p}A_log"), &[s.d_inner, s.d_state])?;
        let a = a_log.iter().map(|v| -v.exp()).collect();
        Ok(Mamba {
            in_proj,
            conv_weight: param(
                ckpt,
                &format!("{p}conv1d.weight"),
                [s.d_inner, 1, s.d_conv],
                device,
            )?,
            conv_bias: if s.conv_bias {
                Some(param(
                    ckpt,
                    &format!("{p}conv1d.bias"),
                    [s.d_inner],
                    device,
                )?)
            } else {
                None
            },
            x_proj: Linear::load(
                ckpt,
                &format!("{p}x_proj"),
                s.d_inner,
                s.dt_rank + 2 * s.d_state,
                false,
                device,
            )?,
            dt_proj: Linear::load(
                ckpt,
                &format!("{p}dt_proj"),
                s.dt_rank,
                s.d_inner,
                true,
                device,
            )?,
            a: upload(a, [s.d_inner, s.d_state], device),
            d: param(ckpt, &format!("{p}D"), [s.d_inner], device)?,
            out_proj,
            d_inner: s.d_inner,
            d_state: s.d_state,
            dt_rank: s.dt_rank,
        })
    }

    /// [batch, tokens, d_model] → [batch, tokens, d_model], causal over tokens.
    fn forward(&self, hidden: Tensor<3>) -> Tensor<3> {
        let [_, tokens, _] = hidden.dims();
        let (n, inner) = (self.d_state, self.d_inner);
        let xz = self.in_proj.forward(hidden);
        let z = xz.clone().narrow(2, inner, inner);
        let kernel = self.conv_weight.dims()[2];
        let x = conv1d(
            xz.narrow(2, 0, inner).swap_dims(1, 2),
            self.conv_weight.clone(),
            self.conv_bias.clone(),
            ConvOptions::new_with_padding([1], [(kernel - 1, 0)], [1], inner),
        );
        let x = silu(x).swap_dims(1, 2); // [batch, tokens, d_inner]
        let projected = self.x_proj.forward(x.clone());
        let dt = projected.clone().narrow(2, 0, self.dt_rank);
        let b = projected.clone().narrow(2, self.dt_rank, n);
        let c = projected.narrow(2, self.dt_rank + n, n);
        let delta = softplus_with_threshold(self.dt_proj.forward(dt), 1.0, SOFTPLUS_THRESHOLD);
        let y = self.scan(x.clone(), delta, b, c, tokens);
        let y = (y + x * self.d.clone().unsqueeze::<3>()) * silu(z);
        self.out_proj.forward(y)
    }

    /// The selective scan's `C_t h_t` for x, Δ [batch, tokens, d_inner], B, C [batch, tokens,
    /// d_state], position by position.
    fn scan(
        &self,
        x: Tensor<3>,
        delta: Tensor<3>,
        b: Tensor<3>,
        c: Tensor<3>,
        tokens: usize,
    ) -> Tensor<3> {
        let [batch, _, inner] = x.dims();
        let n = self.d_state;
        let a = self.a.clone().reshape([1, 1, inner, n]);
        let chunk = (SCAN_CHUNK_ELEMENTS / (batch * inner * n)).clamp(1, tokens);
        // The CPU backend runs the recurrence position by position, the least arithmetic. A GPU
        // pays per kernel launch instead (three per position: 5,211 per pass of Caduceus-PH at
        // 200 nt, bench/README.md), so there each chunk is scanned by doubling.
        let by_doubling = x.device() != Device::flex();
        let mut state: Tensor<4> = Tensor::zeros([batch, 1, inner, n], &x.device());
        let mut outputs = Vec::with_capacity(tokens.div_ceil(chunk));
        for start in (0..tokens).step_by(chunk) {
            let len = chunk.min(tokens - start);
            let delta = delta.clone().narrow(1, start, len).unsqueeze_dim::<4>(3);
            let decay = (delta.clone() * a.clone()).exp();
            let input = delta
                * x.clone().narrow(1, start, len).unsqueeze_dim::<4>(3)
                * b.clone().narrow(1, start, len).unsqueeze_dim::<4>(2);
            let states = if by_doubling {
                scan_by_doubling(decay, input, state)
            } else {
                scan_in_order(decay, input, state)
            };
            state = states.clone().narrow(1, len - 1, 1);
            let readout = c.clone().narrow(1, start, len).unsqueeze_dim::<4>(2);
            outputs.push((states * readout).sum_dim(3).squeeze_dim::<3>(3));
        }
        Tensor::cat(outputs, 1)
    }
}

/// Every state of `h_t = decay_t · h_{t−1} + input_t` over a chunk ([batch, len, d_inner,
/// d_state]) from `h` before it ([batch, 1, …]), one position at a time.
fn scan_in_order(decay: Tensor<4>, input: Tensor<4>, mut h: Tensor<4>) -> Tensor<4> {
    let len = decay.dims()[1];
    let mut states = Vec::with_capacity(len);
    for t in 0..len {
        h = decay.clone().narrow(1, t, 1) * h + input.clone().narrow(1, t, 1);
        states.push(h.clone());
    }
    Tensor::cat(states, 1)
}

/// `scan_in_order` by doubling (Hillis–Steele): after the step with offset k, position t holds
/// the composition of the steps t−2k+1…t as one affine map (decay, input), so ⌈log₂ len⌉ steps
/// of whole-chunk ops replace len dependent ones (more arithmetic, far fewer launches).
fn scan_by_doubling(mut decay: Tensor<4>, mut input: Tensor<4>, h: Tensor<4>) -> Tensor<4> {
    let len = decay.dims()[1];
    let mut offset = 1;
    while offset < len {
        let rest = len - offset;
        let later_decay = decay.clone().narrow(1, offset, rest);
        let composed_input = later_decay.clone() * input.clone().narrow(1, 0, rest)
            + input.clone().narrow(1, offset, rest);
        let composed_decay = later_decay * decay.clone().narrow(1, 0, rest);
        // The first `offset` positions already compose every step since the chunk began.
        input = Tensor::cat(vec![input.narrow(1, 0, offset), composed_input], 1);
        decay = Tensor::cat(vec![decay.narrow(1, 0, offset), composed_decay], 1);
        offset *= 2;
    }
    decay * h + input
}

impl RmsNorm {
    fn load(
        ckpt: &mut Checkpoint,
        name: &str,
        dim: usize,
        eps: f64,
        device: &Device,
    ) -> Result<RmsNorm> {
        Ok(RmsNorm {
            weight: param(ckpt, &format!("{name}.weight"), [dim], device)?,
            eps,
        })
    }

    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let mean_square = (x.clone() * x.clone()).mean_dim(2);
        x / mean_square.add_scalar(self.eps).sqrt() * self.weight.clone().unsqueeze::<3>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scan_by_doubling_gives_the_states_in_order() {
        let device = crate::encoder::backend::cpu().device;
        let values = |n: usize, seed: f32| -> Vec<f32> {
            (0..n)
                .map(|i| ((i as f32 * 0.61 + seed).sin() + 1.0) * 0.5)
                .collect()
        };
        // Lengths around powers of two, and one position.
        for len in [1, 2, 3, 8, 13, 33] {
            let shape = [2, len, 3, 4];
            let n = shape.iter().product();
            let decay = upload(values(n, 0.3), shape, &device);
            let input = upload(
                values(n, 1.7).iter().map(|v| v - 0.5).collect(),
                shape,
                &device,
            );
            let h = upload(values(24, 2.9), [2, 1, 3, 4], &device);
            let read = |t: Tensor<4>| t.into_data().try_to_vec::<f32>().unwrap();
            let in_order = read(scan_in_order(decay.clone(), input.clone(), h.clone()));
            let doubled = read(scan_by_doubling(decay, input, h));
            let worst = in_order
                .iter()
                .zip(&doubled)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(
                worst <= 1e-6,
                "length {len}: max |in order - doubling| = {worst}"
            );
        }
    }
}
