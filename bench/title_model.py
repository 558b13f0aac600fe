"""Fit the title model: a logistic regression over the features of each title candidate, on the tune half of the
identity set only, with its L2 strength and confidence threshold chosen by k-fold cross-validation.

    .venv/bin/python bench/title_model.py --set DIR [--cache DIR]     # read the PDFs, write the features, fit
    .venv/bin/python bench/title_model.py                             # refit from the shipped feature table
    .venv/bin/python bench/title_model.py --check                     # refit; exit 1 unless it matches the model

Every candidate run of title lines of a tune-half PDF's title page (`papervault.parse.title.title_candidates`)
is a row of numbers: its features and whether its text is the labelled title (after `ids.normalize_title`).
The table is kept in bench/identity_set/title_features.jsonl (numbers and sha256s only, no text of the papers),
so the model can be refitted, and checked, without the PDFs. The fit is Newton's method (IRLS) on standardised
features, deterministic; the weights are written back in the features' own units to
papervault/parse/title_model.json. Cross-validation: papers in sha256 order go to K folds in turn; each L2
strength of the grid is scored by the share of papers whose best-scored candidate (authors lines and banners
set aside, as the reader does) is the title; the threshold is the lowest probability at which the out-of-fold
titles chosen with at least that probability are right at least `--precision` of the time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.modules.setdefault("pymupdf.layout", None)

from papervault.ids import normalize_title  # noqa: E402
from papervault.parse.title import FEATURES, HAND, HARD, title_candidates  # noqa: E402

TABLE = ROOT / "bench" / "identity_set" / "title_features.jsonl"
MODEL = ROOT / "papervault" / "parse" / "title_model.json"
GRID = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 1000.0)
TOLERANCE = 1e-6


def page_rows(args: dict, title: str) -> list[dict]:
    """The candidates of the title page of one PDF (its `front_inputs`) as rows: features, label, hard flag."""
    pages, heights = args["pages"], args["heights"]
    if not pages:
        return []
    info_title = ((args.get("info") or {}).get("title") or "").strip()
    tp = 1 if args.get("cover") and len(pages) > 1 else 0
    kw = dict(file_name=args.get("file_name"), info_title=info_title, repeats=list(args.get("repeats") or ()))
    want = normalize_title(title)
    # The title page as the reader finds it; where its candidates miss the title (a cover page labelled with the
    # title, a report's cover), the first of the first pages whose candidates hold it.
    order = [tp] + [i for i in range(len(pages)) if i != tp]
    choices = []
    for i in order:
        found, _ = title_candidates(pages[i], heights[i], scanned=i in args.get("scanned", ()), **kw)
        if i == tp or any(normalize_title(c.text) == want for c in found):
            choices = found
        if any(normalize_title(c.text) == want for c in choices):
            break
    return [{"x": [round(c.features[f], 6) for f in FEATURES], "y": int(normalize_title(c.text) == want),
             "hard": int(any(f in HARD for f in c.flags))} for c in choices]


def extract(set_dir: Path, cache: Path, labels: Path) -> list[dict]:
    """The feature table of the tune half: one object a paper (sha256, its candidates' rows)."""
    from front_cache import cached_inputs, load_labels
    out = []
    labs = load_labels(labels, set_dir, "tune")
    for i, (path, lab) in enumerate(sorted(labs.items(), key=lambda kv: kv[1]["sha256"]), 1):
        if lab["half"] != "tune":
            continue
        try:
            rows = page_rows(cached_inputs(path, cache), lab["title"])
        except Exception as exc:  # one unreadable PDF never stops the run
            print(f"  {Path(path).name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            rows = []
        out.append({"sha256": lab["sha256"], "rows": rows})
        if i % 40 == 0:
            print(f"  {i}/{len(labs)} PDFs", file=sys.stderr)
    return out


HAND_VEC = np.array([HAND.get(f, 0.0) for f in FEATURES])


def fit(X: np.ndarray, y: np.ndarray, l2: float, iters: int = 50) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression by Newton's method; returns the weights and bias in the features'
    own units. The hand-set score is a column of its own, not penalised: the penalty shrinks the other
    weights towards the hand weights (scaled), so with few papers the model stays near them and moves away only
    as far as the data say."""
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    sd[sd < 1e-9] = 1.0
    Z = np.hstack([np.ones((len(X), 1)), (X @ HAND_VEC)[:, None], (X - mu) / sd])
    w = np.zeros(Z.shape[1])
    pen = np.full(Z.shape[1], l2)
    pen[:2] = 0.0                        # the bias and the hand score are not penalised
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(Z @ w, -50, 50)))
        grad = Z.T @ (p - y) + pen * w
        hess = (Z * (p * (1 - p))[:, None]).T @ Z + np.diag(pen) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    coef = w[2:] / sd
    return coef + w[1] * HAND_VEC, float(w[0] - coef @ mu)


def _matrix(papers: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    rows = [r for p in papers for r in p["rows"]]
    return np.array([r["x"] for r in rows], dtype=float).reshape(-1, len(FEATURES)), np.array([r["y"] for r in rows], float)


def choose(paper: dict, coef: np.ndarray, bias: float) -> tuple[bool, float] | None:
    """Whether the best-scored candidate of a paper is the title, and its probability (None: no candidate)."""
    rows = paper["rows"]
    if not rows:
        return None
    eligible = [r for r in rows if not r["hard"]] or rows
    scores = [float(np.array(r["x"]) @ coef + bias) for r in eligible]
    k = int(np.argmax(scores))
    return bool(eligible[k]["y"]), 1.0 / (1.0 + np.exp(-scores[k]))


def cross_validate(papers: list[dict], k: int, l2: float) -> tuple[list[tuple[bool, float]], float]:
    """Out-of-fold choices (right or not, probability) of every paper with candidates, and the out-of-fold
    log-loss per candidate."""
    out, loss, n = [], 0.0, 0
    for fold in range(k):
        train = [p for i, p in enumerate(papers) if i % k != fold]
        X, y = _matrix(train)
        coef, bias = fit(X, y, l2)
        test = [p for i, p in enumerate(papers) if i % k == fold]
        out.extend(c for p in test if (c := choose(p, coef, bias)) is not None)
        Xt, yt = _matrix(test)
        if len(yt):
            pt = np.clip(1.0 / (1.0 + np.exp(-np.clip(Xt @ coef + bias, -50, 50))), 1e-9, 1 - 1e-9)
            loss -= float(np.sum(yt * np.log(pt) + (1 - yt) * np.log(1 - pt)))
            n += len(yt)
    return out, loss / max(1, n)


def hand_choices(papers: list[dict]) -> list[tuple[bool, float]]:
    coef = np.array([HAND.get(f, 0.0) for f in FEATURES])
    return [c for p in papers if (c := choose(p, coef, 0.0)) is not None]


def threshold_for(oof: list[tuple[bool, float]], precision: float) -> float:
    """The lowest probability at which the titles chosen with at least that probability are right at least
    `precision` of the time (out of fold)."""
    for t in np.round(np.arange(0.05, 1.0, 0.01), 2):
        chosen = [ok for ok, p in oof if p >= t]
        if chosen and sum(chosen) / len(chosen) >= precision:
            return float(t)
    return 0.99


def run_fit(papers: list[dict], k: int, precision: float) -> dict:
    papers = sorted(papers, key=lambda p: p["sha256"])
    n = len(papers)
    cv = {}
    for l2 in GRID:
        oof, loss = cross_validate(papers, k, l2)
        cv[l2] = (sum(ok for ok, _ in oof), oof, loss)
    best = max(GRID, key=lambda l2: (cv[l2][0], -round(cv[l2][2], 4), l2))   # then the lower log-loss
    oof = cv[best][1]
    threshold = threshold_for(oof, precision)
    high = [ok for ok, p in oof if p >= threshold]
    X, y = _matrix(papers)
    coef, bias = fit(X, y, best)
    hand = hand_choices(papers)
    return {
        "about": "Title model: logistic regression over the features of a title candidate "
                 "(papervault.parse.title.FEATURES), fitted by bench/title_model.py on the tune half of the "
                 "identity set; score = bias + sum(weights[f] * feature f); p = 1 / (1 + exp(-score)).",
        "features": list(FEATURES),
        "weights": {f: round(float(w), 6) for f, w in zip(FEATURES, coef)},
        "bias": round(bias, 6),
        "threshold": threshold,
        "l2": best,
        "cv": {"folds": k, "papers": n, "with_candidates": len(oof),
               "title_candidate_present": sum(any(r["y"] for r in p["rows"]) for p in papers),
               "chosen_right_by_l2": {str(l2): cv[l2][0] for l2 in GRID},
               "log_loss_by_l2": {str(l2): round(cv[l2][2], 4) for l2 in GRID},
               "chosen_right": sum(ok for ok, _ in oof), "hand_weights_right": sum(ok for ok, _ in hand),
               "precision_target": precision, "high": len(high), "high_right": sum(high)},
        "rows": len(y), "positives": int(y.sum()),
    }


def same_model(a: dict, b: dict, tol: float = TOLERANCE) -> bool:
    return a["features"] == b["features"] and a["threshold"] == b["threshold"] and a["l2"] == b["l2"] \
        and abs(a["bias"] - b["bias"]) <= tol and all(abs(a["weights"][f] - b["weights"][f]) <= tol
                                                      for f in a["features"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", type=Path, help="the identity set's PDFs: extract the tune half's features again")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/papervault-front-cache"))
    ap.add_argument("--labels", type=Path, default=ROOT / "bench" / "identity_set" / "labels.jsonl")
    ap.add_argument("--table", type=Path, default=TABLE)
    ap.add_argument("--model", type=Path, default=MODEL)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--precision", type=float, default=0.98)
    ap.add_argument("--check", action="store_true", help="refit and compare with the model file; write nothing")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.set:
        papers = extract(args.set, args.cache, args.labels)
        if not args.check:
            args.table.write_text("".join(json.dumps(p, separators=(",", ":")) + "\n" for p in papers), "utf-8")
    else:
        papers = [json.loads(ln) for ln in args.table.read_text(encoding="utf-8").splitlines() if ln.strip()]
    model = run_fit(papers, args.folds, args.precision)
    if args.check:
        shipped = json.loads(args.model.read_text(encoding="utf-8"))
        ok = same_model(model, shipped)
        print(json.dumps({"matches": ok}) if args.json else f"refit {'matches' if ok else 'DIFFERS FROM'} {args.model}")
        sys.exit(0 if ok else 1)
    args.model.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    cv = model["cv"]
    if args.json:
        print(json.dumps(model, indent=1))
        return
    print(f"{cv['papers']} tune papers, {model['rows']} candidates, {model['positives']} of them the title; "
          f"the title is a candidate for {cv['title_candidate_present']}")
    for l2, right in cv["chosen_right_by_l2"].items():
        print(f"  l2 {l2:>5}: {right}/{cv['with_candidates']} titles chosen right out of fold, "
              f"log-loss {cv['log_loss_by_l2'][l2]}")
    print(f"chosen l2 {model['l2']}: {cv['chosen_right']}/{cv['with_candidates']} out of fold "
          f"(hand weights: {cv['hand_weights_right']}); threshold {model['threshold']}: {cv['high']} high, "
          f"{cv['high_right']} right")
    print(f"wrote {args.model}")


if __name__ == "__main__":
    main()
