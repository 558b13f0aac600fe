"""Credentials written into `[index] uri` (`s3://KEY:SECRET@bucket/x`, a signed query string) are never printed:
`status` (text and --json) and `doctor` show the URI with `***` in their place, and an S3 endpoint that does
not answer is said to be unreachable, not a reason to rebuild the index."""

from __future__ import annotations

import json

from papervault.index.store import redact, redact_uri
from papervault.workspace import Workspace
from support_mcp import free_port

SECRETS = ("AKIAEXAMPLEKEY", "wJalrXUtnFEMIsecretKEY", "sig0123456789abcdef")
URI = f"s3://{SECRETS[0]}:{SECRETS[1]}@papervault-test/idx?region=us-east-1&X-Amz-Signature={SECRETS[2]}"


def test_redaction_of_uris_and_errors():
    assert redact_uri(URI) == "s3://***@papervault-test/idx?region=***&X-Amz-Signature=***"
    assert redact_uri("s3://bucket/prefix") == "s3://bucket/prefix" and redact_uri("/a/b") == "/a/b"
    said = redact(f"GET {URI} failed for {SECRETS[0]} ({SECRETS[1]}), sig {SECRETS[2]}", URI)
    assert not any(s in said for s in SECRETS) and "papervault-test/idx" in said


def test_status_and_doctor_never_print_the_uris_credentials(tmp_path, cli_run, monkeypatch):
    ws, _ = Workspace.init(tmp_path / "ws")
    closed = free_port()                     # nothing listens there: the endpoint is unreachable
    for k, v in {"PAPERVAULT_INDEX_URI": URI, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{closed}",
                 "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
                 "AWS_ALLOW_HTTP": "true"}.items():
        monkeypatch.setenv(k, v)
    w = ["--workspace", ws.root]
    status = cli_run(["status", "--json", *w])
    assert not any(s in status.output for s in SECRETS), status.output
    st = json.loads(status.stdout)
    assert st["index_health"].startswith("unavailable") and "s3://***@papervault-test/idx" in st["index_health"]
    assert st["not_indexed"] is None
    assert f"127.0.0.1:{closed} refused the connection" in st["index_health"]    # a few words, not a Rust dump
    text = cli_run(["status", *w])
    assert not any(s in text.output for s in SECRETS), text.output

    doctor = cli_run(["doctor", "--json", *w], check=False)
    assert not any(s in doctor.output for s in SECRETS), doctor.output
    [check] = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "index"]
    assert not check["ok"] and "is unreachable" in check["detail"], check
    assert "s3://***@papervault-test/idx?region=***&X-Amz-Signature=***" in check["detail"]
    assert "--rebuild" not in check["fix"] and "AWS_ENDPOINT_URL" in check["fix"]
