"""The `extractive` backend: deterministic analysis without a model, from the paper's own structure.

It is honest by construction: every statement it returns is a sentence copied from the paper (with the
page it starts on), a caption, a table cell, or a name found in the text by pattern. It never writes a
sentence of its own. Other stages register what they can answer without a model with `extractor(kind)`.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from typing import Any, Callable

from papervault.agents.base import Backend, Reply, Task
from papervault.agents.paperdoc import DocSection, PaperDoc, Sentence, read_paper, section_sentences, sentences
from papervault.errors import BackendError
from papervault.vault.paper import MENTION, mentions
from papervault.agents.cited_work import other_work
from papervault.agents.paperdoc import _clean_inline, normalise
from papervault.vault.paper import read as read_paper_md, without_anchors, without_images, without_page_citations

EXTRACTORS: dict[str, Callable[[Task], dict[str, Any]]] = {}


def extractor(kind: str):
    """Register a function that answers tasks of `kind` without a model."""
    def deco(fn: Callable[[Task], dict[str, Any]]):
        EXTRACTORS[kind] = fn
        return fn
    return deco


class ExtractiveBackend(Backend):
    name = "extractive"
    model = "rules-2"       # bump when the extraction rules change: notes made by older rules are re-analysed
    verbatim = True

    def __init__(self, **kw):
        kw.setdefault("retries", 1)
        super().__init__(**kw)

    async def ask(self, task: Task) -> Reply:
        fn = EXTRACTORS.get(task.kind)
        if fn is None:
            err = BackendError(f"the extractive backend cannot answer {task.kind!r} tasks",
                               fix="configure a model backend ([agents] backend = \"claude\" or \"openai\")")
            err.retryable = False  # type: ignore[attr-defined]
            raise err
        # parsing a long paper is CPU work: keep the event loop free for concurrent model sessions
        return Reply(data=await asyncio.to_thread(fn, task))


# --- patterns ------------------------------------------------------------------------------------

CONTRIB_CUES = re.compile(r"\b(?:we|this paper|this work|our (?:main )?contributions?|in this paper,? we|the paper)\s+"
                          r"(?:\w+ ){0,2}?(?:propose|present|introduce|describe|develop|design|show|demonstrate|"
                          r"implement|provide|build|evaluate|prove|make|give|report|study|analy[sz]e|explore|contribute|offer)", re.I)
METHOD_CUES = re.compile(r"\b(?:we|this paper|this work)\s+(?:\w+ ){0,2}?(?:propose|present|introduce|describe|develop|design)\b", re.I)
PROBLEM_CUES = re.compile(r"\b(?:problem|challeng\w*|difficult\w*|hard to|costly|expensive|lack\w*|limited|"
                          r"bottleneck|suffer\w*|fails? to|unable|however|inefficien\w*|remains? (?:an )?open|issue)\b", re.I)
LIMIT_CUES = re.compile(r"\b(?:limitations?|drawbacks?|shortcomings?|does not|do not|cannot|can not|is not able|"
                        r"not (?:yet )?support\w*|restricted to|only applies|at the cost of|weakness\w*|caveat)\b", re.I)
STRONG_LIMIT_CUES = re.compile(r"\b(?:limitations?|drawbacks?|shortcomings?|weakness\w*|we do not (?:address|handle|support|consider)|"
                               r"does not (?:yet )?(?:support|handle|scale|address)|is left (?:for|to) future)\b", re.I)
OPEN_CUES = re.compile(r"\b(?:future (?:work|research|directions?)|open (?:question|problem|issue)s?|remains? to be|"
                       r"we plan|we intend|left (?:for|to) future|further (?:work|research|investigation)|unclear whether)\b", re.I)
REPRO_CUES = re.compile(r"\b(?:source code|open[- ]source|publicly available|available (?:at|online|from|on)|"
                        r"our implementation|artifact|github|repository|released)\b", re.I)
RESULT_CUES = re.compile(r"(?:\d+(?:\.\d+)?\s*(?:%|×|x\b|times|percent|fold|ms|seconds?)|\b(?:outperform\w*|improv\w*|"
                         r"speed\s?ups?|faster|reduc\w*|better than|achiev\w*)\b)", re.I)
URL = re.compile(r"https?://[^\s)\]>\"'|]+")
CODE_HOST = re.compile(r"github\.com|gitlab\.|bitbucket\.org|zenodo\.org|huggingface\.co|sourceforge", re.I)

KNOWN_DATASETS = [
    "ImageNet", "CIFAR-10", "CIFAR-100", "MNIST", "Fashion-MNIST", "SVHN", "COCO", "MS COCO", "PASCAL VOC",
    "Cityscapes", "KITTI", "CelebA", "LSUN", "Caltech-101", "Caltech-256", "STL-10", "Places365",
    "GLUE", "SuperGLUE", "SQuAD", "WMT", "Penn Treebank", "WikiText-103", "WikiText-2", "IMDB", "SST-2",
    "MultiNLI", "SNLI", "CoNLL-2003", "Common Crawl", "The Pile", "C4", "LibriSpeech", "TIMIT",
    "YCSB", "TPC-C", "TPC-H", "TPC-DS", "SPEC CPU", "SPECint", "SPECjvm", "DaCapo", "PARSEC", "SPLASH-2",
    "Hurricane", "CESM", "NYX", "HACC", "SCALE-LETKF", "ATM", "APS",
    "UCR", "UCI", "Netflix Prize", "MovieLens", "Twitter", "Wikipedia", "PageRank",
]
METRICS = [
    "accuracy", "top-1", "top-5", "error rate", "precision", "recall", "F1", "F1-score", "F-measure", "BLEU", "ROUGE",
    "METEOR", "perplexity", "mAP", "AUC", "ROC", "PSNR", "SSIM", "RMSE", "MSE", "MAE", "NRMSE", "log-likelihood",
    "compression ratio", "compression factor", "bit rate", "bit-rate", "rate-distortion", "throughput", "latency",
    "tail latency", "response time", "running time", "execution time", "runtime", "speedup", "bandwidth",
    "availability", "harvest", "yield", "memory usage", "memory overhead", "overhead", "energy", "cost",
    "lines of code", "false positives", "false negatives", "coverage", "points per possession", "expected possession value",
    "smoothness", "roughness", "kurtosis", "distortion",
]
NOT_NAMES = {"for", "in", "on", "with", "from", "all", "both", "some", "many", "most", "we", "as", "by", "to", "of",
             "at", "if", "when", "while", "since", "using", "several", "three", "four", "five", "six", "ten", "another",
             "standard", "popular", "common", "well-known", "benchmark", "dataset", "figure", "table", "section",
             "the", "this", "our", "each", "a", "an", "that", "these", "those", "their", "its", "such", "every",
             "same", "new", "test", "training", "real", "synthetic", "large", "small", "entire", "whole", "original",
             "following", "first", "second", "other", "one", "two", "any", "which", "full", "final", "given", "public"}


def _pick(sents: list[Sentence], cue: re.Pattern | None, limit: int, *, min_len: int = 30, max_len: int = 400,
          seen: set[str] | None = None) -> list[Sentence]:
    seen = seen if seen is not None else set()
    out = []
    for s in sents:
        if len(s.text) < min_len or len(s.text) > max_len or s.text in seen:
            continue
        if not re.search(r"[a-z]{3}", s.text) or s.text.count("|") > 2:
            continue
        if cue is None or cue.search(s.text):
            out.append(s)
            seen.add(s.text)
            if len(out) >= limit:
                break
    return out


def _claims(sents: list[Sentence]) -> list[dict[str, Any]]:
    return [{"text": s.text, "page": s.page, "section": s.section} for s in sents]


def _sections_like(doc: PaperDoc, *words: str) -> list[DocSection]:
    pat = re.compile(r"\b(?:" + "|".join(words) + r")", re.I)
    return [s for s in doc.body_sections if pat.search(s.title)]


def _sents(doc: PaperDoc, sections: list[DocSection]) -> list[Sentence]:
    return [s for sec in sections for s in section_sentences(sec)]


def _abstract_sents(doc: PaperDoc) -> list[Sentence]:
    return [Sentence(text=t, page=doc.abstract_page, section="Abstract") for t in sentences(doc.abstract)]


def _names_by_pattern(doc: PaperDoc) -> list[str]:
    """Datasets: a vocabulary of well-known ones, plus capitalised names followed by dataset/benchmark/corpus."""
    text = doc.text
    found: Counter[str] = Counter()
    for name in KNOWN_DATASETS:
        n = len(re.findall(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", text))
        if n >= 2 or (n == 1 and len(name) > 4):
            found[name] += n
    for m in re.finditer(r"\b((?:[A-Z][\w-]*[A-Za-z0-9])(?:[ -][A-Z0-9][\w-]*){0,2})\s+(?:data ?sets?|benchmarks?|corpus|corpora|workloads?|traces?)\b", text):
        name = m.group(1).strip()
        if name.split()[0].lower() in NOT_NAMES or len(name) < 3 or name.isdigit():
            continue
        found[name] += 2
    return [n for n, _ in found.most_common(8)]


def _metrics(doc: PaperDoc) -> list[str]:
    counts: list[tuple[int, str]] = []
    scope = " ".join(s.text for s in _sections_like(doc, "evaluat", "experiment", "result", "performance", "measure")) or doc.text
    for name in METRICS:
        # acronyms (mAP, BLEU, F1) must match as written: "map" is not mean average precision
        flags = re.I if name.islower() else 0
        hits = re.findall(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", scope, flags)
        if len(hits) >= 2:
            # report the metric as the paper spells it
            counts.append((len(hits), Counter(hits).most_common(1)[0][0]))
    counts.sort(key=lambda c: -c[0])
    return [name for _, name in counts[:6]]


def _baselines(doc: PaperDoc, own_text: str = "") -> list[str]:
    """Systems the paper compares against; names from its own title or method sentence are its own, not baselines."""
    found: Counter[str] = Counter()
    pat = re.compile(r"\b(?i:compared (?:to|with|against)|against|outperforms?|versus|vs\.|than|over|"
                     r"baselines?(?: such as| including|:)?)\s+((?:[A-Z][\w.+-]*[A-Za-z0-9+])(?:[ -][A-Z0-9][\w.+-]*){0,2})")
    own = set(re.findall(r"[A-Z][\w+-]+", own_text))
    for m in pat.finditer(doc.text):
        name = m.group(1).strip()
        if name.split()[0].lower() in NOT_NAMES or len(name) < 2 or name.split()[0] in own:
            continue
        declared = m.group(0).lower().startswith("baseline")
        found[name] += 2 if declared else 1
    # one passing "than X" is no comparison: a baseline is named at least twice (or declared as one)
    return [n for n, c in found.most_common(6) if c >= 2]


NUMBER = re.compile(r"^[<>≈~±+-]?\s*\d[\d,]*(?:\.\d+)?\s*(?:%|×|x|ms|s|GB|MB|KB)?$")


def _numeric(cell: str) -> bool:
    """A cell that reports a number: a clean number, or a short cell led by one ("4208261 ,", "12hours")."""
    cell = cell.strip()
    return bool(NUMBER.match(cell) or (len(cell) <= 24 and re.match(r"^[<>≈~±+-]?\d", cell)))


def _key_results(doc: PaperDoc, limit: int = 12) -> list[dict[str, Any]]:
    """Numbers from the paper's tables: row label, column header, cell, table and page, all verbatim."""
    scored = []
    for t in doc.tables:
        if len(t.rows) < 2 or len(t.header) < 2:
            continue
        numeric = sum(1 for row in t.rows[1:] for c in row[1:] if _numeric(c))
        if numeric:
            bonus = 5 if re.search(r"result|accura|perform|compar|speed|time|ratio|error|throughput", t.caption, re.I) else 0
            scored.append((numeric + bonus, t))
    scored.sort(key=lambda x: -x[0])
    out: list[dict[str, Any]] = []
    for _, t in scored[:3]:
        source = f"Table {t.number}" if t.number else "table"
        for row in t.rows[1:7]:
            label = row[0].strip() if row else ""
            if not label:
                continue
            for j, cell in enumerate(row[1:4], start=1):
                header = t.header[j].strip() if j < len(t.header) else ""
                if header and _numeric(cell):
                    out.append({"setting": label, "metric": header, "value": cell.strip(), "page": t.page, "source": source})
                    break  # one number per row keeps the table readable; the paper has the rest
            if len(out) >= limit:
                return out
    return out


