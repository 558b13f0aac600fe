"""The answer cache of model tasks (`papervault.agents.base.AnswerCache`): a task asked again with the same
backend, model, prompts, schema and files is answered from `.papervault/cache/answers/`, so a survey run again
on unchanged inputs sends the model nothing; `--no-cache` (`[agents] answer_cache = false`) asks again."""

from __future__ import annotations

import json

import pytest
from support_llm import SAMPLE_ANSWER, ChatServer, Turn, make_paper_vault
from test_select_citations import TOPIC, citing_vault  # noqa: F401  (the fixture)

from papervault.agents import get_backend
from papervault.agents.base import Task
from papervault.config import Settings


def instance(schema: dict, root: dict | None = None):
    """The smallest value that satisfies `schema` (required properties, `minItems` items): what a model that
    answers every task with schema-valid content would say."""
    root = root or schema
    if "$ref" in schema:
        node = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        return instance(node, root)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: instance(props.get(k, {"type": "string"}), root) for k in schema.get("required", [])}
    if kind == "array":
        return [instance(schema.get("items", {"type": "string"}), root) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return "a statement of the paper"
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return None


def robot(req: dict) -> Turn:
    return Turn.structured(instance(req["response_format"]["json_schema"]["schema"]))


def kinds(requests: list[dict]) -> list[str]:
    return [r["response_format"]["json_schema"]["name"] for r in requests]


def backend(tmp_path, server, **agents):
    s = Settings()
    s.openai.base_url, s.openai.model, s.openai.api_key = server.url + "/v1", "local-test", "sk-test"
    s.agents.backoff = 0.0
    for k, v in agents.items():
        setattr(s.agents, k, v)
    return get_backend("openai", s, state_dir=tmp_path / "ws" / ".papervault")


def test_only_a_valid_answer_is_kept_and_any_change_asks_again(tmp_path):
    task = Task(kind="paper-note", system="sys", prompt="note this", schema={"type": "object", "required": ["summary"]},
                inputs={"markdown": "text", "meta": {"status": "parsed"}})
    again_answer = {**SAMPLE_ANSWER, "method": "asked again"}
    with ChatServer([Turn.say("not json"), Turn.structured(SAMPLE_ANSWER), Turn.structured(SAMPLE_ANSWER),
                     Turn.structured(again_answer), Turn.structured(SAMPLE_ANSWER)]) as server:
        b = backend(tmp_path, server)
        first = b.run(task)
        again = b.run(task)               # the valid answer, not the invalid first attempt, was kept
        assert again.data == first.data == SAMPLE_ANSWER and again.attempts == 0 and len(server.requests) == 2
        # what the model is sent decides: metadata it never sees does not, the paper's text does
        b.run(Task(**{**task.__dict__, "inputs": {"markdown": "text", "meta": {"status": "analysed"}}}))
        assert len(server.requests) == 2
        b.run(Task(**{**task.__dict__, "inputs": {"markdown": "other text"}}))
        assert len(server.requests) == 3
        # a fresh task is asked again and its answer replaces the cached one
        assert b.run(Task(**{**task.__dict__, "fresh": True})).data == again_answer and len(server.requests) == 4
        assert b.run(task).data == again_answer and len(server.requests) == 4
        backend(tmp_path, server, answer_cache=False).run(task)                     # the cache is off
        assert len(server.requests) == 5
    logged = [json.loads(line) for f in (tmp_path / "ws" / ".papervault" / "runs").glob("*.jsonl")
              for line in f.read_text().splitlines()]
    assert sum(bool(e.get("cached")) for e in logged) == 3
    stored = list((tmp_path / "ws" / ".papervault" / "cache" / "answers").rglob("*.json"))
    assert len(stored) == 2 and {json.loads(p.read_text())["data"]["method"] for p in stored} == \
        {"asked again", SAMPLE_ANSWER["method"]}


def test_a_forced_analysis_asks_the_model_again(tmp_path):
    """`add --reanalyse` forces the analysis: the same task is asked again and its new answer kept."""
    from papervault.note_analysis import analyse_paper

    vault = make_paper_vault(tmp_path / "ws")
    second = {**SAMPLE_ANSWER, "method": "Gizmo, asked again"}
    with ChatServer([Turn.structured(SAMPLE_ANSWER), Turn.structured(second)]) as server:
        b = backend(tmp_path, server)
        analyse_paper(vault, "doe2020widgets", b)
        assert analyse_paper(vault, "doe2020widgets", b).status == "skipped" and len(server.requests) == 1
        analyse_paper(vault, "doe2020widgets", b, force=True)
        assert len(server.requests) == 2
    assert vault.read_note("doe2020widgets")[0].method == "Gizmo, asked again"


def test_a_survey_run_again_asks_the_model_nothing(citing_vault, cli_run, prefect_api, monkeypatch):
    """The selection review, analyses, correlation, outline and sections are asked once; the same survey run
    again asks only what changed, and says in its run log that its answers were cached; `--no-cache` asks
    again."""
    monkeypatch.setenv("PAPERVAULT_AGENTS_ANSWER_CACHE", "true")      # restored after `--no-cache` set it
    monkeypatch.setenv("PAPERVAULT_AGENTS_RETRIES", "1")
    monkeypatch.setenv("PAPERVAULT_AGENTS_BACKOFF", "0.01")
    with ChatServer(robot) as server:
        monkeypatch.setenv("PAPERVAULT_OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("PAPERVAULT_OPENAI_MODEL", "local-test")
        monkeypatch.setenv("PAPERVAULT_OPENAI_API_KEY", "sk-test")
        args = ["survey", TOPIC, "--backend", "openai", "--slug", "cached", "--json", "--workspace", citing_vault]
        first = json.loads(cli_run(args).stdout)
        asked = kinds(server.requests)
        assert {"selection_review", "paper_note", "survey_correlation", "survey_outline",
                "survey_section"} <= set(asked), asked
        n = len(asked)
        second = json.loads(cli_run(args).stdout)
        # the review is asked again only because its candidates' excerpts come from the notes the first run
        # analysed; every later stage read what it read the first time and is not asked again
        again = server.requests[n:]
        assert kinds(again) == ["selection_review"]
        review = [r["messages"][1]["content"] for r in server.requests if kinds([r]) == ["selection_review"]]
        assert review[0] != review[1]
        assert second["papers"] == first["papers"] and second["sections"] == first["sections"]
        n = len(server.requests)
        cli_run(args[:-2] + ["--no-cache", "--workspace", citing_vault])
        assert {"selection_review", "survey_correlation", "survey_outline"} <= set(kinds(server.requests[n:]))
    logged = [json.loads(line) for f in (citing_vault / ".papervault" / "runs").glob("*.jsonl")
              for line in f.read_text().splitlines()]
    # the outline task runs again (it reads the outline.md the first run wrote) and is answered from the cache
    assert any(e.get("cached") and e["kind"] == "survey-outline" for e in logged), logged
