"""The site's leaderboard (issue 37, item 4): per set of conditions and model/batch size, the site's own results
and every published reference under the same conditions in one table, ranked by images/sec, each with its
trust (reference: vendor/reviewer/user-log; a site result: signed, verified, unverified or a local sweep) and
its interval where one is known."""

import re
import shutil
import subprocess

import pytest
from bundledata import logged_sweep
from conftest import spawn_cli
from htmldata import page_text, seed_sweep, write_bundle

from tfcnnwrap.pages import site
from tfcnnwrap.results.references import load_references


def leaderboard_rows(index_html, caption):
    """[[cell text, ...], ...] of the table whose caption starts with ``caption``."""
    start = index_html.index("<caption")
    start = index_html.index(caption, start)
    body = index_html[start : index_html.index("</table>", start)]
    rows = []
    for tr in body.split("<tr")[2:]:  # the header row first
        text, _ = page_text("<table><tr" + tr + "</table>")
        rows.append(text)
    return rows


def section(text, caption):
    start = text.index(caption)
    end = text.find(", batch ", start + len(caption))
    return text[start : end if end > 0 else len(text)]


@pytest.fixture(scope="module")
def seed_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("seedsite")
    sweep = seed_sweep(root / "seed", logs=True)
    out = root / "site"
    result = spawn_cli("site", sweep, "--out", out)
    assert result.returncode == 0, result
    return (out / "index.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_site_of_the_seed_sweep_ranks_it_among_the_published_gpus_with_their_trust(seed_site):
    text, _ = page_text(seed_site)
    resnet = section(text, "resnet50, batch 64")
    # the published figure the seed compared against, beside the site's own result, by images/sec
    assert "GeForce GTX 1080 Ti 203.99 reference: reviewer" in " ".join(resnet.split())
    assert resnet.index("Tesla V100") < resnet.index("GeForce GTX 1080 Ti 203.99") < resnet.index("local sweep")
    assert resnet.index("local sweep") < resnet.index("Tesla K80")
    # the site's own row: its mean's interval; the references have none published
    assert "(95% CI)" in resnet
    # compare's rule: a derived or partial figure is no reference
    assert "reference: derived" not in text and "reference: partial" not in text
    rows = leaderboard_rows(seed_site, "resnet50, batch 64")
    ranks = [int(r.split()[0]) for r in rows]
    assert ranks == list(range(1, len(rows) + 1)) and len(rows) > 5
    figures = [float(next(w for w in r.split()[1:] if w.replace(".", "").isdigit() and "." in w)) for r in rows]
    assert figures == sorted(figures, reverse=True)


@pytest.mark.slow
def test_the_leaderboard_reads_as_cards_on_a_phone_and_the_site_row_stands_out(seed_site):
    table = seed_site[seed_site.index("resnet50, batch 64") :]
    table = table[: table.index("</table>")]
    assert 'data-label="trust"' in table and 'data-label="interval"' in table
    assert table.count('<tr class="measured">') == 1  # the site's own GPU, bold among the references
    assert '<table id="t-1-1" class="cards">' in seed_site


@pytest.mark.slow
def test_bundles_carry_their_trust_verified_or_unverified(tmp_path):
    folder = tmp_path / "bundles"
    folder.mkdir()
    write_bundle(folder / "checked.tfcw.json.gz", gpu="GeForce RTX 2080", factor=1.3)
    write_bundle(folder / "nologs.tfcw.json.gz", gpu="GeForce RTX 2080", factor=1.2, logs=None)
    write_bundle(folder / "other.tfcw.json.gz", gpu="Tesla T4", factor=0.5, created="2026-11-29T09:00:00Z")
    out = tmp_path / "site"
    result = spawn_cli("site", folder, "--out", out)
    assert result.returncode == 0, result
    text, _ = page_text((out / "index.html").read_text(encoding="utf-8"))
    resnet = " ".join(section(text, "resnet50, batch 64").split())
    # two results of one GPU: both trusts counted, the interval is the range of their means
    assert "1 verified, 1 unverified" in resnet and "over 2 results" in resnet
    assert "Tesla T4" in resnet and "reference: user-log" in resnet
    mine = resnet.index("1 verified, 1 unverified")
    assert resnet.index("GeForce RTX 2080 Ti") < mine  # 286.05 published, above a 2080's ~230
    # one verified result of the T4, below the published T4's 124.77 (it ran at half a 2070)
    mine = re.search(r"Tesla T4 (\d+\.\d\d) verified \u00b1\d+\.\d% \(95% CI\)", resnet)
    assert mine and float(mine.group(1)) < 124.77
    assert resnet.index("Tesla T4 124.77 reference: user-log") < mine.start()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs OpenSSH's ssh-keygen")
def test_a_signed_bundle_is_named_by_its_signer(tmp_path):
    key = tmp_path / "alice"
    made = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice", "-f", str(key)], timeout=60)
    assert made.returncode == 0
    data = tmp_path / "data"
    data.mkdir()
    public = " ".join(key.with_suffix(".pub").read_text().split()[:2])
    (data / "allowed_signers").write_text("alice@example.com %s\n" % public)
    bundles = tmp_path / "bundles"
    bundles.mkdir()
    exported = spawn_cli("export", logged_sweep(tmp_path / "sweep"), "--out", bundles, "--sign", key)
    assert exported.returncode == 0, exported
    out = tmp_path / "site"
    result = spawn_cli("site", bundles, "--out", out, env={"TFCNNWRAP_DATA": str(data)})
    assert result.returncode == 0, result
    text, _ = page_text((out / "index.html").read_text(encoding="utf-8"))
    assert "signed by alice@example.com, verified" in " ".join(section(text, "resnet50, batch 64").split())


def test_trust_and_interval_of_site_results():
    view = site.ResultView(label="x", gpu="g", parts=[], rows=[], runs=[], environment=[])
    sweep = site.Entry(key="a", kind="sweep", view=view, conditions={})
    bundle = site.Entry(key="b", kind="bundle", view=view, conditions={}, signers=("bob@example.com",))
    loose = site.Entry(key="c", kind="bundle", view=view, conditions={}, unverified=True)
    assert site.entry_trust(sweep) == "local sweep"
    assert site.entry_trust(bundle) == "signed by bob@example.com, verified"
    assert site.entry_trust(loose) == "unverified"
    assert site._interval([(100.0, sweep, {"ci95_pct": 1.234})]) == "\u00b11.2% (95% CI)"
    assert site._interval([(100.0, sweep, {"ci95_pct": None})]) == "\u2013"
    assert site._interval([(100.0, sweep, {}), (90.0, bundle, {})]) == "90.00 to 100.00 over 2 results"


def test_published_rows_match_the_conditions_exactly_and_leave_low_trust_out():
    refs = load_references()
    wanted = {
        "precision": "fp32",
        "xla": "no",
        "variable_update": "parameter_server",
        "data": "synthetic",
        "batch_size": 64,
        "num_gpus": 1,
    }
    rows = site.published_rows(refs, "resnet50", wanted)
    by_name = {gpu.full_name: result for gpu, result in rows}
    assert by_name["GeForce GTX 1080 Ti"].images_per_sec == 203.99
    assert all(r.trust not in ("derived", "partial") and not r.differences(wanted) for r in by_name.values())
    assert site.published_rows(refs, "resnet50", dict(wanted, batch_size=3)) == []
    assert site.published_rows(None, "resnet50", wanted) == []


def test_a_reference_source_is_short_enough_for_a_card():
    assert site.short_source("Lambda Labs, 'Deep Learning GPU Benchmarks' (2018), https://lambdalabs.com/x") == (
        "Lambda Labs"
    )
    shown = site.short_source("https://github.com/ROCm/tensorflow-upstream/issues/173 (comment by someone)")
    assert shown == "github.com/ROCm/tensorflow-upstream/\u2026"
    assert site.short_source("https://example.org/a") == "example.org/a"
    assert site.short_source("") == "not recorded"


def test_several_results_count_their_trust_and_independent_signers_that_agree_replicate():
    view = site.ResultView(label="x", gpu="g", parts=[], rows=[], runs=[], environment=[])

    def bundle(*signers, unverified=False):
        return site.Entry(key="k", kind="bundle", view=view, conditions={}, signers=signers, unverified=unverified)

    alice, bob = bundle("alice@example.com"), bundle("bob@example.com")
    # 100 +- 2 and 103 +- 1.03 overlap; alice and bob are two people
    agree = [(100.0, alice, {"ci95_pct": 2.0}), (103.0, bob, {"ci95_pct": 1.0})]
    assert site.replicated(agree)
    assert site._trust_summary(agree) == "2 signed (signed by alice@example.com, bob@example.com); replicated"
    assert not site.replicated([(100.0, alice, {"ci95_pct": 1.0}), (110.0, bob, {"ci95_pct": 1.0})])  # apart
    assert not site.replicated(
        [(100.0, alice, {"ci95_pct": 2.0}), (101.0, bundle("alice@example.com"), {"ci95_pct": 2.0})]
    )
    # an unverified bundle's signature vouches for figures nobody could check
    assert not site.replicated(
        [(100.0, alice, {"ci95_pct": 2.0}), (101.0, bundle("bob", unverified=True), {"ci95_pct": 2.0})]
    )
    sweep = site.Entry(key="s", kind="sweep", view=view, conditions={})
    mixed = [(100.0, sweep, {}), (90.0, bundle(), {}), (95.0, bundle(unverified=True), {}), (97.0, bundle(), {})]
    assert site._trust_summary(mixed) == "1 local sweep, 2 verified, 1 unverified"
