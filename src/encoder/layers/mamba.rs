//! Mamba (Gu & Dao 2023) as mamba_ssm's `Mamba` module with `selective_scan_ref` computes it:
//! in_proj → causal depthwise conv + SiLU → x_proj to (dt, B, C) → dt_proj + softplus → the
//! selective scan `h_t = exp(Δ_t A) h_{t-1} + Δ_t B_t x_t`, `y_t = C_t h_t + D x_t` → gate by
//! SiLU(z) → out_proj. Shared by the architectures built on Mamba blocks (Caduceus, and
//! JanusDNA, whose Jamba-style mixer also RMS-normalises Δ, B and C after x_proj).
//!
//! The scan is sequential over positions. On the CPU backend it runs over the values on the host
//! (`scan_on_host`): one sequence's [d_inner, d_state] state stays in cache and `exp(ΔA)` is
//! computed as it is used. (As Burn tensor ops it was a handful of ops per position, each
//! dispatched and allocated for a few thousand numbers.) On a GPU the discretised `exp(ΔA)` and
//! `ΔBx` are formed in bulk for chunks of positions and each chunk is scanned by doubling
//! (`scan_by_chunks`), since there a launch per position is what costs.

use super::{Linear, RmsNorm, config_error, exp_nonpositive, host_values, param, silu, upload};
use crate::Result;
use crate::checkpoint::Checkpoint;
use burn::tensor::activation::softplus_with_threshold;
use burn::tensor::module::conv1d;
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Device, Tensor, TensorData};
use serde::Deserialize;

/// PyTorch's `F.softplus` returns its input above this (beta 1).
const SOFTPLUS_THRESHOLD: f64 = 20.0;

/// Elements of the bulk-discretised scan inputs per chunk (two such buffers live at once).
const SCAN_CHUNK_ELEMENTS: usize = 1 << 22;

