#!/usr/bin/env python3
"""Writes tasks/catalogue/geneb-catalogue.json: one metadata record per official GENEB task.

Inputs: tasks/geneb-tasks.json (the published ids, labels, categories) and the facts below about
the upstream benchmarks. Every derived field says how it is known in `provenance`:
  "confirmed: <where>"   seen in this project's reference search (dataset cards, file trees);
  "upstream paper: ..."  the benchmark's publication, recalled, not re-checked here;
  "unknown: <why>"       the field is null.
Run: python3 tasks/catalogue/build_catalogue.py   (stdlib only; output is deterministic)
"""
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
HF_DATASET = "darlednik/geneb-tasks"
REVISION = "4edd705be573e48c585c2cf79dc320f9f43c7b04"
CATEGORIES = ["Histone Mod.", "Promoters", "Enhancers", "DNA Methyl.", "Splice Sites", "lncRNA",
              "Mouse Enh.", "TF Binding", "Species Clf.", "Regulatory", "Virus/Phage", "Coding/NC",
              "Chromatin Acc."]
NOT_CHECKED = "upstream paper (recalled, not re-checked here)"

SOURCES = {
    "nt": dict(
        short="NT downstream",
        prefix="InstaDeepAI_nucleotide_transformer_downstream_tasks_",
        name="Nucleotide Transformer downstream tasks (InstaDeepAI/nucleotide_transformer_downstream_tasks)",
        licence=None,
        licence_basis="unknown: the dataset card (README, seen here) carries no licence metadata",
        citation="Dalla-Torre H. et al. Nucleotide Transformer: building and evaluating robust "
                 "foundation models for human genomics. Nature Methods 22, 287-297 (2025); "
                 "bioRxiv 10.1101/2023.01.11.523679",
        citation_basis="confirmed: the dataset card links bioRxiv 2023.01.11.523679; journal "
                       "record " + NOT_CHECKED),
    "nt_revised": dict(
        short="NT downstream (revised)",
        prefix="InstaDeepAI_nucleotide_transformer_downstream_tasks_revised_",
        name="Nucleotide Transformer downstream tasks, revised "
             "(InstaDeepAI/nucleotide_transformer_downstream_tasks_revised)",
        licence=None,
        licence_basis="unknown: the dataset card (README, seen here) carries no licence metadata",
        citation="Dalla-Torre H. et al. Nucleotide Transformer: building and evaluating robust "
                 "foundation models for human genomics. Nature Methods 22, 287-297 (2025)",
        citation_basis=NOT_CHECKED),
    "pgb": dict(
        short="Plant Genomic Benchmark",
        prefix="InstaDeepAI_plant-genomic-benchmark_",
        name="Plant Genomic Benchmark (InstaDeepAI/plant-genomic-benchmark)",
        licence="CC-BY-NC-SA-4.0",
        licence_basis="confirmed: the Hugging Face dataset card metadata (license: cc-by-nc-sa-4.0)",
        citation="Mendoza-Revilla J. et al. A foundational large language model for edible plant "
                 "genomes. Communications Biology 7, 835 (2024); dataset doi:10.57967/hf/2464",
        citation_basis="confirmed: dataset DOI on the card; paper " + NOT_CHECKED),
    "ipro": dict(
        short="iPro-WAEL",
        prefix="iPro-WAEL_Promoter_",
        name="iPro-WAEL promoter datasets",
        licence=None,
        licence_basis="unknown: no licence for the iPro-WAEL data could be checked here",
        citation="Zhang P., Zhang H., Wu H. iPro-WAEL: a comprehensive and robust framework for "
                 "identifying promoters in multiple species. Nucleic Acids Research 50(18), "
                 "10278-10289 (2022)",
        citation_basis=NOT_CHECKED),
    "gb": dict(
        short="Genomic Benchmarks",
        prefix="katarinagresova_Genomic_Benchmarks_",
        name="Genomic Benchmarks (katarinagresova/Genomic_Benchmarks_*)",
        licence="Apache-2.0",
        licence_basis="confirmed: the katielink/genomic-benchmarks mirror's card (license: "
                      "apache-2.0); the katarinagresova copies carry no licence metadata",
        citation="Gresova K., Martinek V., Cechak D., Simecek P., Alexiou P. Genomic benchmarks: a "
                 "collection of datasets for genomic sequence classification. BMC Genomic Data 24, "
                 "25 (2023)",
        citation_basis=NOT_CHECKED),
    "gue": dict(
        short="GUE",
        prefix="leannmlindsey_GUE_",
        name="GUE, Genome Understanding Evaluation (leannmlindsey/GUE copy of the DNABERT-2 benchmark)",
        licence=None,
        licence_basis="unknown: the leannmlindsey/GUE card seen here shows no licence; the "
                      "DNABERT-2 repository's licence was not checked",
        citation="Zhou Z., Ji Y., Li W., Dutta P., Davuluri R., Liu H. DNABERT-2: Efficient "
                 "Foundation Model and Benchmark For Multi-Species Genome. ICLR 2024; "
                 "arXiv:2306.15006",
        citation_basis="confirmed: arXiv 2306.15006 on the dataset card; venue " + NOT_CHECKED),
    "deep4mc": dict(
        short="Deep4mC",
        prefix="deep4mc_",
        name="Deep4mC 4mC site datasets",
        licence=None,
        licence_basis="unknown: no licence for the Deep4mC data could be checked here",
        citation="Xu H., Jia P., Zhao Z. Deep4mC: systematic assessment and computational "
                 "prediction for DNA N4-methylcytosine sites by deep learning. Briefings in "
                 "Bioinformatics 22(3), bbaa099 (2021)",
        citation_basis=NOT_CHECKED),
    "idna_abf": dict(
        short="iDNA-ABF",
        prefix="iDNA_ABF_",
        name="iDNA-ABF methylation datasets",
        licence=None,
        licence_basis="unknown: no licence for the iDNA-ABF data could be checked here",
        citation="Jin J. et al. iDNA-ABF: multi-scale deep biological language learning model for "
                 "the interpretable prediction of DNA methylations. Genome Biology 23, 219 (2022)",
        citation_basis=NOT_CHECKED),
    "idhs_el": dict(
        short="iDHS-EL",
        prefix="iDHS-EL_",
        name="iDHS-EL DNase I hypersensitive site dataset",
        licence=None,
        licence_basis="unknown: no licence for the iDHS-EL data could be checked here",
        citation="Liu B., Long R., Chou K.-C. iDHS-EL: identifying DNase I hypersensitive sites by "
                 "fusing three different modes of pseudo nucleotide composition into an ensemble "
                 "learning framework. Bioinformatics 32(16), 2411-2418 (2016)",
        citation_basis=NOT_CHECKED),
}

