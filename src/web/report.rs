//! `report`: the comparison of stored results, exactly as `geneb profile` makes it.

use super::{answer, from_page};
use crate::{Error, profile};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReportRequest {
    /// Result files as text (what `run` returned, stored by the page, or a downloaded
    /// `geneb eval` file); `name` labels errors.
    files: Vec<ResultText>,
    #[serde(default)]
    max_params: Option<u64>,
    /// `{maxSecondsPer1kSeqs?, maxMemoryBytes?}`: `geneb profile --max-seconds-per-1k-seqs`
    /// and `--max-peak-memory`.
    #[serde(default)]
    cost_budget: profile::budget::CostBudget,
    #[serde(default)]
    bootstrap: Option<usize>,
    #[serde(default)]
    seed: Option<u32>,
}

#[derive(Deserialize)]
struct ResultText {
    name: String,
    text: String,
}

#[derive(Serialize)]
struct Report {
    #[serde(flatten)]
    outputs: crate::report::html::Outputs,
    /// The profile with intervals, paired tests, ranks and recommendations (as `geneb profile
    /// --json` prints it).
    analysis: profile::analysis::Analysis,
}

/// The comparison report of stored results, exactly as `geneb profile` makes it:
/// `{files: [{name, text}], maxParams?, costBudget?, bootstrap? (1000), seed? (0)}` →
/// `{html, csv: {name: text}, svg: {name: text}, official: {name: text}, analysis}`.
#[wasm_bindgen]
pub fn report(request: JsValue) -> std::result::Result<JsValue, JsError> {
    let request: ReportRequest = from_page(request)?;
    let build = || {
        let mut submissions = Vec::new();
        for file in &request.files {
            submissions.extend(crate::submission::read_results(
                &file.name,
                file.text.as_bytes(),
            )?);
        }
        let defaults = profile::bootstrap::Settings::default();
        let settings = profile::bootstrap::Settings {
            replicates: request.bootstrap.unwrap_or(defaults.replicates),
            seed: request.seed.unwrap_or(defaults.seed),
        };
        let analysis = profile::analysis::analyse_within(
            &submissions,
            settings,
            request.max_params,
            request.cost_budget,
        )?;
        let outputs = crate::report::html::render(&analysis, &submissions)?;
        Ok::<_, Error>(Report { outputs, analysis })
    };
    answer(build())
}
