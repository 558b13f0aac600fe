"""Code chunking: Python through ast, C/Go/Rust/TypeScript/shell/Make/Dockerfile through tree-sitter, configs."""

from __future__ import annotations

import pytest

from papervault.chunking.code import (chunk_file, detect_language, grammar_available, link_calls,
                                      readme_summary, repository_chunk, summarize_repo)
from papervault.sources.repo import code_urls, normalise_remote, repo_name
from support_code import FILES


def _by_symbol(chunks):
    return {c.symbol: c for c in chunks}


@pytest.fixture(scope="module")
def sample_chunks():
    chunks = []
    for path, text in FILES.items():
        chunks += chunk_file("sample", path, text)
    return link_calls(chunks)


def test_python_definitions_have_exact_line_ranges_and_signatures():
    chunks = chunk_file("r", "sample/optim.py", FILES["sample/optim.py"])
    s = _by_symbol(chunks)
    lines = FILES["sample/optim.py"].splitlines()
    sched = s["cosine_schedule"]
    assert sched.kind == "function" and sched.language == "python"
    assert lines[sched.start_line - 1].startswith("def cosine_schedule")
    assert lines[sched.end_line - 1].strip().startswith("return 0.5")
    assert sched.signature == "def cosine_schedule(step, total, base_lr=DEFAULT_LR)"
    assert sched.doc.startswith("Learning rate that follows a cosine")
    # decorators belong to the definition; methods are qualified by their class
    sgd = s["SGD"]
    assert sgd.kind == "class" and lines[sgd.start_line - 1] == '@register("sgd")'
    assert "def step(self, params, grads)" in sgd.text and "momentum = 0.9" in sgd.text
    assert s["SGD.step"].kind == "function" and "self.lr * g" in s["SGD.step"].text
    assert "register" in sgd.calls


def test_python_module_level_and_main_chunks():
    s = _by_symbol(chunk_file("r", "sample/optim.py", FILES["sample/optim.py"]))
    module = s["<module>"]
    assert module.kind == "module"
    assert "DEFAULT_LR = 0.001" in module.text and 'register("adam")(SGD)' in module.text
    assert "import math" not in module.text           # imports go to the file chunk
    train = _by_symbol(chunk_file("r", "sample/train.py", FILES["sample/train.py"]))
    assert train["__main__"].kind == "module" and "main()" in train["__main__"].text
    f = train["sample.train"]
    assert f.kind == "file" and "sample.optim.SGD" in f.imports
    assert "def train_epoch(params, batches, opt)" in f.text and f.doc == "The training loop."


def test_calls_resolve_to_callers_across_files(sample_chunks):
    s = {c.ref: c for c in sample_chunks}
    train_epoch = s["sample/train.py::train_epoch"]
    assert "sample/train.py::compute_gradients" in train_epoch.callees
    assert "sample/optim.py::SGD.step" in train_epoch.callees          # opt.step: the one `step` method
    assert "sample/train.py::train_epoch" in s["sample/optim.py::SGD.step"].callers
    main = s["sample/train.py::main"]
    assert {"sample/optim.py::SGD", "sample/optim.py::cosine_schedule", "sample/train.py::train_epoch"} <= set(main.callees)
    assert "sample/train.py::__main__" in main.callers
    # parser.add_argument is a library call: resolved to nothing rather than guessed
    assert all(not r.endswith("add_argument") for r in main.callees)


def test_tests_are_linked_to_what_they_test(sample_chunks):
    s = {c.ref: c for c in sample_chunks}
    t = s["tests/test_train.py::test_compute_gradients"]
    assert t.kind == "test" and t.tests == ["sample/train.py::compute_gradients"]
    assert "tests/test_train.py::test_compute_gradients" in s["sample/train.py::compute_gradients"].tests
    t2 = s["tests/test_train.py::test_train_epoch_moves_params"]
    assert set(t2.tests) >= {"sample/train.py::train_epoch", "sample/optim.py::SGD"}


def test_c_through_tree_sitter(sample_chunks):
    assert grammar_available("c")
    s = {c.ref: c for c in sample_chunks if c.path.startswith("kernels/")}
    lines = FILES["kernels/saxpy.c"].splitlines()
    saxpy = s["kernels/saxpy.c::saxpy"]
    assert saxpy.language == "c" and saxpy.kind == "function"
    # the leading comment is the documentation and part of the range
    assert lines[saxpy.start_line - 1].startswith("/* y = a * x + y")
    assert lines[saxpy.end_line - 1] == "}"
    assert saxpy.doc.startswith("y = a * x + y over n floats")
    assert saxpy.signature == "void saxpy(size_t n, float a, const float *x, float *y)"
    assert set(saxpy.callers) == {"kernels/saxpy.c::normalise"}
    assert s["kernels/saxpy.c::normalise"].callees == ["kernels/saxpy.c::mean", "kernels/saxpy.c::saxpy"]
    assert s["kernels/saxpy.c::stats"].kind == "class"
    f = s["kernels/saxpy.c::kernels/saxpy.c"]
    assert f.imports == ["stddef.h", "saxpy.h"]
    assert "#define BLOCK 256" in s["kernels/saxpy.c::<module>"].text
    # a header guarded by #ifndef still shows its prototypes as module-level code
    header = s["kernels/saxpy.h::<module>"]
    assert "float mean(const float *x, size_t n);" in header.text