YEAST = "Saccharomyces cerevisiae"
HUMAN = "Homo sapiens"
MOUSE = "Mus musculus"
# Species named in the task id itself (binomial abbreviations written out).
SPECIES_IN_NAME = {
    "m_esculenta": "Manihot esculenta", "g_max": "Glycine max", "s_bicolor": "Sorghum bicolor",
    "s_lycopersicum": "Solanum lycopersicum", "t_aestivum": "Triticum aestivum",
    "z_mays": "Zea mays", "Arabidopsis": "Arabidopsis thaliana",
    "B_amyloliquefaciens": "Bacillus amyloliquefaciens", "R_capsulatus": "Rhodobacter capsulatus",
    "A.thaliana": "Arabidopsis thaliana", "C.elegans": "Caenorhabditis elegans",
    "D.melanogaster": "Drosophila melanogaster", "E.coli": "Escherichia coli",
    "G.pickeringii": "Geobacter pickeringii", "G.subterraneus": "Geoalkalibacter subterraneus",
}
HUMAN_CELL_LINES = ("GM12878", "HUVEC", "Hela-S3", "NHEK")


def source_of(task_id):
    # Longest prefix first: the revised NT prefix contains the original one.
    for key, src in sorted(SOURCES.items(), key=lambda kv: -len(kv[1]["prefix"])):
        if task_id.startswith(src["prefix"]):
            return key, task_id[len(src["prefix"]):]
    raise SystemExit(f"no source benchmark for {task_id}")


