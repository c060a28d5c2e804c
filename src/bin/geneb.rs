//! The geneb CLI: the GENEB probing protocol for batch work. Thin by design: it parses
//! arguments, calls the library and prints; every error is one line on stderr and exit code 2.

use clap::{Args, Parser, Subcommand};
use geneb::atomic_file::write_whole;
use geneb::encoder::card::MetaOverrides;
use geneb::encoder::spec::{LayerSweep, ModelSpec};
use geneb::encoder::{BackendKind, Encoder, Precision};
use geneb::eval::{self, Progress};
use geneb::hub::{Hub, Located, official};
use geneb::input::{self, InputFile, audit};
use geneb::protocol::Regime;
use geneb::run::{EncoderFuture, Encoders, OwnEmbeddings, Run};
use geneb::shard::Shard;
use geneb::task::{TaskData, catalogue};
use geneb::{Error, Result, metrics, probe, profile, task::fewshot};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;

/// The CPU backend allocates a fresh buffer for every tensor op. With glibc's malloc the large
/// ones are mmap'd and unmapped each time, and with rayon's threads every unmap is a TLB
/// shootdown across cores: half of HyenaDNA-tiny's time went to the kernel (perf). mimalloc
/// keeps and reuses the memory.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its mimalloc.h, v3; libmimalloc-sys names no constant
/// for it): how long freed memory waits before it goes back to the OS.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Freed memory stays with the process: by default mimalloc returns what stays free for a
/// second, and the next activations came back as fresh pages the kernel zeroes (17 % of an
/// NT-v2-50m-shaped embedding in `perf`). Never returning it: minor page faults 55,874 → 1,425
/// and about 7 % faster there, peak memory about 5 % higher (bench/README.md).
fn keep_freed_memory() {
    // SAFETY: options may be set at any time, from any thread (mimalloc.h).
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) }
}

#[derive(Parser)]
#[command(
    name = "geneb",
    version,
    about = "The GENEB probing protocol: frozen encoder → pooled embedding → logistic-regression probe → per-category profile"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// The most memory one file or argument may make geneb hold (default 2GiB; or the
    /// GENEB_MAX_MEMORY environment variable): a file asking for more is refused by name.
    #[arg(long, global = true, value_name = "SIZE")]
    max_memory: Option<String>,
}

#[derive(Subcommand)]
#[allow(
    clippy::large_enum_variant,
    reason = "the parsed command line, one per process"
)]
enum Command {
    /// Embed tasks with a frozen encoder, probe every regime, write a GENEB submission JSON.
    ///
    /// Several models, and runs split over many machines: `--shard I/N --out-dir DIR` computes
    /// shard I (from 0) of N of the run's (model, task) pairs, every regime of a pair in the
    /// same shard. Which pairs a shard gets depends on the pairs alone (sorted, dealt
    /// round-robin). Each pair's result is written whole as DIR/<model>/<task>.json (names
    /// escaped: `hf:org/m` is `hf%3Aorg%2Fm`); pairs already there are skipped, so a failed
    /// shard reruns only what is missing. DIR/plan.json records the run: a shard started with
    /// other arguments is refused. `geneb merge DIR` puts the results together.
    #[command(verbatim_doc_comment)]
    Eval(EvalArgs),
    /// Apply a probe saved by `eval --save-probe` to new sequences: each one's predicted label
    /// and class probabilities as CSV.
    Predict(PredictArgs),
    /// Merge a sharded run (`eval --shard I/N --out-dir DIR`) into one submission per model.
    ///
    /// The same submission an unsharded `geneb eval --out` writes, timings aside (summed).
    /// Writes OUT/<model>.json (the model's name escaped as in DIR). Refuses, naming the file:
    /// missing pairs (how many, and the shards to rerun), a pair found in two folders with
    /// different content, and results of other geneb versions, encoders or task data.
    #[command(verbatim_doc_comment)]
    Merge(MergeArgs),
    /// Fit GENEB's probe on your own embeddings (X_train, y_train, X_test, y_test in an .npz).
    Probe(ProbeArgs),
    /// Print the few-shot subset GENEB's reference sampler picks (0-based train indices).
    Fewshot(FewshotArgs),
    /// The per-category table of one or more result files.
    Profile(ProfileArgs),
    /// List the built-in encoders and the foundation models known by Hugging Face id (JSON),
    /// each with how GENEB's reference extractor embeds it.
    Models(ModelsArgs),
    /// Pooled embeddings of a list of sequences as a float32 .npy (n × d, in input order).
    Embed(EmbedArgs),
    /// List the official GENEB tasks (or one suite's) and whether they are cached.
    Tasks(TasksArgs),
    /// Audit tasks for leaks between train and test: exact, reverse-complement and near copies
    /// (sharing at least half of their informative canonical 21-mers with a training row), and
    /// the MCC of a nearest-neighbour baseline that only remembers training rows.
    Audit(AuditArgs),
}

#[derive(Args)]
struct AuditArgs {
    /// The user's tasks: a table, a folder of tasks, FASTA, … (as `geneb eval --task`), or an
    /// official task as geneb:<id>. Repeat for more.
    #[arg(long)]
    task: Vec<String>,
    /// Official tasks by suite (geneb, geneb-lite, geneb:<category>). Repeat for more.
    #[arg(long)]
    suite: Vec<String>,
    /// Use only cached official tasks; never touch the network.
    #[arg(long)]
    offline: bool,
    /// Print JSON (one object per task under `tasks`) instead of a table.
    #[arg(long)]
    json: bool,
    /// Write each task without its leaked test rows as OUT/<task>.csv (sequence, label, split).
    #[arg(long, value_name = "OUT")]
    clean: Option<PathBuf>,
    #[command(flatten)]
    split: SplitArgs,
}

