"""One GPU identity for every view: references, library, community entries, rank, site and the logs' lines.

``gpu_identity(name)`` is the one key a GPU is known by. A name that the built-in references resolve to
exactly one GPU (references.ReferenceSet's own rules: case, spaces, hyphens and vendor words do not count; a
Ti, Super or Max-Q is another card) gets that reference's identity, e.g. ``rtx2070`` for "NVIDIA GeForce RTX
2070", "GeForce RTX 2070" and TensorFlow's device-line name alike. gpus.csv's ``identity`` column joins
references that are one physical GPU in another setting (the RTX 2070 in an eGPU enclosure is an RTX 2070:
its link class tells the two apart, not its identity).

Only a *plain* name is resolved: ASCII letters and digits, with spaces, ``-``, ``_``, ``.``, ``/`` or
parentheses between them, ending in a letter, a digit or ``)``. The reference rules ignore every other
character, so without this "GeForce RTX 2070~", a zero-width space or a Cyrillic letter would read as the RTX
2070 (issue 33, defect 3); nvidia-smi and TensorFlow never print such names. A name that resolves to no
reference keeps an identity no other name can share: a plain one its own words (``gpu:geforce-gtx-1660``,
the maker's word in front dropped, so "NVIDIA GeForce GTX 1660" is the same GPU), any other one a hash of its
exact text (``name:`` + 24 hex digits).
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import List, Optional

from tfcnnwrap.results.references import ReferenceGPU, ReferenceSet, builtin_gpus, name_key

_PLAIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9 _./()-]*[A-Za-z0-9)])?$")
_MAKERS = ("nvidia", "amd", "ati", "intel")
# Words that name a maker's product line: a name with one maker's words never resolves to the other's GPU
# (the reference rules drop these words, so "GeForce GTX 580" and "Radeon RX 580" both read as "580").
_VENDOR_MARKS = {
    "nvidia": {"nvidia", "geforce", "gtx", "rtx", "quadro", "tesla", "titan"},
    "amd": {"amd", "radeon", "rx", "vega", "instinct", "ati", "firepro"},
}


def is_plain(name: str) -> bool:
    """A name the reference rules may resolve: see the module's docstring."""
    return bool(_PLAIN.match(name)) and name.count("(") == name.count(")")


@lru_cache(maxsize=1)
def builtin_references() -> ReferenceSet:
    """The built-in references, never a user's CSV: an identity is the same on every machine."""
    return ReferenceSet(builtin_gpus())


def identity_of(gpu: ReferenceGPU) -> str:
    """A reference GPU's identity: gpus.csv's ``identity`` (the card an eGPU holds), else its id."""
    return gpu.facts.identity or gpu.id


def references_of(identity: str) -> List[ReferenceGPU]:
    """The built-in reference GPUs of one identity (an RTX 2070's: the eGPU's rows)."""
    return [g for g in builtin_references() if identity_of(g) == identity]


def _vendors(name: str) -> set:
    words = set(re.findall(r"[a-z]+", name.lower()))
    return {vendor for vendor, marks in _VENDOR_MARKS.items() if words & marks}


def reference_id(name: str) -> Optional[str]:
    """The gpu_id of the one built-in reference a plain ``name`` names, else None."""
    name = str(name or "").strip()
    if not is_plain(name) or not name_key(name):
        return None
    found = builtin_references().candidates(name)
    if len(found) != 1:
        return None
    gpu = found[0]
    named = _vendors(name)
    if named and named != {gpu.vendor.strip().lower()}:
        return None
    return gpu.id


@lru_cache(maxsize=4096)
def gpu_identity(name: str) -> str:
    """The identity of the GPU ``name`` names: a reference identity (``rtx2070``), ``gpu:<words>`` or
    ``name:<hash>``; see the module's docstring."""
    text = str(name or "").strip()
    ref = reference_id(text)
    if ref is not None:
        return identity_of(builtin_references().gpus[ref])
    if is_plain(text):
        words = re.findall(r"[a-z0-9]+", text.lower())
        if len(words) > 1 and words[0] in _MAKERS:
            words = words[1:]
        return "gpu:" + "-".join(words)
    return "name:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def same_gpu(a: str, b: str) -> bool:
    """Whether two names (a bundle's GPU, a log's device line, a reference's) name one GPU."""
    return gpu_identity(a) == gpu_identity(b)


def known(identity: str) -> bool:
    """Whether an identity is a reference's (so its peak and published figures may be known)."""
    return not identity.startswith(("gpu:", "name:"))


__all__ = [
    "builtin_references",
    "gpu_identity",
    "identity_of",
    "is_plain",
    "known",
    "link_class",
    "reference_id",
    "references_of",
    "same_gpu",
]


_PCIE_GENS = range(1, 10)
_PCIE_WIDTHS = (1, 2, 4, 8, 12, 16, 32)


def link_class(link: object) -> Optional[str]:
    """``gen3 x4`` from a bundle's ``conditions.link`` (the link the runs trained to), None where it is absent,
    null or not a PCIe generation and width that exist: a stranger's bundle says what it likes."""
    if not isinstance(link, dict):
        return None
    gen, width = link.get("pcie_gen"), link.get("pcie_width")
    if type(gen) is not int or type(width) is not int or gen not in _PCIE_GENS or width not in _PCIE_WIDTHS:
        return None
    return "gen%d x%d" % (gen, width)