def species_and_classes(source, name, category):
    """(species, basis, n_classes, basis) for one task, from what the upstream benchmark says."""
    named = next((v for k, v in SPECIES_IN_NAME.items() if k in name), None)
    named_basis = "confirmed: the species is named in the task id"
    if source == "nt":
        if category == "Histone Mod.":
            return (YEAST, NOT_CHECKED + ": yeast histone ChIP-chip (Pokholok et al. 2005)", 2,
                    NOT_CHECKED + ": binary mark present/absent")
        if name == "enhancers_types":
            return (HUMAN, NOT_CHECKED, 3, "confirmed: the dataset card lists strong enhancers, "
                    "weak enhancers and non-enhancers")
        if name == "enhancers":
            return (HUMAN, NOT_CHECKED, 2, NOT_CHECKED + ": enhancer vs non-enhancer")
        if name.startswith("promoter"):
            return (HUMAN, NOT_CHECKED, 2, "confirmed: the dataset card says each promoter yields "
                    "one negative sequence (promoter vs non-promoter)")
        if name == "splice_sites_all":
            return (HUMAN, NOT_CHECKED, 3, NOT_CHECKED + ": donor, acceptor, neither")
        return (HUMAN, NOT_CHECKED, 2, NOT_CHECKED + ": splice site vs not")
    if source == "nt_revised":
        classes = 3 if name in ("enhancers_types", "splice_sites_all") else 2
        return (HUMAN, NOT_CHECKED + ": the revised benchmark is human (ENCODE, Ensembl)", classes,
                NOT_CHECKED)
    if source == "pgb":
        if name.startswith("pro_seq"):
            return (named, named_basis, None, "unknown: PRO-seq in the Plant Genomic Benchmark is "
                    "a signal task; how GENEB turned it into classes cannot be checked here")
        return (named, named_basis, 2, NOT_CHECKED + ": lncRNA vs mRNA")
    if source == "ipro":
        if name in HUMAN_CELL_LINES:
            return (HUMAN, "confirmed: a human cell line is named in the task id", 2,
                    NOT_CHECKED + ": promoter vs non-promoter")
        return (named, named_basis, 2, NOT_CHECKED + ": promoter vs non-promoter")
    if source == "gb":
        gb = {
            "demo_coding_vs_intergenomic_seqs": (HUMAN, 2),
            "demo_human_or_worm": ("Homo sapiens; Caenorhabditis elegans", 2),
            "drosophila_enhancers_stark": ("Drosophila melanogaster", 2),
            "dummy_mouse_enhancers_ensembl": (MOUSE, 2),
            "human_enhancers_cohn": (HUMAN, 2),
            "human_enhancers_ensembl": (HUMAN, 2),
            "human_ensembl_regulatory": (HUMAN, 3),
            "human_nontata_promoters": (HUMAN, 2),
            "human_ocr_ensembl": (HUMAN, 2),
        }[name]
        return (gb[0], NOT_CHECKED + " (the dataset name states it)", gb[1], NOT_CHECKED)
    if source == "deep4mc":
        return (named, named_basis, 2, NOT_CHECKED + ": 4mC site vs not")
    if source == "idna_abf":
        return (None, "unknown: iDNA-ABF has per-species datasets for each modification; which "
                "species GENEB's single table holds cannot be checked here", 2,
                NOT_CHECKED + ": methylated vs not")
    if source == "idhs_el":
        return (HUMAN, NOT_CHECKED, 2, NOT_CHECKED + ": DHS vs non-DHS")
    # GUE
    if name.startswith("emp_"):
        return (YEAST, NOT_CHECKED, 2, NOT_CHECKED)
    if name.startswith("prom_") or name.startswith("human_tf_"):
        return (HUMAN, NOT_CHECKED, 2, NOT_CHECKED)
    if name.startswith("mouse_"):
        return (MOUSE, NOT_CHECKED + " (GENEB: mouse TF-binding tasks)", 2, NOT_CHECKED)
    if name == "splice_reconstructed":
        return (HUMAN, NOT_CHECKED, 3, NOT_CHECKED + ": donor, acceptor, neither")
    if name == "virus_covid":
        return ("SARS-CoV-2", NOT_CHECKED, 9, NOT_CHECKED + ": 9 variant classes")
    extra = ("unknown: added to leannmlindsey/GUE after the DNABERT-2 paper (commit history seen "
             "here); its data description could not be checked")
    if name in ("fungi_species_20", "virus_species_40"):
        return ("several fungal species" if name.startswith("fungi") else "several virus species",
                extra, None, extra + " (the number in the id may be the class count; not assumed)")
    if name == "phage_fragments":
        return (None, extra, None, extra)
    raise SystemExit(f"no facts for {source}/{name}")