#[derive(Args)]
struct ModelsArgs {
    /// Print the table of GENEB's extractor recipes (Markdown, as README.md holds it) instead.
    #[arg(long)]
    recipes_markdown: bool,
    /// List the published leaderboard's 41 models instead, best first: parameters, the memory
    /// their weights need at f32 and at half precision, whether geneb runs them and a tab holds
    /// them, and why not where not.
    #[arg(long, conflicts_with = "recipes_markdown")]
    leaderboard: bool,
    /// With --leaderboard: JSON instead of a table.
    #[arg(long, requires = "leaderboard")]
    json: bool,
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
    #[command(flatten)]
    precision: PrecisionArg,
    /// Print on stderr the GPU kernel launches and host reads of the embedding (wgpu only).
    /// The first sequence is embedded once before counting, so shader compilation, autotuning
    /// and per-length caches are not counted.
    #[arg(long)]
    count_kernels: bool,
    /// Write a kernel-by-kernel GPU profile of the embedding to this JSON file (wgpu only):
    /// after the warm first sequence, the wall time of 5 unobserved calls, then one call with
    /// every kernel timed by the GPU's timestamps (per kernel: launches, total and median µs;
    /// each launch in order; the adapter's limits and features). bench/dawn_profile.mjs joins it
    /// with Dawn's.
    #[arg(long, value_name = "JSON", conflicts_with = "count_kernels")]
    profile_kernels: Option<PathBuf>,
}

#[derive(Args)]
struct PrecisionArg {
    /// What the wgpu backend computes in: f32 (default) or f16 (needs an adapter with
    /// shader-f16; opt-in until a real GPU shows it is faster, see bench/README.md).
    #[arg(long, default_value = "f32")]
    precision: String,
}

impl PrecisionArg {
    /// Sets the wgpu device's precision before any model is built, or says why it cannot.
    fn apply(&self, backend: BackendKind) -> Result<()> {
        let precision = Precision::parse(&self.precision)?;
        if precision == Precision::F16 && backend != BackendKind::Wgpu {
            return Err(Error::new(
                "--precision f16 runs on the GPU only: add --backend wgpu",
            ));
        }
        #[cfg(feature = "wgpu")]
        geneb::encoder::backend::set_wgpu_precision(precision)?;
        Ok(())
    }
}

#[derive(Args)]
struct EvalArgs {
    /// Encoder spec: kmer:K, kmer:K:canonical, random-cnn, random-cnn:SEED, hf:FOLDER or
    /// hf:owner/name[@revision]. Repeat for more models (stdout or --out then holds
    /// `{"submissions": [...]}`, one per model).
    #[arg(long, required_unless_present = "embeddings")]
    model: Vec<String>,
    /// Your own embeddings instead of an encoder: a .npz (X_train, y_train, X_test, y_test,
    /// optional task and category strings), a folder with X.npy + labels.csv (label[, split]),
    /// or a folder of those. Repeat for more. Every regime and the profile run on them.
    /// (No encoder and no task data: the sharding, cache and download options do not apply.)
    #[arg(long, conflicts_with_all = ["model", "task", "suite", "out_dir", "shard", "offline", "no_cache"])]
    embeddings: Vec<PathBuf>,
    /// A task table (text,label,split), a folder with train.csv + test.csv, FASTA, a Genomic
    /// Benchmarks / GUE / NT / BED+FASTA folder, a folder of those, or `geneb:<task id>` for an
    /// official task (downloaded once from the hub, then cached). Repeat for more.
    #[arg(long, required_unless_present_any = ["suite", "embeddings"])]
    task: Vec<String>,
    /// Official tasks by suite: geneb (all 100), geneb-lite, geneb:<category> (`geneb tasks
    /// --suites` lists them). Repeat for more.
    #[arg(long)]
    suite: Vec<String>,
    /// Use only cached official tasks; never touch the network.
    #[arg(long)]
    offline: bool,
    /// Regimes to run, comma-separated.
    #[arg(long, default_value = "full,10shot,1shot", value_delimiter = ',')]
    regimes: Vec<String>,
    /// Category for tasks the GENEB catalogue and tasks.json do not know.
    #[arg(long)]
    category: Option<String>,
    /// Where Burn encoders run: cpu (default, pure Rust) or wgpu (Vulkan/Metal/DX12 GPU).
    #[arg(long, default_value = "cpu")]
    backend: String,
    #[command(flatten)]
    precision: PrecisionArg,
    /// Write the result here instead of stdout (written whole or not at all).
    #[arg(long, conflicts_with = "out_dir")]
    out: Option<PathBuf>,
    /// Write each (model, task) result as DIR/<model>/<task>.json instead, skipping those
    /// already there (see above); for `geneb merge`.
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Compute only shard I of N of the (model, task) pairs (I from 0 to N-1), e.g.
    /// `--shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT`. Needs --out-dir.
    #[arg(long, value_name = "I/N", requires = "out_dir")]
    shard: Option<String>,
    /// No progress on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Embed again instead of reusing (and storing) embeddings under the cache folder
    /// ($GENEB_CACHE, else $XDG_CACHE_HOME/geneb or ~/.cache/geneb).
    #[arg(long)]
    no_cache: bool,
    #[command(flatten)]
    split: SplitArgs,
    /// Save the full-data probe of the (one) task here, with the encoder's identity, for
    /// `geneb predict`.
    #[arg(long, conflicts_with = "embeddings")]
    save_probe: Option<PathBuf>,
    /// Probe these hidden layers of each hf: model from one forward pass, each a submission
    /// of its own (hf:MODEL?layer=K, a deviation from GENEB unless K = -1): `all`, or K
    /// separated by commas (0 = the embeddings' output, -1 = the last layer's).
    #[arg(long, value_name = "all|K,K…", value_parser = LayerSweep::parse, conflicts_with_all = ["embeddings", "out_dir", "save_probe"])]
    layers: Option<LayerSweep>,
    #[command(flatten)]
    meta: MetaArgs,
}

