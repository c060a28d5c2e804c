//! The profile's plots as standalone SVG, drawn by the core so the CLI, the HTML report and the
//! page show the same picture. Colour-blind-safe: a viridis ramp for the heatmap (readable in
//! grey too, and every cell also prints its number), Okabe–Ito for lines, with direct labels so
//! colour is never the only cue. Each plot carries `<title>` and `<desc>` for screen readers.

use crate::profile::analysis::Analysis;
use crate::profile::layers::{LayerProfile, LayerRegime};
use std::fmt::Write;

/// Okabe & Ito (2008), the yellow last: it is faint on white.
const OKABE_ITO: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];
const PUBLISHED_GREY: &str = "#B0B0B0";
const FONT: &str = "font-family=\"system-ui, -apple-system, 'Segoe UI', sans-serif\"";

/// viridis at 0, 1/8 … 1 (matplotlib's table).
const VIRIDIS: [[u8; 3]; 9] = [
    [68, 1, 84],
    [71, 44, 122],
    [59, 81, 139],
    [44, 113, 142],
    [33, 144, 141],
    [39, 173, 129],
    [92, 200, 99],
    [170, 220, 50],
    [253, 231, 37],
];

fn viridis(t: f64) -> [u8; 3] {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let x = t * 8.0;
    let i = (x.floor() as usize).min(7);
    let f = x - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    [mix(a[0], b[0]), mix(a[1], b[1]), mix(a[2], b[2])]
}

/// Text colour with enough contrast on a fill (dark text on the light end of viridis).
fn ink_on(rgb: [u8; 3]) -> &'static str {
    let luminance =
        0.2126 * f64::from(rgb[0]) + 0.7152 * f64::from(rgb[1]) + 0.0722 * f64::from(rgb[2]);
    if luminance > 140.0 { "#000" } else { "#fff" }
}

/// Text for XML/HTML content or a quoted attribute value: model ids, task ids and categories
/// come from strangers' result files, so none of it may open an element or leave an attribute.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// An SVG document under construction.
struct Svg {
    body: String,
}

impl Svg {
    fn new(width: f64, height: f64, title: &str, desc: &str) -> Svg {
        let mut body = String::new();
        let _ = write!(
            body,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" \
             width=\"{width}\" height=\"{height}\" role=\"img\" {FONT} font-size=\"12\">\
             <title>{}</title><desc>{}</desc>\
             <rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>",
            escape(title),
            escape(desc)
        );
        let mut svg = Svg { body };
        svg.text(
            width / 2.0,
            22.0,
            title,
            "middle",
            "font-size=\"15\" font-weight=\"600\"",
        );
        svg
    }

    fn text(&mut self, x: f64, y: f64, text: &str, anchor: &str, extra: &str) {
        let _ = write!(
            self.body,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\" {extra}>{}</text>",
            escape(text)
        );
    }

    fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), style: &str) {
        let _ = write!(
            self.body,
            "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" {style}/>"
        );
    }

    fn polyline(&mut self, points: &[(f64, f64)], colour: &str, extra: &str) {
        let pts: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = write!(
            self.body,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" {extra}/>",
            pts.join(" ")
        );
    }

    fn circle(&mut self, (x, y): (f64, f64), r: f64, fill: &str, label: &str) {
        let _ = write!(
            self.body,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" fill=\"{fill}\" stroke=\"#fff\" \
             stroke-width=\"0.8\"><title>{}</title></circle>",
            escape(label)
        );
    }

    fn finish(mut self) -> String {
        self.body.push_str("</svg>\n");
        self.body
    }
}

/// A y axis from `lo` to `hi` (data units) over pixel rows `top..bottom`, with gridlines.
struct Scale {
    lo: f64,
    hi: f64,
    start: f64,
    end: f64,
}

impl Scale {
    fn at(&self, v: f64) -> f64 {
        self.start + (v - self.lo) / (self.hi - self.lo) * (self.end - self.start)
    }
}

/// Round MCC limits to tenths around the data (always including 0 when close).
fn mcc_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let lo = (lo * 10.0).floor() / 10.0;
    let hi = ((hi * 10.0).ceil() / 10.0).max(lo + 0.1);
    (lo.clamp(-1.0, 0.0), hi.min(1.0))
}

