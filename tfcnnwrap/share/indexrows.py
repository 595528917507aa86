"""The library index's rows as records (share/library.py writes and reads them): named fields, never positions.

The rows SQLite stores and gives back are NamedTuples: a record with a name for each column, and still the
tuple sqlite3 binds and returns (``executemany`` takes them as they are; a reader may unpack them). `library`'s
rows are frozen records that write the verb's JSON keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, NamedTuple, Optional, Tuple


class BundleRow(NamedTuple):
    """A bundle's row of the ``bundles`` table (its columns in this order). precision, xla, variable_update
    and data are None where the bundle's conditions hold no text; link is its link class (``gen3 x4``)."""

    id: str
    gpu: str
    vendor: str  # "nvidia", ..., or "cpu" for a bundle measured on the CPU
    created_at: str
    imported_at: str
    verified: int  # 1 verified, 0 unverified (no logs)
    tool_version: str
    tf_version: str
    precision: Optional[str]
    xla: Optional[str]
    variable_update: Optional[str]
    data: Optional[str]
    origin: str  # where it was imported from: a file or a repository URL
    link: Optional[str]


BUNDLE_COLUMNS = BundleRow._fields


class ResultRow(NamedTuple):
    """A configuration's row of the ``results`` table: the mean of a bundle's ok runs of it (a fleet's hosts
    pooled), their count and the 95% interval's half-width in % of the mean (None under two runs)."""

    bundle_id: str
    gpu: str
    model: str
    batch_size: int
    num_gpus: int
    precision: Optional[str]
    xla: Optional[str]
    variable_update: Optional[str]
    data: Optional[str]
    tf_version: str
    images_per_sec: float
    runs_ok: int
    verified: int
    created_at: str
    ci95_pct: Optional[float]


class SignerRow(NamedTuple):
    """A valid signature of a bundle in the ``signers`` table."""

    bundle_id: str
    fingerprint: str  # ``SHA256:...`` of the key
    principal: Optional[str]  # the allowed signers' name for the key at import; None: not in them


class CommunityRow(NamedTuple):
    """A verified configuration as compare's community reads it (Library.community_rows)."""

    gpu: str
    model: str
    batch_size: int
    num_gpus: int
    precision: Optional[str]
    xla: Optional[str]
    variable_update: Optional[str]
    data: Optional[str]
    tf_version: str
    images_per_sec: float
    bundle_id: str
    link: Optional[str]  # the link class; None where the bundle, or an index older than it, does not say
    created_at: str


# The keys of `library`'s rows, in the JSON's order (contract), before gpu_id, outlier and signers.
ROW_KEYS = (
    "id",
    "gpu",
    "model",
    "batch_size",
    "precision",
    "num_gpus",
    "images_per_sec",
    "verified",
    "created_at",
    "xla",
    "variable_update",
    "data",
    "tf_version",
    "runs_ok",
)


@dataclass(frozen=True)
class LibraryRow:
    """One row of the `library` verb: a bundle's configuration, who signed the bundle and whether its figure
    is an outlier."""

    id: str
    gpu: str
    model: str
    batch_size: int
    precision: Optional[str]
    num_gpus: int
    images_per_sec: float
    verified: bool
    created_at: str
    xla: Optional[str]
    variable_update: Optional[str]
    data: Optional[str]
    tf_version: str
    runs_ok: int
    gpu_id: str  # one key per GPU, whatever its spelling (results/gpuid.py)
    outlier: bool  # far above everything published for that GPU and conditions: flagged, not refused
    signers: Tuple[str, ...]  # principals where the allowed signers named them, else key fingerprints

    def to_dict(self) -> Dict[str, object]:
        """The row as `library --format json` writes it."""
        out: Dict[str, object] = {key: getattr(self, key) for key in ROW_KEYS}
        out.update(gpu_id=self.gpu_id, outlier=self.outlier, signers=list(self.signers))
        return out