/// What the result's `meta` says about the model, where geneb's own reading (the weights'
/// parameter count, the known-models table, config.json, the model card) is wrong or silent.
#[derive(Args)]
struct MetaArgs {
    /// The model's display name.
    #[arg(long)]
    display: Option<String>,
    /// Its parameter count (default: counted from the loaded weights).
    #[arg(long)]
    params: Option<u64>,
    /// What it was trained on.
    #[arg(long)]
    training_data: Option<String>,
    /// Its home page or hub URL.
    #[arg(long)]
    url: Option<String>,
    /// Who submits the result.
    #[arg(long)]
    submitted_by: Option<String>,
}

impl MetaArgs {
    fn overrides(&self) -> MetaOverrides {
        MetaOverrides {
            display: self.display.clone(),
            params: self.params,
            training_data: self.training_data.clone(),
            url: self.url.clone(),
            submitted_by: self.submitted_by.clone(),
        }
    }
}

#[derive(Args)]
struct PredictArgs {
    /// A probe written by `geneb eval --save-probe`.
    #[arg(long)]
    probe: PathBuf,
    /// The encoder the probe was fitted on (another one is refused).
    #[arg(long)]
    model: String,
    /// FASTA, a table with a text or sequence column, or one sequence per line (.gz allowed).
    #[arg(long)]
    input: PathBuf,
    /// The CSV to write: id, predicted, p_<label>… (written whole or not at all).
    #[arg(long)]
    out: PathBuf,
    /// Where Burn encoders run: cpu or wgpu.
    #[arg(long, default_value = "cpu")]
    backend: String,
}

/// How a table without a split column is split (stratified by label, seeded; recorded in the
/// result as a deviation from GENEB, whose tasks have fixed splits).
#[derive(Args)]
struct SplitArgs {
    /// Share of a split-less table's rows put into the test split [default: 0.2].
    #[arg(long, conflicts_with = "folds")]
    test_fraction: Option<f64>,
    /// Seed of the split of split-less tables (scikit-learn's train_test_split /
    /// StratifiedKFold random_state) [default: 42].
    #[arg(long)]
    split_seed: Option<u32>,
    /// A column (e.g. patient or donor id) whose rows all go to one side of the split.
    #[arg(long)]
    group_column: Option<String>,
    /// K-fold cross-validation of split-less tables instead of one split: scores are the mean
    /// over the K folds (std in the result's `folds`).
    #[arg(long)]
    folds: Option<usize>,
    /// `similarity`: keep relatives together, splitting clusters of exact, reverse-complement
    /// and near copies as --group-column splits groups.
    #[arg(long, value_name = "HOW", value_parser = ["similarity"], conflicts_with = "group_column")]
    split_by: Option<String>,
}

impl SplitArgs {
    fn settings(&self) -> geneb::input::split::SplitSettings {
        let defaults = geneb::input::split::SplitSettings::default();
        geneb::input::split::SplitSettings {
            test_fraction: self.test_fraction.unwrap_or(defaults.test_fraction),
            seed: self.split_seed.unwrap_or(defaults.seed),
            group_column: self.group_column.clone(),
            folds: self.folds,
            by_similarity: self.split_by.is_some(),
        }
    }

    const UNUSED: &str = "--test-fraction, --split-seed, --group-column, --folds and --split-by \
         split tables that have no split column, and every task given has its own split";

    fn given(&self) -> bool {
        self.test_fraction.is_some()
            || self.split_seed.is_some()
            || self.group_column.is_some()
            || self.folds.is_some()
            || self.split_by.is_some()
    }

    /// Split options for data that came split would do nothing: say so rather than ignore them.
    fn check_used(&self, tasks: &[TaskData]) -> Result<()> {
        if self.given() && tasks.iter().all(|t| t.data.made_split.is_none()) {
            return Err(Error::new(Self::UNUSED));
        }
        Ok(())
    }
}

#[derive(Args)]
struct MergeArgs {
    /// The --out-dir of the run's shards (several if shards wrote to different folders).
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// Where the merged submissions go: one <model>.json per model.
    #[arg(long, value_name = "OUT")]
    out_dir: PathBuf,
}

#[derive(Args)]
struct TasksArgs {
    /// Only this suite's tasks (geneb, geneb-lite, geneb:<category>).
    #[arg(long)]
    suite: Option<String>,
    /// List the suite names instead of tasks.
    #[arg(long, conflicts_with = "suite")]
    suites: bool,
    /// Print JSON (the full catalogue records, plus cache state) instead of a table.
    #[arg(long)]
    json: bool,
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
    /// Recommend only models whose embedding pass took at most this many seconds per 1,000
    /// sequences (each result's protocol.cost; results without one are left out and named).
    #[arg(long, value_name = "SECONDS")]
    max_seconds_per_1k_seqs: Option<f64>,
    /// Recommend only models whose peak memory, host and GPU together, was at most this
    /// (e.g. 4GB, 512MiB; from each result's protocol.cost, as above). Not --max-memory: that
    /// global option caps what geneb itself may hold.
    #[arg(long, value_name = "SIZE")]
    max_peak_memory: Option<String>,
    /// Bootstrap replicates for the 95 % intervals and paired tests.
    #[arg(long, default_value_t = 1000)]
    bootstrap: usize,
    /// Seed of the bootstrap resampling.
    #[arg(long, default_value_t = 0)]
    seed: u32,
}