def test_go_through_tree_sitter(sample_chunks):
    s = {c.ref: c for c in sample_chunks if c.path.startswith("server/")}
    listen = s["server/main.go::Server.Listen"]
    assert listen.language == "go" and listen.doc == "Listen starts serving predictions on the configured address."
    assert s["server/main.go::Server"].kind == "class"
    assert s["server/main.go::handlePredict"].callees == ["server/main.go::predictScore"]
    assert "server/main.go::handlePredict" in s["server/main.go::predictScore"].callers
    assert s["server/main.go::server/main.go"].imports == ["fmt", "net/http"]


def test_rust_and_typescript_tests_are_found():
    rust = """\
use std::collections::HashMap;

pub struct Grid { cells: Vec<u8> }

impl Grid {
    /// Count live neighbours of a cell.
    pub fn neighbours(&self, i: usize) -> usize { count(&self.cells, i) }
}

fn count(cells: &[u8], i: usize) -> usize { cells[i] as usize }

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn counts_one() { assert_eq!(count(&[1], 0), 1); }
}
"""
    s = _by_symbol(link_calls(chunk_file("r", "src/grid.rs", rust)))
    assert s["Grid.neighbours"].doc == "Count live neighbours of a cell." and s["Grid.neighbours"].start_line == 6
    assert s["Grid.neighbours"].callees == ["src/grid.rs::count"]
    assert s["tests.counts_one"].kind == "test" and s["tests.counts_one"].tests == ["src/grid.rs::count"]
    ts = """\
import { area } from "./shape";

/** Perimeter of a circle. */
export function perimeter(r: number): number { return 2 * Math.PI * r; }

describe("perimeter", () => {
  it("is 2 pi r", () => { expect(perimeter(1)).toBeCloseTo(6.283); });
});
"""
    s = _by_symbol(link_calls(chunk_file("r", "src/shape.test.ts", ts)))
    assert s["perimeter"].language == "typescript" and s["perimeter"].kind == "function"
    assert s["perimeter"].doc == "Perimeter of a circle." and s["perimeter"].start_line == 3
    test = s["describe:perimeter"]
    assert test.kind == "test" and test.tests == ["src/shape.test.ts::perimeter"]
    assert s["src/shape.test.ts"].imports == ["./shape"]


def test_shell_make_and_dockerfile():
    sh = 'set -e\nLR=0.01\ntrain() {\n  python train.py --lr "$LR"\n  evaluate\n}\nevaluate() { echo done; }\ntrain\n'
    s = _by_symbol(link_calls(chunk_file("r", "run.sh", sh)))
    assert s["train"].language == "bash" and (s["train"].start_line, s["train"].end_line) == (3, 6)
    assert s["train"].callees == ["run.sh::evaluate"] and "run.sh::train" in s["<module>"].callees
    s = _by_symbol(link_calls(chunk_file("r", "Makefile", FILES["Makefile"])))
    assert s["test"].kind == "target" and s["test"].callees == ["Makefile::all"]
    assert (s["kernels"].start_line, s["kernels"].end_line) == (5, 6)
    docker = "FROM python:3.11 AS base\nRUN pip install numpy\nFROM base\nCOPY . /app\nENTRYPOINT [\"python\", \"-m\", \"sample\"]\n"
    s = _by_symbol(link_calls(chunk_file("r", "Dockerfile", docker)))
    assert s["base"].kind == "stage" and (s["base"].start_line, s["base"].end_line) == (1, 2)
    assert s["stage1"].callees == ["Dockerfile::base"]


def test_config_files_flatten_hyperparameters():
    chunks = chunk_file("r", "configs/base.yaml", FILES["configs/base.yaml"])
    config = [c for c in chunks if c.kind == "config"][0]
    assert "optimizer.learning_rate = 0.003" in config.text and "model.hidden_size = 512" in config.text
    # a large file is split per top-level key, each with its own line range
    big = "\n".join(f"[section{i}]\n" + "\n".join(f"p{j} = {j}" for j in range(30)) for i in range(4)) + "\n"
    parts = [c for c in chunk_file("r", "big.toml", big) if c.kind == "config"]
    assert [c.symbol for c in parts] == ["section0", "section1", "section2", "section3"]
    assert parts[1].start_line == 32 and "section1.p29 = 29" in parts[1].text
    broken = chunk_file("r", "bad.json", "{not json")
    assert [c.kind for c in broken] == ["file"] and "not valid json" in broken[0].text


