//! A model as the user names it, parsed once into a typed value: `kmer:K[:canonical]`,
//! `random-cnn[:SEED]`, `hf:FOLDER` or `hf:owner/name[@revision]`, an `hf:` model optionally
//! with `?window=SIZE,STRIDE`, `?recipe=NAME`, `?layer=K` and/or `?weights=f32|half` (joined by `&`). The CLI and the page parse
//! what the user wrote once, at their boundary; the run, the encoders and the shard plan take the
//! typed value.

use super::kmer::MAX_K;
use crate::{Error, Result};

/// A model as the user named it: the words (what shard plans and the page key it by, so a
/// sharded run keeps its folders) and what they mean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    /// As written, trimmed.
    given: String,
    pub kind: ModelKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelKind {
    Kmer { k: usize, canonical: bool },
    RandomCnn { seed: u32 },
    Hf(HfSpec),
}

/// A Hugging Face model: a local folder or a hub id, as the user wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HfSpec {
    /// The spec as the user wrote it (trimmed): the model's id in results and caches.
    pub text: String,
    /// What follows `hf:` (options removed): a folder, or `owner/name[@revision]`.
    pub source: String,
    pub window: Option<Window>,
    /// `?recipe=NAME`: another of GENEB's extractor recipes than the model's own
    /// (`encoder::recipe`, e.g. `dnabert2-cls`).
    pub recipe: Option<String>,
    /// `?layer=K`: the hidden state pooled, indexed as transformers' `output_hidden_states`
    /// indexes them (0 = the embeddings' output, L = the last layer's), a negative K counting
    /// from the end. None (or −1) is GENEB's: the last layer, as without the option.
    pub layer: Option<i64>,
    /// `?weights=f32|half`: what the large matrices are held in, whatever the memory budget
    /// would choose (`pretrained::hold_weights`).
    pub weights: Option<Weights>,
}

/// What a model's large matrices are held in, where the user says (`?weights=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    F32,
    /// Half precision: the checkpoint's own bf16 or f16, else bf16.
    Half,
}

/// The layer GENEB probes: the last (`?layer=-1`).
pub const LAST_LAYER: i64 = -1;

/// `geneb eval --layers`: which layers of each `hf:` model run, each as a submission of its
/// own (`hf:MODEL?layer=K`), from one forward pass.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "String")]
pub enum LayerSweep {
    /// Every hidden state, 0 (the embeddings' output) to the last.
    All,
    /// These K (negative from the end), in the order given.
    Only(Vec<i64>),
}

impl LayerSweep {
    /// `all`, or K values separated by commas (`0,6,-1`).
    pub fn parse(text: &str) -> Result<LayerSweep> {
        if text.trim() == "all" {
            return Ok(LayerSweep::All);
        }
        let ks = text
            .split(',')
            .map(|k| k.trim().parse::<i64>())
            .collect::<std::result::Result<Vec<i64>, _>>();
        match ks {
            Ok(ks) if !ks.is_empty() => Ok(LayerSweep::Only(ks)),
            _ => Err(Error::new(format!(
                "--layers '{text}': expected all, or layers K separated by commas (0 = the \
                 embeddings' output, -1 = the last layer's)"
            ))),
        }
    }

    /// The K asked for, None for all.
    pub fn ks(&self) -> Option<&[i64]> {
        match self {
            LayerSweep::All => None,
            LayerSweep::Only(ks) => Some(ks),
        }
    }
}

impl TryFrom<String> for LayerSweep {
    type Error = Error;
    fn try_from(text: String) -> Result<LayerSweep> {
        LayerSweep::parse(&text)
    }
}

/// `?layer=K` for a model of `layers` layers (hidden states 0..=layers): the state's index, or
/// None where K is outside −(layers + 1)…layers.
pub fn resolve_layer(k: i64, layers: usize) -> Option<usize> {
    let states = i64::try_from(layers).ok()?.checked_add(1)?;
    let index = if k < 0 { states.checked_add(k)? } else { k };
    (0..states)
        .contains(&index)
        .then(|| usize::try_from(index).ok())
        .flatten()
}

/// Sliding windows, the non-standard alternative to truncation (`hf:MODEL?window=1024,512`):
/// windows of `size` nucleotides every `stride`, each embedded as a sequence of its own, and
/// the sequence's embedding is the mean of its windows'. GENEB's official baselines truncate;
/// the result's protocol block says which was used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub size: usize,
    pub stride: usize,
}

