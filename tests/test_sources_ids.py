"""Citation keys, title normalisation, identifier normalisation and the dedup index."""

from __future__ import annotations

import csv
from pathlib import Path

from hypothesis import given, settings, strategies as st

from papervault.ids import make_key, normalize_title, sanitize_key
from papervault.models import PaperMeta, SourceRecord
from papervault.sources.dedup import TITLE_THRESHOLD, DedupIndex, near_duplicate, normalize_arxiv, normalize_doi
from papervault.vault.store import ID_PATTERN

PAIRS = Path(__file__).resolve().parent.parent / "bench" / "title_pairs.tsv"


def test_key_betterbibtex_style():
    assert make_key(["Leslie Lamport"], 2001, "Paxos Made Simple", set()) == "lamport2001paxos"
    assert make_key(["Lamport, Leslie"], 1998, "The Part-Time Parliament", set()) == "lamport1998part"
    assert make_key([r"G{\"o}del, Kurt"], 1931, r"{\"U}ber formal unentscheidbare S\"atze", set()) == "godel1931uber"
    assert make_key(["Paul Erdős"], None, "On a problem", set()) == "erdosproblem"
    assert make_key([], 2020, "", set()) == "anon2020"


def test_key_suffixes_are_unique():
    taken: set[str] = set()
    keys = []
    for _ in range(30):
        k = make_key(["Leslie Lamport"], 2001, "Paxos Made Simple", taken)
        taken.add(k)
        keys.append(k)
    assert keys[:4] == ["lamport2001paxos", "lamport2001paxosa", "lamport2001paxosb", "lamport2001paxosc"]
    assert keys[27] == "lamport2001paxosaa"
    assert len(set(keys)) == 30


def test_sanitize_user_keys():
    assert sanitize_key("lamport2001paxos") == "lamport2001paxos"
    assert sanitize_key("Smith:2001/x") == "Smith_2001_x"
    assert sanitize_key("..") is None
    assert sanitize_key("") is None
    assert ID_PATTERN.match(sanitize_key("ünïcode key!"))


def test_normalize_title_ignores_markup_not_words():
    assert normalize_title("{BERT}: Pre-training of Deep \\emph{Bidirectional} Transformers") == \
        "bert pre training of deep bidirectional transformers"
    assert normalize_title("Optimal Transport, Part I") != normalize_title("Optimal Transport, Part II")
    assert normalize_title("ﬁnding ﬂows") == "finding flows"


@given(st.lists(st.text(max_size=30), max_size=4), st.one_of(st.none(), st.integers(-5, 12000)), st.text(max_size=80))
@settings(max_examples=300, deadline=None)
def test_make_key_always_valid_and_unique(authors, year, title):
    taken = {make_key(authors, year, title, set())}
    k = make_key(authors, year, title, taken)
    assert ID_PATTERN.match(k) and ".." not in k
    assert k not in taken


@given(st.text(max_size=60))
@settings(max_examples=300, deadline=None)
def test_sanitize_key_valid_or_none(key):
    out = sanitize_key(key)
    assert out is None or (ID_PATTERN.match(out) and ".." not in out)


@given(st.text(max_size=120))
@settings(max_examples=300, deadline=None)
def test_normalize_title_idempotent_and_ascii(title):
    n = normalize_title(title)
    assert normalize_title(n) == n
    assert n == n.strip() and "  " not in n and n.isascii()
    # LaTeX commands are case-sensitive (`\\r{a}` is a ring accent, `\\RA` is not), so only plain text folds case
    assert normalize_title(title.upper()) == normalize_title(title.lower()) or not title.isascii() or "\\" in title


def test_identifier_normalisation():
    assert normalize_doi("https://doi.org/10.1145/568425.568433.") == "10.1145/568425.568433"
    assert normalize_doi("doi:10.1000/ABC") == "10.1000/abc"
    assert normalize_doi("http://dx.doi.org/10.1000%2Fx") == "10.1000/x"
    assert normalize_doi("not a doi") is None
    for raw in ("arxiv:2604.06170", "arXiv:2604.06170v3", "https://arxiv.org/abs/2604.06170v1",
                "https://arxiv.org/pdf/2604.06170v2.pdf", "http://export.arxiv.org/abs/2604.06170", "2604.06170"):
        assert normalize_arxiv(raw) == "2604.06170", raw
    assert normalize_arxiv("hep-th/9901001v2") == "hep-th/9901001"
    assert normalize_arxiv("https://arxiv.org/abs/math.GT/0309136") == "math/0309136"
    assert normalize_arxiv("10.48550/arXiv.1706.03762") == "1706.03762"
    assert normalize_arxiv("1234") is None


def test_measured_threshold_separates_labelled_pairs():
    rows = [r for r in csv.reader(PAIRS.open(encoding="utf-8"), delimiter="\t") if r and not r[0].startswith("#")]
    same = [near_duplicate(normalize_title(a), normalize_title(b)) for lab, a, b in rows if lab == "same"]
    diff = [near_duplicate(normalize_title(a), normalize_title(b)) for lab, a, b in rows if lab == "diff"]
    assert len(same) >= 60 and len(diff) >= 50
    # "A Survey of/on Large Language Models" differ only in a skip word: told apart by authors, not title
    assert sum(1 for s in diff if s) <= 1
    assert sum(1 for s in same if s >= TITLE_THRESHOLD) >= len(same) - 1


def R(**kw):
    kw.setdefault("origin", "bibtex")
    kw.setdefault("source", "x.bib")
    return SourceRecord(**kw)


def test_dedup_order_and_batch_updates():
    vault = [PaperMeta(id="lamport2001paxos", title="Paxos Made Simple", authors=["Leslie Lamport"], year=2001,
                       doi="10.1145/568425.568433"),
             PaperMeta(id="vaswani2017attention", title="Attention Is All You Need", arxiv="1706.03762")]
    ix = DedupIndex(vault)
    assert ix.find(R(title="x", arxiv="arXiv:1706.03762v5")).paper_id == "vaswani2017attention"
    assert ix.find(R(title="other", doi="https://doi.org/10.1145/568425.568433")).reason == "doi"
    assert ix.find(R(title="PAXOS made simple", authors=["Lamport, L."])).reason == "title"
    m = ix.find(R(title="Attention is all you ned"))
    assert m and m.reason == "near-title" and m.paper_id == "vaswani2017attention"
    assert ix.find(R(title="Paxos Made Live", authors=["Tushar Chandra"])) is None
    # same title, different first authors, different DOIs: two papers
    assert ix.find(R(title="Paxos Made Simple", authors=["Someone Else"])) is None
    assert ix.find(R(title="Paxos Made Simple", doi="10.9999/other")) is None
    # a record of this batch is found by the next one
    pid, match = ix.assign(R(title="Spartan: A Distributed Array Framework with Smart Tiling", key="spartan:2015"))
    assert pid == "spartan_2015" and match is None
    pid2, match2 = ix.assign(R(title="Spartan: a distributed array framework with smart tilling", origin="pdf"))
    assert pid2 == pid and match2.reason == "near-title"
    # a known key is never reused for a new paper
    pid3, _ = ix.assign(R(title="Totally different", key="lamport2001paxos"))
    assert pid3 == "lamport2001paxosa"


def test_dedup_scales_to_many_titles():
    import random
    rnd = random.Random(3)
    words = [f"w{i}x" for i in range(3000)]
    ix = DedupIndex()
    for i in range(5000):
        ix.assign(R(title=" ".join(rnd.sample(words, 7)), authors=[f"A{i} B{i}"], year=2000 + i % 20))
    assert len(ix) >= 4990
