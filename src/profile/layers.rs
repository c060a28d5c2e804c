//! Which layer to probe: the results of several hidden states of one model (`geneb eval
//! --layers`, or `hf:MODEL?layer=K` runs) side by side, per regime and category — each layer's
//! MCC with its bootstrap interval, the best layer, and its gain over the last layer with the
//! paired test. Nothing is resampled here: the intervals and tests are the analysis's own
//! (`Uncertainty`, `Paired`), read by the layer each result pooled.

use super::analysis::{Paired, Uncertainty};
use super::bootstrap::PairedDifference;
use super::{Profile, bootstrap::Estimate};
use crate::encoder::spec::{ModelKind, ModelSpec};
use crate::submission::Submission;
use serde::Serialize;
use std::collections::BTreeMap;

/// One model's layers.
#[derive(Debug, Clone, Serialize)]
pub struct LayerProfile {
    /// The model's spec without its layer (`hf:MODEL`).
    pub model: String,
    /// The last hidden state's index L (0 = the embeddings' output … L = the last layer's).
    pub last_layer: usize,
    pub regimes: Vec<LayerRegime>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LayerRegime {
    pub regime: String,
    pub categories: Vec<LayerCategory>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LayerCategory {
    pub category: String,
    /// Each layer scored in this category, shallowest first.
    pub layers: Vec<LayerScore>,
    /// The layer of the highest MCC (ties go to the deeper layer, so the last wins a tie).
    pub best_layer: usize,
    /// The best layer's MCC minus the last layer's (0 when the last is best); None when the
    /// last layer was not run.
    pub gain: Option<f64>,
    /// The paired bootstrap test of that gain (best − last), where both results carry
    /// per-example evidence and the best is not the last.
    pub test: Option<PairedDifference>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LayerScore {
    pub layer: usize,
    /// The result's name in the profile's tables.
    pub result: String,
    pub mcc: f64,
    /// The 95 % bootstrap interval, where the result carries evidence for every task of the
    /// category.
    pub interval: Option<Estimate>,
}

/// Where a result sits among its model's layers: the model without its layer, the state it
/// pooled and the last state's index, as its protocol block records them.
fn placed(sub: &Submission) -> Option<(String, usize, usize)> {
    let ModelKind::Hf(spec) = ModelSpec::parse(&sub.model_id).ok()?.kind else {
        return None;
    };
    let encoder = &sub.protocol.as_ref()?["encoder"];
    let index = usize::try_from(encoder["layer_index"].as_u64()?).ok()?;
    let last = usize::try_from(encoder["last_layer"].as_u64()?).ok()?;
    (index <= last).then(|| (spec.without_layer(), index, last))
}

/// The by-layer view of every model with two or more layers among `submissions` (named as in
/// `profile`). A second result of a layer already placed is left out, said in `notes`.
pub fn layer_profiles(
    submissions: &[Submission],
    profile: &Profile,
    uncertainty: &[Uncertainty],
    paired: &[Paired],
    notes: &mut Vec<String>,
) -> Vec<LayerProfile> {
    // model → (last layer, layer → result name)
    let mut models: BTreeMap<String, (usize, BTreeMap<usize, &str>)> = BTreeMap::new();
    for sub in submissions {
        let Some((model, index, last)) = placed(sub) else {
            continue;
        };
        let (known_last, layers) = models
            .entry(model.clone())
            .or_insert((last, BTreeMap::new()));
        if *known_last != last {
            notes.push(format!(
                "{}: its model {model} has {} layers here and {known_last} in another result; \
                 left out of the by-layer view",
                sub.meta.display, last
            ));
        } else if let Some(first) = layers.get(&index) {
            notes.push(format!(
                "{} and {first} are both layer {index} of {model}: the by-layer view shows {first}",
                sub.meta.display
            ));
        } else {
            layers.insert(index, &sub.meta.display);
        }
    }
    models
        .into_iter()
        .filter(|(_, (_, layers))| layers.len() >= 2)
        .map(|(model, (last_layer, layers))| LayerProfile {
            regimes: profile
                .regimes
                .iter()
                .map(|regime| LayerRegime {
                    regime: regime.regime.clone(),
                    categories: profile
                        .categories
                        .iter()
                        .filter_map(|category| {
                            let scores: Vec<LayerScore> = layers
                                .iter()
                                .filter_map(|(&layer, &result)| {
                                    let row = regime.rows.iter().find(|r| r.model == result)?;
                                    let interval = uncertainty
                                        .iter()
                                        .find(|u| u.regime == regime.regime && u.model == result)
                                        .and_then(|u| u.categories.get(category).copied());
                                    Some(LayerScore {
                                        layer,
                                        result: result.to_string(),
                                        mcc: row.categories.get(category)?.mean,
                                        interval,
                                    })
                                })
                                .collect();
                            by_layer(category, &regime.regime, scores, last_layer, paired)
                        })
                        .collect(),
                })
                .filter(|r| !r.categories.is_empty())
                .collect(),
            model,
            last_layer,
        })
        .filter(|m| !m.regimes.is_empty())
        .collect()
}

/// None where fewer than two layers were scored in the category: nothing to choose from.
fn by_layer(
    category: &str,
    regime: &str,
    layers: Vec<LayerScore>,
    last_layer: usize,
    paired: &[Paired],
) -> Option<LayerCategory> {
    if layers.len() < 2 {
        return None;
    }
    // `max_by` keeps the last of equal maxima: the deeper layer.
    let best = layers.iter().max_by(|a, b| a.mcc.total_cmp(&b.mcc))?;
    let last = layers.iter().find(|l| l.layer == last_layer);
    let test = last.filter(|l| l.layer != best.layer).and_then(|last| {
        paired.iter().find_map(|p| {
            let same = p.regime == regime && p.category == category;
            if same && p.a == best.result && p.b == last.result {
                Some(p.difference)
            } else if same && p.a == last.result && p.b == best.result {
                // The analysis tested last − best: the same test, read the other way round.
                let d = p.difference;
                Some(PairedDifference {
                    delta: -d.delta,
                    lo: -d.hi,
                    hi: -d.lo,
                    p: d.p,
                })
            } else {
                None
            }
        })
    });
    Some(LayerCategory {
        category: category.to_string(),
        best_layer: best.layer,
        gain: last.map(|l| best.mcc - l.mcc),
        test,
        layers,
    })
}

/// The by-layer view as lines for the terminal.
pub fn to_text(layers: &[LayerProfile]) -> String {
    let mut out = String::new();
    for model in layers {
        out.push_str(&format!(
            "\nBy layer, {} (hidden states 0 = the embeddings' output … {} = the last layer's; \
             MCC [95 % interval]):\n",
            model.model, model.last_layer
        ));
        for regime in &model.regimes {
            for c in &regime.categories {
                let scores: Vec<String> = c
                    .layers
                    .iter()
                    .map(|l| match l.interval {
                        Some(e) => format!("{} {:.3} [{:.3}, {:.3}]", l.layer, l.mcc, e.lo, e.hi),
                        None => format!("{} {:.3}", l.layer, l.mcc),
                    })
                    .collect();
                let gain = match (c.gain, c.test) {
                    (None, _) => "the last layer was not run".to_string(),
                    (Some(_), _) if c.best_layer == model.last_layer => {
                        "the last layer is best".to_string()
                    }
                    (Some(g), Some(t)) => format!(
                        "gain over the last {g:+.3} [{:+.3}, {:+.3}] p = {:.3}",
                        t.lo, t.hi, t.p
                    ),
                    (Some(g), None) => {
                        format!("gain over the last {g:+.3} (no per-example evidence to test it)")
                    }
                };
                out.push_str(&format!(
                    "  {} {}: best layer {} ({gain}); {}\n",
                    regime.regime,
                    c.category,
                    c.best_layer,
                    scores.join(", ")
                ));
            }
        }
    }
    out
}
