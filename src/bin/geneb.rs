//! The geneb CLI: the GENEB probing protocol for batch work. Thin by design: it parses
//! arguments, calls the library and prints; every error is one line on stderr and exit code 2.

use clap::{Args, Parser, Subcommand};
use geneb::encoder::{BackendKind, Encoder};
use geneb::eval::{self, Progress};
use geneb::protocol::Regime;
use geneb::seq::{self, InputFile};
use geneb::{Error, Result, metrics, probe, profile, task::fewshot};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "geneb",
    version,
    about = "The GENEB probing protocol: frozen encoder → pooled embedding → logistic-regression probe → per-category profile"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Embed tasks with a frozen encoder, probe every regime, write a GENEB submission JSON.
    Eval(EvalArgs),
    /// Fit GENEB's probe on your own embeddings (X_train, y_train, X_test, y_test in an .npz).
    Probe(ProbeArgs),
    /// Print the few-shot subset GENEB's reference sampler picks (0-based train indices).
    Fewshot(FewshotArgs),
    /// The per-category table of one or more result files.
    Profile(ProfileArgs),
    /// List the built-in encoders.
    Models,
    /// Pooled embeddings of a list of sequences as a float32 .npy (n × d, in input order).
    Embed(EmbedArgs),
}

#[derive(Args)]
struct EmbedArgs {
    /// Encoder spec: kmer:K, random-cnn[:SEED], hf:FOLDER.
    #[arg(long)]
    model: String,
    /// FASTA, a table with a text or sequence column, or one sequence per line (.gz allowed).
    #[arg(long)]
    input: PathBuf,
    /// The .npy to write (written whole or not at all).
    #[arg(long)]
    out: PathBuf,
    /// Where Burn encoders run: cpu or wgpu.
    #[arg(long, default_value = "cpu")]
    backend: String,
}

#[derive(Args)]
struct EvalArgs {
    /// Encoder spec: kmer:K, kmer:K:canonical, random-cnn, random-cnn:SEED.
    #[arg(long)]
    model: String,
    /// A task table (text,label,split), a folder with train.csv + test.csv, FASTA, or a folder
    /// of those. Repeat for more.
    #[arg(long, required = true)]
    task: Vec<PathBuf>,
    /// Regimes to run, comma-separated.
    #[arg(long, default_value = "full,10shot,1shot", value_delimiter = ',')]
    regimes: Vec<String>,
    /// Category for tasks the GENEB catalogue and tasks.json do not know.
    #[arg(long)]
    category: Option<String>,
    /// Where Burn encoders run: cpu (default, pure Rust) or wgpu (Vulkan/Metal/DX12 GPU).
    #[arg(long, default_value = "cpu")]
    backend: String,
    /// Write the result here instead of stdout (written whole or not at all).
    #[arg(long)]
    out: Option<PathBuf>,
    /// No progress on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Embed again instead of reusing (and storing) embeddings under the cache folder
    /// ($GENEB_CACHE, else $XDG_CACHE_HOME/geneb or ~/.cache/geneb).
    #[arg(long)]
    no_cache: bool,
}

#[derive(Args)]
struct ProbeArgs {
    /// numpy .npz with X_train, y_train, X_test, y_test.
    #[arg(long)]
    npz: PathBuf,
}

#[derive(Args)]
struct FewshotArgs {
    /// One label per line, in train order.
    #[arg(long)]
    labels: PathBuf,
    /// Examples per class.
    #[arg(long)]
    k: usize,
    /// numpy RandomState seed (GENEB uses 13, 17, 42, 123, 997).
    #[arg(long)]
    seed: u32,
}

