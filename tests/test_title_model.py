"""The learned title scorer: it ships with the package, ranks a real title over the author line on real PDFs,
its refit reproduces the shipped weights, and the keys built from what the header reads never come from a
word that is not the first author's family name."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import title_model as fitting  # noqa: E402
from identity import _family, bad_key  # noqa: E402

from papervault.ids import key_base, key_name, normalize_title  # noqa: E402
from papervault.parse.header import read_header  # noqa: E402
from papervault.parse.pdf import front_inputs  # noqa: E402
from papervault.parse.title import FEATURES, model_score, title_candidates, title_model  # noqa: E402

# Corpus papers whose title page has a run of author names in large type besides the title.
WITH_NAMES = ("datastores_megastore-providing-scalable-highly-available-storage-for-interactive-services.pdf",
              "datastores_spartan-a-distributed-array-framework-with-smart-tiling.pdf",
              "security_sok-eternal-war-in-memory.pdf", "languages-theory_liquid_types.pdf")
LABELS = yaml.safe_load((ROOT / "bench" / "identity_labels.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def fronts(corpus_dir) -> dict[str, dict]:
    return {name: front_inputs(corpus_dir / name) for name in WITH_NAMES}


def _candidates(args: dict):
    tp = 1 if args["cover"] and len(args["pages"]) > 1 else 0
    return title_candidates(args["pages"][tp], args["heights"][tp], scanned=tp in args["scanned"],
                            file_name=args["file_name"], info_title=(args["info"].get("title") or ""),
                            repeats=args["repeats"])[0]


def test_the_shipped_model_loads_with_every_feature_and_a_threshold():
    m = title_model()
    assert m["features"] == list(FEATURES) and set(m["weights"]) == set(FEATURES)
    assert 0.5 <= m["threshold"] < 1.0 and m["l2"] > 0
    assert m["cv"]["chosen_right"] <= m["cv"]["with_candidates"] <= m["cv"]["papers"]


def test_the_model_ranks_the_title_over_the_author_line_on_real_pdfs(fronts):
    for name, args in fronts.items():
        want = normalize_title(LABELS[name]["title"])
        cands = _candidates(dict(args))
        title = [c for c in cands if normalize_title(c.text) == want]
        names = [c for c in cands if c is not (title[0] if title else None) and any(
            a.split()[-1] in c.text for a in LABELS[name]["authors"])]
        assert title and names, (name, [c.text for c in cands])
        # The model alone, before the hard filter on author lines, scores the title above every names line.
        assert all(model_score(title[0].features) > model_score(c.features) for c in names), name
        h = read_header(args["pages"], args["heights"], **{k: v for k, v in args.items()
                                                             if k not in ("pages", "heights")})
        assert normalize_title(h.title) == want
        assert any(e.startswith("model p=") for e in h.provenance["title_evidence"].split("; "))


def test_the_refit_from_the_shipped_table_reproduces_the_shipped_weights():
    papers = [json.loads(ln) for ln in fitting.TABLE.read_text(encoding="utf-8").splitlines() if ln.strip()]
    assert len(papers) >= 150 and all(len(r["x"]) == len(FEATURES) for p in papers for r in p["rows"])
    refit = fitting.run_fit(papers, 5, 0.98)
    assert fitting.same_model(refit, title_model())


def test_a_fit_on_a_small_labelled_subset_is_deterministic_and_picks_its_titles(fronts):
    papers = [{"sha256": name, "rows": fitting.page_rows(dict(args), LABELS[name]["title"])}
              for name, args in fronts.items()]
    assert all(sum(r["y"] for r in p["rows"]) == 1 for p in papers)
    a, b = fitting.run_fit(papers, 2, 0.98), fitting.run_fit(papers, 2, 0.98)
    assert fitting.same_model(a, b, tol=0.0)
    import numpy as np
    coef = np.array([a["weights"][f] for f in FEATURES])
    assert all(fitting.choose(p, coef, a["bias"])[0] for p in papers)


@pytest.mark.parametrize("authors,title,confident,name,key", [
    (["Liquid Types"], "Liquid Types", True, "", "liquidtypes2001"),           # the title read as a name
    (["Stanford University"], "Paxos Made Simple", False, "", "paxosmade2001"),    # an institution
    (["Database Theory Column"], "Views of Data", False, "", "viewsdata2001"),      # a column
    (["J.H. Saltzer", "D.P. Reed"], "J.H. Saltzer, D.P. Reed and D.D. Clark", False, "saltzer", "saltzer2001"),
    (["Leslie Lamport"], "Paxos Made Simple", True, "lamport", "lamport2001paxos"),
])
def test_a_key_is_built_from_a_surname_or_else_a_short_title(authors, title, confident, name, key):
    assert key_name(authors, title, confident) == name
    assert key_base(authors, 2001, title, confident) == key


def test_keys_of_real_pdfs_are_built_from_a_labelled_surname(fronts):
    from types import SimpleNamespace

    from papervault.ingest_records import key_confident
    for name, args in fronts.items():
        h = read_header(args["pages"], args["heights"], **{k: v for k, v in args.items()
                                                             if k not in ("pages", "heights")})
        confident = key_confident(h.provenance, SimpleNamespace(provenance=h.provenance, authors=h.authors))
        result = {"title": h.title, "authors": h.authors, "year": h.year, "key_confident": confident}
        key, why = bad_key(result, LABELS[name])
        assert why is None and key.startswith(_family(LABELS[name]["authors"][0])), (name, key)