def _main_figures(doc: PaperDoc, limit: int = 4) -> list[dict[str, Any]]:
    """The figures the text refers to most (then the first ones), in paper order, captions quoted."""
    numbered = [f for f in doc.figures if f.number]
    refs = Counter(num for kind, num in mentions(doc.text) if kind == "figure")
    # the figures the text discusses, at least two when the paper has them: not every figure is a main one
    cited = [f for f in numbered if refs[f.number]]
    want = min(limit, max(2, len(cited)))
    chosen = sorted(numbered, key=lambda f: -refs[f.number])[:want]
    chosen = [f for f in numbered if f in chosen]
    seen, out = set(), []
    for f in chosen:
        if f.number in seen:
            continue
        seen.add(f.number)
        first = sentences(f.caption)
        out.append({"number": f.number, "why": first[0] if first else None, "page": f.page})
    return out


# long: one pass over the paper's prose view filling the note's fields in the schema's order; the fields share
# the sentences already used, so that no sentence fills two of them
@extractor("paper-note")
def extract_note(task: Task) -> dict[str, Any]:
    """Fill the note schema from `paper.md` alone; fields it cannot fill stay empty."""
    markdown = task.inputs.get("markdown", "")
    if not markdown.strip():
        raise BackendError(f"{task.key}: paper.md is empty", fix="parse the paper again (`papervault add --force`)")
    doc = read_paper(markdown)
    seen: set[str] = set()

    title = str(task.inputs.get("meta", {}).get("title") or doc.title or "")

    def own(sents: list[Sentence]) -> list[Sentence]:
        # a sentence describing other work (related work, a citation marker, "X et al.") is not this paper's
        # summary, contribution, result or limitation
        return [x for x in sents if not other_work(x.text, x.section, markdown, title=title)]

    abstract = own(_abstract_sents(doc))
    intro_secs = _sections_like(doc, "introduction", "motivation", "overview", "background") or doc.body_sections[:1]
    intro = own(_sents(doc, intro_secs[:2]))
    concl = own(_sents(doc, _sections_like(doc, "conclusion", "summary", "discussion", "future", "limitation", "concluding")))
    evaluation = own(_sents(doc, _sections_like(doc, "evaluat", "experiment", "result", "performance", "measure", "benchmark", "empirical")))
    method_secs = _sections_like(doc, "method", "approach", "design", "algorithm", "model", "architecture", "system",
                                 "protocol", "framework", "implementation", "technique", "overview")
    method_secs = [s for s in method_secs if s not in intro_secs[:1]] or [s for s in doc.body_sections[1:4] if s.level == 2]

    summary = _pick(abstract, None, 3, seen=seen) or _pick(intro, None, 2, seen=seen)
    problem = _pick(intro, PROBLEM_CUES, 2, seen=seen) or _pick(abstract, PROBLEM_CUES, 1, seen=seen)

    contributions: list[Sentence] = []
    for sec in intro_secs[:2]:
        # the paper's own list, when it has one ("Our contributions are: - ...")
        if re.search(r"contribution|we make the following|in summary|this paper makes", sec.text, re.I) and sec.items:
            for page, item in sec.items[:6]:
                if len(item) >= 20 and item not in seen:
                    contributions.append(Sentence(text=item, page=page, section=sec.label))
                    seen.add(item)
    if not contributions:
        contributions = _pick(abstract + intro, CONTRIB_CUES, 4, seen=seen)

    method_sent = next((s for s in abstract + intro if METHOD_CUES.search(s.text) and 30 <= len(s.text) <= 300), None)
    method_details = []
    for sec in method_secs[:4]:
        lead = _pick(own(section_sentences(sec)), None, 1, seen=seen)
        method_details.extend(lead)

    results = _pick(evaluation + abstract + concl, RESULT_CUES, 3, seen=seen)
    limit_secs = own(_sents(doc, _sections_like(doc, "limitation", "threats", "discussion", "conclusion", "future")))
    body = own(_sents(doc, doc.body_sections))
    limitations = (_pick(limit_secs, LIMIT_CUES, 3, seen=seen)
                   or _pick(body, STRONG_LIMIT_CUES, 3, seen=seen))
    open_questions = _pick(concl + body, OPEN_CUES, 3, seen=seen)
    urls = []
    for u in URL.findall(doc.text):
        u = u.rstrip(".,;:")
        if CODE_HOST.search(u) and u not in urls:
            urls.append(u)
    repro = _pick(body + abstract, REPRO_CUES, 2, seen=seen)

    answer: dict[str, Any] = {
        "summary": _claims(summary),
        "problem": _claims(problem),
        "contributions": _claims(contributions),
        "method": method_sent.text if method_sent else None,
        "method_details": _claims(method_details),
        "datasets": _names_by_pattern(doc),
        "metrics": _metrics(doc),
        "baselines": _baselines(doc, " ".join([doc.title, str(task.inputs.get("meta", {}).get("title") or ""),
                                               method_sent.text if method_sent else ""])),
        "key_results": _key_results(doc),
        "results": _claims(results),
        "limitations": _claims(limitations),
        "code_urls": urls[:5],
        "reproducibility": _claims(repro),
        "main_figures": _main_figures(doc),
        "open_questions": _claims(open_questions),
    }
    # a template with its own schema gets the fields this extractor knows; the rest stay empty
    props = task.schema.get("properties", {})
    for name, spec in props.items():
        if name not in answer:
            types = spec.get("type", "array" if "$ref" in spec else "string")
            answer[name] = [] if ("array" in types or "$ref" in spec) else None
    return {k: v for k, v in answer.items() if k in props} if props else answer


