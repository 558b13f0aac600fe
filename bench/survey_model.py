"""What a real model's survey holds, replayed from its recorded answers.

    .venv/bin/python bench/survey_model.py                        # builds the corpus workspace, replays both recordings
    .venv/bin/python bench/survey_model.py --workspace /tmp/bws   # reuse a workspace holding the ten corpus papers
    .venv/bin/python bench/survey_model.py --backend claude --json

Each recording in tests/data/recorded/ is a whole `papervault survey` that a capable model answered by hand; it
is replayed (by task kind and key, tests/support_replay.py) through a loopback chat-completions server (or the
claude CLI against a loopback Messages API) into a copy of a workspace holding the ten papers of the test
corpus (`CORPUS_INDEXED` in tests/conftest.py). For each survey it prints:

- sections (the numbered sections of survey.md), cited claims, claims supported, flags, and replacements
  (sentences of the draft that polish changed: the draft is the vault's "draft" commit of the survey), and the
  seconds the polish stage took;
- for each section, the share of its sentences that **explain a method or result of a cited paper**: a
  sentence that cites a paper (or follows one in its paragraph) and is as close (cosine of the index's model
  >= 0.55) to one of that paper's analysed statements of method, contribution or result (its note's Method,
  Contributions, Experiments and Summary items, which the model wrote with pages) as a restatement is.
  Framing, transitions and bare quotations of boilerplate do not count.

Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

CORPUS = ROOT.parent / "shared" / "corpus" / "pdfs"
RECORDED = {"replication-consistency": ("replication and consistency in distributed storage", "replication"),
            "memory-safety-types": ("program safety: memory errors and type systems", "safety")}
EXPLAINS = 0.55
NOTE_PARTS = ("Summary", "Contributions", "Method", "Experiments")


def pv(*args: str, env: dict, timeout: float = 3600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "papervault", *args], env=env, text=True, capture_output=True,
                          timeout=timeout, check=True)


def build(ws: Path, env: dict) -> None:
    """A workspace holding the ten corpus papers of the tests, added and indexed by the CLI."""
    from conftest import CORPUS_INDEXED

    pv("init", str(ws), env=env)
    toml = ws / "papervault.toml"
    toml.write_text(toml.read_text().replace("\n[embed]\n", "\n[embed]\nmultilingual = false\n", 1))
    pv("add", str(CORPUS), "--json", env=env)
    ids = sorted(p.name for p in (ws / "vault" / "papers").iterdir() if p.is_dir())
    pv("delete", *sorted(set(ids) - set(CORPUS_INDEXED)), env=env)
    pv("index", "--wait", env=env)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?”])\s+(?=[A-Z“\"])", text) if len(s.strip()) > 20]


def note_statements(ws: Path, pid: str) -> list[str]:
    """The analysed statements of a paper's note: the bullets under its Summary, Contributions, Method and
    Experiments headings (page links removed)."""
    path = ws / "vault" / "papers" / pid / "note.md"
    if not path.is_file():
        return []
    out, keep = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            keep = line[3:].strip() in NOTE_PARTS
        elif keep and line.startswith("- "):
            out.append(re.sub(r"\[p\. \d+\]\([^)]*\)", "", line[2:]).strip())
    return out


def section_bodies(md: str) -> dict[str, str]:
    """The numbered sections of survey.md (`## 3. Title`), each body without tables and figures."""
    parts = re.split(r"^## (\d+\. .+)$", md, flags=re.M)
    out = {}
    for title, body in zip(parts[1::2], parts[2::2]):
        body = "\n".join(ln for ln in body.splitlines() if not ln.startswith(("|", "!", "*Figure")))
        out[title.strip()] = body
    return out


def explain_shares(ws: Path, md: str, embed) -> dict[str, dict]:
    """Per section: sentences, those that explain a cited paper's method or result, and the share."""
    import numpy as np

    cache: dict[str, np.ndarray] = {}

    def vecs(pid: str):
        if pid not in cache:
            st = note_statements(ws, pid)
            cache[pid] = np.asarray(embed(st)) if st else np.zeros((0, 1))
        return cache[pid]

    out = {}
    for title, body in section_bodies(md).items():
        rows = []
        for para in re.split(r"\n\s*\n", body):
            last: list[str] = []
            for s in sentences(para):
                keys = [k for k in re.findall(r"@([\w.:-]*\w)", s)]
                last = keys or last
                rows.append((s, list(last)))
        if not rows:
            continue
        sv = np.asarray(embed([re.sub(r"\[@[^\]]*\]", "", s) for s, _ in rows]))
        n = 0
        for (s, keys), v in zip(rows, sv):
            best = 0.0
            for k in keys:
                m = vecs(k)
                if m.shape[0]:
                    best = max(best, float((m @ v).max()))
            n += best >= EXPLAINS
        out[title] = {"sentences": len(rows), "explaining": n, "share": round(n / len(rows), 2)}
    return out