fn y_axis(svg: &mut Svg, y: &Scale, left: f64, right: f64, label: &str) {
    let step = if y.hi - y.lo > 0.6 { 0.2 } else { 0.1 };
    let mut v = (y.lo / step).ceil() * step;
    while v <= y.hi + 1e-9 {
        let py = y.at(v);
        svg.line((left, py), (right, py), "stroke=\"#e4e4e4\"");
        svg.text(
            left - 6.0,
            py + 4.0,
            &format!("{v:.1}"),
            "end",
            "fill=\"#333\"",
        );
        v += step;
    }
    let mid = (y.start + y.end) / 2.0;
    svg.text(
        0.0,
        0.0,
        label,
        "middle",
        &format!(
            "transform=\"translate({:.1},{mid:.1}) rotate(-90)\" fill=\"#333\"",
            left - 44.0
        ),
    );
}

/// The MCC axis of a plot whose area is `plot_w` × `plot_h` from (`left`, `top`).
fn mcc_axis(
    svg: &mut Svg,
    (lo, hi): (f64, f64),
    (left, top, plot_w, plot_h): (f64, f64, f64, f64),
    label: &str,
) -> Scale {
    let y = Scale {
        lo,
        hi,
        start: top + plot_h,
        end: top,
    };
    y_axis(svg, &y, left, left + plot_w, label);
    y
}

fn legend(svg: &mut Svg, entries: &[(String, &str)], x: f64, y: f64) {
    for (i, (name, colour)) in entries.iter().enumerate() {
        let yy = y + i as f64 * 18.0;
        svg.line(
            (x, yy),
            (x + 22.0, yy),
            &format!("stroke=\"{colour}\" stroke-width=\"3\""),
        );
        svg.text(x + 28.0, yy + 4.0, name, "start", "");
    }
}

/// How a regime key reads in titles.
pub fn regime_label(key: &str) -> &str {
    match crate::protocol::Regime::parse(key) {
        Some(regime) => regime.label(),
        None => key,
    }
}

