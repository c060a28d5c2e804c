//! The sharded run on a real Slurm: the test starts munged, slurmctld and slurmd as a one-node
//! cluster on this machine (config in a temp folder: the node as `slurmd -C` reports it, no
//! cgroups), submits the committed recipes (geneb-array.sbatch as a 3-task array and
//! geneb-merge.sbatch after it, by hand and through scripts/slurm/submit.sh), and compares the
//! merge with unsharded runs.
//! Without Slurm installed the tests say so and skip, except in CI (`CI` or
//! `GENEB_REQUIRE_SLURM=1`), where they fail. Debian: `apt-get install slurm-wlm munge`.

#[path = "support/sharding.rs"]
mod sharding;

use serde_json::Value;
use sharding::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

const MODELS: [&str; 2] = ["kmer:4", "random-cnn"];
/// Waits longer than any job here takes on a loaded 2-core machine.
const JOB_TIMEOUT: Duration = Duration::from_secs(600);

/// One cluster at a time: the tests share the machine's cores and its node name.
static CLUSTER_LOCK: Mutex<()> = Mutex::new(());

/// The unsharded runs of `MODELS` on the smoke suite, computed once for both tests.
fn reference() -> &'static [Value] {
    static REFERENCE: OnceLock<Vec<Value>> = OnceLock::new();
    REFERENCE.get_or_init(|| {
        let dir = fresh_dir("slurm-reference");
        let smoke = repo("tasks/smoke");
        let results = unsharded(&MODELS, smoke.to_str().unwrap(), &dir, &dir);
        std::fs::remove_dir_all(&dir).unwrap();
        results
    })
}

/// Whether this machine can run the tests; outside CI a missing Slurm only skips them.
fn slurm_available(test: &str) -> bool {
    let installed = ["munged", "slurmctld", "slurmd", "sbatch"]
        .iter()
        .all(|program| {
            Command::new("sh")
                .args(["-c", &format!("command -v {program}")])
                .output()
                .is_ok_and(|o| o.status.success())
        });
    let required = std::env::var_os("CI").is_some()
        || std::env::var("GENEB_REQUIRE_SLURM").is_ok_and(|v| v == "1");
    if !installed && required {
        panic!(
            "{test}: Slurm is required here (CI or GENEB_REQUIRE_SLURM=1) but munged, slurmctld, slurmd or sbatch is not installed (apt-get install slurm-wlm munge)"
        );
    }
    if !installed {
        // Straight to stderr, not eprintln!: the test harness hides a passing test's output,
        // and a skip should be seen.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "skipping {test}: Slurm is not installed (apt-get install slurm-wlm munge); CI runs it"
        );
    }
    installed
}

/// A one-node Slurm cluster of this machine, its daemons stopped when dropped (also when a
/// test fails): everything it starts has its pid file in `dir`.
struct Cluster {
    dir: PathBuf,
}

