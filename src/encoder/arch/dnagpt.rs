//! DNAGPT (TencentAILabHealthcare/DNAGPT, `dna_gpt/model/gpt.py` and `dna_gpt.py`): a GPT-2
//! decoder — causal attention, pre-LayerNorm blocks, tanh-GELU MLP, learned positions, no biases
//! in the published models (`bias=False`, LayerNorms included) — with DNAGPT's masked-LM head
//! (Linear, SiLU, LayerNorm, Linear to the vocabulary) on top.
//!
//! GENEB's extractor (`embedding_pipeline/extractors/dnagpt.py`) pools what `model(input_ids,
//! attention_mask)` returns, and DNAGPT's forward returns the masked-LM head's logits (the mask
//! lands in its unused `numbers` argument): so the embedding is the mean of those logits over the
//! tokens, one value per vocabulary entry, and that is what geneb returns (`Pooling::HeadLogitsMean`):
//! the head's last layer is linear, so it is applied to the mean of the states before it, once
//! per sequence (the same numbers, without a [batch, tokens, 15,659] tensor).
//! It runs one sequence per batch (its default); geneb batches with right padding, which a causal
//! model's real tokens never see.
//!
//! dnagpt.py's newest version (e3d5f45) runs GENEB's vendored copy of DNAGPT, whose forward
//! returns `(logits, x)`, and pools `x`, `ln_f`'s output, over `<R>` and the sequence's k-mers:
//! config.json's `"output": "hidden"` and `"prompt": "R"` (which the published name
//! dna_gpt3b_m implies) run that recipe (`recipe::DNAGPT_HIDDEN`); the head is then not read.
//!
//! The published weights are one `torch.save` file per model (`dna_gpt0.1b_h.pth`, `{"model":
//! state_dict}`) with no config.json: the model's name selects its shape, as `DNAGPT.from_name`
//! does (`published_config`). A folder with a config.json giving the same keys runs any size.

use super::gpt2::{Block, embed};
use super::{Arch, ArchSpec, Kept, Pooling, check_layers, parse_config, size};
use crate::Result;
use crate::checkpoint::Checkpoint;
use crate::encoder::family;
use crate::encoder::layers::{
    Activation, EmbeddingTable, LayerNorm, Linear, checkpoint_prefix, config_error, head_dim, silu,
};
use crate::tokenize::TokenizerChoice;
use burn::tensor::{Device, Int, Tensor};
use serde::Deserialize;
use serde_json::{Value, json};

/// DNAGPT's own LayerNorm default.
const EPS: f64 = 1e-5;

pub const SPEC: ArchSpec = ArchSpec {
    name: family::DNAGPT.architecture,
    family: family::DNAGPT.name,
    serves: "DNAGPT (TencentAILabHealthcare/DNAGPT: dna_gpt0.1b_h, dna_gpt0.1b_m)",
    matches,
    tokenizer: TokenizerChoice::DnaGptKmers,
    poolings: &[Pooling::HeadLogitsMean, Pooling::MaskedMean],
    load: |config, ckpt, compute| Ok(Box::new(DnaGpt::load(config, ckpt, &compute.device)?)),
    recipe: &crate::encoder::recipe::DNAGPT,
    published_config: Some(published_config),
};

/// `DNAGPT.__init__`'s arguments, with the tokenizer's k-mer settings.
#[derive(Deserialize)]
struct Config {
    #[serde(deserialize_with = "size")]
    vocab_size: usize,
    #[serde(deserialize_with = "size")]
    max_len: usize,
    #[serde(deserialize_with = "size")]
    num_layers: usize,
    #[serde(deserialize_with = "size")]
    num_heads: usize,
    #[serde(deserialize_with = "size")]
    embedding_dim: usize,
    bias: bool,
    #[serde(default)]
    output: Output,
}

/// What the extractor pools: the masked-LM head's logits (the upstream forward's only output),
/// or `ln_f`'s hidden states (the second of the vendored forward's `(logits, x)`).
#[derive(Deserialize, Default, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
enum Output {
    #[default]
    HeadLogits,
    Hidden,
}