/// Models × categories (and macro) in one regime: cells coloured by MCC on a fixed 0–1 viridis
/// scale (so regimes compare), each printing its MCC and the model's rank in that column.
pub fn heatmap(analysis: &Analysis, regime: &str) -> Option<String> {
    let profile = &analysis.profile;
    let rows = &profile.regimes.iter().find(|r| r.regime == regime)?.rows;
    let ranks = &analysis.ranks.iter().find(|r| r.regime == regime)?.ranks;
    let columns: Vec<&str> = profile
        .categories
        .iter()
        .map(String::as_str)
        .chain(["macro"])
        .collect();
    let (cell_w, cell_h) = (74.0, 40.0);
    let label_w = 20.0 + 7.0 * rows.iter().map(|r| r.model.chars().count()).max()? as f64;
    let (top, left) = (120.0, label_w.max(90.0));
    let width = left + cell_w * columns.len() as f64 + 30.0;
    let height = top + cell_h * rows.len() as f64 + 70.0;
    let mut svg = Svg::new(
        width,
        height,
        &format!("MCC by category, {}", regime_label(regime)),
        &format!(
            "Heatmap of {} models by {} categories plus macro; each cell shows the MCC and the \
             model's rank in that column (1 = best). Colour: viridis from MCC 0 (dark) to 1 \
             (yellow).",
            rows.len(),
            profile.categories.len()
        ),
    );
    for (j, column) in columns.iter().enumerate() {
        let x = left + cell_w * (j as f64 + 0.5);
        svg.text(
            0.0,
            0.0,
            column,
            "start",
            &format!(
                "transform=\"translate({x:.1},{:.1}) rotate(-40)\"",
                top - 8.0
            ),
        );
    }
    for (i, row) in rows.iter().enumerate() {
        let y = top + cell_h * i as f64;
        svg.text(left - 8.0, y + cell_h / 2.0 + 4.0, &row.model, "end", "");
        for (j, column) in columns.iter().enumerate() {
            let x = left + cell_w * j as f64;
            let mcc = if *column == "macro" {
                Some(row.macro_mean)
            } else {
                row.categories.get(*column).map(|c| c.mean)
            };
            let Some(mcc) = mcc else {
                let _ = write!(
                    svg.body,
                    "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{cell_w}\" height=\"{cell_h}\" \
                     fill=\"#f2f2f2\" stroke=\"#fff\" class=\"cell missing\"/>"
                );
                svg.text(
                    x + cell_w / 2.0,
                    y + cell_h / 2.0 + 4.0,
                    "–",
                    "middle",
                    "fill=\"#777\"",
                );
                continue;
            };
            let rgb = viridis(mcc);
            let _ = write!(
                svg.body,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{cell_w}\" height=\"{cell_h}\" \
                 fill=\"rgb({},{},{})\" stroke=\"#fff\" class=\"cell\"><title>{}, {}: MCC {mcc:.3}</title></rect>",
                rgb[0],
                rgb[1],
                rgb[2],
                escape(&row.model),
                escape(column)
            );
            let ink = format!("fill=\"{}\"", ink_on(rgb));
            svg.text(
                x + cell_w / 2.0,
                y + 17.0,
                &format!("{mcc:.3}"),
                "middle",
                &ink,
            );
            if let Some(rank) = ranks.get(&row.model).and_then(|r| r.get(*column)) {
                let rank = format!("#{}", format_rank(*rank));
                svg.text(
                    x + cell_w / 2.0,
                    y + 32.0,
                    &rank,
                    "middle",
                    &format!("{ink} font-size=\"11\""),
                );
            }
        }
    }
    // Colour key.
    let key_y = top + cell_h * rows.len() as f64 + 24.0;
    for k in 0..50 {
        let rgb = viridis(k as f64 / 49.0);
        let _ = write!(
            svg.body,
            "<rect x=\"{:.1}\" y=\"{key_y:.1}\" width=\"4\" height=\"12\" fill=\"rgb({},{},{})\"/>",
            left + 4.0 * k as f64,
            rgb[0],
            rgb[1],
            rgb[2]
        );
    }
    svg.text(left - 6.0, key_y + 10.0, "MCC 0", "end", "font-size=\"11\"");
    svg.text(left + 206.0, key_y + 10.0, "1", "start", "font-size=\"11\"");
    svg.text(
        left + 230.0,
        key_y + 10.0,
        "#n = rank in the column (1 = best)",
        "start",
        "font-size=\"11\" fill=\"#333\"",
    );
    Some(svg.finish())
}

pub fn format_rank(rank: f64) -> String {
    if rank.fract() == 0.0 {
        format!("{rank:.0}")
    } else {
        format!("{rank:.1}")
    }
}

