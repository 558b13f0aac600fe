"""A small multi-language sample repository, made as a real git repository with GitPython."""

from __future__ import annotations

from pathlib import Path

import git

FILES: dict[str, str] = {
    "README.md": """\
# sample

![build](https://img.shields.io/badge/build-passing-green)

Sample implements a tiny training loop and a fast C kernel for the paper's experiments.

## Install

pip install -e .
""",
    "pyproject.toml": """\
[project]
name = "sample"
version = "0.1"

[project.scripts]
sample-train = "sample.train:main"
""",
    "sample/__init__.py": '"""The sample package."""\n',
    "sample/optim.py": '''\
"""Optimisers."""

import math

DEFAULT_LR = 0.001
REGISTRY = {}


def register(name):
    """Register an optimiser class under a name."""
    def deco(cls):
        REGISTRY[name] = cls
        return cls
    return deco


def cosine_schedule(step, total, base_lr=DEFAULT_LR):
    """Learning rate that follows a cosine curve from base_lr to zero."""
    return 0.5 * base_lr * (1 + math.cos(math.pi * step / total))


@register("sgd")
class SGD:
    """Plain stochastic gradient descent with momentum."""

    momentum = 0.9

    def __init__(self, lr=DEFAULT_LR):
        self.lr = lr

    def step(self, params, grads):
        """Move every parameter against its gradient."""
        return [p - self.lr * g for p, g in zip(params, grads)]


register("adam")(SGD)
''',
    "sample/train.py": '''\
"""The training loop."""

import argparse

from sample.optim import SGD, cosine_schedule


def train_epoch(params, batches, opt):
    """One pass over the batches: compute gradients and apply the optimiser."""
    for batch in batches:
        grads = compute_gradients(params, batch)
        params = opt.step(params, grads)
    return params


def compute_gradients(params, batch):
    """Mean squared error gradient of a linear model."""
    return [2 * (p - x) for p, x in zip(params, batch)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    opt = SGD(lr=cosine_schedule(0, args.epochs))
    params = [0.0, 0.0]
    for _ in range(args.epochs):
        params = train_epoch(params, [[1.0, 2.0]], opt)
    print(params)


if __name__ == "__main__":
    main()
''',
    "tests/test_train.py": '''\
from sample.train import compute_gradients, train_epoch
from sample.optim import SGD


def test_compute_gradients():
    assert compute_gradients([1.0], [0.0]) == [2.0]


def test_train_epoch_moves_params():
    assert train_epoch([0.0], [[1.0]], SGD(lr=0.1)) != [0.0]
''',
    "kernels/saxpy.c": '''\
#include <stddef.h>
#include "saxpy.h"

#define BLOCK 256

/* y = a * x + y over n floats, the inner loop of the update. */
void saxpy(size_t n, float a, const float *x, float *y) {
    for (size_t i = 0; i < n; i++) {
        y[i] = a * x[i] + y[i];
    }
}

struct stats { float mean; float var; };

/* Mean of n floats, used to normalise a batch. */
float mean(const float *x, size_t n) {
    float s = 0;
    for (size_t i = 0; i < n; i++) s += x[i];
    return s / n;
}

void normalise(float *x, size_t n) {
    float m = mean(x, n);
    saxpy(n, -1.0f, &m, x);
}
''',
    "kernels/saxpy.h": '''\
#ifndef SAXPY_H
#define SAXPY_H
#include <stddef.h>
void saxpy(size_t n, float a, const float *x, float *y);
float mean(const float *x, size_t n);
#endif
''',
    "server/main.go": '''\
package main

import (
	"fmt"
	"net/http"
)

// Server answers prediction requests over HTTP.
type Server struct {
	addr string
}

// Listen starts serving predictions on the configured address.
func (s *Server) Listen() error {
	http.HandleFunc("/predict", handlePredict)
	return http.ListenAndServe(s.addr, nil)
}

func handlePredict(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "%f", predictScore(r.URL.Query().Get("x")))
}

func predictScore(x string) float64 {
	return float64(len(x)) * 0.5
}

func main() {
	s := &Server{addr: ":8080"}
	s.Listen()
}
''',
    "configs/base.yaml": """\
model:
  hidden_size: 512
  dropout: 0.1
optimizer:
  name: sgd
  learning_rate: 0.003
  warmup_steps: 500
""",
    "Makefile": """\
CFLAGS = -O2

all: kernels

kernels: kernels/saxpy.c
\tcc $(CFLAGS) -c kernels/saxpy.c

test: all
\tpytest -q
""",
    "assets/logo.bin": "\0\1\2binary",
}


def make_repo(root: Path, files: dict[str, str] | None = None, *, remote: str | None = None) -> git.Repo:
    """Write the files, `git init`, commit; optionally set an `origin` URL (never contacted)."""
    root.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(root)
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Test")
        cw.set_value("user", "email", "test@example.org")
    for rel, text in (files or FILES).items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    repo.git.add("--all")
    repo.git.commit("-m", "initial", "--quiet")
    if remote:
        repo.create_remote("origin", remote)
    return repo


def commit_all(repo: git.Repo, message: str) -> str:
    repo.git.add("--all")
    repo.git.commit("-m", message, "--quiet")
    return repo.head.commit.hexsha