/// A closed pipe ends the process as it ends `cat` or `grep`: Rust ignores SIGPIPE, so a print
/// into a pipe whose reader left (`geneb audit … | head`) would panic instead.
fn end_quietly_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called first in main, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    end_quietly_on_closed_pipe();
    keep_freed_memory();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return argument_error(e),
    };
    let outcome = set_memory_budget(cli.max_memory.as_deref()).and_then(|()| match cli.command {
        Command::Eval(args) => run_eval(args),
        Command::Predict(args) => run_predict(args),
        Command::Merge(args) => run_merge(args),
        Command::Probe(args) => run_probe(args),
        Command::Fewshot(args) => run_fewshot(args),
        Command::Profile(args) => run_profile(args),
        Command::Models(args) => run_models(&args),
        Command::Embed(args) => run_embed(args),
        Command::Tasks(args) => run_tasks(args),
        Command::Audit(args) => run_audit(args),
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("geneb: {}", e.to_string().replace(['\n', '\r'], " "));
            ExitCode::from(2)
        }
    }
}

/// Help and the version as clap prints them; an argument error as every other error: one line
/// on stderr (clap's first paragraph, without its usage block), exit code 2.
fn argument_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
        || e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    {
        let _ = e.print();
        return if e.use_stderr() {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        };
    }
    // clap's first paragraph, its lines joined: a conflict lists the other options below it.
    let text = e.render().to_string();
    let paragraph: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let joined = paragraph.join(" ");
    let message = joined.strip_prefix("error: ").unwrap_or(&joined);
    eprintln!("geneb: {message} (see geneb --help)");
    ExitCode::from(2)
}

/// `--max-memory` wins over `GENEB_MAX_MEMORY`, which wins over the default.
fn set_memory_budget(flag: Option<&str>) -> Result<()> {
    match flag {
        Some(size) => {
            let bytes = geneb::budget::parse_size(size)
                .map_err(|e| Error::new(format!("--max-memory: {}", e.message)))?;
            geneb::budget::set_limit(bytes);
            Ok(())
        }
        None => geneb::budget::from_env(),
    }
}

fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Error::new(format!("cannot write JSON: {e}")))?;
    println!("{text}");
    Ok(())
}

fn read_file(path: &Path) -> Result<InputFile> {
    let bytes = geneb::budget::read_file(path)
        .map_err(|e| Error::in_file(path.display().to_string(), format!("cannot read: {e}")))?;
    Ok(InputFile {
        name: path.display().to_string(),
        bytes,
    })
}

/// A result file's text to `--out` (whole or not at all), else to stdout.
fn write_result(out: &Option<PathBuf>, text: &str) -> Result<()> {
    match out {
        Some(path) => write_whole(path, text),
        None => {
            println!("{text}");
            Ok(())
        }
    }
}

/// `geneb eval --embeddings`: the tasks of the user's own embeddings, under `embeddings:STEM`.
fn own_embeddings(args: &EvalArgs) -> Result<OwnEmbeddings> {
    let split = args.split.settings();
    let mut tasks = Vec::new();
    for path in &args.embeddings {
        tasks.extend(geneb::input::embeddings::tasks_from_path(
            path,
            args.category.as_deref(),
            &split,
        )?);
    }
    if args.split.given() && tasks.iter().all(|t| t.made_split.is_none()) {
        return Err(Error::new(SplitArgs::UNUSED));
    }
    let stem = args.embeddings[0]
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned());
    Ok(OwnEmbeddings {
        id: format!("embeddings:{}", stem.unwrap_or_default()),
        tasks,
    })
}

/// Where the tasks of `eval` and `audit` come from.
struct TaskSources<'a> {
    task: &'a [String],
    suite: &'a [String],
    category: Option<&'a str>,
    split: &'a SplitArgs,
    offline: bool,
}

fn eval_tasks(args: &EvalArgs, show: bool) -> Result<Vec<TaskData>> {
    gather_tasks(
        TaskSources {
            task: &args.task,
            suite: &args.suite,
            category: args.category.as_deref(),
            split: &args.split,
            offline: args.offline,
        },
        show,
    )
}

/// The tasks `--task` and `--suite` name: the user's files, and official tasks fetched from
/// the hub (after saying what is downloaded).
fn gather_tasks(args: TaskSources, show: bool) -> Result<Vec<TaskData>> {
    let mut tasks = Vec::new();
    let mut given_by = std::collections::BTreeMap::new();
    let mut add = |task: TaskData, given: &str| {
        // Results are keyed by task id: a second task with the same id would overwrite one.
        if let Some(first) = given_by.insert(task.task.id.clone(), given.to_string()) {
            return Err(Error::new(format!(
                "task id '{}' comes from both {first} and {given}; give it once (or rename one)",
                task.task.id
            )));
        }
        tasks.push(task);
        Ok(())
    };
    let mut official_tasks = Vec::new();
    for name in args.suite {
        official_tasks.extend(
            catalogue::suite(name)?
                .into_iter()
                .map(|t| (t, name.clone())),
        );
    }
    let split = args.split.settings();
    for given in args.task {
        if given.starts_with(catalogue::PREFIX) {
            official_tasks.push((catalogue::task_by_reference(given)?, given.clone()));
        } else {
            let category = args.category;
            for task in input::tasks_from_path_split(Path::new(given), category, &split)? {
                add(task, given)?;
            }
        }
    }
    // A task named by two suites (or a suite and --task) is evaluated once.
    let mut seen = std::collections::HashSet::new();
    official_tasks.retain(|(task, _)| seen.insert(task.id.as_str()));
    if !official_tasks.is_empty() {
        let hub = Hub::from_env(args.offline)?;
        let wanted: Vec<&catalogue::CatalogueTask> =
            official_tasks.iter().map(|(t, _)| *t).collect();
        fetch_official(&hub, &wanted, show)?;
        for (task, given) in &official_tasks {
            add(official::load(&hub, task)?, given)?;
        }
    }
    args.split.check_used(&tasks)?;
    Ok(tasks)
}