/// `ssm_cfg`: the Mamba widths, mamba_ssm's defaults where absent.
#[derive(Deserialize, Default)]
pub struct SsmConfig {
    d_state: Option<f64>,
    d_conv: Option<f64>,
    expand: Option<f64>,
    dt_rank: Option<DtRank>,
    bias: Option<bool>,
    conv_bias: Option<bool>,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub enum DtRank {
    Rank(usize),
    /// Only "auto" (⌈d_model / 16⌉) is meaningful.
    Named(String),
}

pub struct Mamba {
    in_proj: Linear,
    conv_weight: Tensor<3>,
    conv_bias: Option<Tensor<1>>,
    x_proj: Linear,
    dt_proj: Linear,
    /// `-exp(A_log)` [d_inner, d_state], on the device and on the host (for `scan_on_host`).
    a: Tensor<2>,
    a_host: Vec<f32>,
    d: Tensor<1>,
    out_proj: Linear,
    /// Jamba's RMSNorms of Δ (before dt_proj), B and C.
    inner_norms: Option<[RmsNorm; 3]>,
    d_inner: usize,
    d_state: usize,
    dt_rank: usize,
}

/// The Mamba widths from `ssm_cfg` (mamba_ssm's defaults where absent).
pub struct MambaShape {
    pub d_model: usize,
    pub d_inner: usize,
    pub d_state: usize,
    pub d_conv: usize,
    pub dt_rank: usize,
    pub bias: bool,
    pub conv_bias: bool,
    /// Jamba's mixer: `dt_layernorm`, `b_layernorm`, `c_layernorm` with this epsilon.
    pub inner_norm_eps: Option<f64>,
}

impl MambaShape {
    pub fn from_config(ssm: &SsmConfig, d_model: usize) -> Result<MambaShape> {
        let dt_rank = match &ssm.dt_rank {
            None => d_model.div_ceil(16),
            Some(DtRank::Named(name)) if name == "auto" => d_model.div_ceil(16),
            Some(DtRank::Rank(rank)) => *rank,
            Some(DtRank::Named(_)) => {
                return Err(config_error(
                    "ssm_cfg.dt_rank must be \"auto\" or an integer",
                ));
            }
        };
        let d_conv = ssm.d_conv.unwrap_or(4.0) as usize;
        // The convolution pads by d_conv − 1: a zero-width kernel is no Mamba.
        if d_conv == 0 {
            return Err(config_error("ssm_cfg.d_conv must be at least 1"));
        }
        Ok(MambaShape {
            d_model,
            d_inner: (ssm.expand.unwrap_or(2.0) * d_model as f64) as usize,
            d_state: ssm.d_state.unwrap_or(16.0) as usize,
            d_conv,
            dt_rank,
            bias: ssm.bias == Some(true),
            conv_bias: ssm.conv_bias != Some(false),
            inner_norm_eps: None,
        })
    }
}

impl Mamba {
    /// Takes `{p}…`; with `shared` (weight-tied reverse direction) the in/out projections are
    /// the forward direction's unless the checkpoint stores its own copies under `{p}`.
    pub fn load(
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
        let inner_norms = match s.inner_norm_eps {
            Some(eps) => {
                let mut norm = |name: &str, dim| {
                    RmsNorm::load(ckpt, &format!("{p}{name}_layernorm"), dim, eps, device)
                };
                Some([
                    norm("dt", s.dt_rank)?,
                    norm("b", s.d_state)?,
                    norm("c", s.d_state)?,
                ])
            }
            None => None,
        };
        let a_log = ckpt.take(&format!("{p}A_log"), &[s.d_inner, s.d_state])?;
        let a: Vec<f32> = a_log.iter().map(|v| -v.exp()).collect();
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
            a: upload(a.clone(), [s.d_inner, s.d_state], device),
            a_host: a,
            d: param(ckpt, &format!("{p}D"), [s.d_inner], device)?,
            out_proj,
            inner_norms,
            d_inner: s.d_inner,
            d_state: s.d_state,
            dt_rank: s.dt_rank,
        })
    }

    /// [batch, tokens, d_model] → [batch, tokens, d_model], causal over tokens.
    pub fn forward(&self, hidden: Tensor<3>) -> Tensor<3> {
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
        let (dt, b, c) = match &self.inner_norms {
            Some([dt_norm, b_norm, c_norm]) => {
                (dt_norm.forward(dt), b_norm.forward(b), c_norm.forward(c))
            }
            None => (dt, b, c),
        };
        let delta = softplus_with_threshold(self.dt_proj.forward(dt), 1.0, SOFTPLUS_THRESHOLD);
        let y = selective_scan(&self.a, &self.a_host, x.clone(), delta, b, c);
        let y = (y + x * self.d.clone().unsqueeze::<3>()) * silu(z);
        self.out_proj.forward(y)
    }
}

/// The selective scan's `C_t h_t` (no D term) for x, Δ [batch, tokens, d_inner], B, C [batch,
/// tokens, d_state] and A [d_inner, d_state] (on the device, and its values on the host): over
/// host values on the CPU backend, by chunks on a GPU.
fn selective_scan(
    a: &Tensor<2>,
    a_host: &[f32],
    x: Tensor<3>,
    delta: Tensor<3>,
    b: Tensor<3>,
    c: Tensor<3>,
) -> Tensor<3> {
    if x.device() == Device::flex() {
        scan_on_host(a_host, x, delta, b, c)
    } else {
        scan_by_chunks(a, x, delta, b, c)
    }
}

/// `ssm_cfg` of a Mamba-2 layer (`{"layer": "Mamba2", …}`): mamba_ssm's `Mamba2` defaults where
/// absent. Settings the published checkpoints leave at their default and geneb does not
/// implement are refused by name.
#[derive(Deserialize, Default)]
pub struct Mamba2Config {
    layer: Option<String>,
    d_state: Option<usize>,
    d_conv: Option<usize>,
    expand: Option<usize>,
    headdim: Option<usize>,
    ngroups: Option<usize>,
    d_ssm: Option<usize>,
    #[serde(rename = "D_has_hdim")]
    d_has_hdim: Option<bool>,
    rmsnorm: Option<bool>,
    norm_before_gate: Option<bool>,
    bias: Option<bool>,
    conv_bias: Option<bool>,
    dt_limit: Option<(f64, Option<f64>)>,
}

