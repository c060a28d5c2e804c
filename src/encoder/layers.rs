//! The building blocks the transformer encoders share (BERT, DNABERT-2, NT-v2), loaded from a
//! checkpoint by their PyTorch names. Weights are uploaded tensor by tensor as they are taken.

use crate::Result;
use crate::hf::Checkpoint;
use burn::tensor::activation::{gelu, gelu_approximate, relu, silu, softmax};
use burn::tensor::module::layer_norm;
use burn::tensor::{Device, Tensor, TensorData};

pub fn upload<const D: usize>(data: Vec<f32>, shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::from_data(TensorData::new(data, shape), device)
}

/// `torch.nn.Linear`: y = x Wᵀ + b, with W stored transposed once at load.
pub struct Linear {
    /// [in, out]
    weight_t: Tensor<2>,
    bias: Option<Tensor<1>>,
    out_features: usize,
}

impl Linear {
    /// Loads `{name}.weight` ([out, in]) and, when `bias`, `{name}.bias`.
    pub fn load(
        ckpt: &mut Checkpoint,
        name: &str,
        in_features: usize,
        out_features: usize,
        bias: bool,
        device: &Device,
    ) -> Result<Linear> {
        let weight = ckpt.take(&format!("{name}.weight"), &[out_features, in_features])?;
        let weight_t = upload(weight, [out_features, in_features], device).transpose();
        let bias = if bias {
            let b = ckpt.take(&format!("{name}.bias"), &[out_features])?;
            Some(upload(b, [out_features], device))
        } else {
            None
        };
        Ok(Linear {
            weight_t,
            bias,
            out_features,
        })
    }

    /// x: [batch, tokens, in] → [batch, tokens, out]
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let [batch, tokens, features] = x.dims();
        let y = x
            .reshape([batch * tokens, features])
            .matmul(self.weight_t.clone());
        let y = match &self.bias {
            Some(b) => y + b.clone().unsqueeze_dim(0),
            None => y,
        };
        y.reshape([batch, tokens, self.out_features])
    }
}

pub struct LayerNorm {
    gamma: Tensor<1>,
    beta: Tensor<1>,
    eps: f64,
}

impl LayerNorm {
    pub fn load(
        ckpt: &mut Checkpoint,
        name: &str,
        features: usize,
        eps: f64,
        device: &Device,
    ) -> Result<LayerNorm> {
        let gamma = ckpt.take(&format!("{name}.weight"), &[features])?;
        let beta = ckpt.take(&format!("{name}.bias"), &[features])?;
        Ok(LayerNorm {
            gamma: upload(gamma, [features], device),
            beta: upload(beta, [features], device),
            eps,
        })
    }

    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        layer_norm(x, self.gamma.clone(), Some(self.beta.clone()), self.eps)
    }
}

/// The activations HF configs name in `hidden_act`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// Exact (erf) GELU, PyTorch's default.
    Gelu,
    /// tanh-approximated GELU (`gelu_new`, `gelu_pytorch_tanh`).
    GeluTanh,
    Relu,
    Silu,
}

impl Activation {
    pub fn parse(name: &str) -> Option<Activation> {
        Some(match name {
            "gelu" => Activation::Gelu,
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Activation::GeluTanh,
            "relu" => Activation::Relu,
            "silu" | "swish" => Activation::Silu,
            _ => return None,
        })
    }

    pub fn apply<const D: usize>(self, x: Tensor<D>) -> Tensor<D> {
        match self {
            Activation::Gelu => gelu(x),
            Activation::GeluTanh => gelu_approximate(x),
            Activation::Relu => relu(x),
            Activation::Silu => silu(x),
        }
    }
}

/// Additive attention bias that removes padded keys: [batch, 1, 1, tokens], 0 where the mask
/// is 1 and a large negative number where it is 0 (finite, so no backend meets inf − inf).
pub fn padding_bias(attention_mask: Tensor<2>) -> Tensor<4> {
    let [batch, tokens] = attention_mask.dims();
    ((attention_mask - 1.0) * 1.0e30).reshape([batch, 1, 1, tokens])
}

/// [batch, tokens, heads·head_dim] → [batch, heads, tokens, head_dim]
pub fn split_heads(x: Tensor<3>, heads: usize) -> Tensor<4> {
    let [batch, tokens, width] = x.dims();
    x.reshape([batch, tokens, heads, width / heads])
        .swap_dims(1, 2)
}

/// softmax(q kᵀ · scale + bias) v, heads merged back: q, k, v [batch, heads, tokens, head_dim],
/// bias broadcastable to [batch, heads, tokens, tokens].
pub fn attention(
    q: Tensor<4>,
    k: Tensor<4>,
    v: Tensor<4>,
    scale: f64,
    bias: Tensor<4>,
) -> Tensor<3> {
    let [batch, heads, tokens, head_dim] = q.dims();
    let scores = q.matmul(k.swap_dims(2, 3)) * scale + bias;
    softmax(scores, 3)
        .matmul(v)
        .swap_dims(1, 2)
        .reshape([batch, tokens, heads * head_dim])
}

/// A required integer from config.json, with the user-facing error when it is absent.
pub fn config_usize(config: &serde_json::Value, key: &str) -> Result<usize> {
    config
        .get(key)
        .and_then(serde_json::Value::as_u64)
        .map(|v| v as usize)
        .ok_or_else(|| {
            crate::Error::in_file(
                "config.json",
                format!("'{key}' is missing or not a whole number"),
            )
        })
}

pub fn config_f64(config: &serde_json::Value, key: &str, default: f64) -> f64 {
    config
        .get(key)
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(default)
}

pub fn config_activation(config: &serde_json::Value, default: &str) -> Result<Activation> {
    let name = config
        .get("hidden_act")
        .and_then(serde_json::Value::as_str)
        .unwrap_or(default);
    Activation::parse(name).ok_or_else(|| {
        crate::Error::in_file(
            "config.json",
            format!("hidden_act '{name}' is not supported (gelu, gelu_new, relu, silu)"),
        )
    })
}