# geneb-lite: one task per category (13), the smallest / shortest-sequence task of each
# category where the upstream benchmark's sizes are known; see `why` in the output.
LITE = [
    ("leannmlindsey_GUE_emp_H3", "GUE yeast H3: ~12k train rows of 500 bp, the smallest histone tables"),
    ("leannmlindsey_GUE_prom_core_tata", "GUE core TATA promoters: ~5k train rows of 70 bp"),
    ("InstaDeepAI_nucleotide_transformer_downstream_tasks_enhancers", "NT enhancers: ~3k train rows of 200 bp"),
    ("deep4mc_E.coli_4mC", "Deep4mC E. coli: short 41 bp windows, a small dataset"),
    ("InstaDeepAI_nucleotide_transformer_downstream_tasks_splice_sites_donors", "NT donors: binary, the smallest splice table in the category"),
    ("InstaDeepAI_plant-genomic-benchmark_lncrna.m_esculenta", "PGB cassava lncRNA: the smallest lncRNA files upstream (3.4 MB train FASTA)"),
    ("leannmlindsey_GUE_mouse_3", "GUE mouse 3: ~2k train rows of 100 bp, the smallest mouse task"),
    ("leannmlindsey_GUE_human_tf_2", "GUE human TF 2: ~19k train rows of 100 bp, among the smallest TF tasks"),
    ("katarinagresova_Genomic_Benchmarks_demo_human_or_worm", "GB human-or-worm: 200 bp sequences, binary"),
    ("katarinagresova_Genomic_Benchmarks_human_ocr_ensembl", "GB OCR: binary, smaller than the 3-class regulatory task"),
    ("leannmlindsey_GUE_virus_covid", "the only Virus/Phage task with a documented size (the other, phage_fragments, is undocumented here)"),
    ("katarinagresova_Genomic_Benchmarks_demo_coding_vs_intergenomic_seqs", "the only Coding/NC task"),
    ("iDHS-EL_DNase_I", "the only Chromatin Acc. task"),
]
LITE_NOTE = ("One task per GENEB category (13 tasks), so the suite's profile has every category and "
             "each category weighs the same as in the macro score. Within a category the pick is "
             "the smallest or shortest-sequence task by the upstream benchmark's published sizes "
             "(recalled, not measured here: the GENEB tables themselves were not downloadable "
             "in this build); sizes must be checked against the pinned files before relying on "
             "the 'runs in minutes' goal.")


def main():
    published = json.loads((ROOT / "tasks/geneb-tasks.json").read_text())["tasks"]
    records = []
    for task in published:
        key, name = source_of(task["id"])
        src = SOURCES[key]
        species, species_basis, n_classes, classes_basis = species_and_classes(
            key, name, task["cat"])
        records.append({
            "id": task["id"],
            "label": task["label"],
            "category": task["cat"],
            "source": src["short"],
            "source_dataset": src["name"],
            "species": species,
            "n_classes": n_classes,
            "hf_dataset": HF_DATASET,
            "revision": REVISION,
            "files": {"train": f"tasks/{task['id']}/train.csv",
                      "test": f"tasks/{task['id']}/test.csv"},
            "licence": src["licence"],
            "citation": src["citation"],
            "provenance": {
                "id_label_category": "confirmed: the published GENEB task list (tasks/geneb-tasks.json)",
                "source": "confirmed: the task id names its upstream dataset",
                "source_dataset": "confirmed: the task id names its upstream dataset",
                "species": species_basis,
                "n_classes": classes_basis,
                "files": "confirmed: PROTOCOL.md (tasks/<task_id>/{train,test}.csv at the pinned revision)",
                "licence": src["licence_basis"],
                "citation": src["citation_basis"],
            },
        })
    ids = {r["id"] for r in records}
    for task_id, _ in LITE:
        assert task_id in ids, task_id
    out = {
        "about": "Metadata of the 100 official GENEB tasks; built by build_catalogue.py. "
                 "The packaged tables (darlednik/geneb-tasks) are Apache-2.0 (confirmed: Hugging "
                 "Face dataset card); each record's licence is that of its upstream source. "
                 "GENEB: arXiv:2606.04525.",
        "categories": CATEGORIES,
        "tasks": records,
        "suites": {
            "geneb-lite": {
                "about": "one small task per category (13 tasks)",
                "why": LITE_NOTE,
                "tasks": [{"id": t, "why": why} for t, why in LITE],
            }
        },
    }
    path = ROOT / "tasks/catalogue/geneb-catalogue.json"
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {path.relative_to(ROOT)}: {len(records)} tasks")


if __name__ == "__main__":
    main()
