//! Everything a profile writes: the self-contained HTML report (inline CSS and SVG, no scripts,
//! no external URL, so it opens offline and can be mailed as one file), the CSV of every table,
//! the SVG plots, and each model's official submission JSON.

use super::svg::{self, escape};
use super::tables::{self, Table};
use crate::profile::analysis::Analysis;
use crate::submission::Submission;
use crate::{Error, Result};
use serde::Serialize;
use std::collections::BTreeMap;

/// File name → contents, for each kind of output.
#[derive(Debug, Clone, Serialize)]
pub struct Outputs {
    pub html: String,
    pub csv: BTreeMap<String, String>,
    pub svg: BTreeMap<String, String>,
    pub official: BTreeMap<String, String>,
}

pub fn render(analysis: &Analysis, submissions: &[Submission]) -> Result<Outputs> {
    let tables = tables::all(analysis);
    let plots = svg::all(analysis);
    let mut official = BTreeMap::new();
    for sub in submissions {
        let stem: String = sub
            .model_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let mut name = format!("{stem}.json");
        let mut n = 1;
        while official.contains_key(&name) {
            n += 1;
            name = format!("{stem}_{n}.json");
        }
        official.insert(name, official_json(sub)?);
    }
    Ok(Outputs {
        html: html(analysis, submissions, &tables, &plots),
        csv: tables
            .iter()
            .map(|t| (format!("{}.csv", t.name), t.to_csv()))
            .collect(),
        svg: plots.into_iter().collect(),
        official,
    })
}

/// The submission in the reference schema alone (schema_version, model_id, harness_version,
/// meta, results): geneb's extras stay in the full result file.
pub fn official_json(sub: &Submission) -> Result<String> {
    #[derive(Serialize)]
    struct Official<'a> {
        schema_version: &'a str,
        model_id: &'a str,
        harness_version: &'a str,
        meta: &'a crate::submission::Meta,
        results: &'a crate::submission::RegimeResults,
    }
    serde_json::to_string_pretty(&Official {
        schema_version: &sub.schema_version,
        model_id: &sub.model_id,
        harness_version: &sub.harness_version,
        meta: &sub.meta,
        results: &sub.results,
    })
    .map(|s| s + "\n")
    .map_err(|e| Error::new(format!("cannot write the submission JSON: {e}")))
}

