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
    /// List the built-in encoders and the foundation models known by Hugging Face id (JSON).
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
    /// Result files written by `geneb eval` (or GENEB submission JSONs).
    #[arg(required = true)]
    results: Vec<PathBuf>,
    /// Print the profile as JSON.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Eval(args) => run_eval(args),
        Command::Probe(args) => run_probe(args),
        Command::Fewshot(args) => run_fewshot(args),
        Command::Profile(args) => run_profile(args),
        Command::Models => geneb::encoder::catalogue().and_then(|c| print_json(&c)),
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
    let submission =
        pollster::block_on(eval::evaluate(&encoder, &tasks, &regimes, &mut on_progress))?;
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
    let profile = profile::build(&submissions)?;
    if args.json {
        print_json(&profile)
    } else {
        print!("{}", profile::to_text(&profile));
        Ok(())
    }
}