/// The CLI's encoders: folders and the hub's verified cache, on the chosen backend.
struct CliEncoders {
    backend: BackendKind,
    offline: bool,
    show: bool,
}

impl Encoders for CliEncoders {
    fn load<'a>(&'a mut self, model: &'a ModelSpec) -> EncoderFuture<'a> {
        Box::pin(async move {
            load_encoder(model, self.backend, self.offline, self.show)
                .await
                .map(Rc::new)
        })
    }
}

fn run_eval(args: EvalArgs) -> Result<()> {
    let regimes = Regime::parse_list(&args.regimes)?;
    let models = args
        .model
        .iter()
        .map(|m| ModelSpec::parse(m))
        .collect::<Result<Vec<_>>>()?;
    let backend = BackendKind::parse(&args.backend)?;
    args.precision.apply(backend)?;
    let show = !args.quiet && std::io::stderr().is_terminal();
    let (tasks, own) = if args.embeddings.is_empty() {
        (eval_tasks(&args, show)?, None)
    } else {
        (Vec::new(), Some(own_embeddings(&args)?))
    };
    let run = Run {
        models,
        tasks,
        own,
        regimes,
        meta: args.meta.overrides(),
        save_probe: args.save_probe.is_some(),
        layers: args.layers.clone(),
        model_layers: Default::default(),
    };
    run.check()?; // before the cache or a shard plan is touched
    let store =
        geneb::embedding_cache::FolderStore::new(geneb::hub::cache_root()?.join("embeddings"));
    let store: Option<&dyn eval::EmbeddingStore> = (!args.no_cache).then_some(&store);
    let mut encoders = CliEncoders {
        backend,
        offline: args.offline,
        show,
    };
    // Each model's progress on a line of its own.
    let mut shown: Option<String> = None;
    let mut progress = |p: Progress| {
        if shown.as_deref() != Some(p.model) {
            if show && shown.is_some() {
                eprintln!();
            }
            shown = Some(p.model.to_string());
        }
        show_progress(show, p);
    };
    if let Some(dir) = &args.out_dir {
        let shard = args
            .shard
            .as_deref()
            .map_or(Ok(Shard::WHOLE), Shard::parse)?;
        let done =
            pollster::block_on(run.execute_shard(dir, shard, &mut encoders, store, &mut progress))?;
        end_progress_line(show);
        for note in done.notes {
            eprintln!("geneb: {note}");
        }
        eprintln!(
            "geneb: shard {}/{}: {} (model, task) result(s) written, {} already in {}",
            shard.index,
            shard.count,
            done.written,
            done.kept,
            dir.display()
        );
        return Ok(());
    }
    let outcome = pollster::block_on(run.execute(&mut encoders, store, &mut progress))?;
    end_progress_line(show);
    for note in outcome.submissions.iter().flat_map(eval::truncation_notes) {
        eprintln!("geneb: {note}");
    }
    if let (Some(path), Some(probe)) = (&args.save_probe, &outcome.probe) {
        let text = serde_json::to_string_pretty(probe)
            .map_err(|e| Error::new(format!("cannot write the probe: {e}")))?;
        write_whole(path, text)?;
    }
    let text = match outcome.submissions.as_slice() {
        [one] => one.to_json_pretty()?,
        all => serde_json::to_string_pretty(&serde_json::json!({ "submissions": all }))
            .map_err(|e| Error::new(format!("cannot write the results as JSON: {e}")))?,
    };
    write_result(&args.out, &text)
}

/// Ends the progress line (drawn with `\r`) so what follows starts on a line of its own.
fn end_progress_line(show: bool) {
    if show {
        eprintln!();
    }
}

fn run_predict(args: PredictArgs) -> Result<()> {
    let file = read_file(&args.probe)?;
    let saved = geneb::predict::SavedProbe::read(&file.name, &file.bytes)?;
    let sequences = input::read_sequences(&read_file(&args.input)?)?;
    let model = ModelSpec::parse(&args.model)?;
    let backend = BackendKind::parse(&args.backend)?;
    let encoder = pollster::block_on(load_encoder(&model, backend, false, false))?;
    let rows = sequences.len();
    let csv = pollster::block_on(geneb::predict::predict_sequences(
        &saved, &file.name, &encoder, sequences,
    ))?;
    write_whole(&args.out, csv)?;
    eprintln!(
        "geneb: {rows} predictions of task {} written to {}",
        saved.task,
        args.out.display()
    );
    Ok(())
}

/// One line on stderr, redrawn: the stage's bar over the whole run, then this task's count.
fn show_progress(show: bool, p: Progress) {
    if show {
        let stage = match p.stage {
            eval::Stage::Embed => "embedding",
            eval::Stage::Probe => "probing",
        };
        eprint!(
            "\r\x1b[2K{stage:<9} {} {} {} {}/{} · {}",
            geneb::progress::bar(p.run.done, p.run.total, 20),
            p.model,
            p.task,
            p.done,
            p.total,
            p.pace
        );
        let _ = std::io::stderr().flush();
    }
}

fn run_merge(args: MergeArgs) -> Result<()> {
    let (plan, merged) = geneb::merge::merge(&args.dirs)?;
    std::fs::create_dir_all(&args.out_dir).map_err(|e| {
        Error::in_file(
            args.out_dir.display().to_string(),
            format!("cannot create: {e}"),
        )
    })?;
    for model in &merged {
        write_whole(
            &args.out_dir.join(&model.file_name),
            model.submission.to_json_pretty()?,
        )?;
    }
    eprintln!(
        "geneb: {} model(s) × {} task(s) from {} shard(s) merged into {}",
        merged.len(),
        plan.tasks.len(),
        plan.shards,
        args.out_dir.display()
    );
    Ok(())
}

