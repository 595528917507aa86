"""Community entries over many bundles (issue 39): `replicated` compares sets of signers, not pairs of bundles,
and answers as the pairwise rule does."""

import random

from tfcnnwrap.compare import community
from tfcnnwrap.share.indexrows import CommunityRow

KEY = ("resnet50", 64, 1, "fp32", "no", "parameter_server", "synthetic", "1.12")


def pairwise(pairs, evidence):
    """The rule as stated: two bundles signed by disjoint sets of keys whose 95% intervals overlap."""
    signers, intervals = evidence
    known = []
    for value, ident in pairs:
        pct = intervals.get((ident,) + KEY[:3])
        if signers.get(ident) and pct is not None:
            known.append((value, value * pct / 100.0, signers[ident]))
    return any(
        keys_a.isdisjoint(keys_b) and abs(a - b) <= half_a + half_b
        for i, (a, half_a, keys_a) in enumerate(known)
        for b, half_b, keys_b in known[i + 1 :]
    )


def test_replicated_agrees_with_the_pairwise_rule_on_random_libraries():
    people = [{"alice"}, {"bob"}, {"carol"}, {"alice", "bob"}, {"bob", "carol"}, set()]
    rng = random.Random(39)
    answers = set()
    for trial in range(400):
        count = rng.randint(0, 12)
        pairs = [(rng.uniform(100.0, 200.0), "b%d" % i) for i in range(count)]
        signers = {ident: set(rng.choice(people)) for _, ident in pairs}
        intervals = {(ident,) + KEY[:3]: rng.choice([None, 0.0, rng.uniform(0.0, 30.0)]) for _, ident in pairs}
        intervals = {k: v for k, v in intervals.items() if v is not None}
        evidence = (signers, intervals)
        expected = pairwise(pairs, evidence)
        answers.add(expected)
        assert community.replicated(KEY, pairs, evidence) == expected, (trial, pairs, evidence)
    assert answers == {True, False}  # both outcomes were put to the test


def test_replicated_over_thousands_of_bundles_by_few_signers():
    # 20,000 bundles of one GPU and conditions, by one person: never replicated (the pairwise rule made 2e8
    # comparisons of them); then one more person's agreeing figure replicates it
    pairs = [(150.0 + (i % 100) / 10.0, "b%d" % i) for i in range(20000)]
    signers = {ident: {"alice"} for _, ident in pairs}
    intervals = {(ident,) + KEY[:3]: 1.0 for _, ident in pairs}
    assert not community.replicated(KEY, pairs, (signers, intervals))
    signers["bob-1"], intervals[("bob-1",) + KEY[:3]] = {"bob"}, 1.0
    assert community.replicated(KEY, pairs + [(155.0, "bob-1")], (signers, intervals))


def test_the_index_read_in_two_parts_gives_the_entries_the_joined_rows_give():
    rng = random.Random(24)
    names = ["GeForce RTX 2070", "NVIDIA GeForce RTX 2070", "Tesla V100", "Radeon RX Vega 64"]
    bundles, results, rows = {}, [], []
    for i in range(300):
        ident = "%064x" % i
        cond = (
            rng.choice(names),
            rng.choice(["fp32", "fp16", None]),
            "no",
            "parameter_server",
            "synthetic",
            rng.choice(["1.12.0", "1.12.3", "2.4.1"]),
            rng.choice([None, "gen3 x16", "gen3 x4"]),
            "2026-12-01",
        )
        bundles.setdefault(cond[:7], []).append(ident)
        for model, batch in (("resnet50", 64), ("vgg16", 32)):
            value = rng.uniform(50.0, 300.0)
            results.append((ident, model, batch, 1, value))
            rows.append((cond[0], model, batch, 1) + cond[1:6] + (value, ident, cond[6], cond[7]))
    own = {"%064x" % 7, "%064x" % 8}
    joined = community.community_gpus([CommunityRow._make(r) for r in rows if r[10] not in own])
    parts = community.community_gpus([], entries=community.group_index(community.read_index((bundles, results)), own))

    def shown(gpus):
        return {
            k: (
                g.name,
                g.bundle_ids,
                [(r.model, r.tf_version, r.precision, r.images_per_sec, r.source) for r in g.results],
            )
            for k, g in gpus.items()
        }

    assert shown(parts) == shown(joined) and len(parts) >= 4