def test_a_file_that_does_not_parse_still_has_its_file_chunk():
    chunks = chunk_file("r", "broken.py", "def f(:\n    pass\n")
    assert [c.kind for c in chunks] == ["file"] and "does not parse" in chunks[0].text


def test_languages_and_skipped_files():
    assert detect_language("a/b/Makefile") == "make" and detect_language("Dockerfile.gpu") == "dockerfile"
    assert detect_language("k.cu") == "cuda" and detect_language("x.tsx") == "tsx"
    assert detect_language("package-lock.json") is None and detect_language("app.min.js") is None
    assert detect_language("notes.txt") is None


def test_repository_summary(sample_chunks):
    texts = {p: FILES[p] for p in ("README.md", "pyproject.toml", "Makefile")}
    summary = summarize_repo("sample", sorted(FILES), [c for c in sample_chunks], texts)
    assert summary.readme.startswith("Sample implements a tiny training loop")
    assert "shields.io" not in summary.readme
    assert summary.languages["python"] == 4 and summary.languages["c"] == 2 and summary.languages["go"] == 1
    assert any("sample-train" in e and "sample.train:main" in e for e in summary.entry_points)
    assert any(e.startswith("sample/train.py (`if __name__") for e in summary.entry_points)
    assert any(e.startswith("server/main.go: `main`") for e in summary.entry_points)
    assert "pyproject.toml" in summary.build_files and "Makefile" in summary.build_files
    assert "kernels/ (2 files)" in summary.tree
    repo_chunk = repository_chunk(summary, "abc123")
    assert repo_chunk.kind == "repository" and "entry points:" in repo_chunk.text


def test_readme_summary_skips_badges_and_html():
    text = ("# T\n\n[![ci](x.svg)](y)\n\n<p align=center><img src=a.png></p>\n\nReal first paragraph.\n\n"
            "## Usage\n\nRun it.\n\n## Installation\n\npip install t\n")
    assert readme_summary(text) == "Real first paragraph.\n\nRun it."


def test_remote_urls_normalise_and_are_found_in_paper_text():
    assert normalise_remote("git@github.com:Owner/Repo.git") == "github.com/owner/repo"
    assert normalise_remote("https://www.github.com/owner/repo/tree/main/src") == "github.com/owner/repo"
    assert normalise_remote("https://gitlab.com/group/proj.git") == "gitlab.com/group/proj"
    text = "Code: https://github.com/Example/Sample. See also (https://gitlab.com/x/y) and https://example.org/a/b"
    assert code_urls(text) == ["github.com/example/sample", "gitlab.com/x/y"]
    # papers often print the URL without its scheme; a host inside another name or path is not one
    text = "Code: github.com/Example/Tiny, www.gitlab.com/a/b; not notgithub.com/c/d or http://m/github.com/e/f"
    assert code_urls(text) == ["github.com/example/tiny", "gitlab.com/a/b"]
    assert repo_name("https://github.com/a/My Repo.git") == "My-Repo" and repo_name("/tmp/x/proj/") == "proj"


def test_definitions_come_from_the_grammars_tags_queries_and_the_tables_fill_their_gaps():
    # TypeScript: interface and abstract method signatures are definitions in the tags query, enums only in the table
    ts = ("interface Shape { area(): number }\nabstract class Base { abstract draw(): void }\nenum Colour { Red }\n"
          "const scale = (x: number) => x * 2;\n")
    s = _by_symbol(chunk_file("r", "src/shape.ts", ts))
    assert s["Shape"].kind == "class" and s["Shape.area"].kind == "function"
    assert s["Base.draw"].signature.startswith("abstract draw()") and s["Colour"].kind == "class"
    assert s["scale"].kind == "function"
    # Rust: a type alias is a definition; Java: constructors, enums and records come from the table
    assert _by_symbol(chunk_file("r", "src/grid.rs", "type Grid = Vec<f32>;\n"))["Grid"].kind == "class"
    java = "class A {\n  A() { init(); }\n  enum E { X }\n  record R(int a) {}\n  void m() { new B(); }\n}\n"
    j = _by_symbol(chunk_file("r", "A.java", java))
    assert j["A.A"].kind == "function" and j["A.A"].calls == ["init"] and j["A.m"].calls == ["B"]
    assert j["A.E"].kind == "class" and j["A.R"].kind == "class"