fn run_embed(args: EmbedArgs) -> Result<()> {
    let backend = BackendKind::parse(&args.backend)?;
    args.precision.apply(backend)?;
    if (args.count_kernels || args.profile_kernels.is_some()) && backend != BackendKind::Wgpu {
        return Err(Error::new(
            "--count-kernels and --profile-kernels watch GPU kernels: use them with --backend wgpu",
        ));
    }
    let sequences = input::read_sequences(&read_file(&args.input)?)?;
    let model = ModelSpec::parse(&args.model)?;
    let encoder = pollster::block_on(load_encoder(&model, backend, false, true))?;
    let texts: Vec<String> = sequences.into_iter().map(|s| s.sequence).collect();
    if (args.count_kernels || args.profile_kernels.is_some())
        && let Some(first) = texts.first()
    {
        pollster::block_on(encoder.embed(std::slice::from_ref(first)))?;
    }
    let embed_all = || pollster::block_on(encoder.embed(&texts));
    let embeddings = match &args.profile_kernels {
        Some(path) => profiling_kernels(path, texts.len(), embed_all)?,
        None => counting_kernels(args.count_kernels, &encoder, texts.len(), embed_all)?,
    };
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
    // Burn pools a pass's buffers until memory runs short, so what the device holds now is
    // close to the pass's peak (eval's `peak_gpu_memory_bytes`): the figure a full-size bench
    // of one sequence needs.
    if let Some(bytes) = encoder.gpu_memory_bytes() {
        eprintln!("geneb: the GPU holds {bytes} bytes after the pass");
    }
    Ok(())
}

/// `work`, with its GPU kernel launches and host reads printed on stderr when `on`.
#[cfg(feature = "wgpu")]
fn counting_kernels<T>(
    on: bool,
    encoder: &Encoder,
    sequences: usize,
    work: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let counting = on.then(geneb::encoder::backend::launches::start);
    let out = work()?;
    if let Some(counting) = counting {
        let counts = counting.finish();
        eprintln!(
            "geneb: {} kernel launches and {} host reads for {sequences} sequences ({})",
            counts.launches,
            counts.reads,
            encoder.backend_info().adapter
        );
        for (n, kernel) in &counts.by_kernel {
            // Matmul kernels are named by their whole type; the start says which one.
            let short: String = kernel.chars().take(100).collect();
            eprintln!("  {n:>8}  {short}");
        }
    }
    Ok(out)
}

/// `work` profiled kernel by kernel (`--profile-kernels`), the profile written to `path` as JSON.
#[cfg(feature = "wgpu")]
fn profiling_kernels<T>(
    path: &Path,
    sequences: usize,
    work: impl FnMut() -> Result<T>,
) -> Result<T> {
    const WARM_CALLS: usize = 5;
    let (out, profile) = geneb::encoder::backend::launches::profile(WARM_CALLS, work)?;
    let mut json = serde_json::to_value(&profile)
        .map_err(|e| Error::new(format!("cannot encode the kernel profile: {e}")))?;
    json["sequences"] = sequences.into();
    write_whole(
        path,
        serde_json::to_string_pretty(&json).unwrap_or_default(),
    )?;
    eprintln!(
        "geneb: {} kernel launches, {:.0} µs of GPU time ({} timing), {:.1} ms a call; profile in {}",
        profile.launches,
        profile.gpu_us,
        profile.timing,
        profile.call_ms_median.unwrap_or(f64::NAN),
        path.display()
    );
    Ok(out)
}

#[cfg(not(feature = "wgpu"))]
fn profiling_kernels<T>(_: &Path, _: usize, _: impl FnMut() -> Result<T>) -> Result<T> {
    Err(Error::new(
        "this build of geneb has no GPU backend to profile",
    ))
}

/// A build without the GPU backend has no kernels to count (`run_embed` refused the flag
/// already, as `--backend wgpu` cannot run here).
#[cfg(not(feature = "wgpu"))]
fn counting_kernels<T>(
    _on: bool,
    _encoder: &Encoder,
    _sequences: usize,
    work: impl FnOnce() -> Result<T>,
) -> Result<T> {
    work()
}

fn run_probe(args: ProbeArgs) -> Result<()> {
    fn fit_predict<T: probe::Element>(
        train: &ndarray::Array2<T>,
        y: &[usize],
        test: &ndarray::Array2<T>,
    ) -> Result<(probe::LogisticRegression, Vec<usize>)> {
        let fit = probe::fit(train.view(), y)?;
        let predicted = fit.predict(test.view());
        Ok((fit, predicted))
    }
    let data = geneb::input::npz::read_probe_npz(&args.npz)?;
    let (fit, predicted) = match &data.x {
        geneb::input::npz::ProbeX::F32 { train, test } => fit_predict(train, &data.y_train, test)?,
        geneb::input::npz::ProbeX::F64 { train, test } => fit_predict(train, &data.y_train, test)?,
    };
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
    let labels = input::read_labels(&read_file(&args.labels)?)?;
    let (order, y) = input::label_indices(&labels);
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
        submissions.extend(geneb::submission::read_results(&file.name, &file.bytes)?);
    }
    let settings = profile::bootstrap::Settings {
        replicates: args.bootstrap,
        seed: args.seed,
    };
    let cost_budget = profile::budget::CostBudget {
        max_seconds_per_1k_seqs: args.max_seconds_per_1k_seqs,
        max_memory_bytes: args
            .max_peak_memory
            .as_deref()
            .map(|size| {
                geneb::budget::parse_size(size)
                    .map_err(|e| Error::new(format!("--max-peak-memory: {}", e.message)))
            })
            .transpose()?,
    };
    let analysis =
        profile::analysis::analyse_within(&submissions, settings, args.max_params, cost_budget)?;
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

