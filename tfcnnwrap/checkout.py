"""Where setup puts the tensorflow/benchmarks checkout, and the manifest that sweep and doctor read.

Layout of a vendor directory::

    vendor/
      benchmarks/                         the clone (depth 1, single branch)
        scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py
      tfcnnwrap-setup.json                the manifest: url, branch, commit, tf_version, ...
      .tfcnnwrap-setup.lock               the vendor lock: setup holds it exclusively, sweeps shared
"""

import json
from pathlib import Path

from tfcnnwrap.errors import SetupError, TfcnnwrapError

CHECKOUT_NAME = "benchmarks"
MANIFEST_NAME = "tfcnnwrap-setup.json"
SCRIPT_RELPATH = Path("scripts", "tf_cnn_benchmarks", "tf_cnn_benchmarks.py")
VENDOR_LOCK_NAME = ".tfcnnwrap-setup.lock"


def vendor_lock(vendor_dir, shared):
    """The vendor directory's lock: ``setup`` takes it exclusively (it clones, swaps and cleans up there),
    a running sweep shared, so that setup cannot swap the checkout under a sweep."""
    from tfcnnwrap.filelock import FileLock

    vendor_dir = Path(vendor_dir)
    if shared:
        busy = "%s is being changed by `tfcnnwrap setup`; wait for it to finish, then run the sweep" % vendor_dir
    else:
        busy = ("%s is in use by another `tfcnnwrap setup` or a running sweep; wait for it to finish"
                % vendor_dir)
    return FileLock(vendor_dir / VENDOR_LOCK_NAME, busy, shared=shared)


def checkout_dir(vendor_dir):
    return Path(vendor_dir) / CHECKOUT_NAME


def manifest_path(vendor_dir):
    return Path(vendor_dir) / MANIFEST_NAME


def script_path(vendor_dir):
    return checkout_dir(vendor_dir) / SCRIPT_RELPATH


def read_manifest(vendor_dir):
    """The manifest as a dict, or None when there is no (readable) manifest."""
    path = manifest_path(vendor_dir)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_manifest(vendor_dir, manifest):
    path = manifest_path(vendor_dir)
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=2, sort_keys=True)
        fh.write("\n")
    tmp.replace(path)


def branch_for(tf_version, manifest):
    """(branch, reason) setup would choose for ``tf_version``, offline: from the branch list the manifest
    cached when setup last asked the remote, else from the branches known to exist upstream."""
    from tfcnnwrap import versions

    names = (manifest or {}).get("upstream_branches") or versions.KNOWN_BRANCHES
    return versions.choose_branch(tf_version, names)


def branch_mismatch(tf_version, manifest):
    """A warning when the checkout was fetched for another TensorFlow than ``tf_version``, else None.

    A branch the user chose with ``setup --branch`` is never second-guessed.
    """
    if not manifest or not manifest.get("branch") or manifest.get("branch_source") == "--branch":
        return None
    try:
        wanted, _ = branch_for(tf_version, manifest)
    except TfcnnwrapError:
        return None
    if wanted == manifest["branch"]:
        return None
    return (
        "the checkout is %s but TensorFlow %s calls for %s; run `python -m tfcnnwrap setup` with the same "
        "--python to switch" % (manifest["branch"], tf_version, wanted)
    )


def require_script(vendor_dir):
    """Path of tf_cnn_benchmarks.py in the checkout, or a SetupError naming the fix."""
    script = script_path(vendor_dir)
    if not script.is_file():
        raise SetupError(
            "no tf_cnn_benchmarks checkout in %s: run `python -m tfcnnwrap setup` first "
            "(or pass --vendor-dir)" % Path(vendor_dir)
        )
    return script