/// The seed of `random-cnn` without one.
pub const RANDOM_CNN_DEFAULT_SEED: u32 = 0;

impl ModelSpec {
    pub fn parse(text: &str) -> Result<ModelSpec> {
        let text = text.trim();
        Ok(ModelSpec {
            given: text.to_string(),
            kind: ModelKind::parse(text)?,
        })
    }
}

impl ModelKind {
    fn parse(text: &str) -> Result<ModelKind> {
        let bad = |why: &str| Error::new(format!("model '{text}': {why}"));
        if let Some(rest) = text.strip_prefix("hf:") {
            let (source, options) = rest.split_once('?').unwrap_or((rest, ""));
            let (mut window, mut recipe, mut layer, mut weights) = (None, None, None, None);
            for option in options.split('&').filter(|o| !o.is_empty()) {
                if let Some(k) = option.strip_prefix("layer=") {
                    match k.trim().parse::<i64>() {
                        Ok(k) if layer.is_none() => layer = Some(k),
                        _ => {
                            return Err(bad(
                                "expected ?layer=K once, K a whole number (0 = the embeddings' \
                                 output, 1 = the first layer's, -1 = the last layer's)",
                            ));
                        }
                    }
                } else if let Some(held) = option.strip_prefix("weights=") {
                    let held = match held.trim() {
                        "f32" if weights.is_none() => Weights::F32,
                        "half" if weights.is_none() => Weights::Half,
                        _ => return Err(bad("expected ?weights=f32 or ?weights=half once")),
                    };
                    weights = Some(held);
                } else if let Some(name) = option.strip_prefix("recipe=") {
                    if name.trim().is_empty() || recipe.is_some() {
                        return Err(bad("expected ?recipe=NAME once"));
                    }
                    recipe = Some(name.trim().to_string());
                } else if window.is_some() {
                    return Err(bad("expected ?window=SIZE,STRIDE once"));
                } else {
                    window = Some(parse_window(option).ok_or_else(|| {
                        bad(
                            "expected ?window=SIZE,STRIDE (nucleotides, 0 < STRIDE <= SIZE), \
                             ?recipe=NAME, ?layer=K or ?weights=f32|half",
                        )
                    })?);
                }
            }
            let source = source.trim();
            if source.is_empty() {
                return Err(bad(
                    "expected hf:FOLDER or hf:owner/name[@revision] (a Hugging Face model)",
                ));
            }
            return Ok(ModelKind::Hf(HfSpec {
                text: text.to_string(),
                source: source.to_string(),
                window,
                recipe,
                layer,
                weights,
            }));
        }
        let mut parts = text.split(':');
        let name = parts.next().unwrap_or_default();
        let args: Vec<&str> = parts.collect();
        match name {
            "kmer" => {
                let k_range = format!("expected kmer:K or kmer:K:canonical, K from 1 to {MAX_K}");
                let (k, canonical) = match args.as_slice() {
                    [k] => (k, false),
                    [k, "canonical"] => (k, true),
                    _ => return Err(bad(&k_range)),
                };
                match k.parse() {
                    Ok(k) if (1..=MAX_K).contains(&k) => Ok(ModelKind::Kmer { k, canonical }),
                    _ => Err(bad(&format!("K must be a whole number from 1 to {MAX_K}"))),
                }
            }
            "random-cnn" => match args.as_slice() {
                [] => Ok(ModelKind::RandomCnn {
                    seed: RANDOM_CNN_DEFAULT_SEED,
                }),
                [seed] => seed
                    .parse()
                    .map(|seed| ModelKind::RandomCnn { seed })
                    .map_err(|_| bad("the seed must be a non-negative integer")),
                _ => Err(bad("expected random-cnn or random-cnn:SEED")),
            },
            _ => Err(Error::new(format!(
                "unknown model '{text}'; built-in models: kmer:K, random-cnn[:SEED]; \
                 Hugging Face models: hf:FOLDER or hf:owner/name[@revision]"
            ))),
        }
    }
}

impl std::fmt::Display for ModelSpec {
    /// As the user wrote it (trimmed). Results name the model by its encoder's `spec()`, which
    /// writes the defaults out (`random-cnn` runs as `random-cnn:0`).
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.given)
    }
}

impl std::str::FromStr for ModelSpec {
    type Err = Error;
    fn from_str(text: &str) -> Result<ModelSpec> {
        ModelSpec::parse(text)
    }
}