def replaced(ws: Path, slug: str) -> int:
    """Sentences of the drafted survey that the polished survey no longer holds word for word."""
    import git

    repo = git.Repo(ws / "vault")
    path = f"surveys/{slug}/survey.md"
    drafts = [c for c in repo.iter_commits(paths=path) if f"survey {slug}: draft" in c.message]
    if not drafts:
        return 0
    draft = (drafts[0].tree / path).data_stream.read().decode("utf-8")
    # a flag polish appends ("**(unverified)**") marks a sentence, it does not replace it
    final = re.sub(r"\s*\*\*\([^)*]*\)\*\*", "", (ws / "vault" / path).read_text(encoding="utf-8"))
    body = lambda t: t.split("\n## 1.", 1)[-1]                      # noqa: E731  (the figures' part is not drafted)
    return sum(1 for s in sentences(body(draft)) if s not in final)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workspace", type=Path, help="a workspace holding the ten corpus papers (copied, not changed)")
    ap.add_argument("--backend", choices=["openai", "claude"], default="openai")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from support_llm import ChatServer, MessagesServer
    from support_replay import Replay

    tmp = Path(tempfile.mkdtemp(prefix="pv-bench-model-"))
    env = dict(os.environ, PAPERVAULT_WORKSPACE=str(tmp / "ws"))
    env.setdefault("PAPERVAULT_EMBED_MODEL_PATH", str(ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2-onnx"))
    env.setdefault("PAPERVAULT_EMBED_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
    env.setdefault("PAPERVAULT_PARSE_FIRST_PASS", "false")     # the vault parsed in one pass, complete
    ws = tmp / "ws"
    t0 = time.perf_counter()
    if args.workspace:
        shutil.copytree(args.workspace, ws, symlinks=True)
    else:
        build(ws, env)
    built = time.perf_counter() - t0

    from papervault.index.embed import Embedder
    from papervault.workspace import Workspace

    os.environ.update({k: v for k, v in env.items() if k.startswith("PAPERVAULT_EMBED")})
    embed = Embedder.for_workspace(Workspace(ws)).embed
    replay = Replay(*RECORDED)
    server = (ChatServer if args.backend == "openai" else MessagesServer)(replay)
    report = {"backend": args.backend, "workspace_seconds": round(built, 1), "surveys": {}}
    with server:
        if args.backend == "openai":
            env.update(PAPERVAULT_OPENAI_BASE_URL=server.url + "/v1", PAPERVAULT_OPENAI_MODEL="recorded",
                       PAPERVAULT_OPENAI_API_KEY="sk-bench")
        else:
            env.update(server.claude_env())
        for name, (topic, slug) in RECORDED.items():
            t1 = time.perf_counter()
            out = json.loads(pv("survey", topic, "--slug", slug, "--backend", args.backend, "--json", env=env).stdout)
            md = (ws / "vault" / "surveys" / slug / "survey.md").read_text(encoding="utf-8")
            shares = explain_shares(ws, md, embed)
            report["surveys"][name] = {
                "topic": topic, "seconds": round(time.perf_counter() - t1, 1), "papers": len(out["papers"]),
                "sections": len(section_bodies(md)), "cited_claims": out["claims"], "supported": out["supported"],
                "flags": out["flags"], "changes": out["changes"], "replacements": replaced(ws, slug),
                "polish_seconds": (out.get("timings") or {}).get("polish"),
                "explaining": shares}
    report["misses"] = replay.misses
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"backend {args.backend}; workspace ready in {built:.0f} s; requests not in the recordings: {len(replay.misses)}")
    for name, r in report["surveys"].items():
        print(f"\n{r['topic']} ({r['papers']} papers, {r['seconds']} s)")
        print(f"  sections {r['sections']}, cited claims {r['cited_claims']}, supported {r['supported']}, "
              f"flags {r['flags']}, changes {r['changes']}, draft sentences replaced {r['replacements']}; "
              f"polish {r['polish_seconds']} s")
        for title, s in r["explaining"].items():
            print(f"  {s['share']:>5.2f}  {s['explaining']:>2}/{s['sentences']:<3} {title}")
    if os.environ.get("BENCH_KEEP"):
        print(f"kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
