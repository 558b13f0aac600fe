"""The index on object storage: `[index] uri = "s3://..."` against a real S3 API server on 127.0.0.1 (moto's
standalone server, started and stopped here). Index, search, a survey and the MCP server (over stdio) all work
against it, and readers that are already open see a writer's update without restarting."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import pytest

from papervault.workspace import Workspace

from support_index import add_paper
from support_mcp import free_port, papervault_cmd, server_env, wait_port

BUCKET = "papervault-test"
AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
       "AWS_ALLOW_HTTP": "true"}


@pytest.fixture(scope="module")
def s3_endpoint(tmp_path_factory):
    """`moto_server` on a free loopback port with one bucket; stopped at the end of the module."""
    exe = Path(sys.executable).with_name("moto_server")
    if not exe.exists():
        pytest.skip("moto's server is not installed (pip install 'moto[server]', the test extra)")
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    proc = subprocess.Popen([str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=open(log, "wb"),
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_port(port, proc, timeout=60)
        endpoint = f"http://127.0.0.1:{port}"
        import boto3

        boto3.client("s3", endpoint_url=endpoint, **{k.lower(): v for k, v in AWS.items()
                                                     if k != "AWS_ALLOW_HTTP" and k != "AWS_REGION"},
                     region_name=AWS["AWS_REGION"]).create_bucket(Bucket=BUCKET)
        yield endpoint
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


@pytest.fixture
def s3_index(s3_endpoint, monkeypatch):
    """The workspace's index at a fresh prefix of the bucket, reached through the standard AWS variables."""
    prefix = f"idx-{uuid.uuid4().hex[:8]}"
    env = {**AWS, "AWS_ENDPOINT_URL": s3_endpoint, "PAPERVAULT_INDEX_URI": f"s3://{BUCKET}/{prefix}"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env, prefix


def _objects(endpoint: str, prefix: str) -> list[str]:
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                      region_name="us-east-1")
    keys, token = [], None
    while True:
        page = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix + "/", **({"ContinuationToken": token} if token else {}))
        keys += [o["Key"] for o in page.get("Contents", [])]
        token = page.get("NextContinuationToken")
        if not token:
            return keys


def test_index_search_survey_and_mcp_readers_on_loopback_s3(tmp_path, s3_index, model_dir):
    from mcp import Client, StdioServerParameters

    from papervault.app.adding import add
    from papervault.app.surveyplan import run_survey_inprocess
    from papervault.demo import make_synthetic_papers
    from papervault.index.search import Searcher
    from papervault.index.store import PaperIndex, open_db

    env, prefix = s3_index
    ws, _ = Workspace.init(tmp_path / "s3ws")
    assert str(open_db(ws).uri).startswith("s3://")
    report = add(ws, [str(p) for p in make_synthetic_papers(ws.state_dir / "demo-papers")], backend="extractive")
    assert len(report.added) == 3

    # A survey: its index stage builds the index on S3 and its citation check reads it there.
    result = run_survey_inprocess("replication in storage systems", workspace=ws.root, slug="s3")
    assert (ws.vault.survey_dir("s3") / "survey.md").is_file() and result["claims"] > 0
    keys = _objects(env["AWS_ENDPOINT_URL"], prefix)
    assert any(k.startswith(f"{prefix}/chunks.lance/") for k in keys)
    assert any("_indices" in k for k in keys)             # the native full-text index lives on S3 too
    assert not list(ws.index_dir.glob("*.lance"))          # nothing on local disk
    stats = PaperIndex(ws).stats()
    assert stats["papers"] == 3 and stats["health"] == "ok" and stats["uri"].startswith("s3://")

    # Two readers opened before the update: a Searcher here, an MCP server in another process.
    reader = Searcher(ws)
    assert reader.search("replication", limit=3)
    assert not [h for h in reader.search("zyxwquorum", limit=5) if h.paper_id == "late2024quorum"]
    cmd = papervault_cmd()
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "mcp", "--workspace", str(ws.root)],
                                   env=server_env(**env, PYTHONPATH=str(Path(__file__).resolve().parents[1])))

    async def main():
        async with Client(params, read_timeout_seconds=180) as c:
            before = (await c.call_tool("search", {"query": "zyxwquorum", "limit": 5})).structured_content
            assert "late2024quorum" not in {h["paper_id"] for h in before["hits"]}

            # The writer: a new paper synced into the S3 index while both readers stay open.
            add_paper(ws.vault, "late2024quorum", title="Zyxwquorum leases for geo-replicated logs", year=2024,
                      fulltext="# Zyxwquorum leases\n\n## Abstract\n\nZyxwquorum leases keep reads local.\n")
            with ws.write_lock("index"):
                synced = PaperIndex(ws).sync()
            assert synced["added"] == ["late2024quorum"]

            after = (await c.call_tool("search", {"query": "zyxwquorum", "limit": 5})).structured_content
            assert after["hits"] and after["hits"][0]["paper_id"] == "late2024quorum"

    anyio.run(main)
    hits = reader.search("zyxwquorum", limit=5)
    assert hits and hits[0].paper_id == "late2024quorum"


def test_unreachable_object_store_is_one_typed_line(tmp_path, monkeypatch):
    from papervault.errors import PapervaultError
    from papervault.index.store import PaperIndex

    monkeypatch.setenv("PAPERVAULT_INDEX_URI", "ftp://nowhere/index")
    ws, _ = Workspace.init(tmp_path / "badws")
    with pytest.raises(PapervaultError) as err:
        PaperIndex(ws)
    assert "unknown scheme" in str(err.value) and "\n" not in str(err.value)


def test_background_fill_on_loopback_s3(tmp_path, s3_index, model_dir, cli_run, monkeypatch):
    """The background fill of paragraph vectors works on an index in object storage: `index` returns with the
    paragraphs pending, the fill process (which inherits the AWS variables) embeds them, and search finds a
    paragraph both before and after."""
    import json
    import time

    from conftest import without_multilingual
    from support_index import synthetic_paper

    monkeypatch.setenv("PAPERVAULT_INDEX_BACKGROUND_FILL", "true")
    ws, _ = Workspace.init(tmp_path / "ws")
    without_multilingual(ws.root)
    for i in range(3):
        title, md = synthetic_paper(i)
        add_paper(ws.vault, f"paper{i}", title=title, fulltext=md, status="parsed")
    report = json.loads(cli_run(["index", "--json", "--workspace", str(ws.root)]).output)
    assert report["chunks_pending"] > 0 and report["fill"]["pid"]
    query = "Paragraph 2 on page 3 of paper 1"
    hits = json.loads(cli_run(["search", query, "--json", "--workspace", str(ws.root)]).output)
    assert hits and hits[0]["paper_id"] == "paper1"
    deadline = time.monotonic() + 240
    while True:
        st = json.loads(cli_run(["status", "--json", "--workspace", str(ws.root)]).output)
        if not st["fill"]["pending"] and not st["fill"]["running"]:
            break
        assert time.monotonic() < deadline, st["fill"]
        time.sleep(1)
    assert st["index"]["uri"].startswith("s3://") and st["fill"]["last"]["filled"] == report["chunks_pending"]
    hits = json.loads(cli_run(["search", query, "--json", "--workspace", str(ws.root)]).output)
    assert hits[0]["paper_id"] == "paper1"