const STYLE: &str = "
body{font:15px/1.5 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1a1a1a;max-width:1200px;margin:0 auto;padding:1rem 1.5rem 3rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h3{font-size:1rem;margin:1.2rem 0 .2rem}h2{margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
.lead{color:#444;margin-top:0}.note{background:#fff7e0;border-left:4px solid #E69F00;padding:.4rem .8rem;margin:.4rem 0}
.scroll{overflow-x:auto;margin:.6rem 0}table{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums}
th,td{border:1px solid #d8d8d8;padding:.25rem .45rem;text-align:left;white-space:nowrap}th{background:#f3f3f3;position:sticky;top:0}td.long{white-space:normal;min-width:22rem}
tr.published td{color:#666}caption{caption-side:bottom;text-align:left;color:#555;font-size:12px;padding-top:.3rem;white-space:normal}
figure{margin:1rem 0;overflow-x:auto}svg{max-width:100%;height:auto}pre{background:#f6f6f6;padding:.6rem;overflow-x:auto;font-size:12px}
details{margin:.6rem 0}summary{cursor:pointer;font-weight:600}footer{margin-top:3rem;color:#444;font-size:13px;border-top:1px solid #ddd}
";

fn table_html(table: &Table) -> String {
    let mut out = format!(
        "<h3>{}</h3><div class=\"scroll\"><table id=\"table-{}\"><caption>{} <em>(CSV: {}.csv)</em></caption><thead><tr>",
        escape(&table.title),
        escape(&table.name),
        escape(&table.caption),
        escape(&table.name)
    );
    for h in &table.header {
        out.push_str(&format!("<th scope=\"col\">{}</th>", escape(h)));
    }
    out.push_str("</tr></thead><tbody>");
    for row in &table.rows {
        // Grey published rows where they sit among the user's, in the leaderboard tables.
        let published = table.name.starts_with("published_")
            && row
                .iter()
                .any(|v| matches!(v, tables::Value::Text(s) if s == "published"));
        out.push_str(if published {
            "<tr class=\"published\">"
        } else {
            "<tr>"
        });
        for v in row {
            let text = v.display();
            let class = if text.chars().count() > 60 {
                " class=\"long\""
            } else {
                ""
            };
            out.push_str(&format!("<td{class}>{}</td>", escape(&text)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    out
}

fn section(out: &mut String, title: &str, intro: &str) {
    out.push_str(&format!(
        "<h2>{}</h2><p>{}</p>",
        escape(title),
        escape(intro)
    ));
}

fn html(
    analysis: &Analysis,
    submissions: &[Submission],
    tables: &[Table],
    plots: &[(String, String)],
) -> String {
    let table = |name: &str| {
        tables
            .iter()
            .find(|t| t.name == name)
            .map(table_html)
            .unwrap_or_default()
    };
    let plot = |name: &str| {
        plots
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| format!("<figure>{s}</figure>"))
            .unwrap_or_default()
    };
    let models: Vec<String> = analysis.profile.regimes.first().map_or(Vec::new(), |r| {
        r.rows.iter().map(|m| m.model.clone()).collect()
    });
    let mut out = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>GENEB profile: {}</title><style>{STYLE}</style></head><body><main>\
         <h1>GENEB profile</h1><p class=\"lead\">{} · {} tasks in {} categories · regimes: {} · \
         made by geneb {}</p>",
        escape(&models.join(", ")),
        escape(&models.join(", ")),
        analysis.profile.tasks.len(),
        analysis.profile.categories.len(),
        escape(
            &analysis
                .profile
                .regimes
                .iter()
                .map(|r| r.regime.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        crate::VERSION
    );
    out.push_str(
        "<p>GENEB reads a profile by column: rankings change between task categories and \
         label budgets, so no single number stands for a model. Pick by category and budget.</p>",
    );
    let scope = crate::profile::scope_note(&analysis.profile);
    for note in scope.iter().chain(&analysis.notes) {
        out.push_str(&format!("<p class=\"note\">{}</p>", escape(note)));
    }
    section(
        &mut out,
        "Profile",
        "Per regime: the category table, then the same numbers as a heatmap with ranks.",
    );
    for regime in &analysis.profile.regimes {
        let key = &regime.regime;
        out.push_str(&table(&format!("profile_{key}")));
        out.push_str(&plot(&format!("heatmap_{key}.svg")));
        // Empty where the results recorded no audit.
        out.push_str(&table(&format!("leak_free_{key}")));
    }
    if !analysis.profile.audit.is_empty() {
        section(
            &mut out,
            "Leaks between train and test",
            "Which test rows copy a training row, and how a baseline that only remembers \
             training rows scores (geneb audit).",
        );
        out.push_str(&table("audit"));
    }
    section(
        &mut out,
        "Which model for my category and label budget?",
        "Your models and the published GENEB leaderboard together.",
    );
    out.push_str(&table("recommendations"));
    if !analysis.layers.is_empty() {
        section(
            &mut out,
            "Which layer?",
            "Models probed at several hidden states: MCC by layer per category, each \
             category's best layer and its gain over the last (GENEB probes the last).",
        );
        out.push_str(&table("layer_gain"));
        for (i, model) in analysis.layers.iter().enumerate() {
            for regime in &model.regimes {
                out.push_str(&plot(&format!("layers_{}_{}.svg", i + 1, regime.regime)));
            }
        }
        out.push_str(&format!(
            "<details><summary>Every layer's MCC</summary>{}</details>",
            table("layers")
        ));
    }
    section(
        &mut out,
        "Are the differences real? Paired comparisons",
        "Each pair of your models on the same test examples, per category.",
    );
    out.push_str(&table("paired"));
    section(
        &mut out,
        "Instability: ranks across categories and label budgets",
        "Lines that cross are categories whose ranking changes with the label budget.",
    );
    out.push_str(&plot("rank_changes.svg"));
    out.push_str(&table("reordering"));
    for ranks in &analysis.ranks {
        out.push_str(&table(&format!("ranks_{}", ranks.regime)));
    }
    for agreement in &analysis.category_agreement {
        out.push_str(&format!(
            "<details><summary>Kendall τ-b between categories, {}</summary>{}</details>",
            escape(svg::regime_label(&agreement.regime)),
            table(&format!("category_agreement_{}", agreement.regime))
        ));
    }
    section(&mut out, "Few-shot degradation", "");
    out.push_str(&plot("fewshot_degradation.svg"));
    section(
        &mut out,
        "Does size predict score?",
        "Parameter count against macro MCC, published models in grey.",
    );
    for regime in &analysis.profile.regimes {
        out.push_str(&plot(&format!("params_vs_macro_{}.svg", regime.regime)));
    }
    out.push_str(&table("params_vs_macro"));
    section(
        &mut out,
        "Published leaderboard context",
        &format!("Published figures: {}.", analysis.credit),
    );
    for context in &analysis.published {
        out.push_str(&format!(
            "<details><summary>{}</summary>{}</details>",
            escape(svg::regime_label(&context.regime)),
            table(&format!("published_{}", context.regime))
        ));
    }
    out.push_str(&format!(
        "<details><summary>Every task</summary>{}</details>",
        table("tasks")
    ));
    section(
        &mut out,
        "Protocol",
        &format!(
            "How each result was made, as recorded in its file. Intervals: {} bootstrap \
             replicates over test examples, seed {} (numpy recipe in geneb's profile/bootstrap \
             module), percentile 95 % intervals.",
            analysis.bootstrap.replicates, analysis.bootstrap.seed
        ),
    );
    for sub in submissions {
        let protocol = sub
            .protocol
            .as_ref()
            .and_then(|p| serde_json::to_string_pretty(p).ok())
            .unwrap_or_else(|| "(this result file records no protocol block)".into());
        out.push_str(&format!(
            "<details><summary>{} — {}</summary><pre>{}</pre></details>",
            escape(&sub.meta.display),
            escape(&sub.harness_version),
            escape(&protocol)
        ));
    }
    out.push_str(&format!(
        "</main><footer><p>Protocol, task set and published leaderboard figures: <strong>GENEB: \
         Why Genomic Models Are Hard to Compare</strong> (ICML 2026), {} — please cite the \
         paper when you use these results. Report made by geneb {}.</p></footer></body></html>\n",
        escape(analysis.credit),
        crate::VERSION
    ));
    out
}

#[cfg(test)]
mod tests {
    //! A result bundle written by an attacker (tests/e2e/fixtures/hostile-bundle.json: script
    //! tags, event-handler attributes, `javascript:` URLs, SVG payloads and formula cells in model
    //! ids, display names, task ids, categories and protocol notes) through the whole report: every
    //! element and attribute in the HTML and SVG is one the report writes itself, its text is kept
    //! (escaped, not dropped), and no CSV cell runs as a spreadsheet formula.
    use super::*;
    use crate::profile::{analysis, bootstrap};

    const HOSTILE: &str = include_str!("../../tests/e2e/fixtures/hostile-bundle.json");

    fn outputs() -> Outputs {
        let submissions =
            crate::submission::read_results("hostile-bundle.json", HOSTILE.as_bytes())
                .expect("the hostile bundle is a valid result file");
        let settings = bootstrap::Settings {
            replicates: 10,
            seed: 0,
        };
        let analysis = analysis::analyse(&submissions, settings, None).unwrap();
        render(&analysis, &submissions).unwrap()
    }

    /// Every `<name attr=…>` in `markup`: (element name, attribute names).
    fn tags(markup: &str) -> Vec<(String, Vec<String>)> {
        let mut out = Vec::new();
        for (at, _) in markup.match_indices('<') {
            let rest = &markup[at + 1..];
            let Some(end) = rest.find('>') else { continue };
            let tag = rest[..end].trim_start_matches('/');
            if tag.starts_with(['!', '?']) {
                continue; // <!DOCTYPE html>
            }
            let name: String = tag
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            // Attribute names: what precedes each `=` outside quoted values.
            let (mut attrs, mut word, mut quoted) = (Vec::new(), String::new(), false);
            for c in tag[name.len()..].chars() {
                match c {
                    '"' => quoted = !quoted,
                    '=' if !quoted => attrs.push(std::mem::take(&mut word)),
                    _ if quoted => {}
                    c if c.is_whitespace() => word.clear(),
                    c => word.push(c),
                }
            }
            out.push((name, attrs));
        }
        out
    }

    fn assert_inert(what: &str, markup: &str) {
        const ELEMENTS: &[&str] = &[
            "html", "head", "meta", "title", "style", "body", "main", "h1", "h2", "h3", "p", "em",
            "strong", "div", "table", "caption", "thead", "tbody", "tr", "th", "td", "details",
            "summary", "pre", "figure", "footer", "svg", "desc", "rect", "text", "line",
            "polyline", "circle", "g",
        ];
        for (name, attrs) in tags(markup) {
            assert!(
                ELEMENTS.contains(&name.as_str()),
                "{what}: element <{name}>"
            );
            for attr in attrs {
                let attr = attr.to_ascii_lowercase();
                assert!(
                    !attr.starts_with("on")
                        && !["href", "src", "srcdoc", "xlink:href"].contains(&attr.as_str()),
                    "{what}: attribute {attr} on <{name}>"
                );
            }
        }
    }

    #[test]
    fn escape_leaves_no_markup() {
        assert_eq!(
            svg::escape(r#"<a href="x" title='y'>&</a>"#),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
    }

    #[test]
    fn a_hostile_bundle_is_inert_in_the_html_report_and_the_plots() {
        let outputs = outputs();
        assert_inert("report", &outputs.html);
        // The strangers' text is shown, escaped.
        for shown in [
            "&lt;script&gt;alert(&quot;display&quot;)&lt;/script&gt;",
            "&lt;svg onload=alert(&quot;task&quot;)&gt;",
            "&lt;/pre&gt;&lt;script&gt;alert(\\&quot;protocol\\&quot;)&lt;/script&gt;",
        ] {
            assert!(outputs.html.contains(shown), "{shown} not in the report");
        }
        assert!(!outputs.svg.is_empty());
        for (name, svg) in &outputs.svg {
            assert_inert(name, svg);
        }
    }

    #[test]
    fn no_csv_cell_of_a_hostile_bundle_is_a_formula() {
        let outputs = outputs();
        let mut checked = 0;
        for (name, csv) in &outputs.csv {
            for line in csv.lines() {
                for cell in csv_cells(line) {
                    let formula = cell.starts_with(['=', '+', '-', '@', '\t', '\r']);
                    assert!(
                        !formula || cell.parse::<f64>().is_ok(),
                        "{name}: formula cell {cell:?}"
                    );
                    checked += usize::from(cell.starts_with('\''));
                }
            }
        }
        // Kept, behind a quote: a display name, two task ids and a category.
        for inert in ["'+cmd|", "'-2+3+cmd|", "'@SUM(1+1)", "'\tTAB=1+1"] {
            assert!(
                outputs.csv["tasks.csv"].contains(inert),
                "{inert} not in tasks.csv"
            );
        }
        assert!(checked >= 4, "{checked} neutralised cells");
    }

    /// One RFC 4180 line's cells (no line breaks inside the cells of these tables).
    fn csv_cells(line: &str) -> Vec<String> {
        let (mut cells, mut cell, mut quoted, mut chars) =
            (Vec::new(), String::new(), false, line.chars().peekable());
        while let Some(c) = chars.next() {
            match c {
                '"' if quoted && chars.peek() == Some(&'"') => {
                    cell.push('"');
                    chars.next();
                }
                '"' => quoted = !quoted,
                ',' if !quoted => cells.push(std::mem::take(&mut cell)),
                c => cell.push(c),
            }
        }
        cells.push(cell);
        cells
    }
}