/// Mamba-2 (Dao & Gu 2024) as mamba_ssm 2.2.4's `Mamba2` computes it with one group of B and C
/// (`ngroups` 1) and its gated RMSNorm: in_proj to z, xBC and Δ per head → causal depthwise
/// conv + SiLU over xBC → split x, B, C → Δ = softplus(Δ + dt_bias) → the scalar-per-head SSM
/// `h_t = exp(Δ_t A) h_{t-1} + Δ_t B_t x_t`, `y_t = C_t h_t + D x_t` (each head's channels
/// share its Δ and A: the selective scan above with Δ and A repeated over the head's channels,
/// as mamba_ssm's own `ssd_selective_scan` reference maps it) → RMSNorm(y · SiLU(z)) → out_proj.
pub struct Mamba2 {
    z_proj: Linear,
    xbc_proj: Linear,
    dt_proj: Linear,
    conv_weight: Tensor<3>,
    conv_bias: Option<Tensor<1>>,
    dt_bias: Tensor<1>,
    /// `-exp(A_log)` of each head, repeated over the head's channels and the state:
    /// [d_inner, d_state], on the device and on the host.
    a: Tensor<2>,
    a_host: Vec<f32>,
    /// D of each head, repeated over its channels [d_inner].
    d: Tensor<1>,
    norm: RmsNorm,
    out_proj: Linear,
    d_inner: usize,
    d_state: usize,
    heads: usize,
}

impl Mamba2 {
    /// Loads `{p}in_proj`, `{p}conv1d`, `{p}dt_bias`, `{p}A_log`, `{p}D`, `{p}norm`, `{p}out_proj`.
    pub fn load(
        ckpt: &mut Checkpoint,
        p: &str,
        cfg: &Mamba2Config,
        d_model: usize,
        device: &Device,
    ) -> Result<Mamba2> {
        let refuse = |what: &str| {
            Err(config_error(&format!(
                "ssm_cfg: {what} is not supported (geneb runs mamba_ssm's Mamba2 at its defaults \
                 there, as the published eccDNAMamba checkpoint does)"
            )))
        };
        if cfg.layer.as_deref() != Some("Mamba2") {
            return refuse(&format!("layer {:?} (not \"Mamba2\")", cfg.layer));
        }
        if cfg.ngroups.unwrap_or(1) != 1 {
            return refuse("ngroups other than 1");
        }
        if cfg.d_ssm.is_some() || cfg.d_has_hdim == Some(true) {
            return refuse("d_ssm or D_has_hdim");
        }
        if cfg.rmsnorm == Some(false) || cfg.norm_before_gate == Some(true) {
            return refuse("rmsnorm false or norm_before_gate true");
        }
        if cfg
            .dt_limit
            .is_some_and(|(low, high)| low != 0.0 || high.is_some())
        {
            return refuse("a dt_limit");
        }
        let (d_state, d_conv) = (cfg.d_state.unwrap_or(128), cfg.d_conv.unwrap_or(4));
        let headdim = cfg.headdim.unwrap_or(64);
        let d_inner = cfg.expand.unwrap_or(2) * d_model;
        if d_conv == 0 || headdim == 0 || !d_inner.is_multiple_of(headdim) {
            return Err(config_error(&format!(
                "ssm_cfg: d_conv {d_conv} must be at least 1 and headdim {headdim} must divide \
                 expand × d_model = {d_inner}"
            )));
        }
        let heads = d_inner / headdim;
        let conv_dim = d_inner + 2 * d_state;
        let bias = cfg.bias == Some(true);
        // in_proj's rows are [z, xBC, Δ]: three products rather than one product sliced.
        let [z_proj, xbc_proj, dt_proj] = Linear::load_stacked(
            ckpt,
            &format!("{p}in_proj"),
            d_model,
            [d_inner, conv_dim, heads],
            bias,
            device,
        )?;
        let conv_bias = if cfg.conv_bias != Some(false) {
            Some(param(ckpt, &format!("{p}conv1d.bias"), [conv_dim], device)?)
        } else {
            None
        };
        let a_log = ckpt.take(&format!("{p}A_log"), &[heads])?;
        let per_channel = |values: &[f32], repeat: usize| -> Vec<f32> {
            values
                .iter()
                .flat_map(|&v| std::iter::repeat_n(v, headdim * repeat))
                .collect()
        };
        let a_heads: Vec<f32> = a_log.iter().map(|v| -v.exp()).collect();
        let a_host = per_channel(&a_heads, d_state);
        let d = per_channel(&ckpt.take(&format!("{p}D"), &[heads])?, 1);
        Ok(Mamba2 {
            z_proj,
            xbc_proj,
            dt_proj,
            conv_weight: param(
                ckpt,
                &format!("{p}conv1d.weight"),
                [conv_dim, 1, d_conv],
                device,
            )?,
            conv_bias,
            dt_bias: param(ckpt, &format!("{p}dt_bias"), [heads], device)?,
            a: upload(a_host.clone(), [d_inner, d_state], device),
            a_host,
            d: upload(d, [d_inner], device),
            // `RMSNormGated(d_ssm, eps=1e-5, group_size=d_ssm // ngroups)`: one group.
            norm: RmsNorm::load(ckpt, &format!("{p}norm"), d_inner, 1e-5, device)?,
            out_proj: Linear::load(
                ckpt,
                &format!("{p}out_proj"),
                d_inner,
                d_model,
                bias,
                device,
            )?,
            d_inner,
            d_state,
            heads,
        })
    }