#[derive(Args)]
struct ProfileArgs {
    /// Result files written by `geneb eval` (or GENEB submission JSONs, or the page's download).
    #[arg(required = true)]
    results: Vec<PathBuf>,
    /// Print the whole analysis as JSON (profile, intervals, ranks, recommendations).
    #[arg(long)]
    json: bool,
    /// Write the self-contained HTML report here.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Write every table as CSV into this folder (one file per table).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write the plots as SVG into this folder.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Write each model's official submission JSON (reference schema only) into this folder.
    #[arg(long)]
    official: Option<PathBuf>,
    /// Recommend only models with at most this many parameters (e.g. 120000000).
    #[arg(long)]
    max_params: Option<u64>,
    /// Bootstrap replicates for the 95 % intervals and paired tests.
    #[arg(long, default_value_t = 1000)]
    bootstrap: usize,
    /// Seed of the bootstrap resampling.
    #[arg(long, default_value_t = 0)]
    seed: u32,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Eval(args) => run_eval(args),
        Command::Probe(args) => run_probe(args),
        Command::Fewshot(args) => run_fewshot(args),
        Command::Profile(args) => run_profile(args),
        Command::Models => print_json(&geneb::encoder::builtin_models()),
        Command::Embed(args) => run_embed(args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("geneb: {}", e.to_string().replace(['\n', '\r'], " "));
            ExitCode::from(2)
        }
    }
}

fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Error::new(format!("cannot write JSON: {e}")))?;
    println!("{text}");
    Ok(())
}

fn read_file(path: &Path) -> Result<InputFile> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::in_file(path.display().to_string(), format!("cannot read: {e}")))?;
    Ok(InputFile {
        name: path.display().to_string(),
        bytes,
    })
}

/// Write all of `text` or nothing: to a temporary file beside `path`, then renamed over it.
fn write_whole(path: &Path, text: impl AsRef<[u8]>) -> Result<()> {
    let fail = |e: std::io::Error| {
        Error::in_file(path.display().to_string(), format!("cannot write: {e}"))
    };
    let tmp = path.with_extension("geneb-partial");
    std::fs::write(&tmp, text).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e)
    })
}

fn run_eval(args: EvalArgs) -> Result<()> {
    let regimes = Regime::parse_list(&args.regimes)?;
    let backend_kind = BackendKind::parse(&args.backend)?;
    let mut tasks = Vec::new();
    let mut given_by = std::collections::BTreeMap::new();
    for path in &args.task {
        for task in seq::tasks_from_path(path, args.category.as_deref())? {
            // Results are keyed by task id: a second task with the same id would overwrite one.
            if let Some(first) = given_by.insert(task.task.id.clone(), path.clone()) {
                return Err(Error::new(format!(
                    "task id '{}' comes from both {} and {}; rename one",
                    task.task.id,
                    first.display(),
                    path.display()
                )));
            }
            tasks.push(task);
        }
    }
    let encoder = pollster::block_on(Encoder::from_spec(&args.model, backend_kind))?;
    let show = !args.quiet && std::io::stderr().is_terminal();
    let mut on_progress = |p: Progress| {
        if show {
            eprint!(
                "\r{:?} {} {} {}/{}   ",
                p.stage, p.model, p.task, p.done, p.total
            );
            let _ = std::io::stderr().flush();
        }
    };
    let store = geneb::embedding_cache::FolderStore::new(cache_root()?.join("embeddings"));
    let store: Option<&dyn eval::EmbeddingStore> = (!args.no_cache).then_some(&store);
    let submission = pollster::block_on(eval::evaluate(
        &encoder,
        &tasks,
        &regimes,
        store,
        &mut on_progress,
    ))?;
    if show {
        eprintln!();
    }
    let text = submission.to_json_pretty()?;
    match &args.out {
        Some(path) => write_whole(path, &text),
        None => {
            println!("{text}");
            Ok(())
        }
    }
}

/// The cache folder: $GENEB_CACHE, else $XDG_CACHE_HOME/geneb, else ~/.cache/geneb.
fn cache_root() -> Result<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("GENEB_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|p| p.join("geneb")))
        .or_else(|| var("HOME").map(|p| p.join(".cache").join("geneb")))
        .ok_or_else(|| Error::new("no cache folder: set GENEB_CACHE (or use --no-cache)"))
}