pub fn matches(config: &Value) -> bool {
    config.get("model_type").and_then(|v| v.as_str()) == Some("dnagpt")
}

/// The config.json `DNAGPT.from_name` and the extractor imply for a published weights file,
/// by its name: `KmerTokenizer(6, 34 reserved tokens, dynamic)` with `dynamic` false for
/// dna_gpt0.1b_h only, and the model's shape.
fn published_config(weights_file: &str) -> Option<Value> {
    let (max_len, layers, heads, dim, dynamic) = match weights_file {
        "dna_gpt0.1b_h.pth" => (4096, 12, 12, 768, false),
        "dna_gpt0.1b_m.pth" => (512, 12, 12, 768, true),
        "dna_gpt3b_m.pth" => (512, 60, 64, 2048, true),
        _ => return None,
    };
    let kmer = 6;
    // The 3B model's published row: dnagpt.py at e3d5f45 (recipe::DNAGPT_HIDDEN).
    let hidden = weights_file == "dna_gpt3b_m.pth";
    let mut config = json!({
        "model_type": "dnagpt",
        "vocab_size": crate::tokenize::dnagpt_vocab_size(kmer, dynamic),
        "max_len": max_len,
        "num_layers": layers,
        "num_heads": heads,
        "embedding_dim": dim,
        "bias": false,
        "kmer": kmer,
        "dynamic_kmer": dynamic,
    });
    if hidden {
        config["output"] = json!("hidden");
        config["prompt"] = json!("R");
    }
    Some(config)
}

/// The masked-LM head: Linear, SiLU, LayerNorm, Linear to the vocabulary.
struct Head {
    dense: Linear,
    norm: LayerNorm,
    decoder: Linear,
}

pub struct DnaGpt {
    output: Output,
    wte: EmbeddingTable,
    wpe: EmbeddingTable,
    blocks: Vec<Block>,
    ln_f: LayerNorm,
    /// None where the hidden states are pooled.
    head: Option<Head>,
    heads: usize,
    dim: usize,
    vocab: usize,
    max_len: usize,
}

impl DnaGpt {
    fn load(config: &Value, ckpt: &mut Checkpoint, device: &Device) -> Result<DnaGpt> {
        let c: Config = parse_config(config)?;
        let (dim, heads, vocab, bias) = (c.embedding_dim, c.num_heads, c.vocab_size, c.bias);
        // The published checkpoints nest nothing; a DDP-saved one prefixes `module.`.
        let prefix = checkpoint_prefix(ckpt, &["", "module."], "transformer.wte.weight", "DNAGPT")?;
        let p = |name: &str| format!("{prefix}{name}");
        let linear = |ckpt: &mut Checkpoint, name: &str, inputs, outputs| {
            Linear::load(ckpt, &p(name), inputs, outputs, bias, device)
        };
        let norm = |ckpt: &mut Checkpoint, name: &str| {
            LayerNorm::load_with_bias(ckpt, &p(name), dim, EPS, bias, device)
        };
        let wte = EmbeddingTable::load(ckpt, &p("transformer.wte.weight"), [vocab, dim], device)?;
        let wpe =
            EmbeddingTable::load(ckpt, &p("transformer.wpe.weight"), [c.max_len, dim], device)?;
        let layers = check_layers("num_layers", c.num_layers, ckpt, |i| {
            p(&format!("transformer.h.{i}.attn.c_attn.weight"))
        })?;
        let mut blocks = Vec::with_capacity(layers);
        let scale = 1.0 / (head_dim(dim, heads)? as f64).sqrt();
        for i in 0..layers {
            let b = |name: &str| format!("transformer.h.{i}.{name}");
            // c_attn [3·dim, dim]: the queries', keys' and values' rows.
            let c_attn = p(&b("attn.c_attn"));
            let [q, k, v] = Linear::load_parts(ckpt, &c_attn, dim, dim, bias, device)?;
            blocks.push(Block {
                ln_1: norm(ckpt, &b("ln_1"))?,
                q,
                k,
                v,
                attn_proj: linear(ckpt, &b("attn.c_proj"), dim, dim)?,
                ln_2: norm(ckpt, &b("ln_2"))?,
                c_fc: linear(ckpt, &b("mlp.c_fc"), dim, 4 * dim)?,
                mlp_proj: linear(ckpt, &b("mlp.c_proj"), 4 * dim, dim)?,
                scale,
            });
        }
        let ln_f = norm(ckpt, "transformer.ln_f")?;
        let head = match c.output {
            Output::HeadLogits => Some(Head {
                dense: linear(ckpt, "mlm_head.0", dim, dim)?,
                norm: norm(ckpt, "mlm_head.2")?,
                decoder: linear(ckpt, "mlm_head.3", dim, vocab)?,
            }),
            Output::Hidden => {
                ckpt.skip_prefix(&p("mlm_head."));
                None
            }
        };
        // Heads for DNAGPT's numeric inputs and outputs, unused by the extractor.
        ckpt.skip_prefix(&p("number_embedding."));
        ckpt.skip_prefix(&p("num_regression."));
        if c.max_len == 0 {
            return Err(config_error("'max_len' is 0"));
        }
        Ok(DnaGpt {
            output: c.output,
            wte,
            wpe,
            blocks,
            ln_f,
            head,
            heads,
            dim,
            vocab,
            max_len: c.max_len,
        })
    }