    /// [batch, tokens, d_model] → [batch, tokens, d_model], causal over tokens.
    pub fn forward(&self, hidden: Tensor<3>) -> Tensor<3> {
        let [batch, tokens, _] = hidden.dims();
        let (inner, n) = (self.d_inner, self.d_state);
        let z = self.z_proj.forward(hidden.clone());
        let dt = self.dt_proj.forward(hidden.clone());
        let xbc = self.xbc_proj.forward(hidden).swap_dims(1, 2);
        let [_, channels, _] = xbc.dims();
        let kernel = self.conv_weight.dims()[2];
        let xbc = conv1d(
            xbc,
            self.conv_weight.clone(),
            self.conv_bias.clone(),
            ConvOptions::new_with_padding([1], [(kernel - 1, 0)], [1], channels),
        );
        let xbc = silu(xbc).swap_dims(1, 2); // [batch, tokens, d_inner + 2·d_state]
        let x = xbc.clone().narrow(2, 0, inner);
        let b = xbc.clone().narrow(2, inner, n);
        let c = xbc.narrow(2, inner + n, n);
        let delta = softplus_with_threshold(
            dt + self.dt_bias.clone().unsqueeze::<3>(),
            1.0,
            SOFTPLUS_THRESHOLD,
        );
        let delta = delta
            .unsqueeze_dim::<4>(3)
            .expand([batch, tokens, self.heads, inner / self.heads])
            .reshape([batch, tokens, inner]);
        let y = selective_scan(&self.a, &self.a_host, x.clone(), delta, b, c);
        let y = y + x * self.d.clone().unsqueeze::<3>();
        self.out_proj.forward(self.norm.forward(y * silu(z)))
    }
}

/// The selective scan's `C_t h_t` for x, Δ [batch, tokens, d_inner], B, C [batch, tokens,
/// d_state] and A [d_inner, d_state], on the CPU backend: the recurrence position by position
/// over host values, the sequences of the batch on rayon's threads.
fn scan_on_host(
    a: &[f32],
    x: Tensor<3>,
    delta: Tensor<3>,
    b: Tensor<3>,
    c: Tensor<3>,
) -> Tensor<3> {
    let [batch, tokens, inner] = x.dims();
    let n = b.dims()[2];
    let (x, delta, b, c) = (
        host_values(x),
        host_values(delta),
        host_values(b),
        host_values(c),
    );
    let mut y = vec![0f32; batch * tokens * inner];
    let scan_sequence = |(sequence, y): (usize, &mut [f32])| {
        let mut h = vec![0f32; inner * n];
        for t in 0..tokens {
            let at = sequence * tokens + t;
            let (x, delta) = (&x[at * inner..][..inner], &delta[at * inner..][..inner]);
            let (b, c) = (&b[at * n..][..n], &c[at * n..][..n]);
            let y = &mut y[t * inner..][..inner];
            for i in 0..inner {
                let (dt, dt_x) = (delta[i], delta[i] * x[i]);
                let (h, a) = (&mut h[i * n..][..n], &a[i * n..][..n]);
                let mut readout = 0.0;
                for k in 0..n {
                    // Δ ≥ 0 (a softplus) and A < 0: exp_nonpositive's domain.
                    h[k] = exp_nonpositive(dt * a[k]) * h[k] + dt_x * b[k];
                    readout += c[k] * h[k];
                }
                y[i] = readout;
            }
        }
    };
    use rayon::prelude::*;
    y.par_chunks_mut((tokens * inner).max(1))
        .enumerate()
        .for_each(scan_sequence);
    Tensor::from_data(TensorData::new(y, [batch, tokens, inner]), &Device::flex())
}

