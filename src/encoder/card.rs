//! What a result says about the model besides its scores (the submission's `meta`): display
//! name, training data, context and URL, from the known-models table (`known.rs`) when the
//! model's hub id is known, else from its `config.json` and model card (`README.md`), and the
//! user's overrides on top (`geneb eval --display …`, the page's "Submission details").
//!
//! The parameter count is not here: it is counted from the loaded weights (`hf.rs`).

use super::known;
use serde::{Deserialize, Serialize};

/// The model's description as its files and the known-models table give it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelCard {
    pub display: String,
    pub url: String,
    pub training_data: String,
    /// The declared maximum input and where that came from, e.g. `512 tokens (known models)`.
    pub context: String,
}

/// What the files name when nothing better is known.
pub const TRAINING_DATA_NOT_STATED: &str = "not stated (give it with --training-data)";

impl ModelCard {
    /// `source` is the spec's source (a folder, or `owner/name@rev`); `hub_id` the hub id it
    /// names, if any; `readme` the model card's text where the folder has one; `max_tokens`
    /// the encoder's own input limit, the context when nothing declares one.
    pub fn read(
        source: &str,
        hub_id: Option<&str>,
        config: &serde_json::Value,
        readme: Option<&str>,
        max_tokens: usize,
    ) -> ModelCard {
        let hub_id = resolve_hub_id(source, hub_id, config);
        let known = hub_id.as_deref().and_then(known::find);
        let datasets = readme.map(card_datasets).unwrap_or_default();
        let display = match (known, &hub_id) {
            (Some(k), _) => k.display.to_string(),
            (None, Some(id)) => id.clone(),
            (None, None) => folder_name(source),
        };
        let context = match known {
            Some(k) => format!(
                "{} {} (known models)",
                k.context,
                match k.context_unit {
                    known::ContextUnit::Tokens => "tokens",
                    known::ContextUnit::Nucleotides => "nucleotides",
                }
            ),
            None => match config["max_position_embeddings"].as_u64() {
                Some(n) => format!("{n} positions (config.json max_position_embeddings)"),
                None => format!("{max_tokens} tokens (the encoder's input limit)"),
            },
        };
        ModelCard {
            display,
            url: hub_id
                .map(|id| {
                    format!(
                        "https://huggingface.co/{}",
                        known.and_then(|k| k.hub_id).unwrap_or(&id)
                    )
                })
                .unwrap_or_default(),
            training_data: if datasets.is_empty() {
                TRAINING_DATA_NOT_STATED.to_string()
            } else {
                format!("{} (model card datasets)", datasets.join(", "))
            },
            context,
        }
    }
}

/// The hub id a model's files are of: the one the user named, else the one transformers wrote
/// into config.json (`_name_or_path`) when it saved the model, else the hub cache folder's.
pub fn resolve_hub_id(
    source: &str,
    hub_id: Option<&str>,
    config: &serde_json::Value,
) -> Option<String> {
    hub_id
        .map(str::to_string)
        .or_else(|| {
            config["_name_or_path"]
                .as_str()
                .filter(|id| looks_like_hub_id(id))
                .map(str::to_string)
        })
        .or_else(|| hub_cache_id(source))
}

fn looks_like_hub_id(id: &str) -> bool {
    let parts: Vec<&str> = id.split('/').collect();
    parts.len() == 2
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        })
        && !id.starts_with('.')
}

/// `owner/name` of a folder in the Hugging Face cache (`…/models--owner--name/snapshots/REV`).
fn hub_cache_id(source: &str) -> Option<String> {
    let folder = source
        .split(['/', '\\'])
        .find(|part| part.starts_with("models--"))?;
    let (owner, name) = folder.strip_prefix("models--")?.split_once("--")?;
    let id = format!("{owner}/{name}");
    looks_like_hub_id(&id).then_some(id)
}

/// The last component of a folder path, without a revision: what the user called the model.
fn folder_name(source: &str) -> String {
    let source = source.split('@').next().unwrap_or(source);
    source
        .trim_end_matches(['/', '\\'])
        .rsplit(['/', '\\'])
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or(source)
        .to_string()
}