# --- the honesty check ---------------------------------------------------------------------------

_NUM = re.compile(r"\d+(?:[.,]\d+)*")


def unfaithful(body: str, markdown: str) -> list[str]:
    """What in an extractive note is not in the paper: quotations, names, table cells, numbers. Empty = honest.

    The template's own words (headings, labels such as "Datasets:", page links) are not checked; every
    statement is a quotation, so every bullet of a statement section must be one.
    """
    # a quotation may run across a page break: compare with the page anchors taken out
    markdown = without_anchors(markdown)
    paper = normalise(_clean_inline(markdown))
    paper_raw = normalise(markdown)
    # a caption is Markdown-escaped once in paper.md and once more as the note's alt text: compared unescaped
    paper_plain = normalise(markdown.replace("\\", ""))
    problems: list[str] = []

    def missing(text: str) -> bool:
        t = normalise(text)
        return (bool(t) and t not in paper and t not in paper_raw
                and normalise(text.replace("\\", "")) not in paper_plain)

    section = ""
    for line in body.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            continue
        if section in ("", "Coverage") or line.startswith(("**Full text:**", "**Analysed by:**", "# ")):
            continue
        text = without_page_citations(line)
        for fig in read_paper_md(text).figures if "![" in text else []:
            if fig.number and missing(fig.caption):
                problems.append(f"caption not in the paper: {fig.caption[:80]}")
        text = without_images(text)
        quotes = re.findall(r"“([^”]+)”", text)
        problems += [f"quotation not in the paper: {q[:80]}" for q in quotes if missing(q)]
        rest = re.sub(r"“[^”]+”", "", text)
        if line.startswith("- ") and not quotes and section not in ("Coverage",):
            problems.append(f"statement that is not a quotation: {line[:80]}")
        for label in ("**Datasets:**", "**Metrics:**", "**Baselines:**"):
            if rest.startswith(label) and "_none named_" not in rest:
                for name in rest[len(label):].strip().split(", "):
                    if missing(name.strip()):
                        problems.append(f"{label.strip('*:').lower()} name not in the paper: {name}")
        if rest.startswith("| ") and not rest.startswith(("| Setting", "|---")):
            cells = [c.strip().replace("\\|", "|") for c in rest.strip().strip("|").split(" | ")]
            for cell in cells[:3]:
                if missing(cell):
                    problems.append(f"table cell not in the paper: {cell}")
            rest = ""
        for num in _NUM.findall(MENTION.sub("", rest)):     # "**Figure 3**": a label, not a number
            if num not in paper_raw:
                problems.append(f"number not in the paper: {num}")
        if rest.startswith("**Code:**"):
            for url in re.findall(r"<([^>]+)>", rest):
                if url not in paper_raw:
                    problems.append(f"link not in the paper: {url}")
    return problems