/// `scan_on_host` for a GPU: `exp(ΔA)` and `ΔBx` formed in bulk for chunks of positions, each
/// chunk scanned by doubling. A GPU pays per kernel launch (three per position in order: 5,211
/// per pass of Caduceus-PH at 200 nt, bench/README.md), not per operation.
fn scan_by_chunks(
    a: &Tensor<2>,
    x: Tensor<3>,
    delta: Tensor<3>,
    b: Tensor<3>,
    c: Tensor<3>,
) -> Tensor<3> {
    let [batch, tokens, inner] = x.dims();
    let n = b.dims()[2];
    let a = a.clone().reshape([1, 1, inner, n]);
    let chunk = (SCAN_CHUNK_ELEMENTS / (batch * inner * n).max(1)).clamp(1, tokens.max(1));
    let mut state: Tensor<4> = Tensor::zeros([batch, 1, inner, n], &x.device());
    let mut outputs = Vec::with_capacity(tokens.div_ceil(chunk));
    for start in (0..tokens).step_by(chunk) {
        let len = chunk.min(tokens - start);
        let delta = delta.clone().narrow(1, start, len).unsqueeze_dim::<4>(3);
        let decay = (delta.clone() * a.clone()).exp();
        let input = delta
            * x.clone().narrow(1, start, len).unsqueeze_dim::<4>(3)
            * b.clone().narrow(1, start, len).unsqueeze_dim::<4>(2);
        let states = scan_by_doubling(decay, input, state);
        state = states.clone().narrow(1, len - 1, 1);
        let readout = c.clone().narrow(1, start, len).unsqueeze_dim::<4>(2);
        outputs.push((states * readout).sum_dim(3).squeeze_dim::<3>(3));
    }
    Tensor::cat(outputs, 1)
}

/// Every state of `h_t = decay_t · h_{t−1} + input_t` over a chunk ([batch, len, d_inner,
/// d_state]) from `h` before it ([batch, 1, …]), by doubling (Hillis–Steele): after the step with
/// offset k, position t holds the composition of the steps t−2k+1…t as one affine map (decay,
/// input), so ⌈log₂ len⌉ steps of whole-chunk ops replace len dependent ones (more arithmetic,
/// far fewer launches).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_scan_and_the_scan_by_doubling_agree() {
        let device = crate::encoder::backend::cpu().device;
        let values = |n: usize, seed: f32| -> Vec<f32> {
            (0..n)
                .map(|i| ((i as f32 * 0.61 + seed).sin() + 1.0) * 0.5)
                .collect()
        };
        let (inner, n) = (3, 4);
        let a: Vec<f32> = values(inner * n, 0.9).iter().map(|v| -0.2 - v).collect();
        // Lengths around powers of two, one position, and several chunks.
        for len in [1, 2, 3, 8, 13, 33, 1 << 19] {
            let (x, delta, b, c) = (
                upload(values(2 * len * inner, 1.7), [2, len, inner], &device),
                upload(values(2 * len * inner, 0.3), [2, len, inner], &device),
                upload(values(2 * len * n, 2.9), [2, len, n], &device),
                upload(values(2 * len * n, 0.4), [2, len, n], &device),
            );
            let read = |t: Tensor<3>| t.into_data().try_to_vec::<f32>().unwrap();
            let on_host = read(scan_on_host(
                &a,
                x.clone(),
                delta.clone(),
                b.clone(),
                c.clone(),
            ));
            let a = upload(a.clone(), [inner, n], &device);
            let by_chunks = read(scan_by_chunks(&a, x, delta, b, c));
            let worst = on_host
                .iter()
                .zip(&by_chunks)
                .map(|(p, q)| (p - q).abs() / q.abs().max(1.0))
                .fold(0f32, f32::max);
            assert!(
                worst <= 1e-5,
                "length {len}: max |host - doubling| = {worst}"
            );
        }
    }
}
