//! Every table of the analysis, defined once and rendered twice: as CSV (one file per table,
//! intervals in their own columns) and as HTML in the report.

use super::svg::{format_rank, regime_label};
use crate::input::audit;
use crate::profile::analysis::Analysis;
use crate::profile::bootstrap::Estimate;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(String),
    Number(f64),
    /// An MCC with its spread over few-shot seeds and its bootstrap interval, where known.
    Score {
        mcc: f64,
        seed_std: Option<f64>,
        interval: Option<(f64, f64)>,
    },
    /// A parameter count: "252M" in the report, the exact integer in CSV.
    Params(u64),
    Missing,
}

impl Value {
    fn text(s: impl Into<String>) -> Value {
        Value::Text(s.into())
    }

    fn optional(v: Option<f64>) -> Value {
        v.map_or(Value::Missing, Value::Number)
    }

    fn estimate(mcc: f64, seed_std: Option<f64>, estimate: Option<&Estimate>) -> Value {
        Value::Score {
            mcc,
            seed_std,
            interval: estimate.map(|e| (e.lo, e.hi)),
        }
    }

    /// How the HTML report shows it.
    pub fn display(&self) -> String {
        match self {
            Value::Text(s) => s.clone(),
            Value::Number(v) => format!("{v:.3}"),
            Value::Score {
                mcc,
                seed_std,
                interval,
            } => {
                let mut s = format!("{mcc:.3}");
                if let Some(sd) = seed_std {
                    s.push_str(&format!(" ±{sd:.3}"));
                }
                if let Some((lo, hi)) = interval {
                    s.push_str(&format!(" [{lo:.3}, {hi:.3}]"));
                }
                s
            }
            Value::Params(p) => super::svg::params_label(*p as f64),
            Value::Missing => "–".into(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Table {
    /// File stem of its CSV.
    pub name: String,
    pub title: String,
    /// What the numbers mean, shown under the table.
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

impl Table {
    /// RFC 4180 CSV; a score column becomes `X`, and where present `X_seed_std`, `X_ci_lo`,
    /// `X_ci_hi`. Numbers at full precision. Text that a spreadsheet would run as a formula is
    /// made inert ([`inert_cell`]).
    pub fn to_csv(&self) -> String {
        let has = |col: usize, part: fn(&Value) -> bool| self.rows.iter().any(|r| part(&r[col]));
        let with_std = |v: &Value| {
            matches!(
                v,
                Value::Score {
                    seed_std: Some(_),
                    ..
                }
            )
        };
        let with_ci = |v: &Value| {
            matches!(
                v,
                Value::Score {
                    interval: Some(_),
                    ..
                }
            )
        };
        let columns: Vec<(bool, bool)> = (0..self.header.len())
            .map(|c| (has(c, with_std), has(c, with_ci)))
            .collect();
        let mut header = Vec::new();
        for (name, &(std, ci)) in self.header.iter().zip(&columns) {
            header.push(inert_cell(name));
            if std {
                header.push(format!("{name}_seed_std"));
            }
            if ci {
                header.push(format!("{name}_ci_lo"));
                header.push(format!("{name}_ci_hi"));
            }
        }
        let mut lines = vec![csv_line(&header)];
        for row in &self.rows {
            let mut cells = Vec::new();
            for (value, &(std, ci)) in row.iter().zip(&columns) {
                let number = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
                match value {
                    Value::Text(s) => cells.push(inert_cell(s)),
                    Value::Number(v) => cells.push(v.to_string()),
                    Value::Params(p) => cells.push(p.to_string()),
                    Value::Missing => cells.push(String::new()),
                    Value::Score {
                        mcc,
                        seed_std,
                        interval,
                    } => {
                        cells.push(mcc.to_string());
                        if std {
                            cells.push(number(*seed_std));
                        }
                        if ci {
                            cells.push(number(interval.map(|i| i.0)));
                            cells.push(number(interval.map(|i| i.1)));
                        }
                        continue;
                    }
                }
                // A non-score value in a column whose other rows carry intervals.
                cells.extend(std::iter::repeat_n(
                    String::new(),
                    usize::from(std) + 2 * usize::from(ci),
                ));
            }
            lines.push(csv_line(&cells));
        }
        lines.join("\r\n") + "\r\n"
    }
}

/// Model ids, task ids and categories come from strangers' result files: a cell beginning with
/// `=`, `+`, `-`, `@`, tab or CR would run as a formula when the CSV is opened in a spreadsheet
/// (CSV injection), so it gets a leading `'`, as OWASP advises. Only text cells: numbers such
/// as `-0.25` are written as numbers.
fn inert_cell(text: &str) -> String {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_string()
    }
}

fn csv_line(cells: &[String]) -> String {
    cells
        .iter()
        .map(|c| {
            if c.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", c.replace('"', "\"\""))
            } else {
                c.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn params_text(p: u64) -> Value {
    if p == 0 {
        Value::Missing
    } else {
        Value::Params(p)
    }
}

/// Beside each regime's profile, the same MCCs over the test rows that did not leak; and every
/// task's leak audit.
fn leak_tables(analysis: &Analysis) -> Vec<Table> {
    let profile = &analysis.profile;
    let mut tables = Vec::new();
    for regime in &profile.regimes {
        let rows: Vec<Vec<Value>> = regime
            .rows
            .iter()
            .filter_map(|row| {
                let clean = row.leak_free.as_ref()?;
                let mut cells = vec![Value::text(&row.model)];
                for c in &profile.categories {
                    cells.push(Value::Number(row.categories.get(c)?.mean));
                    cells.push(Value::optional(clean.categories.get(c).copied()));
                }
                cells.push(Value::Number(row.macro_mean));
                cells.push(Value::optional(clean.macro_mean));
                Some(cells)
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        let mut header = vec!["model".to_string()];
        for c in profile.categories.iter().chain([&"macro".to_string()]) {
            header.push(c.clone());
            header.push(format!("{c} leak-free"));
        }
        tables.push(Table {
            name: format!("leak_free_{}", regime.regime),
            title: format!(
                "All test rows and leak-free, {} (MCC)",
                regime_label(&regime.regime)
            ),
            caption: "Each column's MCC over all test rows, then over the test rows that are \
                      not exact, reverse-complement or near copies of a training row (the \
                      leak audit); a category's leak-free MCC is the mean of its tasks that \
                      have such rows."
                .into(),
            header,
            rows,
        });
    }
    if !profile.audit.is_empty() {
        tables.push(Table {
            name: "audit".into(),
            title: "Leak audit".into(),
            caption: format!(
                "Exact, reverse-complement and near copies (sharing >= {} of their informative \
                 canonical 21-mers with one training row) of training rows among the test \
                 rows, and the MCC of a nearest-neighbour baseline that only remembers training \
                 rows. warn: >= {} % near or >= {} % exact copies, or a nearest-neighbour MCC \
                 >= {}; fail: >= {} % / >= {} % (seqleak's thresholds).",
                audit::NEAR_COPY,
                audit::NEAR_WARN * 100.0,
                audit::EXACT_WARN * 100.0,
                audit::NEAREST_NEIGHBOUR_WARN,
                audit::NEAR_FAIL * 100.0,
                audit::EXACT_FAIL * 100.0
            ),
            header: [
                "task",
                "train",
                "test",
                "exact",
                "reverse_complement",
                "near",
                "leaked_share",
                "nearest_neighbour_MCC",
                "verdict",
            ]
            .map(String::from)
            .to_vec(),
            rows: profile
                .audit
                .iter()
                .map(|a| {
                    vec![
                        Value::text(&a.task),
                        Value::Text(a.train.to_string()),
                        Value::Text(a.test.to_string()),
                        Value::Text(a.exact_copies.to_string()),
                        Value::Text(a.reverse_complement_copies.to_string()),
                        Value::Text(a.near_copies.to_string()),
                        Value::Number(a.leak_share()),
                        Value::Number(a.nearest_neighbour_mcc),
                        Value::text(a.verdict.name()),
                    ]
                })
                .collect(),
        });
    }
    tables
}

pub fn all(analysis: &Analysis) -> Vec<Table> {
    let profile = &analysis.profile;
    let mut tables = Vec::new();
    let params: BTreeMap<&str, u64> = analysis
        .published
        .iter()
        .flat_map(|c| &c.rows)
        .filter(|r| !r.published)
        .map(|r| (r.model.as_str(), r.params))
        .collect();
    for regime in &profile.regimes {
        let mut header = vec!["model".to_string(), "params".into()];
        header.extend(profile.categories.iter().cloned());
        header.extend(["macro".into(), "micro".into(), "tasks".into()]);
        let rows = regime
            .rows
            .iter()
            .map(|row| {
                let ci = analysis
                    .uncertainty
                    .iter()
                    .find(|u| u.regime == regime.regime && u.model == row.model);
                let mut cells = vec![
                    Value::text(&row.model),
                    params_text(params.get(row.model.as_str()).copied().unwrap_or(0)),
                ];
                cells.extend(
                    profile
                        .categories
                        .iter()
                        .map(|c| match row.categories.get(c) {
                            Some(cell) => Value::estimate(
                                cell.mean,
                                cell.std,
                                ci.and_then(|u| u.categories.get(c)),
                            ),
                            None => Value::Missing,
                        }),
                );
                cells.push(Value::estimate(
                    row.macro_mean,
                    None,
                    ci.and_then(|u| u.macro_estimate.as_ref()),
                ));
                cells.push(Value::Number(row.micro_mean));
                cells.push(Value::Text(row.n_tasks.to_string()));
                cells
            })
            .collect();
        tables.push(Table {
            name: format!("profile_{}", regime.regime),
            title: format!("Profile, {} (MCC)", regime_label(&regime.regime)),
            caption: "Category = mean MCC of its tasks; macro = mean of the categories; micro = \
                      mean of the tasks. ± = population std over the five few-shot seeds; \
                      [lo, hi] = 95 % bootstrap interval over test examples."
                .into(),
            header,
            rows,
        });
    }
    for ranks in &analysis.ranks {
        let mut header = vec!["model".to_string()];
        header.extend(profile.categories.iter().cloned());
        header.push("macro".into());
        let rows = ranks
            .ranks
            .iter()
            .map(|(model, by_column)| {
                let mut cells = vec![Value::text(model)];
                cells.extend(header[1..].iter().map(|c| {
                    by_column
                        .get(c)
                        .map_or(Value::Missing, |r| Value::Text(format_rank(*r)))
                }));
                cells
            })
            .collect();
        tables.push(Table {
            name: format!("ranks_{}", ranks.regime),
            title: format!("Ranks, {}", regime_label(&ranks.regime)),
            caption: "1 = best MCC in the column; ties share the average rank.".into(),
            header,
            rows,
        });
    }
    let mut task_rows = Vec::new();
    for regime in &profile.regimes {
        for row in &regime.rows {
            let ci = analysis
                .uncertainty
                .iter()
                .find(|u| u.regime == regime.regime && u.model == row.model);
            for task in &profile.tasks {
                let Some(scores) = row.task_scores.get(&task.id) else {
                    continue;
                };
                task_rows.push(vec![
                    Value::text(&regime.regime),
                    Value::text(&row.model),
                    Value::text(&task.id),
                    Value::text(&task.category),
                    Value::estimate(scores.mcc, None, ci.and_then(|u| u.tasks.get(&task.id))),
                    Value::Number(scores.acc),
                    Value::Number(scores.f1),
                    task.n_test
                        .map_or(Value::Missing, |n| Value::Text(n.to_string())),
                    Value::optional(
                        row.leak_free
                            .as_ref()
                            .and_then(|l| l.tasks.get(&task.id).copied().flatten()),
                    ),
                ]);
            }
        }
    }
    tables.push(Table {
        name: "tasks".into(),
        title: "Per task".into(),
        caption: "Few-shot scores are means over the five seeds; [lo, hi] = 95 % bootstrap \
                  interval over the task's test examples. MCC_leak_free: the MCC over the test \
                  rows the leak audit did not find leaked (– where none is left or the result \
                  has no audit)."
            .into(),
        header: [
            "regime",
            "model",
            "task",
            "category",
            "MCC",
            "Acc",
            "F1",
            "n_test",
            "MCC_leak_free",
        ]
        .map(String::from)
        .to_vec(),
        rows: task_rows,
    });
    tables.push(Table {
        name: "paired".into(),
        title: "Paired comparisons per category".into(),
        caption: format!(
            "ΔMCC = A − B on the same test examples; 95 % interval and two-sided p from {} \
             paired bootstrap replicates (shared resample indices, seed {}). p = 0 means below \
             1/{}.",
            analysis.bootstrap.replicates, analysis.bootstrap.seed, analysis.bootstrap.replicates
        ),
        header: [
            "regime",
            "category",
            "A",
            "B",
            "tasks",
            "delta_MCC",
            "ci_lo",
            "ci_hi",
            "p",
            "reading",
        ]
        .map(String::from)
        .to_vec(),
        rows: analysis
            .paired
            .iter()
            .map(|p| {
                let d = &p.difference;
                let reading = if d.lo > 0.0 {
                    format!("{} better", p.a)
                } else if d.hi < 0.0 {
                    format!("{} better", p.b)
                } else {
                    "no clear difference".into()
                };
                vec![
                    Value::text(&p.regime),
                    Value::text(&p.category),
                    Value::text(&p.a),
                    Value::text(&p.b),
                    Value::Text(p.n_tasks.to_string()),
                    Value::Number(d.delta),
                    Value::Number(d.lo),
                    Value::Number(d.hi),
                    Value::Number(d.p),
                    Value::Text(reading),
                ]
            })
            .collect(),
    });
    for agreement in &analysis.category_agreement {
        let mut header = vec!["category".to_string()];
        header.extend(agreement.categories.iter().cloned());
        tables.push(Table {
            name: format!("category_agreement_{}", agreement.regime),
            title: format!(
                "Kendall τ-b between category rankings, {}",
                regime_label(&agreement.regime)
            ),
            caption: "1 = two categories order the models identically, −1 = reversed; – where \
                      fewer than two models or tied scores leave it undefined."
                .into(),
            header,
            rows: agreement
                .categories
                .iter()
                .zip(&agreement.tau)
                .map(|(c, row)| {
                    let mut cells = vec![Value::text(c)];
                    cells.extend(row.iter().map(|t| Value::optional(*t)));
                    cells
                })
                .collect(),
        });
    }
    tables.push(Table {
        name: "reordering".into(),
        title: "Which categories reorder under few-shot".into(),
        caption: "Per category: the best model with full data and under the few-shot regime, \
                  and Kendall τ-b between the models' full-data and few-shot scores."
            .into(),
        header: [
            "regime",
            "category",
            "winner_full",
            "winner",
            "winner_changed",
            "tau_b",
            "models",
        ]
        .map(String::from)
        .to_vec(),
        rows: analysis
            .reordering
            .iter()
            .map(|r| {
                vec![
                    Value::text(&r.regime),
                    Value::text(&r.category),
                    Value::text(&r.winner_full),
                    Value::text(&r.winner),
                    Value::text(if r.winner_changed { "yes" } else { "no" }),
                    Value::optional(r.tau),
                    Value::Text(r.n_models.to_string()),
                ]
            })
            .collect(),
    });
    tables.push(Table {
        name: "params_vs_macro".into(),
        title: "Does size predict score? Spearman ρ(parameters, macro MCC)".into(),
        caption: "Over models with a parameter count; \"with published\" adds the 40 official \
                  GENEB models (the paper reports ≈ 0.57 for them alone at full data)."
            .into(),
        header: [
            "regime",
            "rho_yours",
            "n_yours",
            "rho_with_published",
            "n_with_published",
        ]
        .map(String::from)
        .to_vec(),
        rows: analysis
            .params_vs_macro
            .iter()
            .map(|p| {
                vec![
                    Value::text(&p.regime),
                    Value::optional(p.yours),
                    Value::Text(p.n_yours.to_string()),
                    Value::optional(p.with_published),
                    Value::Text(p.n_with_published.to_string()),
                ]
            })
            .collect(),
    });
    for context in &analysis.published {
        let mut header = vec!["model".to_string(), "source".into(), "params".into()];
        header.extend(profile.categories.iter().cloned());
        header.extend(["macro".into(), "comparable_categories".into()]);
        let rows = context
            .rows
            .iter()
            .map(|r| {
                let mut cells = vec![
                    Value::text(&r.model),
                    Value::text(if r.published { "published" } else { "yours" }),
                    params_text(r.params),
                ];
                cells.extend(
                    profile
                        .categories
                        .iter()
                        .map(|c| Value::optional(r.categories.get(c).copied())),
                );
                cells.push(Value::Number(r.macro_mcc));
                cells.push(Value::Text(if r.published {
                    "all".into()
                } else {
                    r.comparable.join("; ")
                }));
                cells
            })
            .collect();
        tables.push(Table {
            name: format!("published_{}", context.regime),
            title: format!(
                "Your models among the published leaderboard, {}",
                regime_label(&context.regime)
            ),
            caption: format!(
                "Published rows: {}. Your scores compare with them only in the categories \
                 listed as comparable (scored on exactly GENEB's published tasks).",
                analysis.credit
            ),
            header,
            rows,
        });
    }
    tables.push(Table {
        name: "recommendations".into(),
        title: match analysis.max_params {
            Some(m) => format!("Which model for each category and label budget (≤ {m} parameters)"),
            None => "Which model for each category and label budget".into(),
        },
        caption: format!(
            "Best category MCC among your models and the published ones ({}){}.",
            analysis.credit,
            analysis.cost_budget.stated()
        ),
        header: [
            "regime",
            "category",
            "best",
            "source",
            "params",
            "MCC",
            "your_best",
            "your_MCC",
            "your_place",
            "candidates",
            "note",
        ]
        .map(String::from)
        .to_vec(),
        rows: analysis
            .recommendations
            .iter()
            .map(|r| {
                let yours = r.yours.as_ref();
                vec![
                    Value::text(&r.regime),
                    Value::text(&r.category),
                    Value::text(&r.model),
                    Value::text(if r.published { "published" } else { "yours" }),
                    params_text(r.params),
                    Value::Number(r.mcc),
                    yours.map_or(Value::Missing, |y| Value::text(&y.model)),
                    Value::optional(yours.map(|y| y.mcc)),
                    yours.map_or(Value::Missing, |y| Value::Text(y.place.to_string())),
                    Value::Text(r.candidates.to_string()),
                    Value::text(&r.note),
                ]
            })
            .collect(),
    });
    tables.extend(leak_tables(analysis));
    tables.extend(layer_tables(analysis));
    tables
}

/// Which layer of a model to probe: every layer's MCC, then each category's best layer and its
/// gain over the last; none when no model has two layers among the results.
fn layer_tables(analysis: &Analysis) -> Vec<Table> {
    if analysis.layers.is_empty() {
        return Vec::new();
    }
    let each = || {
        analysis.layers.iter().flat_map(|m| {
            m.regimes
                .iter()
                .flat_map(move |r| r.categories.iter().map(move |c| (m, r, c)))
        })
    };
    let scores = each()
        .flat_map(|(m, r, c)| {
            c.layers.iter().map(move |l| {
                vec![
                    Value::text(&m.model),
                    Value::text(&r.regime),
                    Value::text(&c.category),
                    Value::Text(l.layer.to_string()),
                    Value::estimate(l.mcc, None, l.interval.as_ref()),
                    Value::text(if l.layer == c.best_layer { "best" } else { "" }),
                ]
            })
        })
        .collect();
    let gains = each()
        .map(|(m, r, c)| {
            let test = c.test;
            vec![
                Value::text(&m.model),
                Value::text(&r.regime),
                Value::text(&c.category),
                Value::Text(c.best_layer.to_string()),
                Value::Text(m.last_layer.to_string()),
                Value::optional(c.gain),
                Value::optional(test.map(|t| t.lo)),
                Value::optional(test.map(|t| t.hi)),
                Value::optional(test.map(|t| t.p)),
            ]
        })
        .collect();
    vec![
        Table {
            name: "layers".into(),
            title: "MCC by layer".into(),
            caption: "Each hidden state probed (0 = the embeddings' output, the last = the last \
                      layer's, which GENEB probes): category MCC with its 95 % bootstrap \
                      interval over test examples."
                .into(),
            header: ["model", "regime", "category", "layer", "MCC", "best"]
                .map(String::from)
                .to_vec(),
            rows: scores,
        },
        Table {
            name: "layer_gain".into(),
            title: "Best layer and its gain over the last".into(),
            caption: format!(
                "gain = the best layer's category MCC − the last layer's; 95 % interval and \
                 two-sided p from the paired bootstrap ({} replicates, seed {}), – where the \
                 last layer is best, was not run, or a result has no per-example evidence.",
                analysis.bootstrap.replicates, analysis.bootstrap.seed
            ),
            header: [
                "model",
                "regime",
                "category",
                "best_layer",
                "last_layer",
                "gain_MCC",
                "ci_lo",
                "ci_hi",
                "p",
            ]
            .map(String::from)
            .to_vec(),
            rows: gains,
        },
    ]
}