impl<'de> serde::Deserialize<'de> for ModelSpec {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ModelSpec::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl HfSpec {
    /// An `hf:` spec, for a model whose files are given rather than found by the spec.
    pub fn parse(text: &str) -> Result<HfSpec> {
        match ModelSpec::parse(text)?.kind {
            ModelKind::Hf(hf) => Ok(hf),
            _ => Err(Error::new(format!(
                "model '{}': model files were given, so its spec must be hf:NAME",
                text.trim()
            ))),
        }
    }

    /// Its text without any `layer=` option: the model whose layers a sweep probes (the
    /// profile groups a sweep's submissions by it).
    pub fn without_layer(&self) -> String {
        let (source, options) = self.text.split_once('?').unwrap_or((&self.text, ""));
        let kept: Vec<&str> = options
            .split('&')
            .filter(|o| !o.is_empty() && !o.starts_with("layer="))
            .collect();
        if kept.is_empty() {
            source.to_string()
        } else {
            format!("{source}?{}", kept.join("&"))
        }
    }

    /// The same model at layer `k` (`geneb eval --layers`): its text with `layer=K` in place of
    /// any it had.
    pub fn at_layer(&self, k: i64) -> HfSpec {
        let base = self.without_layer();
        let joiner = if base.contains('?') { '&' } else { '?' };
        HfSpec {
            text: format!("{base}{joiner}layer={k}"),
            layer: Some(k),
            ..self.clone()
        }
    }