fn run_embed(args: EmbedArgs) -> Result<()> {
    let backend = BackendKind::parse(&args.backend)?;
    let sequences = seq::read_sequences(&read_file(&args.input)?)?;
    let encoder = pollster::block_on(Encoder::from_spec(&args.model, backend))?;
    let texts: Vec<String> = sequences.into_iter().map(|s| s.sequence).collect();
    let embeddings = pollster::block_on(encoder.embed(&texts))?;
    let mut npy = Vec::new();
    ndarray_npy::WriteNpyExt::write_npy(&embeddings, &mut npy)
        .map_err(|e| Error::new(format!("cannot encode the .npy: {e}")))?;
    write_whole(&args.out, &npy)?;
    eprintln!(
        "geneb: {} embeddings of dimension {} from {} written to {}",
        embeddings.nrows(),
        embeddings.ncols(),
        encoder.spec(),
        args.out.display()
    );
    Ok(())
}

fn run_probe(args: ProbeArgs) -> Result<()> {
    let data = geneb::npz::read_probe_npz(&args.npz)?;
    let fit = probe::fit(data.x_train.view(), &data.y_train)?;
    let predicted = fit.predict(data.x_test.view());
    let scores = metrics::score(&data.y_test, &predicted);
    let numeric = data.labels.iter().all(|l| l.parse::<i64>().is_ok());
    let predictions: Vec<serde_json::Value> = predicted
        .iter()
        .map(|&i| {
            let label = &data.labels[i];
            match label.parse::<i64>() {
                Ok(n) if numeric => serde_json::Value::from(n),
                _ => serde_json::Value::from(label.as_str()),
            }
        })
        .collect();
    print_json(&serde_json::json!({
        "MCC": scores.mcc, "Acc": scores.acc, "F1": scores.f1,
        "n_iter": fit.n_iter, "converged": fit.converged,
        "predictions": predictions,
    }))
}

fn run_fewshot(args: FewshotArgs) -> Result<()> {
    if args.k == 0 {
        return Err(Error::new("--k must be at least 1"));
    }
    let labels = seq::read_labels(&read_file(&args.labels)?)?;
    let (order, y) = seq::label_indices(&labels);
    let picked = fewshot::sample(&y, order.len(), args.k, args.seed);
    let mut out = std::io::stdout().lock();
    for i in picked {
        writeln!(out, "{i}").map_err(|e| Error::new(format!("cannot write: {e}")))?;
    }
    Ok(())
}

fn run_profile(args: ProfileArgs) -> Result<()> {
    let mut submissions = Vec::new();
    for path in &args.results {
        let file = read_file(path)?;
        submissions.extend(geneb::report::read_results(&file.name, &file.bytes)?);
    }
    let settings = profile::bootstrap::Settings {
        replicates: args.bootstrap,
        seed: args.seed,
    };
    let analysis = profile::analysis::analyse(&submissions, settings, args.max_params)?;
    let outputs = geneb::report::html::render(&analysis, &submissions)?;
    if let Some(path) = &args.html {
        write_whole(path, &outputs.html)?;
    }
    for (dir, files) in [
        (&args.csv, &outputs.csv),
        (&args.svg, &outputs.svg),
        (&args.official, &outputs.official),
    ] {
        if let Some(dir) = dir {
            std::fs::create_dir_all(dir).map_err(|e| {
                Error::in_file(dir.display().to_string(), format!("cannot create: {e}"))
            })?;
            for (name, text) in files {
                write_whole(&dir.join(name), text)?;
            }
        }
    }
    if args.json {
        print_json(&analysis)
    } else {
        print!("{}", profile::analysis::to_text(&analysis));
        Ok(())
    }
}