/// One small panel per category: each model's rank (1 = top) across the regimes present.
pub fn rank_changes(analysis: &Analysis) -> Option<String> {
    let profile = &analysis.profile;
    if analysis.ranks.len() < 2 {
        return None;
    }
    let models = user_models(analysis);
    let n_models = profile
        .regimes
        .iter()
        .map(|r| r.rows.len())
        .max()
        .unwrap_or(1)
        .max(2);
    let columns = 4.min(profile.categories.len()).max(1);
    let panel_rows = profile.categories.len().div_ceil(columns);
    let (panel_w, panel_h) = (200.0, 40.0 + 22.0 * n_models as f64);
    let legend_h = 18.0 * models.len() as f64 + 16.0;
    let top = 44.0 + legend_h;
    let width = 30.0 + panel_w * columns as f64;
    let height = top + (panel_h + 40.0) * panel_rows as f64;
    let regimes: Vec<&str> = analysis.ranks.iter().map(|r| r.regime.as_str()).collect();
    let mut svg = Svg::new(
        width,
        height,
        "Rank per category across label budgets",
        &format!(
            "Small multiples, one per category: each line is one model's rank (1 = best, at the \
             top) under {}. Crossing lines are categories whose ranking reorders.",
            regimes
                .iter()
                .map(|r| regime_label(r))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    let entries: Vec<(String, &str)> = models
        .iter()
        .map(|m| (m.to_string(), colour_of(analysis, m)))
        .collect();
    legend(&mut svg, &entries, 30.0, 44.0);
    for (c, category) in profile.categories.iter().enumerate() {
        let x0 = 30.0 + panel_w * (c % columns) as f64;
        let y0 = top + (panel_h + 40.0) * (c / columns) as f64;
        svg.text(
            x0 + 80.0,
            y0 + 12.0,
            category,
            "middle",
            "font-weight=\"600\"",
        );
        let plot_x = |k: usize| x0 + 20.0 + 120.0 * k as f64 / (regimes.len() - 1) as f64;
        let plot_y = |rank: f64| y0 + 30.0 + (rank - 1.0) * 22.0;
        for (k, regime) in regimes.iter().enumerate() {
            let x = plot_x(k);
            svg.line(
                (x, plot_y(1.0) - 6.0),
                (x, plot_y(n_models as f64) + 6.0),
                "stroke=\"#e4e4e4\"",
            );
            svg.text(
                x,
                plot_y(n_models as f64) + 22.0,
                regime_label(regime),
                "middle",
                "font-size=\"10\" fill=\"#333\"",
            );
        }
        for r in 1..=n_models {
            svg.text(
                x0 + 6.0,
                plot_y(r as f64) + 4.0,
                &r.to_string(),
                "end",
                "font-size=\"10\" fill=\"#777\"",
            );
        }
        for model in &models {
            let points: Vec<(f64, f64)> = analysis
                .ranks
                .iter()
                .enumerate()
                .filter_map(|(k, r)| {
                    Some((plot_x(k), plot_y(*r.ranks.get(*model)?.get(category)?)))
                })
                .collect();
            let colour = colour_of(analysis, model);
            svg.polyline(&points, colour, "stroke-width=\"2.5\" class=\"rank-line\"");
            for p in &points {
                svg.circle(*p, 3.5, colour, model);
            }
        }
    }
    Some(svg.finish())
}

/// The user's models in profile order (every regime's), each keeping one colour in every plot.
fn user_models(analysis: &Analysis) -> Vec<&str> {
    let mut models: Vec<&str> = Vec::new();
    for row in analysis.profile.regimes.iter().flat_map(|r| &r.rows) {
        if !models.contains(&row.model.as_str()) {
            models.push(&row.model);
        }
    }
    models
}

fn colour_of(analysis: &Analysis, model: &str) -> &'static str {
    let index = user_models(analysis).iter().position(|m| *m == model);
    OKABE_ITO[index.unwrap_or(0) % OKABE_ITO.len()]
}

/// Under plots that draw the user's macro next to the published one.
fn scope_footnote(analysis: &Analysis) -> Option<&'static str> {
    let partial = analysis
        .profile
        .regimes
        .iter()
        .flat_map(|r| &r.rows)
        .any(|r| !r.is_full_geneb());
    partial.then_some(
        "Your macro MCC is over other tasks than GENEB's 100: not directly comparable with grey.",
    )
}