    /// `owner/name` and its revision (`main` unless `@revision` is given) when the source is
    /// shaped like a hub id rather than a path; the caller still prefers a folder of that name.
    pub fn hub_repo(&self) -> Option<(&str, &str)> {
        let (repo, revision) = self
            .source
            .split_once('@')
            .unwrap_or((&self.source, "main"));
        let shaped_like_id = repo.split('/').count() == 2
            && !repo.starts_with(['.', '/', '~'])
            && !repo.split('/').any(str::is_empty);
        shaped_like_id.then_some((repo, revision))
    }
}

impl Window {
    /// Byte ranges of the windows of a sequence of `len` nucleotides: every `stride` from 0,
    /// until one reaches the end (a sequence no longer than `size` is one window).
    pub fn ranges(self, len: usize) -> Vec<std::ops::Range<usize>> {
        let mut ranges = Vec::new();
        let mut start = 0;
        loop {
            let end = (start + self.size).min(len);
            ranges.push(start..end);
            if end == len {
                return ranges;
            }
            start += self.stride;
        }
    }
}

/// `window=SIZE,STRIDE`.
fn parse_window(options: &str) -> Option<Window> {
    let (size, stride) = options.strip_prefix("window=")?.split_once(',')?;
    let size: usize = size.trim().parse().ok()?;
    let stride: usize = stride.trim().parse().ok()?;
    (size > 0 && stride > 0 && stride <= size).then_some(Window { size, stride })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_once_into_typed_values() {
        assert_eq!(
            ModelSpec::parse(" kmer:4:canonical ").unwrap().kind,
            ModelKind::Kmer {
                k: 4,
                canonical: true
            }
        );
        assert_eq!(
            ModelSpec::parse("random-cnn").unwrap().kind,
            ModelKind::RandomCnn { seed: 0 }
        );
        assert_eq!(
            ModelSpec::parse("random-cnn:7").unwrap().kind,
            ModelKind::RandomCnn { seed: 7 }
        );
        let ModelKind::Hf(hub) = ModelSpec::parse("hf:owner/name@v1?window=1024,512")
            .unwrap()
            .kind
        else {
            panic!("not hf")
        };
        assert_eq!(
            hub.window,
            Some(Window {
                size: 1024,
                stride: 512
            })
        );
        assert_eq!(hub.hub_repo(), Some(("owner/name", "v1")));
        assert_eq!(hub.text, "hf:owner/name@v1?window=1024,512");
        assert_eq!(hub.recipe, None);
        let ModelKind::Hf(both) =
            ModelSpec::parse("hf:owner/name?recipe=dnabert2-cls&window=1024,512")
                .unwrap()
                .kind
        else {
            panic!("not hf")
        };
        assert_eq!(both.recipe.as_deref(), Some("dnabert2-cls"));
        assert_eq!(both.window.map(|w| w.size), Some(1024));
        assert_eq!(both.weights, None);
        let ModelKind::Hf(half) = ModelSpec::parse("hf:m?weights=half").unwrap().kind else {
            panic!("not hf")
        };
        assert_eq!(half.weights, Some(Weights::Half));
        let ModelKind::Hf(folder) = ModelSpec::parse("hf:./models/nt").unwrap().kind else {
            panic!("not hf")
        };
        assert_eq!(
            (folder.source.as_str(), folder.hub_repo()),
            ("./models/nt", None)
        );
        for (bad, why) in [
            ("kmer:9", "K must be a whole number from 1 to 6"),
            ("kmer", "expected kmer:K"),
            ("random-cnn:-1", "the seed must be"),
            ("hf:", "expected hf:FOLDER"),
            ("hf:m?window=5", "expected ?window"),
            ("hf:m?window=4,8", "expected ?window"),
            ("hf:m?window=0,0", "expected ?window"),
            ("hf:m?win=4,2", "expected ?window"),
            ("hf:m?recipe=", "expected ?recipe=NAME once"),
            ("hf:m?recipe=a&recipe=b", "expected ?recipe=NAME once"),
            (
                "hf:m?weights=f16",
                "expected ?weights=f32 or ?weights=half once",
            ),
            ("hf:m?weights=half&weights=f32", "expected ?weights=f32"),
            (
                "hf:m?window=4,2&window=4,2",
                "expected ?window=SIZE,STRIDE once",
            ),
            ("bert", "unknown model 'bert'"),
            ("hf:m?layer=", "expected ?layer=K once"),
            ("hf:m?layer=1.5", "expected ?layer=K once"),
            ("hf:m?layer=last", "expected ?layer=K once"),
            ("hf:m?layer=1&layer=2", "expected ?layer=K once"),
        ] {
            let err = ModelSpec::parse(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn a_spec_keeps_the_words_the_user_wrote() {
        for (given, shown) in [
            (" kmer:04 ", "kmer:04"),
            ("random-cnn", "random-cnn"),
            (" hf:owner/name?recipe=x ", "hf:owner/name?recipe=x"),
        ] {
            assert_eq!(ModelSpec::parse(given).unwrap().to_string(), shown);
        }
        assert!(HfSpec::parse("kmer:3").is_err());
    }

    #[test]
    fn layers_count_as_output_hidden_states_does() {
        let ModelKind::Hf(spec) = ModelSpec::parse("hf:m?recipe=x&layer=-2").unwrap().kind else {
            panic!("not hf")
        };
        assert_eq!((spec.layer, spec.recipe.as_deref()), (Some(-2), Some("x")));
        assert_eq!(
            spec.at_layer(3).text,
            "hf:m?recipe=x&layer=3",
            "the sweep's spec replaces the layer"
        );
        assert_eq!(spec.at_layer(0).layer, Some(0));
        assert_eq!(spec.without_layer(), "hf:m?recipe=x");
        assert_eq!(
            HfSpec::parse("hf:m?layer=2").unwrap().without_layer(),
            "hf:m"
        );
        assert_eq!(
            HfSpec::parse("hf:m").unwrap().at_layer(-1).text,
            "hf:m?layer=-1"
        );
        // 4 layers: hidden states 0 (embeddings) … 4 (last).
        for (k, index) in [(0, Some(0)), (4, Some(4)), (-1, Some(4)), (-5, Some(0))] {
            assert_eq!(resolve_layer(k, 4), index, "K = {k}");
        }
        for k in [5, -6, i64::MIN, i64::MAX] {
            assert_eq!(resolve_layer(k, 4), None, "K = {k}");
        }
    }

    #[test]
    fn a_sweep_is_all_layers_or_a_list() {
        assert_eq!(LayerSweep::parse("all").unwrap(), LayerSweep::All);
        assert_eq!(
            LayerSweep::parse("0, 6,-1").unwrap(),
            LayerSweep::Only(vec![0, 6, -1])
        );
        for bad in ["", "1,,2", "last", "1.5"] {
            let err = LayerSweep::parse(bad).unwrap_err().to_string();
            assert!(err.contains("expected all, or layers K"), "{bad}: {err}");
        }
    }

    #[test]
    fn windows_cover_the_sequence() {
        let w = Window { size: 4, stride: 2 };
        assert_eq!(w.ranges(3), vec![0..3]);
        assert_eq!(w.ranges(4), vec![0..4]);
        assert_eq!(w.ranges(9), vec![0..4, 2..6, 4..8, 6..9]);
    }
}
