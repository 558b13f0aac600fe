"""Whole surveys with a model backend, through `papervault survey`, for `openai` (a loopback chat-completions
server) and `claude` (the Agent SDK's real CLI against a loopback Messages API):

- the schema robot (tests/support_replay.py) answers every task of every stage with schema-valid content, so a
  stage that crashes on a model's answer, for either backend, fails here;
- a real model's recorded answers (tests/data/recorded/) replay whole surveys on two topics of the corpus.
"""

from __future__ import annotations

import json
import re

import pytest

from support_llm import ChatServer, MessagesServer
from support_replay import Replay, SchemaRobot

TOPIC = "replication and consistency in distributed storage"
STAGES = ("retrieve", "parse", "analyse", "index", "correlate", "outline", "draft", "polish")


@pytest.fixture
def openai_env(monkeypatch):
    def use(server: ChatServer):
        monkeypatch.setenv("PAPERVAULT_OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("PAPERVAULT_OPENAI_MODEL", "local-test")
        monkeypatch.setenv("PAPERVAULT_OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("PAPERVAULT_AGENTS_RETRIES", "1")
        monkeypatch.setenv("PAPERVAULT_AGENTS_BACKOFF", "0.01")
    return use


@pytest.fixture
def claude_env(monkeypatch):
    def use(server: MessagesServer):
        for k, v in server.claude_env().items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("PAPERVAULT_AGENTS_RETRIES", "1")
        monkeypatch.setenv("PAPERVAULT_AGENTS_BACKOFF", "0.01")
    return use


def _survey(cli_run, ws, topic: str, slug: str, backend: str, *extra: str) -> dict:
    return json.loads(cli_run(["survey", topic, "--slug", slug, "--backend", backend, "--json", *extra,
                               "--workspace", ws]).stdout)


def _run_log(ws) -> list[dict]:
    out = []
    for f in sorted((ws / ".papervault" / "runs").glob("*.jsonl")):
        out += [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out


def _sections(survey_md: str) -> list[str]:
    return [h for h in re.findall(r"^## (.+)$", survey_md, re.M)]


@pytest.mark.parametrize("backend", ["openai", "claude"])
def test_the_schema_robot_reaches_every_stage(backend, corpus_workspace_copy, prefect_api, cli_run, openai_env,
                                              claude_env):
    ws = corpus_workspace_copy
    robot = SchemaRobot()
    server = (ChatServer if backend == "openai" else MessagesServer)(robot)
    with server:
        (openai_env if backend == "openai" else claude_env)(server)
        out = _survey(cli_run, ws, TOPIC, "robot", backend, "--max-papers", "3")
    # every stage ran, and every kind of model task was asked (and answered) at least once
    assert set(STAGES) <= set(out["timings"]), out["timings"]
    assert {"review", "note", "correlation", "outline", "section"} <= set(robot.kinds), robot.kinds
    log = _run_log(ws)
    failed = [e for e in log if not e.get("ok")]
    assert not failed, failed[:3]
    sdir = ws / "vault" / "surveys" / "robot"
    survey = (sdir / "survey.md").read_text(encoding="utf-8")
    # the model's sections, not the extractive fallback: the robot's prose cites the papers by page
    assert re.search(r"\[@[\w.-]+, p\. \d+\]", survey), survey[:2000]
    assert (sdir / "polish-report.md").is_file() and (sdir / "outline.md").is_file()
    assert out["backend"] == backend


RECORDED = {  # recording -> (topic, slug)
    "replication-consistency": ("replication and consistency in distributed storage", "replication"),
    "memory-safety-types": ("program safety: memory errors and type systems", "safety"),
}


def _drafted(ws, slug: str) -> str:
    """survey.md as the draft stage committed it, before polish."""
    import git

    repo = git.Repo(ws / "vault")
    path = f"surveys/{slug}/survey.md"
    commit = next(c for c in repo.iter_commits(paths=path) if f"survey {slug}: draft" in c.message)
    return (commit.tree / path).data_stream.read().decode("utf-8")


FLAG = re.compile(r"\s*\*\*\(unverified\)\*\*")
GLUED = re.compile(r"[A-Za-z0-9][“]|[”][A-Za-z0-9]")
TWICE = re.compile(r"\[@([\w.:-]+)[^\]]*\]\s*\[@\1\]")
ATTRIBUTED = re.compile(r"as described by\s+(?:[^\s\[]+\s+){0,6}\[@", re.I)


def _numbered(md: str) -> dict[str, list[str]]:
    """The numbered sections of a survey (`## 3. Title`): title -> the lines of its body."""
    parts = re.split(r"^## (\d+\. .+)$", md, flags=re.M)
    return {t.strip(): b.strip().splitlines() for t, b in zip(parts[1::2], parts[2::2])}


def _report(report_md: str) -> dict:
    """polish-report.md: its counts and the kinds of its changes and flags, one per listed line."""
    head = dict(re.findall(r"^(claims|supported|changes|flags): (\d+)$", report_md, re.M))
    changes = report_md.split("## Changes", 1)[1].split("## Still flagged", 1)[0]
    flagged = report_md.split("## Still flagged", 1)[1]
    kinds = lambda part: re.findall(r"^- line \d+, (\w+):", part, re.M)  # noqa: E731
    return {**{k: int(v) for k, v in head.items()}, "change_kinds": kinds(changes), "flag_kinds": kinds(flagged)}


def polish_damage(draft: str, final: str, report_md: str) -> list[str]:
    """What polish did to a drafted survey that it must not, counted section by section (empty: nothing).

    Polish may append a flag to a claim, re-cite a quotation, introduce a bare quotation as a remark, drop a
    citation of no vault paper, a missing figure or a repeated paragraph, each listed in its report; it never
    rewrites a sentence otherwise, glues words to a quotation, cites a source twice in a row, loses the
    "[@about] … as described by [@source]" form, or flags a claim its judge accepted."""
    rep = _report(report_md)
    out = []
    d_sec, f_sec = _numbered(draft), _numbered(final)
    if list(d_sec) != list(f_sec):
        return [f"sections differ: {list(d_sec)} -> {list(f_sec)}"]
    changed_lines = 0
    for title in d_sec:
        before, after = d_sec[title], [FLAG.sub("", ln) for ln in f_sec[title]]
        # every line of the draft is in the polished section as it was, but for the lines a change touched
        gone = [ln for ln in before if ln.strip() and ln not in after]
        changed_lines += len(gone)
        body_d, body_f = "\n".join(before), "\n".join(f_sec[title])
        for name, pat in (("glued quotation", GLUED), ("source cited twice in a row", TWICE)):
            if len(pat.findall(body_f)) > len(pat.findall(body_d)):
                out.append(f"{title}: {name}: {pat.findall(body_f)[:3]}")
        if len(ATTRIBUTED.findall(body_f)) != len(ATTRIBUTED.findall(body_d)):
            out.append(f"{title}: 'as described by [@…]' {len(ATTRIBUTED.findall(body_d))} in the draft, "
                       f"{len(ATTRIBUTED.findall(body_f))} after polish")
        if len(FLAG.findall(body_d)):
            out.append(f"{title}: the draft already carries flags")
    if changed_lines > rep["changes"]:
        out.append(f"{changed_lines} drafted lines changed, the report lists {rep['changes']} changes")
    if rep["changes"] != len(rep["change_kinds"]) or rep["flags"] != len(rep["flag_kinds"]):
        out.append(f"report header {rep} disagrees with its lists")
    # each flag in the text is a claim the judge did not accept, listed in the report, and the reverse
    claim_flags = sum(k in ("support", "attribution") for k in rep["flag_kinds"])
    in_text = sum(len(FLAG.findall("\n".join(b))) for b in f_sec.values())
    if in_text != claim_flags or rep["claims"] - rep["supported"] != claim_flags:
        out.append(f"{in_text} flags in the text, {claim_flags} claims flagged in the report, "
                   f"{rep['claims'] - rep['supported']} claims not supported")
    return out


def _recorded_notes(recording: str) -> list[str]:
    from support_replay import key_of, kind_of, load, request_text

    return [key_of("note", request_text(ex["request"])) for ex in load(recording) if kind_of(ex["request"]) == "note"]


def _model_prose(recording: str) -> list[str]:
    """The first words of each section the model wrote in a recording."""
    from support_replay import kind_of, load

    out = []
    for ex in load(recording):
        if kind_of(ex["request"]) == "section":
            text = json.loads(ex["answer"])["markdown"]
            first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
            out.append(first[:60])
    return out


# both recordings through the openai backend; the smaller one through the claude CLI too (each of its sessions
# starts a CLI process: the larger adds a minute to the suite and nothing the first does not check)
@pytest.mark.parametrize("backend,recordings", [("openai", tuple(RECORDED)), ("claude", ("memory-safety-types",))])
def test_recorded_model_surveys_complete(backend, recordings, corpus_workspace_copy, prefect_api, cli_run, openai_env,
                                         claude_env):
    ws = corpus_workspace_copy
    replay = Replay(*recordings)
    server = (ChatServer if backend == "openai" else MessagesServer)(replay)
    with server:
        (openai_env if backend == "openai" else claude_env)(server)
        outs = {name: _survey(cli_run, ws, *RECORDED[name], backend) for name in recordings}
    assert not replay.misses, replay.misses
    assert not [e for e in _run_log(ws) if not e.get("ok")]
    for name in recordings:
        topic, slug = RECORDED[name]
        out = outs[name]
        assert set(STAGES) <= set(out["timings"]) and out["backend"] == backend
        survey = (ws / "vault" / "surveys" / slug / "survey.md").read_text(encoding="utf-8")
        # the papers are those the model analysed when it was recorded (its review brought in what it judged core)
        recorded = {key for kind, key in replay.answers if kind == "note"} & set(_recorded_notes(name))
        assert set(out["papers"]) == recorded, (out["papers"], recorded, out.get("review"))
        # the model's own prose is in the drafted survey: every section it wrote, not the extractive fallback
        draft = _drafted(ws, slug)
        missing = [p for p in _model_prose(name) if p not in draft]
        assert not missing, (name, missing, draft[:3000])
        # polish flags what its judge rejects and damages nothing the model wrote (counted against the draft)
        report = (ws / "vault" / "surveys" / slug / "polish-report.md").read_text(encoding="utf-8")
        damage = polish_damage(draft, survey, report)
        assert not damage, (name, damage)
        assert out["claims"] >= 20 and 0 < out["supported"] <= out["claims"], out