impl Cluster {
    fn start(dir: &Path) -> Cluster {
        let cluster = Cluster {
            dir: dir.to_path_buf(),
        };
        for folder in ["munge", "state", "spool", "log"] {
            std::fs::create_dir_all(dir.join(folder)).unwrap();
        }
        let key = dir.join("munge/munge.key");
        let mut bytes = vec![0u8; 1024];
        use std::io::Read;
        std::fs::File::open("/dev/urandom")
            .unwrap()
            .read_exact(&mut bytes)
            .unwrap();
        std::fs::write(&key, bytes).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        let p = |name: &str| dir.join(name).display().to_string();
        run(Command::new("munged").args([
            "--force",
            &format!("--key-file={}", p("munge/munge.key")),
            &format!("--socket={}", p("munge/munge.socket")),
            &format!("--pid-file={}", p("munge/munged.pid")),
            &format!("--log-file={}", p("munge/munged.log")),
            &format!("--seed-file={}", p("munge/munged.seed")),
        ]));
        // The node exactly as slurmd sees this machine: real hostname, cores and memory.
        let node = String::from_utf8(run(Command::new("slurmd").arg("-C")).stdout).unwrap();
        let node = node.lines().next().unwrap().to_string();
        let host = node
            .split_whitespace()
            .find_map(|f| f.strip_prefix("NodeName="))
            .unwrap()
            .to_string();
        let user = String::from_utf8(run(Command::new("id").arg("-un")).stdout).unwrap();
        let [ctld_port, slurmd_port] = free_ports();
        let conf = format!(
            "ClusterName=geneb{pid}\nSlurmctldHost={host}\nSlurmctldPort={ctld_port}\n\
             SlurmdPort={slurmd_port}\nSlurmUser={user}\nSlurmdUser={user}\n\
             AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={socket}\n\
             StateSaveLocation={state}\nSlurmdSpoolDir={spool}\n\
             SlurmctldPidFile={ctld_pid}\nSlurmdPidFile={slurmd_pid}\n\
             SlurmctldLogFile={log}/slurmctld.log\nSlurmdLogFile={log}/slurmd.log\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n\
             SchedulerType=sched/backfill\nMpiDefault=none\nReturnToService=2\n\
             JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n\
             MinJobAge=3600\n\
             {node} State=UNKNOWN\n\
             PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP\n",
            pid = std::process::id(),
            user = user.trim(),
            socket = p("munge/munge.socket"),
            state = p("state"),
            spool = p("spool"),
            ctld_pid = p("slurmctld.pid"),
            slurmd_pid = p("slurmd.pid"),
            log = p("log"),
        );
        std::fs::write(dir.join("slurm.conf"), conf).unwrap();
        run(cluster.command("slurmctld").arg("-i"));
        run(&mut cluster.command("slurmd"));
        let started = Instant::now();
        loop {
            let state = run(cluster.command("sinfo").args(["-h", "-o", "%T"])).stdout;
            if String::from_utf8_lossy(&state).trim() == "idle" {
                return cluster;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the node never came up idle: {}",
                cluster.logs()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// A Slurm command talking to this cluster.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.env("SLURM_CONF", self.dir.join("slurm.conf"));
        command
    }

    /// A command of the committed recipes, with the binary and the cache its jobs use.
    fn recipe(&self, program: &str, cache: &Path) -> Command {
        let mut command = self.command(program);
        command.env("GENEB", GENEB).env("GENEB_CACHE", cache);
        command
    }

    /// By hand, as the sbatch files' comments say: the array (its size is N), then the merge
    /// after it; returns the two job ids.
    fn submit_by_hand(&self, results: &Path, merged: &Path, cache: &Path) -> (String, String) {
        let logs = results.join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let mut array = self.recipe("sbatch", cache);
        array
            .args(["--parsable", "--array=0-2", "--output"])
            .arg(logs.join("shard-%a.out"))
            .arg(repo("scripts/slurm/geneb-array.sbatch"))
            .arg(results);
        eval_arguments(&mut array);
        let array = job_id(run(&mut array));
        let mut merge = self.recipe("sbatch", cache);
        merge
            .arg("--parsable")
            .arg(format!("--dependency=afterok:{array}"))
            .arg("--output")
            .arg(logs.join("merge.out"))
            .arg(repo("scripts/slurm/geneb-merge.sbatch"))
            .args([results, merged]);
        (array, job_id(run(&mut merge)))
    }

    /// With scripts/slurm/submit.sh: `--shards 3 [--only …] RESULTS MERGED -- eval args`;
    /// returns the array's and the merge's job ids.
    fn submit(
        &self,
        results: &Path,
        merged: &Path,
        cache: &Path,
        only: Option<&str>,
    ) -> (String, String) {
        let mut command = self.recipe("bash", cache);
        command
            .arg(repo("scripts/slurm/submit.sh"))
            .args(["--shards", "3"]);
        if let Some(only) = only {
            command.args(["--only", only]);
        }
        command.arg(results).arg(merged).arg("--");
        eval_arguments(&mut command);
        let out = String::from_utf8(run(&mut command).stdout).unwrap();
        let ids: Vec<&str> = out.split_whitespace().collect();
        assert_eq!(ids.len(), 2, "submit.sh prints the two job ids: {out}");
        (ids[0].to_string(), ids[1].to_string())
    }

    /// The state of each of the job's tasks (an array has one per index).
    fn states(&self, job: &str) -> Vec<String> {
        let out = run(self.command("scontrol").args(["show", "job", "-o", job])).stdout;
        String::from_utf8(out)
            .unwrap()
            .split_whitespace()
            .filter_map(|f| f.strip_prefix("JobState=").map(str::to_string))
            .collect()
    }

    /// Waits until no task of `job` is pending or running; returns their final states.
    fn wait(&self, job: &str) -> Vec<String> {
        let started = Instant::now();
        loop {
            let states = self.states(job);
            if states
                .iter()
                .all(|s| s != "PENDING" && s != "RUNNING" && s != "COMPLETING")
            {
                return states;
            }
            assert!(
                started.elapsed() < JOB_TIMEOUT,
                "job {job} still {states:?}: {}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn logs(&self) -> String {
        let log = |name: &str| std::fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        format!(
            "slurmctld: {} slurmd: {}",
            log("log/slurmctld.log"),
            log("log/slurmd.log")
        )
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.command("scontrol").arg("shutdown").output();
        for pid_file in ["slurmd.pid", "slurmctld.pid", "munge/munged.pid"] {
            let Ok(pid) = std::fs::read_to_string(self.dir.join(pid_file)) else {
                continue;
            };
            let pid = pid.trim();
            let alive = || Path::new(&format!("/proc/{pid}")).exists();
            let started = Instant::now();
            while alive() && started.elapsed() < Duration::from_secs(10) {
                if pid_file.starts_with("munge") || started.elapsed() > Duration::from_secs(5) {
                    let _ = Command::new("kill").arg(pid).output();
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

fn run(command: &mut Command) -> std::process::Output {
    let out = command.output().expect("starting a Slurm command");
    assert!(
        out.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The run both tests submit: `MODELS` on the smoke suite, every regime.
fn eval_arguments(command: &mut Command) {
    for model in MODELS {
        command.args(["--model", model]);
    }
    command.arg("--task").arg(repo("tasks/smoke"));
}

/// The job id `sbatch --parsable` prints (`ID` or `ID;cluster`).
fn job_id(out: std::process::Output) -> String {
    let text = String::from_utf8(out.stdout).unwrap();
    text.trim().split(';').next().unwrap().to_string()
}

/// Two ports no other program listens on (both held while choosing, so they differ).
fn free_ports() -> [u16; 2] {
    let listen = || std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let held = [listen(), listen()];
    held.map(|l| l.local_addr().unwrap().port())
}

fn shard_logs(results: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(results.join("logs"))
        .into_iter()
        .flatten()
        .flatten()
    {
        text += &format!(
            "{}: {}\n",
            entry.path().display(),
            std::fs::read_to_string(entry.path()).unwrap_or_default()
        );
    }
    text
}

fn assert_merged_equals_reference(merged: &Path) {
    for (model, expected) in MODELS.iter().zip(reference()) {
        let merged = merged_result(merged, model);
        assert_eq!(
            without_measurements(merged),
            without_measurements(expected.clone()),
            "{model}"
        );
    }
}

/// The (model, task) result files of a results folder with when each was last written.
fn pair_files(results: &Path) -> Vec<(PathBuf, std::time::SystemTime)> {
    let mut files: Vec<_> = MODELS
        .iter()
        .flat_map(|m| {
            std::fs::read_dir(results.join(geneb::shard::file_name(m)))
                .into_iter()
                .flatten()
        })
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && !p.file_name().unwrap().to_string_lossy().starts_with('.')
        })
        .map(|p| {
            let modified = std::fs::metadata(&p).unwrap().modified().unwrap();
            (p, modified)
        })
        .collect();
    files.sort();
    files
}

/// The array submitted by hand (N from its size), the merge after it: equal to unsharded runs.
#[test]
fn a_slurm_array_run_merges_to_the_unsharded_result() {
    if !slurm_available("a_slurm_array_run_merges_to_the_unsharded_result") {
        return;
    }
    let _one_cluster = CLUSTER_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    reference();
    let root = fresh_dir("slurm-array");
    let cluster = Cluster::start(&root.join("cluster"));
    let (results, merged) = (root.join("results"), root.join("merged"));
    let (array, merge) = cluster.submit_by_hand(&results, &merged, &root.join("cache"));
    let states = cluster.wait(&array);
    assert_eq!(states, ["COMPLETED"; 3], "{}", shard_logs(&results));
    assert_eq!(
        cluster.wait(&merge),
        ["COMPLETED"],
        "{}",
        shard_logs(&results)
    );
    assert_eq!(pair_files(&results).len(), MODELS.len() * 5);
    assert_merged_equals_reference(&merged);
    drop(cluster);
    std::fs::remove_dir_all(&root).unwrap();
}

/// `scancel` of one array task mid-run: the merge queued after the array is dropped (its
/// afterok can never hold), the resubmitted index does only the pairs it had not finished,
/// and the new merge equals the unsharded run with every pair once.
#[test]
fn a_cancelled_array_task_resubmitted_gives_the_same_merge() {
    if !slurm_available("a_cancelled_array_task_resubmitted_gives_the_same_merge") {
        return;
    }
    let _one_cluster = CLUSTER_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    reference();
    let root = fresh_dir("slurm-cancel");
    let cluster = Cluster::start(&root.join("cluster"));
    let (results, merged) = (root.join("results"), root.join("merged"));
    let cache = root.join("cache");
    let (array, merge) = cluster.submit(&results, &merged, &cache, None);
    // Shard 1 is kmer:4 on two tasks (fast, lambda first), then random-cnn on one (seconds): cancel it once
    // its first result is written, so it dies with work done and work left.
    let shard_1 = format!("{array}_1");
    let first_of_shard_1 = || {
        pair_files(&results).iter().any(|(p, _)| {
            p.to_string_lossy()
                .contains("kmer%3A4/smoke_lambda_phage_vs_ecoli")
        })
    };
    let started = Instant::now();
    while !first_of_shard_1() {
        assert!(
            started.elapsed() < JOB_TIMEOUT,
            "shard 1 wrote nothing: {}",
            shard_logs(&results)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    run(cluster.command("scancel").arg(&shard_1));
    let states = cluster.wait(&array);
    assert_eq!(
        cluster.states(&shard_1),
        ["CANCELLED"],
        "{}",
        shard_logs(&results)
    );
    assert_eq!(
        states.iter().filter(|s| *s == "COMPLETED").count(),
        2,
        "{states:?}"
    );
    assert_eq!(
        cluster.wait(&merge),
        ["CANCELLED"],
        "the merge is dropped, never run"
    );
    assert!(!merged.exists());
    let before = pair_files(&results);
    assert!(
        before.len() < MODELS.len() * 5,
        "shard 1 was cancelled with pairs left"
    );

    let (again, merge) = cluster.submit(&results, &merged, &cache, Some("1"));
    assert_eq!(
        cluster.wait(&again),
        ["COMPLETED"],
        "{}",
        shard_logs(&results)
    );
    assert_eq!(
        cluster.wait(&merge),
        ["COMPLETED"],
        "{}",
        shard_logs(&results)
    );
    let after = pair_files(&results);
    assert_eq!(after.len(), MODELS.len() * 5, "every pair once: {after:?}");
    for file in &before {
        assert!(after.contains(file), "{} was rewritten", file.0.display());
    }
    assert_merged_equals_reference(&merged);
    drop(cluster);
    std::fs::remove_dir_all(&root).unwrap();
}
