"""The sharing verbs' stages take typed arguments: a frozen dataclass each, built once from argparse's Namespace
by the verb's module in cli/ (issue 34). Here each verb's command line is parsed, the stage's function stood in
for, and the record it would have been given compared whole: a flag read into the wrong field, or left out,
fails here without a process or a bundle."""

import dataclasses
import importlib
import typing
from pathlib import Path

import pytest

import tfcnnwrap
from tfcnnwrap.cli import VERB_MODULES, build_parser
from tfcnnwrap.pages.site import SiteArgs
from tfcnnwrap.share.export import ExportArgs, SignArgs
from tfcnnwrap.share.gitrepo import PublishArgs, PullArgs
from tfcnnwrap.share.library import ImportArgs, LibraryArgs
from tfcnnwrap.share.resultsrepo import InitRepoArgs, VerifyRepoArgs
from tfcnnwrap.share.verify import VerifyArgs

PACKAGE = Path(tfcnnwrap.__file__).parent

# (argv, the stage's module, its function, the record the function is given)
CASES = [
    (
        ["export", "results/a", "--out", "shared/", "--no-logs", "--keep-host", "--sign", "key"],
        "tfcnnwrap.share.export",
        "cmd_export",
        ExportArgs(sweep_dir="results/a", out="shared/", no_logs=True, keep_host=True, sign="key"),
    ),
    (["export", "results/a"], "tfcnnwrap.share.export", "cmd_export", ExportArgs(sweep_dir="results/a")),
    (["sign", "b.tfcw.json.gz", "--key", "k"], "tfcnnwrap.share.export", "cmd_sign", SignArgs("b.tfcw.json.gz", "k")),
    (
        ["verify", "a.tfcw.json.gz", "b.tfcw.json.gz", "--allowed-signers", "signers"],
        "tfcnnwrap.share.verify",
        "cmd_verify",
        VerifyArgs(bundles=("a.tfcw.json.gz", "b.tfcw.json.gz"), allowed_signers="signers"),
    ),
    (["verify"], "tfcnnwrap.share.verify", "cmd_verify", VerifyArgs(bundles=())),
    (["verify", "--repo", "."], "tfcnnwrap.share.resultsrepo", "cmd_verify_repo", VerifyRepoArgs(repo=".")),
    (
        ["verify", "x.tfcw.json.gz", "--repo", "r"],
        "tfcnnwrap.share.resultsrepo",
        "cmd_verify_repo",
        VerifyRepoArgs(repo="r", bundles=("x.tfcw.json.gz",)),
    ),
    (["import", "a", "dir/"], "tfcnnwrap.share.library", "cmd_import", ImportArgs(paths=("a", "dir/"))),
    (["library"], "tfcnnwrap.share.library", "cmd_library", LibraryArgs()),
    (
        ["library", "--gpu", "2070", "--model", "resnet50", "--format", "csv"],
        "tfcnnwrap.share.library",
        "cmd_library",
        LibraryArgs(gpu="2070", model="resnet50", format="csv"),
    ),
    (
        ["publish", "results/a", "--to", "/srv/r.git", "--branch", "main"],
        "tfcnnwrap.share.gitrepo",
        "cmd_publish",
        PublishArgs(source="results/a", to="/srv/r.git", branch="main"),
    ),
    (["pull", "/srv/r.git"], "tfcnnwrap.share.gitrepo", "cmd_pull", PullArgs(url="/srv/r.git")),
    (
        ["pull", "/srv/r.git", "--branch", "b"],
        "tfcnnwrap.share.gitrepo",
        "cmd_pull",
        PullArgs(url="/srv/r.git", branch="b"),
    ),
    (["init-repo", "r"], "tfcnnwrap.share.resultsrepo", "cmd_init_repo", InitRepoArgs(dir="r")),
    (
        ["init-repo", "r", "--install", "tfcnnwrap==0.9.0"],
        "tfcnnwrap.share.resultsrepo",
        "cmd_init_repo",
        InitRepoArgs(dir="r", install="tfcnnwrap==0.9.0"),
    ),
    (
        ["site", "a", "library", "--out", "site", "--ab"],
        "tfcnnwrap.pages.site",
        "cmd_site",
        SiteArgs(sources=("a", "library"), out="site", ab=True),
    ),
]


@pytest.mark.parametrize(
    "argv, module, function, expected", CASES, ids=lambda c: " ".join(c) if isinstance(c, list) else ""
)
def test_a_sharing_verb_gives_its_stage_the_record_of_its_flags(monkeypatch, argv, module, function, expected):
    stage = getattr(importlib.import_module(module), function)
    assert typing.get_type_hints(stage) == {"args": type(expected), "return": int}
    given = []
    monkeypatch.setattr(importlib.import_module(module), function, lambda args: given.append(args) or 7)
    args = build_parser().parse_args(argv)
    assert importlib.import_module(VERB_MODULES[args.verb]).run(args) == 7
    assert given == [expected]
    assert type(given[0]) is type(expected)


@pytest.mark.parametrize(
    "record",
    [
        ExportArgs,
        SignArgs,
        VerifyArgs,
        VerifyRepoArgs,
        ImportArgs,
        LibraryArgs,
        PublishArgs,
        PullArgs,
        InitRepoArgs,
        SiteArgs,
    ],
)
def test_a_stage_record_is_frozen_and_holds_no_list(record):
    assert dataclasses.is_dataclass(record) and record.__dataclass_params__.frozen
    hints = typing.get_type_hints(record)
    for name, hint in hints.items():
        assert typing.get_origin(hint) is not list, "%s.%s is a list; a record holds a tuple" % (record.__name__, name)


def test_the_sharing_stages_read_no_namespace():
    modules = sorted((PACKAGE / "share").glob("*.py")) + [PACKAGE / "pages" / "site.py"]
    assert [m.name for m in modules if "Namespace" in m.read_text(encoding="utf-8")] == []