/// Macro MCC from full data to 10-shot to 1-shot: the user's models in colour (bootstrap 95 %
/// intervals as whiskers where the files carry evidence), the published models as grey lines.
pub fn degradation(analysis: &Analysis) -> Option<String> {
    let regimes: Vec<&str> = analysis
        .profile
        .regimes
        .iter()
        .map(|r| r.regime.as_str())
        .collect();
    if regimes.len() < 2 {
        return None;
    }
    let published: Vec<Vec<f64>> = {
        let rows_in = |regime: &str| analysis.published.iter().find(|c| c.regime == regime);
        let first = rows_in(regimes[0])?;
        first
            .rows
            .iter()
            .filter(|r| r.published)
            .filter_map(|r| {
                regimes
                    .iter()
                    .map(|g| {
                        rows_in(g)?
                            .rows
                            .iter()
                            .find(|o| o.published && o.model == r.model)
                            .map(|o| o.macro_mcc)
                    })
                    .collect()
            })
            .collect()
    };
    let user: Vec<(&str, Vec<Option<f64>>)> = user_models(analysis)
        .into_iter()
        .map(|model| {
            let values = analysis
                .profile
                .regimes
                .iter()
                .map(|r| {
                    r.rows
                        .iter()
                        .find(|o| o.model == model)
                        .map(|o| o.macro_mean)
                })
                .collect();
            (model, values)
        })
        .collect();
    let all = published
        .iter()
        .flatten()
        .copied()
        .chain(user.iter().flat_map(|u| u.1.iter().flatten().copied()));
    let (lo, hi) = mcc_range(all);
    let (left, top, plot_w, plot_h) = (70.0, 50.0, 380.0, 300.0);
    let legend_x = left + plot_w + 30.0;
    let label_w = user
        .iter()
        .map(|u| u.0.chars().count())
        .max()
        .unwrap_or(8)
        .max(24) as f64
        * 7.0;
    let footnote = scope_footnote(analysis);
    let mut svg = Svg::new(
        legend_x + label_w + 40.0,
        top + plot_h + 60.0 + if footnote.is_some() { 20.0 } else { 0.0 },
        "Few-shot degradation: macro MCC by label budget",
        &format!(
            "Macro MCC of {} of your models (coloured lines, whiskers = bootstrap 95 % interval) \
             and {} published GENEB models (grey) under {}.",
            user.len(),
            published.len(),
            regimes
                .iter()
                .map(|r| regime_label(r))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    let y = mcc_axis(&mut svg, (lo, hi), (left, top, plot_w, plot_h), "macro MCC");
    let x = |k: usize| left + 30.0 + (plot_w - 60.0) * k as f64 / (regimes.len() - 1) as f64;
    for (k, regime) in regimes.iter().enumerate() {
        svg.text(
            x(k),
            top + plot_h + 20.0,
            regime_label(regime),
            "middle",
            "",
        );
    }
    svg.text(
        left + plot_w / 2.0,
        top + plot_h + 44.0,
        "label budget",
        "middle",
        "fill=\"#333\"",
    );
    for values in &published {
        let pts: Vec<(f64, f64)> = values
            .iter()
            .enumerate()
            .map(|(k, v)| (x(k), y.at(*v)))
            .collect();
        svg.polyline(
            &pts,
            PUBLISHED_GREY,
            "stroke-width=\"1\" class=\"published\"",
        );
    }
    for (model, values) in &user {
        let colour = colour_of(analysis, model);
        let pts: Vec<(f64, f64)> = values
            .iter()
            .enumerate()
            .filter_map(|(k, v)| Some((x(k), y.at((*v)?))))
            .collect();
        for (k, regime) in regimes.iter().enumerate() {
            let ci = analysis
                .uncertainty
                .iter()
                .find(|u| u.regime == *regime && u.model == *model)
                .and_then(|u| u.macro_estimate);
            if let Some(ci) = ci {
                svg.line(
                    (x(k), y.at(ci.lo)),
                    (x(k), y.at(ci.hi)),
                    &format!("stroke=\"{colour}\" stroke-width=\"1.5\""),
                );
            }
        }
        svg.polyline(&pts, colour, "stroke-width=\"2.5\" class=\"model-line\"");
        for p in &pts {
            svg.circle(*p, 4.0, colour, model);
        }
    }
    let mut entries: Vec<(String, &str)> = user
        .iter()
        .map(|u| (u.0.to_string(), colour_of(analysis, u.0)))
        .collect();
    entries.push(("published GENEB models".into(), PUBLISHED_GREY));
    legend(&mut svg, &entries, legend_x, top + 10.0);
    if let Some(text) = footnote {
        svg.text(
            left,
            top + plot_h + 70.0,
            text,
            "start",
            "font-size=\"11\" fill=\"#333\"",
        );
    }
    Some(svg.finish())
}

/// Parameter count (log scale) against macro MCC in one regime: published models in grey
/// behind, the user's models in colour and labelled; models without a parameter count are
/// listed under the plot instead.
pub fn params_scatter(analysis: &Analysis, regime: &str) -> Option<String> {
    let context = analysis.published.iter().find(|c| c.regime == regime)?;
    let placed: Vec<_> = context.rows.iter().filter(|r| r.params > 0).collect();
    let unplaced: Vec<&str> = context
        .rows
        .iter()
        .filter(|r| r.params == 0)
        .map(|r| r.model.as_str())
        .collect();
    let log = |p: u64| (p as f64).log10();
    let (x_lo, x_hi) = placed
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), r| {
            (a.min(log(r.params).floor()), b.max(log(r.params).ceil()))
        });
    let (x_lo, x_hi) = if x_lo < x_hi {
        (x_lo, x_hi)
    } else {
        (6.0, 10.0)
    };
    let (lo, hi) = mcc_range(placed.iter().map(|r| r.macro_mcc));
    let (left, top, plot_w, plot_h) = (70.0, 50.0, 520.0, 320.0);
    let rho = analysis.params_vs_macro.iter().find(|p| p.regime == regime);
    let rho_text = rho
        .and_then(|p| {
            Some(format!(
                "Spearman ρ = {:.2} over {} models with a parameter count",
                p.with_published?, p.n_with_published
            ))
        })
        .unwrap_or_default();
    let footnote = scope_footnote(analysis).filter(|_| placed.iter().any(|r| !r.published));
    let extra_lines = usize::from(!unplaced.is_empty()) + usize::from(footnote.is_some());
    let mut svg = Svg::new(
        left + plot_w + 40.0,
        top + plot_h + 80.0 + 18.0 * extra_lines as f64,
        &format!("Parameters vs macro MCC, {}", regime_label(regime)),
        &format!(
            "Scatter of parameter count (log scale) against macro MCC: {} published GENEB models \
             in grey, your models in colour. {rho_text}",
            placed.iter().filter(|r| r.published).count()
        ),
    );
    let y = Scale {
        lo,
        hi,
        start: top + plot_h,
        end: top,
    };
    let x = Scale {
        lo: x_lo,
        hi: x_hi,
        start: left,
        end: left + plot_w,
    };
    y_axis(&mut svg, &y, left, left + plot_w, "macro MCC");
    let mut decade = x_lo;
    while decade <= x_hi + 1e-9 {
        let px = x.at(decade);
        svg.line((px, top), (px, top + plot_h), "stroke=\"#e4e4e4\"");
        svg.text(
            px,
            top + plot_h + 18.0,
            &params_label(10f64.powf(decade)),
            "middle",
            "fill=\"#333\"",
        );
        decade += 1.0;
    }
    svg.text(
        left + plot_w / 2.0,
        top + plot_h + 40.0,
        "parameters (log scale)",
        "middle",
        "fill=\"#333\"",
    );
    for r in placed.iter().filter(|r| r.published) {
        svg.circle(
            (x.at(log(r.params)), y.at(r.macro_mcc)),
            4.0,
            PUBLISHED_GREY,
            &format!("{} (published): {:.3}", r.model, r.macro_mcc),
        );
    }
    for r in placed.iter().filter(|r| !r.published) {
        let p = (x.at(log(r.params)), y.at(r.macro_mcc));
        let colour = colour_of(analysis, &r.model);
        svg.circle(p, 6.0, colour, &format!("{}: {:.3}", r.model, r.macro_mcc));
        svg.text(
            p.0 + 9.0,
            p.1 - 7.0,
            &r.model,
            "start",
            &format!("fill=\"{colour}\" font-weight=\"600\""),
        );
    }
    svg.text(
        left,
        top + plot_h + 62.0,
        &rho_text,
        "start",
        "font-size=\"11\" fill=\"#333\"",
    );
    let mut line_y = top + plot_h + 80.0;
    if let Some(text) = footnote {
        svg.text(
            left,
            line_y,
            text,
            "start",
            "font-size=\"11\" fill=\"#333\"",
        );
        line_y += 18.0;
    }
    if !unplaced.is_empty() {
        svg.text(
            left,
            line_y,
            &format!(
                "Not shown (no parameter count in meta.params): {}",
                unplaced.join(", ")
            ),
            "start",
            "font-size=\"11\" fill=\"#333\"",
        );
    }
    Some(svg.finish())
}