/// The built-in encoders, the known hub models, and the model repos the cache already holds
/// (so `--offline` and an air-gapped machine know what they can run).
fn run_models(args: &ModelsArgs) -> Result<()> {
    if args.recipes_markdown {
        print!("{}", geneb::encoder::known::recipes_markdown());
        return Ok(());
    }
    if args.leaderboard {
        let models = geneb::encoder::known::leaderboard_models()?;
        if args.json {
            return print_json(&models);
        }
        let gb = |bytes: u64| format!("{:.1} GB", bytes as f64 / 1e9);
        println!(
            "macro MCC  model                          parameters      f32     half  runs  tab (held in)"
        );
        for m in &models {
            println!(
                "{:>9.3}  {:<29}  {:>10}  {:>7}  {:>7}  {:<4}  {:<3}{}",
                m.macro_mcc,
                m.display,
                m.parameters,
                gb(m.f32_bytes),
                gb(m.half_bytes),
                if m.runs { "yes" } else { "no" },
                m.tab_weights.unwrap_or("no"),
                m.why_not
                    .as_deref()
                    .map_or(String::new(), |why| format!("  {why}"))
            );
        }
        return Ok(());
    }
    #[derive(serde::Serialize)]
    struct Listing {
        #[serde(flatten)]
        models: geneb::encoder::ModelList,
        /// hub id → cached revisions.
        cached: std::collections::BTreeMap<String, Vec<String>>,
    }
    let models = geneb::encoder::model_list()?;
    let cached = geneb::hub::cached_models(&Hub::from_env(true)?);
    print_json(&Listing { models, cached })
}

/// Without Burn there are only the k-mer encoders: `from_spec` says so for any other spec.
#[cfg(not(feature = "burn"))]
async fn load_encoder(
    spec: &ModelSpec,
    backend: BackendKind,
    _offline: bool,
    _show: bool,
) -> Result<Encoder> {
    Encoder::from_spec(spec, backend).await
}

/// An encoder from its spec (`fetch_and_load`), with what its loading noted on stderr.
#[cfg(feature = "burn")]
async fn load_encoder(
    spec: &ModelSpec,
    backend: BackendKind,
    offline: bool,
    show: bool,
) -> Result<Encoder> {
    let encoder = fetch_and_load(spec, backend, offline, show).await?;
    for note in encoder.describe().notes {
        eprintln!("geneb: {}: {note}", encoder.spec());
    }
    Ok(encoder)
}

