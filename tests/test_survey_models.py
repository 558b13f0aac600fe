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