/// "7B", "1.2B", "252M", "19.7M", "2k": three significant digits at most.
pub fn params_label(p: f64) -> String {
    let (value, unit) = match p {
        p if p >= 1e9 => (p / 1e9, "B"),
        p if p >= 1e6 => (p / 1e6, "M"),
        p if p >= 1e3 => (p / 1e3, "k"),
        p => (p, ""),
    };
    let digits = if value >= 100.0 || value.fract() == 0.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{value:.digits$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    format!("{text}{unit}")
}

/// MCC by hidden state for one model in one regime: a line per category (bootstrap 95 %
/// intervals as whiskers where the results carry evidence), each category's best layer ringed.
pub fn layers(model: &LayerProfile, regime: &LayerRegime) -> String {
    let values = regime.categories.iter().flat_map(|c| {
        c.layers.iter().flat_map(|l| {
            [
                Some(l.mcc),
                l.interval.map(|e| e.lo),
                l.interval.map(|e| e.hi),
            ]
            .into_iter()
            .flatten()
        })
    });
    let (lo, hi) = mcc_range(values);
    let (left, top, plot_w, plot_h) = (70.0, 50.0, 420.0, 300.0);
    let legend_x = left + plot_w + 30.0;
    let label_w = regime
        .categories
        .iter()
        .map(|c| c.category.chars().count() + 16)
        .max()
        .unwrap_or(20) as f64
        * 7.0;
    let mut svg = Svg::new(
        legend_x + label_w,
        top + plot_h + 60.0,
        &format!(
            "MCC by layer, {}, {}",
            model.model,
            regime_label(&regime.regime)
        ),
        &format!(
            "MCC of {} categories at each hidden state probed (0 = the embeddings' output, {} = \
             the last layer's), whiskers = bootstrap 95 % interval; a ring marks each \
             category's best layer.",
            regime.categories.len(),
            model.last_layer
        ),
    );
    let y = mcc_axis(&mut svg, (lo, hi), (left, top, plot_w, plot_h), "MCC");
    let x = |layer: usize| {
        left + 20.0 + (plot_w - 40.0) * layer as f64 / model.last_layer.max(1) as f64
    };
    // Every layer's tick when they fit, else about ten.
    let step = model.last_layer.div_ceil(10).max(1);
    for layer in (0..=model.last_layer).filter(|l| l % step == 0 || *l == model.last_layer) {
        svg.text(
            x(layer),
            top + plot_h + 18.0,
            &layer.to_string(),
            "middle",
            "fill=\"#333\"",
        );
    }
    svg.text(
        left + plot_w / 2.0,
        top + plot_h + 40.0,
        "hidden state (layer)",
        "middle",
        "fill=\"#333\"",
    );
    let mut entries = Vec::new();
    for (i, c) in regime.categories.iter().enumerate() {
        let colour = OKABE_ITO[i % OKABE_ITO.len()];
        for l in &c.layers {
            if let Some(e) = l.interval {
                svg.line(
                    (x(l.layer), y.at(e.lo)),
                    (x(l.layer), y.at(e.hi)),
                    &format!("stroke=\"{colour}\" stroke-width=\"1.5\""),
                );
            }
        }
        let points: Vec<(f64, f64)> = c.layers.iter().map(|l| (x(l.layer), y.at(l.mcc))).collect();
        svg.polyline(&points, colour, "stroke-width=\"2.5\" class=\"layer-line\"");
        for (l, p) in c.layers.iter().zip(&points) {
            svg.circle(
                *p,
                3.5,
                colour,
                &format!("{}, layer {}: MCC {:.3}", c.category, l.layer, l.mcc),
            );
            if l.layer == c.best_layer {
                let _ = write!(
                    svg.body,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"8\" fill=\"none\" \
                     stroke=\"{colour}\" stroke-width=\"2\" class=\"best-layer\"/>",
                    p.0, p.1
                );
            }
        }
        entries.push((format!("{} (best: {})", c.category, c.best_layer), colour));
    }
    legend(&mut svg, &entries, legend_x, top + 10.0);
    svg.finish()
}

/// Every plot of the analysis, by file name.
pub fn all(analysis: &Analysis) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for regime in &analysis.profile.regimes {
        if let Some(svg) = heatmap(analysis, &regime.regime) {
            out.push((format!("heatmap_{}.svg", regime.regime), svg));
        }
    }
    if let Some(svg) = rank_changes(analysis) {
        out.push(("rank_changes.svg".into(), svg));
    }
    if let Some(svg) = degradation(analysis) {
        out.push(("fewshot_degradation.svg".into(), svg));
    }
    for regime in &analysis.profile.regimes {
        if let Some(svg) = params_scatter(analysis, &regime.regime) {
            out.push((format!("params_vs_macro_{}.svg", regime.regime), svg));
        }
    }
    // Numbered, as model specs are paths and ids: the title names the model.
    for (i, model) in analysis.layers.iter().enumerate() {
        for regime in &model.regimes {
            out.push((
                format!("layers_{}_{}.svg", i + 1, regime.regime),
                layers(model, regime),
            ));
        }
    }
    out
}
