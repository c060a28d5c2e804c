//! The published GENEB leaderboard (`tasks/geneb-leaderboard.json`: 40 official models and one
//! self-reported, per regime; Apache-2.0, the GENEB authors — see `tasks/GENEB-NOTICE.md`),
//! and the questions the paper asks of it, computed rather than quoted.

use super::stats;
use crate::protocol::{CATEGORIES, Regime};
use crate::{Error, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

#[derive(Debug, Clone, Deserialize)]
pub struct PublishedRow {
    pub model: String,
    #[serde(rename = "disp")]
    pub display: String,
    pub params: u64,
    pub official: bool,
    pub zero_shot: bool,
    #[serde(rename = "macro_MCC")]
    pub macro_mcc: f64,
    #[serde(rename = "micro_MCC")]
    pub micro_mcc: f64,
    #[serde(rename = "cat_MCC")]
    pub category_mcc: BTreeMap<String, f64>,
}

#[derive(Debug, Deserialize)]
struct LeaderboardFile {
    data: BTreeMap<String, Vec<PublishedRow>>,
}

/// The leaderboard rows of one regime, parsed once from the file compiled into the binary.
pub fn rows(regime: Regime) -> Result<&'static [PublishedRow]> {
    static FILE: OnceLock<std::result::Result<LeaderboardFile, String>> = OnceLock::new();
    let file = FILE
        .get_or_init(|| {
            serde_json::from_str(include_str!("../../tasks/geneb-leaderboard.json"))
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::new(format!("the built-in GENEB leaderboard is unreadable: {e}")))?;
    file.data
        .get(regime.key())
        .map(Vec::as_slice)
        .ok_or_else(|| {
            Error::new(format!(
                "the built-in leaderboard has no '{}' rows",
                regime.key()
            ))
        })
}

/// Spearman's ρ between parameter count and macro MCC over `rows`.
pub fn params_vs_macro_spearman<'a>(
    rows: impl IntoIterator<Item = &'a PublishedRow>,
) -> Option<f64> {
    let (params, scores): (Vec<f64>, Vec<f64>) = rows
        .into_iter()
        .map(|r| (r.params as f64, r.macro_mcc))
        .unzip();
    stats::spearman(&params, &scores)
}

/// The best model of each category among `rows` (by category MCC).
pub fn category_winners(rows: &[&PublishedRow]) -> BTreeMap<&'static str, String> {
    CATEGORIES
        .iter()
        .filter_map(|&category| {
            rows.iter()
                .filter_map(|r| Some((r.category_mcc.get(category)?, &r.model)))
                .max_by(|a, b| a.0.total_cmp(b.0))
                .map(|(_, model)| (category, model.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn official(regime: Regime) -> Vec<&'static PublishedRow> {
        rows(regime)
            .unwrap()
            .iter()
            .filter(|r| r.official)
            .collect()
    }

    #[test]
    fn the_shipped_figures_reproduce_the_papers_findings() {
        let full = official(Regime::Full);
        assert_eq!(full.len(), 40, "40 official models");
        assert_eq!(
            rows(Regime::Full).unwrap().len(),
            41,
            "plus one self-reported"
        );

        // ρ(parameters, aggregate MCC) ≈ 0.57 over the 40 official models …
        let rho = params_vs_macro_spearman(full.iter().copied()).unwrap();
        assert!((rho - 0.57).abs() < 0.01, "rho = {rho}");
        // … ≈ 0.69 without the prokaryote-trained 7B outlier (Evo, trained on prokaryotic and
        // phage genomes) …
        let without = full
            .iter()
            .copied()
            .filter(|r| r.model != "evo-1-131k-base");
        let rho = params_vs_macro_spearman(without).unwrap();
        assert!((rho - 0.69).abs() < 0.01, "rho without Evo = {rho}");
        // … and ≈ 0.20 at 1-shot.
        let rho = params_vs_macro_spearman(official(Regime::OneShot)).unwrap();
        assert!((rho - 0.20).abs() < 0.01, "1-shot rho = {rho}");

        // The full-data category winner changes under 10-shot in 8 of the 13 categories.
        let winners_full = category_winners(&full);
        let winners_10 = category_winners(&official(Regime::TenShot));
        assert_eq!(winners_full.len(), 13);
        let changed = CATEGORIES
            .iter()
            .filter(|c| winners_full[*c] != winners_10[*c])
            .count();
        assert_eq!(changed, 8);
    }
}