    /// The index of the last state: the blocks, plus the head's where it is pooled.
    fn last_layer(&self) -> usize {
        self.blocks.len() + usize::from(self.head.is_some())
    }
}

impl Arch for DnaGpt {
    /// The states the head's last layer reads, or ln_f's.
    fn hidden_size(&self) -> usize {
        self.dim
    }

    /// The logits the extractor pools: one value per vocabulary entry.
    fn embedding_size(&self) -> usize {
        match self.head {
            Some(_) => self.vocab,
            None => self.dim,
        }
    }

    /// The masked-LM head's last layer, on the mean of the states it reads.
    fn after_pooling(&self, pooled: Tensor<2>) -> Tensor<2> {
        match &self.head {
            Some(head) => head.decoder.forward(pooled),
            None => pooled,
        }
    }

    fn recipe(&self) -> Option<&'static crate::encoder::recipe::Recipe> {
        (self.output == Output::Hidden).then_some(&crate::encoder::recipe::DNAGPT_HIDDEN)
    }

    fn token_rows(&self) -> usize {
        self.vocab
    }

    /// The position table's length (the extractor truncates the tokens to it).
    fn max_tokens(&self) -> usize {
        self.max_len
    }

    fn widest_activation(&self) -> usize {
        4 * self.dim
    }

    /// The masked-LM head's states before its last layer [batch, tokens, dim], or ln_f's output
    /// where the extractor pools that.
    fn pass(
        &self,
        input_ids: Tensor<2, Int>,
        attention_mask: Tensor<2>,
        kept: &mut Kept,
    ) -> Tensor<3> {
        let (mut x, bias) = embed(&self.wte, &self.wpe, input_ids, attention_mask);
        let deepest = kept.deepest();
        for (i, block) in self.blocks.iter().enumerate().take(deepest) {
            kept.offer(i, &x);
            x = block.forward(x, self.heads, Activation::GeluTanh, bias.clone());
        }
        let layers = self.blocks.len();
        if deepest < layers {
            kept.offer(deepest, &x);
            return x;
        }
        let hidden = self.ln_f.forward(x);
        kept.offer(layers, &hidden);
        match &self.head {
            Some(head) if deepest > layers => {
                let head_states = head.norm.forward(silu(head.dense.forward(hidden)));
                kept.offer(layers + 1, &head_states);
                head_states
            }
            _ => hidden,
        }
    }

    /// DNAGPT's blocks (its code has no `output_hidden_states`): the embeddings, each block's
    /// output, the last block's after `ln_f` (GPT-2's last hidden state), then, where the
    /// extractor pools the masked-LM head's logits, one layer more: the states the head's last
    /// layer reads (today's embedding).
    fn layers(&self) -> usize {
        self.last_layer()
    }

    fn family(&self) -> &'static str {
        SPEC.family
    }
}