/// An encoder from its spec; `hf:owner/name[@revision]` that is not a local folder is fetched
/// from the hub into the verified cache first (saying what is downloaded), then loaded.
#[cfg(feature = "burn")]
async fn fetch_and_load(
    spec: &ModelSpec,
    backend: BackendKind,
    offline: bool,
    show: bool,
) -> Result<Encoder> {
    let geneb::encoder::spec::ModelKind::Hf(hf) = &spec.kind else {
        return Encoder::from_spec(spec, backend).await;
    };
    // A folder of that name wins over the hub id it looks like.
    let Some((repo, revision)) = hf.hub_repo().filter(|_| !Path::new(&hf.source).exists()) else {
        return Encoder::from_spec(spec, backend).await;
    };
    let hub = Hub::from_env(offline)?;
    let files = geneb::hub::fetch_model_files(
        &hub,
        repo,
        revision,
        &mut |file, size| {
            let size = size.map_or_else(|| "size not stated".to_string(), megabytes);
            eprintln!(
                "geneb: downloading {} ({size}) into {}",
                file.describe(),
                hub.cache_dir().display()
            );
        },
        &mut |p| {
            if show {
                let total = p
                    .total
                    .map_or_else(String::new, |t| format!(" of {}", megabytes(t)));
                eprint!("\r{}{total}   ", megabytes(p.done));
                let _ = std::io::stderr().flush();
            }
        },
    )?;
    Encoder::from_model_files(hf, files, backend).await
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// Downloads the official tasks' tables that are not cached, after saying what and how much.
fn fetch_official(hub: &Hub, tasks: &[&catalogue::CatalogueTask], show: bool) -> Result<()> {
    let planned = official::plan(hub, tasks)?;
    let remote: Vec<&official::PlannedFile> = planned
        .iter()
        .filter(|p| matches!(p.located, Located::Remote(_)))
        .collect();
    if remote.is_empty() {
        return Ok(());
    }
    let (bytes, some_unknown) = official::download_size(&planned);
    eprintln!(
        "geneb: downloading {} file(s), {}{}, from {} into {}:",
        remote.len(),
        megabytes(bytes),
        if some_unknown {
            " plus files of unstated size"
        } else {
            ""
        },
        hub.endpoint(),
        hub.cache_dir().display()
    );
    for item in &remote {
        if let Located::Remote(r) = &item.located {
            let size = r
                .size
                .map_or_else(|| "size not stated".to_string(), megabytes);
            eprintln!("  {} ({size})", item.file.path);
        }
    }
    official::download(hub, &planned, &mut |file, p| {
        if show {
            let total = p
                .total
                .map_or_else(String::new, |t| format!(" of {}", megabytes(t)));
            eprint!("\r{} {}{total}   ", file.path, megabytes(p.done));
            let _ = std::io::stderr().flush();
        }
    })?;
    if show {
        eprintln!();
    }
    Ok(())
}

fn run_audit(args: AuditArgs) -> Result<()> {
    if args.task.is_empty() && args.suite.is_empty() {
        return Err(Error::new("geneb audit needs --task or --suite"));
    }
    if args.clean.is_some() && args.split.folds.is_some() {
        return Err(Error::new(
            "--clean writes one train/test split per task; --folds makes several: drop one",
        ));
    }
    let tasks = gather_tasks(
        TaskSources {
            task: &args.task,
            suite: &args.suite,
            category: None,
            split: &args.split,
            offline: args.offline,
        },
        !args.json && std::io::stderr().is_terminal(),
    )?;
    let mut audits = Vec::with_capacity(tasks.len());
    for task in &tasks {
        let findings = audit::audit_rows(&task.task.id, &task.data)?;
        if let Some(dir) = &args.clean {
            write_clean(dir, task, &findings)?;
        }
        audits.push(audit::summarise(&task.task.id, &task.data, &findings));
    }
    if args.json {
        return print_json(&audit::Report::of(audits));
    }
    let mut out = std::io::stdout().lock();
    let write_error = |e: std::io::Error| Error::new(format!("cannot write: {e}"));
    writeln!(
        out,
        "{:<48} {:>7} {:>6} {:>6} {:>6} {:>6} {:>7} {:>7}  verdict",
        "task", "train", "test", "exact", "rc", "near", "leaked", "NN MCC"
    )
    .map_err(write_error)?;
    for a in &audits {
        writeln!(
            out,
            "{:<48} {:>7} {:>6} {:>6} {:>6} {:>6} {:>6.1}% {:>7.3}  {}",
            a.task,
            a.train,
            a.test,
            a.exact_copies,
            a.reverse_complement_copies,
            a.near_copies,
            a.leak_share() * 100.0,
            a.nearest_neighbour_mcc,
            a.verdict.name()
        )
        .map_err(write_error)?;
        for flag in &a.flags {
            writeln!(out, "    {flag}").map_err(write_error)?;
        }
    }
    Ok(())
}

/// OUT/<task>.csv: the task's rows with their split, the leaked test rows left out.
fn write_clean(dir: &Path, task: &TaskData, findings: &[audit::RowFinding]) -> Result<()> {
    let data = &task.data;
    if findings.iter().all(|f| f.leak.is_some()) {
        eprintln!(
            "geneb: every test row of {} leaked: no clean table written for it",
            task.task.id
        );
        return Ok(());
    }
    let mut text = String::from("sequence,label,split\n");
    let rows = [
        ("train", &data.train, None),
        ("test", &data.test, Some(findings)),
    ];
    for (split, part, findings) in rows {
        for (row, (sequence, &y)) in part.sequences.iter().zip(&part.y).enumerate() {
            if findings.is_some_and(|f| f[row].leak.is_some()) {
                continue;
            }
            text.push_str(&format!(
                "{sequence},{},{split}\n",
                csv_cell(&data.labels[y])
            ));
        }
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::in_file(dir.display().to_string(), format!("cannot create: {e}")))?;
    let name = task.task.id.replace(['/', '\\', '#'], "_");
    write_whole(&dir.join(format!("{name}.csv")), text)
}

/// A CSV cell, quoted (RFC 4180) when it holds a comma, a quote or a line break.
fn csv_cell(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[derive(serde::Serialize)]
struct TaskListing<'c> {
    #[serde(flatten)]
    record: &'c catalogue::CatalogueTask,
    /// Bytes of the cached train + test tables; `None` unless both are cached.
    cached_bytes: Option<u64>,
    /// `cached` (both tables in the cache) or `remote` (fetched on first use).
    status: &'static str,
}

fn run_tasks(args: TasksArgs) -> Result<()> {
    if args.suites {
        let suites: Vec<serde_json::Value> = catalogue::suites()
            .into_iter()
            .map(|(name, about)| serde_json::json!({"name": name, "about": about}))
            .collect();
        if args.json {
            return print_json(&suites);
        }
        for suite in &suites {
            println!(
                "{:<22} {}",
                suite["name"].as_str().unwrap_or(""),
                suite["about"].as_str().unwrap_or("")
            );
        }
        return Ok(());
    }
    let tasks = match &args.suite {
        Some(name) => catalogue::suite(name)?,
        None => catalogue::tasks().iter().collect(),
    };
    let hub = Hub::from_env(true)?;
    let listing: Vec<TaskListing> = tasks
        .into_iter()
        .map(|record| {
            let sizes: Option<Vec<u64>> = official::hub_files(record)
                .iter()
                .map(|f| hub.cached_size(f))
                .collect();
            let cached_bytes = sizes.map(|s| s.iter().sum());
            TaskListing {
                record,
                cached_bytes,
                status: if cached_bytes.is_some() {
                    "cached"
                } else {
                    "remote"
                },
            }
        })
        .collect();
    if args.json {
        return print_json(&listing);
    }
    let mut out = std::io::stdout().lock();
    let write_error = |e: std::io::Error| Error::new(format!("cannot write: {e}"));
    writeln!(
        out,
        "{:<72} {:<15} {:<24} {:>9} status",
        "id", "category", "source", "size"
    )
    .map_err(write_error)?;
    for item in &listing {
        let size = item.cached_bytes.map_or_else(|| "-".to_string(), megabytes);
        writeln!(
            out,
            "{:<72} {:<15} {:<24} {size:>9} {}",
            item.record.id, item.record.category, item.record.source, item.status
        )
        .map_err(write_error)?;
    }
    writeln!(
        out,
        "{} task(s); cache: {}; official tables come from {} at the pinned revision",
        listing.len(),
        hub.cache_dir().display(),
        hub.endpoint()
    )
    .map_err(write_error)
}

#[cfg(test)]
mod tests {
    #[test]
    fn option_15_is_mimallocs_purge_delay() {
        // v3's default (options.c; its header still says 10); the options around it default to
        // 0 or 1.
        // SAFETY: reading an option is always valid.
        let delay = unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
        assert_eq!(
            delay, 1000,
            "mimalloc's option 15 is not the purge delay any more"
        );
    }
}