/// The `datasets:` of a model card's YAML front matter (`datasets: [a, b]`, `datasets: a` or a
/// block list), the hub's field for what a model was trained on.
fn card_datasets(readme: &str) -> Vec<String> {
    let mut lines = readme.lines();
    if lines.next().map(str::trim) != Some("---") {
        return Vec::new();
    }
    let front: Vec<&str> = lines.take_while(|l| l.trim() != "---").collect();
    let unquote = |s: &str| s.trim().trim_matches(['"', '\'']).to_string();
    let Some(at) = front.iter().position(|l| l.starts_with("datasets:")) else {
        return Vec::new();
    };
    let inline = front[at]["datasets:".len()..].trim();
    let mut found: Vec<String> = if inline.is_empty() {
        front[at + 1..]
            .iter()
            .take_while(|l| l.trim_start().starts_with("- "))
            .map(|l| unquote(&l.trim_start()[2..]))
            .collect()
    } else {
        inline
            .trim_start_matches('[')
            .trim_end_matches(']')
            .split(',')
            .map(unquote)
            .collect()
    };
    found.retain(|d| !d.is_empty());
    found
}

/// The user's corrections to the `meta` a run records (`geneb eval --display …`, the page's
/// "Submission details"); an absent field keeps what geneb found.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetaOverrides {
    #[serde(default)]
    pub display: Option<String>,
    #[serde(default)]
    pub params: Option<u64>,
    #[serde(default)]
    pub training_data: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub submitted_by: Option<String>,
}

impl MetaOverrides {
    /// Whether a field describes one model (everything but `submitted_by`), so it cannot be
    /// given for a run of several.
    pub fn names_one_model(&self) -> bool {
        self.display.is_some()
            || self.params.is_some()
            || self.training_data.is_some()
            || self.url.is_some()
    }

    pub fn apply(&self, meta: &mut crate::submission::Meta) {
        let set = |field: &mut String, given: &Option<String>| {
            if let Some(value) = given {
                *field = value.trim().to_string();
            }
        };
        set(&mut meta.display, &self.display);
        set(&mut meta.training_data, &self.training_data);
        set(&mut meta.url, &self.url);
        set(&mut meta.submitted_by, &self.submitted_by);
        if let Some(params) = self.params {
            meta.params = params;
        }
    }

    /// Applies the overrides to every submission of a run, refusing model-specific ones for a
    /// run of several models (each would get the same name and size).
    pub fn apply_all(
        &self,
        submissions: &mut [crate::submission::Submission],
    ) -> crate::Result<()> {
        self.check_models(submissions.len())?;
        for submission in submissions {
            self.apply(&mut submission.meta);
        }
        Ok(())
    }

    /// Refuses what names one model for a run of `models` submissions.
    pub fn check_models(&self, models: usize) -> crate::Result<()> {
        if self.names_one_model() && models > 1 {
            return Err(crate::Error::new(format!(
                "the display name, parameters, training data and URL describe one model, and \
                 this run has {models}: run the models one at a time to set them"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_known_hub_id_gives_the_tables_name_context_and_url() {
        let card = ModelCard::read(
            "zhihan1996/dnabert-2-117m@main",
            Some("zhihan1996/dnabert-2-117m"),
            &json!({}),
            None,
            512,
        );
        assert_eq!(card.display, "DNABERT-2 117M");
        assert_eq!(card.url, "https://huggingface.co/zhihan1996/DNABERT-2-117M");
        assert_eq!(card.context, "512 tokens (known models)");
        assert_eq!(card.training_data, TRAINING_DATA_NOT_STATED);
    }

    #[test]
    fn a_folder_is_named_by_config_or_cache_path_else_by_its_name() {
        let config = json!({"_name_or_path": "PoetschLab/GROVER", "max_position_embeddings": 512});
        assert_eq!(
            ModelCard::read("models/grover", None, &config, None, 512).display,
            "GROVER"
        );
        let cached = "/home/u/.cache/huggingface/hub/models--someone--my-dna-lm/snapshots/abc";
        let card = ModelCard::read(cached, None, &json!({"_name_or_path": "/tmp/x"}), None, 64);
        assert_eq!(card.display, "someone/my-dna-lm");
        assert_eq!(card.url, "https://huggingface.co/someone/my-dna-lm");
        assert_eq!(card.context, "64 tokens (the encoder's input limit)");
        let card = ModelCard::read("runs/my-model/", None, &json!({}), None, 64);
        assert_eq!((card.display.as_str(), card.url.as_str()), ("my-model", ""));
    }

    #[test]
    fn the_model_cards_datasets_are_its_training_data() {
        let block = "---\nlicense: mit\ndatasets:\n  - hg38\n  - 'mm10'\ntags: [dna]\n---\n# x";
        let inline = "---\ndatasets: [\"hg38\", 1000G]\n---\n";
        let none = "# A card without front matter\ndatasets: hg38\n";
        let read = |text| ModelCard::read("m", None, &json!({}), Some(text), 8).training_data;
        assert_eq!(read(block), "hg38, mm10 (model card datasets)");
        assert_eq!(read(inline), "hg38, 1000G (model card datasets)");
        assert_eq!(read(none), TRAINING_DATA_NOT_STATED);
    }
}
